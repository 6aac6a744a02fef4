//! Records as tables: a [`Column`] table per record ([`question_columns`],
//! [`summary_columns`]) and the one CSV and Arrow/Parquet writer that walks it, and reading
//! `cells/ID.csv` back.

use crate::*;
use anyhow::{Context, Result};
use retriever::metrics::METRICS;
use retriever::records::FieldKind;
use serde::{Deserialize, Serialize};

/// How one column of a record is read from it; the variant is the column's type.
///
/// CSV text: `Text` as is; `Count`/`Flag` in decimal; `Opt*` empty when absent; `Real` in the
/// shortest round-trip form (ryu, as serde's CSV writer); `Reals` joined by `;` with 6
/// decimals; `Passages` as their ids joined by a space. Arrow (Parquet): Utf8, UInt64, UInt8, nullable UInt64 /
/// UInt8 / Float64, List<Float64>, List<Utf8>.
pub enum Getter<R> {
    /// A text column.
    Text(fn(&R) -> &str),
    /// A count (words, ranks, option indices).
    Count(fn(&R) -> u64),
    /// A 0/1 flag.
    Flag(fn(&R) -> u8),
    /// A count that may be absent (e.g. EAR counters on other strategies).
    OptCount(fn(&R) -> Option<u64>),
    /// A 0/1 flag that may be absent (e.g. `evidence_hit` without evidence).
    OptFlag(fn(&R) -> Option<u8>),
    /// A real number that may be absent (metrics without evidence).
    OptReal(fn(&R) -> Option<f64>),
    /// A list of reals (scores).
    Reals(fn(&R) -> &[f64]),
    /// A list of passages, written as their ids (`DOC:START-END`).
    Passages(fn(&R) -> &[PassageSpan]),
    /// A real number written with a fixed number of decimals (summary figures), empty when
    /// absent; Float64 in Arrow.
    Fixed(usize, fn(&R) -> Option<f64>),
    /// A registered metric's value (`index` into [`METRICS`]), read as `get(row, index)`;
    /// written in the shortest round-trip form (`decimals` `None`) or with that many
    /// decimals, empty when absent; Float64 in Arrow.
    Metric {
        /// Position in [`METRICS`].
        index: usize,
        /// Fixed decimals, or `None` for the shortest round-trip text.
        decimals: Option<usize>,
        /// Reads the value at `index` from a record.
        get: fn(&R, usize) -> Option<f64>,
    },
    /// A strategy record's field (`index` into [`retriever::records::fields`]), read as
    /// `get(row, index)`: a count or a 0/1 flag, empty when absent; nullable UInt64 or UInt8
    /// in Arrow.
    Record {
        /// Position in [`retriever::records::fields`].
        index: usize,
        /// A 0/1 flag (UInt8), else a count (UInt64).
        flag: bool,
        /// Reads the value at `index` from a record.
        get: fn(&R, usize) -> Option<u64>,
    },
}

/// One column of a record table: its name (the CSV header and the Parquet field) and how it
/// is read from a record.
pub struct Column<R> {
    /// Column name, equal to the serde field name of the record (or the metric's name).
    pub name: &'static str,
    /// How the value is read, and so its type.
    pub get: Getter<R>,
}

impl<R> Clone for Getter<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Getter<R> {}

impl<R> Column<R> {
    /// The same column (fn pointers are `Copy` whatever `R` is).
    pub fn copy(&self) -> Self {
        Column {
            name: self.name,
            get: self.get,
        }
    }
}

/// One entry of a column table: `col!(name, Kind, getter)` (a [`Getter`] variant, in scope
/// through `use Getter::*`) or `col!(name, DECIMALS, getter)` for a [`Getter::Fixed`] figure.
macro_rules! col {
    ($name:ident, $p:literal, $get:expr) => {
        Column {
            name: stringify!($name),
            get: Getter::Fixed($p, $get),
        }
    };
    ($name:ident, $kind:ident, $get:expr) => {
        Column {
            name: stringify!($name),
            get: $kind($get),
        }
    };
}

/// `head`, one column per metric of [`METRICS`] (`metric(index)`), then `tail`: the layout of
/// every record table that carries the metrics.
pub(crate) fn around_metrics<R>(
    head: &[Column<R>],
    metric: impl Fn(usize) -> Column<R>,
    tail: &[Column<R>],
) -> Vec<Column<R>> {
    head.iter()
        .map(Column::copy)
        .chain((0..METRICS.len()).map(metric))
        .chain(tail.iter().map(Column::copy))
        .collect()
}

