#!/usr/bin/env bash
# BM25 side by side with bm25s at scale (issue 40): 100k and 1M passages of textbook prose,
# 1,000 MMLU multiple-choice queries, k1 = 1.2, b = 0.75 (Lucene idf) on both, 2 threads.
#
#   scripts/bench_bm25_peers.sh                 # SIZES="100000 1000000"
#   SIZES=100000 REPEAT=1 scripts/bench_bm25_peers.sh
#
# scripts/bench_bm25_peers.py explains the corpus, the queries and how bm25s is called.
# chunkbench's side: crates/retriever/examples/bench_bm25.rs (release). bm25s runs with its
# numpy backend and, when numba installs, its numba backend. Prints one Markdown row per
# (size, engine): build s, queries/s, ratio of chunkbench's queries/s to the engine's, top-10
# overlap with chunkbench's lists, with the load average and the CPU's SIMD flags.
# Needs data/openstax-*-mmlu and data/mmlu-test (`chunkbench data fetch` with the mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"100000 1000000"}
REPEAT=${REPEAT:-3}
VENV=${VENV:-.venv-bm25}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench-bm25}
mkdir -p "$OUT"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
  "bm25s==0.3.16" "numpy==2.2.6" "scipy==1.15.3"
backends=numpy
if "$VENV/bin/pip" install --quiet --disable-pip-version-check "numba==0.61.2" 2>/dev/null; then
  backends="numpy numba"
fi
cargo build --release -p retriever --example bench_bm25
bin="${CARGO_TARGET_DIR:-target}/release/examples/bench_bm25"
# shellcheck source=bench_peers_common.sh
. scripts/bench_peers_common.sh
peers_header
for n in $SIZES; do
  [ -f "$OUT/corpus-$n.txt" ] || "$VENV/bin/python" scripts/bench_bm25_peers.py make "$n" "$OUT" >&2
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  cb=$(RAYON_NUM_THREADS=2 "$bin" "$OUT/corpus-$n.txt" "$OUT/queries.txt" "$OUT/top-chunkbench-$n.txt" 10 "$REPEAT")
  chunkbench_row "$cb" "$n" chunkbench "$load"
  for be in $backends; do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    r=$("$VENV/bin/python" scripts/bench_bm25_peers.py bm25s "$OUT/corpus-$n.txt" "$OUT/queries.txt" "$OUT/top-bm25s-$be-$n.txt" 10 "$REPEAT" "$be")
    peer_row "$r" "$OUT/top-chunkbench-$n.txt" "$OUT/top-bm25s-$be-$n.txt" "$n" "$load"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
