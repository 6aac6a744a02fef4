//! A reader for OpenAI-compatible servers (vLLM, llama.cpp server, Ollama, TGI, OpenAI), in
//! two modes ([`OpenAiApi`]):
//!
//! - **`api: chat`** (default): the model writes an answer through `/chat/completions`, which is
//!   parsed or scored by the letter's log-probs (below).
//! - **`api: completions`**: log-likelihood scoring of each option's continuation, as
//!   lm-evaluation-harness scores multiple choice. The prompt is built exactly as the local
//!   reader builds it ([`crate::GgufPrompt`]: the GGUF's tokenizer and chat template, the same
//!   truncation) from the GGUF named by [`OpenAiConfig::gguf`] (the file the server loaded);
//!   the continuation is the letter, or `" " + option text` for cloze. Each continuation token
//!   `c_j` is one `POST {base_url}/completions` request whose prompt is the prompt text plus
//!   the continuation's first `j` tokens (decoded), with `max_tokens: 1`, `logprobs: 1`,
//!   `temperature: 0` and `logit_bias: {c_j: 100}` ([`FORCE_BIAS`]): the server generates
//!   `c_j` and reports its unbiased log-prob. The option's log-likelihood is the sum over its
//!   tokens (divided by its length in characters for `cloze-norm`); the choice is the argmax
//!   with ties. Checks, each a [`ReaderError::Protocol`], never a silent number: the server's
//!   `usage.prompt_tokens` must equal the GGUF tokenizer's count (the server tokenized the same
//!   ids), the generated token (`logprobs.tokens[0]`) must be the forced one (a server
//!   ignoring `logit_bias`), the log-prob must be present, and the first tokens of the options
//!   must not have probabilities summing above 1 (a server reporting biased log-probs).
//!
//!   Why not lm-evaluation-harness's `local-completions` payload (`echo: true`, the prompt's
//!   log-probs read back)? Measured on llama-cpp-python 0.3.36's server with SmolLM2: for a
//!   model without a BOS token the echoed `token_logprobs[k]` is the log-prob of token `k`
//!   under the distribution that predicts token `k + 1` (off by one), and every token whose
//!   id equals the BOS id (SmolLM2's `<|im_start|>`) is dropped from the echo — a reply that
//!   cannot be told from a right one. The forced request reads the one distribution the server
//!   samples from, which every OpenAI-compatible server computes the same way. It costs one
//!   request per continuation token; llama.cpp's prompt cache re-evaluates only the new tokens.
//!
//! The rest of this page describes the chat mode; retries, timeouts, concurrency and secrets
//! apply to both.
//!
//! **Request** (OpenAI API reference, `POST {base_url}/chat/completions`): `model`,
//! `messages` (optional system message, then the user message rendered by
//! [`crate::PromptTemplate`] — the answer cue always ends the user message, since a standard
//! server cannot prefill the assistant turn), `temperature: 0`, `max_tokens`, optional `seed`,
//! and, unless logprobs are off, `logprobs: true` with `top_logprobs`.
//!
//! **Scoring.** The reply text is parsed with [`crate::parse_answer`] (anchored rules, CASES
//! 32). When the server returned log-probs and the answer was given as a letter, the first
//! generated token that *is* that letter (after stripping spaces, brackets, `*`, `.` and `:`)
//! is located and every option is scored by the best log-prob of its letter among that
//! position's `top_logprobs` (letters not listed score [`ABSENT_LOGPROB`]); the choice is their
//! argmax. Otherwise the parsed option scores 1 and the others 0. Unparsable or ambiguous
//! replies give an invalid output (a full tie, never correct) and are counted
//! ([`OpenAiStats`]).
//!
//! **Logprobs negotiation** ([`LogprobsMode::Auto`], default): the first request asks for
//! log-probs; a server that answers HTTP 400 to that is retried once without them, and from
//! then on this reader does not ask again (counted in [`OpenAiStats::logprobs_rejected`]).
//!
//! **Robustness.** Each attempt has a total timeout ([`OpenAiConfig::timeout_secs`]). HTTP 429
//! and 5xx, connection errors and timeouts are retried up to [`OpenAiConfig::max_retries`]
//! times with exponential backoff (`backoff_initial_ms · 2^attempt`, capped at
//! `backoff_max_ms`; a numeric `Retry-After` header, in seconds, is honoured up to the cap).
//! Other 4xx statuses and malformed JSON are not retried. (The loop is `httpio::with_retries`,
//! shared with the HTTP embedder.) At most
//! [`OpenAiConfig::concurrency`] requests are in flight per reader.
//!
//! **Secrets.** The API key is read once from the environment variable named by
//! [`OpenAiConfig::api_key_env`]; it is sent only in the protocol's key header (`Authorization`;
//! `x-api-key` with `protocol: anthropic`) and never
//! appears in the identity, `Debug` output, errors or cache entries.

