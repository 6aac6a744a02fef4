//! `chunkbench_harness._native`: the extension module behind the Python package
//! `chunkbench_harness` (python/). The package's Python code (python/chunkbench_harness/) is the
//! API users call; this module is its bridge to the workspace, and every function here calls
//! the same code as the command line:
//! - [`cli_main`]: the `chunkbench` command of the wheel is the CLI's own
//!   [`chunkbench::main_from`];
//! - [`run`]: [`evaluator::run::run`] on a config parsed by [`evaluator::RunConfig::parse_with`]
//!   (the CLI's `run`), with the Python chunker objects hosted as `kind: python` entries
//!   ([`evaluator::strategies::python`]);
//! - [`chunk`]: [`chunkbench::chunk_document`] (the CLI's `chunk`);
//! - [`compare`]: [`chunkbench::compare_runs`] (the CLI's `compare`);
//! - [`data_import`]: [`chunkbench::data_import`] (the CLI's `data import`).
//!
//! Rust work runs with the interpreter released (other Python threads go on); a run polls for
//! Ctrl-C every 50 ms and, on one, asks the sweep to stop ([`evaluator::run::stop`]) and raises
//! `KeyboardInterrupt` once it has: the finished cells are kept and a new run resumes there.
//! Errors raise `ChunkbenchError` with the CLI's message (redacted of API keys).

use anyhow::Context;
use evaluator::run::stop;
use evaluator::strategies::python::{host, HostGuard, HostedChunker, Piece};
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pyo3::create_exception!(
    _native,
    ChunkbenchError,
    PyException,
    "Unusable input or a failed run: the message names the file, line or field and the fix, as the command line's (exit 2)."
);

/// An error as Python sees it: `KeyboardInterrupt` for an interrupted run, else
/// `ChunkbenchError` with the message the command line prints (redacted).
fn py_err(e: anyhow::Error) -> PyErr {
    if e.downcast_ref::<stop::Interrupted>().is_some() {
        return PyKeyboardInterrupt::new_err(e.to_string());
    }
    ChunkbenchError::new_err(httpio::redact(&format!("{e:#}")))
}

/// Runs `f` with the interpreter released on a thread of its own, checking for Ctrl-C every
/// 50 ms; on one, asks runs to stop and returns Python's `KeyboardInterrupt` once `f` returned.
fn interruptible<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> anyhow::Result<T> + Send,
) -> PyResult<T> {
    stop::clear_stop();
    let (result, interrupt) = py.detach(|| {
        std::thread::scope(|s| {
            let worker = s.spawn(f);
            let mut interrupt: Option<PyErr> = None;
            while !worker.is_finished() {
                std::thread::sleep(Duration::from_millis(50));
                if interrupt.is_none() {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        stop::request_stop();
                        interrupt = Some(e);
                    }
                }
            }
            (worker.join(), interrupt)
        })
    });
    stop::clear_stop();
    if interrupt.is_some() {
        // Python's KeyboardInterrupt, with what became of the run.
        return Err(PyKeyboardInterrupt::new_err(stop::Interrupted.to_string()));
    }
    match result {
        Ok(r) => r.map_err(py_err),
        Err(_) => Err(ChunkbenchError::new_err(
            "internal error: the run panicked (a bug in chunkbench; please report it)",
        )),
    }
}

/// The command line: `argv` as `sys.argv` gives it; returns the exit code (0, 1 a regression,
/// 2 unusable input). The wheel's `chunkbench` script calls it.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| chunkbench::main_from(argv))
}

/// The git commit the module was built from (`-dirty` when tracked files differed), as runs
/// record it.
#[pyfunction]
fn build_commit() -> &'static str {
    chunkbench::build_commit()
}

/// A Python chunker: `split` is the package's adapter (`chunkbench_harness._adapters`), a
/// function from a list of texts to one list of pieces per text, each piece a `str` (a text to
/// locate), a `(str, int)` (a text and its character offset) or an `(int, int)` (a character
/// span).
struct PyChunker {
    split: Py<PyAny>,
}

