#!/usr/bin/env bash
# Dense retrieval benchmark (issue 7): exact top-10 over 10k and 100k random 384-d unit
# vectors, 1k queries, blocked candle matmul vs a plain per-query loop, measured in one run.
# Writes the figures into the `## Retrieval` section of BENCHMARKS.md (other sections are left
# untouched; the file is created if absent).
#
#   scripts/bench_retrieval.sh            # build + run + update BENCHMARKS.md
#   NO_WRITE=1 scripts/bench_retrieval.sh # print only
#
# Environment passed to the bench: BENCH_SIZES, BENCH_QUERIES, BENCH_DIM, BENCH_K,
# BENCH_REPEATS (see crates/retriever/benches/dense.rs), RAYON_NUM_THREADS.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mktemp)
JSON=$(mktemp)
trap 'rm -f "$OUT" "$JSON"' EXIT

cd "$ROOT"
# Build first so the load figure below is not the compiler's.
cargo bench --quiet -p retriever --bench dense --no-run
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
BENCH_JSON="$JSON" cargo bench --quiet -p retriever --bench dense | tee "$OUT"

[ -n "${NO_WRITE:-}" ] && exit 0

CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
CORES=$(nproc)
AVX512=$(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE=$(date -u +%Y-%m-%d)

python3 - "$ROOT/BENCHMARKS.md" "$OUT" "$CPU" "$CORES" "$AVX512" "$COMMIT" "$DATE" "$LOAD" <<'PY'
import re, sys
path, out, cpu, cores, avx512, commit, date, load = sys.argv[1:]
lines = open(out).read().splitlines()
table = "\n".join(l for l in lines if l.startswith("|"))
header = next((l for l in lines if l.startswith("dense exact")), "")
section = f"""## Retrieval

Exact dense top-k (`crates/retriever`, `DenseIndex`): random unit vectors, {header}.
Machine: {cpu}, {cores} cores (AVX-512: {avx512}); load average before the run {load} (other
jobs on a shared machine lower every figure); commit {commit}; {date}.
Reproduce: `scripts/bench_retrieval.sh` (runs `cargo bench -p retriever --bench dense`).

{table}

- *matmul*: `DenseIndex::search_batch`, queries in blocks of 256 and passages in tiles of
  8192, `Q · Pᵀ` by candle's CPU matmul (gemm crate, `x86-v4` AVX-512 kernels enabled through the workspace feature), then a
  per-row top-k on the rayon pool.
- *loop*: `DenseIndex::search_loop`, one query at a time, a dot product per passage (8-lane
  accumulators); once on one thread, once with the queries spread over the rayon pool.
- *same top-k*: queries whose top-k passage ids are identical on both paths (they can differ
  only at near-ties in the last float bits).
- Target (issue 7): at least 1,000 queries/s at 100k passages on 2 cores.
"""
try:
    text = open(path).read()
except FileNotFoundError:
    text = "# Benchmarks\n\nFigures measured on the project's 2-core machines; each section is owned by its crate.\n"
m = re.search(r"^## Retrieval\n.*?(?=^## |\Z)", text, flags=re.S | re.M)
if m:
    text = text[: m.start()] + section + ("\n" if text[m.end():] else "") + text[m.end():]
else:
    text = text.rstrip("\n") + "\n\n" + section
open(path, "w").write(text)
print(f"updated {path}")
PY