use crate::gguf_prompt::GgufPrompt;
use crate::llm::{ChatFormat, LetterForm, Scoring};
use crate::parse::{parse_answer, ParsedAnswer};
use crate::prompt::{CuePlacement, PromptTemplate};
use crate::transport::{Transport, TransportConfig};
use crate::{argmax_with_ties, ContextUse, Reader, ReaderError, ReaderInput, ReaderOutput};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Score of a letter absent from the `top_logprobs` list (natural log; below any listed
/// value in practice).
pub const ABSENT_LOGPROB: f64 = -1000.0;

/// The `logit_bias` that forces the scored token in `api: completions` (far above any
/// logit gap). llama.cpp's Python server and vLLM report the unbiased log-prob of the
/// generated token; the reader detects a server that does not (module docs).
pub const FORCE_BIAS: f64 = 100.0;

/// Whether to ask the server for log-probs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LogprobsMode {
    /// Ask; fall back to text parsing if the server rejects the request (HTTP 400).
    #[default]
    Auto,
    /// Ask; a rejection is an error.
    On,
    /// Never ask; always parse the text.
    Off,
}

/// Which endpoint an [`OpenAiReader`] scores through (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OpenAiApi {
    /// `POST /chat/completions`: the reply is parsed, or scored by its letter's log-probs.
    #[default]
    Chat,
    /// `POST /completions`, one forced token per request: each option's continuation is
    /// scored by its log-likelihood (lm-evaluation-harness multiple choice).
    Completions,
}

/// Configuration of [`OpenAiReader`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Base URL up to the API version, e.g. `http://localhost:8000/v1` (vLLM),
    /// `http://localhost:11434/v1` (Ollama), `https://api.openai.com/v1`.
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Name of the environment variable holding the API key (`None`: no `Authorization`).
    pub api_key_env: Option<String>,
    /// The server protocol of `api: chat` (a name in [`crate::lm::PROTOCOLS`], default
    /// `openai`). Another protocol (`anthropic`) sends the same messages through the model
    /// seam ([`crate::lm::ChatModel`]) and parses the reply's text: no log-probs, so
    /// `logprobs: on` and `api: completions` need `openai`. Left out of the stored entry when
    /// `openai`.
    #[serde(skip_serializing_if = "crate::lm::is_default_protocol")]
    pub protocol: String,
    /// The endpoint and scoring mode (module docs).
    pub api: OpenAiApi,
    /// The multiple-choice prompt. Default: with `api: chat` the cue ends the user message
    /// (a standard server cannot prefill the assistant turn); with `api: completions` the
    /// local reader's default (the cue opens the assistant turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<PromptTemplate>,
    /// `api: completions`: what is scored per option (`letters`, `cloze`, `cloze-norm`; as the
    /// local reader's `scoring`).
    pub scoring: Scoring,
    /// `api: completions`: how a letter is written (`space`: `" A"`, `bare`: `"A"`).
    pub letters: LetterForm,
    /// `api: completions`: the chat formatting (`gguf`: the template in [`OpenAiConfig::gguf`];
    /// `chat-ml`; `plain`).
    pub chat: ChatFormat,
    /// `api: completions` (required there): the GGUF file whose tokenizer and chat template
    /// build the prompt — the file the server loaded, so that token ids mean the same on both
    /// sides. Its SHA-256 is part of the identity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gguf: Option<PathBuf>,
    /// `api: completions`: the window in tokens (prompt plus continuation) passages are
    /// truncated to; default the GGUF's `*.context_length`. Start the server with at least
    /// this context (llama.cpp: `--n_ctx`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_context_tokens: Option<usize>,
    /// `max_tokens` of each completion.
    pub max_tokens: u32,
    /// Log-prob negotiation.
    pub logprobs: LogprobsMode,
    /// `top_logprobs` (OpenAI allows 0..=20).
    pub top_logprobs: u32,
    /// `seed`, for servers that support it.
    pub seed: Option<u64>,
    /// Total time allowed for one attempt (connect, send, wait, read), seconds.
    pub timeout_secs: f64,
    /// Retries after the first attempt on 429, 5xx, connection errors and timeouts.
    pub max_retries: u32,
    /// First backoff, milliseconds.
    pub backoff_initial_ms: u64,
    /// Backoff cap (also caps `Retry-After`), milliseconds.
    pub backoff_max_ms: u64,
    /// Requests in flight at once (≥ 1).
    pub concurrency: usize,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            base_url: "http://localhost:8000/v1".into(),
            model: String::new(),
            api_key_env: None,
            protocol: crate::lm::DEFAULT_PROTOCOL.into(),
            api: OpenAiApi::Chat,
            template: None,
            scoring: Scoring::Letters,
            letters: LetterForm::Space,
            chat: ChatFormat::Gguf,
            gguf: None,
            max_context_tokens: None,
            max_tokens: 16,
            logprobs: LogprobsMode::Auto,
            top_logprobs: 20,
            seed: Some(0),
            timeout_secs: 60.0,
            max_retries: 4,
            backoff_initial_ms: 500,
            backoff_max_ms: 30_000,
            concurrency: 4,
        }
    }
}

