#!/usr/bin/env bash
# Runs scripts/adapters/chunk.py with the adapters' pinned Python environment (created by
# setup.sh on first use), so a config can name the adapter without a machine-specific path:
#
#   command: [scripts/adapters/run.sh, langchain-recursive, --chunk-size, "400"]
#   files: [scripts/adapters/chunk.py, scripts/adapters/setup.sh]   # pins in the identity
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=$("$HERE/setup.sh")
exec "$PY" "$HERE/chunk.py" "$@"
