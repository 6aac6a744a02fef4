"""chunkbench from Python: evaluate RAG chunking strategies with exact spans, paired statistics
with verdicts and content-addressed, resumable runs; the same code as the ``chunkbench``
command line (which this package also installs).

    import chunkbench_harness as cb
    run = cb.run("my-eval.yaml", chunkers={"langchain-400": splitter})
    print(run.verdicts)

- :func:`run` runs a config (a path, YAML text or a dict) and returns a :class:`Run` whose
  tables are polars DataFrames (``.to_pandas()`` for pandas);
- :func:`chunk` chunks one text with any built-in strategy, returning :class:`Span`s with
  exact byte and character offsets;
- :func:`compare` is the regression gate (``chunkbench compare``), returning a
  :class:`Comparison` with its verdict and exit code;
- :func:`import_dataset` is ``chunkbench data import``.

Errors raise :class:`ChunkbenchError` with the command line's message (file, line or field,
and the fix). Ctrl-C stops a run cleanly (``KeyboardInterrupt``); its finished cells are kept
and the next run of the same config resumes there.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import polars as pl

from . import _native
from ._adapters import PythonChunker, dumps as _dumps, entry as _entry
from ._native import ChunkbenchError

__all__ = [
    "ChunkbenchError",
    "Comparison",
    "PythonChunker",
    "Run",
    "Span",
    "chunk",
    "compare",
    "import_dataset",
    "run",
]

__version__: str = _native.__version__

PathLike = Union[str, "os.PathLike[str]"]


def _store(store: Optional[PathLike]) -> str:
    """The dataset store as the command line resolves it: the argument, else
    ``$CHUNKBENCH_STORE``, else ``data`` (relative to the working directory)."""
    if store is not None:
        return os.fspath(store)
    return os.environ.get("CHUNKBENCH_STORE", "data")


# --- tables -----------------------------------------------------------------------------

# chunk_stats.csv (reporting::report, chunk_stats): per dataset x strategy.
CHUNK_STATS_SCHEMA: Dict[str, Any] = {
    "dataset": pl.String,
    "strategy": pl.String,
    "chunks": pl.UInt64,
    "words_min": pl.Float64,
    "words_median": pl.Float64,
    "words_p95": pl.Float64,
    "words_max": pl.Float64,
    "words_mean": pl.Float64,
    "forced_splits": pl.UInt64,
    "merges": pl.UInt64,
    "embedded_units": pl.UInt64,
    "units_split_before_embedding": pl.UInt64,
    "degenerate_vectors": pl.UInt64,
    "units_split_at_size": pl.UInt64,
    "over_size": pl.UInt64,
    "embedded_units_truncated": pl.UInt64,
    "over_embedder_window": pl.UInt64,
}

# retrieval_comparisons.csv (reporting::report, retrieval_tests): every retrieval metric of a
# cell against the baseline's, paired (exploratory); `k` is the depth label ("3", or a budget
# such as "256 tokens").
COMPARISONS_SCHEMA: Dict[str, Any] = {
    "cell_id": pl.String,
    "baseline_cell_id": pl.String,
    "dataset": pl.String,
    "strategy": pl.String,
    "retriever": pl.String,
    "k": pl.String,
    "metric": pl.String,
    "n": pl.UInt64,
    "baseline_mean": pl.Float64,
    "mean": pl.Float64,
    "delta": pl.Float64,
    "delta_ci_low": pl.Float64,
    "delta_ci_high": pl.Float64,
    "sign_flip_p": pl.Float64,
    "sign_flip_exact": pl.UInt8,
}

# The verdict table: summary.csv's planned comparisons (each strategy against the baseline at
# the same dataset, retriever, depth and reader), renamed for reading.
VERDICT_COLUMNS: Dict[str, str] = {
    # Ordered so that a printed table (polars shows the first and last four columns of a wide
    # frame) shows the strategy, the difference with its interval and the verdict.
    "strategy": "strategy",
    "k": "k",
    "primary_delta_pts": "delta",
    "primary_ci_low_pts": "ci_low",
    "dataset": "dataset",
    "retriever": "retriever",
    "budget": "budget",
    "budget_unit": "budget_unit",
    "reader": "reader",
    "n": "n",
    "primary_metric": "metric",
    "primary_baseline_pts": "baseline",
    "primary_pts": "value",
    "margin_pts": "margin",
    "primary_sim_ci_low_pts": "sim_ci_low",
    "primary_sim_ci_high_pts": "sim_ci_high",
    "p_settled": "p_settled",
    "questions_needed_for": "questions_needed_for",
    "primary_ci_high_pts": "ci_high",
    "verdict": "verdict",
    "primary_holm_p": "holm_p",
    "questions_needed": "questions_needed",
}

_summary_schema_cache: Optional[pl.Schema] = None


def _summary_schema() -> pl.Schema:
    """summary.csv's columns and types, from the Rust column table it is written from."""
    global _summary_schema_cache
    if _summary_schema_cache is None:
        _summary_schema_cache = pl.read_parquet(io.BytesIO(_native.summary_schema())).schema
    return _summary_schema_cache