/// Counters of one [`OpenAiReader`] (since creation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenAiStats {
    /// HTTP attempts made.
    pub requests: u64,
    /// Attempts that were retries (after 429, 5xx, timeouts, connection errors).
    pub retries: u64,
    /// Answers scored from log-probs (chat: the letter's; completions: every option's
    /// continuation).
    pub logprob_scored: u64,
    /// Answers scored by parsing the text.
    pub parsed: u64,
    /// Replies with no recognisable answer (counted wrong).
    pub unparsable: u64,
    /// Replies naming several different options (counted wrong).
    pub ambiguous: u64,
    /// 1 when the server rejected log-prob requests and this reader stopped asking.
    pub logprobs_rejected: u64,
}

/// The OpenAI-compatible reader (module docs).
#[derive(Debug)]
pub struct OpenAiReader {
    cfg: OpenAiConfig,
    /// Where the requests go.
    endpoint: Endpoint,
    logprobs_off: AtomicBool,
    /// Counters 2..=6 of [`OpenAiStats`] (0 and 1 are the transport's).
    stats: [AtomicU64; 7],
    /// What the server reported serving (`GET /models`), set by
    /// [`OpenAiReader::probe_served_models`]; part of the identity.
    served: Option<String>,
    /// The template in force (the configured one, or the api's default).
    template: PromptTemplate,
    /// `api: completions`: the prompt builder and the GGUF's SHA-256.
    completions: Option<(GgufPrompt, String)>,
}

/// Where an [`OpenAiReader`]'s requests go.
// One per reader, built once: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Endpoint {
    /// `protocol: openai`: the reader's own payloads (log-probs, completions) on its
    /// transport (URL, key, retries, concurrency, request counts).
    Direct(Transport),
    /// Another protocol: the model seam, whose transport carries the requests.
    Seam(crate::lm::ChatModel),
}

impl OpenAiReader {
    /// Builds the reader; reads the API key from the environment now.
    ///
    /// # Errors
    /// [`ReaderError::Config`] for an empty model name, a base URL that is not http(s), a
    /// non-positive timeout, `concurrency = 0`, an `api_key_env` variable that is unset or
    /// empty (the message names the variable, never a value), or `api: completions` without
    /// `gguf`; with `api: completions`, [`ReaderError::Model`] / [`ReaderError::Tokenizer`] /
    /// [`ReaderError::Template`] when the GGUF's tokenizer or chat template cannot be built.
    pub fn new(cfg: OpenAiConfig) -> Result<Self, ReaderError> {
        if cfg.model.trim().is_empty() {
            return Err(ReaderError::Config(
                "openai reader: `model` is empty".into(),
            ));
        }
        let endpoint = match Self::seam(&cfg)? {
            Some(lm) => Endpoint::Seam(lm),
            None => Endpoint::Direct(Transport::new(
                &TransportConfig {
                    who: "openai reader",
                    base_url: &cfg.base_url,
                    api_key_env: cfg.api_key_env.as_deref(),
                    key_header: None,
                    headers: &[],
                    timeout_secs: cfg.timeout_secs,
                    max_retries: cfg.max_retries,
                    backoff_initial_ms: cfg.backoff_initial_ms,
                    backoff_max_ms: cfg.backoff_max_ms,
                    concurrency: cfg.concurrency,
                },
                match cfg.api {
                    OpenAiApi::Chat => "chat/completions",
                    OpenAiApi::Completions => "completions",
                },
            )?),
        };
        let template = cfg.template.clone().unwrap_or_else(|| match cfg.api {
            OpenAiApi::Chat => PromptTemplate {
                cue_placement: CuePlacement::User,
                ..PromptTemplate::default()
            },
            OpenAiApi::Completions => PromptTemplate::default(),
        });
        let completions = match cfg.api {
            OpenAiApi::Chat => None,
            OpenAiApi::Completions => {
                let path = cfg.gguf.as_ref().ok_or_else(|| {
                    ReaderError::Config(
                        "openai reader: `api: completions` needs `gguf`, the GGUF file whose \
                         tokenizer and chat template build the prompt (the file the server \
                         loaded)"
                            .into(),
                    )
                })?;
                let content = crate::gguf_prompt::read_metadata(path)?;
                let window = crate::gguf_prompt::context_length(&content.metadata)
                    .or(cfg.max_context_tokens)
                    .ok_or_else(|| {
                        ReaderError::Config(format!(
                            "openai reader: {} declares no context length; set \
                             `max_context_tokens`",
                            path.display()
                        ))
                    })?;
                let window = cfg.max_context_tokens.map_or(window, |m| m.min(window));
                let prompt = GgufPrompt::from_metadata(
                    &content.metadata,
                    template.clone(),
                    cfg.chat,
                    cfg.scoring,
                    cfg.letters,
                    window,
                )?;
                let sha = fsio::sha256_file(path).map_err(|e| {
                    ReaderError::Model(format!("cannot hash {}: {e}", path.display()))
                })?;
                Some((prompt, sha))
            }
        };
        Ok(OpenAiReader {
            template,
            completions,
            endpoint,
            logprobs_off: AtomicBool::new(cfg.logprobs == LogprobsMode::Off),
            stats: Default::default(),
            served: None,
            cfg,
        })
    }

