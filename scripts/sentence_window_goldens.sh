#!/usr/bin/env bash
# Regenerates the LlamaIndex SentenceWindowNodeParser golden
# crates/evaluator/tests/data/sentence_window/golden.json (logic and format:
# scripts/sentence_window_goldens.py).
#
#   scripts/sentence_window_goldens.sh          # golden.json from the committed inputs/*.txt
#   scripts/sentence_window_goldens.sh inputs   # re-extract inputs/*.txt from data/ (SciQ,
#                                               # QuALITY, OpenStax) and rewrite the synthetic ones
#   scripts/sentence_window_goldens.sh all      # inputs, then golden
#
# Creates .venv-llamaindex (gitignored by /.venv*) with the pinned versions below. nltk runs
# every Punkt regex through the third-party `regex` engine (nltk/redos.py), so regex is pinned
# too: its Unicode tables decide what \s, \S and \W match.
#
# NLTK data, offline: nothing is downloaded. llama-index-core ships punkt_tab and stopwords
# inside its wheel (llama_index/core/_static/nltk_cache) and uses that directory unless
# NLTK_DATA is set, so NLTK_DATA is unset here; the Python script also replaces
# nltk.download with a function that raises, and checks the data directory it got.
# (The sentence splitter is an *untrained* PunktSentenceTokenizer(): punkt_tab is only
# checked for, never loaded, so it has no abbreviation list.)
#
# Environment: VENV (default .venv-llamaindex), SOURCES (default data/, only for `inputs`).
set -euo pipefail

LLAMA_INDEX_CORE_VERSION=0.14.25
NLTK_VERSION=3.10.4
REGEX_VERSION=2026.11.19

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA="$ROOT/crates/evaluator/tests/data/sentence_window"
VENV=${VENV:-$ROOT/.venv-llamaindex}
SOURCES=${SOURCES:-$ROOT/data}
MODE=${1:-golden}

case "$MODE" in
inputs | golden | all) ;;
*)
    echo "usage: $0 [inputs|golden|all]" >&2
    exit 2
    ;;
esac

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "llama-index-core==$LLAMA_INDEX_CORE_VERSION" \
    "nltk==$NLTK_VERSION" \
    "regex==$REGEX_VERSION"

mkdir -p "$DATA"
unset NLTK_DATA
export DATA SOURCES
"$VENV/bin/python" "$ROOT/scripts/sentence_window_goldens.py" "$MODE"
