#!/usr/bin/env bash
# The studies of issue 43 (what a chunk is indexed under; LLM boundaries), copied into
# results/indexed/:
#   sciq/        configs/indexed-sciq.yaml: SciQ retrieval-only (1000 questions) — fixed-50,
#                recursive-400, headers and late over fixed-50, llm-boundaries (chroma, lumber)
#   sciq-contextual/  configs/indexed-sciq-contextual.yaml: contextual retrieval on an
#                80-question SciQ subset (one request per chunk), beside fixed-50 and headers
#   ear/         configs/indexed-ear.yaml: the EAR textbook set (153 MMLU questions, four
#                OpenStax books) — fixed and recursive 260/60, headers and late over fixed
#   ear-headers/ configs/indexed-ear-headers.yaml: headers with BM25 on the OpenStax corpus,
#                answer recall@k as the primary metric, 153 and 405 questions
# The LLM kinds need the llama.cpp server with SmolLM2 on port 8765:
#   scripts/llama-server/serve.sh models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf 8765 &
# Completed cells are reused (runs resume; model replies are cached in .cache/generations).
# Needs `chunkbench data fetch` and `chunkbench models fetch`. Env: CHUNKBENCH_BIN (default:
# the release binary, built).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_BIN:-}" ]; then
  cargo build --release -p chunkbench
  bin="${CARGO_TARGET_DIR:-target}/release/chunkbench"
else
  bin="$CHUNKBENCH_BIN"
fi
copy() { # $1 run directory, $2 destination
  rm -rf "$2"
  mkdir -p "$2/plots"
  cp "$1"/summary.md "$1"/summary.csv "$1"/chunk_stats.csv "$1"/manifest.json "$2/"
  cp "$1"/plots/*.png "$2/plots/"
}
"$bin" run configs/indexed-sciq.yaml
copy results/runs/indexed-sciq results/indexed/sciq

# The subset for contextual retrieval: the first 80 SciQ retrieval questions and their 80
# support paragraphs, imported as a user imports a table.
sub=results/runs/sciq-80-src
mkdir -p "$sub"
python3 - "$sub" <<'PY'
import json, sys
sub = sys.argv[1]
qs = [json.loads(l) for l in open("data/sciq-retrieval/questions.jsonl", encoding="utf-8")]
docs = {}
for l in open("data/sciq-retrieval/documents.jsonl", encoding="utf-8"):
    d = json.loads(l)
    docs[d["id"]] = d
sel = [q for q in qs if q.get("evidence")][:80]
ids = []
for q in sel:
    for e in q["evidence"]:
        if e["doc_id"] not in ids:
            ids.append(e["doc_id"])
with open(f"{sub}/docs.jsonl", "w", encoding="utf-8") as f:
    for i in ids:
        f.write(json.dumps({"id": i, "title": docs[i]["title"], "text": docs[i]["text"]}) + "\n")
with open(f"{sub}/questions.jsonl", "w", encoding="utf-8") as f:
    for q in sel:
        f.write(json.dumps(q) + "\n")
PY
"$bin" data import sciq-retrieval-80 --documents "$sub/docs.jsonl" --doc-title title \
  --questions "$sub/questions.jsonl" --answers answers --evidence evidence --evidence-units bytes \
  --license CC-BY-NC-3.0 --store data --force
"$bin" run configs/indexed-sciq-contextual.yaml
copy results/runs/indexed-sciq-80-contextual results/indexed/sciq-contextual

"$bin" run configs/indexed-ear.yaml
copy results/runs/indexed-ear results/indexed/ear
"$bin" run configs/indexed-ear-headers.yaml
copy results/runs/indexed-ear-headers results/indexed/ear-headers
