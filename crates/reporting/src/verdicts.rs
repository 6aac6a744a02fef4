//! The run's verdict: its primary metric over the planned comparisons (each strategy against
//! the baseline at the same dataset, retriever, k and — for accuracy — reader), one Holm
//! family, each comparison with a verdict against the margin ([`stats::plan_family`];
//! docs/reference.md §5 "The verdict").

use crate::md::{Code, Text};
use anyhow::{bail, Result};
use records::{CellRecord, Planned, QuestionRow};
use retriever::metrics::METRICS;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Family-wise significance level of the verdicts.
pub const ALPHA: f64 = stats::DEFAULT_ALPHA;

/// Power at which "questions needed" is computed.
pub const POWER: f64 = stats::DEFAULT_POWER;

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
    fn key(self, r: &QuestionRow) -> String {
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

/// The verdict settings of a run (config fields `primary`, `margin`, `resample`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VerdictSettings {
    /// `accuracy` or a metric name of [`METRICS`]; `None` = the default
    /// ([`Primary::resolve`]).
    pub primary: Option<String>,
    /// Non-inferiority / equivalence margin in points (0 = none).
    pub margin_points: f64,
    /// Resampling unit; `None` = `document` when some document holds several of the
    /// compared questions, else `question`.
    pub resample: Option<Resample>,
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
    fn retrieval(self) -> bool {
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
    /// Documents (or subjects) holding more than one compared question, for the note on
    /// the default.
    pub shared_clusters: usize,
    /// Margin in points.
    pub margin_points: f64,
    /// The planned comparisons, in cell order.
    pub planned: Vec<PlannedCell>,
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
}

/// A family computed by [`compute_family`]: the resampling unit used and one comparison per
/// pair, in order.
#[derive(Debug, Clone)]
pub struct FamilyResult {
    /// The resampling unit used.
    pub resample: Resample,
    /// True when it was chosen by default.
    pub resample_default: bool,
    /// Clusters of that unit holding several compared questions.
    pub shared_clusters: usize,
    /// One comparison per pair.
    pub comparisons: Vec<stats::PlannedComparison>,
}

/// The family of `pairs` under `settings` (resampling unit, margin in points): clusters by
/// the unit (default `document` when some document holds several compared questions), then
/// [`stats::plan_family`].
///
/// # Errors
/// Statistics errors (empty pairs, non-finite values).
pub fn compute_family(
    pairs: &[PairValues<'_>],
    settings: &VerdictSettings,
    seed: u64,
    resamples: usize,
) -> Result<FamilyResult> {
    let shared_docs = shared_clusters(pairs, Resample::Document);
    let (resample, resample_default) = match settings.resample {
        Some(r) => (r, false),
        None if shared_docs > 0 => (Resample::Document, true),
        None => (Resample::Question, true),
    };
    let clusters: Vec<stats::Clusters> = pairs
        .iter()
        .map(|p| stats::Clusters::from_keys(p.rows.iter().map(|r| resample.key(r))))
        .collect();
    let inputs: Vec<stats::PairedInput<'_>> = pairs
        .iter()
        .zip(&clusters)
        .map(|(p, cl)| stats::PairedInput {
            baseline: &p.base,
            candidate: &p.cand,
            clusters: cl,
        })
        .collect();
    let comparisons = stats::plan_family(
        &inputs,
        &stats::FamilySettings {
            alpha: ALPHA,
            power: POWER,
            margin: settings.margin_points / 100.0,
            resamples,
            seed,
        },
    )?;
    Ok(FamilyResult {
        resample,
        resample_default,
        shared_clusters: if resample == Resample::Document {
            shared_docs
        } else {
            shared_clusters(pairs, resample)
        },
        comparisons,
    })
}

/// Plans the run's family and computes every verdict; `None` when the run has no primary
/// metric or no planned comparison.
///
/// # Errors
/// An unknown primary metric, cells run on different questions, statistics errors.
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
        let (cr, br) = crate::report::paired_rows(rows, &c.id, &b.id)?;
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
    let fam = compute_family(&pairs, settings, seed, resamples)?;
    let m = fam.comparisons.len();
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
        shared_clusters: fam.shared_clusters,
        margin_points: settings.margin_points,
        planned,
    }))
}

