"""Fixtures of the chunkbench_harness tests: the repository, its dataset store (the pinned
datasets `chunkbench data fetch` wrote; scripts/python-tests.sh fetches them) and a user-style
corpus made from SciQ the way scripts/equal-budget-studies.sh makes it."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The models `chunkbench models fetch` unpacked (the default cost tokenizer is MiniLM's), found
# whatever directory a test runs in.
os.environ.setdefault("CHUNKBENCH_MODELS", str(REPO / "models"))


def store() -> Path:
    """The dataset store the repository's tests use (`data/`, or $CHUNKBENCH_STORE)."""
    return Path(os.environ.get("CHUNKBENCH_STORE", REPO / "data"))


def chunkbench_cli() -> str:
    """The command the wheel put on PATH beside this interpreter."""
    exe = Path(sys.executable).parent / "chunkbench"
    assert exe.is_file(), f"the wheel's `chunkbench` command is not at {exe}"
    return str(exe)


def write_user_corpus(root: Path) -> None:
    """10 Markdown files of 4 SciQ support paragraphs each and a CSV of the 40 retrieval
    questions about them (answer string, evidence excerpt)."""
    src = store() / "sciq-retrieval"
    docs = {}
    with open(src / "documents.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            docs[d["id"]] = d["text"]
    with open(src / "questions.jsonl", encoding="utf-8") as f:
        qs = [json.loads(l) for l in f]
    qs = [q for q in qs if q.get("evidence") and len(q["evidence"]) == 1][:40]
    (root / "docs").mkdir(parents=True)
    with open(root / "questions.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "question", "answer", "excerpt"])
        for i in range(0, 40, 4):
            group = qs[i : i + 4]
            text = "\n\n".join(docs[q["evidence"][0]["doc_id"]] for q in group)
            (root / "docs" / f"topic-{i // 4:02d}.md").write_text(text + "\n", encoding="utf-8")
            for q in group:
                e = q["evidence"][0]
                w.writerow([q["id"], q["question"], q["answers"][0], docs[e["doc_id"]][e["start"] : e["end"]]])


@pytest.fixture(scope="session")
def user_store(tmp_path_factory):
    """A dataset store holding `my-docs`, the user-style corpus imported through the API."""
    import chunkbench_harness as cb

    root = tmp_path_factory.mktemp("user")
    write_user_corpus(root)
    cb.import_dataset(
        "my-docs",
        documents=root / "docs",
        questions=root / "questions.csv",
        answers="answer",
        evidence_text="excerpt",
        store=root / "store",
    )
    return root / "store"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def run_cli(*args, cwd=REPO, check=True):
    """Runs the wheel's `chunkbench` command; returns the completed process."""
    p = subprocess.run([chunkbench_cli(), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"chunkbench {' '.join(map(str, args))}: exit {p.returncode}\n{p.stderr[-3000:]}")
    return p
