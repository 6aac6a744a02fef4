#!/usr/bin/env bash
# Embedding throughput: chunkbench's candle BERT embedder (fused forward, and candle-
# transformers' stock BertModel for reference) against sentence-transformers on PyTorch CPU and
# ONNX Runtime (the same model exported to ONNX, plain and BERT-fused; scripts/bench_embed.py
# ort), on the same sentences, at the same thread count and batch size, in one run.
#
#   scripts/bench_embed.sh            # 2000 QuALITY sentences, 2 threads, batch 64, best of 3
#   THREADS=1 BATCH=32 N=1000 REPEAT=5 scripts/bench_embed.sh
#
# Needs the model (`chunkbench models fetch`) and the QuALITY documents (`chunkbench data
# fetch`, or DOCS=path/to/documents.jsonl). Creates .venv-bench (gitignored) with pinned
# sentence-transformers and torch from PyPI. PyPI has no CPU-only torch wheel for Linux and the
# one it has refuses to import without its CUDA library packages, so those are installed too
# (about 4 GB, unused: the benchmark runs on the CPU).
# Prints the figures and a Markdown row for BENCHMARKS.md (## Embeddings).
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-2}
BATCH=${BATCH:-64}
N=${N:-2000}
REPEAT=${REPEAT:-3}
MODEL=${MODEL:-models/all-MiniLM-L6-v2}
DOCS=${DOCS:-data/quality/documents.jsonl}
VENV=${VENV:-.venv-bench}
TORCH_VERSION=2.15.0
ST_VERSION=6.2.0
TRANSFORMERS_VERSION=5.24.0
NUMPY_VERSION=2.4.6
ORT_VERSION=1.32.0
ONNX_VERSION=1.23.2
ONNXSCRIPT_VERSION=0.7.2
OUT=${OUT:-target/bench-embed}

[ -f "$MODEL/model.safetensors" ] || { echo "model missing at $MODEL: run \`chunkbench models fetch\`" >&2; exit 1; }
[ -f "$DOCS" ] || { echo "documents missing at $DOCS: run \`chunkbench data fetch\` (or set DOCS)" >&2; exit 1; }
mkdir -p "$OUT"

if ! "$VENV/bin/python" -c "import torch, sentence_transformers as s; assert torch.__version__.split('+')[0] == '$TORCH_VERSION' and s.__version__ == '$ST_VERSION'" 2>/dev/null; then
  echo "== creating $VENV (torch $TORCH_VERSION CPU, sentence-transformers $ST_VERSION)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q "torch==$TORCH_VERSION" "numpy==$NUMPY_VERSION" \
    "transformers==$TRANSFORMERS_VERSION" "sentence-transformers==$ST_VERSION"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check "onnxruntime==$ORT_VERSION" \
  "onnx==$ONNX_VERSION" "onnxscript==$ONNXSCRIPT_VERSION"

echo "== building the Rust benchmark (release)" >&2
cargo build --release -p embed --example bench_embed >&2
BIN=${CARGO_TARGET_DIR:-target}/release/examples/bench_embed

python3 scripts/bench_embed.py sentences "$DOCS" "$OUT/sentences.jsonl" "$N"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

export RAYON_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS TOKENIZERS_PARALLELISM=false
echo "== sentence-transformers ($THREADS threads, batch $BATCH)" >&2
ST_JSON=$("$VENV/bin/python" scripts/bench_embed.py st "$MODEL" "$OUT/sentences.jsonl" "$THREADS" "$BATCH" "$REPEAT" "$OUT/st.f32")
echo "$ST_JSON"
echo "== ONNX Runtime ($THREADS threads, batch $BATCH)" >&2
ORT_JSON=$("$VENV/bin/python" scripts/bench_embed.py ort "$MODEL" "$OUT/sentences.jsonl" "$THREADS" "$BATCH" "$REPEAT" "$OUT/ort.f32" "$OUT/st.f32" "$OUT/onnx")
echo "$ORT_JSON"
echo "== chunkbench ($THREADS threads, batch $BATCH)" >&2
RS_JSON=$("$BIN" --model "$MODEL" --sentences "$OUT/sentences.jsonl" --impl both --batch-size "$BATCH" --repeat "$REPEAT" --compare "$OUT/st.f32" --gemm)
echo "$RS_JSON"

MACHINE="$(python3 scripts/bench_embed.py machine); load average before $LOAD_BEFORE, after $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%d)"
python3 - "$ST_JSON" "$RS_JSON" "$MACHINE" "$ORT_JSON" <<'PY'
import json, sys
st = json.loads(sys.argv[1])
rows = [json.loads(l) for l in sys.argv[2].splitlines() if l.strip()]
ort = [json.loads(l) for l in sys.argv[4].splitlines() if l.strip()]
best = max([st] + ort, key=lambda r: r["tokens_per_s"])
gemm = [r for r in rows if r["impl"] == "candle-matmul"]
rows = [r for r in rows if r["impl"] != "candle-matmul"]
print()
print(f"machine: {sys.argv[3]}; {st['versions']}")
if gemm:
    print(f"fp32 matmul [1792x384]x[384x1536], {st['threads']} threads: torch nn.Linear {st['linear_gflops']:.0f} GFLOP/s, "
          f"candle (gemm x86-v4) {gemm[0]['gflops']:.0f} GFLOP/s")
print("| implementation | threads | batch | sentences/s | tokens/s | ratio vs sentence-transformers | ratio vs best peer | 1 - min cosine vs s-t |")
print("|---|---|---|---|---|---|---|---|")
print(f"| sentence-transformers (PyTorch CPU) | {st['threads']} | {st['batch_size']} | {st['sentences_per_s']:.0f} | {st['tokens_per_s']:.0f} | 1.00x | {st['tokens_per_s'] / best['tokens_per_s']:.2f}x | - |")
for r in ort + rows:
    assert r["tokens"] == st["tokens"], (r["tokens"], st["tokens"])
    mc = r.get("min_cosine_vs_reference")
    print(f"| {r['impl']} | {r['threads']} | {r['batch_size']} | {r['sentences_per_s']:.0f} | {r['tokens_per_s']:.0f} | "
          f"{r['tokens_per_s'] / st['tokens_per_s']:.2f}x | {r['tokens_per_s'] / best['tokens_per_s']:.2f}x | {1 - mc:.1e} |")
PY
