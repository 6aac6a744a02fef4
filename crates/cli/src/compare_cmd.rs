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

/// What [`compare_runs`] wrote and found.
#[derive(Debug, Clone)]
pub struct CompareOutcome {
    /// compare.md rendered: the verdict table and the lost / gained questions.
    pub markdown: String,
    /// True when the gate fails (exit 1): a cell regressed, or a baseline cell has no partner
    /// without `allow_missing`.
    pub regression: bool,
    /// Compared cells that regressed.
    pub regressions: usize,
    /// Compared (paired) cells.
    pub cells: usize,
    /// Baseline cells without a partner in the candidate that fail the gate (0 with
    /// `allow_missing`, which lists them but passes).
    pub missing: usize,
    /// compare.md, compare.json and compare.html, in that order.
    pub files: [PathBuf; 3],
}

impl CompareOutcome {
    /// The gate's exit code: 1 on a regression, else 0 (unusable input is an error, exit 2).
    pub fn exit_code(&self) -> u8 {
        u8::from(self.regression)
    }
}

/// Compares `candidate` with `baseline` as `chunkbench compare` does and writes compare.md,
/// compare.json and compare.html into `output` (default: the candidate run directory),
/// printing nothing. The command line and the Python API's `compare` both call it.
///
/// # Errors
/// Unusable input (exit 2): a run directory that cannot be read, cells edited after they
/// finished, runs on two versions of a dataset, bad tolerances; naming the file and the fix.
pub fn compare_runs(
    baseline: &Path,
    candidate: &Path,
    tolerances: &compare::Tolerances,
    pairing: &compare::Pairing,
    output: Option<&Path>,
    store: &Path,
) -> Result<CompareOutcome> {
    let report = compare::compare_runs(
        baseline,
        candidate,
        tolerances,
        pairing,
        &evaluator::config::resolved_run,
    )?;
    let out = output.unwrap_or(candidate);
    let (md, json) = compare::write_report(out, &report)?;
    let html = reporting::html::write_compare_html(out, &report, baseline, candidate, store)?;
    Ok(CompareOutcome {
        markdown: compare::render_markdown(&report),
        regression: report.is_regression(),
        regressions: report.regressions,
        cells: report.cells.len(),
        missing: if report.allow_missing {
            0
        } else {
            report.missing
        },
        files: [md, json, html],
    })
}

/// `chunkbench compare`: compares ([`compare_runs`]), prints the Markdown, and returns
/// [`RegressionFound`] when a cell regressed.
pub(crate) fn compare_command(
    baseline: &Path,
    candidate: &Path,
    tolerances: &compare::Tolerances,
    pairing: &compare::Pairing,
    output: Option<&Path>,
    store: &Path,
) -> Result<()> {
    let o = compare_runs(baseline, candidate, tolerances, pairing, output, store)?;
    outln!("{}", o.markdown);
    let [md, json, html] = &o.files;
    eprintln!(
        "-> {}  {}  {}",
        md.display(),
        json.display(),
        html.display()
    );
    if o.regression {
        return Err(RegressionFound {
            regressions: o.regressions,
            cells: o.cells,
            missing: o.missing,
            report: md.clone(),
        }
        .into());
    }
    Ok(())
}
