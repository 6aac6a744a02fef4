//! Building the OpenStax mirror from the upstream repositories at pinned commits (when online),
//! in the layout [`super::load_corpus`] reads: `BOOK/…` plus `BOOK/SOURCE_COMMIT`.
//!
//! Each book is fetched with `git` as a shallow (depth 1), blob-less partial fetch of exactly
//! the pinned commit, with a sparse checkout of the files the cleaner reads (collections,
//! `modules/*/index.cnxml`, `META-INF/`, Markdown `contents/` and `SUMMARY.md`, licenses and
//! READMEs), so the books' images are never downloaded. The checked-out `HEAD` must equal the
//! pinned commit.

use super::{BookSpec, BooksFile};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Default base of the repository URLs (`BASE/OWNER/NAME`).
pub const DEFAULT_GIT_BASE: &str = "https://github.com";

/// Sparse-checkout patterns: what the cleaner reads.
const SPARSE: &[&str] = &[
    "/collections/",
    "/META-INF/",
    "/modules/*/index.cnxml",
    "/contents/*.md",
    "/SUMMARY.md",
    "/LICENSE*",
    "/README.md",
];

/// One book to fetch: where from and at which commit.
#[derive(Debug, Clone)]
pub struct BookSource {
    /// The book.
    pub book: BookSpec,
    /// Repository URL (anything `git fetch` accepts, e.g. `https://…` or `file://…`).
    pub url: String,
    /// The 40-hex-digit commit to check out.
    pub commit: String,
}

/// Every book of the books file at its pinned commit ([`BookSpec::commit`]; for the
/// repository's file, the last commits under CC BY, docs/reference.md §5), from `base` (e.g.
/// [`DEFAULT_GIT_BASE`]), in file order.
pub fn pinned_sources(file: &BooksFile, base: &str) -> Vec<BookSource> {
    file.corpora
        .iter()
        .flat_map(|c| &c.books)
        .map(|b| BookSource {
            book: b.clone(),
            url: format!(
                "{}/{}",
                base.trim_end_matches('/'),
                b.repository.trim_start_matches("github.com/")
            ),
            commit: b.commit.clone(),
        })
        .collect()
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .with_context(|| "cannot run `git`; install git or give --openstax-mirror DIR")?;
    if !out.status.success() {
        bail!(
            "`git {}` in {} failed: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Fetches every source into `dest/FOLDER` (replacing an incomplete earlier attempt) and writes
/// `SOURCE_COMMIT`; a folder whose `SOURCE_COMMIT` already names the commit is kept. Returns
/// `dest`, ready for [`super::load_corpus`].
///
/// # Errors
/// `git` missing or failing (offline, unknown commit), naming the repository, the commit and
/// the fix; a checkout whose `HEAD` is not the pinned commit.
pub fn clone_mirror(dest: &Path, sources: &[BookSource]) -> Result<PathBuf> {
    std::fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    for s in sources {
        let dir = dest.join(&s.book.folder);
        if super::source_commit(&dir).is_ok_and(|c| c == s.commit) {
            continue;
        }
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot remove the incomplete {}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)?;
        let fetch = || -> Result<()> {
            git(&dir, &["init", "-q"])?;
            git(&dir, &["remote", "add", "origin", &s.url])?;
            let mut set = vec!["sparse-checkout", "set", "--no-cone"];
            set.extend_from_slice(SPARSE);
            git(&dir, &set)?;
            git(
                &dir,
                &[
                    "fetch",
                    "-q",
                    "--depth",
                    "1",
                    "--filter=blob:none",
                    "origin",
                    &s.commit,
                ],
            )?;
            git(&dir, &["checkout", "-q", "FETCH_HEAD"])?;
            let head = git(&dir, &["rev-parse", "HEAD"])?;
            if head != s.commit {
                bail!("checked out {head}, not the pinned {}", s.commit);
            }
            Ok(())
        };
        fetch().with_context(|| {
            format!(
                "cannot fetch {} at {} from {}; when offline, give --openstax-mirror DIR (a mirror \
                 like ../shared/datasets/openstax)",
                s.book.title, s.commit, s.url
            )
        })?;
        std::fs::remove_dir_all(dir.join(".git"))
            .with_context(|| format!("cannot remove {}", dir.join(".git").display()))?;
        std::fs::write(dir.join("SOURCE_COMMIT"), format!("{}\n", s.commit))
            .with_context(|| format!("cannot write {}", dir.join("SOURCE_COMMIT").display()))?;
    }
    Ok(dest.to_path_buf())
}
