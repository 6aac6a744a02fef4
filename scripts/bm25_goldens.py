"""BM25 reference scores for crates/retriever/tests/bm25_golden.rs.

Reads the token lists exported by `cargo run -p retriever --example bm25_tokens` (the Rust
analyser's exact output, so tokenisation cannot differ) and scores every (query, passage) pair
with bm25s (method="lucene", float64), whose idf is Lucene's ln(1 + (N - df + 0.5)/(df + 0.5)).

bm25s, like Lucene >= 8, drops Okapi's constant (k1 + 1) factor from the term-frequency part:
    bm25s: idf * tf / (tf + k1 * (1 - b + b * |d| / avgdl))
    ours:  idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
so the golden is bm25s's score times (k1 + 1) (a constant; rankings are identical). The script
also recomputes every score from the formula above in plain Python and checks the two agree to
1e-9, which catches a bm25s version that scores differently (e.g. deduplicating query terms).
rank_bm25's BM25Okapi is not used: its idf is ln((N - df + 0.5)/(df + 0.5)) with negative
values floored to epsilon * mean idf, which is not Lucene's.

Usage: python bm25_goldens.py TOKENS.json OUT.json
"""

import json
import math
import sys
from importlib.metadata import version

import numpy as np
import bm25s

K1, B = 1.2, 0.75


def by_hand(passages, query):
    n = len(passages)
    avgdl = sum(map(len, passages)) / n
    df = {}
    for p in passages:
        for t in set(p):
            df[t] = df.get(t, 0) + 1
    out = []
    for p in passages:
        s = 0.0
        for t in query:
            tf = p.count(t)
            if tf == 0:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            s += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(p) / avgdl))
        out.append(s)
    return out


def main(tokens_path, out_path):
    tokens = json.load(open(tokens_path, encoding="utf-8"))
    out = {
        "reference": f"bm25s=={version('bm25s')} BM25(method='lucene', k1={K1}, b={B}, "
        "dtype='float64'), scores multiplied by (k1 + 1); numpy=="
        + np.__version__,
        "k1": K1,
        "b": B,
        "analyzers": {},
    }
    for name, a in tokens["analyzers"].items():
        passages, queries = a["passages"], a["queries"]
        model = bm25s.BM25(method="lucene", k1=K1, b=B, dtype="float64")
        model.index(passages, show_progress=False)
        scores = []
        for q in queries:
            known = [t for t in q if t in model.vocab_dict]
            ref = (
                np.asarray(model.get_scores(known), dtype=np.float64) * (K1 + 1)
                if known
                else np.zeros(len(passages))
            )
            hand = by_hand(passages, q)
            worst = max(abs(x - y) for x, y in zip(ref, hand))
            assert worst < 1e-9, f"{name}: bm25s and the formula differ by {worst} on {q}"
            scores.append([float(x) for x in ref])
        out["analyzers"][name] = {
            "config": a["config"],
            "passages": passages,
            "queries": queries,
            "scores": scores,
        }
        print(f"{name}: {len(queries)} queries x {len(passages)} passages", file=sys.stderr)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
