//! What `run` would fail on, checked before any compute, all at once (`chunkbench validate`
//! and the start of every run).
//!
//! Checks: every dataset loads (present, file hashes equal to its manifest, every line valid);
//! the embedder, when a cell embeds: a local directory has its files, a safetensors header that
//! parses and a tokenizer that loads, a server answers the probe text; every strategy builds
//! (tokenizers load, separator regexes compile); the `cost_tokenizer` loads when a cell counts tokens with it; every GGUF model
//! exists and starts with the GGUF magic; every server reader has its API-key variable set, an
//! http(s) base URL and a server that answers `GET /models`; the output directory is writable.
//! Each problem is one line naming the field or file and the fix.

use crate::config::RunConfig;
use datasets::dataset::Dataset;
use std::io::Read;
use std::path::Path;

/// Every problem found, one message each; empty when the run can start.
pub fn check(cfg: &RunConfig, store: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for name in &cfg.datasets {
        if let Err(e) = Dataset::load(&store.join(name)) {
            problems.push(format!("dataset `{name}`: {e:#}"));
        }
    }
    let cells = cfg.cells();
    if cells.iter().any(|c| c.embedder.is_some()) {
        problems.extend(cfg.embedder.preflight());
    }
    for (name, s) in &cfg.strategies {
        if let Err(e) = s.build() {
            problems.push(format!("field `strategies.{name}`: {e:#}"));
        }
    }
    if cells.iter().any(|c| !c.reader_config.counts_own_tokens()) {
        if let Some(t) = &cfg.cost_tokenizer {
            if let Err(e) = chunker::HfTokenizer::from_file(t) {
                problems.push(format!(
                    "field `cost_tokenizer`: {e} (or set `cost_tokenizer: null` to count no tokens)"
                ));
            }
        }
    }
    for (name, r) in &cfg.readers {
        problems.extend(r.preflight(name));
    }
    if let Err(e) = writable(&cfg.output.join(&cfg.name)) {
        problems.push(format!("field `output`: {e}"));
    }
    problems
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
fn safetensors_header(path: &Path) -> Result<(), String> {
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

/// Creates `dir` and a file in it, then removes the file.
fn writable(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .map_err(|e| format!("{} is not writable: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.gguf");
        std::fs::write(&p, b"GGML....").unwrap();
        assert!(crate::readers::llm::gguf_header(&p)
            .unwrap_err()
            .contains("not a GGUF"));
        std::fs::write(&p, b"GGUF\x03\0\0\0").unwrap();
        assert!(crate::readers::llm::gguf_header(&p).is_ok());
        let st = dir.path().join("model.safetensors");
        std::fs::write(&st, [200u8, 0, 0, 0, 0, 0, 0, 0, b'{']).unwrap();
        assert!(safetensors_header(&st)
            .unwrap_err()
            .contains("header length"));
        let mut ok = 2u64.to_le_bytes().to_vec();
        ok.extend_from_slice(b"{}");
        std::fs::write(&st, ok).unwrap();
        assert!(safetensors_header(&st).is_ok());
    }
}
