#!/usr/bin/env python3
"""chunkbench's external-chunker adapters: LangChain, LlamaIndex and chonkie splitters behind
the `kind: command` protocol.

Reads the documents as JSONL on stdin ({"id", "title", "text"} per line) and prints one
chunk per line on stdout as {"doc_id", "start", "end"}: byte offsets into the document's
text, converted from the library's own character offsets when it reports them, otherwise
from the chunk text located in order (the first occurrence after the previous chunk's start
that ends after the previous chunk's end, else the first after its start).
A chunk that is not a slice of its document is an error (exit 1), never a guess.

    chunk.py langchain-recursive --chunk-size 400 --chunk-overlap 0
    chunk.py llamaindex-sentence --chunk-size 200 --chunk-overlap 20   (sizes in words)
    chunk.py chonkie-recursive --chunk-size 400                         (sizes in characters)
    chunk.py chonkie-token --chunk-size 400 --chunk-overlap 40          (character "tokens")
    chunk.py SPLITTER ... --direct    (the library's own chunk texts per document, as JSON)

Set up the libraries with scripts/adapters/setup.sh (pinned versions there).
"""
import argparse
import json
import sys


def langchain_recursive(a):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    s = RecursiveCharacterTextSplitter(chunk_size=a.chunk_size, chunk_overlap=a.chunk_overlap)
    return lambda text: langchain_starts(s, text, a.chunk_overlap)


def langchain_starts(splitter, text, overlap):
    """The chunks with their character starts as LangChain's create_documents(add_start_index=
    True) finds them: searched from the previous start plus its length minus the overlap."""
    out, index, previous = [], 0, 0
    for c in splitter.split_text(text):
        index = text.find(c, max(0, index + previous - overlap))
        out.append((c, index if index >= 0 else None))
        previous = len(c)
        index = max(index, 0)
    return out


def llamaindex_sentence(a):
    from llama_index.core.node_parser import SentenceSplitter

    # Sizes in whitespace words: no tokenizer download (the default is tiktoken's gpt2).
    s = SentenceSplitter(
        chunk_size=a.chunk_size, chunk_overlap=a.chunk_overlap, tokenizer=lambda t: t.split()
    )
    return lambda text: [(c, None) for c in s.split_text(text)]


def chonkie_recursive(a):
    from chonkie import RecursiveChunker

    s = RecursiveChunker(tokenizer="character", chunk_size=a.chunk_size)
    return lambda text: [(c.text, c.start_index) for c in s.chunk(text)]


def chonkie_token(a):
    from chonkie import TokenChunker

    s = TokenChunker(tokenizer="character", chunk_size=a.chunk_size, chunk_overlap=a.chunk_overlap)
    return lambda text: [(c.text, c.start_index) for c in s.chunk(text)]


SPLITTERS = {
    "langchain-recursive": langchain_recursive,
    "llamaindex-sentence": llamaindex_sentence,
    "chonkie-recursive": chonkie_recursive,
    "chonkie-token": chonkie_token,
}


def locate(text, chunk, prev):
    """Where `chunk` is in `text` (characters), given the previous chunk's (start, end): the first
    occurrence starting after the previous start that ends after the previous end, else the
    first starting after the previous start (chunkbench's rule for located texts, spans.rs)."""
    if prev is None:
        return text.find(chunk)
    first, i = -1, prev[0] + 1
    while True:
        pos = text.find(chunk, i)
        if pos < 0:
            return first
        if pos + len(chunk) > prev[1]:
            return pos
        if first < 0:
            first = pos
        i = pos + 1


def spans(doc_id, text, chunks):
    """Byte spans of `chunks` ((text, char start or None) pairs) in `text`."""
    prev = None
    for chunk, start in chunks:
        if start is None or text[start : start + len(chunk)] != chunk:
            start = locate(text, chunk, prev)
        if start < 0:
            sys.exit(f"chunk.py: a chunk of document {doc_id!r} is not a slice of it: {chunk[:60]!r}")
        prev = (start, start + len(chunk))
        b = len(text[:start].encode("utf-8"))
        yield {"doc_id": doc_id, "start": b, "end": b + len(chunk.encode("utf-8"))}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("splitter", choices=sorted(SPLITTERS))
    p.add_argument("--chunk-size", type=int, required=True)
    p.add_argument("--chunk-overlap", type=int, default=0)
    p.add_argument("--direct", action="store_true", help="print the library's chunk texts")
    a = p.parse_args()
    split = SPLITTERS[a.splitter](a)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        d = json.loads(line)
        chunks = split(d["text"])
        if a.direct:
            out.write(json.dumps({"doc_id": d["id"], "texts": [c for c, _ in chunks]}) + "\n")
        else:
            for s in spans(d["id"], d["text"], chunks):
                out.write(json.dumps(s) + "\n")


if __name__ == "__main__":
    main()
