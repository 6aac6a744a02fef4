//! An [`Embedder`] backed by an embedding server.
//!
//! Two wire formats:
//! - OpenAI-compatible `POST /v1/embeddings`: request `{"model": M, "input": [texts],
//!   "encoding_format": "float"}`, response `{"data": [{"index": i, "embedding": [..]}, ..]}`
//!   (OpenAI API reference, "Create embeddings"; also served by vLLM, llama.cpp, Ollama, TEI).
//! - text-embeddings-inference `POST /embed`: request `{"inputs": [texts], "normalize": true,
//!   "truncate": true}`, response `[[..], ..]` (TEI's OpenAPI spec, `EmbedRequest`).
//!
//! Texts are sent in batches of `batch_size`; each request has a timeout; 429 and 5xx answers
//! and transport errors (timeouts, refused or reset connections) are retried with exponential
//! backoff (honouring a `Retry-After` header in seconds, capped at 30 s) by `httpio`'s one
//! retry loop, which the OpenAI-compatible reader shares. Other 4xx answers and
//! malformed bodies fail at once. The API key is read from the environment variable named by
//! [`HttpConfig::api_key_env`], sent as `Authorization: Bearer <key>`, and never appears in an
//! error, a `Debug` output or an identity.
//!
//! **Identity by content.** A model name and a URL say what a server was asked for, not what
//! it serves. [`HttpEmbedder::connect`] therefore embeds one fixed text ([`PROBE_TEXT`]) and
//! puts a fingerprint of the answer in [`Embedder::identity`]: the sign pattern of the probe
//! vector (one bit per component: a random-hyperplane hash with the coordinate axes as
//! hyperplanes), hashed with the dimension. Another model, or another quantisation of the same
//! one, flips many signs and so gets another identity, another cache namespace and stale cells;
//! float noise between runs of one server (~1e-7) flips a sign only for a component within
//! that distance of zero, which for 384 components happens in well under 1 % of restarts and
//! then costs a recomputation, never a wrong number.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};

use crate::{l2_normalize, EmbedError, EmbedStats, Embedder};

/// The text [`HttpEmbedder::connect`] embeds to fingerprint what a server serves.
pub const PROBE_TEXT: &str =
    "chunkbench embedder probe: the quick brown fox jumps over the lazy dog near the river bank.";

/// Which wire format the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpApi {
    /// OpenAI-compatible `POST /v1/embeddings`.
    #[serde(alias = "openai")]
    OpenAi,
    /// text-embeddings-inference `POST /embed`.
    Tei,
}

/// Configuration of an [`HttpEmbedder`]; deserialisable from the run config (YAML/JSON).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Wire format.
    pub api: HttpApi,
    /// Full endpoint URL, e.g. `http://127.0.0.1:8080/v1/embeddings` or
    /// `http://127.0.0.1:8080/embed`.
    pub url: String,
    /// Model name sent in OpenAI requests (required for [`HttpApi::OpenAi`]; part of the
    /// identity for both).
    #[serde(default)]
    pub model: Option<String>,
    /// Name of the environment variable holding the API key (the key itself is never part of
    /// the configuration).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Vector dimension; when absent it is learned from a one-text probe request at
    /// construction.
    #[serde(default)]
    pub dim: Option<usize>,
    /// Texts per request (default 32).
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// Per-request timeout in milliseconds (default 30000).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Retries after the first attempt (default 4).
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// First backoff in milliseconds, doubled after each failed attempt (default 250).
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    /// The `tokenizer.json` the served model reads its inputs with, declared by the user, so
    /// that callers can keep inputs within [`HttpConfig::max_input_tokens`] (semantic chunkers
    /// split sentences at the window); give both or neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<std::path::PathBuf>,
    /// The served model's input window in tokens, special tokens included (256 for
    /// all-MiniLM-L6-v2 under sentence-transformers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<usize>,
}

fn default_batch_size() -> usize {
    32
}
fn default_timeout_ms() -> u64 {
    30_000
}
fn default_max_retries() -> u32 {
    4
}
fn default_backoff_ms() -> u64 {
    250
}

