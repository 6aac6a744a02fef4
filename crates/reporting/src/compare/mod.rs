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
//! # The rules are the reviewer's
//! Which metric is judged (`primary`), the margin, α, the resampling unit, the stated effect
//! and the planned family come from the **baseline** run's config.json (read through the
//! runner's own types, [`ResolvedRun`]) and from the gate's flags (`--primary`, `--margin`,
//! `--alpha`, `--resample`), never from the candidate's config ([`rules`]): a change under
//! review cannot loosen the gate that judges it. A candidate whose config declares other rules
//! than the baseline's is refused (exit 2, naming each difference) unless `--allow-rule-change`,
//! and is then still judged by the gate's rules; compare.md says where every rule came from.
//! The primary metric defaults as in summary.md, over the baseline's cells: accuracy when they
//! were read, else recall@k with gold evidence, else answer recall — so a baseline that was
//! read keeps accuracy whatever the candidate does, and a candidate cell without a value of
//! it fails its pair.
//!
//! # Figures per pair
//! The primary metric: both means, Δ in points with its interval at 1 − α, p and Holm p over
//! the confirmatory pairs, the verdict against the margin and, for an inconclusive verdict,
//! the questions the margin needs ([`crate::verdicts::compute_family`], the same family as
//! summary.md's verdict). For read cells also the accuracy with Wilson 95 % intervals and
//! McNemar's lost / gained counts; for every pair the mean words retrieved per question (with
//! multiplicity) and the change in % with a paired bootstrap 95 % interval
//! ([`stats::bootstrap_relative_reduction`], sign flipped). Resamples and seed: the baseline's
//! `bootstrap_resamples` and seed.
//!
//! # The rule
//! A pair is a **REGRESSION** when
//! - it is confirmatory and its primary metric drops by strictly more than
//!   `max_accuracy_drop_pts` points **and** its Holm-adjusted p is strictly below α, or
//! - the baseline has a value of the primary metric and the candidate does not, or
//! - its mean words retrieved grow by strictly more than `max_words_increase_pct` percent (a
//!   baseline that retrieved no words and a candidate that retrieved some is an unbounded
//!   increase), or
//! - `--require non-inferior|equivalent|superior` is given and its verdict falls short
//!   (non-inferior and equivalent need a margin: without one the gate refuses, exit 2).
//!
//! A drop or an increase of exactly the tolerance passes. Improvements never regress. The run
//! fails when any pair regresses or a baseline cell has no partner. Defaults: 1.0 point, 5 %,
//! α = the baseline's (0.05 by default) ([`Tolerances::default`]). For accuracy the
//! comparisons are made on integer counts, with each tolerance read as the decimal it is
//! written as (`2.3` = 23/10), in integer arithmetic ([`judge`]), so the boundary is exact.

mod judge;
mod load;
mod markdown;
mod pairs;
pub mod rules;

pub use crate::verdicts::Resample;
pub use judge::{exact_decimal, judge, GateFigures, Judgement};
pub use load::{ResolveRun, ResolvedRun};
pub use markdown::{render_markdown, write_report};
pub use rules::GateRules;

use judge::judge_pair;
use load::{load_run, LoadedRun, RunCell};
use pairs::{check_renames, no_pair_error, pair, pair_cells, unmatched, Paired};

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
/// Default significance level of the verdicts when the baseline's config sets none.
pub const DEFAULT_ALPHA: f64 = crate::verdicts::ALPHA;

/// Name of the Markdown report written by [`write_report`].
pub const REPORT_MD: &str = "compare.md";
/// Name of the JSON report written by [`write_report`].
pub const REPORT_JSON: &str = "compare.json";

