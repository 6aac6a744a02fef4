#!/usr/bin/env bash
# Exact dense top-k side by side with faiss-cpu's IndexFlatIP at scale (issue 40): 100k and 1M
# passages of 384-d unit vectors (MiniLM's dimension), 1,000 queries, top-10, 2 threads.
#
#   scripts/bench_dense_peers.sh                 # SIZES="100000 1000000"
#   SIZES=100000 REPEAT=1 scripts/bench_dense_peers.sh
#
# scripts/bench_dense_peers.py explains the vectors and how faiss is called; chunkbench's side
# is crates/retriever/examples/bench_dense.rs (release): DenseIndex::search_batch over all
# queries, as the runner calls it. Prints one Markdown row per (size, engine): build s,
# queries/s, ratio of chunkbench's queries/s to the engine's, top-10 overlap with chunkbench's
# lists, with the load average and the CPU's SIMD flags.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"100000 1000000"}
REPEAT=${REPEAT:-3}
DIM=${DIM:-384}
VENV=${VENV:-.venv-faiss}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench-dense}
mkdir -p "$OUT"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "faiss-cpu==1.15.1" "numpy==2.2.6"
cargo build --release -p retriever --example bench_dense
bin="${CARGO_TARGET_DIR:-target}/release/examples/bench_dense"
# shellcheck source=bench_peers_common.sh
. scripts/bench_peers_common.sh
peers_header
for n in $SIZES; do
  [ -f "$OUT/passages-$n.f32" ] || "$VENV/bin/python" scripts/bench_dense_peers.py make "$n" "$DIM" "$OUT" >&2
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  cb=$(RAYON_NUM_THREADS=2 "$bin" "$OUT/passages-$n.f32" "$OUT/queries.f32" "$DIM" "$OUT/top-chunkbench-$n.txt" 10 "$REPEAT")
  chunkbench_row "$cb" "$n" "chunkbench \`DenseIndex\`" "$load"
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  r=$(OMP_NUM_THREADS=2 "$VENV/bin/python" scripts/bench_dense_peers.py faiss "$OUT/passages-$n.f32" "$OUT/queries.f32" "$DIM" "$OUT/top-faiss-$n.txt" 10 "$REPEAT")
  peer_row "$r" "$OUT/top-chunkbench-$n.txt" "$OUT/top-faiss-$n.txt" "$n" "$load"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
