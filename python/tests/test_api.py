"""The Python API against the built wheel: exact spans, DataFrame schemas, the same files as the
command line, errors as exceptions, the gate."""

import json
import subprocess
import sys
import textwrap

import polars as pl
import pytest

import chunkbench_harness as cb
from conftest import run_cli

CONFIG = {
    "name": "api",
    "datasets": ["my-docs"],
    "strategies": {
        "fixed-64": {"kind": "fixed", "unit": "words", "size": 64, "overlap": 0},
        "recursive-400": {"kind": "recursive", "unit": "chars", "size": 400, "overlap": 0},
    },
    "retrievers": {"bm25": {"kind": "bm25", "query": "question"}},
    "k": [1, 3],
    "readers": {"retrieval": {"kind": "none"}},
    "baseline": "fixed-64",
    "primary": "span_recall",
    "margin": 5,
    "seed": 0,
}


def test_chunk_gives_exact_byte_and_character_spans_like_the_cli(tmp_path):
    text = "Ärger über Öl — ein Test. " * 40 + "\n\nCafé crème, naïve façade. " * 30
    spans = cb.chunk(text, "recursive", size=120)
    assert len(spans) > 5
    raw = text.encode("utf-8")
    for s in spans:
        assert raw[s.start : s.end].decode("utf-8") == s.text == text[s.char_start : s.char_end]
    f = tmp_path / "t.txt"
    f.write_text(text, encoding="utf-8")
    out = run_cli("chunk", "--strategy", "recursive", "--size", "120", f).stdout
    cli = [(j["start"], j["end"], j["words"]) for j in map(json.loads, out.splitlines())]
    assert cli == [(s.start, s.end, s.words) for s in spans]
    with pytest.raises(cb.ChunkbenchError, match="unknown field `sise`"):
        cb.chunk(text, "fixed", sise=3)


def test_run_tables_are_typed_dataframes(user_store, tmp_path):
    run = cb.run(CONFIG, store=user_store, output=tmp_path)
    assert run.cells == 4 and run.dir == tmp_path / "api"
    assert run.report_path.is_file()
    s = run.summary
    header = (run.dir / "summary.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert s.columns == header and s.height == 4
    assert s.schema["n"] == pl.UInt64 and s.schema["span_recall"] == pl.Float64
    assert s.schema["strategy"] == pl.String and s.schema["verdict"] == pl.String
    q = run.per_question
    assert q.height == 4 * 40
    assert q.schema["passages"] == pl.List(pl.String)
    assert q.schema["passage_scores"] == pl.List(pl.Float64)
    for name, table, schema in [
        ("chunk_stats.csv", run.chunk_stats, cb.CHUNK_STATS_SCHEMA),
        ("retrieval_comparisons.csv", run.comparisons, cb.COMPARISONS_SCHEMA),
    ]:
        header = (run.dir / name).read_text(encoding="utf-8").splitlines()[0].split(",")
        assert table.columns == header == list(schema), name
        assert table.height > 0
    v = run.verdicts
    assert v.columns == list(cb.VERDICT_COLUMNS.values())
    assert sorted(v["strategy"].to_list()) == ["recursive-400", "recursive-400"]
    assert set(v["verdict"]) <= {"superior", "equivalent", "non-inferior", "inferior", "inconclusive"}
    assert v["metric"].to_list() == ["span_recall"] * 2
    # pandas through polars
    pytest.importorskip("pandas")
    assert run.summary.to_pandas().shape == (4, len(s.columns))


def test_a_run_keeps_its_tables_when_the_directory_is_run_again(user_store, tmp_path):
    """A hostile probe: Run read its tables from disk when asked, so a later run into the same
    directory changed an earlier Run's numbers."""
    first = cb.run(CONFIG, store=user_store, output=tmp_path)
    before = first.summary.clone()
    again = cb.run(CONFIG, store=user_store, output=tmp_path, sets=["strategies.recursive-400.size=40"])
    assert not again.summary.equals(before)
    assert first.summary.equals(before)
    opened = cb.Run.open(again.dir)
    assert opened.summary.equals(again.summary) and opened.cells == 4
    with pytest.raises(cb.ChunkbenchError, match="no finished run here"):
        cb.Run.open(tmp_path)
    # A run that started here and did not finish (its config.json is newer than the tables).
    import os, time
    later = time.time_ns() + 5_000_000_000
    os.utime(again.dir / "config.json", ns=(later, later))
    with pytest.raises(cb.ChunkbenchError, match="the last run here did not finish"):
        cb.Run.open(again.dir)


def test_python_and_the_cli_write_byte_identical_files(user_store, tmp_path):
    cfg = tmp_path / "api.yaml"
    cfg.write_text(json.dumps(CONFIG, indent=2), encoding="utf-8")
    py = cb.run(cfg, store=user_store, output=tmp_path / "py")
    run_cli("run", cfg, "--store", user_store, "--output", tmp_path / "cli")
    cli = tmp_path / "cli" / "api"
    for f in ["per_question.csv", "summary.csv", "summary.md", "chunk_stats.csv", "retrieval_comparisons.csv"]:
        assert (py.dir / f).read_bytes() == (cli / f).read_bytes(), f


def test_a_run_started_in_python_is_continued_by_the_cli(user_store, tmp_path):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    cfg = tmp_path / "api.yaml"
    cfg.write_text(json.dumps(CONFIG, indent=2), encoding="utf-8")
    lc = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0)
    py = cb.run(cfg, chunkers={"langchain-400": lc}, store=user_store, output=tmp_path)
    assert py.cells == 6 and py.reused == 0
    # What the Python run ran, Python chunker included (the CLI run below rewrites config.json).
    ran = tmp_path / "ran.json"
    ran.write_bytes((py.dir / "config.json").read_bytes())
    out = run_cli("run", cfg, "--store", user_store, "--output", tmp_path).stdout
    assert "4 cells (4 reused from an earlier run)" in out, out[-500:]
    assert "2 finished cells in cells/ not part of this config" in out
    # The run's own config.json, Python chunker included: every cell reused, none computed.
    out = run_cli("run", ran, "--store", user_store, "--output", tmp_path).stdout
    assert "6 cells (6 reused from an earlier run)" in out, out[-500:]
    # and a cell it would have to compute is refused with the reason
    for f in (py.dir / "cells").glob("*.json"):
        if "langchain-400" in f.read_text(encoding="utf-8"):
            f.unlink()
    p = run_cli("run", ran, "--store", user_store, "--output", tmp_path, check=False)
    assert p.returncode == 2 and "computed only inside Python" in p.stderr, p.stderr[-800:]


