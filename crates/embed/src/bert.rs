//! BERT-family sentence encoders on candle (all-MiniLM-L6-v2, bge-small, e5-small, ...).
//!
//! Loading follows candle's BERT example (`candle-examples/examples/bert`): `config.json`,
//! `tokenizer.json` and `model.safetensors` of a Hugging Face directory; pooling,
//! `max_seq_length` and normalisation follow the sentence-transformers files (see
//! [`SentenceTransformerConfig`]).
//!
//! Two forward implementations share the tokenizer, batching and pooling:
//! - [`ForwardImpl::Fused`] (default): packed, padding-free batches (the tokens of all the
//!   batch's sequences are rows of one `[T, H]` matrix); the linear layers are candle matmuls
//!   (the `gemm` crate with AVX-512 kernels), everything else is fused CPU kernels
//!   (`kernels.rs`): embeddings + layer-norm, per-sequence attention with fused softmax,
//!   bias + GELU in place, bias + residual + layer-norm in place.
//! - [`ForwardImpl::CandleReference`]: candle-transformers' stock `BertModel` on padded
//!   batches with an attention mask, then mask-aware pooling, as in candle's BERT example.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use candle_core::{CpuStorage, DType, Device, InplaceOp1, InplaceOp2, Layout, Tensor};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::batching::{plan_batches, BatchConfig};
use crate::config::{BertConfig, HiddenAct, Pooling, SentenceTransformerConfig};
use crate::kernels::{
    cpu_slice, cpu_slice_mut, with_slice, AddNormKernel, AttentionKernel, AttnScratch, AttnShape,
    BiasActKernel, EmbedKernel,
};
use crate::{l2_normalize, EmbedError, EmbedStats, Embedder};

/// Which forward pass a [`BertEmbedder`] runs. Both give the same vectors to ~1e-6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForwardImpl {
    /// Packed, padding-free forward with fused kernels around candle matmuls (fast).
    #[default]
    Fused,
    /// candle-transformers' `BertModel` on padded batches (the stock reference).
    CandleReference,
}

/// Options for [`BertEmbedder::load_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct BertOptions {
    /// Batch limits (inputs per batch, word pieces per batch).
    pub batch: BatchConfig,
    /// Overrides the model's `max_seq_length` (capped at `max_position_embeddings`).
    pub max_seq_length: Option<usize>,
    /// Forward implementation.
    pub forward: ForwardImpl,
}

/// What was loaded: the facts that identify the model and shape its output.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelInfo {
    /// Model name: the directory's file name (e.g. `all-MiniLM-L6-v2`).
    pub name: String,
    /// The model directory as given.
    pub dir: PathBuf,
    /// Lower-case hex sha256 of `model.safetensors`.
    pub weights_sha256: String,
    /// Lower-case hex sha256 of `tokenizer.json`.
    pub tokenizer_sha256: String,
    /// sha256 over the other files [`model_files`] lists (config.json and the
    /// sentence-transformers files), each as `path-relative-to-dir NUL sha256 NUL`.
    pub config_sha256: String,
    /// Pooling, effective `max_seq_length` (after any override), model normalisation.
    pub sentence_transformers: SentenceTransformerConfig,
    /// Output dimension (= `hidden_size`).
    pub dim: usize,
    /// Encoder layers.
    pub num_layers: usize,
    /// Attention heads.
    pub num_heads: usize,
    /// Feed-forward width.
    pub intermediate_size: usize,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Feed-forward activation.
    pub hidden_act: HiddenAct,
}

/// Texts longer than this many bytes per token of `max_seq_length` are tokenized from a
/// prefix (`BertEmbedder::encode_head`): English runs at 4–6 bytes per word piece, so a
/// 16-bytes-per-token prefix almost always holds the window, and a text of rare long
/// words doubles the prefix until it does.
pub const HEAD_BYTES_PER_TOKEN: usize = 16;

/// The byte position of the first whitespace character at or after `from` (rounded up to
/// a character boundary) that follows a non-whitespace character; `None` when there is none.
/// `text[..cut]` then ends with a whole whitespace-separated word, so a tokenizer that acts
/// within such words (BERT's) gives it a prefix of the whole text's tokens.
pub fn whitespace_run_at_or_after(text: &str, from: usize) -> Option<usize> {
    let mut start = from.min(text.len());
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let mut prev_ws = text[..start]
        .chars()
        .next_back()
        .is_none_or(char::is_whitespace);
    for (i, c) in text[start..].char_indices() {
        let ws = c.is_whitespace();
        if ws && !prev_ws {
            return Some(start + i);
        }
        prev_ws = ws;
    }
    None
}

/// One tokenized input.
struct Encoded {
    ids: Vec<u32>,
    type_ids: Vec<u32>,
    truncated: bool,
}

#[derive(Default)]
struct Counters {
    texts: AtomicU64,
    tokens: AtomicU64,
    truncated: AtomicU64,
    batches: AtomicU64,
}

struct FusedLayer {
    /// `[H, 3H]`: query|key|value weights, transposed for `x @ w`.
    wqkv: Tensor,
    bqkv: Vec<f32>,
    /// `[H, H]`.
    wo: Tensor,
    bo: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    /// `[H, I]`.
    w1: Tensor,
    b1: Vec<f32>,
    /// `[I, H]`.
    w2: Tensor,
    b2: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
}

struct FusedBert {
    word: Vec<f32>,
    pos: Vec<f32>,
    typ: Vec<f32>,
    emb_g: Vec<f32>,
    emb_b: Vec<f32>,
    layers: Vec<FusedLayer>,
    hidden: usize,
    heads: usize,
    act: HiddenAct,
    eps: f32,
}

