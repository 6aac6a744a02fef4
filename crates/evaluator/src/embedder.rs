//! The run's sentence embedder (`embedder:` of a run config): a local model directory run
//! through candle, or an embedding server (OpenAI-compatible or text-embeddings-inference),
//! each behind the on-disk embedding cache. Used by every strategy and retriever that embeds
//! (max-min, kamradt, cluster, EAR's dense parts, dense and hybrid retrieval).
//!
//! What a cell's result depends on is in its identity by content (docs/reference.md §1):
//! a cell's id holds the embedder as [`CellEmbedder`] (the model directory, or the server's
//! kind, base URL and model name), and its inputs hold what that names: the sha256 of every
//! model file, or the server's identity with the fingerprint of its answer to a fixed probe
//! text ([`embed::HttpEmbedder::connect`]), so a server that starts serving another model
//! under the same name makes its cells stale instead of mixing vectors.

use anyhow::{bail, Context, Result};
use records::CellEmbedder;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Where vectors come from (`embedder.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// A Hugging Face BERT-family model directory, run in-process through candle (default).
    #[default]
    Local,
    /// An OpenAI-compatible server: `POST {base_url}/embeddings` (OpenAI, vLLM, llama.cpp,
    /// Ollama, infinity, TEI's OpenAI route).
    Openai,
    /// A text-embeddings-inference server: `POST {base_url}/embed`.
    Tei,
}

impl EmbedderKind {
    fn is_local(&self) -> bool {
        *self == EmbedderKind::Local
    }
}

/// The sentence embedder of a run (`embedder:`).
///
/// Local (default): `{model: DIR, cache: DIR}`. Server:
/// `{kind: openai | tei, base_url: URL, model: NAME, api_key_env: VAR, cache: DIR,
/// batch_size: N, timeout_secs: S, max_retries: N}`; `model` is required for `openai` (it is
/// sent with every request) and optional for `tei` (recorded only). Vectors from a server are
/// L2-normalised locally and cached like local ones, keyed by the server's identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedderConfig {
    /// `local` (default), `openai` or `tei`.
    #[serde(default, skip_serializing_if = "EmbedderKind::is_local")]
    pub kind: EmbedderKind,
    /// Local: the model directory (config.json, tokenizer.json, model.safetensors and the
    /// sentence-transformers files; default `models/all-MiniLM-L6-v2`). Server: the model
    /// name.
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// On-disk embedding cache (content-addressed); default `.cache/embeddings`.
    #[serde(default = "default_cache")]
    pub cache: PathBuf,
    /// Server: base URL, e.g. `http://127.0.0.1:7997` or `https://api.openai.com/v1` (the
    /// route, `/embeddings` or `/embed`, is appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Server: the environment variable holding the API key (sent as a bearer token; the key
    /// itself is never in a config, an error or an identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Server: texts per request (default 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    /// Server: per-request timeout in seconds (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Server: retries of a 429/5xx answer or a transport error (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Server: the served model's `tokenizer.json`, with `max_tokens`, for strategies that
    /// keep their embedded units within the model's window (max-min, kamradt, cluster: a
    /// server gives no tokenizer). Its sha256 is an input of every cell that embeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
    /// Server: the served model's input window in tokens, special tokens included (256 for
    /// all-MiniLM-L6-v2); with `tokenizer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
}

/// The default local model directory, unpacked by `chunkbench models fetch`.
pub const DEFAULT_MODEL: &str = "models/all-MiniLM-L6-v2";

fn default_cache() -> PathBuf {
    PathBuf::from(".cache/embeddings")
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig {
            kind: EmbedderKind::Local,
            model: Some(PathBuf::from(DEFAULT_MODEL)),
            cache: default_cache(),
            base_url: None,
            api_key_env: None,
            batch_size: None,
            timeout_secs: None,
            max_retries: None,
            tokenizer: None,
            max_tokens: None,
        }
    }
}

impl EmbedderConfig {
    /// Writes the default model directory into a local entry that names none (so
    /// `config.json` shows what ran and cell ids are those of earlier versions).
    pub fn resolve_defaults(&mut self) {
        if self.kind.is_local() && self.model.is_none() {
            self.model = Some(PathBuf::from(DEFAULT_MODEL));
        }
    }