/// Clusters of `unit` holding more than one compared question, over the datasets of `pairs`
/// (each dataset's questions counted once).
fn shared_clusters(pairs: &[PairValues<'_>], unit: Resample) -> usize {
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

/// A difference on the 0–1 scale in signed points with one decimal (`+1.2`); rounded first,
/// then `+ 0.0`, so that nothing prints as `-0.0`.
pub fn signed_points(x: f64) -> String {
    format!("{:+.1}", (1000.0 * x).round() / 10.0 + 0.0)
}

/// `+1.2 [−0.3, +2.7]` in points, or `+1.2 [n too small]`.
pub fn delta_points(c: &stats::PlannedComparison) -> String {
    let pts = signed_points;
    match c.interval {
        Some(i) => format!("{} [{}, {}]", pts(c.estimate), pts(i.lower), pts(i.upper)),
        None => format!("{} [n too small]", pts(c.estimate)),
    }
}

/// summary.md's verdict section (first after the title): the family's settings in words and
/// one row per planned comparison.
pub fn section(family: &Family, resamples: usize, seed: u64) -> String {
    let m = family.planned.len();
    let holm = family
        .planned
        .first()
        .map_or(0, |p| p.planned.comparison.holm_family);
    let left_out = if holm < m {
        format!(
            " (the {} whose questions all agree cannot reach significance and are left out, Tarone 1990)",
            m - holm
        )
    } else {
        String::new()
    };
    let label = family.primary.label();
    let margin = if family.margin_points > 0.0 {
        format!(
            "margin {:.1} points (set with `margin:`): non-inferior = the simultaneous interval's lower end above −{0:.1}; equivalent = the interval inside ±{0:.1}",
            family.margin_points
        )
    } else {
        "no margin (set `margin:` in points to test non-inferiority and equivalence): only superior, inferior or inconclusive".to_string()
    };
    let resample = match (family.resample, family.resample_default) {
        (Resample::Question | Resample::Subject, true) => {
            "by question (the default: no document holds more than one compared question)"
                .to_string()
        }
        (Resample::Document, true) => format!(
            "by document (the default, since {} documents hold several compared questions; set `resample: question` to override)",
            family.shared_clusters
        ),
        (r, false) => format!(
            "by {} (`resample: {}`; {} clusters hold several questions)",
            r.as_str(),
            r.as_str(),
            family.shared_clusters
        ),
    };
    let mut md = format!(
        "\n## Verdict: {label} against the baseline\n\n\
         Primary metric {} (`primary:`), in points; {m} planned comparison{} (each strategy against the baseline at the same dataset, retriever, k{}), one Holm family of size {holm}{left_out}; every other figure in this summary is exploratory (unadjusted). \
         Resampled {resample}. Δ: candidate − baseline with its 95 % interval (Tango's score interval for right/wrong values with independent questions, else the expanded percentile bootstrap over the resampling units, B = {resamples}, seed {seed}); p: two-sided sign-flip test by resampling unit (McNemar's exact test for right/wrong values with independent questions), Monte Carlo with at least ⌈20·m/α⌉ patterns so its floor never decides; Holm p over the family. \
         Verdict at α = {ALPHA} family-wise, {margin}; non-inferiority and equivalence are read from intervals at 1 − α/m (Bonferroni), superior/inferior from Holm p. Questions needed: to settle the verdict (or, when inconclusive, the nearest claim) at power {POWER}, taking the observed difference, spread and design effect as true.\n\n\
         | dataset | strategy | retriever | k | reader | n | clusters | baseline | cell | Δ pts [95% CI] | interval at 1 − α/m | p | Holm p | verdict | questions needed | design effect |\n\
         |---|---|---|---:|---|---:|---:|---:|---:|---|---|---:|---:|---|---:|---:|\n",
        Code(family.primary.name()),
        if m == 1 { "" } else { "s" },
        if family.primary.retrieval() {
            ""
        } else {
            " and reader"
        },
    );
    for pc in &family.planned {
        let (p, key) = (&pc.planned, &pc.cell);
        let c = &p.comparison;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} | **{}** | {} | {} |",
            Text(&key.dataset),
            Text(&key.strategy),
            Text(&key.retriever),
            key.depth_label(),
            if family.primary.retrieval() {
                "–".to_string()
            } else {
                Text(&key.reader).to_string()
            },
            c.n,
            c.clusters,
            100.0 * p.baseline_mean,
            100.0 * p.mean,
            delta_points(c),
            c.simultaneous.map_or("–".to_string(), |i| format!(
                "[{}, {}]",
                signed_points(i.lower),
                signed_points(i.upper)
            )),
            crate::fmt::p_value(c.p),
            crate::fmt::p_value(c.holm_p),
            c.verdict,
            c.questions_needed
                .map_or("–".to_string(), |n| n.to_string()),
            c.design_effect.map_or("–".to_string(), |d| format!("{d:.2}")),
        );
    }
    md.push_str(&cluster_floor_note(family, holm));
    md
}