/// The columns of [`QuestionRow`], in file order: the one schema of `cells/ID.csv`,
/// `per_question.csv` and `per_question.parquet`: [`QUESTION_COLUMNS_HEAD`], one column per
/// metric of [`METRICS`] (its name), `failure`, one column per field of the strategy records
/// of [`RECORDS`] (its name), then `reply`.
pub fn question_columns() -> Vec<Column<QuestionRow>> {
    let mut columns = around_metrics(
        QUESTION_COLUMNS_HEAD,
        |index| Column {
            name: METRICS[index].name,
            get: Getter::Metric {
                index,
                decimals: None,
                get: |r: &QuestionRow, i| r.metrics.at(i),
            },
        },
        &[FAILURE_COLUMN],
    );
    columns.extend(
        retriever::records::fields()
            .enumerate()
            .map(|(index, (_, field))| Column {
                name: field.name,
                get: Getter::Record {
                    index,
                    flag: field.kind == FieldKind::Flag,
                    get: |r: &QuestionRow, i| r.records.at(i),
                },
            }),
    );
    columns.push(REPLY_COLUMN);
    columns
}

/// The columns of [`QuestionRow`] before its metrics: what was asked, answered and retrieved.
pub const QUESTION_COLUMNS_HEAD: &[Column<QuestionRow>] = {
    use Getter::*;
    &[
        col!(cell_id, Text, |r| &r.cell_id),
        col!(dataset, Text, |r| &r.dataset),
        col!(strategy, Text, |r| &r.strategy),
        col!(retriever, Text, |r| &r.retriever),
        col!(k, Count, |r| r.k as u64),
        col!(reader, Text, |r| &r.reader),
        col!(question_id, Text, |r| &r.question_id),
        col!(question_doc, Text, |r| &r.question_doc),
        col!(subject, Text, |r| &r.subject),
        col!(gold, OptCount, |r| r.gold.map(|v| v as u64)),
        col!(choice, OptCount, |r| r.choice.map(|v| v as u64)),
        col!(correct, OptFlag, |r| r.correct),
        col!(tied, Count, |r| r.tied as u64),
        col!(invalid, Flag, |r| r.invalid),
        col!(scores, Reals, |r| &r.scores),
        col!(tie_break, Reals, |r| &r.tie_break),
        col!(passages, Passages, |r| &r.passages),
        col!(passage_scores, Reals, |r| &r.passage_scores),
        col!(words, Count, |r| r.words as u64),
        col!(unique_words, Count, |r| r.unique_words as u64),
        col!(chars, Count, |r| r.chars as u64),
        col!(tokens, OptCount, |r| r.tokens.map(|v| v as u64)),
        col!(evidence_hit, OptFlag, |r| r.evidence_hit),
    ]
};

/// The column of [`QuestionRow`] after its metrics: failure attribution.
pub(crate) const FAILURE_COLUMN: Column<QuestionRow> = {
    use Getter::*;
    col!(failure, Text, |r| r.failure.map_or("", Failure::as_str))
};

/// The last column of [`QuestionRow`], after the strategy records: the reader's reply.
pub(crate) const REPLY_COLUMN: Column<QuestionRow> = {
    use Getter::*;
    col!(reply, Text, |r| &r.reply)
};

/// One row of `summary.csv`: a cell's record and, for a non-baseline cell, its comparison
/// with the baseline cell.
#[derive(Debug, Clone)]
pub struct SummaryRow {
    /// The cell.
    pub record: CellRecord,
    /// Its comparison with the baseline cell (None for the baseline and unpaired cells).
    pub comparison: Option<Comparison>,
    /// Its planned comparison on the primary metric, with the verdict (None for the baseline,
    /// unpaired cells and a reader's duplicate of a retrieval comparison).
    pub planned: Option<Planned>,
}

/// A planned comparison of the run's primary metric: a cell against its baseline cell, one
/// member of the Holm family (docs/reference.md §5 "The verdict").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Planned {
    /// The primary metric: `accuracy` or a name of [`METRICS`].
    pub metric: String,
    /// The baseline cell's id.
    pub baseline_cell_id: String,
    /// The baseline's mean of the metric over the paired questions (scale 0–1).
    pub baseline_mean: f64,
    /// The cell's mean over the same questions (scale 0–1).
    pub mean: f64,
    /// Non-inferiority / equivalence margin (scale 0–1; 0 = none).
    pub margin: f64,
    /// The resampling unit: `question`, `document` or `subject`.
    pub resample: String,
    /// Planned comparisons in the family (the Holm family's size).
    pub family_size: usize,
    /// Intervals, p-values, verdict and questions needed (scale 0–1).
    pub comparison: stats::PlannedComparison,
}