impl HostedChunker for PyChunker {
    fn split(&self, docs: &[&chunker::Document]) -> anyhow::Result<Vec<Vec<Piece>>> {
        Python::attach(|py| {
            let texts = PyList::new(py, docs.iter().map(|d| d.text.as_str()))?;
            let out = self.split.bind(py).call1((texts,))?;
            let mut all = Vec::with_capacity(docs.len());
            for doc_pieces in out.try_iter()? {
                let mut pieces = Vec::new();
                for p in doc_pieces?.try_iter()? {
                    let p = p?;
                    if let Ok(t) = p.extract::<String>() {
                        pieces.push(Piece::Text(t));
                    } else if let Ok((t, c)) = p.extract::<(String, usize)>() {
                        pieces.push(Piece::TextAt(t, c));
                    } else {
                        let (s, e) = p.extract::<(usize, usize)>()?;
                        pieces.push(Piece::Chars(s, e));
                    }
                }
                all.push(pieces);
            }
            Ok::<_, PyErr>(all)
        })
        .map_err(|e: PyErr| {
            Python::attach(|py| {
                if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                    anyhow::Error::new(stop::Interrupted)
                } else {
                    anyhow::anyhow!("{e}")
                }
            })
        })
    }
}

/// Runs a config: `config_text` (YAML) read as the file `origin`, with `sets` applied as
/// `--set` does, and each `(name, entry JSON, split)` of `hosted` added as strategy `name`
/// (`kind: python`, its object hosted for the run). Returns `{dir, cells, reused, ignored,
/// summary_md}`.
#[pyfunction]
#[pyo3(signature = (config_text, origin, store, output=None, sets=Vec::new(), hosted=Vec::new()))]
fn run<'py>(
    py: Python<'py>,
    config_text: String,
    origin: String,
    store: PathBuf,
    output: Option<PathBuf>,
    sets: Vec<String>,
    hosted: Vec<(String, String, Py<PyAny>)>,
) -> PyResult<Bound<'py, PyDict>> {
    evaluator::run::set_build_commit(chunkbench::build_commit());
    let mut sets = sets;
    let mut guards: Vec<HostGuard> = Vec::new();
    if !hosted.is_empty() {
        let taken = config_strategy_names(&config_text);
        for (name, entry, split) in hosted {
            if taken.contains(&name) {
                return Err(ChunkbenchError::new_err(format!(
                    "{origin}: strategy `{name}` is in the config and in chunkers=; give the \
                     Python chunker another name"
                )));
            }
            let fingerprint = serde_json::from_str::<serde_json::Value>(&entry)
                .ok()
                .and_then(|v| v["fingerprint"].as_str().map(str::to_string))
                .ok_or_else(|| {
                    ChunkbenchError::new_err(format!(
                        "chunker `{name}`: no fingerprint in its entry {entry}"
                    ))
                })?;
            guards.push(host(&fingerprint, Arc::new(PyChunker { split })));
            sets.push(format!("strategies.{name}={entry}"));
        }
    }
    let outcome = interruptible(py, move || {
        let mut cfg = evaluator::RunConfig::parse_with(&config_text, &origin, &sets)?;
        if let Some(o) = output {
            cfg.output = o;
        }
        evaluator::run::run(&cfg, &store, None)
    });
    drop(guards);
    let o = outcome?;
    let d = PyDict::new(py);
    d.set_item("dir", o.dir.display().to_string())?;
    d.set_item("cells", o.cells.len())?;
    d.set_item("reused", o.reused)?;
    d.set_item("ignored", o.ignored)?;
    d.set_item("summary_md", o.summary_md)?;
    Ok(d)
}

