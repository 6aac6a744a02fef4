//! The store behind chunkbench's caches: one SQLite database file per cache, entries keyed by
//! a 32-byte content key (a sha256 the caller computes from the producer's identity and the
//! input), each filed under the identity that produced it.
//!
//! **Why SQLite.** A sweep over a large corpus makes hundreds of thousands of entries; one file
//! per entry (the layout before this crate) leaves that many files, which shared file systems
//! serve badly, and costs a create + rename per entry. SQLite is a single file, is built into
//! the binary (`rusqlite`'s `bundled` amalgamation: no system library), and has well-tested
//! multi-process concurrency: any number of readers and one writer at a time, other writers
//! waiting on a lock ([`BUSY_TIMEOUT`]) instead of failing.
//!
//! **Journal.** On a local file system the database runs in WAL mode (`journal_mode=WAL`):
//! readers never block the writer. WAL keeps its lock index in shared memory, which processes
//! on *different hosts* cannot share, so on a network file system (NFS, SMB/CIFS, Lustre,
//! GPFS, BeeGFS, CephFS, FUSE: detected with statfs(2)) the rollback journal
//! (`journal_mode=DELETE`) is used instead, whose fcntl locks those file systems forward to
//! their lock managers. [`CacheDb::journal`] says which one is in use.
//!
//! **Schema** (`format` = [`FORMAT`] in table `meta`):
//! ```text
//! identities(id INTEGER PRIMARY KEY, sha256 BLOB UNIQUE, identity TEXT)
//! entries(key BLOB UNIQUE, identity INTEGER, value BLOB, created INTEGER)
//! ```
//! A rowid table with 8 KiB pages: an embedding entry (1.6 KB for 384 dimensions) fits in its
//! leaf page, where a `WITHOUT ROWID` table (whose rows should stay under ~1/20 of a page)
//! spilled each one into an overflow page of its own and made the file 2.7x larger.
//! `created` is Unix seconds. Values are opaque bytes: each cache stores an encoding that
//! carries its own checksum, so an entry damaged inside the database is still detected by the
//! cache that reads it, counted as corrupt, recomputed and replaced.
//!
//! **Durability.** [`Sync::Normal`] (embeddings: a power cut may lose the last transactions,
//! never corrupt the file) or [`Sync::Full`] (reader responses, which cost seconds each). A
//! killed process loses nothing it committed in either mode.
//!
//! **A damaged file** (truncated, overwritten, not SQLite: [`damaged`] reads its header; or
//! SQLite reports `SQLITE_CORRUPT`/`SQLITE_NOTADB` while reading or writing it) is a cache, not
//! data: [`CacheDb::open`] and every read and write set it aside as `FILE.damaged-UNIXTIME`
//! (with its `-wal`/`-shm`/`-journal` files), say so on stderr, and go on with an empty
//! database in its place, whose entries are then recomputed. [`CacheDb::open_unrepaired`]
//! opens without that, for commands that inspect a cache (`chunkbench cache stats --check`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

/// The `format` recorded in every database's `meta` table.
pub const FORMAT: &str = "chunkbench-cachedb/1";

/// How long a write waits for another process's write lock before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(600);

/// Errors of the store; each names the database file.
#[derive(Debug, thiserror::Error)]
pub enum CacheDbError {
    /// SQLite failed (open, read, write, lock timeout, a damaged file).
    #[error("cache database {path}: {message}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What failed, with SQLite's message.
        message: String,
    },
    /// The file is damaged (truncated, overwritten, not SQLite); opened with
    /// [`CacheDb::open_unrepaired`], which does not set it aside.
    #[error("cache database {path} is damaged: {message}")]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The file is a database of another kind or format.
    #[error("cache database {path}: {message}")]
    Format {
        /// The database file.
        path: PathBuf,
        /// What does not match, and the fix.
        message: String,
    },
}

/// The journal mode a [`CacheDb`] runs in (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Journal {
    /// Write-ahead log: local file systems.
    Wal,
    /// Rollback journal: network file systems.
    Delete,
}

impl Journal {
    /// `wal` or `delete`, as SQLite names them.
    pub fn as_str(self) -> &'static str {
        match self {
            Journal::Wal => "wal",
            Journal::Delete => "delete",
        }
    }
}

/// How far a commit waits for the disk (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// `synchronous=NORMAL`.
    Normal,
    /// `synchronous=FULL`.
    Full,
}

/// Entries and bytes filed under one identity ([`CacheDb::identities`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentitySummary {
    /// The producer's identity string as the cache recorded it.
    pub identity: String,
    /// Number of entries.
    pub entries: u64,
    /// Sum of the values' lengths (bytes).
    pub value_bytes: u64,
    /// Oldest and newest `created` (Unix seconds).
    pub created: (i64, i64),
}

