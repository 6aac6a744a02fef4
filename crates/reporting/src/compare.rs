//! `chunkbench compare`: the regression gate between two runs (docs/reference.md §1, "compare -> CI
//! gate").
//!
//! Inputs are two run directories written by `chunkbench run` (or `merge`): a *baseline* and a
//! *candidate*. Each must hold `config.json` and `cells/ID.json` + `cells/ID.csv` for every
//! cell of that config. Nothing else is read, so a committed baseline needs only those files.
//! Exactly the cells of each run's own config are compared: a finished cell in `cells/` that
//! is not a cell of `config.json` (left by an earlier, edited config re-run into the same
//! directory) is ignored and counted in the report, never matched.
//!
//! # Matching and pairing
//! - Cells are matched by cell id ([`records::CellKey::id`], a hash of the resolved cell
//!   configuration: dataset, strategy and its parameters, retriever, k, reader, `limit`, seed).
//!   Where a run writes its output (`output` in `config.json`) is not part of the id, so absolute
//!   paths never break matching.
//! - Within a matched cell, questions are paired by `question_id`. Both cells must hold the
//!   same set of questions and must have been computed on the same dataset manifest (sha256);
//!   otherwise the input is unusable ([`compare_runs`] fails).
//! - A cell present in only one run is listed in the report (with the configuration fields
//!   that differ when the other run has a cell of the same name); it is not fatal unless no
//!   cell matches at all.
//!
//! # Figures per matched cell
//! Baseline and candidate accuracy with Wilson 95 % intervals ([`stats::wilson`]); Δ accuracy
//! in points (candidate − baseline) with a paired bootstrap 95 % interval; McNemar exact p on
//! the discordant pairs, Holm-adjusted over all matched cells ([`stats::holm`]); mean words
//! retrieved per question (with multiplicity) in each run, and the change in % with a paired
//! bootstrap 95 % interval ([`stats::bootstrap_relative_reduction`], sign flipped). The
//! bootstrap uses the cell's seed and the candidate run's `bootstrap_resamples`.
//!
//! # The rule
//! A matched cell is a **REGRESSION** when
//! - its accuracy drops by strictly more than `max_accuracy_drop_pts` points **and** its
//!   Holm-adjusted McNemar exact p is strictly below `alpha`, or
//! - its mean words retrieved grow by strictly more than `max_words_increase_pct` percent (a
//!   baseline that retrieved no words and a candidate that retrieved some is an unbounded
//!   increase).
//!
//! A drop or an increase of exactly the tolerance passes. Improvements never regress. The run
//! regresses when any matched cell does. Defaults: 1.0 point, 5 %, α = 0.05
//! ([`Tolerances::default`]). The comparisons are made on integer counts, with each
//! tolerance read as the decimal it is written as (`2.3` = 23/10), in integer arithmetic
//! ([`judge`]), so the boundary is exact.

use crate::md::{Code, Text};
use anyhow::{bail, Context, Result};
use datasets::io::{write_atomic, write_json};
use records::CellRecord;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Default largest accuracy drop that passes, in percentage points.
pub const DEFAULT_MAX_ACCURACY_DROP_PTS: f64 = 1.0;
/// Default largest increase of mean words retrieved that passes, in percent.
pub const DEFAULT_MAX_WORDS_INCREASE_PCT: f64 = 5.0;
/// Default significance level for the Holm-adjusted McNemar exact p.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Name of the Markdown report written by [`write_report`].
pub const REPORT_MD: &str = "compare.md";
/// Name of the JSON report written by [`write_report`].
pub const REPORT_JSON: &str = "compare.json";

/// The tolerances of the gate (see the module documentation for the rule).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerances {
    /// Largest accuracy drop that passes, in percentage points (≥ 0).
    pub max_accuracy_drop_pts: f64,
    /// Largest increase of mean words retrieved that passes, in percent (≥ 0).
    pub max_words_increase_pct: f64,
    /// Significance level for the Holm-adjusted McNemar exact p, in (0, 1].
    pub alpha: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            max_accuracy_drop_pts: DEFAULT_MAX_ACCURACY_DROP_PTS,
            max_words_increase_pct: DEFAULT_MAX_WORDS_INCREASE_PCT,
            alpha: DEFAULT_ALPHA,
        }
    }
}

impl Tolerances {
    /// Checks that the tolerances are finite and in range.
    ///
    /// # Errors
    /// Names the flag (`--max-accuracy-drop`, `--max-words-increase`, `--alpha`) and its range.
    pub fn validate(&self) -> Result<()> {
        if !(self.max_accuracy_drop_pts.is_finite() && self.max_accuracy_drop_pts >= 0.0) {
            bail!(
                "--max-accuracy-drop {}: give a number of points >= 0, e.g. 1.0",
                self.max_accuracy_drop_pts
            );
        }
        if !(self.max_words_increase_pct.is_finite() && self.max_words_increase_pct >= 0.0) {
            bail!(
                "--max-words-increase {}: give a percentage >= 0, e.g. 5",
                self.max_words_increase_pct
            );
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            bail!(
                "--alpha {}: give a significance level in (0, 1], e.g. 0.05",
                self.alpha
            );
        }
        Ok(())
    }

    /// The rule in one sentence, with these tolerances filled in (used in both reports).
    pub fn rule(&self) -> String {
        format!(
            "a cell regresses when its accuracy drops by more than {} points and its \
             Holm-adjusted McNemar exact p is below {}, or when its mean words retrieved grow \
             by more than {} %; a change of exactly the tolerance passes",
            crate::fmt::tolerance(self.max_accuracy_drop_pts),
            self.alpha,
            crate::fmt::tolerance(self.max_words_increase_pct)
        )
    }
}

