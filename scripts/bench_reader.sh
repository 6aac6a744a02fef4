#!/usr/bin/env bash
# Local reader speed: chunkbench's GGUF reader (the decoder over f32 weights) against llama.cpp
# (llama-cpp-python, pinned by scripts/llama-server/setup.sh) on the same GGUF, the same token
# ids and the same thread count, in one run, and against the matmul bound measured in the same
# process.
#
#   scripts/bench_reader.sh                 # 40 EAR questions, top-3, cloze, 2 threads
#   N=153 K=8 THREADS=1 scripts/bench_reader.sh
#
# Prompts: the EAR textbook baseline (configs/ear.yaml, fixed-260-60 + BM25 top-K) over
# data/openstax-mmlu-153, built by the reader itself (crates/reader/examples/bench_reader.rs).
# llama.cpp scores the dumped token ids the same way (one prompt pass, then each option's
# continuation as one batch after the prompt's KV cache: scripts/bench_reader.py) and its scores
# are compared with ours (same choice, max |delta|).
# Needs `chunkbench models fetch` and `chunkbench data fetch` (with the OpenStax mirror).
# PROFILE=release (default) or dev (the test profile: dependencies and the reader at
# opt-level 3). Prints both JSON records and a Markdown row for BENCHMARKS.md (## Local reader).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-40}
K=${K:-3}
THREADS=${THREADS:-2}
REPEAT=${REPEAT:-1}
SCORING=${SCORING:-cloze}
PROFILE=${PROFILE:-release}
MODEL=${MODEL:-models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf}
DATA=${DATA:-data/openstax-mmlu-153}
OUT=${OUT:-target/bench-reader}

[ -f "$MODEL" ] || { echo "model missing at $MODEL: run \`chunkbench models fetch\`" >&2; exit 1; }
[ -f "$DATA/questions.jsonl" ] || { echo "questions missing at $DATA: run \`chunkbench data fetch\` (OpenStax mirror)" >&2; exit 1; }
mkdir -p "$OUT"

PY=$(scripts/llama-server/setup.sh)
if [ "$PROFILE" = release ]; then
  cargo build --release --workspace --example bench_reader >&2
else
  cargo build --workspace --example bench_reader >&2
fi
BIN=${CARGO_TARGET_DIR:-target}/$([ "$PROFILE" = release ] && echo release || echo debug)/examples/bench_reader

export RAYON_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== chunkbench ($THREADS threads, $N questions, top-$K, $SCORING)" >&2
RS_JSON=$("$BIN" --model "$MODEL" --data "$DATA" --n "$N" --k "$K" --repeat "$REPEAT" \
  --scoring "$SCORING" --dump "$OUT/prompts.jsonl")
echo "$RS_JSON"
echo "== llama.cpp ($THREADS threads, same token ids)" >&2
CPP_JSON=$("$PY" scripts/bench_reader.py "$MODEL" "$OUT/prompts.jsonl" "$THREADS" "$REPEAT")
echo "$CPP_JSON"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$RS_JSON" "$CPP_JSON" "$LOAD_BEFORE" "$LOAD_AFTER" "$PROFILE" <<'PY'
import json, sys, platform, subprocess
rs, cpp = json.loads(sys.argv[1]), json.loads(sys.argv[2])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
flags = next((l for l in open("/proc/cpuinfo") if l.startswith("flags")), "")
simd = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "SSE")
print()
print(f"machine: {cpu} ({simd}), {rs['threads']} threads, profile {sys.argv[5]}; "
      f"load average before {sys.argv[3]}, after {sys.argv[4]}")
print(f"prompts: {rs['questions']} questions, top-{rs['k']}, {rs['scoring']}, "
      f"{rs['mean_prompt_tokens']:.0f} prompt tokens and {rs['mean_option_tokens_fed']:.1f} "
      f"option tokens fed per question")
print()
print("| engine | s / question | prompt tokens/s | vs llama.cpp | matmul GFLOP/s | bound s / question | fraction of bound | same choice as llama.cpp | max abs delta (nats) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
ratio = cpp["seconds_per_question"] / rs["seconds_per_question"]
print(f"| chunkbench decoder | {rs['seconds_per_question']:.2f} | {rs['prompt_tokens_per_second']:.0f} | "
      f"{ratio:.2f}x | {rs['matmul_gflops']:.0f} | {rs['bound_seconds_per_question']:.2f} | "
      f"{rs['fraction_of_bound']:.2f} | – | – |")
frac = rs["bound_seconds_per_question"] / cpp["seconds_per_question"]
print(f"| llama.cpp (llama-cpp-python) | {cpp['seconds_per_question']:.2f} | "
      f"{cpp['prompt_tokens_per_second']:.0f} | 1.00x | – | – | {frac:.2f} | "
      f"{cpp['same_choice']}/{cpp['questions']} | {cpp['max_abs_delta_nats']:.3f} |")
PY
