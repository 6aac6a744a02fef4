//! SmolLM2-135M-Instruct on the first N SciQ questions: closed-book vs oracle (gold evidence
//! passages) vs top-3 BM25 over fixed 100-word chunks. Prints accuracy, ties, truncations,
//! prompt tokens and seconds per question for each condition.
//!
//! ```text
//! cargo run -p reader --release --example smollm2_sciq -- [N=50] [MODEL.gguf] [DATA_DIR]
//! ```
//! Defaults: the pinned model under `models/` (run `chunkbench models fetch`) and
//! `data/sciq/` (canonical `documents.jsonl` / `questions.jsonl`, docs/reference.md §3). By default it
//! evaluates two reader configurations, letter scoring (the default [`LlmConfig`]) and cloze
//! scoring ([`Scoring::Cloze`]); `SMOLLM2_SCIQ_CONFIG` (an `LlmConfig` as JSON, e.g.
//! `{"chat":"plain"}`) evaluates that one instead.
//!
//! Retrieval matches the runner's defaults (crates/evaluator/src/run.rs): fixed 100-word
//! chunks without overlap, BM25 (k1 = 1.2, b = 0.75) with the question followed by its options
//! as the query, over the whole corpus.

use chunker::{Document, FixedConfig};
use reader::{oracle_passages, LlmConfig, LlmReader, Reader, ReaderInput, ReaderOutput, Scoring};
use retriever::{Bm25, Bm25Params, PassageIndex};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[path = "common/mod.rs"]
mod common;
use common::read_jsonl;

#[derive(Deserialize)]
struct Evidence {
    doc_id: String,
    start: usize,
    end: usize,
}

#[derive(Deserialize)]
struct Question {
    id: String,
    question: String,
    options: Vec<String>,
    answer: usize,
    #[serde(default)]
    evidence: Option<Vec<Evidence>>,
}

#[derive(Default)]
struct Tally {
    n: usize,
    correct: usize,
    ties: usize,
    truncated: usize,
    prompt_tokens: usize,
    seconds: f64,
    choices: Vec<usize>,
}

impl Tally {
    fn add(&mut self, out: &ReaderOutput, gold: usize, secs: f64) {
        self.n += 1;
        self.correct += usize::from(out.is_correct(gold));
        self.ties += usize::from(out.tied > 1);
        self.truncated += usize::from(out.context.truncated());
        self.prompt_tokens += out.context.prompt_tokens;
        self.seconds += secs;
        self.choices.push(out.choice);
    }
    fn row(&self, name: &str) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "| {name:<34} | {:>3} | {:>5.1} % ({:>2}/{:<2}) | {:>4} | {:>9} | {:>13.0} | {:>8.3} |",
            self.n,
            100.0 * self.correct as f64 / n,
            self.correct,
            self.n,
            self.ties,
            self.truncated,
            self.prompt_tokens as f64 / n,
            self.seconds / n
        )
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let n: usize = args.get(1).map_or(50, |s| s.parse().expect("N"));
    let model = args.get(2).map_or_else(
        || root.join("models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf"),
        PathBuf::from,
    );
    let data = args
        .get(3)
        .map_or_else(|| root.join("data/sciq"), PathBuf::from);

    let docs: Vec<Document> = read_jsonl(&data.join("documents.jsonl"));
    let questions: Vec<Question> = read_jsonl(&data.join("questions.jsonl"));
    let questions = &questions[..n.min(questions.len())];
    let by_id: HashMap<&str, &str> = docs
        .iter()
        .map(|d| (d.id.as_str(), d.text.as_str()))
        .collect();

    let t = Instant::now();
    let fixed = FixedConfig::new(100, 0).expect("fixed config");
    let chunks: Vec<chunker::Chunk> = docs.iter().flat_map(|d| fixed.chunk(d)).collect();
    let index = PassageIndex::new(&docs, chunks).expect("passage index");
    let bm25 = Bm25::new(&index, Bm25Params::default());
    eprintln!(
        "{} documents, {} passages, BM25 built in {:.2}s",
        docs.len(),
        index.len(),
        t.elapsed().as_secs_f64()
    );

    // Reader configurations (LlmConfig JSON): SMOLLM2_SCIQ_CONFIG, or by default the letter
    // scoring (lm-evaluation-harness MMLU style) and the cloze scoring (its SciQ style).
    let configs: Vec<(String, LlmConfig)> = match std::env::var("SMOLLM2_SCIQ_CONFIG") {
        Ok(j) => vec![(
            j.clone(),
            serde_json::from_str(&j).unwrap_or_else(|e| panic!("SMOLLM2_SCIQ_CONFIG: {e}")),
        )],
        Err(_) => vec![
            ("letters (default)".into(), LlmConfig::default()),
            (
                "cloze".into(),
                LlmConfig {
                    scoring: Scoring::Cloze,
                    ..Default::default()
                },
            ),
        ],
    };
    for (label, cfg) in configs {
        evaluate(&label, cfg, &model, questions, &index, &bm25, &by_id);
    }
}

