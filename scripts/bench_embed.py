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

  bench_embed.py ort MODEL_DIR SENTENCES_JSONL THREADS BATCH REPEAT EMB_OUT REF_F32 WORK_DIR
      ONNX Runtime on the same model (see ort()): one JSON object per variant, with the minimum
      cosine against REF_F32 (sentence-transformers' embeddings from `st`).

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


def ort(model_dir, sents_path, threads, batch, repeat, emb_out, ref_path, work_dir):
    """ONNX Runtime on the same model: the BertModel exported with torch.onnx.export (opset
    17, dynamic batch and sequence axes), then (a) the exported graph and (b) the graph after
    onnxruntime.transformers' BERT optimizer (attention, layer-norm, GELU fusions), each run
    by an InferenceSession (THREADS intra-op threads, sequential execution, all graph
    optimisations). Inputs sorted by length and padded per batch, as sentence-transformers
    does; mean pooling over the attention mask and L2 normalisation in numpy. Times cover
    tokenisation, the session and pooling, best of REPEAT after a warm-up. Prints one JSON
    object per variant; writes the optimised variant's embeddings to EMB_OUT."""
    import os

    import numpy as np
    import onnxruntime as rt
    import torch
    from onnxruntime.transformers import optimizer
    from transformers import AutoModel, AutoTokenizer

    with open(sents_path, encoding="utf-8") as f:
        texts = [json.loads(l) for l in f if l.strip()]
    tok = AutoTokenizer.from_pretrained(model_dir)
    max_len = 256  # sentence-transformers' max_seq_length for this model
    os.makedirs(work_dir, exist_ok=True)
    plain = os.path.join(work_dir, "minilm.onnx")
    fused = os.path.join(work_dir, "minilm-opt.onnx")
    bert = AutoModel.from_pretrained(model_dir).eval()

    class Hidden(torch.nn.Module):
        """The BertModel's last hidden state from its three inputs, passed by name."""

        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    enc = tok(["a warm sentence", "b"], padding=True, return_tensors="pt")
    with torch.inference_mode():
        torch.onnx.export(Hidden(), (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
                          plain, input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "seq"} for n in
                                        ["input_ids", "attention_mask", "token_type_ids",
                                         "last_hidden_state"]})
    opt = optimizer.optimize_model(plain, model_type="bert", num_heads=12, hidden_size=384)
    opt.save_model_to_file(fused)
    ref = np.fromfile(ref_path, dtype="<f4").reshape(len(texts), -1)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    tokens = sum(len(tok(t, truncation=True, max_length=max_len)["input_ids"]) for t in texts)

    def encode(sess, items):
        out = np.zeros((len(items), 384), dtype=np.float32)
        for b in range(0, len(order), batch):
            idx = order[b:b + batch]
            e = tok([items[i] for i in idx], padding=True, truncation=True, max_length=max_len,
                    return_tensors="np")
            feed = {k: e[k].astype(np.int64) for k in
                    ("input_ids", "attention_mask", "token_type_ids")}
            h = sess.run(None, feed)[0]
            m = feed["attention_mask"][:, :, None].astype(np.float32)
            v = (h * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
            out[idx] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out

    for name, path in (("ONNX Runtime, exported graph", plain),
                       ("ONNX Runtime, BERT-fused graph", fused)):
        so = rt.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = rt.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = rt.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        encode(sess, texts)  # warm-up
        best, emb = float("inf"), None
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            emb = encode(sess, texts)
            best = min(best, time.perf_counter() - t0)
        cos = float((emb * ref).sum(1).min())
        if path == fused:
            emb.astype("<f4").tofile(emb_out)
        print(json.dumps({
            "impl": f"{name} (onnxruntime {rt.__version__})",
            "threads": threads, "batch_size": batch, "sentences": len(texts),
            "tokens": tokens, "seconds": best, "sentences_per_s": len(texts) / best,
            "tokens_per_s": tokens / best, "min_cosine_vs_reference": cos,
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
    elif cmd == "ort":
        ort(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
            sys.argv[7], sys.argv[8], sys.argv[9])
    elif cmd == "machine":
        machine()
    else:
        sys.exit(__doc__)
