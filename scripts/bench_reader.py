"""llama.cpp's side of scripts/bench_reader.sh: scores the token ids that
crates/reader/examples/bench_reader.rs dumped, with llama-cpp-python on the same GGUF and
thread count, the same way the candle reader does (one prompt pass, then each option's
continuation fed as one batch after the prompt's KV cache), and compares the scores.

    python bench_reader.py MODEL.gguf PROMPTS.jsonl THREADS REPEAT

Prints one JSON object: seconds per question (best of REPEAT per question), prompt tokens/s,
and the agreement with the candle scores in the dump (same argmax, max |delta| in nats).
"""
import json
import math
import sys
import time

import numpy as np
from llama_cpp import Llama


def log_softmax(row):
    row = np.asarray(row, dtype=np.float64)
    m = row.max()
    return row - m - math.log(np.exp(row - m).sum())


def main():
    model, prompts, threads, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rows = [json.loads(l) for l in open(prompts) if l.strip()]
    llm = Llama(
        model_path=model,
        n_ctx=4096,
        n_batch=512,
        n_threads=threads,
        n_threads_batch=threads,
        logits_all=True,
        verbose=False,
    )
    total, prompt_tokens, same, max_delta = 0.0, 0, 0, 0.0
    for r in rows:
        ids, conts = r["ids"], r["conts"]
        best = math.inf
        for _ in range(max(1, repeat)):
            t = time.perf_counter()
            llm.reset()
            llm.eval(ids)
            first = log_softmax(llm.scores[len(ids) - 1])
            scores = []
            for c in conts:
                s = first[c[0]]
                if len(c) > 1:
                    llm.n_tokens = len(ids)  # drop the previous option from the KV cache
                    llm.eval(c[:-1])
                    for j in range(1, len(c)):
                        s += log_softmax(llm.scores[len(ids) + j - 1])[c[j]]
                scores.append(float(s))
            best = min(best, time.perf_counter() - t)
        total += best
        prompt_tokens += len(ids)
        ours = r["scores"]
        same += int(int(np.argmax(ours)) == int(np.argmax(scores)))
        max_delta = max(max_delta, max(abs(a - b) for a, b in zip(ours, scores)))
    n = len(rows)
    print(json.dumps({
        "engine": "llama.cpp (llama-cpp-python)",
        "threads": threads,
        "questions": n,
        "seconds_per_question": total / n,
        "prompt_tokens_per_second": prompt_tokens / total,
        "same_choice": same,
        "max_abs_delta_nats": max_delta,
    }))


if __name__ == "__main__":
    main()