    /// Checks the combination of fields.
    ///
    /// # Errors
    /// `field \`embedder.F\`: …` for a server field on a local embedder, a server without
    /// `base_url` or with one that is not http(s), an OpenAI server without `model`, a zero
    /// batch size, timeout or an empty key variable name.
    pub fn check(&self) -> Result<()> {
        let server_fields = [
            ("base_url", self.base_url.is_some()),
            ("api_key_env", self.api_key_env.is_some()),
            ("batch_size", self.batch_size.is_some()),
            ("timeout_secs", self.timeout_secs.is_some()),
            ("max_retries", self.max_retries.is_some()),
            ("tokenizer", self.tokenizer.is_some()),
            ("max_tokens", self.max_tokens.is_some()),
        ];
        if self.kind.is_local() {
            if let Some((f, _)) = server_fields.iter().find(|(_, set)| *set) {
                bail!(
                    "field `embedder.{f}`: only embedding servers take it; add \
                     `kind: openai` or `kind: tei`, or remove it for the local model"
                );
            }
            return Ok(());
        }
        let Some(url) = &self.base_url else {
            bail!(
                "field `embedder.base_url`: a `kind: {}` embedder needs the server's base URL, \
                 e.g. http://127.0.0.1:7997",
                self.kind_name()
            );
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("field `embedder.base_url`: `{url}` must start with http:// or https://");
        }
        if self.kind == EmbedderKind::Openai && self.model_name().is_none_or(str::is_empty) {
            bail!(
                "field `embedder.model`: an OpenAI-compatible server needs the model name it \
                 serves (sent with every request; `GET {url}/models` lists them)"
            );
        }
        if self.batch_size == Some(0) {
            bail!("field `embedder.batch_size`: must be at least 1 (default 32)");
        }
        if self.timeout_secs == Some(0) {
            bail!("field `embedder.timeout_secs`: must be at least 1 (default 30)");
        }
        match (&self.tokenizer, self.max_tokens) {
            (Some(_), None) | (None, Some(_)) => {
                bail!(
                "field `embedder.{}`: give `tokenizer` (the served model's tokenizer.json) and \
                 `max_tokens` (its input window, e.g. 256 for all-MiniLM-L6-v2) together",
                if self.tokenizer.is_some() { "max_tokens" } else { "tokenizer" }
            )
            }
            (_, Some(n)) if n < 2 => {
                bail!("field `embedder.max_tokens`: must be at least 2 (got {n})")
            }
            _ => {}
        }
        if self.api_key_env.as_deref() == Some("") {
            bail!("field `embedder.api_key_env`: name an environment variable, or remove it");
        }
        Ok(())
    }

