//! `data import` on real file formats: the committed fixture (a Markdown folder with multi-byte
//! text and a Parquet question file written by pandas/pyarrow, `scripts/import_fixture.sh`,
//! with a list column of options, letter answers and character-offset evidence), CSV and JSONL
//! tables written here, an HTML folder — and the bad inputs, each a clear error that leaves
//! the store untouched.

use clap::Parser;
use datasets::Dataset;
use std::path::{Path, PathBuf};
use tables::{import, ImportArgs};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import")
}

/// Parses import flags as the CLI does.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ImportArgs,
}

fn args(flags: &[&str]) -> ImportArgs {
    let mut argv = vec!["import"];
    argv.extend_from_slice(flags);
    Cli::try_parse_from(argv).unwrap().args
}

fn parquet_flags() -> Vec<String> {
    let f = fixture();
    [
        "--documents",
        f.join("docs").to_str().unwrap(),
        "--questions",
        f.join("questions.parquet").to_str().unwrap(),
        "--options",
        "choices",
        "--answer",
        "answer",
        "--answer-format",
        "letter",
        "--evidence",
        "evidence",
        "--evidence-units",
        "chars",
        "--license",
        "Apache-2.0",
    ]
    .map(String::from)
    .to_vec()
}

fn run(
    store: &Path,
    name: &str,
    flags: &[String],
) -> anyhow::Result<datasets::dataset::DatasetManifest> {
    let f: Vec<&str> = flags.iter().map(String::as_str).collect();
    import(name, &args(&f), store, false).map(|(m, _)| m)
}

/// The store holds exactly `names` (no temporary or half-written directories).
fn store_holds(store: &Path, names: &[&str]) {
    let mut got: Vec<String> = std::fs::read_dir(store)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    got.sort();
    assert_eq!(got, names, "store contents");
}

#[test]
fn parquet_questions_over_a_markdown_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let flags = parquet_flags();
    let f: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (m, log) = import("fixture", &args(&f), &store, false).unwrap();
    assert_eq!(m.counts["documents"], 5);
    assert_eq!(m.counts["md_documents"], 5);
    assert_eq!(m.counts["questions"], 8);
    assert_eq!(m.counts["multiple_choice"], 8);
    assert_eq!(m.counts["evidence_spans"], 9);
    assert_eq!(m.counts["evidence_converted_from_chars"], 9);
    assert_eq!(m.counts["skipped_empty_documents"], 1);
    assert_eq!(m.counts["skipped_other_files"], 1);
    assert!(
        log.warnings.iter().any(|w| w.starts_with("empty.md")),
        "{:?}",
        log.warnings
    );
    assert!(
        log.warnings.iter().any(|w| w.starts_with("notes.csv")),
        "{:?}",
        log.warnings
    );
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("\"answer_format\":\"letter\"")),
        "{:?}",
        m.notes
    );
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("sha256 of") && n.contains("questions.parquet")));

    let ds = Dataset::load(&store.join("fixture")).unwrap();
    let ids: Vec<&str> = ds.documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "cities/kyoto.md",
            "cities/reykjavik.md",
            "glaciers.md",
            "tides.md",
            "volcanoes.md"
        ]
    );
    assert_eq!(ds.documents[0].title, "Kyōto");
    // Markdown text is the file, verbatim.
    let glaciers = std::fs::read_to_string(fixture().join("docs/glaciers.md")).unwrap();
    assert_eq!(ds.document("glaciers.md").unwrap().text, glaciers);

    // Letters became indices; character offsets over multi-byte text became exact byte spans.
    let q = &ds.questions;
    assert_eq!(
        q.iter().map(|q| q.gold().unwrap()).collect::<Vec<_>>(),
        [1, 2, 0, 3, 1, 2, 1, 0]
    );
    let expect = [
        (
            "q2",
            "— in French, « la limite des névés » — separates the accumulation zone",
        ),
        (
            "q3",
            "Its last\neruption, the Hōei eruption, began in December 1707.",
        ),
        ("q6", "Kyōto was Japan's capital from 794 until 1869"),
    ];
    for (id, excerpt) in expect {
        let q = q.iter().find(|q| q.id == id).unwrap();
        let e = &q.evidence.as_ref().unwrap()[0];
        let text = &ds.document(&e.doc_id).unwrap().text;
        assert_eq!(&text[e.start..e.end], excerpt, "{id}");
        // The character offset differs from the byte offset here: multi-byte text before it.
        assert_ne!(
            text[..e.start].chars().count(),
            e.start,
            "{id} has multi-byte text before it"
        );
    }
    assert_eq!(q[7].evidence.as_ref().unwrap().len(), 2);
    store_holds(&store, &["fixture"]);
}