enum Model {
    Fused(Box<FusedBert>),
    Reference(Box<candle_transformers::models::bert::BertModel>),
}

/// A BERT-family sentence encoder loaded from a Hugging Face / sentence-transformers model
/// directory; implements [`Embedder`].
///
/// Input handling matches sentence-transformers' `encode`: optional lower-casing
/// (`do_lower_case`), the tokenizer's normalisation and special tokens, truncation to
/// `max_seq_length` word pieces (special tokens included; the `tokenizer.json`'s own
/// truncation and fixed padding are replaced), pooling per `1_Pooling/config.json`, then L2
/// normalisation. Truncated inputs are counted in [`EmbedStats::truncated`].
///
/// Thread use: a call runs its batches one after the other; each batch uses the current rayon
/// pool (matmuls, attention per sequence, row kernels), so both cores of a 2-core machine are
/// busy. Set `RAYON_NUM_THREADS` (read by rayon and candle) to limit it.
pub struct BertEmbedder {
    info: ModelInfo,
    tokenizer: Tokenizer,
    model: Model,
    options: BertOptions,
    counters: Counters,
    arch: pulp::Arch,
    /// `max_position_embeddings`: the longest window late chunking may run.
    max_positions: usize,
}

impl std::fmt::Debug for BertEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertEmbedder")
            .field("info", &self.info)
            .field("options", &self.options)
            .finish()
    }
}