    fn kind_name(&self) -> &'static str {
        match self.kind {
            EmbedderKind::Local => "local",
            EmbedderKind::Openai => "openai",
            EmbedderKind::Tei => "tei",
        }
    }

    fn model_name(&self) -> Option<&str> {
        self.model.as_deref().and_then(Path::to_str)
    }

    /// The local model directory as configured (the default when none is named; a name, read
    /// from [`EmbedderConfig::model_path`]); `None` for a server.
    pub fn model_dir(&self) -> Option<PathBuf> {
        self.kind.is_local().then(|| {
            self.model
                .clone()
                .unwrap_or_else(|| PathBuf::from(DEFAULT_MODEL))
        })
    }

    /// Where the local model directory is read from ([`crate::models::resolve`]: `models/…`
    /// under `CHUNKBENCH_MODELS`); `None` for a server.
    pub fn model_path(&self) -> Option<PathBuf> {
        self.model_dir().map(|d| crate::models::resolve(&d))
    }

    /// The embedder as a cell's id holds it: the model's name as configured, never where the
    /// models directory is.
    pub fn cell_embedder(&self) -> CellEmbedder {
        match self.model_dir() {
            Some(dir) => CellEmbedder::Model(dir),
            None => CellEmbedder::Server {
                kind: self.kind_name().to_string(),
                base_url: self.base_url.clone().unwrap_or_default(),
                model: self.model_name().map(str::to_string),
            },
        }
    }

    /// The HTTP client configuration of a server entry: the endpoint is `base_url` with
    /// `/embeddings` (OpenAI) or `/embed` (TEI) appended.
    fn http_config(&self) -> embed::HttpConfig {
        let base = self.base_url.as_deref().unwrap_or("").trim_end_matches('/');
        let mut c = match self.kind {
            EmbedderKind::Tei => {
                let mut c = embed::HttpConfig::tei(format!("{base}/embed"));
                c.model = self.model_name().map(str::to_string);
                c
            }
            _ => embed::HttpConfig::openai(
                format!("{base}/embeddings"),
                self.model_name().unwrap_or(""),
            ),
        };
        c.api_key_env = self.api_key_env.clone();
        if let Some(b) = self.batch_size {
            c.batch_size = b;
        }
        if let Some(t) = self.timeout_secs {
            c.timeout_ms = t.saturating_mul(1000);
        }
        if let Some(r) = self.max_retries {
            c.max_retries = r;
        }
        c.tokenizer = self.tokenizer.as_deref().map(crate::models::resolve);
        c.max_input_tokens = self.max_tokens;
        c
    }

    /// The files a server entry reads locally (`embedder/tokenizer`), for cell inputs.
    /// (`check` allows `tokenizer` on server entries only.)
    pub fn input_files(&self) -> Vec<(String, PathBuf)> {
        self.tokenizer
            .iter()
            .map(|t| ("embedder/tokenizer".to_string(), crate::models::resolve(t)))
            .collect()
    }

    /// Builds the embedder this entry names — the local model run through candle, or the
    /// server client (probed) — behind the on-disk embedding cache (a one-time import of an
    /// old file-per-entry cache is reported on stderr). `run` builds it once per run, on first
    /// use; `data generate` builds it for its filters.
    ///
    /// # Errors
    /// A model directory that does not load, a server that does not answer, a cache that
    /// cannot be opened; each names the `embedder.*` field.
    pub fn build(&self) -> Result<Arc<dyn embed::Embedder>> {
        let cache = || {
            let c = embed::EmbeddingCache::open(&self.cache)
                .with_context(|| format!("field `embedder.cache`: {}", self.cache.display()))?;
            if let Some(i) = c.imported() {
                eprintln!(
                    "embedding cache {}: imported {} entries from the file-per-entry layout \
                     into {} ({} invalid files dropped)",
                    self.cache.display(),
                    i.entries,
                    c.db().path().display(),
                    i.invalid
                );
            }
            anyhow::Ok(c)
        };
        Ok(match self.model_path() {
            Some(dir) => {
                let model = embed::BertEmbedder::load(&dir).with_context(|| {
                    format!(
                        "field `embedder.model`: cannot load {}; run `chunkbench models fetch` \
                         for the default model",
                        dir.display()
                    )
                })?;
                Arc::new(embed::CachedEmbedder::with_cache(model, cache()?))
            }
            None => {
                let server = embed::HttpEmbedder::connect(self.http_config())
                    .context("field `embedder` (the embedding server)")?;
                Arc::new(embed::CachedEmbedder::with_cache(server, cache()?))
            }
        })
    }

    /// The local model's `max_position_embeddings` from its `config.json` (the longest
    /// late-chunking window), without loading the weights; `None` for a server or a model
    /// directory that does not say.
    pub fn max_positions(&self) -> Option<usize> {
        let dir = self.model_path()?;
        let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        usize::try_from(v.get("max_position_embeddings")?.as_u64()?).ok()
    }

    /// Problems `chunkbench validate` reports: a local directory without its files, or a
    /// server that does not answer the probe.
    pub fn preflight(&self) -> Vec<String> {
        match self.model_path() {
            Some(dir) => embedder_problems(&dir)
                .into_iter()
                .map(|p| format!("field `embedder.model`: {p}"))
                .collect(),
            None => match embed::HttpEmbedder::connect(self.http_config()) {
                Ok(_) => Vec::new(),
                Err(e) => vec![format!("field `embedder`: {e}")],
            },
        }
    }
}

/// The run's embedder, built on first use and shared by every strategy and retriever that
/// embeds: the local model or the server client, behind the on-disk cache.
#[derive(Default)]
pub(crate) struct LazyEmbedder {
    inner: OnceLock<Arc<dyn embed::Embedder>>,
}

impl LazyEmbedder {
    /// The embedder (built and, for a server, probed on the first call).
    ///
    /// # Errors
    /// A model directory that does not load, a server that does not answer, a cache that
    /// cannot be opened; each names the `embedder.*` field.
    pub(crate) fn get(&self, cfg: &EmbedderConfig) -> Result<Arc<dyn embed::Embedder>> {
        if let Some(e) = self.inner.get() {
            return Ok(e.clone());
        }
        let built = cfg.build()?;
        Ok(self.inner.get_or_init(|| built).clone())
    }

    /// Identity and counters (texts embedded, truncations, cache hits/misses) for the
    /// manifest; when it was not built (every cell that embeds was reused) but the run has
    /// cells that embed (`cfg`), what the config names and that it was not loaded (each
    /// cell's content identities are in `cell_inputs`); `null` when no cell embeds.
    pub(crate) fn report(&self, cfg: Option<&EmbedderConfig>) -> serde_json::Value {
        match (self.inner.get(), cfg) {
            (Some(e), _) => serde_json::json!({ "identity": e.identity(), "stats": e.stats() }),
            (None, Some(c)) => match c.cell_embedder() {
                CellEmbedder::Model(m) => serde_json::json!({ "model": m, "loaded": false }),
                server => serde_json::json!({ "server": server, "loaded": false }),
            },
            (None, None) => serde_json::Value::Null,
        }
    }
}

