//! The content-addressed embedding cache and the [`CachedEmbedder`] wrapper.
//!
//! **Store.** One SQLite database, `ROOT/embeddings.sqlite3` (the `cachedb` crate: WAL on a
//! local file system, the rollback journal on a network one; several processes may read and
//! write it at once). Each entry is filed under the embedder's identity, so
//! `chunkbench cache stats` can say how much each model configuration holds and
//! `chunkbench cache prune` can drop one.
//!
//! **Key.** The sha256 of a domain tag, the identity's length and bytes, and the text's bytes
//! ([`EmbeddingCache::key`]). The identity of a [`crate::BertEmbedder`] carries the model name,
//! the weights' and tokenizer's sha256, pooling, `max_seq_length`, normalisation and
//! lower-casing, so two configurations never share an entry (an early lm-evaluation-harness
//! cache was keyed without the model: docs/reference.md §6).
//!
//! **Entry** (little-endian): magic `CBEMB\x01\0\0` (8 bytes), `dim: u32`, reserved `u32`
//! (0), the 32-byte key, `dim` × `f32`, then the sha256 of everything before it (32 bytes).
//! An entry whose length, magic, dimension, key, checksum or values (non-finite) do not check
//! out is *corrupt*: it is counted, recomputed and replaced.
//!
//! **Files from before the database.** Earlier versions kept one file per entry under
//! `ROOT/v1/<identity hash>/<kk>/<key>.emb` with the identity in `identity.txt`. The first open
//! of a root that has them imports every valid entry into the database (in one transaction;
//! another process opening the root meanwhile waits, then finds the import done), counts the
//! invalid ones, and removes the `v1` directory ([`EmbeddingCache::imported`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cachedb::CacheDb;
use sha2::{Digest, Sha256};

use crate::{EmbedError, EmbedStats, Embedder};

const MAGIC: &[u8; 8] = b"CBEMB\x01\0\0";
const HEADER: usize = 8 + 4 + 4 + 32;
const TRAILER: usize = 32;

/// The database file under a cache root.
pub const DB_FILE: &str = "embeddings.sqlite3";

/// The `kind` recorded in the database.
pub const DB_KIND: &str = "embeddings";

/// Counters of one [`EmbeddingCache`] user (cumulative).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheStats {
    /// Lookups answered from disk.
    pub hits: u64,
    /// Lookups that had to be computed (includes `corrupt`).
    pub misses: u64,
    /// Entries found corrupt or truncated and recomputed.
    pub corrupt: u64,
    /// Entries that could not be written.
    pub write_errors: u64,
}

/// Outcome of [`EmbeddingCache::get`].
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// A valid entry: the stored vector.
    Hit(Vec<f32>),
    /// No entry.
    Miss,
    /// An entry exists but fails validation, or the database could not be read (the reason
    /// is given).
    Corrupt(String),
}

/// What the one-time import of a file-per-entry cache found ([`EmbeddingCache::imported`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
    /// Valid entries copied into the database.
    pub entries: u64,
    /// Entry files that failed validation and were dropped.
    pub invalid: u64,
}

/// A content-addressed store of embedding vectors (see the module docs for the layout and the
/// guarantees). Cheap to clone (the database handle is shared); safe to share between threads
/// and processes.
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    root: PathBuf,
    db: Arc<CacheDb>,
    imported: Option<Imported>,
}

