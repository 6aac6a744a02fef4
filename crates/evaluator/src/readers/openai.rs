//! `kind: openai` — any OpenAI-compatible server, chat or completions ([`reader::OpenAiReader`];
//! with `protocol: anthropic`, an Anthropic Messages server through the model seam),
//! behind its response cache; what the server reports serving is part of each cell's inputs.

use super::Params;
use anyhow::{Context, Result};
use reader::Reader;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The server reader's entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Openai {
    /// Endpoint, model, API key variable, timeout, retries, concurrency.
    pub openai: reader::OpenAiConfig,
    /// Response cache: `never`, `read-write` (default) or `read-only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<reader::CacheMode>,
}

impl Openai {
    /// The entry with its `gguf` read from where [`crate::models::resolve`] says.
    fn resolved(&self) -> reader::OpenAiConfig {
        let mut c = self.openai.clone();
        c.gguf = c.gguf.as_deref().map(crate::models::resolve);
        c
    }
}

impl Params for Openai {
    const KIND: &'static str = "openai";
    const SUMMARY: &'static str = "any OpenAI-compatible server (vLLM, llama.cpp, Ollama, TGI, OpenAI); `openai: {base_url, model, api_key_env, api: chat (parsed reply or letter log-probs) or completions (each option's log-likelihood, prompt built as the local reader builds it from the file in gguf; scoring, chat, letters), logprobs, protocol (openai; anthropic: the Messages API, reply parsed), timeout_secs, max_retries, concurrency, ...}` (required), `cache` (read-write)";

    fn identity_is_input(&self) -> bool {
        true
    }

    /// With `api: completions` the reader counts tokens with its GGUF's tokenizer (whose
    /// sha256 is in its identity), so the run's `cost_tokenizer` is not used.
    fn counts_own_tokens(&self) -> bool {
        self.openai.api == reader::OpenAiApi::Completions
    }

    fn preflight(&self, name: &str) -> Vec<String> {
        match reader::OpenAiReader::new(self.resolved()) {
            Err(e) => vec![format!("field `readers.{name}.openai`: {e}")],
            Ok(mut oa) => match oa.probe_served_models() {
                Ok(_) => Vec::new(),
                Err(e) => vec![format!("reader `{name}`: {e}")],
            },
        }
    }

    fn build(&self, name: &str) -> Result<Arc<dyn Reader>> {
        let mut oa = reader::OpenAiReader::new(self.resolved())
            .with_context(|| format!("field `readers.{name}.openai`"))?;
        oa.probe_served_models()
            .with_context(|| format!("reader `{name}`"))?;
        let cache = super::response_cache(name, self.cache)?;
        Ok(Arc::new(reader::CachedReader::new(oa, cache)))
    }
}
