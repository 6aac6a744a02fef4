//! summary.md's retrieval tables: each retrieval metric per cell ("Retrieval against gold
//! evidence") and, exploratory, each cell against its baseline cell per metric ("Retrieval
//! against the baseline", `retrieval_comparisons.csv`).

use super::*;

/// A per-question figure of the retrieval tables: a registered metric (position in
/// [`METRICS`]) or, for `index` `None`, the words retrieved (with multiplicity).
#[derive(Clone, Copy)]
struct TableMetric {
    label: &'static str,
    index: Option<usize>,
}

impl TableMetric {
    /// The row's value; `None` where the metric is not defined.
    fn value(&self, r: &QuestionRow) -> Option<f64> {
        match self.index {
            Some(i) => r.metrics.at(i),
            None => Some(r.words as f64),
        }
    }
}

/// The retrieval metrics in the order of summary.md's retrieval tables: the registry's,
/// grouped by unit ([`retriever::metrics::registry::by_unit`]).
fn retrieval_metrics() -> Vec<TableMetric> {
    retriever::metrics::registry::by_unit()
        .into_iter()
        .map(|m| TableMetric {
            label: m.label,
            index: retriever::metrics::registry::index_of(m.name),
        })
        .collect()
}

/// The retrieval metrics paired against the baseline: the words retrieved per question
/// (with multiplicity), the cost side, then the table's metrics.
fn paired_metrics() -> Vec<TableMetric> {
    let words = TableMetric {
        label: "words retrieved",
        index: None,
    };
    std::iter::once(words).chain(retrieval_metrics()).collect()
}

/// True when some row of the cell has a retrieval metric (gold evidence or answer strings).
fn scored(rows: &HashMap<String, Vec<QuestionRow>>, c: &CellRecord) -> bool {
    rows.get(&c.id).is_some_and(|rs| {
        rs.iter()
            .any(|r| r.metrics.as_slice().iter().any(Option::is_some))
    })
}

/// The cells of the retrieval tables: one per dataset × strategy × retriever × k (the
/// metrics do not depend on the reader, so the first reader's cell stands for all), in cell
/// order, among the cells with a retrieval metric.
fn retrieval_cells<'a>(
    cells: &'a [CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Vec<&'a CellRecord> {
    let mut seen = std::collections::HashSet::new();
    cells
        .iter()
        .filter(|c| scored(rows, c))
        .filter(|c| {
            seen.insert((
                c.cell.dataset.clone(),
                c.cell.strategy.clone(),
                c.cell.retriever.clone(),
                c.cell.depth_label(),
            ))
        })
        .collect()
}

/// summary.md's "Retrieval against gold evidence" section: per dataset × strategy × retriever
/// × k, each metric as mean ± population std [percentile bootstrap 95 % interval of the mean]
/// over the questions where it is defined. Empty when no question of the run has gold
/// evidence or an answer string.
///
/// # Errors
/// Statistics errors (non-finite metric values).
pub(super) fn retrieval_section(
    cfg: &ReportSettings,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Result<String> {
    let chosen = retrieval_cells(cells, rows);
    if chosen.is_empty() {
        return Ok(String::new());
    }
    let mut md = String::from(
        "\n## Retrieval against gold evidence\n\nn: questions with gold evidence / with an answer string. Each metric: mean ± population std [percentile bootstrap 95 % interval of the mean] over the questions where it is defined. Recall@k, MRR and nDCG@k by passage; span recall, precision and IoU of the evidence against the retrieved passages (retrieved length with multiplicity), in words and in characters; precision_Ω: the precision of the best retrieval this chunking allows (all index passages overlapping the evidence; Chroma's full precision); answer recall: an answer string (lowercased) inside the retrieved passages (Bhat et al.). The metrics do not depend on the reader.\n\n| dataset | strategy | retriever | k | n |",
    );
    let metrics = retrieval_metrics();
    for m in &metrics {
        let _ = write!(md, " {} |", m.label);
    }
    md.push_str("\n|---|---|---|---:|---:|");
    md.push_str(&"---|".repeat(metrics.len()));
    md.push('\n');
    let boot = stats::BootstrapConfig {
        resamples: cfg.bootstrap_resamples,
        ..stats::BootstrapConfig::with_seed(cfg.seed)
    };
    for c in chosen {
        let rs = &rows[&c.id];
        let n_ev = rs.iter().filter(|r| r.evidence_hit.is_some()).count();
        let n_ans = rs
            .iter()
            .filter(|r| {
                METRICS.iter().enumerate().any(|(i, m)| {
                    m.applies == AppliesTo::AnswerStrings && r.metrics.at(i).is_some()
                })
            })
            .count();
        let _ = write!(
            md,
            "| {} | {} | {} | {} | {n_ev} / {n_ans} |",
            Text(&c.cell.dataset),
            Text(&c.cell.strategy),
            Text(&c.cell.retriever),
            c.cell.depth_label()
        );
        for m in &metrics {
            let xs: Vec<f64> = rs.iter().filter_map(|r| m.value(r)).collect();
            let cell = match stats::population_std(&xs) {
                None => "–".to_string(),
                Some(sd) => {
                    let ci = stats::bootstrap_mean(&xs, &boot)?;
                    match ci.interval {
                        Some(iv) => format!(
                            "{:.3} ± {sd:.3} [{:.3}, {:.3}]",
                            ci.estimate, iv.lower, iv.upper
                        ),
                        None => format!("{:.3} ± {sd:.3}", ci.estimate),
                    }
                }
            };
            let _ = write!(md, " {cell} |");
        }
        md.push('\n');
    }
    Ok(md)
}

/// One paired test of a retrieval metric: a cell against its baseline cell.
struct RetrievalTest<'a> {
    cell: &'a CellRecord,
    baseline: &'a CellRecord,
    metric: &'static str,
    /// Questions where the metric is defined for both cells.
    n: usize,
    baseline_mean: f64,
    cell_mean: f64,
    /// Mean difference (cell − baseline).
    delta: f64,
    /// Its interval at 1 − α.
    interval: Option<stats::Interval>,
    /// Two-sided p (sign-flip by the family's resampling unit).
    p: f64,
    /// True when `p` is exact.
    exact: bool,
}