/// The integer counts and the adjusted p-value of one matched cell that the rule looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateFigures {
    /// Paired questions.
    pub n: u64,
    /// Questions the baseline answered correctly.
    pub baseline_correct: u64,
    /// Questions the candidate answered correctly.
    pub candidate_correct: u64,
    /// Holm-adjusted McNemar exact p of the cell, in [0, 1].
    pub holm_p: f64,
    /// Words retrieved by the baseline, summed over the paired questions.
    pub baseline_words: u64,
    /// Words retrieved by the candidate, summed over the paired questions.
    pub candidate_words: u64,
}

/// What the rule decided for one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    /// The accuracy drop exceeds the tolerance and is significant after Holm.
    pub accuracy: bool,
    /// The mean words retrieved grew by more than the tolerance.
    pub words: bool,
}

impl Judgement {
    /// True when either criterion fired.
    pub fn is_regression(&self) -> bool {
        self.accuracy || self.words
    }
}

/// Applies the rule of the module documentation to one cell.
///
/// The comparisons are exact on the counts: the accuracy criterion is
/// `100·(baseline_correct − candidate_correct) > max_accuracy_drop_pts · n` and
/// `holm_p < alpha`; the words criterion is
/// `100·candidate_words > (100 + max_words_increase_pct) · baseline_words` (the means share the
/// denominator n, so this is the increase of the mean in %). With `baseline_words = 0` any
/// candidate words count as an increase beyond every tolerance.
///
/// The tolerances are read as the decimals they print as ([`exact_decimal`]: `2.3` is 23/10,
/// not the binary fraction nearest to it), so a drop of exactly 69 of 3000 questions passes
/// `max_accuracy_drop_pts = 2.3`, and every product is an integer (`u128`).
pub fn judge(f: &GateFigures, tol: &Tolerances) -> Judgement {
    let drop_q = f.baseline_correct.saturating_sub(f.candidate_correct);
    let accuracy = exceeds(
        100 * u128::from(drop_q),
        tol.max_accuracy_drop_pts,
        0,
        u128::from(f.n),
    ) && f.holm_p < tol.alpha;
    let words = if f.baseline_words == 0 {
        f.candidate_words > 0
    } else {
        // 100·cw > (100 + tol)·bw  ⇔  100·cw − 100·bw > tol·bw
        let (cw, bw) = (u128::from(f.candidate_words), u128::from(f.baseline_words));
        cw > bw && exceeds(100 * (cw - bw), tol.max_words_increase_pct, 0, bw)
    };
    Judgement { accuracy, words }
}

/// Whether `lhs > (tol + offset) · factor`, exactly, with `tol` read as its shortest decimal
/// form ([`exact_decimal`]). A tolerance beyond `u128` arithmetic (more than about 30 digits)
/// is compared in `f64`.
fn exceeds(lhs: u128, tol: f64, offset: u128, factor: u128) -> bool {
    let exact = exact_decimal(tol).and_then(|(num, scale)| {
        let pow = 10u128.checked_pow(scale)?;
        let left = lhs.checked_mul(pow)?;
        let right = offset
            .checked_mul(pow)?
            .checked_add(num)?
            .checked_mul(factor)?;
        Some(left > right)
    });
    exact.unwrap_or(lhs as f64 > (tol + offset as f64) * factor as f64)
}

/// A finite, non-negative `x` as the fraction `num / 10^scale` of its shortest decimal form
/// (Rust's `Display` for `f64` prints the shortest decimal that reads back as `x`, which for a
/// value typed as a decimal of up to 15 significant digits is that decimal): `2.3` → (23, 1),
/// `5` → (5, 0), `0.05` → (5, 2). `None` for negative or non-finite values and for decimals
/// whose digits do not fit in a `u128`.
pub fn exact_decimal(x: f64) -> Option<(u128, u32)> {
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    let s = format!("{x}");
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    let num: u128 = format!("{int}{frac}").parse().ok()?;
    Some((num, u32::try_from(frac.len()).ok()?))
}

/// One per-question row as the gate reads it from `cells/ID.csv` (other columns are ignored,
/// so a baseline stays readable when rows gain columns).
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct GateRow {
    cell_id: String,
    question_id: String,
    correct: u8,
    words: u64,
    /// Absent in rows written before readers flagged invalid answers.
    #[serde(default)]
    invalid: u8,
}

/// One finished cell of a run: its record and its rows.
#[derive(Debug, Clone)]
struct RunCell {
    record: CellRecord,
    rows: Vec<GateRow>,
}

/// A run directory as the gate reads it.
#[derive(Debug, Clone)]
struct LoadedRun {
    /// The run's `name` from config.json.
    name: String,
    /// `bootstrap_resamples` from config.json (the default when absent).
    resamples: usize,
    /// Cells by id: exactly the cells of the run's config.
    cells: BTreeMap<String, RunCell>,
    /// Finished cells in `cells/` that are not cells of the run's config.
    ignored: usize,
}

/// The ids of the cells of a resolved configuration, from the bytes of a run's `config.json`
/// (the pipeline's `evaluator::config::resolved_cell_ids`). An error means the file is not a
/// resolved config of this version.
pub type CellIds = dyn Fn(&[u8]) -> Result<std::collections::BTreeSet<String>>;

