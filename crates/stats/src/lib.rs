//! Statistics for comparing chunking strategies on paired multiple-choice questions.
//!
//! Every function here is pure: no global state, no threads, no I/O. Randomness (the paired
//! bootstrap) comes only from a `ChaCha8Rng` seeded with a caller-supplied `u64`, so results are
//! reproducible bit for bit for a given seed, input and number of resamples.
//!
//! Contents (docs/reference.md §5 "Statistics"; docs/reference.md case 34):
//! - [`wilson`]: Wilson score interval for a binomial proportion (Wilson 1927; recommended by
//!   Agresti & Coull 1998).
//! - [`discordant_counts`], [`mcnemar`], [`mcnemar_paired`]: McNemar's test on paired
//!   correctness (McNemar 1947), exact conditional binomial p, mid-p (Fagerland, Lydersen &
//!   Laake 2013) and the chi-square approximations with and without Edwards' continuity
//!   correction.
//! - [`holm`]: Holm (1979) step-down adjustment of a family of p-values.
//! - [`bootstrap_mean_difference`], [`bootstrap_accuracy_delta`],
//!   [`bootstrap_relative_reduction`]: paired percentile bootstrap (Efron & Tibshirani 1993).
//! - [`minimum_detectable_effect`] and friends: minimum detectable accuracy difference for
//!   McNemar's test (Connor 1987, normal approximation).
//! - [`mean`], [`median`], [`p95`], [`quantile`]: descriptive helpers (numpy's default linear
//!   interpolation for quantiles).
//! - [`PairedComparison`]: one bundle per (baseline, candidate) pair used by reports.
//!
//! Units: proportions are in `[0, 1]`; anything named `*_points` is in percentage points
//! (100 × a difference of proportions); relative reductions are in percent.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, Discrete, DiscreteCDF, Normal};
use thiserror::Error;

mod verdict;
pub use verdict::*;

/// Default number of bootstrap resamples `B`.
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// Default confidence level for intervals (95 %).
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Default two-sided significance level for the minimum detectable effect.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Default power for the minimum detectable effect.
pub const DEFAULT_POWER: f64 = 0.8;

/// Fewest paired questions for which a paired comparison is reported as sufficient.
///
/// With fewer than this many questions (that is, `n = 1`) every bootstrap resample is the same
/// question, so no interval is produced and [`PairedComparison::insufficient`] is set.
pub const MIN_PAIRED_QUESTIONS: usize = 2;

/// Errors returned by the statistics functions.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// The input had no observations (e.g. an empty question list).
    #[error("empty input: at least one paired observation is required")]
    EmptyInput,
    /// The two paired series differ in length.
    #[error("paired series differ in length: baseline has {baseline}, candidate has {candidate}")]
    LengthMismatch {
        /// Length of the baseline series.
        baseline: usize,
        /// Length of the candidate series.
        candidate: usize,
    },
    /// A value in an input series is NaN or infinite.
    #[error("non-finite value {value} at index {index} of the {series} series")]
    NonFinite {
        /// Which series (`"baseline"` or `"candidate"`).
        series: &'static str,
        /// Index of the offending value.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A quantity that must be positive (or non-negative) is not.
    #[error("value {value} at index {index} of the {series} series must be {requirement}")]
    NotPositive {
        /// Which series (`"baseline"` or `"candidate"`).
        series: &'static str,
        /// Index of the offending value.
        index: usize,
        /// The offending value.
        value: f64,
        /// What was required (`"> 0"` or `">= 0"`).
        requirement: &'static str,
    },
    /// A p-value is NaN or outside `[0, 1]`.
    #[error("p-value {value} at index {index} is not in [0, 1]")]
    InvalidPValue {
        /// Index of the offending p-value.
        index: usize,
        /// The offending p-value.
        value: f64,
    },
    /// A confidence level is not strictly between 0 and 1.
    #[error("confidence level {0} is not strictly between 0 and 1")]
    InvalidConfidence(f64),
    /// The number of bootstrap resamples is zero.
    #[error("the number of bootstrap resamples must be at least 1")]
    ZeroResamples,
}

/// A closed interval `[lower, upper]` with `lower <= upper`.
///
/// Units are those of the quantity it bounds (a proportion for [`wilson`], points or percent
/// for the bootstrap functions).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
}

impl Interval {
    /// True when `lower <= x <= upper`.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }

    /// `upper - lower`.
    pub fn width(&self) -> f64 {
        self.upper - self.lower
    }
}

/// Standard normal quantile `z_p = Φ⁻¹(p)` for `p` in `(0, 1)` (statrs); NaN outside.
pub fn normal_quantile(p: f64) -> f64 {
    z_quantile(p)
}