#[test]
fn csv_option_columns_text_answers_and_located_excerpts() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let csv = tmp.path().join("q.csv");
    std::fs::write(
        &csv,
        "qid,query,a,b,c,d,gold,excerpt\n\
         1,Which plates meet at Þingvellir?,Pacific and Nazca,North American and Eurasian,,,North American and Eurasian,Þingvellir national park lies in the rift valley\n\
         2,What floats on water?,granite,basalt,pumice,,pumice,Pumice is so full of gas bubbles\n",
    )
    .unwrap();
    let docs = fixture().join("docs");
    let flags = [
        "--documents",
        docs.to_str().unwrap(),
        "--questions",
        csv.to_str().unwrap(),
        "--id",
        "qid",
        "--question",
        "query",
        "--option-columns",
        "a,b,c,d",
        "--answer",
        "gold",
        "--answer-format",
        "text",
        "--evidence-text",
        "excerpt",
    ];
    let (m, _) = import("csv", &args(&flags), &store, false).unwrap();
    assert_eq!(m.counts["evidence_located_excerpts"], 2);
    let ds = Dataset::load(&store.join("csv")).unwrap();
    assert_eq!(
        ds.questions[0].options.len(),
        2,
        "empty trailing option cells are dropped"
    );
    assert_eq!(ds.questions[0].gold(), Some(1));
    assert_eq!(ds.questions[1].options.len(), 3);
    assert_eq!(ds.questions[1].gold(), Some(2));
    let e = &ds.questions[0].evidence.as_ref().unwrap()[0];
    assert_eq!(e.doc_id, "cities/reykjavik.md");
    assert_eq!(
        &ds.document(&e.doc_id).unwrap().text[e.start..e.end],
        "Þingvellir national park lies in the rift valley"
    );
    // The id column is a string, even though it looks like a number.
    assert_eq!(ds.questions[0].id, "1");
}

#[test]
fn retrieval_only_jsonl_with_byte_spans_over_a_document_table() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let docs = tmp.path().join("docs.jsonl");
    std::fs::write(
        &docs,
        "{\"doc\": \"d1\", \"body\": \"Café crème costs € 3.\", \"name\": \"Menu\"}\n\
         {\"doc\": \"d2\", \"body\": \"Tea costs € 2.\", \"name\": null}\n",
    )
    .unwrap();
    let qs = tmp.path().join("q.jsonl");
    // "€ 3" starts at byte 19 ("Café crème costs " is 17 characters, 19 bytes).
    std::fs::write(
        &qs,
        "{\"id\": \"p1\", \"q\": \"price of coffee\", \"doc\": \"d1\", \"s\": 19, \"e\": 24, \"ans\": [\"€ 3\", \"3 euros\"]}\n\
         {\"id\": \"p2\", \"q\": \"price of tea\", \"doc\": null, \"s\": null, \"e\": null, \"ans\": \"€ 2\"}\n",
    )
    .unwrap();
    let flags = [
        "--documents",
        docs.to_str().unwrap(),
        "--doc-id",
        "doc",
        "--doc-text",
        "body",
        "--doc-title",
        "name",
        "--questions",
        qs.to_str().unwrap(),
        "--question",
        "q",
        "--answers",
        "ans",
        "--evidence-doc",
        "doc",
        "--evidence-start",
        "s",
        "--evidence-end",
        "e",
        "--evidence-units",
        "bytes",
    ];
    let (m, _) = import("ret", &args(&flags), &store, false).unwrap();
    assert_eq!(m.counts["retrieval_only"], 2);
    let ds = Dataset::load(&store.join("ret")).unwrap();
    assert_eq!(ds.documents[0].title, "Menu");
    let q = &ds.questions;
    assert!(q[0].is_retrieval_only() && q[0].gold().is_none());
    assert_eq!(q[0].answers.as_deref().unwrap(), ["€ 3", "3 euros"]);
    let e = &q[0].evidence.as_ref().unwrap()[0];
    assert_eq!(&ds.documents[0].text[e.start..e.end], "€ 3");
    assert!(q[1].evidence.is_none());
    assert_eq!(q[1].answers.as_deref().unwrap(), ["€ 2"]);
}

