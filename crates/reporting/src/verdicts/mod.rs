//! The run's verdict: its primary metric over the planned comparisons (each strategy against
//! the baseline at the same dataset, retriever, k and — for accuracy — reader), one Holm
//! family of the confirmatory ones (every comparison, or those `planned:` names), each with a
//! verdict against the margin ([`stats::plan_family`]); the rest exploratory
//! ([`stats::explore`]); docs/reference.md §5 "The verdict".

mod planned;
mod section;

pub use planned::{OneOrMany, PlannedCells};
pub use section::{delta_points, needed_cell, section, signed_points};

use anyhow::{bail, Result};
use records::{CellRecord, Planned, QuestionRow};
use retriever::metrics::METRICS;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Default family-wise significance level of the verdicts (config `alpha:`).
pub const ALPHA: f64 = stats::DEFAULT_ALPHA;

/// Power at which "questions needed" is computed.
pub const POWER: f64 = stats::DEFAULT_POWER;

/// True for a family-wise α chunkbench computes with: from 0.0001 up to, not including, 0.5.
/// Below 0.0001 the Monte Carlo tests could not reach the thresholds in bounded time; at 0.5
/// and above an interval at 1 − α is no interval a verdict can be read from.
pub fn valid_alpha(alpha: f64) -> bool {
    (1e-4..0.5).contains(&alpha)
}

/// What the intervals and tests resample: the config's `resample:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resample {
    /// Every question independent.
    Question,
    /// Questions about one document resampled together ([`QuestionRow::question_doc`]).
    Document,
    /// Questions of one subject resampled together ([`QuestionRow::subject`]).
    Subject,
}

impl Resample {
    /// The config's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Resample::Question => "question",
            Resample::Document => "document",
            Resample::Subject => "subject",
        }
    }

    /// A question's cluster key: its document or subject, or (empty, or `question`) its own id.
    pub(crate) fn key(self, r: &QuestionRow) -> String {
        let shared = match self {
            Resample::Question => "",
            Resample::Document => r.question_doc.as_str(),
            Resample::Subject => r.subject.as_str(),
        };
        if shared.is_empty() {
            format!("q\u{1f}{}", r.question_id)
        } else {
            format!("c\u{1f}{shared}")
        }
    }
}

/// The verdict settings of a run (config fields `primary`, `margin`, `resample`, `alpha`,
/// `effect`, `planned`): the one typed value the runner reads from YAML, writes to
/// config.json, and `compare` reads back as the gate's rules.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictSettings {
    /// `accuracy` or a metric name of [`METRICS`]; `None` = the default
    /// ([`Primary::resolve`]).
    pub primary: Option<String>,
    /// Non-inferiority / equivalence margin in points (0 = none).
    pub margin_points: f64,
    /// Resampling unit; `None` = `document` when some document holds several of the
    /// compared questions, else `question`.
    pub resample: Option<Resample>,
    /// Family-wise significance level α, in (0, 1) (default [`ALPHA`]).
    pub alpha: f64,
    /// The smallest difference worth detecting, in points (0 = none): what "questions needed"
    /// is computed for when there is no margin.
    pub effect_points: f64,
    /// The confirmatory comparisons; `None` = every comparison.
    pub planned: Option<PlannedCells>,
}

impl Default for VerdictSettings {
    fn default() -> Self {
        VerdictSettings {
            primary: None,
            margin_points: 0.0,
            resample: None,
            alpha: ALPHA,
            effect_points: 0.0,
            planned: None,
        }
    }
}

/// The metric the verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primary {
    /// The reader's accuracy (a question is 1 when answered correctly; ties and invalid
    /// answers 0).
    Accuracy,
    /// A retrieval metric: its position in [`METRICS`].
    Metric(usize),
}

