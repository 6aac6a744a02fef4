//! `compare.html`: the gate's verdict, the table of compared cells, the cells in one run only
//! and the explorer over the matched cells (each candidate cell beside its baseline-run cell).

use super::*;

/// One run of a comparison as the page needs it: its directory, and its matched cells'
/// records and full rows (read with [`records::read_rows_csv`]).
pub struct CompareSide<'a> {
    /// The run directory (EAR explanations are read from `explain/` when present).
    pub dir: &'a Path,
    /// Records and rows by cell id.
    pub cells: &'a BTreeMap<String, (CellRecord, Vec<QuestionRow>)>,
}

/// Writes `compare.html` into `out` (atomically) and returns its path: the verdict, the
/// regression table, the cells in one run only, and the explorer over the matched cells, each
/// candidate cell paired with its baseline-run cell (the flip filter lists exactly the lost and
/// gained questions McNemar counts).
///
/// # Errors
/// A passage id that is not `DOC:START-END`, an unreadable explain file, a template error or
/// an I/O error naming the file.
pub fn write_compare_page(
    out: &Path,
    report: &CompareReport,
    baseline: &CompareSide<'_>,
    candidate: &CompareSide<'_>,
    corpora: &[Corpus],
) -> Result<PathBuf> {
    let (cells, notes) = compare_page_cells(report, baseline, candidate, corpora)?;
    let regression = report.verdict == Verdict::Regression;
    let page = Page {
        title: compare_title(report),
        kind: "compare",
        subtitle: format!(
            "baseline {} (run {}) · candidate {} (run {}) · {} compared cells, questions paired by id",
            report.baseline,
            report.baseline_name,
            report.candidate,
            report.candidate_name,
            report.cells.len()
        ),
        verdict: Some(if regression { "bad" } else { "good" }),
        facts: compare_facts(report),
        notes,
        tables: vec![compare_table(report)],
        lists: unmatched_lists(report),
        plots: Vec::new(),
        css: CSS,
        js: JS,
        data: payload(&cells, corpora)?,
    };
    let path = out.join(COMPARE_HTML);
    write_atomic(&path, render(&page)?.as_bytes())?;
    Ok(path)
}

/// The explorer's cells of compare.html (each candidate cell, then its baseline-run cell) and
/// the page's notes (corpora without text, cells whose rows could not be read).
///
/// # Errors
/// An unreadable explain file.
fn compare_page_cells<'a>(
    report: &CompareReport,
    baseline: &CompareSide<'a>,
    candidate: &CompareSide<'a>,
    corpora: &[Corpus],
) -> Result<(Vec<PageCell<'a>>, Vec<String>)> {
    let mut cells = Vec::new();
    let mut notes: Vec<String> = corpora
        .iter()
        .filter_map(|c| c.note.as_ref().map(|n| format!("{}: {n}", c.name)))
        .collect();
    for m in &report.cells {
        let (Some((brec, brows)), Some((crec, crows))) = (
            baseline.cells.get(&m.cell_id),
            candidate.cells.get(&m.cell_id),
        ) else {
            notes.push(format!(
                "cell {} ({} × {} × k={}): its rows could not be read in full, so its questions \
                 are not in the explorer",
                m.cell_id, m.strategy, m.retriever, m.k
            ));
            continue;
        };
        let (b, c) = (
            format!("baseline:{}", m.cell_id),
            format!("candidate:{}", m.cell_id),
        );
        cells.push(PageCell {
            uid: c.clone(),
            side: Some("candidate run"),
            record: crec,
            rows: crows,
            explain: crate::explain::read_explain_lines(candidate.dir, &m.cell_id)?,
            pair: Some(b.clone()),
            is_baseline: false,
            discordant: m.mcnemar.map(|x| (x.b, x.c)),
        });
        cells.push(PageCell {
            uid: b,
            side: Some("baseline run"),
            record: brec,
            rows: brows,
            explain: crate::explain::read_explain_lines(
                baseline.dir,
                if m.baseline_cell_id.is_empty() {
                    &m.cell_id
                } else {
                    &m.baseline_cell_id
                },
            )?,
            pair: None,
            is_baseline: true,
            discordant: None,
        });
    }
    Ok((cells, notes))
}

