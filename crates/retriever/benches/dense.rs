//! Dense exact top-k throughput (issue 7): indexes of 10k and 100k random unit vectors
//! (384-d), 1k random unit queries, k = 10. Measures the blocked matmul search
//! ([`DenseIndex::search_batch`], 256-query blocks) against a plain per-query loop
//! ([`DenseIndex::search_loop`]) in the same run, once on one thread and once with queries
//! spread over the rayon pool, and checks that the paths return the same passages.
//!
//! Run with `cargo bench -p retriever --bench dense` (scripts/bench_retrieval.sh writes the
//! figures into BENCHMARKS.md). Environment: `BENCH_SIZES` (default `10000,100000`),
//! `BENCH_QUERIES` (1000), `BENCH_DIM` (384), `BENCH_K` (10), `BENCH_REPEATS` (3, best of),
//! `BENCH_TILE` / `BENCH_BLOCK` (passage tile and query block, defaults of [`DenseIndex`]),
//! `BENCH_JSON` (write the results there as JSON lines).

use rayon::prelude::*;
use retriever::{DenseIndex, Hit};
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Deterministic approximately Gaussian unit vectors (sum of 4 uniforms, xorshift64*).
fn unit_vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.max(1);
    let mut next = move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut v: Vec<f32> = (0..n * dim)
        .map(|_| next() + next() + next() + next())
        .collect();
    for row in v.chunks_mut(dim) {
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        row.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

fn best_of<T>(repeats: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(r);
    }
    (best, out.expect("at least one repeat"))
}

fn same_ids(a: &[Vec<Hit>], b: &[Vec<Hit>]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(x, y)| {
            x.iter().map(|h| h.passage).collect::<Vec<_>>()
                == y.iter().map(|h| h.passage).collect::<Vec<_>>()
        })
        .count()
}

fn main() {
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let nq = env("BENCH_QUERIES", 1000);
    let dim = env("BENCH_DIM", 384);
    let k = env("BENCH_K", 10);
    let repeats = env("BENCH_REPEATS", 3);
    let threads = rayon::current_num_threads();
    let mut json_lines = Vec::new();
    println!(
        "dense exact top-{k}, {dim}-d, {nq} queries, rayon threads {threads}, best of {repeats}"
    );
    println!("| passages | build s | matmul q/s | loop q/s (1 thread) | loop q/s ({threads} threads) | matmul / loop ({threads} threads) | same top-{k} |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for &n in &sizes {
        let data = unit_vectors(n, dim, 42 + n as u64);
        let qdata = unit_vectors(nq, dim, 7);
        let queries: Vec<&[f32]> = qdata.chunks(dim).collect();
        let t = Instant::now();
        let mut index = DenseIndex::new(data, dim).expect("valid matrix");
        if let Ok(t) = std::env::var("BENCH_TILE") {
            index = index.with_passage_tile(t.parse().expect("BENCH_TILE"));
        }
        if let Ok(b) = std::env::var("BENCH_BLOCK") {
            index = index.with_query_block(b.parse().expect("BENCH_BLOCK"));
        }
        let build = t.elapsed().as_secs_f64();
        // Warm-up (page in the matrix, start the pool).
        index
            .search_batch(&queries[..queries.len().min(64)], k, &[])
            .expect("search");
        let (t_mm, mm) = best_of(repeats, || {
            index.search_batch(&queries, k, &[]).expect("search")
        });
        let (t_loop1, loop1) = best_of(1, || {
            queries
                .iter()
                .map(|q| index.search_loop(q, k, None).expect("search"))
                .collect::<Vec<_>>()
        });
        let (t_loop_par, _) = best_of(repeats, || {
            queries
                .par_iter()
                .map(|q| index.search_loop(q, k, None).expect("search"))
                .collect::<Vec<_>>()
        });
        let qps = |t: f64| nq as f64 / t;
        let agree = same_ids(&mm, &loop1);
        println!(
            "| {n} | {build:.2} | {:.0} | {:.0} | {:.0} | {:.1}x | {agree}/{nq} |",
            qps(t_mm),
            qps(t_loop1),
            qps(t_loop_par),
            t_loop_par / t_mm
        );
        json_lines.push(format!(
            "{{\"passages\":{n},\"dim\":{dim},\"queries\":{nq},\"k\":{k},\"threads\":{threads},\"build_s\":{build:.4},\"matmul_qps\":{:.1},\"loop1_qps\":{:.1},\"loop_par_qps\":{:.1},\"same_topk\":{agree}}}",
            qps(t_mm),
            qps(t_loop1),
            qps(t_loop_par)
        ));
    }
    if let Ok(path) = std::env::var("BENCH_JSON") {
        std::fs::write(&path, json_lines.join("\n") + "\n").expect("write BENCH_JSON");
    }
}
