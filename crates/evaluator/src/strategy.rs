//! Strategy entries of a run config (`strategies.NAME`) and the chunkers they build.
//!
//! One flat, strictly parsed entry per strategy (so YAML errors keep their line numbers);
//! [`StrategyConfig::check`] rejects fields that do not apply to the kind, and
//! [`StrategyConfig::build`] turns the entry into a [`Strategy`] that chunks documents.

use anyhow::{bail, Context, Result};
use chunker::{Chunk, Document, FixedConfig, HfTokenizer, KeepSeparator, RecursiveChunker, Unit};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// Default tokenizer for `unit: tokens` (the all-MiniLM-L6-v2 directory that
/// `chunkbench models fetch` unpacks).
pub const DEFAULT_TOKENIZER: &str = "models/all-MiniLM-L6-v2/tokenizer.json";

/// Chunking strategy kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    /// Fixed-size windows with overlap ([`chunker::FixedConfig`]); unit words by default.
    Fixed,
    /// LangChain `RecursiveCharacterTextSplitter` semantics ([`chunker::RecursiveChunker`]);
    /// unit chars by default.
    Recursive,
}

/// One strategy entry (`strategies.NAME`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategyConfig {
    /// Strategy kind.
    pub kind: StrategyKind,
    /// Size unit: `words`, `chars` or `tokens` (default words for fixed, chars for recursive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Chunk size in `unit`s.
    pub size: usize,
    /// Overlap between consecutive chunks (default 0): a whole number is a count of `unit`s;
    /// a fraction in (0, 1) is that share of `size`, rounded down (0.2 of 100 words = 20).
    #[serde(default)]
    pub overlap: f64,
    /// tokenizer.json (or a model directory holding one) for `unit: tokens`
    /// (default [`DEFAULT_TOKENIZER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
    /// Recursive only: separators, tried in order (default `["\n\n", "\n", " ", ""]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separators: Option<Vec<String>>,
    /// Recursive only: separators are regular expressions (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator_regex: Option<bool>,
    /// Recursive only: `start` (default), `end` or `false` (LangChain `keep_separator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_separator: Option<String>,
    /// Recursive only: trim chunks (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_whitespace: Option<bool>,
}

/// A built chunking strategy.
#[derive(Debug, Clone)]
pub enum Strategy {
    /// Fixed-size windows.
    Fixed(FixedConfig),
    /// Recursive separator splitting.
    Recursive(RecursiveChunker),
}

impl Strategy {
    /// Chunks one document; chunks are exact byte spans of `doc.text`, in order.
    pub fn chunk(&self, doc: &Document) -> Vec<Chunk> {
        match self {
            Strategy::Fixed(f) => f.chunk(doc),
            Strategy::Recursive(r) => r.chunk(doc),
        }
    }
}

impl StrategyConfig {
    /// A fixed-size word entry (`kind: fixed, unit: words`).
    pub fn fixed_words(size: usize, overlap: usize) -> Self {
        StrategyConfig {
            kind: StrategyKind::Fixed,
            unit: Some(Unit::Words),
            size,
            overlap: overlap as f64,
            tokenizer: None,
            separators: None,
            separator_regex: None,
            keep_separator: None,
            strip_whitespace: None,
        }
    }

    /// The unit in force (the kind's default when not given).
    pub fn unit(&self) -> Unit {
        self.unit.unwrap_or(match self.kind {
            StrategyKind::Fixed => Unit::Words,
            StrategyKind::Recursive => Unit::Chars,
        })
    }

    /// The overlap in units: whole numbers as given, fractions in (0, 1) of `size`.
    ///
    /// # Errors
    /// A negative, non-finite or non-integer value of 1 or more, naming the field.
    pub fn overlap_units(&self) -> Result<usize> {
        let o = self.overlap;
        if o.is_finite() && o >= 0.0 && o.fract() == 0.0 {
            Ok(o as usize)
        } else if o > 0.0 && o < 1.0 {
            Ok((self.size as f64 * o).floor() as usize)
        } else {
            bail!(
                "field `overlap`: {o} is neither a whole number of units nor a fraction in (0, 1)"
            )
        }
    }

    fn keep(&self) -> Result<KeepSeparator> {
        Ok(match self.keep_separator.as_deref() {
            None | Some("start") | Some("true") => KeepSeparator::Start,
            Some("end") => KeepSeparator::End,
            Some("false") => KeepSeparator::Discard,
            Some(other) => {
                bail!("field `keep_separator`: {other:?} is not one of start, end, false")
            }
        })
    }