/// Standard normal quantile `z_p = Φ⁻¹(p)` for `p` in `(0, 1)`.
fn z_quantile(p: f64) -> f64 {
    // Normal::new(0, 1) cannot fail.
    match Normal::new(0.0, 1.0) {
        Ok(normal) => normal.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

fn valid_level(x: f64) -> bool {
    x > 0.0 && x < 1.0
}

// ---------------------------------------------------------------------------------------------
// Wilson interval
// ---------------------------------------------------------------------------------------------

/// Wilson score interval for a binomial proportion `successes / n`.
///
/// Source: E. B. Wilson (1927), "Probable inference, the law of succession, and statistical
/// inference", JASA 22:209–212; recommended over the Wald interval by Agresti & Coull (1998),
/// "Approximate is better than 'exact' for interval estimation of binomial proportions",
/// The American Statistician 52:119–126.
///
/// With `p̂ = successes / n` and `z = Φ⁻¹(1 − (1 − confidence)/2)`:
///
/// ```text
/// centre = (p̂ + z²/(2n)) / (1 + z²/n)
/// half   = z / (1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/(4n²))
/// [lower, upper] = [centre − half, centre + half] clamped to [0, 1]
/// ```
///
/// The bounds are proportions in `[0, 1]`. At `successes = 0` the lower bound is exactly 0 and
/// the upper bound is `z²/(n + z²) > 0`; at `successes = n` the upper bound is exactly 1 and the
/// lower bound is `n/(n + z²) < 1`, so the interval is never degenerate. The interval always
/// contains `p̂`.
///
/// Returns `None` when `n == 0`, when `successes > n`, or when `confidence` is not strictly
/// between 0 and 1.
pub fn wilson(successes: u64, n: u64, confidence: f64) -> Option<Interval> {
    if n == 0 || successes > n || !valid_level(confidence) {
        return None;
    }
    let z = z_quantile(1.0 - (1.0 - confidence) / 2.0);
    let nf = n as f64;
    let p = successes as f64 / nf;
    let z2 = z * z;
    let denom = 1.0 + z2 / nf;
    let centre = (p + z2 / (2.0 * nf)) / denom;
    let half = z / denom * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt();
    // Exact endpoints at the boundaries (the algebraic values), so rounding cannot push the
    // point estimate outside the interval.
    let lower = if successes == 0 {
        0.0
    } else {
        (centre - half).clamp(0.0, p)
    };
    let upper = if successes == n {
        1.0
    } else {
        (centre + half).clamp(p, 1.0)
    };
    Some(Interval { lower, upper })
}

// ---------------------------------------------------------------------------------------------
// McNemar
// ---------------------------------------------------------------------------------------------

/// Result of McNemar's test on the discordant pairs of a paired comparison.
///
/// All p-values are two-sided, in `[0, 1]` and never NaN; when `b + c == 0` every p-value is 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct McNemar {
    /// Questions the baseline got right and the candidate got wrong.
    pub b: u64,
    /// Questions the baseline got wrong and the candidate got right.
    pub c: u64,
    /// Exact conditional (binomial) p-value: `min(1, 2·P(X <= k))`.
    pub exact_p: f64,
    /// Mid-p value: `2·P(X <= k) − P(X = k)`.
    pub mid_p: f64,
    /// Asymptotic chi-square (1 df) p-value of `(b − c)² / (b + c)`.
    pub chi2_p: f64,
    /// Chi-square (1 df) p-value with Edwards' continuity correction,
    /// `max(0, |b − c| − 1)² / (b + c)`.
    pub chi2_cc_p: f64,
}

/// Counts the discordant pairs of two paired correctness vectors.
///
/// Returns `(b, c)` where `b` = #{i : baseline\[i\] && !candidate\[i\]} (baseline right,
/// candidate wrong) and `c` = #{i : !baseline\[i\] && candidate\[i\]} (baseline wrong, candidate
/// right). Index `i` must refer to the same question in both slices.
///
/// # Errors
/// [`StatsError::LengthMismatch`] if the slices differ in length. Empty slices are accepted and
/// give `(0, 0)`.
pub fn discordant_counts(baseline: &[bool], candidate: &[bool]) -> Result<(u64, u64), StatsError> {
    check_same_len(baseline.len(), candidate.len())?;
    let mut b = 0u64;
    let mut c = 0u64;
    for (&base, &cand) in baseline.iter().zip(candidate) {
        match (base, cand) {
            (true, false) => b += 1,
            (false, true) => c += 1,
            _ => {}
        }
    }
    Ok((b, c))
}

/// McNemar's test from the discordant counts `b` and `c`.
///
/// Sources: Q. McNemar (1947), "Note on the sampling error of the difference between correlated
/// proportions or percentages", Psychometrika 12:153–157 (chi-square form, Edwards' continuity
/// correction); M. W. Fagerland, S. Lydersen & P. Laake (2013), "The McNemar test for binary
/// matched-pairs data: mid-p and asymptotic are better than exact conditional", BMC Medical
/// Research Methodology 13:91 (exact conditional and mid-p forms).
///
/// With `k = min(b, c)` and `X ~ Binomial(b + c, 1/2)` (statrs):
///
/// ```text
/// exact_p   = min(1, 2·P(X <= k))
/// mid_p     = 2·P(X <= k) − P(X = k)
/// chi2_p    = P(χ²₁ >= (b − c)² / (b + c))
/// chi2_cc_p = P(χ²₁ >= max(0, |b − c| − 1)² / (b + c))
/// ```
///
/// `b = c = 0` gives 1 for every p-value (never a division by zero). All values are clamped to
/// `[0, 1]`. Never panics.
pub fn mcnemar(b: u64, c: u64) -> McNemar {
    let n = b.saturating_add(c);
    if n == 0 {
        return McNemar {
            b,
            c,
            exact_p: 1.0,
            mid_p: 1.0,
            chi2_p: 1.0,
            chi2_cc_p: 1.0,
        };
    }
    let k = b.min(c);
    let (exact_p, mid_p) = match Binomial::new(0.5, n) {
        Ok(dist) => {
            let at_k = dist.pmf(k);
            // P(X <= k) by symmetry of Binomial(n, 1/2) where it is known exactly, so that the
            // regularized-beta rounding of the CDF cannot turn an exact 1 into 0.999…:
            // b = c gives 2·P(X <= k) = 1 + P(X = k); |b − c| = 1 gives P(X <= k) = 1/2.
            let twice_tail = match b.abs_diff(c) {
                0 => 1.0 + at_k,
                1 => 1.0,
                _ => 2.0 * dist.cdf(k),
            };
            (clamp_p(twice_tail), clamp_p(twice_tail - at_k))
        }
        // p = 0.5 is always valid; keep a NaN-free fallback regardless.
        Err(_) => (1.0, 1.0),
    };
    let nf = n as f64;
    let diff = b.abs_diff(c) as f64;
    let stat = diff * diff / nf;
    let cc = (diff - 1.0).max(0.0);
    let stat_cc = cc * cc / nf;
    let (chi2_p, chi2_cc_p) = match ChiSquared::new(1.0) {
        Ok(dist) => (clamp_p(dist.sf(stat)), clamp_p(dist.sf(stat_cc))),
        Err(_) => (1.0, 1.0),
    };
    McNemar {
        b,
        c,
        exact_p,
        mid_p,
        chi2_p,
        chi2_cc_p,
    }
}

/// McNemar's test on two paired correctness vectors: [`discordant_counts`] then [`mcnemar`].
///
/// # Errors
/// [`StatsError::EmptyInput`] if both slices are empty (an empty question list is an error,
/// docs/reference.md case 34); [`StatsError::LengthMismatch`] if they differ in length.
pub fn mcnemar_paired(baseline: &[bool], candidate: &[bool]) -> Result<McNemar, StatsError> {
    check_same_len(baseline.len(), candidate.len())?;
    if baseline.is_empty() {
        return Err(StatsError::EmptyInput);
    }
    let (b, c) = discordant_counts(baseline, candidate)?;
    Ok(mcnemar(b, c))
}

/// Maps NaN to 1 (the conservative value) and clamps to `[0, 1]`.
fn clamp_p(p: f64) -> f64 {
    if p.is_nan() {
        1.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

fn check_same_len(baseline: usize, candidate: usize) -> Result<(), StatsError> {
    if baseline == candidate {
        Ok(())
    } else {
        Err(StatsError::LengthMismatch {
            baseline,
            candidate,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Holm
// ---------------------------------------------------------------------------------------------

/// Holm step-down adjustment of a family of `m` p-values (family-wise error control).
///
/// Source: S. Holm (1979), "A simple sequentially rejective multiple test procedure",
/// Scandinavian Journal of Statistics 6:65–70.
///
/// With the p-values sorted ascending, `p_(1) <= … <= p_(m)`, the adjusted value of the `i`-th
/// smallest (1-based) is
///
/// ```text
/// p̃_(i) = min(1, max_{j <= i} (m − j + 1) · p_(j))
/// ```
///
/// which is monotone in the sorted order, at least the raw value and capped at 1. The output has
/// the same length and the same order as the input (ties keep their input order). Rejecting
/// `p̃ <= α` is Holm's procedure at level α. Empty input gives an empty output.
///
/// # Errors
/// [`StatsError::InvalidPValue`] if any value is NaN or outside `[0, 1]`.
pub fn holm(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    for (index, &value) in p_values.iter().enumerate() {
        if !(0.0..=1.0).contains(&value) {
            return Err(StatsError::InvalidPValue { index, value });
        }
    }
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &idx) in order.iter().enumerate() {
        let scaled = ((m - rank) as f64 * p_values[idx]).min(1.0);
        running = running.max(scaled);
        adjusted[idx] = running;
    }
    Ok(adjusted)
}

// ---------------------------------------------------------------------------------------------
// Paired bootstrap
// ---------------------------------------------------------------------------------------------

/// Settings of a paired percentile bootstrap.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Number of resamples `B` (default [`DEFAULT_RESAMPLES`] = 10,000). Must be at least 1.
    pub resamples: usize,
    /// Two-sided confidence level of the percentile interval (default 0.95).
    pub confidence: f64,
    /// Seed of the `ChaCha8Rng` that draws the resampled question indices.
    pub seed: u64,
}

impl BootstrapConfig {
    /// Defaults (`B` = 10,000, 95 %) with the given seed.
    pub fn with_seed(seed: u64) -> Self {
        Self {
            seed,
            ..Self::default()
        }
    }
}

impl Default for BootstrapConfig {
    /// `B` = 10,000, confidence 0.95, seed 0.
    fn default() -> Self {
        Self {
            resamples: DEFAULT_RESAMPLES,
            confidence: DEFAULT_CONFIDENCE,
            seed: 0,
        }
    }
}

/// Result of a paired bootstrap: a point estimate and, when there is enough data, a
/// percentile interval.
///
/// Never contains NaN. When `n < MIN_PAIRED_QUESTIONS` (that is, `n = 1`), `insufficient` is
/// true, `interval` is `None` and `estimate` is the plain-sample statistic.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapCi {
    /// Statistic on the full sample (units of the function that produced it).
    pub estimate: f64,
    /// Percentile interval; `None` exactly when `insufficient` is true.
    pub interval: Option<Interval>,
    /// Number of paired observations.
    pub n: usize,
    /// Number of resamples drawn (0 when insufficient).
    pub resamples: usize,
    /// Confidence level of `interval`.
    pub confidence: f64,
    /// Seed used.
    pub seed: u64,
    /// True when there were too few observations (`n = 1`) for a bootstrap interval:
    /// "insufficient data".
    pub insufficient: bool,
}

fn check_config(config: &BootstrapConfig) -> Result<(), StatsError> {
    if config.resamples == 0 {
        return Err(StatsError::ZeroResamples);
    }
    if !valid_level(config.confidence) {
        return Err(StatsError::InvalidConfidence(config.confidence));
    }
    Ok(())
}

fn check_finite(series: &'static str, xs: &[f64]) -> Result<(), StatsError> {
    for (index, &value) in xs.iter().enumerate() {
        if !value.is_finite() {
            return Err(StatsError::NonFinite {
                series,
                index,
                value,
            });
        }
    }
    Ok(())
}

/// Shared paired-bootstrap driver. `stat` maps a multiset of question indices (as the resampled
/// index slice) to the statistic. Runs single-threaded so the result depends only on the seed,
/// `n` and `B`: resample `r` consumes the next `n` draws `random_range(0..n)` of one
/// `ChaCha8Rng::seed_from_u64(seed)` stream.
fn paired_bootstrap<F>(n: usize, config: &BootstrapConfig, full: f64, mut stat: F) -> BootstrapCi
where
    F: FnMut(&[usize]) -> f64,
{
    if n < MIN_PAIRED_QUESTIONS {
        return BootstrapCi {
            estimate: full,
            interval: None,
            n,
            resamples: 0,
            confidence: config.confidence,
            seed: config.seed,
            insufficient: true,
        };
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut indices = vec![0usize; n];
    let mut stats = Vec::with_capacity(config.resamples);
    for _ in 0..config.resamples {
        for slot in indices.iter_mut() {
            *slot = rng.random_range(0..n);
        }
        stats.push(stat(&indices));
    }
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - config.confidence) / 2.0;
    let lower = quantile_sorted(&stats, tail);
    let upper = quantile_sorted(&stats, 1.0 - tail);
    BootstrapCi {
        estimate: full,
        interval: Some(Interval { lower, upper }),
        n,
        resamples: config.resamples,
        confidence: config.confidence,
        seed: config.seed,
        insufficient: false,
    }
}

/// Paired percentile bootstrap for the difference of means `mean(candidate) − mean(baseline)`.
///
/// Source: B. Efron & R. J. Tibshirani (1993), *An Introduction to the Bootstrap*, Chapman &
/// Hall: resampling of pairs (ch. 6–7) and the percentile interval (§13.3).
///
/// `baseline[i]` and `candidate[i]` must be measurements of the same question `i` (e.g. words
/// retrieved). Each of the `B` resamples draws `n` question indices with replacement and
/// computes `mean(candidate[idx] − baseline[idx])`; the interval is the `(1−conf)/2` and
/// `(1+conf)/2` quantiles of the `B` statistics, by linear interpolation (numpy's default).
/// The estimate and the interval are in the units of the inputs.
///
/// Deterministic: single-threaded, one `ChaCha8Rng::seed_from_u64(config.seed)` stream, so the
/// same seed, data and `B` give the same interval whatever the thread count of the caller. The
/// same seed and `n` resample the same question indices in every bootstrap function here.
///
/// `n = 1` returns an "insufficient data" result (`insufficient = true`, `interval = None`).
///
/// # Errors
/// [`StatsError::EmptyInput`] for `n = 0`; [`StatsError::LengthMismatch`];
/// [`StatsError::NonFinite`] for NaN/infinite values; [`StatsError::ZeroResamples`];
/// [`StatsError::InvalidConfidence`].
pub fn bootstrap_mean_difference(
    baseline: &[f64],
    candidate: &[f64],
    config: &BootstrapConfig,
) -> Result<BootstrapCi, StatsError> {
    check_same_len(baseline.len(), candidate.len())?;
    if baseline.is_empty() {
        return Err(StatsError::EmptyInput);
    }
    check_config(config)?;
    check_finite("baseline", baseline)?;
    check_finite("candidate", candidate)?;
    let diffs: Vec<f64> = candidate
        .iter()
        .zip(baseline)
        .map(|(cand, base)| cand - base)
        .collect();
    // The mean of the paired differences, resampled by question: one-sample bootstrap.
    bootstrap_mean(&diffs, config)
}

/// Result of a paired sign-flip permutation test ([`sign_flip_test`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SignFlipTest {
    /// Observed mean of the paired differences (candidate − baseline), in the inputs' units.
    pub mean_difference: f64,
    /// Two-sided p-value of H0 "the differences are symmetric about 0".
    pub p: f64,
    /// Pairs whose difference is not 0 (zero differences carry no sign information).
    pub nonzero: usize,
    /// True when all `2^nonzero` sign patterns were enumerated (exact p); false when `p` is
    /// the Monte Carlo estimate `(1 + hits) / (1 + resamples)` over random sign patterns.
    pub exact: bool,
    /// Sign patterns drawn (Monte Carlo) or enumerated (exact).
    pub resamples: usize,
}

/// Largest number of non-zero differences whose `2^m` sign patterns are enumerated exactly.
pub const SIGN_FLIP_EXACT_MAX: usize = 16;

/// Paired sign-flip (randomisation) test of the mean difference (Fisher 1935, *The Design of
/// Experiments* §21; Good 2005, *Permutation, Parametric and Bootstrap Tests of Hypotheses*
/// §3.1): under H0 each question's difference `candidate − baseline` is as likely to have
/// either sign, so the statistic `|Σ d_i|` is compared with its value under every sign pattern
/// (exact, when at most [`SIGN_FLIP_EXACT_MAX`] differences are non-zero) or under
/// `config.resamples` random patterns drawn from one `ChaCha8Rng::seed_from_u64(seed)` stream,
/// with the Monte Carlo p-value `(1 + #{|T*| ≥ |T|}) / (1 + B)` (Phipson & Smyth 2010), which
/// is never 0. Comparisons allow a relative tolerance of 1e-9 so that sign patterns equal in
/// exact arithmetic count as ties. All differences 0 gives p = 1.
///
/// # Errors
/// [`StatsError::EmptyInput`], [`StatsError::LengthMismatch`], [`StatsError::NonFinite`],
/// [`StatsError::ZeroResamples`].
pub fn sign_flip_test(
    baseline: &[f64],
    candidate: &[f64],
    config: &BootstrapConfig,
) -> Result<SignFlipTest, StatsError> {
    check_same_len(baseline.len(), candidate.len())?;
    if baseline.is_empty() {
        return Err(StatsError::EmptyInput);
    }
    if config.resamples == 0 {
        return Err(StatsError::ZeroResamples);
    }
    check_finite("baseline", baseline)?;
    check_finite("candidate", candidate)?;
    let d: Vec<f64> = candidate.iter().zip(baseline).map(|(c, b)| c - b).collect();
    // Every question its own cluster: the cluster sums are the differences, in order, so the
    // enumeration and the random stream are the ones this test always used.
    let t = cluster_sign_flip_test(
        &d,
        &Clusters::singletons(d.len()),
        config.resamples,
        config.seed,
    )?;
    Ok(SignFlipTest {
        mean_difference: d.iter().sum::<f64>() / d.len() as f64,
        p: t.p,
        nonzero: t.nonzero,
        exact: t.exact,
        resamples: t.resamples,
    })
}

/// Percentile bootstrap of one sample's mean (Efron & Tibshirani 1993, §13.3): each of the `B`
/// resamples draws `n` indices with replacement and takes the mean of those values.
///
/// Same determinism as [`bootstrap_mean_difference`] (one seeded stream, single-threaded); the
/// estimate is the sample mean, in the units of `xs`. `n = 1` gives an "insufficient data"
/// result.
///
/// # Errors
/// [`StatsError::EmptyInput`], [`StatsError::NonFinite`], [`StatsError::ZeroResamples`],
/// [`StatsError::InvalidConfidence`].
pub fn bootstrap_mean(xs: &[f64], config: &BootstrapConfig) -> Result<BootstrapCi, StatsError> {
    if xs.is_empty() {
        return Err(StatsError::EmptyInput);
    }
    check_config(config)?;
    check_finite("values", xs)?;
    let n = xs.len();
    let full = xs.iter().sum::<f64>() / n as f64;
    Ok(paired_bootstrap(n, config, full, |idx| {
        idx.iter().map(|&i| xs[i]).sum::<f64>() / n as f64
    }))
}

/// Population standard deviation `sqrt(Σ (x − mean)² / n)` (numpy's `np.std` default,
/// `ddof = 0`); `None` for an empty sample or NaN.
pub fn population_std(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    Some((xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64).sqrt())
}

/// Paired bootstrap for an accuracy difference in percentage points:
/// `100 × mean(candidate − baseline)` with correct = 1 and wrong = 0.
///
/// Same method, determinism and errors as [`bootstrap_mean_difference`] (Efron & Tibshirani
/// 1993), on 0/1 data scaled to points: an estimate of `+5.2` means the candidate answered 5.2 %
/// of the questions more correctly than the baseline. `n = 1` gives an "insufficient data"
/// result.
///
/// # Errors
/// [`StatsError::EmptyInput`], [`StatsError::LengthMismatch`], [`StatsError::ZeroResamples`],
/// [`StatsError::InvalidConfidence`].
pub fn bootstrap_accuracy_delta(
    baseline: &[bool],
    candidate: &[bool],
    config: &BootstrapConfig,
) -> Result<BootstrapCi, StatsError> {
    let to_points =
        |xs: &[bool]| -> Vec<f64> { xs.iter().map(|&ok| if ok { 100.0 } else { 0.0 }).collect() };
    check_same_len(baseline.len(), candidate.len())?;
    bootstrap_mean_difference(&to_points(baseline), &to_points(candidate), config)
}

/// Paired bootstrap for the relative reduction, in percent, of a positive quantity:
/// `100 × (1 − mean(candidate) / mean(baseline))`.
///
/// Typical use: words retrieved per question (a positive value means the candidate retrieves
/// fewer words). Each resample draws one set of question indices and uses it for both series
/// (ratio of resampled means), following Efron & Tibshirani (1993) for paired data and the
/// percentile interval (§13.3). Determinism as in [`bootstrap_mean_difference`].
///
/// Requirements: every baseline value finite and `> 0` (so every resampled baseline mean is
/// positive and no ratio divides by zero), every candidate value finite and `>= 0`.
/// `n = 1` gives an "insufficient data" result.
///
/// # Errors
/// [`StatsError::EmptyInput`], [`StatsError::LengthMismatch`], [`StatsError::NonFinite`],
/// [`StatsError::NotPositive`], [`StatsError::ZeroResamples`],
/// [`StatsError::InvalidConfidence`].
pub fn bootstrap_relative_reduction(
    baseline: &[f64],
    candidate: &[f64],
    config: &BootstrapConfig,
) -> Result<BootstrapCi, StatsError> {
    check_same_len(baseline.len(), candidate.len())?;
    if baseline.is_empty() {
        return Err(StatsError::EmptyInput);
    }
    check_config(config)?;
    check_finite("baseline", baseline)?;
    check_finite("candidate", candidate)?;
    if let Some((index, &value)) = baseline.iter().enumerate().find(|(_, &v)| v <= 0.0) {
        return Err(StatsError::NotPositive {
            series: "baseline",
            index,
            value,
            requirement: "> 0",
        });
    }
    if let Some((index, &value)) = candidate.iter().enumerate().find(|(_, &v)| v < 0.0) {
        return Err(StatsError::NotPositive {
            series: "candidate",
            index,
            value,
            requirement: ">= 0",
        });
    }
    let reduction = |base_sum: f64, cand_sum: f64| 100.0 * (1.0 - cand_sum / base_sum);
    let full = reduction(baseline.iter().sum(), candidate.iter().sum());
    Ok(paired_bootstrap(baseline.len(), config, full, |idx| {
        let mut base_sum = 0.0;
        let mut cand_sum = 0.0;
        for &i in idx {
            base_sum += baseline[i];
            cand_sum += candidate[i];
        }
        reduction(base_sum, cand_sum)
    }))
}

// ---------------------------------------------------------------------------------------------
// Minimum detectable effect
// ---------------------------------------------------------------------------------------------

/// Minimum detectable accuracy difference, in percentage points, for McNemar's test on `n`
/// paired questions with discordant proportion `discordance` (ψ = (b + c)/n, in `(0, 1]`),
/// two-sided level `alpha` and power `power`.
///
/// Source: R. J. Connor (1987), "Sample size for testing differences in proportions for the
/// paired-sample design", Biometrics 43:207–211 (normal approximation). The sample-size relation
///
/// ```text
/// sqrt(n) · δ = z_{1−α/2} · sqrt(ψ) + z_{1−β} · sqrt(ψ − δ²)
/// ```
///
/// (δ = p_c − p_b, the difference of the two accuracies as proportions, `1 − β = power`) is
/// solved for δ ∈ [0, sqrt(ψ)]. Squaring gives a quadratic whose admissible root is the closed
/// form
///
/// ```text
/// δ = sqrt(ψ) · ( z_a·sqrt(n) + z_b·sqrt(n + z_b² − z_a²) ) / (n + z_b²),
///     z_a = z_{1−α/2},  z_b = z_{1−β}
/// ```
///
/// and the result is `100 · δ` points. For large `n` it behaves like
/// `100 · sqrt(ψ) · (z_a + z_b) / sqrt(n)`, i.e. it shrinks like `1/sqrt(n)`.
///
/// A root exists only when `n > z_a²` (n >= 4 at α = 0.05). A returned value above `100 · ψ`
/// means no effect is detectable at that discordance, since |δ| <= ψ always holds.
///
/// Returns `None` (never NaN) when `n <= z_a²` (including `n = 0` and `n = 1`), when
/// `discordance` is not in `(0, 1]`, or when `alpha` or `power` is not strictly between 0 and 1.
pub fn minimum_detectable_effect_with(
    n: u64,
    discordance: f64,
    alpha: f64,
    power: f64,
) -> Option<f64> {
    let valid_psi = discordance > 0.0 && discordance <= 1.0;
    if !(valid_psi && valid_level(alpha) && valid_level(power)) {
        return None;
    }
    let z_a = z_quantile(1.0 - alpha / 2.0);
    let z_b = z_quantile(power);
    let nf = n as f64;
    if !(z_a.is_finite() && z_b.is_finite()) || nf <= z_a * z_a {
        return None;
    }
    let inner = nf + z_b * z_b - z_a * z_a;
    if inner < 0.0 {
        return None;
    }
    let delta = discordance.sqrt() * (z_a * nf.sqrt() + z_b * inner.sqrt()) / (nf + z_b * z_b);
    let points = 100.0 * delta;
    points.is_finite().then_some(points)
}

/// [`minimum_detectable_effect_with`] at α = 0.05 (two-sided) and power 0.8: minimum detectable
/// accuracy difference in points for `n` paired questions and an assumed discordant proportion
/// ψ = `discordance`. `None` for `n <= 3` (including 0 and 1) or ψ not in `(0, 1]`.
pub fn minimum_detectable_effect(n: u64, discordance: f64) -> Option<f64> {
    minimum_detectable_effect_with(n, discordance, DEFAULT_ALPHA, DEFAULT_POWER)
}

/// [`minimum_detectable_effect`] with the observed discordance ψ = (b + c)/n, at α = 0.05
/// (two-sided) and power 0.8, in points. `None` when `n <= 3`, `b + c == 0` or `b + c > n`.
pub fn minimum_detectable_effect_observed(n: u64, b: u64, c: u64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    minimum_detectable_effect(n, b.saturating_add(c) as f64 / n as f64)
}

// ---------------------------------------------------------------------------------------------
// Descriptive helpers
// ---------------------------------------------------------------------------------------------

/// Arithmetic mean. `None` for an empty slice or any NaN.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| x.is_nan()) {
        return None;
    }
    Some(xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Quantile `q` in `[0, 1]` by linear interpolation between order statistics, as numpy's
/// default `np.quantile(xs, q)` (Hyndman & Fan 1996, type 7): with `xs` sorted and
/// `h = (n − 1)·q`, the result is `xs[⌊h⌋] + (h − ⌊h⌋)·(xs[⌊h⌋+1] − xs[⌊h⌋])`.
///
/// `None` for an empty slice, any NaN in `xs`, or `q` outside `[0, 1]`.
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() || !(0.0..=1.0).contains(&q) || xs.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(quantile_sorted(&sorted, q))
}

/// Median (the 0.5 quantile, numpy's linear interpolation). `None` for empty input or any NaN.
pub fn median(xs: &[f64]) -> Option<f64> {
    quantile(xs, 0.5)
}

/// 95th percentile (the 0.95 quantile, numpy's default linear interpolation, as
/// `np.percentile(xs, 95)`). `None` for empty input or any NaN.
pub fn p95(xs: &[f64]) -> Option<f64> {
    quantile(xs, 0.95)
}

/// Type-7 quantile of a non-empty, ascending, NaN-free slice.
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let h = (n - 1) as f64 * q;
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    if frac == 0.0 || lo == hi {
        sorted[lo]
    } else {
        sorted[lo] + frac * (sorted[hi] - sorted[lo])
    }
}

// ---------------------------------------------------------------------------------------------
// Paired comparison bundle
// ---------------------------------------------------------------------------------------------

/// Everything a report shows for one candidate method against a baseline on the same questions.
///
/// Never contains NaN. `insufficient` is true when `n < MIN_PAIRED_QUESTIONS` (n = 1): the
/// report must then say "insufficient data" instead of an interval (docs/reference.md case 34).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedComparison {
    /// Number of paired questions.
    pub n: usize,
    /// Questions the baseline answered correctly.
    pub baseline_correct: u64,
    /// Questions the candidate answered correctly.
    pub candidate_correct: u64,
    /// 95 % Wilson interval for the baseline accuracy (proportion in `[0, 1]`).
    pub baseline_wilson: Interval,
    /// 95 % Wilson interval for the candidate accuracy (proportion in `[0, 1]`).
    pub candidate_wilson: Interval,
    /// Accuracy difference `100 × (candidate_correct − baseline_correct) / n`, in points.
    pub delta_points: f64,
    /// The interval (at the run's `1 − α`, 95 % by default) of `delta_points` in points, by the verdict's method for these
    /// questions' clusters ([`paired_interval`]: Tango's score interval, Rao–Scott when
    /// clustered), so that a planned comparison shows one interval everywhere; `None` when
    /// insufficient.
    pub delta_ci: Option<Interval>,
    /// How `delta_ci` was computed.
    pub method: IntervalMethod,
    /// McNemar's test (exact, mid-p, chi-square) on the discordant pairs.
    pub mcnemar: McNemar,
    /// Minimum detectable effect in points at α = `1 − level`, power 0.8 for the observed
    /// discordance ([`minimum_detectable_effect_with`]); `None` when it is undefined.
    pub mde_points: Option<f64>,
    /// True for "insufficient data" (n = 1): no interval.
    pub insufficient: bool,
}

