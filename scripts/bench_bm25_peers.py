"""BM25 against bm25s at scale (issue 40); driven by scripts/bench_bm25_peers.sh.

    python3 bench_bm25_peers.py make N OUT_DIR      # corpus-N.txt and queries.txt
    python3 bench_bm25_peers.py bm25s CORPUS QUERIES TOPK_OUT [K] [REPEAT] [BACKEND]
    python3 bench_bm25_peers.py overlap TOPK_A TOPK_B [K]
    python3 bench_bm25_peers.py row ENGINE_JSON OVERLAP_JSON CHUNKBENCH_QPS N LOAD

Corpus: N distinct passages of real text. The OpenStax textbook documents in data/ (the four
books of the EAR set, chemistry and economics) are cut into 100-word pieces; passage i is piece
i mod P with 30 % of its words replaced by words drawn from the corpus's own unigram
distribution (numpy, seed i), so every passage is distinct and the term statistics stay those
of textbook prose. Terms are `[a-z0-9]+` of the lower-cased text, written space-separated: the
Rust base analyser (UAX #29 words, lower-cased) splits such a line back into exactly these
terms, so both engines index identical term lists. Queries: 1,000 MMLU test questions (seeded
sample), question and options, terms the same way (multiple-choice queries as the runner
builds them for `query: question-options`).

bm25s: `bm25s.BM25(k1=1.2, b=0.75, method="lucene")` (the Lucene idf, as chunkbench's; its
scores are chunkbench's divided by k1 + 1, which ranks identically), indexed from the term
lists, queries retrieved with `k` and `n_threads=2` after dropping terms outside the
vocabulary (they score 0 in BM25); times are best of REPEAT.
"""

import json
import random
import re
import sys
import time
from pathlib import Path

WORD = re.compile(r"[a-z0-9]+")


def terms(text: str) -> list[str]:
    return WORD.findall(text.lower())


def make(n: int, out: Path) -> None:
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    words: list[str] = []
    for name in ["openstax-mmlu", "openstax-chemistry-mmlu", "openstax-economics-mmlu"]:
        path = Path("data") / name / "documents.jsonl"
        if not path.exists():
            sys.exit(f"{path} is missing: run `chunkbench data fetch` with the OpenStax mirror")
        for line in path.open(encoding="utf-8"):
            words.extend(terms(json.loads(line)["text"]))
    pieces = [words[i : i + 100] for i in range(0, len(words) - 100, 100)]
    vocab, counts = np.unique(np.array(words), return_counts=True)
    p = counts / counts.sum()
    corpus = out / f"corpus-{n}.txt"
    with corpus.open("w", encoding="utf-8") as f:
        for i in range(n):
            rng = np.random.default_rng(i)
            piece = list(pieces[i % len(pieces)])
            at = rng.choice(len(piece), size=30, replace=False)
            for j, w in zip(at, rng.choice(vocab, size=30, p=p)):
                piece[j] = str(w)
            f.write(" ".join(piece) + "\n")
    qs = [json.loads(l) for l in (Path("data") / "mmlu-test" / "questions.jsonl").open()]
    random.Random(40).shuffle(qs)
    with (out / "queries.txt").open("w", encoding="utf-8") as f:
        for q in qs[:1000]:
            t = terms(q["question"] + " " + " ".join(q["options"]))
            f.write(" ".join(t) + "\n")
    print(json.dumps({"passages": n, "pieces": len(pieces), "words": len(words),
                      "vocabulary": int(len(vocab))}))


def run_bm25s(corpus: str, queries: str, topk_out: str, k: int, repeat: int,
              backend: str) -> None:
    import bm25s

    docs = [line.split() for line in open(corpus, encoding="utf-8")]
    qs = [line.split() for line in open(queries, encoding="utf-8")]
    build = float("inf")
    for _ in range(repeat):
        model = bm25s.BM25(k1=1.2, b=0.75, method="lucene", backend=backend)
        t = time.perf_counter()
        model.index(docs, show_progress=False)
        build = min(build, time.perf_counter() - t)
    vocab = model.vocab_dict
    # Terms outside the vocabulary contribute nothing to BM25; bm25s wants known ids.
    ids = [[vocab[w] for w in q if w in vocab] or [0] for q in qs]
    search = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        res = model.retrieve(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), k=k,
                             n_threads=2, show_progress=False)
        search = min(search, time.perf_counter() - t)
    docs_idx = res.documents if hasattr(res, "documents") else res[0]
    with open(topk_out, "w", encoding="utf-8") as f:
        for row in docs_idx:
            f.write(" ".join(str(int(d)) for d in row) + "\n")
    print(json.dumps({"engine": f"bm25s {bm25s.__version__} ({backend})", "passages": len(docs),
                      "queries": len(qs), "threads": 2, "build_s": round(build, 3),
                      "queries_per_s": round(len(qs) / search, 1)}))


def overlap(a: str, b: str, k: int) -> None:
    ra = [line.split()[:k] for line in open(a)]
    rb = [line.split()[:k] for line in open(b)]
    assert len(ra) == len(rb), (len(ra), len(rb))
    shared = sum(len(set(x) & set(y)) for x, y in zip(ra, rb))
    same = sum(x == y for x, y in zip(ra, rb))
    print(json.dumps({"top_k_overlap": round(shared / (k * len(ra)), 4),
                      "identical_lists": same, "queries": len(ra)}))


def row(engine: str, over: str, cb_qps: str, n: str, load: str) -> None:
    r, o = json.loads(engine), json.loads(over)
    ratio = float(cb_qps) / r["queries_per_s"]
    print(f"| {n} | {r['engine']} | {r['build_s']} | {r['queries_per_s']} | {ratio:.2f}x | "
          f"{o['top_k_overlap']:.3f} ({o['identical_lists']} identical lists) | {load} |")


def main() -> None:
    cmd = sys.argv[1]
    if cmd == "make":
        make(int(sys.argv[2]), Path(sys.argv[3]))
    elif cmd == "bm25s":
        a = sys.argv[2:]
        run_bm25s(a[0], a[1], a[2], int(a[3]) if len(a) > 3 else 10,
                  int(a[4]) if len(a) > 4 else 3, a[5] if len(a) > 5 else "numpy")
    elif cmd == "overlap":
        overlap(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 10)
    elif cmd == "row":
        row(*sys.argv[2:7])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
