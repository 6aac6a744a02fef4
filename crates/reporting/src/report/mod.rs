//! Cell aggregates and the run's `summary.csv` / `summary.md`.

use crate::md::{Code, Text};
use anyhow::Result;
use datasets::io::write_atomic;
use records::{
    summary_columns, table_csv, CellKey, CellRecord, Comparison, Failure, QuestionRow, SummaryRow,
};
use retriever::metrics::registry::AppliesTo;
use retriever::metrics::METRICS;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

mod chunks;
mod retrieval;
pub use chunks::{counters_note, indexed_note, uncovered_note, write_chunk_stats};
use retrieval::{retrieval_section, retrieval_tests};

/// What the reports need from the run's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSettings {
    /// The config's `name` (summary.md's title).
    pub name: String,
    /// The baseline strategy's name: every other strategy's cells are compared with its cells.
    pub baseline: String,
    /// The run seed (bootstrap resampling).
    pub seed: u64,
    /// Bootstrap resamples per comparison.
    pub bootstrap_resamples: usize,
    /// The primary metric, margin and resampling unit of the verdict.
    pub verdict: crate::verdicts::VerdictSettings,
}

/// The baseline cell for `c`: same dataset, retriever, k and reader, baseline strategy.
fn baseline_of<'a>(
    cfg: &ReportSettings,
    cells: &'a [CellRecord],
    c: &CellRecord,
) -> Option<&'a CellRecord> {
    let base = cfg.baseline.as_str();
    cells.iter().find(|b| {
        b.cell.strategy == base
            && b.cell.dataset == c.cell.dataset
            && b.cell.retriever == c.cell.retriever
            && b.cell.same_depth(&c.cell)
            && b.cell.reader == c.cell.reader
    })
}

/// Compares every non-baseline cell with its baseline cell (same dataset, retriever, k and
/// reader) on the same accuracy questions; its Holm p is the planned family's when accuracy
/// is the run's primary metric (`family`), else none (exploratory).
///
/// # Errors
/// Cells whose question lists differ (they cannot be paired), or statistics errors.
pub fn compare_cells(
    cfg: &ReportSettings,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
    family: Option<&crate::verdicts::Family>,
) -> Result<HashMap<String, Comparison>> {
    let mut out: Vec<(String, Comparison)> = Vec::new();
    for c in cells {
        let Some(b) = baseline_of(cfg, cells, c).filter(|b| b.id != c.id) else {
            continue;
        };
        // Retrieval-only cells have no answers to pair; their retrieval metrics are paired
        // in summary.md's "Retrieval against the baseline" section.
        if c.summary.accuracy.is_none() || b.summary.accuracy.is_none() {
            continue;
        }
        let (cr, br) = crate::verdicts::paired_rows(rows, &c.id, &b.id)?;
        let correct =
            |rs: &[QuestionRow]| rs.iter().map(|r| r.correct == Some(1)).collect::<Vec<_>>();
        let words = |rs: &[QuestionRow]| rs.iter().map(|r| r.words as f64).collect::<Vec<_>>();
        // The family's resampling unit and level, so that a planned accuracy comparison shows
        // the same interval here, in the plots and in report.html as in the verdict table.
        let unit = family.map_or_else(
            || crate::verdicts::unit_without_family(&cfg.verdict, rows),
            |f| f.resample,
        );
        let clusters = stats::Clusters::from_keys(br.iter().map(|r| unit.key(r)));
        let paired = stats::PairedComparison::new(
            &correct(br),
            &correct(cr),
            &clusters,
            1.0 - cfg.verdict.alpha,
        )?;
        let (bw, cw) = (words(br), words(cr));
        let base_sum: f64 = bw.iter().sum();
        let words_reduction_pct =
            (base_sum > 0.0).then(|| 100.0 * (1.0 - cw.iter().sum::<f64>() / base_sum));
        let words_reduction_ci = if bw.iter().all(|&w| w > 0.0) {
            let conf = stats::BootstrapConfig {
                resamples: cfg.bootstrap_resamples,
                confidence: stats::DEFAULT_CONFIDENCE,
                seed: cfg.seed,
            };
            stats::bootstrap_relative_reduction(&bw, &cw, &conf)?.interval
        } else {
            None
        };
        out.push((
            c.id.clone(),
            Comparison {
                baseline_cell_id: b.id.clone(),
                holm_p: family
                    .filter(|f| f.primary == crate::verdicts::Primary::Accuracy)
                    .and_then(|f| f.of(&c.id))
                    .map(|p| p.comparison.holm_p),
                paired,
                words_reduction_pct,
                words_reduction_ci,
            },
        ));
    }
    Ok(out.into_iter().collect())
}

