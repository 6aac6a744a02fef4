//! YAML run configuration and its expansion into cells.
//!
//! A config names datasets, strategies, retrievers, readers and the k list; every
//! combination is a [`Cell`] whose id is a hash of its resolved configuration (DESIGN.md §1).
//! Parsing is strict: unknown keys are rejected with the key path, line and column and, where
//! a known key is close, a "did you mean" suggestion.

use crate::io::sha256_hex;
use anyhow::{bail, Context, Result};
use chunker::FixedConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Chunking strategy kinds available in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    /// Fixed-size windows ([`chunker::FixedConfig`]).
    Fixed,
}

/// Units a fixed-size strategy can count in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeUnit {
    /// Whitespace-separated words (DESIGN.md §3).
    Words,
}

/// One strategy entry (`strategies.NAME`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategyConfig {
    /// Strategy kind.
    pub kind: StrategyKind,
    /// Size unit (default words).
    #[serde(default = "default_unit")]
    pub unit: SizeUnit,
    /// Chunk size in `unit`s.
    pub size: usize,
    /// Overlap between consecutive chunks in `unit`s (default 0).
    #[serde(default)]
    pub overlap: usize,
}

fn default_unit() -> SizeUnit {
    SizeUnit::Words
}

/// Retriever kinds available in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetrieverKind {
    /// Okapi BM25 ([`retriever::Bm25`]).
    Bm25,
}

/// What text is sent as the retrieval query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueryForm {
    /// The question alone.
    #[serde(rename = "question")]
    Question,
    /// The question followed by all option texts.
    #[serde(rename = "question+options")]
    QuestionOptions,
}

/// One retriever entry (`retrievers.NAME`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrieverConfig {
    /// Retriever kind.
    pub kind: RetrieverKind,
    /// Query form (default `question+options`).
    #[serde(default = "default_query")]
    pub query: QueryForm,
    /// BM25 k1 (default 1.2).
    #[serde(default = "default_k1")]
    pub k1: f64,
    /// BM25 b (default 0.75).
    #[serde(default = "default_b")]
    pub b: f64,
}

fn default_query() -> QueryForm {
    QueryForm::QuestionOptions
}
fn default_k1() -> f64 {
    1.2
}
fn default_b() -> f64 {
    0.75
}

/// Reader kinds available in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReaderKind {
    /// The lexical baseline ([`reader::LexicalReader`]).
    Lexical,
}

/// One reader entry (`readers.NAME`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReaderConfig {
    /// Reader kind.
    pub kind: ReaderKind,
}

/// The whole run configuration (a YAML file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Run name; outputs go to `output/NAME/`.
    pub name: String,
    /// Dataset names, looked up in the dataset store (`data/NAME/`).
    pub datasets: Vec<String>,
    /// Use only the first N questions of each dataset (default: all).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Strategies by name.
    pub strategies: BTreeMap<String, StrategyConfig>,
    /// Retrievers by name.
    pub retrievers: BTreeMap<String, RetrieverConfig>,
    /// Top-k values (default [3, 8]).
    #[serde(default = "default_k")]
    pub k: Vec<usize>,
    /// Readers by name.
    pub readers: BTreeMap<String, ReaderConfig>,
    /// The strategy whose cells the report compares against (default: the first by name).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Seed for every random choice of the run (default 0).
    #[serde(default)]
    pub seed: u64,
    /// Paired-bootstrap resamples for the intervals of deltas (default 10,000).
    #[serde(default = "default_resamples")]
    pub bootstrap_resamples: usize,
    /// Root directory for run outputs (default `results/runs`).
    #[serde(default = "default_output")]
    pub output: PathBuf,
}

fn default_resamples() -> usize {
    crate::stats::DEFAULT_RESAMPLES
}
fn default_k() -> Vec<usize> {
    vec![3, 8]
}
fn default_output() -> PathBuf {
    PathBuf::from("results/runs")
}

