#!/usr/bin/env bash
# Creates (or reuses) the Python environment of the external-chunker adapters
# (scripts/adapters/chunk.py) with pinned LangChain, LlamaIndex and chonkie from PyPI, and
# prints its python path. The venv lives outside the repository so clones share it.
#
#   scripts/adapters/setup.sh            # -> /root/.cache/chunkbench/venv-adapters/bin/python
#
# Environment: CHUNKBENCH_ADAPTERS_VENV (default $HOME/.cache/chunkbench/venv-adapters).
set -euo pipefail

LANGCHAIN_TEXT_SPLITTERS_VERSION=1.1.3
LANGCHAIN_CORE_VERSION=1.8.3
LLAMA_INDEX_CORE_VERSION=0.14.25
CHONKIE_VERSION=1.7.0

VENV=${CHUNKBENCH_ADAPTERS_VENV:-$HOME/.cache/chunkbench/venv-adapters}
STAMP="$VENV/.chunkbench-pins"
PINS="langchain-text-splitters==$LANGCHAIN_TEXT_SPLITTERS_VERSION langchain-core==$LANGCHAIN_CORE_VERSION llama-index-core==$LLAMA_INDEX_CORE_VERSION chonkie==$CHONKIE_VERSION"

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV" >&2
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$PINS" ]; then
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install --quiet --disable-pip-version-check $PINS >&2
    echo "$PINS" >"$STAMP"
fi
echo "$VENV/bin/python"