impl EmbeddingCache {
    /// Opens (creating if needed) a cache rooted at `root`; imports a file-per-entry cache
    /// found there (module docs).
    ///
    /// # Errors
    /// [`EmbedError::Cache`] naming the directory or database file if it cannot be created or
    /// opened, or holds another kind of cache.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let root = root.as_ref().to_path_buf();
        std::fs::create_dir_all(&root).map_err(|e| EmbedError::Cache {
            path: root.clone(),
            message: format!("cannot create: {e}"),
        })?;
        let path = root.join(DB_FILE);
        let db = CacheDb::open(&path, DB_KIND, cachedb::Sync::Normal).map_err(|e| {
            EmbedError::Cache {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
        let mut cache = Self {
            root,
            db: Arc::new(db),
            imported: None,
        };
        cache.import_files()?;
        Ok(cache)
    }

    /// Imports `ROOT/v1` once (module docs).
    fn import_files(&mut self) -> Result<(), EmbedError> {
        let old = self.root.join("v1");
        if !old.is_dir() {
            return Ok(());
        }
        let mut invalid = 0u64;
        let n = self
            .db
            .import_once("imported-v1-files", || {
                let mut rows = Vec::new();
                for ident_dir in read_dir_sorted(&old)? {
                    let Ok(identity) = std::fs::read_to_string(ident_dir.join("identity.txt"))
                    else {
                        continue;
                    };
                    for shard in read_dir_sorted(&ident_dir)?
                        .into_iter()
                        .filter(|p| p.is_dir())
                    {
                        for file in read_dir_sorted(&shard)? {
                            let Some(stem) = file
                                .file_name()
                                .and_then(|n| n.to_str())
                                .and_then(|n| n.strip_suffix(".emb"))
                            else {
                                continue;
                            };
                            let key: Option<[u8; 32]> =
                                hex::decode(stem).ok().and_then(|k| k.try_into().ok());
                            let bytes = std::fs::read(&file).unwrap_or_default();
                            let dim = bytes.len().saturating_sub(HEADER + TRAILER) / 4;
                            match key {
                                Some(k) if decode(&bytes, &k, dim).is_ok() => {
                                    rows.push((identity.clone(), k, bytes))
                                }
                                _ => invalid += 1,
                            }
                        }
                    }
                }
                Ok(rows)
            })
            .map_err(|e| EmbedError::Cache {
                path: old.clone(),
                message: format!("importing the file-per-entry cache: {e}"),
            })?;
        if let Some(entries) = n {
            self.imported = Some(Imported { entries, invalid });
        }
        // Committed (by this process or another): the files are no longer read.
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    }

    /// What this open imported from a file-per-entry cache (`None`: nothing to import, or
    /// another process did it).
    pub fn imported(&self) -> Option<Imported> {
        self.imported
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The database (for statistics, pruning and tests).
    pub fn db(&self) -> &CacheDb {
        &self.db
    }

    /// The 32-byte key of `(identity, text)`.
    pub fn key(identity: &str, text: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"chunkbench-embedding-cache-v1\0");
        h.update((identity.len() as u64).to_le_bytes());
        h.update(identity.as_bytes());
        h.update(text.as_bytes());
        h.finalize().into()
    }

    /// Looks up `(identity, text)`, expecting a vector of `dim` values.
    pub fn get(&self, identity: &str, text: &str, dim: usize) -> Lookup {
        self.get_many(identity, &[text], dim)
            .pop()
            .unwrap_or(Lookup::Miss)
    }

    /// Looks up every text of `texts` under `identity` in one read transaction, decoding
    /// each value as it is read (the raw bytes are never all held at once).
    pub fn get_many(&self, identity: &str, texts: &[&str], dim: usize) -> Vec<Lookup> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| Self::key(identity, t)).collect();
        let mut out = Vec::with_capacity(texts.len());
        let read = self.db.get_each(&keys, |i, v| {
            out.push(match v {
                None => Lookup::Miss,
                Some(bytes) => match decode(bytes, &keys[i], dim) {
                    Ok(v) => Lookup::Hit(v),
                    Err(reason) => Lookup::Corrupt(reason),
                },
            })
        });
        match read {
            Ok(()) => out,
            Err(e) => vec![Lookup::Corrupt(e.to_string()); texts.len()],
        }
    }

    /// Stores `vector` for `(identity, text)`.
    ///
    /// # Errors
    /// [`EmbedError::Cache`] naming the database if it cannot be written.
    pub fn put(&self, identity: &str, text: &str, vector: &[f32]) -> Result<(), EmbedError> {
        self.put_many(identity, &[(text, vector)])
    }

