//! The runner: datasets → chunks → passage index → top-k → reader → per-question rows.
//!
//! Work is shared: chunks and the passage index are built once per (dataset, strategy), the
//! retriever index once per (dataset, strategy, retriever), and retrieval runs once at the
//! largest k (smaller k take the prefix; ranking is deterministic, so the prefix is exactly
//! the top-k). Questions run in parallel with rayon; results are collected in question order,
//! so outputs do not depend on the thread count.
//!
//! Each finished cell is written atomically to `cells/ID.csv` (its rows) and `cells/ID.json`
//! (its summary); a re-run reuses a cell whose stored configuration and dataset hash match, so
//! an interrupted run resumes where it stopped.

use crate::config::{Cell, QueryForm, RunConfig};
use crate::dataset::{Dataset, Question};
use crate::io::{sha256_hex, write_atomic, write_json};
use crate::report::{summarize, CellSummary};
use anyhow::{Context, Result};
use chunker::{unique_words, Span};
use rayon::prelude::*;
use reader::{LexicalReader, Reader, ReaderInput};
use retriever::{Bm25, Bm25Params, Hit, PassageIndex};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One row of `per_question.csv`: one (cell, question) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionRow {
    /// Cell id ([`Cell::id`]).
    pub cell_id: String,
    /// Dataset name.
    pub dataset: String,
    /// Strategy name.
    pub strategy: String,
    /// Retriever name.
    pub retriever: String,
    /// Top-k.
    pub k: usize,
    /// Reader name.
    pub reader: String,
    /// Question id.
    pub question_id: String,
    /// Gold option index (0-based).
    pub gold: usize,
    /// Chosen option index (0-based).
    pub choice: usize,
    /// 1 when correct (chosen = gold and no tie), else 0.
    pub correct: u8,
    /// Options sharing the best score (1 = no tie).
    pub tied: usize,
    /// Per-option reader scores, `;`-separated, 6 decimals.
    pub scores: String,
    /// Retrieved passage ids (`DOC:START-END`, bytes), best first, space-separated.
    pub passages: String,
    /// Retriever scores of those passages, `;`-separated, 6 decimals.
    pub passage_scores: String,
    /// Words retrieved, counted with multiplicity (sum over passages).
    pub words: usize,
    /// Unique words retrieved (union of the passages' spans per document).
    pub unique_words: usize,
    /// Whether a retrieved passage overlaps a gold evidence span; empty when the question
    /// has no evidence.
    pub evidence_hit: Option<u8>,
}

/// What a cell stores next to its rows in `cells/ID.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// Cell id.
    pub id: String,
    /// The resolved cell.
    pub cell: Cell,
    /// sha256 of the dataset manifest the cell was computed on.
    pub dataset_manifest_sha256: String,
    /// Aggregates over the cell's rows.
    pub summary: CellSummary,
}

/// The outcome of [`run`].
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run directory.
    pub dir: PathBuf,
    /// One record per cell, in config order.
    pub cells: Vec<CellRecord>,
    /// Cells reused from a previous, interrupted or identical run.
    pub reused: usize,
    /// The rendered Markdown summary.
    pub summary_md: String,
}

fn query_text(q: &Question, form: QueryForm) -> String {
    match form {
        QueryForm::Question => q.question.clone(),
        QueryForm::QuestionOptions => {
            let mut s = q.question.clone();
            for o in &q.options {
                s.push('\n');
                s.push_str(o);
            }
            s
        }
    }
}

fn fmt_scores(xs: impl Iterator<Item = f64>) -> String {
    xs.map(|x| format!("{x:.6}")).collect::<Vec<_>>().join(";")
}

/// Loads a reusable cell from `cells/`, if present and matching.
fn load_cell(dir: &Path, cell: &Cell, data_sha: &str) -> Option<(CellRecord, Vec<u8>)> {
    let id = cell.id();
    let rec: CellRecord =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{id}.json"))).ok()?).ok()?;
    let rows = std::fs::read(dir.join(format!("{id}.csv"))).ok()?;
    (rec.cell == *cell && rec.dataset_manifest_sha256 == data_sha && rec.id == id)
        .then_some((rec, rows))
}

fn rows_csv(rows: &[QuestionRow], header: bool) -> Result<Vec<u8>> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(header)
        .from_writer(Vec::new());
    for r in rows {
        w.serialize(r)?;
    }
    w.into_inner().context("csv buffer")
}

