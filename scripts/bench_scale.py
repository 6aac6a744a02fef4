"""Inputs and figures of scripts/bench_scale.sh (the scale curve in BENCHMARKS.md).

  bench_scale.py passages STORE OUT.jsonl N      N passage documents from the textbook corpus
  bench_scale.py questions STORE OUT.jsonl N     the first N MMLU test questions (seeded order)
  bench_scale.py row LOG TIME_V                  one Markdown row from a run's log + /usr/bin/time -v

Passages are the OpenStax textbook pages (dataset `openstax-mmlu`) cut into 100-word pieces at
word boundaries; when N is larger than the number of pieces, the pieces repeat with distinct
ids (`p{copy}-{index}`), so every size is built from the same real text.
"""

import json
import random
import re
import sys


def pieces(store):
    out = []
    with open(f"{store}/openstax-mmlu/documents.jsonl", encoding="utf-8") as f:
        for line in f:
            words = json.loads(line)["text"].split()
            for i in range(0, len(words), 100):
                piece = " ".join(words[i : i + 100])
                if len(piece.split()) >= 20:
                    out.append(piece)
    return out


def passages(store, out, n):
    base = pieces(store)
    with open(out, "w", encoding="utf-8") as f:
        for i in range(n):
            copy, j = divmod(i, len(base))
            f.write(json.dumps({"id": f"p{copy}-{j}", "text": base[j]}) + "\n")
    print(f"{n} passages ({len(base)} distinct pieces of 100 words)", file=sys.stderr)


def questions(store, out, n):
    rows = [json.loads(l) for l in open(f"{store}/mmlu-test/questions.jsonl", encoding="utf-8")]
    random.Random(0).shuffle(rows)
    with open(out, "w", encoding="utf-8") as f:
        for r in rows[:n]:
            f.write(
                json.dumps({"id": r["id"], "question": r["question"], "options": r["options"], "answer": r["answer"]})
                + "\n"
            )


def row(log, timev):
    text = open(log, encoding="utf-8").read()
    tv = open(timev, encoding="utf-8").read()
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", tv).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", tv).group(1)
    parts = [float(p) for p in wall.split(":")]
    secs = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    chunk = sum(float(x) for x in re.findall(r"chunked in ([\d.]+)s", text))
    retrieve = sum(float(x) for x in re.findall(r"top-\d+ for \d+ questions in ([\d.]+)s", text))
    stages = {"chunk": chunk, "retrieve": retrieve, "rest": secs - chunk - retrieve}
    print(json.dumps({"wall_s": secs, "peak_rss_gib": rss_kb / 2**20, "stages": stages}))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "passages":
        passages(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "questions":
        questions(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "row":
        row(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {cmd}")
