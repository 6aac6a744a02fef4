//! `kind: fixed` — fixed-size windows with overlap ([`chunker::FixedConfig`]).

use super::{check_tokenizer_field, common, Chunker, Params, StrategyStats};
use anyhow::Result;
use chunker::SizeLimit;
use chunker::{Chunk, Document, FixedConfig, Unit};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Fixed-size windows of `size` units advancing by `size - overlap`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixed {
    /// Size unit: `words` (default), `chars` or `tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Window size in units.
    pub size: usize,
    /// Overlap between consecutive windows (default 0): a whole number is a count of units; a
    /// fraction in (0, 1) is that share of `size`, rounded down.
    #[serde(default)]
    pub overlap: f64,
    /// tokenizer.json (or a model directory holding one) for `unit: tokens` (default
    /// [`super::DEFAULT_TOKENIZER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
}

impl Fixed {
    fn unit(&self) -> Unit {
        self.unit.unwrap_or(Unit::Words)
    }
}

impl Params for Fixed {
    const KIND: &'static str = "fixed";
    const SUMMARY: &'static str = "fixed-size windows; `unit` words (default), chars or tokens (`tokenizer`), `size`, `overlap` (a count, or a fraction of `size`)";

    fn tokenizer_file(&self) -> Option<PathBuf> {
        common::tokenizer_file(self.unit(), &self.tokenizer)
    }

    fn check(&self) -> Result<()> {
        check_tokenizer_field(self.unit(), &self.tokenizer)?;
        common::check_size_overlap(self.size, self.overlap)?;
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let overlap = common::overlap_units(self.overlap, self.size)?;
        let tokenizer = common::load_tokenizer(self.unit(), &self.tokenizer)?;
        Ok(Box::new(FixedChunker(FixedConfig::with_unit(
            self.size,
            overlap,
            self.unit(),
            tokenizer,
        )?)))
    }
}

/// Fixed windows; also EAR's parents.
pub(super) struct FixedChunker(pub(super) FixedConfig);

impl Chunker for FixedChunker {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        use rayon::prelude::*;
        // Within their size by construction, in the chunker's own measure (re-tokenising a
        // token window can count differently), so `over_size` stays 0.
        let chunks = docs.par_iter().flat_map_iter(|d| self.0.chunk(d)).collect();
        Ok((chunks, StrategyStats::default()))
    }

    fn size_limit(&self) -> Option<SizeLimit> {
        SizeLimit::new(self.0.size(), self.0.sizer().clone()).ok()
    }
}
