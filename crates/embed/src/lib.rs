//! Sentence embeddings for chunkbench (DESIGN.md §2, `crates/embed`).
//!
//! This crate defines the [`Embedder`] contract that Max-Min chunking, the Kamradt baseline
//! and dense retrieval are written against. Backends (candle BERT-family models such as
//! all-MiniLM-L6-v2, OpenAI/TEI HTTP servers) and the on-disk cache implement it; until one is
//! configured, strategies that need embeddings are rejected at config time.

#![warn(missing_docs)]

/// Errors an embedding backend reports.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The backend could not produce vectors (model load, I/O, HTTP, or shape error).
    #[error("embedding backend `{backend}` failed: {message}")]
    Backend {
        /// Identity of the backend ([`Embedder::identity`]).
        backend: String,
        /// What went wrong, with the file or endpoint involved.
        message: String,
    },
}

/// A sentence-embedding model: a batch of texts to L2-normalised `f32` vectors.
///
/// Contract: `embed(texts)` returns exactly `texts.len()` vectors, each of length
/// [`Embedder::dim`], each with unit L2 norm, or all zeros for an input the model cannot
/// represent (callers treat a zero vector as "no similarity", never as NaN).
pub trait Embedder: Send + Sync {
    /// Vector dimension (384 for all-MiniLM-L6-v2).
    fn dim(&self) -> usize;

    /// Identity used in cache keys and run manifests: model name, weights' sha256, pooling,
    /// max_seq_length and normalisation, so that two configurations never share a cache entry.
    fn identity(&self) -> String;

    /// Embeds a batch of texts; output shape `[texts.len()][self.dim()]`.
    ///
    /// # Errors
    /// [`EmbedError::Backend`] when the model or server fails; no partial output is returned.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}