/// Problems of a BERT model directory: missing files, a safetensors header that does not
/// parse, a tokenizer that does not load.
pub(crate) fn embedder_problems(dir: &Path) -> Vec<String> {
    let fetch = "run `chunkbench models fetch` for the default model";
    if !dir.is_dir() {
        return vec![format!("{} is not a directory; {fetch}", dir.display())];
    }
    let files = match embed::model_files(dir) {
        Ok(f) => f,
        Err(e) => return vec![e.to_string()],
    };
    let mut out = Vec::new();
    for need in ["config.json", "tokenizer.json", "model.safetensors"] {
        if !files
            .iter()
            .any(|f| f.file_name().is_some_and(|n| n == need))
        {
            out.push(format!("{} has no {need}; {fetch}", dir.display()));
        }
    }
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let r = match name {
            "model.safetensors" => safetensors_header(f),
            "tokenizer.json" => chunker::HfTokenizer::from_file(f)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            _ => std::fs::read(f).map_err(|e| e.to_string()).and_then(|b| {
                serde_json::from_slice::<serde_json::Value>(&b)
                    .map(|_| ())
                    .map_err(|e| format!("not JSON: {e}"))
            }),
        };
        if let Err(e) = r {
            out.push(format!("{}: {e}", f.display()));
        }
    }
    out
}

/// Checks a safetensors file's header: an 8-byte little-endian length, then that many bytes
/// of JSON, within the file.
pub(crate) fn safetensors_header(path: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let size = f.metadata().map_err(|e| e.to_string())?.len();
    let mut len = [0u8; 8];
    f.read_exact(&mut len)
        .map_err(|_| "shorter than a safetensors header".to_string())?;
    let n = u64::from_le_bytes(len);
    if n == 0 || n > 100 << 20 || 8 + n > size {
        return Err(format!(
            "not a safetensors file (header length {n} for a file of {size} bytes)"
        ));
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).map_err(|e| e.to_string())?;
    serde_json::from_slice::<serde_json::Value>(&header)
        .map(|_| ())
        .map_err(|e| format!("safetensors header is not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> EmbedderConfig {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn local_entries_keep_the_cell_form_of_earlier_versions() {
        let mut c = parse("{cache: /tmp/x}");
        c.resolve_defaults();
        assert_eq!(
            serde_json::to_string(&c.cell_embedder()).unwrap(),
            "\"models/all-MiniLM-L6-v2\""
        );
        // The resolved entry serialises as before (kind left out).
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"model":"models/all-MiniLM-L6-v2","cache":"/tmp/x"}"#
        );
        c.check().unwrap();
    }

    #[test]
    fn server_entries_are_checked_and_named_in_cells() {
        let c = parse("{kind: openai, base_url: 'http://127.0.0.1:7997/', model: minilm}");
        c.check().unwrap();
        assert_eq!(
            serde_json::to_string(&c.cell_embedder()).unwrap(),
            r#"{"kind":"openai","base_url":"http://127.0.0.1:7997/","model":"minilm"}"#
        );
        assert_eq!(c.http_config().url, "http://127.0.0.1:7997/embeddings");
        assert_eq!(c.model_dir(), None);
        let t = parse("{kind: tei, base_url: 'http://h:8080', timeout_secs: 5}");
        t.check().unwrap();
        let h = t.http_config();
        assert_eq!(
            (h.url.as_str(), h.timeout_ms),
            ("http://h:8080/embed", 5000)
        );

        let err = |y: &str| parse(y).check().unwrap_err().to_string();
        assert!(err("{kind: openai, model: m}").contains("`embedder.base_url`"));
        assert!(err("{kind: openai, base_url: 'h:1', model: m}").contains("http://"));
        assert!(err("{kind: openai, base_url: 'http://h'}").contains("`embedder.model`"));
        assert!(err("{base_url: 'http://h'}").contains("kind: openai"));
        assert!(err("{kind: tei, base_url: 'http://h', batch_size: 0}").contains("batch_size"));
        let unknown = serde_yaml::from_str::<EmbedderConfig>("{kind: ollama}")
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("local") && unknown.contains("tei"),
            "{unknown}"
        );
    }
}
