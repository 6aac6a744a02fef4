#!/usr/bin/env bash
# Regenerates the BM25 goldens of crates/retriever/tests/bm25_golden.rs.
#
#   scripts/bm25_goldens.sh
#
# 1. exports the Rust analyser's token lists for crates/retriever/tests/data/bm25_corpus.json
#    (cargo run -p retriever --example bm25_tokens), for the `base` and `english` analysers;
# 2. creates .venv-bm25 (gitignored) with the pinned bm25s below;
# 3. scores every (query, passage) pair with bm25s (Lucene idf, float64) times (k1 + 1), checked
#    against the formula in plain Python (scripts/bm25_goldens.py explains why),
#    and writes crates/retriever/tests/data/bm25_goldens.json.
#
# Environment: VENV (default .venv-bm25), PYTHON (default python3).
set -euo pipefail

BM25S_VERSION=0.3.16
NUMPY_VERSION=2.2.6
SCIPY_VERSION=1.15.3

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA="$ROOT/crates/retriever/tests/data"
VENV=${VENV:-$ROOT/.venv-bm25}
PYTHON=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "bm25s==$BM25S_VERSION" "numpy==$NUMPY_VERSION" "scipy==$SCIPY_VERSION"

TOKENS=$(mktemp)
trap 'rm -f "$TOKENS"' EXIT
(cd "$ROOT" && cargo run --quiet -p retriever --example bm25_tokens -- "$DATA/bm25_corpus.json") >"$TOKENS"
"$VENV/bin/python" "$ROOT/scripts/bm25_goldens.py" "$TOKENS" "$DATA/bm25_goldens.json"
echo "wrote $DATA/bm25_goldens.json"
