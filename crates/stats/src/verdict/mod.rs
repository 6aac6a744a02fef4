//! Verdicts for a family of planned paired comparisons: intervals that reflect the sample
//! (Tango's score interval, Rao–Scott for clustered questions, cluster-robust t), the
//! sign-flip test by cluster with Monte Carlo draws that go on until the Holm decision is
//! settled, non-inferiority and equivalence against a margin, and the questions an
//! inconclusive comparison needs (docs/reference.md §5 "Statistics", "The verdict").
//!
//! A *planned comparison* pairs a candidate's per-question values of the primary metric with
//! the baseline's on the same questions. The *family* is the run's confirmatory comparisons
//! (every comparison, or those the config's `planned:` names); its size `m` sets the Holm
//! adjustment of the p-values and the level `1 − α/m` of the simultaneous intervals the
//! verdicts are read from (Bonferroni, so that all verdicts of the family hold together with
//! probability at least `1 − α`). Comparisons outside it are *exploratory*: an interval at
//! `1 − α` and an unadjusted p, no verdict ([`explore`]).
//!
//! Units: per-question values are in the metric's own scale (a proportion in `[0, 1]` for
//! accuracy and every registered retrieval metric); [`PlannedComparison`] reports differences
//! in the same scale, and `margin` and `effect` are given in it too (callers showing points
//! multiply by 100).

mod interval;
mod needed;
mod signflip;

pub use interval::{
    design_effect, paired_interval, tango_interval, tango_statistic, Clusters, IntervalMethod,
    PairedInterval,
};
pub use needed::{questions_needed, Claim, QuestionsNeeded, QUESTIONS_NEEDED_CAP};
pub use signflip::{cluster_sign_flip_test, monte_carlo_limit, ClusterSignFlip};

use crate::{check_finite, check_same_len, valid_level, Interval, StatsError};
use serde::{Deserialize, Serialize};
use signflip::SignFlip;

/// What a planned comparison lets a team conclude about the candidate against the baseline,
/// for a metric where higher is better and a margin `δ ≥ 0` ([`verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Better: Holm-adjusted p < α and the difference positive.
    Superior,
    /// Within the margin either way: the simultaneous interval inside `(−δ, δ)` (two one-sided
    /// tests, Schuirmann 1987).
    Equivalent,
    /// Not worse by the margin: the simultaneous interval's lower end above `−δ`.
    NonInferior,
    /// Worse: Holm-adjusted p < α, the difference negative, and non-inferiority not shown.
    Inferior,
    /// None of the above: more questions are needed ([`PlannedComparison::questions_needed`]).
    Inconclusive,
}

impl Verdict {
    /// Every verdict, in precedence order.
    pub const ALL: [Verdict; 5] = [
        Verdict::Superior,
        Verdict::Equivalent,
        Verdict::NonInferior,
        Verdict::Inferior,
        Verdict::Inconclusive,
    ];