/// Reads `dir/config.json` and every `dir/cells/ID.{json,csv}`.
fn load_run(dir: &Path, role: &str, cell_ids: &CellIds) -> Result<LoadedRun> {
    let fix = "give the directory `chunkbench run` wrote (OUTPUT/NAME, holding config.json and \
               cells/)";
    if !dir.is_dir() {
        bail!(
            "{role} run {} does not exist or is not a directory; {fix}",
            dir.display()
        );
    }
    let cfg_path = dir.join("config.json");
    let cfg_bytes = std::fs::read(&cfg_path).with_context(|| {
        format!(
            "{role} run {}: cannot read {}; {fix}",
            dir.display(),
            cfg_path.display()
        )
    })?;
    let cfg: serde_json::Value = serde_json::from_slice(&cfg_bytes).with_context(|| {
        format!(
            "{}: not JSON; it should be the config.json `chunkbench run` writes (re-run to \
             rewrite it)",
            cfg_path.display()
        )
    })?;
    let name = cfg
        .get("name")
        .and_then(|v| v.as_str())
        .with_context(|| {
            format!(
                "{}: field `name` is missing; this is not a chunkbench run config",
                cfg_path.display()
            )
        })?
        .to_string();
    let resamples = match cfg.get("bootstrap_resamples") {
        None => stats::DEFAULT_RESAMPLES,
        Some(v) => v
            .as_u64()
            .filter(|&n| n > 0)
            .and_then(|n| usize::try_from(n).ok())
            .with_context(|| {
                format!(
                    "{}: field `bootstrap_resamples` is {v}; it must be a positive integer",
                    cfg_path.display()
                )
            })?,
    };
    let cells_dir = dir.join("cells");
    if !cells_dir.is_dir() {
        bail!(
            "{role} run {}: cannot read {}; {fix}",
            dir.display(),
            cells_dir.display()
        );
    }
    let ids = cell_ids(&cfg_bytes).with_context(|| {
        format!(
            "{}: not the resolved config `chunkbench run` writes (perhaps from an older \
             version); re-run the config, or regenerate the baseline with \
             scripts/update-baseline.sh",
            cfg_path.display()
        )
    })?;
    let ignored = records::foreign_cells(&cells_dir, &ids).len();
    let mut cells = BTreeMap::new();
    for id in ids {
        // A cell of the config that is not finished is reported as unmatched (the other run
        // has it, this one does not), not fatal.
        if !cells_dir.join(format!("{id}.json")).exists() {
            continue;
        }
        let cell = load_cell(&cells_dir, &id)?;
        cells.insert(id, cell);
    }
    let located: Vec<records::Located<'_>> = cells
        .values()
        .map(|c: &RunCell| (&c.record, cells_dir.as_path()))
        .collect();
    records::check_consistent(&located).with_context(|| format!("{role} run {}", dir.display()))?;
    if cells.is_empty() {
        bail!(
            "{role} run {}: {} holds no finished cell (no ID.json); run it to completion, or \
             {fix}",
            dir.display(),
            cells_dir.display()
        );
    }
    Ok(LoadedRun {
        name,
        resamples,
        cells,
        ignored,
    })
}

/// Reads one cell's record and rows ([`records::read_cell`]: the rows must be the file
/// the record was written with) and checks that they agree with each other.
fn load_cell(cells_dir: &Path, id: &str) -> Result<RunCell> {
    let json = cells_dir.join(format!("{id}.json"));
    let csv_path = cells_dir.join(format!("{id}.csv"));
    let rerun = "delete the cell's two files and run the config again to recompute it";
    let stored = records::read_cell(cells_dir, id).map_err(|e| anyhow::anyhow!("{e}; {rerun}"))?;
    let (record, bytes) = (stored.record, stored.csv);
    if record.summary.accuracy.is_none() && record.summary.n > 0 {
        bail!(
            "{}: cell {id} ({} × {} × k={} on {}) has no reader (`kind: none`), so it has no \
             accuracy to gate; `compare` gates read cells (accuracy and words). Compare \
             retrieval-only runs through summary.md's \"Retrieval against the baseline\" \
             section and retrieval_comparisons.csv, or add a reader to the config",
            json.display(),
            record.cell.strategy,
            record.cell.retriever,
            record.cell.k,
            record.cell.dataset
        );
    }
    let mut rows = Vec::new();
    for (i, r) in csv::Reader::from_reader(&bytes[..])
        .deserialize::<GateRow>()
        .enumerate()
    {
        let row = r.with_context(|| {
            format!(
                "{}: row {}: needs columns cell_id, question_id, correct (0 or 1) and words; \
                 {rerun}",
                csv_path.display(),
                i + 1
            )
        })?;
        if row.cell_id != id || row.correct > 1 {
            bail!(
                "{}: row {} (question {}): cell_id {:?}, correct {}; expected cell_id {id:?} \
                 and correct 0 or 1; {rerun}",
                csv_path.display(),
                i + 1,
                row.question_id,
                row.cell_id,
                row.correct
            );
        }
        rows.push(row);
    }
    if rows.is_empty() {
        bail!("{}: the cell has no questions; {rerun}", csv_path.display());
    }
    let mut seen = HashSet::new();
    if let Some(dup) = rows.iter().find(|r| !seen.insert(r.question_id.as_str())) {
        bail!(
            "{}: question {} appears twice; {rerun}",
            csv_path.display(),
            dup.question_id
        );
    }
    // The record's summary was computed from exactly these rows when the cell finished.
    let s = &record.summary;
    let correct = rows.iter().filter(|r| r.correct == 1).count();
    let words_mean = rows.iter().map(|r| r.words as f64).sum::<f64>() / rows.len() as f64;
    if s.n != rows.len()
        || s.correct != correct
        || (s.words_mean - words_mean).abs() > 1e-9 * words_mean.abs().max(1.0)
    {
        bail!(
            "{} and {} disagree: the record says n = {}, correct = {}, mean words {:.3}; the \
             rows give n = {}, correct = {correct}, mean words {words_mean:.3} (one of them was \
             edited or torn); {rerun}",
            json.display(),
            csv_path.display(),
            s.n,
            s.correct,
            s.words_mean,
            rows.len()
        );
    }
    Ok(RunCell { record, rows })
}

/// Accuracy of one side of a matched cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SideAccuracy {
    /// Questions answered correctly.
    pub correct: u64,
    /// `correct / n`, a proportion in [0, 1].
    pub accuracy: f64,
    /// Wilson 95 % interval of the accuracy (proportions).
    pub accuracy_ci: stats::Interval,
    /// Mean words retrieved per question, with multiplicity.
    pub words_mean: f64,
}

