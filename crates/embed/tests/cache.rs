//! The on-disk cache: second runs hit, corrupt entries are recomputed, concurrent users agree,
//! keys depend on the embedder identity.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use embed::{CachedEmbedder, EmbedError, Embedder, EmbeddingCache, Lookup};
use sha2::{Digest, Sha256};

/// A deterministic fake model: the vector is derived from sha256(tag, text); counts calls.
#[derive(Debug)]
struct HashEmbedder {
    tag: &'static str,
    calls: AtomicU64,
    texts: AtomicU64,
}

impl HashEmbedder {
    fn new(tag: &'static str) -> Self {
        Self {
            tag,
            calls: AtomicU64::new(0),
            texts: AtomicU64::new(0),
        }
    }
    fn vector(tag: &str, text: &str) -> Vec<f32> {
        let h = Sha256::digest(format!("{tag}\0{text}").as_bytes());
        let mut v: Vec<f32> = h.iter().take(16).map(|b| *b as f32 - 127.5).collect();
        embed::l2_normalize(&mut v);
        v
    }
}

impl Embedder for HashEmbedder {
    fn dim(&self) -> usize {
        16
    }
    fn identity(&self) -> String {
        format!("hash:{}", self.tag)
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.fetch_add(texts.len() as u64, Ordering::SeqCst);
        Ok(texts.iter().map(|t| Self::vector(self.tag, t)).collect())
    }
}

fn corpus(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("sentence number {i} about topic {}", i % 7))
        .collect()
}

#[test]
fn second_run_reads_everything_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let texts = corpus(300);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();

    let first = CachedEmbedder::new(HashEmbedder::new("m"), dir.path()).unwrap();
    let a = first.embed(&refs).unwrap();
    let s = first.stats();
    assert_eq!(
        (
            s.cache_hits,
            s.cache_misses,
            s.cache_corrupt,
            s.cache_write_errors
        ),
        (0, 300, 0, 0)
    );

    // A new process would build a new wrapper over the same directory.
    let second = CachedEmbedder::new(HashEmbedder::new("m"), dir.path()).unwrap();
    let b = second.embed(&refs).unwrap();
    let s = second.stats();
    assert_eq!((s.cache_hits, s.cache_misses), (300, 0));
    assert_eq!(
        second.inner().calls.load(Ordering::SeqCst),
        0,
        "the model was not called"
    );
    assert_eq!(a, b);
    assert_eq!(second.identity(), "hash:m");
}

#[test]
fn duplicates_are_computed_once_and_order_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let c = CachedEmbedder::new(HashEmbedder::new("m"), dir.path()).unwrap();
    let got = c.embed(&["b", "a", "b", "c", "a"]).unwrap();
    assert_eq!(c.inner().texts.load(Ordering::SeqCst), 3);
    for (t, v) in ["b", "a", "b", "c", "a"].iter().zip(&got) {
        assert_eq!(v, &HashEmbedder::vector("m", t));
    }
    assert_eq!(c.stats().cache_misses, 5);
}

#[test]
fn identity_is_part_of_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let m1 = CachedEmbedder::new(HashEmbedder::new("m1"), dir.path()).unwrap();
    let m2 = CachedEmbedder::new(HashEmbedder::new("m2"), dir.path()).unwrap();
    let a = m1.embed(&["same text"]).unwrap();
    let b = m2.embed(&["same text"]).unwrap();
    assert_ne!(a, b);
    assert_eq!(m2.stats().cache_hits, 0);
    let cache = EmbeddingCache::open(dir.path()).unwrap();
    assert_ne!(
        cache.entry_path("hash:m1", "same text"),
        cache.entry_path("hash:m2", "same text")
    );
}

#[test]
fn truncated_and_corrupt_entries_are_detected_and_recomputed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = EmbeddingCache::open(dir.path()).unwrap();
    let c = CachedEmbedder::with_cache(HashEmbedder::new("m"), cache.clone());
    let texts = ["one", "two", "three", "four"];
    let want = c.embed(&texts).unwrap();

    // Truncate one entry, flip a byte in another, empty a third.
    let p1 = cache.entry_path("hash:m", "one");
    let bytes = std::fs::read(&p1).unwrap();
    std::fs::write(&p1, &bytes[..bytes.len() - 7]).unwrap();
    let p2 = cache.entry_path("hash:m", "two");
    let mut bytes = std::fs::read(&p2).unwrap();
    bytes[60] ^= 0x40;
    std::fs::write(&p2, &bytes).unwrap();
    std::fs::write(cache.entry_path("hash:m", "three"), b"").unwrap();
    assert!(matches!(cache.get("hash:m", "two", 16), Lookup::Corrupt(r) if r.contains("checksum")));
    assert!(matches!(cache.get("hash:m", "one", 16), Lookup::Corrupt(r) if r.contains("length")));

    let again = CachedEmbedder::with_cache(HashEmbedder::new("m"), cache.clone());
    assert_eq!(again.embed(&texts).unwrap(), want);
    let s = again.stats();
    assert_eq!((s.cache_hits, s.cache_misses, s.cache_corrupt), (1, 3, 3));
    // Repaired on disk.
    for t in texts {
        assert!(matches!(cache.get("hash:m", t, 16), Lookup::Hit(_)));
    }
    // No temporary files left behind.
    let leftovers = walk(dir.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".tmp-"))
        .count();
    assert_eq!(leftovers, 0);
}

fn walk(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p).unwrap() {
        let e = e.unwrap().path();
        if e.is_dir() {
            out.extend(walk(&e));
        } else {
            out.push(e);
        }
    }
    out
}

#[test]
fn concurrent_users_of_one_cache_stay_correct() {
    let dir = tempfile::tempdir().unwrap();
    let texts = Arc::new(corpus(200));
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let texts = Arc::clone(&texts);
            let root = dir.path().to_path_buf();
            std::thread::spawn(move || {
                // Each worker is its own "run": own wrapper, overlapping slices, several rounds.
                let c = CachedEmbedder::new(HashEmbedder::new("m"), &root).unwrap();
                for round in 0..5 {
                    let start = (w * 37 + round * 23) % 100;
                    let slice: Vec<&str> = texts[start..start + 100]
                        .iter()
                        .map(String::as_str)
                        .collect();
                    let got = c.embed(&slice).unwrap();
                    for (t, v) in slice.iter().zip(&got) {
                        assert_eq!(v, &HashEmbedder::vector("m", t));
                    }
                }
                c.stats()
            })
        })
        .collect();
    for h in handles {
        let s = h.join().unwrap();
        assert_eq!(s.cache_corrupt, 0);
        assert_eq!(s.cache_write_errors, 0);
        assert_eq!(s.cache_hits + s.cache_misses, 500);
    }
    // Every text some worker embedded has one valid entry.
    let covered: std::collections::BTreeSet<usize> = (0..4)
        .flat_map(|w| {
            (0..5).flat_map(move |round| {
                let start = (w * 37 + round * 23) % 100;
                start..start + 100
            })
        })
        .collect();
    let cache = EmbeddingCache::open(dir.path()).unwrap();
    for t in covered.iter().map(|&i| &texts[i]) {
        assert_eq!(
            cache.get("hash:m", t, 16),
            Lookup::Hit(HashEmbedder::vector("m", t))
        );
    }
}

#[test]
fn unwritable_cache_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let err = CachedEmbedder::new(HashEmbedder::new("m"), &file)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("a-file") && err.contains("cannot create"),
        "{err}"
    );
}
