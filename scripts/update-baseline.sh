#!/usr/bin/env bash
# Regenerates the regression gate's baseline, results/baselines/quickstart, from the current
# code: runs configs/quickstart.yaml and keeps only what `chunkbench compare` reads
# (config.json and cells/ID.{json,csv}) plus summary.md for people. Then checks that the gate
# passes against it. Commit the new baseline together with the change that moved the numbers,
# and say why in the commit message.
#
# Env: CHUNKBENCH_BIN, the binary (default: builds and uses the debug binary, the one the gate
# uses).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_BIN:-}" ]; then
  cargo build -p chunkbench
  bin="${CARGO_TARGET_DIR:-target}/debug/chunkbench"
else
  bin="$CHUNKBENCH_BIN"
fi
if [ -z "${CHUNKBENCH_DATA:-}" ] && [ -d ../shared/datasets ]; then
  export CHUNKBENCH_DATA="$(cd ../shared/datasets && pwd)"
fi
"$bin" data fetch
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$bin" run configs/quickstart.yaml --output "$tmp" >/dev/null
dest=results/baselines/quickstart
rm -rf "$dest"
mkdir -p "$dest/cells"
cp "$tmp"/quickstart/cells/*.json "$tmp"/quickstart/cells/*.csv "$dest/cells/"
cp "$tmp/quickstart/summary.md" "$dest/"
# config.json records where this run was written (the temporary directory). Store the
# config's own output root instead, so the file does not change with every regeneration;
# compare never reads `output` (cells match by the hash of their configuration).
sed 's|^  "output": ".*",$|  "output": "results/runs",|' "$tmp/quickstart/config.json" >"$dest/config.json"
grep -q '^  "output": "results/runs",$' "$dest/config.json"
"$bin" compare "$dest" "$tmp/quickstart" --output "$tmp" >/dev/null
echo "baseline written to $dest ($(ls "$dest/cells" | wc -l) cell files); the gate passes against a fresh run" >&2