/// Runs every cell of `cfg` on the datasets in `store`, writing into `cfg.output/cfg.name/`.
///
/// # Errors
/// Missing or invalid datasets (naming the file and line), I/O errors naming the path, and
/// reader errors naming the question.
pub fn run(cfg: &RunConfig, store: &Path, config_text: &str) -> Result<RunOutcome> {
    let started = Instant::now();
    let dir = cfg.output.join(&cfg.name);
    let cells_dir = dir.join("cells");
    std::fs::create_dir_all(&cells_dir)
        .with_context(|| format!("cannot create {}", cells_dir.display()))?;
    let all_cells = cfg.cells();
    let mut records: BTreeMap<String, (CellRecord, Vec<u8>)> = BTreeMap::new();
    let mut reused = 0;
    let mut datasets_meta = Vec::new();
    for ds_name in &cfg.datasets {
        let ds = Dataset::load(&store.join(ds_name))
            .with_context(|| format!("dataset `{ds_name}` (listed in `datasets`)"))?;
        datasets_meta.push(serde_json::json!({
            "name": ds.name,
            "dir": ds.dir,
            "manifest_sha256": ds.manifest_sha256,
            "files": ds.manifest.files,
            "source": ds.manifest.source,
        }));
        let questions: &[Question] = match cfg.limit {
            Some(n) => &ds.questions[..n.min(ds.questions.len())],
            None => &ds.questions,
        };
        let docs: HashMap<&str, &chunker::Document> =
            ds.documents.iter().map(|d| (d.id.as_str(), d)).collect();
        let lexical = LexicalReader::new(ds.documents.iter().map(|d| d.text.as_str()));
        for (s_name, s_cfg) in &cfg.strategies {
            let group: Vec<&Cell> = all_cells
                .iter()
                .filter(|c| &c.dataset == ds_name && &c.strategy == s_name)
                .collect();
            let mut pending = Vec::new();
            for c in group {
                match load_cell(&cells_dir, c, &ds.manifest_sha256) {
                    Some(hit) => {
                        reused += 1;
                        records.insert(hit.0.id.clone(), hit);
                    }
                    None => pending.push(c),
                }
            }
            if pending.is_empty() {
                continue;
            }
            let fixed = s_cfg.fixed()?;
            let chunks: Vec<chunker::Chunk> =
                ds.documents.iter().flat_map(|d| fixed.chunk(d)).collect();
            let index = PassageIndex::new(&ds.documents, chunks)
                .map_err(|e| anyhow::anyhow!("strategy `{s_name}` on `{ds_name}`: {e}"))?;
            eprintln!(
                "[{ds_name}] {s_name}: {} passages from {} documents",
                index.len(),
                ds.documents.len()
            );
            for (r_name, r_cfg) in &cfg.retrievers {
                let r_cells: Vec<&Cell> = pending
                    .iter()
                    .copied()
                    .filter(|c| &c.retriever == r_name)
                    .collect();
                let Some(kmax) = r_cells.iter().map(|c| c.k).max() else {
                    continue;
                };
                let bm25 = Bm25::new(
                    &index,
                    Bm25Params {
                        k1: r_cfg.k1,
                        b: r_cfg.b,
                    },
                );
                let t = Instant::now();
                let hits: Vec<Vec<Hit>> = questions
                    .par_iter()
                    .map(|q| {
                        let scope = index.scope_mask(q.doc_ids.as_deref());
                        bm25.search(&query_text(q, r_cfg.query), kmax, scope.as_deref())
                    })
                    .collect();
                eprintln!(
                    "[{ds_name}] {s_name} × {r_name}: top-{kmax} for {} questions in {:.1}s",
                    questions.len(),
                    t.elapsed().as_secs_f64()
                );
                for cell in r_cells {
                    let reader: &dyn Reader = match cell.reader_config.kind {
                        crate::config::ReaderKind::Lexical => &lexical,
                    };
                    let rows: Vec<QuestionRow> = questions
                        .par_iter()
                        .zip(&hits)
                        .map(|(q, h)| {
                            answer(cell, q, &h[..h.len().min(cell.k)], &index, &docs, reader)
                        })
                        .collect::<Result<_>>()?;
                    let summary = summarize(&rows);
                    let rec = CellRecord {
                        id: cell.id(),
                        cell: cell.clone(),
                        dataset_manifest_sha256: ds.manifest_sha256.clone(),
                        summary,
                    };
                    let csv = rows_csv(&rows, true)?;
                    write_atomic(&cells_dir.join(format!("{}.csv", rec.id)), &csv)?;
                    write_json(&cells_dir.join(format!("{}.json", rec.id)), &rec)?;
                    records.insert(rec.id.clone(), (rec, csv));
                }
            }
        }
    }
    // Assemble run-level files in config order.
    let mut per_question = Vec::new();
    let mut cells = Vec::new();
    for (i, c) in all_cells.iter().enumerate() {
        let (rec, csv) = records
            .remove(&c.id())
            .with_context(|| format!("cell {} was not computed", c.id()))?;
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
        cells.push(rec);
    }
    write_atomic(&dir.join("per_question.csv"), &per_question)?;
    let mut rows_by_cell: HashMap<String, Vec<QuestionRow>> = HashMap::new();
    for rec in &cells {
        let path = cells_dir.join(format!("{}.csv", rec.id));
        let rows = csv::Reader::from_path(&path)
            .and_then(|mut r| r.deserialize().collect::<Result<Vec<QuestionRow>, _>>())
            .with_context(|| format!("cannot read cell rows {}", path.display()))?;
        rows_by_cell.insert(rec.id.clone(), rows);
    }
    let summary_md = crate::report::write_reports(&dir, cfg, &cells, &rows_by_cell)?;
    let resolved = serde_json::to_value(cfg)?;
    let manifest = serde_json::json!({
        "tool": "chunkbench",
        "version": env!("CARGO_PKG_VERSION"),
        "git_commit": git_commit(),
        "config": resolved,
        "config_sha256": sha256_hex(serde_json::to_string(&resolved)?.as_bytes()),
        "config_source_sha256": sha256_hex(config_text.as_bytes()),
        "datasets": datasets_meta,
        "cells": cells.iter().map(|c| &c.id).collect::<Vec<_>>(),
        "cells_reused": reused,
        "threads": rayon::current_num_threads(),
        "elapsed_seconds": started.elapsed().as_secs_f64(),
    });
    write_json(&dir.join("manifest.json"), &manifest)?;
    Ok(RunOutcome {
        dir,
        cells,
        reused,
        summary_md,
    })
}