fn model_err(path: &Path, message: impl Into<String>) -> EmbedError {
    EmbedError::Model {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Lists which sentence-transformers `Transformer` sub-directory holds the weights (`""` for
/// the usual layout).
fn transformer_subdir(dir: &Path) -> Result<String, EmbedError> {
    let p = dir.join("modules.json");
    if !p.exists() {
        return Ok(String::new());
    }
    let v = crate::config::read_json(&p)?;
    Ok(v.as_array()
        .and_then(|a| {
            a.iter().find(|m| {
                m.get("type")
                    .and_then(|t| t.as_str())
                    .is_some_and(|t| t.ends_with("Transformer"))
            })
        })
        .and_then(|m| m.get("path").and_then(|p| p.as_str()))
        .unwrap_or("")
        .to_string())
}

/// The files [`BertEmbedder::load`] reads from a model directory, those that exist, in a
/// fixed order: `modules.json`, the transformer's `config.json`, `tokenizer.json`,
/// `model.safetensors` and `sentence_bert_config.json`, and the pooling `config.json`. These
/// are what an embedder's results depend on, so they are what a content identity hashes.
///
/// # Errors
/// [`EmbedError::Model`] when `modules.json` exists but is not valid JSON.
pub fn model_files(dir: &Path) -> Result<Vec<PathBuf>, EmbedError> {
    let tdir = dir.join(transformer_subdir(dir)?);
    let mut pooling = vec![dir.join("1_Pooling").join("config.json")];
    let modules = dir.join("modules.json");
    if modules.exists() {
        if let Some(list) = crate::config::read_json(&modules)?.as_array() {
            pooling = list
                .iter()
                .filter(|m| {
                    m.get("type")
                        .and_then(|t| t.as_str())
                        .is_some_and(|t| t.ends_with("Pooling"))
                })
                .filter_map(|m| m.get("path").and_then(|p| p.as_str()))
                .map(|p| dir.join(p).join("config.json"))
                .collect();
        }
    }
    let mut files = vec![modules];
    for f in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "sentence_bert_config.json",
    ] {
        files.push(tdir.join(f));
    }
    files.extend(pooling);
    files.dedup();
    Ok(files.into_iter().filter(|p| p.is_file()).collect())
}

impl BertEmbedder {
    /// Loads `dir` with default options ([`BertOptions::default`]: fused forward, batches of
    /// at most 64 inputs / 16384 word pieces, the model's own `max_seq_length`).
    ///
    /// # Errors
    /// [`EmbedError::Model`] naming the missing file, invalid JSON field or missing/misshaped
    /// tensor.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::load_with(dir, BertOptions::default())
    }

    /// Loads `dir` with the given options.
    ///
    /// Reads `config.json`, `tokenizer.json`, `model.safetensors` (read once: hashed with
    /// sha256 for [`ModelInfo::weights_sha256`] and parsed from the same buffer; memory-mapping
    /// it would need `unsafe`, which the workspace forbids) and the optional
    /// sentence-transformers files. F16/BF16 weights are converted to F32.
    ///
    /// # Errors
    /// [`EmbedError::Model`] as for [`BertEmbedder::load`]; [`EmbedError::Config`] for zero
    /// batch limits or a `max_seq_length` override below 2.
    pub fn load_with(dir: impl AsRef<Path>, options: BertOptions) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(model_err(dir, "model directory not found"));
        }
        options.batch.validate()?;
        let tdir = dir.join(transformer_subdir(dir)?);
        let config = BertConfig::from_file(&tdir.join("config.json"))?;
        let mut st = SentenceTransformerConfig::from_dir(dir, config.max_position_embeddings)?;
        if let Some(m) = options.max_seq_length {
            if m < 2 {
                return Err(EmbedError::Config(format!(
                    "max_seq_length override {m} is below 2"
                )));
            }
            st.max_seq_length = m.min(config.max_position_embeddings);
        }

        let tok_path = tdir.join("tokenizer.json");
        let tok_bytes = std::fs::read(&tok_path)
            .map_err(|e| model_err(&tok_path, format!("cannot read: {e}")))?;
        let mut tokenizer = Tokenizer::from_bytes(&tok_bytes)
            .map_err(|e| model_err(&tok_path, format!("invalid tokenizer: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: st.max_seq_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| model_err(&tok_path, format!("cannot set truncation: {e}")))?;
        tokenizer.with_padding(None);

        let w_path = tdir.join("model.safetensors");
        let w_bytes = std::fs::read(&w_path).map_err(|e| {
            let hint = if tdir.join("pytorch_model.bin").exists() {
                " (only safetensors weights are supported; this directory has pytorch_model.bin)"
            } else {
                ""
            };
            model_err(&w_path, format!("cannot read: {e}{hint}"))
        })?;
        let weights_sha256 = fsio::sha256_hex(&w_bytes);
        let tokenizer_sha256 = fsio::sha256_hex(&tok_bytes);
        let tensors = candle_core::safetensors::load_buffer(&w_bytes, &Device::Cpu)
            .map_err(|e| model_err(&w_path, format!("invalid safetensors: {e}")))?;
        drop(w_bytes);

        let model = match options.forward {
            ForwardImpl::Fused => Model::Fused(Box::new(load_fused(&tensors, &config, &w_path)?)),
            ForwardImpl::CandleReference => {
                Model::Reference(Box::new(load_reference(tensors, &config, &w_path)?))
            }
        };
        let mut config_hash = Sha256::new();
        for f in model_files(dir)? {
            let stem = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if stem == "model.safetensors" || stem == "tokenizer.json" {
                continue;
            }
            let bytes =
                std::fs::read(&f).map_err(|e| model_err(&f, format!("cannot read: {e}")))?;
            let rel = f.strip_prefix(dir).unwrap_or(&f).display().to_string();
            config_hash.update(rel.as_bytes());
            config_hash.update([0]);
            config_hash.update(fsio::sha256_hex(&bytes).as_bytes());
            config_hash.update([0]);
        }
        let config_sha256 = hex::encode(config_hash.finalize());
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        let info = ModelInfo {
            name,
            dir: dir.to_path_buf(),
            weights_sha256,
            tokenizer_sha256,
            config_sha256,
            sentence_transformers: st,
            dim: config.hidden_size,
            num_layers: config.num_hidden_layers,
            num_heads: config.num_attention_heads,
            intermediate_size: config.intermediate_size,
            vocab_size: config.vocab_size,
            hidden_act: config.hidden_act,
        };
        Ok(Self {
            info,
            tokenizer,
            model,
            options,
            counters: Counters::default(),
            arch: pulp::Arch::new(),
            max_positions: config.max_position_embeddings,
        })
    }

    /// The contextual token states of the whole of `text` ([`crate::late`]): tokenised
    /// without truncation (byte offsets), run in windows of `window` tokens overlapping by
    /// `overlap` when longer, every window one sequence of a packed batch.
    ///
    /// # Errors
    /// [`EmbedError::Config`] for `window` above `max_position_embeddings` or below 2,
    /// `overlap >= window`, the reference forward (late chunking needs the fused one), or a
    /// model that lower-cases text whose byte length lower-casing changes (the offsets would
    /// not be the text's); [`EmbedError::Backend`] when the tokenizer or forward fails.
    pub fn token_states_of(
        &self,
        text: &str,
        window: usize,
        overlap: usize,
    ) -> Result<crate::late::TokenStates, EmbedError> {
        if window < 2 || window > self.max_positions {
            return Err(EmbedError::Config(format!(
                "late chunking window {window} is outside 2..={} (the model's \
                 max_position_embeddings)",
                self.max_positions
            )));
        }
        if overlap >= window {
            return Err(EmbedError::Config(format!(
                "late chunking overlap {overlap} must be below the window {window}"
            )));
        }
        let Model::Fused(m) = &self.model else {
            return Err(EmbedError::Config(
                "late chunking needs the fused forward (the default), not the reference one".into(),
            ));
        };
        let lowered;
        let input = if self.info.sentence_transformers.do_lower_case {
            lowered = text.to_lowercase();
            if lowered.len() != text.len() {
                return Err(EmbedError::Config(
                    "late chunking: this model lower-cases its input and lower-casing changes \
                     this text's byte length, so token offsets would not be the text's"
                        .into(),
                ));
            }
            lowered.as_str()
        } else {
            text
        };
        let mut tok = self.tokenizer.clone();
        tok.with_truncation(None)
            .map_err(|e| self.backend_err(format!("tokenizer: {e}")))?;
        let enc = tok
            .encode(input, true)
            .map_err(|e| self.backend_err(format!("tokenizer failed: {e}")))?;
        let ids = enc.get_ids();
        let types = enc.get_type_ids();
        let special = enc.get_special_tokens_mask();
        let offsets: Vec<Option<(usize, usize)>> = enc
            .get_offsets()
            .iter()
            .zip(special)
            .map(|(&o, &sp)| (sp == 0).then_some(o))
            .collect();
        let vocab = self.info.vocab_size;
        if let Some(bad) = ids.iter().find(|&&id| id as usize >= vocab) {
            return Err(self.backend_err(format!(
                "tokenizer.json produced token id {bad} but config.json has vocab_size {vocab}"
            )));
        }
        let wins = crate::late::windows(ids.len(), window, overlap);
        let encoded: Vec<Encoded> = wins
            .iter()
            .map(|&(s, e)| Encoded {
                ids: ids[s..e].to_vec(),
                type_ids: types[s..e].to_vec(),
                truncated: false,
            })
            .collect();
        let lengths: Vec<usize> = encoded.iter().map(|e| e.ids.len()).collect();
        let mut outputs: Vec<Vec<f32>> = vec![Vec::new(); encoded.len()];
        for b in plan_batches(&lengths, self.options.batch) {
            let b: Vec<usize> = b.into_iter().filter(|&i| lengths[i] > 0).collect();
            if b.is_empty() {
                continue;
            }
            let refs: Vec<&Encoded> = b.iter().map(|&i| &encoded[i]).collect();
            let rows = forward_fused_rows(m, &refs, self.arch).map_err(|e| self.backend_err(e))?;
            for (&i, r) in b.iter().zip(rows) {
                outputs[i] = r;
            }
        }
        let dim = self.info.dim;
        let rows = crate::late::assemble(&outputs, dim, overlap);
        if rows.len() != ids.len() * dim {
            return Err(self.backend_err(format!(
                "late chunking assembled {} token states for {} tokens",
                rows.len() / dim.max(1),
                ids.len()
            )));
        }
        let c = &self.counters;
        c.texts.fetch_add(1, Ordering::Relaxed);
        c.tokens
            .fetch_add(lengths.iter().sum::<usize>() as u64, Ordering::Relaxed);
        Ok(crate::late::TokenStates {
            dim,
            rows,
            offsets,
            windows: wins,
        })
    }

    /// What was loaded (name, hashes, pooling, dimensions).
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The options in force.
    pub fn options(&self) -> &BertOptions {
        &self.options
    }

    /// Number of word pieces `text` is fed to the model as (special tokens included, after
    /// truncation to `max_seq_length`), and whether it was truncated.
    ///
    /// # Errors
    /// [`EmbedError::Backend`] if the tokenizer fails.
    pub fn token_count(&self, text: &str) -> Result<(usize, bool), EmbedError> {
        let e = self.encode(&[text])?;
        Ok((e[0].ids.len(), e[0].truncated))
    }

    fn backend_err(&self, message: impl std::fmt::Display) -> EmbedError {
        EmbedError::Backend {
            backend: self.identity(),
            message: message.to_string(),
        }
    }

    /// Tokenizes `texts` as sentence-transformers does (lower-cased when `do_lower_case`,
    /// truncated to `max_seq_length`). A text longer than [`HEAD_BYTES_PER_TOKEN`] bytes per
    /// window token is tokenized from a prefix ([`BertEmbedder::encode_head`]), so its cost
    /// follows the window, not the text: 2,000 near-whole-document passages of an 840 kB
    /// document no longer tokenize 1.7 GB.
    fn encode(&self, texts: &[&str]) -> Result<Vec<Encoded>, EmbedError> {
        let head = self.info.sentence_transformers.max_seq_length * HEAD_BYTES_PER_TOKEN;
        // Long texts are tokenized one by one (each its own prefix): in parallel, as
        // `encode_batch_fast` does for the rest.
        let mut out: Vec<Option<Encoded>> = texts
            .par_iter()
            .map(|t| {
                if t.len() > head {
                    self.encode_head(t, head)
                } else {
                    Ok(None)
                }
            })
            .collect::<Result<_, _>>()?;
        let rest: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        let inputs: Vec<String> = rest.iter().map(|&i| self.model_input(texts[i])).collect();
        let encs = self
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(|e| self.backend_err(format!("tokenizer failed: {e}")))?;
        for (i, e) in rest.into_iter().zip(encs) {
            out[i] = Some(self.encoded(&e)?);
        }
        Ok(out
            .into_iter()
            .map(|e| e.expect("every text encoded"))
            .collect())
    }

    /// `text` as the tokenizer is given it: lower-cased when the model's
    /// `sentence_bert_config.json` says `do_lower_case`.
    fn model_input(&self, text: &str) -> String {
        if self.info.sentence_transformers.do_lower_case {
            text.to_lowercase()
        } else {
            text.to_string()
        }
    }

    /// The truncated encoding of `text`, computed from a prefix: the text is cut at the start
    /// of the first whitespace run at or after byte `from` (doubling `from` until it is
    /// enough). The prefix's encoding is used only when it was truncated and every token it
    /// keeps ends before the prefix's last word — the BERT pre-tokenizer and normaliser act
    /// within whitespace-separated words, so those tokens are exactly the whole text's (a
    /// test checks the equality on long texts). `None` when no prefix shorter than the text
    /// holds a full window; the caller then encodes the text whole.
    fn encode_head(&self, text: &str, from: usize) -> Result<Option<Encoded>, EmbedError> {
        let mut from = from;
        while from < text.len() {
            let Some(cut) = whitespace_run_at_or_after(text, from) else {
                return Ok(None);
            };
            let input = self.model_input(&text[..cut]);
            let e = self
                .tokenizer
                .encode(input.as_str(), true)
                .map_err(|e| self.backend_err(format!("tokenizer failed: {e}")))?;
            let last_word = input
                .trim_end()
                .rfind(char::is_whitespace)
                .map_or(0, |w| w + 1);
            let kept_end = e.get_offsets().iter().map(|o| o.1).max().unwrap_or(0);
            if !e.get_overflowing().is_empty() && kept_end <= last_word {
                return self.encoded(&e).map(Some);
            }
            from = cut.saturating_mul(2);
        }
        Ok(None)
    }

    /// The ids of one encoding, checked against the model's vocabulary.
    fn encoded(&self, e: &tokenizers::Encoding) -> Result<Encoded, EmbedError> {
        let vocab = self.info.vocab_size;
        if let Some(bad) = e.get_ids().iter().find(|&&id| id as usize >= vocab) {
            return Err(self.backend_err(format!(
                "tokenizer.json produced token id {bad} but config.json has vocab_size {vocab}"
            )));
        }
        Ok(Encoded {
            ids: e.get_ids().to_vec(),
            type_ids: e.get_type_ids().to_vec(),
            truncated: !e.get_overflowing().is_empty(),
        })
    }

    fn forward(&self, batch: &[&Encoded]) -> candle_core::Result<Vec<Vec<f32>>> {
        let mut out = match &self.model {
            Model::Fused(m) => {
                forward_fused(m, batch, self.info.sentence_transformers.pooling, self.arch)?
            }
            Model::Reference(m) => {
                forward_reference(m, batch, self.info.sentence_transformers.pooling)?
            }
        };
        out.iter_mut().for_each(|v| l2_normalize(v));
        Ok(out)
    }
}

impl Embedder for BertEmbedder {
    fn dim(&self) -> usize {
        self.info.dim
    }

    fn tokenizer(&self) -> Option<tokenizers::Tokenizer> {
        Some(self.tokenizer.clone())
    }

    fn max_input_tokens(&self) -> Option<usize> {
        Some(self.info.sentence_transformers.max_seq_length)
    }

    fn max_positions(&self) -> Option<usize> {
        Some(self.max_positions)
    }

    fn token_states(
        &self,
        text: &str,
        window: usize,
        overlap: usize,
    ) -> Option<Result<crate::late::TokenStates, EmbedError>> {
        Some(self.token_states_of(text, window, overlap))
    }

    /// `bert:<name>:weights-sha256=<hex>:tokenizer-sha256=<hex>:config-sha256=<hex>:`
    /// `pool=<mode>:max_seq=<n>:norm=l2:lower=<bool>`.
    fn identity(&self) -> String {
        let st = &self.info.sentence_transformers;
        format!(
            "bert:{}:weights-sha256={}:tokenizer-sha256={}:config-sha256={}:pool={}:max_seq={}:norm=l2:lower={}",
            self.info.name,
            self.info.weights_sha256,
            self.info.tokenizer_sha256,
            &self.info.config_sha256[..16],
            st.pooling.as_str(),
            st.max_seq_length,
            st.do_lower_case
        )
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encoded = self.encode(texts)?;
        let lengths: Vec<usize> = encoded.iter().map(|e| e.ids.len()).collect();
        // A tokenizer without special tokens can produce no token at all (empty text): such an
        // input gets the zero vector of the `Embedder` contract and no forward pass.
        let mut out: Vec<Vec<f32>> = lengths
            .iter()
            .map(|&n| {
                if n == 0 {
                    vec![0.0; self.info.dim]
                } else {
                    Vec::new()
                }
            })
            .collect();
        let mut batches = plan_batches(&lengths, self.options.batch);
        batches
            .iter_mut()
            .for_each(|b| b.retain(|&i| lengths[i] > 0));
        batches.retain(|b| !b.is_empty());
        for b in &batches {
            let refs: Vec<&Encoded> = b.iter().map(|&i| &encoded[i]).collect();
            let vecs = self.forward(&refs).map_err(|e| self.backend_err(e))?;
            for (&i, v) in b.iter().zip(vecs) {
                out[i] = v;
            }
        }
        let c = &self.counters;
        c.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
        c.tokens
            .fetch_add(lengths.iter().sum::<usize>() as u64, Ordering::Relaxed);
        c.truncated.fetch_add(
            encoded.iter().filter(|e| e.truncated).count() as u64,
            Ordering::Relaxed,
        );
        c.batches.fetch_add(batches.len() as u64, Ordering::Relaxed);
        Ok(out)
    }

    fn stats(&self) -> EmbedStats {
        let c = &self.counters;
        EmbedStats {
            texts: c.texts.load(Ordering::Relaxed),
            tokens: c.tokens.load(Ordering::Relaxed),
            truncated: c.truncated.load(Ordering::Relaxed),
            batches: c.batches.load(Ordering::Relaxed),
            ..EmbedStats::default()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Weights

/// Finds the tensor-name prefix (`""`, `bert.` or `<model_type>.`).
fn prefix(
    tensors: &HashMap<String, Tensor>,
    config: &BertConfig,
    path: &Path,
) -> Result<String, EmbedError> {
    let mut cands = vec![String::new(), "bert.".to_string()];
    if let Some(mt) = &config.model_type {
        cands.push(format!("{mt}."));
    }
    cands
        .into_iter()
        .find(|p| tensors.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
        .ok_or_else(|| model_err(path, "missing tensor `embeddings.word_embeddings.weight` (also tried prefixes `bert.` and `<model_type>.`)"))
}

fn get(
    tensors: &HashMap<String, Tensor>,
    name: &str,
    dims: &[usize],
    path: &Path,
) -> Result<Tensor, EmbedError> {
    let t = tensors
        .get(name)
        .ok_or_else(|| model_err(path, format!("missing tensor `{name}`")))?;
    if t.dims() != dims {
        return Err(model_err(
            path,
            format!(
                "tensor `{name}` has shape {:?}, config.json implies {:?}",
                t.dims(),
                dims
            ),
        ));
    }
    t.to_dtype(DType::F32)
        .map_err(|e| model_err(path, format!("tensor `{name}`: {e}")))
}

fn to_vec(t: &Tensor, path: &Path) -> Result<Vec<f32>, EmbedError> {
    t.flatten_all()
        .and_then(|t| t.to_vec1::<f32>())
        .map_err(|e| model_err(path, e.to_string()))
}

fn load_fused(
    tensors: &HashMap<String, Tensor>,
    c: &BertConfig,
    path: &Path,
) -> Result<FusedBert, EmbedError> {
    let p = prefix(tensors, c, path)?;
    let (h, i) = (c.hidden_size, c.intermediate_size);
    let v = |name: &str, dims: &[usize]| -> Result<Vec<f32>, EmbedError> {
        to_vec(&get(tensors, &format!("{p}{name}"), dims, path)?, path)
    };
    let cerr = |e: candle_core::Error| model_err(path, e.to_string());
    // Linear weights are stored `[out, in]`; keep them transposed, contiguous `[in, out]`.
    let wt = |name: &str, out: usize, inp: usize| -> Result<Tensor, EmbedError> {
        get(tensors, &format!("{p}{name}"), &[out, inp], path)?
            .t()
            .and_then(|t| t.contiguous())
            .map_err(cerr)
    };
    let mut layers = Vec::with_capacity(c.num_hidden_layers);
    for l in 0..c.num_hidden_layers {
        let a = format!("encoder.layer.{l}.attention.");
        let q = wt(&format!("{a}self.query.weight"), h, h)?;
        let k = wt(&format!("{a}self.key.weight"), h, h)?;
        let vv = wt(&format!("{a}self.value.weight"), h, h)?;
        let wqkv = Tensor::cat(&[&q, &k, &vv], 1)
            .and_then(|t| t.contiguous())
            .map_err(cerr)?;
        let mut bqkv = v(&format!("{a}self.query.bias"), &[h])?;
        bqkv.extend(v(&format!("{a}self.key.bias"), &[h])?);
        bqkv.extend(v(&format!("{a}self.value.bias"), &[h])?);
        let f = format!("encoder.layer.{l}.");
        layers.push(FusedLayer {
            wqkv,
            bqkv,
            wo: wt(&format!("{a}output.dense.weight"), h, h)?,
            bo: v(&format!("{a}output.dense.bias"), &[h])?,
            ln1_g: v(&format!("{a}output.LayerNorm.weight"), &[h])?,
            ln1_b: v(&format!("{a}output.LayerNorm.bias"), &[h])?,
            w1: wt(&format!("{f}intermediate.dense.weight"), i, h)?,
            b1: v(&format!("{f}intermediate.dense.bias"), &[i])?,
            w2: wt(&format!("{f}output.dense.weight"), h, i)?,
            b2: v(&format!("{f}output.dense.bias"), &[h])?,
            ln2_g: v(&format!("{f}output.LayerNorm.weight"), &[h])?,
            ln2_b: v(&format!("{f}output.LayerNorm.bias"), &[h])?,
        });
    }
    Ok(FusedBert {
        word: v("embeddings.word_embeddings.weight", &[c.vocab_size, h])?,
        pos: v(
            "embeddings.position_embeddings.weight",
            &[c.max_position_embeddings, h],
        )?,
        typ: v(
            "embeddings.token_type_embeddings.weight",
            &[c.type_vocab_size, h],
        )?,
        emb_g: v("embeddings.LayerNorm.weight", &[h])?,
        emb_b: v("embeddings.LayerNorm.bias", &[h])?,
        layers,
        hidden: h,
        heads: c.num_attention_heads,
        act: c.hidden_act,
        eps: c.layer_norm_eps as f32,
    })
}

fn load_reference(
    tensors: HashMap<String, Tensor>,
    c: &BertConfig,
    path: &Path,
) -> Result<candle_transformers::models::bert::BertModel, EmbedError> {
    use candle_transformers::models::bert;
    let cfg = bert::Config {
        vocab_size: c.vocab_size,
        hidden_size: c.hidden_size,
        num_hidden_layers: c.num_hidden_layers,
        num_attention_heads: c.num_attention_heads,
        intermediate_size: c.intermediate_size,
        hidden_act: match c.hidden_act {
            HiddenAct::Gelu => bert::HiddenAct::Gelu,
            HiddenAct::GeluTanh => bert::HiddenAct::GeluApproximate,
            HiddenAct::Relu => bert::HiddenAct::Relu,
        },
        max_position_embeddings: c.max_position_embeddings,
        type_vocab_size: c.type_vocab_size,
        layer_norm_eps: c.layer_norm_eps,
        model_type: c.model_type.clone(),
        ..bert::Config::default()
    };
    let tensors = tensors
        .into_iter()
        .map(|(k, t)| t.to_dtype(DType::F32).map(|t| (k, t)))
        .collect::<candle_core::Result<HashMap<_, _>>>()
        .map_err(|e| model_err(path, e.to_string()))?;
    let vb = candle_nn::VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
    bert::BertModel::load(vb, &cfg)
        .map_err(|e| model_err(path, format!("cannot build BertModel: {e}")))
}

// ---------------------------------------------------------------------------------------------
// Fused forward

/// Rows per rayon task in the row-wise kernels.
const ROWS_PER_TASK: usize = 16;

/// In place on the linear output `a`: `a = LayerNorm(x + a + bias)`.
struct AddNorm<'a> {
    bias: &'a [f32],
    gamma: &'a [f32],
    beta: &'a [f32],
    eps: f32,
    arch: pulp::Arch,
}

impl InplaceOp2 for AddNorm<'_> {
    fn name(&self) -> &'static str {
        "chunkbench-add-bias-residual-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<()> {
        let out = cpu_slice_mut(s1, l1)?;
        let x = cpu_slice(s2, l2)?;
        let w = self.bias.len() * ROWS_PER_TASK;
        out.par_chunks_mut(w)
            .zip(x.par_chunks(w))
            .for_each(|(o, xr)| {
                self.arch.dispatch(AddNormKernel {
                    out: o,
                    x: xr,
                    bias: self.bias,
                    gamma: self.gamma,
                    beta: self.beta,
                    eps: self.eps,
                })
            });
        Ok(())
    }
}

/// In place: `h = act(h + bias)`.
struct BiasAct<'a> {
    bias: &'a [f32],
    act: HiddenAct,
    arch: pulp::Arch,
}

impl InplaceOp1 for BiasAct<'_> {
    fn name(&self) -> &'static str {
        "chunkbench-bias-activation"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> candle_core::Result<()> {
        let h = cpu_slice_mut(s, l)?;
        h.par_chunks_mut(self.bias.len() * ROWS_PER_TASK)
            .for_each(|c| {
                self.arch.dispatch(BiasActKernel {
                    h: c,
                    bias: self.bias,
                    act: self.act,
                })
            });
        Ok(())
    }
}

/// The fused forward over a packed batch: each sequence pooled with `pooling`, or its token
/// rows when `None`.
fn forward_fused_opt(
    m: &FusedBert,
    batch: &[&Encoded],
    pooling: Option<Pooling>,
    arch: pulp::Arch,
) -> candle_core::Result<Vec<Vec<f32>>> {
    let h = m.hidden;
    let lens: Vec<usize> = batch.iter().map(|e| e.ids.len()).collect();
    let t: usize = lens.iter().sum();
    // (token id, position, token type) per packed row.
    let rows: Vec<(usize, usize, usize)> = batch
        .iter()
        .flat_map(|e| {
            e.ids
                .iter()
                .zip(&e.type_ids)
                .enumerate()
                .map(|(p, (id, ty))| (*id as usize, p, *ty as usize))
        })
        .collect();
    let mut x = vec![0f32; t * h];
    x.par_chunks_mut(h * ROWS_PER_TASK)
        .enumerate()
        .for_each(|(ci, chunk)| {
            arch.dispatch(EmbedKernel {
                out: chunk,
                first_row: ci * ROWS_PER_TASK,
                rows: &rows,
                word: &m.word,
                pos: &m.pos,
                typ: &m.typ,
                gamma: &m.emb_g,
                beta: &m.emb_b,
                eps: m.eps,
            })
        });
    let mut x = Tensor::from_vec(x, (t, h), &Device::Cpu)?;
    let shape = AttnShape {
        hidden: h,
        heads: m.heads,
    };
    for layer in &m.layers {
        let qkv = x.matmul(&layer.wqkv)?;
        let mut ctx = vec![0f32; t * h];
        with_slice(&qkv, |q| {
            let mut parts: Vec<(&[f32], &mut [f32])> = Vec::with_capacity(lens.len());
            let mut rest: &mut [f32] = &mut ctx;
            let mut off = 0;
            for &len in &lens {
                let (a, b) = rest.split_at_mut(len * h);
                parts.push((&q[off * 3 * h..(off + len) * 3 * h], a));
                rest = b;
                off += len;
            }
            parts
                .into_par_iter()
                .for_each_init(AttnScratch::default, |sc, (q, o)| {
                    arch.dispatch(AttentionKernel {
                        qkv: q,
                        bias: &layer.bqkv,
                        shape,
                        out: o,
                        scratch: sc,
                    })
                });
        })?;
        drop(qkv);
        let a = Tensor::from_vec(ctx, (t, h), &Device::Cpu)?.matmul(&layer.wo)?;
        a.inplace_op2(
            &x,
            &AddNorm {
                bias: &layer.bo,
                gamma: &layer.ln1_g,
                beta: &layer.ln1_b,
                eps: m.eps,
                arch,
            },
        )?;
        x = a;
        let inter = x.matmul(&layer.w1)?;
        inter.inplace_op1(&BiasAct {
            bias: &layer.b1,
            act: m.act,
            arch,
        })?;
        let f = inter.matmul(&layer.w2)?;
        drop(inter);
        f.inplace_op2(
            &x,
            &AddNorm {
                bias: &layer.b2,
                gamma: &layer.ln2_g,
                beta: &layer.ln2_b,
                eps: m.eps,
                arch,
            },
        )?;
        x = f;
    }
    with_slice(&x, |xs| {
        let mut off = 0;
        lens.iter()
            .map(|&len| {
                let seq = &xs[off * h..(off + len) * h];
                off += len;
                match pooling {
                    Some(p) => pool_rows(seq, h, p),
                    None => seq.to_vec(),
                }
            })
            .collect()
    })
}

/// The last hidden states of each sequence of `batch` (`[len × H]` rows each), unpooled.
fn forward_fused_rows(
    m: &FusedBert,
    batch: &[&Encoded],
    arch: pulp::Arch,
) -> candle_core::Result<Vec<Vec<f32>>> {
    forward_fused_opt(m, batch, None, arch)
}

fn forward_fused(
    m: &FusedBert,
    batch: &[&Encoded],
    pooling: Pooling,
    arch: pulp::Arch,
) -> candle_core::Result<Vec<Vec<f32>>> {
    forward_fused_opt(m, batch, Some(pooling), arch)
}

/// Pools `[L, H]` token rows (all real tokens) into one `[H]` vector.
fn pool_rows(seq: &[f32], h: usize, pooling: Pooling) -> Vec<f32> {
    let len = seq.len() / h;
    match pooling {
        Pooling::Cls => seq[..h].to_vec(),
        Pooling::Max => {
            let mut v = vec![f32::NEG_INFINITY; h];
            for row in seq.chunks_exact(h) {
                v.iter_mut().zip(row).for_each(|(a, b)| *a = a.max(*b));
            }
            v
        }
        Pooling::Mean | Pooling::MeanSqrtLen => {
            let mut v = vec![0f64; h];
            for row in seq.chunks_exact(h) {
                v.iter_mut().zip(row).for_each(|(a, b)| *a += f64::from(*b));
            }
            let div = if pooling == Pooling::Mean {
                len as f64
            } else {
                (len as f64).sqrt()
            };
            v.into_iter().map(|s| (s / div.max(1e-9)) as f32).collect()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reference forward (candle-transformers BertModel, padded batches)

fn forward_reference(
    model: &candle_transformers::models::bert::BertModel,
    batch: &[&Encoded],
    pooling: Pooling,
) -> candle_core::Result<Vec<Vec<f32>>> {
    let b = batch.len();
    let max_len = batch.iter().map(|e| e.ids.len()).max().unwrap_or(0);
    let mut ids = vec![0u32; b * max_len];
    let mut types = vec![0u32; b * max_len];
    let mut mask = vec![0u32; b * max_len];
    for (r, e) in batch.iter().enumerate() {
        ids[r * max_len..r * max_len + e.ids.len()].copy_from_slice(&e.ids);
        types[r * max_len..r * max_len + e.ids.len()].copy_from_slice(&e.type_ids);
        mask[r * max_len..r * max_len + e.ids.len()]
            .iter_mut()
            .for_each(|m| *m = 1);
    }
    let dev = Device::Cpu;
    let ids = Tensor::from_vec(ids, (b, max_len), &dev)?;
    let types = Tensor::from_vec(types, (b, max_len), &dev)?;
    let mask = Tensor::from_vec(mask, (b, max_len), &dev)?;
    let out = model.forward(&ids, &types, Some(&mask))?; // [b, L, H]
    let maskf = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // [b, L, 1]
    let pooled = match pooling {
        Pooling::Cls => out.narrow(1, 0, 1)?.squeeze(1)?,
        Pooling::Max => {
            let neg = ((maskf.ones_like()? - &maskf)? * -1e9f64)?;
            out.broadcast_add(&neg)?.max(1)?
        }
        Pooling::Mean | Pooling::MeanSqrtLen => {
            let sum = out.broadcast_mul(&maskf)?.sum(1)?;
            let n = maskf.sum(1)?.clamp(1e-9f64, f64::MAX)?;
            let n = if pooling == Pooling::Mean {
                n
            } else {
                n.sqrt()?
            };
            sum.broadcast_div(&n)?
        }
    };
    pooled.to_vec2::<f32>()
}

#[cfg(test)]
mod head_tests {
    //! `encode_head` (a prefix's truncated encoding) against the whole text's, with the real
    //! MiniLM tokenizer (`chunkbench models fetch`).
    use super::*;
    use proptest::prelude::*;

    fn model() -> &'static BertEmbedder {
        static M: std::sync::OnceLock<BertEmbedder> = std::sync::OnceLock::new();
        M.get_or_init(|| {
            let dir = std::env::var_os("CHUNKBENCH_MODEL_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| testkit::workspace().join("models/all-MiniLM-L6-v2"));
            BertEmbedder::load(&dir).unwrap_or_else(|e| {
                panic!("{e}: run `chunkbench models fetch` first (or set CHUNKBENCH_MODEL_DIR)")
            })
        })
    }

    /// The whole text's encoding, truncated as the model input is.
    fn whole(e: &BertEmbedder, text: &str) -> (Vec<u32>, bool) {
        let enc = e.tokenizer.encode(e.model_input(text), true).unwrap();
        (enc.get_ids().to_vec(), !enc.get_overflowing().is_empty())
    }

    /// Whether `encode_head` answered from a prefix (and then, that it equals the whole's).
    fn check(text: &str, from: usize) -> bool {
        let e = model();
        let Some(h) = e.encode_head(text, from).unwrap() else {
            return false;
        };
        let (ids, truncated) = whole(e, text);
        assert_eq!(h.ids, ids, "from {from}: {text:?}");
        assert!(h.truncated && truncated);
        true
    }

    #[test]
    fn a_prefix_gives_the_whole_texts_window() {
        let hard = [
            "ΟΔΟΣ ΟΔΟΣ. Straße naïve café 東京タワー\u{301} \u{200B}x\ty\r\nz ".repeat(200),
            "word\u{00A0}glued\u{2028}line\u{3000}ideographic ".repeat(300),
            "a".repeat(150) + " " + &"supercalifragilistic ".repeat(400),
            "x=1;y=2;".repeat(900) + " tail words here",
        ];
        for (i, t) in hard.iter().enumerate() {
            for from in [1, 7, 64, 513, 4096] {
                let from_prefix = check(t, from);
                // The last text has one space, near its end: no prefix is provably enough.
                assert!(from_prefix || from > 64 || i == 3, "{from}: {t:?}");
            }
        }
        // The long text at the default prefix is truncated from its head.
        let e = model();
        let long = "the pump failed in may and the valve stayed ".repeat(20_000);
        let h = e
            .encode_head(&long, 256 * HEAD_BYTES_PER_TOKEN)
            .unwrap()
            .expect("a 880 kB text is encoded from a prefix");
        assert_eq!(h.ids, whole(e, &long).0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_text_of_words_and_separators(
            parts in proptest::collection::vec(
                prop_oneof![
                    "[a-zA-Z]{1,12}", "[ \t\n\u{a0}\u{3000}]{1,3}", "[.,;!?'\"()-]",
                    "[αβγΣςÀ-ÿ]{1,6}", "[一-龥]{1,4}", "[0-9]{1,5}",
                ],
                200..1200,
            ),
            from in 1usize..3000,
        ) {
            check(&parts.concat(), from);
        }
    }
}
