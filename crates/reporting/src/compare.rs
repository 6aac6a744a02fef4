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
//! - A baseline cell without a cell of the same id is then paired by its named coordinates —
//!   dataset, strategy, retriever, k, reader — with the candidate's cell of the same
//!   coordinates, and the report shows what changed (`strategy_config.size: 256 → 200`).
//!   `--pair OLD=NEW` pairs a baseline strategy with a renamed candidate strategy.
//! - Within a pair, questions are paired by `question_id`. Both cells must hold the same set
//!   of questions and must have been computed on the same dataset manifest (sha256);
//!   otherwise the input is unusable ([`compare_runs`] fails).
//! - A baseline cell with no partner **fails the gate** (exit 1) unless `--allow-missing`: a
//!   gate that passes when the cell it guards disappeared guards nothing. A candidate-only
//!   cell is listed and not judged.
//!
//! # Figures per pair
//! The primary metric (the candidate config's `primary:`, default accuracy when the cells
//! were read, else recall@k with gold evidence, else answer recall): both means, Δ in points
//! with its 95 % interval, p and Holm p over the pairs, the verdict against the margin and
//! the questions needed ([`crate::verdicts::compute_family`], the same family as summary.md's
//! verdict, resampled as the candidate config says). For read cells also the accuracy with
//! Wilson 95 % intervals and McNemar's lost / gained counts; for every pair the mean words
//! retrieved per question (with multiplicity) and the change in % with a paired bootstrap 95 %
//! interval ([`stats::bootstrap_relative_reduction`], sign flipped). Resamples and seed: the
//! candidate's `bootstrap_resamples` and the cell's seed.
//!
//! # The rule
//! A pair is a **REGRESSION** when
//! - its primary metric drops by strictly more than `max_accuracy_drop_pts` points **and**
//!   its Holm-adjusted p is strictly below `alpha`, or
//! - its mean words retrieved grow by strictly more than `max_words_increase_pct` percent (a
//!   baseline that retrieved no words and a candidate that retrieved some is an unbounded
//!   increase), or
//! - `--require non-inferior|equivalent|superior` is given and its verdict falls short.
//!
//! A drop or an increase of exactly the tolerance passes. Improvements never regress. The run
//! fails when any pair regresses or a baseline cell has no partner. Defaults: 1.0 point, 5 %,
//! α = 0.05 ([`Tolerances::default`]). For accuracy the comparisons are made on integer
//! counts, with each tolerance read as the decimal it is written as (`2.3` = 23/10), in
//! integer arithmetic ([`judge`]), so the boundary is exact.

use crate::md::{Code, Text};
use anyhow::{bail, Context, Result};
use datasets::io::{write_atomic, write_json};
use records::{CellRecord, QuestionRow};
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
    /// Significance level for the Holm-adjusted p of the primary metric, in (0, 1].
    pub alpha: f64,
    /// Margin of the verdicts in points; `None` = the candidate config's `margin`.
    #[serde(default)]
    pub margin_pts: Option<f64>,
    /// The verdict every pair must reach (`--require`); `None` = none.
    #[serde(default)]
    pub require: Option<Requirement>,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            max_accuracy_drop_pts: DEFAULT_MAX_ACCURACY_DROP_PTS,
            max_words_increase_pct: DEFAULT_MAX_WORDS_INCREASE_PCT,
            alpha: DEFAULT_ALPHA,
            margin_pts: None,
            require: None,
        }
    }
}

/// The verdict `--require` asks of every pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Requirement {
    /// Superior, equivalent or non-inferior.
    NonInferior,
    /// Equivalent.
    Equivalent,
    /// Superior.
    Superior,
}

impl Requirement {
    /// True when `v` meets the requirement.
    pub fn accepts(self, v: stats::Verdict) -> bool {
        match self {
            Requirement::NonInferior => v.at_least_non_inferior(),
            Requirement::Equivalent => v == stats::Verdict::Equivalent,
            Requirement::Superior => v == stats::Verdict::Superior,
        }
    }

    /// The flag's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Requirement::NonInferior => "non-inferior",
            Requirement::Equivalent => "equivalent",
            Requirement::Superior => "superior",
        }
    }
}

impl std::str::FromStr for Requirement {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        [
            Requirement::NonInferior,
            Requirement::Equivalent,
            Requirement::Superior,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
        .ok_or_else(|| format!("{s:?}: use non-inferior, equivalent or superior"))
    }
}

