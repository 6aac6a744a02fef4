//! The generation cache: every model reply that `data generate` or an LLM strategy (contextual
//! retrieval, LLM-guided boundaries) used, keyed by the model's identity and the exact request,
//! so that a second run with the same inputs reads every reply back and computes the same
//! result byte for byte (and a run killed half-way resumes).
//!
//! **Key.** `sha256("chunkbench-generate-cache/1\0" + identity + "\0" + request)`, where
//! `identity` is the model's ([`super::ChatModel::identity`]) and `request` the canonical
//! JSON of the messages, `max_tokens` and `response_format` ([`super::ChatRequest::cache_key`]). **Store.** One SQLite database,
//! `DIR/generations.sqlite3` (the `cachedb` crate, kind `generations`, entries filed under
//! the identity; `chunkbench cache` commands do not manage it). **Integrity.** Each entry is
//! `{format, key, identity, text, finish_reason, sha256}`; an entry that does not parse,
//! whose key or identity differ from the request, or whose `sha256` (of text and finish
//! reason) does not match, is counted as corrupt and treated as a miss (and overwritten).

use super::Generation;
use crate::CacheMode;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

const FORMAT: &str = "chunkbench-generate-cache/1";

/// The database file in a generation-cache directory.
pub const DB_FILE: &str = "generations.sqlite3";

/// The cache kind recorded in the database (`cachedb`).
pub const DB_KIND: &str = "generations";

/// Checks one stored entry as [`GenerationCache::get`] does, without the request: the format,
/// the key it names and the reply's checksum (for `cache stats --check`, `cache prune
/// --corrupt`).
///
/// # Errors
/// What is wrong with the entry.
pub fn verify_entry(key: &[u8; 32], value: &[u8]) -> Result<(), String> {
    let e: Entry = serde_json::from_slice(value).map_err(|e| format!("not an entry: {e}"))?;
    let g = Generation {
        text: e.text,
        finish_reason: e.finish_reason,
        usage: e.usage,
    };
    if e.format != FORMAT {
        return Err(format!("format {:?}, expected {FORMAT:?}", e.format));
    }
    if e.key != cachedb::key_hex(key) {
        return Err("stored under another key".into());
    }
    if e.sha256 != reply_sha(&g) {
        return Err("the reply does not match its sha256".into());
    }
    Ok(())
}

#[derive(Serialize, Deserialize)]
struct Entry {
    format: String,
    key: String,
    identity: String,
    text: String,
    finish_reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<super::Usage>,
    sha256: String,
}

/// The entry checksum: of the finish reason and text, and of the token usage when the
/// server reported one (entries written before usage was kept have none and keep their sum).
fn reply_sha(g: &Generation) -> String {
    let mut material = format!("{}\u{0}{}", g.finish_reason, g.text);
    if let Some(u) = g.usage {
        material.push_str(&format!(
            "\u{0}{}\u{0}{}",
            u.prompt_tokens, u.completion_tokens
        ));
    }
    fsio::sha256_hex(material.as_bytes())
}

/// Counters of one [`GenerationCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GenerationCacheStats {
    /// Replies read from the cache.
    pub hits: u64,
    /// Replies asked of the model.
    pub misses: u64,
    /// Entries found corrupt (treated as misses).
    pub corrupt: u64,
}

/// The generation cache (module docs).
pub struct GenerationCache {
    db: Option<cachedb::CacheDb>,
    mode: CacheMode,
    hits: AtomicU64,
    misses: AtomicU64,
    corrupt: AtomicU64,
}

impl GenerationCache {
    /// Opens `dir/generations.sqlite3` in `mode` (`never`: no database; `read-only` without a
    /// database: every lookup misses).
    ///
    /// # Errors
    /// The database cannot be created or opened (naming it).
    pub fn open(dir: &Path, mode: CacheMode) -> anyhow::Result<Self> {
        let path = dir.join(DB_FILE);
        let db = match mode {
            CacheMode::Never => None,
            CacheMode::ReadOnly if !path.exists() => None,
            _ => Some(
                cachedb::CacheDb::open(&path, DB_KIND, cachedb::Sync::Full)
                    .map_err(|e| anyhow::anyhow!("generation cache {}: {e}", path.display()))?,
            ),
        };
        Ok(GenerationCache {
            db,
            mode,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
        })
    }