impl Primary {
    /// Parses a config's `primary`: `accuracy` or a metric name.
    ///
    /// # Errors
    /// Any other name, with the list of valid ones.
    pub fn parse(name: &str) -> Result<Self> {
        if name == "accuracy" {
            return Ok(Primary::Accuracy);
        }
        match retriever::metrics::registry::index_of(name) {
            Some(i) if METRICS[i].higher_is_better => Ok(Primary::Metric(i)),
            _ => bail!(
                "field `primary`: {name:?} is not a metric (use accuracy or one of: {})",
                METRICS
                    .iter()
                    .filter(|m| m.higher_is_better)
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The primary metric of a run: the config's, else accuracy when some cell was read,
    /// else recall@k when some question has gold evidence, else answer recall when some
    /// question has an answer string; `None` when the run has nothing to compare on.
    ///
    /// # Errors
    /// An unknown `primary` name.
    pub fn resolve(
        explicit: Option<&str>,
        cells: &[CellRecord],
        rows: &HashMap<String, Vec<QuestionRow>>,
    ) -> Result<Option<Self>> {
        if let Some(name) = explicit {
            return Self::parse(name).map(Some);
        }
        if cells.iter().any(|c| c.summary.accuracy.is_some()) {
            return Ok(Some(Primary::Accuracy));
        }
        for name in ["recall", "answer_recall"] {
            let Some(i) = retriever::metrics::registry::index_of(name) else {
                continue;
            };
            let defined = rows.values().flatten().any(|r| r.metrics.at(i).is_some());
            if defined {
                return Ok(Some(Primary::Metric(i)));
            }
        }
        Ok(None)
    }

    /// Its name (`accuracy`, `recall`, …).
    pub fn name(self) -> &'static str {
        match self {
            Primary::Accuracy => "accuracy",
            Primary::Metric(i) => METRICS[i].name,
        }
    }

    /// Its label in the reports.
    pub fn label(self) -> &'static str {
        match self {
            Primary::Accuracy => "accuracy",
            Primary::Metric(i) => METRICS[i].label,
        }
    }

    /// A question's value (0–1); `None` where it is not defined (not read, no evidence).
    pub fn value(self, r: &QuestionRow) -> Option<f64> {
        match self {
            Primary::Accuracy => r.correct.map(f64::from),
            Primary::Metric(i) => r.metrics.at(i),
        }
    }

    /// True when the metric does not depend on the reader (one comparison stands for every
    /// reader's copy of the cell).
    pub fn retrieval(self) -> bool {
        matches!(self, Primary::Metric(_))
    }
}

/// The run's planned comparisons with their verdicts.
#[derive(Debug, Clone)]
pub struct Family {
    /// The primary metric.
    pub primary: Primary,
    /// The resampling unit used.
    pub resample: Resample,
    /// True when `resample` was chosen by default rather than set.
    pub resample_default: bool,
    /// Documents holding more than one compared question (whatever the unit used).
    pub shared_documents: usize,
    /// Clusters of the unit used holding more than one compared question.
    pub shared_clusters: usize,
    /// True when the unit is `document` or `subject` and no compared question has one: every
    /// question is then its own cluster (resampled by question in effect), which summary.md
    /// says.
    pub unit_missing: bool,
    /// The settings the family was computed with (margin, α, effect, `planned:`).
    pub settings: VerdictSettings,
    /// The planned comparisons, confirmatory and exploratory, in cell order.
    pub planned: Vec<PlannedCell>,
    /// The confirmatory comparisons under the other resampling unit, a sensitivity analysis;
    /// `None` when no document holds several compared questions (the unit cannot matter).
    pub sensitivity: Option<Sensitivity>,
}

/// The confirmatory family recomputed under another resampling unit ([`Family::sensitivity`]).
#[derive(Debug, Clone)]
pub struct Sensitivity {
    /// The other unit.
    pub resample: Resample,
    /// One comparison per confirmatory cell, in the family's order.
    pub comparisons: Vec<stats::PlannedComparison>,
}

/// One planned comparison and the cell it is about.
#[derive(Debug, Clone)]
pub struct PlannedCell {
    /// The cell's id.
    pub cell_id: String,
    /// The cell's coordinates.
    pub cell: records::CellKey,
    /// The comparison.
    pub planned: Planned,
}

impl Family {
    /// The planned comparison of a cell, if it is one.
    pub fn of(&self, cell_id: &str) -> Option<&Planned> {
        self.planned
            .iter()
            .find(|p| p.cell_id == cell_id)
            .map(|p| &p.planned)
    }

    /// The confirmatory comparisons (the Holm family).
    pub fn confirmatory(&self) -> impl Iterator<Item = &PlannedCell> {
        self.planned
            .iter()
            .filter(|p| !p.planned.comparison.exploratory)
    }

