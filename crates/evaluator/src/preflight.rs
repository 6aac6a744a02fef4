//! What `run` would fail on, checked before any compute, all at once (`chunkbench validate`
//! and the start of every run).
//!
//! Checks: every dataset loads (present, file hashes equal to its manifest, every line valid);
//! the embedder, when a cell embeds: a local directory has its files, a safetensors header that
//! parses and a tokenizer that loads, a server answers the probe text; every strategy builds
//! (tokenizers load, separator regexes compile); the `cost_tokenizer` loads when a cell counts tokens with it; every GGUF model
//! exists and starts with the GGUF magic; every server reader has its API-key variable set, an
//! http(s) base URL and a server that answers `GET /models`; no dataset with retrieval-only
//! questions is paired with a reader that chooses options; the run directory is apart from the
//! dataset store and the models directory, and writable.
//! Each problem is one line naming the field or file and the fix.

use crate::config::{Cell, RunConfig};
use crate::strategies::Chunker;
use datasets::dataset::{Dataset, Question};
use std::collections::BTreeMap;
use std::path::Path;

/// What a run needs, prepared once by the preflight and then used by the run: the datasets
/// loaded and checked, the strategies built, the cells; and every problem found.
pub struct Prepared {
    /// Every problem found, one message each; empty when the run can start.
    pub problems: Vec<String>,
    /// The datasets that loaded, in the order of `cfg.datasets` (all of them when `problems`
    /// is empty), with their names in the config.
    pub datasets: Vec<(String, Dataset)>,
    /// The strategies that built, by name (all of them when `problems` is empty); a built
    /// strategy chunks any dataset.
    pub strategies: BTreeMap<String, Box<dyn Chunker>>,
    /// The config's cells ([`RunConfig::cells`]).
    pub cells: Vec<Cell>,
}

/// Checks everything a run would fail on (`run` and `validate`) and keeps what it loaded and
/// built, so a run loads each dataset and builds each strategy once.
pub fn prepare(cfg: &RunConfig, store: &Path) -> Prepared {
    let mut problems = Vec::new();
    let mut datasets = Vec::new();
    for name in &cfg.datasets {
        match Dataset::load(&store.join(name)) {
            Err(e) => problems.push(format!("dataset `{name}`: {e:#}")),
            Ok(ds) => {
                let used = &ds.questions[..cfg.limit.unwrap_or(usize::MAX).min(ds.questions.len())];
                problems.extend(readers_problem(cfg, name, used));
                datasets.push((name.clone(), ds));
            }
        }
    }
    let cells = cfg.cells();
    if cells.iter().any(|c| c.embedder.is_some()) {
        problems.extend(cfg.embedder.preflight());
    }
    let mut strategies = BTreeMap::new();
    let embedder_positions = cfg.embedder.max_positions();
    for (name, s) in &cfg.strategies {
        match s.build() {
            Ok(built) => {
                let ctx = crate::strategies::Preflight {
                    cells_dir: cfg.output.join(&cfg.name).join("cells"),
                    cell_ids: cells
                        .iter()
                        .filter(|c| c.strategy == *name)
                        .map(crate::config::Cell::id)
                        .collect(),
                    code: crate::version::code_version(),
                    embedder_positions,
                };
                problems.extend(
                    built
                        .preflight(&ctx)
                        .into_iter()
                        .map(|p| format!("strategy `{name}`: {p}")),
                );
                strategies.insert(name.clone(), built);
            }
            Err(e) => problems.push(format!("field `strategies.{name}`: {e:#}")),
        }
        // A model server the strategy asks (contextual, llm-boundaries) must answer.
        if let Err(e) = s.server_identity() {
            problems.push(format!("strategy `{name}`: {e:#}"));
        }
    }
    if cells.iter().any(|c| !c.reader_config.counts_own_tokens()) {
        if let Some(t) = &cfg.cost_tokenizer {
            if let Err(e) = chunker::HfTokenizer::from_file(crate::models::resolve(t)) {
                problems.push(format!(
                    "field `cost_tokenizer`: {e} (or set `cost_tokenizer: null` to count no tokens)"
                ));
            }
        }
    }
    for (name, r) in &cfg.readers {
        problems.extend(r.preflight(name));
    }
    let run_dir = cfg.output.join(&cfg.name);
    match output_clash(&run_dir, store) {
        Some(clash) => problems.push(format!("field `output`: {clash}")),
        None => {
            if let Err(e) = writable(&run_dir) {
                problems.push(format!("field `output`: {e}"));
            }
        }
    }
    Prepared {
        problems,
        datasets,
        strategies,
        cells,
    }
}