/// One fully resolved combination of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Dataset name.
    pub dataset: String,
    /// Strategy name and its resolved parameters.
    pub strategy: String,
    /// Resolved strategy parameters.
    pub strategy_config: StrategyConfig,
    /// Retriever name.
    pub retriever: String,
    /// Resolved retriever parameters.
    pub retriever_config: RetrieverConfig,
    /// Passages retrieved per question.
    pub k: usize,
    /// Reader name.
    pub reader: String,
    /// Resolved reader parameters.
    pub reader_config: ReaderConfig,
    /// Question limit applied to the dataset.
    pub limit: Option<usize>,
    /// Run seed.
    pub seed: u64,
}

impl Cell {
    /// Stable id: the first 16 hex digits of the sha256 of the cell's canonical JSON.
    pub fn id(&self) -> String {
        let json = serde_json::to_string(self).expect("cell serialises");
        sha256_hex(json.as_bytes())[..16].to_string()
    }
}

/// Suggests the closest candidate for a misspelt key (edit distance ≤ 3).
fn did_you_mean(message: &str) -> Option<String> {
    let unknown = message.split("unknown field `").nth(1)?.split('`').next()?;
    let expected = message.split("expected ").nth(1)?;
    let best = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|c| (strsim::levenshtein(unknown, c), c))
        .min()?;
    (best.0 <= 3).then(|| format!("did you mean `{}`?", best.1))
}

