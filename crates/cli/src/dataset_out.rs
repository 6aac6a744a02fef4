//! What the data commands that write a dataset share (`data fetch`, `import`, `stitch`,
//! `generate`): the names `data fetch` owns, and the line printed for a written dataset.

use anyhow::{bail, Result};
use datasets::dataset::DatasetManifest;
use std::path::Path;

/// Refuses a dataset name that `data fetch` writes (the pinned sets, the built-in books
/// file's corpora and their question sets): `data fetch` would replace the user's dataset.
///
/// # Errors
/// The name is one of them.
pub(crate) fn refuse_fetched_name(name: &str) -> Result<()> {
    let name =
        datasets::dataset::canonical_name(name).map_err(|e| anyhow::anyhow!("dataset name {e}"))?;
    let builtin = datasets::openstax::BooksFile::builtin();
    let corpus = builtin.corpora.iter().find(|c| {
        name == c.name
            || name == c.mmlu_dataset()
            || name
                .strip_prefix(&format!("{}-", c.mmlu_dataset()))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    if datasets::openstax::RESERVED_NAMES.contains(&name.as_str()) || corpus.is_some() {
        bail!(
            "dataset name {name:?} is one `chunkbench data fetch` writes ({}, and the textbook \
             corpora with their -mmlu question sets): a later fetch would replace your data; \
             choose another name",
            datasets::openstax::RESERVED_NAMES.join(", ")
        );
    }
    Ok(())
}

/// Prints one line for the dataset `m` written at `dir`: name, documents, questions, path.
pub(crate) fn report(m: &DatasetManifest, dir: &Path) {
    let c = |k: &str| m.counts.get(k).copied().unwrap_or(0);
    eprintln!(
        "  {:<28} {:>6} documents {:>6} questions -> {}",
        m.name,
        c("documents"),
        c("questions"),
        dir.display()
    );
}
