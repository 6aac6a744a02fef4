//! Local reader speed on the EAR textbook prompts: seconds per question and prompt tokens/s
//! of the candle GGUF reader, and the matmul bound measured in the same process.
//!
//! ```text
//! cargo run --workspace --example bench_reader -- [--n 40] [--k 3] [--repeat 2]
//!     [--model M.gguf] [--data data/openstax-mmlu-153] [--scoring cloze] [--dump FILE]
//! ```
//! Passages are what the EAR baseline retrieves (`configs/ear.yaml`, `fixed-260-60`): fixed
//! 260-word chunks with 60 words of overlap over the dataset's documents, BM25 (k1 1.2,
//! b 0.75) with the question followed by its options as the query, top `k`. Each question's
//! prompt is built by the reader itself ([`reader::GgufPrompt::prepare`]) and scored with
//! [`LlmReader::score_tokens`]; a question's time is the best of `repeat` passes.
//!
//! **The bound.** The prompt's forward pass costs `2 · P_lin` FLOPs per token for the linear
//! layers (`P_lin` = the per-token weights of q, k, v, o, gate, up and down over all layers)
//! plus `4 · d · j` per layer for causal attention at position `j`; the option tokens cost the
//! same plus `2 · d · vocab` each for their logits. The bound is that total divided by the
//! f32 matmul throughput measured here on the model's own shapes (`[512, d] × [d, ff]`
//! through candle/gemm, the kernels the reader uses), at the same thread count.
//!
//! `--gemm-only` prints the matmul throughput of the model's shapes (weights `[in, out]`
//! contiguous, as the decoder holds them, and transposed) and exits.
//!
//! `--dump FILE` writes one JSON line per question (`id`, `ids`, `conts`, `scores`, `seconds`)
//! for `scripts/bench_reader.py`, which scores the same token ids with llama.cpp. Prints one
//! JSON object with the figures on stdout.

use chunker::{Document, FixedConfig};
use reader::{LlmConfig, LlmReader, ReaderInput, Scoring};
use retriever::{Bm25, Bm25Params, PassageIndex};
use serde::Deserialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[path = "common/mod.rs"]
mod common;
use common::read_jsonl;

#[derive(Deserialize)]
struct Question {
    id: String,
    question: String,
    options: Vec<String>,
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Best-of-5 f32 matmul throughput (FLOP/s) of `[m, k] × [k, n]` on the current pool, with the
/// weights `[k, n]` contiguous (as the decoder holds them) or, with `transposed`, the GGUF's
/// `[n, k]` rows used transposed.
fn matmul_flops(m: usize, k: usize, n: usize, transposed: bool) -> f64 {
    use candle_core::{DType, Device, Tensor};
    let a = Tensor::ones((m, k), DType::F32, &Device::Cpu).expect("a");
    let b = if transposed {
        Tensor::ones((n, k), DType::F32, &Device::Cpu).and_then(|b| b.t())
    } else {
        Tensor::ones((k, n), DType::F32, &Device::Cpu)
    }
    .expect("b");
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        let c = a.matmul(&b).expect("matmul");
        let _ = c.sum_all().expect("sum");
        best = best.min(t.elapsed().as_secs_f64());
    }
    2.0 * (m * k * n) as f64 / best
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let n: usize = arg(&args, "--n").map_or(40, |s| s.parse().expect("--n"));
    let k: usize = arg(&args, "--k").map_or(3, |s| s.parse().expect("--k"));
    let repeat: usize = arg(&args, "--repeat").map_or(2, |s| s.parse().expect("--repeat"));
    let model = arg(&args, "--model").map_or_else(
        || root.join("models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf"),
        PathBuf::from,
    );
    let data =
        arg(&args, "--data").map_or_else(|| root.join("data/openstax-mmlu-153"), PathBuf::from);
    let scoring: Scoring = arg(&args, "--scoring").map_or(Scoring::Cloze, |s| {
        serde_json::from_str(&format!("\"{s}\"")).expect("--scoring letters|cloze|cloze-norm")
    });
    let dump = arg(&args, "--dump").map(PathBuf::from);
    if args.iter().any(|a| a == "--gemm-only") {
        // Prompt-pass shapes of SmolLM2-135M (d 576, ff 1536, 9 heads of 64) at ~1,074 tokens,
        // a 50-row tail, the attention products of one 128-row block, and a square reference.
        for (m, k, n) in [
            (512, 576, 3072),
            (1074, 576, 3072),
            (1074, 576, 960),
            (1074, 1536, 576),
            (50, 576, 3072),
            (384, 64, 1074),
            (384, 1074, 64),
            (2048, 2048, 2048),
        ] {
            println!(
                "{m}x{k}x{n}: {:.1} GFLOP/s (weights transposed) {:.1} (contiguous)",
                matmul_flops(m, k, n, true) / 1e9,
                matmul_flops(m, k, n, false) / 1e9
            );
        }
        return;
    }