/// The tolerances and flags of the gate (see the module documentation for the rule): the
/// reviewer's, with the baseline's config filling every rule a flag leaves out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tolerances {
    /// Largest accuracy drop that passes, in percentage points (≥ 0).
    pub max_accuracy_drop_pts: f64,
    /// Largest increase of mean words retrieved that passes, in percent (≥ 0).
    pub max_words_increase_pct: f64,
    /// Family-wise significance level (`--alpha`), in (0, 1); `None` = the baseline config's
    /// `alpha` (0.05 by default). One α for the verdicts, the Holm rule and `--require`.
    #[serde(default)]
    pub alpha: Option<f64>,
    /// Margin of the verdicts in points (`--margin`); `None` = the baseline config's `margin`.
    #[serde(default)]
    pub margin_pts: Option<f64>,
    /// The primary metric (`--primary`); `None` = the baseline config's `primary`, else its
    /// default over the baseline's cells.
    #[serde(default)]
    pub primary: Option<String>,
    /// The resampling unit (`--resample`); `None` = the baseline config's `resample`.
    #[serde(default)]
    pub resample: Option<crate::verdicts::Resample>,
    /// The verdict every pair must reach (`--require`); `None` = none.
    #[serde(default)]
    pub require: Option<Requirement>,
    /// Compare even when the candidate's config declares other verdict rules than the
    /// baseline's (`--allow-rule-change`); the gate's rules apply either way.
    #[serde(default)]
    pub allow_rule_change: bool,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            max_accuracy_drop_pts: DEFAULT_MAX_ACCURACY_DROP_PTS,
            max_words_increase_pct: DEFAULT_MAX_WORDS_INCREASE_PCT,
            alpha: None,
            margin_pts: None,
            primary: None,
            resample: None,
            require: None,
            allow_rule_change: false,
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
        if let Some(a) = self.alpha {
            if !crate::verdicts::valid_alpha(a) {
                bail!(
                    "--alpha {a}: give a significance level from 0.0001 up to, not including, \
                     0.5, e.g. 0.05"
                );
            }
        }
        if let Some(p) = &self.primary {
            crate::verdicts::Primary::parse(p).map_err(|e| {
                anyhow::anyhow!(
                    "--primary {p:?}: {}",
                    e.to_string().trim_start_matches("field `primary`: ")
                )
            })?;
        }
        if let Some(m) = self.margin_pts {
            if !(m.is_finite() && (0.0..100.0).contains(&m)) {
                bail!("--margin {m}: give a margin in points from 0 up to 100, e.g. 3");
            }
        }
        Ok(())
    }

    /// The rule in one sentence, with these tolerances and the gate's α filled in (used in
    /// both reports).
    pub fn rule(&self, alpha: f64) -> String {
        format!(
            "a cell regresses when its primary metric drops by more than {} points and its \
             Holm-adjusted p is below {}, when the candidate has no value of the primary metric \
             where the baseline has one, or when its mean words retrieved grow by more than \
             {} %{}; a change of exactly the tolerance passes; a baseline cell with no partner \
             fails the gate unless --allow-missing",
            crate::fmt::tolerance(self.max_accuracy_drop_pts),
            alpha,
            crate::fmt::tolerance(self.max_words_increase_pct),
            self.require.map_or(String::new(), |r| format!(
                ", or when its verdict is not {} (--require)",
                r.as_str()
            ))
        )
    }
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
    /// True when the pair is in the gate's planned family (the baseline's `planned:`); an
    /// exploratory pair's primary metric is shown, not judged.
    #[serde(default = "confirmatory_default")]
    pub confirmatory: bool,
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
    /// What a reader of an `ok` row should know (an "inferior" verdict within the tolerance).
    #[serde(default)]
    pub notes: Vec<String>,
}

