//! Questions needed to settle an inconclusive comparison: for the margin, or for an effect the
//! user states — never for the difference observed (docs/reference.md §5 "Questions needed").

use crate::{valid_level, z_quantile};
use serde::{Deserialize, Serialize};

/// Largest number of questions reported; beyond it a claim is "not in sight".
pub const QUESTIONS_NEEDED_CAP: u64 = 1_000_000;

/// The claim a "questions needed" figure is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Claim {
    /// Non-inferiority at the margin, if the true difference is 0.
    NonInferiority,
    /// Equivalence within ± the margin, if the true difference is 0.
    Equivalence,
    /// Detecting a true difference of the stated effect (either sign).
    Effect,
}

impl Claim {
    /// The words reports print before the target (`non-inferiority at`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Claim::NonInferiority => "non-inferiority",
            Claim::Equivalence => "equivalence",
            Claim::Effect => "an effect of",
        }
    }
}

/// How many questions a claim needs ([`questions_needed`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuestionsNeeded {
    /// The claim.
    pub claim: Claim,
    /// The margin or the effect, in the metric's scale (0–1).
    pub target: f64,
    /// Questions needed; `None` when more than [`QUESTIONS_NEEDED_CAP`]: no effect of this
    /// size is in sight.
    pub n: Option<u64>,
}

impl QuestionsNeeded {
    /// `non-inferiority at −5.0 points: 412 questions`, or `…: more than 1,000,000 questions
    /// (no effect of this size is in sight)`.
    pub fn describe(&self) -> String {
        let pts = 100.0 * self.target;
        let what = match self.claim {
            Claim::NonInferiority => format!("non-inferiority at −{pts:.1} points"),
            Claim::Equivalence => format!("equivalence within ±{pts:.1} points"),
            Claim::Effect => format!("an effect of ±{pts:.1} points"),
        };
        match self.n {
            Some(n) => format!("{what} needs ≈ {n} questions"),
            None => format!(
                "{what} needs more than {QUESTIONS_NEEDED_CAP} questions: no effect of this size \
                 is in sight"
            ),
        }
    }
}

/// The questions a one-sided test at level `alpha_one_sided` needs to show `claim` about
/// `target` (a margin δ, or an effect E; metric scale) with power `power`, when a question's
/// paired difference has second moment `m2` (mean of d², the variance if the true difference
/// is 0), variance `var` (about its mean), and clustering inflates the variance by `deff`
/// (≥ 1). The normal-approximation sample size for a paired mean difference (S. A. Julious
/// 2004, "Sample sizes for clinical trials with Normal data", Statistics in Medicine
/// 23:1921–1986, §3 and §7; S.-C. Chow, J. Shao & H. Wang 2008, *Sample Size Calculations in
/// Clinical Research*, §3.1–3.2), with the true difference taken to be 0 for the margin claims
/// (the planning convention of non-inferiority and equivalence trials), never the observed
/// one:
///
/// ```text
/// non-inferiority: n = deff · (z_{1−α} + z_{power})²       · m2 / δ²
/// equivalence:     n = deff · (z_{1−α} + z_{(1+power)/2})² · m2 / δ²
/// effect:          n = deff · (z_{1−α} + z_{power})²       · σ² / E²,  σ² = var, or E·(1 − E)
///                                                                      when nothing varies
/// ```
///
/// The margin claims are at least `z²_{1−α}·(1 − δ)/δ`: the questions at which a comparison
/// where no question differs shows them (Tango's interval at zero discordance,
/// `z²/(n + z²) < δ`). Rounded up. `None` when `target` is not in (0, 1) or a level or input is
/// invalid; `n: None` above [`QUESTIONS_NEEDED_CAP`].
pub fn questions_needed(
    claim: Claim,
    target: f64,
    m2: f64,
    var: f64,
    deff: f64,
    alpha_one_sided: f64,
    power: f64,
) -> Option<QuestionsNeeded> {
    let valid = target > 0.0
        && target < 1.0
        && m2.is_finite()
        && m2 >= 0.0
        && var.is_finite()
        && var >= 0.0
        && deff.is_finite()
        && deff > 0.0
        && valid_level(alpha_one_sided)
        && valid_level(power);
    if !valid {
        return None;
    }
    let z_a = z_quantile(1.0 - alpha_one_sided);
    let z_b = match claim {
        Claim::Equivalence => z_quantile((1.0 + power) / 2.0),
        _ => z_quantile(power),
    };
    let n = match claim {
        Claim::NonInferiority | Claim::Equivalence => {
            let floor = z_a * z_a * (1.0 - target) / target;
            (deff * normal_n(z_a, z_b, m2, target)).max(floor)
        }
        Claim::Effect => {
            let sigma2 = if var > 0.0 {
                var
            } else {
                target * (1.0 - target)
            };
            deff * normal_n(z_a, z_b, sigma2, target)
        }
    };
    let n = n.ceil().max(2.0);
    Some(QuestionsNeeded {
        claim,
        target,
        n: (n.is_finite() && n <= QUESTIONS_NEEDED_CAP as f64).then_some(n as u64),
    })
}

