#!/usr/bin/env bash
# Serves a GGUF with llama.cpp's OpenAI-compatible server (llama-cpp-python's
# `llama_cpp.server`) on 127.0.0.1:
#
#   scripts/llama-server/serve.sh models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf 8765 [flags...]
#
# Then a reader `{kind: openai, openai: {base_url: http://127.0.0.1:8765/v1, model: M, ...}}`
# (M: any name; llama.cpp reports the GGUF path under GET /v1/models). The context is 4096
# tokens (the local reader's window for llama models) and all logits are kept, which log-prob
# replies need; extra flags (e.g. `--n_threads 2`) go to llama_cpp.server. The environment
# comes from setup.sh. With CHUNKBENCH_WATCH_PID set, the server exits when that process does
# (tests keep one server for the whole test binary).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 MODEL.gguf PORT [llama_cpp.server flags...]" >&2; exit 2; }
model=$1
port=$2
shift 2
[ -f "$model" ] || { echo "$model: not found (run \`chunkbench models fetch\` for the default model)" >&2; exit 2; }
py=$("$(dirname "$0")/setup.sh")
if [ -n "${CHUNKBENCH_WATCH_PID:-}" ]; then
  me=$$
  ( while kill -0 "$CHUNKBENCH_WATCH_PID" 2>/dev/null; do sleep 1; done; kill "$me" 2>/dev/null ) &
fi
exec "$py" -m llama_cpp.server --model "$model" --host 127.0.0.1 --port "$port" \
    --n_ctx 4096 --logits_all true "$@"
