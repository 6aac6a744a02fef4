//! The one seam for language models that write text: [`ChatModel`], used by the LLM
//! strategies (`contextual`, `llm-boundaries`) and by `chunkbench data generate`.
//!
//! A [`ChatModel`] is a server protocol ([`ChatProtocol`]: how a [`ChatRequest`] becomes a
//! request body and how the reply body becomes a [`Generation`] — the payload and parse hooks
//! of lm-evaluation-harness's `TemplateAPI`, `_create_payload` and `parse_generations`) behind
//! everything that does not depend on the protocol, written once:
//!
//! - **transport** ([`crate::transport::Transport`]): the API key (read once from the named
//!   environment variable, sent in the protocol's header, never printed), the concurrency
//!   limit, timeouts and retries with backoff;
//! - **identity**: `TAG(endpoint=…,model=…,seed=…,temperature=0,served=…)`, where `served` is
//!   what the server's model list reported ([`ChatModel::connect`]) — the key of every cached
//!   reply and part of every generated dataset's and indexed text's identity;
//! - **cache** ([`cache`]): a reply is looked up under (identity, the
//!   request's canonical JSON, [`ChatRequest::cache_key`]) before anything is sent, and stored
//!   after, so a second run asks nothing and a killed run resumes;
//! - **the reply bound**: a reply longer than `max_tokens` tokens could make ([`reply_bound`])
//!   is cut there and marked [`OVERSIZED`], before it is cached, parsed or indexed (a cached
//!   reply is cut by the same rule, so a hit and a miss give the same text);
//! - **usage** ([`Tally`]): requests, cached replies, cut replies, and the tokens the server
//!   reported;
//! - **stopping**: an optional check ([`ChatModel::with_interrupt`]) runs before each request
//!   that goes to the server.
//!
//! Redaction happens where text leaves the process ([`httpio::redact`]): replies are returned
//! as sent, so what is parsed or indexed never depends on the key.
//!
//! **A new protocol** is one file in this directory (a unit struct implementing
//! [`ChatProtocol`], with its tests) and one entry in `protocols!` below; the YAML field
//! `protocol:` of an `llm:` entry and `data generate --llm-protocol` name it.

use crate::transport::{Transport, TransportConfig};
use crate::ReaderError;
use cache::GenerationCache;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Declares the protocols: `module::Type` per line (a unit struct implementing
/// [`ChatProtocol`]).
macro_rules! protocols {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module; pub use $module::$ty;)*
        /// Every protocol, in the order docs list them.
        pub static PROTOCOLS: &[&dyn ChatProtocol] = &[$(&$module::$ty),*];
    };
}

protocols![openai_chat::OpenAiChat, anthropic::AnthropicMessages];

pub mod cache;

/// The protocol named `name` in [`PROTOCOLS`].
///
/// # Errors
/// [`ReaderError::Config`] naming the known protocols.
pub fn protocol(name: &str) -> Result<&'static dyn ChatProtocol, ReaderError> {
    PROTOCOLS
        .iter()
        .copied()
        .find(|p| p.name() == name)
        .ok_or_else(|| {
            let known: Vec<&str> = PROTOCOLS.iter().map(|p| p.name()).collect();
            ReaderError::Config(format!(
                "unknown protocol `{name}`; known: {}",
                known.join(", ")
            ))
        })
}

/// One request: messages as (role, content) pairs (`system`, `user`, `assistant`), the
/// reply's token limit, and an optional response format (JSON text, sent byte for byte by
/// protocols that take one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRequest {
    /// (role, content) pairs, in order.
    pub messages: Vec<(String, String)>,
    /// The most tokens the reply may have.
    pub max_tokens: u32,
    /// JSON text of a response format (`None`: the prompt alone asks for the form).
    pub response_format: Option<String>,
}

impl ChatRequest {
    /// A request without a response format.
    pub fn new(messages: Vec<(String, String)>, max_tokens: u32) -> Self {
        ChatRequest {
            messages,
            max_tokens,
            response_format: None,
        }
    }

    /// The canonical JSON the generation cache keys on (with the model's identity):
    /// `{"messages": [[role, content], …], "max_tokens": N, "response_format": F|null}`.
    pub fn cache_key(&self) -> String {
        serde_json::json!({
            "messages": self.messages,
            "max_tokens": self.max_tokens,
            "response_format": self.response_format,
        })
        .to_string()
    }
}

