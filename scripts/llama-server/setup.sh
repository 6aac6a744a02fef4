#!/usr/bin/env bash
# Creates (or reuses) the Python environment of the llama.cpp server the reader tests and the
# reader benchmark run against: llama-cpp-python[server] from PyPI, which compiles llama.cpp
# from its sdist (about 4 min on 2 cores; cmake and ninja come as wheels). Prints its python
# path. The venv lives outside the repository so clones share it.
#
#   scripts/llama-server/setup.sh        # -> /root/.cache/chunkbench/venv-llama-server/bin/python
#
# Environment: CHUNKBENCH_LLAMA_SERVER_VENV (default $HOME/.cache/chunkbench/venv-llama-server).
# The build targets this machine's CPU (llama.cpp's GGML_NATIVE default), as a user's would.
set -euo pipefail

PINS="llama-cpp-python[server]==0.3.36"

VENV=${CHUNKBENCH_LLAMA_SERVER_VENV:-$HOME/.cache/chunkbench/venv-llama-server}
# shellcheck source=../pinned-venv.sh
. "$(dirname "$0")/../pinned-venv.sh"
pinned_venv "$VENV" "$PINS"
echo "$VENV/bin/python"
