//! The file helpers every chunkbench crate shares: one atomic write and one sha256.
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
}
