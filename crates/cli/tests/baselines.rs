//! The closed-book (`kind: no-retrieval`) and gold-evidence (`kind: oracle`) baselines end to
//! end on real SciQ, beside a fixed-size strategy: closed-book reads no passages (0 words,
//! every option tied for the lexical reader), the oracle reads exactly each question's
//! evidence spans (recall 1 where there is evidence, closed-book where there is none), and
//! both are compared with the baseline in summary.md like any strategy.

mod common;
use common::{documents, run_yaml, store};
use std::collections::HashMap;

const CONFIG: &str = "name: baselines
datasets: [sciq]
limit: 60
strategies:
  fixed-100: {kind: fixed, size: 100}
  closed-book: {kind: no-retrieval}
  oracle: {kind: oracle}
baseline: fixed-100
retrievers:
  bm25: {kind: bm25}
k: [3]
readers:
  lexical: {kind: lexical}
bootstrap_resamples: 200
";

#[test]
fn closed_book_and_oracle_read_what_they_promise() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_yaml(tmp.path(), "baselines", CONFIG, &store());
    let docs = documents("sciq");
    let evidence: HashMap<String, Vec<(String, usize, usize)>> =
        std::fs::read_to_string(store().join("sciq/questions.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let spans = v["evidence"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|e| {
                                (
                                    e["doc_id"].as_str().unwrap().to_string(),
                                    e["start"].as_u64().unwrap() as usize,
                                    e["end"].as_u64().unwrap() as usize,
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                (v["id"].as_str().unwrap().to_string(), spans)
            })
            .collect();
    let mut rdr = csv::Reader::from_path(run.join("per_question.csv")).unwrap();
    let headers = rdr.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (mut closed, mut oracle, mut with_evidence) = (0, 0, 0);
    for r in rdr.records() {
        let r = r.unwrap();
        match &r[col("strategy")] {
            "closed-book" => {
                closed += 1;
                assert_eq!(&r[col("passages")], "");
                assert_eq!(&r[col("words")], "0");
                assert_eq!(&r[col("correct")], "0", "a full tie is never correct");
                assert_eq!(&r[col("tied")], "4");
            }
            "oracle" => {
                oracle += 1;
                let want = &evidence[&r[col("question_id")]];
                let ids: Vec<String> = want
                    .iter()
                    .map(|(d, s, e)| format!("{d}:{s}-{e}"))
                    .collect();
                assert_eq!(r[col("passages")], ids.join(" "));
                let words: usize = want
                    .iter()
                    .map(|(d, s, e)| docs[d][*s..*e].split_whitespace().count())
                    .sum();
                assert_eq!(r[col("words")].parse::<usize>().unwrap(), words);
                if want.is_empty() {
                    assert_eq!(&r[col("recall")], "");
                } else {
                    with_evidence += 1;
                    assert_eq!(&r[col("recall")], "1.0");
                    assert_eq!(&r[col("evidence_hit")], "1");
                }
            }
            _ => {}
        }
    }
    assert_eq!((closed, oracle), (60, 60));
    assert!(with_evidence >= 30, "{with_evidence} of 60 with evidence");
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    for s in ["| closed-book |", "| oracle |", "| fixed-100 |"] {
        assert!(md.contains(s), "{s} missing from summary.md:\n{md}");
    }
    // The retrieval table: the oracle is perfect on every evidence metric (words and chars),
    // closed book is 0.
    let table = &md[md
        .find("## Retrieval against gold evidence")
        .expect("retrieval section")..];
    // Cells by column label (the table's columns follow the metric registry).
    let header: Vec<String> = table
        .lines()
        .find(|l| l.starts_with("| dataset |"))
        .expect("retrieval table header")
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    let row = |s: &str| -> std::collections::BTreeMap<String, String> {
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("| sciq | {s} | bm25 | 3 |")))
            .unwrap_or_else(|| panic!("no {s} row in:\n{table}"));
        header
            .iter()
            .cloned()
            .zip(line.split('|').map(|c| c.trim().to_string()))
            .collect()
    };
    let (perfect, zero) = (
        "1.000 ± 0.000 [1.000, 1.000]",
        "0.000 ± 0.000 [0.000, 0.000]",
    );
    let oracle = row("oracle");
    for unit in ["words", "chars"] {
        for m in ["span recall", "span precision", "span IoU"] {
            assert_eq!(oracle[&format!("{m} ({unit})")], perfect, "{oracle:?}");
        }
    }
    for m in ["recall@k", "MRR", "nDCG@k"] {
        assert_eq!(oracle[m], perfect, "{oracle:?}");
    }
    let closed = row("closed-book");
    for (label, cell) in &closed {
        let fixed = ["", "dataset", "strategy", "retriever", "k", "n"];
        if !fixed.contains(&label.as_str()) && !label.starts_with("precision_Ω") {
            assert_eq!(
                cell, zero,
                "closed book retrieves nothing: {label} in {closed:?}"
            );
        }
    }
    // precision_Ω (words, chars) bounds a chunking: neither baseline has an index.
    for r in [&oracle, &closed] {
        for unit in ["words", "chars"] {
            assert_eq!(r[&format!("precision_Ω ({unit})")], "–", "{r:?}");
        }
    }
}