def _read_csv(path: Path, schema: Mapping[str, Any]) -> pl.DataFrame:
    if not path.is_file():
        return pl.DataFrame(schema=dict(schema))
    return pl.read_csv(path, schema=dict(schema))


class Run:
    """A finished run: its directory and its tables as polars DataFrames.

    The tables are read when the run finishes (or when opened with :meth:`Run.open`) and kept:
    a later run into the same directory does not change a ``Run`` you hold.

    Attributes:
        dir: the run directory (``OUTPUT/NAME``), the same files ``chunkbench run`` writes.
        cells: cells in the config.
        reused: cells reused from an earlier run (content-addressed: same config, code and
            inputs); 0 for an opened run.
        summary_md: summary.md (the verdict first, then the tables).
        summary: summary.csv: one row per cell (dataset x strategy x retriever x k or budget x
            reader), typed as Rust writes it (``records::summary_columns``).
        per_question: per_question.parquet: one row per (cell, question); ``scores``,
            ``passages`` and ``passage_scores`` are list columns.
        comparisons: retrieval_comparisons.csv: each retrieval metric (and words retrieved) of
            every cell against the baseline cell at the same dataset, retriever and depth;
            paired bootstrap interval and sign-flip p, unadjusted (exploratory). Empty without
            a baseline.
        chunk_stats: chunk_stats.csv: per dataset x strategy, the chunk count, words per chunk
            and the strategy's counters.
    """

    def __init__(self, dir: PathLike, cells: int, reused: int) -> None:
        self.dir = Path(dir)
        self.cells = cells
        self.reused = reused
        self.summary_md: str = (self.dir / "summary.md").read_text(encoding="utf-8")
        self.summary: pl.DataFrame = _read_csv(self.dir / "summary.csv", _summary_schema())
        self.per_question: pl.DataFrame = pl.read_parquet(self.dir / "per_question.parquet")
        self.comparisons: pl.DataFrame = _read_csv(self.dir / "retrieval_comparisons.csv", COMPARISONS_SCHEMA)
        self.chunk_stats: pl.DataFrame = _read_csv(self.dir / "chunk_stats.csv", CHUNK_STATS_SCHEMA)

    @classmethod
    def open(cls, dir: PathLike) -> "Run":
        """A finished run directory (``OUTPUT/NAME`` of an earlier run, from Python or the
        command line) as a ``Run``.

        Raises:
            ChunkbenchError: the directory holds no finished run (no summary.csv).
        """
        d = Path(dir)
        if not (d / "summary.csv").is_file() or not (d / "per_question.parquet").is_file():
            raise ChunkbenchError(
                f"{d}: no finished run here (summary.csv and per_question.parquet are written "
                "when a run finishes); give the directory `chunkbench run` printed (OUTPUT/NAME)"
            )
        config = d / "config.json"
        if config.is_file() and config.stat().st_mtime_ns > (d / "summary.csv").stat().st_mtime_ns:
            # A run writes config.json when it starts and the tables when it finishes.
            raise ChunkbenchError(
                f"{d}: the last run here did not finish (config.json is newer than summary.csv, "
                "which is an earlier run's); run its config again to finish it"
            )
        summary = _read_csv(d / "summary.csv", _summary_schema())
        return cls(d, summary.height, 0)

    def __repr__(self) -> str:
        return f"Run(dir={str(self.dir)!r}, cells={self.cells}, reused={self.reused})"

    @property
    def report_path(self) -> Path:
        """report.html: the run in one self-contained page (the file on disk: a later run into
        the same directory rewrites it)."""
        return self.dir / "report.html"

    @property
    def verdicts(self) -> pl.DataFrame:
        """The planned comparisons of the primary metric (summary.md's "Verdict" table): per
        strategy against the baseline, ``delta`` in points with its 95 % interval
        (``ci_low``, ``ci_high``), Holm-adjusted p, the verdict (superior, equivalent,
        non-inferior, inferior, inconclusive) and the questions needed to settle it."""
        return self.summary.filter(pl.col("verdict").is_not_null()).select(
            [pl.col(c).alias(a) for c, a in VERDICT_COLUMNS.items()]
        )


def _yaml_value(v: Any) -> Any:
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    raise TypeError(
        f"config: a value of type {type(v).__name__} ({v!r:.60}) is not YAML; give strings, "
        "numbers, booleans, lists and dicts"
    )


