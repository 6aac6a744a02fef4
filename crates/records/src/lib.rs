//! Records defined once: what a run writes, per question and per cell, and how each record
//! becomes a table.
//!
//! - [`QuestionRow`]: one (cell, question) pair, the rows of `cells/ID.csv`, `per_question.csv`
//!   and `per_question.parquet`. Its columns, their types and their docs are listed once, in
//!   [`question_columns`]; the CSV writer ([`rows_csv`]) and the Arrow/Parquet writer
//!   ([`rows_parquet`]) both walk that table, and reading a CSV back goes through serde by
//!   column name (a test keeps the two equal).
//! - [`CellRecord`] and [`CellSummary`]: `cells/ID.json`, the aggregates every report reads
//!   ([`summarize`]); [`Comparison`]: a cell against its baseline cell.
//! - [`SummaryRow`]: one row of `summary.csv`, whose columns are [`summary_columns`] (the
//!   same [`Column`] table and writer as the per-question rows).
//! - [`ChunkLengths`]: words per chunk of one (dataset, strategy), `chunks/*.json`.
//!
//! Lists are lists: per-option reader scores, passage ids and passage scores are `Vec`s here
//! and List columns in Parquet; CSV keeps one text field per list (scores `;`-separated with 6
//! decimals, passage ids space-separated), as it always has.
//!
//! The pipeline's contract: the pipeline (`evaluator`) writes these records and the reports
//! (`reporting`: summaries, plots, report.html, `explain`, `compare`) read them, so both depend
//! on this crate and neither on the other. It depends only on the statistics (`stats`, for a
//! cell's Wilson interval and means), the registries of retrieval metrics and strategy records
//! (`retriever::metrics`, `retriever::records`) and the data format (`datasets`): a cell is
//! stored as data ([`CellKey`]: names and resolved entries as YAML values, in the pipeline's
//! field order), so readers need none of the pipeline's types. [`inputs`] holds the content
//! identities a cell was computed on.

use crate::inputs::CellInputs;
pub mod inputs;
pub mod kind;
pub use kind::{Counter, ExplainNotes};

use anyhow::{Context, Result};
use retriever::metrics::{MetricValues, METRICS};
use retriever::records::{FieldKind, FigureValue, RecordSummary, RecordValues, RECORDS};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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

/// A resolved cell as data: one dataset × strategy × retriever × k × reader with the resolved
/// entries. The pipeline's `evaluator::config::Cell` serialises to exactly this JSON (same
/// fields, same order; the entries as their `{kind, ...fields}` YAML values), so
/// [`CellKey::id`] is the cell id the pipeline computes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellKey {
    /// Dataset name.
    pub dataset: String,
    /// Strategy name.
    pub strategy: String,
    /// Resolved strategy entry.
    pub strategy_config: serde_yaml::Value,
    /// Retriever name.
    pub retriever: String,
    /// Resolved retriever entry.
    pub retriever_config: serde_yaml::Value,
    /// Passages retrieved per question.
    pub k: usize,
    /// Reader name.
    pub reader: String,
    /// Resolved reader entry.
    pub reader_config: serde_yaml::Value,
    /// Question limit applied to the dataset.
    pub limit: Option<usize>,
    /// Run seed.
    pub seed: u64,
    /// The embedder, for cells whose strategy or retriever embeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<CellEmbedder>,
    /// For a cell that retrieves to a budget: the budget (then `k` is the ranking depth the
    /// budget is filled from). Absent for top-k cells, whose ids are unchanged by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

impl CellKey {
    /// How much the cell retrieves, as the reports print it: `3` (top-k) or `≤512 words`.
    pub fn depth_label(&self) -> String {
        match &self.budget {
            None => self.k.to_string(),
            Some(b) => b.to_string(),
        }
    }

    /// How much the cell retrieves, in a label: `k=3` or `≤512 words`.
    pub fn depth_tag(&self) -> String {
        match &self.budget {
            None => format!("k={}", self.k),
            Some(b) => b.to_string(),
        }
    }

    /// True when two cells retrieve the same amount: the same k, or the same budget.
    pub fn same_depth(&self, other: &CellKey) -> bool {
        self.k == other.k && self.budget == other.budget
    }
}

/// What a budget is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BudgetUnit {
    /// Whitespace-separated words ([`chunker::count_words`]), as `words` retrieved.
    Words,
    /// Tokens of the run's cost tokenizer (`cost_tokenizer`), as `tokens` retrieved.
    Tokens,
    /// Unicode scalar values, as `chars` retrieved.
    Chars,
}

impl BudgetUnit {
    /// The config's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetUnit::Words => "words",
            BudgetUnit::Tokens => "tokens",
            BudgetUnit::Chars => "chars",
        }
    }
}

/// What happens to the passage that would overflow the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fill {
    /// Cut at the last unit boundary that fits (still an exact byte span of its document).
    Cut,
    /// Left out; retrieval stops there.
    Whole,
}

/// Retrieval to a budget: passages are taken by rank until `size` units are full
/// (docs/reference.md §5 "Retrieval to a budget").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Budget {
    /// What the budget counts.
    pub unit: BudgetUnit,
    /// How many units, at least 1.
    pub size: usize,
    /// What happens to the passage that would overflow.
    pub fill: Fill,
}

impl std::fmt::Display for Budget {
    /// `≤512 words` (`fill: cut`) or `≤512 words, whole` (`fill: whole`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "≤{} {}", self.size, self.unit.as_str())?;
        if self.fill == Fill::Whole {
            f.write_str(", whole")?;
        }
        Ok(())
    }
}

