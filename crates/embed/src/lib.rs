//! Sentence embeddings for chunkbench (docs/reference.md §2, `crates/embed`).
//!
//! This crate defines the [`Embedder`] contract that Max-Min chunking, the Kamradt baseline
//! and dense retrieval are written against, and three implementations of it:
//!
//! - [`BertEmbedder`]: a BERT-family encoder (all-MiniLM-L6-v2 by default) loaded from a
//!   Hugging Face model directory as published (`config.json`, `tokenizer.json`,
//!   `model.safetensors`) plus the sentence-transformers files (`modules.json`,
//!   `1_Pooling/config.json`, `sentence_bert_config.json`) that decide pooling,
//!   `max_seq_length` and normalisation. It runs on candle tensors: candle's AVX-512 `gemm`
//!   matmuls with fused CPU kernels around them, over length-sorted, token-budgeted,
//!   padding-free batches; candle-transformers' stock `BertModel` is kept as a reference path
//!   ([`ForwardImpl::CandleReference`]).
//! - [`HttpEmbedder`]: an embedding server speaking the OpenAI-compatible
//!   `POST /v1/embeddings` or text-embeddings-inference `POST /embed` API.
//! - [`CachedEmbedder`]: wraps any embedder with a content-addressed on-disk cache
//!   ([`EmbeddingCache`]) keyed by the embedder's [`Embedder::identity`] and the text.
//!
//! Every implementation reports counters through [`Embedder::stats`] (texts, tokens, truncated
//! inputs, cache hits/misses) so that the runner can put them in the run manifest.

#![warn(missing_docs)]

mod batching;
mod bert;
pub mod cache;
mod config;
mod http;
pub mod kernels;
pub mod late;

use std::path::PathBuf;
use std::sync::Arc;

pub use batching::{plan_batches, BatchConfig};
pub use bert::{
    model_files, whitespace_run_at_or_after, BertEmbedder, BertOptions, ForwardImpl, ModelInfo,
    HEAD_BYTES_PER_TOKEN,
};
pub use cache::{CacheStats, CachedEmbedder, EmbeddingCache, Lookup};
pub use config::{HiddenAct, Pooling, SentenceTransformerConfig};
pub use http::{HttpApi, HttpConfig, HttpEmbedder, PROBE_TEXT};

/// Errors an embedding backend reports. Messages name the file, field or endpoint involved;
/// none of them ever contains an API key.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The backend could not produce vectors (tensor shape error, worker failure, ...).
    #[error("embedding backend `{backend}` failed: {message}")]
    Backend {
        /// Identity of the backend ([`Embedder::identity`]).
        backend: String,
        /// What went wrong.
        message: String,
    },
    /// A model directory is missing a file or a file has a missing/invalid field.
    #[error("model directory: {}: {message}", path.display())]
    Model {
        /// The file (or directory) at fault.
        path: PathBuf,
        /// What is missing or invalid, naming the JSON field or tensor.
        message: String,
    },
    /// An HTTP embedding server failed (after retries), timed out or answered malformed JSON.
    #[error("embedding server {endpoint}: {message}")]
    Http {
        /// The endpoint URL that was called.
        endpoint: String,
        /// HTTP status of the last attempt, if one was received.
        status: Option<u16>,
        /// What went wrong on the last attempt, and how many attempts were made.
        message: String,
    },
    /// The on-disk cache could not be created or used (unreadable entries are not errors: they
    /// are recomputed).
    #[error("embedding cache {}: {message}", path.display())]
    Cache {
        /// The cache directory or entry at fault.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A configuration value is invalid (for example a zero batch size or an unset API key
    /// variable).
    #[error("invalid embedding configuration: {0}")]
    Config(String),
}

/// Counters an embedder accumulates over its lifetime, for the run manifest.
///
/// All counts are cumulative since construction. Tokens are model word pieces including the
/// special tokens (`[CLS]`, `[SEP]`), counted after truncation; backends that do not tokenize
/// (HTTP) report 0 tokens and 0 truncations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmbedStats {
    /// Texts the underlying model actually embedded (cache hits excluded).
    pub texts: u64,
    /// Word pieces fed to the model (after truncation, including special tokens).
    pub tokens: u64,
    /// Inputs longer than the model's `max_seq_length` that were truncated to it.
    pub truncated: u64,
    /// Model forward passes (or HTTP requests) made.
    pub batches: u64,
    /// Lookups answered from the on-disk cache ([`CachedEmbedder`] only).
    pub cache_hits: u64,
    /// Lookups not found in the cache, computed and stored.
    pub cache_misses: u64,
    /// Cache entries found truncated or corrupt (checksum mismatch) and recomputed; they are
    /// also counted in `cache_misses`.
    pub cache_corrupt: u64,
    /// Entries that could not be written to the cache (the vectors are still returned).
    pub cache_write_errors: u64,
}

/// A sentence-embedding model: a batch of texts to L2-normalised `f32` vectors.
///
/// Contract: `embed(texts)` returns exactly `texts.len()` vectors, in input order, each of
/// length [`Embedder::dim`], each with unit L2 norm, or all zeros for an input the model
/// cannot represent (callers treat a zero vector as "no similarity", never as NaN). Every
/// value is finite. Any text is valid input, including the empty string.
pub trait Embedder: Send + Sync {
    /// Vector dimension (384 for all-MiniLM-L6-v2).
    fn dim(&self) -> usize;