    let docs: Vec<Document> = read_jsonl(&data.join("documents.jsonl"));
    let questions: Vec<Question> = read_jsonl(&data.join("questions.jsonl"));
    let questions = &questions[..n.min(questions.len())];
    let fixed = FixedConfig::new(260, 60).expect("fixed config");
    let chunks: Vec<chunker::Chunk> = docs.iter().flat_map(|d| fixed.chunk(d)).collect();
    let index = PassageIndex::new(&docs, chunks).expect("passage index");
    let bm25 = Bm25::new(&index, Bm25Params::default());

    let t = Instant::now();
    let reader = LlmReader::load(
        &model,
        LlmConfig {
            scoring,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let load_s = t.elapsed().as_secs_f64();
    let md = reader::gguf_prompt::read_metadata(&model).unwrap_or_else(|e| panic!("{e}"));
    let arch = reader.architecture().to_string();
    let get = |key: &str| {
        md.metadata
            .get(&format!("{arch}.{key}"))
            .and_then(|v| v.to_u32().ok())
            .unwrap_or_else(|| panic!("{arch}.{key} missing")) as f64
    };
    let (d, ff, layers, heads, kv_heads) = (
        get("embedding_length"),
        get("feed_forward_length"),
        get("block_count"),
        get("attention.head_count"),
        get("attention.head_count_kv"),
    );
    let vocab = reader.tokenizer().vocab_size() as f64;
    let p_lin = layers * (d * d * (2.0 + 2.0 * kv_heads / heads) + 3.0 * d * ff);

    let mut prepared = Vec::new();
    for q in questions {
        let mut query = q.question.clone();
        for o in &q.options {
            query.push('\n');
            query.push_str(o);
        }
        let hits = bm25.search(&query, k, None);
        let passages: Vec<&str> = hits.iter().map(|h| index.text(h.passage)).collect();
        let p = reader
            .prompt()
            .prepare(&ReaderInput {
                question: &q.question,
                options: &q.options,
                passages: &passages,
            })
            .unwrap_or_else(|e| panic!("{}: {e}", q.id));
        prepared.push((q.id.clone(), p));
    }

    let threads = candle_core::utils::get_num_threads();
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut rows = Vec::new();
    let (mut total_s, mut flops, mut prompt_tokens, mut cont_tokens) = (0.0, 0.0, 0usize, 0usize);
    for (id, p) in &prepared {
        let mut best = f64::INFINITY;
        let mut scores = Vec::new();
        for _ in 0..repeat.max(1) {
            let t = Instant::now();
            let (s, _) = reader
                .score_tokens(&p.ids, &p.conts)
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            best = best.min(t.elapsed().as_secs_f64());
            scores = s;
        }
        total_s += best;
        let np = p.ids.len() as f64;
        prompt_tokens += p.ids.len();
        flops += 2.0 * p_lin * np + 4.0 * d * layers * np * (np + 1.0) / 2.0;
        for c in &p.conts {
            let fed = c.len().saturating_sub(1) as f64;
            cont_tokens += c.len() - 1;
            flops += fed * (2.0 * p_lin + 2.0 * d * vocab + 4.0 * d * layers * (np + fed));
        }
        rows.push(serde_json::json!({
            "id": id, "ids": p.ids, "conts": p.conts, "scores": scores, "seconds": best,
        }));
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let gflops = {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        pool.install(|| matmul_flops(512, d as usize, ff as usize, false)) / 1e9
    };
    if let Some(path) = dump {
        let mut f =
            std::fs::File::create(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for r in &rows {
            writeln!(f, "{r}").expect("write dump");
        }
    }
    let nq = prepared.len() as f64;
    let bound_s = flops / (gflops * 1e9) / nq;
    let out = serde_json::json!({
        "engine": "chunkbench-decoder",
        "model": model.display().to_string(),
        "arch": arch,
        "scoring": scoring,
        "threads": threads,
        "questions": prepared.len(),
        "k": k,
        "load_seconds": load_s,
        "mean_prompt_tokens": prompt_tokens as f64 / nq,
        "mean_option_tokens_fed": cont_tokens as f64 / nq,
        "seconds_per_question": total_s / nq,
        "prompt_tokens_per_second": prompt_tokens as f64 / total_s,
        "matmul_gflops": gflops,
        "bound_seconds_per_question": bound_s,
        "fraction_of_bound": bound_s / (total_s / nq),
        "load_before": load_before.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        "load_after": load_after.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    });
    println!("{out}");
}
