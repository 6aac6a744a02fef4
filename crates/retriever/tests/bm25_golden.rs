//! BM25 scores equal the bm25s reference (Lucene idf, scores × (k1 + 1)) within 1e-6 on a
//! small OpenStax Biology corpus, for the base and English analysers. Goldens are written by
//! scripts/bm25_goldens.sh from the token lists this crate's analyser exports.

use retriever::{Bm25, Bm25Params, TextAnalyzer};
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn bm25_matches_bm25s_goldens() {
    let corpus = load("bm25_corpus.json");
    let goldens = load("bm25_goldens.json");
    let passages = strings(&corpus["passages"]);
    let queries = strings(&corpus["queries"]);
    let params = Bm25Params {
        k1: goldens["k1"].as_f64().unwrap(),
        b: goldens["b"].as_f64().unwrap(),
    };
    assert_eq!(params, Bm25Params::default());
    let analyzers = goldens["analyzers"].as_object().unwrap();
    assert_eq!(analyzers.len(), 2);
    let mut compared = 0;
    let mut worst = 0.0f64;
    for (name, g) in analyzers {
        let analyzer: TextAnalyzer = serde_json::from_value(g["config"].clone()).unwrap();
        // The reference scored exactly the terms this analyser produces.
        for (text, terms) in passages.iter().zip(g["passages"].as_array().unwrap()) {
            assert_eq!(
                analyzer.terms(text),
                strings(terms),
                "{name}: passage terms"
            );
        }
        for (text, terms) in queries.iter().zip(g["queries"].as_array().unwrap()) {
            assert_eq!(analyzer.terms(text), strings(terms), "{name}: query terms");
        }
        let bm = Bm25::from_texts(passages.iter().map(String::as_str), params, analyzer);
        let golden_scores = g["scores"].as_array().unwrap();
        assert_eq!(golden_scores.len(), queries.len());
        for (q, row) in queries.iter().zip(golden_scores) {
            let ours = bm.scores(q);
            let row: Vec<f64> = row
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert_eq!(ours.len(), row.len());
            for (p, (a, b)) in ours.iter().zip(&row).enumerate() {
                let d = (a - b).abs();
                worst = worst.max(d);
                assert!(d <= 1e-6, "{name}: query {q:?} passage {p}: {a} vs {b}");
                compared += 1;
            }
            // Same ranking as the reference (ties by passage order), top 5.
            let hits = bm.search(q, 5, None);
            let mut expect: Vec<usize> = (0..row.len()).filter(|&p| row[p] > 0.0).collect();
            expect.sort_by(|&x, &y| row[y].total_cmp(&row[x]).then(x.cmp(&y)));
            expect.truncate(5);
            let got: Vec<usize> = hits.iter().map(|h| h.passage).collect();
            assert_eq!(got, expect, "{name}: ranking for {q:?}");
        }
    }
    assert!(compared >= 2 * 12 * 23, "compared {compared} scores");
    eprintln!("bm25 golden: {compared} scores, max |diff| = {worst:e}");
}
