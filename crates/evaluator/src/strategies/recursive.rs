//! `kind: recursive` — LangChain `RecursiveCharacterTextSplitter` semantics
//! ([`chunker::RecursiveChunker`]).

use super::{check_tokenizer_field, common, Chunker, Params, StrategyStats};
use anyhow::{bail, Result};
use chunker::SizeLimit;
use chunker::{Chunk, Document, KeepSeparator, RecursiveChunker, Unit};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Recursive separator splitting, merged up to `size` with `overlap`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recursive {
    /// Size unit: `chars` (default, LangChain's `len`), `words` or `tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Chunk size in units (LangChain `chunk_size`).
    pub size: usize,
    /// Overlap (LangChain `chunk_overlap`; default 0): a count of units or a fraction of `size`.
    #[serde(default)]
    pub overlap: f64,
    /// tokenizer.json for `unit: tokens` (default [`super::DEFAULT_TOKENIZER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
    /// Separators, tried in order (default `["\n\n", "\n", " ", ""]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separators: Option<Vec<String>>,
    /// The separators are regular expressions (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator_regex: Option<bool>,
    /// `start` (default), `end` or `false` (LangChain `keep_separator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_separator: Option<String>,
    /// Trim chunks (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_whitespace: Option<bool>,
}

impl Recursive {
    fn unit(&self) -> Unit {
        self.unit.unwrap_or(Unit::Chars)
    }

    fn keep(&self) -> Result<KeepSeparator> {
        Ok(match self.keep_separator.as_deref() {
            None | Some("true") => KeepSeparator::Start,
            Some(v) => v.parse()?,
        })
    }
}

impl Params for Recursive {
    const KIND: &'static str = "recursive";
    const SUMMARY: &'static str = "LangChain RecursiveCharacterTextSplitter; `unit` chars (default), words or tokens, `size`, `overlap`, `separators`, `separator_regex`, `keep_separator` (start), `strip_whitespace` (true)";

    fn tokenizer_file(&self) -> Option<PathBuf> {
        common::tokenizer_file(self.unit(), &self.tokenizer)
    }

    fn check(&self) -> Result<()> {
        check_tokenizer_field(self.unit(), &self.tokenizer)?;
        common::check_size_overlap(self.size, self.overlap)?;
        self.keep()?;
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let overlap = common::overlap_units(self.overlap, self.size)?;
        let tokenizer = common::load_tokenizer(self.unit(), &self.tokenizer)?;
        let mut r = RecursiveChunker::new(self.size, overlap)?
            .with_keep_separator(self.keep()?)
            .with_strip_whitespace(self.strip_whitespace.unwrap_or(true))
            .with_unit(self.unit(), tokenizer)?;
        if let Some(seps) = &self.separators {
            r = r.with_separators(seps.clone(), self.separator_regex.unwrap_or(false))?;
        } else if self.separator_regex == Some(true) {
            bail!("field `separator_regex`: give `separators` to interpret as patterns");
        }
        Ok(Box::new(RecursiveStrategy(r)))
    }
}

struct RecursiveStrategy(RecursiveChunker);

impl Chunker for RecursiveStrategy {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        use rayon::prelude::*;
        let per: Vec<(Vec<Chunk>, chunker::RecursiveStats)> = docs
            .par_iter()
            .map(|d| self.0.chunk_with_stats(d))
            .collect();
        // Pieces with no separator left, measured as LangChain measures them.
        let stats = StrategyStats {
            over_size: per.iter().map(|(_, s)| s.oversized).sum(),
            ..Default::default()
        };
        Ok((per.into_iter().flat_map(|(c, _)| c).collect(), stats))
    }

    fn size_limit(&self) -> Option<SizeLimit> {
        SizeLimit::new(self.0.chunk_size(), self.0.sizer().clone()).ok()
    }
}
