#!/usr/bin/env bash
# Cost of writing per_question.parquet with polars built at opt-level 0 (issue 40: polars is
# compiled unoptimised in release builds because nothing it does is on a hot path).
#
#   scripts/bench_parquet.sh                       # the quickstart run's rows (run it if missing)
#   CSV=results/runs/NAME/per_question.csv scripts/bench_parquet.sh
#
# Repeats the run's rows to at least 100,000 and times records::table_parquet (polars,
# snappy) against records::rows_csv (the CSV writer, serde + csv at opt-level 3) on the same
# rows, best of 3, in one process (crates/records/examples/bench_parquet.rs, release build).
set -euo pipefail
cd "$(dirname "$0")/.."
CSV=${CSV:-results/runs/quickstart/per_question.csv}
target=${CARGO_TARGET_DIR:-target}
if [ ! -f "$CSV" ]; then
  cargo build --release -p chunkbench
  "$target/release/chunkbench" run configs/quickstart.yaml >/dev/null
fi
cargo build --release -p records --example bench_parquet
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
"$target/release/examples/bench_parquet" "$CSV" 3
echo "load average before: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