/// The planned family ([`crate::verdicts::plan`]) and then [`compare_cells`]: every
/// non-baseline accuracy cell's comparison, with the family's Holm p where accuracy is
/// primary. Returns both.
///
/// # Errors
/// As [`crate::verdicts::plan`] and [`compare_cells`].
pub fn comparisons(
    cfg: &ReportSettings,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Result<(Option<crate::verdicts::Family>, HashMap<String, Comparison>)> {
    let family = plan_family(cfg, cells, rows)?;
    let comparisons = compare_cells(cfg, cells, rows, family.as_ref())?;
    Ok((family, comparisons))
}

/// The run's planned family of the primary metric ([`crate::verdicts::plan`]).
fn plan_family(
    cfg: &ReportSettings,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Result<Option<crate::verdicts::Family>> {
    crate::verdicts::plan(
        &cfg.verdict,
        &cfg.baseline,
        cfg.seed,
        cfg.bootstrap_resamples,
        cells,
        rows,
    )
}

/// The primary metric of every cell with its 95 % interval, for the plots and the budget
/// curves: accuracy with its Wilson interval for read cells when accuracy is primary, else
/// the metric's mean over the questions where it is defined with its percentile bootstrap
/// interval (B = `bootstrap_resamples`, the run seed); `None` when the run has no primary
/// metric.
///
/// # Errors
/// An unknown primary metric; statistics errors.
pub fn primary_points(
    cfg: &ReportSettings,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Result<Option<crate::plots::PrimaryPoints>> {
    use crate::verdicts::Primary;
    let Some(primary) = Primary::resolve(cfg.verdict.primary.as_deref(), cells, rows)? else {
        return Ok(None);
    };
    let boot = stats::BootstrapConfig {
        resamples: cfg.bootstrap_resamples,
        ..stats::BootstrapConfig::with_seed(cfg.seed)
    };
    let mut by_cell = HashMap::new();
    for c in cells {
        let s = &c.summary;
        if let (Primary::Accuracy, Some(a), Some(lo), Some(hi)) =
            (primary, s.accuracy, s.accuracy_ci_low, s.accuracy_ci_high)
        {
            by_cell.insert(c.id.clone(), (a, lo, hi));
            continue;
        }
        let xs: Vec<f64> = rows
            .get(&c.id)
            .into_iter()
            .flatten()
            .filter_map(|r| primary.value(r))
            .collect();
        if xs.is_empty() {
            continue;
        }
        let ci = stats::bootstrap_mean(&xs, &boot)?;
        let (lo, hi) = ci
            .interval
            .map_or((ci.estimate, ci.estimate), |i| (i.lower, i.upper));
        by_cell.insert(c.id.clone(), (ci.estimate, lo, hi));
    }
    Ok(Some(crate::plots::PrimaryPoints {
        name: primary.name().to_string(),
        label: primary.label().to_string(),
        by_cell,
    }))
}

/// summary.md's "At equal budgets" section: per dataset × retriever × reader × budget unit,
/// each strategy's primary metric at every budget size (points, 95 % interval) and the area
/// under its curve (the trapezoid rule on the plot's x axis — log2 of the size when the sizes
/// span a factor of 4 or more, else the size — divided by the axis' range: the metric's mean
/// level over the budget range, in points), strategies ordered by it. Empty without budget
/// cells.
fn budget_section(cells: &[CellRecord], points: &crate::plots::PrimaryPoints) -> String {
    type Key = (String, String, String, &'static str, records::Fill);
    let mut groups: std::collections::BTreeMap<Key, Vec<&CellRecord>> = Default::default();
    for c in cells {
        if let Some(b) = c.cell.budget {
            let reader = if c.summary.accuracy.is_some() {
                c.cell.reader.clone()
            } else {
                "–".into()
            };
            groups
                .entry((
                    c.cell.dataset.clone(),
                    c.cell.retriever.clone(),
                    reader,
                    b.unit.as_str(),
                    b.fill,
                ))
                .or_default()
                .push(c);
        }
    }
    if groups.is_empty() {
        return String::new();
    }
    let mut md = format!(
        "\n## At equal budgets\n\n{} in points [95 % interval] per budget of retrieved text (passages taken by rank until the budget is full, the last one cut at a unit boundary or, with `fill: whole`, left out; overlapping passages count with multiplicity). AUC: the area under the curve over the budget range divided by its width (log2 of the budget when the sizes span a factor of 4 or more), i.e. the mean level over the range; strategies ordered by it.\n",
        points.label
    );
    for ((ds, rt, rd, unit, fill), group) in groups {
        let mut sizes: Vec<usize> = group
            .iter()
            .filter_map(|c| c.cell.budget.map(|b| b.size))
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        let log = sizes
            .first()
            .is_some_and(|&a| a > 0 && sizes.last().is_some_and(|&b| b >= 4 * a));
        let x = |n: usize| if log { (n as f64).log2() } else { n as f64 };
        let mut strategies: Vec<&str> = group.iter().map(|c| c.cell.strategy.as_str()).collect();
        strategies.sort_unstable();
        strategies.dedup();
        let mut rows: Vec<(f64, String)> = Vec::new();
        for st in strategies {
            rows.push(budget_row(st, &sizes, &group, points, &x));
        }
        rows.sort_by(|a, b| b.0.total_cmp(&a.0));
        let _ = write!(
            md,
            "\n### {} · {} · reader {} · budget in {unit}{}\n\n| strategy |",
            Text(&ds),
            Text(&rt),
            Text(&rd),
            if fill == records::Fill::Whole {
                ", whole passages"
            } else {
                ""
            }
        );
        for n in &sizes {
            let _ = write!(md, " ≤{n} |");
        }
        md.push_str(" AUC |\n|---|");
        md.push_str(&"---|".repeat(sizes.len() + 1));
        md.push('\n');
        for (_, line) in rows {
            md.push_str(&line);
            md.push('\n');
        }
    }
    md
}

/// One strategy's row of a budget table: its metric at each budget size, points [95 %], and
/// its mean level over the range (AUC; `-inf` when it has none, to sort it last).
fn budget_row(
    st: &str,
    sizes: &[usize],
    group: &[&CellRecord],
    points: &crate::plots::PrimaryPoints,
    x: &dyn Fn(usize) -> f64,
) -> (f64, String) {
    let mut line = format!("| {} |", Text(st));
    let mut curve = Vec::new();
    for &n in sizes {
        let at = group
            .iter()
            .find(|c| c.cell.strategy == st && c.cell.budget.is_some_and(|b| b.size == n));
        match at.and_then(|c| points.by_cell.get(&c.id)) {
            Some(&(v, lo, hi)) => {
                let _ = write!(
                    line,
                    " {:.1} [{:.1}, {:.1}] |",
                    100.0 * v,
                    100.0 * lo,
                    100.0 * hi
                );
                curve.push((x(n), 100.0 * v));
            }
            None => line.push_str(" – |"),
        }
    }
    let auc = mean_level(&curve);
    let _ = write!(line, " {} |", auc.map_or("–".into(), |a| format!("{a:.1}")));
    (auc.unwrap_or(f64::NEG_INFINITY), line)
}

/// The area under `curve` (x, points) by the trapezoid rule over the width of its x range:
/// the mean level over the range; `None` with fewer than two points or no width.
fn mean_level(curve: &[(f64, f64)]) -> Option<f64> {
    if curve.len() >= 2 {
        let width = curve[curve.len() - 1].0 - curve[0].0;
        let area: f64 = curve
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
            .sum();
        (width > 0.0).then(|| area / width)
    } else {
        None
    }
}

/// What [`write_reports`] returns: summary.md's text, the accuracy comparisons by cell id,
/// the primary metric's points for the plots, and the planned family (for report.html).
pub type Reports = (
    String,
    HashMap<String, Comparison>,
    Option<crate::plots::PrimaryPoints>,
    Option<crate::verdicts::Family>,
);

/// Writes `summary.csv` and `summary.md` into `dir` and returns the Markdown.
///
/// Markdown: one table per (dataset, reader); rows strategy × retriever × k; columns accuracy
/// with its Wilson 95 % interval, ties, mean words retrieved (with multiplicity and unique),
/// the accuracy delta in points against the baseline strategy with its paired bootstrap 95 %
/// interval, McNemar exact p, Holm-adjusted p, the words reduction in %, and the evidence hit
/// rate at k where the dataset has gold evidence.
///
/// # Errors
/// Cells that cannot be paired, and I/O errors naming the file.
pub fn write_reports(
    dir: &Path,
    cfg: &ReportSettings,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Result<Reports> {
    let family = plan_family(cfg, cells, rows)?;
    let comparisons = compare_cells(cfg, cells, rows, family.as_ref())?;
    let mut md = summary_head(cfg, family.as_ref());
    let summary_rows = accuracy_tables(&mut md, cfg, cells, &comparisons, family.as_ref());
    for (k, kind) in retriever::records::RECORDS.iter().enumerate() {
        strategy_record_section(&mut md, cells, k, kind);
    }
    degenerate_section(&mut md, cells);
    let points = primary_points(cfg, cells, rows)?;
    if let Some(p) = &points {
        md.push_str(&budget_section(cells, p));
    }
    md.push_str(&retrieval_section(cfg, cells, rows)?);
    let (tests_md, tests_csv) = retrieval_tests(cfg, cells, rows, family.as_ref())?;
    md.push_str(&tests_md);
    write_atomic(&dir.join("retrieval_comparisons.csv"), &tests_csv)?;
    failure_section(&mut md, cells);
    accuracy_note(&mut md, cfg, cells, &comparisons, family.as_ref());
    write_atomic(
        &dir.join("summary.csv"),
        &table_csv(&summary_columns(), &summary_rows)?,
    )?;
    write_atomic(&dir.join("summary.md"), md.as_bytes())?;
    Ok((md, comparisons, points, family))
}

/// summary.md's title, baseline and verdict section (or why there is no verdict).
fn summary_head(cfg: &ReportSettings, family: Option<&crate::verdicts::Family>) -> String {
    let mut md = format!(
        "# {}\n\nBaseline strategy: {}.\n",
        Text(&cfg.name),
        Code(&cfg.baseline)
    );
    if let Some(f) = family {
        md.push_str(&crate::verdicts::section(
            f,
            stats::monte_carlo_resamples(cfg.bootstrap_resamples, f.size(), f.settings.alpha),
            cfg.seed,
        ));
    } else if let Some(p) = &cfg.verdict.primary {
        let _ = write!(
            md,
            "\n## Verdict: none\n\nNo strategy is compared with the baseline on the primary \
             metric {} (`primary:`): no cell pair has a value of it on both sides (it needs a \
             reader for accuracy, gold evidence for the span and rank metrics, an answer \
             string for answer recall). Set `primary:` to a metric this run's data has.\n",
            Code(p)
        );
    }
    md
}

/// summary.md's accuracy tables, one per (dataset, reader) (a retrieval-only group gets the
/// cost table of [`unread_table`]); returns summary.csv's rows in the same order.
fn accuracy_tables(
    md: &mut String,
    cfg: &ReportSettings,
    cells: &[CellRecord],
    comparisons: &HashMap<String, Comparison>,
    family: Option<&crate::verdicts::Family>,
) -> Vec<SummaryRow> {
    let planned = |id: &str| family.and_then(|f| f.of(id)).cloned();
    let mut summary_rows = Vec::with_capacity(cells.len());
    let mut groups: Vec<(String, String)> = cells
        .iter()
        .map(|c| (c.cell.dataset.clone(), c.cell.reader.clone()))
        .collect();
    groups.sort();
    groups.dedup();
    for (ds, rd) in &groups {
        let group: Vec<&CellRecord> = cells
            .iter()
            .filter(|c| &c.cell.dataset == ds && &c.cell.reader == rd)
            .collect();
        if group.iter().all(|c| c.summary.accuracy.is_none()) {
            unread_table(md, ds, rd, &group);
            summary_rows.extend(group.iter().map(|c| SummaryRow {
                record: (*c).clone(),
                comparison: None,
                planned: planned(&c.id),
            }));
            continue;
        }
        let _ = write!(
            md,
            "\n## {} · reader {}\n\n| strategy | retriever | k | n | accuracy [95% CI] | ties | invalid | words (mean) | unique words | chars (mean) | tokens (mean) | acc pts / 1k words | Δ acc pts [{}% CI] | McNemar p | Holm p | words reduction % [95% CI] | recall@k | nDCG@k |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|\n",
            Text(ds),
            Code(rd),
            crate::fmt::level(cfg.verdict.alpha)
        );
        for c in cells
            .iter()
            .filter(|c| &c.cell.dataset == ds && &c.cell.reader == rd)
        {
            summary_rows.push(accuracy_row(
                md,
                cfg,
                cells,
                c,
                comparisons.get(&c.id),
                planned(&c.id),
            ));
        }
    }
    summary_rows
}

/// One cell's row of its accuracy table (into `md`) and of summary.csv (returned).
fn accuracy_row(
    md: &mut String,
    cfg: &ReportSettings,
    cells: &[CellRecord],
    c: &CellRecord,
    cmp: Option<&Comparison>,
    planned: Option<records::Planned>,
) -> SummaryRow {
    let s = &c.summary;
    let is_base = baseline_of(cfg, cells, c).is_some_and(|b| b.id == c.id);
    let row = SummaryRow {
        record: c.clone(),
        comparison: cmp.cloned(),
        planned,
    };
    let primary = row.planned.clone().filter(|p| p.metric == "accuracy");
    let per_kw = row.accuracy_pts_per_1000_words();
    let (delta, p, holm, red) = match cmp {
        _ if is_base => (
            "baseline".to_string(),
            "–".into(),
            "–".into(),
            "baseline".into(),
        ),
        None => ("–".into(), "–".into(), "–".into(), "–".into()),
        Some(m) => (
            match primary {
                Some(ref p) => crate::verdicts::delta_points(&p.comparison),
                None => format!(
                    "{:+.1} {}",
                    m.paired.delta_points,
                    m.paired.delta_ci.map_or("[n too small]".into(), |i| {
                        crate::fmt::signed_interval(Some(i))
                    })
                ),
            },
            crate::fmt::p_value(m.paired.mcnemar.exact_p),
            m.holm_p.map_or("–".into(), crate::fmt::p_value),
            m.words_reduction_pct
                .map_or("–".into(), |r| match m.words_reduction_ci {
                    Some(i) => format!("{r:+.1} [{:+.1}, {:+.1}]", i.lower, i.upper),
                    None => format!("{r:+.1}"),
                }),
        ),
    };
    let accuracy = match (s.accuracy, s.accuracy_ci_low, s.accuracy_ci_high) {
        (Some(a), Some(lo), Some(hi)) => {
            format!("{:.1} % [{:.1}, {:.1}]", 100.0 * a, 100.0 * lo, 100.0 * hi)
        }
        _ => crate::fmt::accuracy(s),
    };
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {accuracy} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {delta} | {p} | {holm} | {red} | {} | {} |",
        Text(&c.cell.strategy),
        Text(&c.cell.retriever),
        c.cell.depth_label(),
        s.n,
        s.ties,
        s.invalid,
        s.words_mean,
        s.unique_words_mean,
        s.chars_mean,
        s.tokens_mean.map_or("–".into(), |t| format!("{t:.1}")),
        per_kw.map_or("–".into(), |v| format!("{v:.1}")),
        s.metrics.get("recall").map_or("–".into(), |h| format!("{h:.3}")),
        s.metrics.get("ndcg").map_or("–".into(), |h| format!("{h:.3}")),
    );
    row
}

/// summary.md's warning about cells whose embedder returned zero vectors (nothing when none).
fn degenerate_section(md: &mut String, cells: &[CellRecord]) {
    let degenerate: Vec<&CellRecord> = cells
        .iter()
        .filter(|c| c.summary.degenerate_passages + c.summary.degenerate_queries > 0)
        .collect();
    if !degenerate.is_empty() {
        md.push_str(
            "\n## ⚠ Degenerate vectors\n\nThe embedder returned zero vectors for these cells: such passages are never retrieved by dense search, and such questions got no dense passage (they were read with what else was retrieved, often nothing). Check the embedding server.\n\n| dataset | strategy | retriever | k | reader | passages | questions |\n|---|---|---|---:|---|---:|---:|\n",
        );
        for c in degenerate {
            let _ = writeln!(
                md,
                "{} {} | {} |",
                cell_columns(&c.cell),
                c.summary.degenerate_passages,
                c.summary.degenerate_queries
            );
        }
    }
}

/// summary.md's failure attribution table (nothing when no cell attributes failures).
fn failure_section(md: &mut String, cells: &[CellRecord]) {
    if cells.iter().any(|c| !c.summary.failures.is_empty()) {
        md.push_str(
            "\n## Failure attribution\n\nQuestions per first failing stage: extraction (EAR: no anchors), matching (EAR: no corpus occurrence), ranking (gold evidence not in the top-k), reading (evidence retrieved, answer wrong); no-evidence = wrong answer without gold evidence to attribute it; invalid-answer = the reader's reply could not be read as an answer (shown before the other stages: the measurement failed).\n\n| dataset | strategy | retriever | k | reader |",
        );
        // One column per stage, in `Failure::ALL` order.
        let stages: Vec<&str> = Failure::ALL.iter().map(|f| f.as_str()).collect();
        for st in &stages {
            let _ = write!(md, " {st} |");
        }
        md.push_str("\n|---|---|---|---:|---|");
        md.push_str(&"---:|".repeat(stages.len()));
        md.push('\n');
        for c in cells {
            md.push_str(&cell_columns(&c.cell));
            for st in &stages {
                let _ = write!(
                    md,
                    " {} |",
                    c.summary.failures.get(*st).copied().unwrap_or(0)
                );
            }
            md.push('\n');
        }
    }
}

/// summary.md's closing note on how accuracy, words, Δ and p were computed (only when a
/// cell was read), with the minimum detectable effects.
fn accuracy_note(
    md: &mut String,
    cfg: &ReportSettings,
    cells: &[CellRecord],
    comparisons: &HashMap<String, Comparison>,
    family: Option<&crate::verdicts::Family>,
) {
    let mde: Vec<f64> = comparisons
        .values()
        .filter_map(|c| c.paired.mde_points)
        .collect();
    let mut tokens_by: Vec<&str> = cells.iter().map(|c| c.tokens_by.as_str()).collect();
    tokens_by.sort_unstable();
    tokens_by.dedup();
    let any_read = cells.iter().any(|c| c.summary.accuracy.is_some());
    let accuracy_primary = family.is_some_and(|f| f.primary == crate::verdicts::Primary::Accuracy);
    if any_read {
        let _ = write!(
        md,
        "\nAccuracy: a tie between the best options counts as wrong (column `ties`), and so does an \
         invalid answer (column `invalid`: a reply that could not be read as an answer; its text \
         is in per_question.csv, column `reply`); Wilson 95 % intervals; – for a cell with no \
         questions. Words: whitespace-separated words of the retrieved passages, summed over the \
         top-k; unique words count overlapping spans once. Chars: Unicode scalar values retrieved; \
         tokens: counted with {}. Δ: against the baseline strategy's \
         cell with the same dataset, retriever, k and reader, on the same questions; {}; \
         McNemar exact p (unadjusted); Holm p {}.{}\n",
        tokens_by
            .iter()
            .map(|t| Code(t).to_string())
            .collect::<Vec<_>>()
            .join(", "),
        if accuracy_primary {
            format!("the planned comparison's {} % interval (see the verdict section)", crate::fmt::level(cfg.verdict.alpha))
        } else {
            format!("{} % intervals by the verdict's method for right/wrong values (Tango's score interval; Rao–Scott by the verdict's resampling unit when questions are clustered)", crate::fmt::level(cfg.verdict.alpha))
        },
        if accuracy_primary {
            "over the planned family (accuracy is the primary metric)"
        } else {
            "– (accuracy is exploratory here: the primary metric is a retrieval metric)"
        },
        if mde.is_empty() {
            String::new()
        } else {
            format!(
                " Minimum detectable effect (α = {}, power 0.8, observed discordance): {:.1}–{:.1} points.",
                cfg.verdict.alpha,
                mde.iter().copied().fold(f64::INFINITY, f64::min),
                mde.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            )
        }
    );
    }
}

/// summary.md's table for a (dataset, reader) group of retrieval-only cells (`kind: none`):
/// the retrieval cost per question, without accuracy columns.
fn unread_table(md: &mut String, ds: &str, rd: &str, group: &[&CellRecord]) {
    let _ = write!(
        md,
        "\n## {} · reader {} (retrieval only)\n\nNo reader: these cells are scored by the retrieval tables below; they have no accuracy.\n\n| strategy | retriever | k | n | words (mean) | unique words | chars (mean) | tokens (mean) | questions with evidence |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        Text(ds),
        Code(rd)
    );
    for c in group {
        let s = &c.summary;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} |",
            Text(&c.cell.strategy),
            Text(&c.cell.retriever),
            c.cell.depth_label(),
            s.n,
            s.words_mean,
            s.unique_words_mean,
            s.chars_mean,
            s.tokens_mean.map_or("–".into(), |t| format!("{t:.1}")),
            s.evidence_n
        );
    }
}

/// The first five columns of a summary.md row naming a cell:
/// `| dataset | strategy | retriever | k | reader |` (names Markdown-escaped).
fn cell_columns(cell: &CellKey) -> String {
    format!(
        "| {} | {} | {} | {} | {} |",
        Text(&cell.dataset),
        Text(&cell.strategy),
        Text(&cell.retriever),
        cell.depth_label(),
        Text(&cell.reader)
    )
}

/// summary.md's section of one strategy record (`kind`, at position `k` of
/// [`retriever::records::RECORDS`]): one row per cell whose rows carry it, one column per
/// printed figure; nothing when no cell carries it.
fn strategy_record_section(
    md: &mut String,
    cells: &[CellRecord],
    k: usize,
    kind: &retriever::records::RecordKind,
) {
    use retriever::records::Print;
    let carrying: Vec<(&CellRecord, &retriever::records::RecordSummary)> = cells
        .iter()
        .filter_map(|c| c.summary.records.at(k).map(|s| (c, s)))
        .collect();
    if carrying.is_empty() {
        return;
    }
    let shown: Vec<usize> = (0..kind.figures.len())
        .filter(|&i| kind.figures[i].print != Print::Hidden)
        .collect();
    let _ = write!(
        md,
        "\n## {}\n\n{}\n\n| dataset | strategy | retriever | k | reader |",
        kind.title, kind.intro
    );
    for &i in &shown {
        let _ = write!(md, " {} |", kind.figures[i].label);
    }
    md.push_str("\n|---|---|---|---:|---|");
    md.push_str(&"---:|".repeat(shown.len()));
    md.push('\n');
    for (c, summary) in carrying {
        md.push_str(&cell_columns(&c.cell));
        for &i in &shown {
            let _ = write!(md, " {} |", summary.print(kind, i));
        }
        md.push('\n');
    }
}
