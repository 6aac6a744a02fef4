//! `kind: kamradt` — Kamradt / LangChain `SemanticChunker` breakpoints over embeddings of
//! buffered sentences ([`chunker::KamradtConfig`]).

use super::{
    check_tokenizer_field, common, sizer, Chunker, EmbedderWindow, NoOverlap, Params, StrategyStats,
};
use anyhow::{bail, Context, Result};
use chunker::SizeLimit;
use chunker::{BreakpointType, Chunk, Document, KamradtConfig, Span, Unit};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// LangChain's SemanticChunker parameters, with an optional size limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kamradt {
    /// Unit of `size`: `words` (default), `chars` or `tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Optional maximum chunk size in units: a longer chunk is cut back into runs of whole
    /// sentences within it (sentences longer than it are split at it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// `percentile` (default), `standard_deviation`, `interquartile`, `gradient`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakpoint_type: Option<BreakpointType>,
    /// The breakpoint amount (type default: 95, 3, 1.5, 95).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakpoint_amount: Option<f64>,
    /// Sentences joined on each side before embedding (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_size: Option<usize>,
    /// No overlap; only 0 is accepted ([`NoOverlap`]).
    #[serde(default)]
    pub overlap: NoOverlap,
    /// tokenizer.json for `unit: tokens` (default [`super::DEFAULT_TOKENIZER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
}

impl Kamradt {
    fn unit(&self) -> Unit {
        self.unit.unwrap_or(Unit::Words)
    }

    fn config(&self) -> KamradtConfig {
        let mut k = KamradtConfig::new(self.breakpoint_type.unwrap_or(BreakpointType::Percentile));
        if let Some(a) = self.breakpoint_amount {
            k.breakpoint_amount = a;
        }
        if let Some(b) = self.buffer_size {
            k.buffer_size = b;
        }
        k
    }
}

impl Params for Kamradt {
    const KIND: &'static str = "kamradt";
    const SUMMARY: &'static str = "LangChain SemanticChunker breakpoints over embeddings of buffered sentences (the run's embedder); `breakpoint_type` (percentile), `breakpoint_amount`, `buffer_size` (1), `size` (max, in `unit`)";

    fn needs_embedder(&self) -> bool {
        true
    }

    fn tokenizer_file(&self) -> Option<PathBuf> {
        common::tokenizer_file(self.unit(), &self.tokenizer)
    }

    fn check(&self) -> Result<()> {
        check_tokenizer_field(self.unit(), &self.tokenizer)?;
        self.config().validate()?;
        if self.size == Some(0) {
            bail!("field `size` must be at least 1");
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let tokenizer = common::load_tokenizer(self.unit(), &self.tokenizer)?;
        let size_limit = match self.size {
            None => None,
            Some(n) => {
                Some(SizeLimit::new(n, sizer(self.unit(), tokenizer)?).context("field `size`")?)
            }
        };
        Ok(Box::new(KamradtChunker {
            config: self.config(),
            size_limit,
        }))
    }
}

/// Kamradt breakpoints; with a size limit, a chunk longer than it is cut back into runs of
/// whole sentences within the limit (sentences longer than the limit are split at it).
struct KamradtChunker {
    config: KamradtConfig,
    size_limit: Option<SizeLimit>,
}

impl Chunker for KamradtChunker {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        embedder: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        use rayon::prelude::*;
        let config = &self.config;
        let mut stats = StrategyStats::default();
        let window = embedder.and_then(EmbedderWindow::of);
        let embedder =
            embedder.context("this strategy needs an embedder (the run's `embedder`)")?;
        let sentences: Vec<Vec<Span>> = docs
            .iter()
            .map(|d| chunker::kamradt::split_sentences(&d.text))
            .collect();
        let combined: Vec<Vec<String>> = docs
            .iter()
            .zip(&sentences)
            .map(|(d, s)| config.combined_sentences(&d.text, s))
            .collect();
        let texts: Vec<&str> = combined.iter().flatten().map(String::as_str).collect();
        stats.embedded_units = texts.len();
        if let Some(w) = &window {
            stats.embedded_units_truncated = texts.par_iter().filter(|t| w.exceeds(t)).count();
        }
        let mut vectors = embedder.embed(&texts)?.into_iter();
        let mut out = Vec::new();
        for ((d, s), c) in docs.iter().zip(&sentences).zip(&combined) {
            let vs: Vec<Vec<f32>> = vectors.by_ref().take(c.len()).collect();
            let (chunks, st) = config
                .chunk_with_stats(d, s, &vs)
                .with_context(|| format!("kamradt on document {}", d.id))?;
            stats.merges += st.merges;
            stats.degenerate_vectors += st.degenerate_vectors;
            let Some(limit) = &self.size_limit else {
                out.extend(chunks);
                continue;
            };
            for chunk in chunks {
                let text = &d.text[chunk.span.start..chunk.span.end];
                if limit.measure(text) <= limit.size() {
                    out.push(chunk);
                    continue;
                }
                // The chunk's sentences, each within the limit, packed again.
                let inside: Vec<Span> = s
                    .iter()
                    .filter_map(|u| {
                        let start = u.start.max(chunk.span.start);
                        let end = u.end.min(chunk.span.end);
                        (start < end).then_some(Span { start, end })
                    })
                    .collect();
                let (pieces, _) = chunker::split_oversized(&d.text, &inside, limit);
                let packed = chunker::pack_units(&d.text, &pieces, limit);
                stats.units_split_at_size += 1;
                out.extend(packed.into_iter().filter_map(|p| {
                    let t = &d.text[p.start..p.end];
                    let lead = t.len() - t.trim_start().len();
                    let (a, b) = (p.start + lead, p.start + t.trim_end().len());
                    (a < b).then(|| Chunk::new(d, a, b))
                }));
            }
        }
        if let Some(limit) = &self.size_limit {
            stats.over_size = common::count_over_size(docs, &out, limit);
        }
        Ok((out, stats))
    }

    fn size_limit(&self) -> Option<SizeLimit> {
        self.size_limit.clone()
    }
}
