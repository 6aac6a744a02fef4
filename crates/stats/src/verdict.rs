//! Verdicts for a family of planned paired comparisons: Tango's score interval, clustered
//! resampling, non-inferiority and equivalence against a margin, and the questions a verdict
//! would need (docs/reference.md §5 "Statistics", "The verdict").
//!
//! A *planned comparison* pairs a candidate's per-question values of the primary metric with
//! the baseline's on the same questions. The *family* is every planned comparison of a run;
//! its size `m` sets the Holm adjustment of the p-values and the level `1 − α/m` of the
//! simultaneous intervals the verdicts are read from (Bonferroni, so that all verdicts of the
//! family hold together with probability at least `1 − α`).
//!
//! Units: per-question values are in the metric's own scale (a proportion in `[0, 1]` for
//! accuracy and every registered retrieval metric); [`PlannedComparison`] reports differences
//! in the same scale, and `margin` is given in it too (callers showing points multiply by 100).

use crate::{
    check_finite, check_same_len, quantile_sorted, valid_level, z_quantile, BootstrapConfig,
    Interval, StatsError,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

// ---------------------------------------------------------------------------------------------
// Tango's score interval
// ---------------------------------------------------------------------------------------------

/// Tango's score statistic for `H0: Δ = delta0`, where `Δ = (c − b)/n` is the difference of
/// two paired proportions (candidate − baseline), `b` the pairs only the baseline got right
/// and `c` those only the candidate got right.
///
/// Source: T. Tango (1998), "Equivalence test and confidence interval for the difference in
/// proportions for the paired-sample design", Statistics in Medicine 17:891–908, eq. (3)–(4):
/// with `n12 = c`, `n21 = b`,
///
/// ```text
/// Z(Δ0) = (n12 − n21 − n·Δ0) / sqrt(n·(2·p̃21 + Δ0·(1 − Δ0)))
/// p̃21   = (sqrt(B² − 4AC) − B) / (2A),  A = 2n,  B = −n12 − n21 + (2n − n12 + n21)·Δ0,
///          C = −n21·Δ0·(1 − Δ0)
/// ```
///
/// `p̃21` is the maximum-likelihood estimate of `P(baseline only right)` under `H0`. `Z`
/// decreases in `Δ0`; a zero variance gives ±∞ or 0 by the numerator's sign.
pub fn tango_statistic(b: u64, c: u64, n: u64, delta0: f64) -> f64 {
    let (n12, n21, nn) = (c as f64, b as f64, n as f64);
    let a = 2.0 * nn;
    let bq = -n12 - n21 + (2.0 * nn - n12 + n21) * delta0;
    let cq = -n21 * delta0 * (1.0 - delta0);
    let disc = (bq * bq - 4.0 * a * cq).max(0.0);
    let p21 = ((disc.sqrt() - bq) / (2.0 * a)).max(0.0);
    let var = nn * (2.0 * p21 + delta0 * (1.0 - delta0));
    let num = n12 - n21 - nn * delta0;
    if var > 0.0 {
        num / var.sqrt()
    } else if num > 0.0 {
        f64::INFINITY
    } else if num < 0.0 {
        f64::NEG_INFINITY
    } else {
        0.0
    }
}

/// Tango's (1998) score confidence interval for the difference of two paired proportions
/// `Δ = (c − b)/n` (candidate − baseline), as proportions in `[−1, 1]`: the set of `Δ0` with
/// `|Z(Δ0)| < z_{1−(1−confidence)/2}` ([`tango_statistic`]), its ends found by bisection to
/// 1e-12. Checked against the worked example of Fagerland, Lydersen & Laake (2017),
/// *Statistical Analysis of Contingency Tables*, ch. 8 (Cavo et al. 2012: b = 16, c = 6,
/// n = 161 → −0.0621, 95 % CI −0.1240 to −0.0054).
///
/// Unlike the Wald interval it is never degenerate: `b = c = 0` gives
/// `[−z²/(n + z²), z²/(n + z²)]`.
///
/// Returns `None` when `n == 0`, `b + c > n` or `confidence` is not strictly between 0 and 1.
pub fn tango_interval(b: u64, c: u64, n: u64, confidence: f64) -> Option<Interval> {
    if n == 0 || b.checked_add(c)? > n || !valid_level(confidence) {
        return None;
    }
    let z = z_quantile(1.0 - (1.0 - confidence) / 2.0);
    let estimate = (c as f64 - b as f64) / n as f64;
    // Z(Δ0) − target is decreasing in Δ0: find its root in [lo, hi].
    let root = |target: f64, mut lo: f64, mut hi: f64| {
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if tango_statistic(b, c, n, mid) > target {
                lo = mid;
            } else {
                hi = mid;
            }
            if hi - lo < 1e-12 {
                break;
            }
        }
        0.5 * (lo + hi)
    };
    let lower = if c == 0 && b == n {
        -1.0
    } else {
        root(z, -1.0, estimate)
    };
    let upper = if b == 0 && c == n {
        1.0
    } else {
        root(-z, estimate, 1.0)
    };
    // The ends are found to 1e-12; rounded there, they print as short decimals that read back
    // exactly (compare.json round-trips).
    let round = |x: f64| (x * 1e12).round() / 1e12;
    Some(Interval {
        lower: round(lower.min(estimate)),
        upper: round(upper.max(estimate)),
    })
}