/// Pass or regression.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
pub enum Verdict {
    /// Within the tolerances.
    #[serde(rename = "ok")]
    #[strum(serialize = "ok")]
    Ok,
    /// Beyond a tolerance (see the module documentation).
    #[serde(rename = "REGRESSION")]
    #[strum(serialize = "REGRESSION")]
    Regression,
}

impl Verdict {
    /// `ok` or `REGRESSION`, as written in the reports.
    pub fn as_str(&self) -> &'static str {
        (*self).into()
    }
}

/// One matched cell, baseline against candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellComparison {
    /// The cell id, the same in both runs.
    pub cell_id: String,
    /// Dataset name.
    pub dataset: String,
    /// Strategy name.
    pub strategy: String,
    /// Retriever name.
    pub retriever: String,
    /// Top-k.
    pub k: usize,
    /// Reader name.
    pub reader: String,
    /// sha256 of the dataset manifest both cells were computed on.
    pub dataset_manifest_sha256: String,
    /// Paired questions.
    pub n: usize,
    /// Invalid answers (replies the reader could not read as an answer) in the baseline and
    /// the candidate cell; they count as wrong in both.
    #[serde(default)]
    pub invalid: (u64, u64),
    /// Inputs whose content differs between the two cells (e.g. `embedder/model.safetensors
    /// changed …`): what the candidate was computed on that the baseline was not.
    #[serde(default)]
    pub inputs_differ: Vec<String>,
    /// The baseline run's figures.
    pub baseline: SideAccuracy,
    /// The candidate run's figures.
    pub candidate: SideAccuracy,
    /// Candidate minus baseline accuracy, in percentage points.
    pub delta_points: f64,
    /// Paired bootstrap 95 % interval of `delta_points` (None for a single question).
    pub delta_ci: Option<stats::Interval>,
    /// McNemar on the discordant pairs: `b` = questions lost (baseline right, candidate
    /// wrong), `c` = questions gained.
    pub mcnemar: stats::McNemar,
    /// McNemar exact p, Holm-adjusted over all matched cells.
    pub holm_p: f64,
    /// Change of mean words retrieved, candidate against baseline, in % (positive = more
    /// words); None when the baseline retrieved no words.
    pub words_change_pct: Option<f64>,
    /// Paired bootstrap 95 % interval of `words_change_pct`; None when some baseline question
    /// retrieved no words (the ratio is then undefined on some resamples).
    pub words_change_ci: Option<stats::Interval>,
    /// What each criterion of the rule decided.
    pub judgement: Judgement,
    /// `ok` or `REGRESSION`.
    pub verdict: Verdict,
    /// Why the cell regressed, one sentence per criterion that fired (empty when ok).
    pub reasons: Vec<String>,
}

/// A cell present in only one of the two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnmatchedCell {
    /// The cell id.
    pub cell_id: String,
    /// Dataset name.
    pub dataset: String,
    /// Strategy name.
    pub strategy: String,
    /// Retriever name.
    pub retriever: String,
    /// Top-k.
    pub k: usize,
    /// Reader name.
    pub reader: String,
    /// Configuration fields that differ from the other run's cell of the same dataset,
    /// strategy, retriever, k and reader (e.g. `limit`, `strategy_config.size`); empty when
    /// the other run has no cell of that name.
    pub differs_in: Vec<String>,
}

/// The whole comparison: what `compare.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    /// The baseline run directory, as given.
    pub baseline: String,
    /// The candidate run directory, as given.
    pub candidate: String,
    /// The baseline run's name.
    pub baseline_name: String,
    /// The candidate run's name.
    pub candidate_name: String,
    /// The tolerances applied.
    pub tolerances: Tolerances,
    /// The rule in words.
    pub rule: String,
    /// Bootstrap resamples of the intervals (from the candidate's config).
    pub bootstrap_resamples: usize,
    /// `ok` when no matched cell regressed, else `REGRESSION`.
    pub verdict: Verdict,
    /// Matched cells that regressed.
    pub regressions: usize,
    /// Matched cells, ordered by dataset, strategy, retriever, k, reader.
    pub cells: Vec<CellComparison>,
    /// Cells only the baseline has.
    pub only_in_baseline: Vec<UnmatchedCell>,
    /// Cells only the candidate has.
    pub only_in_candidate: Vec<UnmatchedCell>,
    /// Finished cells in the baseline's `cells/` that are not cells of its config (ignored).
    #[serde(default)]
    pub ignored_baseline_cells: usize,
    /// Finished cells in the candidate's `cells/` that are not cells of its config (ignored).
    #[serde(default)]
    pub ignored_candidate_cells: usize,
}

impl CompareReport {
    /// True when some matched cell regressed.
    pub fn is_regression(&self) -> bool {
        self.verdict == Verdict::Regression
    }
}

/// Sort key and label of a cell: dataset, strategy, retriever, k, reader.
fn label_key(r: &CellRecord) -> (String, String, String, usize, String) {
    let c = &r.cell;
    (
        c.dataset.clone(),
        c.strategy.clone(),
        c.retriever.clone(),
        c.k,
        c.reader.clone(),
    )
}

fn label(r: &CellRecord) -> String {
    let c = &r.cell;
    format!(
        "{} × {} × {} × k={} × {}",
        c.dataset, c.strategy, c.retriever, c.k, c.reader
    )
}

/// Dotted paths of the leaves where two JSON values differ.
fn json_diff(a: &serde_json::Value, b: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => json_diff(u, v, &path, out),
                    _ => out.push(path),
                }
            }
        }
        _ if a != b => out.push(prefix.to_string()),
        _ => {}
    }
}

fn unmatched(rec: &CellRecord, other: &LoadedRun) -> UnmatchedCell {
    let key = label_key(rec);
    let mut differs_in = Vec::new();
    if let Some(o) = other.cells.values().find(|o| label_key(&o.record) == key) {
        let a = serde_json::to_value(&rec.cell).unwrap_or_default();
        let b = serde_json::to_value(&o.record.cell).unwrap_or_default();
        json_diff(&a, &b, "", &mut differs_in);
    }
    let c = &rec.cell;
    UnmatchedCell {
        cell_id: rec.id.clone(),
        dataset: c.dataset.clone(),
        strategy: c.strategy.clone(),
        retriever: c.retriever.clone(),
        k: c.k,
        reader: c.reader.clone(),
        differs_in,
    }
}

