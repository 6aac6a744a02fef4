#!/usr/bin/env python3
"""An A/A chunker for `kind: command` (scripts/aa-verdicts.sh): fixed chunks of SIZE words
after a random offset, seeded per (seed, document id). Two seeds give two chunkers that differ
only by chance, so a verdict between them is a false one.

stdin: the corpus as JSONL ({"id", "title", "text"} per line); stdout: one JSON span per chunk,
{"doc_id", "start", "end"} in bytes of the document's UTF-8 text, from a word's first byte to
a word's last. Usage: random_offset.py --seed S [--size 80]
"""
import argparse
import json
import random
import re
import sys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--size", type=int, default=80)
    args = ap.parse_args()
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        doc = json.loads(line)
        data = doc["text"].encode("utf-8")
        words = [(m.start(), m.end()) for m in re.finditer(rb"\S+", data)]
        if not words:
            continue
        rng = random.Random(f"{args.seed}:{doc['id']}")
        offset = rng.randrange(args.size)
        cuts = ([offset] if offset > 0 else []) + list(range(offset + args.size, len(words), args.size))
        starts = [0] + [c for c in cuts if 0 < c < len(words)]
        for i, s in enumerate(starts):
            e = starts[i + 1] if i + 1 < len(starts) else len(words)
            out.write(json.dumps({"doc_id": doc["id"], "start": words[s][0], "end": words[e - 1][1]}) + "\n")


if __name__ == "__main__":
    main()
