//! One writer per run directory: the lock `run`, `merge` and `report` hold while they write.

use anyhow::Result;
use std::path::Path;

/// The lock file of a run directory while a command writes it ([`lock_run_dir`]).
pub const LOCK_FILE: &str = ".chunkbench.lock";

/// Locks run directory `dir` for this process (`dir/.chunkbench.lock`, [`fsio::WriteLock`])
/// for as long as the returned guard lives: `run`, `merge` and `report` hold it while they
/// write, so two of them can never mix their files in one directory.
///
/// # Errors
/// Another process writing `dir` (naming its pid and command line, and the fixes: wait, or
/// another `--output`), or an I/O error naming the lock file.
pub fn lock_run_dir(dir: &Path) -> Result<fsio::WriteLock> {
    fsio::WriteLock::acquire(
        &dir.join(LOCK_FILE),
        &format!("run directory {}", dir.display()),
    )
    .map_err(anyhow::Error::from)
}
