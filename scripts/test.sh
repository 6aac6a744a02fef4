#!/usr/bin/env bash
# README command 2: the whole test suite. Fetches the pinned datasets and models the tests
# use (idempotent: verified by sha256 and skipped when up to date), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_DATA:-}" ] && [ -d ../shared/datasets ]; then
  export CHUNKBENCH_DATA="$(cd ../shared/datasets && pwd)"
fi
cargo build -p chunkbench
bin=target/debug/chunkbench
[ -n "${CARGO_TARGET_DIR:-}" ] && bin="$CARGO_TARGET_DIR/debug/chunkbench"
"$bin" data fetch
"$bin" models fetch
cargo test --workspace