/// A matched cell before the Holm step.
struct Paired {
    base: RunCell,
    cand: RunCell,
    base_correct: Vec<bool>,
    cand_correct: Vec<bool>,
    base_words: Vec<f64>,
    cand_words: Vec<f64>,
}

/// Pairs the questions of a matched cell by question id (in the baseline's row order).
fn pair(base: &RunCell, cand: &RunCell, bdir: &Path, cdir: &Path) -> Result<Paired> {
    let id = &base.record.id;
    if base.record.dataset_manifest_sha256 != cand.record.dataset_manifest_sha256 {
        bail!(
            "cell {id} ({}) was computed on different datasets: dataset manifest sha256 {} in \
             {} but {} in {}; compare runs made on the same converted data (`chunkbench data \
             fetch` with the same pinned sources and seed), or regenerate the baseline with \
             scripts/update-baseline.sh",
            label(&base.record),
            base.record.dataset_manifest_sha256,
            bdir.join("cells").join(format!("{id}.json")).display(),
            cand.record.dataset_manifest_sha256,
            cdir.join("cells").join(format!("{id}.json")).display()
        );
    }
    let by_q: HashMap<&str, &GateRow> = cand
        .rows
        .iter()
        .map(|r| (r.question_id.as_str(), r))
        .collect();
    let base_ids: HashSet<&str> = base.rows.iter().map(|r| r.question_id.as_str()).collect();
    let missing: Vec<&str> = base
        .rows
        .iter()
        .map(|r| r.question_id.as_str())
        .filter(|q| !by_q.contains_key(q))
        .collect();
    let extra: Vec<&str> = cand
        .rows
        .iter()
        .map(|r| r.question_id.as_str())
        .filter(|q| !base_ids.contains(q))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        let few = |v: &[&str]| {
            let mut s = v.iter().take(3).copied().collect::<Vec<_>>().join(", ");
            if v.len() > 3 {
                s.push_str(", …");
            }
            s
        };
        bail!(
            "cell {id} ({}) holds different questions in the two runs: {} only in {} [{}], {} \
             only in {} [{}]; both runs must answer the same questions (same dataset and \
             `limit`)",
            label(&base.record),
            missing.len(),
            bdir.join("cells").join(format!("{id}.csv")).display(),
            few(&missing),
            extra.len(),
            cdir.join("cells").join(format!("{id}.csv")).display(),
            few(&extra)
        );
    }
    let mut p = Paired {
        base: base.clone(),
        cand: cand.clone(),
        base_correct: Vec::with_capacity(base.rows.len()),
        cand_correct: Vec::with_capacity(base.rows.len()),
        base_words: Vec::with_capacity(base.rows.len()),
        cand_words: Vec::with_capacity(base.rows.len()),
    };
    for b in &base.rows {
        let c = by_q[b.question_id.as_str()];
        p.base_correct.push(b.correct == 1);
        p.cand_correct.push(c.correct == 1);
        p.base_words.push(b.words as f64);
        p.cand_words.push(c.words as f64);
    }
    Ok(p)
}

