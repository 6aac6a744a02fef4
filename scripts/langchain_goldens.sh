#!/usr/bin/env bash
# Regenerates the LangChain parity goldens of crates/chunker/tests/recursive_parity.rs.
#
#   scripts/langchain_goldens.sh            # goldens/*.json from the committed inputs/*.txt
#   scripts/langchain_goldens.sh inputs     # re-extract inputs/*.txt from their sources
#   scripts/langchain_goldens.sh all        # both
#
# It creates .venv-langchain (gitignored) with the pinned versions below and runs
# langchain_text_splitters.RecursiveCharacterTextSplitter.split_text on every input x config.
# Token lengths use the Hugging Face `tokenizers` library on the MiniLM tokenizer.json with
# truncation and padding disabled and no special tokens, which is what
# TextSplitter.from_huggingface_tokenizer counts (len(tokenizer.tokenize(text)) of a
# transformers fast tokenizer) without needing transformers.
#
# Environment: VENV (default .venv-langchain), TOKENIZER (default
# models/all-MiniLM-L6-v2/tokenizer.json; `chunkbench models fetch` downloads it), DATASETS
# (default ../shared/datasets, only for `inputs`).
set -euo pipefail

LANGCHAIN_TEXT_SPLITTERS_VERSION=1.1.3
LANGCHAIN_CORE_VERSION=1.8.3
TOKENIZERS_VERSION=0.23.2 # the tokenizers crate version in Cargo.lock

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA="$ROOT/crates/chunker/tests/data/langchain"
VENV=${VENV:-$ROOT/.venv-langchain}
TOKENIZER=${TOKENIZER:-$ROOT/models/all-MiniLM-L6-v2/tokenizer.json}
DATASETS=${DATASETS:-$ROOT/../shared/datasets}
MODE=${1:-goldens}

case "$MODE" in
inputs | goldens | all) ;;
*)
    echo "usage: $0 [inputs|goldens|all]" >&2
    exit 2
    ;;
esac

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "langchain-text-splitters==$LANGCHAIN_TEXT_SPLITTERS_VERSION" \
    "langchain-core==$LANGCHAIN_CORE_VERSION" \
    "tokenizers==$TOKENIZERS_VERSION"

if [ "$MODE" != inputs ] && [ ! -f "$TOKENIZER" ]; then
    echo "error: $TOKENIZER not found; run \`chunkbench models fetch\` first" >&2
    exit 1
fi

export DATA TOKENIZER DATASETS MODE ROOT
"$VENV/bin/python" - <<'PY'
import glob
import json
import os
import platform
import re
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import version

DATA = os.environ["DATA"]
MODE = os.environ["MODE"]
INPUTS = os.path.join(DATA, "inputs")
GOLDENS = os.path.join(DATA, "goldens")


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# ---------------------------------------------------------------- inputs


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


def local(tag):
    return tag.rsplit("}", 1)[-1]


def cnxml_blocks(el):
    """Plain-text blocks of a CNXML element: titles, paragraphs, captions; a list is one
    block with one line per item. Tags are stripped, inner whitespace collapsed."""
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
        elif tag in ("metadata", "media", "image", "table"):
            continue
        else:
            yield from cnxml_blocks(ch)


def cnxml_text(path, target):
    root = ET.parse(path).getroot()
    ns = "{http://cnx.rice.edu/cnxml}"
    blocks = [norm(root.find(ns + "title").text)]
    for b in cnxml_blocks(root.find(ns + "content")):
        if len("\n\n".join(blocks).encode()) >= target:
            break
        blocks.append(b)
    return "\n\n".join(blocks) + "\n"


def head_paragraphs(text, target):
    """The shortest prefix of `text` that ends at a blank line and has >= target bytes."""
    i = 0
    while True:
        j = text.find("\n\n", i)
        if j < 0:
            return text
        if len(text[:j].encode()) >= target:
            return text[: j + 1]
        i = j + 2


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def write_input(name, text):
    os.makedirs(INPUTS, exist_ok=True)
    with open(os.path.join(INPUTS, name + ".txt"), "wb") as f:
        f.write(text.encode("utf-8"))
    print(f"inputs/{name}.txt: {len(text.encode())} bytes")


