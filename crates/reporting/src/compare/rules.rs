//! The gate's rules: from the baseline run's config and the gate's flags, never from the
//! candidate's (module documentation of [`super`], "The rules are the reviewer's").

use super::Tolerances;
use crate::verdicts::{PlannedCells, Primary, Resample, VerdictSettings};
use serde::{Deserialize, Serialize};

/// The rules a gate judges by, each with where it came from (`--alpha`, `baseline config`,
/// `baseline config (default)`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRules {
    /// The primary metric's name (`accuracy`, `recall`, …).
    pub primary: String,
    /// Where it came from.
    pub primary_from: String,
    /// Margin in points.
    pub margin_pts: f64,
    /// Where it came from.
    pub margin_from: String,
    /// Family-wise α.
    pub alpha: f64,
    /// Where it came from.
    pub alpha_from: String,
    /// The resampling unit declared (`None` = the default: by document when documents hold
    /// several compared questions).
    pub resample: Option<Resample>,
    /// Where it came from.
    pub resample_from: String,
    /// The stated effect in points (0 = none).
    pub effect_pts: f64,
    /// Where it came from.
    pub effect_from: String,
    /// The confirmatory cells (`None` = every pair).
    pub planned: Option<PlannedCells>,
    /// Where it came from.
    pub planned_from: String,
}

impl GateRules {
    /// The rules as the verdict code takes them.
    pub fn settings(&self) -> VerdictSettings {
        VerdictSettings {
            primary: Some(self.primary.clone()),
            margin_points: self.margin_pts,
            resample: self.resample,
            alpha: self.alpha,
            effect_points: self.effect_pts,
            planned: self.planned.clone(),
        }
    }
}

const BASELINE: &str = "baseline config";

/// The effective rules: each flag given, else the baseline's config; `primary` is the
/// baseline's resolved primary metric (`base_primary`, with `defaulted` when the config left
/// it to the default over the baseline's cells).
pub fn gate_rules(
    tol: &Tolerances,
    base: &VerdictSettings,
    base_primary: Primary,
    defaulted: bool,
) -> GateRules {
    let from = |flag: bool, name: &str, set: bool| -> String {
        if flag {
            format!("--{name}")
        } else if set {
            format!("{BASELINE} `{name}:`")
        } else {
            format!("{BASELINE}, default")
        }
    };
    GateRules {
        primary: tol
            .primary
            .clone()
            .unwrap_or_else(|| base_primary.name().to_string()),
        primary_from: if tol.primary.is_some() {
            "--primary".into()
        } else if defaulted {
            format!(
                "{BASELINE}, default over its cells: {}",
                match base_primary {
                    Primary::Accuracy => "they were read",
                    _ => "they were not read",
                }
            )
        } else {
            format!("{BASELINE} `primary:`")
        },
        margin_pts: tol.margin_pts.unwrap_or(base.margin_points),
        margin_from: from(tol.margin_pts.is_some(), "margin", base.margin_points > 0.0),
        alpha: tol.alpha.unwrap_or(base.alpha),
        alpha_from: from(
            tol.alpha.is_some(),
            "alpha",
            base.alpha != crate::verdicts::ALPHA,
        ),
        resample: tol.resample.or(base.resample),
        resample_from: from(tol.resample.is_some(), "resample", base.resample.is_some()),
        effect_pts: base.effect_points,
        effect_from: from(false, "effect", base.effect_points > 0.0),
        planned: base.planned.clone(),
        planned_from: from(false, "planned", base.planned.is_some()),
    }
}

/// One rule on which the candidate's config differs from the gate's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleDifference {
    /// `primary`, `margin`, `alpha`, `resample`, `effect` or `planned`.
    pub rule: String,
    /// The gate's value, as printed.
    pub gate: String,
    /// The candidate's value, as printed.
    pub candidate: String,
    /// Where the gate's value came from.
    pub from: String,
    /// True when a flag set the gate's value (the reviewer overrode both configs; shown, never
    /// refused).
    pub by_flag: bool,
}

impl RuleDifference {
    /// `primary: accuracy (baseline config, default …) → answer_recall (candidate config)`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {} ({}) → {} (candidate config)",
            self.rule, self.gate, self.from, self.candidate
        )
    }
}

