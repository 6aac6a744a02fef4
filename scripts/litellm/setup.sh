#!/usr/bin/env bash
# Creates (or reuses) the Python environment of the LiteLLM proxy the Anthropic-protocol tests
# run against: litellm[proxy] from PyPI (pure Python wheels, about 40 s and 650 MB). Prints its
# python path. The venv lives outside the repository so clones share it.
#
#   scripts/litellm/setup.sh     # -> $HOME/.cache/chunkbench/venv-litellm/bin/python
#
# Environment: CHUNKBENCH_LITELLM_VENV (default $HOME/.cache/chunkbench/venv-litellm).
set -euo pipefail
PINS="litellm[proxy]==1.91.5"
VENV=${CHUNKBENCH_LITELLM_VENV:-$HOME/.cache/chunkbench/venv-litellm}
# shellcheck source=../pinned-venv.sh
. "$(dirname "$0")/../pinned-venv.sh"
pinned_venv "$VENV" "$PINS"
echo "$VENV/bin/python"
