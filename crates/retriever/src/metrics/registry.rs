//! The per-question retrieval metrics, each declared once.
//!
//! A [`Metric`] carries everything the rest of chunkbench needs to know about it: its column
//! name, its label in the reports, a one-line doc, the unit it measures in, its direction,
//! which questions it is defined for, how a question's value is computed from the question's
//! retrieval ([`ScoreInput`]) and how a cell aggregates it. The runner computes every entry of
//! [`METRICS`] for every question ([`MetricValues::compute`]); `per_question.csv` and
//! `.parquet`, the cell records, `summary.csv`, summary.md's retrieval table, the paired
//! retrieval comparisons, `chunkbench ls metrics` and the README's metrics table all iterate
//! [`METRICS`], in its order.
//!
//! **Adding a metric** is one new file in this folder defining a `pub(super) const METRIC:
//! Metric` (and its tests), plus its line in [`METRICS`] (and the `mod` line beside it). Its
//! column is appended after the existing ones, so earlier columns keep their positions.

use super::{
    any_answer_recall_at_k, rank_metrics, CharMap, DocSpan, RankMetrics, SpanMetrics, WordMap,
};
use std::cell::OnceCell;

mod precision_at_k;

/// What a metric measures in; summary.md's retrieval table groups its columns by unit, in this
/// order (declaration order within a unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unit {
    /// Passages by rank (recall@k, MRR, nDCG@k): a passage is relevant when it overlaps
    /// gold evidence.
    Passages,
    /// Words ([`chunker::word_spans`]) of the evidence and of the retrieved passages.
    Words,
    /// Characters (Unicode scalar values) of the evidence and of the retrieved passages.
    Chars,
    /// Answer strings found in the retrieved text.
    AnswerStrings,
}

impl Unit {
    /// The unit as `ls metrics` and the README name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Passages => "passages",
            Unit::Words => "words",
            Unit::Chars => "characters",
            Unit::AnswerStrings => "answer strings",
        }
    }
}

/// Which questions a metric has a value for (elsewhere it is empty, and left out of means and
/// tests, as pytrec_eval leaves out queries without qrels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppliesTo {
    /// Questions with non-empty gold evidence spans.
    Evidence,
    /// Questions with evidence, in a cell whose strategy has an index of passages (not the
    /// oracle or closed-book strategies).
    EvidenceWithIndex,
    /// Questions with an answer string (their `answers`, else their gold option's text).
    AnswerStrings,
}

impl AppliesTo {
    /// How `ls metrics` and the README say it.
    pub fn as_str(self) -> &'static str {
        match self {
            AppliesTo::Evidence => "with evidence",
            AppliesTo::EvidenceWithIndex => "with evidence, strategies with an index",
            AppliesTo::AnswerStrings => "with an answer string",
        }
    }
}

/// How a cell aggregates a metric over its questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// The mean over the questions where the metric is defined; reports add the population
    /// standard deviation and a percentile bootstrap 95 % interval of the mean, and compare
    /// cells with a paired bootstrap interval of the difference and a sign-flip permutation
    /// test (Holm-adjusted), docs/reference.md §5.
    Mean,
}

/// One per-question retrieval metric (module documentation).
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Column name in `per_question.csv` and key in the cell record's summary (snake_case).
    pub name: &'static str,
    /// Column name in `summary.csv` (the mean over the cell's questions).
    pub summary_column: &'static str,
    /// Header in summary.md and report.html.
    pub label: &'static str,
    /// One line: what the value is, and the source it follows.
    pub doc: &'static str,
    /// What it measures in.
    pub unit: Unit,
    /// True when a higher value is better.
    pub higher_is_better: bool,
    /// Which questions have a value.
    pub applies: AppliesTo,
    /// How a cell aggregates it.
    pub aggregate: Aggregate,
    /// The value for one question, in [0, 1] unless the doc says otherwise; `None` where the
    /// metric is not defined ([`Metric::applies`]). Never NaN.
    pub compute: fn(&ScoreInput<'_>) -> Option<f64>,
}

impl Metric {
    /// Which values are better: `higher` or `lower` (as `ls metrics` and the README say it).
    pub fn better(&self) -> &'static str {
        if self.higher_is_better {
            "higher"
        } else {
            "lower"
        }
    }
}

