#!/usr/bin/env bash
# The textbook reproduction of EAR (issue 10): runs configs/ear.yaml in three parts and copies
# the summaries into results/ear/ (see results/ear/README.md).
#   lexical-153   all six strategies, top-3/8, lexical reader, the 153-question sample
#   lexical-all   the same on every supported question (openstax-mmlu)
#   equal-words-153  fixed 260/60 chunks and EAR windows at a budget equal to the windows' mean
#                 words at top-3 and top-8 (issue 38), margin 3
#   lexical-153 and lexical-all hold the verdicts at a margin of 3 points (summary.md) and of 5
#                 (summary-margin-5.md)
#   smollm2-153   SmolLM2-135M-Instruct (cloze) on fixed 260/60 chunks and EAR windows, top-3/8,
#                 the 153-question sample (4–16 s per read on 2 AVX2 cores: 1 h 24 min
#                 uncached; answers are cached in .cache/responses, so a re-run takes seconds)
# Completed cells are reused (runs resume), so re-running only computes what is missing.
# Needs `chunkbench data fetch` (with the OpenStax mirror: --data-dir or CHUNKBENCH_DATA) and
# `chunkbench models fetch`. Env: CHUNKBENCH_BIN (default: the release binary, built);
# SKIP_SMOLLM2=1 leaves smollm2-153 as it is (its 306 model reads take 1 h 24 min uncached).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_BIN:-}" ]; then
  cargo build --release -p chunkbench
  bin="${CARGO_TARGET_DIR:-target}/release/chunkbench"
else
  bin="$CHUNKBENCH_BIN"
fi
lexical='readers={lexical: {kind: lexical}}'
# The verdicts at margins of 3 and 5 points (issue 38): each run twice into one directory; the
# second reuses every cell and only writes the reports again.
for margin in 5 3; do
  "$bin" run configs/ear.yaml --set "$lexical" --set name=ear-lexical --set margin=$margin
  "$bin" run configs/ear.yaml --set "$lexical" --set name=ear-lexical-full \
    --set 'datasets=[openstax-mmlu]' --set margin=$margin
  if [ "$margin" = 5 ]; then
    for run in ear-lexical ear-lexical-full; do
      cp "results/runs/$run/summary.md" "results/runs/$run/summary-margin-5.md.keep"
      cp "results/runs/$run/summary.csv" "results/runs/$run/summary-margin-5.csv.keep"
    done
  fi
done
# At equal words: fixed 260/60 chunks and EAR windows both retrieve to a budget equal to the
# windows' mean words at top-3 and top-8 (from the 153 sample's summary.csv).
mean_words() { # $1 strategy, $2 k: words_mean of that cell of results/runs/ear-lexical
  awk -F, -v s="$1" -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["strategy"] == s && $col["k"] == k && $col["budget"] == "" { printf "%d", $col["words_mean"] + 0.5 }' \
    results/runs/ear-lexical/summary.csv
}
w3="$(mean_words ear-windows 3)"
w8="$(mean_words ear-windows 8)"
"$bin" run configs/ear.yaml --set "$lexical" --set name=ear-equal-words --set margin=3 \
  --set 'strategies={fixed-260-60: {kind: fixed, unit: words, size: 260, overlap: 60}, ear-windows: {kind: ear}}' \
  --set 'k=[]' --set "budget={unit: words, sizes: [$w3, $w8]}"
pairs="ear-lexical:lexical-153 ear-lexical-full:lexical-all ear-equal-words:equal-words-153"
if [ -z "${SKIP_SMOLLM2:-}" ]; then
  "$bin" run configs/ear.yaml --set 'readers={smollm2: {kind: llm, llm: {scoring: cloze}}}' \
    --set 'strategies={fixed-260-60: {kind: fixed, unit: words, size: 260, overlap: 60}, ear-windows: {kind: ear}}' \
    --set name=ear-smollm2
  pairs="$pairs ear-smollm2:smollm2-153"
fi
for pair in $pairs; do
  run="results/runs/${pair%%:*}"
  dest="results/ear/${pair##*:}"
  rm -rf "$dest"
  mkdir -p "$dest/plots"
  cp "$run"/summary.md "$run"/summary.csv "$run"/chunk_stats.csv "$run"/manifest.json "$dest/"
  for keep in "$run"/summary-margin-5.*.keep; do
    [ -e "$keep" ] && cp "$keep" "$dest/$(basename "${keep%.keep}")"
  done
  cp "$run"/plots/*.png "$dest/plots/"
done
echo "summaries copied to results/ear/" >&2