/// How cells are paired beyond equal ids (module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairing {
    /// Strategy renames `(OLD, NEW)`: the baseline's cells of strategy OLD pair with the
    /// candidate's cells of strategy NEW at the same dataset, retriever, k and reader.
    pub renames: Vec<(String, String)>,
    /// Pass when a baseline cell has no partner (it is still listed).
    pub allow_missing: bool,
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
        if let Some(m) = self.margin_pts {
            if !(m.is_finite() && (0.0..100.0).contains(&m)) {
                bail!("--margin {m}: give a margin in points from 0 up to 100, e.g. 3");
            }
        }
        Ok(())
    }

    /// The rule in one sentence, with these tolerances filled in (used in both reports).
    pub fn rule(&self) -> String {
        format!(
            "a cell regresses when its primary metric drops by more than {} points and its \
             Holm-adjusted p is below {}, or when its mean words retrieved grow by more than \
             {} %{}; a change of exactly the tolerance passes; a baseline cell with no partner \
             fails the gate unless --allow-missing",
            crate::fmt::tolerance(self.max_accuracy_drop_pts),
            self.alpha,
            crate::fmt::tolerance(self.max_words_increase_pct),
            self.require.map_or(String::new(), |r| format!(
                ", or when its verdict is not {} (--require)",
                r.as_str()
            ))
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

/// What the rule decided for one pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    /// The primary metric (accuracy, or the retrieval metric) dropped by more than the
    /// tolerance, significantly after Holm.
    pub accuracy: bool,
    /// The mean words retrieved grew by more than the tolerance.
    pub words: bool,
    /// The verdict falls short of `--require`.
    #[serde(default)]
    pub requirement: bool,
}

impl Judgement {
    /// True when any criterion fired.
    pub fn is_regression(&self) -> bool {
        self.accuracy || self.words || self.requirement
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
    Judgement {
        accuracy,
        words,
        requirement: false,
    }
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
/// so a baseline stays readable when rows gain columns; metric columns are read by name).
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct GateRow {
    cell_id: String,
    question_id: String,
    /// Absent in rows written before the column existed.
    #[serde(default)]
    question_doc: String,
    #[serde(default)]
    subject: String,
    /// Empty for a cell without a reader.
    correct: Option<u8>,
    words: u64,
    /// Absent in rows written before readers flagged invalid answers.
    #[serde(default)]
    invalid: u8,
}

impl GateRow {
    /// The row as the verdict code reads rows.
    fn into_row(self, metrics: retriever::metrics::MetricValues) -> QuestionRow {
        QuestionRow {
            cell_id: self.cell_id,
            question_id: self.question_id,
            question_doc: self.question_doc,
            subject: self.subject,
            correct: self.correct,
            words: self.words as usize,
            invalid: self.invalid,
            metrics,
            ..QuestionRow::default()
        }
    }
}

/// One finished cell of a run: its record and its rows.
#[derive(Debug, Clone)]
struct RunCell {
    record: CellRecord,
    rows: Vec<QuestionRow>,
}

/// A run directory as the gate reads it.
#[derive(Debug, Clone)]
struct LoadedRun {
    /// The run's `name` from config.json.
    name: String,
    /// `bootstrap_resamples` from config.json (the default when absent).
    resamples: usize,
    /// `primary`, `margin` and `resample` from config.json.
    verdict: crate::verdicts::VerdictSettings,
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
    let verdict = crate::verdicts::VerdictSettings {
        primary: cfg
            .get("primary")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        margin_points: cfg.get("margin").and_then(|v| v.as_f64()).unwrap_or(0.0),
        resample: cfg
            .get("resample")
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
    };
    Ok(LoadedRun {
        name,
        resamples,
        verdict,
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
    let read = record.summary.accuracy.is_some();
    let mut reader = csv::Reader::from_reader(&bytes[..]);
    let headers = reader
        .headers()
        .with_context(|| format!("{}: not CSV; {rerun}", csv_path.display()))?
        .clone();
    let metric_at: Vec<(usize, usize)> = retriever::metrics::METRICS
        .iter()
        .enumerate()
        .filter_map(|(i, m)| headers.iter().position(|h| h == m.name).map(|p| (i, p)))
        .collect();
    let mut rows = Vec::new();
    for (i, r) in reader.records().enumerate() {
        let bad = || {
            format!(
                "{}: row {}: needs columns cell_id, question_id, correct (0 or 1, empty for a \
                 cell without a reader), words and numeric metric columns; {rerun}",
                csv_path.display(),
                i + 1
            )
        };
        let fields = r.with_context(bad)?;
        let row: GateRow = fields.deserialize(Some(&headers)).with_context(bad)?;
        let mut metrics = retriever::metrics::MetricValues::default();
        for &(m, p) in &metric_at {
            let text = fields.get(p).unwrap_or("");
            if !text.is_empty() {
                let v = text
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .with_context(bad)?;
                metrics.set(m, Some(v));
            }
        }
        if row.cell_id != id || row.correct.is_some_and(|c| c > 1) || row.correct.is_some() != read
        {
            bail!(
                "{}: row {} (question {}): cell_id {:?}, correct {:?}; expected cell_id {id:?} \
                 and correct {}; {rerun}",
                csv_path.display(),
                i + 1,
                row.question_id,
                row.cell_id,
                row.correct,
                if read {
                    "0 or 1"
                } else {
                    "empty (the cell has no reader)"
                }
            );
        }
        rows.push(row.into_row(metrics));
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
    let correct = rows.iter().filter(|r| r.correct == Some(1)).count();
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

/// Figures of one side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SideAccuracy {
    /// Questions answered correctly; `None` for a cell without a reader.
    pub correct: Option<u64>,
    /// `correct / n`, a proportion in [0, 1]; `None` without a reader.
    pub accuracy: Option<f64>,
    /// Wilson 95 % interval of the accuracy (proportions); `None` without a reader.
    pub accuracy_ci: Option<stats::Interval>,
    /// Mean of the primary metric over the paired questions where both sides have it (0–1);
    /// `None` when the cell has no value of it.
    #[serde(default)]
    pub primary_mean: Option<f64>,
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

/// How a pair was formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairedBy {
    /// The same cell id in both runs: nothing in the cell's configuration changed.
    Id,
    /// The same dataset, strategy, retriever, k and reader; the configuration changed
    /// ([`CellComparison::changed`]).
    Coordinates,
    /// A `--pair OLD=NEW` strategy rename at the same dataset, retriever, k and reader.
    Rename,
}

/// One pair, baseline cell against candidate cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellComparison {
    /// The candidate cell's id.
    pub cell_id: String,
    /// The baseline cell's id (equal to `cell_id` when paired by id).
    #[serde(default)]
    pub baseline_cell_id: String,
    /// How the pair was formed.
    #[serde(default = "paired_by_id")]
    pub paired_by: PairedBy,
    /// What changed between the two cells' configurations, one `field: old → new` each
    /// (empty when paired by id).
    #[serde(default)]
    pub changed: Vec<String>,
    /// Dataset name.
    pub dataset: String,
    /// Strategy name (the candidate's).
    pub strategy: String,
    /// Retriever name.
    pub retriever: String,
    /// Top-k (for a budget cell: the ranking depth).
    pub k: usize,
    /// The budget of a budget cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<records::Budget>,
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
    /// Candidate minus baseline accuracy, in percentage points; `None` without a reader.
    pub delta_points: Option<f64>,
    /// McNemar on the discordant pairs: `b` = questions lost (baseline right, candidate
    /// wrong), `c` = questions gained; `None` without a reader.
    pub mcnemar: Option<stats::McNemar>,
    /// The primary metric's comparison (Δ, intervals, p, Holm p over the pairs, verdict,
    /// questions needed; 0–1 scale); `None` when the cell has no value of it.
    pub primary: Option<stats::PlannedComparison>,
    /// The primary comparison's Holm p (`None` without one).
    pub holm_p: Option<f64>,
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

/// `3` or `≤512 words`: how much a cell retrieves, as compare.md prints it.
fn depth(k: usize, budget: Option<records::Budget>) -> String {
    budget.map_or(k.to_string(), |b| b.to_string())
}

fn paired_by_id() -> PairedBy {
    PairedBy::Id
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
    /// Top-k (for a budget cell: the ranking depth).
    pub k: usize,
    /// The budget of a budget cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<records::Budget>,
    /// Reader name.
    pub reader: String,
    /// Configuration fields that differ from the other run's cell of the same dataset,
    /// strategy, retriever, k and reader when that cell is paired elsewhere; empty when the
    /// other run has no cell of that name.
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
    /// The primary metric (`accuracy`, `recall`, …).
    #[serde(default)]
    pub primary: String,
    /// The margin of the verdicts, in points.
    #[serde(default)]
    pub margin_pts: f64,
    /// The resampling unit of the primary comparisons.
    #[serde(default)]
    pub resample: String,
    /// The Holm family's size: pairs with a primary comparison and a differing question
    /// (Tarone 1990).
    #[serde(default)]
    pub family_size: usize,
    /// `ok` when no pair regressed and every baseline cell has a partner (or
    /// `--allow-missing`), else `REGRESSION`.
    pub verdict: Verdict,
    /// Pairs that regressed.
    pub regressions: usize,
    /// Baseline cells without a partner, failing the gate unless `allow_missing`.
    #[serde(default)]
    pub missing: usize,
    /// `--allow-missing` was given.
    #[serde(default)]
    pub allow_missing: bool,
    /// Pairs, ordered by dataset, strategy, retriever, k, reader.
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
    /// True when the gate fails: a pair regressed, or a baseline cell has no partner without
    /// `--allow-missing`.
    pub fn is_regression(&self) -> bool {
        self.verdict == Verdict::Regression
    }
}

/// A cell's coordinates, its sort key and pairing key: dataset, strategy, retriever, k (and
/// budget), reader.
type LabelKey = (
    String,
    String,
    String,
    usize,
    Option<records::Budget>,
    String,
);

/// The coordinates of a cell ([`LabelKey`]).
fn label_key(r: &CellRecord) -> LabelKey {
    let c = &r.cell;
    (
        c.dataset.clone(),
        c.strategy.clone(),
        c.retriever.clone(),
        c.k,
        c.budget,
        c.reader.clone(),
    )
}

fn label(r: &CellRecord) -> String {
    let c = &r.cell;
    format!(
        "{} × {} × {} × k={} × {}",
        c.dataset,
        c.strategy,
        c.retriever,
        c.depth_label(),
        c.reader
    )
}

/// The leaves where two JSON values differ, as `path: old → new` (`path` alone when `full`
/// is false).
fn json_diff(
    a: &serde_json::Value,
    b: &serde_json::Value,
    prefix: &str,
    full: bool,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    let show = |v: Option<&Value>| v.map_or("(absent)".to_string(), |v| v.to_string());
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
                    (Some(u), Some(v)) => json_diff(u, v, &path, full, out),
                    (u, v) if full => out.push(format!("{path}: {} → {}", show(u), show(v))),
                    _ => out.push(path),
                }
            }
        }
        _ if a != b && full => out.push(format!("{prefix}: {a} → {b}")),
        _ if a != b => out.push(prefix.to_string()),
        _ => {}
    }
}

/// The configuration changes from cell `a` to cell `b` (`full`: with old and new values).
fn cell_diff(a: &CellRecord, b: &CellRecord, full: bool) -> Vec<String> {
    let x = serde_json::to_value(&a.cell).unwrap_or_default();
    let y = serde_json::to_value(&b.cell).unwrap_or_default();
    let mut out = Vec::new();
    json_diff(&x, &y, "", full, &mut out);
    out
}

fn unmatched(rec: &CellRecord, other: &LoadedRun) -> UnmatchedCell {
    let key = label_key(rec);
    let differs_in = other
        .cells
        .values()
        .find(|o| label_key(&o.record) == key)
        .map(|o| cell_diff(rec, &o.record, false))
        .unwrap_or_default();
    let c = &rec.cell;
    UnmatchedCell {
        cell_id: rec.id.clone(),
        dataset: c.dataset.clone(),
        strategy: c.strategy.clone(),
        retriever: c.retriever.clone(),
        k: c.k,
        budget: c.budget,
        reader: c.reader.clone(),
        differs_in,
    }
}

/// A pair before the statistics: the two cells and the candidate's rows in the baseline's
/// question order.
struct Paired<'a> {
    base: &'a RunCell,
    cand: &'a RunCell,
    by: PairedBy,
    cand_rows: Vec<&'a QuestionRow>,
}

/// Pairs the questions of two cells by question id (in the baseline's row order).
fn pair<'a>(
    base: &'a RunCell,
    cand: &'a RunCell,
    by: PairedBy,
    bdir: &Path,
    cdir: &Path,
) -> Result<Paired<'a>> {
    let (bid, cid) = (&base.record.id, &cand.record.id);
    let changed = if by == PairedBy::Id {
        String::new()
    } else {
        format!(
            " (paired by {}; changed: {})",
            if by == PairedBy::Rename {
                "--pair"
            } else {
                "dataset, strategy, retriever, k and reader"
            },
            cell_diff(&base.record, &cand.record, true).join(", ")
        )
    };
    if base.record.dataset_manifest_sha256 != cand.record.dataset_manifest_sha256 {
        bail!(
            "cell {cid} ({}){changed} was computed on different datasets: dataset manifest \
             sha256 {} in {} but {} in {}; compare runs made on the same converted data \
             (`chunkbench data fetch` with the same pinned sources and seed), or regenerate \
             the baseline with scripts/update-baseline.sh",
            label(&base.record),
            base.record.dataset_manifest_sha256,
            bdir.join("cells").join(format!("{bid}.json")).display(),
            cand.record.dataset_manifest_sha256,
            cdir.join("cells").join(format!("{cid}.json")).display()
        );
    }
    let by_q: HashMap<&str, &QuestionRow> = cand
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
            "cell {cid} ({}){changed} holds different questions in the two runs: {} only in {} \
             [{}], {} only in {} [{}]; both runs must answer the same questions (same dataset \
             and `limit`)",
            label(&base.record),
            missing.len(),
            bdir.join("cells").join(format!("{bid}.csv")).display(),
            few(&missing),
            extra.len(),
            cdir.join("cells").join(format!("{cid}.csv")).display(),
            few(&extra)
        );
    }
    let cand_rows = base
        .rows
        .iter()
        .map(|b| by_q[b.question_id.as_str()])
        .collect();
    Ok(Paired {
        base,
        cand,
        by,
        cand_rows,
    })
}

