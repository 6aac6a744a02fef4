//! One (cell, question) pair: [`QuestionRow`], its passages ([`PassageSpan`]) and its failure
//! attribution ([`Failure`]), and how its list fields are written as CSV text.

use retriever::metrics::MetricValues;
use retriever::records::RecordValues;
use serde::{Deserialize, Serialize};

/// One row of `per_question.csv`: one (cell, question) pair.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuestionRow {
    /// Cell id ([`CellKey::id`]).
    pub cell_id: String,
    /// Dataset name.
    pub dataset: String,
    /// Strategy name.
    pub strategy: String,
    /// Retriever name.
    pub retriever: String,
    /// Top-k.
    pub k: usize,
    /// Reader name.
    pub reader: String,
    /// Question id.
    pub question_id: String,
    /// The document the question is about, the unit `resample: document` clusters by: its
    /// first gold evidence span's document, else its retrieval scope's document when the scope
    /// is one document; empty when it has neither (the question is then its own cluster).
    /// Empty in files written before this column existed.
    #[serde(default)]
    pub question_doc: String,
    /// The question's `subject` (MMLU subject, textbook, …), the unit of `resample: subject`;
    /// empty when it has none.
    #[serde(default)]
    pub subject: String,
    /// Gold option index (0-based); empty for a retrieval-only question.
    pub gold: Option<usize>,
    /// Chosen option index (0-based); empty when the cell has no reader (`kind: none`), when
    /// the reply was invalid and when the best score was tied (`tied` > 1; the tied options are
    /// those sharing the maximum of `scores`): a row's `choice == gold` holds exactly when it
    /// is correct.
    pub choice: Option<usize>,
    /// 1 when correct (chosen = gold and no tie), else 0; empty when nothing was read (a
    /// cell without a reader), so such rows are never counted as wrong.
    pub correct: Option<u8>,
    /// Options sharing the best score (1 = no tie).
    pub tied: usize,
    /// 1 when the reader produced no usable answer (an unparsable or ambiguous server
    /// reply): counted wrong, attributed `invalid-answer`, and its text is in `reply`.
    #[serde(default)]
    pub invalid: u8,
    /// Per-option reader scores, one per option in option order, rounded to 6 decimals (CSV:
    /// `;`-separated).
    #[serde(with = "scores_text")]
    pub scores: Vec<f64>,
    /// The reader's tie-break score per option (the lexical reader: the option's coverage
    /// summed over the passages, which decides between options equal in `scores`), rounded
    /// to 6 decimals (CSV: `;`-separated); empty for readers without one and in files written
    /// before the column existed.
    #[serde(default, with = "scores_text")]
    pub tie_break: Vec<f64>,
    /// Retrieved passages as byte spans of their documents, best first (CSV: their ids
    /// `DOC:START-END`, space-separated; document ids hold no whitespace).
    #[serde(with = "spans_text")]
    pub passages: Vec<PassageSpan>,
    /// Retriever scores of those passages, in the same order, rounded to 6 decimals (CSV:
    /// `;`-separated).
    #[serde(with = "scores_text")]
    pub passage_scores: Vec<f64>,
    /// Words retrieved, counted with multiplicity (sum over passages).
    pub words: usize,
    /// Unique words retrieved (union of the passages' spans per document).
    pub unique_words: usize,
    /// Characters retrieved (Unicode scalar values), with multiplicity: a context cost that
    /// is meaningful for text without spaces (Chinese, Japanese, Thai).
    #[serde(default)]
    pub chars: usize,
    /// Tokens retrieved, with multiplicity, counted with the reader's own tokenizer when it
    /// has one (the GGUF reader) and otherwise with the run's `cost_tokenizer`; empty when
    /// neither exists (`cost_tokenizer: null`). Which one is in the cell record.
    #[serde(default)]
    pub tokens: Option<usize>,
    /// Whether a retrieved passage overlaps a gold evidence span; empty when the question
    /// has no evidence.
    pub evidence_hit: Option<u8>,
    /// The retrieval metrics of [`METRICS`], one column each in registry order (between
    /// `evidence_hit` and `failure`); empty where a metric is not defined (no gold evidence,
    /// no answer string). Not a serde field: the column table writes them and
    /// [`read_rows_csv`] reads them by column name.
    #[serde(skip)]
    pub metrics: MetricValues,
    /// Failure attribution ([`Failure`]): `correct`, or the first stage that failed —
    /// `extraction`, `matching` (EAR only), `ranking`, `reading` — or `no-evidence` for a
    /// wrong answer to a question without gold evidence (nothing to attribute it to); empty
    /// (`None`) when nothing was read (a cell without a reader).
    #[serde(default)]
    pub failure: Option<Failure>,
    /// The strategy's own per-question record ([`RECORDS`]: EAR's anchors, exact anchor
    /// match, windows before and after deduplication, fallback), one column per field in
    /// registry order (between `failure` and `reply`); empty for strategies that record none.
    /// Not a serde field: the column table writes them and [`read_rows_csv`] reads them by
    /// column name.
    #[serde(skip)]
    pub records: RecordValues,
    /// The reader's raw output, shortened to 200 bytes plus "…" when cut (server: the reply text with the rule
    /// that parsed it, or `unparsable: …`; LLM: letter log-probs; lexical: its scores).
    #[serde(default)]
    pub reply: String,
}

