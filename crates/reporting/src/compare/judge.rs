//! The gate's rule for one pair (module documentation of [`super`], "The rule").

use super::pairs::cell_diff;
use super::*;

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
    /// The baseline has a value of the gate's primary metric and the candidate has none (its
    /// reader was dropped, its evidence lost): the pair cannot be judged by the gate's rule.
    #[serde(default)]
    pub primary_missing: bool,
}

impl Judgement {
    /// True when any criterion fired.
    pub fn is_regression(&self) -> bool {
        self.accuracy || self.words || self.requirement || self.primary_missing
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
pub fn judge(f: &GateFigures, tol: &Tolerances, alpha: f64) -> Judgement {
    let drop_q = f.baseline_correct.saturating_sub(f.candidate_correct);
    let accuracy = exceeds(
        100 * u128::from(drop_q),
        tol.max_accuracy_drop_pts,
        0,
        u128::from(f.n),
    ) && f.holm_p < alpha;
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
        primary_missing: false,
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

/// A pair's primary comparison and what the rule and its messages need.
#[derive(Debug, Clone)]
pub(super) struct PrimaryFigures<'a> {
    /// The comparison (confirmatory or exploratory).
    pub(super) comparison: stats::PlannedComparison,
    /// The baseline's mean of the metric over the paired questions (0–1).
    pub(super) base_mean: f64,
    /// The candidate's.
    pub(super) cand_mean: f64,
    /// The aligned values (for "questions needed" when `--require` fails).
    pub(super) values: crate::verdicts::PairValues<'a>,
    /// The resampling unit.
    pub(super) unit: crate::verdicts::Resample,
    /// The family's size m.
    pub(super) family: usize,
}

/// Words retrieved by both sides of a pair, summed, and the change with its interval.
struct WordsFigures {
    base_sum: f64,
    cand_sum: f64,
    change_pct: Option<f64>,
    change_ci: Option<stats::Interval>,
}

fn words_figures(p: &Paired<'_>, resamples: usize) -> Result<WordsFigures> {
    let seed = p.cand.record.cell.seed;
    let base_words: Vec<f64> = p.base.rows.iter().map(|r| r.words as f64).collect();
    let cand_words: Vec<f64> = p.cand_rows.iter().map(|r| r.words as f64).collect();
    let (base_sum, cand_sum): (f64, f64) = (base_words.iter().sum(), cand_words.iter().sum());
    let change_ci = if base_words.iter().all(|&w| w > 0.0) {
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
    Ok(WordsFigures {
        base_sum,
        cand_sum,
        change_pct: (base_sum > 0.0).then(|| 0.0 + 100.0 * (cand_sum / base_sum - 1.0)),
        change_ci,
    })
}

/// Whether a confirmatory pair's primary metric dropped by more than the tolerance with Holm
/// p below α (on integer counts for accuracy, [`judge`]).
fn quality_drop(
    prim: &PrimaryFigures<'_>,
    pc: Option<&stats::PairedComparison>,
    primary: crate::verdicts::Primary,
    tol: &Tolerances,
    alpha: f64,
) -> bool {
    let c = &prim.comparison;
    if c.exploratory {
        return false;
    }
    match pc {
        Some(pc) if primary == crate::verdicts::Primary::Accuracy => {
            let f = GateFigures {
                n: pc.n as u64,
                baseline_correct: pc.baseline_correct,
                candidate_correct: pc.candidate_correct,
                holm_p: c.holm_p,
                baseline_words: 0,
                candidate_words: 0,
            };
            judge(&f, tol, alpha).accuracy
        }
        _ => {
            100.0 * (prim.base_mean - prim.cand_mean) > tol.max_accuracy_drop_pts + 1e-9
                && c.holm_p < alpha
        }
    }
}

/// Why `--require` failed, with what would settle it: the questions non-inferiority or
/// equivalence at the margin needs (if the true difference is 0), or the smallest gain the
/// set can show as superior.
fn requirement_reason(prim: &PrimaryFigures<'_>, r: Requirement, rules: &GateRules) -> String {
    let c = &prim.comparison;
    let head = format!("verdict {} where --require asks {}", c.verdict, r.as_str());
    if c.verdict == stats::Verdict::Inferior {
        return head;
    }
    let clusters = prim.values.clusters(prim.unit);
    let input = stats::PairedInput {
        baseline: &prim.values.base,
        candidate: &prim.values.cand,
        clusters: &clusters,
    };
    let margin = rules.margin_pts / 100.0;
    let (claim, target) = match r {
        Requirement::NonInferior => (stats::Claim::NonInferiority, margin),
        Requirement::Equivalent => (stats::Claim::Equivalence, margin),
        Requirement::Superior if c.differing == 0 => {
            return format!(
                "{head}; no question differs between the two cells, so no number of questions \
                 makes one superior to the other"
            );
        }
        Requirement::Superior if rules.effect_pts > 0.0 => {
            (stats::Claim::Effect, rules.effect_pts / 100.0)
        }
        Requirement::Superior => {
            let deff = c.design_effect.unwrap_or(1.0).max(1.0);
            let z = stats::normal_quantile;
            let gain = (z(1.0 - rules.alpha / (2.0 * prim.family.max(1) as f64))
                + z(crate::verdicts::POWER))
                * c.sd
                * (deff / c.n.max(1) as f64).sqrt();
            return format!(
                "{head}; with {} questions the smallest gain this set shows as superior with \
                 power {} is ≈ {:.1} points (set `effect:` in the baseline's config for the \
                 questions a stated gain needs)",
                c.n,
                crate::verdicts::POWER,
                100.0 * gain
            );
        }
    };
    match stats::questions_needed_for(
        &input,
        claim,
        target,
        rules.alpha,
        crate::verdicts::POWER,
        prim.family,
    ) {
        Some(q) if q.n.is_some_and(|n| n <= c.n as u64) => format!(
            "{head}; this set of {} questions would show it if the true difference were 0 (≈ {} \
             needed): the observed difference, {} points, not the number of questions, keeps \
             it from passing",
            c.n,
            q.n.unwrap_or(0),
            crate::verdicts::signed_points(c.estimate)
        ),
        Some(q) => format!(
            "{head}; {} if the true difference is 0; this set has {}",
            q.describe(),
            c.n
        ),
        None => head,
    }
}

/// The figures, the rule's judgement and the reasons for one pair.
pub(super) fn judge_pair(
    p: &Paired<'_>,
    prim: Option<PrimaryFigures<'_>>,
    primary: crate::verdicts::Primary,
    tol: &Tolerances,
    rules: &GateRules,
    resamples: usize,
) -> Result<CellComparison> {
    let n = p.base.rows.len();
    let correct = |rs: &mut dyn Iterator<Item = &QuestionRow>| -> Option<Vec<bool>> {
        rs.map(|r| r.correct.map(|c| c == 1)).collect()
    };
    let base_correct = correct(&mut p.base.rows.iter());
    let cand_correct = correct(&mut p.cand_rows.iter().copied());
    // The interval of the accuracy difference: the verdict's method and unit, at 1 − α.
    let unit = prim
        .as_ref()
        .map_or(crate::verdicts::Resample::Question, |f| f.unit);
    let clusters = stats::Clusters::from_keys(p.base.rows.iter().map(|r| unit.key(r)));
    let pc = match (&base_correct, &cand_correct) {
        (Some(b), Some(c)) => Some(
            stats::PairedComparison::new(b, c, &clusters, 1.0 - rules.alpha)
                .with_context(|| format!("cell {}", p.cand.record.id))?,
        ),
        _ => None,
    };
    let w = words_figures(p, resamples)?;
    let quality = prim
        .as_ref()
        .is_some_and(|f| quality_drop(f, pc.as_ref(), primary, tol, rules.alpha));
    let primary_missing = prim.is_none() && p.base.rows.iter().any(|r| primary.value(r).is_some());
    let words = judge(
        &GateFigures {
            n: n as u64,
            baseline_correct: 0,
            candidate_correct: 0,
            holm_p: 1.0,
            baseline_words: w.base_sum as u64,
            candidate_words: w.cand_sum as u64,
        },
        tol,
        rules.alpha,
    )
    .words;
    let confirmatory = prim.as_ref().is_none_or(|f| !f.comparison.exploratory);
    let requirement = match (tol.require, &prim) {
        (Some(_), Some(f)) if f.comparison.exploratory => false,
        (Some(r), Some(f)) => !r.accepts(f.comparison.verdict),
        (Some(_), None) => true,
        (None, _) => false,
    };
    let judgement = Judgement {
        accuracy: quality,
        words,
        requirement,
        primary_missing,
    };
    let reasons = reasons_for(&judgement, prim.as_ref(), primary, tol, rules, &w);
    let notes = notes_for(quality, prim.as_ref(), tol, rules);
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
            prim.as_ref().map(|x| x.base_mean).or_else(|| {
                // The baseline's own mean where the candidate has no value to pair it with.
                let xs: Vec<f64> = p
                    .base
                    .rows
                    .iter()
                    .filter_map(|r| primary.value(r))
                    .collect();
                stats::mean(&xs)
            }),
            w.base_sum,
        ),
        candidate: side(
            pc.as_ref().map(|x| x.candidate_correct),
            pc.as_ref().map(|x| x.candidate_wilson),
            prim.as_ref().map(|x| x.cand_mean),
            w.cand_sum,
        ),
        delta_points: pc.as_ref().map(|x| 0.0 + x.delta_points),
        mcnemar: pc.as_ref().map(|x| x.mcnemar),
        holm_p: prim.as_ref().map(|x| x.comparison.holm_p),
        primary: prim.map(|x| x.comparison),
        confirmatory,
        words_change_pct: w.change_pct,
        words_change_ci: w.change_ci,
        judgement,
        verdict: if judgement.is_regression() {
            Verdict::Regression
        } else {
            Verdict::Ok
        },
        reasons,
        notes,
    })
}

