#!/usr/bin/env bash
# Max-Min cost (issue 5): Max-Min time per 1000 sentences given cached embeddings, and its
# share of the all-MiniLM-L6-v2 embedding time of the same sentences (target <= 1 %).
#
#   scripts/bench_maxmin.sh                  # 2000 QuALITY sentences, 2 threads, 200 passes
#   N=5000 REPEAT=50 THREADS=1 scripts/bench_maxmin.sh
#
# Runs the ignored test `bench_maxmin_share` of crates/embed/tests/maxmin_minilm.rs in
# release mode: it splits whole documents into sentences (pieces over 254 word pieces are
# split first), embeds them once with the candle MiniLM embedder (timed), then runs Max-Min
# (reference parameters) over the cached vectors REPEAT times (timed). Needs the model
# (`chunkbench models fetch`) and the QuALITY documents (`chunkbench data fetch`, or
# DOCS=path/to/documents.jsonl). Prints the figures and a Markdown row for BENCHMARKS.md
# (## Max-Min).
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-2}
N=${N:-2000}
REPEAT=${REPEAT:-200}
DOCS=${DOCS:-data/quality/documents.jsonl}
MODEL=${CHUNKBENCH_MODEL_DIR:-models/all-MiniLM-L6-v2}

[ -f "$MODEL/model.safetensors" ] || { echo "model missing at $MODEL: run \`chunkbench models fetch\`" >&2; exit 1; }
[ -f "$DOCS" ] || { echo "documents missing at $DOCS: run \`chunkbench data fetch\` (or set DOCS)" >&2; exit 1; }

export N REPEAT DOCS="$(cd "$(dirname "$DOCS")" && pwd)/$(basename "$DOCS")"
export RAYON_NUM_THREADS=$THREADS TOKENIZERS_PARALLELISM=false
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
cargo test --release -p embed --test maxmin_minilm -- --ignored --exact bench_maxmin_share \
    --nocapture --test-threads 1 | tee "$OUT" | grep '^maxmin-bench:' || { cat "$OUT" >&2; exit 1; }
ROW=$(sed -n 's/^maxmin-bench-row: //p' "$OUT")
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo
echo "machine: $CPU, $(nproc) cores, $THREADS threads; load average before $LOAD_BEFORE, after $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%d)"
echo "| fixed_threshold | sentences | sentences / chunk | Max-Min ms / 1000 sentences (mean) | (best) | MiniLM embedding s / 1000 sentences | Max-Min share |"
echo "|---|---|---|---|---|---|---|"
echo "$ROW"
