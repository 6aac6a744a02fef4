//! chunkbench's reporting: what a run writes and how it is read back.
//!
//! - [`records`]: the per-question rows, cell records and summaries, defined once (one column
//!   table for CSV and Parquet), and the cell as stored data ([`records::CellKey`]);
//! - [`inputs`]: the content identities a cell was computed on, and how two differ;
//! - [`stats`]: Wilson intervals, the paired bootstrap, McNemar, Holm, sign-flip permutation;
//! - [`report`]: `summary.md`, `summary.csv` and `chunk_stats.csv`;
//! - [`plots`]: the PNG/SVG figures of a run;
//! - [`explain`]: one question across a run's cells, as text;
//! - [`html`]: the self-contained `report.html` and `compare.html` (tables, inline plots, the
//!   per-question explorer);
//! - [`compare`]: two runs → the regression report and the CI verdict;
//! - [`fmt`]: how p-values, intervals, accuracies and tolerances print, for every writer.
//!
//! Nothing here depends on the pipeline (`evaluator`): the runner writes records through this
//! crate and calls its writers at the end of a run (docs/reference.md §1, stages "aggregate",
//! "report" and "compare -> CI gate").

#![warn(missing_docs)]

pub mod compare;
pub mod explain;
pub mod fmt;
pub mod html;
pub mod inputs;
pub mod md;
pub mod plots;
pub mod records;
pub mod report;
pub mod stats;

#[cfg(test)]
mod tests {
    // Every variant's strum name equals its serde name, so the two derives agree.
    use testkit::names_agree;

    #[test]
    fn enum_names_are_the_serde_names() {
        names_agree::<crate::records::Failure>();
        names_agree::<crate::compare::Verdict>();
    }
}
