//! The interval of one paired comparison: Tango's score interval, its Rao–Scott form for
//! clustered questions, and the cluster-robust t interval (docs/reference.md §5 "The verdict").

use crate::{valid_level, z_quantile, Interval};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

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
    score_statistic(b as f64, c as f64, n as f64, delta0)
}

/// [`tango_statistic`] on real-valued counts (the Rao–Scott effective counts of
/// [`paired_interval`]).
fn score_statistic(b: f64, c: f64, n: f64, delta0: f64) -> f64 {
    let (n12, n21) = (c, b);
    let a = 2.0 * n;
    let bq = -n12 - n21 + (2.0 * n - n12 + n21) * delta0;
    let cq = -n21 * delta0 * (1.0 - delta0);
    let disc = (bq * bq - 4.0 * a * cq).max(0.0);
    let p21 = ((disc.sqrt() - bq) / (2.0 * a)).max(0.0);
    let var = n * (2.0 * p21 + delta0 * (1.0 - delta0));
    let num = n12 - n21 - n * delta0;
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
    Some(score_interval(b as f64, c as f64, n as f64, z))
}

/// The set of `Δ0` with `|Z(Δ0)| < crit` for real-valued counts `b + c ≤ n`, ends rounded to
/// 1e-12 (they then print as short decimals that read back exactly: compare.json round-trips).
fn score_interval(b: f64, c: f64, n: f64, crit: f64) -> Interval {
    let estimate = (c - b) / n;
    // Z(Δ0) − target is decreasing in Δ0: find its root in [lo, hi].
    let root = |target: f64, mut lo: f64, mut hi: f64| {
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if score_statistic(b, c, n, mid) > target {
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
    let lower = if c == 0.0 && b >= n {
        -1.0
    } else {
        root(crit, -1.0, estimate)
    };
    let upper = if b == 0.0 && c >= n {
        1.0
    } else {
        root(-crit, estimate, 1.0)
    };
    Interval {
        lower: round12(lower.min(estimate)),
        upper: round12(upper.max(estimate)),
    }
}

fn round12(x: f64) -> f64 {
    (x * 1e12).round() / 1e12
}

/// Which resampling unit each question belongs to: `labels[i]` is question `i`'s cluster, in
/// `0..count`. Every question its own cluster is ordinary question-level inference.
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

    /// Clusters holding more than one question.
    pub fn shared(&self) -> usize {
        let mut sizes = vec![0usize; self.count];
        for &l in &self.labels {
            sizes[l] += 1;
        }
        sizes.iter().filter(|&&s| s > 1).count()
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
    pub(crate) fn sums(&self, d: &[f64]) -> Vec<(f64, usize)> {
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

/// How a comparison's interval was computed ([`paired_interval`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalMethod {
    /// Tango's score interval: the differences take at most the values `−a`, `0`, `a` (right
    /// or wrong answers; a metric that moved by one step), questions independent.
    Tango,
    /// Two-point differences, clustered questions: the union of Tango's interval ignoring the
    /// clusters and Tango's on the Rao–Scott effective counts (counts divided by the design
    /// effect) read at `t_{K−1}`.
    TangoClustered,
    /// Differences of more than two magnitudes (continuous metrics): the union of the score
    /// interval of the two-point model with the differences' first two moments and the t
    /// interval (`t_{n−1}`; clustered: also their cluster-robust forms at `t_{K−1}`).
    ScoreOrT,
}

impl IntervalMethod {
    /// The name reports print.
    pub fn as_str(self) -> &'static str {
        match self {
            IntervalMethod::Tango => "Tango score",
            IntervalMethod::TangoClustered => "Tango score ∪ its Rao–Scott form at t(K−1)",
            IntervalMethod::ScoreOrT => "score ∪ t, and their cluster-robust forms at t(K−1)",
        }
    }
}

/// An interval and how it was computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedInterval {
    /// The interval of the mean difference, in the metric's scale, within `[−1, 1]`.
    pub interval: Interval,
    /// The method.
    pub method: IntervalMethod,
}

/// Quantile `p` of Student's t with `df` degrees of freedom; `None` for `df < 1`.
pub(crate) fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if df < 1.0 || !valid_level(p) {
        return None;
    }
    StudentsT::new(0.0, 1.0, df)
        .ok()
        .map(|t| t.inverse_cdf(p))
        .filter(|q| q.is_finite())
}