impl HttpConfig {
    /// An OpenAI-compatible endpoint with default batching, timeout and retries.
    pub fn openai(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            model: Some(model.into()),
            ..Self::base(HttpApi::OpenAi, url.into())
        }
    }

    /// A text-embeddings-inference `/embed` endpoint with default batching, timeout and
    /// retries.
    pub fn tei(url: impl Into<String>) -> Self {
        Self::base(HttpApi::Tei, url.into())
    }

    fn base(api: HttpApi, url: String) -> Self {
        Self {
            api,
            url,
            model: None,
            api_key_env: None,
            dim: None,
            batch_size: default_batch_size(),
            timeout_ms: default_timeout_ms(),
            max_retries: default_max_retries(),
            backoff_ms: default_backoff_ms(),
            tokenizer: None,
            max_input_tokens: None,
        }
    }
}

/// An [`Embedder`] that calls an OpenAI-compatible or TEI embedding server (see the module
/// docs for the protocol, retries and key handling). Returned vectors are L2-normalised
/// locally whatever the server does.
#[derive(Debug)]
pub struct HttpEmbedder {
    config: HttpConfig,
    agent: httpio::Agent,
    key: Option<httpio::Bearer>,
    tokenizer: Option<tokenizers::Tokenizer>,
    dim: OnceLock<usize>,
    fingerprint: OnceLock<String>,
    texts: AtomicU64,
    requests: AtomicU64,
}

impl HttpEmbedder {
    /// Builds the client, reads the API key from the environment and, if
    /// [`HttpConfig::dim`] is absent, learns the dimension with a one-text request.
    ///
    /// # Errors
    /// [`EmbedError::Config`] for a zero batch size, a URL that is not `http(s)://`, a missing
    /// OpenAI model name, an unset/empty key variable (named, never its value), a tokenizer
    /// without a window (or the reverse) or a tokenizer file that does not load;
    /// [`EmbedError::Http`] if the probe request fails.
    pub fn new(config: HttpConfig) -> Result<Self, EmbedError> {
        if config.batch_size == 0 {
            return Err(EmbedError::Config(
                "http.batch_size must be positive".into(),
            ));
        }
        if !(config.url.starts_with("http://") || config.url.starts_with("https://")) {
            return Err(EmbedError::Config(format!(
                "http.url must start with http:// or https://, got `{}`",
                config.url
            )));
        }
        if config.api == HttpApi::OpenAi && matches!(config.model.as_deref(), None | Some("")) {
            return Err(EmbedError::Config(
                "http.model is required for the OpenAI-compatible API".into(),
            ));
        }
        let key = match &config.api_key_env {
            None => None,
            Some(var) => Some(
                httpio::Bearer::from_env(var)
                    .map_err(|m| EmbedError::Config(format!("{m} (http.api_key_env)")))?,
            ),
        };
        let tokenizer = match (&config.tokenizer, config.max_input_tokens) {
            (None, None) => None,
            (Some(path), Some(n)) if n >= 2 => Some(
                tokenizers::Tokenizer::from_file(path).map_err(|e| EmbedError::Model {
                    path: path.clone(),
                    message: format!("the embedding server's tokenizer does not load: {e}"),
                })?,
            ),
            (Some(_), Some(n)) => {
                return Err(EmbedError::Config(format!(
                    "http.max_input_tokens must be at least 2 (got {n})"
                )))
            }
            _ => {
                return Err(EmbedError::Config(
                    "give the server's tokenizer and max_input_tokens together (or neither)".into(),
                ))
            }
        };
        let agent = httpio::agent(Duration::from_millis(config.timeout_ms));
        let me = Self {
            tokenizer,
            dim: OnceLock::new(),
            fingerprint: OnceLock::new(),
            config,
            agent,
            key,
            texts: AtomicU64::new(0),
            requests: AtomicU64::new(0),
        };
        if let Some(d) = me.config.dim {
            let _ = me.dim.set(d);
        } else {
            me.probe()?;
        }
        Ok(me)
    }

    /// [`HttpEmbedder::new`], then (unless `new` already did) one request embedding
    /// [`PROBE_TEXT`], whose fingerprint becomes part of [`Embedder::identity`] (module docs).
    /// This is the constructor for runs: two servers, or one server before and after a model
    /// change, never share an identity unless they answer the probe alike.
    ///
    /// # Errors
    /// As [`HttpEmbedder::new`]; [`EmbedError::Http`] when the probe fails or its vector's
    /// dimension differs from a configured [`HttpConfig::dim`].
    pub fn connect(config: HttpConfig) -> Result<Self, EmbedError> {
        let me = Self::new(config)?;
        if me.fingerprint.get().is_none() {
            me.probe()?;
        }
        Ok(me)
    }

