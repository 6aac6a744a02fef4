//! `kind: max-min` — Max-Min semantic chunking (Kiss, Nagy & Szilágyi 2025; reference
//! implementation hsdslab/MaxMinChunking) over sentence embeddings ([`chunker::MaxMinConfig`]).

use super::{
    check_tokenizer_field, common, Chunker, EmbedderWindow, NoOverlap, Params, StrategyStats,
};
use anyhow::{Context, Result};
use chunker::maxmin::{Comparison, GroupUnit};
use chunker::SizeLimit;
use chunker::{Chunk, Document, HfTokenizer, MaxMinConfig, Sizer, Span, Unit};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// Max-Min's rule and options, with optional size limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaxMin {
    /// Unit of `size` and `min_size`: `words` (default), `chars` or `tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Optional maximum chunk size in units: no chunk exceeds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// Optional minimum chunk size in units; smaller chunks merge into a neighbour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<usize>,
    /// `fixed_threshold` (reference 0.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_threshold: Option<f64>,
    /// `c` (reference 0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<f64>,
    /// `init_constant` (reference 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_constant: Option<f64>,
    /// `strict` (reference `>`, default) or `inclusive` (`>=`, the Milvus write-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<String>,
    /// Group `sentence`s (default) or `paragraph`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// No overlap; only 0 is accepted ([`NoOverlap`]).
    #[serde(default)]
    pub overlap: NoOverlap,
    /// tokenizer.json for `unit: tokens` (default [`super::DEFAULT_TOKENIZER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
}

impl MaxMin {
    fn unit(&self) -> Unit {
        self.unit.unwrap_or(Unit::Words)
    }

    fn config(&self, tokenizer: Option<Arc<HfTokenizer>>) -> Result<MaxMinConfig> {
        let mut m = MaxMinConfig::reference();
        if let Some(v) = self.fixed_threshold {
            m.fixed_threshold = v;
        }
        if let Some(v) = self.c {
            m.c = v;
        }
        if let Some(v) = self.init_constant {
            m.init_constant = v;
        }
        m.comparison = match self.comparison.as_deref() {
            None => Comparison::Strict,
            Some(v) => v.parse()?,
        };
        m.unit = match self.group.as_deref() {
            None => GroupUnit::Sentence,
            Some(v) => v
                .parse()
                .map_err(|e| anyhow::anyhow!("field `group`: {e}"))?,
        };
        let limit = |n: usize, field: &str| -> Result<SizeLimit> {
            let sizer = match self.unit() {
                Unit::Tokens => match &tokenizer {
                    Some(t) => Sizer::Tokens(t.clone()),
                    // Checked without loading the tokenizer: any positive size is valid.
                    None => Sizer::Words,
                },
                Unit::Words => Sizer::Words,
                Unit::Chars => Sizer::Chars,
            };
            SizeLimit::new(n, sizer).with_context(|| format!("field `{field}`"))
        };
        m.max_chunk = self.size.map(|n| limit(n, "size")).transpose()?;
        m.min_chunk = self.min_size.map(|n| limit(n, "min_size")).transpose()?;
        m.validate()?;
        Ok(m)
    }
}

impl Params for MaxMin {
    const KIND: &'static str = "max-min";
    const SUMMARY: &'static str = "Max-Min semantic chunking over sentence embeddings (the run's embedder); `fixed_threshold` (0.6), `c` (0.9), `init_constant` (1.5), `comparison` (strict), `group` (sentence), `size` (max), `min_size`, `unit`";

    fn needs_embedder(&self) -> bool {
        true
    }

    fn tokenizer_file(&self) -> Option<PathBuf> {
        common::tokenizer_file(self.unit(), &self.tokenizer)
    }

    fn check(&self) -> Result<()> {
        check_tokenizer_field(self.unit(), &self.tokenizer)?;
        self.config(None)?;
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let tokenizer = common::load_tokenizer(self.unit(), &self.tokenizer)?;
        Ok(Box::new(MaxMinChunker {
            config: self.config(tokenizer)?,
        }))
    }
}

/// Max-Min over sentence (or paragraph) embeddings. A unit longer than the maximum size
/// (`config.max_chunk`) is split at that size in its unit before embedding, and a unit longer
/// than the embedder's input window is split at the window, so no chunk exceeds `size` and the
/// model never drops a unit's tail (docs/reference.md, "Size limits").
struct MaxMinChunker {
    config: MaxMinConfig,
}

impl Chunker for MaxMinChunker {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        embedder: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        use rayon::prelude::*;
        let config = &self.config;
        let mut stats = StrategyStats::default();
        let embedder =
            embedder.context("this strategy needs an embedder (the run's `embedder`)")?;
        let window = EmbedderWindow::of(embedder).context(
            "max-min needs an embedder with a local tokenizer and a known input window: give a \
             server embedder `tokenizer` (the served model's tokenizer.json) and `max_tokens`",
        )?;
        let units: Vec<(Vec<Span>, usize, usize)> = docs
            .par_iter()
            .map(|d| {
                // The window first, then the size: pieces within both limits, and exactly the
                // pre-size-limit units whenever `size` is the larger bound.
                let (mut units, w) =
                    chunker::split_oversized(&d.text, &config.units(&d.text), &window.limit);
                let mut at_size = 0;
                if let Some(max) = &config.max_chunk {
                    let (u, s) = chunker::split_oversized(&d.text, &units, max);
                    units = u;
                    at_size = s.units_split;
                }
                (units, at_size, w.units_split)
            })
            .collect();
        for (_, at_size, at_window) in &units {
            stats.units_split_at_size += at_size;
            stats.units_split_before_embedding += at_window;
        }
        let texts: Vec<&str> = docs
            .iter()
            .zip(&units)
            .flat_map(|(d, (us, ..))| us.iter().map(|u| &d.text[u.start..u.end]))
            .collect();
        stats.embedded_units = texts.len();
        let mut vectors = embedder.embed(&texts)?.into_iter();
        let mut out = Vec::new();
        for (d, (us, ..)) in docs.iter().zip(&units) {
            let vs: Vec<Vec<f32>> = vectors.by_ref().take(us.len()).collect();
            let (c, s) = config
                .chunk_with_stats(d, us, &vs)
                .with_context(|| format!("max-min on document {}", d.id))?;
            stats
                .min_similarity
                .extend(s.min_similarity.iter().copied());
            stats.forced_splits += s.forced_splits;
            stats.merges += s.merges;
            stats.degenerate_vectors += s.degenerate_vectors;
            out.extend(c);
        }
        if let Some(limit) = &config.max_chunk {
            stats.over_size = common::count_over_size(docs, &out, limit);
        }
        Ok((out, stats))
    }

    fn size_limit(&self) -> Option<SizeLimit> {
        self.config.max_chunk.clone()
    }
}