/// The pairs of two runs (baseline cell, candidate cell, how), then the baseline's and the
/// candidate's cells without a partner.
type CellPairs<'a> = (
    Vec<(&'a RunCell, &'a RunCell, PairedBy)>,
    Vec<&'a RunCell>,
    Vec<&'a RunCell>,
);

/// Refuses a `--pair OLD=NEW` whose OLD is no strategy of the baseline's cells or whose NEW is
/// none of the candidate's: it would pair nothing, silently.
///
/// # Errors
/// The rename, the side and the strategies that side has.
fn check_renames(base: &LoadedRun, cand: &LoadedRun, pairing: &Pairing) -> Result<()> {
    let names = |r: &LoadedRun| -> std::collections::BTreeSet<String> {
        r.cells
            .values()
            .map(|c| c.record.cell.strategy.clone())
            .collect()
    };
    let (b, c) = (names(base), names(cand));
    for (old, new) in &pairing.renames {
        for (name, side, have) in [(old, "baseline", &b), (new, "candidate", &c)] {
            if !have.contains(name) {
                bail!(
                    "--pair {old}={new}: the {side} run has no cells of strategy `{name}` \
                     (its strategies: {})",
                    have.iter().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
    }
    Ok(())
}

/// Pairs the cells of two runs (module documentation): by id, then by coordinates (with
/// `renames` applied to the baseline's strategy). Returns the pairs in label order and the
/// baseline's and the candidate's cells left without a partner.
fn pair_cells<'a>(base: &'a LoadedRun, cand: &'a LoadedRun, pairing: &Pairing) -> CellPairs<'a> {
    let mut pairs = Vec::new();
    let mut free_cand: Vec<&RunCell> = cand
        .cells
        .values()
        .filter(|c| !base.cells.contains_key(&c.record.id))
        .collect();
    let mut lonely = Vec::new();
    for b in base.cells.values() {
        if let Some(c) = cand.cells.get(&b.record.id) {
            pairs.push((b, c, PairedBy::Id));
            continue;
        }
        let renamed = pairing
            .renames
            .iter()
            .find(|(old, _)| *old == b.record.cell.strategy)
            .map(|(_, new)| new.as_str());
        let mut key = label_key(&b.record);
        if let Some(new) = renamed {
            key.1 = new.to_string();
        }
        let hits: Vec<usize> = free_cand
            .iter()
            .enumerate()
            .filter(|(_, c)| label_key(&c.record) == key)
            .map(|(i, _)| i)
            .collect();
        if let [i] = hits[..] {
            let c = free_cand.remove(i);
            let by = if renamed.is_some() {
                PairedBy::Rename
            } else {
                PairedBy::Coordinates
            };
            pairs.push((b, c, by));
        } else {
            lonely.push(b);
        }
    }
    pairs.sort_by_key(|(_, c, _)| (label_key(&c.record), c.record.id.clone()));
    lonely.sort_by_key(|b| (label_key(&b.record), b.record.id.clone()));
    free_cand.sort_by_key(|c| (label_key(&c.record), c.record.id.clone()));
    (pairs, lonely, free_cand)
}

/// Compares the candidate run in `candidate` with the baseline run in `baseline` under `tol`
/// and `pairing` (see the module documentation for pairing, figures and the rule).
/// `cell_ids` lists the cells of a run's resolved config (the pipeline's
/// `evaluator::config::resolved_cell_ids`): a config cell without a finished record is
/// unpaired, a record of another config ignored.
///
/// # Errors
/// Unusable input, each naming the path and the fix: invalid tolerances; a run directory that
/// is missing or lacks `config.json` or finished cells; unreadable or inconsistent cell files;
/// no pair at all (the message lists which configuration fields differ); a pair computed on a
/// different dataset manifest or on a different set of questions; an unknown primary metric.
pub fn compare_runs(
    baseline: &Path,
    candidate: &Path,
    tol: &Tolerances,
    pairing: &Pairing,
    cell_ids: &CellIds,
) -> Result<CompareReport> {
    tol.validate()?;
    let base = load_run(baseline, "baseline", cell_ids)?;
    let cand = load_run(candidate, "candidate", cell_ids)?;
    check_renames(&base, &cand, pairing)?;
    let (pairs, lonely, extra) = pair_cells(&base, &cand, pairing);
    let only_in_baseline: Vec<UnmatchedCell> =
        lonely.iter().map(|b| unmatched(&b.record, &cand)).collect();
    let only_in_candidate: Vec<UnmatchedCell> =
        extra.iter().map(|c| unmatched(&c.record, &base)).collect();
    if pairs.is_empty() {
        no_pair_error(&base, &cand, &only_in_candidate, baseline, candidate)?;
    }
    let paired: Vec<Paired<'_>> = pairs
        .iter()
        .map(|&(b, c, by)| pair(b, c, by, baseline, candidate))
        .collect::<Result<_>>()?;
    let mut settings = cand.verdict.clone();
    if let Some(m) = tol.margin_pts {
        settings.margin_points = m;
    }
    let primary = gate_primary(&settings, &paired)?;
    let resamples = cand.resamples;
    let values: Vec<crate::verdicts::PairValues<'_>> = paired
        .iter()
        .map(|p| crate::verdicts::PairValues::of(primary, &p.base.rows, &p.cand_rows))
        .collect();
    let members: Vec<usize> = (0..paired.len())
        .filter(|&i| !values[i].base.is_empty())
        .collect();
    let member_values: Vec<crate::verdicts::PairValues<'_>> =
        members.iter().map(|&i| values[i].clone()).collect();
    let seed = paired.first().map_or(0, |p| p.cand.record.cell.seed);
    let family = if member_values.is_empty() {
        None
    } else {
        Some(crate::verdicts::compute_family(
            &member_values,
            &settings,
            seed,
            resamples,
        )?)
    };
    let mut primary_of: Vec<Option<(stats::PlannedComparison, f64, f64)>> =
        vec![None; paired.len()];
    if let Some(f) = &family {
        for ((&i, c), v) in members.iter().zip(&f.comparisons).zip(&member_values) {
            primary_of[i] = Some((c.clone(), v.base_mean(), v.cand_mean()));
        }
    }
    let mut cells = Vec::with_capacity(paired.len());
    for (p, prim) in paired.iter().zip(primary_of) {
        cells.push(judge_pair(p, prim, primary, tol, resamples)?);
    }
    let regressions = cells
        .iter()
        .filter(|c| c.verdict == Verdict::Regression)
        .count();
    let missing = only_in_baseline.len();
    Ok(CompareReport {
        baseline: baseline.display().to_string(),
        candidate: candidate.display().to_string(),
        baseline_name: base.name,
        candidate_name: cand.name,
        tolerances: *tol,
        rule: tol.rule(),
        bootstrap_resamples: resamples,
        primary: primary.name().to_string(),
        margin_pts: settings.margin_points,
        resample: family
            .as_ref()
            .map_or(String::new(), |f| f.resample.as_str().to_string()),
        family_size: family
            .as_ref()
            .and_then(|f| f.comparisons.first())
            .map_or(0, |c| c.holm_family),
        verdict: if regressions > 0 || (missing > 0 && !pairing.allow_missing) {
            Verdict::Regression
        } else {
            Verdict::Ok
        },
        regressions,
        missing,
        allow_missing: pairing.allow_missing,
        cells,
        only_in_baseline,
        only_in_candidate,
        ignored_baseline_cells: base.ignored,
        ignored_candidate_cells: cand.ignored,
    })
}

/// The error for two runs without a single pair, listing what differs.
fn no_pair_error(
    base: &LoadedRun,
    cand: &LoadedRun,
    only_in_candidate: &[UnmatchedCell],
    baseline: &Path,
    candidate: &Path,
) -> Result<()> {
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
            depth(u.k, u.budget),
            u.reader,
            u.differs_in.join(", ")
        );
    }
    if why.is_empty() {
        let names = |run: &LoadedRun, f: fn(&records::CellKey) -> &str| {
            let set: std::collections::BTreeSet<&str> =
                run.cells.values().map(|c| f(&c.record.cell)).collect();
            set.into_iter().collect::<Vec<_>>().join(", ")
        };
        why = format!(
            "\n  no cell of the same dataset, strategy, retriever, k and reader either (baseline: \
             datasets {}, strategies {}; candidate: datasets {}, strategies {})",
            names(base, |c| &c.dataset),
            names(base, |c| &c.strategy),
            names(cand, |c| &c.dataset),
            names(cand, |c| &c.strategy)
        );
    }
    bail!(
        "the runs have no cell in common ({} cells in {}, {} in {}); cells pair by the hash of \
         their resolved configuration, else by dataset, strategy, retriever, k and reader \
         (--pair OLD=NEW for a renamed strategy):{why}\nrun the candidate with the baseline's \
         config (including `limit` and `seed`), or regenerate the baseline with \
         scripts/update-baseline.sh",
        base.cells.len(),
        baseline.display(),
        cand.cells.len(),
        candidate.display()
    )
}

/// The primary metric of the gate: the candidate config's `primary`, else accuracy when
/// some pair was read, else recall@k, else answer recall ([`crate::verdicts::Primary::resolve`]
/// over the paired cells).
fn gate_primary(
    settings: &crate::verdicts::VerdictSettings,
    paired: &[Paired<'_>],
) -> Result<crate::verdicts::Primary> {
    let cells: Vec<CellRecord> = paired.iter().map(|p| p.cand.record.clone()).collect();
    let rows: HashMap<String, Vec<QuestionRow>> = paired
        .iter()
        .map(|p| (p.cand.record.id.clone(), p.cand.rows.clone()))
        .collect();
    Ok(
        crate::verdicts::Primary::resolve(settings.primary.as_deref(), &cells, &rows)?
            .unwrap_or(crate::verdicts::Primary::Accuracy),
    )
}

/// The figures, the rule's judgement and the reasons for one pair.
fn judge_pair(
    p: &Paired<'_>,
    prim: Option<(stats::PlannedComparison, f64, f64)>,
    primary: crate::verdicts::Primary,
    tol: &Tolerances,
    resamples: usize,
) -> Result<CellComparison> {
    let n = p.base.rows.len();
    let seed = p.cand.record.cell.seed;
    let correct = |rs: &mut dyn Iterator<Item = &QuestionRow>| -> Option<Vec<bool>> {
        rs.map(|r| r.correct.map(|c| c == 1)).collect()
    };
    let base_correct = correct(&mut p.base.rows.iter());
    let cand_correct = correct(&mut p.cand_rows.iter().copied());
    let base_words: Vec<f64> = p.base.rows.iter().map(|r| r.words as f64).collect();
    let cand_words: Vec<f64> = p.cand_rows.iter().map(|r| r.words as f64).collect();
    let (base_sum, cand_sum): (f64, f64) = (base_words.iter().sum(), cand_words.iter().sum());
    let pc = match (&base_correct, &cand_correct) {
        (Some(b), Some(c)) => Some(
            stats::PairedComparison::new(b, c, seed, resamples)
                .with_context(|| format!("cell {}", p.cand.record.id))?,
        ),
        _ => None,
    };
    let words_change_pct = (base_sum > 0.0).then(|| 0.0 + 100.0 * (cand_sum / base_sum - 1.0));
    let words_change_ci = if base_words.iter().all(|&w| w > 0.0) {
        let conf = stats::BootstrapConfig {
            resamples,
            confidence: stats::DEFAULT_CONFIDENCE,
            seed,
        };
        stats::bootstrap_relative_reduction(&base_words, &cand_words, &conf)
            .with_context(|| format!("cell {}", p.cand.record.id))?
            .interval
            .map(|i| stats::Interval {
                lower: 0.0 - i.upper,
                upper: 0.0 - i.lower,
            })
    } else {
        None
    };
    let holm_p = prim.as_ref().map(|(c, _, _)| c.holm_p);
    let accuracy_primary = primary == crate::verdicts::Primary::Accuracy;
    let quality = match (&prim, &pc) {
        (Some((c, _, _)), Some(pc)) if accuracy_primary => {
            judge(
                &GateFigures {
                    n: n as u64,
                    baseline_correct: pc.baseline_correct,
                    candidate_correct: pc.candidate_correct,
                    holm_p: c.holm_p,
                    baseline_words: 0,
                    candidate_words: 0,
                },
                tol,
            )
            .accuracy
        }
        (Some((c, b, m)), _) => {
            100.0 * (b - m) > tol.max_accuracy_drop_pts + 1e-9 && c.holm_p < tol.alpha
        }
        _ => false,
    };
    let words = judge(
        &GateFigures {
            n: n as u64,
            baseline_correct: 0,
            candidate_correct: 0,
            holm_p: 1.0,
            baseline_words: base_sum as u64,
            candidate_words: cand_sum as u64,
        },
        tol,
    )
    .words;
    let requirement = match (tol.require, &prim) {
        (Some(r), Some((c, _, _))) => !r.accepts(c.verdict),
        (Some(_), None) => true,
        (None, _) => false,
    };
    let judgement = Judgement {
        accuracy: quality,
        words,
        requirement,
    };
    let mut reasons = Vec::new();
    if let (true, Some((c, _, _))) = (quality, &prim) {
        reasons.push(format!(
            "{} {:+.1} points (a drop of more than {}) with Holm p {} (below {})",
            primary.label(),
            100.0 * c.estimate,
            crate::fmt::tolerance(tol.max_accuracy_drop_pts),
            crate::fmt::p_value(c.holm_p),
            tol.alpha
        ));
    }
    if words {
        reasons.push(match words_change_pct {
            Some(w) => format!(
                "mean words retrieved {w:+.1} % (more than +{} %)",
                crate::fmt::tolerance(tol.max_words_increase_pct)
            ),
            None => "words retrieved where the baseline retrieved none".to_string(),
        });
    }
    if requirement {
        reasons.push(match (&prim, tol.require) {
            (Some((c, _, _)), Some(r)) => {
                format!("verdict {} where --require asks {}", c.verdict, r.as_str())
            }
            _ => format!("no {} to judge --require by", primary.label()),
        });
    }
    let side = |correct: Option<u64>, ci: Option<stats::Interval>, mean: Option<f64>, sum: f64| {
        SideAccuracy {
            correct,
            accuracy: correct.map(|c| c as f64 / n as f64),
            accuracy_ci: ci,
            primary_mean: mean,
            words_mean: sum / n as f64,
        }
    };
    let c = &p.cand.record.cell;
    Ok(CellComparison {
        cell_id: p.cand.record.id.clone(),
        baseline_cell_id: p.base.record.id.clone(),
        paired_by: p.by,
        changed: if p.by == PairedBy::Id {
            Vec::new()
        } else {
            cell_diff(&p.base.record, &p.cand.record, true)
        },
        dataset: c.dataset.clone(),
        strategy: c.strategy.clone(),
        retriever: c.retriever.clone(),
        k: c.k,
        budget: c.budget,
        reader: c.reader.clone(),
        dataset_manifest_sha256: p.cand.record.dataset_manifest_sha256.clone(),
        n,
        invalid: (
            p.base.rows.iter().filter(|r| r.invalid == 1).count() as u64,
            p.cand_rows.iter().filter(|r| r.invalid == 1).count() as u64,
        ),
        inputs_differ: if p.base.record.inputs.is_empty() {
            Vec::new()
        } else {
            records::inputs::changed(&p.base.record.inputs, &p.cand.record.inputs)
        },
        baseline: side(
            pc.as_ref().map(|x| x.baseline_correct),
            pc.as_ref().map(|x| x.baseline_wilson),
            prim.as_ref().map(|x| x.1),
            base_sum,
        ),
        candidate: side(
            pc.as_ref().map(|x| x.candidate_correct),
            pc.as_ref().map(|x| x.candidate_wilson),
            prim.as_ref().map(|x| x.2),
            cand_sum,
        ),
        delta_points: pc.as_ref().map(|x| 0.0 + x.delta_points),
        mcnemar: pc.as_ref().map(|x| x.mcnemar),
        primary: prim.map(|x| x.0),
        holm_p,
        words_change_pct,
        words_change_ci,
        judgement,
        verdict: if judgement.is_regression() {
            Verdict::Regression
        } else {
            Verdict::Ok
        },
        reasons,
    })
}

/// Renders the report as GitHub-flavoured Markdown, ready to post as a pull-request comment:
/// a headline with the verdict, one table row per pair, what changed in pairs formed by
/// coordinates, the verdict line with the reasons, the rule, and the cells without a partner.
pub fn render_markdown(r: &CompareReport) -> String {
    let mut md = String::new();
    let lonely = if r.missing > 0 && !r.allow_missing {
        format!(
            "{}{} baseline cell{} without a partner",
            if r.regressions > 0 { " and " } else { "" },
            r.missing,
            if r.missing == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    let head = match r.verdict {
        Verdict::Ok => "✅ no regression".to_string(),
        Verdict::Regression if r.regressions > 0 => format!(
            "❌ REGRESSION in {} of {} compared cells{lonely}",
            r.regressions,
            r.cells.len()
        ),
        Verdict::Regression => format!("❌ FAILED: {lonely}"),
    };
    let _ = writeln!(md, "## chunkbench compare: {head}\n");
    let _ = writeln!(
        md,
        "Baseline {} (run {}) · candidate {} (run {}) · {} compared cells, questions \
         paired by id · primary metric {} (Holm family of {}, resampled by {}, margin {} \
         points).\n",
        Code(&r.baseline),
        Code(&r.baseline_name),
        Code(&r.candidate),
        Code(&r.candidate_name),
        r.cells.len(),
        Code(&r.primary),
        r.family_size,
        if r.resample.is_empty() {
            "–"
        } else {
            r.resample.as_str()
        },
        crate::fmt::tolerance(r.margin_pts)
    );
    md.push_str(
        "| gate | dataset | strategy | retriever | k | reader | n | primary baseline → \
         candidate | Δ pts [95% CI] | Holm p | verdict | questions needed | lost / gained \
         | words (mean) baseline → candidate | Δ words % [95% CI] | invalid baseline → \
         candidate |\n\
         |---|---|---|---|---:|---|---:|---|---|---:|---|---:|---:|---|---|---:|\n",
    );
    for c in &r.cells {
        let _ = writeln!(md, "{}", markdown_row(c));
    }
    md.push('\n');
    for c in r.cells.iter().filter(|c| !c.changed.is_empty()) {
        let _ = writeln!(
            md,
            "- {} × {} × k={} × {}: paired by {} (cell {} → {}); changed: {}",
            Text(&c.strategy),
            Text(&c.retriever),
            depth(c.k, c.budget),
            Text(&c.reader),
            match c.paired_by {
                PairedBy::Rename => "--pair",
                _ => "dataset, strategy, retriever, k and reader",
            },
            Code(&c.baseline_cell_id),
            Code(&c.cell_id),
            Text(&c.changed.join("; "))
        );
    }
    for c in r.cells.iter().filter(|c| !c.inputs_differ.is_empty()) {
        let _ = writeln!(
            md,
            "- {} {} × {} × k={}: computed on different inputs: {}",
            Code(&c.cell_id),
            Text(&c.strategy),
            Text(&c.retriever),
            depth(c.k, c.budget),
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
    md.push('\n');
    verdict_lines(&mut md, r);
    let _ = writeln!(
        md,
        "\nRule: {}. Δ, intervals and verdicts: the primary metric candidate − baseline in \
         points, 95 % interval (Tango's score interval for right/wrong values, else the \
         expanded percentile bootstrap), Holm over the {} pairs with a primary value and a \
         differing question (a pair whose questions all agree cannot reach significance, \
         Tarone 1990); verdicts \
         as in summary.md (docs/reference.md §5 \"The verdict\"). Lost / gained: questions the \
         baseline answered correctly and the candidate did not, and the reverse (read cells). \
         Words: whitespace-separated words of the retrieved passages summed over the top-k \
         (with multiplicity), paired bootstrap 95 % (B = {}, the cell's seed).",
        r.rule, r.family_size, r.bootstrap_resamples
    );
    unmatched_lines(&mut md, r);
    md
}

/// One table row of compare.md.
fn markdown_row(c: &CellComparison) -> String {
    let gate = match c.verdict {
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
    let pts = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{:.1}", 100.0 * v));
    let (delta, holm, verdict, needed) = match &c.primary {
        Some(p) => (
            crate::verdicts::delta_points(p),
            crate::fmt::p_value(p.holm_p),
            p.verdict.to_string(),
            p.questions_needed.map_or("–".into(), |n| n.to_string()),
        ),
        None => ("–".into(), "–".into(), "–".into(), "–".into()),
    };
    format!(
        "| {gate} | {} | {} | {} | {} | {} | {} | {} → {} | {delta} | {holm} | {verdict} | \
         {needed} | {} | {:.1} → {:.1} | {words} | {} → {} |",
        Text(&c.dataset),
        Text(&c.strategy),
        Text(&c.retriever),
        depth(c.k, c.budget),
        Text(&c.reader),
        c.n,
        pts(c.baseline.primary_mean),
        pts(c.candidate.primary_mean),
        c.mcnemar
            .map_or("–".into(), |m| format!("{} / {}", m.b, m.c)),
        c.baseline.words_mean,
        c.candidate.words_mean,
        c.invalid.0,
        c.invalid.1,
    )
}

/// compare.md's verdict line and, on failure, one line per failing pair.
fn verdict_lines(md: &mut String, r: &CompareReport) {
    match r.verdict {
        Verdict::Ok => {
            let _ = writeln!(
                md,
                "**Verdict: no regression** in {} compared cells.",
                r.cells.len()
            );
        }
        Verdict::Regression if r.regressions == 0 => {
            let _ = writeln!(
                md,
                "**Verdict: FAILED**: {} baseline cell{} without a partner in the candidate \
                 (listed below; --allow-missing to pass anyway, --pair OLD=NEW for a renamed \
                 strategy).",
                r.missing,
                if r.missing == 1 { "" } else { "s" }
            );
        }
        Verdict::Regression => {
            let _ = writeln!(
                md,
                "**Verdict: REGRESSION** in {} of {} compared cells{}:",
                r.regressions,
                r.cells.len(),
                if r.missing > 0 && !r.allow_missing {
                    format!(
                        ", and {} baseline cell{} without a partner (below; --allow-missing to \
                         pass anyway, --pair OLD=NEW for a renamed strategy)",
                        r.missing,
                        if r.missing == 1 { "" } else { "s" }
                    )
                } else {
                    String::new()
                }
            );
            for c in r.cells.iter().filter(|c| c.verdict == Verdict::Regression) {
                let _ = writeln!(
                    md,
                    "- {} {} × {} × {} × k={} × {}: {}",
                    Code(&c.cell_id),
                    Text(&c.dataset),
                    Text(&c.strategy),
                    Text(&c.retriever),
                    depth(c.k, c.budget),
                    Text(&c.reader),
                    c.reasons.join("; ")
                );
            }
        }
    }
}

/// compare.md's "Unmatched cells" section.
fn unmatched_lines(md: &mut String, r: &CompareReport) {
    md.push_str("\n### Unmatched cells\n\n");
    if r.only_in_baseline.is_empty() && r.only_in_candidate.is_empty() {
        md.push_str("None: every cell of each run has a partner in the other.\n");
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
                depth(u.k, u.budget),
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
            ..Tolerances::default()
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
