//! A content-addressed on-disk embedding cache and the [`CachedEmbedder`] wrapper.
//!
//! Layout under the cache root:
//! ```text
//! v1/<first 16 hex of sha256(identity)>/identity.txt      the identity, for humans
//! v1/<first 16 hex of sha256(identity)>/<kk>/<key>.emb     one entry per (identity, text)
//! ```
//! `key` is the hex sha256 of a domain tag, the identity's length and bytes, and the text's
//! bytes; `kk` its first two hex digits (256 shards). The identity of a [`crate::BertEmbedder`]
//! carries the model name, the weights' and tokenizer's sha256, pooling, `max_seq_length`,
//! normalisation and lower-casing, so two configurations never share an entry (an early
//! lm-evaluation-harness cache was keyed without the model: docs/reference.md §6).
//!
//! Entry format (little-endian): magic `CBEMB\x01\0\0` (8 bytes), `dim: u32`, reserved `u32`
//! (0), the 32-byte key, `dim` × `f32`, then the sha256 of everything before it (32 bytes).
//! A file whose length, magic, dimension, key, checksum or values (non-finite) do not check
//! out is *corrupt*: it is counted, recomputed and replaced.
//!
//! Writes go to a temporary file in the entry's shard directory, then are renamed over the
//! entry (atomic on POSIX file systems), so a reader sees either no entry or a complete one;
//! two processes that compute the same entry at once both write identical bytes. Entries are
//! not fsynced: after a crash an entry may be empty or partial, which the checksum catches.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::{EmbedError, EmbedStats, Embedder};

const MAGIC: &[u8; 8] = b"CBEMB\x01\0\0";
const HEADER: usize = 8 + 4 + 4 + 32;
const TRAILER: usize = 32;

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
    /// An entry exists but fails validation (the reason is given).
    Corrupt(String),
}

/// A content-addressed directory of embedding vectors (see the module docs for the layout and
/// the guarantees). Cheap to clone the path; safe to share between threads and processes.
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    root: PathBuf,
}

impl EmbeddingCache {
    /// Opens (creating if needed) a cache rooted at `root`.
    ///
    /// # Errors
    /// [`EmbedError::Cache`] if the directory cannot be created.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let root = root.as_ref().to_path_buf();
        std::fs::create_dir_all(root.join("v1")).map_err(|e| EmbedError::Cache {
            path: root.clone(),
            message: format!("cannot create: {e}"),
        })?;
        Ok(Self { root })
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
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

    fn identity_dir(&self, identity: &str) -> PathBuf {
        let ih = fsio::sha256_hex(identity.as_bytes());
        self.root.join("v1").join(&ih[..16])
    }

    /// Path of the entry for `(identity, text)` (which may not exist).
    pub fn entry_path(&self, identity: &str, text: &str) -> PathBuf {
        let k = hex::encode(Self::key(identity, text));
        self.identity_dir(identity)
            .join(&k[..2])
            .join(format!("{k}.emb"))
    }

    /// Looks up `(identity, text)`, expecting a vector of `dim` values.
    pub fn get(&self, identity: &str, text: &str, dim: usize) -> Lookup {
        let path = self.entry_path(identity, text);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Corrupt(format!("unreadable: {e}")),
        };
        match decode(&bytes, &Self::key(identity, text), dim) {
            Ok(v) => Lookup::Hit(v),
            Err(reason) => Lookup::Corrupt(reason),
        }
    }

    /// Stores `vector` for `(identity, text)` atomically (temporary file + rename).
    ///
    /// # Errors
    /// [`EmbedError::Cache`] naming the entry if it cannot be written.
    pub fn put(&self, identity: &str, text: &str, vector: &[f32]) -> Result<(), EmbedError> {
        let path = self.entry_path(identity, text);
        let shard = path.parent().unwrap_or(&self.root).to_path_buf();
        let err = |message: String| EmbedError::Cache {
            path: path.clone(),
            message,
        };
        std::fs::create_dir_all(&shard)
            .map_err(|e| err(format!("cannot create shard directory: {e}")))?;
        let id_file = self.identity_dir(identity).join("identity.txt");
        if !id_file.exists() {
            // Informational only; a lost race just writes the same text twice.
            let _ = write_atomic(&id_file, identity.as_bytes());
        }
        let bytes = encode(&Self::key(identity, text), vector);
        write_atomic(&path, &bytes).map_err(|e| err(format!("cannot write: {e}")))
    }
}

/// Cache entries are checksummed and recomputed when corrupt: renamed into place, no fsync.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    fsio::write_atomic(path, bytes, fsio::Durability::Renamed)
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

    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let dim = self.inner.dim();
        let looked: Vec<Lookup> = texts
            .par_iter()
            .map(|t| self.cache.get(&self.identity, t, dim))
            .collect();
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
            let failed = todo
                .par_iter()
                .zip(&computed)
                .filter(|(t, v)| self.cache.put(&self.identity, t, v).is_err())
                .count();
            self.write_errors
                .fetch_add(failed as u64, Ordering::Relaxed);
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