/// Chroma's general benchmark layout exactly (`general_evaluation_data/corpora/*.md` and
/// `questions_df.csv` with `question,references,corpus_id`, the references a JSON list of
/// `{content, start_index, end_index}` in characters written by `json.dumps`, so `’` is
/// `\u2019`; corpus_id is the file's stem): one command, no hand step.
#[test]
fn chroma_general_benchmark_layout_imports_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/chroma");
    let (corpora, csv) = (f.join("corpora"), f.join("questions_df.csv"));
    let flags = [
        "--documents",
        corpora.to_str().unwrap(),
        "--folder-ids",
        "stem",
        "--questions",
        csv.to_str().unwrap(),
        "--id",
        "#row",
        "--evidence",
        "references",
        "--evidence-doc",
        "corpus_id",
        "--evidence-units",
        "chars",
    ];
    let (m, _) = import("chroma", &args(&flags), &store, false).unwrap();
    assert_eq!(m.counts["retrieval_only"], 3);
    let ds = Dataset::load(&store.join("chroma")).unwrap();
    let ids: Vec<&str> = ds.documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["state_of_the_union", "wikitexts"]);
    let text = |id: &str| &ds.documents.iter().find(|d| d.id == id).unwrap().text;
    let expect = [
        vec!["Russia\u{2019}s Vladimir Putin sought to shake the foundations of the free world"],
        vec!["developed by Sega and Media.Vision for the PlayStation Portable"],
        vec![
            "The game began development in 2010",
            "Valkyria of the Battlefield 3",
        ],
    ];
    for (q, want) in ds.questions.iter().zip(expect) {
        let ev = q.evidence.as_ref().unwrap();
        let got: Vec<&str> = ev
            .iter()
            .map(|e| &text(&e.doc_id)[e.start..e.end])
            .collect();
        assert_eq!(got, want, "{}", q.id);
    }
    // Without --folder-ids stem the corpus_id names no document: the error says how to map it.
    let mut plain: Vec<&str> = flags.to_vec();
    plain.drain(2..4);
    let err = format!(
        "{:#}",
        import("chroma2", &args(&plain), &store, false).unwrap_err()
    );
    assert!(
        err.contains("`state_of_the_union`") && err.contains("--folder-ids stem"),
        "{err}"
    );
    // A table of documents refuses the folder flag.
    let docs = tmp.path().join("docs.jsonl");
    std::fs::write(&docs, "{\"id\": \"a\", \"text\": \"x\"}\n").unwrap();
    let mut table = flags.to_vec();
    table[1] = docs.to_str().unwrap();
    let err = format!(
        "{:#}",
        import("chroma3", &args(&table), &store, false).unwrap_err()
    );
    assert!(err.contains("--folder-ids applies to a folder"), "{err}");
}

#[test]
fn html_folder_is_cleaned_text() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("site");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("page one.html"),
        "<html><head><title>Über uns</title><script>alert(1)</script></head>\
         <body><p>We sell fish &amp; chips.</p><p>Open <b>daily</b>.</p></body></html>",
    )
    .unwrap();
    let qs = tmp.path().join("q.csv");
    std::fs::write(
        &qs,
        "id,question,answers,excerpt\nh1,what do they sell?,fish & chips,fish & chips\n",
    )
    .unwrap();
    let store = tmp.path().join("store");
    let flags = [
        "--documents",
        docs.to_str().unwrap(),
        "--questions",
        qs.to_str().unwrap(),
        "--answers",
        "answers",
        "--evidence-text",
        "excerpt",
    ];
    import("html", &args(&flags), &store, false).unwrap();
    let ds = Dataset::load(&store.join("html")).unwrap();
    let d = &ds.documents[0];
    assert_eq!(d.id, "page_one.html", "whitespace in file names becomes _");
    assert_eq!(d.title, "Über uns");
    assert_eq!(d.text, "We sell fish & chips.\n\nOpen daily.");
    let e = &ds.questions[0].evidence.as_ref().unwrap()[0];
    assert_eq!((e.start, e.end), (8, 20));
}

/// Runs an import expected to fail; returns the error and checks nothing was written.
fn fails(flags: &[String], store: &Path) -> String {
    let e = run(store, "bad", flags).unwrap_err();
    store_holds(store, &[]);
    format!("{e:#}")
}