/// Compares the candidate run in `candidate` with the baseline run in `baseline` under `tol`
/// (see the module documentation for matching, figures and the rule). `cell_ids` lists the
/// cells of a run's resolved config (the pipeline's `evaluator::config::resolved_cell_ids`):
/// a config cell without a finished record is unmatched, a record of another config ignored.
///
/// # Errors
/// Unusable input, each naming the path and the fix: invalid tolerances; a run directory that
/// is missing or lacks `config.json` or finished cells; unreadable or inconsistent cell files;
/// no cell id in common (the message lists which configuration fields differ); a matched cell
/// computed on a different dataset manifest or on a different set of questions.
pub fn compare_runs(
    baseline: &Path,
    candidate: &Path,
    tol: &Tolerances,
    cell_ids: &CellIds,
) -> Result<CompareReport> {
    tol.validate()?;
    let base = load_run(baseline, "baseline", cell_ids)?;
    let cand = load_run(candidate, "candidate", cell_ids)?;
    let mut order: Vec<&RunCell> = cand
        .cells
        .values()
        .filter(|c| base.cells.contains_key(&c.record.id))
        .collect();
    order.sort_by_key(|c| (label_key(&c.record), c.record.id.clone()));
    let sorted_unmatched = |from: &LoadedRun, other: &LoadedRun| {
        let mut v: Vec<&CellRecord> = from
            .cells
            .values()
            .map(|c| &c.record)
            .filter(|r| !other.cells.contains_key(&r.id))
            .collect();
        v.sort_by_key(|r| (label_key(r), r.id.clone()));
        v.into_iter()
            .map(|r| unmatched(r, other))
            .collect::<Vec<_>>()
    };
    let only_in_baseline = sorted_unmatched(&base, &cand);
    let only_in_candidate = sorted_unmatched(&cand, &base);
    if order.is_empty() {
        let mut why = String::new();
        for u in only_in_candidate
            .iter()
            .filter(|u| !u.differs_in.is_empty())
        {
            let _ = write!(
                why,
                "\n  {} × {} × {} × k={} × {}: configuration differs in {}",
                u.dataset,
                u.strategy,
                u.retriever,
                u.k,
                u.reader,
                u.differs_in.join(", ")
            );
        }
        if why.is_empty() {
            why =
                "\n  no cell of the same dataset, strategy, retriever, k and reader either".into();
        }
        bail!(
            "the runs have no cell in common ({} cells in {}, {} in {}); cells match by the \
             hash of their resolved configuration:{why}\nrun the candidate with the baseline's \
             config (including `limit` and `seed`), or regenerate the baseline with \
             scripts/update-baseline.sh",
            base.cells.len(),
            baseline.display(),
            cand.cells.len(),
            candidate.display()
        );
    }
    let paired: Vec<Paired> = order
        .iter()
        .map(|c| pair(&base.cells[&c.record.id], c, baseline, candidate))
        .collect::<Result<_>>()?;
    let resamples = cand.resamples;
    let mut stats_out = Vec::with_capacity(paired.len());
    for p in &paired {
        let seed = p.cand.record.cell.seed;
        let pc = stats::PairedComparison::new(&p.base_correct, &p.cand_correct, seed, resamples)
            .with_context(|| format!("cell {}", p.base.record.id))?;
        let base_sum: f64 = p.base_words.iter().sum();
        let cand_sum: f64 = p.cand_words.iter().sum();
        let words_change_pct = (base_sum > 0.0).then(|| 0.0 + 100.0 * (cand_sum / base_sum - 1.0));
        let words_change_ci = if p.base_words.iter().all(|&w| w > 0.0) {
            let conf = stats::BootstrapConfig {
                resamples,
                confidence: stats::DEFAULT_CONFIDENCE,
                seed,
            };
            stats::bootstrap_relative_reduction(&p.base_words, &p.cand_words, &conf)
                .with_context(|| format!("cell {}", p.base.record.id))?
                .interval
                .map(|i| stats::Interval {
                    lower: 0.0 - i.upper,
                    upper: 0.0 - i.lower,
                })
        } else {
            None
        };
        stats_out.push((pc, words_change_pct, words_change_ci, base_sum, cand_sum));
    }
    let ps: Vec<f64> = stats_out.iter().map(|s| s.0.mcnemar.exact_p).collect();
    let holm = stats::holm(&ps).context("Holm adjustment of the McNemar p-values")?;
    let mut cells = Vec::with_capacity(paired.len());
    for ((p, (pc, wpct, wci, base_sum, cand_sum)), holm_p) in paired.iter().zip(stats_out).zip(holm)
    {
        let n = p.base_correct.len();
        let side = |correct: u64, ci: stats::Interval, sum: f64| SideAccuracy {
            correct,
            accuracy: correct as f64 / n as f64,
            accuracy_ci: ci,
            words_mean: sum / n as f64,
        };
        let figures = GateFigures {
            n: n as u64,
            baseline_correct: pc.baseline_correct,
            candidate_correct: pc.candidate_correct,
            holm_p,
            baseline_words: base_sum as u64,
            candidate_words: cand_sum as u64,
        };
        let judgement = judge(&figures, tol);
        let mut reasons = Vec::new();
        if judgement.accuracy {
            reasons.push(format!(
                "accuracy {:+.1} points (a drop of more than {}) with Holm p {} (below {})",
                pc.delta_points,
                crate::fmt::tolerance(tol.max_accuracy_drop_pts),
                crate::fmt::p_value(holm_p),
                tol.alpha
            ));
        }
        if judgement.words {
            reasons.push(match wpct {
                Some(w) => format!(
                    "mean words retrieved {w:+.1} % (more than +{} %)",
                    crate::fmt::tolerance(tol.max_words_increase_pct)
                ),
                None => "words retrieved where the baseline retrieved none".to_string(),
            });
        }
        let c = &p.cand.record.cell;
        cells.push(CellComparison {
            cell_id: p.cand.record.id.clone(),
            dataset: c.dataset.clone(),
            strategy: c.strategy.clone(),
            retriever: c.retriever.clone(),
            k: c.k,
            reader: c.reader.clone(),
            dataset_manifest_sha256: p.cand.record.dataset_manifest_sha256.clone(),
            n,
            invalid: (
                p.base.rows.iter().filter(|r| r.invalid == 1).count() as u64,
                p.cand.rows.iter().filter(|r| r.invalid == 1).count() as u64,
            ),
            inputs_differ: if p.base.record.inputs.is_empty() {
                Vec::new()
            } else {
                records::inputs::changed(&p.base.record.inputs, &p.cand.record.inputs)
            },
            baseline: side(pc.baseline_correct, pc.baseline_wilson, base_sum),
            candidate: side(pc.candidate_correct, pc.candidate_wilson, cand_sum),
            delta_points: 0.0 + pc.delta_points,
            delta_ci: pc.delta_ci,
            mcnemar: pc.mcnemar,
            holm_p,
            words_change_pct: wpct,
            words_change_ci: wci,
            judgement,
            verdict: if judgement.is_regression() {
                Verdict::Regression
            } else {
                Verdict::Ok
            },
            reasons,
        });
    }
    let regressions = cells
        .iter()
        .filter(|c| c.verdict == Verdict::Regression)
        .count();
    Ok(CompareReport {
        baseline: baseline.display().to_string(),
        candidate: candidate.display().to_string(),
        baseline_name: base.name,
        candidate_name: cand.name,
        tolerances: *tol,
        rule: tol.rule(),
        bootstrap_resamples: resamples,
        verdict: if regressions > 0 {
            Verdict::Regression
        } else {
            Verdict::Ok
        },
        regressions,
        cells,
        only_in_baseline,
        only_in_candidate,
        ignored_baseline_cells: base.ignored,
        ignored_candidate_cells: cand.ignored,
    })
}