def make_inputs():
    ds = os.environ["DATASETS"]
    ox = os.path.join(ds, "openstax")
    write_input(
        "openstax_astronomy",
        cnxml_text(os.path.join(ox, "osbooks-astronomy/modules/m59775/index.cnxml"), 2400),
    )
    write_input(
        "openstax_us_history",
        cnxml_text(os.path.join(ox, "osbooks-us-history/modules/m49994/index.cnxml"), 2400),
    )
    psych = cnxml_text(os.path.join(ox, "osbooks-psychology/modules/m82163/index.cnxml"), 2400)
    write_input("openstax_psychology_crlf", psych.replace("\n", "\r\n"))
    bio = read_text(os.path.join(ox, "philschatz-biology-book/contents/m44656.md"))
    write_input("biology_markdown", head_paragraphs(bio, 2600))
    with open(os.path.join(ds, "quality-leval-subset/quality.jsonl"), encoding="utf-8") as f:
        article = json.loads(f.readline())["input"]
    write_input("quality_article", head_paragraphs(article, 2600))
    # CJK: CPython's Lib/test/cjkencodings sample texts (PSF license); emoji and CJK in
    # code: the daachorse 3.0.3 README (MIT OR Apache-2.0), from the cargo registry.
    cjk_dir = os.path.join(os.path.dirname(__import__("test").__file__), "cjkencodings")
    parts = [read_text(os.path.join(cjk_dir, f)) for f in
             ("shift_jis-utf8.txt", "gb18030-utf8.txt", "euc_kr-utf8.txt")]
    readme = glob.glob(os.path.expanduser(
        "~/.cargo/registry/src/*/daachorse-3.0.3/README.md"))[0]
    lines = read_text(readme).split("\n")
    # The title line, then the section "Building faster automata on multibyte characters"
    # (up to the next section), which has CJK string literals in a code block.
    start = next(i for i, l in enumerate(lines) if l.startswith("### Building faster automata"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    excerpt = lines[0] + "\n\n" + "\n".join(lines[start:end]).strip("\n")
    # Synthetic edge cases (not from a corpus): the docs/reference.md (cases) strings that tokenizers and
    # whitespace rules disagree on, written out here so the file can be regenerated.
    write_input("synthetic_edge_cases", "".join([
        "Para one line.\r\n\r\nPara two line.\r\nsame para.\r\n\r\nPara three.\r\n",
        "A first.\rB second.\rC third.\n\n",
        "Family \U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 x3: ",
        "\U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466" * 3, "\n",
        "Gru\u0308\u00dfe aus Ko\u0308ln, scho\u0308ne U\u0308berga\u0308nge. \U0001F680\n",
        "Control\u001cchars\u001dare\u001ePython\u001fspaces; \u00a0NBSP\u00a0and\u2028LS.\n",
        "Zero\u200bwidth\ufeffjoiners\u2060stay text.\n \n\t\n",
        "\u732b\u3068\u72ac\u3002" * 12, "\n",
        "\uac00\ubc29 " * 20, "\n\n",
        "\u2026" * 60, " ", "\u00e9" * 40, " ", "a\u00e9\U0001F600" * 20, "\n",
        "x" * 9 + "\U0001F600" + "y" * 20, "\n\n\n   ",
        "Para two,  with   double  spaces.\tTabbed item.\n  Trailing line.   \n",
    ]))
    write_input("cjk_emoji", "\n\n".join(p.strip("\n") for p in parts) + "\n\n" + excerpt + "\n")


# ---------------------------------------------------------------- goldens

DEFAULT = None  # LangChain's default separators ["\n\n", "\n", " ", ""]
CONFIGS = [
    dict(name="chars-200-0", chunk_size=200, chunk_overlap=0),
    dict(name="chars-500-50-end", chunk_size=500, chunk_overlap=50, keep_separator="end"),
    dict(name="tokens-64-8", chunk_size=64, chunk_overlap=8, length="tokens"),
    dict(name="chars-300-30-nostrip", chunk_size=300, chunk_overlap=30, strip_whitespace=False),
    dict(name="chars-400-40-discard", chunk_size=400, chunk_overlap=40, keep_separator="false"),
    dict(name="regex-250-25-end", chunk_size=250, chunk_overlap=25, keep_separator="end",
         is_separator_regex=True,
         separators=[r"\n\s*\n", r"\n", r"[.!?。！？]\s*", r"\s+", ""]),
    dict(name="tokens-32-0-end-nostrip", chunk_size=32, chunk_overlap=0, length="tokens",
         keep_separator="end", strip_whitespace=False),
]


def full_config(c):
    out = dict(
        chunk_size=c["chunk_size"],
        chunk_overlap=c["chunk_overlap"],
        separators=c.get("separators", DEFAULT),
        is_separator_regex=c.get("is_separator_regex", False),
        keep_separator=c.get("keep_separator", "start"),
        strip_whitespace=c.get("strip_whitespace", True),
        length=c.get("length", "chars"),
    )
    if out["length"] == "tokens":
        out["tokenizer"] = "models/all-MiniLM-L6-v2/tokenizer.json"
    return out


def make_goldens():
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.environ["TOKENIZER"])
    tok.no_truncation()
    tok.no_padding()

    def token_len(s):
        return len(tok.encode(s, add_special_tokens=False).ids)

    keep = {"start": True, "end": "end", "false": False}
    os.makedirs(GOLDENS, exist_ok=True)
    names = sorted(f[:-4] for f in os.listdir(INPUTS) if f.endswith(".txt"))
    if not names:
        sys.exit(f"no inputs in {INPUTS}; run `{sys.argv[0]} inputs` first")
    for name in names:
        with open(os.path.join(INPUTS, name + ".txt"), "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")
        cases = []
        for c in CONFIGS:
            cfg = full_config(c)
            kwargs = dict(
                chunk_size=cfg["chunk_size"],
                chunk_overlap=cfg["chunk_overlap"],
                keep_separator=keep[cfg["keep_separator"]],
                is_separator_regex=cfg["is_separator_regex"],
                strip_whitespace=cfg["strip_whitespace"],
            )
            if cfg["separators"] is not None:
                kwargs["separators"] = cfg["separators"]
            if cfg["length"] == "tokens":
                kwargs["length_function"] = token_len
            chunks = RecursiveCharacterTextSplitter(**kwargs).split_text(text)
            cases.append(dict(name=c["name"], config=cfg, chunks=chunks))
        golden = dict(
            generator="scripts/langchain_goldens.sh",
            langchain_text_splitters=version("langchain-text-splitters"),
            langchain_core=version("langchain-core"),
            tokenizers=version("tokenizers"),
            python=platform.python_version(),
            input=f"inputs/{name}.txt",
            input_bytes=len(raw),
            input_fnv1a64=fnv1a64(raw),
            cases=cases,
        )
        path = os.path.join(GOLDENS, name + ".json")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            json.dump(golden, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"goldens/{name}.json: " + ", ".join(
            f"{c['name']}={len(c['chunks'])}" for c in cases))


if MODE in ("inputs", "all"):
    make_inputs()
if MODE in ("goldens", "all"):
    make_goldens()
PY