    /// The key of `request` for a model of `identity` (module docs).
    pub fn key(identity: &str, request: &str) -> [u8; 32] {
        let digest = fsio::sha256_hex(format!("{FORMAT}\0{identity}\0{request}").as_bytes());
        let mut k = [0u8; 32];
        hex::decode_to_slice(digest, &mut k).expect("a sha256 hex digest");
        k
    }

    /// The stored reply of `request`, if any and intact.
    pub fn get(&self, identity: &str, request: &str) -> Option<Generation> {
        let db = self.db.as_ref()?;
        let key = Self::key(identity, request);
        let found = db.get(&key).ok().flatten();
        let Some(bytes) = found else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let entry = serde_json::from_slice::<Entry>(&bytes).ok().and_then(|e| {
            let g = Generation {
                text: e.text,
                finish_reason: e.finish_reason,
                usage: e.usage,
            };
            (e.format == FORMAT
                && e.key == cachedb::key_hex(&key)
                && e.identity == identity
                && e.sha256 == reply_sha(&g))
            .then_some(g)
        });
        match entry {
            Some(g) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(g)
            }
            None => {
                self.corrupt.fetch_add(1, Ordering::Relaxed);
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Stores the reply of `request` (read-write mode only; a reply that echoes a secret API
    /// key, [`httpio::holds_secret`], is not stored).
    ///
    /// # Errors
    /// The database write fails.
    pub fn put(&self, identity: &str, request: &str, g: &Generation) -> anyhow::Result<()> {
        if self.mode != CacheMode::ReadWrite {
            return Ok(());
        }
        let Some(db) = &self.db else { return Ok(()) };
        if httpio::holds_secret(&g.text) {
            // A reply echoing the API key is never stored (the cache would hold the key), nor
            // stored redacted (a hit would then differ from the reply it stands for): it is
            // asked again next time.
            return Ok(());
        }
        let key = Self::key(identity, request);
        let e = Entry {
            format: FORMAT.into(),
            key: cachedb::key_hex(&key),
            identity: identity.into(),
            text: g.text.clone(),
            finish_reason: g.finish_reason.clone(),
            usage: g.usage,
            sha256: reply_sha(g),
        };
        db.put(identity, &key, &serde_json::to_vec(&e)?)
            .map_err(|e| anyhow::anyhow!("generation cache {}: {e}", db.path().display()))
    }

    /// Counters so far (a miss in `never` mode is not counted: nothing was looked up).
    pub fn stats(&self) -> GenerationCacheStats {
        GenerationCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_identity_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let c = GenerationCache::open(dir.path(), CacheMode::ReadWrite).unwrap();
        let g = Generation {
            text: "{\"question\": \"Q?\"}".into(),
            finish_reason: "stop".into(),
            usage: Some(crate::lm::Usage {
                prompt_tokens: 12,
                completion_tokens: 5,
            }),
        };
        assert!(c.get("m1", "req").is_none());
        c.put("m1", "req", &g).unwrap();
        assert_eq!(c.get("m1", "req"), Some(g.clone()));
        // Another model identity or request: a miss.
        assert!(c.get("m2", "req").is_none());
        assert!(c.get("m1", "req2").is_none());
        // A tampered entry is corrupt, never served.
        let key = GenerationCache::key("m1", "req");
        let mut e: serde_json::Value =
            serde_json::from_slice(&c.db.as_ref().unwrap().get(&key).unwrap().unwrap()).unwrap();
        e["text"] = "{\"question\": \"Other?\"}".into();
        c.db.as_ref()
            .unwrap()
            .put("m1", &key, &serde_json::to_vec(&e).unwrap())
            .unwrap();
        assert!(c.get("m1", "req").is_none());
        assert_eq!(c.stats().corrupt, 1);
        assert_eq!(c.stats().hits, 1);
    }
}
