//! Atomic file writes and content hashes.
//!
//! Every output file is written to a temporary file in the same directory and renamed into
//! place, so a reader (or a resumed run) sees either the old file or the complete new one,
//! never a torn write.

use anyhow::{Context, Result};
use std::path::Path;

/// Writes `bytes` to `path` atomically (temp file in the same directory, fsync, rename),
/// creating parent directories.
///
/// # Errors
/// I/O errors, naming the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    fsio::write_atomic(path, bytes, fsio::Durability::Synced)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Lower-case hex sha256 of `bytes` ([`fsio::sha256_hex`]).
pub fn sha256_hex(bytes: &[u8]) -> String {
    fsio::sha256_hex(bytes)
}

/// Lower-case hex sha256 of a file's contents, streamed ([`fsio::sha256_file`]).
///
/// # Errors
/// I/O errors, naming the path.
pub fn sha256_file(path: &Path) -> Result<String> {
    fsio::sha256_file(path).with_context(|| format!("cannot hash {}", path.display()))
}

/// Serialises `value` as pretty JSON with a trailing newline and writes it atomically.
///
/// # Errors
/// Serialisation or I/O errors, naming the path.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .with_context(|| format!("cannot serialise {}", path.display()))?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Serialises each item as one JSON line and writes the file atomically.
///
/// # Errors
/// Serialisation or I/O errors, naming the path.
pub fn write_jsonl<T: serde::Serialize>(path: &Path, items: &[T]) -> Result<()> {
    let mut bytes = Vec::new();
    for item in items {
        serde_json::to_writer(&mut bytes, item)
            .with_context(|| format!("cannot serialise a record of {}", path.display()))?;
        bytes.push(b'\n');
    }
    write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(
            sha256_file(&p).unwrap(),
            "3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3"
        );
        // only the file itself is left behind
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }
}
