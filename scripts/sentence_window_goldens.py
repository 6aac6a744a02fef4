"""Golden for a sentence-window chunker that must match LlamaIndex's SentenceWindowNodeParser
(llama_index/core/node_parser/text/sentence_window.py). Run through
scripts/sentence_window_goldens.sh, which creates the pinned virtualenv.

Modes (argv[1]):
  inputs  re-extract tests/data/sentence_window/inputs/*.txt from data/ (two SciQ support
          paragraphs, a QuALITY article head, two OpenStax page heads) and rewrite the
          synthetic edge cases
  golden  run the parser on every committed input and write golden.json (the default)
  all     both, in that order

golden.json: {"generator", "notes", "cases": [{"input", "window_size", "punkt_spans",
"sentences", "nodes": [{"text", "window", "original_text", "start_char_idx",
"end_char_idx"}]}]}. All offsets are Python str indices (Unicode code points) into the
input file decoded as UTF-8; spans are half-open [start, end).

  punkt_spans  list(PunktSentenceTokenizer.span_tokenize(text)) of the tokenizer the parser
               uses (llama_index.core.utils.globals_helper.punkt_tokenizer)
  sentences    the splits split_by_sentence_tokenizer() returns, as spans: sentence i runs
               from punkt_spans[i][0] to punkt_spans[i+1][0] (the last to len(text)), so it
               keeps the whitespace after it; computed from punkt_spans, never by search
  nodes        one per sentence, straight from get_nodes_from_documents

Every relation listed in NOTES is asserted below for every case.
"""

import json
import os
import platform
import sys
from importlib.metadata import version

DATA = os.environ["DATA"]
SOURCES = os.environ.get("SOURCES", "")
INPUTS = os.path.join(DATA, "inputs")
GOLDEN = os.path.join(DATA, "golden.json")
DEFAULT_WINDOW = 3
# Inputs that also get window_size 1 and 5 (all get the default, 3).
EXTRA_WINDOWS = {"openstax_astronomy.txt": (1, 5), "synthetic_abbreviations.txt": (1, 5)}

NOTES = [
    "offsets are Python str indices (Unicode code points), half-open, into the UTF-8-decoded input",
    "the splitter is nltk.tokenize.PunktSentenceTokenizer() with no training text: empty "
    "PunktParameters (no abbreviations, collocations, sentence starters or orthographic context); "
    "punkt_tab is only checked for, not loaded",
    "sentences[i] = [punkt_spans[i][0], punkt_spans[i+1][0]] and the last ends at len(text): "
    "contiguous, each keeps its trailing whitespace; sentences[0][0] == 0 here, so leading "
    "whitespace belongs to the first sentence",
    "a text with no Punkt span (empty or whitespace only) gives no nodes",
    "node.text == metadata original_text == text[start:end] of its sentence, unstripped",
    "window of node i == ' '.join(text of nodes max(0, i-W) .. min(n-1, i+W)): the separator "
    "space is added on top of the trailing whitespace already in each sentence, nothing stripped",
    "start_char_idx is not the sentence start: it is text.find(node.text, p) with p = 0 for the "
    "first node and p = the previous node's start_char_idx + 1 after that; end_char_idx = "
    "start_char_idx + len(node.text) (NodeParser._postprocess_parsed_nodes); it lands early when "
    "a sentence's text also occurs inside the previous one (synthetic_repeated_suffix.txt)",
    "metadata has exactly the keys window and original_text (Document has none); both are in "
    "excluded_embed_metadata_keys and excluded_llm_metadata_keys",
]


# ---------------------------------------------------------------- inputs


def read_jsonl(path, ids):
    found = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["id"] in ids:
                found[d["id"]] = d["text"]
    missing = set(ids) - set(found)
    if missing:
        sys.exit(f"{path}: missing documents {sorted(missing)}")
    return found


def head_paragraphs(text, target):
    """The prefix of `text` that ends where a blank line ("\\n\\n") starts and whose length is
    closest to `target` characters (the shorter on a tie; the whole text if it has no blank
    line), plus one "\\n"."""
    cuts, j = [], text.find("\n\n")
    while j >= 0:
        cuts.append(j)
        j = text.find("\n\n", j + 2)
    if not cuts:
        return text.rstrip("\n") + "\n"
    best = min(cuts, key=lambda c: (abs(c - target), c))
    return text[:best] + "\n"


