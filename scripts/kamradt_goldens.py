"""Goldens for the Kamradt / LangChain SemanticChunker parity test
(crates/chunker/tests/kamradt_golden.rs). Run through scripts/kamradt_goldens.sh, which
creates the pinned virtualenv.

Modes (argv[1]):
  inputs   re-extract tests/data/kamradt/inputs/*.txt from ../shared/datasets (real texts:
           OpenStax CNXML/Markdown modules and a QuALITY article) plus synthetic edge cases
  vectors  embed every combined sentence LangChain will embed (buffer sizes 0, 1, 2) with
           the deterministic hashed bag-of-words embedding below -> vectors.json
  goldens  run langchain_experimental.text_splitter.SemanticChunker on every input x
           config, with an Embeddings class that only *looks up* vectors.json (a missing key
           is an error), and write goldens/*.json; also numerics.json (numpy mean / std /
           percentile / gradient on fixed random arrays, for bit-exact checks)
  all      the three in order

The embedding is not a model: each word (Python `re.findall(r"\\w+", text.lower())`)
hashes (FNV-1a 64 of its UTF-8) to a seed; splitmix64 of that seed gives DIM integers in
[-1000, 1000]; a text's vector is the sum over its words (zeros for a text without words).
Integer components are exact in JSON, f32 and f64, so Rust reads exactly the vectors
LangChain saw. Vectors are keyed by the FNV-1a 64 hex of the combined-sentence text.

Floats that must be compared bit for bit (distances, thresholds, numerics) are stored as the
16-hex-digit IEEE-754 bit pattern of the float64.
"""

import json
import os
import platform
import random
import re
import struct
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import version

DATA = os.environ["DATA"]
DATASETS = os.environ.get("DATASETS", "")
INPUTS = os.path.join(DATA, "inputs")
GOLDENS = os.path.join(DATA, "goldens")
VECTORS = os.path.join(DATA, "vectors.json")
NUMERICS = os.path.join(DATA, "numerics.json")
DIM = 16
BUFFER_SIZES = (0, 1, 2)


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def bits(x: float) -> str:
    return struct.pack(">d", float(x)).hex()


# ---------------------------------------------------------------- inputs


def norm_ws(s):
    return re.sub(r"\s+", " ", s).strip()


def local(tag):
    return tag.rsplit("}", 1)[-1]


def cnxml_paragraphs(path, target):
    """Title and the first paragraphs (<para>, whitespace collapsed) of a CNXML module,
    separated by blank lines, until `target` bytes."""
    root = ET.parse(path).getroot()
    ns = "{http://cnx.rice.edu/cnxml}"
    blocks = [norm_ws(root.find(ns + "title").text)]
    for el in root.find(ns + "content").iter():
        if local(el.tag) != "para":
            continue
        t = norm_ws("".join(el.itertext()))
        if t:
            blocks.append(t)
        if len("\n\n".join(blocks).encode()) >= target:
            break
    return "\n\n".join(blocks) + "\n"


def head_paragraphs(text, target):
    """The shortest prefix of `text` ending at a blank line with >= target bytes."""
    i = 0
    while True:
        j = text.find("\n\n", i)
        if j < 0:
            return text
        if len(text[:j].encode()) >= target:
            return text[: j + 1]
        i = j + 2


def write_input(name, text):
    os.makedirs(INPUTS, exist_ok=True)
    with open(os.path.join(INPUTS, name + ".txt"), "wb") as f:
        f.write(text.encode("utf-8"))
    print(f"inputs/{name}.txt: {len(text.encode())} bytes")


def make_inputs():
    ox = os.path.join(DATASETS, "openstax")
    write_input(
        "openstax_astronomy",
        cnxml_paragraphs(os.path.join(ox, "osbooks-astronomy/modules/m59775/index.cnxml"), 2400),
    )
    write_input(
        "openstax_us_history",
        cnxml_paragraphs(os.path.join(ox, "osbooks-us-history/modules/m49994/index.cnxml"), 2400),
    )
    with open(os.path.join(ox, "philschatz-biology-book/contents/m44656.md"), encoding="utf-8") as f:
        bio = f.read()
    write_input("biology_markdown", head_paragraphs(bio, 2200))
    with open(os.path.join(DATASETS, "quality-leval-subset/quality.jsonl"), encoding="utf-8") as f:
        article = json.loads(f.readline())["input"]
    write_input("quality_article", head_paragraphs(article, 2600))
    # Synthetic inputs (not from a corpus): docs/reference.md (cases) 4, 7, 25 and the split regex's corners.
    write_input("case04_single_sentence", "The cooling loop was inspected on Tuesday.")
    write_input("case04_no_punctuation", "no terminal punctuation at all in this line")
    write_input("case07_degenerate", "Intro sentence here. ---- #### ----. Closing sentence here.")
    write_input("case25_four_sentences",
                "Ana ate an apple. Ben ate a banana. Cai ate a cherry. Dee ate a date.")
    write_input("two_sentences", "Pumps move water uphill. Valves stop the flow.")
    write_input("empty", "")
    write_input("regex_corners", "".join([
        "  Leading spaces stay in the first piece. Wait! Really?  Yes.\n\n",
        "A new paragraph.\r\nCRLF after the period.\tTab too.\u00a0NBSP splits in Python.\u2003",
        "Em space too. Control\u001cchar is not after a period.\u001cBut this one is. ",
        "Dr. Smith met Mr. Jones at 3.14 p.m. on the U.S. coast. ",
        "Repeated sentence. Repeated sentence. Repeated sentence. ",
        "\"Quoted?\" she asked. (Bracketed.) Ellipsis... then more. ",
        "Zero\u200bwidth space is not whitespace. ---- ####. ",
        "Ends with a period and a space. ",
    ]))