    /// The family's size `m`: its confirmatory comparisons.
    pub fn size(&self) -> usize {
        self.confirmatory().count()
    }
}

/// Same dataset, retriever and k (and reader, for a reader-dependent metric), baseline
/// strategy.
fn partners(primary: Primary, a: &CellRecord, b: &CellRecord) -> bool {
    a.cell.dataset == b.cell.dataset
        && a.cell.retriever == b.cell.retriever
        && a.cell.same_depth(&b.cell)
        && (primary.retrieval() || a.cell.reader == b.cell.reader)
}

/// The cells the primary metric is compared on: those with a value for some question; for
/// a retrieval metric one per dataset × strategy × retriever × k (the first reader's).
fn compared_cells<'a>(
    primary: Primary,
    cells: &'a [CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Vec<&'a CellRecord> {
    let mut seen = std::collections::HashSet::new();
    cells
        .iter()
        .filter(|c| {
            rows.get(&c.id)
                .is_some_and(|rs| rs.iter().any(|r| primary.value(r).is_some()))
        })
        .filter(|c| {
            !primary.retrieval()
                || seen.insert((
                    c.cell.dataset.clone(),
                    c.cell.strategy.clone(),
                    c.cell.retriever.clone(),
                    c.cell.depth_label(),
                ))
        })
        .collect()
}

/// One comparison's aligned values of the primary metric over the questions where both
/// sides have one, with the baseline's rows (for the cluster keys).
#[derive(Debug, Clone)]
pub struct PairValues<'a> {
    /// Baseline values (0–1).
    pub base: Vec<f64>,
    /// Candidate values on the same questions.
    pub cand: Vec<f64>,
    /// The baseline's row of each question.
    pub rows: Vec<&'a QuestionRow>,
}

impl<'a> PairValues<'a> {
    /// The values of `primary` on rows aligned question by question (`base[i]` and
    /// `cand[i]` the same question), kept where both are defined.
    pub fn of(primary: Primary, base: &'a [QuestionRow], cand: &[&QuestionRow]) -> Self {
        let mut out = PairValues {
            base: Vec::new(),
            cand: Vec::new(),
            rows: Vec::new(),
        };
        for (x, y) in base.iter().zip(cand) {
            if let (Some(bv), Some(cv)) = (primary.value(x), primary.value(y)) {
                out.base.push(bv);
                out.cand.push(cv);
                out.rows.push(x);
            }
        }
        out
    }

    /// Mean of the baseline's values.
    pub fn base_mean(&self) -> f64 {
        self.base.iter().sum::<f64>() / self.base.len().max(1) as f64
    }

    /// Mean of the candidate's values.
    pub fn cand_mean(&self) -> f64 {
        self.cand.iter().sum::<f64>() / self.cand.len().max(1) as f64
    }

    /// The questions' clusters under `unit`.
    pub fn clusters(&self, unit: Resample) -> stats::Clusters {
        stats::Clusters::from_keys(self.rows.iter().map(|r| unit.key(r)))
    }
}

/// A family computed by [`compute_family`]: the resampling unit used and one comparison per
/// pair, in order.
#[derive(Debug, Clone)]
pub struct FamilyResult {
    /// The resampling unit used.
    pub resample: Resample,
    /// True when it was chosen by default.
    pub resample_default: bool,
    /// Documents holding several compared questions.
    pub shared_documents: usize,
    /// Clusters of the unit used holding several compared questions.
    pub shared_clusters: usize,
    /// The unit is `document` or `subject` and no compared question has one.
    pub unit_missing: bool,
    /// One comparison per pair (exploratory ones flagged).
    pub comparisons: Vec<stats::PlannedComparison>,
    /// The confirmatory comparisons under the other unit ([`Family::sensitivity`]).
    pub sensitivity: Option<Sensitivity>,
}

/// The settings of [`stats::plan_family`] for `settings` (points → the metric's scale).
pub fn family_settings(
    settings: &VerdictSettings,
    seed: u64,
    resamples: usize,
) -> stats::FamilySettings {
    stats::FamilySettings {
        alpha: settings.alpha,
        power: POWER,
        margin: settings.margin_points / 100.0,
        effect: settings.effect_points / 100.0,
        resamples,
        seed,
    }
}

