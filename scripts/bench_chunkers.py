"""Helper of scripts/bench_chunkers.sh (the chunker speed benchmark, issue 4).

  bench_chunkers.py corpus OUT.txt --bytes N [--datasets DIR] [--data DIR]
      Builds the benchmark text: QuALITY articles and SciQ support paragraphs (the
      documents.jsonl files under data/), then the OpenStax CNXML modules of the three
      osbooks-* books with tags stripped, documents separated by a blank line; repeated if
      shorter than N bytes, then cut to N bytes at a char boundary. Writes OUT.txt and
      OUT.meta.json (composition, repetition).

  bench_chunkers.py langchain CORPUS --tokenizer tokenizer.json --json OUT.jsonl
                    [--chars-size 1000] [--tokens-size 256] [--reps-chars 5] [--reps-tokens 3]
      Times langchain_text_splitters.RecursiveCharacterTextSplitter.split_text on CORPUS
      (LangChain defaults, overlap 0) with length in chars and in MiniLM tokens (the
      `tokenizers` library with truncation and padding off and no special tokens: the count
      TextSplitter.from_huggingface_tokenizer uses, as in scripts/langchain_goldens.sh).
      Runs record thread CPU time and wall-clock time; the best CPU time is the figure. Also
      writes the chunk digest the Rust bench compares with.

  bench_chunkers.py peers CORPUS --tokenizer tokenizer.json --json OUT.jsonl [as langchain]
      The same timing for chonkie (RecursiveChunker, chars and tokens; TokenChunker, tokens)
      and semchunk (chars and tokens), appended to OUT.jsonl (issue 40).

  bench_chunkers.py report --rust R.jsonl --python P.jsonl --meta M.json
                    --benchmarks BENCHMARKS.md [--load-before S] [--load-after S] ...
      Writes the `## Chunkers` section of BENCHMARKS.md (creating the file if absent),
      leaving every other section as it is, and prints it.
"""

import argparse
import glob
import json
import os
import platform
import re
import statistics
import sys
import time
import xml.etree.ElementTree as ET

MB = 1e6


# ---------------------------------------------------------------- corpus


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


def local(tag):
    return tag.rsplit("}", 1)[-1]


def cnxml_blocks(el):
    """Plain-text blocks of a CNXML element (as in scripts/langchain_goldens.sh): titles,
    paragraphs, captions; a list is one block with one line per item; tables one line per
    row. Tags are stripped and inner whitespace collapsed."""
    for ch in el:
        tag = local(ch.tag)
        if tag in ("title", "para", "caption"):
            t = norm("".join(ch.itertext()))
            if t:
                yield t
        elif tag == "list":
            items = [norm("".join(i.itertext())) for i in ch if local(i.tag) == "item"]
            items = [i for i in items if i]
            if items:
                yield "\n".join(items)
        elif tag == "table":
            rows = []
            for row in ch.iter():
                if local(row.tag) == "row":
                    cells = [norm("".join(e.itertext())) for e in row if local(e.tag) == "entry"]
                    if any(cells):
                        rows.append(" | ".join(cells))
            if rows:
                yield "\n".join(rows)
        elif tag in ("metadata", "media", "image"):
            continue
        else:
            yield from cnxml_blocks(ch)


def cnxml_text(path):
    root = ET.parse(path).getroot()
    ns = "{http://cnx.rice.edu/cnxml}"
    title = root.find(ns + "title")
    blocks = [norm(title.text or "")] if title is not None else []
    content = root.find(ns + "content")
    if content is not None:
        blocks.extend(cnxml_blocks(content))
    return "\n\n".join(b for b in blocks if b)


def jsonl_texts(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)["text"]


