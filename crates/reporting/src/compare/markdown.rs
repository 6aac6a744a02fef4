//! compare.md: the verdict table, the rules and where they came from, the unmatched cells.

use super::*;

/// Renders the report as GitHub-flavoured Markdown, ready to post as a pull-request comment:
/// a headline with the verdict, the rules and where each came from, one table row per pair,
/// what changed in pairs formed by coordinates, the verdict line with the reasons, the rule,
/// and the cells without a partner.
pub fn render_markdown(r: &CompareReport) -> String {
    let mut md = String::new();
    let lonely = if r.missing > 0 && !r.allow_missing {
        format!(
            "{}{} baseline cell{} without a partner",
            if r.regressions > 0 { " and " } else { "" },
            r.missing,
            if r.missing == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    let head = match r.verdict {
        Verdict::Ok => "✅ no regression".to_string(),
        Verdict::Regression if r.regressions > 0 => format!(
            "❌ REGRESSION in {} of {} compared cells{lonely}",
            r.regressions,
            r.cells.len()
        ),
        Verdict::Regression => format!("❌ FAILED: {lonely}"),
    };
    let _ = writeln!(md, "## chunkbench compare: {head}\n");
    let _ = writeln!(
        md,
        "Baseline {} (run {}) · candidate {} (run {}) · {} compared cells, questions \
         paired by id.\n",
        Code(&r.baseline),
        Code(&r.baseline_name),
        Code(&r.candidate),
        Code(&r.candidate_name),
        r.cells.len(),
    );
    rules_lines(&mut md, r);
    let level = crate::fmt::level(r.rules.alpha);
    let _ = write!(
        md,
        "| gate | dataset | strategy | retriever | k | reader | n | primary baseline → \
         candidate | Δ pts [{level}% CI] | Holm p | verdict | questions needed | lost / \
         gained | words (mean) baseline → candidate | Δ words % [95% CI] | invalid baseline → \
         candidate |\n\
         |---|---|---|---|---:|---|---:|---|---|---:|---|---:|---:|---|---|---:|\n",
    );
    for c in &r.cells {
        let _ = writeln!(md, "{}", markdown_row(c));
    }
    md.push('\n');
    change_lines(&mut md, r);
    md.push('\n');
    verdict_lines(&mut md, r);
    let _ = writeln!(
        md,
        "\nRule: {}. Δ, intervals and verdicts: the primary metric candidate − baseline in \
         points, {level} % interval (Tango's score interval for right/wrong values, \
         Rao–Scott-adjusted when questions are clustered, else its union with the \
         cluster-robust t interval), Holm over the {} confirmatory pairs with a primary value \
         and a differing question (a pair whose questions all agree cannot reach \
         significance, Tarone 1990); verdicts as in summary.md (docs/reference.md §5 \"The \
         verdict\"). Lost / gained: questions the baseline answered correctly and the \
         candidate did not, and the reverse (read cells). Words: whitespace-separated words of \
         the retrieved passages summed over the top-k (with multiplicity), paired bootstrap \
         95 % (B = {}, the cell's seed).",
        r.rule, r.family_size, r.bootstrap_resamples
    );
    unmatched_lines(&mut md, r);
    md
}

/// The rules the gate judged by, where each came from, and what the candidate declared
/// otherwise.
fn rules_lines(md: &mut String, r: &CompareReport) {
    let g = &r.rules;
    let family = match &g.planned {
        None => format!("every pair — {}", g.planned_from),
        Some(p) => format!(
            "{} of {} pairs, {} — {}; the others are exploratory, shown and not judged on the \
             primary metric",
            r.confirmatory,
            r.cells.len(),
            Text(&p.describe()),
            g.planned_from
        ),
    };
    let resample = match (g.resample, r.resample.as_str()) {
        (Some(u), _) => format!("by {} — {}", u.as_str(), g.resample_from),
        (None, "") => format!(
            "– ({}; no pair has the primary metric on both sides)",
            g.resample_from
        ),
        (None, used) => format!(
            "by {used} — {} (by document when documents hold several compared questions; {} \
             do)",
            g.resample_from, r.shared_documents
        ),
    };
    let _ = writeln!(
        md,
        "**Rules** — the reviewer's: the baseline run's config and this command's flags, never \
         the candidate's.\n\n\
         - primary metric {} — {}\n\
         - margin {} points — {}\n\
         - α = {} family-wise — {}\n\
         - effect {} points — {}\n\
         - resampled {resample}\n\
         - planned family: {family}; Holm family of {}\n",
        Code(&g.primary),
        g.primary_from,
        crate::fmt::tolerance(g.margin_pts),
        g.margin_from,
        g.alpha,
        g.alpha_from,
        crate::fmt::tolerance(g.effect_pts),
        g.effect_from,
        r.family_size,
    );
    if !r.rule_differences.is_empty() {
        let _ = writeln!(
            md,
            "The candidate's config declares other rules (ignored: the gate judged by its own{}):\n",
            if r.tolerances.allow_rule_change {
                "; --allow-rule-change"
            } else {
                "; a flag set each of these"
            }
        );
        for d in &r.rule_differences {
            let _ = writeln!(md, "- {}", Text(&d.describe()));
        }
        md.push('\n');
    }
}

/// The lines under the table: pairs formed by coordinates, inputs that differ, ignored cells
/// and notes on `ok` rows.
fn change_lines(md: &mut String, r: &CompareReport) {
    for c in r.cells.iter().filter(|c| !c.changed.is_empty()) {
        let _ = writeln!(
            md,
            "- {} × {} × k={} × {}: paired by {} (cell {} → {}); changed: {}",
            Text(&c.strategy),
            Text(&c.retriever),
            depth(c.k, c.budget),
            Text(&c.reader),
            match c.paired_by {
                PairedBy::Rename => "--pair",
                _ => "dataset, strategy, retriever, k and reader",
            },
            Code(&c.baseline_cell_id),
            Code(&c.cell_id),
            Text(&c.changed.join("; "))
        );
    }
    for c in r.cells.iter().filter(|c| !c.inputs_differ.is_empty()) {
        let _ = writeln!(
            md,
            "- {} {} × {} × k={}: computed on different inputs: {}",
            Code(&c.cell_id),
            Text(&c.strategy),
            Text(&c.retriever),
            depth(c.k, c.budget),
            Text(&c.inputs_differ.join("; "))
        );
    }
    for c in r.cells.iter().filter(|c| !c.notes.is_empty()) {
        let _ = writeln!(
            md,
            "- {} × {} × k={} × {}: ok — {}",
            Text(&c.strategy),
            Text(&c.retriever),
            depth(c.k, c.budget),
            Text(&c.reader),
            Text(&c.notes.join("; "))
        );
    }
    for (side, n) in [
        ("baseline", r.ignored_baseline_cells),
        ("candidate", r.ignored_candidate_cells),
    ] {
        if n > 0 {
            let _ = writeln!(
                md,
                "- The {side}'s cells/ holds {n} finished cell{} that {} not part of its \
                 config.json (left by an earlier config); ignored.",
                if n == 1 { "" } else { "s" },
                if n == 1 { "is" } else { "are" }
            );
        }
    }
}

/// One table row of compare.md.
fn markdown_row(c: &CellComparison) -> String {
    let gate = match c.verdict {
        Verdict::Ok => "✅ ok",
        Verdict::Regression => "❌ **REGRESSION**",
    };
    let words = match c.words_change_pct {
        Some(w) => format!(
            "{:+.1} {}",
            w,
            crate::fmt::signed_interval(c.words_change_ci)
        ),
        None => "–".into(),
    };
    let pts = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{:.1}", 100.0 * v));
    let (delta, holm, verdict, needed) = match &c.primary {
        Some(p) if p.exploratory => (
            crate::verdicts::delta_points(p),
            format!("{} (unadjusted)", crate::fmt::p_value(p.p)),
            "exploratory".to_string(),
            "–".into(),
        ),
        Some(p) => (
            crate::verdicts::delta_points(p),
            crate::fmt::p_value(p.holm_p),
            p.verdict.to_string(),
            crate::verdicts::needed_cell(p),
        ),
        None => ("–".into(), "–".into(), "–".into(), "–".into()),
    };
    format!(
        "| {gate} | {} | {} | {} | {} | {} | {} | {} → {} | {delta} | {holm} | {verdict} | \
         {needed} | {} | {:.1} → {:.1} | {words} | {} → {} |",
        Text(&c.dataset),
        Text(&c.strategy),
        Text(&c.retriever),
        depth(c.k, c.budget),
        Text(&c.reader),
        c.n,
        pts(c.baseline.primary_mean),
        pts(c.candidate.primary_mean),
        c.mcnemar
            .map_or("–".into(), |m| format!("{} / {}", m.b, m.c)),
        c.baseline.words_mean,
        c.candidate.words_mean,
        c.invalid.0,
        c.invalid.1,
    )
}

/// compare.md's verdict line and, on failure, one line per failing pair.
fn verdict_lines(md: &mut String, r: &CompareReport) {
    match r.verdict {
        Verdict::Ok => {
            let _ = writeln!(
                md,
                "**Verdict: no regression** in {} compared cells.",
                r.cells.len()
            );
        }
        Verdict::Regression if r.regressions == 0 => {
            let _ = writeln!(
                md,
                "**Verdict: FAILED**: {} baseline cell{} without a partner in the candidate \
                 (listed below; --allow-missing to pass anyway, --pair OLD=NEW for a renamed \
                 strategy).",
                r.missing,
                if r.missing == 1 { "" } else { "s" }
            );
        }
        Verdict::Regression => {
            let _ = writeln!(
                md,
                "**Verdict: REGRESSION** in {} of {} compared cells{}:",
                r.regressions,
                r.cells.len(),
                if r.missing > 0 && !r.allow_missing {
                    format!(
                        ", and {} baseline cell{} without a partner (below; --allow-missing to \
                         pass anyway, --pair OLD=NEW for a renamed strategy)",
                        r.missing,
                        if r.missing == 1 { "" } else { "s" }
                    )
                } else {
                    String::new()
                }
            );
            for c in r.cells.iter().filter(|c| c.verdict == Verdict::Regression) {
                let _ = writeln!(
                    md,
                    "- {} {} × {} × {} × k={} × {}: {}",
                    Code(&c.cell_id),
                    Text(&c.dataset),
                    Text(&c.strategy),
                    Text(&c.retriever),
                    depth(c.k, c.budget),
                    Text(&c.reader),
                    c.reasons.join("; ")
                );
            }
        }
    }
}

/// compare.md's "Unmatched cells" section, with a `--pair OLD=NEW` suggestion for a strategy
/// that looks renamed.
fn unmatched_lines(md: &mut String, r: &CompareReport) {
    md.push_str("\n### Unmatched cells\n\n");
    if r.only_in_baseline.is_empty() && r.only_in_candidate.is_empty() {
        md.push_str("None: every cell of each run has a partner in the other.\n");
    }
    for (old, new) in super::pairs::renames_suggested(&r.only_in_baseline, &r.only_in_candidate) {
        let _ = writeln!(
            md,
            "- Strategy {} has no partner and the candidate's {} sits at the same dataset, \
             retriever, k and reader: if it was renamed, pass `--pair {old}={new}`.",
            Code(&old),
            Code(&new)
        );
    }
    for (side, list) in [
        ("only in the baseline", &r.only_in_baseline),
        ("only in the candidate", &r.only_in_candidate),
    ] {
        for u in list {
            let _ = write!(
                md,
                "- {side}: {} {} × {} × {} × k={} × {}",
                Code(&u.cell_id),
                Text(&u.dataset),
                Text(&u.strategy),
                Text(&u.retriever),
                depth(u.k, u.budget),
                Text(&u.reader)
            );
            if u.differs_in.is_empty() {
                md.push('\n');
            } else {
                let _ = writeln!(
                    md,
                    " (configuration differs in {})",
                    u.differs_in
                        .iter()
                        .map(|f| Code(f).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
    }
}

/// Writes `compare.md` ([`render_markdown`]) and `compare.json` (the report as pretty JSON)
/// into `dir`, each atomically, and returns their paths.
///
/// # Errors
/// I/O errors naming the file.
pub fn write_report(dir: &Path, report: &CompareReport) -> Result<(PathBuf, PathBuf)> {
    let md = dir.join(REPORT_MD);
    let json = dir.join(REPORT_JSON);
    write_atomic(&md, render_markdown(report).as_bytes())?;
    write_json(&json, report)?;
    Ok((md, json))
}
