//! Cost of writing `per_question.parquet` (driven by `scripts/bench_parquet.sh`).
//!
//! ```text
//! cargo run --release -p records --example bench_parquet -- RUN_DIR/per_question.csv [REPEAT]
//! ```
//! Reads a run's `per_question.csv` (`records::read_rows_csv`), repeats its rows until there
//! are at least 100,000, and times `records::table_parquet` (polars, snappy) and
//! `records::rows_csv` on them, best of `REPEAT` (default 3). Prints one JSON object: rows,
//! seconds per 100,000 rows for each writer, and the Parquet bytes.

use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("bench_parquet: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .ok_or_else(|| anyhow::anyhow!("usage: bench_parquet PER_QUESTION_CSV [REPEAT]"))?;
    let repeat: usize = args.get(1).map_or(Ok(3), |s| s.parse())?;
    let bytes = std::fs::read(path)?;
    let one = records::read_rows_csv(&bytes, path)?;
    anyhow::ensure!(!one.is_empty(), "{path}: no rows");
    let mut rows = Vec::new();
    while rows.len() < 100_000 {
        rows.extend(one.iter().cloned());
    }
    let best = |f: &dyn Fn() -> anyhow::Result<usize>| -> anyhow::Result<(f64, usize)> {
        let mut out = (f64::INFINITY, 0);
        for _ in 0..repeat {
            let t = Instant::now();
            let n = f()?;
            out = (out.0.min(t.elapsed().as_secs_f64()), n);
        }
        Ok(out)
    };
    let cols = records::question_columns();
    let (parquet_s, parquet_bytes) = best(&|| Ok(records::table_parquet(&cols, &rows)?.len()))?;
    let (csv_s, csv_bytes) = best(&|| Ok(records::rows_csv(&rows)?.len()))?;
    let per = 100_000.0 / rows.len() as f64;
    println!(
        "{}",
        serde_json::json!({
            "rows": rows.len(),
            "parquet_s_per_100k_rows": parquet_s * per,
            "csv_s_per_100k_rows": csv_s * per,
            "parquet_bytes": parquet_bytes,
            "csv_bytes": csv_bytes,
        })
    );
    Ok(())
}
