//! The on-disk cache: second runs hit, corrupt entries are recomputed, concurrent users (threads
//! and processes) agree, keys depend on the embedder identity, file-per-entry caches are
//! imported once.

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
    assert_ne!(
        EmbeddingCache::key("hash:m1", "same text"),
        EmbeddingCache::key("hash:m2", "same text")
    );
    // Both are filed under their own identity.
    let cache = EmbeddingCache::open(dir.path()).unwrap();
    let ids: Vec<(String, u64)> = cache
        .db()
        .identities()
        .unwrap()
        .into_iter()
        .map(|i| (i.identity, i.entries))
        .collect();
    assert_eq!(ids, vec![("hash:m1".into(), 1), ("hash:m2".into(), 1)]);
}

#[test]
fn truncated_and_corrupt_entries_are_detected_and_recomputed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = EmbeddingCache::open(dir.path()).unwrap();
    let c = CachedEmbedder::with_cache(HashEmbedder::new("m"), cache.clone());
    let texts = ["one", "two", "three", "four"];
    let want = c.embed(&texts).unwrap();

    // Truncate one entry, flip a byte in another, empty a third (inside the database).
    let raw = |t: &str| {
        cache
            .db()
            .get(&EmbeddingCache::key("hash:m", t))
            .unwrap()
            .unwrap()
    };
    let store = |t: &str, bytes: &[u8]| {
        cache
            .db()
            .put("hash:m", &EmbeddingCache::key("hash:m", t), bytes)
            .unwrap()
    };
    let bytes = raw("one");
    store("one", &bytes[..bytes.len() - 7]);
    let mut bytes = raw("two");
    bytes[60] ^= 0x40;
    store("two", &bytes);
    store("three", b"");
    assert!(matches!(cache.get("hash:m", "two", 16), Lookup::Corrupt(r) if r.contains("checksum")));
    assert!(matches!(cache.get("hash:m", "one", 16), Lookup::Corrupt(r) if r.contains("length")));

    let again = CachedEmbedder::with_cache(HashEmbedder::new("m"), cache.clone());
    assert_eq!(again.embed(&texts).unwrap(), want);
    let s = again.stats();
    assert_eq!((s.cache_hits, s.cache_misses, s.cache_corrupt), (1, 3, 3));
    // Repaired in the database.
    for t in texts {
        assert!(matches!(cache.get("hash:m", t, 16), Lookup::Hit(_)));
    }
    // One database file (and SQLite's WAL files), nothing else.
    let mut files: Vec<String> = walk(dir.path())
        .into_iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    files.retain(|f| !f.ends_with("-wal") && !f.ends_with("-shm"));
    assert_eq!(files, vec![embed::cache::DB_FILE.to_string()]);
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

/// Texts of writer process `w`: overlapping ranges, so processes write some keys at once.
fn process_texts(w: usize) -> Vec<String> {
    corpus(400)[w * 60..w * 60 + 160].to_vec()
}

/// Child half of `several_processes_write_one_database` (runs only when spawned by it).
#[test]
#[ignore = "child process of several_processes_write_one_database"]
fn child_writer_process() {
    let root = std::env::var("CHUNKBENCH_TEST_CACHE_ROOT").expect("spawned by the parent test");
    let w: usize = std::env::var("CHUNKBENCH_TEST_WRITER")
        .unwrap()
        .parse()
        .unwrap();
    let texts = process_texts(w);
    let c = CachedEmbedder::new(HashEmbedder::new("m"), &root).unwrap();
    // Several small batches: many write transactions interleave with the other processes'.
    for batch in texts.chunks(10) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        let got = c.embed(&refs).unwrap();
        for (t, v) in refs.iter().zip(&got) {
            assert_eq!(v, &HashEmbedder::vector("m", t));
        }
    }
    let s = c.stats();
    assert_eq!((s.cache_corrupt, s.cache_write_errors), (0, 0));
}

#[test]
fn several_processes_write_one_database() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let writers = 5;
    let spawned: Vec<_> = (0..writers)
        .map(|w| {
            std::process::Command::new(&exe)
                .args([
                    "child_writer_process",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                ])
                .env("CHUNKBENCH_TEST_CACHE_ROOT", dir.path().join("concurrent"))
                .env("CHUNKBENCH_TEST_WRITER", w.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (w, child) in spawned.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "writer {w}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cache = EmbeddingCache::open(dir.path().join("concurrent")).unwrap();
    let all: std::collections::BTreeSet<String> = (0..writers).flat_map(process_texts).collect();
    assert_eq!(cache.db().len().unwrap(), all.len() as u64);
    for t in &all {
        assert_eq!(
            cache.get("hash:m", t, 16),
            Lookup::Hit(HashEmbedder::vector("m", t))
        );
    }
    assert_eq!(cache.db().quick_check().unwrap(), "ok");
}

#[test]
fn a_file_per_entry_cache_is_imported_once() {
    // The layout before the database: v1/<identity hash>/<kk>/<key>.emb + identity.txt.
    let dir = tempfile::tempdir().unwrap();
    let texts = ["alpha", "beta", "gamma"];
    let ident_dir = dir.path().join("v1/0123456789abcdef");
    std::fs::create_dir_all(&ident_dir).unwrap();
    std::fs::write(ident_dir.join("identity.txt"), "hash:m").unwrap();
    // Encode entries as the old writer did: the same bytes the database now stores.
    let scratch = tempfile::tempdir().unwrap();
    let enc = EmbeddingCache::open(scratch.path()).unwrap();
    for t in texts {
        enc.put("hash:m", t, &HashEmbedder::vector("m", t)).unwrap();
        let k = EmbeddingCache::key("hash:m", t);
        let hexkey = hex::encode(k);
        let shard = ident_dir.join(&hexkey[..2]);
        std::fs::create_dir_all(&shard).unwrap();
        let mut bytes = enc.db().get(&k).unwrap().unwrap();
        if t == "gamma" {
            bytes.truncate(20); // an entry a crash left partial
        }
        std::fs::write(shard.join(format!("{hexkey}.emb")), bytes).unwrap();
    }
    let cache = EmbeddingCache::open(dir.path()).unwrap();
    assert_eq!(
        cache.imported(),
        Some(embed::cache::Imported {
            entries: 2,
            invalid: 1
        })
    );
    assert!(!dir.path().join("v1").exists(), "the files are removed");
    let c = CachedEmbedder::with_cache(HashEmbedder::new("m"), cache);
    c.embed(&texts).unwrap();
    assert_eq!((c.stats().cache_hits, c.stats().cache_misses), (2, 1));
    // A second open has nothing to import.
    assert_eq!(EmbeddingCache::open(dir.path()).unwrap().imported(), None);
}
