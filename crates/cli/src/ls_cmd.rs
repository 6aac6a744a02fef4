//! `chunkbench ls strategies | retrievers | readers | metrics | datasets`.

use anyhow::{bail, Result};
use clap::ValueEnum;
use datasets::dataset::DatasetManifest;
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ListWhat {
    Strategies,
    Retrievers,
    Readers,
    Datasets,
    Metrics,
}

/// Prints one line per item of `what`.
///
/// # Errors
/// No datasets in the store (for `ls datasets`).
pub(crate) fn ls(what: ListWhat, store: PathBuf) -> Result<()> {
    let rows: Vec<(String, String)> = match what {
        ListWhat::Strategies => evaluator::strategies::KINDS
            .iter()
            .map(|k| (k.name.to_string(), k.summary.to_string()))
            .collect(),
        ListWhat::Retrievers => evaluator::retrievers::KINDS
            .iter()
            .map(|k| (k.name.to_string(), k.summary.to_string()))
            .collect(),
        ListWhat::Readers => evaluator::readers::KINDS
            .iter()
            .map(|k| (k.name.to_string(), k.summary.to_string()))
            .collect(),
        ListWhat::Metrics => metric_rows(),
        ListWhat::Datasets => dataset_rows(&store)?,
    };
    // Names in one column, as wide as the longest named item (at least 16).
    let width = rows
        .iter()
        .filter(|(_, about)| !about.is_empty())
        .map(|(name, _)| name.chars().count())
        .max()
        .unwrap_or(0)
        .max(16);
    for (name, about) in rows {
        if about.is_empty() {
            outln!("{name}");
        } else {
            outln!("{name:<width$} {about}");
        }
    }
    Ok(())
}

/// `ls datasets`: one line per dataset of the store (a canonical directory name with a
/// manifest): documents, questions, license. A manifest that does not parse is noted and not
/// listed.
///
/// # Errors
/// No datasets in the store.
fn dataset_rows(store: &std::path::Path) -> Result<Vec<(String, String)>> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(store) {
        // Datasets are the directories a config can name (canonical plain names); hidden work
        // directories of an unfinished import are not.
        let mut names: Vec<_> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("manifest.json").exists())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| datasets::dataset::canonical_name(n).as_deref() == Ok(n))
            })
            .collect();
        names.sort();
        for p in names {
            let dir = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let path = p.join("manifest.json");
            let m: DatasetManifest = match std::fs::read(&path)
                .map_err(anyhow::Error::from)
                .and_then(|b| Ok(serde_json::from_slice(&b)?))
            {
                Ok(m) => m,
                Err(e) => {
                    eprintln!(
                        "note: {}: not a dataset manifest ({e}); `{dir}` is not listed",
                        path.display()
                    );
                    continue;
                }
            };
            let c = |k: &str| m.counts.get(k).copied().unwrap_or(0);
            v.push((
                format!(
                    "{:<16} {:>6} documents {:>6} questions  {}",
                    dir,
                    c("documents"),
                    c("questions"),
                    m.license
                ),
                String::new(),
            ));
        }
    }
    if v.is_empty() {
        bail!(
            "no datasets in {}; run `chunkbench data fetch`",
            store.display()
        );
    }
    Ok(v)
}

/// `ls metrics`: the run's figures, the registered per-question retrieval metrics
/// ([`retriever::metrics::METRICS`], one line each from the registry) among them.
fn metric_rows() -> Vec<(String, String)> {
    let fixed = |rows: &[(&str, &str)]| -> Vec<(String, String)> {
        rows.iter()
            .map(|(n, a)| (n.to_string(), a.to_string()))
            .collect()
    };
    let mut v = fixed(&[
        (
            "accuracy",
            "share correct, Wilson 95 % interval; ties count as wrong",
        ),
        (
            "words",
            "words retrieved per question, with multiplicity; mean/median/p95",
        ),
        (
            "unique_words",
            "words retrieved per question, overlapping spans once",
        ),
        (
            "evidence_hit",
            "top-k overlaps a gold evidence span (datasets with evidence)",
        ),
        (
            "accuracy_delta",
            "vs baseline, points, paired bootstrap 95 % interval",
        ),
        (
            "mcnemar",
            "exact and mid-p on discordant pairs; Holm-adjusted over the run",
        ),
        (
            "words_reduction",
            "vs baseline, %, paired bootstrap 95 % interval",
        ),
        (
            "mde",
            "minimum detectable effect, points (alpha 0.05, power 0.8)",
        ),
    ]);
    v.extend(retriever::metrics::METRICS.iter().map(|m| {
        (
            m.name.to_string(),
            format!(
                "{} ({}; questions {}; {} is better)",
                m.doc,
                m.unit.as_str(),
                m.applies.as_str(),
                m.better()
            ),
        )
    }));
    v.extend(fixed(&[
        ("chars/tokens", "characters and tokens retrieved per question (tokens: the reader's tokenizer, else cost_tokenizer)"),
        ("invalid", "answers the reader's reply could not be read as (counted wrong, shown with their text)"),
        ("failure", "per question: correct | extraction | matching | ranking | reading | no-evidence | invalid-answer"),
    ]));
    v.extend(
        retriever::records::RECORDS
            .iter()
            .map(|r| (r.listed_as.to_string(), r.doc.to_string())),
    );
    v
}