def cmd_corpus(a):
    sources = []  # (name, documents, bytes)
    docs = []
    for name in ("quality", "sciq"):
        path = os.path.join(a.data, name, "documents.jsonl")
        if not os.path.isfile(path):
            sys.exit(f"error: {path} not found; run `chunkbench data fetch` first")
        texts = [t for t in jsonl_texts(path) if t.strip()]
        docs.extend(texts)
        sources.append((f"data/{name}/documents.jsonl", len(texts), sum(len(t.encode()) for t in texts)))
    ox = os.path.join(a.datasets, "openstax")
    files = sorted(glob.glob(os.path.join(ox, "osbooks-*", "modules", "*", "index.cnxml")))
    if not files:
        sys.exit(f"error: no CNXML modules under {ox}")
    texts = [t for t in (cnxml_text(p) for p in files) if t.strip()]
    docs.extend(texts)
    sources.append(("OpenStax osbooks-* modules/*/index.cnxml, tags stripped", len(texts),
                    sum(len(t.encode()) for t in texts)))
    one = "\n\n".join(docs) + "\n\n"
    raw = one.encode("utf-8")
    reps = -(-a.bytes // len(raw))  # ceil
    data = (raw * reps)[: a.bytes]
    while True:  # cut at a char boundary
        try:
            text = data.decode("utf-8")
            break
        except UnicodeDecodeError:
            data = data[:-1]
    with open(a.out, "wb") as f:
        f.write(text.encode("utf-8"))
    # Bytes of each source inside the (first copy of the) cut text, separators included.
    used, left = [], len(text.encode())
    for i, (_, _, b) in enumerate(sources):
        sep = 2 * (sum(n for _, n, _ in sources[: i + 1]) - sum(n for _, n, _ in sources[:i]))
        take = min(left, b + sep)
        used.append(take)
        left -= take
    meta = dict(
        bytes=len(text.encode()),
        chars=len(text),
        unique_bytes=len(raw),
        repeated=len(raw) < a.bytes,
        copies=len(raw) and a.bytes / len(raw),
        documents=len(docs),
        paragraph_breaks=text.count("\n\n"),
        newlines=text.count("\n"),
        non_ascii_chars=sum(1 for c in text if ord(c) > 127),
        sources=[dict(source=s, documents=n, bytes=b, bytes_used=u)
                 for (s, n, b), u in zip(sources, used)],
    )
    with open(a.out + ".meta.json", "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps(meta))


# ---------------------------------------------------------------- langchain


def fnv_digest(chunks):
    """FNV-1a 64 of every chunk's UTF-8 bytes, each followed by 0xFF (benches/chunkers.rs)."""
    h = 0xCBF29CE484222325
    for c in chunks:
        for b in c.encode("utf-8") + b"\xff":
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def load_corpus_and_counter(a):
    """The benchmark text, its size in bytes, the MiniLM tokenizer and a token counter
    without special tokens (the count TextSplitter.from_huggingface_tokenizer uses)."""
    from tokenizers import Tokenizer

    with open(a.corpus, "rb") as f:
        text = f.read().decode("utf-8")
    tok = Tokenizer.from_file(a.tokenizer)
    tok.no_truncation()
    tok.no_padding()

    def token_len(s):
        return len(tok.encode(s, add_special_tokens=False).ids)

    return text, len(text.encode()), tok, token_len


def time_tool(tool, unit, size, reps, split, text, nbytes, versions):
    """Best-of-`reps` thread CPU and wall time of `split(text)` (a list of chunk strings),
    as one throughput record."""
    wall, cpu = [], []
    chunks = None
    for rep in range(reps):
        w0, c0 = time.perf_counter(), time.thread_time()
        got = split(text)
        c1, w1 = time.thread_time(), time.perf_counter()
        wall.append(w1 - w0)
        cpu.append(c1 - c0)
        print(f"  rep {rep + 1}/{reps} {tool:<22} {unit:<6} cpu {cpu[-1]:>9.4f} s, "
              f"wall {wall[-1]:>9.4f} s", file=sys.stderr, flush=True)
        if chunks is None:
            chunks = got
        del got
    bc, bw = min(cpu), min(wall)
    mean_bytes = sum(len(c.encode()) for c in chunks) / max(1, len(chunks))
    print(f"{tool:<22} {unit:<6} size {size:>4}: cpu {bc:>8.4f} s = "
          f"{nbytes / MB / bc:>8.2f} MB/s, wall {bw:>8.4f} s = {nbytes / MB / bw:>8.2f} MB/s, "
          f"{len(chunks)} chunks of {mean_bytes:.0f} bytes", file=sys.stderr, flush=True)
    return dict(kind="throughput", tool=tool, unit=unit, size=size, overlap=0,
                bytes=nbytes, best_cpu_s=bc, median_cpu_s=statistics.median(cpu),
                best_wall_s=bw, median_wall_s=statistics.median(wall), cpu_secs=cpu,
                wall_secs=wall, mb_per_s=nbytes / MB / bc,
                mb_per_s_wall=nbytes / MB / bw, chunks=len(chunks),
                mean_chunk_bytes=mean_bytes, digest=fnv_digest(chunks), **versions)


def write_jsonl(path, rows, append=False):
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def cmd_langchain(a):
    from importlib.metadata import version

    from langchain_text_splitters import RecursiveCharacterTextSplitter

    text, nbytes, _, token_len = load_corpus_and_counter(a)
    versions = dict(
        langchain_text_splitters=version("langchain-text-splitters"),
        tokenizers=version("tokenizers"),
        python=platform.python_version(),
    )
    out = []
    for unit, size, reps, length in (("chars", a.chars_size, a.reps_chars, len),
                                     ("tokens", a.tokens_size, a.reps_tokens, token_len)):
        splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0,
                                                  length_function=length)
        out.append(time_tool("langchain", unit, size, reps, splitter.split_text, text,
                             nbytes, versions))
    write_jsonl(a.json, out)


def cmd_peers(a):
    """chonkie (RecursiveChunker with its default rules, chars and tokens; TokenChunker,
    tokens) and semchunk (chunkerify with a chars or token counter), appended to --json."""
    from importlib.metadata import version

    import semchunk
    from chonkie import RecursiveChunker, TokenChunker

    text, nbytes, tok, token_len = load_corpus_and_counter(a)
    versions = dict(chonkie=version("chonkie"), semchunk=version("semchunk"),
                    tokenizers=version("tokenizers"), python=platform.python_version())

    def texts(chunker):
        return lambda t: [c.text for c in chunker.chunk(t)]

    out = []
    for unit, size, reps, counter, tokenizer in (
            ("chars", a.chars_size, a.reps_chars, len, "character"),
            ("tokens", a.tokens_size, a.reps_tokens, token_len, tok)):
        out.append(time_tool("chonkie recursive", unit, size, reps,
                             texts(RecursiveChunker(tokenizer=tokenizer, chunk_size=size)),
                             text, nbytes, versions))
        if unit == "tokens":
            out.append(time_tool("chonkie token", unit, size, reps,
                                 texts(TokenChunker(tokenizer=tok, chunk_size=size,
                                                    chunk_overlap=0)),
                                 text, nbytes, versions))
        # semchunk memoises the token counter in a module-level cache keyed by the counter
        # object, which would carry every count over from one rep to the next: each rep gets
        # a new counter object, hence a cold cache (memoisation within a rep, its default, kept).
        out.append(time_tool("semchunk", unit, size, reps,
                             lambda t, c=counter: semchunk.chunkerify(lambda s: c(s), size)(t),
                             text, nbytes, versions))
    write_jsonl(a.json, out, append=True)


# ---------------------------------------------------------------- report


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


TOOLS = ["chunkbench fixed", "chunkbench recursive", "text-splitter", "langchain",
         "chonkie recursive", "chonkie token", "semchunk"]
PEERS = [t for t in TOOLS if not t.startswith("chunkbench")]


def render(a):
    rows = read_jsonl(a.rust) + read_jsonl(a.python)
    with open(a.meta, encoding="utf-8") as f:
        meta = json.load(f)
    thr = {(r["tool"], r["unit"]): r for r in rows if r["kind"] == "throughput"}
    lin = [r for r in rows if r["kind"] == "linearity"]
    par = {r["unit"]: r for r in rows if r["kind"] == "parity"}
    lc = {r["unit"]: r for r in rows if r["kind"] == "throughput" and r["tool"] == "langchain"}
    L = []
    w = L.append
    w("## Chunkers")
    w("")
    w("<!-- Written by scripts/bench_chunkers.sh; edit that script, not this section. -->")
    w("")
    w(f"Run of {a.date} by `scripts/bench_chunkers.sh`: {a.machine}. "
      f"Load average (1, 5, 15 min) {a.load_before} before the run, {a.load_after} after it; "
      "other builds may have shared the 2 cores, so compare tools by the **ratios** (every "
      "tool ran in the same run; the Rust tools interleaved rep by rep), not by absolute MB/s. "
      "Figures are the best of the reps in thread CPU time (time slices of other processes "
      "do not count; the wall-clock MB/s is shown beside it); all tools are single-threaded. "
      "MB = 10^6 bytes of UTF-8 input.")
    w("")
    srcs = "; ".join(f"{s['source']} ({s['bytes_used'] / MB:.2f} MB used of "
                     f"{s['bytes'] / MB:.2f} MB, {s['documents']} docs)"
                     for s in meta["sources"])
    rep = (f"repeated ({meta['copies']:.2f} copies of {meta['unique_bytes'] / MB:.2f} MB of unique "
           "text) and cut" if meta["repeated"] else "cut (no repetition)")
    w(f"Text: {meta['bytes'] / MB:.2f} MB ({meta['chars']} chars, {meta['paragraph_breaks']} "
      f"paragraph breaks) of real text, {rep}: {srcs}; documents joined with a blank line.")
    w("")
    w("Same capacity for every tool, overlap 0: chars = Unicode scalar values; tokens = "
      "MiniLM (all-MiniLM-L6-v2 tokenizer.json) tokens without special tokens, counted by "
      "`tokenizers` 0.23 (Rust crate for the Rust tools, Python binding for LangChain). "
      "Tools: `chunkbench fixed` = `FixedConfig::{chars,tokens}(size, 0).chunk_spans`; "
      "`chunkbench recursive` = `RecursiveChunker::new(size, 0)` (LangChain defaults) "
      "`.split_spans`; `text-splitter` = `TextSplitter::new(ChunkConfig::new(size))"
      ".chunk_indices` (crate "
      f"{a.text_splitter_version}, tokens through its `ChunkSizer` trait over the same "
      "tokenizer); `langchain` = `RecursiveCharacterTextSplitter(chunk_size=size, "
      "chunk_overlap=0).split_text`, length_function = token count for tokens "
      f"(langchain-text-splitters {lc.get('chars', {}).get('langchain_text_splitters', '?')}, "
      f"Python {lc.get('chars', {}).get('python', '?')}).")
    pv = next((r for r in rows if r["kind"] == "throughput" and "chonkie" in r), None)
    if pv:
        w("")
        w(f"Python peers (chonkie {pv['chonkie']}, semchunk {pv['semchunk']}, same Python, "
          "same text and counters): `chonkie recursive` = `RecursiveChunker(tokenizer, "
          "chunk_size=size)` with its default rules (paragraphs, sentences, punctuation, "
          "whitespace, characters; pieces under 24 characters merged), tokenizer "
          "`\"character\"` for chars and the MiniLM `tokenizers.Tokenizer` for tokens (chonkie "
          "counts without special tokens); `chonkie token` = `TokenChunker(tokenizer, "
          "chunk_size=size, chunk_overlap=0)`, fixed token windows like `chunkbench fixed`; "
          "`semchunk` = `semchunk.chunkerify(counter, size)` (recursive splitting at the most "
          "meaningful separator, then merging), counter `len` for chars and the token count "
          "for tokens. All three return texts (chonkie's chunks also carry offsets); chunkbench "
          "returns byte spans.")
    w("")
    w("| unit | size | tool | MB/s (CPU) | vs text-splitter | vs LangChain | vs best peer | "
      "MB/s (wall) | chunks | mean chunk (bytes) |")
    w("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")

    def best_peer(unit):
        peers = [thr[(t, unit)] for t in PEERS if (t, unit) in thr]
        return max(peers, key=lambda r: r["mb_per_s"]) if peers else None

    for unit in ("chars", "tokens"):
        ts = thr.get(("text-splitter", unit))
        lcr = thr.get(("langchain", unit))
        bp = best_peer(unit)
        for tool in TOOLS:
            r = thr.get((tool, unit))
            if not r:
                continue
            vs_ts = f"{r['mb_per_s'] / ts['mb_per_s']:.2f}x" if ts else "-"
            vs_lc = f"{r['mb_per_s'] / lcr['mb_per_s']:.2f}x" if lcr else "-"
            vs_bp = f"{r['mb_per_s'] / bp['mb_per_s']:.2f}x" if bp else "-"
            name = f"**{tool}**" if tool.startswith("chunkbench") else tool
            w(f"| {unit} | {r['size']} | {name} | {r['mb_per_s']:.2f} | {vs_ts} | {vs_lc} | "
              f"{vs_bp} | {r['mb_per_s_wall']:.2f} | {r['chunks']} | "
              f"{r['mean_chunk_bytes']:.0f} |")
    w("")
    notes = []
    for unit in ("chars", "tokens"):
        p, l = par.get(unit), lc.get(unit)
        if p and l:
            same = p["langchain_digest"] == l["digest"] and p["langchain_texts"] == l["chunks"]
            notes.append(
                f"{unit}: `RecursiveChunker::langchain_texts` gives {p['langchain_texts']} "
                f"chunks, LangChain {l['chunks']}; "
                + ("identical strings (same FNV-1a digest)" if same else
                   f"**digests differ** ({p['langchain_digest']} vs {l['digest']})")
                + f"; the span output has {p['spans']} chunks ({p['trimmed_unsplit']} "
                  f"unsplit pieces trimmed, {p['dropped_contained']} contained chunks dropped)")
    if notes:
        w("LangChain parity on the whole benchmark text: " + "; ".join(notes) + ".")
        w("")
    if lin:
        w("Linear time on text without separators (none of \"\\n\\n\", \"\\n\", \" \"; "
          "`ascii` = \"abcdefghijklmnopqrstuvwxyz0123456789\" repeated, one long word; `cjk` = "
          "a Japanese sentence without spaces repeated), chars, size "
          f"{lin[0]['size']}, overlap 0: best thread CPU time of the reps for each input size, "
          "and the ratio of each time to the one for the half-size input (the worst wall-clock "
          "ratio is shown too). Target: every ratio at most 2.2.")
        w("")
        w("| text | tool | input (MB) | CPU time (s) | ratio per doubling | worst ratio | "
          "worst wall ratio |")
        w("|---|---|---|---|---|---:|---:|")
        for text in sorted({r["text"] for r in lin}):
            for tool in TOOLS:
                rs = sorted((r for r in lin if r["text"] == text and r["tool"] == tool),
                            key=lambda r: r["bytes"])
                if not rs:
                    continue
                ratios = [r["ratio_to_previous"] for r in rs if r["ratio_to_previous"] is not None]
                name = f"**{tool}**" if tool.startswith("chunkbench") else tool
                worst = f"{max(ratios):.2f}" if ratios else "-"
                walls = [r["ratio_to_previous_wall"] for r in rs
                         if r["ratio_to_previous_wall"] is not None]
                worst_wall = f"{max(walls):.2f}" if walls else "-"
                w(f"| {text} | {name} | " + " / ".join(f"{r['bytes'] / MB:.3g}" for r in rs)
                  + " | " + " / ".join(f"{r['best_cpu_s']:.4f}" for r in rs)
                  + " | " + (" / ".join(f"{x:.2f}" for x in ratios) or "-")
                  + f" | {worst} | {worst_wall} |")
        w("")
    # Targets
    verdict = []
    for unit in ("chars", "tokens"):
        ts = thr.get(("text-splitter", unit))
        if not ts:
            continue
        bp = best_peer(unit)
        for tool in TOOLS[:2]:
            r = thr.get((tool, unit))
            if r:
                ok = r["mb_per_s"] >= ts["mb_per_s"]
                verdict.append(f"{tool} {unit} {'met' if ok else 'NOT met'} "
                               f"({r['mb_per_s'] / ts['mb_per_s']:.2f}x)")
                if bp:
                    ok = r["mb_per_s"] >= bp["mb_per_s"]
                    verdict.append(f"{tool} {unit} vs the best peer ({bp['tool']}) "
                                   f"{'met' if ok else 'NOT met'} "
                                   f"({r['mb_per_s'] / bp['mb_per_s']:.2f}x)")
    ours = [r for r in lin if r["tool"].startswith("chunkbench")]
    if ours:
        worst = max(r["ratio_to_previous"] for r in ours if r["ratio_to_previous"] is not None)
        verdict.append(f"linear time {'met' if worst <= 2.2 else 'NOT met'} (worst doubling "
                       f"x{worst:.2f} over {min(r['bytes'] for r in ours) / MB:.3g}-"
                       f"{max(r['bytes'] for r in ours) / MB:.3g} MB)")
    if verdict:
        w("Targets (issue 4: at least text-splitter's throughput; issue 40: at least the best "
          "peer's; 2x input -> at most 2.2x time): " + "; ".join(verdict) + ".")
        w("")
    w("Notes:")
    w("- Equal capacity, not equal output: text-splitter fills each chunk up to the capacity "
      "at the highest semantic level that fits (newline runs, Unicode sentences, words, "
      "graphemes, chars), sizing candidate chunks as it searches, so its chunks differ from "
      "LangChain's; the chunk counts above show the outputs are of similar size.")
    w("- Fixed windows in tokens cost more than recursive chunking in tokens: the fixed chunker "
      "tokenizes the whole text in one `encode` call with offsets (tokenizer time dominates "
      "both), the recursive one sizes paragraphs with `encode_fast`.")
    ts_ascii = sorted((r for r in lin if r["tool"] == "text-splitter" and r["text"] == "ascii"),
                      key=lambda r: r["bytes"])
    ts_ratios = [r["ratio_to_previous"] for r in ts_ascii if r["ratio_to_previous"] is not None]
    if ts_ratios:
        w(f"- text-splitter on one long word (the `ascii` no-separator text): x{min(ts_ratios):.1f}"
          f"-x{max(ts_ratios):.1f} time per doubling, {ts_ascii[-1]['best_cpu_s']:.0f} s for "
          f"{ts_ascii[-1]['bytes'] / MB:.3g} MB (quadratic), hence its smaller linearity inputs.")
    w("")
    w("Reproduce: `scripts/bench_chunkers.sh` (environment: `BENCH_BYTES`, `CHARS_SIZE`, "
      "`TOKENS_SIZE`, `REPS_CHARS`, `REPS_TOKENS`, `REPS_LINEAR`, `LINEAR_MB`, "
      "`LINEAR_PEER_MB`, `MAX_LOAD`, `WAIT_LOAD`; raw results in `target/bench-chunkers/`).")
    return "\n".join(L) + "\n"


def replace_section(doc, section):
    """Replaces the `## Chunkers` section (up to the next `## ` heading) or appends it."""
    lines = doc.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.rstrip("\n") == "## Chunkers"), None)
    if start is None:
        if not doc.strip():
            return "# Benchmarks\n\n" + section
        return doc.rstrip("\n") + "\n\n" + section
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + tail if tail else "")