// ---------------------------------------------------------------------------------------------
// Clusters
// ---------------------------------------------------------------------------------------------

/// Which resampling unit each question belongs to: `labels[i]` is question `i`'s cluster, in
/// `0..count`. Every question its own cluster is ordinary question-level resampling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clusters {
    labels: Vec<usize>,
    count: usize,
}

impl Clusters {
    /// Every question its own cluster (`n` clusters of one).
    pub fn singletons(n: usize) -> Self {
        Self {
            labels: (0..n).collect(),
            count: n,
        }
    }

    /// Clusters from one key per question (a document id, a subject): equal keys share a
    /// cluster; cluster numbers follow first appearance, so the result does not depend on how
    /// keys sort.
    pub fn from_keys<K: std::hash::Hash + Eq>(keys: impl IntoIterator<Item = K>) -> Self {
        let mut seen = std::collections::HashMap::new();
        let labels = keys
            .into_iter()
            .map(|k| {
                let next = seen.len();
                *seen.entry(k).or_insert(next)
            })
            .collect();
        Self {
            labels,
            count: seen.len(),
        }
    }

    /// Number of questions.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when there are no questions.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Number of clusters.
    pub fn count(&self) -> usize {
        self.count
    }

    /// True when some cluster holds more than one question.
    pub fn clustered(&self) -> bool {
        self.count < self.labels.len()
    }

    /// The same clusters restricted to the questions where `keep` is true (clusters left empty
    /// are dropped and the rest renumbered in order of first appearance).
    pub fn subset(&self, keep: &[bool]) -> Self {
        Self::from_keys(
            self.labels
                .iter()
                .zip(keep)
                .filter(|(_, &k)| k)
                .map(|(&l, _)| l),
        )
    }

    /// Per cluster: (sum of `d` over its questions, its number of questions).
    fn sums(&self, d: &[f64]) -> Vec<(f64, usize)> {
        let mut out = vec![(0.0, 0usize); self.count];
        for (&l, &x) in self.labels.iter().zip(d) {
            out[l].0 += x;
            out[l].1 += 1;
        }
        out
    }
}

/// Design effect of clustering on the mean of the paired differences `d`: the cluster-robust
/// variance of the mean over the variance it would have with independent questions,
///
/// ```text
/// var_cluster = K/(K − 1) · Σ_k (D_k − n_k·d̄)² / N²      (D_k: sum of d in cluster k)
/// var_iid     = Σ_i (d_i − d̄)² / (N·(N − 1))
/// deff        = var_cluster / var_iid
/// ```
///
/// (Kish 1965, *Survey Sampling* §5.4; the cluster-robust variance of a ratio mean as in
/// Obuchowski 1998, Statistics in Medicine 17:1495–1507). With clusters of one it is exactly 1.
/// `None` when there are fewer than two clusters or two questions, or the differences do not
/// vary.
pub fn design_effect(d: &[f64], clusters: &Clusters) -> Option<f64> {
    let n = d.len();
    let k = clusters.count();
    if n < 2 || k < 2 || clusters.len() != n {
        return None;
    }
    let nf = n as f64;
    let mean = d.iter().sum::<f64>() / nf;
    let var_iid = d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (nf * (nf - 1.0));
    let kf = k as f64;
    let var_cl = kf / (kf - 1.0)
        * clusters
            .sums(d)
            .iter()
            .map(|&(s, m)| (s - m as f64 * mean).powi(2))
            .sum::<f64>()
        / (nf * nf);
    (var_iid > 0.0).then(|| var_cl / var_iid)
}

