#!/usr/bin/env bash
# The scale curve (BENCHMARKS.md, "Scale"): time per stage and peak RSS of BM25, dense
# (MiniLM) and EAR over corpora of 10k, 100k and 1M passages × 1k and 14k MMLU test
# questions, one `chunkbench run` per (corpus, questions, retriever), each under
# /usr/bin/time -v.
#
#   scripts/bench_scale.sh                          # every size
#   SIZES="10000 100000" QUESTIONS=1000 RETRIEVERS="bm25 dense" scripts/bench_scale.sh
#
# Passages: the OpenStax textbook pages (dataset openstax-mmlu) cut into 100-word pieces and
# repeated with distinct ids past the ~12k distinct pieces (scripts/bench_scale.py), imported
# with `chunkbench data import` into a scratch store. The embedding cache is warmed once with
# the distinct pieces, so the dense rows measure lookup + index + search, not MiniLM (whose
# throughput is in "Embeddings"). Reader: lexical, top-8. Prints one Markdown row per run.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CHUNKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/release/chunkbench}
SIZES=${SIZES:-10000 100000 1000000}
QUESTIONS=${QUESTIONS:-1000 14042}
RETRIEVERS=${RETRIEVERS:-bm25 dense ear}
WORK=${WORK:-target/bench-scale}
STORE=${CHUNKBENCH_STORE:-data}
[ -x "$BIN" ] || { echo "no chunkbench binary at $BIN (cargo build --release, or set CHUNKBENCH_BIN)" >&2; exit 2; }
[ -f "$STORE/openstax-mmlu/documents.jsonl" ] || { echo "run \`chunkbench data fetch\` first (needs the textbooks)" >&2; exit 2; }
mkdir -p "$WORK/store" "$WORK/logs"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 2; }

import() { # NAME PASSAGES QUESTIONS
  local name=$1 n=$2 q=$3
  [ -f "$WORK/store/$name/manifest.json" ] && return 0
  python3 scripts/bench_scale.py passages "$STORE" "$WORK/passages-$n.jsonl" "$n"
  python3 scripts/bench_scale.py questions "$STORE" "$WORK/questions-$q.jsonl" "$q"
  "$BIN" data import "$name" --store "$WORK/store" --documents "$WORK/passages-$n.jsonl" \
    --questions "$WORK/questions-$q.jsonl" --options options --answer answer \
    --answer-format index --license "CC-BY-4.0 (OpenStax); MIT (MMLU)" >&2
}

# Warm the embedding cache: every distinct piece and every question, once (not timed).
if [[ " $RETRIEVERS " == *" dense "* ]]; then
  distinct=$(python3 -c "import sys; sys.path.insert(0, 'scripts'); import bench_scale; print(len(bench_scale.pieces('$STORE')))")
  import scale-warm "$distinct" 14042
  printf '%s\n' "name: warm" "datasets: [scale-warm]" "strategies:" \
    "  fixed: {kind: fixed, unit: words, size: 1000}" "retrievers:" \
    "  dense: {kind: dense, query: question+options}" "k: [8]" "readers:" \
    "  lexical: {kind: lexical}" "baseline: fixed" "seed: 0" "bootstrap_resamples: 200" \
    "output: $WORK/runs" "embedder: {cache: $WORK/embeddings}" > "$WORK/warm.yaml"
  echo "== warming the embedding cache ($distinct pieces, 14042 questions)" >&2
  "$BIN" run "$WORK/warm.yaml" --store "$WORK/store" >"$WORK/logs/warm.log" 2>&1
fi

echo "| passages | questions | retriever | wall s | chunk s | retrieve s | other s | peak RSS GiB |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|"
for n in $SIZES; do
  for q in $QUESTIONS; do
    name="scale-$n-$q"
    import "$name" "$n" "$q"
    for r in $RETRIEVERS; do
      case $r in
        bm25) strat="fixed: {kind: fixed, unit: words, size: 1000}"; ret="bm25: {kind: bm25}" ;;
        dense) strat="fixed: {kind: fixed, unit: words, size: 1000}"; ret="dense: {kind: dense, query: question+options}" ;;
        ear) strat="fixed: {kind: ear}"; ret="bm25: {kind: bm25}" ;;
      esac
      cfg="$WORK/$name-$r.yaml"
      cat > "$cfg" <<EOF
name: $name-$r
datasets: [$name]
strategies:
  $strat
retrievers:
  $ret
k: [8]
readers:
  lexical: {kind: lexical}
baseline: fixed
seed: 0
bootstrap_resamples: 200
output: $WORK/runs
embedder: {cache: $WORK/embeddings}
EOF
      log="$WORK/logs/$name-$r.log"
      rm -rf "$WORK/runs/$name-$r"
      LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
      /usr/bin/time -v -o "$log.time" "$BIN" run "$cfg" --store "$WORK/store" >"$log" 2>&1 \
        || { echo "run failed: $log" >&2; tail -5 "$log" >&2; exit 1; }
      python3 - "$log" "$log.time" "$n" "$q" "$r" "$LOAD_BEFORE" <<'PY'
import json, subprocess, sys
log, tv, n, q, r, load = sys.argv[1:]
j = json.loads(subprocess.check_output([sys.executable, "scripts/bench_scale.py", "row", log, tv]))
s = j["stages"]
print(f"| {int(n):,} | {int(q):,} | {r} | {j['wall_s']:.1f} | {s['chunk']:.1f} | {s['retrieve']:.1f} | {s['rest']:.1f} | {j['peak_rss_gib']:.2f} |"
      f" <!-- load before {load} -->")
PY
    done
  done
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/2^20}' /proc/meminfo); load average after: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
