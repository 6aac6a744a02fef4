//! Assembly: the run-level files (per_question, summary, chunk stats, plots, report.html)
//! built from the config's finished cells, and `chunkbench report`.

use super::*;

/// Where the chunk lengths of one (dataset, strategy) are kept: `chunks/HASH.json`, the hash
/// covering the dataset, the strategy name and its resolved parameters.
pub(super) fn chunk_lengths_path(
    dir: &Path,
    dataset: &str,
    strategy: &str,
    cfg: &crate::strategies::StrategyConfig,
) -> Result<PathBuf> {
    let key = serde_json::to_string(&(dataset, strategy, cfg))?;
    Ok(dir
        .join("chunks")
        .join(format!("{}.json", &sha256_hex(key.as_bytes())[..16])))
}

/// Builds the run-level files of `dir` from its `cells/`, in config order: per_question.csv,
/// summary.csv, summary.md, chunk_stats.csv, the plots, report.html (question and passage
/// texts from the datasets in `store`, used only when they are the files the cells read) and
/// manifest.json (with `extra` merged in). Exactly the cells of
/// `cfg` are used (`config_cells`, its [`RunConfig::cells`], computed once by the caller): finished cells of other configs in `cells/` (an edited config re-run into
/// the same directory) are kept for reuse but ignored and counted (the third value, also in
/// the manifest as `ignored_cells`); their TREC and explain files and stale plots are removed,
/// so the directory describes `cfg` only.
///
/// # Errors
/// A cell of the config missing from `cells/` (names it and the fix), unreadable cells, and
/// I/O errors.
pub fn assemble(
    cfg: &RunConfig,
    config_cells: &[Cell],
    dir: &Path,
    store: &Path,
    extra: serde_json::Value,
) -> Result<(Vec<CellRecord>, String, usize)> {
    let cells_dir = dir.join("cells");
    let ids: std::collections::BTreeSet<String> = config_cells.iter().map(Cell::id).collect();
    let ignored = records::foreign_cells(&cells_dir, &ids).len();
    for (sub, ext) in [("trec", "run"), ("explain", "jsonl")] {
        for stale in records::foreign_files(&dir.join(sub), ext, &ids) {
            std::fs::remove_file(&stale)
                .with_context(|| format!("cannot remove stale {}", stale.display()))?;
        }
    }
    let (cells, rows_by_cell, per_question) = read_cells(config_cells, &cells_dir)?;
    write_atomic(&dir.join("per_question.csv"), &per_question)?;
    let all_rows: Vec<QuestionRow> = cells
        .iter()
        .flat_map(|c| rows_by_cell[&c.id].iter().cloned())
        .collect();
    records::write_rows_parquet(&dir.join("per_question.parquet"), &all_rows)?;
    let (mut summary_md, comparisons, primary, family) =
        reporting::report::write_reports(dir, &cfg.report_settings(), &cells, &rows_by_cell)?;
    let corpora = load_corpora(cfg, store, &cells);
    let lengths = read_chunk_lengths(cfg, dir, &cells, &rows_by_cell, &corpora)?;
    let notes: Vec<String> = [
        reporting::report::indexed_note(&lengths),
        reporting::report::uncovered_note(&lengths),
        reporting::report::counters_note(&lengths),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !notes.is_empty() {
        summary_md.push_str(&notes.concat());
        write_atomic(&dir.join("summary.md"), summary_md.as_bytes())?;
    }
    reporting::report::write_chunk_stats(dir, &lengths)?;
    let plots = reporting::plots::write_plots(
        dir,
        &cells,
        &comparisons,
        &lengths,
        &cfg.sweep_points(),
        primary.as_ref(),
    )?;
    remove_stale_plots(dir, &plots)?;
    write_html(
        cfg,
        dir,
        (&cells, &rows_by_cell, &comparisons, family.as_ref()),
        &corpora,
        &plots,
        ignored,
    )?;
    let mut models: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for c in &cells {
        for (k, v) in c.inputs.iter().filter(|(k, _)| !k.starts_with("dataset/")) {
            models.entry(k.clone()).or_default().insert(v.clone());
        }
    }
    let resolved = serde_json::to_value(cfg)?;
    let mut manifest = serde_json::json!({
        "tool": "chunkbench",
        "version": env!("CARGO_PKG_VERSION"),
        "git_commit": git_commit(),
        "config": resolved,
        "config_sha256": sha256_hex(serde_json::to_string(&resolved)?.as_bytes()),
        "cells": cells.iter().map(|c| &c.id).collect::<Vec<_>>(),
        "cell_inputs": cells
            .iter()
            .map(|c| (c.id.clone(), serde_json::to_value(&c.inputs).unwrap_or_default()))
            .collect::<serde_json::Map<_, _>>(),
        "inputs": models,
        "ignored_cells": ignored,
        "plots": plots,
    });
    if let (Some(m), serde_json::Value::Object(extra)) = (manifest.as_object_mut(), extra) {
        m.extend(extra);
    }
    check_one_config(cfg, dir)?;
    write_json(&dir.join("manifest.json"), &manifest)?;
    Ok((cells, summary_md, ignored))
}

/// The last check before a run directory's manifest is written: its `config.json` is still
/// `cfg`, so every file assembled from `cfg`'s cells describes the config the directory says
/// (a writer that ignored the lock, e.g. an older chunkbench, would have rewritten it).
///
/// # Errors
/// A config.json that is missing, unreadable or another config, naming the directory and the
/// fix (a fresh run directory).
fn check_one_config(cfg: &RunConfig, dir: &Path) -> Result<()> {
    let p = dir.join("config.json");
    let on_disk: Option<serde_json::Value> = std::fs::read(&p)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if on_disk.as_ref() != Some(&serde_json::to_value(cfg)?) {
        bail!(
            "{} no longer holds this run's config ({}): another process wrote into {} while this \
             run did, so its files may mix two runs. Run again into a fresh --output directory",
            p.display(),
            match on_disk {
                Some(other) => format!("it now holds run {}", other["name"]),
                None => "it is missing or unreadable".to_string(),
            },
            dir.display()
        );
    }
    Ok(())
}

/// Each dataset of `cfg` from `store`, for the report's texts ([`reporting::html::Corpus::load`]:
/// a dataset that is missing or not the data the cells read becomes a note, never an error).
pub(super) fn load_corpora(
    cfg: &RunConfig,
    store: &Path,
    cells: &[CellRecord],
) -> Vec<reporting::html::Corpus> {
    cfg.datasets
        .iter()
        .map(|ds| {
            let of_ds: Vec<&CellRecord> = cells.iter().filter(|c| &c.cell.dataset == ds).collect();
            reporting::html::Corpus::load(store, ds, &of_ds)
        })
        .collect()
}

/// The chunk lengths the runner recorded for each (dataset, strategy) of `cfg` (`chunks/`),
/// with, for strategies that make their passages at query time, the words of each distinct
/// passage their cells retrieved (counted in the documents of `corpora`).
///
/// # Errors
/// A retrieved passage id that is not `DOC:START-END`.
pub(super) fn read_chunk_lengths(
    cfg: &RunConfig,
    dir: &Path,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
    corpora: &[reporting::html::Corpus],
) -> Result<Vec<records::ChunkLengths>> {
    let mut lengths = Vec::new();
    for ds in &cfg.datasets {
        let docs: HashMap<&str, &chunker::Document> = corpora
            .iter()
            .filter(|c| &c.name == ds)
            .flat_map(|c| c.documents.iter().map(|d| (d.id.as_str(), d)))
            .collect();
        for (name, s) in &cfg.strategies {
            let p = chunk_lengths_path(dir, ds, name, s)?;
            let Some(mut l) = std::fs::read(&p)
                .ok()
                .and_then(|b| serde_json::from_slice::<records::ChunkLengths>(&b).ok())
            else {
                continue;
            };
            if l.passages_at_query_time && !docs.is_empty() {
                let mut spans = std::collections::BTreeSet::new();
                for c in cells
                    .iter()
                    .filter(|c| &c.cell.dataset == ds && &c.cell.strategy == name)
                {
                    for r in rows.get(&c.id).into_iter().flatten() {
                        spans.extend(r.passages.iter());
                    }
                }
                let mut words = Vec::with_capacity(spans.len());
                for p in spans {
                    let text = docs
                        .get(p.doc_id.as_str())
                        .and_then(|d| d.text.get(p.span.start..p.span.end))
                        .with_context(|| {
                            format!(
                                "passage {p} of strategy `{name}` is not a slice of a document \
                                 of `{ds}` in the store; re-run the config"
                            )
                        })?;
                    words.push(chunker::count_words(text));
                }
                l.retrieved_words = Some(words);
            }
            lengths.push(l);
        }
    }
    Ok(lengths)
}

/// Rebuilds `report.html` of the finished run in `dir` from its `config.json`, `cells/`,
/// `explain/` and `plots/`, with question and passage texts from the datasets in `store`
/// (`chunkbench report`). Nothing else in the directory changes.
///
/// # Errors
/// A directory that is not a run (no readable config.json), a cell of the config missing from
/// `cells/` (naming it and the fix), unreadable cells or plots, and I/O errors.
pub fn report(dir: &Path, store: &Path) -> Result<PathBuf> {
    let p = dir.join("config.json");
    let bytes = std::fs::read(&p).with_context(|| {
        format!(
            "cannot read {}; give the run directory `chunkbench run` printed (OUTPUT/NAME)",
            p.display()
        )
    })?;
    let cfg: RunConfig = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{} is not the resolved config of this chunkbench version; re-run the config",
            p.display()
        )
    })?;
    let _lock = super::lock_run_dir(dir)?;
    let cells_dir = dir.join("cells");
    let config_cells = cfg.cells();
    let ids: std::collections::BTreeSet<String> = config_cells.iter().map(Cell::id).collect();
    let ignored = records::foreign_cells(&cells_dir, &ids).len();
    let (cells, rows_by_cell, _) = read_cells(&config_cells, &cells_dir)?;
    let (family, comparisons) =
        reporting::report::comparisons(&cfg.report_settings(), &cells, &rows_by_cell)?;
    let corpora = load_corpora(&cfg, store, &cells);
    let plots: Vec<String> = std::fs::read_dir(dir.join("plots"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "svg"))
                .map(|p| p.with_extension("png").display().to_string())
                .collect()
        })
        .unwrap_or_default();
    write_html(
        &cfg,
        dir,
        (&cells, &rows_by_cell, &comparisons, family.as_ref()),
        &corpora,
        &plots,
        ignored,
    )
}