/// Paired tests per retrieval metric (and words retrieved) of every retrieval cell against
/// its baseline cell (the baseline strategy's, same dataset, retriever and k), unadjusted
/// (exploratory): for a metric, the mean difference with its interval at 1 − α by the
/// verdict's method and resampling unit ([`stats::paired_interval`]) and the sign-flip p by
/// that unit ([`stats::cluster_sign_flip_test`]) — for the primary metric of a planned cell,
/// exactly the verdict's figures, so one comparison shows one interval; for words retrieved
/// (not a proportion), the paired bootstrap 95 % interval and the sign-flip p by question.
/// Returns summary.md's section (empty when there is nothing to pair) and
/// `retrieval_comparisons.csv`.
///
/// # Errors
/// Cells run on different questions, statistics errors.
pub(super) fn retrieval_tests(
    cfg: &ReportSettings,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
    family: Option<&crate::verdicts::Family>,
) -> Result<(String, Vec<u8>)> {
    let unit = family.map_or_else(
        || crate::verdicts::unit_without_family(&cfg.verdict, rows),
        |f| f.resample,
    );
    let chosen = retrieval_cells(cells, rows);
    let mut tests = Vec::new();
    for &c in &chosen {
        let Some(&b) = chosen.iter().find(|b| {
            b.cell.strategy == cfg.baseline
                && b.cell.dataset == c.cell.dataset
                && b.cell.retriever == c.cell.retriever
                && b.cell.same_depth(&c.cell)
        }) else {
            continue;
        };
        if b.id == c.id {
            continue;
        }
        let (cr, br) = crate::verdicts::paired_rows(rows, &c.id, &b.id)?;
        let planned = family
            .and_then(|f| f.of(&c.id))
            .filter(|p| !p.comparison.exploratory);
        for m in paired_metrics() {
            let pair = PairedCells {
                cell: c,
                baseline: b,
                rows: cr,
                baseline_rows: br,
            };
            tests.extend(retrieval_test(cfg, unit, planned, &pair, &m)?);
        }
    }
    let csv = retrieval_tests_csv(&tests)?;
    if tests.is_empty() {
        return Ok((String::new(), csv));
    }
    Ok((retrieval_tests_md(cfg, unit, &tests), csv))
}

/// A cell and its baseline cell with their rows on the same questions.
struct PairedCells<'a> {
    cell: &'a CellRecord,
    baseline: &'a CellRecord,
    rows: &'a [QuestionRow],
    baseline_rows: &'a [QuestionRow],
}

