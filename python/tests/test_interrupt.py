"""Ctrl-C stops a run from Python cleanly (KeyboardInterrupt, finished cells kept) and the next
run resumes there."""

import os
import signal
import subprocess
import sys
import time

SCRIPT = """
import sys, time
import chunkbench_harness as cb
sys.path.insert(0, {here!r})
from paragraphs import paragraphs

def slow_paragraphs(text):
    time.sleep(0.3)
    return paragraphs(text)

cfg = {{"name": "stop", "datasets": ["my-docs"],
        "strategies": {{"a-fixed": {{"kind": "fixed", "unit": "words", "size": 64}}}},
        "retrievers": {{"bm25": {{"kind": "bm25", "query": "question"}}}}, "k": [1, 3],
        "readers": {{"retrieval": {{"kind": "none"}}}}, "seed": 0}}
try:
    run = cb.run(cfg, chunkers={{"z-slow": cb.PythonChunker(slow_paragraphs, version="1")}},
                 store={store!r}, output={out!r})
    print("DONE", run.cells, run.reused, flush=True)
except KeyboardInterrupt as e:
    print("INTERRUPTED", e, flush=True)
    sys.exit(130)
"""


def test_ctrl_c_stops_cleanly_and_the_run_resumes(user_store, tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    script = tmp_path / "stop.py"
    script.write_text(SCRIPT.format(here=here, store=str(user_store), out=str(tmp_path)), encoding="utf-8")
    cells = tmp_path / "stop" / "cells"
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    # The fixed cells finish first (strategies run in name order), then the slow chunker starts.
    while len(list(cells.glob("*.json"))) < 2:
        assert p.poll() is None, p.communicate()
        assert time.time() < deadline, "the fixed cells never finished"
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    t = time.time()
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, (out, err[-2000:])
    assert "INTERRUPTED" in out and "run the same config again to resume" in out
    assert time.time() - t < 60
    assert len(list(cells.glob("*.json"))) == 2
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[:3] == ["DONE", "4", "2"], done.stdout
