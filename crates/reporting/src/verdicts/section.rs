//! summary.md's verdict section: the family's settings in words, the confirmatory table, the
//! exploratory one, the sensitivity analysis and the notes (docs/reference.md §5 "The
//! verdict").

use super::{Family, Resample};
use crate::md::{Code, Text};
use std::fmt::Write as _;

/// A difference on the 0–1 scale in signed points with one decimal (`+1.2`, `-0.0` for a
/// negative difference that rounds to zero: a negative end never prints as `+0.0`).
pub fn signed_points(x: f64) -> String {
    // Rounded first, then `+ 0.0`, so that an exact zero never prints as `-0.0`.
    let r = (1000.0 * x).round() / 10.0 + 0.0;
    if r == 0.0 && x < 0.0 {
        "-0.0".into()
    } else {
        format!("{r:+.1}")
    }
}

/// `+1.2 [−0.3, +2.7]` in points (the interval at 1 − α), or `+1.2 [n too small]`.
pub fn delta_points(c: &stats::PlannedComparison) -> String {
    let pts = signed_points;
    match c.interval {
        Some(i) => format!("{} [{}, {}]", pts(c.estimate), pts(i.lower), pts(i.upper)),
        None => format!("{} [n too small]", pts(c.estimate)),
    }
}

/// `[−0.3, +2.7]` in points, or `–`.
fn interval_points(i: Option<stats::Interval>) -> String {
    i.map_or("–".to_string(), |i| {
        format!("[{}, {}]", signed_points(i.lower), signed_points(i.upper))
    })
}

/// The "questions needed" cell: `412 (non-inferiority)`, `> 1000000 (none in sight)`, `–`;
/// when the set already has that many, `enough if Δ = 0`: the observed difference, not the
/// number of questions, keeps the verdict open.
pub fn needed_cell(c: &stats::PlannedComparison) -> String {
    match c.questions_needed {
        Some(q) => match q.n {
            Some(n) if n <= c.n as u64 => format!("enough if Δ = 0 ({n})"),
            Some(n) => format!("{n} ({})", q.claim.as_str().trim_end_matches(" of")),
            None => format!("> {} (none in sight)", stats::QUESTIONS_NEEDED_CAP),
        },
        None => "–".into(),
    }
}

/// The sentence on the resampling unit: which, why, and how many documents hold several
/// compared questions (whatever the unit).
fn resample_sentence(family: &Family) -> String {
    let docs = family.shared_documents;
    match (family.resample, family.resample_default) {
        (Resample::Question | Resample::Subject, true) => {
            "by question (the default: no document holds more than one compared question)".into()
        }
        (Resample::Document, true) => format!(
            "by document (the default, since {docs} documents hold several compared questions; \
             set `resample: question` to override)"
        ),
        (Resample::Question, false) => format!(
            "by question (`resample: question`; {docs} documents hold several compared questions)"
        ),
        (r, false) if family.unit_missing => format!(
            "by {0} (`resample: {0}`) — ⚠ but no compared question has a {0}, so every \
             question is its own cluster: this is resampling by question in effect",
            r.as_str()
        ),
        (r, false) => format!(
            "by {} (`resample: {}`; {} {}s hold several compared questions)",
            r.as_str(),
            r.as_str(),
            family.shared_clusters,
            r.as_str()
        ),
    }
}

/// The sentence on the family: which comparisons are confirmatory and why.
fn family_sentence(family: &Family, holm: usize) -> String {
    let m = family.size();
    let all = family.planned.len();
    let left_out = if holm < m {
        format!(
            " (the {} whose questions all agree cannot reach significance and are left out, \
             Tarone 1990)",
            m - holm
        )
    } else {
        String::new()
    };
    let which = match &family.settings.planned {
        None => format!(
            "{m} planned comparison{} (each strategy against the baseline at the same dataset, \
             retriever, k{}; no `planned:` narrows it)",
            if m == 1 { "" } else { "s" },
            if family.primary.retrieval() {
                ""
            } else {
                " and reader"
            }
        ),
        Some(p) => format!(
            "{m} confirmatory comparison{} of {all}: those `planned:` names ({}); the other {} \
             are exploratory ({} % interval and unadjusted p, no verdict)",
            if m == 1 { "" } else { "s" },
            Text(&p.describe()),
            all - m,
            crate::fmt::level(family.settings.alpha)
        ),
    };
    format!("{which}, one Holm family of size {holm}{left_out}")
}