/// One reply of a [`ChatModel`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generation {
    /// The reply's text (empty when the server sent none).
    pub text: String,
    /// Why it ended, in OpenAI's words: `stop`, `length` (cut at `max_tokens`; protocols map
    /// theirs onto it), [`OVERSIZED`], or the server's own word; empty when absent.
    pub finish_reason: String,
    /// The tokens the server reported, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// Tokens a request spent, as the server reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt (the messages with the chat template).
    pub prompt_tokens: u64,
    /// Tokens of the reply.
    pub completion_tokens: u64,
}

/// A reply and whether it came from the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The reply.
    pub generation: Generation,
    /// True when read from the generation cache (no request was sent).
    pub cached: bool,
}

/// Counts of what a [`ChatModel`] was asked ([`Tally::count`] per reply).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Replies (cached ones included).
    pub requests: usize,
    /// Replies read from the cache.
    pub cached: usize,
    /// Replies cut at [`reply_bound`].
    pub oversized: usize,
    /// Prompt tokens the server reported (over replies that reported usage).
    pub prompt_tokens: u64,
    /// Reply tokens the server reported.
    pub completion_tokens: u64,
    /// Replies without a usage report (their tokens are not in the sums).
    pub without_usage: usize,
}

impl Tally {
    /// Counts one reply.
    pub fn count(&mut self, r: &Reply) {
        self.requests += 1;
        self.cached += usize::from(r.cached);
        self.oversized += usize::from(r.generation.finish_reason == OVERSIZED);
        match r.generation.usage {
            Some(u) => {
                self.prompt_tokens += u.prompt_tokens;
                self.completion_tokens += u.completion_tokens;
            }
            None => self.without_usage += 1,
        }
    }
}

/// A server protocol: the payload and parse hooks of a [`ChatModel`] (module docs).
pub trait ChatProtocol: Send + Sync {
    /// The registry name (`protocol: NAME`).
    fn name(&self) -> &'static str;
    /// One line for docs and `--help`.
    fn summary(&self) -> &'static str;
    /// The path appended to the base URL (`chat/completions`, `messages`).
    fn endpoint(&self) -> &'static str;
    /// The tag that opens the identity (versioned: a change in what is sent changes it).
    fn identity_tag(&self) -> &'static str;
    /// The header the API key is sent in (`None`: `Authorization: Bearer KEY`).
    fn key_header(&self) -> Option<&'static str> {
        None
    }
    /// Fixed headers of every request (name, value).
    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Whether the served model is read from the model's own entry, `GET
    /// {base_url}/models/{model}` (whose `id` names the snapshot an alias resolves to), rather
    /// than from the whole list `GET {base_url}/models` (which, for a hosted API, changes with
    /// every model the provider adds).
    fn probes_the_model(&self) -> bool {
        false
    }
    /// Whether a request may carry a response format ([`ChatRequest::response_format`]).
    fn takes_response_format(&self) -> bool {
        true
    }
    /// Whether the request carries a sampling seed (the identity records `seed=none` when
    /// not).
    fn sends_seed(&self) -> bool {
        true
    }
    /// The request body for `req`, at temperature 0, with `seed` when given.
    ///
    /// # Errors
    /// [`ReaderError::Config`] for a request the protocol cannot express (e.g. a response
    /// format), naming the fix.
    fn payload(
        &self,
        model: &str,
        seed: Option<u64>,
        req: &ChatRequest,
    ) -> Result<Vec<u8>, ReaderError>;
    /// The reply in a 2xx body. Unusable *content* is not an error (the caller judges the
    /// text); a body without the protocol's reply fields is.
    ///
    /// # Errors
    /// What the body lacks, quoting it (the caller adds the URL).
    fn parse(&self, body: &serde_json::Value, raw: &str) -> Result<Generation, String>;
}

/// The `llm:` entry of an LLM strategy, and what `data generate --llm*` builds: where the
/// model is served and how to talk to it. Serialised into the strategy's identity, so the
/// field order is fixed and `protocol` is left out when it is the default (`openai`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatModelConfig {
    /// Server root up to the API version, e.g. `http://127.0.0.1:8765/v1` (the protocol's
    /// endpoint is appended: `/chat/completions`, `/messages`).
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// The server protocol, a name in [`PROTOCOLS`] (default `openai`).
    #[serde(
        default = "default_protocol",
        skip_serializing_if = "is_default_protocol"
    )]
    pub protocol: String,
    /// Environment variable holding the API key (sent in the protocol's header; never
    /// stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Sampling seed sent with each request by protocols that take one (default 0).
    #[serde(default)]
    pub seed: u64,
    /// Seconds per request before it is retried (default 120).
    #[serde(default = "default_timeout")]
    pub timeout_secs: f64,
    /// Retries of a request that failed for a transient reason (default 2).
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// Requests in flight at once (default 2); the result does not depend on it.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
}

