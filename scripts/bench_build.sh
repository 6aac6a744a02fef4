#!/usr/bin/env bash
# Cold build times (issue 40): clones the current commit into a temporary directory and builds
# it with an empty target directory, as a fresh clone on a new machine does.
#
#   scripts/bench_build.sh            # README command 1's build: cargo build --release -p chunkbench
#   MODE=test scripts/bench_build.sh  # CI's order: cargo clippy (check build), then cargo test --no-run
#
# Prints the wall and CPU times and the slowest crates (scripts/build_timings.py over cargo's
# --timings report). Run it on an otherwise idle machine: every other process's CPU time
# lengthens the wall time. Needs about 5 GB of free disk.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${MODE:-release}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q . "$work/src"
export CARGO_TARGET_DIR="$work/target" CARGO_INCREMENTAL=0
cd "$work/src"
echo "commit $(git rev-parse --short HEAD); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load average before $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$MODE" = test ]; then
  /usr/bin/time -f "clippy: wall %e s, user %U s, sys %S s" cargo clippy --workspace --all-targets --locked -q -- -D warnings
  /usr/bin/time -f "test build: wall %e s, user %U s, sys %S s" cargo test --workspace --no-run --timings -q
else
  /usr/bin/time -f "release build: wall %e s, user %U s, sys %S s" cargo build --release -p chunkbench --timings -q
fi
echo "load average after $(cut -d' ' -f1-3 /proc/loadavg)"
python3 scripts/build_timings.py "$CARGO_TARGET_DIR/cargo-timings/cargo-timing.html" 10
