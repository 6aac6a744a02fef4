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

/// A dataset being written into the store all or nothing: a hidden work directory
/// (`.NAME.importing-PID`, hidden from `ls datasets`) that [`StagedDataset::publish`] renames
/// into place as `store/NAME` (an existing dataset is moved aside first and removed after), so
/// a kill or a full disk mid-write leaves the old dataset as it was. Dropped unpublished, the
/// work directory is removed and nothing in the store changed. From `begin` to `publish` the
/// dataset's lock is held (`.NAME.lock` in the store, [`fsio::WriteLock`]): two commands
/// writing one NAME at once cannot mix their files, the second fails naming the first. Work
/// directories left by a killed writer (`.NAME.importing-PID`/`.NAME.replaced-PID` of a
/// process that no longer runs) are removed by `begin`, each with a warning.
#[derive(Debug)]
pub struct StagedDataset {
    _lock: fsio::WriteLock,
    store: std::path::PathBuf,
    name: String,
    tmp: std::path::PathBuf,
    published: bool,
}

impl StagedDataset {
    /// Locks dataset `name` of `store` and creates its empty work directory; warnings (work
    /// directories of killed writers removed) go to `warnings`.
    ///
    /// # Errors
    /// Another process writing dataset `name` (its pid and command line), or a directory that
    /// cannot be created (naming it).
    pub fn begin(store: &Path, name: &str, warnings: &mut Vec<String>) -> Result<StagedDataset> {
        std::fs::create_dir_all(store)
            .with_context(|| format!("cannot create {}", store.display()))?;
        let lock = fsio::WriteLock::acquire(
            &store.join(format!(".{name}.lock")),
            &format!("dataset {name} of {}", store.display()),
        )?;
        remove_stale_work_dirs(store, name, warnings);
        let tmp = store.join(format!(".{name}.importing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        Ok(StagedDataset {
            _lock: lock,
            store: store.to_path_buf(),
            name: name.to_string(),
            tmp,
            published: false,
        })
    }

    /// The work directory to write the dataset's files into.
    pub fn dir(&self) -> &Path {
        &self.tmp
    }

    /// Renames the work directory into place as `store/NAME`, replacing an existing dataset.
    ///
    /// # Errors
    /// A directory that cannot be renamed (naming it).
    pub fn publish(mut self) -> Result<()> {
        let target = self.store.join(&self.name);
        // An existing dataset is moved aside first and removed after the rename.
        let old = self
            .store
            .join(format!(".{}.replaced-{}", self.name, std::process::id()));
        let replaced = target.exists();
        if replaced {
            std::fs::rename(&target, &old)
                .with_context(|| format!("cannot move the old {} aside", target.display()))?;
        }
        std::fs::rename(&self.tmp, &target).with_context(|| {
            format!(
                "cannot rename {} to {}",
                self.tmp.display(),
                target.display()
            )
        })?;
        if replaced {
            let _ = std::fs::remove_dir_all(&old);
        }
        self.published = true;
        Ok(())
    }
}

impl Drop for StagedDataset {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Writes a dataset directory `store/name` all or nothing ([`StagedDataset`]): `build` fills
/// the work directory, and only when it returns `Ok` is it renamed into place. Shared by
/// `data import`, `data generate` and `data stitch`.
///
/// # Errors
/// Another process writing dataset `name` (its pid and command line), `build`'s error, or a
/// directory that cannot be created or renamed (naming it).
pub fn write_into_store<T>(
    store: &Path,
    name: &str,
    warnings: &mut Vec<String>,
    build: impl FnOnce(&Path) -> Result<T>,
) -> Result<T> {
    let staged = StagedDataset::begin(store, name, warnings)?;
    let value = build(staged.dir())?;
    staged.publish()?;
    Ok(value)
}

/// Removes the work directories an import of `name` killed before it finished left in `store`
/// (`.NAME.importing-PID`, `.NAME.replaced-PID` whose process no longer runs), noting each in
/// `warnings`; a live import's are left alone.
fn remove_stale_work_dirs(store: &Path, name: &str, warnings: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(store) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let pid = [".importing-", ".replaced-"].iter().find_map(|kind| {
            file.strip_prefix(&format!(".{name}{kind}"))
                .and_then(|p| p.parse::<u32>().ok())
        });
        let Some(pid) = pid else { continue };
        let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
        if !alive && std::fs::remove_dir_all(e.path()).is_ok() {
            warnings.push(format!(
                "removed {}, left by an import that was killed before it finished",
                e.path().display()
            ));
        }
    }
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

    #[test]
    fn a_failed_or_concurrent_write_leaves_the_old_dataset() {
        let store = tempfile::tempdir().unwrap();
        let mut w = Vec::new();
        write_into_store(store.path(), "d", &mut w, |dir| {
            write_atomic(&dir.join("f"), b"old")
        })
        .unwrap();
        let failed: Result<()> = write_into_store(store.path(), "d", &mut w, |dir| {
            write_atomic(&dir.join("f"), b"new")?;
            anyhow::bail!("disk full")
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(store.path().join("d/f")).unwrap(), b"old");
        let staged = StagedDataset::begin(store.path(), "d", &mut w).unwrap();
        let e = StagedDataset::begin(store.path(), "d", &mut w).unwrap_err();
        assert!(format!("{e:#}").contains("dataset d of"), "{e:#}");
        drop(staged);
        // Nothing but the dataset is left: no work directory, no lock file.
        let names: Vec<String> = std::fs::read_dir(store.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["d"]);
        assert_eq!(std::fs::read(store.path().join("d/f")).unwrap(), b"old");
    }
}