    /// Stores several `(text, vector)` pairs for `identity` in one write transaction.
    ///
    /// # Errors
    /// [`EmbedError::Cache`] naming the database if it cannot be written.
    pub fn put_many(&self, identity: &str, entries: &[(&str, &[f32])]) -> Result<(), EmbedError> {
        let encoded: Vec<([u8; 32], Vec<u8>)> = entries
            .iter()
            .map(|(t, v)| {
                let k = Self::key(identity, t);
                (k, encode(&k, v))
            })
            .collect();
        let rows: Vec<([u8; 32], &[u8])> =
            encoded.iter().map(|(k, b)| (*k, b.as_slice())).collect();
        self.db
            .put_many(identity, &rows)
            .map_err(|e| EmbedError::Cache {
                path: self.db.path().to_path_buf(),
                message: format!("cannot write: {e}"),
            })
    }

    /// Checks one stored value against its key (`Err`: why it is corrupt); the dimension is
    /// read from the entry. For `chunkbench cache stats --check`.
    pub fn verify(key: &[u8; 32], value: &[u8]) -> Result<usize, String> {
        let dim = value.len().saturating_sub(HEADER + TRAILER) / 4;
        decode(value, key, dim).map(|v| v.len())
    }
}

/// The entries of `dir`, sorted by name.
fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

fn encode(key: &[u8; 32], v: &[f32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER + 4 * v.len() + TRAILER);
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&(v.len() as u32).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(key);
    for x in v {
        b.extend_from_slice(&x.to_le_bytes());
    }
    let sum = Sha256::digest(&b);
    b.extend_from_slice(&sum);
    b
}

fn decode(b: &[u8], key: &[u8; 32], dim: usize) -> Result<Vec<f32>, String> {
    let want = HEADER + 4 * dim + TRAILER;
    if b.len() != want {
        return Err(format!("length {} bytes, expected {want}", b.len()));
    }
    if &b[..8] != MAGIC {
        return Err("bad magic".into());
    }
    let stored_dim = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
    if stored_dim != dim {
        return Err(format!("dimension {stored_dim}, expected {dim}"));
    }
    if &b[16..48] != key {
        return Err("key mismatch".into());
    }
    let body = &b[..want - TRAILER];
    if Sha256::digest(body).as_slice() != &b[want - TRAILER..] {
        return Err("checksum mismatch".into());
    }
    let v: Vec<f32> = body[HEADER..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if v.iter().any(|x| !x.is_finite()) {
        return Err("non-finite value".into());
    }
    Ok(v)
}

/// Wraps an [`Embedder`] with an [`EmbeddingCache`]: vectors found on disk are returned as
/// they are; the others are computed by the inner embedder in one call (duplicates computed
/// once) and stored.
///
/// Its [`Embedder::identity`] is the inner one (the cache does not change the vectors), and
/// [`Embedder::stats`] adds the cache counters to the inner embedder's: a second run over the
/// same corpus shows `cache_hits` = number of lookups and `cache_misses` = 0.
#[derive(Debug)]
pub struct CachedEmbedder<E> {
    inner: E,
    cache: EmbeddingCache,
    identity: String,
    hits: AtomicU64,
    misses: AtomicU64,
    corrupt: AtomicU64,
    write_errors: AtomicU64,
}

impl<E: Embedder> CachedEmbedder<E> {
    /// Wraps `inner` with a cache rooted at `dir` (created if needed).
    ///
    /// # Errors
    /// [`EmbedError::Cache`] if the directory cannot be created.
    pub fn new(inner: E, dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Ok(Self::with_cache(inner, EmbeddingCache::open(dir)?))
    }

    /// Wraps `inner` with an already opened cache.
    pub fn with_cache(inner: E, cache: EmbeddingCache) -> Self {
        let identity = inner.identity();
        Self {
            inner,
            cache,
            identity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
        }
    }

    /// The wrapped embedder.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The cache.
    pub fn cache(&self) -> &EmbeddingCache {
        &self.cache
    }

    /// This wrapper's cache counters.
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
        }
    }
}

