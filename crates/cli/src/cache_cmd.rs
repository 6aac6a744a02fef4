//! `chunkbench cache stats | prune`: what the embedding, response and generation caches
//! hold, and removing entries by identity, age or validity.
//!
//! Each cache is one SQLite database (the `cachedb` crate): `embeddings.sqlite3` under the
//! embedder's `cache:` directory (default `.cache/embeddings`), `responses.sqlite3` under
//! `.cache/responses` (the readers) and `generations.sqlite3` under `.cache/generations` (the
//! replies of `data generate` and of the LLM chunking kinds). Every entry is filed under the
//! identity of what produced it (the embedding model's, the reader's or the generating
//! model's), which is what `stats` groups by and `prune --identity` matches.

use anyhow::{bail, Context, Result};
use cachedb::{CacheDb, Prune};
use std::path::{Path, PathBuf};

/// Which cache a command looks at.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// Both caches.
    All,
    /// The embedding cache.
    Embeddings,
    /// The reader-response cache.
    Responses,
    /// The generation cache (`data generate`, `contextual`, `llm-boundaries`).
    Generations,
}

/// The options `stats` and `prune` share.
#[derive(clap::Args)]
pub struct Caches {
    /// The embedding cache directory (the embedder's `cache:` field).
    #[arg(long, value_name = "DIR", default_value = ".cache/embeddings")]
    embeddings: PathBuf,
    /// The response cache directory.
    #[arg(long, value_name = "DIR", default_value = evaluator::readers::RESPONSE_CACHE)]
    responses: PathBuf,
    /// The generation cache directory (`data generate --cache`, the LLM chunking kinds).
    #[arg(long, value_name = "DIR", default_value = evaluator::strategies::llm::GENERATION_CACHE)]
    generations: PathBuf,
    /// Which cache.
    #[arg(long, value_enum, default_value = "all")]
    which: Which,
}

