//! Embedding throughput benchmark (driven by `scripts/bench_embed.sh`).
//!
//! ```text
//! cargo run --release -p embed --example bench_embed -- \
//!     --model models/all-MiniLM-L6-v2 --sentences sentences.jsonl \
//!     [--impl fused|reference|both] [--batch-size 64] [--repeat 3] [--compare ST.f32] [--gemm]
//! ```
//! `--sentences`: one JSON string per line. Threads: `RAYON_NUM_THREADS` (rayon and candle).
//! Prints one JSON object per implementation: sentences, tokens (word pieces after truncation,
//! special tokens included), best-of-`repeat` seconds, sentences/s and tokens/s, and with
//! `--compare` the minimum cosine against the other implementation's vectors. `--gemm` first
//! prints candle's matmul GFLOP/s for the feed-forward shape `[1792, 384] x [384, 1536]`.

use std::time::Instant;

use embed::{BatchConfig, BertEmbedder, BertOptions, Embedder, ForwardImpl};

fn main() {
    if let Err(e) = run() {
        eprintln!("bench_embed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let model = arg("--model").ok_or("--model DIR is required")?;
    let sentences = arg("--sentences").ok_or("--sentences FILE is required")?;
    let which = arg("--impl").unwrap_or_else(|| "fused".into());
    let batch_size: usize = arg("--batch-size").map_or(Ok(64), |s| s.parse())?;
    let repeat: usize = arg("--repeat").map_or(Ok(3), |s| s.parse())?;
    // Optional: raw little-endian f32 vectors of the same sentences from another implementation.
    let compare: Option<Vec<f32>> = match arg("--compare") {
        Some(p) => Some(
            std::fs::read(p)?
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        None => None,
    };

    let text = std::fs::read_to_string(&sentences)?;
    let texts: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str::<String>)
        .collect::<Result<_, _>>()?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let impls: Vec<ForwardImpl> = match which.as_str() {
        "fused" => vec![ForwardImpl::Fused],
        "reference" => vec![ForwardImpl::CandleReference],
        "both" => vec![ForwardImpl::Fused, ForwardImpl::CandleReference],
        other => return Err(format!("--impl {other}: expected fused, reference or both").into()),
    };
    let threads = rayon::current_num_threads();
    if args.iter().any(|a| a == "--gemm") {
        // The feed-forward up-projection of a 64 x 28-token batch: [1792, 384] x [384, 1536].
        let (m, k, n) = (1792usize, 384usize, 1536usize);
        let dev = candle_core::Device::Cpu;
        let x = candle_core::Tensor::rand(0f32, 1f32, (m, k), &dev)?;
        let w = candle_core::Tensor::rand(0f32, 1f32, (k, n), &dev)?;
        for _ in 0..5 {
            x.matmul(&w)?;
        }
        let reps = 40;
        let t0 = Instant::now();
        for _ in 0..reps {
            x.matmul(&w)?;
        }
        let s = t0.elapsed().as_secs_f64();
        println!(
            "{}",
            serde_json::json!({"impl": "candle-matmul", "shape": [m, k, n], "threads": threads,
                "gflops": 2.0 * (m * k * n * reps) as f64 / s / 1e9})
        );
    }
    for imp in impls {
        let opts = BertOptions {
            batch: BatchConfig {
                max_batch_size: batch_size,
                max_batch_tokens: batch_size * 512,
            },
            forward: imp,
            ..BertOptions::default()
        };
        let e = BertEmbedder::load_with(&model, opts)?;
        // Warm-up (allocator, page faults, lazily initialised kernels).
        e.embed(&refs[..refs.len().min(128)])?;
        let before = e.stats();
        let mut best = f64::INFINITY;
        let mut last = Vec::new();
        for _ in 0..repeat.max(1) {
            let t0 = Instant::now();
            last = e.embed(&refs)?;
            best = best.min(t0.elapsed().as_secs_f64());
        }
        if let Some(c) = &compare {
            if c.len() != refs.len() * e.dim() {
                return Err(format!(
                    "--compare holds {} floats, expected {}",
                    c.len(),
                    refs.len() * e.dim()
                )
                .into());
            }
        }
        let min_cosine = compare.as_ref().map(|c| {
            let dim = e.dim();
            last.iter()
                .enumerate()
                .map(|(i, v)| embed::cosine(v, &c[i * dim..(i + 1) * dim]))
                .fold(f64::INFINITY, f64::min)
        });
        let s = e.stats();
        let tokens = (s.tokens - before.tokens) / repeat.max(1) as u64;
        let name = match imp {
            ForwardImpl::Fused => "chunkbench-fused",
            ForwardImpl::CandleReference => "candle-bertmodel",
        };
        println!(
            "{}",
            serde_json::json!({
                "impl": name,
                "threads": threads,
                "batch_size": batch_size,
                "sentences": refs.len(),
                "tokens": tokens,
                "seconds": best,
                "sentences_per_s": refs.len() as f64 / best,
                "tokens_per_s": tokens as f64 / best,
                "truncated": (s.truncated - before.truncated) / repeat.max(1) as u64,
                "min_cosine_vs_reference": min_cosine,
            })
        );
    }
    Ok(())
}