/// The family of `pairs` under `settings` (resampling unit, margin in points, α), where
/// `confirmatory[i]` says whether pair `i` is in the Holm family ([`stats::plan_family`]) or
/// exploratory ([`stats::explore`]): clusters by the unit (default `document` when some
/// document holds several compared questions), and the confirmatory family again under the
/// other unit as a sensitivity analysis when documents hold several compared questions.
///
/// # Errors
/// Statistics errors (empty pairs, non-finite values).
pub fn compute_family(
    pairs: &[PairValues<'_>],
    confirmatory: &[bool],
    settings: &VerdictSettings,
    seed: u64,
    resamples: usize,
) -> Result<FamilyResult> {
    let shared_documents = shared_clusters(pairs, Resample::Document);
    let (resample, resample_default) = match settings.resample {
        Some(r) => (r, false),
        None if shared_documents > 0 => (Resample::Document, true),
        None => (Resample::Question, true),
    };
    let fs = family_settings(settings, seed, resamples);
    let run = |unit: Resample, which: bool, fs: &stats::FamilySettings| {
        let clusters: Vec<stats::Clusters> = pairs
            .iter()
            .zip(confirmatory)
            .filter(|(_, &c)| c == which)
            .map(|(p, _)| p.clusters(unit))
            .collect();
        let inputs: Vec<stats::PairedInput<'_>> = pairs
            .iter()
            .zip(confirmatory)
            .filter(|(_, &c)| c == which)
            .zip(&clusters)
            .map(|((p, _), cl)| stats::PairedInput {
                baseline: &p.base,
                candidate: &p.cand,
                clusters: cl,
            })
            .collect();
        if which {
            stats::plan_family(&inputs, fs)
        } else {
            stats::explore(&inputs, fs)
        }
    };
    let mut planned = run(resample, true, &fs)?.into_iter();
    let m = confirmatory.iter().filter(|&&c| c).count();
    let explore_settings = stats::FamilySettings {
        seed: seed.wrapping_add(m as u64),
        ..fs
    };
    let mut explored = run(resample, false, &explore_settings)?.into_iter();
    let comparisons = confirmatory
        .iter()
        .map(|&c| if c { planned.next() } else { explored.next() })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    let other = match resample {
        Resample::Question if shared_documents > 0 => Some(Resample::Document),
        Resample::Document | Resample::Subject if shared_clusters(pairs, resample) > 0 => {
            Some(Resample::Question)
        }
        _ => None,
    };
    let sensitivity = match other {
        Some(unit) if m > 0 => Some(Sensitivity {
            resample: unit,
            comparisons: run(unit, true, &fs)?,
        }),
        _ => None,
    };
    let unit_missing = resample != Resample::Question
        && pairs.iter().flat_map(|p| &p.rows).all(|r| match resample {
            Resample::Document => r.question_doc.is_empty(),
            _ => r.subject.is_empty(),
        });
    Ok(FamilyResult {
        resample,
        resample_default,
        shared_documents,
        shared_clusters: shared_clusters(pairs, resample),
        unit_missing,
        comparisons,
        sensitivity,
    })
}

/// Plans the run's family and computes every verdict; `None` when the run has no primary
/// metric or no planned comparison.
///
/// # Errors
/// An unknown primary metric, cells run on different questions, a `planned:` that names no
/// comparison, statistics errors.
pub fn plan(
    settings: &VerdictSettings,
    baseline: &str,
    seed: u64,
    resamples: usize,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Result<Option<Family>> {
    let Some(primary) = Primary::resolve(settings.primary.as_deref(), cells, rows)? else {
        return Ok(None);
    };
    let chosen = compared_cells(primary, cells, rows);
    let mut cells_of = Vec::new();
    let mut pairs = Vec::new();
    for &c in &chosen {
        if c.cell.strategy == baseline {
            continue;
        }
        let Some(&b) = chosen
            .iter()
            .find(|b| b.cell.strategy == baseline && partners(primary, b, c))
        else {
            continue;
        };
        let (cr, br) = paired_rows(rows, &c.id, &b.id)?;
        let cand: Vec<&QuestionRow> = cr.iter().collect();
        let pair = PairValues::of(primary, br, &cand);
        if !pair.base.is_empty() {
            pairs.push(pair);
            cells_of.push((c, b));
        }
    }
    if pairs.is_empty() {
        return Ok(None);
    }
    let confirmatory: Vec<bool> = cells_of
        .iter()
        .map(|(c, _)| settings.planned.as_ref().is_none_or(|p| p.matches(&c.cell)))
        .collect();
    if !confirmatory.contains(&true) {
        bail!(
            "field `planned`: {} matches none of the run's {} comparisons against the baseline; \
             name a dataset, strategy, retriever, k, budget or reader the run compares",
            settings
                .planned
                .as_ref()
                .map_or(String::new(), PlannedCells::describe),
            pairs.len()
        );
    }
    let fam = compute_family(&pairs, &confirmatory, settings, seed, resamples)?;
    let m = confirmatory.iter().filter(|&&c| c).count();
    let margin = settings.margin_points / 100.0;
    let planned = pairs
        .iter()
        .zip(&cells_of)
        .zip(fam.comparisons)
        .map(|((p, (c, b)), comparison)| PlannedCell {
            cell_id: c.id.clone(),
            cell: c.cell.clone(),
            planned: Planned {
                metric: primary.name().to_string(),
                baseline_cell_id: b.id.clone(),
                baseline_mean: p.base_mean(),
                mean: p.cand_mean(),
                margin,
                resample: fam.resample.as_str().to_string(),
                family_size: m,
                comparison,
            },
        })
        .collect();
    Ok(Some(Family {
        primary,
        resample: fam.resample,
        resample_default: fam.resample_default,
        shared_documents: fam.shared_documents,
        shared_clusters: fam.shared_clusters,
        unit_missing: fam.unit_missing,
        settings: settings.clone(),
        planned,
        sensitivity: fam.sensitivity,
    }))
}

/// The resampling unit of a run's comparisons when it has no family to take it from (no
/// comparison of the primary metric): the config's `resample:`, else `document` when some
/// document holds several of the run's questions, else `question` — the family's own rule.
pub fn unit_without_family(
    settings: &VerdictSettings,
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Resample {
    if let Some(r) = settings.resample {
        return r;
    }
    let mut per_doc: HashMap<(&str, &str), std::collections::HashSet<&str>> = HashMap::new();
    for r in rows
        .values()
        .flatten()
        .filter(|r| !r.question_doc.is_empty())
    {
        per_doc
            .entry((r.dataset.as_str(), r.question_doc.as_str()))
            .or_default()
            .insert(r.question_id.as_str());
    }
    if per_doc.values().any(|qs| qs.len() > 1) {
        Resample::Document
    } else {
        Resample::Question
    }
}

/// Clusters of `unit` holding more than one compared question, over the datasets of `pairs`
/// (each dataset's questions counted once).
pub fn shared_clusters(pairs: &[PairValues<'_>], unit: Resample) -> usize {
    let mut seen = std::collections::HashSet::new();
    let mut sizes: HashMap<(String, String), usize> = HashMap::new();
    for p in pairs {
        for r in &p.rows {
            if seen.insert((r.dataset.clone(), r.question_id.clone())) {
                *sizes.entry((r.dataset.clone(), unit.key(r))).or_default() += 1;
            }
        }
    }
    sizes
        .iter()
        .filter(|((_, k), &n)| n > 1 && k.starts_with('c'))
        .count()
}

/// The per-question rows of a cell and of its baseline, checked to be on the same questions
/// in the same order (what every paired test here needs).
///
/// # Errors
/// Different question lists: the two cells cannot be paired.
pub(crate) fn paired_rows<'a>(
    rows: &'a HashMap<String, Vec<QuestionRow>>,
    cell: &str,
    baseline: &str,
) -> Result<(&'a [QuestionRow], &'a [QuestionRow])> {
    let (cr, br) = (&rows[cell], &rows[baseline]);
    if cr.len() != br.len()
        || cr
            .iter()
            .zip(br)
            .any(|(x, y)| x.question_id != y.question_id)
    {
        bail!("cells {cell} and {baseline} were run on different questions; they cannot be paired");
    }
    Ok((cr, br))
}
