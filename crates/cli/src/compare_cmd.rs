//! `chunkbench compare BASELINE CANDIDATE`: the regression gate (exit 1 on a regression).

use anyhow::Result;
use reporting::compare;
use std::path::{Path, PathBuf};

/// `compare` found a regression: the process exits with code 1 (unusable input exits 2).
#[derive(Debug)]
pub(crate) struct RegressionFound {
    /// Matched cells that regressed.
    regressions: usize,
    /// Matched cells.
    cells: usize,
    /// The Markdown report.
    report: PathBuf,
}

impl std::fmt::Display for RegressionFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "regression: {} of {} matched cells regressed; see {}",
            self.regressions,
            self.cells,
            self.report.display()
        )
    }
}

impl std::error::Error for RegressionFound {}

/// `chunkbench compare`: compares, writes compare.md, compare.json and compare.html, prints the Markdown,
/// and returns [`RegressionFound`] when a cell regressed.
pub(crate) fn compare_command(
    baseline: &Path,
    candidate: &Path,
    tolerances: &compare::Tolerances,
    output: Option<&Path>,
    store: &Path,
) -> Result<()> {
    let report = compare::compare_runs(
        baseline,
        candidate,
        tolerances,
        &evaluator::config::resolved_cell_ids,
    )?;
    let out = output.unwrap_or(candidate);
    let (md, json) = compare::write_report(out, &report)?;
    let html = reporting::html::write_compare_html(out, &report, baseline, candidate, store)?;
    outln!("{}", compare::render_markdown(&report));
    eprintln!(
        "-> {}  {}  {}",
        md.display(),
        json.display(),
        html.display()
    );
    if report.is_regression() {
        return Err(RegressionFound {
            regressions: report.regressions,
            cells: report.cells.len(),
            report: md,
        }
        .into());
    }
    Ok(())
}
