"""Type stub of the extension module (crates/python/src/lib.rs). Call the package's API
(chunkbench_harness.run, chunk, compare, import_dataset) rather than these."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

__version__: str
DEFAULT_MAX_ACCURACY_DROP_PTS: float
DEFAULT_MAX_WORDS_INCREASE_PCT: float
DEFAULT_ALPHA: float

Piece = Union[str, Tuple[str, int], Tuple[int, int]]

class ChunkbenchError(Exception):
    """Unusable input or a failed run: the message names the file, line or field and the fix,
    as the command line's (exit 2)."""

def cli_main(argv: List[str]) -> int:
    """The command line (`chunkbench::main_from`); returns the exit code."""

def build_commit() -> str:
    """The git commit the module was built from."""

def run(
    config_text: str,
    origin: str,
    store: str,
    output: Optional[str] = None,
    sets: List[str] = ...,
    hosted: List[Tuple[str, str, Callable[[List[str]], Sequence[Sequence[Piece]]]]] = ...,
) -> Dict[str, Any]:
    """Runs a config; returns {dir, cells, reused, ignored, summary_md}."""

def chunk(text: str, entry_json: str) -> List[Tuple[int, int, int, int, int]]:
    """(start, end, char_start, char_end, words) per chunk."""

def compare(
    baseline: str,
    candidate: str,
    store: str,
    max_accuracy_drop: float,
    max_words_increase: float,
    alpha: Optional[float] = None,
    margin: Optional[float] = None,
    require: Optional[str] = None,
    pairs: List[Tuple[str, str]] = ...,
    allow_missing: bool = False,
    output: Optional[str] = None,
    primary: Optional[str] = None,
    resample: Optional[str] = None,
    allow_rule_change: bool = False,
) -> Dict[str, Any]:
    """{markdown, regression, exit_code, regressions, cells, missing, files}."""

def data_import(args: List[str]) -> None:
    """`chunkbench data import ARGS...`."""

def summary_schema() -> bytes:
    """summary.csv's columns and types as a Parquet file of no rows."""