    /// Identity used in cache keys and run manifests: model name, weights' sha256, pooling,
    /// max_seq_length and normalisation, so that two configurations never share a cache entry.
    fn identity(&self) -> String;

    /// Embeds a batch of texts; output shape `[texts.len()][self.dim()]`.
    ///
    /// The batch may have any size: backends split it into their own batches.
    ///
    /// # Errors
    /// An [`EmbedError`] when the model or server fails; no partial output is returned.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Cumulative counters (texts, tokens, truncations, cache hits/misses) for the manifest.
    fn stats(&self) -> EmbedStats {
        EmbedStats::default()
    }

    /// The tokenizer the model reads its inputs with, for callers that keep inputs within
    /// [`Embedder::max_input_tokens`] (a clone; callers disable its truncation). `None` for
    /// backends that do not tokenize locally (HTTP). Wrappers must forward it.
    fn tokenizer(&self) -> Option<tokenizers::Tokenizer> {
        None
    }

    /// The longest input the model reads, in tokens including its special tokens
    /// (`max_seq_length`: 256 for all-MiniLM-L6-v2); longer inputs are truncated and counted
    /// in [`EmbedStats::truncated`]. `None` when unknown (HTTP). Wrappers must forward it.
    fn max_input_tokens(&self) -> Option<usize> {
        None
    }

    /// The most positions the model has (`max_position_embeddings`: 512 for
    /// all-MiniLM-L6-v2), the largest window [`Embedder::token_states`] takes. `None` when
    /// unknown (HTTP). Wrappers must forward it.
    fn max_positions(&self) -> Option<usize> {
        None
    }

    /// The contextual token states of the whole of `text` for late chunking
    /// ([`late`]): no truncation; windows of `window` tokens overlapping by `overlap` when the
    /// text is longer. `None` for backends without token-level output (HTTP). Wrappers must
    /// forward it (a cache of sentence vectors has nothing to add).
    fn token_states(
        &self,
        text: &str,
        window: usize,
        overlap: usize,
    ) -> Option<Result<late::TokenStates, EmbedError>> {
        let _ = (text, window, overlap);
        None
    }
}

impl<E: Embedder + ?Sized> Embedder for &E {
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn identity(&self) -> String {
        (**self).identity()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn stats(&self) -> EmbedStats {
        (**self).stats()
    }
    fn tokenizer(&self) -> Option<tokenizers::Tokenizer> {
        (**self).tokenizer()
    }
    fn max_input_tokens(&self) -> Option<usize> {
        (**self).max_input_tokens()
    }
    fn max_positions(&self) -> Option<usize> {
        (**self).max_positions()
    }
    fn token_states(
        &self,
        text: &str,
        window: usize,
        overlap: usize,
    ) -> Option<Result<late::TokenStates, EmbedError>> {
        (**self).token_states(text, window, overlap)
    }
}

impl<E: Embedder + ?Sized> Embedder for Box<E> {
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn identity(&self) -> String {
        (**self).identity()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn stats(&self) -> EmbedStats {
        (**self).stats()
    }
    fn tokenizer(&self) -> Option<tokenizers::Tokenizer> {
        (**self).tokenizer()
    }
    fn max_input_tokens(&self) -> Option<usize> {
        (**self).max_input_tokens()
    }
    fn max_positions(&self) -> Option<usize> {
        (**self).max_positions()
    }
    fn token_states(
        &self,
        text: &str,
        window: usize,
        overlap: usize,
    ) -> Option<Result<late::TokenStates, EmbedError>> {
        (**self).token_states(text, window, overlap)
    }
}

impl<E: Embedder + ?Sized> Embedder for Arc<E> {
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn identity(&self) -> String {
        (**self).identity()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn stats(&self) -> EmbedStats {
        (**self).stats()
    }
    fn tokenizer(&self) -> Option<tokenizers::Tokenizer> {
        (**self).tokenizer()
    }
    fn max_input_tokens(&self) -> Option<usize> {
        (**self).max_input_tokens()
    }
    fn max_positions(&self) -> Option<usize> {
        (**self).max_positions()
    }
    fn token_states(
        &self,
        text: &str,
        window: usize,
        overlap: usize,
    ) -> Option<Result<late::TokenStates, EmbedError>> {
        (**self).token_states(text, window, overlap)
    }
}

/// Scales `v` to unit L2 norm in place; a zero (or non-finite-norm) vector becomes all zeros.
///
/// Same as sentence-transformers' `Normalize` module (`torch.nn.functional.normalize`, which
/// divides by `max(norm, 1e-12)`), except that a degenerate vector is zeroed rather than left
/// tiny, per the [`Embedder`] contract.
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm.is_finite() && norm > 1e-12 {
        let inv = (1.0 / norm) as f32;
        v.iter_mut().for_each(|x| *x *= inv);
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
    }
}

/// Cosine similarity of two equal-length vectors (`0.0` when either has zero norm), computed
/// in `f64`.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        ab / (aa.sqrt() * bb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_unit_and_zero() {
        let mut v = vec![3.0, 4.0];
        l2_normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
        let mut z = vec![0.0; 3];
        l2_normalize(&mut z);
        assert_eq!(z, vec![0.0; 3]);
        let mut n = vec![f32::NAN, 1.0];
        l2_normalize(&mut n);
        assert_eq!(n, vec![0.0; 2]);
    }

    #[test]
    fn cosine_basics() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[0.0, 1.0]), 0.0);
    }
}
