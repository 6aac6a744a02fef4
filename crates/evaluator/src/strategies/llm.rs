//! The model of an LLM strategy (`contextual`, `llm-boundaries`): the `llm:` entry is
//! [`reader::lm::ChatModelConfig`] (a server and its protocol, `openai` by default), connected
//! through the one seam [`reader::lm::ChatModel`] (temperature 0, the entry's seed), with every
//! reply kept in the generation cache ([`reader::generation_cache`], `.cache/generations`)
//! under the model's identity and the exact request, so a second run asks nothing and
//! computes the same chunks and indexed texts, and a killed run resumes.

use anyhow::{Context, Result};
use reader::generation_cache::GenerationCache;
use reader::lm::{ChatModel, Reply};
use records::LlmUse;

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
pub type LlmEntry = reader::lm::ChatModelConfig;

/// Checks an `llm:` entry without a request.
///
/// # Errors
/// An empty URL or model, an unknown protocol, a non-positive timeout, a zero concurrency,
/// an unset key variable, naming the field.
pub fn check(entry: &LlmEntry) -> Result<()> {
    ChatModel::new(entry, "field `llm`")?;
    Ok(())
}

/// Connects: builds the client, asks the server what it serves (its identity), opens the
/// generation cache, and checks for a stop request ([`crate::stop`]) before each request sent.
///
/// # Errors
/// A bad entry or a server that does not answer its model list, naming the field; a cache
/// that cannot be opened.
pub fn connect(entry: &LlmEntry) -> Result<ChatModel> {
    let model = ChatModel::new(entry, "field `llm`")?
        .connect()
        .with_context(|| format!("field `llm`: the server at {}", entry.base_url))?;
    let dir = generation_cache_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the generation cache {}", dir.display()))?;
    let cache = GenerationCache::open(&dir, reader::CacheMode::ReadWrite)?;
    Ok(model
        .with_cache(cache)
        .with_interrupt(Box::new(crate::stop::check)))
}

/// Counts one reply in `use_` (the seam's [`reader::lm::Tally`] rule, into the record's
/// fields).
pub fn count(use_: &mut LlmUse, r: &Reply) {
    let mut t = reader::lm::Tally::default();
    t.count(r);
    use_.requests += t.requests;
    use_.cached += t.cached;
    use_.oversized += t.oversized;
    use_.prompt_tokens += t.prompt_tokens;
    use_.completion_tokens += t.completion_tokens;
    use_.without_usage += t.without_usage;
}
