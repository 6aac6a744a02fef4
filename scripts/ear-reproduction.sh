#!/usr/bin/env bash
# The textbook reproduction of EAR (issue 10): runs configs/ear.yaml in three parts and copies
# the summaries into results/ear/ (see results/ear/README.md).
#   lexical-153   all six strategies, top-3/8, lexical reader, the 153-question sample
#   lexical-all   the same on every supported question (openstax-mmlu)
#   smollm2-153   SmolLM2-135M-Instruct (cloze) on fixed 260/60 chunks and EAR windows, top-3/8,
#                 the 153-question sample (4–16 s per read on 2 AVX2 cores: 1 h 24 min
#                 uncached; answers are cached in .cache/responses, so a re-run takes seconds)
# Completed cells are reused (runs resume), so re-running only computes what is missing.
# Needs `chunkbench data fetch` (with the OpenStax mirror: --data-dir or CHUNKBENCH_DATA) and
# `chunkbench models fetch`. Env: CHUNKBENCH_BIN (default: the release binary, built).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_BIN:-}" ]; then
  cargo build --release -p chunkbench
  bin="${CARGO_TARGET_DIR:-target}/release/chunkbench"
else
  bin="$CHUNKBENCH_BIN"
fi
lexical='readers={lexical: {kind: lexical}}'
"$bin" run configs/ear.yaml --set "$lexical" --set name=ear-lexical
"$bin" run configs/ear.yaml --set "$lexical" --set name=ear-lexical-full --set 'datasets=[openstax-mmlu]'
"$bin" run configs/ear.yaml --set 'readers={smollm2: {kind: llm, llm: {scoring: cloze}}}' \
  --set 'strategies={fixed-260-60: {kind: fixed, unit: words, size: 260, overlap: 60}, ear-windows: {kind: ear}}' \
  --set name=ear-smollm2
for pair in ear-lexical:lexical-153 ear-lexical-full:lexical-all ear-smollm2:smollm2-153; do
  run="results/runs/${pair%%:*}"
  dest="results/ear/${pair##*:}"
  rm -rf "$dest"
  mkdir -p "$dest/plots"
  cp "$run"/summary.md "$run"/summary.csv "$run"/chunk_stats.csv "$run"/manifest.json "$dest/"
  cp "$run"/plots/*.png "$dest/plots/"
done
echo "summaries copied to results/ear/" >&2