/// `p` absolute, with symlinks resolved as far as it exists and `.`/`..` resolved lexically
/// beyond that.
fn resolved(p: &Path) -> std::path::PathBuf {
    use std::path::{Component, PathBuf};
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut existing = abs.clone();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let base = loop {
        if let Ok(c) = existing.canonicalize() {
            break c;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break PathBuf::from("/"),
        }
    };
    let mut out = base;
    for part in rest.iter().rev() {
        for c in Path::new(part).components() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(n) => out.push(n),
                _ => {}
            }
        }
    }
    out
}

/// Why a run directory `run_dir` (OUTPUT/NAME) must not be used with the dataset store `store`:
/// it is the store, inside it (a run named like a dataset would overwrite that dataset's files),
/// holds it, or is inside the models directory ([`crate::models::dir`]) or holds it; `None`
/// when it is apart from both. Paths are compared absolute, with symlinks resolved.
pub fn output_clash(run_dir: &Path, store: &Path) -> Option<String> {
    let run = resolved(run_dir);
    for (what, dir) in [
        ("the dataset store", store.to_path_buf()),
        ("the models directory", crate::models::dir()),
    ] {
        let other = resolved(&dir);
        if run.starts_with(&other) || other.starts_with(&run) {
            let how = if run == other {
                "is"
            } else if run.starts_with(&other) {
                "is inside"
            } else {
                "holds"
            };
            return Some(format!(
                "the run directory {} {how} {what} {}: a run there would overwrite or mix with \
                 its files; give `output` (or --output) a directory apart from it, e.g. the \
                 default results/runs",
                run_dir.display(),
                dir.display()
            ));
        }
    }
    None
}

/// A reader needs options to choose from: a dataset whose questions in use (`questions`, after
/// `limit`) include retrieval-only ones can only be paired with `kind: none` readers. The
/// problem names the dataset, the first such question, the reading readers and the fix.
fn readers_problem(cfg: &RunConfig, dataset: &str, questions: &[Question]) -> Option<String> {
    let unread: Vec<&Question> = questions.iter().filter(|q| q.is_retrieval_only()).collect();
    let first = unread.first()?;
    let reading: Vec<String> = cfg
        .readers
        .iter()
        .filter(|(_, r)| r.reads())
        .map(|(n, _)| format!("`{n}`"))
        .collect();
    if reading.is_empty() {
        return None;
    }
    Some(format!(
        "dataset `{dataset}`: {} of {} questions have no options (retrieval-only; the first is \
         {:?}), but reader(s) {} must choose among options; score such a dataset with \
         `readers: {{retrieval: {{kind: none}}}}` (retrieval metrics, no accuracy), in a config \
         of its own if other datasets need a reader",
        unread.len(),
        questions.len(),
        first.id,
        reading.join(", ")
    ))
}

/// Creates `dir` and a file in it, then removes the file.
fn writable(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .map_err(|e| format!("{} is not writable: {e}", dir.display()))
}

#[cfg(test)]
mod tests {

    #[test]
    fn headers_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.gguf");
        std::fs::write(&p, b"GGML....").unwrap();
        assert!(crate::readers::llm::gguf_header(&p)
            .unwrap_err()
            .contains("not a GGUF"));
        std::fs::write(&p, b"GGUF\x03\0\0\0").unwrap();
        assert!(crate::readers::llm::gguf_header(&p).is_ok());
        let st = dir.path().join("model.safetensors");
        std::fs::write(&st, [200u8, 0, 0, 0, 0, 0, 0, 0, b'{']).unwrap();
        assert!(crate::embedder::safetensors_header(&st)
            .unwrap_err()
            .contains("header length"));
        let mut ok = 2u64.to_le_bytes().to_vec();
        ok.extend_from_slice(b"{}");
        std::fs::write(&st, ok).unwrap();
        assert!(crate::embedder::safetensors_header(&st).is_ok());
    }
}