/// Every per-question retrieval metric, in column order.
pub const METRICS: &[Metric] = &[
    RECALL,
    MRR,
    NDCG,
    SPAN_RECALL,
    SPAN_PRECISION,
    SPAN_IOU,
    SPAN_RECALL_CHARS,
    SPAN_PRECISION_CHARS,
    SPAN_IOU_CHARS,
    PRECISION_OMEGA,
    PRECISION_OMEGA_CHARS,
    ANSWER_RECALL,
    precision_at_k::METRIC,
];

/// The position of the metric named `name` in [`METRICS`].
pub fn index_of(name: &str) -> Option<usize> {
    METRICS.iter().position(|m| m.name == name)
}

/// The metric named `name`.
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// [`METRICS`] in the order of summary.md's retrieval table: grouped by [`Unit`], in
/// declaration order within a unit.
pub fn by_unit() -> Vec<&'static Metric> {
    let mut v: Vec<&'static Metric> = METRICS.iter().collect();
    v.sort_by_key(|m| m.unit);
    v
}

/// The README's metrics table: one row per metric of [`METRICS`], in column order (a test
/// keeps README.md equal to it).
pub fn markdown_table() -> String {
    let mut md = String::from(
        "| `per_question.csv` column | `summary.csv` column (mean) | label | unit | defined for questions | better | what |\n|---|---|---|---|---|---|---|\n",
    );
    for m in METRICS {
        md.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} | {} |\n",
            m.name,
            m.summary_column,
            m.label,
            m.unit.as_str(),
            m.applies.as_str(),
            m.better(),
            m.doc.replace('|', "\\|")
        ));
    }
    md
}

/// What a question's metrics are computed from: its retrieval (passages best first, EAR
/// summaries and multi-passage ranks flattened in rank order), its gold evidence, its answer
/// strings, and the run's word and character maps. Shared intermediate results (the rank
/// metrics, the span metrics in words and characters) are computed once, on first use.
pub struct ScoreInput<'a> {
    /// Retrieved passages as byte spans, best first.
    pub retrieved: &'a [DocSpan<'a>],
    /// Their texts, in the same order (each exactly its span's slice of its document).
    pub passages: &'a [&'a str],
    /// Gold evidence byte spans (empty for a question without evidence).
    pub evidence: &'a [DocSpan<'a>],
    /// Acceptable answer strings (empty for a question without).
    pub answers: &'a [&'a str],
    /// The cutoff: the cell's `k`, or the number of retrieved passages when more (a rank may
    /// hold several passages).
    pub k: usize,
    /// Byte spans to word spans.
    pub words: &'a WordMap<'a>,
    /// Byte spans to character spans.
    pub chars: &'a CharMap,
    /// Every index passage of the evidence's documents (for precision_Ω); `None` for a
    /// strategy without an index.
    pub index: Option<&'a [DocSpan<'a>]>,
    rank: OnceCell<Option<RankMetrics>>,
    span_words: OnceCell<Option<SpanMetrics>>,
    span_chars: OnceCell<Option<SpanMetrics>>,
}

impl<'a> ScoreInput<'a> {
    /// The input of one question (fields as documented on the struct).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        retrieved: &'a [DocSpan<'a>],
        passages: &'a [&'a str],
        evidence: &'a [DocSpan<'a>],
        answers: &'a [&'a str],
        k: usize,
        words: &'a WordMap<'a>,
        chars: &'a CharMap,
        index: Option<&'a [DocSpan<'a>]>,
    ) -> Self {
        ScoreInput {
            retrieved,
            passages,
            evidence,
            answers,
            k: k.max(retrieved.len()),
            words,
            chars,
            index,
            rank: OnceCell::new(),
            span_words: OnceCell::new(),
            span_chars: OnceCell::new(),
        }
    }

    /// hit@k, recall@k, MRR@k and nDCG@k ([`rank_metrics`]); `None` without evidence.
    pub fn rank(&self) -> Option<RankMetrics> {
        *self
            .rank
            .get_or_init(|| rank_metrics(self.retrieved, self.evidence, self.k))
    }

    /// Span recall, precision and IoU in words ([`WordMap::span_metrics`]).
    pub fn span_words(&self) -> Option<SpanMetrics> {
        *self
            .span_words
            .get_or_init(|| self.words.span_metrics(self.retrieved, self.evidence))
    }

    /// Span recall, precision and IoU in characters ([`CharMap::span_metrics`]).
    pub fn span_chars(&self) -> Option<SpanMetrics> {
        *self
            .span_chars
            .get_or_init(|| self.chars.span_metrics(self.retrieved, self.evidence))
    }
}

