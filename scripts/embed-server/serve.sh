#!/usr/bin/env bash
# Serves a sentence-transformers model directory with infinity-emb on 127.0.0.1, on the CPU in
# float32, with no network access (HF_HUB_OFFLINE) and no usage statistics:
#
#   scripts/embed-server/serve.sh models/all-MiniLM-L6-v2 7997 [infinity_emb v2 flags...]
#
# Then `embedder: {kind: openai, base_url: http://127.0.0.1:7997, model: all-MiniLM-L6-v2}`
# in a run config (POST /embeddings, GET /models). SERVED_NAME renames the model; an API key
# is required when INFINITY_API_KEY is set. The environment comes from setup.sh.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 MODEL_DIR PORT [infinity_emb v2 flags...]" >&2; exit 2; }
model=$1
port=$2
shift 2
[ -f "$model/config.json" ] || { echo "$model: no config.json (run \`chunkbench models fetch\` for the default model)" >&2; exit 2; }
py=$("$(dirname "$0")/setup.sh")
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DO_NOT_TRACK=1 INFINITY_ANONYMOUS_USAGE_STATS=0 TOKENIZERS_PARALLELISM=false
exec "$(dirname "$py")/infinity_emb" v2 --model-id "$model" \
    --served-model-name "${SERVED_NAME:-all-MiniLM-L6-v2}" --engine torch --device cpu \
    --dtype float32 --no-bettertransformer --no-model-warmup --no-vector-disk-cache \
    --host 127.0.0.1 --port "$port" "$@"
