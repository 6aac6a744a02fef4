//! Cell aggregates and the run's `summary.csv` / `summary.md`.

use crate::config::RunConfig;
use crate::io::write_atomic;
use crate::run::{CellRecord, QuestionRow};
use crate::stats;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

/// Aggregates of one cell over its questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    /// Questions answered.
    pub n: usize,
    /// Questions answered correctly (ties never count).
    pub correct: usize,
    /// `correct / n` in [0, 1] (0 when n = 0).
    pub accuracy: f64,
    /// Wilson 95 % interval of the accuracy ([`stats::wilson`]), lower bound; [0, 1] for n = 0.
    pub accuracy_ci_low: f64,
    /// Wilson 95 % interval of the accuracy, upper bound.
    pub accuracy_ci_high: f64,
    /// Questions whose best reader score was shared by several options (invalid answers,
    /// which are full ties by construction, are counted in `invalid` instead).
    pub ties: usize,
    /// Questions the reader gave no usable answer to (unparsable or ambiguous replies);
    /// counted wrong, and shown so that they are never mistaken for wrong answers.
    #[serde(default)]
    pub invalid: usize,
    /// Mean words retrieved per question, with multiplicity.
    pub words_mean: f64,
    /// Median words retrieved per question, with multiplicity.
    pub words_median: f64,
    /// 95th percentile of words retrieved per question (linear interpolation).
    pub words_p95: f64,
    /// Mean unique words retrieved per question (union of spans).
    pub unique_words_mean: f64,
    /// Mean characters retrieved per question (Unicode scalar values), with multiplicity.
    #[serde(default)]
    pub chars_mean: f64,
    /// Mean tokens retrieved per question, with multiplicity (the cell record's
    /// `tokens_by` names the tokenizer); `None` when tokens were not counted.
    #[serde(default)]
    pub tokens_mean: Option<f64>,
    /// Questions with gold evidence.
    pub evidence_n: usize,
    /// Share of those whose top-k overlaps the evidence (None without evidence).
    pub evidence_hit_rate: Option<f64>,
    /// Mean recall@k over questions with evidence.
    #[serde(default)]
    pub recall: Option<f64>,
    /// Mean MRR@k over questions with evidence.
    #[serde(default)]
    pub mrr: Option<f64>,
    /// Mean nDCG@k over questions with evidence.
    #[serde(default)]
    pub ndcg: Option<f64>,
    /// Mean span IoU in words over questions with evidence.
    #[serde(default)]
    pub span_iou: Option<f64>,
    /// Mean span precision in words over questions with evidence.
    #[serde(default)]
    pub span_precision: Option<f64>,
    /// Mean Bhat-style answer recall@k.
    #[serde(default)]
    pub answer_recall: Option<f64>,
    /// Questions per failure attribution (`correct`, `extraction`, `matching`, `ranking`,
    /// `reading`, `no-evidence`; [`crate::run::Failure`]).
    #[serde(default)]
    pub failures: std::collections::BTreeMap<String, usize>,
    /// EAR cells: anchor coverage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ear: Option<EarCoverage>,
}

/// Anchor coverage of an EAR cell (EAR reports exact anchoring for 151/153 questions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarCoverage {
    /// Questions with at least one exact anchor match.
    pub exact_match: usize,
    /// Questions (denominator).
    pub questions: usize,
    /// Mean anchors per question (question and options).
    pub anchors_mean: f64,
    /// Mean candidate windows per question before deduplication.
    pub windows_before_mean: f64,
    /// Mean windows per question after deduplication.
    pub windows_after_mean: f64,
    /// Questions answered from the fallback ranking of parents.
    pub fallbacks: usize,
}

/// Accuracy as shown in reports: `83.4 %`, or `–` for a cell with no questions (an accuracy
/// of nothing is not 0 %).
pub fn fmt_accuracy(s: &CellSummary) -> String {
    if s.n == 0 {
        "–".into()
    } else {
        format!("{:.1} %", 100.0 * s.accuracy)
    }
}