/// The embedder as a cell's id holds it (`embedder:` of the run config, reduced to what names
/// it); what it is by content (the model files' sha256, a server's probe fingerprint) is in the
/// cell's inputs (`inputs.rs`).
///
/// JSON: a local model directory is its path as a string (the form of every cell id before
/// embedding servers existed, so those ids are unchanged); a server is
/// `{"kind": "openai"|"tei", "base_url": URL, "model": NAME}` (`model` left out when not
/// given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CellEmbedder {
    /// A local candle model directory.
    Model(PathBuf),
    /// An embedding server.
    Server {
        /// Wire format: `openai` or `tei`.
        kind: String,
        /// The server's base URL as configured.
        base_url: String,
        /// The model name sent (OpenAI) or recorded (TEI).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
}

impl CellKey {
    /// Stable id: the first 16 hex digits of the sha256 of the cell's canonical JSON.
    ///
    /// # Panics
    /// Never: the entries are YAML values with string keys.
    pub fn id(&self) -> String {
        let json = serde_json::to_string(self).expect("cell serialises");
        datasets::io::sha256_hex(json.as_bytes())[..16].to_string()
    }
}

/// What a cell stores next to its rows in `cells/ID.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// Cell id.
    pub id: String,
    /// The resolved cell.
    pub cell: CellKey,
    /// sha256 of the dataset manifest the cell was computed on.
    pub dataset_manifest_sha256: String,
    /// The code that computed it: `chunkbench VERSION@GIT_COMMIT` (`evaluator::run::code_version`). A re-run
    /// reuses a cell only when this matches, so results never mix code versions.
    #[serde(default)]
    pub code: String,
    /// Content identities of everything else the cell read ([`crate::inputs`]): the dataset
    /// files, the embedder's files, tokenizers, the reader's model or server. A re-run reuses
    /// the cell only when these are unchanged.
    #[serde(default)]
    pub inputs: CellInputs,
    /// What counted the `tokens` column: `reader:…` (the reader's tokenizer),
    /// `tokenizer.json:PATH`, or `none`.
    #[serde(default)]
    pub tokens_by: String,
    /// sha256 of the cell's rows file `cells/ID.csv` as written: every reader of a cell
    /// ([`read_cell`]: reuse, assembly, merge, `compare`, `report`, `explain`) checks it, so
    /// rows edited or torn after the cell finished are never used. Empty in records of
    /// versions before it (such cells are recomputed by `run` and refused elsewhere).
    #[serde(default)]
    pub rows_sha256: String,
    /// Aggregates over the cell's rows.
    pub summary: CellSummary,
    /// sha256 of this record's own file as [`write_cell_record`] wrote it, with this field's
    /// value empty: [`read_cell`] checks it, so a record edited after the cell finished (its
    /// summary, inputs or checksum of the rows) is never reused, merged or reported. Empty in
    /// records of versions before it.
    #[serde(default)]
    pub record_sha256: String,
}