# ---------------------------------------------------------------- embedding

WORD = re.compile(r"\w+")


def splitmix64(state):
    while True:
        state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        yield z ^ (z >> 31)


def word_vector(word):
    gen = splitmix64(int(fnv1a64(word.encode("utf-8")), 16))
    return [int(next(gen) % 2001) - 1000 for _ in range(DIM)]


def hashed_bow(text):
    v = [0] * DIM
    for w in WORD.findall(text.lower()):
        for k, x in enumerate(word_vector(w)):
            v[k] += x
    return v


# ---------------------------------------------------------------- helpers


def input_names():
    names = sorted(f[:-4] for f in os.listdir(INPUTS) if f.endswith(".txt"))
    if not names:
        sys.exit(f"no inputs in {INPUTS}; run with `inputs` first")
    return names


def read_input(name):
    with open(os.path.join(INPUTS, name + ".txt"), "rb") as f:
        raw = f.read()
    return raw, raw.decode("utf-8")


def make_vectors():
    from langchain_experimental.text_splitter import SemanticChunker, combine_sentences

    table = {}
    for name in input_names():
        _, text = read_input(name)
        sentences = SemanticChunker(embeddings=None)._get_single_sentences_list(text)
        for b in BUFFER_SIZES:
            dicts = [{"sentence": s, "index": i} for i, s in enumerate(sentences)]
            for d in combine_sentences(dicts, b):
                c = d["combined_sentence"]
                table[fnv1a64(c.encode("utf-8"))] = hashed_bow(c)
    with open(VECTORS, "w", encoding="utf-8", newline="\n") as f:
        f.write('{\n "embedding": "hashed-bow-v1 (scripts/kamradt_goldens.py)",\n')
        f.write(f' "dim": {DIM},\n "key": "fnv1a64 hex of the combined sentence",\n')
        f.write(' "vectors": {\n')
        items = sorted(table.items())
        for i, (k, v) in enumerate(items):
            sep = "," if i + 1 < len(items) else ""
            f.write(f'  "{k}": [{",".join(map(str, v))}]{sep}\n')
        f.write(" }\n}\n")
    print(f"vectors.json: {len(table)} vectors of dim {DIM}")


# ---------------------------------------------------------------- goldens

CONFIGS = [
    dict(name="percentile", breakpoint_threshold_type="percentile"),
    dict(name="standard_deviation", breakpoint_threshold_type="standard_deviation"),
    dict(name="interquartile", breakpoint_threshold_type="interquartile"),
    dict(name="gradient", breakpoint_threshold_type="gradient"),
    dict(name="percentile-50-buffer0", breakpoint_threshold_type="percentile",
         breakpoint_threshold_amount=50, buffer_size=0),
    dict(name="percentile-80-buffer2", breakpoint_threshold_type="percentile",
         breakpoint_threshold_amount=80, buffer_size=2),
    dict(name="standard_deviation-0.5", breakpoint_threshold_type="standard_deviation",
         breakpoint_threshold_amount=0.5),
    dict(name="interquartile-0", breakpoint_threshold_type="interquartile",
         breakpoint_threshold_amount=0),
    dict(name="gradient-70", breakpoint_threshold_type="gradient",
         breakpoint_threshold_amount=70),
    dict(name="number_of_chunks-4", breakpoint_threshold_type="percentile", number_of_chunks=4),
    dict(name="min_chunk_size-300", breakpoint_threshold_type="percentile",
         breakpoint_threshold_amount=60, min_chunk_size=300),
]


class LookupEmbeddings:
    """langchain_core Embeddings returning precomputed vectors (no model)."""

    def __init__(self, table):
        self.table = table
        self.calls = 0

    def embed_documents(self, texts):
        self.calls += 1
        out = []
        for t in texts:
            key = fnv1a64(t.encode("utf-8"))
            if key not in self.table:
                raise KeyError(f"no precomputed vector for {t!r} (rerun `vectors`)")
            out.append([float(x) for x in self.table[key]])
        return out

    def embed_query(self, text):
        return self.embed_documents([text])[0]


