#!/usr/bin/env bash
# Server reader vs local reader, question by question (BENCHMARKS.md, "Server readers"):
# starts llama.cpp's server (scripts/llama-server/serve.sh, default batch; PARITY_SERVER_FLAGS
# adds flags, e.g. `--n_batch 1` for order-independent scores at about a tenth of the prompt
# speed) on 127.0.0.1:8765 with the pinned SmolLM2 GGUF, runs
# configs/reader-parity.yaml (readers `local` and `server` on the same prompts), and prints
# per dataset: questions, same choice, accuracy of each, and the per-option log-likelihood
# differences (max, 99th percentile, median, and the largest among options the local reader
# gives more than 1 % probability).
#
#   scripts/reader-parity.sh            # uses target/debug/chunkbench or $CHUNKBENCH_BIN
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${CHUNKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/debug/chunkbench}
model=models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf
log=$(mktemp)
CHUNKBENCH_WATCH_PID=$$ scripts/llama-server/serve.sh "$model" 8765 --n_threads 2 ${PARITY_SERVER_FLAGS:-} >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 240); do
  curl -sf http://127.0.0.1:8765/v1/models >/dev/null && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
"$bin" run configs/reader-parity.yaml
echo "run: $(( $(date +%s) - start )) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - results/runs/reader-parity/per_question.csv <<'PY'
import csv, math, sys
from collections import defaultdict
rows = defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    rows[(r["dataset"], r["question_id"])][r["reader"]] = r
by = defaultdict(list)
for (ds, _), rr in rows.items():
    if "local" in rr and "server" in rr:
        by[ds].append((rr["local"], rr["server"]))
for ds, pairs in sorted(by.items()):
    n = len(pairs)
    same = sum(a["choice"] == b["choice"] and a["tied"] == b["tied"] for a, b in pairs)
    acc = lambda i: sum(p[i]["correct"] == "1" for p in pairs)
    deltas, likely = [], []
    for a, b in pairs:
        for x, y in zip(a["scores"].split(";"), b["scores"].split(";")):
            d = abs(float(x) - float(y))
            deltas.append(d)
            if float(x) > math.log(0.01):
                likely.append(d)
    deltas.sort()
    pct = lambda q: deltas[min(len(deltas) - 1, int(q * len(deltas)))]
    print(f"{ds}: {n} questions; same choice {same}/{n} ({100 * same / n:.1f} %); "
          f"accuracy local {acc(0)}/{n}, server {acc(1)}/{n}; |Δ log-likelihood| per option: "
          f"max {deltas[-1]:.3f}, p99 {pct(0.99):.3f}, median {pct(0.5):.4f}; "
          f"max over options with local p > 1 %: {max(likely, default=0):.3f} ({len(likely)} options)")
PY