    /// Asks the server which models it serves (`GET {base_url}/models`, OpenAI's model list:
    /// `{"data": [{"id": ...}, ...]}`), records the reported ids (sorted, comma-separated) in
    /// this reader's identity, and returns them. A server that does not implement the
    /// endpoint (HTTP 404/405/501) is recorded as `unreported (HTTP N)`, so its identity still
    /// says that nothing was verified.
    ///
    /// The identity is what response caches and cell records key on, so a server that now
    /// serves another model (llama.cpp reports the GGUF path it loaded) never reuses answers
    /// of the previous one.
    ///
    /// # Errors
    /// [`ReaderError::Http`] when the server cannot be reached or answers another error;
    /// [`ReaderError::Protocol`] when the reply is not a model list.
    pub fn probe_served_models(&mut self) -> Result<String, ReaderError> {
        let served = match &mut self.endpoint {
            Endpoint::Seam(lm) => lm.probe()?,
            Endpoint::Direct(t) => t.served_models()?,
        };
        self.served = Some(served.clone());
        Ok(served)
    }

    /// Counters so far.
    pub fn stats(&self) -> OpenAiStats {
        let g = |i: usize| self.stats[i].load(Ordering::Relaxed);
        let (requests, retries) = self.transport().counts();
        OpenAiStats {
            requests,
            retries,
            logprob_scored: g(2),
            parsed: g(3),
            unparsable: g(4),
            ambiguous: g(5),
            logprobs_rejected: g(6),
        }
    }

    /// The transport the requests go through (the seam's with another protocol).
    fn transport(&self) -> &Transport {
        match &self.endpoint {
            Endpoint::Direct(t) => t,
            Endpoint::Seam(lm) => lm.transport(),
        }
    }

    fn bump(&self, i: usize) {
        self.stats[i].fetch_add(1, Ordering::Relaxed);
    }

    /// With a protocol other than `openai`, the model seam for its chat requests.
    fn seam(cfg: &OpenAiConfig) -> Result<Option<crate::lm::ChatModel>, ReaderError> {
        if crate::lm::is_default_protocol(&cfg.protocol) {
            return Ok(None);
        }
        let bad = |m: &str| {
            Err(ReaderError::Config(format!(
                "openai reader: `protocol: {}` {m}",
                cfg.protocol
            )))
        };
        if cfg.api != OpenAiApi::Chat {
            return bad("reads with `api: chat` only (log-likelihood scoring needs OpenAI's completions endpoint)");
        }
        if cfg.logprobs == LogprobsMode::On {
            return bad("gives no log-probs; set `logprobs: off` (or `auto`) to parse the reply");
        }
        let lm_cfg = crate::lm::ChatModelConfig {
            base_url: cfg.base_url.clone(),
            model: cfg.model.clone(),
            protocol: cfg.protocol.clone(),
            api_key_env: cfg.api_key_env.clone(),
            seed: cfg.seed.unwrap_or(0),
            timeout_secs: cfg.timeout_secs,
            max_retries: cfg.max_retries,
            concurrency: cfg.concurrency,
        };
        crate::lm::ChatModel::with_backoff(
            &lm_cfg,
            "openai reader",
            cfg.backoff_initial_ms,
            cfg.backoff_max_ms,
        )
        .map(|m| Some(m.with_seed(cfg.seed)))
    }

    /// The chat mode's messages as (role, content): the system message when the template
    /// has one, then the user message ending with the answer cue.
    fn message_pairs(&self, input: &ReaderInput<'_>) -> Vec<(String, String)> {
        let mut t = self.template.clone();
        t.cue_placement = CuePlacement::User;
        let r = t.render(input.question, input.options, input.passages);
        let mut msgs = Vec::new();
        if let Some(s) = r.system {
            msgs.push(("system".to_string(), s));
        }
        msgs.push(("user".to_string(), r.user));
        msgs
    }