/// summary.md's verdict section (first after the title): the family's settings in words and
/// one row per planned comparison, then the exploratory ones, the sensitivity analysis and
/// the notes.
pub fn section(family: &Family, resamples: usize, seed: u64) -> String {
    let m = family.size();
    let holm = family
        .confirmatory()
        .next()
        .map_or(0, |p| p.planned.comparison.holm_family);
    let s = &family.settings;
    let alpha = s.alpha;
    let label = family.primary.label();
    let margin = if s.margin_points > 0.0 {
        format!(
            "margin {:.1} points (`margin:`): non-inferior = the simultaneous interval's lower end above −{0:.1}; equivalent = the interval inside ±{0:.1}",
            s.margin_points
        )
    } else {
        "no margin: only superior, inferior or inconclusive (equivalence and non-inferiority need a margin: set `margin:` in points, the largest drop you would accept)".to_string()
    };
    let needed = if s.margin_points > 0.0 {
        format!("for an inconclusive verdict, the questions at which non-inferiority at −{:.1} points would be shown with power {} if the true difference were 0 (the planning convention of non-inferiority trials; never the observed difference), with the observed spread and design effect (Chow, Shao & Wang 2008 §3.1, normal approximation)", s.margin_points, super::POWER)
    } else if s.effect_points > 0.0 {
        format!("for an inconclusive verdict, the questions to detect a difference of ±{:.1} points (`effect:`) with power {}, with the observed spread and design effect (Chow, Shao & Wang 2008 §3.1, normal approximation)", s.effect_points, super::POWER)
    } else {
        "not computed: a number of questions answers a question only for a margin (`margin:`) or a stated effect (`effect:`), never for the difference observed".to_string()
    };
    let mut md = format!(
        "\n## Verdict: {label} against the baseline\n\n\
         Primary metric {} (`primary:`), in points; {}; every other figure in this summary is exploratory (unadjusted). \
         Resampled {} — the analysis the config fixed before the results{}. \
         Δ: candidate − baseline with its {} % interval ({}); p: two-sided sign-flip test by resampling unit (McNemar's exact test for right/wrong values with independent questions), Monte Carlo from ⌈20·m/α⌉ patterns (at least B = {resamples}, seed {seed}) and drawn on until its side of every Holm threshold α/j is settled; Holm p over the family. \
         Verdict at α = {alpha} family-wise (`alpha:`), {margin}; non-inferiority and equivalence are read from intervals at 1 − α/m (Bonferroni), superior/inferior from Holm p. Questions needed: {needed}.\n\n\
         | dataset | strategy | retriever | k | reader | n | clusters | baseline | cell | Δ pts [{}% CI] | interval at 1 − α/m | p | Holm p | verdict | questions needed | design effect |\n\
         |---|---|---|---:|---|---:|---:|---:|---:|---|---|---:|---:|---|---:|---:|\n",
        Code(family.primary.name()),
        family_sentence(family, holm),
        resample_sentence(family),
        if family.sensitivity.is_some() {
            "; the other unit is a sensitivity analysis below"
        } else {
            ""
        },
        crate::fmt::level(alpha),
        methods(family),
        crate::fmt::level(alpha),
    );
    for pc in family.confirmatory() {
        let (p, key) = (&pc.planned, &pc.cell);
        let c = &p.comparison;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {}{} | {} | **{}** | {} | {} |",
            Text(&key.dataset),
            Text(&key.strategy),
            Text(&key.retriever),
            key.depth_label(),
            reader_cell(family, key),
            c.n,
            c.clusters,
            100.0 * p.baseline_mean,
            100.0 * p.mean,
            delta_points(c),
            interval_points(c.simultaneous),
            crate::fmt::p_value(c.p),
            if c.p_settled { "" } else { " ⚠" },
            crate::fmt::p_value(c.holm_p),
            c.verdict,
            needed_cell(c),
            c.design_effect.map_or("–".to_string(), |d| format!("{d:.2}")),
        );
    }
    md.push_str(&exploratory_table(family));
    md.push_str(&sensitivity_table(family));
    md.push_str(&unsettled_note(family));
    md.push_str(&cluster_floor_note(family, holm, m));
    md
}

