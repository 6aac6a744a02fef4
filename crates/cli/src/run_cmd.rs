//! `chunkbench run | merge | report | validate`: a config's sweep, shards merged, the report
//! page rebuilt, and a config checked without running it.

use anyhow::{bail, Context, Result};
use evaluator::{run, RunConfig};
use std::path::PathBuf;

/// `run CONFIG`: runs the sweep (or one shard of it) and prints summary.md.
///
/// # Errors
/// A bad config or input (exit 2), naming the file and the fix.
pub(crate) fn run_config(
    config: PathBuf,
    store: PathBuf,
    output: Option<PathBuf>,
    sets: Vec<String>,
    shard: Option<run::Shard>,
) -> Result<()> {
    let text = std::fs::read_to_string(&config)
        .with_context(|| format!("cannot read config {}", config.display()))?;
    let mut cfg = RunConfig::parse_with(&text, &config.display().to_string(), &sets)?;
    if let Some(o) = output {
        cfg.output = o;
    }
    let sharded = shard.is_some();
    let out = run::run(&cfg, &store, shard)?;
    outln!("{}", out.summary_md);
    if sharded {
        // The shard's line above says what it did; the run-level files come from `merge`.
        return Ok(());
    }
    outln!(
        "{} cells ({} reused from an earlier run) -> {}\n  report.html  per_question.csv  summary.csv  summary.md  manifest.json  cells/{}",
        out.cells.len(),
        out.reused,
        out.dir.display(),
        ignored_note(out.ignored)
    );
    Ok(())
}

/// `merge OUT SHARD…`: merges shard run directories into OUT.
///
/// # Errors
/// Shards of different configs or versions, or an OUT holding another run (without --force).
pub(crate) fn merge(out: PathBuf, shards: Vec<PathBuf>, force: bool, store: PathBuf) -> Result<()> {
    let (_, cells, md, ignored) = run::merge(&shards, &out, &store, force)?;
    outln!("{md}");
    outln!(
        "{} cells merged from {} shards -> {}{}",
        cells.len(),
        shards.len(),
        out.display(),
        ignored_note(ignored)
    );
    Ok(())
}

/// `report RUN`: writes report.html of a finished run again.
///
/// # Errors
/// A run directory that cannot be read.
pub(crate) fn report(run: PathBuf, store: PathBuf) -> Result<()> {
    let path = run::report(&run, &store)?;
    outln!("{}", path.display());
    Ok(())
}

/// `validate CONFIG`: every problem a run would fail on, at once, else the cells.
///
/// # Errors
/// The problems found.
pub(crate) fn validate(config: PathBuf, store: PathBuf, sets: Vec<String>) -> Result<()> {
    let text = std::fs::read_to_string(&config)
        .with_context(|| format!("cannot read config {}", config.display()))?;
    let cfg = RunConfig::parse_with(&text, &config.display().to_string(), &sets)?;
    let prepared = evaluator::preflight::prepare(&cfg, &store);
    let problems = prepared.problems;
    if !problems.is_empty() {
        bail!(
            "{}: {} problem{} a run would fail on:\n  - {}",
            config.display(),
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            problems.join("\n  - ")
        );
    }
    let cells = prepared.cells;
    outln!("{}: valid; {} cells", config.display(), cells.len());
    for c in cells {
        outln!(
            "  {}  {} × {} × {} × {} × {}",
            c.id(),
            c.dataset,
            c.strategy,
            c.retriever,
            c.depth_tag(),
            c.reader
        );
    }
    Ok(())
}

/// A line saying how many finished cells of other configs `cells/` holds (ignored, kept for
/// reuse) when there are some, else nothing.
fn ignored_note(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(
            "\n  {n} finished cell{} in cells/ not part of this config (from an earlier config) ignored; kept for reuse",
            if n == 1 { "" } else { "s" }
        )
    }
}
