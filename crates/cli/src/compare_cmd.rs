//! `chunkbench compare BASELINE CANDIDATE`: the regression gate (exit 1 on a regression).

use anyhow::Result;
use reporting::compare;
use std::path::{Path, PathBuf};

/// `compare` found a regression: the process exits with code 1 (unusable input exits 2).
#[derive(Debug)]
pub(crate) struct RegressionFound {
    /// Compared cells that regressed.
    regressions: usize,
    /// Compared cells.
    cells: usize,
    /// Baseline cells without a partner (failing unless `--allow-missing`).
    missing: usize,
    /// The Markdown report.
    report: PathBuf,
}

impl std::fmt::Display for RegressionFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "regression: {} of {} compared cells regressed{}; see {}",
            self.regressions,
            self.cells,
            if self.missing > 0 {
                format!(
                    ", {} baseline cell(s) have no partner (--allow-missing to pass anyway)",
                    self.missing
                )
            } else {
                String::new()
            },
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
    pairing: &compare::Pairing,
    output: Option<&Path>,
    store: &Path,
) -> Result<()> {
    let report = compare::compare_runs(
        baseline,
        candidate,
        tolerances,
        pairing,
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
            missing: if report.allow_missing {
                0
            } else {
                report.missing
            },
            report: md,
        }
        .into());
    }
    Ok(())
}
