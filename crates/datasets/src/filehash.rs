//! sha256 of input files (model weights, tokenizers, GGUF files), memoised by file identity so
//! that a run does not re-read gigabytes to learn that nothing changed.
//!
//! The memo is one small JSON file per path under `.cache/file-sha256/` (relative to the
//! working directory, beside the embedding and response caches), holding the path, the size in
//! bytes, the modification and status-change times in nanoseconds and the inode. A memo entry
//! is used only when all of these still match the file; anything else (a rewrite in place, a
//! copy over it, a `touch`) re-hashes the file. The status-change time cannot be set by user
//! tools, so an edit that restores the old size and modification time is still seen.

use crate::io::write_atomic;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Where the memo lives, relative to the working directory.
pub const MEMO_DIR: &str = ".cache/file-sha256";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    path: String,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    inode: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Memo {
    stamp: Stamp,
    sha256: String,
}

fn stamp(path: &Path) -> Result<Stamp> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    let canonical = path
        .canonicalize()
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string();
    #[cfg(unix)]
    let (mtime_ns, ctime_ns, inode) = {
        use std::os::unix::fs::MetadataExt;
        (
            i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            meta.ino(),
        )
    };
    #[cfg(not(unix))]
    let (mtime_ns, ctime_ns, inode) = {
        let m = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        (m, m, 0)
    };
    Ok(Stamp {
        path: canonical,
        size: meta.len(),
        mtime_ns,
        ctime_ns,
        inode,
    })
}

fn memo_path(canonical: &str) -> PathBuf {
    Path::new(MEMO_DIR).join(format!(
        "{}.json",
        &crate::io::sha256_hex(canonical.as_bytes())[..32]
    ))
}

/// The lower-case hex sha256 of the file at `path`, read from the memo when the file's size,
/// times and inode are those recorded, otherwise computed (streamed) and recorded.
///
/// # Errors
/// The file cannot be read (naming it). A memo that cannot be written is not an error.
pub fn sha256_file_cached(path: &Path) -> Result<String> {
    static MEM: OnceLock<Mutex<HashMap<String, Memo>>> = OnceLock::new();
    let st = stamp(path)?;
    let mem = MEM.get_or_init(Default::default);
    if let Some(m) = mem.lock().expect("hash memo").get(&st.path) {
        if m.stamp == st {
            return Ok(m.sha256.clone());
        }
    }
    let mp = memo_path(&st.path);
    let on_disk: Option<Memo> = std::fs::read(&mp)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let sha = match on_disk {
        Some(m) if m.stamp == st => m.sha256,
        _ => {
            let sha = crate::io::sha256_file(path)?;
            // The file may have changed while it was read: record only a stable stamp. A file
            // written within the last 2 s may still be rewritten within the same timestamp
            // tick (git's "racy clean" case): it is hashed again next time instead.
            let now_ns = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i128);
            let settled = now_ns - st.mtime_ns.max(st.ctime_ns) > 2_000_000_000;
            if settled && stamp(path).is_ok_and(|after| after == st) {
                let memo = Memo {
                    stamp: st.clone(),
                    sha256: sha.clone(),
                };
                if let Ok(bytes) = serde_json::to_vec(&memo) {
                    let _ = write_atomic(&mp, &bytes);
                }
            }
            sha
        }
    };
    mem.lock().expect("hash memo").insert(
        st.path.clone(),
        Memo {
            stamp: st,
            sha256: sha.clone(),
        },
    );
    Ok(sha)
}
