# %% [markdown]
# # chunkbench from Python: your folder, three chunkers, the verdict
#
# A notebook-style script (cells as `# %%`; open it in Jupyter with jupytext, VS Code or
# PyCharm, or run it with `python examples/python/quickstart.py`). It imports a folder of
# Markdown files and a CSV of questions (answer string, evidence excerpt), runs two built-in
# chunkers and a LangChain splitter passed as an object, and shows the verdict, the tables as
# DataFrames, a chunk listing and the regression gate. python/tests/test_example.py runs it.
#
# Set MY_DOCS, MY_QUESTIONS and CHUNKBENCH_STORE to use your own data (defaults: my_docs/,
# my_questions.csv, data/).

# %%
import os

import chunkbench_harness as cb
import polars as pl
from langchain_text_splitters import RecursiveCharacterTextSplitter

here = os.path.dirname(os.path.abspath(__file__))
docs = os.environ.get("MY_DOCS", "my_docs/")
questions = os.environ.get("MY_QUESTIONS", "my_questions.csv")
output = os.environ.get("MY_OUTPUT", "results/runs")

# %% [markdown]
# Import the folder and the questions (`chunkbench data import`, the same flags as keywords).

# %%
cb.import_dataset("my-docs", documents=docs, questions=questions, answers="answer",
                  evidence_text="excerpt", force=True)

# %% [markdown]
# Run the config's two chunkers and a LangChain object; the verdict per strategy against the
# baseline (fixed-64), on span recall with a 5-point margin.

# %%
splitter = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0)
run = cb.run(os.path.join(here, "my-eval.yaml"), chunkers={"langchain-400": splitter}, output=output)
with pl.Config(tbl_cols=-1, tbl_width_chars=160, tbl_hide_dataframe_shape=True):
    print(run.verdicts.select("strategy", "k", "metric", "baseline", "value", "delta", "ci_low",
                              "ci_high", "verdict", "questions_needed"))

# %% [markdown]
# The tables are polars DataFrames (`.to_pandas()` for pandas): words retrieved per strategy,
# and the per-question rows.

# %%
print(run.summary.select("strategy", "k", "n", "words_mean", "span_recall", "recall_at_k"))
print(run.per_question.group_by("strategy").agg(pl.col("span_recall").mean()).sort("strategy"))
print(run.chunk_stats.select("strategy", "chunks", "words_median", "words_max"))

# %% [markdown]
# Chunk one text with a built-in strategy: exact byte and character offsets.

# %%
text = open(os.path.join(docs, sorted(os.listdir(docs))[0]), encoding="utf-8").read()
for span in cb.chunk(text, "recursive", size=400)[:3]:
    assert text[span.char_start:span.char_end] == span.text
    print(span.start, span.end, span.words, repr(span.text[:60]))

# %% [markdown]
# The regression gate: the run against itself passes (exit code 0).

# %%
gate = cb.compare(run.dir, run.dir, output=os.path.join(output, "my-eval-gate"))
print("gate:", "pass" if gate.passed else "regression", "exit", gate.exit_code)
print("report:", run.report_path)
