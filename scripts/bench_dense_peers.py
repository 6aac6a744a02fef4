"""Exact dense top-k against faiss-cpu's IndexFlatIP (issue 40); driven by
scripts/bench_dense_peers.sh.

    python3 bench_dense_peers.py make N DIM OUT_DIR        # passages-N.f32 and queries.f32
    python3 bench_dense_peers.py faiss PASSAGES QUERIES DIM TOPK_OUT [K] [REPEAT]

Vectors: raw little-endian f32, row-major, unit rows. Passages are clustered like sentence
embeddings of a topical corpus rather than uniform on the sphere (where every cosine is near 0
and the top-k is decided by rounding): 1,000 centres drawn from a standard normal, passage i =
centre (i mod 1000) + 0.6 x standard-normal noise (numpy, seed 40 for the centres, then seed
40 + 1 + i // 100000 per block of 100k rows), normalised. Queries: 1,000 of the first 100k
passages picked with seed 7, each (before normalisation) plus 0.3 x noise, normalised; so every query has a few dozen close passages and a
well-separated top 10.

faiss: `faiss.IndexFlatIP(dim)`, `add(passages)` timed as the build, `search(queries, k)`
timed as one batch (faiss computes the inner products with BLAS sgemm for batches of 20 or
more queries and keeps a heap per query), `faiss.omp_set_num_threads(2)`; best of REPEAT.
The top-k overlap and the table row come from bench_bm25_peers.py's `overlap` and `row`.
"""

import json
import sys
import time
from pathlib import Path


def make(n: int, dim: int, out: Path) -> None:
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    centres = np.random.default_rng(40).standard_normal((1000, dim), dtype=np.float32)
    block = 100_000
    with (out / f"passages-{n}.f32").open("wb") as f:
        for b, start in enumerate(range(0, n, block)):
            rows = np.arange(start, min(n, start + block))
            rng = np.random.default_rng(40 + 1 + b)
            x = centres[rows % 1000] + 0.6 * rng.standard_normal((len(rows), dim),
                                                                 dtype=np.float32)
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            f.write(x.astype("<f4").tobytes())
    rng = np.random.default_rng(7)
    picks = rng.choice(min(n, 100_000), size=1000, replace=False)
    rng0 = np.random.default_rng(40 + 1)
    base = centres[np.arange(min(n, 100_000)) % 1000] + 0.6 * rng0.standard_normal(
        (min(n, 100_000), dim), dtype=np.float32)
    q = base[picks] + 0.3 * rng.standard_normal((1000, dim), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    (out / "queries.f32").write_bytes(q.astype("<f4").tobytes())
    print(json.dumps({"passages": n, "dim": dim, "queries": 1000}))


def run_faiss(passages: str, queries: str, dim: int, topk_out: str, k: int, repeat: int) -> None:
    import faiss
    import numpy as np

    faiss.omp_set_num_threads(2)
    x = np.fromfile(passages, dtype="<f4").reshape(-1, dim)
    q = np.fromfile(queries, dtype="<f4").reshape(-1, dim)
    build = search = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        index = faiss.IndexFlatIP(dim)
        index.add(x)
        build = min(build, time.perf_counter() - t)
    for _ in range(repeat):
        t = time.perf_counter()
        _, ids = index.search(q, k)
        search = min(search, time.perf_counter() - t)
    with open(topk_out, "w", encoding="utf-8") as f:
        for row in ids:
            f.write(" ".join(str(int(d)) for d in row if d >= 0) + "\n")
    print(json.dumps({"engine": f"faiss-cpu {faiss.__version__} IndexFlatIP",
                      "passages": len(x), "queries": len(q), "threads": 2,
                      "build_s": round(build, 3), "queries_per_s": round(len(q) / search, 1)}))


def main() -> None:
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "make":
        make(int(a[0]), int(a[1]), Path(a[2]))
    elif cmd == "faiss":
        run_faiss(a[0], a[1], int(a[2]), a[3], int(a[4]) if len(a) > 4 else 10,
                  int(a[5]) if len(a) > 5 else 3)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