    /// Embeds [`PROBE_TEXT`]: sets the dimension (when unknown) and the fingerprint.
    fn probe(&self) -> Result<(), EmbedError> {
        let v = self.request_with_retries(&[PROBE_TEXT])?;
        let _ = self.dim.set(v[0].len());
        let _ = self.fingerprint.set(fingerprint(&v[0]));
        Ok(())
    }

    /// The probe fingerprint (16 hex digits), when [`HttpEmbedder::connect`] (or a `new`
    /// without `dim`) probed the server.
    pub fn fingerprint(&self) -> Option<&str> {
        self.fingerprint.get().map(String::as_str)
    }

    /// The configuration (contains the key's variable name, never the key).
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    fn redact(&self, s: String) -> String {
        match &self.key {
            Some(k) => k.redact(s),
            None => s,
        }
    }

    fn http_err(&self, status: Option<u16>, message: String) -> EmbedError {
        EmbedError::Http {
            endpoint: self.config.url.clone(),
            status,
            message: self.redact(message),
        }
    }

    fn request_with_retries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = match self.config.api {
            HttpApi::OpenAi => json!({
                "model": self.config.model.as_deref().unwrap_or_default(),
                "input": texts,
                "encoding_format": "float",
            }),
            HttpApi::Tei => json!({ "inputs": texts, "normalize": true, "truncate": true }),
        };
        let body = serde_json::to_vec(&body).expect("a JSON value serialises");
        let backoff = httpio::Backoff {
            max_retries: self.config.max_retries,
            initial: Duration::from_millis(self.config.backoff_ms),
            max: Duration::from_secs(30),
        };
        let mut attempts = 0u32;
        let v = httpio::with_retries(
            &backoff,
            |_| {},
            || {
                attempts += 1;
                self.attempt(&body, texts.len()).map_err(|(status, m)| {
                    self.http_err(status, format!("{m} (attempt {attempts})"))
                })
            },
            |g| {
                self.http_err(
                    g.last.status,
                    format!("{} (gave up after {} attempts)", g.last.what, g.attempts),
                )
            },
        )?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        Ok(v)
    }

    /// One POST: the vectors, a transient failure, or the status and message of a failure
    /// that retrying cannot fix (another 4xx, a malformed body).
    #[allow(clippy::type_complexity)]
    fn attempt(
        &self,
        body: &[u8],
        n: usize,
    ) -> Result<httpio::Step<Vec<Vec<f32>>>, (Option<u16>, String)> {
        let reply = match httpio::post_json(&self.agent, &self.config.url, self.key.as_ref(), body)
        {
            Ok(r) => r,
            Err(httpio::Transport::Transient(t)) => return Ok(httpio::Step::Transient(t)),
            Err(httpio::Transport::Fatal(m)) => return Err((None, m)),
        };
        if !reply.ok() {
            return Err((
                Some(reply.status),
                format!("HTTP {}: {}", reply.status, snippet(&reply.text)),
            ));
        }
        self.parse(&reply.text, n)
            .map(httpio::Step::Done)
            .map_err(|m| (Some(reply.status), m))
    }

    fn parse(&self, text: &str, n: usize) -> Result<Vec<Vec<f32>>, String> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| format!("malformed JSON response ({e}): {}", snippet(text)))?;
        let mut vectors: Vec<Vec<f32>> = match self.config.api {
            HttpApi::Tei => {
                let rows = v
                    .as_array()
                    .ok_or("malformed response: expected a JSON array of vectors")?;
                rows.iter()
                    .enumerate()
                    .map(|(i, r)| vector(r, &format!("[{i}]")))
                    .collect::<Result<_, _>>()?
            }
            HttpApi::OpenAi => {
                let data = v
                    .get("data")
                    .and_then(Value::as_array)
                    .ok_or("malformed response: missing array field `data`")?;
                let mut slots: Vec<Option<Vec<f32>>> = vec![None; data.len()];
                for (i, item) in data.iter().enumerate() {
                    let idx = match item.get("index") {
                        None => i,
                        Some(x) => x
                            .as_u64()
                            .map(|x| x as usize)
                            .filter(|x| *x < data.len())
                            .ok_or(format!(
                                "malformed response: `data[{i}].index` is not a valid index"
                            ))?,
                    };
                    let emb = item
                        .get("embedding")
                        .ok_or(format!("malformed response: missing `data[{i}].embedding`"))?;
                    if slots[idx]
                        .replace(vector(emb, &format!("data[{i}].embedding"))?)
                        .is_some()
                    {
                        return Err(format!("malformed response: duplicate index {idx}"));
                    }
                }
                slots.into_iter().map(|s| s.unwrap_or_default()).collect()
            }
        };
        if vectors.len() != n {
            return Err(format!(
                "server returned {} vectors for {n} texts",
                vectors.len()
            ));
        }
        let dim = vectors[0].len();
        let want = self.dim.get().copied().unwrap_or(dim);
        if let Some(bad) = vectors.iter().position(|v| v.len() != want || v.is_empty()) {
            return Err(format!(
                "vector {bad} has dimension {}, expected {want}",
                vectors[bad].len()
            ));
        }
        vectors.iter_mut().for_each(|v| l2_normalize(v));
        Ok(vectors)
    }
}