/// Aggregates one cell's rows.
pub fn summarize(rows: &[QuestionRow]) -> CellSummary {
    let n = rows.len();
    let correct = rows.iter().filter(|r| r.correct == 1).count();
    let ci = stats::wilson(correct as u64, n as u64, stats::DEFAULT_CONFIDENCE).unwrap_or(
        stats::Interval {
            lower: 0.0,
            upper: 1.0,
        },
    );
    let words: Vec<f64> = rows.iter().map(|r| r.words as f64).collect();
    let mean = |f: &dyn Fn(&QuestionRow) -> f64| {
        if n == 0 {
            0.0
        } else {
            rows.iter().map(f).sum::<f64>() / n as f64
        }
    };
    let ev: Vec<u8> = rows.iter().filter_map(|r| r.evidence_hit).collect();
    let avg = |f: &dyn Fn(&QuestionRow) -> Option<f64>| {
        let xs: Vec<f64> = rows.iter().filter_map(f).collect();
        stats::mean(&xs)
    };
    let mut failures = std::collections::BTreeMap::new();
    for r in rows.iter().filter(|r| !r.failure.is_empty()) {
        *failures.entry(r.failure.clone()).or_insert(0) += 1;
    }
    let ear_rows: Vec<&QuestionRow> = rows.iter().filter(|r| r.anchors.is_some()).collect();
    let ear = (!ear_rows.is_empty()).then(|| {
        let m = |f: &dyn Fn(&QuestionRow) -> Option<usize>| {
            ear_rows.iter().filter_map(|r| f(r)).sum::<usize>() as f64 / ear_rows.len() as f64
        };
        EarCoverage {
            exact_match: ear_rows
                .iter()
                .filter(|r| r.anchor_match == Some(1))
                .count(),
            questions: ear_rows.len(),
            anchors_mean: m(&|r| r.anchors),
            windows_before_mean: m(&|r| r.windows_before),
            windows_after_mean: m(&|r| r.windows_after),
            fallbacks: ear_rows.iter().filter(|r| r.fallback == Some(1)).count(),
        }
    });
    CellSummary {
        failures,
        ear,
        recall: avg(&|r| r.recall),
        mrr: avg(&|r| r.mrr),
        ndcg: avg(&|r| r.ndcg),
        span_iou: avg(&|r| r.span_iou),
        span_precision: avg(&|r| r.span_precision),
        answer_recall: avg(&|r| r.answer_recall),
        n,
        correct,
        accuracy: if n == 0 {
            0.0
        } else {
            correct as f64 / n as f64
        },
        accuracy_ci_low: ci.lower,
        accuracy_ci_high: ci.upper,
        // An invalid answer is a full tie by construction; it is counted as invalid only.
        ties: rows.iter().filter(|r| r.tied > 1 && r.invalid == 0).count(),
        invalid: rows.iter().filter(|r| r.invalid == 1).count(),
        chars_mean: mean(&|r| r.chars as f64),
        tokens_mean: if rows.iter().all(|r| r.tokens.is_some()) {
            avg(&|r| r.tokens.map(|t| t as f64))
        } else {
            None
        },
        words_mean: mean(&|r| r.words as f64),
        words_median: stats::median(&words).unwrap_or(0.0),
        words_p95: stats::p95(&words).unwrap_or(0.0),
        unique_words_mean: mean(&|r| r.unique_words as f64),
        evidence_n: ev.len(),
        evidence_hit_rate: (!ev.is_empty())
            .then(|| ev.iter().map(|&h| h as f64).sum::<f64>() / ev.len() as f64),
    }
}

/// The baseline cell for `c`: same dataset, retriever, k and reader, baseline strategy.
fn baseline_of<'a>(
    cfg: &RunConfig,
    cells: &'a [CellRecord],
    c: &CellRecord,
) -> Option<&'a CellRecord> {
    let base = cfg.baseline_strategy();
    cells.iter().find(|b| {
        b.cell.strategy == base
            && b.cell.dataset == c.cell.dataset
            && b.cell.retriever == c.cell.retriever
            && b.cell.k == c.cell.k
            && b.cell.reader == c.cell.reader
    })
}

