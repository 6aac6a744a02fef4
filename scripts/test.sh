#!/usr/bin/env bash
# README command 2: the whole test suite. Fetches the pinned datasets and models the tests
# use (idempotent: verified by sha256 and skipped when up to date), then runs every test and
# ends with one line totalling cargo's per-binary results.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_DATA:-}" ] && [ -d ../shared/datasets ]; then
  export CHUNKBENCH_DATA="$(cd ../shared/datasets && pwd)"
fi
# The report tests drive a real headless Chromium (Debian's `chromium`), the plots need
# DejaVu Sans (`fonts-dejavu-core`) and the Slurm test a real single-node Slurm (`slurm-wlm`,
# `munge`; started by scripts/slurm-local.sh): install them when missing (as root, via apt).
need=()
command -v slurmctld >/dev/null && command -v munged >/dev/null || need+=(slurm-wlm munge)
[ -x /usr/bin/chromium ] || [ -n "${CHUNKBENCH_CHROMIUM:-}" ] || need+=(chromium)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || [ -n "${CHUNKBENCH_FONT:-}" ] || need+=(fonts-dejavu-core)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "scripts/test.sh: install ${need[*]} (Debian packages) first: the report tests need them" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${need[@]}" >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${need[@]}" >/dev/null; }
fi
# Build the tests first: this also builds the chunkbench binary with the same features, so
# the test run below compiles nothing twice.
cargo test --workspace --no-run
bin=target/debug/chunkbench
[ -n "${CARGO_TARGET_DIR:-}" ] && bin="$CARGO_TARGET_DIR/debug/chunkbench"
"$bin" data fetch
"$bin" models fetch
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# What the reader tests measure against the real llama.cpp server (cargo hides a passing
# test's output); printed after the suite.
served="${CARGO_TARGET_DIR:-target}/tmp/llama-server.log"
slurm_log="${CARGO_TARGET_DIR:-target}/tmp/slurm-test.log"
rm -f "$served" "$slurm_log"
set +e
cargo test --workspace 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ -f "$served" ]; then echo "--- reader tests against llama.cpp's server:"; cat "$served"; fi
if [ -f "$slurm_log" ]; then echo "--- the sweep on a real Slurm (crates/cli/tests/cluster.rs):"; cat "$slurm_log"; fi
# The Python package (python/): its wheel built from this checkout into the same target
# directory (only the extension module compiles), then pytest against it.
echo "--- the Python package (scripts/python-tests.sh):"
pylog=$(mktemp)
trap 'rm -f "$log" "$pylog"' EXIT
set +e
scripts/python-tests.sh 2>&1 | tee "$pylog"
py_status=${PIPESTATUS[0]}
set -e
cargo_counts=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1) } }
     END { printf "%d %d", p, f }' "$log")
# pytest's last line: "N passed, M failed in …" (either part may be absent).
py_counts=$(awk '/ in [0-9.]+s/ { p = 0; f = 0; for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed,?$/) p = $(i-1); if ($(i) ~ /^(failed|errors?),?$/) f += $(i-1) } }
     END { printf "%d %d", p, f }' "$pylog")
read -r cp cf <<<"$cargo_counts"
read -r pp pf <<<"$py_counts"
echo "tests: $((cp + pp)) passed, $((cf + pf)) failed (cargo $cp passed, $cf failed; pytest $pp passed, $pf failed)"
[ "$status" -eq 0 ] || exit "$status"
exit "$py_status"