/// One stored entry, as [`CacheDb::for_each`] hands it out.
#[derive(Debug, Clone)]
pub struct StoredEntry {
    /// The 32-byte key.
    pub key: [u8; 32],
    /// The identity it is filed under.
    pub identity: String,
    /// The stored bytes.
    pub value: Vec<u8>,
    /// Unix seconds at which it was written.
    pub created: i64,
}

/// What [`CacheDb::prune`] removes: entries matching *every* given condition.
#[derive(Debug, Clone, Default)]
pub struct Prune {
    /// Entries whose identity contains this text.
    pub identity_contains: Option<String>,
    /// Entries written before this Unix time (seconds).
    pub created_before: Option<i64>,
    /// Exactly these keys (e.g. entries a cache found corrupt).
    pub keys: Option<Vec<[u8; 32]>>,
}

/// A cache database (module docs). Safe to share between threads (one connection behind a
/// mutex; each call is one short transaction) and between processes (SQLite's locks).
#[derive(Debug)]
pub struct CacheDb {
    path: PathBuf,
    kind: String,
    journal: Journal,
    sync: Sync,
    /// Whether damage found later is repaired ([`CacheDb::open`]) or an error
    /// ([`CacheDb::open_unrepaired`]).
    repair: bool,
    conn: Mutex<Connection>,
    /// Where damaged files of this database were set aside, with why (module docs).
    set_aside: Mutex<Vec<(PathBuf, String)>>,
}

/// Why the database file at `path` cannot be used, read from its 100-byte header (no SQLite
/// involved, nothing changed): not a SQLite file, a page size SQLite never writes, or shorter
/// than the page count its header records (truncated). `None` for a sound header, an empty
/// file or no file.
pub fn damaged(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    if len == 0 {
        return None;
    }
    let mut h = [0u8; 100];
    if len < 100 || f.read_exact(&mut h).is_err() {
        return Some(format!(
            "{len} bytes: shorter than a SQLite header (truncated)"
        ));
    }
    if &h[..16] != b"SQLite format 3\0" {
        return Some("not a SQLite database (its header is something else)".into());
    }
    let page = match u16::from_be_bytes([h[16], h[17]]) {
        1 => 65_536u64,
        p if p >= 512 && p.is_power_of_two() => u64::from(p),
        p => return Some(format!("header page size {p} is not one SQLite writes")),
    };
    let be32 = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    // The page count is valid when the version-valid-for number equals the change counter
    // (SQLite file format, §1.3.7).
    let pages = u64::from(be32(28));
    if be32(92) == be32(24) && pages > 0 && len < pages * page {
        return Some(format!(
            "{len} bytes where its header records {pages} pages of {page} bytes (truncated)"
        ));
    }
    None
}

/// Runs `op` again while SQLite answers "database is locked" or "busy" without having waited:
/// the busy handler ([`BUSY_TIMEOUT`]) is not called where waiting could deadlock — a
/// connection switching a new database to WAL while another process does the same, or one
/// reading the schema while another creates it — so processes that open one new cache at the
/// same moment (the shards of a sweep) would fail at once. Retries with a growing pause (1 ms
/// to 100 ms) for up to [`BUSY_TIMEOUT`]; any other outcome is returned as it is.
fn retry_busy<T>(mut op: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match op() {
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                ) && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// How long [`damage_confirmed`] waits before reading a header again.
const DAMAGE_RECHECK: std::time::Duration = std::time::Duration::from_millis(250);

/// [`damaged`], confirmed before anything is set aside: another process creating the file or
/// checkpointing into it can show, for a moment, a header ahead of the file's length (a live
/// database, not a damaged one: setting it aside lost that process's writes), so the header
/// must still be damaged after [`DAMAGE_RECHECK`] and SQLite must fail to check the file too.
fn damage_confirmed(path: &Path) -> Option<String> {
    damaged(path)?;
    std::thread::sleep(DAMAGE_RECHECK);
    let why = damaged(path)?;
    let sound = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| {
            c.busy_timeout(BUSY_TIMEOUT)?;
            c.query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0))
        })
        .is_ok_and(|s| s == "ok");
    (!sound).then_some(why)
}

/// Whether SQLite reported the file damaged or not a database.
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// Renames the database file `path` and its journal files to `path.damaged-UNIXTIME…` (no
/// connection may be open on it); returns the new name of the database file. What `chunkbench
/// cache prune --corrupt` does with a damaged cache.
///
/// # Errors
/// The rename failed.
pub fn move_aside(path: &Path) -> std::io::Result<PathBuf> {
    let stamp = now();
    let mut target = PathBuf::from(format!("{}.damaged-{stamp}", path.display()));
    let mut n = 1;
    while target.exists() {
        target = PathBuf::from(format!("{}.damaged-{stamp}-{n}", path.display()));
        n += 1;
    }
    for suffix in ["-wal", "-shm", "-journal"] {
        let from = PathBuf::from(format!("{}{suffix}", path.display()));
        if from.exists() {
            std::fs::rename(&from, format!("{}{suffix}", target.display()))?;
        }
    }
    if path.exists() {
        std::fs::rename(path, &target)?;
    }
    Ok(target)
}

