#!/usr/bin/env bash
# Regenerates crates/tables/tests/data/import/questions.parquet with pinned pandas + pyarrow
# from PyPI (in a venv outside the repository, reused when present).
set -euo pipefail
cd "$(dirname "$0")/.."
PINS="pandas==2.2.3 pyarrow==18.1.0"
VENV=${CHUNKBENCH_FIXTURES_VENV:-$HOME/.cache/chunkbench/venv-fixtures}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
if [ "$(cat "$VENV/.chunkbench-pins" 2>/dev/null)" != "$PINS" ]; then
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet --disable-pip-version-check $PINS
  echo "$PINS" >"$VENV/.chunkbench-pins"
fi
"$VENV/bin/python" scripts/import_fixture.py crates/tables/tests/data/import