/// Retrieval bookkeeping and reading for one question of one cell.
fn answer(
    cell: &Cell,
    q: &Question,
    hits: &[Hit],
    index: &PassageIndex,
    docs: &HashMap<&str, &chunker::Document>,
    reader: &dyn Reader,
) -> Result<QuestionRow> {
    let passages: Vec<&str> = hits.iter().map(|h| index.text(h.passage)).collect();
    let out = reader
        .read(&ReaderInput {
            question: &q.question,
            options: &q.options,
            passages: &passages,
        })
        .with_context(|| format!("question {}", q.id))?;
    let chunks: Vec<&chunker::Chunk> = hits.iter().map(|h| &index.passages()[h.passage]).collect();
    let mut by_doc: BTreeMap<&str, Vec<Span>> = BTreeMap::new();
    for c in &chunks {
        by_doc.entry(c.doc_id.as_str()).or_default().push(c.span);
    }
    let unique = by_doc
        .iter()
        .map(|(d, spans)| docs.get(d).map_or(0, |doc| unique_words(&doc.text, spans)))
        .sum();
    let evidence_hit = q.evidence.as_ref().map(|ev| {
        u8::from(chunks.iter().any(|c| {
            ev.iter()
                .any(|e| e.doc_id == c.doc_id && c.span.overlap(&e.span()) > 0)
        }))
    });
    Ok(QuestionRow {
        cell_id: cell.id(),
        dataset: cell.dataset.clone(),
        strategy: cell.strategy.clone(),
        retriever: cell.retriever.clone(),
        k: cell.k,
        reader: cell.reader.clone(),
        question_id: q.id.clone(),
        gold: q.gold(),
        choice: out.choice,
        correct: u8::from(out.is_correct(q.gold())),
        tied: out.tied,
        scores: fmt_scores(out.scores.iter().copied()),
        passages: chunks.iter().map(|c| c.id()).collect::<Vec<_>>().join(" "),
        passage_scores: fmt_scores(hits.iter().map(|h| h.score)),
        words: chunks.iter().map(|c| c.words).sum(),
        unique_words: unique,
        evidence_hit,
    })
}

/// The git commit of the working directory (`git rev-parse HEAD`, with `-dirty` when there
/// are uncommitted changes), or `unknown` outside a checkout.
pub fn git_commit() -> String {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match run(&["rev-parse", "HEAD"]) {
        Some(head) => {
            let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head}-dirty")
            } else {
                head
            }
        }
        None => "unknown".into(),
    }
}
