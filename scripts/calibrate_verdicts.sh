#!/usr/bin/env bash
# Calibration of the verdict by simulation (issues 38 and 55; docs/reference.md §5 "The
# verdict"), for exactly the code the reports use (`stats::plan_family`): 0/1, continuous and
# sparse continuous differences; 10, 20 and 40 resampling units, independent and clustered;
# families of m = 2, 4, 8, 16. Family-wise error and the gate's false alarms under no
# difference, simultaneous coverage, false non-inferiority/equivalence at the margin, and
# coverage under a known difference. Writes results/calibration/verdicts.md.
#
#   scripts/calibrate_verdicts.sh          # 1,000 simulated runs per row (≈ 25 min of one core)
#   RUNS=200 scripts/calibrate_verdicts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${RUNS:-1000}"
out=results/calibration/verdicts.md
mkdir -p "$(dirname "$out")"
tmp="$(mktemp)"
{
  echo "# Calibration of the verdict"
  echo
  echo "Written by \`scripts/calibrate_verdicts.sh\` ($(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null || echo unknown))."
  echo "Methods and sources: docs/reference.md §5 \"The verdict\"."
  echo
  cargo run --release -q -p stats --example calibration -- "$RUNS"
} > "$tmp"
mv "$tmp" "$out"
cat "$out"