def full_config(c):
    t = c["breakpoint_threshold_type"]
    from langchain_experimental.text_splitter import BREAKPOINT_DEFAULTS

    return dict(
        buffer_size=c.get("buffer_size", 1),
        breakpoint_threshold_type=t,
        breakpoint_threshold_amount=c.get("breakpoint_threshold_amount", BREAKPOINT_DEFAULTS[t]),
        number_of_chunks=c.get("number_of_chunks"),
        min_chunk_size=c.get("min_chunk_size"),
    )


def make_goldens():
    try:
        import simsimd  # noqa: F401

        sys.exit("simsimd is installed: LangChain would use it (float32) instead of numpy")
    except ImportError:
        pass
    from langchain_core.embeddings import Embeddings
    from langchain_experimental.text_splitter import SemanticChunker

    with open(VECTORS, encoding="utf-8") as f:
        table = json.load(f)["vectors"]
    emb = type("LookupEmbeddingsLC", (LookupEmbeddings, Embeddings), {})(table)
    os.makedirs(GOLDENS, exist_ok=True)
    for name in input_names():
        raw, text = read_input(name)
        cases = []
        sentences = None
        all_distances = {}
        for c in CONFIGS:
            cfg = full_config(c)
            sc = SemanticChunker(
                embeddings=emb,
                buffer_size=cfg["buffer_size"],
                breakpoint_threshold_type=cfg["breakpoint_threshold_type"],
                breakpoint_threshold_amount=cfg["breakpoint_threshold_amount"],
                number_of_chunks=cfg["number_of_chunks"],
                min_chunk_size=cfg["min_chunk_size"],
            )
            sentences = sc._get_single_sentences_list(text)
            calls = emb.calls
            chunks = sc.split_text(text)
            case = dict(name=c["name"], config=cfg, embedded=emb.calls > calls, chunks=chunks)
            if emb.calls > calls:
                # The intermediate values, recomputed the same way split_text does.
                distances, _ = sc._calculate_sentence_distances(sentences)
                all_distances[str(cfg["buffer_size"])] = [bits(d) for d in distances]
                if cfg["number_of_chunks"] is not None:
                    threshold, compared = sc._threshold_from_clusters(distances), distances
                else:
                    threshold, compared = sc._calculate_breakpoint_threshold(distances)
                case["threshold"] = bits(threshold)
                if cfg["breakpoint_threshold_type"] == "gradient" and cfg["number_of_chunks"] is None:
                    case["gradient"] = [bits(d) for d in compared]
            cases.append(case)
        golden = dict(
            generator="scripts/kamradt_goldens.sh",
            langchain_experimental=version("langchain-experimental"),
            langchain_community=version("langchain-community"),
            langchain_core=version("langchain-core"),
            numpy=version("numpy"),
            python=platform.python_version(),
            input=f"inputs/{name}.txt",
            input_bytes=len(raw),
            input_fnv1a64=fnv1a64(raw),
            sentences=sentences,
            distances_by_buffer_size=all_distances,
            cases=cases,
        )
        with open(os.path.join(GOLDENS, name + ".json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(golden, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"goldens/{name}.json: {len(sentences)} sentences; " + ", ".join(
            f"{c['name']}={len(c['chunks'])}" for c in cases))
    make_numerics()


def make_numerics():
    import numpy as np
    from langchain_experimental.text_splitter import SemanticChunker

    rng = random.Random(20240605)
    arrays = []
    for n in (1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 24, 31, 64, 127, 128, 129, 136, 200):
        a = [rng.uniform(0.0, 1.2) for _ in range(n)]
        if n >= 9:  # duplicates and exact zeros, as cosine distances of repeated text give
            a[3] = a[5]
            a[-1] = 0.0
        arrays.append(a)
    qs = [0, 25, 50, 75, 80, 90, 95, 99, 100, 33.3, 66.66666666666667]
    out = []
    for a in arrays:
        entry = dict(values=[bits(x) for x in a], mean=bits(np.mean(a)), std=bits(np.std(a)),
                     percentiles={str(q): bits(np.percentile(a, q)) for q in qs})
        if 2 <= len(a) <= 64:
            entry["gradient"] = [bits(x) for x in np.gradient(a, range(0, len(a)))]
        entry["threshold_from_clusters"] = {}
        for k in (0, 1, 2, 3, 5, 1000):
            sc = SemanticChunker(embeddings=None, number_of_chunks=k)
            entry["threshold_from_clusters"][str(k)] = bits(sc._threshold_from_clusters(a))
        out.append(entry)
    with open(NUMERICS, "w", encoding="utf-8", newline="\n") as f:
        json.dump(dict(generator="scripts/kamradt_goldens.sh", numpy=version("numpy"),
                       percentiles=[str(q) for q in qs], arrays=out), f, separators=(",", ":"))
        f.write("\n")
    print(f"numerics.json: {len(out)} arrays")


MODE = sys.argv[1] if len(sys.argv) > 1 else "goldens"
if MODE in ("inputs", "all"):
    make_inputs()
if MODE in ("vectors", "all"):
    make_vectors()
if MODE in ("goldens", "all"):
    make_goldens()