/// The paired test of one metric `m` of a cell against its baseline ([`retrieval_tests`]);
/// `None` when no question has the metric on both sides.
///
/// # Errors
/// Statistics errors.
fn retrieval_test<'a>(
    cfg: &ReportSettings,
    unit: crate::verdicts::Resample,
    planned: Option<&records::Planned>,
    pair: &PairedCells<'a>,
    m: &TableMetric,
) -> Result<Option<RetrievalTest<'a>>> {
    let (c, b, cr, br) = (pair.cell, pair.baseline, pair.rows, pair.baseline_rows);
    let boot = stats::BootstrapConfig {
        resamples: cfg.bootstrap_resamples,
        ..stats::BootstrapConfig::with_seed(cfg.seed)
    };
    let level = 1.0 - cfg.verdict.alpha;
    let metric = m.label;
    let (kept, (bv, cv)): (Vec<&QuestionRow>, (Vec<f64>, Vec<f64>)) = br
        .iter()
        .zip(cr)
        .filter_map(|(x, y)| Some((x, (m.value(x)?, m.value(y)?))))
        .unzip();
    if bv.is_empty() {
        return Ok(None);
    }
    let n = bv.len() as f64;
    let d: Vec<f64> = cv.iter().zip(&bv).map(|(y, x)| y - x).collect();
    let name = m.index.map(|i| METRICS[i].name);
    let primary = planned.filter(|p| Some(p.metric.as_str()) == name);
    let (interval, p, exact) = if let Some(p) = primary {
        let c = &p.comparison;
        (c.interval, c.p, c.exact)
    } else if name.is_some() && d.iter().all(|x| x.abs() <= 1.0) {
        let clusters = stats::Clusters::from_keys(kept.iter().map(|r| unit.key(r)));
        let t = stats::cluster_sign_flip_test(&d, &clusters, cfg.bootstrap_resamples, cfg.seed)?;
        let iv = stats::paired_interval(&d, &clusters, level).map(|i| i.interval);
        (iv, t.p, t.exact)
    } else {
        let t = stats::sign_flip_test(&bv, &cv, &boot)?;
        let iv = stats::bootstrap_mean_difference(&bv, &cv, &boot)?.interval;
        (iv, t.p, t.exact)
    };
    Ok(Some(RetrievalTest {
        cell: c,
        baseline: b,
        metric,
        n: bv.len(),
        baseline_mean: bv.iter().sum::<f64>() / n,
        cell_mean: cv.iter().sum::<f64>() / n,
        delta: d.iter().sum::<f64>() / n,
        interval,
        p,
        exact,
    }))
}

/// `retrieval_comparisons.csv`: one row per paired test, full precision.
///
/// # Errors
/// CSV encoding errors.
fn retrieval_tests_csv(tests: &[RetrievalTest]) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "cell_id",
        "baseline_cell_id",
        "dataset",
        "strategy",
        "retriever",
        "k",
        "metric",
        "n",
        "baseline_mean",
        "mean",
        "delta",
        "delta_ci_low",
        "delta_ci_high",
        "sign_flip_p",
        "sign_flip_exact",
    ])?;
    let f6 = |x: f64| format!("{x:.6}");
    for t in tests {
        let iv = t.interval;
        w.write_record([
            t.cell.id.clone(),
            t.baseline.id.clone(),
            t.cell.cell.dataset.clone(),
            t.cell.cell.strategy.clone(),
            t.cell.cell.retriever.clone(),
            t.cell.cell.depth_label(),
            t.metric.to_string(),
            t.n.to_string(),
            f6(t.baseline_mean),
            f6(t.cell_mean),
            f6(t.delta),
            iv.map_or(String::new(), |i| f6(i.lower)),
            iv.map_or(String::new(), |i| f6(i.upper)),
            f6(t.p),
            u8::from(t.exact).to_string(),
        ])?;
    }
    Ok(w.into_inner()?)
}

/// summary.md's "Retrieval against the baseline (exploratory)" section of `tests` (not empty).
fn retrieval_tests_md(
    cfg: &ReportSettings,
    unit: crate::verdicts::Resample,
    tests: &[RetrievalTest],
) -> String {
    let mut md = format!(
        "\n## Retrieval against the baseline (exploratory)\n\nEach retrieval metric (and words retrieved) of a cell against the baseline strategy's cell with the same dataset, retriever and k, over the questions where both are defined (n): Δ = mean(cell) − mean(baseline) with its {level} % interval by the verdict's method and resampling unit (by {}; words retrieved: paired bootstrap 95 %, B = {}, seed {}); p: two-sided sign-flip permutation test by that unit (exact up to {} non-zero sums, else Monte Carlo with B patterns), unadjusted: these {} tests are exploratory (the verdict section holds the planned, Holm-adjusted comparisons of the primary metric; its rows here carry the verdict's own interval and p); retrieval_comparisons.csv.\n\n| dataset | strategy | retriever | k | metric | n | baseline | cell | Δ [{level}% CI] | sign-flip p |\n|---|---|---|---:|---|---:|---:|---:|---|---:|\n",
        unit.as_str(),
        cfg.bootstrap_resamples,
        cfg.seed,
        stats::SIGN_FLIP_EXACT_MAX,
        tests.len(),
        level = crate::fmt::level(cfg.verdict.alpha),
    );
    for t in tests {
        let digits = if t.metric == "words retrieved" { 1 } else { 3 };
        let v = |x: f64| format!("{x:.digits$}");
        let delta = match t.interval {
            Some(i) => format!(
                "{:+.digits$} [{:+.digits$}, {:+.digits$}]",
                t.delta, i.lower, i.upper
            ),
            None => format!("{:+.digits$} [n too small]", t.delta),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {delta} | {} |",
            Text(&t.cell.cell.dataset),
            Text(&t.cell.cell.strategy),
            Text(&t.cell.cell.retriever),
            t.cell.cell.depth_label(),
            t.metric,
            t.n,
            v(t.baseline_mean),
            v(t.cell_mean),
            crate::fmt::p_value(t.p),
        );
    }
    md
}