impl RunConfig {
    /// Parses and validates a config file.
    ///
    /// # Errors
    /// `FILE: KEY.PATH: problem at line L column C (did you mean ...)` for syntax errors,
    /// unknown keys and wrong types; `FILE: field KEY.PATH: problem` for invalid values
    /// (e.g. `strategies.fixed-100.overlap` not smaller than `size`).
    pub fn load(path: &Path) -> Result<RunConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and validates config text; `origin` names it in errors.
    ///
    /// # Errors
    /// As [`RunConfig::load`].
    pub fn parse(text: &str, origin: &str) -> Result<RunConfig> {
        let cfg: RunConfig = serde_yaml::from_str(text).map_err(|e| {
            let msg = e.to_string();
            match did_you_mean(&msg) {
                Some(hint) => anyhow::anyhow!("{origin}: {msg} ({hint})"),
                None => anyhow::anyhow!("{origin}: {msg}"),
            }
        })?;
        cfg.validate()
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<()> {
        if self.name.is_empty() || self.name.contains(['/', '\\']) || self.name.starts_with('.') {
            bail!(
                "field `name`: {:?} must be a plain directory name",
                self.name
            );
        }
        for (field, empty) in [
            ("datasets", self.datasets.is_empty()),
            ("strategies", self.strategies.is_empty()),
            ("retrievers", self.retrievers.is_empty()),
            ("readers", self.readers.is_empty()),
            ("k", self.k.is_empty()),
        ] {
            if empty {
                bail!("field `{field}`: list at least one entry");
            }
        }
        if let Some(&bad) = self.k.iter().find(|&&k| k == 0) {
            bail!("field `k`: top-k must be at least 1 (got {bad})");
        }
        if self.bootstrap_resamples == 0 {
            bail!("field `bootstrap_resamples`: must be at least 1 (default 10000)");
        }
        if self.limit == Some(0) {
            bail!("field `limit`: must be at least 1 question, or left out for all");
        }
        for (name, s) in &self.strategies {
            s.fixed()
                .map_err(|e| anyhow::anyhow!("field `strategies.{name}`: {e}"))?;
        }
        for (name, r) in &self.retrievers {
            if !(r.k1.is_finite() && r.k1 >= 0.0) {
                bail!("field `retrievers.{name}.k1`: must be a finite number >= 0");
            }
            if !(0.0..=1.0).contains(&r.b) {
                bail!("field `retrievers.{name}.b`: must be in [0, 1]");
            }
        }
        if let Some(b) = &self.baseline {
            if !self.strategies.contains_key(b) {
                bail!(
                    "field `baseline`: {b:?} is not a strategy of this config (have: {})",
                    self.strategies
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        Ok(())
    }

    /// The baseline strategy name: `baseline`, or the first strategy by name.
    pub fn baseline_strategy(&self) -> &str {
        self.baseline
            .as_deref()
            .or_else(|| self.strategies.keys().next().map(String::as_str))
            .unwrap_or("")
    }

    /// All cells in a stable order: dataset, strategy, retriever, k (as listed), reader.
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells = Vec::new();
        for d in &self.datasets {
            for (s, sc) in &self.strategies {
                for (r, rc) in &self.retrievers {
                    for &k in &self.k {
                        for (rd, rdc) in &self.readers {
                            cells.push(Cell {
                                dataset: d.clone(),
                                strategy: s.clone(),
                                strategy_config: sc.clone(),
                                retriever: r.clone(),
                                retriever_config: rc.clone(),
                                k,
                                reader: rd.clone(),
                                reader_config: rdc.clone(),
                                limit: self.limit,
                                seed: self.seed,
                            });
                        }
                    }
                }
            }
        }
        cells
    }
}

impl StrategyConfig {
    /// The validated fixed-size chunker for this entry.
    ///
    /// # Errors
    /// The chunker's configuration error, naming the field (`size`, `overlap`).
    pub fn fixed(&self) -> Result<FixedConfig, chunker::FixedError> {
        match (self.kind, self.unit) {
            (StrategyKind::Fixed, SizeUnit::Words) => FixedConfig::new(self.size, self.overlap),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "name: t
datasets: [sciq]
strategies:
  fixed-100: {kind: fixed, size: 100}
retrievers:
  bm25: {kind: bm25}
readers:
  lexical: {kind: lexical}
";

    #[test]
    fn parses_and_expands() {
        let c = RunConfig::parse(GOOD, "t.yaml").unwrap();
        assert_eq!(c.k, [3, 8]);
        let cells = c.cells();
        assert_eq!(cells.len(), 2);
        assert_ne!(cells[0].id(), cells[1].id());
        assert_eq!(cells[0].id(), c.cells()[0].id());
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let bad = GOOD.replace(
            "{kind: fixed, size: 100}",
            "\n    kind: fixed\n    sise: 100",
        );
        let e = RunConfig::parse(&bad, "t.yaml").unwrap_err().to_string();
        assert!(e.contains("t.yaml"), "{e}");
        assert!(
            e.contains("strategies.fixed-100") && e.contains("unknown field `sise`"),
            "{e}"
        );
        assert!(e.contains("line 6"), "{e}");
        assert!(e.contains("did you mean `size`"), "{e}");
        let bad = format!("{GOOD}topk: [3]\n");
        let e = RunConfig::parse(&bad, "t.yaml").unwrap_err().to_string();
        assert!(
            e.contains("unknown field `topk`") && e.contains("line 9"),
            "{e}"
        );
    }

    #[test]
    fn invalid_values_name_the_field() {
        let bad = GOOD.replace("size: 100}", "size: 100, overlap: 100}");
        let e = RunConfig::parse(&bad, "t.yaml").unwrap_err().to_string();
        assert!(
            e.contains("strategies.fixed-100") && e.contains("`overlap`"),
            "{e}"
        );
        let bad = format!("{GOOD}k: [0]\n");
        assert!(RunConfig::parse(&bad, "t")
            .unwrap_err()
            .to_string()
            .contains("field `k`"));
        let bad = format!("{GOOD}baseline: nope\n");
        assert!(RunConfig::parse(&bad, "t")
            .unwrap_err()
            .to_string()
            .contains("`baseline`"));
        let bad = GOOD.replace("kind: fixed", "kind: fixd");
        let e = RunConfig::parse(&bad, "t").unwrap_err().to_string();
        assert!(
            e.contains("unknown variant `fixd`") && e.contains("line 4"),
            "{e}"
        );
    }
}
