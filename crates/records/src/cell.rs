//! One cell: its coordinates ([`CellKey`], with its budget and embedder), its record
//! ([`CellRecord`], `cells/ID.json`, written with its own checksum) and aggregates
//! ([`CellSummary`]: metric means, strategy-record summaries).

use crate::inputs::CellInputs;
use crate::*;
use anyhow::{Context, Result};
use retriever::metrics::METRICS;
use retriever::records::{FigureValue, RecordSummary, RecordValues, RECORDS};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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
pub(crate) fn cell_record_bytes(rec: &CellRecord, sha: &str) -> Result<Vec<u8>> {
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
pub(crate) fn record_is_intact(bytes: &[u8], rec: &CellRecord) -> bool {
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

pub(crate) fn is_zero(n: &usize) -> bool {
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
pub(crate) struct Figures<'a>(usize, &'a RecordSummary);

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