/// A retrieved passage: a byte span of one document. Written as its id `DOC:START-END`
/// ([`chunker::Chunk::id`]) in CSV, Parquet and TREC files; read back with
/// [`PassageSpan::parse`], from the right (a document id may contain `:`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PassageSpan {
    /// The document id.
    pub doc_id: String,
    /// `[start, end)` in the document, in bytes.
    pub span: chunker::Span,
}

impl PassageSpan {
    /// The passage of a chunk.
    pub fn of(chunk: &chunker::Chunk) -> Self {
        PassageSpan {
            doc_id: chunk.doc_id.clone(),
            span: chunk.span,
        }
    }

    /// The passage named by an id `DOC:START-END`; `None` when `id` is not one (or its span
    /// ends before it starts).
    pub fn parse(id: &str) -> Option<Self> {
        let (doc, span) = chunker::Chunk::parse_id(id)?;
        (span.start <= span.end).then(|| PassageSpan {
            doc_id: doc.to_string(),
            span,
        })
    }
}

impl std::fmt::Display for PassageSpan {
    /// `DOC:START-END`, as [`chunker::Chunk::id`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}-{}", self.doc_id, self.span.start, self.span.end)
    }
}

/// Longest `reply` kept per question, in bytes (cut on a char boundary, marked with "…").
pub const REPLY_BYTES: usize = 200;

/// Where a question's answer went wrong (issue: "failure attribution"), checked in order.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Failure {
    /// Answered correctly.
    Correct,
    /// EAR: no anchors in the question or its options.
    Extraction,
    /// EAR: anchors, but none occurs in the (scoped) corpus.
    Matching,
    /// Gold evidence is known and none of the top-k passages overlaps it.
    Ranking,
    /// Evidence retrieved, answer wrong.
    Reading,
    /// Wrong answer, and the question has no gold evidence: the stage is unknown.
    NoEvidence,
    /// The reader's reply could not be read as an answer (unparsable or ambiguous): a failure
    /// of measurement, not of retrieval or reading, so it takes precedence over the stages.
    InvalidAnswer,
}

impl Failure {
    /// The kebab-case name written to `per_question.csv`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Every stage, in the order of the failure-attribution table (the declaration order; strum `VariantArray`).
    pub const ALL: &'static [Failure] = <Failure as strum::VariantArray>::VARIANTS;

    /// Attributes one answer: `matching` is `(query terms found, forms matched)` for a
    /// strategy with a matching stage (EAR: anchors in the question and options, anchor
    /// forms found in the corpus), `None` otherwise; `invalid` is the reader's invalid flag
    /// (an invalid answer is never correct).
    pub fn attribute(
        correct: bool,
        invalid: bool,
        matching: Option<(usize, usize)>,
        evidence_hit: Option<u8>,
    ) -> Self {
        if invalid {
            return Failure::InvalidAnswer;
        }
        match (correct, matching, evidence_hit) {
            (true, ..) => Failure::Correct,
            (false, Some((0, _)), _) => Failure::Extraction,
            (false, Some((_, 0)), _) => Failure::Matching,
            (false, _, Some(0)) => Failure::Ranking,
            (false, _, Some(_)) => Failure::Reading,
            (false, _, None) => Failure::NoEvidence,
        }
    }
}

/// serde for a score list stored as one `;`-separated CSV field (6 decimals).
mod scores_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(xs: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::columns::join_reals(xs))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        let text = String::deserialize(d)?;
        if text.is_empty() {
            return Ok(Vec::new());
        }
        text.split(';')
            .map(|x| {
                x.parse::<f64>().map_err(|_| {
                    serde::de::Error::custom(format!(
                        "`{x}` is not a number (scores are `;`-separated numbers)"
                    ))
                })
            })
            .collect()
    }
}

/// serde for an id list stored as one space-separated CSV field.
mod spans_text {
    use super::PassageSpan;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(spans: &[PassageSpan], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::columns::join_passages(spans))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PassageSpan>, D::Error> {
        let text = String::deserialize(d)?;
        text.split_whitespace()
            .map(|id| {
                PassageSpan::parse(id).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "passage id {id:?} is not DOC:START-END (byte offsets)"
                    ))
                })
            })
            .collect()
    }
}
