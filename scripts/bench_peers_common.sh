# Sourced by scripts/bench_bm25_peers.sh and scripts/bench_dense_peers.sh (issue 40): the
# parts of a peers table both print. Needs $VENV (a venv with Python 3).

# The CPU line (model, cores, the SIMD flags the kernels dispatch on) and the table header.
peers_header() {
  local flags
  flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512bw|avx512vl|fma)$' | tr '\n' ' ')
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, flags: $flags"
  echo "| passages | engine | build s | queries/s | chunkbench vs engine (queries/s) | top-10 overlap with chunkbench | load avg before |"
  echo "|---:|---|---:|---:|---:|---:|---|"
}

# chunkbench_row JSON N ENGINE LOAD: prints chunkbench's row from its example's JSON record
# and sets cb_qps (its queries per second) for the peers' ratios.
chunkbench_row() {
  local build
  cb_qps=$(echo "$1" | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["queries_per_s"])')
  build=$(echo "$1" | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["build_s"])')
  echo "| $2 | $3 | $build | $cb_qps | 1.00x | 1.000 | $4 |"
}

# peer_row ENGINE_JSON CHUNKBENCH_TOPK PEER_TOPK N LOAD: the peer's row with the ratio of
# chunkbench's queries/s to its and the top-10 overlap of the two engines' lists.
peer_row() {
  local ov
  ov=$("$VENV/bin/python" scripts/bench_bm25_peers.py overlap "$2" "$3" 10)
  "$VENV/bin/python" scripts/bench_bm25_peers.py row "$1" "$ov" "$cb_qps" "$4" "$5"
}