/// compare.html's table of compared cells, one row per pair.
fn compare_table(report: &CompareReport) -> Table {
    let rows = report.cells.iter().map(compare_row).collect();
    Table {
        title: format!("Compared cells · primary metric {}", report.primary),
        note: String::new(),
        head: vec![
            head("verdict", false, ""),
            head("dataset", false, ""),
            head("strategy", false, ""),
            head("retriever", false, ""),
            head("k", true, ""),
            head("reader", false, ""),
            head("n", true, "paired questions"),
            head("baseline", true, "the primary metric, points"),
            head("candidate", true, "the primary metric, points"),
            head(
                format!("Δ pts [{}% CI]", crate::fmt::level(report.rules.alpha)),
                true,
                "the verdict's interval: Tango's score interval for right/wrong values (Rao–Scott-adjusted when questions are clustered), else its union with the t interval",
            ),
            head(
                "Holm p",
                true,
                "Holm-adjusted over the pairs with a primary value",
            ),
            head("verdict", false, "against the margin, docs/reference.md §5"),
            head(
                "questions needed",
                true,
                "to settle the verdict at power 0.8",
            ),
            head(
                "lost / gained",
                true,
                "McNemar's b (baseline right, candidate wrong) / c; sorts by lost",
            ),
            head(
                "words baseline → candidate",
                true,
                "mean words retrieved per question",
            ),
            head("Δ words % [95% CI]", true, "paired bootstrap 95 % interval"),
            head("invalid", true, "invalid answers, baseline → candidate"),
        ],
        rows,
    }
}

/// One compared cell's row of [`compare_table`].
fn compare_row(c: &crate::compare::CellComparison) -> Row {
    let regression = c.verdict == Verdict::Regression;
    let pts = |x: Option<f64>| {
        num(
            x.map_or("–".into(), |v| format!("{:.1}", 100.0 * v)),
            x.map(|v| 100.0 * v),
        )
    };
    let p = c.primary.as_ref();
    Row {
        uid: format!("candidate:{}", c.cell_id),
        class: if regression { "regression" } else { "" },
        cells: vec![
            TCell {
                text: if regression { "REGRESSION" } else { "ok" }.into(),
                v: None,
                badge: Some(if regression { "bad" } else { "good" }),
            },
            text(c.dataset.clone()),
            text(c.strategy.clone()),
            text(c.retriever.clone()),
            num(c.k.to_string(), Some(c.k as f64)),
            text(c.reader.clone()),
            num(c.n.to_string(), Some(c.n as f64)),
            pts(c.baseline.primary_mean),
            pts(c.candidate.primary_mean),
            num(
                p.map_or("–".into(), crate::verdicts::delta_points),
                p.map(|p| 100.0 * p.estimate),
            ),
            num(
                p.map_or("–".into(), |p| crate::fmt::p_value(p.holm_p)),
                p.map(|p| p.holm_p),
            ),
            TCell {
                text: p.map_or("–".into(), |p| {
                    if p.exploratory {
                        "exploratory".into()
                    } else {
                        p.verdict.to_string()
                    }
                }),
                v: None,
                badge: p
                    .filter(|p| !p.exploratory)
                    .map(|p| verdict_badge(p.verdict)),
            },
            num(
                p.map_or("–".into(), crate::verdicts::needed_cell),
                p.and_then(|p| p.questions_needed)
                    .and_then(|q| q.n)
                    .map(|n| n as f64),
            ),
            num(
                c.mcnemar
                    .map_or("–".into(), |m| format!("{} / {}", m.b, m.c)),
                c.mcnemar.map(|m| m.b as f64),
            ),
            num(
                format!(
                    "{:.1} → {:.1}",
                    c.baseline.words_mean, c.candidate.words_mean
                ),
                Some(c.candidate.words_mean),
            ),
            num(
                c.words_change_pct.map_or("–".into(), |w| {
                    format!("{w:+.1} {}", crate::fmt::signed_interval(c.words_change_ci))
                }),
                c.words_change_pct,
            ),
            num(
                format!("{} → {}", c.invalid.0, c.invalid.1),
                Some(c.invalid.1 as f64),
            ),
        ],
    }
}

/// compare.html's lists of the cells in one run only.
fn unmatched_lists(report: &CompareReport) -> Vec<(String, Vec<String>)> {
    let unmatched = |v: &[crate::compare::UnmatchedCell]| -> Vec<String> {
        v.iter()
            .map(|u| {
                format!(
                    "{} × {} × {} × k={} × {}{}",
                    u.dataset,
                    u.strategy,
                    u.retriever,
                    u.k,
                    u.reader,
                    if u.differs_in.is_empty() {
                        String::new()
                    } else {
                        format!(" (configuration differs in {})", u.differs_in.join(", "))
                    }
                )
            })
            .collect()
    };
    let mut lists = Vec::new();
    if !report.only_in_baseline.is_empty() {
        lists.push((
            "Cells only in the baseline run".to_string(),
            unmatched(&report.only_in_baseline),
        ));
    }
    if !report.only_in_candidate.is_empty() {
        lists.push((
            "Cells only in the candidate run".to_string(),
            unmatched(&report.only_in_candidate),
        ));
    }
    lists
}