fn confirmatory_default() -> bool {
    true
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
    /// The rules the gate judged by, each with where it came from (the baseline's config and
    /// the flags, never the candidate's).
    pub rules: GateRules,
    /// Where the candidate's config declares other rules (shown; refused unless
    /// `--allow-rule-change`, or the gate's value came from a flag).
    #[serde(default)]
    pub rule_differences: Vec<rules::RuleDifference>,
    /// Monte Carlo patterns to start the sign-flip tests with (the baseline's
    /// `bootstrap_resamples`), and the bootstrap resamples of the words intervals.
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
    /// Documents holding several compared questions (what the default unit is chosen by).
    #[serde(default)]
    pub shared_documents: usize,
    /// Confirmatory pairs (the family's size m; the rest are exploratory).
    #[serde(default)]
    pub confirmatory: usize,
    /// The Holm family's size: confirmatory pairs with a primary comparison and a differing
    /// question (Tarone 1990).
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

/// Compares the candidate run in `candidate` with the baseline run in `baseline` under `tol`
/// and `pairing` (see the module documentation for the rules, pairing, figures and the rule).
/// `resolve` reads a run's config.json through the pipeline's types (the pipeline's
/// `evaluator::config::resolved_run`): a config cell without a finished record is unpaired, a
/// record of another config ignored.
///
/// # Errors
/// Unusable input, each naming the path and the fix: invalid tolerances; a run directory that
/// is missing or lacks `config.json` or finished cells; unreadable or inconsistent cell files;
/// no pair at all (the message lists which configuration fields differ); a pair computed on a
/// different dataset manifest or on a different set of questions; an unknown primary metric;
/// a candidate config declaring other verdict rules than the baseline's (without
/// `--allow-rule-change`); `--require non-inferior|equivalent` without a margin; a baseline
/// without the `question_doc` column the resampling needs.
pub fn compare_runs(
    baseline: &Path,
    candidate: &Path,
    tol: &Tolerances,
    pairing: &Pairing,
    resolve: &ResolveRun,
) -> Result<CompareReport> {
    tol.validate()?;
    let base = load_run(baseline, "baseline", resolve)?;
    let cand = load_run(candidate, "candidate", resolve)?;
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
    let (rules, differences) = the_rules(tol, &base, &cand)?;
    check_requirement(tol, &rules)?;
    check_question_docs(&rules, &paired, baseline)?;
    let primary = crate::verdicts::Primary::parse(&rules.primary)?;
    let resamples = base.run.bootstrap_resamples;
    let (primary_of, family) = primary_figures(&paired, primary, &rules, &base.run)?;
    let mut cells = Vec::with_capacity(paired.len());
    for (p, prim) in paired.iter().zip(primary_of) {
        cells.push(judge_pair(p, prim, primary, tol, &rules, resamples)?);
    }
    let regressions = cells
        .iter()
        .filter(|c| c.verdict == Verdict::Regression)
        .count();
    let missing = only_in_baseline.len();
    let confirmatory = cells
        .iter()
        .filter(|c| c.confirmatory && c.primary.is_some())
        .count();
    Ok(CompareReport {
        baseline: baseline.display().to_string(),
        candidate: candidate.display().to_string(),
        baseline_name: base.run.name.clone(),
        candidate_name: cand.run.name.clone(),
        tolerances: tol.clone(),
        rule: tol.rule(rules.alpha),
        bootstrap_resamples: resamples,
        primary: primary.name().to_string(),
        margin_pts: rules.margin_pts,
        resample: family
            .as_ref()
            .map_or(String::new(), |f| f.resample.as_str().to_string()),
        shared_documents: family.as_ref().map_or(0, |f| f.shared_documents),
        confirmatory,
        family_size: family
            .as_ref()
            .and_then(|f| f.comparisons.iter().find(|c| !c.exploratory))
            .map_or(0, |c| c.holm_family),
        rules,
        rule_differences: differences,
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

/// The gate's family: each pair's primary comparison (confirmatory when the rules' `planned:`
/// matches the baseline's cell, else exploratory; `None` where a side has no value), computed
/// with the baseline's seed and Monte Carlo start; and the family's result.
///
/// # Errors
/// Statistics errors.
fn primary_figures<'a>(
    paired: &'a [Paired<'a>],
    primary: crate::verdicts::Primary,
    rules: &GateRules,
    base: &ResolvedRun,
) -> Result<(
    Vec<Option<judge::PrimaryFigures<'a>>>,
    Option<crate::verdicts::FamilyResult>,
)> {
    let values: Vec<crate::verdicts::PairValues<'a>> = paired
        .iter()
        .map(|p| crate::verdicts::PairValues::of(primary, &p.base.rows, &p.cand_rows))
        .collect();
    let members: Vec<usize> = (0..paired.len())
        .filter(|&i| !values[i].base.is_empty())
        .collect();
    let member_values: Vec<crate::verdicts::PairValues<'a>> =
        members.iter().map(|&i| values[i].clone()).collect();
    // The plan is the baseline's, in its names: a candidate that renames a planned strategy
    // (paired by --pair) is still in the family.
    let confirmatory: Vec<bool> = members
        .iter()
        .map(|&i| {
            rules
                .planned
                .as_ref()
                .is_none_or(|p| p.matches(&paired[i].base.record.cell))
        })
        .collect();
    let mut out: Vec<Option<judge::PrimaryFigures<'a>>> = vec![None; paired.len()];
    let base_has = paired
        .iter()
        .any(|p| p.base.rows.iter().any(|r| primary.value(r).is_some()));
    if !base_has {
        bail!(
            "the gate's primary metric `{}` ({}) has no value in any of the baseline's cells \
             ({}), so no pair could be judged on it; choose one the baseline has: --primary \
             METRIC, or `primary:` in the baseline's config",
            rules.primary,
            rules.primary_from,
            match primary {
                crate::verdicts::Primary::Accuracy => "they have no reader",
                _ => "no question has what the metric needs: gold evidence or an answer string",
            }
        );
    }
    if member_values.is_empty() {
        return Ok((out, None));
    }
    let f = crate::verdicts::compute_family(
        &member_values,
        &confirmatory,
        &rules.settings(),
        base.seed,
        base.bootstrap_resamples,
    )?;
    let m = confirmatory.iter().filter(|&&c| c).count();
    for ((&i, c), v) in members.iter().zip(&f.comparisons).zip(member_values) {
        out[i] = Some(judge::PrimaryFigures {
            comparison: c.clone(),
            base_mean: v.base_mean(),
            cand_mean: v.cand_mean(),
            values: v,
            unit: f.resample,
            family: m,
        });
    }
    Ok((out, Some(f)))
}

/// The gate's rules (flags, else the baseline's config, with its primary metric resolved
/// over its own cells) and where the candidate's declared rules differ from them.
///
/// # Errors
/// A candidate whose config declares other rules than the gate's where the gate's came from
/// the baseline's config, without `--allow-rule-change`: each difference named, with the fix.
fn the_rules(
    tol: &Tolerances,
    base: &LoadedRun,
    cand: &LoadedRun,
) -> Result<(GateRules, Vec<rules::RuleDifference>)> {
    let resolved = |run: &LoadedRun| -> Result<Option<crate::verdicts::Primary>> {
        let cells: Vec<CellRecord> = run.cells.values().map(|c| c.record.clone()).collect();
        let rows: HashMap<String, Vec<QuestionRow>> = run
            .cells
            .values()
            .map(|c| (c.record.id.clone(), c.rows.clone()))
            .collect();
        crate::verdicts::Primary::resolve(run.run.verdict.primary.as_deref(), &cells, &rows)
    };
    let base_primary = resolved(base)?.unwrap_or(crate::verdicts::Primary::Accuracy);
    let defaulted = base.run.verdict.primary.is_none();
    let rules = rules::gate_rules(tol, &base.run.verdict, base_primary, defaulted);
    let differences = rules::differences(&rules, &base.run.verdict, &cand.run.verdict);
    let refused: Vec<String> = differences
        .iter()
        .filter(|d| !d.by_flag)
        .map(rules::RuleDifference::describe)
        .collect();
    if !refused.is_empty() && !tol.allow_rule_change {
        bail!(
            "the candidate's config declares other verdict rules than the gate's, which come from \
             the baseline run's config and the gate's flags, never from the change under \
             review:\n  {}\nthe gate would still judge by its own rules; to compare anyway, pass \
             --allow-rule-change; to change the rules, change the baseline (re-run it with the \
             new rules and commit it) or give the rule as a flag (--primary, --margin, --alpha, \
             --resample)",
            refused.join("\n  ")
        );
    }
    Ok((rules, differences))
}

/// Refuses a `--require` that cannot be met as configured: non-inferior and equivalent are
/// read against the margin, so without one no pair could ever pass.
fn check_requirement(tol: &Tolerances, rules: &GateRules) -> Result<()> {
    match tol.require {
        Some(r @ (Requirement::NonInferior | Requirement::Equivalent))
            if rules.margin_pts <= 0.0 =>
        {
            bail!(
                "--require {}: the gate has no margin ({}: 0 points), and non-inferiority and \
                 equivalence are judged against one, so no pair could pass; give --margin POINTS \
                 (the largest drop you accept, e.g. 1.0) or set `margin:` in the baseline's \
                 config; --require superior needs no margin",
                r.as_str(),
                rules.margin_from
            )
        }
        _ => Ok(()),
    }
}

/// Refuses a baseline whose cells lack the `question_doc` column when the gate resamples by
/// document (or by default, which needs the documents to choose), or have no subject when it
/// resamples by subject: it would silently resample by question.
fn check_question_docs(rules: &GateRules, paired: &[Paired<'_>], baseline: &Path) -> Result<()> {
    use crate::verdicts::Resample;
    if rules.resample == Some(Resample::Subject) {
        let none = paired
            .iter()
            .all(|p| !p.base.has_subject || p.base.rows.iter().all(|r| r.subject.is_empty()));
        if none {
            bail!(
                "the gate resamples by subject ({}), but no question of the baseline's cells has \
                 a subject (cells/{}.csv{}): it would silently resample by question; give \
                 --resample question or document, or refresh the baseline from a dataset with \
                 subjects (re-run its config: `chunkbench run CONFIG --output DIR`)",
                rules.resample_from,
                paired.first().map_or("", |p| p.base.record.id.as_str()),
                if paired.iter().any(|p| !p.base.has_subject) {
                    " has no `subject` column"
                } else {
                    ""
                }
            );
        }
        return Ok(());
    }
    if rules.resample == Some(Resample::Question) {
        return Ok(());
    }
    if let Some(p) = paired.iter().find(|p| !p.base.has_question_doc) {
        bail!(
            "baseline {}: cells/{}.csv has no `question_doc` column (it was written before \
             chunkbench recorded each question's document), so the verdict cannot resample by \
             document ({}) and would silently resample by question; refresh the baseline — \
             re-run its config with this chunkbench (`chunkbench run CONFIG --output DIR`) and \
             commit DIR/NAME in its place — or give --resample question",
            baseline.display(),
            p.base.record.id,
            match rules.resample {
                Some(_) => format!("{}: document", rules.resample_from),
                None => "the default unit when documents hold several questions".into(),
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
