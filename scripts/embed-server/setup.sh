#!/usr/bin/env bash
# Creates (or reuses) the Python environment of the embedding server the tests run against:
# infinity-emb (an OpenAI-compatible embedding server) on sentence-transformers and PyTorch,
# pinned, from PyPI. Prints its python path. The venv lives outside the repository so clones
# share it (about 3.6 GB: PyPI's Linux torch wheel pulls its CUDA libraries, unused on CPU).
#
#   scripts/embed-server/setup.sh        # -> /root/.cache/chunkbench/venv-embed-server/bin/python
#
# Environment: CHUNKBENCH_EMBED_SERVER_VENV (default $HOME/.cache/chunkbench/venv-embed-server).
set -euo pipefail

# infinity-emb 0.0.78 needs numpy < 2 and sentence-transformers < 4; torch 2.5.1 is the
# newest release built against numpy 1.x that this set resolves with.
PINS="infinity-emb[server,torch]==0.0.78 torch==2.5.1 numpy==1.26.4 sentence-transformers==3.4.1 transformers==4.57.6 tokenizers==0.22.2 fastapi==0.165.0 starlette==1.10.0 uvicorn==0.32.1 pydantic==2.14.4 typer==0.12.5 click==8.1.8"

VENV=${CHUNKBENCH_EMBED_SERVER_VENV:-$HOME/.cache/chunkbench/venv-embed-server}
# shellcheck source=../pinned-venv.sh
. "$(dirname "$0")/../pinned-venv.sh"
pinned_venv "$VENV" "$PINS"
echo "$VENV/bin/python"
