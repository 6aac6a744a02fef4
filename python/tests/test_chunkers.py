"""Python chunker objects in process: LangChain, chonkie, LlamaIndex and a plain function give
the same chunks and the same summary as the command adapters; their identity."""

import json
import os
import subprocess
import sys

import polars as pl
import pytest

import chunkbench_harness as cb
from conftest import REPO
from paragraphs import paragraphs

ADAPTER = [str(REPO / "scripts/adapters/run.sh")]
ADAPTER_FILES = [str(REPO / "scripts/adapters/chunk.py"), str(REPO / "scripts/adapters/setup.sh")]
HERE = os.path.dirname(os.path.abspath(__file__))


def config(strategies):
    return {
        "name": "objects",
        "datasets": ["my-docs"],
        "strategies": strategies,
        "retrievers": {"bm25": {"kind": "bm25", "query": "question"}},
        "k": [1, 3],
        "readers": {"retrieval": {"kind": "none"}},
        "seed": 0,
    }


def comparable(df: pl.DataFrame) -> pl.DataFrame:
    """summary.csv without the ids (a command entry and a python entry are different configs)."""
    return df.drop("cell_id", "baseline_cell_id").sort("strategy", "k")


def test_objects_match_the_command_adapters(user_store, tmp_path):
    from chonkie import RecursiveChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    objects = {
        "langchain": RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0),
        "chonkie": RecursiveChunker(tokenizer="character", chunk_size=400),
        "paragraphs": paragraphs,
    }
    commands = {
        "langchain": {"kind": "command", "command": ADAPTER + ["langchain-recursive", "--chunk-size", "400"],
                      "version": "langchain-text-splitters 1.1.3", "files": ADAPTER_FILES},
        "chonkie": {"kind": "command", "command": ADAPTER + ["chonkie-recursive", "--chunk-size", "400"],
                    "version": "chonkie 1.7.0", "files": ADAPTER_FILES},
        "paragraphs": {"kind": "command", "command": [sys.executable, os.path.join(HERE, "paragraphs.py")],
                       "version": "1", "files": [os.path.join(HERE, "paragraphs.py")]},
    }
    by_object = cb.run(config({}), chunkers=objects, store=user_store, output=tmp_path / "objects")
    by_command = cb.run(config(commands), store=user_store, output=tmp_path / "commands")
    assert by_object.cells == by_command.cells == 6
    assert comparable(by_object.summary).equals(comparable(by_command.summary))
    assert by_object.chunk_stats.sort("strategy").equals(by_command.chunk_stats.sort("strategy"))
    # The same passages, span for span, for every question.
    cols = ["strategy", "k", "question_id", "passages"]
    assert by_object.per_question.select(cols).sort(cols[:3]).equals(
        by_command.per_question.select(cols).sort(cols[:3])
    )
    # The config records what ran.
    cfg = json.loads((by_object.dir / "config.json").read_text(encoding="utf-8"))
    lc = cfg["strategies"]["langchain"]
    assert lc["kind"] == "python" and lc["version"] == "langchain-text-splitters 1.1.3"
    assert lc["object"] == "langchain_text_splitters.character.RecursiveCharacterTextSplitter"
    assert len(lc["fingerprint"]) == 64


