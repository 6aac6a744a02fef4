//! An on-disk response cache for readers.
//!
//! **Key.** `sha256("chunkbench-reader-cache/1\0" + identity + "\0" + material)` where
//! `identity` is [`Reader::identity`] (model file sha256 or endpoint + model name, template,
//! parameters — never secrets) and `material` is [`Reader::cache_material`] (the rendered
//! prompt for the LLM readers, the canonical JSON of the input otherwise). Keying by the model
//! identity, not only the prompt, avoids the mistake lm-evaluation-harness's cache once made.
//!
//! **Store.** One SQLite database, `DIR/responses.sqlite3` (the `cachedb` crate: WAL on a local
//! file system, the rollback journal on a network one, `synchronous=FULL`; several processes —
//! the shards of a sweep — may read and write it at once). Each entry is one JSON document,
//! `{format, key, identity, output, score_bits, output_sha256}` (`score_bits` keeps the scores
//! bit-exact; the decimal `output.scores` are for people), filed under the reader identity.
//!
//! **Files from before the database.** Earlier versions kept one file per entry,
//! `DIR/ab/abcdef….json`. The first read-write open of a directory that has them imports every
//! valid one in one transaction (another process opening it meanwhile waits, then finds the
//! import done), counts the invalid ones ([`ResponseCache::imported`]) and removes the files.
//!
//! **Integrity.** An entry whose JSON does not parse, whose key or identity differ from the
//! request, or whose `output_sha256` does not match its output is *corrupt*: it is counted
//! ([`CacheStats::corrupt`]), treated as a miss, and (in read-write mode) overwritten.
//!
//! **Modes** ([`CacheMode`]): `never` (no reads, no writes), `read-write`, `read-only` (hits
//! are served; misses are computed by the reader and not stored).

use crate::{Reader, ReaderError, ReaderInput, ReaderOutput};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const FORMAT: &str = "chunkbench-reader-cache/1";

/// Cache mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// Neither read nor write.
    Never,
    /// Read hits, write misses.
    #[default]
    ReadWrite,
    /// Read hits; misses are computed but not written.
    ReadOnly,
}

impl std::str::FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "never" => Ok(CacheMode::Never),
            "read-write" => Ok(CacheMode::ReadWrite),
            "read-only" => Ok(CacheMode::ReadOnly),
            other => Err(format!(
                "unknown cache mode `{other}` (never | read-write | read-only)"
            )),
        }
    }
}

/// Counters of one cache (since creation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    /// Entries served.
    pub hits: u64,
    /// Lookups with no usable entry (includes corrupt ones).
    pub misses: u64,
    /// Entries written.
    pub writes: u64,
    /// Entries found corrupt (unparsable, wrong key/identity, checksum mismatch).
    pub corrupt: u64,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    format: String,
    key: String,
    identity: String,
    output: ReaderOutput,
    /// `f64::to_bits` of each score: JSON decimal parsing is not guaranteed to round-trip
    /// floats bit-exactly (serde_json without `float_roundtrip`), the bits are.
    score_bits: Vec<u64>,
    output_sha256: String,
}

impl Entry {
    /// The output with its exact scores restored from `score_bits`, if consistent.
    fn restore(mut self) -> Option<ReaderOutput> {
        if self.score_bits.len() != self.output.scores.len() {
            return None;
        }
        for (s, b) in self.output.scores.iter_mut().zip(&self.score_bits) {
            let exact = f64::from_bits(*b);
            // The decimal must be the same number up to parsing error.
            if !exact.is_finite() || (exact - *s).abs() > 1e-9 * exact.abs().max(1.0) {
                return None;
            }
            *s = exact;
        }
        Some(self.output)
    }
}

fn output_sha(o: &ReaderOutput) -> String {
    crate::sha256_hex(serde_json::to_string(o).unwrap_or_default().as_bytes())
}

/// The on-disk cache (module docs).
#[derive(Debug)]
pub struct ResponseCache {
    dir: PathBuf,
    mode: CacheMode,
    /// `None` in mode `never`, and in mode `read-only` when no database exists yet.
    db: Option<cachedb::CacheDb>,
    imported: Option<(u64, u64)>,
    hits: AtomicU64,
    misses: AtomicU64,
    writes: AtomicU64,
    corrupt: AtomicU64,
}

