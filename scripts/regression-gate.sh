#!/usr/bin/env bash
# The regression gate: runs the quickstart sweep and compares it with the committed baseline
# results/baselines/quickstart (`chunkbench compare`).
#
# The gate runs configs/quickstart.yaml unchanged, on all 1000 SciQ validation questions: that
# takes about 2 s with a debug build on 2 cores, the full set gives the smallest detectable
# effect, and the baseline is then the very run README command 1 produces, so anyone can compare
# their own results/runs/quickstart with it.
#
# Usage: scripts/regression-gate.sh [OUT_DIR]
#   OUT_DIR receives the run (OUT_DIR/quickstart/) with compare.md, compare.json and
#   compare.html in it;
#   default: a temporary directory, removed afterwards.
# Env: CHUNKBENCH_BIN, the binary (default: $CARGO_TARGET_DIR/debug/chunkbench, else
#   target/debug/chunkbench; scripts/test.sh builds it). The datasets must be fetched
#   (`chunkbench data fetch`; scripts/test.sh does it).
# Exit: 0 no regression, 1 regression, 2 unusable input (the compare exit codes).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${CHUNKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/debug/chunkbench}"
if [ ! -x "$bin" ]; then
  echo "regression gate: no chunkbench binary at $bin; run scripts/test.sh or cargo build -p chunkbench first" >&2
  exit 2
fi
if [ -n "${1:-}" ]; then
  out="$1"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
start=$(date +%s.%N)
"$bin" run configs/quickstart.yaml --output "$out"
set +e
"$bin" compare results/baselines/quickstart "$out/quickstart"
status=$?
set -e
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v c="$status" \
  'BEGIN { printf "regression gate: exit %d (0 pass, 1 regression, 2 unusable input) in %.1f s\n", c, e - s }' >&2
exit "$status"