def test_llamaindex_nodes_are_exact_spans(user_store, tmp_path):
    from llama_index.core.node_parser import SentenceSplitter

    def words(t):
        return t.split()

    splitter = SentenceSplitter(chunk_size=60, chunk_overlap=10, tokenizer=words)
    run = cb.run(config({}), chunkers={"llamaindex": splitter}, store=user_store, output=tmp_path)
    docs = {}
    with open(user_store / "my-docs" / "documents.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            docs[d["id"]] = d["text"].encode("utf-8")
    passages = run.per_question.filter(pl.col("k") == 3)["passages"].explode().drop_nulls().unique()
    assert passages.len() > 20
    # Each passage id is DOC:START-END, a byte span whose slice is one of the splitter's nodes.
    from llama_index.core import Document

    nodes = {n.text for n in splitter.get_nodes_from_documents([Document(text=t.decode()) for t in docs.values()])}
    for p in passages:
        doc, span = p.rsplit(":", 1)
        start, end = map(int, span.split("-"))
        assert docs[doc][start:end].decode("utf-8") in nodes


IDENTITY = """
import json, sys
sys.path.insert(0, {here!r})
from langchain_text_splitters import RecursiveCharacterTextSplitter
from chonkie import TokenChunker
from chunkbench_harness._adapters import entry
from paragraphs import paragraphs
objs = [RecursiveCharacterTextSplitter(chunk_size=400), TokenChunker(tokenizer="character", chunk_size=99), paragraphs]
print(json.dumps([entry("x", o)[0]["fingerprint"] for o in objs]))
"""


def test_identity_is_stable_across_processes_and_follows_parameters():
    from chonkie import TokenChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from chunkbench_harness._adapters import entry

    def fps():
        out = subprocess.run([sys.executable, "-c", IDENTITY.format(here=HERE)], cwd=HERE, capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    first, second = fps(), fps()
    assert first == second
    mine = [entry("x", o)[0]["fingerprint"] for o in
            [RecursiveCharacterTextSplitter(chunk_size=400), TokenChunker(tokenizer="character", chunk_size=99), paragraphs]]
    assert mine == first
    # Parameters are part of it; using an object (its caches fill) is not.
    assert entry("x", RecursiveCharacterTextSplitter(chunk_size=401))[0]["fingerprint"] != first[0]
    tc = TokenChunker(tokenizer="character", chunk_size=99)
    entry("x", tc)[1](["Some text to encode, filling the vocabulary: äöü."])
    assert entry("x", tc)[0]["fingerprint"] == first[1]
    # A declared version is part of it.
    a = entry("x", cb.PythonChunker(paragraphs, version="1"))[0]
    b = entry("x", cb.PythonChunker(paragraphs, version="2"))[0]
    assert a["fingerprint"] != b["fingerprint"] and a["version"] == "1"


def test_unreadable_objects_ask_for_a_version():
    import threading

    from chunkbench_harness._adapters import entry

    class Holder:
        def __init__(self):
            self.lock = threading.Lock()

        def __call__(self, text):
            return [text]

    with pytest.raises(ValueError, match=r"_thread.lock.*PythonChunker\(obj, version="):
        entry("locked", Holder())
    e, _ = entry("locked", cb.PythonChunker(Holder(), version="3"))
    assert e["version"] == "3"
    with pytest.raises(TypeError, match="is not a chunker"):
        entry("x", 42)
    with pytest.raises(ValueError, match="without dots"):
        entry("a.b", paragraphs)


def test_code_typed_at_a_prompt_and_the_globals_it_reads_are_its_identity():
    """Hostile probes: a function reading a module global reused the cells of the global's
    earlier value, and a class redefined under the same name reused the first one's."""
    from chunkbench_harness._adapters import entry

    ns = {}
    exec(compile("SIZE = 100\ndef f(t): return [t[i:i + SIZE] for i in range(0, len(t), SIZE)]", "<stdin>", "exec"), ns)
    first = entry("f", ns["f"])[0]["fingerprint"]
    ns["SIZE"] = 2000
    assert entry("f", ns["f"])[0]["fingerprint"] != first
    ns["SIZE"] = 100
    assert entry("f", ns["f"])[0]["fingerprint"] == first
    exec(compile("class C:\n    def __call__(self, t): return [t]", "<stdin>", "exec"), ns)
    one = entry("c", ns["C"]())[0]["fingerprint"]
    exec(compile("class C:\n    def __call__(self, t): return t.split()", "<stdin>", "exec"), ns)
    assert entry("c", ns["C"]())[0]["fingerprint"] != one
    # A declared version does not replace the package's: upgrading the library is a change.
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    e = entry("v", cb.PythonChunker(RecursiveCharacterTextSplitter(chunk_size=400), version="1"))[0]
    assert e["version"] == "1"


MODULES = """
import functools, importlib, json, sys
sys.path.insert(0, {d!r})
from chunkbench_harness._adapters import entry
import chunk, settings
importlib.reload(chunk); importlib.reload(settings)

@functools.lru_cache(maxsize=None)
def cached(t):
    return (t[: chunk.SIZE],)

def via_settings(t):
    return [t[: settings.SIZE]]

print(json.dumps([entry("a", chunk.my_chunker)[0]["fingerprint"], entry("b", cached)[0]["fingerprint"],
                  entry("c", via_settings)[0]["fingerprint"]]))
"""


def test_local_modules_cached_functions_and_module_attributes_are_read(tmp_path):
    """Second hostile pass: a local module named like a standard one (`chunk`) was taken for the
    standard library, an lru_cache wrapper was named only, and `settings.SIZE` of a local
    module was not read; each reused the cells of the old value."""
    def fps(size):
        (tmp_path / "chunk.py").write_text(f"SIZE = {size}\ndef my_chunker(t):\n    return [t[:SIZE]]\n")
        (tmp_path / "settings.py").write_text(f"SIZE = {size}\n")
        out = subprocess.run([sys.executable, "-c", MODULES.format(d=str(tmp_path))], cwd=tmp_path,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    a, b = fps(300), fps(500)
    assert all(x != y for x, y in zip(a, b)), (a, b)
    assert fps(300) == a


def test_langchain_overlapping_chunks_of_repetitive_text_land_where_langchain_cut_them():
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from chunkbench_harness._adapters import entry

    text = "The cat sat on the mat. " * 20 + "The dog sat on the rug."
    lc = RecursiveCharacterTextSplitter(chunk_size=60, chunk_overlap=30, add_start_index=True)
    want = [(d.page_content, d.metadata["start_index"]) for d in lc.create_documents([text])]
    got = entry("x", RecursiveCharacterTextSplitter(chunk_size=60, chunk_overlap=30))[1]([text])[0]
    assert got == want
