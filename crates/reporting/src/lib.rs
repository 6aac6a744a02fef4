//! chunkbench's reporting: reads a run's records (the `records` crate, which the pipeline
//! writes) and writes its reports, with the statistics of the `stats` crate.
//!
//! - [`report`]: `summary.md`, `summary.csv` and `chunk_stats.csv`;
//! - [`plots`]: the PNG/SVG figures of a run;
//! - [`explain`]: one question across a run's cells, as text;
//! - [`html`]: the self-contained `report.html` and `compare.html` (tables, inline plots, the
//!   per-question explorer);
//! - [`compare`]: two runs → the regression report and the CI verdict;
//! - [`fmt`]: how p-values, intervals, accuracies and tolerances print, for every writer.
//!
//! Nothing here depends on the pipeline (`evaluator`): the runner writes records through the
//! `records` crate and calls this crate's writers at the end of a run (docs/reference.md §1, stages "aggregate",
//! "report" and "compare -> CI gate").

#![warn(missing_docs)]

pub mod compare;
pub mod explain;
pub mod fmt;
pub mod html;
pub mod md;
pub mod plots;
pub mod report;
pub mod verdicts;

#[cfg(test)]
mod tests {
    // Every variant's strum name equals its serde name, so the two derives agree.
    use testkit::names_agree;

    #[test]
    fn enum_names_are_the_serde_names() {
        names_agree::<records::Failure>();
        names_agree::<crate::compare::Verdict>();
    }
}
