//! `kind: late` — late chunking (Günther et al. 2024, arXiv:2409.04701; reference
//! jina-ai/late-chunking; docs/reference.md §3d): each document goes through the run's local
//! BERT embedder whole, in windows of `window` tokens overlapping by `overlap`, and each chunk
//! of the strategy in `over` gets the mean of the contextual token states inside its byte
//! span ([`embed::late`]). Dense retrieval (and the dense half of hybrid) ranks those
//! vectors; BM25 and the passages are the chunks' own text and spans.

use super::{common, Chunker, Params, StrategyConfig, StrategyStats};
use anyhow::{bail, Context, Result};
use chunker::{Chunk, Document};
use embed::Embedder;
use retriever::IndexedForm;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

/// Default window, in tokens (all-MiniLM-L6-v2's `max_position_embeddings`; the reference's
/// long-document setting uses windows of 512).
pub const DEFAULT_WINDOW: usize = 512;
/// Default overlap between windows, in tokens (half the window, the reference's 256 of 512).
pub const DEFAULT_OVERLAP: usize = 256;

/// The late-chunking entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Late {
    /// The strategy whose chunk spans are pooled (any kind that indexes chunks).
    pub over: StrategyConfig,
    /// Tokens per window, special tokens included (default [`DEFAULT_WINDOW`]; at most the
    /// model's `max_position_embeddings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<usize>,
    /// Tokens each window after the first repeats from the one before, as left context
    /// whose states are not kept (default [`DEFAULT_OVERLAP`]; below `window`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<usize>,
}

impl Late {
    fn window(&self) -> usize {
        self.window.unwrap_or(DEFAULT_WINDOW)
    }

    fn overlap(&self) -> usize {
        self.overlap.unwrap_or(DEFAULT_OVERLAP)
    }
}

impl Params for Late {
    const KIND: &'static str = "late";
    const SUMMARY: &'static str = "late chunking with the local BERT embedder: each document encoded whole in `window`-token windows (512) overlapping by `overlap` (256), each chunk of `over` the mean of its tokens' contextual states; dense retrieval ranks those vectors, passages stay the chunks' spans";

    fn indexes_other_text(&self) -> bool {
        true
    }

    fn needs_embedder(&self) -> bool {
        true
    }

    fn tokenizer_file(&self) -> Option<PathBuf> {
        self.over.tokenizer_file()
    }

    fn input_files(&self) -> Vec<(String, PathBuf)> {
        self.over.input_files()
    }

    fn server_identity(&self) -> Result<Option<String>> {
        self.over.server_identity()
    }

    fn resolve_defaults(&mut self) {
        self.over.resolve_defaults();
        self.window = Some(self.window());
        self.overlap = Some(self.overlap());
    }

    fn check(&self) -> Result<()> {
        common::check_over(&self.over)?;
        if self.window() < 2 {
            bail!("field `window`: must be at least 2 tokens");
        }
        if self.overlap() >= self.window() {
            bail!(
                "field `overlap`: {} must be below `window` ({})",
                self.overlap(),
                self.window()
            );
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        Ok(Box::new(LateChunker {
            inner: self.over.build()?,
            window: self.window(),
            overlap: self.overlap(),
        }))
    }
}

struct LateChunker {
    inner: Box<dyn Chunker>,
    window: usize,
    overlap: usize,
}

impl Chunker for LateChunker {
    common::delegate_chunking!(own preflight);

    /// The inner strategy's problems, and a `window` past the model's positions.
    fn preflight(&self, ctx: &super::Preflight) -> Vec<String> {
        let mut p = self.inner.preflight(ctx);
        if let Some(max) = ctx.embedder_positions.filter(|&m| self.window > m) {
            p.push(format!(
                "field `window`: {} is more than the embedder's {max} positions \
                 (max_position_embeddings); set `window: {max}` or less",
                self.window
            ));
        }
        p
    }

    /// One document at a time (its token states are `tokens × dim` floats), its chunks
    /// pooled from them.
    fn indexed(
        &self,
        docs: &[Document],
        chunks: &[Chunk],
        embedder: Option<&dyn Embedder>,
        stats: &mut StrategyStats,
    ) -> Result<Option<IndexedForm>> {
        let e = embedder.context("late chunking needs the run's embedder")?;
        let max = e.max_positions().context(
            "late chunking needs the local BERT embedder (`embedder: {model: ...}`): an \
             embedding server returns no token states",
        )?;
        if self.window > max {
            bail!(
                "field `window`: {} is more than the embedder's {max} positions \
                 (max_position_embeddings); set `window: {max}` or less",
                self.window
            );
        }
        let by_id: HashMap<&str, &Document> = docs.iter().map(|d| (d.id.as_str(), d)).collect();
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(chunks.len());
        let mut i = 0;
        while i < chunks.len() {
            let doc_id = chunks[i].doc_id.as_str();
            let j = i + chunks[i..]
                .iter()
                .take_while(|c| c.doc_id == doc_id)
                .count();
            let d = by_id
                .get(doc_id)
                .with_context(|| format!("chunk of unknown document `{doc_id}`"))?;
            crate::stop::check()?;
            let states = e
                .token_states(&d.text, self.window, self.overlap)
                .context("the embedder returns no token states")?
                .with_context(|| format!("late chunking document `{doc_id}`"))?;
            stats.late_windows += states.windows.len();
            let spans: Vec<(usize, usize)> = chunks[i..j]
                .iter()
                .map(|c| (c.span.start, c.span.end))
                .collect();
            for v in embed::late::pool_spans(&states, &spans) {
                match v {
                    Some(v) => vectors.push(v),
                    None => {
                        stats.chunks_without_tokens += 1;
                        vectors.push(vec![0.0; e.dim()]);
                    }
                }
            }
            i = j;
        }
        Ok(Some(IndexedForm {
            texts: None,
            vectors: Some(vectors),
            label: format!(
                "late-chunked vectors (windows of {} tokens, overlap {})",
                self.window, self.overlap
            ),
        }))
    }
}
