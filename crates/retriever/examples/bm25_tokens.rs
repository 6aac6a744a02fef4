//! Exports the analyser output for the BM25 golden corpus, so the Python reference scores
//! exactly the token lists this crate indexes (scripts/bm25_goldens.sh).
//!
//! Usage: `cargo run -p retriever --example bm25_tokens -- CORPUS.json > TOKENS.json`.
//! Input: `{"passages": [text…], "queries": [text…]}`. Output: `{"analyzers": {NAME:
//! {"config": TextAnalyzer, "passages": [[term…]…], "queries": [[term…]…]}}}` for the
//! analysers `base` (lower-cased Unicode words) and `english` (plus NLTK stop words and
//! Snowball English stemming).

use retriever::TextAnalyzer;
use serde_json::{json, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: bm25_tokens CORPUS.json")?;
    let corpus: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let texts = |key: &str| -> Result<Vec<String>, String> {
        corpus[key]
            .as_array()
            .ok_or(format!("{path}: `{key}` is not an array"))?
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or(format!("{key}: not a string"))
            })
            .collect()
    };
    let (passages, queries) = (texts("passages")?, texts("queries")?);
    let mut analyzers = serde_json::Map::new();
    for (name, a) in [
        ("base", TextAnalyzer::default()),
        ("english", TextAnalyzer::english()),
    ] {
        let terms = |xs: &[String]| xs.iter().map(|t| a.terms(t)).collect::<Vec<_>>();
        analyzers.insert(
            name.to_string(),
            json!({"config": a, "passages": terms(&passages), "queries": terms(&queries)}),
        );
    }
    println!(
        "{}",
        serde_json::to_string(&json!({ "analyzers": analyzers }))?
    );
    Ok(())
}