/// The methods of the family's intervals, in words.
fn methods(family: &Family) -> String {
    let mut seen: Vec<stats::IntervalMethod> = Vec::new();
    for p in &family.planned {
        let m = p.planned.comparison.method;
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    seen.sort_by_key(|m| m.as_str());
    let names: Vec<&str> = seen.iter().map(|m| m.as_str()).collect();
    format!(
        "{}; docs/reference.md §5 \"Intervals\"",
        if names.is_empty() {
            "–".to_string()
        } else {
            names.join("; ")
        }
    )
}

fn reader_cell(family: &Family, key: &records::CellKey) -> String {
    if family.primary.retrieval() {
        "–".to_string()
    } else {
        Text(&key.reader).to_string()
    }
}

/// The exploratory comparisons (outside `planned:`): Δ with its interval and unadjusted p.
fn exploratory_table(family: &Family) -> String {
    let rows: Vec<_> = family
        .planned
        .iter()
        .filter(|p| p.planned.comparison.exploratory)
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut md = format!(
        "\n**Exploratory comparisons** ({} outside `planned:`): no verdict, p unadjusted.\n\n\
         | dataset | strategy | retriever | k | reader | n | baseline | cell | Δ pts [{}% CI] | p |\n\
         |---|---|---|---:|---|---:|---:|---:|---|---:|\n",
        rows.len(),
        crate::fmt::level(family.settings.alpha)
    );
    for pc in rows {
        let (p, key) = (&pc.planned, &pc.cell);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} | {} |",
            Text(&key.dataset),
            Text(&key.strategy),
            Text(&key.retriever),
            key.depth_label(),
            reader_cell(family, key),
            p.comparison.n,
            100.0 * p.baseline_mean,
            100.0 * p.mean,
            delta_points(&p.comparison),
            crate::fmt::p_value(p.comparison.p),
        );
    }
    md
}

/// The confirmatory family under the other resampling unit.
fn sensitivity_table(family: &Family) -> String {
    let Some(sens) = &family.sensitivity else {
        return String::new();
    };
    let mut md = format!(
        "\n**Sensitivity: resampled by {}** instead of by {} (the same comparisons, Holm family \
         and α; ⚠ where the verdict differs). The verdict above is the one the config fixed; \
         this row shows how much it rests on the choice of unit.\n\n\
         | dataset | strategy | retriever | k | reader | clusters | interval at 1 − α/m | Holm p | verdict |\n\
         |---|---|---|---:|---|---:|---|---:|---|\n",
        sens.resample.as_str(),
        family.resample.as_str()
    );
    for (pc, c) in family.confirmatory().zip(&sens.comparisons) {
        let key = &pc.cell;
        let changed = c.verdict != pc.planned.comparison.verdict;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {}{} |",
            Text(&key.dataset),
            Text(&key.strategy),
            Text(&key.retriever),
            key.depth_label(),
            reader_cell(family, key),
            c.clusters,
            interval_points(c.simultaneous),
            crate::fmt::p_value(c.holm_p),
            c.verdict,
            if changed { " ⚠" } else { "" }
        );
    }
    md
}

/// A note when some Monte Carlo p could not be settled against a Holm threshold.
fn unsettled_note(family: &Family) -> String {
    let unsettled: Vec<_> = family
        .confirmatory()
        .filter(|p| !p.planned.comparison.p_settled)
        .collect();
    if unsettled.is_empty() {
        return String::new();
    }
    format!(
        "\n⚠ **Not settled by Monte Carlo**: the p of {} comparison{} (marked ⚠) lies so close to \
         a Holm threshold that {} random sign patterns could not tell its side (99.9 % \
         interval): its verdict may change with `seed:`, so read it as on the boundary.\n",
        unsettled.len(),
        if unsettled.len() == 1 { "" } else { "s" },
        unsettled
            .iter()
            .map(|p| p.planned.comparison.resamples)
            .max()
            .unwrap_or(0)
    )
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
/// questions. Empty when no comparison is limited so.
fn cluster_floor_note(family: &Family, holm: usize, m: usize) -> String {
    let threshold = family.settings.alpha / holm.max(1) as f64;
    let limited = floor_limited(
        family
            .confirmatory()
            .map(|pc| pc.planned.comparison.clusters),
        threshold,
    );
    let Some(&most) = limited.iter().max() else {
        return String::new();
    };
    format!(
        "\n**Too few resampling units for a significant verdict.** {} of the {m} comparisons have \
         at most {most} clusters: the sign-flip test's smallest attainable p is 2/2^{most} = \
         {:.4}, above the Holm threshold α/m = {threshold:.4}, so superior or inferior cannot be \
         declared there, however large Δ is. More documents would settle it, not more questions \
         per document; if the questions are independent of their documents, `resample: question` \
         is the right unit.\n",
        limited.len(),
        2f64.powi(1 - most as i32),
    )
}

#[cfg(test)]
mod tests {
    use super::{floor_limited, signed_points};

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

    /// Issue 55 case 8: a negative end that rounds to zero keeps its sign.
    #[test]
    fn negative_ends_never_print_as_plus_zero() {
        assert_eq!(signed_points(-0.0004), "-0.0");
        assert_eq!(signed_points(0.0), "+0.0");
        assert_eq!(signed_points(-0.0), "+0.0");
        assert_eq!(signed_points(0.0123), "+1.2");
        assert_eq!(signed_points(-0.025), "-2.5");
    }
}