impl PairedComparison {
    /// Compares `candidate` with `baseline` (per-question correctness, same question order),
    /// with the two-sided `level` interval of [`paired_interval`] (the run's `1 − α`) for the
    /// questions' `clusters`.
    ///
    /// # Errors
    /// [`StatsError::EmptyInput`] for an empty question list; [`StatsError::LengthMismatch`]
    /// (also between the questions and `clusters`); [`StatsError::InvalidConfidence`].
    pub fn new(
        baseline: &[bool],
        candidate: &[bool],
        clusters: &Clusters,
        level: f64,
    ) -> Result<Self, StatsError> {
        if !valid_level(level) {
            return Err(StatsError::InvalidConfidence(level));
        }
        check_same_len(baseline.len(), candidate.len())?;
        check_same_len(baseline.len(), clusters.len())?;
        if baseline.is_empty() {
            return Err(StatsError::EmptyInput);
        }
        let n = baseline.len();
        let count = |xs: &[bool]| xs.iter().filter(|&&ok| ok).count() as u64;
        let baseline_correct = count(baseline);
        let candidate_correct = count(candidate);
        let nu = n as u64;
        let baseline_wilson =
            wilson(baseline_correct, nu, DEFAULT_CONFIDENCE).ok_or(StatsError::EmptyInput)?;
        let candidate_wilson =
            wilson(candidate_correct, nu, DEFAULT_CONFIDENCE).ok_or(StatsError::EmptyInput)?;
        let d: Vec<f64> = candidate
            .iter()
            .zip(baseline)
            .map(|(&c, &b)| f64::from(u8::from(c)) - f64::from(u8::from(b)))
            .collect();
        let ci = paired_interval(&d, clusters, level);
        let mcnemar = mcnemar_paired(baseline, candidate)?;
        let delta_points = 100.0 * (candidate_correct as f64 - baseline_correct as f64) / n as f64;
        Ok(Self {
            n,
            baseline_correct,
            candidate_correct,
            baseline_wilson,
            candidate_wilson,
            delta_points,
            delta_ci: ci.map(|c| Interval {
                lower: 100.0 * c.interval.lower,
                upper: 100.0 * c.interval.upper,
            }),
            method: ci.map_or(IntervalMethod::Tango, |c| c.method),
            mcnemar,
            mde_points: minimum_detectable_effect_with(
                nu,
                mcnemar.b.saturating_add(mcnemar.c) as f64 / n as f64,
                1.0 - level,
                DEFAULT_POWER,
            ),
            insufficient: n < MIN_PAIRED_QUESTIONS,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(actual: f64, expected: f64, tol: f64) {
        assert!(
            (actual - expected).abs() <= tol,
            "expected {expected}, got {actual} (tol {tol})"
        );
    }

    /// Paired vectors with the given numbers of concordant and discordant questions.
    fn paired(both: usize, b: usize, c: usize, neither: usize) -> (Vec<bool>, Vec<bool>) {
        let mut base = Vec::new();
        let mut cand = Vec::new();
        for (x, y, k) in [
            (true, true, both),
            (true, false, b),
            (false, true, c),
            (false, false, neither),
        ] {
            base.extend(std::iter::repeat_n(x, k));
            cand.extend(std::iter::repeat_n(y, k));
        }
        (base, cand)
    }

    // --- McNemar reference vectors (docs/reference.md §5) ---------------------------------------------

    #[test]
    fn mcnemar_vector_1_7() {
        let r = mcnemar(1, 7);
        close(r.exact_p, 0.0703125, 1e-7);
        close(r.mid_p, 0.0390625, 1e-7);
        close(r.chi2_p, 0.0338949, 1e-7);
        close(r.chi2_cc_p, 0.0770999, 1e-7);
    }

    #[test]
    fn mcnemar_vector_13_4() {
        let r = mcnemar(13, 4);
        close(r.exact_p, 0.0490417, 1e-7);
        close(r.mid_p, 0.0308838, 1e-7);
    }

    #[test]
    fn mcnemar_vector_14_5() {
        let r = mcnemar(14, 5);
        close(r.exact_p, 0.0635681, 1e-7);
        close(r.mid_p, 0.0413895, 1e-7);
    }

    #[test]
    fn mcnemar_is_symmetric_in_b_and_c() {
        assert_eq!(mcnemar(1, 7).exact_p, mcnemar(7, 1).exact_p);
        assert_eq!(mcnemar(13, 4).mid_p, mcnemar(4, 13).mid_p);
    }

    #[test]
    fn mcnemar_equal_counts_give_one() {
        let r = mcnemar(6, 6);
        assert_eq!(r.exact_p, 1.0);
        close(r.mid_p, 1.0, 1e-12);
        assert_eq!(r.chi2_p, 1.0);
        assert_eq!(r.chi2_cc_p, 1.0);
    }

    #[test]
    fn mcnemar_paired_counts_b_and_c() {
        let (base, cand) = paired(3, 1, 7, 2);
        assert_eq!(discordant_counts(&base, &cand), Ok((1, 7)));
        let r = mcnemar_paired(&base, &cand).unwrap();
        assert_eq!((r.b, r.c), (1, 7));
        close(r.exact_p, 0.0703125, 1e-7);
    }

    #[test]
    fn mcnemar_mismatched_lengths_is_error() {
        let err = mcnemar_paired(&[true, false], &[true]).unwrap_err();
        assert_eq!(
            err,
            StatsError::LengthMismatch {
                baseline: 2,
                candidate: 1
            }
        );
        assert!(err.to_string().contains("differ in length"));
        assert!(discordant_counts(&[true], &[]).is_err());
    }

    // --- Holm ---------------------------------------------------------------------------------

    #[test]
    fn holm_reference_vector() {
        let p = [0.50, 0.01, 0.001, 0.69, 0.02, 0.05, 0.0025];
        let expected = [1.0, 0.05, 0.007, 1.0, 0.08, 0.15, 0.015];
        let adj = holm(&p).unwrap();
        assert_eq!(adj.len(), expected.len());
        for (a, e) in adj.iter().zip(expected) {
            close(*a, e, 1e-12);
        }
    }

    #[test]
    fn holm_empty_is_empty() {
        assert_eq!(holm(&[]).unwrap(), Vec::<f64>::new());
    }

    #[test]
    fn holm_single_is_unchanged() {
        assert_eq!(holm(&[0.03]).unwrap(), vec![0.03]);
    }

    #[test]
    fn holm_rejects_invalid_p_values() {
        assert!(matches!(
            holm(&[0.1, f64::NAN]),
            Err(StatsError::InvalidPValue { index: 1, .. })
        ));
        assert!(holm(&[1.5]).is_err());
        assert!(holm(&[-0.1]).is_err());
    }

    // --- Wilson -------------------------------------------------------------------------------

    #[test]
    fn wilson_known_value() {
        // 7/10 at 95 %: [0.396778, 0.892209] (Agresti & Coull 1998 formula).
        let ci = wilson(7, 10, 0.95).unwrap();
        close(ci.lower, 0.396_778, 1e-6);
        close(ci.upper, 0.892_209, 1e-6);
    }

    #[test]
    fn wilson_boundaries_are_non_degenerate() {
        let zero = wilson(0, 25, 0.95).unwrap();
        assert_eq!(zero.lower, 0.0);
        assert!(zero.upper > 0.0 && zero.upper < 1.0);
        let z2 = 1.959_963_984_540_054_f64.powi(2);
        close(zero.upper, z2 / (25.0 + z2), 1e-9);
        let full = wilson(25, 25, 0.95).unwrap();
        assert_eq!(full.upper, 1.0);
        assert!(full.lower < 1.0 && full.lower > 0.0);
        close(full.lower, 25.0 / (25.0 + z2), 1e-9);
    }

    #[test]
    fn wilson_none_for_invalid_input() {
        assert!(wilson(0, 0, 0.95).is_none());
        assert!(wilson(3, 2, 0.95).is_none());
        assert!(wilson(1, 2, 1.0).is_none());
        assert!(wilson(1, 2, 0.0).is_none());
        assert!(wilson(1, 2, f64::NAN).is_none());
    }

    // --- Bootstrap ----------------------------------------------------------------------------

    #[test]
    fn bootstrap_is_deterministic_for_a_seed() {
        let (base, cand) = paired(100, 13, 4, 36);
        let cfg = BootstrapConfig::with_seed(42);
        let a = bootstrap_accuracy_delta(&base, &cand, &cfg).unwrap();
        let b = bootstrap_accuracy_delta(&base, &cand, &cfg).unwrap();
        assert_eq!(a, b);
        // On continuous data two seeds practically never give identical percentiles.
        let xs: Vec<f64> = (0..50).map(|i| f64::from(i * i % 37) + 0.25).collect();
        let ys: Vec<f64> = (0..50).map(|i| f64::from(i * 7 % 41) + 0.5).collect();
        let s1 = bootstrap_mean_difference(&xs, &ys, &BootstrapConfig::with_seed(1)).unwrap();
        let s1_again = bootstrap_mean_difference(&xs, &ys, &BootstrapConfig::with_seed(1)).unwrap();
        let s2 = bootstrap_mean_difference(&xs, &ys, &BootstrapConfig::with_seed(2)).unwrap();
        assert_eq!(s1, s1_again);
        assert_eq!(s1.estimate, s2.estimate);
        assert_ne!(s1.interval, s2.interval);
    }

    #[test]
    fn bootstrap_accuracy_delta_is_plausible() {
        // n = 153, b = 13, c = 4: delta = -9/153 = -5.88 points; normal-approximation SE of
        // the paired difference ≈ 100·sqrt((b+c)/n − δ²)/sqrt(n) ≈ 2.6 points.
        let (base, cand) = paired(100, 13, 4, 36);
        let ci = bootstrap_accuracy_delta(&base, &cand, &BootstrapConfig::with_seed(7)).unwrap();
        close(ci.estimate, -900.0 / 153.0, 1e-9);
        assert!(!ci.insufficient);
        assert_eq!(ci.resamples, DEFAULT_RESAMPLES);
        let iv = ci.interval.unwrap();
        assert!(iv.contains(ci.estimate));
        let se = 100.0 * ((17.0 / 153.0 - (9.0f64 / 153.0).powi(2)) / 153.0).sqrt();
        close(iv.lower, ci.estimate - 1.96 * se, 1.0);
        close(iv.upper, ci.estimate + 1.96 * se, 1.0);
    }

    #[test]
    fn bootstrap_mean_difference_identical_series_is_zero() {
        let xs = [120.0, 80.0, 95.5, 101.0];
        let ci = bootstrap_mean_difference(&xs, &xs, &BootstrapConfig::with_seed(1)).unwrap();
        assert_eq!(ci.estimate, 0.0);
        assert_eq!(
            ci.interval,
            Some(Interval {
                lower: 0.0,
                upper: 0.0
            })
        );
    }

    #[test]
    fn bootstrap_mean_difference_constant_shift() {
        let base = [10.0, 20.0, 30.0, 40.0, 50.0];
        let cand: Vec<f64> = base.iter().map(|x| x - 3.0).collect();
        let ci = bootstrap_mean_difference(&base, &cand, &BootstrapConfig::with_seed(1)).unwrap();
        close(ci.estimate, -3.0, 1e-12);
        let iv = ci.interval.unwrap();
        close(iv.lower, -3.0, 1e-9);
        close(iv.upper, -3.0, 1e-9);
    }

    #[test]
    fn bootstrap_relative_reduction_constant_ratio() {
        // Candidate retrieves 60 % of the baseline's words on every question: 40 % reduction
        // in every resample.
        let base = [300.0, 250.0, 410.0, 120.0, 275.0, 500.0];
        let cand: Vec<f64> = base.iter().map(|x| 0.6 * x).collect();
        let ci =
            bootstrap_relative_reduction(&base, &cand, &BootstrapConfig::with_seed(3)).unwrap();
        close(ci.estimate, 40.0, 1e-9);
        let iv = ci.interval.unwrap();
        close(iv.lower, 40.0, 1e-9);
        close(iv.upper, 40.0, 1e-9);
    }

    #[test]
    fn bootstrap_relative_reduction_varied() {
        let base = [300.0, 250.0, 410.0, 120.0, 275.0, 500.0, 330.0, 280.0];
        let cand = [200.0, 180.0, 240.0, 100.0, 150.0, 260.0, 250.0, 150.0];
        let ci =
            bootstrap_relative_reduction(&base, &cand, &BootstrapConfig::with_seed(3)).unwrap();
        let expected = 100.0 * (1.0 - cand.iter().sum::<f64>() / base.iter().sum::<f64>());
        close(ci.estimate, expected, 1e-9);
        let iv = ci.interval.unwrap();
        assert!(iv.lower < expected && expected < iv.upper);
        assert!(iv.lower > 20.0 && iv.upper < 50.0, "{iv:?}");
    }

    #[test]
    fn bootstrap_relative_reduction_rejects_non_positive_baseline() {
        let cfg = BootstrapConfig::with_seed(0);
        assert!(matches!(
            bootstrap_relative_reduction(&[1.0, 0.0], &[1.0, 1.0], &cfg),
            Err(StatsError::NotPositive { index: 1, .. })
        ));
        assert!(matches!(
            bootstrap_relative_reduction(&[1.0, 2.0], &[1.0, -1.0], &cfg),
            Err(StatsError::NotPositive { .. })
        ));
    }

    #[test]
    fn bootstrap_errors() {
        let cfg = BootstrapConfig::with_seed(0);
        assert_eq!(
            bootstrap_mean_difference(&[], &[], &cfg),
            Err(StatsError::EmptyInput)
        );
        assert_eq!(
            bootstrap_relative_reduction(&[], &[], &cfg),
            Err(StatsError::EmptyInput)
        );
        assert!(matches!(
            bootstrap_mean_difference(&[1.0], &[1.0, 2.0], &cfg),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert!(matches!(
            bootstrap_mean_difference(&[1.0, f64::NAN], &[1.0, 2.0], &cfg),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
        let zero = BootstrapConfig {
            resamples: 0,
            ..cfg
        };
        assert_eq!(
            bootstrap_mean_difference(&[1.0, 2.0], &[1.0, 2.0], &zero),
            Err(StatsError::ZeroResamples)
        );
        let bad = BootstrapConfig {
            confidence: 1.0,
            ..cfg
        };
        assert!(matches!(
            bootstrap_mean_difference(&[1.0, 2.0], &[1.0, 2.0], &bad),
            Err(StatsError::InvalidConfidence(_))
        ));
    }

    #[test]
    fn bootstrap_single_observation_is_insufficient() {
        let cfg = BootstrapConfig::with_seed(0);
        let ci = bootstrap_mean_difference(&[5.0], &[7.0], &cfg).unwrap();
        assert!(ci.insufficient);
        assert_eq!(ci.interval, None);
        assert_eq!(ci.estimate, 2.0);
        let rel = bootstrap_relative_reduction(&[4.0], &[3.0], &cfg).unwrap();
        assert!(rel.insufficient);
        close(rel.estimate, 25.0, 1e-12);
    }

    // --- Minimum detectable effect ------------------------------------------------------------

    /// Solves Connor's relation by bisection, for cross-checking the closed form.
    fn mde_bisection(n: f64, psi: f64, z_a: f64, z_b: f64) -> f64 {
        let f = |d: f64| n.sqrt() * d - z_a * psi.sqrt() - z_b * (psi - d * d).max(0.0).sqrt();
        let (mut lo, mut hi) = (0.0, psi.sqrt());
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if f(mid) > 0.0 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        100.0 * 0.5 * (lo + hi)
    }

    #[test]
    fn mde_matches_bisection() {
        let z_a = 1.959_963_984_540_054;
        let z_b = 0.841_621_233_572_914_3;
        for &(n, psi) in &[
            (4u64, 0.5),
            (10, 0.2),
            (153, 0.15),
            (1000, 0.1),
            (50_000, 0.3),
        ] {
            let closed = minimum_detectable_effect(n, psi).unwrap();
            close(closed, mde_bisection(n as f64, psi, z_a, z_b), 1e-6);
        }
    }

    #[test]
    fn mde_shrinks_like_inverse_sqrt_n() {
        let psi = 0.15;
        let a = minimum_detectable_effect(10_000, psi).unwrap();
        let b = minimum_detectable_effect(40_000, psi).unwrap();
        // Quadrupling n halves the MDE (up to O(1/n) terms).
        close(a / b, 2.0, 1e-3);
        let asymptotic = 100.0 * psi.sqrt() * (1.959_964 + 0.841_621) / 40_000f64.sqrt();
        close(b, asymptotic, 1e-3);
        let mut prev = f64::INFINITY;
        for n in [4u64, 10, 50, 153, 1000, 10_000] {
            let m = minimum_detectable_effect(n, psi).unwrap();
            assert!(m < prev);
            prev = m;
        }
    }

    #[test]
    fn mde_none_for_small_or_invalid_input() {
        for n in 0..=3 {
            assert_eq!(minimum_detectable_effect(n, 0.2), None);
        }
        assert_eq!(minimum_detectable_effect(100, 0.0), None);
        assert_eq!(minimum_detectable_effect(100, 1.5), None);
        assert_eq!(minimum_detectable_effect(100, f64::NAN), None);
        assert_eq!(minimum_detectable_effect_with(100, 0.2, 0.0, 0.8), None);
        assert_eq!(minimum_detectable_effect_with(100, 0.2, 0.05, 1.0), None);
        assert_eq!(minimum_detectable_effect_observed(0, 0, 0), None);
        assert_eq!(minimum_detectable_effect_observed(1, 1, 0), None);
        assert_eq!(minimum_detectable_effect_observed(100, 0, 0), None);
    }

    #[test]
    fn mde_observed_uses_discordance() {
        let observed = minimum_detectable_effect_observed(153, 13, 4).unwrap();
        close(
            observed,
            minimum_detectable_effect(153, 17.0 / 153.0).unwrap(),
            1e-12,
        );
    }

    // --- Descriptive --------------------------------------------------------------------------

    #[test]
    fn descriptive_helpers_match_numpy() {
        let xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        close(mean(&xs).unwrap(), 31.0 / 8.0, 1e-12);
        // np.median -> 3.5; np.percentile(xs, 95) -> 7.949999999999999
        close(median(&xs).unwrap(), 3.5, 1e-12);
        close(p95(&xs).unwrap(), 7.95, 1e-12);
        close(median(&[1.0, 2.0, 10.0]).unwrap(), 2.0, 0.0);
        // np.percentile(range(1, 11), 95) -> 9.55
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        close(p95(&ten).unwrap(), 9.55, 1e-12);
        assert_eq!(quantile(&ten, 0.0), Some(1.0));
        assert_eq!(quantile(&ten, 1.0), Some(10.0));
        assert_eq!(p95(&[42.0]), Some(42.0));
    }

    #[test]
    fn descriptive_helpers_empty_or_nan_is_none() {
        assert_eq!(mean(&[]), None);
        assert_eq!(median(&[]), None);
        assert_eq!(p95(&[]), None);
        assert_eq!(mean(&[1.0, f64::NAN]), None);
        assert_eq!(median(&[f64::NAN]), None);
        assert_eq!(quantile(&[1.0], 1.5), None);
    }

    // --- docs/reference.md case 34 ---------------------------------------------------------------------

    #[test]
    fn case34_identical_methods_p_is_one() {
        let a = [true, true, false, true, false];
        let cmp = PairedComparison::new(&a, &a, &Clusters::singletons(5), 0.95).unwrap();
        assert_eq!((cmp.mcnemar.b, cmp.mcnemar.c), (0, 0));
        assert_eq!(cmp.mcnemar.exact_p, 1.0);
        assert_eq!(cmp.mcnemar.mid_p, 1.0);
        assert_eq!(cmp.mcnemar.chi2_p, 1.0);
        assert_eq!(cmp.mcnemar.chi2_cc_p, 1.0);
        assert_eq!(cmp.delta_points, 0.0);
        // No discordant pair among 5 is not certainty: Tango's ±z²/(n + z²), in points.
        let iv = cmp.delta_ci.unwrap();
        let z2 = 1.959_963_984_540_054f64.powi(2);
        close(iv.upper, 100.0 * z2 / (5.0 + z2), 1e-6);
        assert_eq!(iv.lower, -iv.upper);
        assert_eq!(cmp.mde_points, None);
        assert!(!cmp.insufficient);
    }

    #[test]
    fn case34_single_question_is_insufficient_data() {
        let cmp = PairedComparison::new(&[true], &[false], &Clusters::singletons(1), 0.95).unwrap();
        assert!(cmp.insufficient);
        assert_eq!(cmp.delta_ci, None);
        assert_eq!(cmp.delta_points, -100.0);
        assert_eq!(cmp.mde_points, None);
        assert_eq!((cmp.mcnemar.b, cmp.mcnemar.c), (1, 0));
        assert_eq!(cmp.mcnemar.exact_p, 1.0);
        close(cmp.mcnemar.mid_p, 0.5, 1e-12);
        for p in [
            cmp.mcnemar.exact_p,
            cmp.mcnemar.mid_p,
            cmp.mcnemar.chi2_p,
            cmp.mcnemar.chi2_cc_p,
        ] {
            assert!(!p.is_nan());
        }
        assert!(!cmp.baseline_wilson.lower.is_nan());
        assert!(!cmp.candidate_wilson.upper.is_nan());
    }

    #[test]
    fn case34_all_correct_for_both() {
        let all = [true; 25];
        let cmp = PairedComparison::new(&all, &all, &Clusters::singletons(25), 0.95).unwrap();
        assert_eq!(cmp.mcnemar.exact_p, 1.0);
        assert_eq!(cmp.delta_points, 0.0);
        for w in [cmp.baseline_wilson, cmp.candidate_wilson] {
            assert_eq!(w.upper, 1.0);
            assert!(w.lower < 1.0);
        }
        assert!(!cmp.insufficient);
    }

    #[test]
    fn case34_empty_input_is_a_clear_error() {
        let err = PairedComparison::new(&[], &[], &Clusters::singletons(0), 0.95).unwrap_err();
        assert_eq!(err, StatsError::EmptyInput);
        assert!(err.to_string().contains("empty input"));
        assert_eq!(mcnemar_paired(&[], &[]), Err(StatsError::EmptyInput));
        assert!(matches!(
            PairedComparison::new(&[true], &[true, false], &Clusters::singletons(1), 0.95),
            Err(StatsError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn paired_comparison_is_serializable_shape() {
        // Serialize/Deserialize derive compiles and values are NaN-free (JSON-safe).
        let (base, cand) = paired(100, 13, 4, 36);
        let cmp = PairedComparison::new(&base, &cand, &Clusters::singletons(153), 0.95).unwrap();
        assert_eq!(cmp.n, 153);
        close(cmp.mcnemar.exact_p, 0.0490417, 1e-7);
        close(cmp.delta_points, -900.0 / 153.0, 1e-9);
        assert!(cmp.mde_points.unwrap() > 0.0);
        assert!(cmp.delta_ci.unwrap().lower < cmp.delta_points);
    }

    // --- Properties ---------------------------------------------------------------------------

    proptest! {
        #[test]
        fn prop_mcnemar_p_values_in_unit_interval(b in 0u64..5000, c in 0u64..5000) {
            let r = mcnemar(b, c);
            for p in [r.exact_p, r.mid_p, r.chi2_p, r.chi2_cc_p] {
                prop_assert!(!p.is_nan());
                prop_assert!((0.0..=1.0).contains(&p), "p = {}", p);
            }
            prop_assert!(r.mid_p <= r.exact_p + 1e-12);
        }

        #[test]
        fn prop_mcnemar_paired_p_values_valid(
            pairs in proptest::collection::vec((any::<bool>(), any::<bool>()), 1..300)
        ) {
            let (base, cand): (Vec<bool>, Vec<bool>) = pairs.into_iter().unzip();
            let r = mcnemar_paired(&base, &cand).unwrap();
            for p in [r.exact_p, r.mid_p, r.chi2_p, r.chi2_cc_p] {
                prop_assert!(!p.is_nan() && (0.0..=1.0).contains(&p));
            }
        }

        #[test]
        fn prop_holm_adjusted_at_least_raw(p in proptest::collection::vec(0.0f64..=1.0, 0..40)) {
            let adj = holm(&p).unwrap();
            prop_assert_eq!(adj.len(), p.len());
            for (a, raw) in adj.iter().zip(&p) {
                prop_assert!(*a >= *raw);
                prop_assert!(*a <= 1.0);
                prop_assert!(!a.is_nan());
            }
            // Monotone in the order of the raw p-values.
            for i in 0..p.len() {
                for j in 0..p.len() {
                    if p[i] < p[j] {
                        prop_assert!(adj[i] <= adj[j]);
                    }
                }
            }
        }

        #[test]
        fn prop_wilson_contains_point_estimate(
            n in 1u64..100_000,
            frac in 0.0f64..=1.0,
            confidence in 0.5f64..0.999,
        ) {
            let successes = ((n as f64) * frac).round() as u64;
            let ci = wilson(successes, n, confidence).unwrap();
            let p = successes as f64 / n as f64;
            prop_assert!(ci.contains(p), "{:?} does not contain {}", ci, p);
            prop_assert!(0.0 <= ci.lower && ci.upper <= 1.0);
            prop_assert!(ci.lower < ci.upper);
        }

        #[test]
        fn prop_paired_interval_never_nan(
            pairs in proptest::collection::vec((any::<bool>(), any::<bool>()), 1..60),
        ) {
            let (base, cand): (Vec<bool>, Vec<bool>) = pairs.into_iter().unzip();
            let cmp = PairedComparison::new(&base, &cand, &Clusters::singletons(base.len()), 0.95).unwrap();
            prop_assert!(!cmp.delta_points.is_nan());
            prop_assert_eq!(cmp.insufficient, base.len() < 2);
            if let Some(iv) = cmp.delta_ci {
                prop_assert!(!iv.lower.is_nan() && !iv.upper.is_nan());
                prop_assert!(iv.lower <= iv.upper);
                prop_assert!(iv.lower >= -100.0 && iv.upper <= 100.0);
            }
        }
    }

    #[test]
    fn bootstrap_mean_and_population_std() {
        let cfg = BootstrapConfig {
            resamples: 2000,
            ..BootstrapConfig::with_seed(7)
        };
        // numpy: np.std([1, 2, 3, 4]) = 1.118033988749895
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert!((population_std(&xs).unwrap() - 1.118033988749895).abs() < 1e-15);
        assert_eq!(population_std(&[]), None);
        let ci = bootstrap_mean(&xs, &cfg).unwrap();
        assert_eq!(ci.estimate, 2.5);
        let iv = ci.interval.unwrap();
        assert!(iv.lower >= 1.0 && iv.upper <= 4.0 && iv.lower < 2.5 && iv.upper > 2.5);
        assert_eq!(
            ci,
            bootstrap_mean(&xs, &cfg).unwrap(),
            "same seed, same interval"
        );
        let flat = bootstrap_mean(&[0.5; 10], &cfg).unwrap().interval.unwrap();
        assert_eq!((flat.lower, flat.upper), (0.5, 0.5));
        assert!(bootstrap_mean(&[1.0], &cfg).unwrap().insufficient);
        assert!(bootstrap_mean(&[], &cfg).is_err());
        assert!(bootstrap_mean(&[f64::NAN], &cfg).is_err());
    }

    /// Exact enumeration on a small vector, by hand: d = (1, 2, 3) has |Σ| = 6, reached by
    /// the all-plus and all-minus patterns only: p = 2/8. Zero differences are dropped.
    #[test]
    fn sign_flip_exact_by_hand() {
        let conf = BootstrapConfig::with_seed(1);
        let t = sign_flip_test(&[0.0, 0.0, 0.0, 5.0], &[1.0, 2.0, 3.0, 5.0], &conf).unwrap();
        assert!(t.exact && t.nonzero == 3 && t.resamples == 8);
        assert!((t.p - 0.25).abs() < 1e-15, "{t:?}");
        assert!((t.mean_difference - 1.5).abs() < 1e-15);
        // (1, -1): |Σ| = 0, every pattern ties: p = 1.
        let t = sign_flip_test(&[0.0, 1.0], &[1.0, 0.0], &conf).unwrap();
        assert_eq!(t.p, 1.0);
        let t = sign_flip_test(&[1.0, 1.0], &[1.0, 1.0], &conf).unwrap();
        assert_eq!((t.p, t.nonzero), (1.0, 0));
    }

    /// Monte Carlo: a consistent shift over 40 questions is significant, noise is not, the
    /// p-value is never 0, and the same seed gives the same p.
    #[test]
    fn sign_flip_monte_carlo() {
        let conf = BootstrapConfig {
            resamples: 2000,
            ..BootstrapConfig::with_seed(7)
        };
        let base: Vec<f64> = (0..40).map(|i| (i % 5) as f64 / 10.0).collect();
        let up: Vec<f64> = base.iter().map(|b| b + 0.1).collect();
        let t = sign_flip_test(&base, &up, &conf).unwrap();
        assert!(!t.exact && t.p > 0.0 && t.p < 0.001, "{t:?}");
        let noise: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, b)| if i % 2 == 0 { b + 0.1 } else { b - 0.1 })
            .collect();
        let t2 = sign_flip_test(&base, &noise, &conf).unwrap();
        assert!(t2.p > 0.5, "{t2:?}");
        assert_eq!(sign_flip_test(&base, &noise, &conf).unwrap(), t2);
        assert!(sign_flip_test(&[], &[], &conf).is_err());
        assert!(sign_flip_test(&[f64::NAN], &[0.0], &conf).is_err());
    }
}