/// statfs(2) magic numbers of network and FUSE file systems (linux/magic.h and the vendors'
/// headers), on which WAL's shared-memory index is not safe across hosts.
const NETWORK_FS: &[u64] = &[
    0x6969,     // NFS
    0x517B,     // SMB
    0xFF534D42, // CIFS
    0xFE534D42, // SMB2
    0x0BD00BD0, // Lustre
    0x47504653, // GPFS
    0x19830326, // BeeGFS
    0x00C36400, // CephFS
    0x65735546, // FUSE (sshfs, s3fs, ...)
    0x013111A8, // IBRIX
    0x6B414653, // AFS
];

/// Whether `dir` is on a network file system (module docs); `false` when statfs fails.
pub fn is_network_fs(dir: &Path) -> bool {
    match rustix::fs::statfs(dir) {
        Ok(s) => NETWORK_FS.contains(&(s.f_type as u64)),
        Err(_) => false,
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl CacheDb {
    /// Opens (creating it and its directory if needed) the database at `path`, holding caches
    /// of `kind` (e.g. `embeddings`, `responses`: recorded on creation and checked after).
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`] when the file cannot be opened or created (naming it);
    /// [`CacheDbError::Format`] when it holds another kind or format.
    pub fn open(path: impl AsRef<Path>, kind: &str, sync: Sync) -> Result<Self, CacheDbError> {
        Self::open_with(path.as_ref(), kind, sync, true)
    }

    /// Opens like [`CacheDb::open`], but a damaged file is an error
    /// ([`CacheDbError::Damaged`]) instead of being set aside; later reads and writes that find
    /// damage fail the same way.
    ///
    /// # Errors
    /// As [`CacheDb::open`], and [`CacheDbError::Damaged`].
    pub fn open_unrepaired(
        path: impl AsRef<Path>,
        kind: &str,
        sync: Sync,
    ) -> Result<Self, CacheDbError> {
        Self::open_with(path.as_ref(), kind, sync, false)
    }

    fn open_with(path: &Path, kind: &str, sync: Sync, repair: bool) -> Result<Self, CacheDbError> {
        let path = path.to_path_buf();
        let mut set_aside = Vec::new();
        if let Some(why) = damage_confirmed(&path) {
            if !repair {
                return Err(CacheDbError::Damaged { path, message: why });
            }
            set_aside.push(Self::warn_aside(&path, why)?);
        }
        let (conn, journal) = match Self::connect(&path, sync) {
            Err((e, true)) if repair => {
                set_aside.push(Self::warn_aside(&path, e.to_string())?);
                Self::connect(&path, sync).map_err(|(e, _)| e)?
            }
            Err((e, true)) => {
                return Err(CacheDbError::Damaged {
                    path,
                    message: e.to_string(),
                })
            }
            Err((e, false)) => return Err(e),
            Ok(c) => c,
        };
        let db = CacheDb {
            path: path.clone(),
            kind: kind.to_string(),
            journal,
            sync,
            repair,
            conn: Mutex::new(conn),
            set_aside: Mutex::new(set_aside),
        };
        db.healing(|| db.init_schema())?;
        Ok(db)
    }

    /// Sets the damaged file at `path` aside and says so on stderr; returns where it went and
    /// why.
    fn warn_aside(path: &Path, why: String) -> Result<(PathBuf, String), CacheDbError> {
        let to = move_aside(path).map_err(|e| CacheDbError::Sqlite {
            path: path.to_path_buf(),
            message: format!("damaged ({why}), and it cannot be moved aside: {e}"),
        })?;
        eprintln!(
            "warning: cache database {} is damaged ({why}): moved aside to {}; an empty cache \
             replaces it and its entries are computed again (delete the damaged copy when you \
             no longer need it)",
            path.display(),
            to.display()
        );
        Ok((to, why))
    }

    /// Opens the connection with the pragmas of the module docs; on error, whether SQLite
    /// found the file damaged.
    fn connect(path: &Path, sync: Sync) -> Result<(Connection, Journal), (CacheDbError, bool)> {
        let err = |e: rusqlite::Error| {
            let dmg = is_damage(&e);
            (
                CacheDbError::Sqlite {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                },
                dmg,
            )
        };
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| {
            (
                CacheDbError::Sqlite {
                    path: path.to_path_buf(),
                    message: format!("cannot create directory {}: {e}", dir.display()),
                },
                false,
            )
        })?;
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        // Takes effect only on a new, empty database (before the journal mode is set).
        retry_busy(|| conn.execute_batch("PRAGMA page_size=8192;")).map_err(err)?;
        let journal = if is_network_fs(dir) {
            Journal::Delete
        } else {
            Journal::Wal
        };
        // journal_mode returns the mode now in effect.
        let mode: String = retry_busy(|| {
            conn.query_row(
                &format!("PRAGMA journal_mode={}", journal.as_str()),
                [],
                |r| r.get(0),
            )
        })
        .map_err(err)?;
        if !mode.eq_ignore_ascii_case(journal.as_str()) {
            return Err((
                CacheDbError::Sqlite {
                    path: path.to_path_buf(),
                    message: format!(
                        "journal_mode {} was refused (in effect: {mode})",
                        journal.as_str()
                    ),
                },
                false,
            ));
        }
        let sync_pragma = match sync {
            Sync::Normal => "NORMAL",
            Sync::Full => "FULL",
        };
        retry_busy(|| conn.execute_batch(&format!("PRAGMA synchronous={sync_pragma};")))
            .map_err(err)?;
        Ok((conn, journal))
    }

    /// Sets this database's damaged file aside and reconnects to a new, empty one in its place
    /// (module docs).
    fn repair(&self, why: String) -> Result<(), CacheDbError> {
        let mut conn = self.conn();
        // Close the damaged file before renaming it.
        let placeholder = Connection::open_in_memory().map_err(|e| self.sqlite(e))?;
        drop(std::mem::replace(&mut *conn, placeholder));
        let aside = Self::warn_aside(&self.path, why)?;
        let (fresh, _) = Self::connect(&self.path, self.sync).map_err(|(e, _)| e)?;
        *conn = fresh;
        drop(conn);
        self.set_aside
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(aside);
        match self.init_schema() {
            // A fresh file that is damaged again: give up rather than loop.
            Err(CacheDbError::Damaged { path, message }) => Err(CacheDbError::Sqlite {
                path,
                message: format!("a new database in place of a damaged one failed: {message}"),
            }),
            other => other,
        }
    }

    /// Damaged files of this database set aside since it was opened (module docs): where each
    /// went, and why.
    pub fn set_aside(&self) -> Vec<(PathBuf, String)> {
        self.set_aside
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Runs `op`; when it fails because SQLite found the file damaged, sets the file aside,
    /// reconnects to an empty database ([`CacheDb::repair`]) and runs `op` once more.
    fn healing<T>(
        &self,
        mut op: impl FnMut() -> Result<T, CacheDbError>,
    ) -> Result<T, CacheDbError> {
        match op() {
            Err(CacheDbError::Damaged { message, .. }) if self.repair => {
                self.repair(message)?;
                op()
            }
            other => other,
        }
    }

    fn sqlite(&self, e: rusqlite::Error) -> CacheDbError {
        if is_damage(&e) {
            return CacheDbError::Damaged {
                path: self.path.clone(),
                message: e.to_string(),
            };
        }
        CacheDbError::Sqlite {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable (every call is one
        // transaction, rolled back when its guard drops).
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn init_schema(&self) -> Result<(), CacheDbError> {
        let mut conn = self.conn();
        // BEGIN IMMEDIATE waits in the busy handler, but the schema read that follows another
        // process's CREATE can answer "locked" at once: the whole setup is retried.
        retry_busy(|| {
            conn.execute_batch(
                "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL); COMMIT;",
            )
            .inspect_err(|_| {
                let _ = conn.execute_batch("ROLLBACK;");
            })
        })
        .map_err(|e| self.sqlite(e))?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS identities (
                 id INTEGER PRIMARY KEY, sha256 BLOB NOT NULL UNIQUE, identity TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS entries (
                 key BLOB NOT NULL UNIQUE, identity INTEGER NOT NULL REFERENCES identities(id),
                 value BLOB NOT NULL, created INTEGER NOT NULL);
             CREATE INDEX IF NOT EXISTS entries_identity ON entries(identity);",
        )
        .map_err(|e| self.sqlite(e))?;
        for (name, want) in [("format", FORMAT), ("kind", self.kind.as_str())] {
            let have: Option<String> = tx
                .query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(|e| self.sqlite(e))?;
            match have {
                None => {
                    tx.execute(
                        "INSERT INTO meta(name, value) VALUES (?1, ?2)",
                        params![name, want],
                    )
                    .map_err(|e| self.sqlite(e))?;
                }
                Some(h) if h == want => {}
                Some(h) => {
                    return Err(CacheDbError::Format {
                        path: self.path.clone(),
                        message: format!(
                            "its {name} is `{h}`, expected `{want}`: point this cache at \
                             another file, or delete this one"
                        ),
                    })
                }
            }
        }
        tx.commit().map_err(|e| self.sqlite(e))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The kind recorded at creation (`embeddings`, `responses`, ...).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The journal mode in use (module docs).
    pub fn journal(&self) -> Journal {
        self.journal
    }

    /// The stored bytes of each key (`None`: no entry), in one read transaction.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`] (e.g. a damaged database file).
    pub fn get_many(&self, keys: &[[u8; 32]]) -> Result<Vec<Option<Vec<u8>>>, CacheDbError> {
        let mut out = Vec::with_capacity(keys.len());
        self.get_each(keys, |_, v| out.push(v.map(<[u8]>::to_vec)))?;
        Ok(out)
    }

    /// Calls `f(i, bytes)` for each key `keys[i]` in order (`None`: no entry), in one read
    /// transaction, with the bytes borrowed from SQLite: nothing is copied, so a caller that
    /// decodes as it goes never holds the raw values of a large batch (1.6 GB for a million
    /// 384-d embeddings).
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`] (e.g. a damaged database file); `f` may have been called for
    /// the keys before the failing one.
    pub fn get_each(
        &self,
        keys: &[[u8; 32]],
        mut f: impl FnMut(usize, Option<&[u8]>),
    ) -> Result<(), CacheDbError> {
        // Keys already answered before the file turned out damaged are not answered again;
        // after a repair the rest are misses.
        let mut done = 0;
        self.healing(|| {
            let start = done;
            self.get_from(&keys[start..], &mut |i, v| {
                f(start + i, v);
                done = start + i + 1;
            })
        })
    }

    fn get_from(
        &self,
        keys: &[[u8; 32]],
        f: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<(), CacheDbError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.sqlite(e))?;
        {
            let mut stmt = tx
                .prepare("SELECT value FROM entries WHERE key = ?1")
                .map_err(|e| self.sqlite(e))?;
            for (i, k) in keys.iter().enumerate() {
                let mut rows = stmt.query([&k[..]]).map_err(|e| self.sqlite(e))?;
                match rows.next().map_err(|e| self.sqlite(e))? {
                    Some(row) => {
                        let v = row.get_ref(0).map_err(|e| self.sqlite(e))?;
                        let bytes = v.as_blob().map_err(|e| self.sqlite(e.into()))?;
                        f(i, Some(bytes));
                    }
                    None => f(i, None),
                }
            }
        }
        tx.commit().map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// The stored bytes of `key`, if any.
    ///
    /// # Errors
    /// As [`CacheDb::get_many`].
    pub fn get(&self, key: &[u8; 32]) -> Result<Option<Vec<u8>>, CacheDbError> {
        Ok(self.get_many(std::slice::from_ref(key))?.pop().flatten())
    }

    /// Stores `(key, value)` pairs under `identity` in one write transaction, replacing
    /// entries with the same key (two processes computing the same entry store the same bytes).
    /// Waits up to [`BUSY_TIMEOUT`] for another process's write.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`] (lock timeout, disk full, damaged file).
    pub fn put_many(
        &self,
        identity: &str,
        entries: &[([u8; 32], &[u8])],
    ) -> Result<(), CacheDbError> {
        if entries.is_empty() {
            return Ok(());
        }
        self.healing(|| self.put_into(identity, entries))
    }

    fn put_into(&self, identity: &str, entries: &[([u8; 32], &[u8])]) -> Result<(), CacheDbError> {
        let created = now();
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        let id = identity_id(&tx, identity).map_err(|e| self.sqlite(e))?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT OR REPLACE INTO entries(key, identity, value, created)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|e| self.sqlite(e))?;
            for (k, v) in entries {
                stmt.execute(params![&k[..], id, v, created])
                    .map_err(|e| self.sqlite(e))?;
            }
        }
        tx.commit().map_err(|e| self.sqlite(e))
    }

    /// Stores one entry ([`CacheDb::put_many`]).
    ///
    /// # Errors
    /// As [`CacheDb::put_many`].
    pub fn put(&self, identity: &str, key: &[u8; 32], value: &[u8]) -> Result<(), CacheDbError> {
        self.put_many(identity, &[(*key, value)])
    }

    /// Number of entries.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`].
    pub fn len(&self) -> Result<u64, CacheDbError> {
        self.conn()
            .query_row("SELECT count(*) FROM entries", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.sqlite(e))
    }

    /// Whether the store holds no entry.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`].
    pub fn is_empty(&self) -> Result<bool, CacheDbError> {
        Ok(self.len()? == 0)
    }

    /// Entries and bytes per identity, largest first.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`].
    pub fn identities(&self) -> Result<Vec<IdentitySummary>, CacheDbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT i.identity, count(*), sum(length(e.value)), min(e.created), max(e.created)
                 FROM entries e JOIN identities i ON i.id = e.identity
                 GROUP BY e.identity ORDER BY count(*) DESC, i.identity",
            )
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(IdentitySummary {
                    identity: r.get(0)?,
                    entries: r.get::<_, i64>(1)? as u64,
                    value_bytes: r.get::<_, i64>(2)? as u64,
                    created: (r.get(3)?, r.get(4)?),
                })
            })
            .map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }

    /// Calls `f` on every entry (key order), in one read transaction; `f` returning `false`
    /// stops the walk.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`].
    pub fn for_each(&self, mut f: impl FnMut(StoredEntry) -> bool) -> Result<(), CacheDbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT e.key, i.identity, e.value, e.created
                 FROM entries e JOIN identities i ON i.id = e.identity ORDER BY e.key",
            )
            .map_err(|e| self.sqlite(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.sqlite(e))?;
        while let Some(r) = rows.next().map_err(|e| self.sqlite(e))? {
            let key: Vec<u8> = r.get(0).map_err(|e| self.sqlite(e))?;
            let entry = StoredEntry {
                key: key.as_slice().try_into().unwrap_or([0; 32]),
                identity: r.get(1).map_err(|e| self.sqlite(e))?,
                value: r.get(2).map_err(|e| self.sqlite(e))?,
                created: r.get(3).map_err(|e| self.sqlite(e))?,
            };
            if !f(entry) {
                break;
            }
        }
        Ok(())
    }

    /// Deletes the entries matching every condition of `what` (and identities left without
    /// entries); returns how many entries went. Refuses an empty [`Prune`] (that would delete
    /// everything: delete the file instead).
    ///
    /// # Errors
    /// [`CacheDbError::Format`] for an empty `what`; [`CacheDbError::Sqlite`].
    pub fn prune(&self, what: &Prune) -> Result<u64, CacheDbError> {
        if what.identity_contains.is_none() && what.created_before.is_none() && what.keys.is_none()
        {
            return Err(CacheDbError::Format {
                path: self.path.clone(),
                message: "prune needs at least one condition (identity, age or keys)".into(),
            });
        }
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        let mut sql = String::from("DELETE FROM entries WHERE 1 = 1");
        if what.identity_contains.is_some() {
            sql.push_str(
                " AND identity IN (SELECT id FROM identities WHERE instr(identity, ?1) > 0)",
            );
        }
        if what.created_before.is_some() {
            sql.push_str(" AND created < ?2");
        }
        if what.keys.is_some() {
            sql.push_str(" AND key IN (SELECT key FROM prune_keys)");
            tx.execute_batch("CREATE TEMP TABLE IF NOT EXISTS prune_keys (key BLOB PRIMARY KEY); DELETE FROM prune_keys;")
                .map_err(|e| self.sqlite(e))?;
            let mut ins = tx
                .prepare("INSERT OR IGNORE INTO prune_keys(key) VALUES (?1)")
                .map_err(|e| self.sqlite(e))?;
            for k in what.keys.iter().flatten() {
                ins.execute([&k[..]]).map_err(|e| self.sqlite(e))?;
            }
        }
        let n = {
            let mut stmt = tx.prepare(&sql).map_err(|e| self.sqlite(e))?;
            let mut idx = Vec::<(usize, rusqlite::types::Value)>::new();
            if let Some(s) = &what.identity_contains {
                idx.push((1, s.clone().into()));
            }
            if let Some(t) = what.created_before {
                idx.push((2, t.into()));
            }
            for (i, v) in &idx {
                stmt.raw_bind_parameter(*i, v).map_err(|e| self.sqlite(e))?;
            }
            stmt.raw_execute().map_err(|e| self.sqlite(e))?
        };
        tx.execute(
            "DELETE FROM identities WHERE id NOT IN (SELECT DISTINCT identity FROM entries)",
            [],
        )
        .map_err(|e| self.sqlite(e))?;
        tx.commit().map_err(|e| self.sqlite(e))?;
        Ok(n as u64)
    }

    /// Returns the file's free pages to the file system (`VACUUM`, after a WAL checkpoint);
    /// needs no other process writing.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`].
    pub fn vacuum(&self) -> Result<(), CacheDbError> {
        let conn = self.conn();
        if self.journal == Journal::Wal {
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(|e| self.sqlite(e))?;
        }
        conn.execute_batch("VACUUM").map_err(|e| self.sqlite(e))
    }

    /// SQLite's own consistency check (`PRAGMA quick_check`): `ok`, or the problems found.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`].
    pub fn quick_check(&self) -> Result<String, CacheDbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("PRAGMA quick_check")
            .map_err(|e| self.sqlite(e))?;
        let lines: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .map_err(|e| self.sqlite(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sqlite(e))?;
        Ok(lines.join("; "))
    }

    /// The value of `name` in the `meta` table.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`].
    pub fn meta(&self, name: &str) -> Result<Option<String>, CacheDbError> {
        self.conn()
            .query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sqlite(e))
    }

    /// Imports entries once: unless `meta.<marker>` is set, calls `produce` inside one write
    /// transaction (other processes wait), stores what it returns, and sets the marker, so two
    /// processes opening the same cache import it once. Returns the number imported (`None`
    /// when the marker was already set).
    ///
    /// `produce` returns `(identity, key, value)` triples.
    ///
    /// # Errors
    /// [`CacheDbError::Sqlite`]; `produce`'s error text as [`CacheDbError::Format`].
    pub fn import_once(
        &self,
        marker: &str,
        produce: impl FnOnce() -> Result<Vec<(String, [u8; 32], Vec<u8>)>, String>,
    ) -> Result<Option<u64>, CacheDbError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        let done: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE name = ?1", [marker], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sqlite(e))?;
        if done.is_some() {
            return Ok(None);
        }
        let rows = produce().map_err(|message| CacheDbError::Format {
            path: self.path.clone(),
            message,
        })?;
        let created = now();
        {
            let mut stmt = tx
                .prepare(
                    "INSERT OR IGNORE INTO entries(key, identity, value, created)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|e| self.sqlite(e))?;
            let mut ids = std::collections::HashMap::<String, i64>::new();
            for (identity, key, value) in &rows {
                let id = match ids.get(identity) {
                    Some(id) => *id,
                    None => {
                        let id = identity_id(&tx, identity).map_err(|e| self.sqlite(e))?;
                        ids.insert(identity.clone(), id);
                        id
                    }
                };
                stmt.execute(params![&key[..], id, value, created])
                    .map_err(|e| self.sqlite(e))?;
            }
        }
        tx.execute(
            "INSERT INTO meta(name, value) VALUES (?1, ?2)",
            params![marker, format!("{} entries at {created}", rows.len())],
        )
        .map_err(|e| self.sqlite(e))?;
        tx.commit().map_err(|e| self.sqlite(e))?;
        Ok(Some(rows.len() as u64))
    }
}