/// A run's cells, their rows by cell id, each non-baseline cell's comparison, and the planned
/// family of the primary metric.
pub(super) type Results<'a> = (
    &'a [CellRecord],
    &'a HashMap<String, Vec<QuestionRow>>,
    &'a HashMap<String, records::Comparison>,
    Option<&'a reporting::verdicts::Family>,
);

/// Writes `dir/report.html` ([`reporting::html::write_run_report`]).
pub(super) fn write_html(
    cfg: &RunConfig,
    dir: &Path,
    (cells, rows, comparisons, family): Results<'_>,
    corpora: &[reporting::html::Corpus],
    plots: &[String],
    ignored_cells: usize,
) -> Result<PathBuf> {
    reporting::html::write_run_report(&reporting::html::RunReport {
        dir,
        settings: &cfg.report_settings(),
        cells,
        rows,
        comparisons,
        family,
        corpora,
        plots,
        ignored_cells,
    })
}

/// Records, rows by cell id, and per_question.csv's bytes.
pub(super) type CellRows = (Vec<CellRecord>, HashMap<String, Vec<QuestionRow>>, Vec<u8>);

/// The records and rows of the config's cells (`config_cells`, [`RunConfig::cells`]), in
/// config order, and their rows
/// concatenated as CSV bytes (one header): per_question.csv.
///
/// # Errors
/// A cell that is missing or was computed for another configuration (naming the shard fix),
/// and rows that cannot be read.
pub(super) fn read_cells(config_cells: &[Cell], cells_dir: &Path) -> Result<CellRows> {
    let mut per_question = Vec::new();
    let mut cells = Vec::new();
    let mut rows_by_cell: HashMap<String, Vec<QuestionRow>> = HashMap::new();
    for (i, c) in config_cells.iter().enumerate() {
        let (id, key) = (c.id(), c.key());
        let what = format!(
            "cell {id} ({} × {} × {} × {} × {})",
            c.dataset,
            c.strategy,
            c.retriever,
            c.depth_tag(),
            c.reader
        );
        let stored = match records::read_cell(cells_dir, &id) {
            Ok(s) if s.record.cell == key => s,
            Ok(_) => bail!(
                "{what}: {} holds another configuration under this id; delete the cell's two \
                 files and run the config again",
                cells_dir.join(format!("{id}.json")).display()
            ),
            Err(records::CellProblem::Missing) => bail!(
                "{what} is missing from {}; run the shard that owns it, or run without --shard",
                cells_dir.display()
            ),
            Err(damaged) => bail!(
                "{what}: {damaged}; run the config again (the cell is recomputed), or run the \
                 shard that owns it again"
            ),
        };
        let (rec, csv) = (stored.record, stored.csv);
        let path = cells_dir.join(format!("{id}.csv"));
        let rows = read_rows_csv(&csv, &path.display().to_string())?;
        let body = if i == 0 {
            &csv[..]
        } else {
            let nl = csv
                .iter()
                .position(|&b| b == b'\n')
                .map_or(csv.len(), |p| p + 1);
            &csv[nl..]
        };
        per_question.extend_from_slice(body);
        rows_by_cell.insert(id, rows);
        cells.push(rec);
    }
    let located: Vec<records::Located<'_>> = cells.iter().map(|c| (c, cells_dir)).collect();
    records::check_consistent(&located)?;
    Ok((cells, rows_by_cell, per_question))
}

/// Removes plots left by an earlier config (files in plots/ not among `plots`).
pub(super) fn remove_stale_plots(dir: &Path, plots: &[String]) -> Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir.join("plots")) {
        for e in entries.flatten() {
            let p = e.path();
            let is_plot = p.extension().is_some_and(|x| x == "png" || x == "svg");
            let current = plots
                .iter()
                .any(|w| Path::new(w).with_extension("") == p.with_extension(""));
            if is_plot && !current {
                std::fs::remove_file(&p)
                    .with_context(|| format!("cannot remove stale plot {}", p.display()))?;
            }
        }
    }
    Ok(())
}