fn unit(r: Option<Resample>) -> String {
    r.map_or("(default)".into(), |r| r.as_str().to_string())
}

fn planned(p: &Option<PlannedCells>) -> String {
    p.as_ref()
        .map_or("every comparison".into(), PlannedCells::describe)
}

/// Where the candidate's config declares other verdict rules than the baseline's config — the
/// declarations compared as written (`primary:` absent is the default, not the metric it
/// resolves to: a candidate that drops its reader declares nothing; it then lacks the gate's
/// primary metric and fails its pairs). Each difference carries the gate's value and where it
/// came from; one the gate took from a flag is shown but not refused (the reviewer overrode
/// both configs).
pub fn differences(
    rules: &GateRules,
    base: &VerdictSettings,
    cand: &VerdictSettings,
) -> Vec<RuleDifference> {
    let mut out = Vec::new();
    let mut push = |rule: &str, declared: (String, String), gate: String, from: &str| {
        if declared.0 != declared.1 {
            out.push(RuleDifference {
                rule: rule.into(),
                gate,
                candidate: declared.1,
                from: from.to_string(),
                by_flag: from.starts_with("--"),
            });
        }
    };
    let primary = |p: &Option<String>| p.clone().unwrap_or_else(|| "(default)".into());
    push(
        "primary",
        (primary(&base.primary), primary(&cand.primary)),
        rules.primary.clone(),
        &rules.primary_from,
    );
    let pts = |x: f64| format!("{} points", crate::fmt::tolerance(x));
    push(
        "margin",
        (pts(base.margin_points), pts(cand.margin_points)),
        pts(rules.margin_pts),
        &rules.margin_from,
    );
    push(
        "alpha",
        (base.alpha.to_string(), cand.alpha.to_string()),
        rules.alpha.to_string(),
        &rules.alpha_from,
    );
    push(
        "resample",
        (unit(base.resample), unit(cand.resample)),
        unit(rules.resample),
        &rules.resample_from,
    );
    push(
        "effect",
        (pts(base.effect_points), pts(cand.effect_points)),
        pts(rules.effect_pts),
        &rules.effect_from,
    );
    push(
        "planned",
        (planned(&base.planned), planned(&cand.planned)),
        planned(&rules.planned),
        &rules.planned_from,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 55 case 1: a candidate that names another primary metric, drops its reader or
    /// widens the margin does not change the gate's rules; each difference is named.
    #[test]
    fn the_candidate_cannot_change_the_gates_rules() {
        let base = VerdictSettings::default();
        let rules = gate_rules(&Tolerances::default(), &base, Primary::Accuracy, true);
        assert_eq!(rules.primary, "accuracy");
        assert!(rules.primary_from.contains("they were read"));
        assert_eq!(rules.margin_pts, 0.0);
        let cand = VerdictSettings {
            primary: Some("answer_recall".into()),
            margin_points: 5.0,
            ..VerdictSettings::default()
        };
        let d = differences(&rules, &base, &cand);
        let names: Vec<&str> = d.iter().map(|d| d.rule.as_str()).collect();
        assert_eq!(names, ["primary", "margin"]);
        assert!(d.iter().all(|d| !d.by_flag));
        assert!(d[0].describe().contains("accuracy"));
        // A flag is the reviewer's: the gate takes it, and a difference from it is shown
        // without being refused.
        let tol = Tolerances {
            margin_pts: Some(2.0),
            alpha: Some(0.01),
            ..Tolerances::default()
        };
        let rules = gate_rules(&tol, &base, Primary::Accuracy, true);
        assert_eq!((rules.margin_pts, rules.alpha), (2.0, 0.01));
        assert_eq!(rules.alpha_from, "--alpha");
        let d = differences(&rules, &base, &cand);
        assert!(d.iter().any(|d| d.rule == "margin" && d.by_flag));
        // The candidate's alpha is the default, as the baseline's: no difference, whatever the
        // flag says.
        assert!(!d.iter().any(|d| d.rule == "alpha"));
        // A candidate that declares nothing differs in nothing.
        assert!(differences(&rules, &base, &VerdictSettings::default()).is_empty());
    }
}
