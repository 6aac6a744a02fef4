#!/usr/bin/env bash
# The report page benchmark (BENCHMARKS.md, "The HTML report"): size of report.html for the EAR
# textbook run with the lexical reader (configs/ear.yaml: 6 strategies × top-3/8 = 12 cells ×
# 153 questions) and, in a real headless Chromium, the time from navigation to the load event
# and to a usable explorer, and the time to switch cells and filters.
# Needs the OpenStax datasets (`chunkbench data fetch` with CHUNKBENCH_DATA) and the MiniLM
# model (`chunkbench models fetch`; Max-Min embeds the books, cached after the first run), and
# Debian's chromium (scripts/test.sh installs it). Completed cells are reused.
# Env: CHUNKBENCH_BIN (default: the release binary, built).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_BIN:-}" ]; then
  cargo build --release -p chunkbench
  bin="${CARGO_TARGET_DIR:-target}/release/chunkbench"
else
  bin="$CHUNKBENCH_BIN"
fi
"$bin" run configs/ear.yaml --set 'readers={lexical: {kind: lexical}}' --set name=ear-lexical >/dev/null
page="$PWD/results/runs/ear-lexical/report.html"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), $(nproc) cores" >&2
ls -l "$page" >&2
CHUNKBENCH_REPORT_PAGE="$page" cargo test --workspace --test report -- --ignored --nocapture \
  bench_report_page 2>&1 | grep -E '^report-bench|test result'