fn evaluate(
    label: &str,
    cfg: LlmConfig,
    model: &Path,
    questions: &[Question],
    index: &PassageIndex,
    bm25: &Bm25,
    by_id: &HashMap<&str, &str>,
) {
    let t = Instant::now();
    eprintln!(
        "config: {}",
        serde_json::to_string(&cfg).unwrap_or_default()
    );
    let reader = LlmReader::load(model, cfg).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "loaded {} ({} arch, window {}) in {:.2}s; identity {}",
        model.display(),
        reader.architecture(),
        reader.window(),
        t.elapsed().as_secs_f64(),
        reader.identity()
    );
    eprintln!("candle threads: {}", candle_core::utils::get_num_threads());

    let mut closed = Tally::default();
    let mut oracle = Tally::default();
    let mut top3 = Tally::default();
    let mut closed_ev = Tally::default(); // closed-book on the questions with evidence
    let mut top3_ev = Tally::default();
    let mut evidence_hit = 0usize;
    for (qi, q) in questions.iter().enumerate() {
        let run = |passages: &[&str]| {
            let t = Instant::now();
            let out = reader
                .read(&ReaderInput {
                    question: &q.question,
                    options: &q.options,
                    passages,
                })
                .unwrap_or_else(|e| panic!("{}: {e}", q.id));
            (out, t.elapsed().as_secs_f64())
        };
        let (c, s) = run(&[]);
        closed.add(&c, q.answer, s);
        let mut query = q.question.clone();
        for o in &q.options {
            query.push('\n');
            query.push_str(o);
        }
        let hits = bm25.search(&query, 3, None);
        let passages: Vec<&str> = hits.iter().map(|h| index.text(h.passage)).collect();
        let (tk, s) = run(&passages);
        top3.add(&tk, q.answer, s);
        if let Some(ev) = &q.evidence {
            let spans = ev.iter().map(|e| (e.doc_id.as_str(), e.start, e.end));
            let gold = oracle_passages(spans, |id| by_id.get(id).copied())
                .unwrap_or_else(|e| panic!("{}: {e}", q.id));
            let (o, s) = run(&gold);
            oracle.add(&o, q.answer, s);
            closed_ev.add(&c, q.answer, 0.0);
            top3_ev.add(&tk, q.answer, 0.0);
            let hit = hits.iter().any(|h| {
                let p = &index.passages()[h.passage];
                ev.iter()
                    .any(|e| e.doc_id == p.doc_id && p.span.start < e.end && e.start < p.span.end)
            });
            evidence_hit += usize::from(hit);
        }
        eprintln!(
            "{:>3} {} gold={} closed={} top3={} {}",
            qi + 1,
            q.id,
            q.answer,
            c.choice,
            tk.choice,
            tk.raw
        );
    }
    println!(
        "\nSmolLM2-135M-Instruct Q4_1, {label}, first {} SciQ validation questions",
        questions.len()
    );
    println!(
        "| condition                          |   n | accuracy        | ties | truncated | prompt tokens | s / q    |"
    );
    println!(
        "|------------------------------------|-----|-----------------|------|-----------|---------------|----------|"
    );
    println!("{}", closed.row("closed-book (all)"));
    println!("{}", top3.row("top-3 BM25, fixed 100 words (all)"));
    println!("{}", closed_ev.row("closed-book (with evidence)"));
    println!("{}", oracle.row("oracle evidence (with evidence)"));
    println!("{}", top3_ev.row("top-3 BM25 (with evidence)"));
    let mut hist = [0usize; 26];
    for c in &closed.choices {
        hist[*c] += 1;
    }
    println!(
        "\nevidence hit by top-3: {evidence_hit}/{} questions with evidence; closed-book choices \
         by letter: {:?}; chance = 25 %",
        oracle.n,
        &hist[..4]
    );
    println!(
        "s / q excludes model loading; the (with evidence) closed-book and top-3 rows reuse the \
         answers of the rows above (their timing column is 0)."
    );
}