/// A question's value of every metric of [`METRICS`], by position (empty where a metric is
/// not defined).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricValues(Vec<Option<f64>>);

impl Default for MetricValues {
    /// Every metric empty.
    fn default() -> Self {
        MetricValues(vec![None; METRICS.len()])
    }
}

impl MetricValues {
    /// Every metric of one question.
    pub fn compute(input: &ScoreInput<'_>) -> Self {
        MetricValues(METRICS.iter().map(|m| (m.compute)(input)).collect())
    }

    /// The value of the metric at position `i` of [`METRICS`] (`None` when undefined or out
    /// of range).
    pub fn at(&self, i: usize) -> Option<f64> {
        self.0.get(i).copied().flatten()
    }

    /// The value of the metric named `name` (`None` when undefined or not registered).
    pub fn get(&self, name: &str) -> Option<f64> {
        index_of(name).and_then(|i| self.at(i))
    }

    /// Sets the value at position `i` of [`METRICS`] (ignored when out of range).
    pub fn set(&mut self, i: usize, value: Option<f64>) {
        if let Some(v) = self.0.get_mut(i) {
            *v = value;
        }
    }

    /// The values in [`METRICS`] order.
    pub fn as_slice(&self) -> &[Option<f64>] {
        &self.0
    }
}

const RECALL: Metric = Metric {
    name: "recall",
    summary_column: "recall_at_k",
    label: "recall@k",
    doc:
        "distinct evidence spans overlapped by the top k / evidence spans (pytrec_eval `recall_k`)",
    unit: Unit::Passages,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.rank().map(|m| m.recall),
};

const MRR: Metric = Metric {
    name: "mrr",
    summary_column: "mrr_at_k",
    label: "MRR",
    doc: "1 / rank of the first passage overlapping evidence, 0 when none in the top k (BEIR `MRR@k`)",
    unit: Unit::Passages,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.rank().map(|m| m.mrr),
};

const NDCG: Metric = Metric {
    name: "ndcg",
    summary_column: "ndcg_at_k",
    label: "nDCG@k",
    doc: "binary gains, each evidence span counted once (pytrec_eval `ndcg_cut_k`)",
    unit: Unit::Passages,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.rank().map(|m| m.ndcg),
};

const SPAN_RECALL: Metric = Metric {
    name: "span_recall",
    summary_column: "span_recall",
    label: "span recall (words)",
    doc: "evidence words covered by the retrieved passages / evidence words (Chroma's recall)",
    unit: Unit::Words,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.span_words().map(|m| m.recall),
};

const SPAN_PRECISION: Metric = Metric {
    name: "span_precision",
    summary_column: "span_precision",
    label: "span precision (words)",
    doc: "evidence words covered / words retrieved with multiplicity (Chroma's precision)",
    unit: Unit::Words,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.span_words().map(|m| m.precision),
};

const SPAN_IOU: Metric = Metric {
    name: "span_iou",
    summary_column: "span_iou",
    label: "span IoU (words)",
    doc: "covered / (retrieved with multiplicity + evidence − covered), in words (Chroma's IoU)",
    unit: Unit::Words,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.span_words().map(|m| m.iou),
};

const SPAN_RECALL_CHARS: Metric = Metric {
    name: "span_recall_chars",
    summary_column: "span_recall_chars",
    label: "span recall (chars)",
    doc: "span recall in characters, the unit of Chroma's published figures",
    unit: Unit::Chars,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.span_chars().map(|m| m.recall),
};

const SPAN_PRECISION_CHARS: Metric = Metric {
    name: "span_precision_chars",
    summary_column: "span_precision_chars",
    label: "span precision (chars)",
    doc: "span precision in characters, retrieved length with multiplicity",
    unit: Unit::Chars,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.span_chars().map(|m| m.precision),
};

const SPAN_IOU_CHARS: Metric = Metric {
    name: "span_iou_chars",
    summary_column: "span_iou_chars",
    label: "span IoU (chars)",
    doc: "span IoU in characters",
    unit: Unit::Chars,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute: |x| x.span_chars().map(|m| m.iou),
};

