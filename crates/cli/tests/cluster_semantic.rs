//! `kind: cluster-semantic` end to end with the real MiniLM: on a real QuALITY article the
//! chunks are exact spans in document order, never overlapping, covering every piece; in a run
//! on SciQ the pieces are embedded and counted in chunk_stats.csv.

mod common;
use common::{chunkbench, json_lines, run_yaml, store, store_with};

#[test]
fn chunks_are_ordered_exact_spans_of_whole_pieces() {
    let text = std::fs::read_to_string(store_with(&["quality"]).join("quality/documents.jsonl"))
        .unwrap()
        .lines()
        .next()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("article.txt");
    std::fs::write(&f, &text).unwrap();
    let o = chunkbench(&[
        "chunk",
        "--strategy",
        "cluster-semantic",
        f.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let chunks = json_lines(&o);
    assert!(chunks.len() >= 3, "{} chunks", chunks.len());
    let tok = chunker::HfTokenizer::from_file(std::path::Path::new(
        &common::workspace().join("models/all-MiniLM-L6-v2/tokenizer.json"),
    ))
    .unwrap();
    let mut prev_end = 0;
    let mut within = 0;
    for c in &chunks {
        let (s, e) = (
            c["start"].as_u64().unwrap() as usize,
            c["end"].as_u64().unwrap() as usize,
        );
        assert_eq!(&text[s..e], c["text"].as_str().unwrap());
        assert!(s >= prev_end, "overlap at {s}");
        // Pieces are trimmed and keep their separator at their start: only whitespace lies
        // between two chunks, no text is lost.
        assert!(
            text[prev_end..s].trim().is_empty(),
            "text lost before {s}: {:?}",
            &text[prev_end..s]
        );
        prev_end = e;
        if tok.count(&text[s..e]) <= 400 {
            within += 1;
        }
    }
    assert!(text[prev_end..].trim().is_empty());
    // At most 8 pieces of ≤ 50 tokens: within 400 tokens up to re-tokenising at the joins.
    assert!(
        within * 10 >= chunks.len() * 9,
        "{within} of {} within 400 tokens",
        chunks.len()
    );
}

#[test]
fn a_run_embeds_the_pieces() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = "name: cs\ndatasets: [sciq]\nlimit: 20\nstrategies:\n  cs: {kind: cluster-semantic, max_size: 200}\nretrievers:\n  bm25: {kind: bm25}\nk: [3]\nreaders:\n  lexical: {kind: lexical}\nbootstrap_resamples: 200\n";
    let run = run_yaml(tmp.path(), "cs", yaml, &store());
    let mut rdr = csv::Reader::from_path(run.join("chunk_stats.csv")).unwrap();
    let h = rdr.headers().unwrap().clone();
    let r = rdr.records().next().unwrap().unwrap();
    let get = |n: &str| r[h.iter().position(|x| x == n).unwrap()].to_string();
    let chunks: usize = get("chunks").parse().unwrap();
    let pieces: usize = get("embedded_units").parse().unwrap();
    assert!(
        pieces > chunks && chunks > 1000,
        "{pieces} pieces, {chunks} chunks"
    );
    assert!(get("over_size").parse::<usize>().is_ok());
    // The cell records the embedder it chunked with.
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert!(
        m["cell_inputs"]
            .to_string()
            .contains("embedder/model.safetensors"),
        "{m}"
    );
}