/// The database file in a response-cache directory.
pub const DB_FILE: &str = "responses.sqlite3";

/// The `kind` recorded in the database.
pub const DB_KIND: &str = "responses";

/// The 32 database key bytes of a cache key: the 64 hex digits [`ResponseCache::key`] makes,
/// decoded; any other string is hashed (sha256) so that every key maps to one entry.
fn key_bytes(key: &str) -> [u8; 32] {
    match hex::decode(key)
        .ok()
        .and_then(|k| <[u8; 32]>::try_from(k).ok())
    {
        Some(k) => k,
        None => crate::sha256_bytes(key.as_bytes()),
    }
}

/// Checks a stored entry document: `Ok(identity)` when it parses and its checksum holds.
/// For `chunkbench cache stats --check`.
pub fn verify_entry(key: &[u8; 32], value: &[u8]) -> Result<String, String> {
    let e: Entry = serde_json::from_slice(value).map_err(|e| format!("unparsable: {e}"))?;
    if e.format != FORMAT {
        return Err(format!("format `{}`, expected `{FORMAT}`", e.format));
    }
    if key_bytes(&e.key) != *key {
        return Err("key mismatch".into());
    }
    let identity = e.identity.clone();
    let sha = e.output_sha256.clone();
    match e.restore() {
        Some(o) if output_sha(&o) == sha => Ok(identity),
        _ => Err("output checksum mismatch".into()),
    }
}

impl ResponseCache {
    /// Opens the cache directory `dir` in `mode`: read-write creates the directory and its
    /// database (importing a file-per-entry cache found there, module docs); read-only opens
    /// the database if there is one; never opens nothing.
    ///
    /// # Errors
    /// [`ReaderError::Cache`] naming the directory or database when it cannot be created or
    /// opened, or holds another kind of cache.
    pub fn new(dir: impl Into<PathBuf>, mode: CacheMode) -> Result<Self, ReaderError> {
        let dir = dir.into();
        let db_path = dir.join(DB_FILE);
        let open = |sync| {
            cachedb::CacheDb::open(&db_path, DB_KIND, sync)
                .map_err(|e| ReaderError::Cache(e.to_string()))
        };
        let db = match mode {
            CacheMode::Never => None,
            CacheMode::ReadOnly if !db_path.exists() => None,
            CacheMode::ReadOnly => Some(open(cachedb::Sync::Full)?),
            CacheMode::ReadWrite => {
                std::fs::create_dir_all(&dir).map_err(|e| {
                    ReaderError::Cache(format!("cannot create {}: {e}", dir.display()))
                })?;
                Some(open(cachedb::Sync::Full)?)
            }
        };
        let mut cache = ResponseCache {
            dir,
            mode,
            db,
            imported: None,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
        };
        if mode == CacheMode::ReadWrite {
            cache.import_files()?;
        }
        Ok(cache)
    }