def test_errors_raise_with_the_cli_message(user_store, tmp_path):
    bad = dict(CONFIG, retreivers=CONFIG["retrievers"])
    with pytest.raises(cb.ChunkbenchError, match="unknown field `retreivers`"):
        cb.run(bad, store=user_store, output=tmp_path)
    with pytest.raises(cb.ChunkbenchError, match="strategy `fixed-64` is in the config and in chunkers="):
        cb.run(CONFIG, chunkers={"fixed-64": str.split}, store=user_store, output=tmp_path)
    with pytest.raises(cb.ChunkbenchError, match="cannot read config"):
        cb.run(tmp_path / "missing.yaml", store=user_store)
    with pytest.raises(cb.ChunkbenchError, match="dataset `no-such-set`.*has no manifest.json"):
        cb.run(dict(CONFIG, datasets=["no-such-set"]), store=user_store, output=tmp_path)

    def explodes(text):
        raise RuntimeError("the splitter broke")

    with pytest.raises(cb.ChunkbenchError, match="the splitter broke"):
        cb.run(CONFIG, chunkers={"boom": cb.PythonChunker(explodes, version="1")}, store=user_store, output=tmp_path)
    with pytest.raises(cb.ChunkbenchError, match="returned a dict"):
        cb.run(CONFIG, chunkers={"d": cb.PythonChunker(lambda t: {"a": t}, version="1")}, store=user_store, output=tmp_path)
    with pytest.raises(cb.ChunkbenchError, match="on document `topic-00.md`: chunk 1: chunk text .* does not occur"):
        cb.run(CONFIG, chunkers={"liar": cb.PythonChunker(lambda t: ["no such text in any document"], version="1")},
               store=user_store, output=tmp_path)
    with pytest.raises(cb.ChunkbenchError, match="baseline run .*nope does not exist"):
        cb.compare(tmp_path / "nope", tmp_path / "nope2")
    q = tmp_path / "q.csv"
    q.write_text("id,question\n1,What?\n", encoding="utf-8")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("Some text.\n", encoding="utf-8")
    with pytest.raises(cb.ChunkbenchError, match="answerz"):
        cb.import_dataset("x-set", documents=tmp_path / "d", questions=q, answers="answerz",
                          store=tmp_path / "store")
    assert not (tmp_path / "store" / "x-set").exists()


def test_compare_is_the_gate(user_store, tmp_path):
    base = cb.run(CONFIG, store=user_store, output=tmp_path / "base")
    same = cb.compare(base.dir, base.dir, output=tmp_path / "same")
    assert same.passed and same.exit_code == 0 and same.cells == 4
    assert all(f.is_file() for f in same.files)
    assert same.table.height == 4 and "verdict" in same.table.columns
    # A rename that names no strategy was ignored silently (a hostile probe); now refused.
    with pytest.raises(cb.ChunkbenchError, match="--pair nope=fixed-64: the baseline run has no cells of strategy `nope`"):
        cb.compare(base.dir, base.dir, pairs={"nope": "fixed-64"}, output=tmp_path / "same")
    p = run_cli("compare", base.dir, base.dir, "--pair", "fixed-64=nope", "--output", tmp_path / "same", check=False)
    assert p.returncode == 2 and "the candidate run has no cells of strategy `nope`" in p.stderr
    worse = cb.run(CONFIG, store=user_store, output=tmp_path / "worse", sets=["strategies.recursive-400.size=40"])
    gate = cb.compare(base.dir, worse.dir, output=tmp_path / "worse-gate")
    assert not gate.passed and gate.exit_code == 1 and gate.regressions >= 1, gate.markdown[:2000]
    p = run_cli("compare", base.dir, worse.dir, "--store", user_store, "--output", tmp_path / "cli-gate", check=False)
    assert p.returncode == 1
    assert (tmp_path / "cli-gate" / "compare.md").read_bytes() == (tmp_path / "worse-gate" / "compare.md").read_bytes()


def test_the_wheel_command_is_the_cli():
    p = run_cli("--version")
    assert p.stdout.startswith("chunkbench ")
    p = run_cli("validate", "/nonexistent/config.yaml", check=False)
    assert p.returncode == 2 and "cannot read config /nonexistent/config.yaml" in p.stderr