/// `((z_a + z_b)·σ/gap)²`, `gap` = the true difference minus the null value (Chow, Shao &
/// Wang 2008 §3.1, one-sample mean).
fn normal_n(z_a: f64, z_b: f64, sigma2: f64, gap: f64) -> f64 {
    ((z_a + z_b) / gap).powi(2) * sigma2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_approximation_as_published() {
        // Chow, Shao & Wang (2008) §3.1.2, p. 52, one-sample non-inferiority: σ = 1, true
        // difference 0.5, margin −0.5, α = 0.05 (one-sided), power 80 %:
        // n = ((1.6449 + 0.8416)·1/(0.5 + 0.5))² = 6.18 → 7.
        let n = normal_n(z_quantile(0.95), z_quantile(0.8), 1.0, 0.5 + 0.5);
        assert!((n - 6.1826).abs() < 1e-3, "{n}");
        assert_eq!(n.ceil(), 7.0);
        // The claims at true Δ = 0 on the 0–1 scale: σ² = 0.04, δ = 0.1, α = 0.025, 90 %:
        // (1.95996 + 1.28155)²·4 = 42.03 → 43; a design effect of 2 doubles it before
        // rounding (84.06 → 85); equivalence uses z_{(1+power)/2}: (1.95996 + 1.64485)²·4 =
        // 51.97 → 52.
        let ni = |deff| questions_needed(Claim::NonInferiority, 0.1, 0.04, 0.04, deff, 0.025, 0.9);
        assert_eq!(ni(1.0).unwrap().n, Some(43));
        assert_eq!(ni(2.0).unwrap().n, Some(85));
        let e = questions_needed(Claim::Equivalence, 0.1, 0.04, 0.04, 1.0, 0.025, 0.9).unwrap();
        assert_eq!(e.n, Some(52));
    }

    #[test]
    fn nothing_differing_still_needs_the_zero_discordance_questions() {
        // z = 1.96, δ = 0.05: 1.96²·0.95/0.05 = 72.99 → 73.
        let n = questions_needed(Claim::NonInferiority, 0.05, 0.0, 0.0, 1.0, 0.025, 0.8).unwrap();
        assert_eq!(n.n, Some(73));
    }

    #[test]
    fn beyond_the_cap_nothing_is_in_sight() {
        let n = questions_needed(Claim::Effect, 0.0001, 0.2, 0.2, 1.0, 0.025, 0.8).unwrap();
        assert_eq!(n.n, None);
        assert!(n.describe().contains("no effect of this size is in sight"));
        assert!(questions_needed(Claim::Effect, 0.0, 0.2, 0.2, 1.0, 0.025, 0.8).is_none());
    }
}
