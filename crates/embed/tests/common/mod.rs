//! Shared helpers for the model-backed tests: locating the model directory and the shared
//! reference data. Missing inputs FAIL with instructions; they never skip silently.
#![allow(dead_code)]

use std::path::PathBuf;

/// The workspace root (two levels above this crate).
pub use testkit::workspace;

/// `$CHUNKBENCH_MODEL_DIR` or `<workspace>/models/all-MiniLM-L6-v2`; panics with the fetch
/// instruction when it is missing.
pub fn model_dir() -> PathBuf {
    let dir = std::env::var_os("CHUNKBENCH_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("models/all-MiniLM-L6-v2"));
    assert!(
        dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file(),
        "the all-MiniLM-L6-v2 model is missing at {}: run `chunkbench models fetch` first \
         (or set CHUNKBENCH_MODEL_DIR to a Hugging Face model directory)",
        dir.display()
    );
    dir
}

/// `$CHUNKBENCH_SHARED` or `<workspace>/../shared`; panics when the reference file is missing.
pub fn reference_file() -> PathBuf {
    let shared = std::env::var_os("CHUNKBENCH_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared"));
    let f = shared.join("reference/minilm/reference.json");
    assert!(
        f.is_file(),
        "reference embeddings missing at {}: set CHUNKBENCH_SHARED to the shared directory \
         that holds reference/minilm/reference.json",
        f.display()
    );
    f
}

/// The reference sentences, their token counts after truncation, and their
/// sentence-transformers embeddings.
pub struct Reference {
    pub sentences: Vec<String>,
    pub token_counts: Vec<usize>,
    pub embeddings: Vec<Vec<f32>>,
}

pub fn reference() -> Reference {
    let text = std::fs::read_to_string(reference_file()).expect("read reference.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("reference.json is JSON");
    let strings = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap_or_else(|| panic!("reference.json: `{k}`"))
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    Reference {
        sentences: strings("sentences"),
        token_counts: v["token_counts_after_truncation"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap() as usize)
            .collect(),
        embeddings: v["embeddings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                e.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect()
            })
            .collect(),
    }
}
