#!/usr/bin/env bash
# Calibration of the verdict by simulation (issue 38; docs/reference.md §5 "The verdict"):
# family-wise error rates of the Holm family and of the gate under no true difference (with
# and without clustered questions), false non-inferiority at a true difference equal to the
# margin, and the coverage of the 95 % and simultaneous intervals under a known difference,
# for exactly the code the reports use (`stats::plan_family`). Writes
# results/calibration/verdicts.md.
#
#   scripts/calibrate_verdicts.sh          # 1,000 simulated runs per scenario (≈ 2 min)
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
