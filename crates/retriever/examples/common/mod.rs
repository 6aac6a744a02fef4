//! What the peer benchmarks `bench_bm25` and `bench_dense` (issue 40) both write: each query's
//! top-k passage numbers, and one JSON record of the run.

use retriever::Hit;

/// Writes each query's hits as passage numbers (0-based, best first, space-separated), one
/// line per query, to `path`; `scripts/bench_bm25_peers.py overlap` compares such files.
pub fn write_top_k(path: &str, top: &[Vec<Hit>]) -> std::io::Result<()> {
    let mut out = String::new();
    for hits in top {
        let ids: Vec<String> = hits.iter().map(|h| h.passage.to_string()).collect();
        out.push_str(&ids.join(" "));
        out.push('\n');
    }
    std::fs::write(path, out)
}

/// Prints the run's JSON record: passages, queries, rayon threads, index build seconds and
/// queries per second (`queries / search_s`).
pub fn print_record(passages: usize, queries: usize, build_s: f64, search_s: f64) {
    println!(
        "{{\"engine\":\"chunkbench\",\"passages\":{passages},\"queries\":{queries},\"threads\":{},\"build_s\":{build_s:.3},\"queries_per_s\":{:.1}}}",
        rayon::current_num_threads(),
        queries as f64 / search_s
    );
}
