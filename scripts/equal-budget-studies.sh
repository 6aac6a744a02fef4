#!/usr/bin/env bash
# The verdict studies of issue 38, copied into results/:
#   results/sciq-budget/        configs/sciq-budget.yaml: fixed 64…1024-token chunks on SciQ's
#                               retrieval set at top-3 and at 256/512/1024-token budgets
#   results/user-retrieval/     configs/user-retrieval.yaml: a user-style retrieval-only run
#                               (10 files, 40 questions with evidence excerpts, imported with
#                               `data import`), clustered by document, plus the gate on a changed
#                               chunk size (compare-*.md)
# Completed cells are reused (runs resume). Needs `chunkbench data fetch` and `chunkbench models
# fetch`. Env: CHUNKBENCH_BIN (default: the release binary, built).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHUNKBENCH_BIN:-}" ]; then
  cargo build --release -p chunkbench
  bin="${CARGO_TARGET_DIR:-target}/release/chunkbench"
else
  bin="$CHUNKBENCH_BIN"
fi
copy() { # $1 run directory, $2 destination (its hand-written README.md is kept)
  find "$2" -mindepth 1 -not -name README.md -delete 2>/dev/null || true
  mkdir -p "$2/plots"
  cp "$1"/summary.md "$1"/summary.csv "$1"/chunk_stats.csv "$1"/manifest.json "$1"/report.html "$2/"
  cp "$1"/plots/*.png "$2/plots/"
}
"$bin" run configs/sciq-budget.yaml
copy results/runs/sciq-budget results/sciq-budget
# Its report.html (20 cells × 1000 questions in the explorer) is 9 MB: it stays in the run.
rm results/sciq-budget/report.html

# A user-style corpus: 10 Markdown files of 4 SciQ support paragraphs each and the 40
# retrieval questions about them (answer strings and the paragraph as the evidence excerpt),
# imported the way a user imports their own folder and CSV.
user=results/runs/user-corpus
rm -rf "$user/docs" "$user/store"
mkdir -p "$user/docs"
python3 - "$user" <<'PY'
import csv, json, sys
user = sys.argv[1]
docs = {}
for line in open("data/sciq-retrieval/documents.jsonl", encoding="utf-8"):
    d = json.loads(line)
    docs[d["id"]] = d["text"]
qs = [json.loads(l) for l in open("data/sciq-retrieval/questions.jsonl", encoding="utf-8")]
qs = [q for q in qs if q.get("evidence") and len(q["evidence"]) == 1][:40]
with open(f"{user}/questions.csv", "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(["id", "question", "answer", "excerpt"])
    for i in range(0, 40, 4):
        group = qs[i:i + 4]
        text = "\n\n".join(docs[q["evidence"][0]["doc_id"]] for q in group)
        with open(f"{user}/docs/topic-{i // 4:02d}.md", "w", encoding="utf-8") as out:
            out.write(text + "\n")
        for q in group:
            e = q["evidence"][0]
            w.writerow([q["id"], q["question"], q["answers"][0], docs[e["doc_id"]][e["start"]:e["end"]]])
PY
"$bin" data import user-sciq-40 --store "$user/store" --documents "$user/docs" \
  --questions "$user/questions.csv" --answers answer --evidence-text excerpt
"$bin" run configs/user-retrieval.yaml --store "$user/store"
copy results/runs/user-retrieval results/user-retrieval
# The gate on a changed chunk size: fixed-64 → 60 words (a small change) and → 4 words (a real
# drop); compare pairs the changed cells by their coordinates and shows the change.
for size in 60 4; do
  "$bin" run configs/user-retrieval.yaml --store "$user/store" \
    --set "strategies.fixed-64.size=$size" --output "results/runs/user-size-$size"
  set +e
  "$bin" compare results/runs/user-retrieval "results/runs/user-size-$size/user-retrieval" \
    --store "$user/store" --output "results/runs/user-size-$size" >/dev/null
  echo "compare fixed-64 → $size words: exit $?" >&2
  set -e
  cp "results/runs/user-size-$size/compare.md" "results/user-retrieval/compare-size-$size.md"
done
echo "results copied to results/sciq-budget/ and results/user-retrieval/" >&2