/// The protocol an entry without `protocol:` speaks (left out of stored entries, so configs
/// written before protocols existed keep their identities).
pub const DEFAULT_PROTOCOL: &str = "openai";

fn default_protocol() -> String {
    DEFAULT_PROTOCOL.into()
}

/// Whether `p` is [`DEFAULT_PROTOCOL`] (serde's `skip_serializing_if` of a `protocol` field).
pub fn is_default_protocol(p: &str) -> bool {
    p == DEFAULT_PROTOCOL
}
fn default_timeout() -> f64 {
    120.0
}
fn default_retries() -> u32 {
    2
}
fn default_concurrency() -> usize {
    2
}

/// The `finish_reason` of a reply cut at [`reply_bound`].
pub const OVERSIZED: &str = "oversized";

/// The most bytes a reply of `max_tokens` tokens is kept to: 32 bytes a token, at least 4 KiB.
/// A bound against servers that ignore `max_tokens`, not a property of every vocabulary (a few
/// have longer tokens, runs of `=` or spaces): a reply of such tokens that reaches it is cut
/// and counted too. Part of what a cached reply means, so it does not change without a new
/// identity tag. A longer reply is cut there ([`OVERSIZED`]), so neither
/// the generation cache nor what is parsed or indexed grows with what a server sends past its
/// limit.
pub fn reply_bound(max_tokens: u32) -> usize {
    (max_tokens as usize).saturating_mul(32).max(4096)
}

/// `g` cut at [`reply_bound`]`(max_tokens)` and marked [`OVERSIZED`] when longer.
fn bounded(mut g: Generation, max_tokens: u32) -> Generation {
    let bound = reply_bound(max_tokens);
    if g.text.len() > bound {
        let mut end = bound;
        while !g.text.is_char_boundary(end) {
            end -= 1;
        }
        g.text.truncate(end);
        g.finish_reason = OVERSIZED.into();
    }
    g
}

/// A check run before each request that goes to the server (a stop request, say).
pub type Interrupt = Box<dyn Fn() -> anyhow::Result<()> + Send + Sync>;

/// A language model behind a server protocol (module docs).
pub struct ChatModel {
    protocol: &'static dyn ChatProtocol,
    transport: Transport,
    model: String,
    seed: Option<u64>,
    concurrency: usize,
    served: Option<String>,
    suffix: String,
    cache: Option<GenerationCache>,
    interrupt: Option<Interrupt>,
}

impl std::fmt::Debug for ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.identity())
    }
}

impl ChatModel {
    /// Builds the client without a request (the API key is read now). `who` opens error
    /// messages (`field \`llm\``, `--llm`).
    ///
    /// # Errors
    /// [`ReaderError::Config`]: an empty model, an unknown protocol, a bad base URL, timeout or
    /// concurrency, an unset key variable.
    pub fn new(cfg: &ChatModelConfig, who: &str) -> Result<Self, ReaderError> {
        Self::with_backoff(cfg, who, 500, 30_000)
    }

    /// [`ChatModel::new`] with the retries' first backoff and cap, milliseconds (the
    /// OpenAI-compatible reader's `backoff_initial_ms`, `backoff_max_ms`).
    ///
    /// # Errors
    /// As [`ChatModel::new`].
    pub fn with_backoff(
        cfg: &ChatModelConfig,
        who: &str,
        backoff_initial_ms: u64,
        backoff_max_ms: u64,
    ) -> Result<Self, ReaderError> {
        if cfg.model.trim().is_empty() {
            return Err(ReaderError::Config(format!("{who}: `model` is empty")));
        }
        let protocol = protocol(&cfg.protocol).map_err(|e| match e {
            ReaderError::Config(m) => ReaderError::Config(format!("{who}: `protocol`: {m}")),
            other => other,
        })?;
        let transport = Transport::new(
            &TransportConfig {
                who,
                base_url: &cfg.base_url,
                api_key_env: cfg.api_key_env.as_deref(),
                key_header: protocol.key_header(),
                headers: protocol.headers(),
                timeout_secs: cfg.timeout_secs,
                max_retries: cfg.max_retries,
                backoff_initial_ms,
                backoff_max_ms,
                concurrency: cfg.concurrency,
            },
            protocol.endpoint(),
        )?;
        Ok(ChatModel {
            protocol,
            transport,
            model: cfg.model.clone(),
            seed: protocol.sends_seed().then_some(cfg.seed),
            concurrency: cfg.concurrency,
            served: None,
            suffix: String::new(),
            cache: None,
            interrupt: None,
        })
    }