impl<E: Embedder> Embedder for CachedEmbedder<E> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn tokenizer(&self) -> Option<tokenizers::Tokenizer> {
        self.inner.tokenizer()
    }

    fn max_input_tokens(&self) -> Option<usize> {
        self.inner.max_input_tokens()
    }

    fn max_positions(&self) -> Option<usize> {
        self.inner.max_positions()
    }

    /// Not cached: token states are per document and window, not per sentence.
    fn token_states(
        &self,
        text: &str,
        window: usize,
        overlap: usize,
    ) -> Option<Result<crate::late::TokenStates, EmbedError>> {
        self.inner.token_states(text, window, overlap)
    }

    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let dim = self.inner.dim();
        let looked: Vec<Lookup> = self.cache.get_many(&self.identity, texts, dim);
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        // Unique texts to compute, and for each input the index of its text in that list.
        let mut todo: Vec<&str> = Vec::new();
        let mut todo_index = std::collections::HashMap::new();
        let mut pending: Vec<(usize, usize)> = Vec::new();
        let (mut hits, mut misses, mut corrupt) = (0u64, 0u64, 0u64);
        for (i, (text, l)) in texts.iter().zip(looked).enumerate() {
            match l {
                Lookup::Hit(v) => {
                    hits += 1;
                    out.push(Some(v));
                }
                other => {
                    if matches!(other, Lookup::Corrupt(_)) {
                        corrupt += 1;
                    }
                    misses += 1;
                    out.push(None);
                    let j = *todo_index.entry(*text).or_insert_with(|| {
                        todo.push(*text);
                        todo.len() - 1
                    });
                    pending.push((i, j));
                }
            }
        }
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.misses.fetch_add(misses, Ordering::Relaxed);
        self.corrupt.fetch_add(corrupt, Ordering::Relaxed);
        if !todo.is_empty() {
            let computed = self.inner.embed(&todo)?;
            if computed.len() != todo.len() || computed.iter().any(|v| v.len() != dim) {
                return Err(EmbedError::Backend {
                    backend: self.identity.clone(),
                    message: format!(
                        "inner embedder returned {} vectors for {} texts or a wrong dimension",
                        computed.len(),
                        todo.len()
                    ),
                });
            }
            let rows: Vec<(&str, &[f32])> = todo
                .iter()
                .zip(&computed)
                .map(|(t, v)| (*t, v.as_slice()))
                .collect();
            if self.cache.put_many(&self.identity, &rows).is_err() {
                self.write_errors
                    .fetch_add(rows.len() as u64, Ordering::Relaxed);
            }
            for (i, j) in pending {
                out[i] = Some(computed[j].clone());
            }
        }
        Ok(out.into_iter().map(|v| v.unwrap_or_default()).collect())
    }

    fn stats(&self) -> EmbedStats {
        let c = self.cache_stats();
        EmbedStats {
            cache_hits: c.hits,
            cache_misses: c.misses,
            cache_corrupt: c.corrupt,
            cache_write_errors: c.write_errors,
            ..self.inner.stats()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_validation() {
        let key = EmbeddingCache::key("id", "text");
        let v = vec![0.5f32, -0.25, 1.0];
        let b = encode(&key, &v);
        assert_eq!(decode(&b, &key, 3).unwrap(), v);
        assert!(decode(&b, &key, 4).unwrap_err().contains("length"));
        assert!(decode(&b[..b.len() - 1], &key, 3).is_err());
        let mut flipped = b.clone();
        flipped[HEADER + 2] ^= 1;
        assert_eq!(decode(&flipped, &key, 3).unwrap_err(), "checksum mismatch");
        let other = EmbeddingCache::key("id2", "text");
        assert_eq!(decode(&b, &other, 3).unwrap_err(), "key mismatch");
        assert_ne!(
            EmbeddingCache::key("ab", "c"),
            EmbeddingCache::key("a", "bc")
        );
    }
}
