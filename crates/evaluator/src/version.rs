//! The code version a cell is computed by: `chunkbench VERSION@GIT_COMMIT`, the commit the
//! binary was built from (its build script captures it; [`set_build_commit`]). Stored in each
//! cell and compared on reuse (`run`) and in the preflight.

/// The code identity stored in each cell: `chunkbench VERSION@GIT_COMMIT` (the commit with
/// `-dirty` for uncommitted changes, `unknown` outside a checkout).
pub fn code_version() -> String {
    format!("chunkbench {}@{}", env!("CARGO_PKG_VERSION"), git_commit())
}

static BUILD_COMMIT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Records the git commit the running program was built from (`HEAD`, with `-dirty` when the
/// tracked sources differed from it at build time). The `chunkbench` binary calls this first,
/// with the value its build script captured; later calls are ignored.
pub fn set_build_commit(commit: &str) {
    let _ = BUILD_COMMIT.set(commit.to_string());
}

/// The commit recorded by [`set_build_commit`], or `unknown` (a library caller that did not
/// set one; its cells then carry `chunkbench VERSION@unknown`).
pub fn git_commit() -> String {
    BUILD_COMMIT
        .get()
        .cloned()
        .unwrap_or_else(|| "unknown".into())
}