    /// [`OpenAiReader::message_pairs`] as OpenAI's `{"role", "content"}` objects.
    fn messages(&self, input: &ReaderInput<'_>) -> Vec<serde_json::Value> {
        self.message_pairs(input)
            .into_iter()
            .map(|(role, content)| serde_json::json!({"role": role, "content": content}))
            .collect()
    }

    fn body(&self, input: &ReaderInput<'_>, logprobs: bool) -> serde_json::Value {
        let mut b = serde_json::json!({
            "model": self.cfg.model,
            "messages": self.messages(input),
            "temperature": 0,
            "max_tokens": self.cfg.max_tokens,
        });
        if let Some(seed) = self.cfg.seed {
            b["seed"] = seed.into();
        }
        if logprobs {
            b["logprobs"] = true.into();
            b["top_logprobs"] = self.cfg.top_logprobs.into();
        }
        b
    }

    /// Sends the chat request with retries ([`httpio::with_retries`], the module docs'
    /// policy); returns the response body of a 2xx reply.
    fn complete(&self, input: &ReaderInput<'_>) -> Result<String, ReaderError> {
        self.post(&|want_lp| self.body(input, want_lp))
    }

    /// POSTs `make_body(ask_for_logprobs)` to this reader's endpoint with retries
    /// ([`Transport::post`]); returns the body of a 2xx reply. A server answering HTTP 400 to
    /// a request for log-probs (`api: chat`, `logprobs: auto`) is asked again at once without
    /// them, and this reader stops asking (module docs).
    fn post(&self, make_body: &dyn Fn(bool) -> serde_json::Value) -> Result<String, ReaderError> {
        let build = || {
            let want_lp = !self.logprobs_off.load(Ordering::Relaxed);
            let body = serde_json::to_vec(&make_body(want_lp))
                .map_err(|e| ReaderError::Protocol(e.to_string()))?;
            Ok((body, want_lp))
        };
        let again = |r: &httpio::Reply, want_lp: &bool| {
            let negotiate = r.status == 400
                && *want_lp
                && self.cfg.logprobs == LogprobsMode::Auto
                && self.cfg.api == OpenAiApi::Chat;
            // The server does not take logprobs: stop asking, retry at once.
            if negotiate && !self.logprobs_off.swap(true, Ordering::Relaxed) {
                self.bump(6);
            }
            negotiate
        };
        self.transport().post(&build, &again)
    }

    /// Parses a reply body as JSON; [`ReaderError::Protocol`] quoting its start otherwise.
    fn parse_json(&self, body: &str) -> Result<serde_json::Value, ReaderError> {
        self.transport().parse_json(body)
    }

    /// Reads `input` through the model seam: the chat mode's messages, the reply's text
    /// parsed ([`crate::parse_answer`]; no log-probs).
    fn read_seam(
        &self,
        lm: &crate::lm::ChatModel,
        input: &ReaderInput<'_>,
    ) -> Result<ReaderOutput, ReaderError> {
        let request = crate::lm::ChatRequest::new(self.message_pairs(input), self.cfg.max_tokens);
        let g = lm.send(&request)?;
        self.scored(&g.text, None, input.options)
    }

    /// Scores a reply's `content` (with its tokens' log-probs when given) and counts how.
    fn scored(
        &self,
        content: &str,
        lp_tokens: Option<&[serde_json::Value]>,
        options: &[String],
    ) -> Result<ReaderOutput, ReaderError> {
        score_reply(content, lp_tokens, options).map(|(out, kind)| {
            self.bump(match kind {
                Scored::Logprobs => 2,
                Scored::Parsed => 3,
                Scored::Unparsable => 4,
                Scored::Ambiguous => 5,
            });
            out
        })
    }

