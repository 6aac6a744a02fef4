//! End-to-end tests of EAR windows (issue 6) through the `chunkbench` binary on real SciQ and
//! QuALITY data: exact spans, window sizes, explanations, failure attribution, determinism.
//!
//! They need the converted datasets in the store (`data/`, or `CHUNKBENCH_STORE`);
//! `scripts/test.sh` fetches them first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod common;
use common::{chunkbench, store_with};

fn store() -> PathBuf {
    store_with(&["sciq", "quality"])
}

const CONFIG: &str = "name: ear-test
datasets: [sciq, quality]
limit: 60
strategies:
  fixed-260-60: {kind: fixed, unit: words, size: 260, overlap: 60}
  ear: {kind: ear}
  ear-parent: {kind: ear, ear: {expand: parent}}
  ear-summary: {kind: ear, ear: {expand: summary, summary_words: 40}}
retrievers:
  bm25: {kind: bm25, query: question+options}
k: [3, 8]
readers:
  lexical: {kind: lexical}
baseline: fixed-260-60
bootstrap_resamples: 200
";

fn run(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let cfg = dir.join("ear.yaml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let out = dir.join("runs");
    let o = chunkbench(&[
        "run",
        cfg.to_str().unwrap(),
        "--store",
        store().to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.join("ear-test")
}

fn documents(ds: &str) -> HashMap<String, String> {
    let text = std::fs::read_to_string(store().join(ds).join("documents.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                v["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn ear_windows_are_exact_bounded_explained_and_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(tmp.path());
    let docs: HashMap<&str, HashMap<String, String>> = [
        ("sciq", documents("sciq")),
        ("quality", documents("quality")),
    ]
    .into_iter()
    .collect();
    let mut rdr = csv::Reader::from_path(dir.join("per_question.csv")).unwrap();
    let mut ear_rows = 0;
    let mut words_by_cell: HashMap<(String, String, String), f64> = HashMap::new();
    for r in rdr.deserialize::<HashMap<String, String>>() {
        let r = r.unwrap();
        let ds = r["dataset"].as_str();
        let strategy = r["strategy"].as_str();
        *words_by_cell
            .entry((ds.to_string(), strategy.to_string(), r["k"].clone()))
            .or_default() += r["words"].parse::<f64>().unwrap();
        // Every passage is a byte span of its document (offsets are sacred).
        let mut words = 0;
        for p in r["passages"].split(' ').filter(|p| !p.is_empty()) {
            let (doc, span) = p.rsplit_once(':').unwrap();
            let (s, e) = span.split_once('-').unwrap();
            let (s, e): (usize, usize) = (s.parse().unwrap(), e.parse().unwrap());
            let text = &docs[ds][doc];
            assert!(
                s < e && e <= text.len() && text.is_char_boundary(s) && text.is_char_boundary(e)
            );
            let n = text[s..e].split_whitespace().count();
            if strategy == "ear" && r["fallback"] == "0" {
                // A window: at most 80 words on each side of an anchor of a few words.
                assert!(n <= 80 + 80 + 12, "{p}: {n} words");
            }
            words += n;
        }
        assert_eq!(words.to_string(), r["words"], "{r:?}");
        let failure = r["failure"].as_str();
        assert!(
            [
                "correct",
                "extraction",
                "matching",
                "ranking",
                "reading",
                "no-evidence"
            ]
            .contains(&failure),
            "{failure}"
        );
        assert_eq!(failure == "correct", r["correct"] == "1");
        if strategy.starts_with("ear") {
            ear_rows += 1;
            assert!(!r["anchors"].is_empty() && !r["windows_after"].is_empty());
            let (before, after): (usize, usize) = (
                r["windows_before"].parse().unwrap(),
                r["windows_after"].parse().unwrap(),
            );
            assert!(after <= before);
            if r["anchors"] == "0" && failure != "correct" {
                assert_eq!(failure, "extraction");
            }
        } else {
            assert!(r["anchors"].is_empty());
            assert!(!["extraction", "matching"].contains(&failure));
        }
        if ds == "quality" && failure != "correct" {
            // QuALITY has no gold evidence: ranking and reading cannot be told apart.
            assert!(
                ["extraction", "matching", "no-evidence"].contains(&failure),
                "{failure}"
            );
        }
    }
    assert_eq!(ear_rows, 3 * 2 * (60 + 60));
    // Windows retrieve fewer words than their 260/60 parents on QuALITY's long articles.
    for k in ["3", "8"] {
        let w = |s: &str| words_by_cell[&("quality".to_string(), s.to_string(), k.to_string())];
        assert!(
            w("ear") < 0.85 * w("fixed-260-60"),
            "k={k}: {} vs {}",
            w("ear"),
            w("fixed-260-60")
        );
        assert!(w("ear") < w("ear-parent"));
    }
    // Explanations: one line per question for each EAR cell, and the explain command.
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("## EAR anchor coverage") && summary.contains("## Failure attribution")
    );
    let explain_dir = dir.join("explain");
    let files: Vec<_> = std::fs::read_dir(&explain_dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 3 * 2 * 2);
    let mut checked_match = false;
    for f in files {
        let text = std::fs::read_to_string(f.path()).unwrap();
        assert_eq!(text.lines().count(), 60);
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            for p in v["passages"].as_array().unwrap() {
                for m in p["matches"].as_array().unwrap() {
                    // The corpus side of a match is the slice its offsets name, and its
                    // normalised form matches the query anchor's.
                    let span = m["corpus_span"].as_array().unwrap();
                    let (s, e) = (
                        span[0].as_u64().unwrap() as usize,
                        span[1].as_u64().unwrap() as usize,
                    );
                    let ds = if docs["sciq"].contains_key(p["doc_id"].as_str().unwrap()) {
                        "sciq"
                    } else {
                        "quality"
                    };
                    let text = &docs[ds][p["doc_id"].as_str().unwrap()];
                    assert_eq!(&text[s..e], m["corpus_text"].as_str().unwrap());
                    let kind = m["query_kind"].as_str().unwrap();
                    if !["year", "year-range", "decade", "century"].contains(&kind) {
                        let norm = m["norm"].as_str().unwrap();
                        assert!(
                            chunker::anchor::normalize(&text[s..e]).starts_with(norm),
                            "{m}"
                        );
                    }
                    checked_match = true;
                }
            }
        }
    }
    assert!(checked_match);
    let first: serde_json::Value = {
        let p = std::fs::read_dir(&explain_dir)
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        serde_json::from_str(std::fs::read_to_string(p).unwrap().lines().next().unwrap()).unwrap()
    };
    let qid = first["question_id"].as_str().unwrap();
    let o = chunkbench(&["explain", dir.to_str().unwrap(), qid]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("EAR:") && text.contains("anchor") && text.contains("failure:"),
        "{text}"
    );
    assert!(text.contains("fixed-260-60"), "{text}");
    // --cell takes a strategy name as well as an id prefix.
    let o = chunkbench(&[
        "explain",
        dir.to_str().unwrap(),
        qid,
        "--cell",
        "fixed-260-60",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("fixed-260-60") && !text.contains("EAR:"),
        "{text}"
    );
    let o = chunkbench(&["explain", dir.to_str().unwrap(), "no-such-question"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("per_question.csv"));
    // Same config, same bytes.
    let again = run(&tmp.path().join("again"));
    for f in ["per_question.csv", "summary.csv"] {
        assert_eq!(
            std::fs::read(dir.join(f)).unwrap(),
            std::fs::read(again.join(f)).unwrap(),
            "{f} differs between identical runs"
        );
    }
}