/// Renders the report as GitHub-flavoured Markdown, ready to post as a pull-request comment:
/// a headline with the verdict, one table row per matched cell, the verdict line with the
/// reasons, the rule, and the unmatched cells.
pub fn render_markdown(r: &CompareReport) -> String {
    let mut md = String::new();
    let head = match r.verdict {
        Verdict::Ok => "✅ no regression".to_string(),
        Verdict::Regression => format!(
            "❌ REGRESSION in {} of {} matched cells",
            r.regressions,
            r.cells.len()
        ),
    };
    let _ = writeln!(md, "## chunkbench compare: {head}\n");
    let _ = writeln!(
        md,
        "Baseline {} (run {}) · candidate {} (run {}) · {} matched cells, questions \
         paired by id.\n",
        Code(&r.baseline),
        Code(&r.baseline_name),
        Code(&r.candidate),
        Code(&r.candidate_name),
        r.cells.len()
    );
    md.push_str(
        "| verdict | dataset | strategy | retriever | k | reader | n | baseline acc [95% CI] \
         | candidate acc [95% CI] | Δ acc pts [95% CI] | lost / gained | McNemar p | Holm p \
         | words (mean) baseline → candidate | Δ words % [95% CI] | invalid baseline → candidate |\n\
         |---|---|---|---|---:|---|---:|---|---|---|---:|---:|---:|---|---|---:|\n",
    );
    let acc = |s: &SideAccuracy| {
        format!(
            "{:.1} % [{:.1}, {:.1}]",
            100.0 * s.accuracy,
            100.0 * s.accuracy_ci.lower,
            100.0 * s.accuracy_ci.upper
        )
    };
    for c in &r.cells {
        let verdict = match c.verdict {
            Verdict::Ok => "✅ ok",
            Verdict::Regression => "❌ **REGRESSION**",
        };
        let words = match c.words_change_pct {
            Some(w) => format!(
                "{:+.1} {}",
                w,
                crate::fmt::signed_interval(c.words_change_ci)
            ),
            None => "–".into(),
        };
        let _ = writeln!(
            md,
            "| {verdict} | {} | {} | {} | {} | {} | {} | {} | {} | {:+.1} {} | {} / {} | {} | {} \
             | {:.1} → {:.1} | {words} | {} → {} |",
            Text(&c.dataset),
            Text(&c.strategy),
            Text(&c.retriever),
            c.k,
            Text(&c.reader),
            c.n,
            acc(&c.baseline),
            acc(&c.candidate),
            c.delta_points,
            crate::fmt::signed_interval(c.delta_ci),
            c.mcnemar.b,
            c.mcnemar.c,
            crate::fmt::p_value(c.mcnemar.exact_p),
            crate::fmt::p_value(c.holm_p),
            c.baseline.words_mean,
            c.candidate.words_mean,
            c.invalid.0,
            c.invalid.1,
        );
    }
    md.push('\n');
    for c in r.cells.iter().filter(|c| !c.inputs_differ.is_empty()) {
        let _ = writeln!(
            md,
            "- {} {} × {} × k={}: computed on different inputs: {}",
            Code(&c.cell_id),
            Text(&c.strategy),
            Text(&c.retriever),
            c.k,
            Text(&c.inputs_differ.join("; "))
        );
    }
    for (side, n) in [
        ("baseline", r.ignored_baseline_cells),
        ("candidate", r.ignored_candidate_cells),
    ] {
        if n > 0 {
            let _ = writeln!(
                md,
                "- The {side}'s cells/ holds {n} finished cell{} that {} not part of its \
                 config.json (left by an earlier config); ignored.",
                if n == 1 { "" } else { "s" },
                if n == 1 { "is" } else { "are" }
            );
        }
    }
    if r.cells.iter().any(|c| !c.inputs_differ.is_empty())
        || r.ignored_baseline_cells + r.ignored_candidate_cells > 0
    {
        md.push('\n');
    }
    match r.verdict {
        Verdict::Ok => {
            let _ = writeln!(
                md,
                "**Verdict: no regression** in {} matched cells.",
                r.cells.len()
            );
        }
        Verdict::Regression => {
            let _ = writeln!(
                md,
                "**Verdict: REGRESSION** in {} of {} matched cells:",
                r.regressions,
                r.cells.len()
            );
            for c in r.cells.iter().filter(|c| c.verdict == Verdict::Regression) {
                let _ = writeln!(
                    md,
                    "- {} {} × {} × {} × k={} × {}: {}",
                    Code(&c.cell_id),
                    Text(&c.dataset),
                    Text(&c.strategy),
                    Text(&c.retriever),
                    c.k,
                    Text(&c.reader),
                    c.reasons.join("; ")
                );
            }
        }
    }
    let _ = writeln!(
        md,
        "\nRule: {}. Holm adjusts the McNemar exact p over the {} matched cells. Lost / gained: \
         questions the baseline answered correctly and the candidate did not, and the reverse. \
         Words: whitespace-separated words of the retrieved passages summed over the top-k \
         (with multiplicity). Intervals: Wilson 95 % for accuracy; paired bootstrap 95 % \
         (B = {}, the cell's seed) for the deltas.",
        r.rule,
        r.cells.len(),
        r.bootstrap_resamples
    );
    md.push_str("\n### Unmatched cells\n\n");
    if r.only_in_baseline.is_empty() && r.only_in_candidate.is_empty() {
        md.push_str("None: every cell of each run is in the other.\n");
    }
    for (side, list) in [
        ("only in the baseline", &r.only_in_baseline),
        ("only in the candidate", &r.only_in_candidate),
    ] {
        for u in list {
            let _ = write!(
                md,
                "- {side}: {} {} × {} × {} × k={} × {}",
                Code(&u.cell_id),
                Text(&u.dataset),
                Text(&u.strategy),
                Text(&u.retriever),
                u.k,
                Text(&u.reader)
            );
            if u.differs_in.is_empty() {
                md.push('\n');
            } else {
                let _ = writeln!(
                    md,
                    " (configuration differs in {})",
                    u.differs_in
                        .iter()
                        .map(|f| Code(f).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
    }
    md
}

/// Writes `compare.md` ([`render_markdown`]) and `compare.json` (the report as pretty JSON)
/// into `dir`, each atomically, and returns their paths.
///
/// # Errors
/// I/O errors naming the file.
pub fn write_report(dir: &Path, report: &CompareReport) -> Result<(PathBuf, PathBuf)> {
    let md = dir.join(REPORT_MD);
    let json = dir.join(REPORT_JSON);
    write_atomic(&md, render_markdown(report).as_bytes())?;
    write_json(&json, report)?;
    Ok((md, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(n: u64, base: u64, cand: u64, holm_p: f64, bw: u64, cw: u64) -> GateFigures {
        GateFigures {
            n,
            baseline_correct: base,
            candidate_correct: cand,
            holm_p,
            baseline_words: bw,
            candidate_words: cw,
        }
    }

    #[test]
    fn accuracy_drop_of_exactly_the_tolerance_passes() {
        let tol = Tolerances::default();
        // 10 of 1000 questions = exactly 1.0 point.
        let at = judge(&figures(1000, 800, 790, 1e-6, 100, 100), &tol);
        assert!(!at.accuracy && !at.is_regression());
        let over = judge(&figures(1000, 800, 789, 1e-6, 100, 100), &tol);
        assert!(over.accuracy && over.is_regression());
        // 3 of 300 is also exactly one point; 0.1 of a point is not representable exactly in
        // the drop but is in the counts.
        assert!(!judge(&figures(300, 200, 197, 0.0, 1, 1), &tol).accuracy);
        assert!(judge(&figures(300, 200, 196, 0.0, 1, 1), &tol).accuracy);
    }

    /// Issue 36 case 3: 69 of 3000 questions is exactly 2.3 points, which `2.3 * 3000` in
    /// f64 (6899.999…) called a regression.
    #[test]
    fn tolerance_boundaries_are_exact_decimals() {
        let tol = |pts: f64, pct: f64| Tolerances {
            max_accuracy_drop_pts: pts,
            max_words_increase_pct: pct,
            alpha: 0.05,
        };
        assert!(!judge(&figures(3000, 2000, 1931, 0.0, 1, 1), &tol(2.3, 5.0)).accuracy);
        assert!(judge(&figures(3000, 2000, 1930, 0.0, 1, 1), &tol(2.3, 5.0)).accuracy);
        // Every drop of i questions in n at the tolerance 100·i/n printed as a decimal.
        for n in [7u64, 30, 153, 1000, 3000, 14042] {
            for i in 1..=n.min(200) {
                let pts: f64 = format!("{:.10}", 100.0 * i as f64 / n as f64)
                    .parse()
                    .unwrap();
                let exact = (100 * u128::from(i)) * 10u128.pow(10)
                    == exact_decimal(pts)
                        .map(|(m, s)| m * 10u128.pow(10 - s))
                        .unwrap()
                        * u128::from(n);
                let j = judge(&figures(n, n, n - i, 0.0, 1, 1), &tol(pts, 5.0));
                if exact {
                    assert!(!j.accuracy, "n {n} drop {i} at {pts}");
                }
            }
        }
        // Words: 1000 -> 1023 is exactly +2.3 %.
        assert!(!judge(&figures(10, 5, 5, 1.0, 1000, 1023), &tol(1.0, 2.3)).words);
        assert!(judge(&figures(10, 5, 5, 1.0, 1000, 1024), &tol(1.0, 2.3)).words);
        assert_eq!(exact_decimal(2.3), Some((23, 1)));
        assert_eq!(exact_decimal(5.0), Some((5, 0)));
        assert_eq!(exact_decimal(0.05), Some((5, 2)));
        assert_eq!(exact_decimal(-1.0), None);
        // Absurd tolerances fall back to f64 and still decide.
        assert!(!judge(&figures(10, 10, 0, 0.0, 1, 1), &tol(1e300, 1e300)).accuracy);
    }

    #[test]
    fn accuracy_drop_needs_significance_below_alpha() {
        let tol = Tolerances::default();
        assert!(!judge(&figures(1000, 800, 700, 0.05, 1, 1), &tol).accuracy);
        assert!(judge(&figures(1000, 800, 700, 0.0499, 1, 1), &tol).accuracy);
        // Improvements never regress, however significant.
        assert!(!judge(&figures(1000, 700, 800, 0.0, 1, 1), &tol).accuracy);
    }

    #[test]
    fn words_increase_of_exactly_the_tolerance_passes() {
        let tol = Tolerances::default();
        // 1000 -> 1050 words is exactly +5 %.
        assert!(!judge(&figures(10, 5, 5, 1.0, 1000, 1050), &tol).words);
        assert!(judge(&figures(10, 5, 5, 1.0, 1000, 1051), &tol).words);
        // Fewer words never regress.
        assert!(!judge(&figures(10, 5, 5, 1.0, 1000, 10), &tol).words);
        // From nothing to something is beyond any tolerance; nothing to nothing is fine.
        let wide = Tolerances {
            max_words_increase_pct: 1e9,
            ..tol
        };
        assert!(judge(&figures(10, 5, 5, 1.0, 0, 1), &wide).words);
        assert!(!judge(&figures(10, 5, 5, 1.0, 0, 0), &wide).words);
        // A tolerance of 0 flags any increase.
        let zero = Tolerances {
            max_words_increase_pct: 0.0,
            ..tol
        };
        assert!(judge(&figures(10, 5, 5, 1.0, 1000, 1001), &zero).words);
        assert!(!judge(&figures(10, 5, 5, 1.0, 1000, 1000), &zero).words);
    }

    #[test]
    fn invalid_tolerances_name_the_flag() {
        let bad = |t: Tolerances| t.validate().unwrap_err().to_string();
        let d = Tolerances::default();
        assert!(bad(Tolerances {
            max_accuracy_drop_pts: -1.0,
            ..d
        })
        .contains("--max-accuracy-drop"));
        assert!(bad(Tolerances {
            max_words_increase_pct: f64::NAN,
            ..d
        })
        .contains("--max-words-increase"));
        assert!(bad(Tolerances { alpha: 0.0, ..d }).contains("--alpha"));
        assert!(bad(Tolerances { alpha: 1.5, ..d }).contains("--alpha"));
        d.validate().unwrap();
    }
}