/// First 16 hex digits of the sha256 of the dimension (u64, little-endian) and the sign bits
/// of `v` (bit i set when `v[i] >= 0`, packed little-endian into bytes).
fn fingerprint(v: &[f32]) -> String {
    let mut bytes = (v.len() as u64).to_le_bytes().to_vec();
    for chunk in v.chunks(8) {
        let mut b = 0u8;
        for (i, x) in chunk.iter().enumerate() {
            if *x >= 0.0 {
                b |= 1 << i;
            }
        }
        bytes.push(b);
    }
    fsio::sha256_hex(&bytes)[..16].to_string()
}

fn snippet(s: &str) -> String {
    httpio::clip(s.trim(), 200)
}

fn vector(v: &Value, field: &str) -> Result<Vec<f32>, String> {
    let arr = v.as_array().ok_or(format!(
        "malformed response: `{field}` is not an array of numbers"
    ))?;
    arr.iter()
        .enumerate()
        .map(|(i, x)| {
            let f = x.as_f64().ok_or(format!(
                "malformed response: `{field}[{i}]` is not a number"
            ))?;
            let v = f as f32;
            if !v.is_finite() {
                return Err(format!(
                    "malformed response: `{field}[{i}]` = {f:e} is not a finite 32-bit float"
                ));
            }
            Ok(v)
        })
        .collect()
}

impl Embedder for HttpEmbedder {
    fn dim(&self) -> usize {
        self.dim.get().copied().unwrap_or(0)
    }

    /// `http:<api>:<url>:model=<model>:norm=l2`, then `:dim=<d>:probe=<fingerprint>` once the
    /// server was probed ([`HttpEmbedder::connect`]); never the key.
    fn identity(&self) -> String {
        let api = match self.config.api {
            HttpApi::OpenAi => "openai",
            HttpApi::Tei => "tei",
        };
        let mut id = format!(
            "http:{api}:{}:model={}:norm=l2",
            self.config.url,
            self.config.model.as_deref().unwrap_or("")
        );
        if let Some(fp) = self.fingerprint.get() {
            id.push_str(&format!(":dim={}:probe={fp}", self.dim()));
        }
        id
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.config.batch_size) {
            out.extend(self.request_with_retries(chunk)?);
        }
        self.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
        Ok(out)
    }

    /// The declared tokenizer ([`HttpConfig::tokenizer`]), if any.
    fn tokenizer(&self) -> Option<tokenizers::Tokenizer> {
        self.tokenizer.clone()
    }

    /// The declared window ([`HttpConfig::max_input_tokens`]), if any.
    fn max_input_tokens(&self) -> Option<usize> {
        self.tokenizer.as_ref().and(self.config.max_input_tokens)
    }

    fn stats(&self) -> EmbedStats {
        EmbedStats {
            texts: self.texts.load(Ordering::Relaxed),
            batches: self.requests.load(Ordering::Relaxed),
            ..EmbedStats::default()
        }
    }
}
