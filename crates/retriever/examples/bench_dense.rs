//! Exact dense top-k throughput and agreement against faiss-cpu's `IndexFlatIP` (issue 40),
//! driven by `scripts/bench_dense_peers.sh`.
//!
//! ```text
//! cargo run --release -p retriever --example bench_dense -- PASSAGES QUERIES DIM TOPK_OUT [K] [REPEAT]
//! ```
//! `PASSAGES` and `QUERIES`: raw little-endian f32 matrices, row-major, `DIM` columns
//! (unit rows, as `scripts/bench_dense_peers.py make` writes them). Builds
//! [`DenseIndex::new`] (which normalises the rows again and stores one tensor) and runs
//! [`DenseIndex::search_batch`] over all queries at once, as the runner does for a cell's
//! questions; both best of `REPEAT` (default 3). Writes each query's top-`K` (default 10)
//! passage numbers (0-based rows of `PASSAGES`, best first, space-separated) to `TOPK_OUT` and
//! prints one JSON object: passages, queries, threads, build seconds, queries per second.
//! `BENCH_QUERY_BLOCK` and `BENCH_PASSAGE_TILE` override the index's blocking (for tuning;
//! the runner uses the defaults).

mod common;

use retriever::DenseIndex;
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("bench_dense: {e}");
        std::process::exit(1);
    }
}

/// Reads a raw little-endian f32 file.
fn read_f32(path: &str) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(path)?;
    if bytes.len() % 4 != 0 {
        return Err(format!("{path}: {} bytes is not a whole number of f32", bytes.len()).into());
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        return Err("usage: bench_dense PASSAGES QUERIES DIM TOPK_OUT [K] [REPEAT]".into());
    }
    let dim: usize = args[2].parse()?;
    let k: usize = args.get(4).map_or(Ok(10), |s| s.parse())?;
    let repeat: usize = args.get(5).map_or(Ok(3), |s| s.parse())?;
    let passages = read_f32(&args[0])?;
    let queries = read_f32(&args[1])?;
    let rows: Vec<&[f32]> = queries.chunks_exact(dim).collect();

    let mut build_s = f64::INFINITY;
    let mut index = None;
    for _ in 0..repeat.max(1) {
        drop(index.take());
        let copy = passages.clone();
        let t = Instant::now();
        let mut built = DenseIndex::new(copy, dim)?;
        if let Some(b) = std::env::var("BENCH_QUERY_BLOCK")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            built = built.with_query_block(b);
        }
        if let Some(t) = std::env::var("BENCH_PASSAGE_TILE")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            built = built.with_passage_tile(t);
        }
        build_s = build_s.min(t.elapsed().as_secs_f64());
        index = Some(built);
    }
    let index = index.ok_or("no index")?;
    let n = index.len();

    let mut search_s = f64::INFINITY;
    let mut top = Vec::new();
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        top = index.search_batch(&rows, k, &[])?;
        search_s = search_s.min(t.elapsed().as_secs_f64());
    }
    common::write_top_k(&args[3], &top)?;
    common::print_record(n, rows.len(), build_s, search_s);
    Ok(())
}