/// A cell compared with its baseline cell on the same questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline cell's id.
    pub baseline_cell_id: String,
    /// Accuracy delta, McNemar, bootstrap interval and minimum detectable effect.
    pub paired: stats::PairedComparison,
    /// Holm-adjusted McNemar exact p over all comparisons of the run.
    pub holm_p: f64,
    /// Reduction of mean words retrieved against the baseline, in % (positive = fewer words).
    pub words_reduction_pct: Option<f64>,
    /// Paired bootstrap 95 % interval of that reduction; None when the baseline retrieved
    /// no words for some question (the ratio is then undefined on some resamples).
    pub words_reduction_ci: Option<stats::Interval>,
}

/// Compares every non-baseline cell with its baseline cell (same dataset, retriever, k and
/// reader) on the same questions, then Holm-adjusts the McNemar exact p-values over the family.
///
/// # Errors
/// Cells whose question lists differ (they cannot be paired), or statistics errors.
pub fn compare_cells(
    cfg: &RunConfig,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Result<HashMap<String, Comparison>> {
    let mut out: Vec<(String, Comparison)> = Vec::new();
    for c in cells {
        let Some(b) = baseline_of(cfg, cells, c).filter(|b| b.id != c.id) else {
            continue;
        };
        let (cr, br) = (&rows[&c.id], &rows[&b.id]);
        if cr.len() != br.len()
            || cr
                .iter()
                .zip(br)
                .any(|(x, y)| x.question_id != y.question_id)
        {
            bail!(
                "cells {} and {} were run on different questions; they cannot be paired",
                c.id,
                b.id
            );
        }
        let correct = |rs: &[QuestionRow]| rs.iter().map(|r| r.correct == 1).collect::<Vec<_>>();
        let words = |rs: &[QuestionRow]| rs.iter().map(|r| r.words as f64).collect::<Vec<_>>();
        let paired = stats::PairedComparison::new(
            &correct(br),
            &correct(cr),
            cfg.seed,
            cfg.bootstrap_resamples,
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
                paired,
                holm_p: 1.0,
                words_reduction_pct,
                words_reduction_ci,
            },
        ));
    }
    let ps: Vec<f64> = out.iter().map(|(_, c)| c.paired.mcnemar.exact_p).collect();
    for ((_, c), h) in out.iter_mut().zip(stats::holm(&ps)?) {
        c.holm_p = h;
    }
    Ok(out.into_iter().collect())
}

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
    cfg: &RunConfig,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
) -> Result<(String, HashMap<String, Comparison>)> {
    let comparisons = compare_cells(cfg, cells, rows)?;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "cell_id",
        "dataset",
        "strategy",
        "retriever",
        "k",
        "reader",
        "n",
        "correct",
        "accuracy",
        "accuracy_ci_low",
        "accuracy_ci_high",
        "ties",
        "invalid",
        "words_mean",
        "words_median",
        "words_p95",
        "unique_words_mean",
        "chars_mean",
        "tokens_mean",
        "tokens_by",
        "evidence_n",
        "evidence_hit_rate",
        "baseline_cell_id",
        "accuracy_delta_pts",
        "delta_ci_low",
        "delta_ci_high",
        "mcnemar_exact_p",
        "mcnemar_mid_p",
        "holm_p",
        "mde_pts",
        "words_reduction_pct",
        "words_reduction_ci_low",
        "words_reduction_ci_high",
        "recall_at_k",
        "mrr_at_k",
        "ndcg_at_k",
        "span_iou",
        "span_precision",
        "answer_recall_at_k",
        "accuracy_pts_per_1000_words",
    ])?;
    let mut md = format!(
        "# {}\n\nBaseline strategy: `{}`.\n",
        cfg.name,
        cfg.baseline_strategy()
    );
    let mut groups: Vec<(String, String)> = cells
        .iter()
        .map(|c| (c.cell.dataset.clone(), c.cell.reader.clone()))
        .collect();
    groups.sort();
    groups.dedup();
    let f = |x: Option<f64>, p: usize| x.map_or(String::new(), |v| format!("{v:.p$}"));
    for (ds, rd) in &groups {
        let _ = write!(
            md,
            "\n## {ds} · reader `{rd}`\n\n| strategy | retriever | k | n | accuracy [95% CI] | ties | invalid | words (mean) | unique words | chars (mean) | tokens (mean) | acc pts / 1k words | Δ acc pts [95% CI] | McNemar p | Holm p | words reduction % [95% CI] | recall@k | nDCG@k |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|\n"
        );
        for c in cells
            .iter()
            .filter(|c| &c.cell.dataset == ds && &c.cell.reader == rd)
        {
            let s = &c.summary;
            let cmp = comparisons.get(&c.id);
            let is_base = baseline_of(cfg, cells, c).is_some_and(|b| b.id == c.id);
            let ci = |i: Option<stats::Interval>, p: usize| {
                (f(i.map(|i| i.lower), p), f(i.map(|i| i.upper), p))
            };
            let (dlo, dhi) = ci(cmp.and_then(|m| m.paired.delta_ci), 3);
            let (wlo, whi) = ci(cmp.and_then(|m| m.words_reduction_ci), 3);
            w.write_record([
                c.id.clone(),
                c.cell.dataset.clone(),
                c.cell.strategy.clone(),
                c.cell.retriever.clone(),
                c.cell.k.to_string(),
                c.cell.reader.clone(),
                s.n.to_string(),
                s.correct.to_string(),
                format!("{:.6}", s.accuracy),
                format!("{:.6}", s.accuracy_ci_low),
                format!("{:.6}", s.accuracy_ci_high),
                s.ties.to_string(),
                s.invalid.to_string(),
                format!("{:.3}", s.words_mean),
                format!("{:.1}", s.words_median),
                format!("{:.1}", s.words_p95),
                format!("{:.3}", s.unique_words_mean),
                format!("{:.3}", s.chars_mean),
                f(s.tokens_mean, 3),
                c.tokens_by.clone(),
                s.evidence_n.to_string(),
                f(s.evidence_hit_rate, 6),
                cmp.map_or(String::new(), |m| m.baseline_cell_id.clone()),
                f(cmp.map(|m| m.paired.delta_points), 3),
                dlo,
                dhi,
                f(cmp.map(|m| m.paired.mcnemar.exact_p), 6),
                f(cmp.map(|m| m.paired.mcnemar.mid_p), 6),
                f(cmp.map(|m| m.holm_p), 6),
                f(cmp.and_then(|m| m.paired.mde_points), 3),
                f(cmp.and_then(|m| m.words_reduction_pct), 3),
                wlo,
                whi,
                f(s.recall, 6),
                f(s.mrr, 6),
                f(s.ndcg, 6),
                f(s.span_iou, 6),
                f(s.span_precision, 6),
                f(s.answer_recall, 6),
                f(acc_per_kw(s), 3),
            ])?;
            let (delta, p, holm, red) = match cmp {
                _ if is_base => (
                    "baseline".to_string(),
                    "–".into(),
                    "–".into(),
                    "baseline".into(),
                ),
                None => ("–".into(), "–".into(), "–".into(), "–".into()),
                Some(m) => (
                    format!(
                        "{:+.1} [{}]",
                        m.paired.delta_points,
                        m.paired.delta_ci.map_or("n too small".into(), |i| format!(
                            "{:+.1}, {:+.1}",
                            i.lower, i.upper
                        ))
                    ),
                    format!("{:.3}", m.paired.mcnemar.exact_p),
                    format!("{:.3}", m.holm_p),
                    m.words_reduction_pct
                        .map_or("–".into(), |r| match m.words_reduction_ci {
                            Some(i) => format!("{r:+.1} [{:+.1}, {:+.1}]", i.lower, i.upper),
                            None => format!("{r:+.1}"),
                        }),
                ),
            };
            let accuracy = if s.n == 0 {
                "–".to_string()
            } else {
                format!(
                    "{:.1} % [{:.1}, {:.1}]",
                    100.0 * s.accuracy,
                    100.0 * s.accuracy_ci_low,
                    100.0 * s.accuracy_ci_high
                )
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {accuracy} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {delta} | {p} | {holm} | {red} | {} | {} |",
                c.cell.strategy,
                c.cell.retriever,
                c.cell.k,
                s.n,
                s.ties,
                s.invalid,
                s.words_mean,
                s.unique_words_mean,
                s.chars_mean,
                s.tokens_mean.map_or("–".into(), |t| format!("{t:.1}")),
                acc_per_kw(s).map_or("–".into(), |v| format!("{v:.1}")),
                s.recall.map_or("–".into(), |h| format!("{h:.3}")),
                s.ndcg.map_or("–".into(), |h| format!("{h:.3}")),
            );
        }
    }
    let ear_cells: Vec<&CellRecord> = cells.iter().filter(|c| c.summary.ear.is_some()).collect();
    if !ear_cells.is_empty() {
        md.push_str(
            "\n## EAR anchor coverage\n\nExact anchor match: some question or option anchor equals a corpus anchor (questions matched only as phrases are not counted). Windows: candidate windows per question before and after deduplication, averaged over all questions (fallbacks count 0). Fallbacks: no anchor matched, the retriever's ranking of parents was used.\n\n| dataset | strategy | retriever | k | reader | exact anchor match | anchors / question | windows before dedup | windows after dedup | fallbacks |\n|---|---|---|---:|---|---:|---:|---:|---:|---:|\n",
        );
        for c in ear_cells {
            let e = c.summary.ear.as_ref().expect("filtered");
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {}/{} | {:.2} | {:.1} | {:.1} | {} |",
                c.cell.dataset,
                c.cell.strategy,
                c.cell.retriever,
                c.cell.k,
                c.cell.reader,
                e.exact_match,
                e.questions,
                e.anchors_mean,
                e.windows_before_mean,
                e.windows_after_mean,
                e.fallbacks
            );
        }
    }
    if cells.iter().any(|c| !c.summary.failures.is_empty()) {
        md.push_str(
            "\n## Failure attribution\n\nQuestions per first failing stage: extraction (EAR: no anchors), matching (EAR: no corpus occurrence), ranking (gold evidence not in the top-k), reading (evidence retrieved, answer wrong); no-evidence = wrong answer without gold evidence to attribute it; invalid-answer = the reader's reply could not be read as an answer (shown before the other stages: the measurement failed).\n\n| dataset | strategy | retriever | k | reader |",
        );
        // One column per stage, in `Failure::ALL` order.
        let stages = crate::run::Failure::ALL.map(crate::run::Failure::as_str);
        for st in stages {
            let _ = write!(md, " {st} |");
        }
        md.push_str("\n|---|---|---|---:|---|");
        md.push_str(&"---:|".repeat(stages.len()));
        md.push('\n');
        for c in cells {
            let _ = write!(
                md,
                "| {} | {} | {} | {} | {} |",
                c.cell.dataset, c.cell.strategy, c.cell.retriever, c.cell.k, c.cell.reader
            );
            for st in stages {
                let _ = write!(
                    md,
                    " {} |",
                    c.summary.failures.get(st).copied().unwrap_or(0)
                );
            }
            md.push('\n');
        }
    }
    let mde: Vec<f64> = comparisons
        .values()
        .filter_map(|c| c.paired.mde_points)
        .collect();
    let mut tokens_by: Vec<&str> = cells.iter().map(|c| c.tokens_by.as_str()).collect();
    tokens_by.sort_unstable();
    tokens_by.dedup();
    let _ = write!(
        md,
        "\nAccuracy: a tie between the best options counts as wrong (column `ties`), and so does an \
         invalid answer (column `invalid`: a reply that could not be read as an answer; its text \
         is in per_question.csv, column `reply`); Wilson 95 % intervals; – for a cell with no \
         questions. Words: whitespace-separated words of the retrieved passages, summed over the \
         top-k; unique words count overlapping spans once. Chars: Unicode scalar values retrieved; \
         tokens: counted with {}. Δ: against the baseline strategy's \
         cell with the same dataset, retriever, k and reader, on the same questions; paired \
         bootstrap 95 % intervals (B = {}, seed {}); McNemar exact p, Holm-adjusted over the {} \
         comparisons of this run.{}\n",
        tokens_by
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", "),
        cfg.bootstrap_resamples,
        cfg.seed,
        comparisons.len(),
        if mde.is_empty() {
            String::new()
        } else {
            format!(
                " Minimum detectable effect (α = 0.05, power 0.8, observed discordance): {:.1}–{:.1} points.",
                mde.iter().copied().fold(f64::INFINITY, f64::min),
                mde.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            )
        }
    );
    write_atomic(&dir.join("summary.csv"), &w.into_inner()?)?;
    write_atomic(&dir.join("summary.md"), md.as_bytes())?;
    Ok((md, comparisons))
}

