#!/usr/bin/env bash
# The Bhat-style chunk-size study (issue 39), copied into results/bhat/: SciQ's support
# paragraphs stitched into documents of at least 50,000 characters (only questions whose answer
# occurs once in their document), fixed cl100k_base token chunks of 64…1024 tokens, dense
# MiniLM retrieval within each question's document, answer recall@1…@5 (configs/bhat.yaml).
# Completed cells are reused (runs resume). Needs `chunkbench data fetch` and `chunkbench models
# fetch`. Env: CHUNKBENCH_BIN (default: the release binary, built), CHUNKBENCH_STORE (default
# data).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_BIN:-}" ]; then
  cargo build --release -p chunkbench
  bin="${CARGO_TARGET_DIR:-target}/release/chunkbench"
else
  bin="$CHUNKBENCH_BIN"
fi
store="${CHUNKBENCH_STORE:-data}"
"$bin" data stitch sciq-long --from sciq-retrieval --min-chars 50000 --unique-answers \
  --store "$store" --force
"$bin" run configs/bhat.yaml --store "$store"
rm -rf results/bhat/run
mkdir -p results/bhat/run/plots
for f in summary.md summary.csv chunk_stats.csv manifest.json; do
  cp "results/runs/bhat/$f" results/bhat/run/
done
cp results/runs/bhat/plots/*.png results/bhat/run/plots/
cp "$store/sciq-long/manifest.json" results/bhat/sciq-long-manifest.json