SYNTHETIC = {
    "synthetic_abbreviations": (
        "Dr. Smith paid $3.50 at 5 p.m. on Jan. 5. Then he left. "
        "The U.S. team won by 3.2 vs. 2.9 points, i.e. a narrow margin. "
        "Mr. J. R. R. Tolkien published it in 1937. It rose to 5. then it fell to 4.5 again. "
        "See e.g. Fig. 3 for details! Was it 10 a.m.? No... it was later. "
        "Version 2.0.1 shipped on 2024-01-05. (It was late.) \"Really?\" she asked. Yes.\n"
    ),
    "synthetic_blank_lines_bullets": (
        "Shopping list\n\n- apples\n- pears and plums\n- 2.5 kg flour\n\n\n"
        "* Item one.\n* Item two.\n\n1. First step.\n2. Second step.\n3) Third step\n\n"
        "Heading without a period\n\n\n\nA closing paragraph. It has two sentences.\n"
    ),
    "synthetic_single_no_period":
        "The cooling loop was inspected on Tuesday but no report was filed",
    "synthetic_two_sentences": "Pumps move water uphill. Valves stop the flow.",
    "synthetic_whitespace": (
        "  \n\t  Leading whitespace comes first.   Several spaces follow this one.\r\n"
        "A CRLF line ends here.\tA tab separates these.\n\n\n"
        "   Trailing whitespace ends the text.  \n\n  "
    ),
    "synthetic_non_ascii": (
        "Café society met in Zürich — naïvely, perhaps. “Is it over?” she asked. "
        "‘Not yet,’ he said. 東京は大きい。日本語の文です。 Ça va? Très bien! "
        "The café’s crème brûlée cost €4.50… then we left. «Bonjour.» Straße ist lang. "
        "Ελληνικά κείμενο. Τέλος — the end 🙂. Last one.\n"
    ),
    "synthetic_repeated_suffix": (
        "Really yes. yes. The end came. came. Valves close. Valves close. "
        "It said go. go. go. Done.\n"
    ),
    "synthetic_whitespace_only": " \n\t \n",
    "synthetic_empty": "",
}


def write_input(name, text):
    os.makedirs(INPUTS, exist_ok=True)
    with open(os.path.join(INPUTS, name + ".txt"), "wb") as f:
        f.write(text.encode("utf-8"))
    print(f"inputs/{name}.txt: {len(text)} chars, {len(text.encode())} bytes")


def make_inputs():
    sciq = read_jsonl(os.path.join(SOURCES, "sciq/documents.jsonl"),
                      ["sciq-val-0008-support", "sciq-val-0092-support"])
    # 0008: a section heading and "•" bullets run into one paragraph; 0092: "Figure 16.2."
    write_input("sciq_0008", sciq["sciq-val-0008-support"] + "\n")
    write_input("sciq_0092", sciq["sciq-val-0092-support"] + "\n")
    quality = read_jsonl(os.path.join(SOURCES, "quality/documents.jsonl"), ["quality-00"])
    write_input("quality_lost_in_translation", head_paragraphs(quality["quality-00"], 4000))
    ox = read_jsonl(os.path.join(SOURCES, "openstax/documents.jsonl"),
                    ["openstax-astronomy-m59763", "openstax-psychology-m82167"])
    write_input("openstax_astronomy", head_paragraphs(ox["openstax-astronomy-m59763"], 3000))
    write_input("openstax_psychology", head_paragraphs(ox["openstax-psychology-m82167"], 3000))
    for name, text in SYNTHETIC.items():
        write_input(name, text)


# ---------------------------------------------------------------- golden


DOWNLOADS = []


def forbid_downloads():
    """llama_index calls nltk.download for data missing from its data directory (and catches
    what it raises), so record the attempt as well as failing it."""
    import nltk

    def no_download(*args, **kwargs):
        DOWNLOADS.append(args)
        raise RuntimeError(f"nltk.download{args} attempted: NLTK data must come from the wheel")

    nltk.download = no_download
    nltk.downloader.download = no_download


def input_names():
    names = sorted(f for f in os.listdir(INPUTS) if f.endswith(".txt"))
    if not names:
        sys.exit(f"no inputs in {INPUTS}; run with `inputs` first")
    return names


def check_case(text, w, spans, sentences, nodes):
    """Every relation claimed in NOTES, for one case."""
    n = len(nodes)
    assert n == len(spans) == len(sentences), (n, len(spans))
    if not spans:
        assert text.strip() == "", "no sentence in a non-blank text"
        return 0
    assert sentences[0][0] == 0, f"text before the first sentence: {text[:sentences[0][0]]!r}"
    assert sentences[-1][1] == len(text)
    prev_found = -1
    moved = 0
    for i, node in enumerate(nodes):
        a, b = sentences[i]
        assert a < b, "empty sentence"
        if i + 1 < n:
            assert b == sentences[i + 1][0], "sentences not contiguous"
        assert spans[i][0] == a and spans[i][1] <= b, (spans[i], sentences[i])
        assert text[spans[i][1]:b].strip() == "", "non-whitespace between Punkt spans"
        assert node.text == text[a:b], (i, node.text, text[a:b])
        assert node.metadata["original_text"] == node.text
        assert set(node.metadata) == {"window", "original_text"}, node.metadata.keys()
        for keys in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
            assert "window" in keys and "original_text" in keys
        lo, hi = max(0, i - w), min(n, i + w + 1)
        assert node.metadata["window"] == " ".join(text[x:y] for x, y in sentences[lo:hi])
        found = text.find(node.text, prev_found + 1)
        assert node.start_char_idx == found, (i, node.start_char_idx, found)
        assert node.end_char_idx == found + len(node.text)
        moved += found != a
        prev_found = found
    return moved