    /// Checks the entry without loading anything: fields that do not apply to the kind, the
    /// overlap, and the chunker's own size/overlap rules.
    ///
    /// # Errors
    /// The first problem, naming the field.
    pub fn check(&self) -> Result<()> {
        if self.kind == StrategyKind::Fixed {
            for (field, set) in [
                ("separators", self.separators.is_some()),
                ("separator_regex", self.separator_regex.is_some()),
                ("keep_separator", self.keep_separator.is_some()),
                ("strip_whitespace", self.strip_whitespace.is_some()),
            ] {
                if set {
                    bail!("field `{field}` applies to kind `recursive`, not `fixed`");
                }
            }
        }
        if self.tokenizer.is_some() && self.unit() != Unit::Tokens {
            bail!("field `tokenizer` applies only with `unit: tokens`");
        }
        let overlap = self.overlap_units()?;
        if self.size == 0 {
            bail!("field `size` must be at least 1");
        }
        if overlap >= self.size && !(self.kind == StrategyKind::Recursive && overlap == 0) {
            bail!(
                "field `overlap` ({overlap}) must be smaller than field `size` ({})",
                self.size
            );
        }
        self.keep()?;
        Ok(())
    }

    /// The tokenizer path for `unit: tokens`.
    pub fn tokenizer_path(&self) -> PathBuf {
        self.tokenizer
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_TOKENIZER))
    }

    /// Builds the chunker (loading the tokenizer for `unit: tokens`).
    ///
    /// # Errors
    /// [`StrategyConfig::check`] errors, a tokenizer that cannot be loaded (with the fix), and
    /// invalid separators, naming the field.
    pub fn build(&self) -> Result<Strategy> {
        self.check()?;
        let overlap = self.overlap_units()?;
        let tokenizer = match self.unit() {
            Unit::Tokens => {
                let path = self.tokenizer_path();
                Some(Arc::new(HfTokenizer::from_file(&path).with_context(
                    || format!("field `tokenizer`: cannot load {}", path.display()),
                )?))
            }
            _ => None,
        };
        Ok(match self.kind {
            StrategyKind::Fixed => Strategy::Fixed(FixedConfig::with_unit(
                self.size,
                overlap,
                self.unit(),
                tokenizer,
            )?),
            StrategyKind::Recursive => {
                let mut r = RecursiveChunker::new(self.size, overlap)?
                    .with_keep_separator(self.keep()?)
                    .with_strip_whitespace(self.strip_whitespace.unwrap_or(true))
                    .with_unit(self.unit(), tokenizer)?;
                if let Some(seps) = &self.separators {
                    r = r.with_separators(seps.clone(), self.separator_regex.unwrap_or(false))?;
                } else if self.separator_regex == Some(true) {
                    bail!("field `separator_regex`: give `separators` to interpret as patterns");
                }
                Strategy::Recursive(r)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        Document {
            id: "d".into(),
            title: String::new(),
            text: text.into(),
            source: String::new(),
            license: String::new(),
        }
    }

    #[test]
    fn builds_fixed_and_recursive() {
        let d = doc("Apples are red. Bananas are yellow. Cherries are dark.");
        let f = StrategyConfig::fixed_words(3, 0).build().unwrap();
        assert_eq!(f.chunk(&d).len(), 3);
        let mut r = StrategyConfig::fixed_words(20, 0);
        r.kind = StrategyKind::Recursive;
        r.unit = None;
        r.separators = Some(vec![". ".into()]);
        r.keep_separator = Some("end".into());
        let chunks = r.build().unwrap().chunk(&d);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text(&d)).collect();
        assert_eq!(
            texts,
            [
                "Apples are red.",
                "Bananas are yellow.",
                "Cherries are dark."
            ]
        );
    }

    #[test]
    fn misplaced_fields_are_named() {
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.separators = Some(vec![]);
        assert!(c.check().unwrap_err().to_string().contains("`separators`"));
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.tokenizer = Some("x".into());
        assert!(c.check().unwrap_err().to_string().contains("`tokenizer`"));
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.kind = StrategyKind::Recursive;
        c.keep_separator = Some("middle".into());
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("`keep_separator`"));
        let c = StrategyConfig::fixed_words(10, 10);
        assert!(c.check().unwrap_err().to_string().contains("`overlap`"));
    }

    #[test]
    fn missing_tokenizer_names_the_fix() {
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.unit = Some(Unit::Tokens);
        c.tokenizer = Some("/nonexistent/tokenizer.json".into());
        let e = format!("{:#}", c.build().unwrap_err());
        assert!(
            e.contains("`tokenizer`") && e.contains("models fetch"),
            "{e}"
        );
    }
}
