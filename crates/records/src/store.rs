//! Finished cells on disk: reading one back checked against its checksums ([`read_cell`]),
//! refusing a run whose cells disagree on their inputs ([`check_consistent`]), cells and
//! side files not of the config, grouping, and the aggregates of a cell's rows
//! ([`summarize`], [`Comparison`]).

use crate::*;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Cells grouped by (dataset, reader), the unit of summary.md's tables, the plots and the
/// report's tables; groups in name order, cells in their given order.
pub fn by_dataset_reader<'a>(
    cells: impl IntoIterator<Item = &'a CellRecord>,
) -> std::collections::BTreeMap<(String, String), Vec<&'a CellRecord>> {
    let mut groups: std::collections::BTreeMap<(String, String), Vec<&CellRecord>> =
        std::collections::BTreeMap::new();
    for c in cells {
        groups
            .entry((c.cell.dataset.clone(), c.cell.reader.clone()))
            .or_default()
            .push(c);
    }
    groups
}

/// Ids of the finished cells (`ID.json`) in `cells_dir` that are not in `ids`, sorted.
pub fn foreign_cells(cells_dir: &Path, ids: &std::collections::BTreeSet<String>) -> Vec<String> {
    foreign_files(cells_dir, "json", ids)
        .iter()
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_string))
        .collect()
}

/// A finished cell as read back from `cells/`: its record and the exact bytes of its rows
/// file, which hash to the record's `rows_sha256`.
#[derive(Debug, Clone)]
pub struct StoredCell {
    /// The record (`cells/ID.json`).
    pub record: CellRecord,
    /// The rows (`cells/ID.csv`), verified.
    pub csv: Vec<u8>,
}

/// Why a stored cell cannot be used, for the messages of its readers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellProblem {
    /// `ID.json` does not exist (the cell never finished).
    Missing,
    /// The record or rows are unreadable, or disagree with each other or with the file name:
    /// what is wrong, naming the file.
    Damaged(String),
}

impl std::fmt::Display for CellProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CellProblem::Missing => f.write_str("the cell has not finished (no record)"),
            CellProblem::Damaged(m) => f.write_str(m),
        }
    }
}

/// Reads `cells_dir/ID.json` and `cells_dir/ID.csv` and checks them against each other: the
/// record's `id` is the file's, and the rows file's sha256 is the record's `rows_sha256` (a
/// record without one, from an older version, cannot be checked and is refused).
///
/// # Errors
/// [`CellProblem::Missing`] when the record does not exist; [`CellProblem::Damaged`] naming
/// the file and the mismatch otherwise.
pub fn read_cell(cells_dir: &Path, id: &str) -> std::result::Result<StoredCell, CellProblem> {
    let json = cells_dir.join(format!("{id}.json"));
    let csv_path = cells_dir.join(format!("{id}.csv"));
    let bytes = match std::fs::read(&json) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CellProblem::Missing),
        Err(e) => {
            return Err(CellProblem::Damaged(format!(
                "cannot read {}: {e}",
                json.display()
            )))
        }
    };
    let record: CellRecord = serde_json::from_slice(&bytes).map_err(|e| {
        CellProblem::Damaged(format!(
            "{}: not a chunkbench cell record ({e})",
            json.display()
        ))
    })?;
    if record.id != id {
        return Err(CellProblem::Damaged(format!(
            "{}: field `id` is {:?} but the file is named for cell {id} (renamed or edited)",
            json.display(),
            record.id
        )));
    }
    if record.record_sha256.is_empty() {
        return Err(CellProblem::Damaged(format!(
            "{} was written by an older chunkbench and holds no checksum of itself, so its \
             summary cannot be checked",
            json.display()
        )));
    }
    if !record_is_intact(&bytes, &record) {
        return Err(CellProblem::Damaged(format!(
            "{} is not the record chunkbench wrote (its record_sha256 does not match its \
             text): it was edited after the cell finished",
            json.display()
        )));
    }
    let csv = std::fs::read(&csv_path).map_err(|e| {
        CellProblem::Damaged(format!(
            "cannot read {} (the rows of {}): {e}",
            csv_path.display(),
            json.display()
        ))
    })?;
    if record.rows_sha256.is_empty() {
        return Err(CellProblem::Damaged(format!(
            "{} was written by an older chunkbench and holds no checksum of {}, so the rows \
             cannot be checked",
            json.display(),
            csv_path.display()
        )));
    }
    let sha = datasets::io::sha256_hex(&csv);
    if sha != record.rows_sha256 {
        return Err(CellProblem::Damaged(format!(
            "{} is not the file its record {} was written with (sha256 {}…, recorded {}…): \
             the rows were edited or torn after the cell finished",
            csv_path.display(),
            json.display(),
            &sha[..12],
            &record.rows_sha256[..record.rows_sha256.len().min(12)]
        )));
    }
    Ok(StoredCell { record, csv })
}

/// Where a cell record was read from, for [`check_consistent`]'s messages.
pub type Located<'a> = (&'a CellRecord, &'a Path);