def make_golden():
    forbid_downloads()
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceWindowNodeParser
    from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer
    from llama_index.core.utils import globals_helper
    from nltk.tokenize import PunktSentenceTokenizer

    tok = globals_helper.punkt_tokenizer
    assert not DOWNLOADS, f"NLTK downloads attempted: {DOWNLOADS}"
    bundled = os.path.join(os.path.dirname(sys.modules["llama_index.core.utils"].__file__),
                           "_static", "nltk_cache")
    assert os.path.samefile(globals_helper._nltk_data_dir, bundled), globals_helper._nltk_data_dir
    assert type(tok) is PunktSentenceTokenizer
    p = tok._params
    assert not (p.abbrev_types or p.collocations or p.sent_starters or p.ortho_context), \
        "the tokenizer is trained: NOTES are wrong"
    splitter = split_by_sentence_tokenizer()

    cases = []
    total_sentences = total_moved = 0
    for name in input_names():
        with open(os.path.join(INPUTS, name), "rb") as f:
            text = f.read().decode("utf-8")
        spans = [list(s) for s in tok.span_tokenize(text)]
        starts = [s[0] for s in spans]
        sentences = [[a, b] for a, b in zip(starts, starts[1:] + [len(text)])]
        assert splitter(text) == [text[a:b] for a, b in sentences]
        for w in (DEFAULT_WINDOW,) + EXTRA_WINDOWS.get(name, ()):
            if w == DEFAULT_WINDOW:
                parser = SentenceWindowNodeParser.from_defaults()
                assert parser.window_size == w
            else:
                parser = SentenceWindowNodeParser.from_defaults(window_size=w)
            nodes = parser.get_nodes_from_documents([Document(text=text)])
            moved = check_case(text, w, spans, sentences, nodes)
            total_sentences += len(sentences) if w == DEFAULT_WINDOW else 0
            total_moved += moved if w == DEFAULT_WINDOW else 0
            cases.append(dict(
                input=name, window_size=w, punkt_spans=spans, sentences=sentences,
                nodes=[dict(text=nd.text, window=nd.metadata["window"],
                            original_text=nd.metadata["original_text"],
                            start_char_idx=nd.start_char_idx, end_char_idx=nd.end_char_idx)
                       for nd in nodes]))
            print(f"{name} W={w}: {len(nodes)} nodes"
                  + (f", {moved} start_char_idx != sentence start" if moved else ""))

    generator = (
        f"scripts/sentence_window_goldens.sh: llama-index-core=={version('llama-index-core')} "
        f"nltk=={version('nltk')} regex=={version('regex')} "
        f"(CPython {platform.python_version()}); "
        "SentenceWindowNodeParser.from_defaults() for window_size 3, "
        "SentenceWindowNodeParser.from_defaults(window_size=W) otherwise, then "
        ".get_nodes_from_documents([Document(text=text)])"
    )
    with open(GOLDEN, "w", encoding="utf-8", newline="\n") as f:
        f.write("{\n " + json.dumps("generator") + ": " + json.dumps(generator, ensure_ascii=False))
        f.write(',\n "notes": [\n')
        f.write(",\n".join("  " + json.dumps(s, ensure_ascii=False) for s in NOTES))
        f.write('\n ],\n "cases": [\n')
        for ci, c in enumerate(cases):
            f.write("  {")
            for k in ("input", "window_size", "punkt_spans", "sentences"):
                f.write(json.dumps(k) + ": " + json.dumps(c[k], separators=(",", ":")) + ", ")
            f.write('"nodes": [')
            for ni, nd in enumerate(c["nodes"]):
                f.write("\n   " + json.dumps(nd, ensure_ascii=False) + ("," if ni + 1 < len(c["nodes"]) else ""))
            f.write("\n  ]}" if c["nodes"] else "]}")
            f.write(",\n" if ci + 1 < len(cases) else "\n")
        f.write(" ]\n}\n")
    with open(GOLDEN, encoding="utf-8") as f:
        assert json.load(f)["cases"] == cases
    print(f"golden.json: {len(cases)} cases, {total_sentences} sentences over the window-3 cases, "
          f"{total_moved} nodes whose start_char_idx differs from their sentence start")


MODE = sys.argv[1] if len(sys.argv) > 1 else "golden"
if MODE in ("inputs", "all"):
    make_inputs()
if MODE in ("golden", "all"):
    make_golden()
