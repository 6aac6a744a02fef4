//! The file helpers every chunkbench crate shares: one atomic write, one sha256 and one
//! exclusive lock on what a command writes ([`WriteLock`]).
//!
//! An atomic write goes to a temporary file in the destination's directory (`.tmp-*.part`),
//! which is then renamed over the destination, so a reader sees the old file or the new one,
//! never a part (a kill -9 leaves at most a stray `.tmp-*.part`). Results are also fsynced
//! before the rename ([`Durability::Synced`]); cache entries, which carry their own checksums
//! and are recomputed when corrupt, skip the fsync ([`Durability::Renamed`]).

#![forbid(unsafe_code)]

use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::Path;

/// Whether an atomic write also waits for the data to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync the temporary file before the rename (results, manifests).
    Synced,
    /// Rename only (cache entries, which are checksummed and recomputed when corrupt).
    Renamed,
}

/// Writes `bytes` to `path` atomically, creating parent directories; the file gets mode 0644
/// on Unix (temporary files are created 0600).
///
/// # Errors
/// I/O errors, each naming the path.
pub fn write_atomic(path: &Path, bytes: &[u8], durability: Durability) -> std::io::Result<()> {
    let named =
        |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(named)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".part")
        .tempfile_in(dir)
        .map_err(named)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(named)?;
    }
    tmp.write_all(bytes).map_err(named)?;
    if durability == Durability::Synced {
        tmp.as_file().sync_all().map_err(named)?;
    }
    tmp.persist(path).map_err(|e| named(e.error))?;
    Ok(())
}

/// An exclusive lock held by one chunkbench process while it writes a directory (a run
/// directory, a dataset of the store): a second writer of the same directory fails at once,
/// naming the holder, instead of mixing its files with the first one's.
///
/// The lock is an advisory `flock` on a lock file (`LOCK_EX | LOCK_NB`, through
/// [`std::fs::File::try_lock`]), so the kernel releases it when its process exits, however it
/// exits: there are no stale locks. The file holds the holder's pid and command line for the
/// second writer's message, and is removed when the lock is dropped. A writer that locked a
/// file another one removed in the meantime (it opened the old file, the holder dropped it)
/// notices that the path now names another file and tries again.
#[derive(Debug)]
pub struct WriteLock {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl WriteLock {
    /// Locks `lock_path` (created with its parent directories if missing) for the process;
    /// `what` names the thing being written in the error, e.g. `run directory runs/x`.
    ///
    /// # Errors
    /// Kind [`std::io::ErrorKind::WouldBlock`] when another process holds the lock: the
    /// message names `what`, the holder's pid and command line, and the two fixes (wait, or
    /// write elsewhere). Other I/O errors name the lock file.
    pub fn acquire(lock_path: &Path, what: &str) -> std::io::Result<WriteLock> {
        let named = |e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("{}: {e}", lock_path.display()))
        };
        if let Some(dir) = lock_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(named)?;
        }
        loop {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(lock_path)
                .map_err(named)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let holder = std::fs::read_to_string(lock_path).unwrap_or_default();
                    let holder = holder.trim();
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        format!(
                            "{what} is being written by another chunkbench process ({}); two \
                             writers would mix their files. Wait for it to finish, or write \
                             to another directory",
                            if holder.is_empty() {
                                "its pid is not written yet".to_string()
                            } else {
                                holder.replace('\n', ": ")
                            }
                        ),
                    ));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(named(e)),
            }
            if same_file(&file, lock_path) {
                let mut lock = WriteLock {
                    file,
                    path: lock_path.to_path_buf(),
                };
                lock.write_holder().map_err(named)?;
                return Ok(lock);
            }
            // The holder removed the file between our open and our lock: lock the new one.
        }
    }

    /// Writes `pid N\ncommand line` into the lock file.
    fn write_holder(&mut self) -> std::io::Result<()> {
        use std::io::Seek;
        let argv: Vec<String> = std::env::args().collect();
        self.file.set_len(0)?;
        self.file.seek(std::io::SeekFrom::Start(0))?;
        write!(
            self.file,
            "pid {}\n`{}`\n",
            std::process::id(),
            argv.join(" ")
        )?;
        self.file.flush()
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        // Removed while still locked, so a waiting writer that opened it retries (above).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the open `file` is the file `path` names now (device and inode on Unix).
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Lower-case hex sha256 of a file's contents, read in 1 MiB blocks.
///
/// # Errors
/// I/O errors, naming the path.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let named =
        |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut f = std::fs::File::open(path).map_err(named)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(named)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_whole_files_and_leave_no_parts() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b/out.txt");
        write_atomic(&p, b"first", Durability::Synced).unwrap();
        write_atomic(&p, b"second", Durability::Renamed).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644);
        }
    }

    #[test]
    fn sha256_matches_the_standard_vector() {
        // FIPS 180-2 test vector "abc".
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_hex(b"abc"), abc);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("abc");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), abc);
        let e = sha256_file(&d.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_first_and_may_lock_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run").join(".chunkbench.lock");
        let first = WriteLock::acquire(&path, "run directory run").unwrap();
        let err = WriteLock::acquire(&path, "run directory run").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
        let msg = err.to_string();
        assert!(msg.contains("run directory run is being written"), "{msg}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        drop(first);
        assert!(!path.exists(), "the lock file is removed with the lock");
        let again = WriteLock::acquire(&path, "run directory run").unwrap();
        drop(again);
    }

    #[test]
    fn a_lock_on_a_removed_file_is_not_a_lock() {
        // A writer that opened the file before the holder removed it must not think it holds
        // the lock on the path: the next writer would lock the new file too.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".x.lock");
        std::fs::write(&path, "").unwrap();
        let stale = std::fs::File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(!same_file(&stale, &path));
        let lock = WriteLock::acquire(&path, "x").unwrap();
        assert!(same_file(&lock.file, &path));
    }
}
