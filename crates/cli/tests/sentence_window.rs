//! `kind: sentence-window` end to end on real SciQ: every retrieved passage is the exact
//! window of whole sentences around a retrieved sentence (at most 2·window_size + 1 sentences,
//! clipped at the document's edges), its words are counted as retrieved, and the `chunk`
//! command lists the indexed sentences.

mod common;
use common::{chunkbench, documents, json_lines, run_yaml, store};

const CONFIG: &str = "name: sw
datasets: [sciq]
limit: 40
strategies:
  sw: {kind: sentence-window, window_size: 2}
retrievers:
  bm25: {kind: bm25, query: question+options}
k: [3]
readers:
  lexical: {kind: lexical}
bootstrap_resamples: 200
";

#[test]
fn passages_are_sentence_windows() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_yaml(tmp.path(), "sw", CONFIG, &store());
    let docs = documents("sciq");
    let mut rdr = csv::Reader::from_path(run.join("per_question.csv")).unwrap();
    let headers = rdr.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (mut rows, mut passages, mut widest) = (0, 0, 0);
    for r in rdr.records() {
        let r = r.unwrap();
        let mut words = 0;
        for id in r[col("passages")].split(' ').filter(|s| !s.is_empty()) {
            let (doc, span) = id.rsplit_once(':').unwrap();
            let (s, e) = span.split_once('-').unwrap();
            let (s, e): (usize, usize) = (s.parse().unwrap(), e.parse().unwrap());
            let text = &docs[doc];
            let sentences = chunker::segment::sentences(text);
            let first = sentences.iter().position(|x| x.start == s);
            let last = sentences.iter().position(|x| x.end == e);
            let (Some(a), Some(b)) = (first, last) else {
                panic!("{id} is not a run of whole sentences");
            };
            let n = b - a + 1;
            // 2·2 + 1 sentences, or fewer only where the document ends.
            assert!(n <= 5, "{id}: {n} sentences");
            assert!(
                n >= 3.min(sentences.len()),
                "{id}: {n} of {} sentences",
                sentences.len()
            );
            if n < 5 {
                assert!(
                    a < 2 || b + 2 >= sentences.len(),
                    "{id}: clipped inside the document"
                );
            }
            widest = widest.max(n);
            words += text[s..e].split_whitespace().count();
            passages += 1;
        }
        assert_eq!(r[col("words")].parse::<usize>().unwrap(), words);
        rows += 1;
    }
    assert_eq!(rows, 40);
    assert!(
        passages >= 100 && widest == 5,
        "{passages} passages, widest {widest}"
    );
    // The indexed units are sentences.
    let stats = std::fs::read_to_string(run.join("chunk_stats.csv")).unwrap();
    assert!(
        stats.lines().nth(1).unwrap().starts_with("sciq,sw,"),
        "{stats}"
    );
}

#[test]
fn chunk_lists_the_indexed_sentences() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("t.txt");
    std::fs::write(&f, "Dr. Smith came. He sat down. Then he left.").unwrap();
    let o = chunkbench(&[
        "chunk",
        "--strategy",
        "sentence-window",
        "--with",
        "window_size=1",
        f.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = json_lines(&o);
    let texts: Vec<&str> = lines.iter().map(|v| v["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["Dr. Smith came.", "He sat down.", "Then he left."]);
    let o = chunkbench(&[
        "chunk",
        "--strategy",
        "sentence-window",
        "--with",
        "window_size=0",
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`window_size`"));
    // Fields come from the kind's registry entry; a missing size names the flag.
    let o = chunkbench(&["chunk", "--strategy", "fixed", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--size"));
}