/// The JSON text of `rec` as [`write_cell_record`] writes it (pretty, newline-terminated) with
/// `record_sha256` set to `sha`.
fn cell_record_bytes(rec: &CellRecord, sha: &str) -> Result<Vec<u8>> {
    let mut r = rec.clone();
    r.record_sha256 = sha.to_string();
    let mut bytes = serde_json::to_vec_pretty(&r)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes a cell record to `path` atomically, with its `record_sha256` (the sha256 of the file
/// as written with that field empty) filled in; returns the record as written.
///
/// # Errors
/// Serialisation or I/O errors, naming the path.
pub fn write_cell_record(path: &Path, rec: &CellRecord) -> anyhow::Result<CellRecord> {
    let blank = cell_record_bytes(rec, "")
        .with_context(|| format!("cannot serialise {}", path.display()))?;
    let sha = datasets::io::sha256_hex(&blank);
    let bytes = cell_record_bytes(rec, &sha)
        .with_context(|| format!("cannot serialise {}", path.display()))?;
    datasets::io::write_atomic(path, &bytes)?;
    let mut written = rec.clone();
    written.record_sha256 = sha;
    Ok(written)
}

/// Whether `bytes`, the file a record was read from, are the file [`write_cell_record`] wrote
/// for `rec`: its `record_sha256` matches the sha256 of the text with that value emptied.
fn record_is_intact(bytes: &[u8], rec: &CellRecord) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let field = format!("\"record_sha256\": \"{}\"", rec.record_sha256);
    if text.matches(&field).count() != 1 {
        return false;
    }
    let blank = text.replacen(&field, "\"record_sha256\": \"\"", 1);
    datasets::io::sha256_hex(blank.as_bytes()) == rec.record_sha256
}

/// Aggregates of one cell over its questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    /// Questions scored (rows of the cell).
    pub n: usize,
    /// Questions answered correctly (ties never count).
    pub correct: usize,
    /// `correct / n` in [0, 1]; `None` when the cell read nothing (no reader, or no
    /// questions), so a retrieval-only cell never shows an accuracy of 0.
    pub accuracy: Option<f64>,
    /// Wilson 95 % interval of the accuracy ([`stats::wilson`]), lower bound; `None` with
    /// the accuracy.
    pub accuracy_ci_low: Option<f64>,
    /// Wilson 95 % interval of the accuracy, upper bound.
    pub accuracy_ci_high: Option<f64>,
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
    /// Mean of each retrieval metric of [`METRICS`] over the questions where it is defined
    /// (JSON: one key per metric name, in registry order; `null` where no question has a
    /// value). Keys of metrics this version does not register are ignored on reading.
    #[serde(flatten)]
    pub metrics: MetricMeans,
    /// Questions per failure attribution (`correct`, `extraction`, `matching`, `ranking`,
    /// `reading`, `no-evidence`; [`Failure`]).
    #[serde(default)]
    pub failures: std::collections::BTreeMap<String, usize>,
    /// The aggregates of each strategy record of [`RECORDS`] the cell's rows carry (EAR's
    /// anchor coverage): JSON: one object per record under its key (`ear`), figures in
    /// declaration order; absent for records no row carries.
    #[serde(flatten)]
    pub records: RecordSummaries,
    /// Passages whose vector from the embedder was degenerate (zero norm), so dense retrieval
    /// could never return them; 0 (and absent from the record) for cells that do not embed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub degenerate_passages: usize,
    /// Questions all of whose query vectors were degenerate, so dense retrieval returned them
    /// nothing (their rows read no dense passage); shown in summary.md.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub degenerate_queries: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A cell's mean of every metric of [`METRICS`], by position (`None` where no question has a
/// value). Serialised as one JSON key per metric name, in registry order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricMeans(Vec<Option<f64>>);

impl MetricMeans {
    /// The cell values of `rows`' metrics, each aggregated as its registry entry declares
    /// ([`retriever::metrics::registry::Metric::aggregate`]; today every metric is a mean over
    /// the rows where it is defined). A new aggregate must be handled here, where the match
    /// is exhaustive.
    pub fn of(rows: &[QuestionRow]) -> Self {
        use retriever::metrics::registry::Aggregate;
        MetricMeans(
            METRICS
                .iter()
                .enumerate()
                .map(|(i, metric)| {
                    let xs: Vec<f64> = rows.iter().filter_map(|r| r.metrics.at(i)).collect();
                    match metric.aggregate {
                        Aggregate::Mean => stats::mean(&xs),
                    }
                })
                .collect(),
        )
    }

    /// The mean of the metric at position `i` of [`METRICS`].
    pub fn at(&self, i: usize) -> Option<f64> {
        self.0.get(i).copied().flatten()
    }

    /// The mean of the metric named `name` (`None` when not registered or without values).
    pub fn get(&self, name: &str) -> Option<f64> {
        retriever::metrics::registry::index_of(name).and_then(|i| self.at(i))
    }
}

impl Serialize for MetricMeans {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(METRICS.len()))?;
        for (i, metric) in METRICS.iter().enumerate() {
            m.serialize_entry(metric.name, &self.at(i))?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for MetricMeans {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = MetricMeans;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("metric means keyed by metric name")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<MetricMeans, A::Error> {
                let mut out = vec![None; METRICS.len()];
                while let Some(key) = map.next_key::<String>()? {
                    match retriever::metrics::registry::index_of(&key) {
                        Some(i) => out[i] = map.next_value::<Option<f64>>()?,
                        None => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(MetricMeans(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A cell's aggregates of every strategy record of [`RECORDS`], by position (`None` where no
/// row carries the record). Serialised as one JSON key per carried record ([`RecordKind::key`]
/// (retriever::records::RecordKind::key)), its figures as an object in declaration order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordSummaries(Vec<Option<RecordSummary>>);

impl RecordSummaries {
    /// The aggregates of `rows`' records.
    pub fn of(rows: &[QuestionRow]) -> Self {
        let values: Vec<&RecordValues> = rows.iter().map(|r| &r.records).collect();
        RecordSummaries(
            (0..RECORDS.len())
                .map(|k| RecordSummary::of(k, &values))
                .collect(),
        )
    }

    /// The aggregates of the record at position `kind` of [`RECORDS`].
    pub fn at(&self, kind: usize) -> Option<&RecordSummary> {
        self.0.get(kind).and_then(Option::as_ref)
    }
}

/// One record's figures as a JSON object, in declaration order.
struct Figures<'a>(usize, &'a RecordSummary);

impl Serialize for Figures<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let kind = RECORDS[self.0];
        let mut m = s.serialize_map(Some(kind.figures.len()))?;
        for (f, v) in kind.figures.iter().zip(&self.1.values) {
            match v {
                FigureValue::Count(n) => m.serialize_entry(f.key, n)?,
                FigureValue::Real(x) => m.serialize_entry(f.key, x)?,
            }
        }
        m.end()
    }
}

impl Serialize for RecordSummaries {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for (k, summary) in self.0.iter().enumerate() {
            if let Some(summary) = summary {
                m.serialize_entry(RECORDS[k].key, &Figures(k, summary))?;
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for RecordSummaries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RecordSummaries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("strategy record summaries keyed by record key")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<RecordSummaries, A::Error> {
                let mut out = vec![None; RECORDS.len()];
                while let Some(key) = map.next_key::<String>()? {
                    let Some(k) = RECORDS.iter().position(|r| r.key == key) else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                        continue;
                    };
                    let object: std::collections::BTreeMap<String, serde_json::Number> =
                        map.next_value()?;
                    let figure = |key: &str| {
                        object.get(key).ok_or_else(|| {
                            serde::de::Error::custom(format!(
                                "strategy record `{}` lacks figure `{key}`",
                                RECORDS[k].key
                            ))
                        })
                    };
                    let mut values = Vec::new();
                    let mut rows = 0;
                    for f in RECORDS[k].figures {
                        let n = figure(f.key)?;
                        let v = match f.aggregate {
                            retriever::records::Aggregate::Mean(_) => {
                                FigureValue::Real(n.as_f64().unwrap_or(f64::NAN))
                            }
                            retriever::records::Aggregate::Rows
                            | retriever::records::Aggregate::Ones(_) => {
                                let c = n.as_u64().ok_or_else(|| {
                                    serde::de::Error::custom(format!(
                                        "strategy record `{}`: figure `{}` is not a count",
                                        RECORDS[k].key, f.key
                                    ))
                                })? as usize;
                                if f.aggregate == retriever::records::Aggregate::Rows {
                                    rows = c;
                                }
                                FigureValue::Count(c)
                            }
                        };
                        values.push(v);
                    }
                    out[k] = Some(RecordSummary { rows, values });
                }
                Ok(RecordSummaries(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Words per chunk of one (dataset, strategy), as recorded by the runner.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChunkLengths {
    /// Dataset name.
    pub dataset: String,
    /// Strategy name.
    pub strategy: String,
    /// Words of each chunk, in corpus order.
    pub words: Vec<usize>,
    /// What the strategy counted (forced splits, merges, embedded units, ...).
    #[serde(default)]
    pub stats: StrategyStats,
    /// True when the strategy makes its passages at query time (EAR windows, sentence
    /// windows, oracle spans), so what a question reads is not one of these chunks.
    #[serde(default)]
    pub passages_at_query_time: bool,
    /// Words of each distinct passage the strategy's cells retrieved (by `DOC:START-END`, in
    /// span order), for strategies with [`ChunkLengths::passages_at_query_time`]; filled when
    /// the run is assembled (not stored), `None` when the documents were not at hand.
    #[serde(default, skip_serializing)]
    pub retrieved_words: Option<Vec<usize>>,
}

/// What a strategy did over a corpus (for `chunk_stats.csv` and the manifest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyStats {
    /// Units (sentences, combined sentences) sent to the embedder.
    pub embedded_units: usize,
    /// Units split before embedding because they exceeded the model's input.
    pub units_split_before_embedding: usize,
    /// Units (max-min) or chunks (kamradt) longer than the strategy's `size` that were split
    /// at the size, in the configured unit.
    #[serde(default)]
    pub units_split_at_size: usize,
    /// Units sent to the embedder that were longer than its input window and so truncated by
    /// it (kamradt's combined sentences; max-min splits its units instead, so 0 there).
    #[serde(default)]
    pub embedded_units_truncated: usize,
    /// Chunks longer than `size` in the configured unit (indivisible pieces: a recursive
    /// chunk with no separator left, a single token or char the sizer counts as more); 0
    /// when the strategy has no size.
    #[serde(default)]
    pub over_size: usize,
    /// Chunks longer than the run's embedder input window (`max_seq_length` tokens, special
    /// tokens included), which the embedder truncates when it embeds them for dense
    /// retrieval; `None` when the strategy's cells embed no passages.
    #[serde(default)]
    pub over_embedder_window: Option<usize>,
    /// Max-min: accepted units refused by the maximum size (a new chunk was started).
    pub forced_splits: usize,
    /// Chunks below the minimum size merged into a neighbour.
    pub merges: usize,
    /// Zero or non-finite vectors, given similarity 0 instead of being compared.
    pub degenerate_vectors: usize,
    /// Words of the corpus ([`chunker::word_spans`]) that share no byte with any chunk (a
    /// strategy that leaves text out, such as an external program skipping a document or a
    /// tail); set by the runner for every strategy that chunks the corpus, shown in
    /// summary.md when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncovered_words: usize,
    /// Chunks of an external program or spans file that held word separators only
    /// (whitespace, zero-width spaces) and were not indexed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blank_chunks_dropped: usize,
    /// Max-min: each chunk's internal minimum pairwise cosine similarity (None for a
    /// one-unit chunk), in chunk order; empty for other strategies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub min_similarity: Vec<Option<f64>>,
    /// What the retrievers indexed for each chunk when it was not the chunk's own text
    /// (`title > headings` + text, an LLM-written context + text, late-chunked vectors), in
    /// words for summary.md; `None`: the chunk's text. The passages stay exact spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed: Option<String>,
    /// Model use of an LLM strategy (contextual retrieval, LLM-guided boundaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmUse>,
    /// Late chunking: forward passes of the embedder over document windows.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_windows: usize,
    /// Late chunking: chunks that hold no token of the embedder's tokenizer (whitespace
    /// only); they get the zero vector, which dense retrieval never returns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunks_without_tokens: usize,
    /// The kind's own counters ([`Counter`]s it declares), by name; kinds with none leave
    /// it empty (and it is not written). Shown in `chunk_stats.csv` (one column per name
    /// any strategy of the run counted) and summary.md's "Strategy counters".
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub counters: std::collections::BTreeMap<String, u64>,
}

/// What an LLM strategy asked of its model over one corpus (summary.md "Indexed text").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmUse {
    /// Documents the strategy sent to the model.
    pub documents: usize,
    /// Requests made (replies read from the cache included).
    pub requests: usize,
    /// Replies read from the generation cache (no model call).
    pub cached: usize,
    /// Prompt tokens, as the server's `usage` reports them (0 when it reports none).
    pub prompt_tokens: u64,
    /// Reply tokens, as the server's `usage` reports them.
    pub completion_tokens: u64,
    /// Requests whose reply had no `usage` (their tokens are not in the sums).
    pub without_usage: usize,
    /// Replies that could not be used as the protocol asks (no number, a number out of
    /// range, an empty context, a reply cut at `max_tokens`).
    pub malformed: usize,
    /// Units handled by the stated fallback because the reply was malformed.
    pub fallbacks: usize,
    /// Replies longer than `max_tokens` tokens could make (more than 32 bytes a token, at
    /// least 4 KiB), cut there before they were cached, parsed or indexed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub oversized: usize,
}

impl LlmUse {
    /// Adds `other`'s counts (a wrapper's requests to those of the strategy it wraps).
    pub fn add(&mut self, other: &LlmUse) {
        self.documents = self.documents.max(other.documents);
        self.requests += other.requests;
        self.cached += other.cached;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.without_usage += other.without_usage;
        self.malformed += other.malformed;
        self.fallbacks += other.fallbacks;
        self.oversized += other.oversized;
    }
}

/// Cells grouped by (dataset, reader), the unit of summary.md's tables, the plots and the
/// report's tables; groups in name order, cells in their given order.
pub fn by_dataset_reader<'a>(
    cells: impl IntoIterator<Item = &'a CellRecord>,
) -> std::collections::BTreeMap<(String, String), Vec<&'a CellRecord>> {
    let mut groups: std::collections::BTreeMap<(String, String), Vec<&CellRecord>> =
        std::collections::BTreeMap::new();
    for c in cells {
        groups
            .entry((c.cell.dataset.clone(), c.cell.reader.clone()))
            .or_default()
            .push(c);
    }
    groups
}

/// Ids of the finished cells (`ID.json`) in `cells_dir` that are not in `ids`, sorted.
pub fn foreign_cells(cells_dir: &Path, ids: &std::collections::BTreeSet<String>) -> Vec<String> {
    foreign_files(cells_dir, "json", ids)
        .iter()
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_string))
        .collect()
}

/// A finished cell as read back from `cells/`: its record and the exact bytes of its rows
/// file, which hash to the record's `rows_sha256`.
#[derive(Debug, Clone)]
pub struct StoredCell {
    /// The record (`cells/ID.json`).
    pub record: CellRecord,
    /// The rows (`cells/ID.csv`), verified.
    pub csv: Vec<u8>,
}

/// Why a stored cell cannot be used, for the messages of its readers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellProblem {
    /// `ID.json` does not exist (the cell never finished).
    Missing,
    /// The record or rows are unreadable, or disagree with each other or with the file name:
    /// what is wrong, naming the file.
    Damaged(String),
}

impl std::fmt::Display for CellProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CellProblem::Missing => f.write_str("the cell has not finished (no record)"),
            CellProblem::Damaged(m) => f.write_str(m),
        }
    }
}