/// The two-sided `level` interval of the mean of the paired differences `d` (candidate −
/// baseline, each in `[−1, 1]`: the metrics are proportions in `[0, 1]`) with questions in
/// `clusters`. `K` = clusters, `a` = the largest `|d_i|`.
///
/// One *analysis* at a design effect `deff` and critical values (score, t):
/// - **Two-point differences** (every `d_i` is `−a`, `0` or `a`; all zero counts as `a = 1`,
///   the widest a proportion's difference can be): Tango's score interval
///   ([`tango_interval`]) on `b` = #{d < 0}, `c` = #{d > 0}, scaled by `a`, with the
///   counts `b/deff`, `c/deff`, `n/deff` (the Rao–Scott effective counts: J. N. K. Rao &
///   A. J. Scott 1992, "A simple method for the analysis of clustered binary data", Biometrics
///   48:577–585, §2).
/// - **Other differences** (continuous metrics): the union of (a) the t interval
///   `d̄ ± t·sqrt(deff·s²/n)` and (b) the score interval of the two-point model with the same
///   first two moments (scale `a* = min(a, m₂/|d̄|)`, counts `n·(m₂/a*² ∓ d̄/a*)/2`, `m₂` the
///   mean square), its counts divided by `deff`. (b) keeps a sample with few differing
///   questions from the Wald interval's narrowness; (a) covers what the two-point model cannot
///   (a consistent shift beyond its scale).
///
/// Independent questions: one analysis at `deff = 1`, critical values `z` (two-point: exactly
/// Tango 1998) or `t_{n−1}` (continuous: the model's counts and the variance are estimated).
/// Clustered questions: the union of that analysis, which ignores the clusters, and the
/// cluster analysis at the estimated [`design_effect`] with `t_{K−1}` (the small-sample
/// reference of cluster-robust inference: A. C. Cameron & D. L. Miller 2015, "A
/// practitioner's guide to cluster-robust inference", J. Human Resources 50:317–372, §VI.C) —
/// so clustering is never taken to add information, and a design effect below 1 estimated
/// from a few clusters is not taken at face value. Never degenerate: no differing question
/// among 40 independent ones gives ±8.8 points, among 40 in 10 documents ±11.3; one differing
/// question leaves room for values of both signs.
///
/// The result is clipped to `[−1, 1]` and always contains `d̄`. `None` when there are fewer
/// than two questions or two clusters, `clusters` does not match `d`, or `level` is not in
/// (0, 1).
pub fn paired_interval(d: &[f64], clusters: &Clusters, level: f64) -> Option<PairedInterval> {
    let n = d.len();
    let k = clusters.count();
    if n < 2 || k < 2 || clusters.len() != n || !valid_level(level) {
        return None;
    }
    let nf = n as f64;
    let mean = d.iter().sum::<f64>() / nf;
    let amax = d.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let clustered = clusters.clustered();
    let tail = 1.0 - (1.0 - level) / 2.0;
    let two_point = amax == 0.0
        || d.iter()
            .all(|&x| x == 0.0 || (x.abs() - amax).abs() <= 1e-12 * amax);
    let (a, b, c) = if amax == 0.0 {
        (1.0, 0.0, 0.0)
    } else if two_point {
        let count = |f: fn(f64) -> bool| d.iter().filter(|&&x| f(x)).count() as f64;
        (amax, count(|x| x < 0.0), count(|x| x > 0.0))
    } else {
        let m2 = d.iter().map(|x| x * x).sum::<f64>() / nf;
        let a = if mean == 0.0 {
            amax
        } else {
            amax.min(m2 / mean.abs())
        };
        let (s, r) = (m2 / (a * a), mean / a);
        (
            a,
            (nf * (s - r) / 2.0).max(0.0),
            (nf * (s + r) / 2.0).max(0.0),
        )
    };
    let var_iid = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf * (nf - 1.0));
    let analysis = |deff: f64, crit_score: f64, crit_t: f64| -> Interval {
        let score = score_interval(b / deff, c / deff, nf / deff, crit_score);
        let score = Interval {
            lower: a * score.lower,
            upper: a * score.upper,
        };
        if two_point {
            return score;
        }
        let half = crit_t * (deff * var_iid).sqrt();
        Interval {
            lower: score.lower.min(mean - half),
            upper: score.upper.max(mean + half),
        }
    };
    let t_iid = t_quantile(tail, nf - 1.0)?;
    let mut interval = analysis(1.0, if two_point { z_quantile(tail) } else { t_iid }, t_iid);
    let method = match (two_point, clustered) {
        (true, false) => IntervalMethod::Tango,
        (true, true) => IntervalMethod::TangoClustered,
        (false, _) => IntervalMethod::ScoreOrT,
    };
    if clustered {
        let deff = design_effect(d, clusters).unwrap_or(1.0);
        if deff > 1e-6 {
            let t_k = t_quantile(tail, (k - 1) as f64)?;
            let cl = analysis(deff, t_k, t_k);
            interval = Interval {
                lower: interval.lower.min(cl.lower),
                upper: interval.upper.max(cl.upper),
            };
        }
    }
    Some(PairedInterval {
        interval: Interval {
            lower: round12(interval.lower.max(-1.0).min(mean)),
            upper: round12(interval.upper.min(1.0).max(mean)),
        },
        method,
    })
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
        // paired_interval on the same table with independent questions is the same interval.
        let mut d = vec![0.0; 139];
        d.extend(std::iter::repeat_n(-1.0, 16));
        d.extend(std::iter::repeat_n(1.0, 6));
        let p = paired_interval(&d, &Clusters::singletons(161), 0.95).unwrap();
        assert_eq!(p.method, IntervalMethod::Tango);
        assert_eq!(p.interval, iv);
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

    /// Issue 55 case 4: 40 questions in 10 documents where nothing differs. The cluster
    /// bootstrap gave exactly [0, 0] ("equivalent within ±0.1 points"); the interval must
    /// reflect 40 questions of information, and one discordant question must leave room for
    /// values of both signs.
    #[test]
    fn clustered_agreement_is_not_certainty() {
        let docs = Clusters::from_keys((0..40).map(|i| i / 4));
        let none = paired_interval(&[0.0; 40], &docs, 0.95).unwrap();
        assert_eq!(none.method, IntervalMethod::TangoClustered);
        // At least as wide as the independent-questions interval (±8.8 points).
        let single = paired_interval(&[0.0; 40], &Clusters::singletons(40), 0.95).unwrap();
        close(single.interval.upper, 0.0876, 5e-4);
        assert!(none.interval.upper >= single.interval.upper - 1e-12);
        assert!(none.interval.lower <= -0.0876);
        let mut one = vec![0.0; 40];
        one[7] = -1.0;
        let iv = paired_interval(&one, &docs, 0.95).unwrap().interval;
        assert!(iv.lower < -0.025 && iv.upper > 0.02, "{iv:?}");
        // A continuous metric where nothing differs gets the same interval (differences of a
        // proportion are at most 1 in size).
        let cont = paired_interval(&[0.0; 40], &docs, 0.95).unwrap();
        assert_eq!(cont.interval, none.interval);
        // One continuous difference of 0.5: the score part keeps it from collapsing to the
        // t interval's ±1 point.
        let mut half = vec![0.0; 40];
        half[3] = 0.5;
        half[9] = 0.25;
        let iv = paired_interval(&half, &Clusters::singletons(40), 0.95).unwrap();
        assert_eq!(iv.method, IntervalMethod::ScoreOrT);
        assert!(
            iv.interval.lower < -0.015 && iv.interval.upper > 0.06,
            "{iv:?}"
        );
    }

    #[test]
    fn continuous_intervals_cover_a_consistent_shift() {
        // Every question 0.1 ± 0.01 better: the two-point model's scale is 0.1, so the t part
        // carries the upper end.
        let d: Vec<f64> = (0..40)
            .map(|i| 0.1 + 0.01 * ((i % 5) as f64 - 2.0))
            .collect();
        let iv = paired_interval(&d, &Clusters::singletons(40), 0.95).unwrap();
        assert!(iv.interval.lower < 0.1 && iv.interval.upper > 0.1, "{iv:?}");
        // The t interval's upper end: 0.1 + t_39·0.0141/√40 = 0.1045.
        assert!((iv.interval.upper - 0.1045).abs() < 2e-4, "{iv:?}");
        assert!(iv.interval.width() < 0.03, "{iv:?}");
    }

    #[test]
    fn clustering_never_narrows_the_interval() {
        // Differences that cancel within documents: deff < 1, the analysis ignoring the
        // clusters holds.
        let d: Vec<f64> = (0..40)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 } * f64::from(i % 4 < 2))
            .collect();
        let docs = Clusters::from_keys((0..40).map(|i| i / 4));
        let a = paired_interval(&d, &docs, 0.95).unwrap().interval;
        let b = paired_interval(&d, &Clusters::singletons(40), 0.95)
            .unwrap()
            .interval;
        assert!(a.width() >= b.width(), "{a:?} {b:?}");
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
        assert_eq!(cl.shared(), 4);
        assert_eq!(Clusters::singletons(5).shared(), 0);
    }
}