/// The cluster counts among `clusters` whose exact sign-flip test cannot reach `threshold`:
/// its smallest two-sided p with `c` clusters is 2/2^c (with fewer nonzero clusters it is
/// larger still, so a count listed here is limited for certain).
fn floor_limited(clusters: impl Iterator<Item = usize>, threshold: f64) -> Vec<usize> {
    clusters
        .filter(|&c| c > 0 && c < 64 && 2f64.powi(1 - c as i32) > threshold)
        .collect()
}

/// A note under the verdict table when some comparison has too few resampling units for the
/// sign-flip test ever to reach the smallest Holm threshold α/m: with `c` clusters its
/// two-sided p is at least 2/2^c (every sign pattern enumerated), so superior or inferior
/// cannot be declared whatever the difference — more documents are needed, not more
/// questions (the "questions needed" figure assumes more clusters like the present ones).
/// Empty when no comparison is limited so.
fn cluster_floor_note(family: &Family, holm: usize) -> String {
    let threshold = ALPHA / holm.max(1) as f64;
    let limited = floor_limited(
        family
            .planned
            .iter()
            .map(|pc| pc.planned.comparison.clusters),
        threshold,
    );
    let Some(&most) = limited.iter().max() else {
        return String::new();
    };
    format!(
        "\n**Too few resampling units for a significant verdict.** {} of the {} comparisons have \
         at most {most} clusters: the sign-flip test's smallest attainable p is 2/2^{most} = \
         {:.4}, above the Holm threshold α/m = {threshold:.4}, so superior or inferior cannot be \
         declared there, however large Δ is. More documents would settle it, not more questions \
         per document; if the questions are independent of their documents, `resample: question` \
         is the right unit.\n",
        limited.len(),
        family.planned.len(),
        2f64.powi(1 - most as i32),
    )
}

#[cfg(test)]
mod floor_tests {
    use super::floor_limited;

    #[test]
    fn too_few_clusters_are_flagged_against_the_holm_threshold() {
        // 8 clusters: smallest p 2/256 = 0.0078, above 0.05/40 = 0.00125 (flagged) but below
        // 0.05/5 = 0.01 (a family of 5 can still reach significance).
        assert_eq!(floor_limited([8, 12, 337].into_iter(), 0.05 / 40.0), [8]);
        assert!(floor_limited([8].into_iter(), 0.05 / 5.0).is_empty());
        // 5 clusters: 2/32 = 0.0625 > 0.05 even alone.
        assert_eq!(floor_limited([5].into_iter(), 0.05), [5]);
        // 6 clusters: 2/64 = 0.03125 < 0.05.
        assert!(floor_limited([6].into_iter(), 0.05).is_empty());
        assert!(floor_limited([0, 100].into_iter(), 1e-9).is_empty());
    }
}
