//! `kind: llm` — a local GGUF model through candle ([`reader::LlmReader`]), behind its
//! response cache.

use super::Params;
use anyhow::{Context, Result};
use reader::Reader;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Default GGUF model (unpacked by `chunkbench models fetch`).
pub const DEFAULT_LLM: &str = "models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf";

/// The local LLM reader's entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Llm {
    /// The GGUF file (default [`DEFAULT_LLM`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<PathBuf>,
    /// Prompt template, chat format, scoring (`letters` | `cloze` | `cloze-norm`), ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<reader::LlmConfig>,
    /// Response cache: `never`, `read-write` (default) or `read-only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<reader::CacheMode>,
}

impl Llm {
    /// The GGUF file in force (`model`, or [`DEFAULT_LLM`]), where it is read from
    /// ([`crate::models::resolve`]).
    pub fn model_file(&self) -> PathBuf {
        crate::models::resolve(
            &self
                .model
                .clone()
                .unwrap_or_else(|| PathBuf::from(DEFAULT_LLM)),
        )
    }
}

impl Params for Llm {
    const KIND: &'static str = "llm";
    const SUMMARY: &'static str = "a local GGUF model through candle (SmolLM2-135M-Instruct by default); `model`, `llm: {scoring: letters, cloze or cloze-norm; chat; prompt; ...}`, `cache` (read-write)";

    fn counts_own_tokens(&self) -> bool {
        true
    }

    fn input_files(&self) -> Vec<(&'static str, PathBuf)> {
        vec![("reader/model", self.model_file())]
    }

    fn preflight(&self, name: &str) -> Vec<String> {
        match gguf_header(&self.model_file()) {
            Ok(()) => Vec::new(),
            Err(e) => vec![format!("field `readers.{name}.model`: {e}")],
        }
    }

    fn build(&self, name: &str) -> Result<Arc<dyn Reader>> {
        let model = self.model_file();
        let llm = reader::LlmReader::load(&model, self.llm.clone().unwrap_or_default())
            .with_context(|| format!("field `readers.{name}.model`: {}", model.display()))?;
        let cache = super::response_cache(name, self.cache)?;
        Ok(Arc::new(reader::CachedReader::new(llm, cache)))
    }
}

/// Checks that `path` exists and starts with the GGUF magic.
pub(crate) fn gguf_header(path: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| {
        format!(
            "cannot open {}: {e}; run `chunkbench models fetch` for the default model",
            path.display()
        )
    })?;
    let mut magic = [0u8; 4];
    f.read_exact(&mut magic)
        .map_err(|_| format!("{} is too short to be a GGUF file", path.display()))?;
    if &magic != b"GGUF" {
        return Err(format!(
            "{} is not a GGUF file (it starts with {magic:?}, not \"GGUF\")",
            path.display()
        ));
    }
    Ok(())
}
