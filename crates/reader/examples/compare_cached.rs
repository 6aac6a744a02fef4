//! Compares a run's LLM reads with the answers another reader identity left in the response
//! cache for the same prompts: how many reads have an old answer, how many choose the same
//! option, and the largest score difference. Used to check that a new reader engine gives the
//! answers of the old one (results/ear/smollm2-153, issue 18).
//!
//! ```text
//! cargo run --workspace --example compare_cached -- RUN_DIR DATA_DIR OLD_IDENTITY
//!     [CACHE_DIR=.cache/responses] [READER=smollm2] [SCORING=cloze]
//! ```
//! `RUN_DIR/per_question.csv` gives each read's question, passages (`doc:start-end` byte
//! spans of `DATA_DIR/documents.jsonl`), choice and scores; the prompt is rebuilt by
//! [`reader::LlmReader::cache_material`] and looked up under `OLD_IDENTITY`
//! ([`reader::ResponseCache::key`]).

use reader::{LlmConfig, LlmReader, Reader, ReaderInput, ResponseCache};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;

#[path = "common/mod.rs"]
mod common;
use common::read_jsonl;

#[derive(Deserialize)]
struct Doc {
    id: String,
    text: String,
}

#[derive(Deserialize)]
struct Question {
    id: String,
    question: String,
    options: Vec<String>,
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let run = PathBuf::from(&a[1]);
    let data = PathBuf::from(&a[2]);
    let old = &a[3];
    let cache = PathBuf::from(a.get(4).map_or(".cache/responses", String::as_str));
    let reader_name = a.get(5).map_or("smollm2", String::as_str);
    let scoring = a.get(6).map_or("cloze", String::as_str);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let model = root.join("models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    let cfg: LlmConfig =
        serde_json::from_str(&format!("{{\"scoring\":\"{scoring}\"}}")).expect("scoring");
    let reader = LlmReader::load(&model, cfg).unwrap_or_else(|e| panic!("{e}"));
    let docs: HashMap<String, String> = read_jsonl::<Doc>(&data.join("documents.jsonl"))
        .into_iter()
        .map(|d| (d.id, d.text))
        .collect();
    let qs: HashMap<String, Question> = read_jsonl::<Question>(&data.join("questions.jsonl"))
        .into_iter()
        .map(|q| (q.id.clone(), q))
        .collect();
    let mut csv = csv::Reader::from_path(run.join("per_question.csv")).expect("per_question.csv");
    let head = csv.headers().expect("header").clone();
    let col = |n: &str| head.iter().position(|h| h == n).expect(n);
    let (c_reader, c_q, c_choice, c_scores, c_pass, c_strat, c_k) = (
        col("reader"),
        col("question_id"),
        col("choice"),
        col("scores"),
        col("passages"),
        col("strategy"),
        col("k"),
    );
    let (mut reads, mut found, mut same, mut max_d) = (0, 0, 0, 0f64);
    for row in csv.records() {
        let row = row.expect("row");
        if &row[c_reader] != reader_name {
            continue;
        }
        reads += 1;
        let q = &qs[&row[c_q]];
        let texts: Vec<&str> = row[c_pass]
            .split_whitespace()
            .map(|p| {
                let (doc, span) = p.rsplit_once(':').expect("doc:start-end");
                let (s, e) = span.split_once('-').expect("start-end");
                &docs[doc][s.parse::<usize>().unwrap()..e.parse::<usize>().unwrap()]
            })
            .collect();
        let input = ReaderInput {
            question: &q.question,
            options: &q.options,
            passages: &texts,
        };
        let key = ResponseCache::key(old, &reader.cache_material(&input).expect("material"));
        let path = cache.join(&key[..2]).join(format!("{key}.json"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let entry: serde_json::Value = serde_json::from_str(&text).expect("cache entry");
        let out = &entry["output"];
        found += 1;
        let old_choice = out["choice"].as_u64().expect("choice") as usize;
        let new_choice: usize = row[c_choice].parse().expect("choice");
        let new_scores: Vec<f64> = row[c_scores]
            .split(';')
            .map(|s| s.parse().unwrap())
            .collect();
        let d = out["scores"]
            .as_array()
            .expect("scores")
            .iter()
            .zip(&new_scores)
            .map(|(o, n)| (o.as_f64().unwrap() - n).abs())
            .fold(0f64, f64::max);
        max_d = max_d.max(d);
        if old_choice == new_choice {
            same += 1;
        } else {
            println!(
                "differs: {} {} k={} old {old_choice} new {new_choice} scores {}",
                &row[c_q], &row[c_strat], &row[c_k], &row[c_scores]
            );
        }
    }
    println!(
        "{reads} reads; {found} with an answer under the old identity; same choice {same}/{found}; \
         max |Δ score| {max_d:.2e} nats (per_question.csv rounds scores to 6 decimals)"
    );
}