/// Percentile bootstrap of the mean of `d` resampling whole clusters (Davison & Hinkley 1997,
/// *Bootstrap Methods and their Application* §3.8, strategy 1: clusters drawn with
/// replacement, the statistic `Σ D_k / Σ n_k` over the drawn clusters), with Hesterberg's
/// *expanded percentile* level (T. Hesterberg 2015, "What teachers should know about the
/// bootstrap", The American Statistician 69:371–386, §6.3): the quantiles are taken at
/// `Φ(±sqrt(K/(K − 1))·t_{K−1, 1−(1−confidence)/2})` instead of `(1 ± confidence)/2`, which
/// corrects the percentile interval's narrowness in small samples. `K` = number of clusters.
///
/// Deterministic: one `ChaCha8Rng::seed_from_u64(config.seed)` stream, single-threaded.
/// `None` when there are fewer than two clusters.
///
/// # Errors
/// [`StatsError::EmptyInput`], [`StatsError::LengthMismatch`] (values and clusters),
/// [`StatsError::NonFinite`], [`StatsError::ZeroResamples`], [`StatsError::InvalidConfidence`].
pub fn cluster_bootstrap_mean(
    d: &[f64],
    clusters: &Clusters,
    config: &BootstrapConfig,
) -> Result<Option<Interval>, StatsError> {
    check_same_len(d.len(), clusters.len())?;
    if d.is_empty() {
        return Err(StatsError::EmptyInput);
    }
    crate::check_config(config)?;
    check_finite("differences", d)?;
    let sums = clusters.sums(d);
    let k = sums.len();
    if k < 2 {
        return Ok(None);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut stats = Vec::with_capacity(config.resamples);
    for _ in 0..config.resamples {
        let (mut s, mut m) = (0.0, 0usize);
        for _ in 0..k {
            let (cs, cm) = sums[rng.random_range(0..k)];
            s += cs;
            m += cm;
        }
        stats.push(s / m as f64);
    }
    stats.sort_by(f64::total_cmp);
    let tail = expanded_tail(config.confidence, k);
    Ok(Some(Interval {
        lower: quantile_sorted(&stats, tail),
        upper: quantile_sorted(&stats, 1.0 - tail),
    }))
}

/// Lower tail probability of Hesterberg's expanded percentile interval for `k` resampling
/// units: `Φ(−sqrt(k/(k − 1))·t_{k−1, 1−α/2})`, `α = 1 − confidence`.
fn expanded_tail(confidence: f64, k: usize) -> f64 {
    let alpha = 1.0 - confidence;
    let df = (k - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(1.0 - alpha / 2.0))
        .unwrap_or(f64::NAN);
    let widened = (k as f64 / df).sqrt() * t;
    match Normal::new(0.0, 1.0) {
        Ok(normal) if widened.is_finite() => normal.cdf(-widened),
        _ => alpha / 2.0,
    }
}

/// Result of a sign-flip test by cluster ([`cluster_sign_flip_test`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusterSignFlip {
    /// Two-sided p-value.
    pub p: f64,
    /// Clusters whose summed difference is not 0.
    pub nonzero: usize,
    /// True when every sign pattern was enumerated.
    pub exact: bool,
    /// Sign patterns enumerated or drawn.
    pub resamples: usize,
}

