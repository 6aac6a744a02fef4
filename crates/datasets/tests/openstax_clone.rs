//! `datasets::openstax::clone`: fetching the books at pinned commits with real `git`, from
//! local repositories made of the shared mirror (the network is not reachable in tests; the
//! fetch path is the same `git fetch --depth 1 --filter=blob:none` of one commit).

use datasets::openstax::{self, clone};
use std::path::{Path, PathBuf};
use std::process::Command;

fn mirror() -> PathBuf {
    let p = std::env::var_os("CHUNKBENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets"))
        .join("openstax");
    assert!(
        p.is_dir(),
        "OpenStax mirror not found at {}: set CHUNKBENCH_DATA to the directory holding openstax/",
        p.display()
    );
    p
}

/// The EAR corpus of the repository's books file.
fn ear() -> openstax::CorpusSpec {
    openstax::BooksFile::builtin()
        .corpus("openstax")
        .expect("the books file has the openstax corpus")
        .clone()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else if e.file_name() != "SOURCE_COMMIT" {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// A local upstream repository per book holding the mirror's files (plus an image the sparse
/// checkout must leave out); returns the sources at those repositories' commits.
fn upstreams(root: &Path) -> Vec<clone::BookSource> {
    ear()
        .books
        .into_iter()
        .map(|b| {
            let repo = root.join(&b.folder);
            copy_dir(&mirror().join(&b.folder), &repo);
            std::fs::create_dir_all(repo.join("media")).unwrap();
            std::fs::write(repo.join("media/figure.jpg"), [0u8; 64]).unwrap();
            git(&repo, &["init", "-q"]);
            git(&repo, &["config", "uploadpack.allowFilter", "true"]);
            git(&repo, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
            git(&repo, &["add", "-A"]);
            git(
                &repo,
                &[
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "commit",
                    "-q",
                    "-m",
                    "book",
                ],
            );
            clone::BookSource {
                book: b,
                url: format!("file://{}", repo.display()),
                commit: git(&repo, &["rev-parse", "HEAD"]),
            }
        })
        .collect()
}

#[test]
fn clones_the_pinned_commits_into_a_loadable_mirror() {
    let tmp = tempfile::tempdir().unwrap();
    let sources = upstreams(&tmp.path().join("upstream"));
    let dest = tmp.path().join("mirror");
    clone::clone_mirror(&dest, &sources).unwrap();
    for s in &sources {
        let dir = dest.join(&s.book.folder);
        assert_eq!(openstax::source_commit(&dir).unwrap(), s.commit);
        assert!(!dir.join(".git").exists() && !dir.join("media").exists());
    }
    // The cleaner reads the fetched files exactly as it reads the mirror.
    let o = openstax::LoadOptions::default();
    let fetched = openstax::load_corpus(&dest, &ear(), o).unwrap();
    let original = openstax::load_corpus(&mirror(), &ear(), o).unwrap();
    // Same pages and texts; only `source` differs (it names the commit, here the local one).
    let strip = |docs: Vec<chunker::Document>| -> Vec<(String, String, String)> {
        docs.into_iter().map(|d| (d.id, d.title, d.text)).collect()
    };
    let (a, b) = (strip(fetched.documents()), strip(original.documents()));
    assert!(a == b, "{} vs {} documents differ", a.len(), b.len());
    assert_eq!(fetched.counts(), original.counts());
    // Up-to-date folders are kept (no second fetch).
    let stamp = std::fs::metadata(dest.join(&sources[0].book.folder).join("SOURCE_COMMIT"))
        .unwrap()
        .modified()
        .unwrap();
    clone::clone_mirror(&dest, &sources).unwrap();
    let again = std::fs::metadata(dest.join(&sources[0].book.folder).join("SOURCE_COMMIT"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(stamp, again);
}

#[test]
fn an_unknown_commit_names_the_repository_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let mut sources = upstreams(&tmp.path().join("upstream"));
    sources.truncate(1);
    sources[0].commit = "0123456789abcdef0123456789abcdef01234567".into();
    let e = format!(
        "{:#}",
        clone::clone_mirror(&tmp.path().join("m"), &sources).unwrap_err()
    );
    assert!(
        e.contains("0123456789abcdef")
            && e.contains(&sources[0].url)
            && e.contains("--openstax-mirror"),
        "{e}"
    );
}

#[test]
fn pinned_sources_match_the_shared_mirror() {
    let file = openstax::BooksFile::builtin();
    let sources = clone::pinned_sources(&file, clone::DEFAULT_GIT_BASE);
    assert_eq!(sources.len(), 6, "four books and two bundles");
    for s in sources {
        assert_eq!(
            openstax::source_commit(&mirror().join(&s.book.folder)).unwrap(),
            s.commit
        );
        assert!(s.url.starts_with("https://github.com/"), "{}", s.url);
    }
}