def _config_text(config: Union[PathLike, str, Mapping[str, Any]]) -> Tuple[str, str]:
    """The config's YAML text and the name errors give it. A ``str`` is YAML text when it has
    a line break or a ``key: value`` colon, else a path."""
    if isinstance(config, Mapping):
        # JSON is YAML; indented, so an error's line number points at the key.
        return json.dumps(config, indent=2, default=_yaml_value), "config (dict)"
    if isinstance(config, os.PathLike) or (
        isinstance(config, str) and "\n" not in config and ": " not in config
    ):
        path = os.fspath(config)
        if os.path.isdir(path):
            raise ChunkbenchError(f"cannot read config {path}: it is a directory; give the YAML file")
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        except OSError as e:
            raise ChunkbenchError(f"cannot read config {path}: {e.strerror}") from None
    if isinstance(config, str):
        return config, "config (YAML text)"
    raise TypeError(f"config: give a path, YAML text or a dict, not {type(config).__name__}")


def run(
    config: Union[PathLike, str, Mapping[str, Any]],
    *,
    chunkers: Optional[Mapping[str, Any]] = None,
    store: Optional[PathLike] = None,
    output: Optional[PathLike] = None,
    sets: Sequence[str] = (),
) -> Run:
    """Runs a sweep, as ``chunkbench run CONFIG`` does, and returns it.

    Args:
        config: a path to a YAML config, YAML text, or a dict of the same keys.
        chunkers: Python chunker objects by strategy name, added to the config's strategies:
            callables from text to chunks, LangChain text splitters, chonkie chunkers,
            LlamaIndex node parsers, or :class:`PythonChunker` (an object with a declared
            version). Their chunks are located as exact byte spans of each document.
        store: the dataset store (default ``$CHUNKBENCH_STORE``, else ``data``).
        output: overrides the config's ``output`` (the run goes to ``OUTPUT/NAME``).
        sets: overrides as ``chunkbench run --set PATH=VALUE`` takes them.

    Cells already finished with the same configuration, code and inputs (by an earlier run,
    from Python or the command line) are reused.

    Raises:
        ChunkbenchError: a bad config or input, or a failed stage (the message names the file,
            field and fix).
        ValueError: a chunker whose identity cannot be read (asks for ``version=``).
        KeyboardInterrupt: Ctrl-C; the finished cells are kept.
    """
    text, origin = _config_text(config)
    if isinstance(sets, str):
        sets = [sets]
    if output is not None and os.fspath(output) == "":
        raise ValueError("output: give a directory (the run goes to OUTPUT/NAME), not \"\"")
    hosted = []
    for name, obj in (chunkers or {}).items():
        e, split = _entry(name, obj)
        hosted.append((name, _dumps(e), split))
    out = _native.run(
        text,
        origin,
        _store(store),
        None if output is None else os.fspath(output),
        list(sets),
        hosted,
    )
    return Run(out["dir"], out["cells"], out["reused"])


@dataclass(frozen=True)
class Span:
    """One chunk of a text: ``text[char_start:char_end]`` in Python, the bytes
    ``[start, end)`` of its UTF-8 encoding, and its words (the unit words are counted in
    everywhere in chunkbench)."""

    start: int
    end: int
    char_start: int
    char_end: int
    words: int
    text: str


def chunk(text: str, strategy: str = "fixed", **params: Any) -> List[Span]:
    """Chunks ``text`` with a built-in strategy kind and the fields of its entry, as
    ``chunkbench chunk`` does, e.g. ``chunk(text, "recursive", size=400)`` or
    ``chunk(text, "fixed", unit="words", size=100)``. The kinds and their fields:
    ``chunkbench ls strategies`` (fixed and recursive need ``size``; sentence-window,
    max-min, kamradt and cluster-semantic run with their defaults, the semantic ones on the
    fetched MiniLM).

    Raises:
        ChunkbenchError: an unknown kind or field (named), or a model that is not fetched.
    """
    if not isinstance(text, str):
        raise TypeError(f"chunk: text must be a str, not {type(text).__name__}")
    if "kind" in params:
        raise TypeError("chunk: give the kind as `strategy`, not as kind=")
    fields = {"kind": strategy, **params}
    got = _native.chunk(text, json.dumps(fields, default=os.fspath))
    return [Span(s, e, cs, ce, w, text[cs:ce]) for s, e, cs, ce, w in got]


