#!/usr/bin/env python3
"""Helper for scripts/bench_embed.sh.

  bench_embed.py sentences DOCUMENTS_JSONL OUT_JSONL N
      Segments the documents' text into sentences (whitespace folded, split after . ! ? when
      the next word starts with a capital, quote or bracket; sentences of 3+ words kept) and
      writes N of them, evenly spaced over the corpus, one JSON string per line.

  bench_embed.py st MODEL_DIR SENTENCES_JSONL THREADS BATCH REPEAT EMB_OUT
      Times sentence-transformers' encode() (PyTorch CPU, THREADS intra-op threads, batch size
      BATCH, best of REPEAT runs after a warm-up) and prints one JSON object like the Rust
      example's; writes the embeddings as raw little-endian f32 to EMB_OUT.

  bench_embed.py machine
      Prints a one-line description of the CPU.
"""
import json
import re
import sys
import time


def sentences(docs_path, out_path, n):
    sents = []
    with open(docs_path, encoding="utf-8") as f:
        for line in f:
            text = " ".join(json.loads(line)["text"].split())
            for s in re.split(r'(?<=[.!?])["\u201d\u2019)]?\s+(?=["\u201c\u2018(]?[A-Z])', text):
                s = s.strip()
                if len(s.split()) >= 3:
                    sents.append(s)
    if len(sents) < n:
        sys.exit(f"only {len(sents)} sentences in {docs_path}, {n} requested")
    step = len(sents) / n
    picked = [sents[int(i * step)] for i in range(n)]
    with open(out_path, "w", encoding="utf-8") as f:
        for s in picked:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    print(f"{n} sentences from {len(sents)} in {docs_path}", file=sys.stderr)


def st(model_dir, sents_path, threads, batch, repeat, emb_out):
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    import numpy as np
    from sentence_transformers import SentenceTransformer

    with open(sents_path, encoding="utf-8") as f:
        texts = [json.loads(l) for l in f if l.strip()]
    model = SentenceTransformer(model_dir, device="cpu")
    tok = model.tokenizer
    max_len = model.max_seq_length
    tokens = sum(len(tok(t, truncation=True, max_length=max_len)["input_ids"]) for t in texts)
    model.encode(texts[:128], batch_size=batch)  # warm-up
    best = float("inf")
    emb = None
    with torch.inference_mode():
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            emb = model.encode(texts, batch_size=batch, convert_to_numpy=True)
            best = min(best, time.perf_counter() - t0)
    np.asarray(emb, dtype="<f4").tofile(emb_out)
    import sentence_transformers
    import transformers

    # The feed-forward up-projection of a 64 x 28-token batch, as in the Rust `--gemm`.
    lin = torch.nn.Linear(384, 1536)
    x = torch.rand(1792, 384)
    with torch.inference_mode():
        for _ in range(5):
            lin(x)
        t0 = time.perf_counter()
        for _ in range(40):
            lin(x)
        gflops = 2 * 1792 * 384 * 1536 * 40 / (time.perf_counter() - t0) / 1e9

    print(json.dumps({
        "impl": "sentence-transformers",
        "versions": f"sentence-transformers {sentence_transformers.__version__}, transformers {transformers.__version__}, torch {torch.__version__}",
        "threads": torch.get_num_threads(),
        "batch_size": batch,
        "sentences": len(texts),
        "tokens": tokens,
        "seconds": best,
        "sentences_per_s": len(texts) / best,
        "tokens_per_s": tokens / best,
        "linear_gflops": gflops,
    }))


def machine():
    model = "unknown CPU"
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line
    import os

    simd = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "SSE")
    print(f"{model}, {os.cpu_count()} logical CPUs, {simd}")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "sentences":
        sentences(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "st":
        st(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7])
    elif cmd == "machine":
        machine()
    else:
        sys.exit(__doc__)
