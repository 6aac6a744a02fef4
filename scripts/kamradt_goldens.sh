#!/usr/bin/env bash
# Regenerates the Kamradt / LangChain SemanticChunker goldens of
# crates/chunker/tests/kamradt_golden.rs (logic and file formats: scripts/kamradt_goldens.py).
#
#   scripts/kamradt_goldens.sh            # goldens/*.json + numerics.json from the committed
#                                         # inputs/*.txt and vectors.json
#   scripts/kamradt_goldens.sh vectors    # recompute vectors.json (hashed bag-of-words)
#   scripts/kamradt_goldens.sh inputs     # re-extract inputs/*.txt from ../shared/datasets
#   scripts/kamradt_goldens.sh all        # inputs, vectors, goldens
#
# Creates .venv-kamradt (gitignored) with the pinned versions below. simsimd must not be
# installed there: with it, langchain_community's cosine_similarity switches from numpy
# float64 to simsimd float32 (the script refuses to run if it is importable).
#
# Environment: VENV (default .venv-kamradt), DATASETS (default ../shared/datasets, only for
# `inputs`).
set -euo pipefail

LANGCHAIN_EXPERIMENTAL_VERSION=0.4.2
LANGCHAIN_COMMUNITY_VERSION=0.4.2
LANGCHAIN_CORE_VERSION=1.8.3
NUMPY_VERSION=2.4.6

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA="$ROOT/crates/chunker/tests/data/kamradt"
VENV=${VENV:-$ROOT/.venv-kamradt}
DATASETS=${DATASETS:-$ROOT/../shared/datasets}
MODE=${1:-goldens}

case "$MODE" in
inputs | vectors | goldens | all) ;;
*)
    echo "usage: $0 [inputs|vectors|goldens|all]" >&2
    exit 2
    ;;
esac

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "langchain-experimental==$LANGCHAIN_EXPERIMENTAL_VERSION" \
    "langchain-community==$LANGCHAIN_COMMUNITY_VERSION" \
    "langchain-core==$LANGCHAIN_CORE_VERSION" \
    "numpy==$NUMPY_VERSION"

mkdir -p "$DATA"
export DATA DATASETS
"$VENV/bin/python" "$ROOT/scripts/kamradt_goldens.py" "$MODE"
