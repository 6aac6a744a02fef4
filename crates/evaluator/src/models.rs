//! The models directory and where a configured model path is read from.
//!
//! Model paths in a config are names, not locations: `models/all-MiniLM-L6-v2` (the default
//! embedder), `models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf` (the default
//! LLM reader), `models/all-MiniLM-L6-v2/tokenizer.json` (the default tokenizers). A relative
//! path whose first component is `models` is read from the models directory: the directory
//! named by `CHUNKBENCH_MODELS` when it is set (what `chunkbench models fetch` writes to), else
//! `models/` under the working directory. The config, and so every cell id, keeps the name as
//! written; what a cell was computed on is the models' content, in its inputs
//! (`records::inputs`). So moving the models directory and pointing `CHUNKBENCH_MODELS` at
//! it reuses every cell, and a model whose content changed recomputes them. Any other path
//! (absolute, or relative not under `models/`) is read as given.

use std::path::{Component, Path, PathBuf};

/// The environment variable naming the models directory.
pub const ENV: &str = "CHUNKBENCH_MODELS";

/// The models directory: `$CHUNKBENCH_MODELS` when set and not empty, else `models`.
pub fn dir() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from("models"),
    }
}

/// Where `p` is read from (module docs): `models/REST` → `dir()/REST`; other paths unchanged.
pub fn resolve(p: &Path) -> PathBuf {
    resolve_in(p, &dir())
}

/// [`resolve`] with the models directory given.
pub fn resolve_in(p: &Path, models: &Path) -> PathBuf {
    let mut comps = p.components();
    match comps.next() {
        Some(Component::Normal(first)) if first == "models" => models.join(comps.as_path()),
        _ => p.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36 case 22: the models directory is where model names are read from.
    #[test]
    fn model_names_resolve_under_the_models_directory() {
        let m = Path::new("/srv/m");
        assert_eq!(
            resolve_in(Path::new("models/a/b.gguf"), m),
            Path::new("/srv/m/a/b.gguf")
        );
        assert_eq!(resolve_in(Path::new("models"), m), Path::new("/srv/m"));
        assert_eq!(
            resolve_in(Path::new("/abs/models/x"), m),
            Path::new("/abs/models/x")
        );
        assert_eq!(
            resolve_in(Path::new("other/models/x"), m),
            Path::new("other/models/x")
        );
        assert_eq!(
            resolve_in(Path::new("./models/x"), m),
            Path::new("./models/x")
        );
        let here = Path::new("models");
        assert_eq!(
            resolve_in(Path::new("models/a"), here),
            Path::new("models/a")
        );
    }
}
