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
PINS="langchain-text-splitters==$LANGCHAIN_TEXT_SPLITTERS_VERSION langchain-core==$LANGCHAIN_CORE_VERSION llama-index-core==$LLAMA_INDEX_CORE_VERSION chonkie==$CHONKIE_VERSION"

# shellcheck source=../pinned-venv.sh
. "$(dirname "$0")/../pinned-venv.sh"
pinned_venv "$VENV" "$PINS"
echo "$VENV/bin/python"