/// The row id of `identity` in `identities`, inserting it if new.
fn identity_id(tx: &rusqlite::Transaction<'_>, identity: &str) -> rusqlite::Result<i64> {
    use sha2::{Digest, Sha256};
    let sha = Sha256::digest(identity.as_bytes());
    tx.execute(
        "INSERT OR IGNORE INTO identities(sha256, identity) VALUES (?1, ?2)",
        params![&sha[..], identity],
    )?;
    tx.query_row(
        "SELECT id FROM identities WHERE sha256 = ?1",
        [&sha[..]],
        |r| r.get(0),
    )
}

/// The key as lower-case hex (for messages and listings).
pub fn key_hex(key: &[u8; 32]) -> String {
    hex::encode(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> [u8; 32] {
        [i; 32]
    }

    #[test]
    fn put_get_replace_stats_and_prune() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/c.sqlite3");
        let db = CacheDb::open(&path, "test", Sync::Normal).unwrap();
        assert_eq!(db.journal(), Journal::Wal);
        assert_eq!(db.get(&key(1)).unwrap(), None);
        db.put_many("id-a", &[(key(1), b"one"), (key(2), b"two")])
            .unwrap();
        db.put("id-b", &key(3), b"three").unwrap();
        db.put("id-a", &key(1), b"uno").unwrap();
        assert_eq!(
            db.get_many(&[key(1), key(2), key(9)]).unwrap(),
            vec![Some(b"uno".to_vec()), Some(b"two".to_vec()), None]
        );
        let ids = db.identities().unwrap();
        assert_eq!(ids.len(), 2);
        assert_eq!((ids[0].identity.as_str(), ids[0].entries), ("id-a", 2));
        assert_eq!(ids[0].value_bytes, 6);
        assert_eq!(db.len().unwrap(), 3);
        // Reopening sees the same entries; another kind is refused with the fix.
        drop(db);
        let db = CacheDb::open(&path, "test", Sync::Full).unwrap();
        assert_eq!(db.len().unwrap(), 3);
        let other = CacheDb::open(&path, "other", Sync::Normal).unwrap_err();
        assert!(other.to_string().contains("kind is `test`"), "{other}");
        assert!(db.prune(&Prune::default()).is_err());
        assert_eq!(
            db.prune(&Prune {
                identity_contains: Some("-b".into()),
                ..Prune::default()
            })
            .unwrap(),
            1
        );
        assert_eq!(
            db.prune(&Prune {
                keys: Some(vec![key(2), key(7)]),
                ..Prune::default()
            })
            .unwrap(),
            1
        );
        assert_eq!(
            db.prune(&Prune {
                created_before: Some(0),
                ..Prune::default()
            })
            .unwrap(),
            0
        );
        let mut seen = Vec::new();
        db.for_each(|e| {
            seen.push((e.identity, e.value));
            true
        })
        .unwrap();
        assert_eq!(seen, vec![("id-a".to_string(), b"uno".to_vec())]);
        db.vacuum().unwrap();
        assert_eq!(db.quick_check().unwrap(), "ok");
        assert_eq!(db.identities().unwrap().len(), 1);
    }

    /// Issue 36 case 16: a truncated database made every run and `cache` command fail with
    /// "database disk image is malformed" and no way forward.
    #[test]
    fn a_damaged_file_is_set_aside_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite3");
        let value = vec![3u8; 1600];
        {
            let db = CacheDb::open(&path, "t", Sync::Normal).unwrap();
            let rows: Vec<([u8; 32], &[u8])> = (0..500u32)
                .map(|i| {
                    let mut k = [0u8; 32];
                    k[..4].copy_from_slice(&i.to_le_bytes());
                    (k, value.as_slice())
                })
                .collect();
            db.put_many("id", &rows).unwrap();
        }
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len / 2).unwrap();
        drop(f);
        assert!(
            damaged(&path).unwrap().contains("truncated"),
            "{:?}",
            damaged(&path)
        );
        let e = CacheDb::open_unrepaired(&path, "t", Sync::Normal).unwrap_err();
        assert!(matches!(e, CacheDbError::Damaged { .. }), "{e}");
        assert!(path.exists(), "inspection changes nothing");
        let db = CacheDb::open(&path, "t", Sync::Normal).unwrap();
        let aside = db.set_aside();
        assert_eq!(aside.len(), 1);
        assert!(aside[0].0.exists() && aside[0].1.contains("truncated"));
        assert_eq!(db.get(&[0; 32]).unwrap(), None);
        db.put("id", &[1; 32], b"v").unwrap();
        assert_eq!(db.get(&[1; 32]).unwrap(), Some(b"v".to_vec()));
        assert_eq!(db.quick_check().unwrap(), "ok");
        drop(db);
        // Not SQLite at all.
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        assert!(damaged(&path).unwrap().contains("not a SQLite database"));
        let db = CacheDb::open(&path, "t", Sync::Normal).unwrap();
        assert_eq!(db.set_aside().len(), 1);
        assert!(db.is_empty().unwrap());
        // Damage inside pages with a sound header: found by SQLite while reading, repaired.
        drop(db);
        {
            let db = CacheDb::open(&path, "t", Sync::Normal).unwrap();
            let rows: Vec<([u8; 32], &[u8])> = (0..500u32)
                .map(|i| {
                    let mut k = [0u8; 32];
                    k[..4].copy_from_slice(&i.to_le_bytes());
                    (k, value.as_slice())
                })
                .collect();
            db.put_many("id", &rows).unwrap();
        }
        let mut bytes = std::fs::read(&path).unwrap();
        for b in bytes[8192..8192 * 3].iter_mut() {
            *b = 0xA5;
        }
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(damaged(&path), None);
        let db = CacheDb::open(&path, "t", Sync::Normal).unwrap();
        let keys: Vec<[u8; 32]> = (0..500u32)
            .map(|i| {
                let mut k = [0u8; 32];
                k[..4].copy_from_slice(&i.to_le_bytes());
                k
            })
            .collect();
        let got = db.get_many(&keys).unwrap();
        assert_eq!(got.len(), 500);
        assert_eq!(
            db.set_aside().len(),
            1,
            "the damage was found and the file set aside"
        );
        db.put("id", &[9; 32], b"w").unwrap();
        assert_eq!(db.get(&[9; 32]).unwrap(), Some(b"w".to_vec()));
    }

    #[test]
    fn import_runs_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = CacheDb::open(dir.path().join("c.sqlite3"), "t", Sync::Normal).unwrap();
        let n = db
            .import_once("imported-files", || {
                Ok(vec![("id".into(), key(5), b"v".to_vec())])
            })
            .unwrap();
        assert_eq!(n, Some(1));
        let again = db
            .import_once("imported-files", || panic!("must not run twice"))
            .unwrap();
        assert_eq!(again, None);
        assert_eq!(db.get(&key(5)).unwrap(), Some(b"v".to_vec()));
        assert!(db
            .meta("imported-files")
            .unwrap()
            .unwrap()
            .starts_with("1 entries at "));
    }

    #[test]
    fn embedding_sized_entries_are_stored_without_overflow_pages() {
        // 2,000 entries of 1,616 bytes (a 384-dimension embedding entry): the file must stay
        // close to the payload (a WITHOUT ROWID table put each in an overflow page: ~2.7x).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("size.sqlite3");
        let db = CacheDb::open(&path, "t", Sync::Normal).unwrap();
        let value = vec![7u8; 1616];
        let rows: Vec<([u8; 32], &[u8])> = (0..2000u32)
            .map(|i| {
                use sha2::{Digest, Sha256};
                let k: [u8; 32] = Sha256::digest(i.to_le_bytes()).into();
                (k, value.as_slice())
            })
            .collect();
        db.put_many("id", &rows).unwrap();
        db.vacuum().unwrap();
        let size = std::fs::metadata(&path).unwrap().len() as f64;
        let payload = 2000.0 * 1616.0;
        assert!(
            size < 1.35 * payload,
            "file {size} bytes for {payload} bytes of values"
        );
    }
}