impl SummaryRow {
    /// Accuracy in points per 1,000 words retrieved (mean words, with multiplicity); None
    /// when nothing was retrieved.
    pub fn accuracy_pts_per_1000_words(&self) -> Option<f64> {
        let s = &self.record.summary;
        let acc = s.accuracy?;
        (s.words_mean > 0.0).then(|| 100.0 * acc / (s.words_mean / 1000.0))
    }
}

/// The columns of `summary.csv`, in file order (figures rounded as written: accuracy and
/// p-values 6 decimals, points and words 3, medians 1).
///
/// [`SUMMARY_COLUMNS_HEAD`], the mean of each metric of [`METRICS`] (its `summary_column`, 6
/// decimals), then [`SUMMARY_COLUMNS_TAIL`].
pub fn summary_columns() -> Vec<Column<SummaryRow>> {
    around_metrics(
        SUMMARY_COLUMNS_HEAD,
        |index| Column {
            name: METRICS[index].summary_column,
            get: Getter::Metric {
                index,
                decimals: Some(6),
                get: |r: &SummaryRow, i| r.record.summary.metrics.at(i),
            },
        },
        SUMMARY_COLUMNS_TAIL,
    )
}

/// The columns of `summary.csv` before the metric means: the cell, its accuracy, costs and
/// comparison with the baseline.
pub const SUMMARY_COLUMNS_HEAD: &[Column<SummaryRow>] = {
    use Getter::*;
    &[
        col!(cell_id, Text, |r| &r.record.id),
        col!(dataset, Text, |r| &r.record.cell.dataset),
        col!(strategy, Text, |r| &r.record.cell.strategy),
        col!(retriever, Text, |r| &r.record.cell.retriever),
        col!(k, Count, |r| r.record.cell.k as u64),
        col!(budget, OptCount, |r| r
            .record
            .cell
            .budget
            .map(|b| b.size as u64)),
        col!(budget_unit, Text, |r| r
            .record
            .cell
            .budget
            .map_or("", |b| b.unit.as_str())),
        col!(budget_fill, Text, |r| r.record.cell.budget.map_or(
            "",
            |b| match b.fill {
                Fill::Cut => "cut",
                Fill::Whole => "whole",
            }
        )),
        col!(reader, Text, |r| &r.record.cell.reader),
        col!(n, Count, |r| r.record.summary.n as u64),
        col!(correct, Count, |r| r.record.summary.correct as u64),
        col!(accuracy, 6, |r| r.record.summary.accuracy),
        col!(accuracy_ci_low, 6, |r| r.record.summary.accuracy_ci_low),
        col!(accuracy_ci_high, 6, |r| r.record.summary.accuracy_ci_high),
        col!(ties, Count, |r| r.record.summary.ties as u64),
        col!(invalid, Count, |r| r.record.summary.invalid as u64),
        col!(words_mean, 3, |r| Some(r.record.summary.words_mean)),
        col!(words_median, 1, |r| Some(r.record.summary.words_median)),
        col!(words_p95, 1, |r| Some(r.record.summary.words_p95)),
        col!(unique_words_mean, 3, |r| Some(
            r.record.summary.unique_words_mean
        )),
        col!(chars_mean, 3, |r| Some(r.record.summary.chars_mean)),
        col!(tokens_mean, 3, |r| r.record.summary.tokens_mean),
        col!(tokens_by, Text, |r| &r.record.tokens_by),
        col!(evidence_n, Count, |r| r.record.summary.evidence_n as u64),
        col!(evidence_hit_rate, 6, |r| r.record.summary.evidence_hit_rate),
        col!(baseline_cell_id, Text, |r| r
            .comparison
            .as_ref()
            .map_or("", |m| &m.baseline_cell_id)),
        col!(accuracy_delta_pts, 3, |r| r
            .comparison
            .as_ref()
            .map(|m| m.paired.delta_points)),
        col!(delta_ci_low, 3, |r| r
            .comparison
            .as_ref()
            .and_then(|m| m.paired.delta_ci)
            .map(|i| i.lower)),
        col!(delta_ci_high, 3, |r| r
            .comparison
            .as_ref()
            .and_then(|m| m.paired.delta_ci)
            .map(|i| i.upper)),
        col!(mcnemar_exact_p, 6, |r| r
            .comparison
            .as_ref()
            .map(|m| m.paired.mcnemar.exact_p)),
        col!(mcnemar_mid_p, 6, |r| r
            .comparison
            .as_ref()
            .map(|m| m.paired.mcnemar.mid_p)),
        col!(holm_p, 6, |r| r.comparison.as_ref().and_then(|m| m.holm_p)),
        col!(mde_pts, 3, |r| r
            .comparison
            .as_ref()
            .and_then(|m| m.paired.mde_points)),
        col!(words_reduction_pct, 3, |r| r
            .comparison
            .as_ref()
            .and_then(|m| m.words_reduction_pct)),
        col!(words_reduction_ci_low, 3, |r| r
            .comparison
            .as_ref()
            .and_then(|m| m.words_reduction_ci)
            .map(|i| i.lower)),
        col!(words_reduction_ci_high, 3, |r| r
            .comparison
            .as_ref()
            .and_then(|m| m.words_reduction_ci)
            .map(|i| i.upper)),
    ]
};

