#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest) against the wheel built from this checkout.
# Called by scripts/test.sh after the Rust suite (README command 2); runs alone too, after
# `chunkbench data fetch` and `chunkbench models fetch`.
#
# - A venv with pinned maturin, pytest, polars, pandas and the chunker libraries the tests pass
#   as objects (LangChain, chonkie, LlamaIndex): $CHUNKBENCH_PYTHON_VENV, default
#   ~/.cache/chunkbench/venv-python (outside the clone, so clones share it).
# - The wheel is built by maturin in the dev profile into the workspace's target directory
#   ($CARGO_TARGET_DIR), where `cargo test --workspace` has already built the dependencies:
#   the workspace's own crates and pyo3 compile again (cargo test built them in its `test`
#   profile, which maturin cannot use: `cargo rustc --profile test` makes a test harness, not
#   a loadable module), about 60 s on 2 cores.
# - Prints pytest's summary; the exit status is pytest's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if [ -z "${CHUNKBENCH_DATA:-}" ] && [ -d ../shared/datasets ]; then
  export CHUNKBENCH_DATA="$(cd ../shared/datasets && pwd)"
fi
VENV=${CHUNKBENCH_PYTHON_VENV:-$HOME/.cache/chunkbench/venv-python}
PINS="maturin==1.16.0 pytest==8.4.2 polars==1.35.2 pandas==2.3.3 pyarrow==22.0.0 langchain-text-splitters==1.1.3 langchain-core==1.8.3 chonkie==1.7.0 llama-index-core==0.14.25"
# shellcheck source=pinned-venv.sh
. scripts/pinned-venv.sh
pinned_venv "$VENV" "$PINS"
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
started=$(date +%s)
# --locked: Cargo.lock as committed; the dev profile: its dependencies are the ones `cargo test`
# built.
(cd python && "$VENV/bin/maturin" build --profile dev --locked --out "$wheels" --quiet 2>&1 | grep -v '^\s*Compiling' >&2 || true)
whl=$(ls "$wheels"/chunkbench_harness-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || { echo "scripts/python-tests.sh: maturin built no wheel" >&2; exit 1; }
"$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$whl"
echo "python-tests: wheel $(basename "$whl") built and installed in $(( $(date +%s) - started )) s" >&2
export CHUNKBENCH_STORE="${CHUNKBENCH_STORE:-$root/data}"
export CHUNKBENCH_MODELS="${CHUNKBENCH_MODELS:-$root/models}"
# From the tests' directory with the venv's pytest: the package under test is the installed
# wheel, never python/chunkbench_harness/ of the checkout (which has no extension module).
cd python/tests
exec "$VENV/bin/pytest" -q -p no:cacheprovider .