    /// The entry files of a file-per-entry cache: `DIR/<2 hex>/<64 hex>.json`.
    fn old_entry_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let Ok(shards) = std::fs::read_dir(&self.dir) else {
            return files;
        };
        for shard in shards.flatten().map(|e| e.path()) {
            let name = shard.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.len() != 2 || !shard.is_dir() || !name.chars().all(|c| c.is_ascii_hexdigit()) {
                continue;
            }
            if let Ok(entries) = std::fs::read_dir(&shard) {
                files.extend(
                    entries
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "json")),
                );
            }
        }
        files.sort();
        files
    }

    fn import_files(&mut self) -> Result<(), ReaderError> {
        let files = self.old_entry_files();
        let Some(db) = &self.db else { return Ok(()) };
        if files.is_empty() {
            return Ok(());
        }
        let mut invalid = 0u64;
        let n = db
            .import_once("imported-json-files", || {
                let mut rows = Vec::new();
                for f in &files {
                    let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                    let key = key_bytes(stem);
                    let bytes = std::fs::read(f).unwrap_or_default();
                    match verify_entry(&key, &bytes) {
                        Ok(identity) => rows.push((identity, key, bytes)),
                        Err(_) => invalid += 1,
                    }
                }
                Ok(rows)
            })
            .map_err(|e| ReaderError::Cache(format!("importing {}: {e}", self.dir.display())))?;
        if let Some(n) = n {
            self.imported = Some((n, invalid));
        }
        // Committed (here or by another process): the files are no longer read.
        for f in &files {
            let _ = std::fs::remove_file(f);
            if let Some(parent) = f.parent() {
                let _ = std::fs::remove_dir(parent); // only when empty
            }
        }
        Ok(())
    }

    /// What this open imported from a file-per-entry cache: `(entries, invalid files)`
    /// (`None`: nothing to import, or another process did it).
    pub fn imported(&self) -> Option<(u64, u64)> {
        self.imported
    }

    /// The database (`None` in mode `never`, or read-only without a database).
    pub fn db(&self) -> Option<&cachedb::CacheDb> {
        self.db.as_ref()
    }

    /// The mode.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cache key (64 hex digits) of `identity` and `material`.
    pub fn key(identity: &str, material: &str) -> String {
        let mut bytes = Vec::with_capacity(FORMAT.len() + identity.len() + material.len() + 2);
        bytes.extend_from_slice(FORMAT.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(identity.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(material.as_bytes());
        crate::sha256_hex(&bytes)
    }

    /// Counters so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
        }
    }

    /// Looks up `key` for `identity` (always `None` in mode `never`); counts a hit, a miss or
    /// a corrupt entry.
    pub fn get(&self, key: &str, identity: &str) -> Option<ReaderOutput> {
        if self.mode == CacheMode::Never {
            return None;
        }
        let bytes = match self.db.as_ref().map(|db| db.get(&key_bytes(key))) {
            Some(Ok(Some(b))) => b,
            Some(Ok(None)) | None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            Some(Err(_)) => {
                // An unreadable database counts as corrupt, like an unreadable entry.
                self.corrupt.fetch_add(1, Ordering::Relaxed);
                self.misses.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        let ok = serde_json::from_slice::<Entry>(&bytes)
            .ok()
            .filter(|e| e.format == FORMAT && e.key == key && e.identity == identity)
            .and_then(|e| {
                let sha = e.output_sha256.clone();
                e.restore().filter(|o| output_sha(o) == sha)
            });
        match ok {
            Some(out) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(out)
            }
            None => {
                self.corrupt.fetch_add(1, Ordering::Relaxed);
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Stores `output` under `key` (only in read-write mode), in one transaction.
    ///
    /// # Errors
    /// [`ReaderError::Cache`] for I/O failures, or an output with non-finite scores (which
    /// JSON cannot carry).
    pub fn put(&self, key: &str, identity: &str, output: &ReaderOutput) -> Result<(), ReaderError> {
        if self.mode != CacheMode::ReadWrite {
            return Ok(());
        }
        if output.scores.iter().any(|s| !s.is_finite()) {
            return Err(ReaderError::Cache(
                "refusing to cache an output with non-finite scores".into(),
            ));
        }
        let entry = Entry {
            format: FORMAT.into(),
            key: key.into(),
            identity: identity.into(),
            output: output.clone(),
            score_bits: output.scores.iter().map(|s| s.to_bits()).collect(),
            output_sha256: output_sha(output),
        };
        let json = serde_json::to_vec(&entry).map_err(|e| ReaderError::Cache(e.to_string()))?;
        if let Some(db) = &self.db {
            db.put(identity, &key_bytes(key), &json)
                .map_err(|e| ReaderError::Cache(e.to_string()))?;
        }
        self.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A reader behind a [`ResponseCache`]; its identity is the inner reader's.
#[derive(Debug)]
pub struct CachedReader<R> {
    inner: R,
    cache: ResponseCache,
}

impl<R: Reader> CachedReader<R> {
    /// Wraps `inner` with `cache`.
    pub fn new(inner: R, cache: ResponseCache) -> Self {
        CachedReader { inner, cache }
    }

    /// The cache (for its [`ResponseCache::stats`]).
    pub fn cache(&self) -> &ResponseCache {
        &self.cache
    }

    /// The wrapped reader.
    pub fn inner(&self) -> &R {
        &self.inner
    }
}

impl<R: Reader> Reader for CachedReader<R> {
    fn identity(&self) -> String {
        self.inner.identity()
    }

    fn read(&self, input: &ReaderInput<'_>) -> Result<ReaderOutput, ReaderError> {
        if self.cache.mode() == CacheMode::Never {
            return self.inner.read(input);
        }
        let identity = self.inner.identity();
        let key = ResponseCache::key(&identity, &self.inner.cache_material(input)?);
        if let Some(hit) = self.cache.get(&key, &identity) {
            return Ok(hit);
        }
        let out = self.inner.read(input)?;
        self.cache.put(&key, &identity, &out)?;
        Ok(out)
    }

    fn cache_material(&self, input: &ReaderInput<'_>) -> Result<String, ReaderError> {
        self.inner.cache_material(input)
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_tokens(text)
    }

    fn tokenizer_name(&self) -> Option<String> {
        self.inner.tokenizer_name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LexicalReader;
    use std::sync::atomic::AtomicUsize;

    /// Counts how often the inner reader really runs.
    struct Counting {
        inner: LexicalReader,
        calls: AtomicUsize,
        tag: &'static str,
    }

    impl Reader for Counting {
        fn identity(&self) -> String {
            format!("counting-{}", self.tag)
        }
        fn read(&self, input: &ReaderInput<'_>) -> Result<ReaderOutput, ReaderError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.read(input)
        }
    }

    fn counting(tag: &'static str) -> Counting {
        Counting {
            inner: LexicalReader::new(["Valve V2 was replaced in March.", "Pumps hum."]),
            calls: AtomicUsize::new(0),
            tag,
        }
    }

    fn opts() -> Vec<String> {
        ["V1", "V2", "V3", "V4"].map(String::from).to_vec()
    }

    #[test]
    fn read_write_then_hit_then_read_only_and_never() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts();
        let input = ReaderInput {
            question: "Which valve was replaced?",
            options: &o,
            passages: &["Valve V2 was replaced in March."],
        };
        let r = CachedReader::new(
            counting("a"),
            ResponseCache::new(dir.path(), CacheMode::ReadWrite).unwrap(),
        );
        let first = r.read(&input).unwrap();
        let second = r.read(&input).unwrap();
        assert_eq!(first, second);
        assert_eq!(r.inner().calls.load(Ordering::SeqCst), 1);
        assert_eq!(
            r.cache().stats(),
            CacheStats {
                hits: 1,
                misses: 1,
                writes: 1,
                corrupt: 0
            }
        );

        // Read-only: serves the hit, computes a miss without writing it.
        let ro = CachedReader::new(
            counting("a"),
            ResponseCache::new(dir.path(), CacheMode::ReadOnly).unwrap(),
        );
        assert_eq!(ro.read(&input).unwrap(), first);
        let other = ReaderInput {
            passages: &["Pumps hum."],
            ..input
        };
        ro.read(&other).unwrap();
        ro.read(&other).unwrap();
        assert_eq!(ro.inner().calls.load(Ordering::SeqCst), 2);
        assert_eq!(ro.cache().stats().writes, 0);

        // Never: always computes.
        let nv = CachedReader::new(
            counting("a"),
            ResponseCache::new(dir.path(), CacheMode::Never).unwrap(),
        );
        nv.read(&input).unwrap();
        assert_eq!(nv.inner().calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn keyed_by_identity() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts();
        let input = ReaderInput::closed_book("Which valve was replaced?", &o);
        let a = CachedReader::new(
            counting("a"),
            ResponseCache::new(dir.path(), CacheMode::ReadWrite).unwrap(),
        );
        a.read(&input).unwrap();
        let b = CachedReader::new(
            counting("b"),
            ResponseCache::new(dir.path(), CacheMode::ReadWrite).unwrap(),
        );
        b.read(&input).unwrap();
        assert_eq!(
            b.inner().calls.load(Ordering::SeqCst),
            1,
            "another model must miss"
        );
        assert_ne!(
            ResponseCache::key("counting-a", "x"),
            ResponseCache::key("counting-b", "x")
        );
    }

    #[test]
    fn corrupt_entries_are_detected_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts();
        let input = ReaderInput::closed_book("Which valve was replaced?", &o);
        let r = CachedReader::new(
            counting("a"),
            ResponseCache::new(dir.path(), CacheMode::ReadWrite).unwrap(),
        );
        let good = r.read(&input).unwrap();
        let key = ResponseCache::key("counting-a", &input.canonical_json());
        let db = r.cache().db().unwrap();
        let kb = key_bytes(&key);
        // 1. Truncated JSON.
        let bytes = db.get(&kb).unwrap().unwrap();
        db.put("counting-a", &kb, &bytes[..bytes.len() / 2])
            .unwrap();
        assert_eq!(r.read(&input).unwrap(), good);
        assert_eq!(r.cache().stats().corrupt, 1);
        // 2. Valid JSON whose output was edited (checksum mismatch).
        let text = String::from_utf8(db.get(&kb).unwrap().unwrap()).unwrap();
        let edited = text.replacen("\"choice\":0", "\"choice\":1", 1);
        assert_ne!(text, edited);
        assert!(verify_entry(&kb, edited.as_bytes()).is_err());
        db.put("counting-a", &kb, edited.as_bytes()).unwrap();
        assert_eq!(r.read(&input).unwrap(), good);
        assert_eq!(r.cache().stats().corrupt, 2);
        // Rewritten: now a clean hit.
        assert_eq!(r.read(&input).unwrap(), good);
        assert_eq!(r.cache().stats().corrupt, 2);
        assert_eq!(r.inner().calls.load(Ordering::SeqCst), 3);
        assert_eq!(
            verify_entry(&kb, &db.get(&kb).unwrap().unwrap()).unwrap(),
            "counting-a"
        );
    }

    #[test]
    fn a_file_per_entry_cache_is_imported_once() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts();
        let input = ReaderInput::closed_book("Which valve was replaced?", &o);
        // Make a valid entry document, then lay it out as the old writer did.
        let scratch = tempfile::tempdir().unwrap();
        let w = CachedReader::new(
            counting("a"),
            ResponseCache::new(scratch.path(), CacheMode::ReadWrite).unwrap(),
        );
        let good = w.read(&input).unwrap();
        let key = ResponseCache::key("counting-a", &input.canonical_json());
        let doc = w
            .cache()
            .db()
            .unwrap()
            .get(&key_bytes(&key))
            .unwrap()
            .unwrap();
        std::fs::create_dir_all(dir.path().join(&key[..2])).unwrap();
        std::fs::write(dir.path().join(&key[..2]).join(format!("{key}.json")), &doc).unwrap();
        std::fs::create_dir_all(dir.path().join("ff")).unwrap();
        std::fs::write(
            dir.path()
                .join("ff")
                .join(format!("{}.json", "f".repeat(64))),
            b"{",
        )
        .unwrap();
        // Read-only does not import (it writes nothing).
        let ro = ResponseCache::new(dir.path(), CacheMode::ReadOnly).unwrap();
        assert!(ro.db().is_none() && ro.imported().is_none());
        let r = CachedReader::new(
            counting("a"),
            ResponseCache::new(dir.path(), CacheMode::ReadWrite).unwrap(),
        );
        assert_eq!(r.cache().imported(), Some((1, 1)));
        assert_eq!(r.read(&input).unwrap(), good);
        assert_eq!(
            r.inner().calls.load(Ordering::SeqCst),
            0,
            "served from the import"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with(DB_FILE))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let again = ResponseCache::new(dir.path(), CacheMode::ReadWrite).unwrap();
        assert_eq!(again.imported(), None);
    }

    /// Scores come back bit-identical (decimal JSON alone does not guarantee that).
    #[test]
    fn scores_round_trip_bit_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::new(dir.path(), CacheMode::ReadWrite).unwrap();
        let scores: Vec<f64> = (1..200)
            .map(|i| -(i as f64).ln() / 7.3 - 1e-17 * i as f64)
            .collect();
        let out = ReaderOutput {
            choice: 0,
            scores,
            tied: 1,
            raw: "x".into(),
            invalid: false,
            context: crate::ContextUse::default(),
            tie_break: Vec::new(),
        };
        cache.put("abcd", "id", &out).unwrap();
        assert_eq!(cache.get("abcd", "id").unwrap(), out);
        assert!(cache.get("abcd", "other-identity").is_none());
        assert_eq!(cache.stats().corrupt, 1);
    }

    #[test]
    fn mode_parses() {
        assert_eq!(
            "read-only".parse::<CacheMode>().unwrap(),
            CacheMode::ReadOnly
        );
        assert!("sometimes".parse::<CacheMode>().is_err());
    }
}