/// The columns of `summary.csv` after the metric means.
pub const SUMMARY_COLUMNS_TAIL: &[Column<SummaryRow>] = {
    use Getter::*;
    &[
        col!(accuracy_pts_per_1000_words, 3, |r| r
            .accuracy_pts_per_1000_words()),
        col!(primary_metric, Text, |r| r
            .planned
            .as_ref()
            .map_or("", |p| &p.metric)),
        col!(primary_baseline_pts, 3, |r| r
            .planned
            .as_ref()
            .map(|p| 100.0 * p.baseline_mean)),
        col!(primary_pts, 3, |r| r
            .planned
            .as_ref()
            .map(|p| 100.0 * p.mean)),
        col!(primary_delta_pts, 3, |r| r
            .planned
            .as_ref()
            .map(|p| 100.0 * p.comparison.estimate)),
        col!(primary_ci_low_pts, 3, |r| r
            .planned
            .as_ref()
            .and_then(|p| p.comparison.interval)
            .map(|i| 100.0 * i.lower)),
        col!(primary_ci_high_pts, 3, |r| r
            .planned
            .as_ref()
            .and_then(|p| p.comparison.interval)
            .map(|i| 100.0 * i.upper)),
        col!(primary_p, 6, |r| r.planned.as_ref().map(|p| p.comparison.p)),
        col!(primary_holm_p, 6, |r| r
            .planned
            .as_ref()
            .map(|p| p.comparison.holm_p)),
        col!(primary_sim_ci_low_pts, 3, |r| r
            .planned
            .as_ref()
            .and_then(|p| p.comparison.simultaneous)
            .map(|i| 100.0 * i.lower)),
        col!(primary_sim_ci_high_pts, 3, |r| r
            .planned
            .as_ref()
            .and_then(|p| p.comparison.simultaneous)
            .map(|i| 100.0 * i.upper)),
        col!(verdict, Text, |r| r.planned.as_ref().map_or("", |p| {
            if p.comparison.exploratory {
                "exploratory"
            } else {
                p.comparison.verdict.as_str()
            }
        })),
        col!(p_settled, OptFlag, |r| r
            .planned
            .as_ref()
            .map(|p| u8::from(p.comparison.p_settled))),
        col!(margin_pts, 3, |r| r
            .planned
            .as_ref()
            .map(|p| 100.0 * p.margin)),
        col!(questions_needed, OptCount, |r| r
            .planned
            .as_ref()
            .and_then(|p| p.comparison.questions_needed)
            .and_then(|q| q.n)),
        col!(questions_needed_for, Text, |r| r
            .planned
            .as_ref()
            .and_then(|p| p.comparison.questions_needed.as_ref())
            .map_or("", |q| q.claim.as_str())),
        col!(design_effect, 3, |r| r
            .planned
            .as_ref()
            .and_then(|p| p.comparison.design_effect)),
        col!(resample, Text, |r| r
            .planned
            .as_ref()
            .map_or("", |p| &p.resample)),
        col!(clusters, OptCount, |r| r
            .planned
            .as_ref()
            .map(|p| p.comparison.clusters as u64)),
        col!(family_size, OptCount, |r| r
            .planned
            .as_ref()
            .map(|p| p.family_size as u64)),
        col!(holm_family, OptCount, |r| r
            .planned
            .as_ref()
            .map(|p| p.comparison.holm_family as u64)),
    ]
};