const PRECISION_OMEGA: Metric = Metric {
    name: "precision_omega",
    summary_column: "precision_omega",
    label: "precision_Ω (words)",
    doc: "precision of the best retrieval the chunking allows: all index passages overlapping or touching the evidence (Chroma's `_full_precision_score`, its exact rule), in words",
    unit: Unit::Words,
    higher_is_better: true,
    applies: AppliesTo::EvidenceWithIndex,
    aggregate: Aggregate::Mean,
    compute: |x| x.index.and_then(|all| x.words.precision_omega(all, x.evidence)),
};

const PRECISION_OMEGA_CHARS: Metric = Metric {
    name: "precision_omega_chars",
    summary_column: "precision_omega_chars",
    label: "precision_Ω (chars)",
    doc: "precision_Ω in characters",
    unit: Unit::Chars,
    higher_is_better: true,
    applies: AppliesTo::EvidenceWithIndex,
    aggregate: Aggregate::Mean,
    compute: |x| {
        x.index
            .and_then(|all| x.chars.precision_omega(all, x.evidence))
    },
};

const ANSWER_RECALL: Metric = Metric {
    name: "answer_recall",
    summary_column: "answer_recall_at_k",
    label: "answer recall",
    doc: "1 when a lower-cased answer string occurs in a lower-cased retrieved passage (Bhat et al. 2025)",
    unit: Unit::AnswerStrings,
    higher_is_better: true,
    applies: AppliesTo::AnswerStrings,
    aggregate: Aggregate::Mean,
    compute: |x| any_answer_recall_at_k(x.passages, x.answers, x.k),
};

#[cfg(test)]
mod tests {
    use super::*;

    /// README.md's metrics table is the registry's ([`markdown_table`]).
    #[test]
    fn readme_lists_every_metric() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let begin = "<!-- metrics table: generated from retriever::metrics::METRICS -->\n";
        let end = "<!-- end of metrics table -->";
        let a = readme
            .find(begin)
            .expect("README.md has the metrics table markers")
            + begin.len();
        let b = a + readme[a..].find(end).expect("end marker");
        assert_eq!(
            &readme[a..b],
            markdown_table(),
            "README.md's metrics table differs from the registry; replace it with:\n{}",
            markdown_table()
        );
    }

    /// Names are unique column names; labels unique; summary columns unique.
    #[test]
    fn names_are_unique_identifiers() {
        let mut seen = std::collections::HashSet::new();
        for m in METRICS {
            assert!(
                m.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                m.name
            );
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert!(seen.insert(m.label), "label {} twice", m.label);
            assert!(
                m.summary_column == m.name || seen.insert(m.summary_column),
                "summary column {} twice",
                m.summary_column
            );
        }
    }

    /// The registry's computations equal the metric functions they wrap, on the reference
    /// vector of docs/reference.md §5 (excerpt [10, 20), retrieved [0, 15) and [12, 30)).
    #[test]
    fn values_follow_the_metric_functions() {
        let docs = vec![chunker::Document::new("d", "w ".repeat(20))];
        let words = WordMap::new(&docs);
        let chars = CharMap::new(&docs);
        let retrieved = [DocSpan::new("d", 0, 15), DocSpan::new("d", 12, 30)];
        let passages = [&docs[0].text[0..15], &docs[0].text[12..30]];
        let evidence = [DocSpan::new("d", 10, 20)];
        let answers = ["w w"];
        let x = ScoreInput::new(
            &retrieved,
            &passages,
            &evidence,
            &answers,
            2,
            &words,
            &chars,
            Some(&retrieved),
        );
        let v = MetricValues::compute(&x);
        let chars_span = super::super::span_metrics(&retrieved, &evidence).unwrap();
        assert_eq!(v.get("span_precision_chars"), Some(chars_span.precision));
        assert_eq!(v.get("span_iou_chars"), Some(10.0 / 33.0));
        assert_eq!(v.get("recall"), Some(1.0));
        assert_eq!(v.get("mrr"), Some(1.0));
        assert_eq!(v.get("answer_recall"), Some(1.0));
        let none = ScoreInput::new(&retrieved, &passages, &[], &[], 2, &words, &chars, None);
        let v = MetricValues::compute(&none);
        assert!(v.as_slice().iter().all(Option::is_none), "{v:?}");
    }
}
