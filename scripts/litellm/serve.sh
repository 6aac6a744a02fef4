#!/usr/bin/env bash
# Serves Anthropic's Messages API (`POST /v1/messages`, `x-api-key`, `anthropic-version`) on
# 127.0.0.1 with the LiteLLM proxy, in front of an OpenAI-compatible server (e.g.
# scripts/llama-server/serve.sh), so that `protocol: anthropic` is tested against a real
# implementation of the protocol's server side:
#
#   scripts/litellm/serve.sh http://127.0.0.1:8765/v1 8766 [MASTER_KEY]
#
# The model is published as `smollm2` (GET /v1/models lists it) and forwarded through
# LiteLLM's `hosted_vllm` provider, which calls the backend's /chat/completions (LiteLLM's
# `openai` provider would call the Responses API, which llama.cpp's Python server lacks).
# With MASTER_KEY every request must carry it (`x-api-key` or `Authorization: Bearer`).
# With CHUNKBENCH_WATCH_PID set, the proxy exits when that process does.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BACKEND_BASE_URL PORT [MASTER_KEY]" >&2; exit 2; }
backend=$1
port=$2
key=${3:-}
py=$("$(dirname "$0")/setup.sh")
dir=$(mktemp -d)
{
  echo "model_list:"
  echo "  - model_name: smollm2"
  echo "    litellm_params:"
  echo "      model: hosted_vllm/smollm2"
  echo "      api_base: $backend"
  echo "      api_key: none"
  if [ -n "$key" ]; then
    echo "general_settings:"
    echo "  master_key: $key"
  fi
} >"$dir/config.yaml"
if [ -n "${CHUNKBENCH_WATCH_PID:-}" ]; then
  me=$$
  ( while kill -0 "$CHUNKBENCH_WATCH_PID" 2>/dev/null; do sleep 1; done; kill "$me" 2>/dev/null ) &
fi
export LITELLM_LOG=ERROR LITELLM_TELEMETRY=False
exec "$(dirname "$py")/litellm" --config "$dir/config.yaml" --host 127.0.0.1 --port "$port"