/// Rounds a score to the 6 decimals it is stored with, so that a row computed now and the
/// same row read back from its CSV are equal.
pub fn round6(x: f64) -> f64 {
    format!("{x:.6}").parse().unwrap_or(x)
}

/// Passage ids `DOC:START-END`, space-separated (the CSV form of a passage list).
pub(crate) fn join_passages(spans: &[PassageSpan]) -> String {
    spans
        .iter()
        .map(PassageSpan::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn join_reals(xs: &[f64]) -> String {
    xs.iter()
        .map(|x| format!("{x:.6}"))
        .collect::<Vec<_>>()
        .join(";")
}

pub(crate) fn field_text<R>(get: &Getter<R>, r: &R) -> String {
    let opt = |x: Option<String>| x.unwrap_or_default();
    match get {
        Getter::Text(f) => f(r).to_string(),
        Getter::Count(f) => f(r).to_string(),
        Getter::Flag(f) => f(r).to_string(),
        Getter::OptCount(f) => opt(f(r).map(|v| v.to_string())),
        Getter::OptFlag(f) => opt(f(r).map(|v| v.to_string())),
        Getter::OptReal(f) => opt(f(r).map(|v| ryu::Buffer::new().format(v).to_string())),
        Getter::Reals(f) => join_reals(f(r)),
        Getter::Passages(f) => join_passages(f(r)),
        Getter::Fixed(p, f) => opt(f(r).map(|v| format!("{v:.p$}"))),
        Getter::Metric {
            index,
            decimals,
            get,
        } => opt(get(r, *index).map(|v| match decimals {
            Some(p) => format!("{v:.p$}"),
            None => ryu::Buffer::new().format(v).to_string(),
        })),
        Getter::Record { index, get, .. } => opt(get(r, *index).map(|v| v.to_string())),
    }
}

/// A record table as CSV bytes (header first) following `columns`.
///
/// # Errors
/// Only the CSV writer's own errors (none for in-memory buffers in practice).
pub fn table_csv<R>(columns: &[Column<R>], rows: &[R]) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(columns.iter().map(|c| c.name))?;
    for r in rows {
        w.write_record(columns.iter().map(|c| field_text(&c.get, r)))?;
    }
    w.into_inner().context("csv buffer")
}

/// Per-question rows as CSV bytes ([`question_columns`]).
///
/// # Errors
/// As [`table_csv`].
pub fn rows_csv(rows: &[QuestionRow]) -> Result<Vec<u8>> {
    table_csv(&question_columns(), rows)
}

/// Reads per-question rows from CSV bytes by column name: the record fields through serde,
/// the metric columns of [`METRICS`] by their names (a metric whose column the file lacks,
/// written by an older version, reads as empty).
///
/// # Errors
/// A row that does not parse, naming `what` (the file), the line and the column.
pub fn read_rows_csv(bytes: &[u8], what: &str) -> Result<Vec<QuestionRow>> {
    let mut reader = csv::Reader::from_reader(bytes);
    let headers = reader
        .headers()
        .with_context(|| format!("cannot parse {what}"))?
        .clone();
    let metric_at: Vec<(usize, usize)> = METRICS
        .iter()
        .enumerate()
        .filter_map(|(i, m)| headers.iter().position(|h| h == m.name).map(|p| (i, p)))
        .collect();
    let record_at: Vec<(usize, usize)> = retriever::records::fields()
        .enumerate()
        .filter_map(|(i, (_, f))| headers.iter().position(|h| h == f.name).map(|p| (i, p)))
        .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("cannot parse {what}"))?;
        let mut row: QuestionRow = record
            .deserialize(Some(&headers))
            .with_context(|| format!("cannot parse {what}"))?;
        for &(i, p) in &metric_at {
            let text = record.get(p).unwrap_or("");
            let value = if text.is_empty() {
                None
            } else {
                Some(
                    text.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .with_context(|| {
                            format!(
                        "cannot parse {what}: line {}, column `{}`: `{text}` is not a number \
                         (metric values are numbers, or empty where undefined)",
                        record.position().map_or(0, |p| p.line()),
                        METRICS[i].name
                    )
                        })?,
                )
            };
            row.metrics.set(i, value);
        }
        for &(i, p) in &record_at {
            let text = record.get(p).unwrap_or("");
            let value = if text.is_empty() {
                None
            } else {
                Some(text.parse::<u64>().ok().with_context(|| {
                    format!(
                        "cannot parse {what}: line {}, column `{}`: `{text}` is not a count \
                         (strategy record values are whole numbers, or empty)",
                        record.position().map_or(0, |p| p.line()),
                        headers.get(p).unwrap_or("")
                    )
                })?)
            };
            row.records.set(i, value);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// One column of a record table as a polars column: texts as String, counts as UInt64, flags
/// as UInt8, reals as Float64 (nullable where the getter's value is optional), lists as
/// List<Float64> and List<String>.
pub(crate) fn polars_column<R>(name: &str, get: &Getter<R>, rows: &[R]) -> polars::prelude::Column {
    use polars::prelude::*;
    let name = PlSmallStr::from(name);
    let series = match get {
        Getter::Text(f) => Series::new(name, rows.iter().map(f).collect::<Vec<&str>>()),
        Getter::Count(f) => Series::new(name, rows.iter().map(f).collect::<Vec<u64>>()),
        Getter::Flag(f) => Series::new(name, rows.iter().map(f).collect::<Vec<u8>>()),
        Getter::OptCount(f) => Series::new(name, rows.iter().map(f).collect::<Vec<Option<u64>>>()),
        Getter::OptFlag(f) => Series::new(name, rows.iter().map(f).collect::<Vec<Option<u8>>>()),
        Getter::OptReal(f) | Getter::Fixed(_, f) => {
            Series::new(name, rows.iter().map(f).collect::<Vec<Option<f64>>>())
        }
        Getter::Metric { index, get, .. } => Series::new(
            name,
            rows.iter()
                .map(|r| get(r, *index))
                .collect::<Vec<Option<f64>>>(),
        ),
        Getter::Record {
            index,
            flag: true,
            get,
        } => Series::new(
            name,
            rows.iter()
                .map(|r| get(r, *index).map(|v| v as u8))
                .collect::<Vec<Option<u8>>>(),
        ),
        Getter::Record {
            index,
            flag: false,
            get,
        } => Series::new(
            name,
            rows.iter()
                .map(|r| get(r, *index))
                .collect::<Vec<Option<u64>>>(),
        ),
        Getter::Reals(f) => list_series(
            name,
            rows.iter().map(|r| Series::new(PlSmallStr::EMPTY, f(r))),
            DataType::Float64,
        ),
        Getter::Passages(f) => list_series(
            name,
            rows.iter().map(|r| {
                let ids: Vec<String> = f(r).iter().map(ToString::to_string).collect();
                Series::new(PlSmallStr::EMPTY, ids)
            }),
            DataType::String,
        ),
    };
    series.into()
}

/// A list column from one inner series per row, typed List<`inner`> also when there are no
/// rows (an empty table has no values to type the list by).
pub(crate) fn list_series(
    name: polars::prelude::PlSmallStr,
    lists: impl Iterator<Item = polars::prelude::Series>,
    inner: polars::prelude::DataType,
) -> polars::prelude::Series {
    use polars::prelude::*;
    let lists: Vec<Series> = lists.collect();
    if lists.is_empty() {
        Series::new_empty(name, &DataType::List(Box::new(inner)))
    } else {
        Series::new(name, lists)
    }
}

/// A record table as Parquet bytes (snappy), one column per entry of `columns`, lists as
/// Parquet lists; written by polars, the workspace's one Arrow/Parquet stack.
///
/// # Errors
/// Parquet encoding errors.
pub fn table_parquet<R>(columns: &[Column<R>], rows: &[R]) -> Result<Vec<u8>> {
    use polars::prelude::{DataFrame, ParquetCompression, ParquetWriter};
    let cols = columns
        .iter()
        .map(|c| polars_column(c.name, &c.get, rows))
        .collect();
    let mut df = DataFrame::new(rows.len(), cols).context("building the Parquet table")?;
    let mut buf = Vec::new();
    ParquetWriter::new(&mut buf)
        .with_compression(ParquetCompression::Snappy)
        .finish(&mut df)
        .context("encoding Parquet")?;
    Ok(buf)
}

/// Writes per-question rows as Parquet ([`question_columns`]) to `path`, atomically.
///
/// # Errors
/// Encoding or I/O errors naming the file.
pub fn write_rows_parquet(path: &std::path::Path, rows: &[QuestionRow]) -> Result<()> {
    let bytes = table_parquet(&question_columns(), rows)?;
    datasets::io::write_atomic(path, &bytes).with_context(|| format!("writing {}", path.display()))
}