/// The `cache` subcommands.
#[derive(clap::Subcommand)]
pub enum CacheAction {
    /// Entries, bytes and age per identity in each cache database; `--check` also validates
    /// every entry (its checksum) and the database file.
    Stats {
        #[command(flatten)]
        caches: Caches,
        /// Validate every entry and run SQLite's quick_check.
        #[arg(long)]
        check: bool,
    },
    /// Delete entries matching every given condition, then compact the file. Run it when no
    /// sweep is writing to the cache.
    Prune {
        #[command(flatten)]
        caches: Caches,
        /// Entries whose identity contains TEXT (as `cache stats` prints it).
        #[arg(long, value_name = "TEXT")]
        identity: Option<String>,
        /// Entries written more than DAYS days ago.
        #[arg(long, value_name = "DAYS")]
        older_than: Option<f64>,
        /// Entries that fail validation (a damaged value).
        #[arg(long)]
        corrupt: bool,
        /// Count what would go; delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// One cache to visit: its name, database file and entry validator.
struct Target {
    name: &'static str,
    db: PathBuf,
    verify: fn(&[u8; 32], &[u8]) -> Result<(), String>,
}

fn targets(c: &Caches) -> Vec<Target> {
    let mut t = Vec::new();
    if matches!(c.which, Which::All | Which::Embeddings) {
        t.push(Target {
            name: embed::cache::DB_KIND,
            db: c.embeddings.join(embed::cache::DB_FILE),
            verify: |k, v| embed::EmbeddingCache::verify(k, v).map(|_| ()),
        });
    }
    if matches!(c.which, Which::All | Which::Responses) {
        t.push(Target {
            name: reader::RESPONSE_DB_KIND,
            db: c.responses.join(reader::RESPONSE_DB_FILE),
            verify: |k, v| reader::verify_entry(k, v).map(|_| ()),
        });
    }
    if matches!(c.which, Which::All | Which::Generations) {
        t.push(Target {
            name: reader::generation_cache::DB_KIND,
            db: c.generations.join(reader::generation_cache::DB_FILE),
            verify: reader::generation_cache::verify_entry,
        });
    }
    t
}

fn open(t: &Target) -> Result<Option<CacheDb>> {
    let dir = t.db.parent().unwrap_or(Path::new("."));
    let old = old_entry_files(dir);
    if old > 0 {
        outln!(
            "{}: {} entry files of the file-per-entry layout in {}: the next run that opens \
             this cache imports them into {}",
            t.name,
            old,
            dir.display(),
            t.db.display()
        );
    }
    if !t.db.exists() {
        outln!("{}: no database at {}", t.name, t.db.display());
        return Ok(None);
    }
    match CacheDb::open_unrepaired(&t.db, t.name, cachedb::Sync::Normal) {
        Ok(db) => Ok(Some(db)),
        Err(e @ cachedb::CacheDbError::Damaged { .. }) => Err(Damaged(e.to_string()).into()),
        Err(e) => Err(e).with_context(|| format!("{} cache", t.name)),
    }
}

/// A damaged cache database, found by `stats` or `prune` (the message names the file).
#[derive(Debug)]
struct Damaged(String);

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Damaged {}

/// The damage `e` reports, if it is [`Damaged`] or a [`cachedb::CacheDbError::Damaged`].
fn damage(e: &anyhow::Error) -> Option<String> {
    e.chain().find_map(|c| {
        c.downcast_ref::<Damaged>()
            .map(|d| d.0.clone())
            .or_else(|| {
                c.downcast_ref::<cachedb::CacheDbError>().and_then(|d| {
                    matches!(d, cachedb::CacheDbError::Damaged { .. }).then(|| d.to_string())
                })
            })
    })
}

/// The fix printed beside a damaged cache.
const DAMAGE_FIX: &str = "`chunkbench cache prune --corrupt` sets it aside and starts an empty \
                          cache (a run does the same by itself; the entries are computed again)";

/// Entry files of the layout before the databases (`v1/**/*.emb`, `<2 hex>/*.json`).
fn old_entry_files(dir: &Path) -> usize {
    fn walk(p: &Path, depth: usize) -> usize {
        let Ok(rd) = std::fs::read_dir(p) else {
            return 0;
        };
        rd.flatten()
            .map(|e| {
                let p = e.path();
                if p.is_dir() && depth > 0 {
                    walk(&p, depth - 1)
                } else {
                    usize::from(p.extension().is_some_and(|x| x == "emb" || x == "json"))
                }
            })
            .sum()
    }
    let mut n = walk(&dir.join("v1"), 2);
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.len() == 2 && name.chars().all(|c| c.is_ascii_hexdigit()) {
                n += walk(&e.path(), 0);
            }
        }
    }
    n
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Bytes of the database file and its WAL.
fn file_bytes(db: &Path) -> u64 {
    let mut n = std::fs::metadata(db).map(|m| m.len()).unwrap_or(0);
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    n += std::fs::metadata(PathBuf::from(wal))
        .map(|m| m.len())
        .unwrap_or(0);
    n
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn days_ago(t: i64, now: i64) -> String {
    format!("{:.1} d", (now - t).max(0) as f64 / 86_400.0)
}

/// Keys of the entries that fail `verify`, and the number checked.
fn invalid_keys(db: &CacheDb, t: &Target) -> Result<(Vec<[u8; 32]>, u64)> {
    let (mut bad, mut n) = (Vec::new(), 0u64);
    db.for_each(|e| {
        n += 1;
        if (t.verify)(&e.key, &e.value).is_err() {
            bad.push(e.key);
        }
        true
    })?;
    Ok((bad, n))
}

/// Runs a `cache` subcommand.
///
/// # Errors
/// A database that cannot be opened or read (naming it), or `prune` without a condition.
pub fn run(action: CacheAction) -> Result<()> {
    match action {
        CacheAction::Stats { caches, check } => {
            let now = now();
            let mut damaged = Vec::new();
            for t in targets(&caches) {
                if let Err(e) = stats(&t, check, now) {
                    match damage(&e) {
                        Some(d) => {
                            outln!("{}: DAMAGED: {d}\n  {DAMAGE_FIX}", t.name);
                            damaged.push(t.name);
                        }
                        None => return Err(e),
                    }
                }
            }
            if !damaged.is_empty() {
                bail!(
                    "the {} cache{} damaged (above); {DAMAGE_FIX}",
                    damaged.join(" and "),
                    if damaged.len() == 1 { " is" } else { "s are" }
                );
            }
            Ok(())
        }
        CacheAction::Prune {
            caches,
            identity,
            older_than,
            corrupt,
            dry_run,
        } => prune(&caches, identity, older_than, corrupt, dry_run),
    }
}

/// `cache stats` of one cache.
fn stats(t: &Target, check: bool, now: i64) -> Result<()> {
    let Some(db) = open(t)? else { return Ok(()) };
    let ids = db.identities()?;
    let total: u64 = ids.iter().map(|i| i.entries).sum();
    outln!(
        "{}: {} ({} journal, {} on disk), {} entries under {} identit{}",
        t.name,
        t.db.display(),
        db.journal().as_str(),
        mb(file_bytes(&t.db)),
        total,
        ids.len(),
        if ids.len() == 1 { "y" } else { "ies" }
    );
    outln!(
        "  {:>9}  {:>10}  {:>9}  {:>9}  identity",
        "entries",
        "values",
        "oldest",
        "newest"
    );
    for i in &ids {
        outln!(
            "  {:>9}  {:>10}  {:>9}  {:>9}  {}",
            i.entries,
            mb(i.value_bytes),
            days_ago(i.created.0, now),
            days_ago(i.created.1, now),
            i.identity
        );
    }
    if check {
        let (bad, n) = invalid_keys(&db, t)?;
        let quick = db.quick_check()?;
        if quick != "ok" {
            return Err(Damaged(format!(
                "cache database {} is damaged: sqlite quick_check: {quick}",
                t.db.display()
            ))
            .into());
        }
        outln!(
            "  check: {} entries, {} valid, {} corrupt{}; sqlite quick_check: {quick}",
            n,
            n - bad.len() as u64,
            bad.len(),
            if bad.is_empty() {
                ""
            } else {
                " (remove them with `chunkbench cache prune --corrupt`; a run \
                             also recomputes and replaces them)"
            },
        );
    }
    Ok(())
}

/// `cache prune`: entries by identity, age or validity; with `--corrupt`, a damaged database
/// file is set aside (an empty cache replaces it).
fn prune(
    caches: &Caches,
    identity: Option<String>,
    older_than: Option<f64>,
    corrupt: bool,
    dry_run: bool,
) -> Result<()> {
    if identity.is_none() && older_than.is_none() && !corrupt {
        bail!(
            "cache prune: give at least one of --identity TEXT, --older-than DAYS, \
             --corrupt (to empty a cache, delete its database file)"
        );
    }
    if identity.as_deref().is_some_and(|i| i.trim().is_empty()) {
        bail!(
            "cache prune --identity: an empty TEXT matches every entry; give part of an \
             identity as `cache stats` prints it (to empty a cache, delete its database file)"
        );
    }
    if let Some(d) = older_than {
        if !(d.is_finite() && d >= 0.0) {
            bail!("--older-than: {d} is not a number of days ≥ 0");
        }
    }
    let cutoff = older_than.map(|d| now() - (d * 86_400.0) as i64);
    for t in targets(caches) {
        let pruned = prune_one(&t, identity.as_deref(), cutoff, corrupt, dry_run);
        match pruned.as_ref().err().and_then(damage) {
            None => pruned?,
            Some(d) if corrupt => {
                if dry_run {
                    outln!("{}: DAMAGED: {d}; it would be set aside (dry run)", t.name);
                    continue;
                }
                let to = cachedb::move_aside(&t.db)
                    .with_context(|| format!("cannot set {} aside", t.db.display()))?;
                outln!(
                    "{}: DAMAGED: {d}\n  set aside as {}; the next run starts an empty cache \
                     and computes its entries again (delete the damaged copy when you no \
                     longer need it)",
                    t.name,
                    to.display()
                );
            }
            Some(d) => bail!("{d}; {DAMAGE_FIX}"),
        }
    }
    Ok(())
}

/// `cache prune` of one cache.
fn prune_one(
    t: &Target,
    identity: Option<&str>,
    cutoff: Option<i64>,
    corrupt: bool,
    dry_run: bool,
) -> Result<()> {
    let Some(db) = open(t)? else { return Ok(()) };
    if corrupt {
        let quick = db.quick_check()?;
        if quick != "ok" {
            return Err(Damaged(format!(
                "cache database {} is damaged: sqlite quick_check: {quick}",
                t.db.display()
            ))
            .into());
        }
    }
    let corrupt_keys = if corrupt {
        Some(invalid_keys(&db, t)?.0)
    } else {
        None
    };
    // Count what matches (the same conditions the delete applies).
    let mut matching = 0u64;
    let bad: std::collections::HashSet<[u8; 32]> = corrupt_keys.iter().flatten().copied().collect();
    db.for_each(|e| {
        let ok = identity.is_none_or(|s| e.identity.contains(s))
            && cutoff.is_none_or(|c| e.created < c)
            && (!corrupt || bad.contains(&e.key));
        matching += ok as u64;
        true
    })?;
    if dry_run {
        outln!(
            "{}: {} entries would be removed (dry run)",
            t.name,
            matching
        );
        return Ok(());
    }
    let before = file_bytes(&t.db);
    let removed = db.prune(&Prune {
        identity_contains: identity.map(str::to_string),
        created_before: cutoff,
        keys: corrupt_keys,
    })?;
    db.vacuum()?;
    outln!(
        "{}: removed {} entries; {} → {} on disk",
        t.name,
        removed,
        mb(before),
        mb(file_bytes(&t.db))
    );
    Ok(())
}
