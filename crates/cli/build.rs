//! Captures the git commit the binary is built from, so runs record the code that computed
//! them whatever directory they are started in: `CHUNKBENCH_GIT_COMMIT` = `git rev-parse
//! HEAD`, with `-dirty` when tracked files differ from it, or `unknown` outside a git checkout.
//! Re-run on every build (see `main`), so a shared target directory never carries another
//! checkout's commit.

use std::path::Path;
use std::process::Command;

fn main() {
    // The manifest directory of *this* build, read at run time: `env!` would bake in the
    // directory the build script was compiled in, which in a shared target directory may be
    // another checkout's (then `git` fails there and every run records `unknown`).
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let root = Path::new(&manifest_dir).join("../..");
    // Several checkouts may share one target directory (CI reuses one; cargo hashes
    // workspace members by their path relative to the workspace, so two clones share build
    // outputs): the paths recorded below would then be another checkout's. Re-run on every
    // build instead (a path that never exists), so the commit is always this checkout's.
    println!("cargo:rerun-if-changed=.chunkbench-build-always-reruns");
    for p in [
        ".git/HEAD",
        ".git/index",
        ".git/refs/heads",
        ".git/packed-refs",
        "crates",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        let path = root.join(p);
        // A missing path would make cargo re-run this script on every build.
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = match git(&["rev-parse", "HEAD"]) {
        Some(head) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head}-dirty")
            } else {
                head
            }
        }
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=CHUNKBENCH_GIT_COMMIT={commit}");
}
