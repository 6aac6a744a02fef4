"""A plain-function chunker used two ways by test_chunkers.py: imported and passed to
chunkbench_harness.run as an object, and run as a `kind: command` program (its main)."""

import json
import sys


def paragraphs(text):
    """The text's paragraphs (split at blank lines), stripped, empty ones left out."""
    return [p.strip() for p in text.split("\n\n") if p.strip()]


if __name__ == "__main__":
    for line in sys.stdin:
        if line.strip():
            d = json.loads(line)
            for p in paragraphs(d["text"]):
                print(json.dumps({"doc_id": d["id"], "text": p}))