/// Reads `cells_dir/ID.json` and `cells_dir/ID.csv` and checks them against each other: the
/// record's `id` is the file's, and the rows file's sha256 is the record's `rows_sha256` (a
/// record without one, from an older version, cannot be checked and is refused).
///
/// # Errors
/// [`CellProblem::Missing`] when the record does not exist; [`CellProblem::Damaged`] naming
/// the file and the mismatch otherwise.
pub fn read_cell(cells_dir: &Path, id: &str) -> std::result::Result<StoredCell, CellProblem> {
    let json = cells_dir.join(format!("{id}.json"));
    let csv_path = cells_dir.join(format!("{id}.csv"));
    let bytes = match std::fs::read(&json) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CellProblem::Missing),
        Err(e) => {
            return Err(CellProblem::Damaged(format!(
                "cannot read {}: {e}",
                json.display()
            )))
        }
    };
    let record: CellRecord = serde_json::from_slice(&bytes).map_err(|e| {
        CellProblem::Damaged(format!(
            "{}: not a chunkbench cell record ({e})",
            json.display()
        ))
    })?;
    if record.id != id {
        return Err(CellProblem::Damaged(format!(
            "{}: field `id` is {:?} but the file is named for cell {id} (renamed or edited)",
            json.display(),
            record.id
        )));
    }
    if record.record_sha256.is_empty() {
        return Err(CellProblem::Damaged(format!(
            "{} was written by an older chunkbench and holds no checksum of itself, so its \
             summary cannot be checked",
            json.display()
        )));
    }
    if !record_is_intact(&bytes, &record) {
        return Err(CellProblem::Damaged(format!(
            "{} is not the record chunkbench wrote (its record_sha256 does not match its \
             text): it was edited after the cell finished",
            json.display()
        )));
    }
    let csv = std::fs::read(&csv_path).map_err(|e| {
        CellProblem::Damaged(format!(
            "cannot read {} (the rows of {}): {e}",
            csv_path.display(),
            json.display()
        ))
    })?;
    if record.rows_sha256.is_empty() {
        return Err(CellProblem::Damaged(format!(
            "{} was written by an older chunkbench and holds no checksum of {}, so the rows \
             cannot be checked",
            json.display(),
            csv_path.display()
        )));
    }
    let sha = datasets::io::sha256_hex(&csv);
    if sha != record.rows_sha256 {
        return Err(CellProblem::Damaged(format!(
            "{} is not the file its record {} was written with (sha256 {}…, recorded {}…): \
             the rows were edited or torn after the cell finished",
            csv_path.display(),
            json.display(),
            &sha[..12],
            &record.rows_sha256[..record.rows_sha256.len().min(12)]
        )));
    }
    Ok(StoredCell { record, csv })
}