def cmd_report(a):
    section = render(a)
    doc = ""
    if os.path.exists(a.benchmarks):
        with open(a.benchmarks, encoding="utf-8") as f:
            doc = f.read()
    new = replace_section(doc, section)
    tmp = a.benchmarks + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, a.benchmarks)
    print(section)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("corpus")
    c.add_argument("out")
    c.add_argument("--bytes", type=int, default=5_000_000)
    c.add_argument("--data", default="data")
    c.add_argument("--datasets", default="../shared/datasets")
    c.set_defaults(fn=cmd_corpus)
    for name, fn in (("langchain", cmd_langchain), ("peers", cmd_peers)):
        q = sub.add_parser(name)
        q.add_argument("corpus")
        q.add_argument("--tokenizer", required=True)
        q.add_argument("--json", required=True)
        q.add_argument("--chars-size", type=int, default=1000)
        q.add_argument("--tokens-size", type=int, default=256)
        q.add_argument("--reps-chars", type=int, default=5)
        q.add_argument("--reps-tokens", type=int, default=3)
        q.set_defaults(fn=fn)
    r = sub.add_parser("report")
    r.add_argument("--rust", required=True)
    r.add_argument("--python", required=True)
    r.add_argument("--meta", required=True)
    r.add_argument("--benchmarks", required=True)
    r.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    r.add_argument("--machine", default=f"{os.cpu_count()} cores")
    r.add_argument("--load-before", default="?")
    r.add_argument("--load-after", default="?")
    r.add_argument("--text-splitter-version", default="?")
    r.set_defaults(fn=cmd_report)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