    /// The word reports print (`superior`, `equivalent`, `non-inferior`, `inferior`,
    /// `inconclusive`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Superior => "superior",
            Verdict::Equivalent => "equivalent",
            Verdict::NonInferior => "non-inferior",
            Verdict::Inferior => "inferior",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// Parses [`Verdict::as_str`]'s words.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// True for the verdicts that show the candidate is not worse by more than the margin
    /// (superior, equivalent, non-inferior).
    pub fn at_least_non_inferior(self) -> bool {
        matches!(
            self,
            Verdict::Superior | Verdict::Equivalent | Verdict::NonInferior
        )
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict of one planned comparison (higher is better), first that holds in this order:
///
/// 1. superior — `holm_p < alpha` and `estimate > 0`;
/// 2. equivalent — `margin > 0` and `−margin < lower` and `upper < margin`;
/// 3. non-inferior — `margin > 0` and `lower > −margin`;
/// 4. inferior — `holm_p < alpha` and `estimate < 0`;
/// 5. inconclusive.
///
/// `simultaneous` is the interval at level `1 − alpha/m` for a family of `m` ([`plan_family`]):
/// reading non-inferiority and equivalence from it is the confidence-interval form of the
/// one-sided tests at `alpha/(2m)` each (Schuirmann 1987; CONSORT for non-inferiority trials,
/// Piaggio et al. 2012, JAMA 308:2594, Fig. 1), Bonferroni-adjusted across the family. With
/// `margin = 0` only superior, inferior and inconclusive are possible. `None` for the interval
/// (too few questions) leaves only the Holm-based verdicts.
pub fn verdict(
    estimate: f64,
    holm_p: f64,
    simultaneous: Option<Interval>,
    margin: f64,
    alpha: f64,
) -> Verdict {
    let significant = holm_p < alpha;
    let within = |i: &Interval| margin > 0.0 && i.lower > -margin;
    if significant && estimate > 0.0 {
        Verdict::Superior
    } else if simultaneous.is_some_and(|i| within(&i) && i.upper < margin) {
        Verdict::Equivalent
    } else if simultaneous.is_some_and(|i| within(&i)) {
        Verdict::NonInferior
    } else if significant && estimate < 0.0 {
        Verdict::Inferior
    } else {
        Verdict::Inconclusive
    }
}

/// Settings of a family of planned comparisons ([`plan_family`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FamilySettings {
    /// Family-wise significance level α (default 0.05).
    pub alpha: f64,
    /// Power for [`PlannedComparison::questions_needed`] (default 0.8).
    pub power: f64,
    /// Non-inferiority / equivalence margin δ ≥ 0, in the metric's scale (0 = none).
    pub margin: f64,
    /// The smallest difference worth detecting, in the metric's scale (0 = none stated): what
    /// "questions needed" is computed for when there is no margin.
    #[serde(default)]
    pub effect: f64,
    /// Monte Carlo sign patterns to start with (raised where the family needs more,
    /// [`monte_carlo_resamples`], and while a decision is unsettled).
    pub resamples: usize,
    /// Seed of every random stream.
    pub seed: u64,
}

/// Monte Carlo sign patterns to start with for a family of `m` tests at level `alpha`: at
/// least `resamples` and at least `⌈20·m/α⌉`, so the smallest attainable p-value `1/(B + 1)`
/// is below `α/(20m)` — a twentieth of the smallest Holm threshold `α/m`. [`plan_family`]
/// draws more while a p-value's side of a Holm threshold is not settled.
pub fn monte_carlo_resamples(resamples: usize, m: usize, alpha: f64) -> usize {
    let floor = (20.0 * m.max(1) as f64 / alpha).ceil();
    resamples.max(if floor.is_finite() {
        floor as usize
    } else {
        resamples
    })
}

/// One planned comparison: candidate against baseline on the primary metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedComparison {
    /// Paired questions (where the metric is defined for both).
    pub n: usize,
    /// Resampling units (clusters; `n` when questions are independent).
    pub clusters: usize,
    /// `mean(candidate − baseline)`, in the metric's scale.
    pub estimate: f64,
    /// Population standard deviation of the per-question differences.
    pub sd: f64,
    /// Two-sided interval at `1 − α` (95 %) of `estimate` ([`paired_interval`]); `None` when
    /// fewer than two questions or clusters.
    pub interval: Option<Interval>,
    /// The interval at `1 − α/m` the verdict is read from (the 95 % one for an exploratory
    /// comparison).
    pub simultaneous: Option<Interval>,
    /// How both intervals were computed.
    pub method: IntervalMethod,
    /// Two-sided p of no difference: sign-flip by cluster (exact McNemar for 0/1 values and
    /// independent questions).
    pub p: f64,
    /// True when `p` is exact (every sign pattern enumerated).
    pub exact: bool,
    /// Monte Carlo sign patterns drawn (0 when `p` is exact).
    #[serde(default)]
    pub resamples: usize,
    /// True when `p`'s side of every Holm threshold `α/j` of the family is settled: exact, or
    /// no threshold inside the Monte Carlo estimate's 99.9 % interval after drawing up to
    /// [`monte_carlo_limit`] patterns. A verdict read from an unsettled p may flip with the
    /// seed; reports say so.
    #[serde(default = "settled_default")]
    pub p_settled: bool,
    /// `p` Holm-adjusted over the family's informative comparisons (1 for one whose
    /// questions all agree; `p` itself for an exploratory comparison).
    pub holm_p: f64,
    /// Questions whose values differ between candidate and baseline.
    pub differing: usize,
    /// Comparisons of the family in the Holm adjustment: those with a differing question
    /// (Tarone 1990, "A modified Bonferroni method for discrete data", Biometrics 46:515–522:
    /// a test that cannot reach significance does not count). 0 for an exploratory comparison.
    pub holm_family: usize,
    /// Design effect ([`design_effect`]); `None` when undefined.
    pub design_effect: Option<f64>,
    /// The verdict ([`verdict`]); `Inconclusive` and never read for an exploratory comparison.
    pub verdict: Verdict,
    /// For an inconclusive verdict: the questions that would settle it for the margin
    /// (non-inferiority, if the true difference is 0), else for the stated effect; `None` when
    /// settled, exploratory, or neither a margin nor an effect is set.
    pub questions_needed: Option<QuestionsNeeded>,
    /// True for a comparison outside the planned family: no Holm adjustment, no verdict.
    #[serde(default)]
    pub exploratory: bool,
}