/// The names under `strategies:` of a config's text (empty when it does not parse: the run's
/// own parse then says why).
fn config_strategy_names(text: &str) -> Vec<String> {
    serde_yaml::from_str::<serde_yaml::Value>(text)
        .ok()
        .and_then(|v| {
            v.get("strategies").and_then(|s| s.as_mapping()).map(|m| {
                m.keys()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// A chunk as [`chunk`] returns it: `(start, end, char_start, char_end, words)`.
type SpanTuple = (usize, usize, usize, usize, usize);

/// Chunks `text` with the strategy entry `entry_json` (`{"kind": ..., fields}`); returns one
/// `(start, end, char_start, char_end, words)` per chunk: byte and character offsets of the
/// chunk in `text`, end exclusive, and its words.
#[pyfunction]
fn chunk(py: Python<'_>, text: String, entry_json: String) -> PyResult<Vec<SpanTuple>> {
    py.detach(|| {
        let value: serde_yaml::Value =
            serde_yaml::from_str(&entry_json).context("the strategy's fields")?;
        let entry = evaluator::strategies::StrategyConfig::from_yaml(value).map_err(|e| {
            anyhow::anyhow!("strategy: {e} (each kind's fields: `chunkbench ls strategies`)")
        })?;
        let doc = chunker::Document::new("text", &text);
        let (chunks, _) = chunkbench::chunk_document(&entry, &doc)?;
        // Characters before each byte offset, counted once along the text.
        let mut out = Vec::with_capacity(chunks.len());
        for c in &chunks {
            let cs = text[..c.span.start].chars().count();
            let ce = cs + text[c.span.start..c.span.end].chars().count();
            out.push((c.span.start, c.span.end, cs, ce, c.words));
        }
        Ok(out)
    })
    .map_err(py_err)
}

/// Compares two runs as `chunkbench compare` does, writing compare.md, compare.json and
/// compare.html; returns `{markdown, regression, exit_code, regressions, cells, missing,
/// files}`.
#[pyfunction]
#[pyo3(signature = (baseline, candidate, store, max_accuracy_drop, max_words_increase, alpha=None, margin=None, require=None, pairs=Vec::new(), allow_missing=false, output=None, primary=None, resample=None, allow_rule_change=false))]
#[allow(clippy::too_many_arguments)]
fn compare<'py>(
    py: Python<'py>,
    baseline: PathBuf,
    candidate: PathBuf,
    store: PathBuf,
    max_accuracy_drop: f64,
    max_words_increase: f64,
    alpha: Option<f64>,
    margin: Option<f64>,
    require: Option<String>,
    pairs: Vec<(String, String)>,
    allow_missing: bool,
    output: Option<PathBuf>,
    primary: Option<String>,
    resample: Option<String>,
    allow_rule_change: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let o = py
        .detach(|| {
            let require = require
                .map(|r| {
                    serde_json::from_value::<chunkbench::compare::Requirement>(
                        serde_json::Value::String(r.clone()),
                    )
                    .map_err(|_| {
                        anyhow::anyhow!(
                            "require={r:?}: give \"non-inferior\", \"equivalent\" or \"superior\""
                        )
                    })
                })
                .transpose()?;
            let resample = resample
                .map(|r| {
                    serde_json::from_value::<chunkbench::compare::Resample>(
                        serde_json::Value::String(r.clone()),
                    )
                    .map_err(|_| {
                        anyhow::anyhow!(
                            "resample={r:?}: give \"question\", \"document\" or \"subject\""
                        )
                    })
                })
                .transpose()?;
            chunkbench::compare_runs(
                &baseline,
                &candidate,
                &chunkbench::compare::Tolerances {
                    max_accuracy_drop_pts: max_accuracy_drop,
                    max_words_increase_pct: max_words_increase,
                    alpha,
                    margin_pts: margin,
                    primary,
                    resample,
                    require,
                    allow_rule_change,
                },
                &chunkbench::compare::Pairing {
                    renames: pairs,
                    allow_missing,
                },
                output.as_deref(),
                &store,
            )
        })
        .map_err(py_err)?;
    let d = PyDict::new(py);
    d.set_item("markdown", &o.markdown)?;
    d.set_item("regression", o.regression)?;
    d.set_item("exit_code", o.exit_code())?;
    d.set_item("regressions", o.regressions)?;
    d.set_item("cells", o.cells)?;
    d.set_item("missing", o.missing)?;
    let files: Vec<String> = o.files.iter().map(|f| f.display().to_string()).collect();
    d.set_item("files", PyTuple::new(py, files)?)?;
    Ok(d)
}

/// `chunkbench data import ARGS…` (`args`: the name and the flags).
#[pyfunction]
fn data_import(py: Python<'_>, args: Vec<String>) -> PyResult<()> {
    py.detach(|| chunkbench::data_import(args)).map_err(py_err)
}

/// summary.csv's columns and types as a Parquet file of no rows (`records::summary_columns`,
/// the table the CSV is written from), so Python reads the CSV with the types Rust writes.
#[pyfunction]
fn summary_schema(py: Python<'_>) -> PyResult<Bound<'_, PyBytes>> {
    let bytes = records::table_parquet::<records::SummaryRow>(&records::summary_columns(), &[])
        .map_err(py_err)?;
    Ok(PyBytes::new(py, &bytes))
}

/// The module: the functions above and `ChunkbenchError`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ChunkbenchError", m.py().get_type::<ChunkbenchError>())?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(build_commit, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(chunk, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(data_import, m)?)?;
    m.add_function(wrap_pyfunction!(summary_schema, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // `compare`'s defaults, the command line's.
    m.add(
        "DEFAULT_MAX_ACCURACY_DROP_PTS",
        chunkbench::compare::DEFAULT_MAX_ACCURACY_DROP_PTS,
    )?;
    m.add(
        "DEFAULT_MAX_WORDS_INCREASE_PCT",
        chunkbench::compare::DEFAULT_MAX_WORDS_INCREASE_PCT,
    )?;
    m.add("DEFAULT_ALPHA", chunkbench::compare::DEFAULT_ALPHA)?;
    Ok(())
}