/// Where a cell record was read from, for [`check_consistent`]'s messages.
pub type Located<'a> = (&'a CellRecord, &'a Path);

/// Checks that the cells of one run were computed on one version of everything they share,
/// so that no comparison inside the run pairs results of two data versions, models or code
/// versions (a merge of shards run before and after an edit): all cells by the same code;
/// the cells of a dataset on one dataset manifest; and every input shared by cells that read
/// the same thing on one content — `dataset/…` per dataset, `strategy/…` per dataset ×
/// strategy, `reader/…` per reader, and the rest (`embedder/…`, `cost/…`) across the run.
///
/// # Errors
/// The first disagreement, naming both cells, where each was read from, both values and the
/// fix (re-run the out-of-date cells).
pub fn check_consistent(cells: &[Located<'_>]) -> Result<()> {
    use std::collections::BTreeMap;
    let fix = "re-run the cells computed on the old version (run the config again into one \
               directory, or re-run the shard), then assemble or merge again";
    let label = |(r, at): &Located<'_>| {
        format!(
            "cell {} ({} × {} × {} × k={} × {}, in {})",
            r.id,
            r.cell.dataset,
            r.cell.strategy,
            r.cell.retriever,
            r.cell.depth_label(),
            r.cell.reader,
            at.display()
        )
    };
    let mut seen: BTreeMap<(String, String), (String, usize)> = BTreeMap::new();
    for (i, c) in cells.iter().enumerate() {
        let r = c.0;
        let mut facts: Vec<((String, String), String)> = vec![
            (("code".into(), String::new()), r.code.clone()),
            (
                ("dataset manifest".into(), r.cell.dataset.clone()),
                r.dataset_manifest_sha256.clone(),
            ),
        ];
        for (k, v) in &r.inputs {
            let scope = if k.starts_with("dataset/") {
                r.cell.dataset.clone()
            } else if k.starts_with("strategy/") {
                format!("{} × {}", r.cell.dataset, r.cell.strategy)
            } else if k.starts_with("reader/") {
                r.cell.reader.clone()
            } else {
                String::new()
            };
            facts.push(((format!("input {k}"), scope), v.clone()));
        }
        for (key, value) in facts {
            match seen.get(&key) {
                None => {
                    seen.insert(key, (value, i));
                }
                Some((v0, j)) if *v0 != value => {
                    let what = if key.1.is_empty() {
                        key.0.clone()
                    } else {
                        format!("{} of `{}`", key.0, key.1)
                    };
                    anyhow::bail!(
                        "the run mixes two versions of its {what}: {} has {v0:?}, {} has \
                         {value:?}; {fix}",
                        label(&cells[*j]),
                        label(c)
                    );
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Files `ID.ext` in `dir` whose `ID` is not in `ids`, sorted (an unreadable `dir` has none).
pub fn foreign_files(
    dir: &Path,
    ext: &str,
    ids: &std::collections::BTreeSet<String>,
) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == ext)
                && p.file_stem()
                    .and_then(|s| s.to_str())
                    .is_some_and(|s| !ids.contains(s))
        })
        .collect();
    out.sort();
    out
}

/// Aggregates one cell's rows (means over questions; the interval is [`stats::wilson`]'s).
pub fn summarize(rows: &[QuestionRow]) -> CellSummary {
    let n = rows.len();
    let read = rows.iter().filter(|r| r.correct.is_some()).count();
    let correct = rows.iter().filter(|r| r.correct == Some(1)).count();
    // Rows are all read or all unread (a cell has a reader or not); accuracy is over the
    // read ones, and absent when there are none.
    let ci = stats::wilson(correct as u64, read as u64, stats::DEFAULT_CONFIDENCE);
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
    for f in rows.iter().filter_map(|r| r.failure) {
        *failures.entry(f.as_str().to_string()).or_insert(0) += 1;
    }
    CellSummary {
        failures,
        records: RecordSummaries::of(rows),
        metrics: MetricMeans::of(rows),
        n,
        correct,
        accuracy: (read > 0).then(|| correct as f64 / read as f64),
        accuracy_ci_low: ci.map(|i| i.lower),
        accuracy_ci_high: ci.map(|i| i.upper),
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
        degenerate_passages: 0,
        degenerate_queries: 0,
    }
}

/// A cell compared with its baseline cell on the same questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline cell's id.
    pub baseline_cell_id: String,
    /// Accuracy delta, McNemar, bootstrap interval and minimum detectable effect.
    pub paired: stats::PairedComparison,
    /// Holm-adjusted p when accuracy is the run's primary metric (the planned family,
    /// [`Planned`]); `None` when accuracy is exploratory (a retrieval metric is primary).
    pub holm_p: Option<f64>,
    /// Reduction of mean words retrieved against the baseline, in % (positive = fewer words).
    pub words_reduction_pct: Option<f64>,
    /// Paired bootstrap 95 % interval of that reduction; None when the baseline retrieved
    /// no words for some question (the ratio is then undefined on some resamples).
    pub words_reduction_ci: Option<stats::Interval>,
}

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
fn around_metrics<R>(
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
const FAILURE_COLUMN: Column<QuestionRow> = {
    use Getter::*;
    col!(failure, Text, |r| r.failure.map_or("", Failure::as_str))
};

/// The last column of [`QuestionRow`], after the strategy records: the reader's reply.
const REPLY_COLUMN: Column<QuestionRow> = {
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
fn join_passages(spans: &[PassageSpan]) -> String {
    spans
        .iter()
        .map(PassageSpan::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

fn join_reals(xs: &[f64]) -> String {
    xs.iter()
        .map(|x| format!("{x:.6}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn field_text<R>(get: &Getter<R>, r: &R) -> String {
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
fn polars_column<R>(name: &str, get: &Getter<R>, rows: &[R]) -> polars::prelude::Column {
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
fn list_series(
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

/// serde for a score list stored as one `;`-separated CSV field (6 decimals).
mod scores_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(xs: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::join_reals(xs))
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
        s.serialize_str(&super::join_passages(spans))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Metric values by name (the rest empty).
    fn values(named: &[(&str, f64)]) -> MetricValues {
        let mut v = MetricValues::default();
        for &(name, x) in named {
            v.set(
                retriever::metrics::registry::index_of(name).expect(name),
                Some(x),
            );
        }
        v
    }

    fn row() -> QuestionRow {
        QuestionRow {
            cell_id: "c".into(),
            dataset: "d".into(),
            strategy: "s".into(),
            retriever: "r".into(),
            k: 3,
            reader: "l".into(),
            question_id: "q1".into(),
            question_doc: "doc-1".into(),
            subject: "physics".into(),
            gold: Some(1),
            choice: Some(1),
            correct: Some(1),
            tied: 1,
            invalid: 0,
            scores: vec![0.1, -0.9],
            tie_break: vec![0.25, 1.5],
            passages: vec![
                PassageSpan::parse("d:0-10").unwrap(),
                PassageSpan::parse("d:20-31").unwrap(),
            ],
            passage_scores: vec![1.0, 0.25],
            words: 2,
            unique_words: 2,
            chars: 9,
            tokens: Some(3),
            evidence_hit: None,
            metrics: values(&[
                ("recall", 0.5),
                ("mrr", 1.0 / 3.0),
                ("span_recall_chars", 0.25),
                ("precision_omega", 0.5),
                ("answer_recall", 1.0),
            ]),
            failure: Some(Failure::Correct),
            records: RecordValues::of(
                &retriever::ear::RECORD,
                &[Some(3), Some(1), Some(5), Some(2), Some(0)],
            ),
            reply: "max=[0.1, \"0.9\"]\nnext line".into(),
        }
    }

    /// The column table without the metric columns is serde's field list, with serde's CSV
    /// text; the metric columns are the registry's names; a row reads back equal.
    #[test]
    fn columns_equal_serde_fields_and_text() {
        let r = QuestionRow {
            scores: vec![round6(0.1), round6(-0.9)],
            ..row()
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(&r).unwrap();
        let serde_csv = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let ours = String::from_utf8(rows_csv(std::slice::from_ref(&r)).unwrap()).unwrap();
        let cols = question_columns();
        let metric_cols: Vec<usize> = (0..cols.len())
            .filter(|&i| matches!(cols[i].get, Getter::Metric { .. }))
            .collect();
        assert_eq!(
            metric_cols
                .iter()
                .map(|&i| cols[i].name)
                .collect::<Vec<_>>(),
            METRICS.iter().map(|m| m.name).collect::<Vec<_>>()
        );
        let record_cols: Vec<usize> = (0..cols.len())
            .filter(|&i| matches!(cols[i].get, Getter::Record { .. }))
            .collect();
        assert_eq!(
            record_cols
                .iter()
                .map(|&i| cols[i].name)
                .collect::<Vec<_>>(),
            [
                "anchors",
                "anchor_match",
                "windows_before",
                "windows_after",
                "fallback"
            ]
        );
        let metric_cols: Vec<usize> = metric_cols.into_iter().chain(record_cols).collect();
        let without = |text: &str| -> Vec<Vec<String>> {
            csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(text.as_bytes())
                .records()
                .map(|rec| {
                    let rec = rec.unwrap();
                    (0..rec.len())
                        .filter(|i| !metric_cols.contains(i))
                        .map(|i| rec[i].to_string())
                        .collect()
                })
                .collect()
        };
        let serde_rows: Vec<Vec<String>> = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(serde_csv.as_bytes())
            .records()
            .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(without(&ours), serde_rows);
        let back = read_rows_csv(ours.as_bytes(), "x").unwrap();
        assert_eq!(back, vec![r]);
    }

    /// A metric value that is not a number names the file, line and column; a file without
    /// a metric's column (an older version's) reads it as empty.
    #[test]
    fn metric_columns_read_by_name() {
        let text = String::from_utf8(rows_csv(&[row()]).unwrap()).unwrap();
        let bad = text.replacen(",0.5,", ",half,", 1);
        let e = format!(
            "{:#}",
            read_rows_csv(bad.as_bytes(), "cells/x.csv").unwrap_err()
        );
        assert!(
            e.contains("cells/x.csv") && e.contains("line 2") && e.contains("`recall`"),
            "{e}"
        );
        let mut rdr = csv::Reader::from_reader(text.as_bytes());
        let headers = rdr.headers().unwrap().clone();
        let keep: Vec<usize> = (0..headers.len())
            .filter(|&i| &headers[i] != "answer_recall")
            .collect();
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(keep.iter().map(|&i| &headers[i])).unwrap();
        for rec in rdr.records() {
            let rec = rec.unwrap();
            w.write_record(keep.iter().map(|&i| &rec[i])).unwrap();
        }
        let old = w.into_inner().unwrap();
        let back = read_rows_csv(&old, "old.csv").unwrap();
        assert_eq!(back[0].metrics.get("answer_recall"), None);
        assert_eq!(back[0].metrics.get("recall"), Some(0.5));
    }

    /// A cell record's metric means are one JSON key per metric, in registry order, and read
    /// back equal; unknown keys are ignored.
    #[test]
    fn metric_means_round_trip_in_registry_order() {
        let s = summarize(&[row()]);
        let json = serde_json::to_string(&s).unwrap();
        let at: Vec<usize> = METRICS
            .iter()
            .map(|m| json.find(&format!("\"{}\":", m.name)).expect(m.name))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{json}");
        let back: CellSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let extra = json.replacen('{', "{\"retired_metric\": 0.5, ", 1);
        let back: CellSummary = serde_json::from_str(&extra).unwrap();
        assert_eq!(back, s);
    }

    /// A passage id splits from the right (a document id may hold `:`), prints back as it
    /// was read, and anything else is refused when a CSV is read, naming the file and line.
    #[test]
    fn passage_spans_round_trip_their_ids() {
        let p = PassageSpan::parse("a:b:10-20").unwrap();
        assert_eq!(
            (p.doc_id.as_str(), p.span.start, p.span.end),
            ("a:b", 10, 20)
        );
        assert_eq!(p.to_string(), "a:b:10-20");
        for bad in ["doc", "doc:5", "doc:x-3", "doc:9-3"] {
            assert_eq!(PassageSpan::parse(bad), None, "{bad}");
        }
        let text = String::from_utf8(rows_csv(&[row()]).unwrap()).unwrap();
        let bad = text.replacen("d:20-31", "d:20", 1);
        let e = format!(
            "{:#}",
            read_rows_csv(bad.as_bytes(), "cells/x.csv").unwrap_err()
        );
        assert!(e.contains("cells/x.csv") && e.contains("\"d:20\""), "{e}");
    }

    /// A strategy record's aggregates are one JSON object under its key, figures in
    /// declaration order (the cell records' bytes before the registry), and read back equal;
    /// a cell whose rows carry no record has no key.
    #[test]
    fn strategy_record_summaries_keep_their_json_form() {
        let other = QuestionRow {
            records: RecordValues::default(),
            ..row()
        };
        let s = summarize(&[row(), other.clone()]);
        let json = serde_json::to_string(&s).unwrap();
        assert!(
            json.contains(
                "\"ear\":{\"exact_match\":1,\"questions\":1,\"anchors_mean\":3.0,\
                 \"windows_before_mean\":5.0,\"windows_after_mean\":2.0,\"fallbacks\":0}"
            ),
            "{json}"
        );
        assert!(json.find("\"failures\"").unwrap() < json.find("\"ear\"").unwrap());
        let back: CellSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let none = serde_json::to_string(&summarize(&[other])).unwrap();
        assert!(!none.contains("\"ear\""), "{none}");
        let text = rows_csv(&[row()]).unwrap();
        let bad = String::from_utf8(text)
            .unwrap()
            .replacen(",5,2,0,", ",5,two,0,", 1);
        let e = format!("{:#}", read_rows_csv(bad.as_bytes(), "x.csv").unwrap_err());
        assert!(e.contains("`windows_after`") && e.contains("line 2"), "{e}");
    }

    /// A row of a cell without a reader: gold, choice and correct are empty in the CSV and
    /// read back as absent; its cell has no accuracy (never a 0).
    #[test]
    fn unread_rows_have_no_accuracy() {
        let r = QuestionRow {
            gold: None,
            choice: None,
            correct: None,
            scores: vec![],
            failure: None,
            ..row()
        };
        let text = rows_csv(std::slice::from_ref(&r)).unwrap();
        let back = read_rows_csv(&text, "x").unwrap();
        assert_eq!(back, vec![r.clone()]);
        let s = summarize(&[r.clone(), r]);
        assert_eq!(
            (s.n, s.correct, s.accuracy, s.accuracy_ci_low),
            (2, 0, None, None)
        );
        assert_eq!(s.metrics.get("recall"), Some(0.5));
        assert!(s.failures.is_empty());
    }

    #[test]
    fn empty_lists_round_trip() {
        let r = QuestionRow {
            scores: vec![],
            passages: vec![],
            passage_scores: vec![],
            ..row()
        };
        let back = read_rows_csv(&rows_csv(std::slice::from_ref(&r)).unwrap(), "x").unwrap();
        assert_eq!(back, vec![r]);
    }

    #[test]
    fn bad_score_names_the_file() {
        let mut csv = String::from_utf8(rows_csv(&[row()]).unwrap()).unwrap();
        csv = csv.replace("0.100000;", "zero;");
        let e = format!(
            "{:#}",
            read_rows_csv(csv.as_bytes(), "cells/x.csv").unwrap_err()
        );
        assert!(
            e.contains("cells/x.csv") && e.contains("`zero` is not a number"),
            "{e}"
        );
    }

    #[test]
    fn parquet_has_list_columns() {
        use polars::prelude::*;
        let rows = [
            row(),
            QuestionRow {
                evidence_hit: Some(1),
                scores: vec![0.5, 0.25, 0.125],
                ..row()
            },
        ];
        let bytes = table_parquet(&question_columns(), &rows).unwrap();
        let df = ParquetReader::new(std::io::Cursor::new(bytes))
            .finish()
            .unwrap();
        assert_eq!(df.height(), 2);
        assert_eq!(df.width(), question_columns().len());
        let names: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(
            names,
            question_columns()
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
        );
        let ev = df.column("evidence_hit").unwrap();
        assert_eq!(ev.null_count(), 1);
        assert_eq!(ev.dtype(), &DataType::UInt8);
        let scores = df
            .column("scores")
            .unwrap()
            .list()
            .expect("scores is a list column");
        assert_eq!(scores.get_as_series(0).unwrap().len(), 2);
        let third = scores.get_as_series(1).unwrap();
        assert_eq!(third.dtype(), &DataType::Float64);
        assert_eq!(third.f64().unwrap().get(2), Some(0.125));
        let passages = df
            .column("passages")
            .unwrap()
            .list()
            .expect("passages is a list column");
        let first = passages.get_as_series(0).unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(first.dtype(), &DataType::String);
    }

    #[test]
    fn parquet_of_no_rows_keeps_the_list_types() {
        use polars::prelude::*;
        let bytes = table_parquet(&question_columns(), &[]).unwrap();
        let df = ParquetReader::new(std::io::Cursor::new(bytes))
            .finish()
            .unwrap();
        assert_eq!((df.height(), df.width()), (0, question_columns().len()));
        let list = |c: &str| df.column(c).unwrap().dtype().clone();
        assert_eq!(list("scores"), DataType::List(Box::new(DataType::Float64)));
        assert_eq!(list("passages"), DataType::List(Box::new(DataType::String)));
    }

    #[test]
    fn empty_cell_has_no_nan() {
        let s = summarize(&[]);
        assert_eq!(s.n, 0);
        assert!(s.accuracy.is_none() && s.words_mean == 0.0 && s.evidence_hit_rate.is_none());
    }
}