/// Accuracy in points per 1,000 words retrieved (mean words, with multiplicity); None when
/// nothing was retrieved.
fn acc_per_kw(s: &CellSummary) -> Option<f64> {
    (s.words_mean > 0.0).then(|| 100.0 * s.accuracy / (s.words_mean / 1000.0))
}

/// Writes the per-question rows as Parquet (snappy-compressed; one column per
/// [`QuestionRow`] field, `evidence_hit` nullable) to `path`, atomically.
///
/// # Errors
/// Arrow/Parquet encoding or I/O errors naming the file.
pub fn write_parquet(path: &Path, rows: &[QuestionRow]) -> Result<()> {
    use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt64Array, UInt8Array};
    use std::sync::Arc;
    let s = |f: &dyn Fn(&QuestionRow) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    let o = |f: &dyn Fn(&QuestionRow) -> Option<f64>| -> ArrayRef {
        Arc::new(arrow_array::Float64Array::from(
            rows.iter().map(f).collect::<Vec<_>>(),
        ))
    };
    let u = |f: &dyn Fn(&QuestionRow) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)))
    };
    let uo = |f: &dyn Fn(&QuestionRow) -> Option<u64>| -> ArrayRef {
        Arc::new(UInt64Array::from(rows.iter().map(f).collect::<Vec<_>>()))
    };
    let batch = RecordBatch::try_from_iter([
        ("cell_id", s(&|r| &r.cell_id)),
        ("dataset", s(&|r| &r.dataset)),
        ("strategy", s(&|r| &r.strategy)),
        ("retriever", s(&|r| &r.retriever)),
        ("k", u(&|r| r.k as u64)),
        ("reader", s(&|r| &r.reader)),
        ("question_id", s(&|r| &r.question_id)),
        ("gold", u(&|r| r.gold as u64)),
        ("choice", u(&|r| r.choice as u64)),
        (
            "correct",
            Arc::new(UInt8Array::from_iter_values(rows.iter().map(|r| r.correct))) as ArrayRef,
        ),
        ("tied", u(&|r| r.tied as u64)),
        (
            "invalid",
            Arc::new(UInt8Array::from_iter_values(rows.iter().map(|r| r.invalid))) as ArrayRef,
        ),
        ("scores", s(&|r| &r.scores)),
        ("passages", s(&|r| &r.passages)),
        ("passage_scores", s(&|r| &r.passage_scores)),
        ("words", u(&|r| r.words as u64)),
        ("unique_words", u(&|r| r.unique_words as u64)),
        ("chars", u(&|r| r.chars as u64)),
        ("tokens", uo(&|r| r.tokens.map(|v| v as u64))),
        (
            "evidence_hit",
            Arc::new(UInt8Array::from(
                rows.iter().map(|r| r.evidence_hit).collect::<Vec<_>>(),
            )) as ArrayRef,
        ),
        ("recall", o(&|r| r.recall)),
        ("mrr", o(&|r| r.mrr)),
        ("ndcg", o(&|r| r.ndcg)),
        ("span_recall", o(&|r| r.span_recall)),
        ("span_precision", o(&|r| r.span_precision)),
        ("span_iou", o(&|r| r.span_iou)),
        ("answer_recall", o(&|r| r.answer_recall)),
        ("failure", s(&|r| &r.failure)),
        ("anchors", uo(&|r| r.anchors.map(|v| v as u64))),
        ("anchor_match", uo(&|r| r.anchor_match.map(u64::from))),
        (
            "windows_before",
            uo(&|r| r.windows_before.map(|v| v as u64)),
        ),
        ("windows_after", uo(&|r| r.windows_after.map(|v| v as u64))),
        ("fallback", uo(&|r| r.fallback.map(u64::from))),
        ("reply", s(&|r| &r.reply)),
    ])
    .context("building the per-question table")?;
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_created_by(format!("chunkbench {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut buf = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), Some(props))?;
    w.write(&batch)?;
    w.close()?;
    write_atomic(path, &buf).with_context(|| format!("writing {}", path.display()))
}

/// Writes `chunk_stats.csv`: per (dataset, strategy) the chunk count, words per chunk (min,
/// median, p95, max, mean) and the size-limit counters of [`crate::strategies::StrategyStats`]
/// (units split at `size`, chunks over `size`, embedded units truncated, chunks over the
/// embedder's window — empty when no cell of the strategy embeds passages).
///
/// # Errors
/// I/O errors naming the file.
pub fn write_chunk_stats(dir: &Path, lengths: &[crate::plots::ChunkLengths]) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "dataset",
        "strategy",
        "chunks",
        "words_min",
        "words_median",
        "words_p95",
        "words_max",
        "words_mean",
        "forced_splits",
        "merges",
        "embedded_units",
        "units_split_before_embedding",
        "degenerate_vectors",
        "units_split_at_size",
        "over_size",
        "embedded_units_truncated",
        "over_embedder_window",
    ])?;
    for l in lengths {
        let xs: Vec<f64> = l.words.iter().map(|&w| w as f64).collect();
        let f = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.1}"));
        w.write_record([
            l.dataset.clone(),
            l.strategy.clone(),
            l.words.len().to_string(),
            f(xs.iter().copied().reduce(f64::min)),
            f(stats::median(&xs)),
            f(stats::p95(&xs)),
            f(xs.iter().copied().reduce(f64::max)),
            f(stats::mean(&xs)),
            l.stats.forced_splits.to_string(),
            l.stats.merges.to_string(),
            l.stats.embedded_units.to_string(),
            l.stats.units_split_before_embedding.to_string(),
            l.stats.degenerate_vectors.to_string(),
            l.stats.units_split_at_size.to_string(),
            l.stats.over_size.to_string(),
            l.stats.embedded_units_truncated.to_string(),
            l.stats
                .over_embedder_window
                .map_or(String::new(), |n| n.to_string()),
        ])?;
    }
    write_atomic(&dir.join("chunk_stats.csv"), &w.into_inner()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parquet_round_trips() {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let row = QuestionRow {
            cell_id: "c".into(),
            dataset: "d".into(),
            strategy: "s".into(),
            retriever: "r".into(),
            k: 3,
            reader: "l".into(),
            question_id: "q1".into(),
            gold: 1,
            choice: 1,
            correct: 1,
            tied: 1,
            invalid: 0,
            scores: "0.1;0.9".into(),
            passages: "d:0-10".into(),
            passage_scores: "1.0".into(),
            words: 2,
            unique_words: 2,
            chars: 9,
            tokens: Some(3),
            evidence_hit: None,
            recall: None,
            mrr: None,
            ndcg: None,
            span_recall: None,
            span_precision: None,
            span_iou: None,
            answer_recall: None,
            failure: "correct".into(),
            anchors: Some(3),
            anchor_match: Some(1),
            windows_before: Some(5),
            windows_after: Some(2),
            fallback: Some(0),
            reply: "max=[0.1, 0.9]".into(),
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.parquet");
        write_parquet(
            &p,
            &[
                row.clone(),
                QuestionRow {
                    evidence_hit: Some(1),
                    ..row
                },
            ],
        )
        .unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&p).unwrap())
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
        assert_eq!(batches[0].num_columns(), 34);
        assert_eq!(batches[0].column(19).null_count(), 1, "evidence_hit");
    }

    #[test]
    fn empty_cell_has_no_nan() {
        let s = summarize(&[]);
        assert_eq!(s.n, 0);
        assert!(s.accuracy == 0.0 && s.words_mean == 0.0 && s.evidence_hit_rate.is_none());
    }
}