@dataclass(frozen=True)
class Comparison:
    """The regression gate's outcome (``chunkbench compare``).

    Attributes:
        passed: no regression (exit code 0).
        exit_code: 0 pass, 1 regression (unusable input raises instead, the CLI's exit 2).
        regressions: compared cells that regressed.
        cells: compared cells.
        missing: baseline cells without a partner that fail the gate.
        markdown: compare.md: the table, the verdicts and the lost / gained questions.
        files: compare.md, compare.json and compare.html.
    """

    passed: bool
    exit_code: int
    regressions: int
    cells: int
    missing: int
    markdown: str
    files: Tuple[Path, Path, Path]

    @property
    def table(self) -> pl.DataFrame:
        """compare.json's cells as a DataFrame (one row per compared pair)."""
        with open(self.files[1], encoding="utf-8") as f:
            data = json.load(f)
        return pl.DataFrame(data.get("cells", []))


def compare(
    baseline: PathLike,
    candidate: PathLike,
    *,
    max_accuracy_drop: Optional[float] = None,
    max_words_increase: Optional[float] = None,
    alpha: Optional[float] = None,
    margin: Optional[float] = None,
    require: Optional[str] = None,
    pairs: Union[Mapping[str, str], Iterable[Tuple[str, str]], None] = None,
    allow_missing: bool = False,
    output: Optional[PathLike] = None,
    store: Optional[PathLike] = None,
    primary: Optional[str] = None,
    resample: Optional[str] = None,
    allow_rule_change: bool = False,
) -> Comparison:
    """Compares a candidate run with a baseline run cell by cell: the regression gate, with the
    rules of ``chunkbench compare`` (same names; ``None`` takes the command line's default:
    a drop of 1 point, 5 % more words; ``alpha``, ``margin``, ``primary`` and ``resample``
    default to the baseline run's config, never the candidate's). ``pairs`` maps a baseline
    strategy name to the candidate's (a rename). Writes compare.md, compare.json and
    compare.html into ``output`` (default: the candidate run directory).

    Raises:
        ChunkbenchError: unusable input (the CLI's exit 2): a run that cannot be read, cells
            edited after they finished, runs on two versions of a dataset.
    """
    if not isinstance(allow_missing, bool):
        raise TypeError(f"allow_missing: give True or False, not {allow_missing!r}")
    if not isinstance(allow_rule_change, bool):
        raise TypeError(f"allow_rule_change: give True or False, not {allow_rule_change!r}")
    if isinstance(pairs, Mapping):
        pair_list = list(pairs.items())
    else:
        pair_list = [tuple(p) for p in (pairs or ())]
    for p in pair_list:
        if len(p) != 2 or not all(isinstance(x, str) and x for x in p):
            raise TypeError(f"pairs: give {{old_name: new_name}} or (old, new) pairs of strategy names, not {p!r}")
    o = _native.compare(
        os.fspath(baseline),
        os.fspath(candidate),
        _store(store),
        _native.DEFAULT_MAX_ACCURACY_DROP_PTS if max_accuracy_drop is None else float(max_accuracy_drop),
        _native.DEFAULT_MAX_WORDS_INCREASE_PCT if max_words_increase is None else float(max_words_increase),
        None if alpha is None else float(alpha),
        None if margin is None else float(margin),
        require,
        pair_list,
        bool(allow_missing),
        None if output is None else os.fspath(output),
        primary,
        resample,
        bool(allow_rule_change),
    )
    return Comparison(
        passed=not o["regression"],
        exit_code=o["exit_code"],
        regressions=o["regressions"],
        cells=o["cells"],
        missing=o["missing"],
        markdown=o["markdown"],
        files=tuple(Path(f) for f in o["files"]),  # type: ignore[arg-type]
    )


def _flag_args(flags: Mapping[str, Any]) -> List[str]:
    args: List[str] = []
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return args


def import_dataset(
    name: str,
    *,
    documents: PathLike,
    questions: PathLike,
    store: Optional[PathLike] = None,
    force: bool = False,
    **columns: Any,
) -> Path:
    """Imports your documents and questions as dataset ``name``, as ``chunkbench data import``
    does; the keyword arguments are its flags with underscores (``evidence_text="excerpt"`` is
    ``--evidence-text excerpt``; ``True`` gives a flag without a value, a list a comma-separated
    one). Returns the dataset's directory.

    Raises:
        ChunkbenchError: an unknown flag, or data ``data import`` refuses (naming the file, row
            and column); nothing is written then.
    """
    if not isinstance(name, str):
        raise TypeError(f"import_dataset: name must be a str, not {type(name).__name__}")
    st = _store(store)
    args = ["--documents", os.fspath(documents), "--questions", os.fspath(questions)]
    args += ["--store", st] + (["--force"] if force else []) + _flag_args(columns)
    # The name after `--`: a name that looks like a flag is a name.
    try:
        _native.data_import(args + ["--", name])
    except ChunkbenchError as e:
        # The command line's message, in this function's words.
        raise ChunkbenchError(str(e).replace("give --force", "give force=True")) from None
    return Path(st) / name
