//! The verdict of a retrieval-only run on a small user-style corpus: documents holding several
//! questions each, a primary metric, one Holm family of the planned comparisons, clustered
//! resampling by default, and the config fields that change them.

mod common;

use common::*;
use std::collections::HashMap;
use std::path::Path;

fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut rdr = csv::Reader::from_path(path).unwrap();
    let headers = rdr.headers().unwrap().clone();
    rdr.records()
        .map(|r| {
            headers
                .iter()
                .zip(r.unwrap().iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

const PLACES: [&str; 12] = [
    "Arden", "Brisk", "Corran", "Dunmoor", "Elsby", "Fenwick", "Garrow", "Hollin", "Isham",
    "Jarrow", "Kelso", "Lydd",
];
const THINGS: [&str; 4] = ["lighthouse", "granary", "viaduct", "observatory"];
const FILLER: &str = "Visitors arrive by the coastal road and the morning ferry, and the \
    local council keeps records of every repair in its archive by the harbour.";

/// Twelve documents about one town each; four questions per document, each answered by one
/// sentence of it (its evidence).
fn corpus(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let mut qs = String::from("id,query,answer,excerpt\n");
    for (d, place) in PLACES.iter().enumerate() {
        let mut text = format!("# {place}\n\n");
        for (t, thing) in THINGS.iter().enumerate() {
            let height = 10 + 7 * d + 3 * t;
            let sentence = format!("The {thing} of {place} stands {height} metres tall.");
            // A sentence naming another town's building, so that small chunks compete.
            let (other, there) = (THINGS[(t + 1) % 4], PLACES[(d + 5) % 12]);
            text.push_str(&format!(
                "{sentence} {FILLER} Its keeper once measured how tall the {other} of {there} \
                 stands.\n\n"
            ));
            qs.push_str(&format!(
                "q{d:02}{t},how tall is the {thing} of {place},{height} metres,{sentence}\n"
            ));
        }
        std::fs::write(docs.join(format!("{}.md", place.to_lowercase())), text).unwrap();
    }
    let q = dir.join("questions.csv");
    std::fs::write(&q, qs).unwrap();
    (docs, q)
}

const CONFIG: &str = "name: towns
datasets: [towns]
strategies:
  fixed-10: {kind: fixed, unit: words, size: 10, overlap: 0}
  fixed-20: {kind: fixed, unit: words, size: 20, overlap: 0}
  fixed-60: {kind: fixed, unit: words, size: 60, overlap: 0}
baseline: fixed-20
retrievers:
  bm25: {kind: bm25}
k: [1, 3]
readers:
  retrieval: {kind: none}
bootstrap_resamples: 500
";

#[test]
fn a_retrieval_only_run_gets_one_holm_family_of_planned_comparisons_clustered_by_document() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let (docs, qs) = corpus(tmp.path());
    let o = chunkbench(&[
        "data",
        "import",
        "towns",
        "--store",
        store.to_str().unwrap(),
        "--documents",
        docs.to_str().unwrap(),
        "--questions",
        qs.to_str().unwrap(),
        "--question",
        "query",
        "--answers",
        "answer",
        "--evidence-text",
        "excerpt",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = run_yaml(&tmp.path().join("a"), "towns", CONFIG, &store);
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        md.contains("## Verdict: recall@k against the baseline"),
        "{md}"
    );
    // 2 strategies besides the baseline × 2 values of k: four planned comparisons, and only
    // they are in the Holm family (not every metric of every cell).
    assert!(md.contains("4 planned comparisons"), "{md}");
    let summary = csv_rows(&run.join("summary.csv"));
    let holm = &summary
        .iter()
        .find(|r| r["strategy"] != "fixed-20")
        .unwrap()["holm_family"];
    assert!(
        md.contains(&format!("one Holm family of size {holm}")),
        "{holm}: {md}"
    );
    assert_ne!(holm, "0", "some comparison differs on some question: {md}");
    assert!(
        md.contains("by document (the default, since 12 documents hold several compared questions"),
        "{md}"
    );
    assert!(
        md.contains("## Retrieval against the baseline (exploratory)"),
        "{md}"
    );
    let per_q = csv_rows(&run.join("per_question.csv"));
    assert!(
        per_q.iter().all(|r| !r["question_doc"].is_empty()),
        "every question has its document"
    );
    assert_eq!(summary.len(), 6);
    for r in &summary {
        if r["strategy"] == "fixed-20" {
            assert_eq!(
                r["verdict"], "",
                "the baseline is not compared with itself: {r:?}"
            );
            continue;
        }
        assert!(
            ["superior", "inferior", "inconclusive"].contains(&r["verdict"].as_str()),
            "no margin: {r:?}"
        );
        assert_eq!(r["primary_metric"], "recall");
        assert_eq!(r["family_size"], "4");
        assert_eq!(r["resample"], "document");
        assert_eq!(r["clusters"], "12");
        assert_eq!(r["n"], "48");
        let (lo, hi, d): (f64, f64, f64) = (
            r["primary_ci_low_pts"].parse().unwrap(),
            r["primary_ci_high_pts"].parse().unwrap(),
            r["primary_delta_pts"].parse().unwrap(),
        );
        assert!(lo <= d && d <= hi, "{r:?}");
    }

    // Issue 55 case 9: the other resampling unit is shown as a sensitivity analysis.
    assert!(
        md.contains("**Sensitivity: resampled by question**"),
        "{md}"
    );
    // Issue 55 case 8: one interval per comparison: the verdict's interval is the one the
    // retrieval table and retrieval_comparisons.csv show for the primary metric, and the
    // simultaneous one is in summary.csv.
    let tests = csv_rows(&run.join("retrieval_comparisons.csv"));
    for r in summary.iter().filter(|r| r["strategy"] != "fixed-20") {
        let t = tests
            .iter()
            .find(|t| t["cell_id"] == r["cell_id"] && t["metric"] == "recall@k")
            .unwrap();
        for (a, b) in [
            ("primary_ci_low_pts", "delta_ci_low"),
            ("primary_ci_high_pts", "delta_ci_high"),
        ] {
            let (x, y): (f64, f64) = (r[a].parse().unwrap(), t[b].parse().unwrap());
            assert!((x - 100.0 * y).abs() < 1e-3, "{a} {x} vs {b} {y}");
        }
        let (lo, slo): (f64, f64) = (
            r["primary_ci_low_pts"].parse().unwrap(),
            r["primary_sim_ci_low_pts"].parse().unwrap(),
        );
        assert!(slo <= lo, "{r:?}");
    }

    // Issue 55 case 11: a planned family of one retriever depth; the rest exploratory.
    let cfg = CONFIG.to_string() + "planned: {k: 1}\n";
    let run = run_yaml(&tmp.path().join("p"), "towns", &cfg, &store);
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        md.contains("2 confirmatory comparisons of 4: those `planned:` names (k 1)"),
        "{md}"
    );
    assert!(
        md.contains("**Exploratory comparisons** (2 outside `planned:`)"),
        "{md}"
    );
    for r in csv_rows(&run.join("summary.csv"))
        .iter()
        .filter(|r| r["strategy"] != "fixed-20")
    {
        let want = if r["k"] == "3" {
            "exploratory"
        } else {
            r["verdict"].as_str()
        };
        assert_eq!(r["verdict"], want, "{r:?}");
        assert_ne!(r["verdict"], "", "{r:?}");
        if r["k"] == "1" {
            assert_eq!(r["family_size"], "2");
        }
    }
    let bad = tmp.path().join("planned.yaml");
    std::fs::write(&bad, CONFIG.to_string() + "planned: {retriever: dense}\n").unwrap();
    let o = run_env(&bad, &store, &tmp.path().join("f"), &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("field `planned.retriever`") && err.contains("bm25"),
        "{err}"
    );

    // Overrides: another primary metric, a margin, question-level resampling.
    let cfg = CONFIG.to_string() + "primary: ndcg\nmargin: 5\nresample: question\n";
    let run = run_yaml(&tmp.path().join("b"), "towns", &cfg, &store);
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    // Issue 55 case 9: `resample: question` says how many documents hold several questions.
    assert!(
        md.contains(
            "by question (`resample: question`; 12 documents hold several compared questions)"
        ),
        "{md}"
    );
    assert!(
        md.contains("**Sensitivity: resampled by document**"),
        "{md}"
    );
    assert!(
        md.contains("## Verdict: nDCG@k against the baseline"),
        "{md}"
    );
    assert!(md.contains("margin 5.0 points"), "{md}");
    for r in csv_rows(&run.join("summary.csv"))
        .iter()
        .filter(|r| r["strategy"] != "fixed-20")
    {
        assert_eq!(r["primary_metric"], "ndcg");
        assert_eq!(r["resample"], "question");
        assert_eq!(r["clusters"], "48");
        assert_eq!(r["margin_pts"], "5.000");
        assert!(!r["verdict"].is_empty());
    }

    // Retrieval to a budget (issue 38): budget cells only (`k: []`), words cut at a word end.
    let cfg = CONFIG.replace(
        "k: [1, 3]",
        "k: []\nbudget: {unit: words, sizes: [15, 30, 60]}",
    );
    let run = run_yaml(&tmp.path().join("d"), "towns", &cfg, &store);
    let docs = documents_in(&store, "towns");
    let summary = csv_rows(&run.join("summary.csv"));
    assert_eq!(summary.len(), 9, "3 strategies × 3 budgets");
    let budget_of: HashMap<String, usize> = summary
        .iter()
        .map(|r| (r["cell_id"].clone(), r["budget"].parse().unwrap()))
        .collect();
    for r in &summary {
        assert_eq!(r["budget_unit"], "words");
        assert_eq!(r["budget_fill"], "cut");
    }
    let mut full = 0;
    for r in csv_rows(&run.join("per_question.csv")) {
        let budget = budget_of[&r["cell_id"]];
        let words: usize = r["words"].parse().unwrap();
        assert!(
            words <= budget,
            "{words} words over a budget of {budget}: {r:?}"
        );
        full += usize::from(words == budget);
        let mut counted = 0;
        for p in r["passages"].split_whitespace() {
            let (doc, span) = p.rsplit_once(':').unwrap();
            let (a, b) = span.split_once('-').unwrap();
            let text = docs[doc].get(a.parse::<usize>().unwrap()..b.parse::<usize>().unwrap());
            counted += text
                .expect("a passage is an exact slice")
                .split_whitespace()
                .count();
        }
        assert_eq!(counted, words, "words retrieved are the passages' words");
    }
    assert!(full > 0, "budgets are filled");
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        md.contains("## At equal budgets") && md.contains("| AUC |"),
        "{md}"
    );
    assert!(
        md.contains("| ≤15 words |") || md.contains("≤15 words"),
        "{md}"
    );
    assert!(run
        .join("plots/budget-words--towns--retrieval.png")
        .exists());
    assert!(run
        .join("plots/recall-vs-words--towns--retrieval.png")
        .exists());
    // `k: []` needs a budget.
    let bad = tmp.path().join("nok.yaml");
    std::fs::write(&bad, CONFIG.replace("k: [1, 3]", "k: []")).unwrap();
    let o = run_env(&bad, &store, &tmp.path().join("e"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("field `k`"));

    // A primary metric that does not exist is refused before anything runs.
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(&bad, CONFIG.to_string() + "primary: recal\n").unwrap();
    let o = run_env(&bad, &store, &tmp.path().join("c"), &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("field `primary`") && err.contains("recall"),
        "{err}"
    );
}