/// Why a pair regressed, one sentence per criterion that fired.
fn reasons_for(
    judgement: &Judgement,
    prim: Option<&PrimaryFigures<'_>>,
    primary: crate::verdicts::Primary,
    tol: &Tolerances,
    rules: &GateRules,
    w: &WordsFigures,
) -> Vec<String> {
    let mut reasons = Vec::new();
    if let (true, Some(f)) = (judgement.accuracy, prim) {
        reasons.push(format!(
            "{} {:+.1} points (a drop of more than {}) with Holm p {} (below {})",
            primary.label(),
            100.0 * f.comparison.estimate,
            crate::fmt::tolerance(tol.max_accuracy_drop_pts),
            crate::fmt::p_value(f.comparison.holm_p),
            rules.alpha
        ));
    }
    if judgement.primary_missing {
        reasons.push(format!(
            "the candidate has no {} here where the baseline has one (the gate's primary metric, \
             {}): the gate cannot show it did not regress",
            primary.label(),
            rules.primary_from
        ));
    }
    if judgement.words {
        reasons.push(match w.change_pct {
            Some(x) => format!(
                "mean words retrieved {x:+.1} % (more than +{} %)",
                crate::fmt::tolerance(tol.max_words_increase_pct)
            ),
            None => "words retrieved where the baseline retrieved none".to_string(),
        });
    }
    if judgement.requirement && !judgement.primary_missing {
        reasons.push(match (prim, tol.require) {
            (Some(f), Some(r)) => requirement_reason(f, r, rules),
            _ => format!("no {} to judge --require by", primary.label()),
        });
    }
    reasons
}

/// What a reader of an `ok` row should know: an "inferior" verdict within the tolerance.
fn notes_for(
    quality: bool,
    prim: Option<&PrimaryFigures<'_>>,
    tol: &Tolerances,
    rules: &GateRules,
) -> Vec<String> {
    match prim.filter(|f| !quality && !f.comparison.exploratory) {
        Some(f) if f.comparison.verdict == stats::Verdict::Inferior => vec![format!(
            "inferior (Holm p {} below α = {}) but the drop, {} points, is within the {}-point \
             tolerance",
            crate::fmt::p_value(f.comparison.holm_p),
            rules.alpha,
            crate::verdicts::signed_points(f.comparison.estimate),
            crate::fmt::tolerance(tol.max_accuracy_drop_pts)
        )],
        _ => Vec::new(),
    }
}