fn settled_default() -> bool {
    true
}

/// One planned comparison's inputs: per-question values of the baseline and the candidate
/// on the same questions (in the metric's scale) and the questions' clusters.
#[derive(Debug, Clone)]
pub struct PairedInput<'a> {
    /// Baseline values.
    pub baseline: &'a [f64],
    /// Candidate values, question `i` the same as the baseline's `i`.
    pub candidate: &'a [f64],
    /// Each question's cluster.
    pub clusters: &'a Clusters,
}

/// Checks the settings shared by [`plan_family`] and [`explore`].
fn check_settings(settings: &FamilySettings) -> Result<(), StatsError> {
    if !valid_level(settings.alpha) {
        return Err(StatsError::InvalidConfidence(1.0 - settings.alpha));
    }
    if !valid_level(settings.power) {
        return Err(StatsError::InvalidConfidence(settings.power));
    }
    if settings.resamples == 0 {
        return Err(StatsError::ZeroResamples);
    }
    Ok(())
}

/// Computes every planned comparison of a family of `m = inputs.len()`: intervals at
/// `1 − α` and `1 − α/m` ([`paired_interval`]), p-values (exact, or Monte Carlo drawn until
/// settled against every Holm threshold `α/j`, `j = 1..h`, or [`monte_carlo_limit`]), their
/// Holm adjustment (Holm 1979) over the comparisons with at least one differing question
/// (Tarone 1990: one whose questions all agree cannot reach significance and does not count),
/// verdicts and, for inconclusive ones, the questions needed (one-sided level `α/(2m)`,
/// [`questions_needed`]). Comparison `j` draws from seed `settings.seed + j`.
///
/// # Errors
/// Length mismatches, empty or non-finite input, invalid settings.
pub fn plan_family(
    inputs: &[PairedInput<'_>],
    settings: &FamilySettings,
) -> Result<Vec<PlannedComparison>, StatsError> {
    check_settings(settings)?;
    let m = inputs.len();
    let (mut out, tests) = compare_each(inputs, settings, m)?;
    // Tarone (1990): a comparison whose questions all agree (every difference 0) cannot reach
    // significance, so it is left out of the Holm family (its Holm p is 1).
    let informative: Vec<usize> = (0..m).filter(|&j| out[j].differing > 0).collect();
    settle(
        &mut out,
        tests,
        &informative,
        settings.alpha,
        monte_carlo_limit,
    );
    let ps: Vec<f64> = informative.iter().map(|&j| out[j].p).collect();
    let adjusted = crate::holm(&ps)?;
    let mut holm = vec![1.0; m];
    for (&j, h) in informative.iter().zip(adjusted) {
        holm[j] = h;
    }
    for ((c, h), input) in out.iter_mut().zip(holm).zip(inputs) {
        c.holm_family = informative.len();
        c.holm_p = h;
        c.verdict = verdict(
            c.estimate,
            h,
            c.simultaneous,
            settings.margin,
            settings.alpha,
        );
        if c.verdict == Verdict::Inconclusive {
            c.questions_needed = needed_for(c, input, settings, m);
        }
    }
    Ok(out)
}

/// Exploratory comparisons: each alone, with its interval at `1 − α`, its p (Monte Carlo
/// settled against α) unadjusted, and no verdict (`exploratory` set).
///
/// # Errors
/// As [`plan_family`].
pub fn explore(
    inputs: &[PairedInput<'_>],
    settings: &FamilySettings,
) -> Result<Vec<PlannedComparison>, StatsError> {
    check_settings(settings)?;
    let (out, tests) = compare_each(inputs, settings, 1)?;
    // Each comparison alone: a family of one at α.
    let mut explored = Vec::with_capacity(out.len());
    for (c, t) in out.into_iter().zip(tests) {
        let mut one = [c];
        let informative: Vec<usize> = (0..usize::from(one[0].differing > 0)).collect();
        settle(
            &mut one,
            vec![t],
            &informative,
            settings.alpha,
            monte_carlo_limit,
        );
        let [mut c] = one;
        c.holm_p = c.p;
        c.exploratory = true;
        explored.push(c);
    }
    Ok(explored)
}

/// The comparisons' intervals (simultaneous at `1 − α/m`) and their tests, with the initial
/// Monte Carlo draws made.
fn compare_each(
    inputs: &[PairedInput<'_>],
    settings: &FamilySettings,
    m: usize,
) -> Result<(Vec<PlannedComparison>, Vec<SignFlip>), StatsError> {
    let start = monte_carlo_resamples(settings.resamples, m, settings.alpha);
    let mut out = Vec::with_capacity(inputs.len());
    let mut tests = Vec::with_capacity(inputs.len());
    for (j, input) in inputs.iter().enumerate() {
        let seed = settings.seed.wrapping_add(j as u64);
        let (c, mut t) = one_comparison(input, settings, m, seed)?;
        if !c.exact {
            // Never more than the settling draws may reach (a tiny α asks for more).
            t.draw(start.min(monte_carlo_limit(t.nonzero())));
        }
        out.push(c);
        tests.push(t);
    }
    Ok((out, tests))
}

/// Draws more sign patterns until every Holm decision of the family is settled, then writes
/// each test's p into its comparison. The Holm adjustment is non-decreasing in every raw p,
/// so adjusting the lower and the upper bounds of the p-values ([`SignFlip::bounds`]: exact,
/// or the Monte Carlo estimate's 99.9 % interval) bounds each adjusted p; a decision
/// (adjusted p < α) is settled when both bounds fall on the same side of α. While one is not,
/// every Monte Carlo test whose bounds hold a Holm threshold `α/j` draws three times as many
/// patterns again, up to `limit(its non-zero cluster sums)` ([`monte_carlo_limit`]).
/// `informative` are the comparisons in the Holm family (the rest keep Holm p 1).
fn settle(
    out: &mut [PlannedComparison],
    mut tests: Vec<SignFlip>,
    informative: &[usize],
    alpha: f64,
    limit: fn(usize) -> usize,
) {
    let h = informative.len();
    let thresholds: Vec<f64> = (1..=h).map(|j| alpha / j as f64).collect();
    let settled = |tests: &[SignFlip], out: &[PlannedComparison]| -> Vec<bool> {
        let bound = |upper: bool| -> Vec<f64> {
            informative
                .iter()
                .map(|&j| {
                    if out[j].exact {
                        out[j].p
                    } else {
                        let (lo, hi) = tests[j].bounds();
                        if upper {
                            hi
                        } else {
                            lo
                        }
                    }
                })
                .collect()
        };
        let (lo, hi) = (crate::holm(&bound(false)), crate::holm(&bound(true)));
        match (lo, hi) {
            (Ok(lo), Ok(hi)) => lo
                .iter()
                .zip(&hi)
                .map(|(l, u)| (*l < alpha) == (*u < alpha))
                .collect(),
            _ => vec![false; h],
        }
    };
    loop {
        let done = settled(&tests, out);
        if done.iter().all(|&d| d) {
            break;
        }
        // First the tests whose own decision is open; only when none of them can draw more,
        // the others whose bounds hold a threshold (a step-down decision may hang on them).
        let mut drew = false;
        for own_first in [true, false] {
            for (i, &j) in informative.iter().enumerate() {
                let t = &mut tests[j];
                let (lo, hi) = t.bounds();
                let straddles = thresholds.iter().any(|&a| lo < a && a < hi);
                let cap = limit(t.nonzero());
                let eligible = !out[j].exact && !t.exact() && straddles && t.patterns() < cap;
                if eligible && (!own_first || !done[i]) {
                    t.draw((3 * t.patterns()).min(cap - t.patterns()).max(1));
                    drew = true;
                }
            }
            if drew {
                break;
            }
        }
        if !drew {
            break;
        }
    }
    let done = settled(&tests, out);
    for (i, &j) in informative.iter().enumerate() {
        out[j].p_settled = done[i];
    }
    for (c, t) in out.iter_mut().zip(&tests) {
        // McNemar's exact p for 0/1 values with independent questions was set directly.
        if c.exact {
            continue;
        }
        let r = t.result();
        c.p = r.p;
        c.exact = r.exact;
        c.resamples = if r.exact { 0 } else { r.resamples };
    }
}

/// Intervals and the test of one comparison (p, Holm, verdict and questions needed are set
/// by [`plan_family`] or [`explore`]).
fn one_comparison(
    input: &PairedInput<'_>,
    settings: &FamilySettings,
    m: usize,
    seed: u64,
) -> Result<(PlannedComparison, SignFlip), StatsError> {
    check_same_len(input.baseline.len(), input.candidate.len())?;
    check_same_len(input.baseline.len(), input.clusters.len())?;
    if input.baseline.is_empty() {
        return Err(StatsError::EmptyInput);
    }
    check_finite("baseline", input.baseline)?;
    check_finite("candidate", input.candidate)?;
    let d: Vec<f64> = input
        .candidate
        .iter()
        .zip(input.baseline)
        .map(|(c, b)| c - b)
        .collect();
    let n = d.len();
    let estimate = d.iter().sum::<f64>() / n as f64;
    let sd = (d.iter().map(|x| (x - estimate).powi(2)).sum::<f64>() / n as f64).sqrt();
    let binary = |xs: &[f64]| xs.iter().all(|&x| x == 0.0 || x == 1.0);
    let confidence = 1.0 - settings.alpha;
    let simultaneous_level = 1.0 - settings.alpha / m.max(1) as f64;
    let at = |level| paired_interval(&d, input.clusters, level);
    let (interval, simultaneous) = (at(confidence), at(simultaneous_level));
    let method = interval.map_or(IntervalMethod::Tango, |i| i.method);
    let test = SignFlip::new(&d, input.clusters, seed);
    // For 0/1 values with independent questions the sign-flip test is McNemar's exact test:
    // take its p from the binomial directly (exact at any size, no Monte Carlo).
    let mcnemar = (!input.clusters.clustered()
        && binary(input.baseline)
        && binary(input.candidate))
    .then(|| {
        let b = d.iter().filter(|&&x| x < 0.0).count() as u64;
        let c = d.iter().filter(|&&x| x > 0.0).count() as u64;
        crate::mcnemar(b, c).exact_p
    });
    let comparison = PlannedComparison {
        n,
        clusters: input.clusters.count(),
        estimate,
        sd,
        interval: interval.map(|i| i.interval),
        simultaneous: simultaneous.map(|i| i.interval),
        method,
        p: mcnemar.unwrap_or(1.0),
        exact: mcnemar.is_some(),
        resamples: 0,
        p_settled: true,
        holm_p: 1.0,
        differing: d.iter().filter(|&&x| x != 0.0).count(),
        holm_family: 0,
        design_effect: design_effect(&d, input.clusters),
        verdict: Verdict::Inconclusive,
        questions_needed: None,
        exploratory: false,
    };
    Ok((comparison, test))
}

/// [`PlannedComparison::questions_needed`] for an inconclusive comparison: non-inferiority
/// at the margin if there is one, else the stated effect, at the family's one-sided level
/// `α/(2m)`, with the observed second moment, variance and design effect (floored at 1).
fn needed_for(
    c: &PlannedComparison,
    input: &PairedInput<'_>,
    settings: &FamilySettings,
    m: usize,
) -> Option<QuestionsNeeded> {
    let n = input.baseline.len() as f64;
    let d = input
        .candidate
        .iter()
        .zip(input.baseline)
        .map(|(x, y)| x - y);
    let m2 = d.map(|x| x * x).sum::<f64>() / n;
    let var = c.sd * c.sd;
    let deff = c.design_effect.unwrap_or(1.0).max(1.0);
    let alpha = settings.alpha / (2.0 * m.max(1) as f64);
    let (claim, target) = if settings.margin > 0.0 {
        (Claim::NonInferiority, settings.margin)
    } else if settings.effect > 0.0 {
        (Claim::Effect, settings.effect)
    } else {
        return None;
    };
    questions_needed(claim, target, m2, var, deff, alpha, settings.power)
}

/// The questions a comparison would need for `claim` at `target` within its family of `m` at
/// `alpha` (one-sided level `α/(2m)`), with the observed spread of `input`: the figure
/// `compare` names when `--require` fails.
pub fn questions_needed_for(
    input: &PairedInput<'_>,
    claim: Claim,
    target: f64,
    alpha: f64,
    power: f64,
    m: usize,
) -> Option<QuestionsNeeded> {
    let d: Vec<f64> = input
        .candidate
        .iter()
        .zip(input.baseline)
        .map(|(x, y)| x - y)
        .collect();
    if d.is_empty() {
        return None;
    }
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let m2 = d.iter().map(|x| x * x).sum::<f64>() / n;
    let var = (m2 - mean * mean).max(0.0);
    let deff = design_effect(&d, input.clusters).unwrap_or(1.0).max(1.0);
    questions_needed(
        claim,
        target,
        m2,
        var,
        deff,
        alpha / (2.0 * m.max(1) as f64),
        power,
    )
}

#[cfg(test)]
mod tests;
