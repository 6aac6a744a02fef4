//! The model of an LLM strategy (`contextual`, `llm-boundaries`): an OpenAI-compatible chat
//! server (vLLM, llama.cpp, Ollama, OpenAI) through the reader's chat path
//! ([`reader::OpenAiReader::generate`]; temperature 0, the entry's seed), every reply kept in
//! the generation cache ([`reader::generation_cache`], `.cache/generations`) under the model's
//! identity and the exact request, so a second run asks nothing and computes the same chunks
//! and indexed texts, and a killed run resumes.

use anyhow::{Context, Result};
use rayon::prelude::*;
use reader::generation_cache::GenerationCache;
use reader::openai::Generation;
use records::LlmUse;
use serde::{Deserialize, Serialize};

/// Where strategies' model replies are cached (shared with `chunkbench data generate`),
/// unless `CHUNKBENCH_GENERATION_CACHE` names another directory.
pub const GENERATION_CACHE: &str = ".cache/generations";

/// The generation-cache directory in force: `CHUNKBENCH_GENERATION_CACHE`, else
/// [`GENERATION_CACHE`].
pub fn generation_cache_dir() -> std::path::PathBuf {
    std::env::var_os("CHUNKBENCH_GENERATION_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(GENERATION_CACHE))
}

/// The `llm:` field of an LLM strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmEntry {
    /// Server root, e.g. `http://127.0.0.1:8765/v1` (`/chat/completions` is appended).
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Environment variable holding the API key (sent as a bearer token; never stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Sampling seed sent with each request (default 0).
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

fn default_timeout() -> f64 {
    120.0
}
fn default_retries() -> u32 {
    2
}
fn default_concurrency() -> usize {
    2
}

impl LlmEntry {
    fn reader_config(&self) -> Result<reader::OpenAiConfig> {
        let mut v = serde_json::json!({
            "base_url": self.base_url,
            "model": self.model,
            "seed": self.seed,
            "timeout_secs": self.timeout_secs,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
        });
        if let Some(k) = &self.api_key_env {
            v["api_key_env"] = k.clone().into();
        }
        serde_json::from_value(v).map_err(|e| anyhow::anyhow!("field `llm`: {e}"))
    }

    /// Checks the entry without a request.
    ///
    /// # Errors
    /// An empty URL or model, a non-positive timeout, a zero concurrency, naming the field.
    pub fn check(&self) -> Result<()> {
        if self.concurrency == 0 {
            anyhow::bail!("field `llm.concurrency`: must be at least 1");
        }
        reader::OpenAiReader::new(self.reader_config()?)
            .map_err(|e| anyhow::anyhow!("field `llm`: {e}"))?;
        Ok(())
    }

    /// Connects: builds the client and asks the server what it serves (its identity).
    ///
    /// # Errors
    /// A bad entry or a server that does not answer `GET /models`, naming the field.
    pub fn connect(&self) -> Result<StrategyLlm> {
        let mut r = reader::OpenAiReader::new(self.reader_config()?)
            .map_err(|e| anyhow::anyhow!("field `llm`: {e}"))?;
        r.probe_served_models()
            .with_context(|| format!("field `llm`: the server at {}", self.base_url))?;
        let dir = generation_cache_dir();
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the generation cache {}", dir.display()))?;
        let cache = GenerationCache::open(&dir, reader::CacheMode::ReadWrite)?;
        Ok(StrategyLlm {
            identity: r.generation_identity(),
            reader: r,
            cache,
            concurrency: self.concurrency,
        })
    }
}

/// A connected strategy model with its cache.
pub struct StrategyLlm {
    reader: reader::OpenAiReader,
    identity: String,
    cache: GenerationCache,
    concurrency: usize,
}

/// One request: (role, content) messages and the reply's token limit.
pub type Request = (Vec<(String, String)>, u32);

impl StrategyLlm {
    /// What the replies depend on (endpoint, model, seed, what the server serves).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The replies to `requests`, in order: from the cache, else from the model (stored),
    /// `concurrency` at a time. `use_` counts requests, cached replies and tokens.
    ///
    /// # Errors
    /// The server fails after its retries (replies already received stay cached), or the
    /// cache cannot be written.
    pub fn ask(&self, requests: &[Request], use_: &mut LlmUse) -> Result<Vec<Generation>> {
        let got: Vec<Result<(Generation, bool)>> = self
            .pool()?
            .install(|| requests.par_iter().map(|r| self.ask_one(r)).collect());
        let mut out = Vec::with_capacity(got.len());
        for r in got {
            let (g, cached) = r?;
            count(use_, &g, cached);
            out.push(g);
        }
        Ok(out)
    }

    /// A pool of `concurrency` threads for requests (or for documents that each make their
    /// requests one after another).
    ///
    /// # Errors
    /// The threads cannot be started.
    pub fn pool(&self) -> Result<rayon::ThreadPool> {
        rayon::ThreadPoolBuilder::new()
            .num_threads(self.concurrency)
            .build()
            .context("starting the request threads")
    }

    /// One reply (from the cache when there), and whether it came from the cache.
    ///
    /// # Errors
    /// As [`StrategyLlm::ask`].
    pub fn ask_one(&self, (messages, max_tokens): &Request) -> Result<(Generation, bool)> {
        let key = serde_json::json!({"messages": messages, "max_tokens": max_tokens, "response_format": null})
            .to_string();
        if let Some(g) = self.cache.get(&self.identity, &key) {
            return Ok((g, true));
        }
        crate::stop::check()?;
        let mut g = self.reader.generate(messages, *max_tokens, None)?;
        let bound = reply_bound(*max_tokens);
        if g.text.len() > bound {
            // A reply no `max_tokens` tokens could make (a server ignoring the limit): cut,
            // and marked so that a cached copy counts as cut too.
            let mut end = bound;
            while !g.text.is_char_boundary(end) {
                end -= 1;
            }
            g.text.truncate(end);
            g.finish_reason = OVERSIZED.into();
        }
        self.cache.put(&self.identity, &key, &g)?;
        Ok((g, false))
    }
}

/// The `finish_reason` of a reply cut at [`reply_bound`].
pub const OVERSIZED: &str = "oversized";

/// The most bytes a reply of `max_tokens` tokens is kept to: 32 bytes a token (no tokenizer's
/// token is longer), at least 4 KiB. A longer reply is cut there and counted
/// ([`records::LlmUse::oversized`]), so neither the generation cache nor the indexed text
/// grows with what a server sends past its limit.
pub fn reply_bound(max_tokens: u32) -> usize {
    (max_tokens as usize).saturating_mul(32).max(4096)
}

/// Counts one reply in `use_`: a request, cached or not, and its tokens when reported.
pub fn count(use_: &mut LlmUse, g: &Generation, cached: bool) {
    use_.requests += 1;
    use_.cached += usize::from(cached);
    use_.oversized += usize::from(g.finish_reason == OVERSIZED);
    match g.usage {
        Some(u) => {
            use_.prompt_tokens += u.prompt_tokens;
            use_.completion_tokens += u.completion_tokens;
        }
        None => use_.without_usage += 1,
    }
}
