"""The notebook-style example (examples/python/quickstart.py) runs as a user runs it."""

import os
import subprocess
import sys

from conftest import REPO, write_user_corpus


def test_the_example_runs(tmp_path):
    write_user_corpus(tmp_path)
    env = dict(os.environ, MY_DOCS=str(tmp_path / "docs"), MY_QUESTIONS=str(tmp_path / "questions.csv"),
               MY_OUTPUT=str(tmp_path / "runs"), CHUNKBENCH_STORE=str(tmp_path / "store"))
    p = subprocess.run([sys.executable, str(REPO / "examples/python/quickstart.py")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout
    assert "langchain-400" in out and "recursive-400" in out and "span_recall" in out
    assert "gate: pass exit 0" in out
    assert (tmp_path / "runs" / "my-eval" / "report.html").is_file()
