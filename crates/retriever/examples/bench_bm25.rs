//! BM25 throughput and agreement against bm25s (issue 40), driven by
//! `scripts/bench_bm25_peers.sh`.
//!
//! ```text
//! cargo run --release -p retriever --example bench_bm25 -- CORPUS QUERIES TOPK_OUT [K] [REPEAT]
//! ```
//! `CORPUS`: one passage per line, lowercase ASCII terms separated by single spaces (the base
//! analyser splits them back into exactly those terms, so chunkbench and the peer index the
//! same term lists); `QUERIES`: one query per line, the same way. Builds [`Bm25::from_texts`]
//! (k1 = 1.2, b = 0.75, Lucene idf) and retrieves the top-`K` (default 10) of every query on
//! the rayon pool with one [`Bm25Scratch`] per thread, as the runner does; both best of
//! `REPEAT` (default 3). Writes each query's top-`K` passage numbers (0-based line numbers of
//! `CORPUS`, best first, space-separated) to `TOPK_OUT` and prints one JSON object: passages,
//! queries, threads, build seconds and queries per second.

mod common;

use rayon::prelude::*;
use retriever::{Bm25, Bm25Params, Bm25Scratch, TextAnalyzer};
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("bench_bm25: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        return Err("usage: bench_bm25 CORPUS QUERIES TOPK_OUT [K] [REPEAT]".into());
    }
    let k: usize = args.get(3).map_or(Ok(10), |s| s.parse())?;
    let repeat: usize = args.get(4).map_or(Ok(3), |s| s.parse())?;
    let corpus = std::fs::read_to_string(&args[0])?;
    let queries = std::fs::read_to_string(&args[1])?;
    let passages: Vec<&str> = corpus.lines().collect();
    let queries: Vec<&str> = queries.lines().collect();

    let mut build_s = f64::INFINITY;
    let mut index = None;
    for _ in 0..repeat.max(1) {
        drop(index.take());
        let t = Instant::now();
        let bm25 = Bm25::from_texts(
            passages.iter().copied(),
            Bm25Params::default(),
            TextAnalyzer::default(),
        );
        build_s = build_s.min(t.elapsed().as_secs_f64());
        index = Some(bm25);
    }
    let bm25 = index.ok_or("no index")?;

    let mut search_s = f64::INFINITY;
    let mut top = Vec::new();
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        top = queries
            .par_iter()
            .map_init(Bm25Scratch::default, |scratch, q| {
                bm25.search_pooled_with(scratch, &[*q], k, None)
            })
            .collect::<Vec<_>>();
        search_s = search_s.min(t.elapsed().as_secs_f64());
    }
    common::write_top_k(&args[2], &top)?;
    common::print_record(passages.len(), queries.len(), build_s, search_s);
    Ok(())
}