fn with(flags: &[String], replace: &[(&str, &str)], extra: &[&str]) -> Vec<String> {
    let mut out = flags.to_vec();
    for (flag, value) in replace {
        let i = out.iter().position(|f| f == flag).unwrap();
        out[i + 1] = value.to_string();
    }
    out.extend(extra.iter().map(|s| s.to_string()));
    out
}

#[test]
fn bad_input_names_file_row_and_column_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let base = parquet_flags();

    let e = fails(&with(&base, &[("--options", "options")], &[]), &store);
    assert!(
        e.contains("questions.parquet: no column `options`") && e.contains("choices"),
        "{e}"
    );

    let e = fails(&with(&base, &[("--options", "answer")], &[]), &store);
    assert!(e.contains("row 1, column `answer`: expected a list"), "{e}");

    let e = fails(&with(&base, &[("--answer-format", "index")], &[]), &store);
    assert!(
        e.contains("row 1, column `answer`: expected an integer"),
        "{e}"
    );

    // Character offsets read as bytes: the slice disagrees with the excerpt, and the error
    // says which unit would match.
    let e = fails(&with(&base, &[("--evidence-units", "bytes")], &[]), &store);
    assert!(
        e.contains("row 2, column `evidence`, item 1") || e.contains("row 2, evidence item 1"),
        "{e}"
    );
    assert!(e.contains("--evidence-units chars"), "{e}");

    let no_units: Vec<String> = {
        let i = base.iter().position(|f| f == "--evidence-units").unwrap();
        let mut v = base.clone();
        v.drain(i..i + 2);
        v
    };
    let e = fails(&no_units, &store);
    assert!(e.contains("--evidence-units bytes|chars"), "{e}");

    // Excerpts: absent and ambiguous.
    let csv = tmp.path().join("q.csv");
    std::fs::write(
        &csv,
        "id,question,answers,excerpt\nx1,q,a,the glacier that is not there\n",
    )
    .unwrap();
    let located = |csv: &Path| {
        vec![
            "--documents".to_string(),
            fixture().join("docs").display().to_string(),
            "--questions".into(),
            csv.display().to_string(),
            "--answers".into(),
            "answers".into(),
            "--evidence-text".into(),
            "excerpt".into(),
        ]
    };
    let e = fails(&located(&csv), &store);
    assert!(
        e.contains("q.csv, row 1, evidence item 1: excerpt")
            && e.contains("not found in 5 documents"),
        "{e}"
    );
    std::fs::write(
        &csv,
        "id,question,answers,excerpt\nx1,q,a,Aletsch\nx2,q,a,the Moon\n",
    )
    .unwrap();
    let e = fails(&located(&csv), &store);
    assert!(
        e.contains("row 2, evidence item 1")
            && e.contains("ambiguous")
            // The documents holding it, of those searched (it read "in 5 documents").
            && e.contains("in 1 of the 5 documents searched")
            && e.contains("`tides.md` byte"),
        "{e}"
    );

    // Duplicate ids, an unknown document, an MCQ without answer.
    std::fs::write(
        &csv,
        "id,question,answers,excerpt\nx1,q,a,Aletsch Glacier is\nx1,q,a,Pumice\n",
    )
    .unwrap();
    let e = fails(&located(&csv), &store);
    assert!(
        e.contains("row 2, column `id`: question id `x1` repeats row 1"),
        "{e}"
    );
    let e = fails(
        &with(&located(&csv), &[], &["--evidence-doc", "answers"]),
        &store,
    );
    assert!(
        e.contains("names document `a`, which the documents do not have"),
        "{e}"
    );
    let e = fails(
        &with(&located(&csv), &[], &["--options", "answers"]),
        &store,
    );
    assert!(e.contains("no answer: give --answer COL"), "{e}");

    // A taken name is refused without --force, and the existing dataset is left as it was.
    let good = parquet_flags();
    run(&store, "taken", &good).unwrap();
    let before = std::fs::read(store.join("taken/manifest.json")).unwrap();
    let e = format!("{:#}", run(&store, "taken", &good).unwrap_err());
    assert!(e.contains("give --force"), "{e}");
    let bad = with(&good, &[("--evidence-units", "bytes")], &[]);
    let f: Vec<&str> = bad.iter().map(String::as_str).collect();
    assert!(import("taken", &args(&f), &store, true).is_err());
    assert_eq!(
        std::fs::read(store.join("taken/manifest.json")).unwrap(),
        before
    );
    store_holds(&store, &["taken"]);
}