/// Checks that the cells of one run were computed on one version of everything they share,
/// so that no comparison inside the run pairs results of two data versions, models or code
/// versions (a merge of shards run before and after an edit): all cells by the same code;
/// the cells of a dataset on one dataset manifest; and every input shared by cells that read
/// the same thing on one content — `dataset/…` per dataset, `strategy/…` per dataset ×
/// strategy, `reader/…` per reader, and the rest (`embedder/…`, `cost/…`) across the run.
///
/// # Errors
/// The first disagreement, naming both cells, where each was read from, both values and the
/// fix (re-run the out-of-date cells).
pub fn check_consistent(cells: &[Located<'_>]) -> Result<()> {
    use std::collections::BTreeMap;
    let fix = "re-run the cells computed on the old version (run the config again into one \
               directory, or re-run the shard), then assemble or merge again";
    let label = |(r, at): &Located<'_>| {
        format!(
            "cell {} ({} × {} × {} × k={} × {}, in {})",
            r.id,
            r.cell.dataset,
            r.cell.strategy,
            r.cell.retriever,
            r.cell.depth_label(),
            r.cell.reader,
            at.display()
        )
    };
    let mut seen: BTreeMap<(String, String), (String, usize)> = BTreeMap::new();
    for (i, c) in cells.iter().enumerate() {
        let r = c.0;
        let mut facts: Vec<((String, String), String)> = vec![
            (("code".into(), String::new()), r.code.clone()),
            (
                ("dataset manifest".into(), r.cell.dataset.clone()),
                r.dataset_manifest_sha256.clone(),
            ),
        ];
        for (k, v) in &r.inputs {
            let scope = if k.starts_with("dataset/") {
                r.cell.dataset.clone()
            } else if k.starts_with("strategy/") {
                format!("{} × {}", r.cell.dataset, r.cell.strategy)
            } else if k.starts_with("reader/") {
                r.cell.reader.clone()
            } else {
                String::new()
            };
            facts.push(((format!("input {k}"), scope), v.clone()));
        }
        for (key, value) in facts {
            match seen.get(&key) {
                None => {
                    seen.insert(key, (value, i));
                }
                Some((v0, j)) if *v0 != value => {
                    let what = if key.1.is_empty() {
                        key.0.clone()
                    } else {
                        format!("{} of `{}`", key.0, key.1)
                    };
                    anyhow::bail!(
                        "the run mixes two versions of its {what}: {} has {v0:?}, {} has \
                         {value:?}; {fix}",
                        label(&cells[*j]),
                        label(c)
                    );
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Files `ID.ext` in `dir` whose `ID` is not in `ids`, sorted (an unreadable `dir` has none).
pub fn foreign_files(
    dir: &Path,
    ext: &str,
    ids: &std::collections::BTreeSet<String>,
) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == ext)
                && p.file_stem()
                    .and_then(|s| s.to_str())
                    .is_some_and(|s| !ids.contains(s))
        })
        .collect();
    out.sort();
    out
}

/// Aggregates one cell's rows (means over questions; the interval is [`stats::wilson`]'s).
pub fn summarize(rows: &[QuestionRow]) -> CellSummary {
    let n = rows.len();
    let read = rows.iter().filter(|r| r.correct.is_some()).count();
    let correct = rows.iter().filter(|r| r.correct == Some(1)).count();
    // Rows are all read or all unread (a cell has a reader or not); accuracy is over the
    // read ones, and absent when there are none.
    let ci = stats::wilson(correct as u64, read as u64, stats::DEFAULT_CONFIDENCE);
    let words: Vec<f64> = rows.iter().map(|r| r.words as f64).collect();
    let mean = |f: &dyn Fn(&QuestionRow) -> f64| {
        if n == 0 {
            0.0
        } else {
            rows.iter().map(f).sum::<f64>() / n as f64
        }
    };
    let ev: Vec<u8> = rows.iter().filter_map(|r| r.evidence_hit).collect();
    let avg = |f: &dyn Fn(&QuestionRow) -> Option<f64>| {
        let xs: Vec<f64> = rows.iter().filter_map(f).collect();
        stats::mean(&xs)
    };
    let mut failures = std::collections::BTreeMap::new();
    for f in rows.iter().filter_map(|r| r.failure) {
        *failures.entry(f.as_str().to_string()).or_insert(0) += 1;
    }
    CellSummary {
        failures,
        records: RecordSummaries::of(rows),
        metrics: MetricMeans::of(rows),
        n,
        correct,
        accuracy: (read > 0).then(|| correct as f64 / read as f64),
        accuracy_ci_low: ci.map(|i| i.lower),
        accuracy_ci_high: ci.map(|i| i.upper),
        // An invalid answer is a full tie by construction; it is counted as invalid only.
        ties: rows.iter().filter(|r| r.tied > 1 && r.invalid == 0).count(),
        invalid: rows.iter().filter(|r| r.invalid == 1).count(),
        chars_mean: mean(&|r| r.chars as f64),
        tokens_mean: if rows.iter().all(|r| r.tokens.is_some()) {
            avg(&|r| r.tokens.map(|t| t as f64))
        } else {
            None
        },
        words_mean: mean(&|r| r.words as f64),
        words_median: stats::median(&words).unwrap_or(0.0),
        words_p95: stats::p95(&words).unwrap_or(0.0),
        unique_words_mean: mean(&|r| r.unique_words as f64),
        evidence_n: ev.len(),
        evidence_hit_rate: (!ev.is_empty())
            .then(|| ev.iter().map(|&h| h as f64).sum::<f64>() / ev.len() as f64),
        degenerate_passages: 0,
        degenerate_queries: 0,
    }
}

/// A cell compared with its baseline cell on the same questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline cell's id.
    pub baseline_cell_id: String,
    /// Accuracy delta, McNemar, bootstrap interval and minimum detectable effect.
    pub paired: stats::PairedComparison,
    /// Holm-adjusted p when accuracy is the run's primary metric (the planned family,
    /// [`Planned`]); `None` when accuracy is exploratory (a retrieval metric is primary).
    pub holm_p: Option<f64>,
    /// Reduction of mean words retrieved against the baseline, in % (positive = fewer words).
    pub words_reduction_pct: Option<f64>,
    /// Paired bootstrap 95 % interval of that reduction; None when the baseline retrieved
    /// no words for some question (the ratio is then undefined on some resamples).
    pub words_reduction_ci: Option<stats::Interval>,
}
