//! The sign-flip test by cluster, exact or Monte Carlo, and the Monte Carlo draws that go on
//! until a Holm decision is settled (docs/reference.md §5 "The verdict", "Tests").

use super::Clusters;
use crate::{check_finite, check_same_len, StatsError};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

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

/// A sign-flip test's cluster sums and, for Monte Carlo, its random stream and hits so far:
/// drawing more patterns continues the same stream, so `B` patterns drawn at once or in steps
/// give the same p.
pub(crate) struct SignFlip {
    sums: Vec<f64>,
    observed: f64,
    scale: f64,
    rng: ChaCha8Rng,
    hits: usize,
    drawn: usize,
    exact: Option<f64>,
}

impl SignFlip {
    /// The test of `d` by `clusters`; exact when at most [`crate::SIGN_FLIP_EXACT_MAX`] cluster
    /// sums are non-zero (all `2^m` patterns), else nothing drawn yet.
    pub(crate) fn new(d: &[f64], clusters: &Clusters, seed: u64) -> Self {
        let sums: Vec<f64> = clusters
            .sums(d)
            .into_iter()
            .map(|(s, _)| s)
            .filter(|&s| s != 0.0)
            .collect();
        let observed = sums.iter().sum::<f64>().abs();
        let scale: f64 = sums.iter().map(|x| x.abs()).sum();
        let mut t = SignFlip {
            sums,
            observed,
            scale,
            rng: ChaCha8Rng::seed_from_u64(seed),
            hits: 0,
            drawn: 0,
            exact: None,
        };
        let m = t.sums.len();
        if m == 0 {
            t.exact = Some(1.0);
        } else if m <= crate::SIGN_FLIP_EXACT_MAX {
            let patterns = 1usize << m;
            let hits = (0..patterns)
                .filter(|&bits| {
                    t.at_least(
                        t.sums
                            .iter()
                            .enumerate()
                            .map(|(i, &x)| if bits >> i & 1 == 1 { -x } else { x })
                            .sum(),
                    )
                })
                .count();
            t.exact = Some(hits as f64 / patterns as f64);
        }
        t
    }

    fn at_least(&self, t: f64) -> bool {
        t.abs() >= self.observed - 1e-9 * self.scale
    }

    /// Draws `more` random sign patterns (nothing for an exact test).
    pub(crate) fn draw(&mut self, more: usize) {
        if self.exact.is_some() {
            return;
        }
        for _ in 0..more {
            // One random bit per cluster sum, 64 from each draw of the stream.
            let mut t = 0.0;
            let mut bits = 0u64;
            for (i, &x) in self.sums.iter().enumerate() {
                if i % 64 == 0 {
                    bits = self.rng.next_u64();
                }
                t += if bits & 1 == 1 { -x } else { x };
                bits >>= 1;
            }
            self.hits += usize::from(self.at_least(t));
        }
        self.drawn += more;
    }

    /// The p-value: exact, or `(1 + hits)/(1 + B)` (Phipson & Smyth 2010).
    pub(crate) fn p(&self) -> f64 {
        self.exact
            .unwrap_or((1 + self.hits) as f64 / (1 + self.drawn) as f64)
    }

    /// True for an enumerated (or trivial) test.
    pub(crate) fn exact(&self) -> bool {
        self.exact.is_some()
    }

    /// Patterns drawn (Monte Carlo) or enumerated.
    pub(crate) fn patterns(&self) -> usize {
        match self.exact {
            Some(_) if self.sums.is_empty() => 1,
            Some(_) => 1usize << self.sums.len(),
            None => self.drawn,
        }
    }

    /// Non-zero cluster sums.
    pub(crate) fn nonzero(&self) -> usize {
        self.sums.len()
    }

    /// Bounds on the permutation p-value: `(p, p)` when exact; else the 99.9 % Wilson
    /// interval of hits/B (Wilson 1927), the Monte Carlo estimate's uncertainty.
    pub(crate) fn bounds(&self) -> (f64, f64) {
        match (
            self.exact,
            crate::wilson(self.hits as u64, self.drawn as u64, 0.999),
        ) {
            (Some(p), _) => (p, p),
            (None, Some(iv)) => (iv.lower, iv.upper),
            (None, None) => (0.0, 1.0),
        }
    }

    /// The result as reported.
    pub(crate) fn result(&self) -> ClusterSignFlip {
        ClusterSignFlip {
            p: self.p(),
            nonzero: self.nonzero(),
            exact: self.exact(),
            resamples: self.patterns(),
        }
    }
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
    let mut t = SignFlip::new(d, clusters, seed);
    t.draw(resamples);
    Ok(t.result())
}

/// Most sign patterns a Monte Carlo test draws while its decision is unsettled: `10^7`, and
/// at most `4·10^8` cluster sums added in all (so one comparison stays under a second).
pub fn monte_carlo_limit(nonzero: usize) -> usize {
    (400_000_000 / nonzero.max(1)).clamp(100_000, 10_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_flip_by_singleton_clusters_is_mcnemars_exact_test() {
        for (b, c) in [(3usize, 9usize), (0, 5), (7, 7), (12, 2)] {
            let mut d = vec![0.0; 20];
            d.extend(std::iter::repeat_n(-1.0, b));
            d.extend(std::iter::repeat_n(1.0, c));
            let cl = Clusters::singletons(d.len());
            let t = cluster_sign_flip_test(&d, &cl, 1000, 1).unwrap();
            assert!(t.exact);
            assert!((t.p - crate::mcnemar(b as u64, c as u64).exact_p).abs() < 1e-12);
        }
    }

    #[test]
    fn drawing_in_steps_is_drawing_at_once() {
        let d: Vec<f64> = (0..60)
            .map(|i| ((i * 7) % 11) as f64 / 10.0 - 0.45)
            .collect();
        let cl = Clusters::singletons(60);
        let mut a = SignFlip::new(&d, &cl, 9);
        a.draw(3000);
        let mut b = SignFlip::new(&d, &cl, 9);
        b.draw(1000);
        b.draw(2000);
        assert_eq!(a.p(), b.p());
        assert_eq!(a.p(), cluster_sign_flip_test(&d, &cl, 3000, 9).unwrap().p);
    }

    #[test]
    fn monte_carlo_bounds_hold_the_estimate_and_shrink() {
        let d: Vec<f64> = (0..60)
            .map(|i| ((i * 7) % 11) as f64 / 10.0 - 0.45)
            .collect();
        let cl = Clusters::singletons(60);
        let mut t = SignFlip::new(&d, &cl, 3);
        t.draw(2000);
        let (lo, hi) = t.bounds();
        assert!(lo < t.p() && t.p() < hi);
        t.draw(30_000);
        let (lo2, hi2) = t.bounds();
        assert!(hi2 - lo2 < hi - lo);
        let exact = SignFlip::new(&[1.0, -2.0, 0.5], &Clusters::singletons(3), 0);
        assert_eq!(exact.bounds(), (exact.p(), exact.p()));
    }
}