/// Paired sign-flip test by cluster: under `H0` (no difference) each cluster's summed
/// difference `D_k` is as likely to have either sign, so `|Σ D_k|` is compared with its value
/// under every sign pattern of the clusters (exact, when at most
/// [`crate::SIGN_FLIP_EXACT_MAX`] sums are non-zero) or `resamples` random patterns
/// (`(1 + hits)/(1 + B)`, Phipson & Smyth 2010). A randomisation test over clusters (Fisher
/// 1935 §21; Good 2005 §3.1); with clusters of one on 0/1 data it is exactly McNemar's exact
/// conditional test (the signs of the `b + c` discordant pairs are fair coin flips).
///
/// # Errors
/// [`StatsError::EmptyInput`], [`StatsError::LengthMismatch`], [`StatsError::NonFinite`],
/// [`StatsError::ZeroResamples`].
pub fn cluster_sign_flip_test(
    d: &[f64],
    clusters: &Clusters,
    resamples: usize,
    seed: u64,
) -> Result<ClusterSignFlip, StatsError> {
    check_same_len(d.len(), clusters.len())?;
    if d.is_empty() {
        return Err(StatsError::EmptyInput);
    }
    if resamples == 0 {
        return Err(StatsError::ZeroResamples);
    }
    check_finite("differences", d)?;
    let sums: Vec<f64> = clusters
        .sums(d)
        .into_iter()
        .map(|(s, _)| s)
        .filter(|&s| s != 0.0)
        .collect();
    let m = sums.len();
    if m == 0 {
        return Ok(ClusterSignFlip {
            p: 1.0,
            nonzero: 0,
            exact: true,
            resamples: 1,
        });
    }
    let observed = sums.iter().sum::<f64>().abs();
    let scale: f64 = sums.iter().map(|x| x.abs()).sum();
    let at_least = |t: f64| t.abs() >= observed - 1e-9 * scale;
    if m <= crate::SIGN_FLIP_EXACT_MAX {
        let patterns = 1usize << m;
        let hits = (0..patterns)
            .filter(|&bits| {
                at_least(
                    sums.iter()
                        .enumerate()
                        .map(|(i, &x)| if bits >> i & 1 == 1 { -x } else { x })
                        .sum(),
                )
            })
            .count();
        return Ok(ClusterSignFlip {
            p: hits as f64 / patterns as f64,
            nonzero: m,
            exact: true,
            resamples: patterns,
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut hits = 0usize;
    for _ in 0..resamples {
        let t: f64 = sums
            .iter()
            .map(|&x| if rng.random::<bool>() { -x } else { x })
            .sum();
        hits += usize::from(at_least(t));
    }
    Ok(ClusterSignFlip {
        p: (1 + hits) as f64 / (1 + resamples) as f64,
        nonzero: m,
        exact: false,
        resamples,
    })
}

// ---------------------------------------------------------------------------------------------
// Verdicts
// ---------------------------------------------------------------------------------------------

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

/// Questions needed for a one-sided test at level `alpha_one_sided` to reject `Δ = null` in
/// favour of the true difference `effect`, with power `power`, when a question's paired
/// difference has standard deviation `sd` and clustering inflates the variance by `deff`:
///
/// ```text
/// n = deff · ((z_{1−α} + z_{power}) · sd / (effect − null))²,  rounded up
/// ```
///
/// (the normal-approximation sample size for a paired mean difference, e.g. Chow, Shao &
/// Wang 2008, *Sample Size Calculations in Clinical Research* §3.1–3.2 for superiority,
/// non-inferiority and equivalence; for 0/1 data `sd² = ψ − Δ²`, ψ the discordant share, as in
/// Connor 1987's relation for McNemar's test). `None` when `effect == null` (no number of
/// questions settles it), when `sd` is not positive and finite, or the levels are invalid.
pub fn questions_needed(
    sd: f64,
    effect: f64,
    null: f64,
    alpha_one_sided: f64,
    power: f64,
    deff: f64,
) -> Option<u64> {
    let gap = (effect - null).abs();
    let valid = sd > 0.0
        && sd.is_finite()
        && gap > 1e-12
        && deff > 0.0
        && deff.is_finite()
        && valid_level(alpha_one_sided)
        && valid_level(power);
    if !valid {
        return None;
    }
    let z = z_quantile(1.0 - alpha_one_sided) + z_quantile(power);
    let n = deff * (z * sd / gap).powi(2);
    (n.is_finite() && n < 1e15).then(|| n.ceil().max(2.0) as u64)
}

// ---------------------------------------------------------------------------------------------
// The family of planned comparisons
// ---------------------------------------------------------------------------------------------

/// Settings of a family of planned comparisons ([`plan_family`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FamilySettings {
    /// Family-wise significance level α (default 0.05).
    pub alpha: f64,
    /// Power for [`PlannedComparison::questions_needed`] (default 0.8).
    pub power: f64,
    /// Non-inferiority / equivalence margin δ ≥ 0, in the metric's scale (0 = none).
    pub margin: f64,
    /// Bootstrap resamples and Monte Carlo sign patterns asked for (raised where the family
    /// needs more, [`monte_carlo_resamples`]).
    pub resamples: usize,
    /// Seed of every random stream.
    pub seed: u64,
}

/// Monte Carlo sign patterns for a family of `m` tests at level `alpha`: at least `resamples`
/// and at least `⌈20·m/α⌉`, so the smallest attainable p-value `1/(B + 1)` is below `α/(20m)`
/// — a twentieth of the smallest Holm threshold `α/m` — and the Monte Carlo floor can never
/// decide a Holm outcome.
pub fn monte_carlo_resamples(resamples: usize, m: usize, alpha: f64) -> usize {
    let floor = (20.0 * m.max(1) as f64 / alpha).ceil();
    resamples.max(if floor.is_finite() {
        floor as usize
    } else {
        resamples
    })
}

/// How a planned comparison's intervals were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalMethod {
    /// Tango's score interval (0/1 values, questions independent).
    Tango,
    /// Expanded percentile bootstrap over questions.
    Bootstrap,
    /// Expanded percentile bootstrap over clusters.
    ClusterBootstrap,
}

impl IntervalMethod {
    /// The name reports print.
    pub fn as_str(self) -> &'static str {
        match self {
            IntervalMethod::Tango => "Tango score",
            IntervalMethod::Bootstrap => "bootstrap",
            IntervalMethod::ClusterBootstrap => "cluster bootstrap",
        }
    }
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
    /// Two-sided 95 % interval (or at the settings' `1 − α`) of `estimate`; `None` when too
    /// few questions or clusters.
    pub interval: Option<Interval>,
    /// The interval at `1 − α/m` the verdict is read from.
    pub simultaneous: Option<Interval>,
    /// How both intervals were computed.
    pub method: IntervalMethod,
    /// Two-sided p of no difference: sign-flip by cluster (exact McNemar for 0/1 values and
    /// independent questions).
    pub p: f64,
    /// True when `p` is exact (every sign pattern enumerated).
    pub exact: bool,
    /// `p` Holm-adjusted over the family's informative comparisons (1 for one whose
    /// questions all agree).
    pub holm_p: f64,
    /// Questions whose values differ between candidate and baseline.
    pub differing: usize,
    /// Comparisons of the family in the Holm adjustment: those with a differing question
    /// (Tarone 1990, "A modified Bonferroni method for discrete data", Biometrics 46:515–522:
    /// a test that cannot reach significance does not count).
    pub holm_family: usize,
    /// Design effect ([`design_effect`]); `None` when undefined.
    pub design_effect: Option<f64>,
    /// The verdict ([`verdict`]).
    pub verdict: Verdict,
    /// Questions needed to settle it at the family's power ([`plan_family`]); `None` when
    /// no number would (the difference sits on the boundary).
    pub questions_needed: Option<u64>,
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

/// Computes every planned comparison of a family of `m = inputs.len()`: intervals at
/// `1 − α` and `1 − α/m`, p-values, their Holm adjustment (Holm 1979) over the comparisons
/// with at least one differing question (Tarone 1990: one whose questions all agree cannot
/// reach significance and does not count), verdicts and the questions needed.
///
/// Method per comparison: with independent questions (every cluster of one) and 0/1 values,
/// Tango's score interval ([`tango_interval`]) and McNemar's exact test (as the sign-flip
/// test); otherwise the expanded percentile bootstrap over clusters
/// ([`cluster_bootstrap_mean`]) and the sign-flip test by cluster
/// ([`cluster_sign_flip_test`]). Monte Carlo runs use [`monte_carlo_resamples`]; comparison
/// `j` uses seed `settings.seed + j`.
///
/// Questions needed ([`questions_needed`], observed difference and SD taken as true, the
/// observed design effect applied, one-sided level `α/(2m)`): for a settled verdict, the
/// questions its claim needs (superior/inferior: against 0; non-inferior: against `−δ`;
/// equivalent: against the nearer of `±δ`); for an inconclusive one, the fewest over the
/// claims the observed difference points to.
///
/// # Errors
/// Length mismatches, empty or non-finite input, invalid settings.
pub fn plan_family(
    inputs: &[PairedInput<'_>],
    settings: &FamilySettings,
) -> Result<Vec<PlannedComparison>, StatsError> {
    if !valid_level(settings.alpha) {
        return Err(StatsError::InvalidConfidence(1.0 - settings.alpha));
    }
    if !valid_level(settings.power) {
        return Err(StatsError::InvalidConfidence(settings.power));
    }
    if settings.resamples == 0 {
        return Err(StatsError::ZeroResamples);
    }
    let m = inputs.len();
    let resamples = monte_carlo_resamples(settings.resamples, m, settings.alpha);
    let mut out = Vec::with_capacity(m);
    for (j, input) in inputs.iter().enumerate() {
        let seed = settings.seed.wrapping_add(j as u64);
        out.push(one_comparison(input, settings, m, resamples, seed)?);
    }
    // Tarone (1990): a comparison whose questions all agree (every difference 0) cannot reach
    // significance, so it is left out of the Holm family (its Holm p is 1).
    let informative: Vec<usize> = (0..m).filter(|&j| out[j].differing > 0).collect();
    let ps: Vec<f64> = informative.iter().map(|&j| out[j].p).collect();
    let adjusted = crate::holm(&ps)?;
    let mut holm = vec![1.0; m];
    for (&j, h) in informative.iter().zip(adjusted) {
        holm[j] = h;
    }
    for (c, h) in out.iter_mut().zip(holm) {
        c.holm_family = informative.len();
        c.holm_p = h;
        c.verdict = verdict(
            c.estimate,
            h,
            c.simultaneous,
            settings.margin,
            settings.alpha,
        );
        c.questions_needed = needed_for(c, settings, m);
    }
    Ok(out)
}

/// Intervals and the p-value of one comparison (Holm, verdict and questions needed are set
/// by [`plan_family`]).
fn one_comparison(
    input: &PairedInput<'_>,
    settings: &FamilySettings,
    m: usize,
    resamples: usize,
    seed: u64,
) -> Result<PlannedComparison, StatsError> {
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
    let clustered = input.clusters.clustered();
    let paired_proportions = !clustered && binary(input.baseline) && binary(input.candidate);
    let (method, interval, simultaneous) = if paired_proportions {
        let b = d.iter().filter(|&&x| x < 0.0).count() as u64;
        let c = d.iter().filter(|&&x| x > 0.0).count() as u64;
        let nu = n as u64;
        (
            IntervalMethod::Tango,
            tango_interval(b, c, nu, confidence),
            tango_interval(b, c, nu, simultaneous_level),
        )
    } else {
        let boot = |level: f64| {
            cluster_bootstrap_mean(
                &d,
                input.clusters,
                &BootstrapConfig {
                    resamples,
                    confidence: level,
                    seed,
                },
            )
        };
        let method = if clustered {
            IntervalMethod::ClusterBootstrap
        } else {
            IntervalMethod::Bootstrap
        };
        (method, boot(confidence)?, boot(simultaneous_level)?)
    };
    // For 0/1 values with independent questions the sign-flip test is McNemar's exact test:
    // take its p from the binomial directly (exact at any size, no Monte Carlo).
    let test = if paired_proportions {
        let b = d.iter().filter(|&&x| x < 0.0).count() as u64;
        let c = d.iter().filter(|&&x| x > 0.0).count() as u64;
        ClusterSignFlip {
            p: crate::mcnemar(b, c).exact_p,
            nonzero: (b + c) as usize,
            exact: true,
            resamples: 0,
        }
    } else {
        cluster_sign_flip_test(&d, input.clusters, resamples, seed)?
    };
    Ok(PlannedComparison {
        n,
        clusters: input.clusters.count(),
        estimate,
        sd,
        interval,
        simultaneous,
        method,
        p: test.p,
        exact: test.exact,
        holm_p: 1.0,
        differing: d.iter().filter(|&&x| x != 0.0).count(),
        holm_family: 0,
        design_effect: design_effect(&d, input.clusters),
        verdict: Verdict::Inconclusive,
        questions_needed: None,
    })
}

/// [`PlannedComparison::questions_needed`] for a comparison whose verdict is set.
fn needed_for(c: &PlannedComparison, settings: &FamilySettings, m: usize) -> Option<u64> {
    let alpha = settings.alpha / (2.0 * m.max(1) as f64);
    let deff = c.design_effect.unwrap_or(1.0).max(1.0);
    let need = |null: f64| questions_needed(c.sd, c.estimate, null, alpha, settings.power, deff);
    let margin = settings.margin;
    let nearer = if c.estimate >= 0.0 { margin } else { -margin };
    match c.verdict {
        Verdict::Superior | Verdict::Inferior => need(0.0),
        Verdict::NonInferior => need(-margin),
        Verdict::Equivalent => need(nearer),
        Verdict::Inconclusive => {
            let mut options = vec![need(0.0)];
            if margin > 0.0 && c.estimate > -margin {
                options.push(need(-margin));
            }
            options.into_iter().flatten().min()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b}");
    }

    #[test]
    fn tango_matches_the_published_worked_example() {
        // Fagerland, Lydersen & Laake (2017) ch. 8, Cavo et al. (2012): the table
        // [[59, 6], [16, 80]], Δ = (n12 − n21)/N = (6 − 16)/161 = −0.0621. Here n12 = c
        // (pairs only the candidate got right) and n21 = b.
        let iv = tango_interval(16, 6, 161, 0.95).unwrap();
        close(iv.lower, -0.1240, 5e-5);
        close(iv.upper, -0.0054, 5e-5);
        // Mirror image: swapping b and c mirrors the interval.
        let m = tango_interval(6, 16, 161, 0.95).unwrap();
        close(m.lower, 0.0054, 5e-5);
        close(m.upper, 0.1240, 5e-5);
    }

    #[test]
    fn tango_is_never_degenerate_and_contains_the_estimate() {
        let iv = tango_interval(0, 0, 100, 0.95).unwrap();
        let z2 = 1.959_963_984_540_054f64.powi(2);
        close(iv.upper, z2 / (100.0 + z2), 1e-9);
        close(iv.lower, -z2 / (100.0 + z2), 1e-9);
        for (b, c, n) in [(0, 10, 10), (10, 0, 10), (3, 4, 7), (0, 1, 50), (20, 1, 40)] {
            let iv = tango_interval(b, c, n, 0.95).unwrap();
            let est = (c as f64 - b as f64) / n as f64;
            assert!(iv.lower <= est && est <= iv.upper, "{b} {c} {n}: {iv:?}");
            assert!(iv.lower >= -1.0 && iv.upper <= 1.0);
        }
        assert_eq!(tango_interval(0, 10, 10, 0.95).unwrap().upper, 1.0);
        assert!(tango_interval(5, 6, 10, 0.95).is_none());
        assert!(tango_interval(1, 1, 0, 0.95).is_none());
    }

    #[test]
    fn the_sign_flip_by_singleton_clusters_is_mcnemars_exact_test() {
        for (b, c) in [(3usize, 9usize), (0, 5), (7, 7), (12, 2)] {
            let mut d = vec![0.0; 20];
            d.extend(std::iter::repeat_n(-1.0, b));
            d.extend(std::iter::repeat_n(1.0, c));
            let cl = Clusters::singletons(d.len());
            let t = cluster_sign_flip_test(&d, &cl, 1000, 1).unwrap();
            assert!(t.exact);
            close(t.p, crate::mcnemar(b as u64, c as u64).exact_p, 1e-12);
        }
    }

    #[test]
    fn design_effect_is_one_for_singletons_and_large_for_shared_clusters() {
        let d = [1.0, -1.0, 0.0, 1.0, 0.0, 0.0, -1.0, 1.0];
        close(
            design_effect(&d, &Clusters::singletons(8)).unwrap(),
            1.0,
            1e-12,
        );
        // Two clusters with all-equal differences inside each: maximal intra-cluster correlation.
        let d = [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        let cl = Clusters::from_keys([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3]);
        assert!(design_effect(&d, &cl).unwrap() > 2.0);
    }

    #[test]
    fn verdicts_follow_the_stated_rules() {
        let iv = |l, u| Some(Interval { lower: l, upper: u });
        assert_eq!(
            verdict(0.05, 0.01, iv(0.01, 0.09), 0.03, 0.05),
            Verdict::Superior
        );
        assert_eq!(
            verdict(0.0, 0.9, iv(-0.02, 0.02), 0.03, 0.05),
            Verdict::Equivalent
        );
        assert_eq!(
            verdict(0.01, 0.4, iv(-0.02, 0.05), 0.03, 0.05),
            Verdict::NonInferior
        );
        assert_eq!(
            verdict(-0.1, 0.001, iv(-0.15, -0.05), 0.03, 0.05),
            Verdict::Inferior
        );
        assert_eq!(
            verdict(-0.01, 0.5, iv(-0.06, 0.04), 0.03, 0.05),
            Verdict::Inconclusive
        );
        // No margin: only the two-sided test speaks.
        assert_eq!(
            verdict(0.0, 0.9, iv(-0.01, 0.01), 0.0, 0.05),
            Verdict::Inconclusive
        );
        // A significant drop inside the margin is non-inferior (the margin's purpose).
        assert_eq!(
            verdict(-0.01, 0.01, iv(-0.02, -0.001), 0.03, 0.05),
            Verdict::Equivalent
        );
        for v in Verdict::ALL {
            assert_eq!(Verdict::parse(v.as_str()), Some(v));
        }
    }

    #[test]
    fn questions_needed_follows_connor_for_mcnemar() {
        // ψ = 0.2, Δ = 0.05: sd² = ψ − Δ² = 0.1975; two-sided 0.05, power 0.8 →
        // n = (1.96 + 0.8416)² · 0.1975 / 0.0025 = 620.1 → 621.
        let n = questions_needed(0.1975f64.sqrt(), 0.05, 0.0, 0.025, 0.8, 1.0).unwrap();
        assert_eq!(n, 621);
        assert_eq!(questions_needed(0.4, 0.0, 0.0, 0.025, 0.8, 1.0), None);
        // A design effect of 2 doubles it.
        let n2 = questions_needed(0.1975f64.sqrt(), 0.05, 0.0, 0.025, 0.8, 2.0).unwrap();
        assert!((1240..=1241).contains(&n2));
    }

    #[test]
    fn monte_carlo_resamples_put_the_floor_far_below_the_smallest_holm_threshold() {
        for m in [1, 4, 32, 416] {
            let b = monte_carlo_resamples(10_000, m, 0.05);
            assert!(1.0 / (b as f64 + 1.0) < 0.05 / (20.0 * m as f64) + 1e-15);
        }
    }

    #[test]
    fn comparisons_whose_questions_all_agree_leave_the_holm_family() {
        let base: Vec<f64> = (0..40).map(|i| f64::from(i % 2 == 0)).collect();
        let better: Vec<f64> = (0..40).map(|i| f64::from(i % 2 == 0 || i < 12)).collect();
        let single = Clusters::singletons(40);
        let inputs = [
            PairedInput {
                baseline: &base,
                candidate: &base,
                clusters: &single,
            },
            PairedInput {
                baseline: &base,
                candidate: &better,
                clusters: &single,
            },
        ];
        let s = FamilySettings {
            alpha: 0.05,
            power: 0.8,
            margin: 0.0,
            resamples: 1000,
            seed: 1,
        };
        let f = plan_family(&inputs, &s).unwrap();
        assert_eq!((f[0].differing, f[1].differing), (0, 6));
        assert_eq!(f[1].holm_family, 1);
        assert_eq!(f[0].holm_p, 1.0);
        assert_eq!(f[1].holm_p, f[1].p, "a family of one is not adjusted");
        assert_eq!(f[1].p, crate::mcnemar(0, 6).exact_p);
    }

    #[test]
    fn plan_family_is_deterministic_and_sizes_the_family() {
        let base: Vec<f64> = (0..60).map(|i| f64::from(i % 3 == 0)).collect();
        let cand: Vec<f64> = (0..60).map(|i| f64::from(i % 2 == 0)).collect();
        let cont: Vec<f64> = (0..60).map(|i| (i % 7) as f64 / 7.0).collect();
        let single = Clusters::singletons(60);
        let docs = Clusters::from_keys((0..60).map(|i| i / 4));
        let inputs = [
            PairedInput {
                baseline: &base,
                candidate: &cand,
                clusters: &single,
            },
            PairedInput {
                baseline: &base,
                candidate: &cont,
                clusters: &docs,
            },
        ];
        let s = FamilySettings {
            alpha: 0.05,
            power: 0.8,
            margin: 0.05,
            resamples: 2000,
            seed: 7,
        };
        let a = plan_family(&inputs, &s).unwrap();
        assert_eq!(a, plan_family(&inputs, &s).unwrap());
        assert_eq!(a[0].method, IntervalMethod::Tango);
        assert_eq!(a[1].method, IntervalMethod::ClusterBootstrap);
        assert_eq!(a[1].clusters, 15);
        for c in &a {
            let (i, s) = (c.interval.unwrap(), c.simultaneous.unwrap());
            assert!(s.lower <= i.lower && i.upper <= s.upper, "{c:?}");
            assert!(c.holm_p >= c.p);
        }
    }
}