    /// Scores a chat-completion response body for `options`.
    fn score(&self, body: &str, options: &[String]) -> Result<ReaderOutput, ReaderError> {
        let v = self.parse_json(body)?;
        let choice = v.get("choices").and_then(|c| c.get(0)).ok_or_else(|| {
            ReaderError::Protocol(format!(
                "no `choices[0]` in the reply: {}",
                httpio::quote_body(body, 200)
            ))
        })?;
        let content = choice
            .pointer("/message/content")
            .and_then(|c| c.as_str())
            .unwrap_or("");
        let lp_tokens = choice
            .pointer("/logprobs/content")
            .and_then(|c| c.as_array());
        self.scored(content, lp_tokens.map(Vec::as_slice), options)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scored {
    Logprobs,
    Parsed,
    Unparsable,
    Ambiguous,
}

fn norm_token(t: &str) -> &str {
    t.trim_matches(|c: char| c.is_whitespace() || "()[]*.:".contains(c))
}

/// Scores a reply's text and optional `logprobs.content` list (module docs).
fn score_reply(
    content: &str,
    lp: Option<&[serde_json::Value]>,
    options: &[String],
) -> Result<(ReaderOutput, Scored), ReaderError> {
    let n = options.len();
    let raw_text = crate::clip(&httpio::redact(content), 300);
    let parsed = parse_answer(content, options);
    let (index, rule) = match parsed {
        ParsedAnswer::Choice { index, rule } => (index, rule),
        ParsedAnswer::Ambiguous(v) => {
            return Ok((
                ReaderOutput::invalid(n, format!("ambiguous {v:?}: {raw_text}")),
                Scored::Ambiguous,
            ))
        }
        ParsedAnswer::Unparsable => {
            return Ok((
                ReaderOutput::invalid(n, format!("unparsable: {raw_text}")),
                Scored::Unparsable,
            ))
        }
    };
    let letter = crate::letter(index).to_string();
    // The letter's token: upper case first; the model may have written it in lower case
    // ("b"), but a lower-case "a" or "i" token is as likely the word, so those never match.
    let lower = letter.to_ascii_lowercase();
    let find = |want: &str| {
        lp.filter(|_| rule != "anchored-text" && rule != "whole-text")
            .and_then(|toks| {
                toks.iter().find(|t| {
                    t.get("token")
                        .and_then(|x| x.as_str())
                        .is_some_and(|s| norm_token(s) == want)
                })
            })
    };
    let position = find(&letter).or_else(|| {
        (lower != "a" && lower != "i")
            .then(|| find(&lower))
            .flatten()
    });
    if let Some(pos) = position {
        let mut scores = vec![ABSENT_LOGPROB; n];
        let mut consider = |tok: &str, lp: f64| {
            let t = norm_token(tok);
            let mut cs = t.chars();
            if let (Some(c), None) = (cs.next(), cs.next()) {
                let c = c.to_ascii_uppercase();
                if let Some(i) = (c as u32).checked_sub('A' as u32).map(|i| i as usize) {
                    if i < n && lp.is_finite() && lp > scores[i] {
                        scores[i] = lp;
                    }
                }
            }
        };
        if let (Some(t), Some(l)) = (
            pos.get("token").and_then(|x| x.as_str()),
            pos.get("logprob").and_then(|x| x.as_f64()),
        ) {
            consider(t, l);
        }
        for alt in pos
            .get("top_logprobs")
            .and_then(|x| x.as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            if let (Some(t), Some(l)) = (
                alt.get("token").and_then(|x| x.as_str()),
                alt.get("logprob").and_then(|x| x.as_f64()),
            ) {
                consider(t, l);
            }
        }
        let keys: Vec<(f64, f64)> = scores.iter().map(|s| (*s, 0.0)).collect();
        let (choice, tied) = argmax_with_ties(&keys);
        return Ok((
            ReaderOutput {
                choice,
                scores,
                tied,
                raw: format!("logprobs({rule}): {raw_text}"),
                invalid: false,
                context: ContextUse::default(),
                tie_break: Vec::new(),
            },
            Scored::Logprobs,
        ));
    }
    let mut scores = vec![0.0; n];
    scores[index] = 1.0;
    Ok((
        ReaderOutput {
            choice: index,
            scores,
            tied: 1,
            raw: format!("parsed({rule}): {raw_text}"),
            invalid: false,
            context: ContextUse::default(),
            tie_break: Vec::new(),
        },
        Scored::Parsed,
    ))
}

impl OpenAiReader {
    /// The chat mode's identity.
    fn chat_identity(&self) -> String {
        if let Endpoint::Seam(lm) = &self.endpoint {
            // The seam's identity names the protocol, endpoint, model, seed and served model.
            return format!(
                "chat-reader-v1(template={},max_tokens={},model={})",
                self.template.fingerprint(),
                self.cfg.max_tokens,
                lm.identity()
            );
        }
        format!(
            "openai-chat-v1(endpoint={},model={},template={},max_tokens={},logprobs={},\
             top_logprobs={},seed={},temperature=0,served={})",
            self.transport().base_url(),
            self.cfg.model,
            self.template.fingerprint(),
            self.cfg.max_tokens,
            serde_json::to_string(&self.cfg.logprobs)
                .unwrap_or_default()
                .trim_matches('"'),
            self.cfg.top_logprobs,
            self.cfg
                .seed
                .map_or_else(|| "none".to_string(), |s| s.to_string()),
            self.served.as_deref().unwrap_or("not-probed"),
        )
    }

    /// The log-likelihood of the continuation `cont` (token ids, text `cont_text`) after the
    /// prompt `text` of `prompt_tokens` tokens: one forced `/completions` request per token
    /// (module docs).
    fn continuation_loglik(
        &self,
        tok: &crate::GgufTokenizer,
        text: &str,
        prompt_tokens: usize,
        cont: &[u32],
        cont_text: &str,
    ) -> Result<f64, ReaderError> {
        let mut sum = 0.0;
        for j in 0..cont.len() {
            let head = tok.decode(&cont[..j])?;
            if !cont_text.starts_with(&head) {
                return Err(ReaderError::Tokenizer(format!(
                    "the continuation {cont_text:?} cannot be cut after its token {j} on a \
                     character boundary (the server takes text prompts)"
                )));
            }
            let prompt = format!("{text}{head}");
            let body = self.post(&|_| {
                let mut b = serde_json::json!({
                    "model": self.cfg.model,
                    "prompt": prompt,
                    "max_tokens": 1,
                    "logprobs": 1,
                    "temperature": 0,
                    "logit_bias": {cont[j].to_string(): FORCE_BIAS},
                });
                if let Some(seed) = self.cfg.seed {
                    b["seed"] = seed.into();
                }
                b
            })?;
            // A byte-level token may decode to part of a character: compare only whole ones.
            let want = tok.decode(&cont[j..=j])?;
            let want = (!want.contains('\u{FFFD}')).then_some(want.as_str());
            sum += self.forced_logprob(&body, prompt_tokens + j, want)?;
        }
        Ok(sum)
    }

    /// Reads the forced token's log-prob from a `/completions` reply, checking that the
    /// server tokenized the prompt into `want_prompt_tokens` tokens (`usage.prompt_tokens`,
    /// when reported) and generated the forced token, whose text is `want_token` when it
    /// decodes to whole characters (`logprobs.tokens[0]`, which must be present).
    fn forced_logprob(
        &self,
        body: &str,
        want_prompt_tokens: usize,
        want_token: Option<&str>,
    ) -> Result<f64, ReaderError> {
        let v = self.parse_json(body)?;
        let generated = v
            .pointer("/choices/0/logprobs/tokens/0")
            .and_then(|x| x.as_str())
            .ok_or_else(|| {
                ReaderError::Protocol(format!(
                    "{}: no `choices[0].logprobs.tokens[0]` in the reply, so the forced token \
                     cannot be checked: {}",
                    self.transport().url(),
                    httpio::quote_body(body, 300)
                ))
            })?;
        if let Some(want) = want_token.filter(|w| *w != generated) {
            return Err(ReaderError::Protocol(format!(
                "{} generated {generated:?} where `logit_bias` forced {want:?}: the server \
                 ignores `logit_bias`, which this scoring needs",
                self.transport().url()
            )));
        }
        if let Some(n) = v.pointer("/usage/prompt_tokens").and_then(|x| x.as_u64()) {
            if n as usize != want_prompt_tokens {
                return Err(ReaderError::Protocol(format!(
                    "{} tokenized the prompt into {n} tokens where the GGUF tokenizer of \
                     `gguf` gives {want_prompt_tokens}: is `gguf` the file the server loaded?",
                    self.transport().url()
                )));
            }
        }
        v.pointer("/choices/0/logprobs/token_logprobs/0")
            .and_then(|x| x.as_f64())
            .ok_or_else(|| {
                ReaderError::Protocol(format!(
                    "{}: no number at `choices[0].logprobs.token_logprobs[0]` in the reply (the \
                     server must return log-probs and honour `logit_bias`; llama.cpp's Python \
                     server needs `--logits_all true`): {}",
                    self.transport().url(),
                    httpio::quote_body(body, 300)
                ))
            })
    }

    /// `api: completions`: scores every option's continuation (module docs).
    fn read_completions(
        &self,
        prompt: &GgufPrompt,
        input: &ReaderInput<'_>,
    ) -> Result<ReaderOutput, ReaderError> {
        let prep = prompt.prepare(input)?;
        let tok = prompt.tokenizer();
        let loglik = prep
            .conts
            .iter()
            .map(|c| {
                let cont_text = tok.decode(c)?;
                self.continuation_loglik(tok, &prep.text, prep.ids.len(), c, &cont_text)
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Distinct first tokens are disjoint events of one distribution.
        let mut first: Vec<(u32, f64)> = Vec::new();
        for (c, lp) in prep.conts.iter().zip(&loglik) {
            if c.len() == 1 && !first.iter().any(|(t, _)| *t == c[0]) {
                first.push((c[0], *lp));
            }
        }
        let mass: f64 = first.iter().map(|(_, lp)| lp.exp()).sum();
        if mass > 1.0 + 1e-3 {
            return Err(ReaderError::Protocol(format!(
                "{}: the options' single-token continuations have probabilities summing to \
                 {mass:.3} > 1: the server reports log-probs after `logit_bias`, which this \
                 scoring cannot use",
                self.transport().url()
            )));
        }
        self.bump(2);
        let extra = format!("tokens={}", prep.ids.len());
        Ok(prompt.output(input.options, loglik, prep.context, &extra))
    }
}

impl Reader for OpenAiReader {
    fn identity(&self) -> String {
        let Some((prompt, sha)) = &self.completions else {
            return self.chat_identity();
        };
        format!(
            "openai-completions-v1(endpoint={},model={},gguf_sha256={sha},chat={},chat_sha={},\
             template={},scoring={},letters={},window={},seed={},temperature=0,served={})",
            self.transport().base_url(),
            self.cfg.model,
            serde_json::to_string(&self.cfg.chat)
                .unwrap_or_default()
                .trim_matches('"'),
            &crate::sha256_hex(prompt.chat().source().as_bytes())[..16],
            self.template.fingerprint(),
            serde_json::to_string(&self.cfg.scoring)
                .unwrap_or_default()
                .trim_matches('"'),
            serde_json::to_string(&self.cfg.letters)
                .unwrap_or_default()
                .trim_matches('"'),
            prompt.window(),
            self.cfg
                .seed
                .map_or_else(|| "none".to_string(), |s| s.to_string()),
            self.served.as_deref().unwrap_or("not-probed"),
        )
    }

    fn read(&self, input: &ReaderInput<'_>) -> Result<ReaderOutput, ReaderError> {
        input.validate(&self.identity())?;
        if let Some((prompt, _)) = &self.completions {
            return self.read_completions(prompt, input);
        }
        let mut out = match &self.endpoint {
            Endpoint::Seam(lm) => self.read_seam(lm, input)?,
            Endpoint::Direct(_) => self.score(&self.complete(input)?, input.options)?,
        };
        let used = input
            .passages
            .iter()
            .filter(|p| !p.trim().is_empty())
            .count();
        out.context = ContextUse {
            passages_given: input.passages.len(),
            passages_used: used,
            ..Default::default()
        };
        Ok(out)
    }

    fn cache_material(&self, input: &ReaderInput<'_>) -> Result<String, ReaderError> {
        if let Some((prompt, _)) = &self.completions {
            input.validate(&self.identity())?;
            return Ok(prompt.prepare(input)?.text);
        }
        serde_json::to_string(&self.messages(input))
            .map_err(|e| ReaderError::Protocol(e.to_string()))
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        let (prompt, _) = self.completions.as_ref()?;
        prompt.tokenizer().encode(text).ok().map(|ids| ids.len())
    }

    fn tokenizer_name(&self) -> Option<String> {
        let (_, sha) = self.completions.as_ref()?;
        Some(format!("gguf:sha256={}", &sha[..16]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn logprob_scoring_at_the_letter_position() {
        let lp: Vec<serde_json::Value> = serde_json::from_str(
            r#"[{"token":"Answer","logprob":-0.01,"top_logprobs":[]},
                {"token":":","logprob":-0.01,"top_logprobs":[]},
                {"token":" B","logprob":-0.2,"top_logprobs":[
                    {"token":" B","logprob":-0.2},{"token":" A","logprob":-1.9},
                    {"token":"A","logprob":-2.5},{"token":" E","logprob":-3.0}]}]"#,
        )
        .unwrap();
        let o = opts(&["2", "4", "6", "8"]);
        let (out, kind) = score_reply("Answer: B", Some(&lp), &o).unwrap();
        assert_eq!(kind, Scored::Logprobs);
        assert_eq!((out.choice, out.tied), (1, 1));
        assert_eq!(out.scores, vec![-1.9, -0.2, ABSENT_LOGPROB, ABSENT_LOGPROB]);
    }

    #[test]
    fn text_answers_without_logprobs_and_invalid_replies() {
        let o = opts(&["2", "4", "6", "All of the above"]);
        let (out, kind) = score_reply("ANSWER: All of the above", None, &o).unwrap();
        assert_eq!((out.choice, kind), (3, Scored::Parsed));
        assert!(out.is_correct(3));
        let (out, kind) = score_reply("None of these", None, &o).unwrap();
        assert_eq!(kind, Scored::Unparsable);
        assert!(out.invalid && (0..4).all(|g| !out.is_correct(g)));
        let (_, kind) = score_reply("Answer: A\nAnswer: B", None, &o).unwrap();
        assert_eq!(kind, Scored::Ambiguous);
    }

    #[test]
    fn config_errors_name_the_variable_not_the_value() {
        let cfg = OpenAiConfig {
            model: "m".into(),
            api_key_env: Some("CHUNKBENCH_TEST_SURELY_UNSET_KEY".into()),
            ..Default::default()
        };
        let e = OpenAiReader::new(cfg).unwrap_err().to_string();
        assert!(e.contains("CHUNKBENCH_TEST_SURELY_UNSET_KEY"), "{e}");
        let cfg = OpenAiConfig {
            model: String::new(),
            ..Default::default()
        };
        assert!(OpenAiReader::new(cfg).is_err());
    }
}