    /// Asks the server which models it serves and records the answer in the identity.
    ///
    /// # Errors
    /// The server cannot be reached or does not answer a model list
    /// ([`Transport::served_models`]).
    pub fn connect(mut self) -> Result<Self, ReaderError> {
        self.probe()?;
        Ok(self)
    }

    /// [`ChatModel::connect`] in place; returns what the server reported serving.
    ///
    /// # Errors
    /// As [`ChatModel::connect`].
    pub fn probe(&mut self) -> Result<String, ReaderError> {
        let served = if self.protocol.probes_the_model() {
            self.transport.served_model(&self.model)?
        } else {
            self.transport.served_models()?
        };
        self.served = Some(served.clone());
        Ok(served)
    }

    /// Keeps every reply in `cache` (looked up before a request is sent).
    pub fn with_cache(mut self, cache: GenerationCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Appends `+suffix` to the identity (e.g. `weights_sha256=…`, the GGUF the server
    /// loaded, when the user names it).
    pub fn with_identity_suffix(mut self, suffix: &str) -> Self {
        self.suffix.push('+');
        self.suffix.push_str(suffix);
        self
    }

    /// Sends no seed (`None`) or `seed`, for protocols that send one (a reader configured with
    /// `seed: null`).
    pub fn with_seed(mut self, seed: Option<u64>) -> Self {
        if self.protocol.sends_seed() {
            self.seed = seed;
        }
        self
    }

    /// Runs `check` before each request that goes to the server; its error ends the call.
    pub fn with_interrupt(mut self, check: Interrupt) -> Self {
        self.interrupt = Some(check);
        self
    }

    /// What the replies depend on: the protocol's tag, endpoint, model, seed, what the server
    /// serves (`not-probed` before [`ChatModel::connect`]) — never the API key.
    pub fn identity(&self) -> String {
        format!(
            "{}(endpoint={},model={},seed={},temperature=0,served={}){}",
            self.protocol.identity_tag(),
            self.transport.base_url(),
            self.model,
            self.seed
                .map_or_else(|| "none".to_string(), |s| s.to_string()),
            self.served.as_deref().unwrap_or("not-probed"),
            self.suffix,
        )
    }

    /// The protocol (to check a request before a run starts).
    pub fn protocol(&self) -> &'static dyn ChatProtocol {
        self.protocol
    }

    /// The cache's counters, when there is a cache.
    pub fn cache_stats(&self) -> Option<cache::GenerationCacheStats> {
        self.cache.as_ref().map(GenerationCache::stats)
    }

    /// The transport the requests go through (its URL, request counts).
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// (HTTP attempts, retries) so far.
    pub fn http_counts(&self) -> (u64, u64) {
        self.transport.counts()
    }

    /// Sends `req` (no cache) and parses the reply.
    ///
    /// # Errors
    /// [`ReaderError::Http`] / [`ReaderError::Timeout`] when the server cannot answer after
    /// the retries or answers a non-2xx status; [`ReaderError::Protocol`] for a body without
    /// the protocol's reply; [`ReaderError::Config`] for a request the protocol cannot express.
    pub fn send(&self, req: &ChatRequest) -> Result<Generation, ReaderError> {
        let body = self.protocol.payload(&self.model, self.seed, req)?;
        let text = self
            .transport
            .post(&|| Ok((body.clone(), ())), &|_, _| false)?;
        let v = self.transport.parse_json(&text)?;
        self.protocol
            .parse(&v, &text)
            .map_err(|m| ReaderError::Protocol(format!("{}: {m}", self.transport.url())))
    }

    /// One reply: from the cache when there, else from the server (then stored), bounded by
    /// [`reply_bound`] either way.
    ///
    /// # Errors
    /// The interrupt check's error; [`ChatModel::send`]'s; a cache that cannot be written.
    pub fn ask_one(&self, req: &ChatRequest) -> anyhow::Result<Reply> {
        let key = req.cache_key();
        let identity = self.identity();
        if let Some(g) = self.cache.as_ref().and_then(|c| c.get(&identity, &key)) {
            return Ok(Reply {
                generation: bounded(g, req.max_tokens),
                cached: true,
            });
        }
        if let Some(check) = &self.interrupt {
            check()?;
        }
        let g = bounded(self.send(req)?, req.max_tokens);
        if let Some(c) = &self.cache {
            c.put(&identity, &key, &g)?;
        }
        Ok(Reply {
            generation: g,
            cached: false,
        })
    }

    /// The replies to `requests`, in order, `concurrency` at a time ([`ChatModel::ask_one`]
    /// each).
    ///
    /// # Errors
    /// A failing request's error (when several fail, whichever the pool meets first; requests
    /// not yet started are not sent). Replies already received stay cached.
    pub fn ask(&self, requests: &[ChatRequest]) -> anyhow::Result<Vec<Reply>> {
        self.pool()?
            .install(|| requests.par_iter().map(|r| self.ask_one(r)).collect())
    }

    /// A pool of `concurrency` threads for requests (or for documents that each make their
    /// requests one after another).
    ///
    /// # Errors
    /// The threads cannot be started.
    pub fn pool(&self) -> anyhow::Result<rayon::ThreadPool> {
        rayon::ThreadPoolBuilder::new()
            .num_threads(self.concurrency)
            .build()
            .map_err(|e| anyhow::anyhow!("starting the request threads: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_found() {
        let mut names: Vec<&str> = PROTOCOLS.iter().map(|p| p.name()).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        for p in PROTOCOLS {
            assert_eq!(protocol(p.name()).unwrap().name(), p.name());
        }
        let e = protocol("ollama").err().expect("unknown").to_string();
        assert!(e.contains("openai, anthropic"), "{e}");
    }

    /// The identity of `protocol: openai` is the string the generation caches and generated
    /// datasets of earlier versions were keyed by (`OpenAiReader::generation_identity`).
    #[test]
    fn the_openai_identity_keeps_its_form() {
        let c: ChatModelConfig =
            serde_json::from_str(r#"{"base_url":"http://h:1/v1/","model":"m","seed":7}"#).unwrap();
        let m = ChatModel::new(&c, "t")
            .unwrap()
            .with_identity_suffix("weights_sha256=ab");
        assert_eq!(
            m.identity(),
            "openai-generate-v1(endpoint=http://h:1/v1,model=m,seed=7,temperature=0,\
             served=not-probed)+weights_sha256=ab"
        );
    }

    #[test]
    fn the_cache_key_is_the_one_strategies_and_generate_used() {
        let r = ChatRequest::new(vec![("user".into(), "hi \"x\"".into())], 7);
        assert_eq!(
            r.cache_key(),
            r#"{"max_tokens":7,"messages":[["user","hi \"x\""]],"response_format":null}"#
        );
    }

    #[test]
    fn replies_are_bounded_on_char_boundaries_and_marked() {
        let g = Generation {
            text: "é".repeat(3000),
            finish_reason: "length".into(),
            usage: None,
        };
        let b = bounded(g, 1);
        assert_eq!(b.text.len(), 4096);
        assert_eq!(b.finish_reason, OVERSIZED);
        let short = Generation {
            text: "ok".into(),
            finish_reason: "stop".into(),
            usage: None,
        };
        assert_eq!(bounded(short.clone(), 1), short);
    }

    #[test]
    fn the_config_keeps_its_stored_form_and_names_the_default_protocol_nowhere() {
        let c: ChatModelConfig =
            serde_json::from_str(r#"{"base_url":"http://h/v1","model":"m"}"#).unwrap();
        assert_eq!(c.protocol, "openai");
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"base_url":"http://h/v1","model":"m","seed":0,"timeout_secs":120.0,"max_retries":2,"concurrency":2}"#
        );
        let a: ChatModelConfig = serde_json::from_str(
            r#"{"base_url":"http://h/v1","model":"m","protocol":"anthropic"}"#,
        )
        .unwrap();
        assert!(serde_json::to_string(&a)
            .unwrap()
            .contains(r#""protocol":"anthropic""#));
        let e = ChatModel::new(
            &ChatModelConfig {
                protocol: "nope".into(),
                ..c
            },
            "field `llm`",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("field `llm`: `protocol`: unknown protocol `nope`"),
            "{e}"
        );
    }
}