/// compare.html's title: the gate's verdict.
fn compare_title(report: &CompareReport) -> String {
    let regression = report.verdict == Verdict::Regression;
    format!(
        "chunkbench compare: {}",
        if regression {
            format!(
                "REGRESSION in {} of {} compared cells{}",
                report.regressions,
                report.cells.len(),
                if report.missing > 0 && !report.allow_missing {
                    format!(
                        ", {} baseline cell{} without a partner",
                        report.missing,
                        if report.missing == 1 { "" } else { "s" }
                    )
                } else {
                    String::new()
                }
            )
        } else {
            "no regression".into()
        }
    )
}

/// compare.html's facts: the rule, and each of the gate's rules with where it came from (the
/// baseline's config or a flag, never the candidate's).
fn compare_facts(report: &CompareReport) -> Vec<(String, String)> {
    let g = &report.rules;
    let mut facts = vec![
        ("rule".into(), report.rule.clone()),
        (
            "primary metric".into(),
            format!("{} — {}", g.primary, g.primary_from),
        ),
        (
            "margin".into(),
            format!(
                "{} points — {}",
                crate::fmt::tolerance(g.margin_pts),
                g.margin_from
            ),
        ),
        ("α".into(), format!("{} — {}", g.alpha, g.alpha_from)),
        (
            "resampled by".into(),
            format!(
                "{} — {}",
                if report.resample.is_empty() {
                    "–"
                } else {
                    report.resample.as_str()
                },
                g.resample_from
            ),
        ),
        (
            "bootstrap resamples".into(),
            report.bootstrap_resamples.to_string(),
        ),
    ];
    for d in &report.rule_differences {
        facts.push(("candidate declares".into(), d.describe()));
    }
    facts
}

/// The matched cells of `report` as stored in run directory `dir`: records and full rows
/// (cells whose rows cannot be read in full, e.g. a baseline of an older row schema, are left
/// out; [`write_compare_page`] notes them).
fn read_matched(
    dir: &Path,
    report: &CompareReport,
    baseline_side: bool,
) -> BTreeMap<String, (CellRecord, Vec<QuestionRow>)> {
    let mut out = BTreeMap::new();
    for c in &report.cells {
        let cells = dir.join("cells");
        let id = if baseline_side && !c.baseline_cell_id.is_empty() {
            &c.baseline_cell_id
        } else {
            &c.cell_id
        };
        // Only rows the record was written with (`compare` checked them just before).
        let Ok(stored) = records::read_cell(&cells, id) else {
            continue;
        };
        let csv_path = cells.join(format!("{id}.csv"));
        if let Ok(rows) = records::read_rows_csv(&stored.csv, &csv_path.display().to_string()) {
            // Keyed by the candidate's id: the pair's key in the page.
            out.insert(c.cell_id.clone(), (stored.record, rows));
        }
    }
    out
}

/// Writes `compare.html` for `report` (the comparison of the runs in `baseline` and
/// `candidate`) into `out`, with question and passage texts from the datasets in `store`
/// when they are the data the cells read ([`Corpus::load`]).
///
/// # Errors
/// As [`write_compare_page`].
pub fn write_compare_html(
    out: &Path,
    report: &CompareReport,
    baseline: &Path,
    candidate: &Path,
    store: &Path,
) -> Result<PathBuf> {
    let base = read_matched(baseline, report, true);
    let cand = read_matched(candidate, report, false);
    let mut names: Vec<&str> = report.cells.iter().map(|c| c.dataset.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let corpora: Vec<Corpus> = names
        .iter()
        .map(|n| {
            let of: Vec<&CellRecord> = cand
                .values()
                .chain(base.values())
                .map(|(r, _)| r)
                .filter(|r| r.cell.dataset == *n)
                .collect();
            Corpus::load(store, n, &of)
        })
        .collect();
    write_compare_page(
        out,
        report,
        &CompareSide {
            dir: baseline,
            cells: &base,
        },
        &CompareSide {
            dir: candidate,
            cells: &cand,
        },
        &corpora,
    )
}
