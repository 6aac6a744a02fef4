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

use crate::config::{Cell, RunConfig};
use crate::embedder::LazyEmbedder;
use crate::strategies::{Chunker, QuestionRecord, Ranked, Ranking, StrategyConfig};
use anyhow::{bail, Context, Result};
use chunker::{unique_words, Span};
use datasets::dataset::{Dataset, Question};
use datasets::io::{sha256_hex, write_atomic, write_json};
use rayon::prelude::*;
use reader::{LexicalReader, Reader, ReaderInput};
use records::inputs::CellInputs;
use records::{
    read_rows_csv, round6, rows_csv, summarize, CellEmbedder, CellRecord, ChunkLengths, Failure,
    QuestionRow, REPLY_BYTES,
};
use retriever::PassageIndex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

mod assemble;
mod budget;
mod chunk_checks;
use chunk_checks::{check_counters, log_strategy_stats, repeated_text_warning, uncovered_words};
mod identity;
mod lock;
mod progress;
mod score;
mod shards;
pub use crate::stop;
mod tokens;
mod writers;

pub use crate::version::{code_version, git_commit, set_build_commit};
use assemble::*;
pub use assemble::{assemble, report};
use identity::*;
pub use lock::{lock_run_dir, LOCK_FILE};
use progress::*;
use score::*;
pub use shards::{merge, Shard};
use tokens::*;
use writers::*;

/// The outcome of [`run`].
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run directory.
    pub dir: PathBuf,
    /// One record per cell, in config order.
    pub cells: Vec<CellRecord>,
    /// Cells reused from a previous, interrupted or identical run.
    pub reused: usize,
    /// Finished cells in `cells/` that are not cells of this config (left by an earlier,
    /// edited config); kept for reuse, ignored by every report.
    pub ignored: usize,
    /// The rendered Markdown summary.
    pub summary_md: String,
}

/// Runs the cells of `cfg` (all, or one shard's) on the datasets in `store`, writing each
/// finished cell into `cfg.output/cfg.name/cells/`. An unsharded run then assembles the
/// run-level files ([`assemble`]); a shard leaves that to [`merge`].
///
/// Before any compute, [`crate::preflight::prepare`] verifies everything the run would fail on
/// and reports all problems at once; the datasets it loaded and the strategies it built are
/// the ones the run uses (each dataset is loaded once, and dropped once its cells are done;
/// each strategy is built once and chunks every dataset).
///
/// # Errors
/// The preflight problems; invalid datasets (naming the file and line), I/O errors naming
/// the path, and reader errors naming the question.
pub fn run(cfg: &RunConfig, store: &Path, shard: Option<Shard>) -> Result<RunOutcome> {
    let started = Instant::now();
    let prepared = crate::preflight::prepare(cfg, store);
    if !prepared.problems.is_empty() {
        bail!(
            "the run cannot start ({} problem{}):\n  - {}",
            prepared.problems.len(),
            if prepared.problems.len() == 1 {
                ""
            } else {
                "s"
            },
            prepared.problems.join("\n  - ")
        );
    }
    let dir = cfg.output.join(&cfg.name);
    let cells_dir = dir.join("cells");
    std::fs::create_dir_all(&cells_dir)
        .with_context(|| format!("cannot create {}", cells_dir.display()))?;
    let _lock = lock_run_dir(&dir)?;
    write_json(&dir.join("config.json"), cfg)?;
    let all_cells = prepared.cells;
    let mine: Vec<&Cell> = all_cells
        .iter()
        .enumerate()
        .filter(|(p, _)| shard.is_none_or(|s| p % s.count == s.index - 1))
        .map(|(_, c)| c)
        .collect();
    let readers = ModelReaders::default();
    let embedder = LazyEmbedder::default();
    let runner = Runner {
        cfg,
        dir,
        cells_dir,
        code: code_version(),
        all_cells: &all_cells,
        progress: Progress::new(mine.len()),
        embedder: &embedder,
        readers: &readers,
        resolver: Resolver::new(cfg, &readers, &embedder),
    };
    let mut reused = 0;
    let mut datasets_meta = Vec::new();
    // Each dataset is dropped once its cells are done.
    for (ds_name, ds) in prepared.datasets {
        datasets_meta.push(dataset_meta(&ds));
        let d = DatasetStage::new(cfg, &ds_name, &ds);
        for (s_name, strategy) in &prepared.strategies {
            let pending = runner.pending(&d, &mine, s_name, &mut reused)?;
            if !pending.is_empty() {
                stop::check()?;
                runner.strategy_cells(
                    &d,
                    (s_name, &cfg.strategies[s_name]),
                    strategy.as_ref(),
                    &pending,
                )?;
            }
        }
    }
    let embeds = mine.iter().any(|c| c.embedder.is_some());
    let done = Done {
        started,
        shard,
        cells: mine.len(),
        reused,
        embeds,
        datasets: datasets_meta,
        store: store.to_path_buf(),
    };
    runner.finish(done)
}

/// A dataset's entry in the run's `manifest.json`: name, manifest hash, files and source.
fn dataset_meta(ds: &Dataset) -> serde_json::Value {
    serde_json::json!({
        "name": ds.name,
        "manifest_sha256": ds.manifest_sha256,
        "files": ds.manifest.files,
        "source": ds.manifest.source,
    })
}

/// What the last stage needs to know about the computed part of a run.
struct Done {
    started: Instant,
    shard: Option<Shard>,
    /// Cells of this shard (all cells without one).
    cells: usize,
    reused: usize,
    /// Whether any of this shard's cells embeds.
    embeds: bool,
    datasets: Vec<serde_json::Value>,
    /// The dataset store (the report's question and passage texts).
    store: PathBuf,
}

/// What the stages of one run share: the config, the run directory, the code version, the
/// progress display, and the models loaded on first use.
struct Runner<'a> {
    cfg: &'a RunConfig,
    dir: PathBuf,
    cells_dir: PathBuf,
    code: String,
    all_cells: &'a [Cell],
    progress: Progress,
    embedder: &'a LazyEmbedder,
    readers: &'a ModelReaders,
    resolver: Resolver<'a>,
}

/// One dataset's state shared by its cells: the loaded dataset, the questions in use (after
/// `limit`), the lexical reader and word map over its documents, the token counters, and the
/// content identities of its files.
struct DatasetStage<'a> {
    /// The dataset's name in the config (its directory in the store).
    name: &'a str,
    ds: &'a Dataset,
    questions: &'a [Question],
    docs: HashMap<&'a str, &'a chunker::Document>,
    lexical: LexicalReader,
    word_map: retriever::metrics::WordMap<'a>,
    char_map: retriever::metrics::CharMap,
    /// Per dataset: the memo is keyed by passage id, which two datasets may share.
    tokens: TokenCounters,
    inputs: CellInputs,
}

impl<'a> DatasetStage<'a> {
    fn new(cfg: &RunConfig, name: &'a str, ds: &'a Dataset) -> Self {
        DatasetStage {
            name,
            ds,
            questions: match cfg.limit {
                Some(n) => &ds.questions[..n.min(ds.questions.len())],
                None => &ds.questions,
            },
            docs: ds.documents.iter().map(|d| (d.id.as_str(), d)).collect(),
            lexical: LexicalReader::new(ds.documents.iter().map(|d| d.text.as_str())),
            word_map: retriever::metrics::WordMap::new(&ds.documents),
            char_map: retriever::metrics::CharMap::new(&ds.documents),
            tokens: TokenCounters::default(),
            inputs: ds
                .files_sha256
                .iter()
                .map(|(f, sha)| (format!("dataset/{f}"), sha.clone()))
                .collect(),
        }
    }

    fn name(&self) -> &str {
        self.name
    }
}

/// A retriever's result for one (dataset, strategy): per question its ranked passages at the
/// largest k of its cells, and the strategy's record of each question when it keeps one.
struct Retrieved {
    ranked: Vec<Vec<Ranked>>,
    records: Vec<Option<Arc<dyn QuestionRecord>>>,
    /// Vectors the retriever could not use (zero norm).
    degenerate: crate::retrievers::Degenerate,
}

impl Runner<'_> {
    /// Stages `assemble` and `report`: the run metadata, then, for a whole run, the run-level
    /// files from the config's cells ([`assemble`]); a shard writes only its metadata.
    fn finish(self, done: Done) -> Result<RunOutcome> {
        self.progress.cells.finish_and_clear();
        let run_meta = serde_json::json!({
            "embedder": self.embedder.report(done.embeds.then_some(&self.cfg.embedder)),
            "datasets": done.datasets,
            "cells_reused": done.reused,
            "threads": rayon::current_num_threads(),
            "elapsed_seconds": done.started.elapsed().as_secs_f64(),
            "shard": done.shard.map(|s| format!("{}/{}", s.index, s.count)),
        });
        let dir = self.dir;
        if let Some(s) = done.shard {
            write_json(
                &dir.join(format!("shard-{}-of-{}.json", s.index, s.count)),
                &run_meta,
            )?;
            return Ok(RunOutcome {
                dir: dir.clone(),
                cells: Vec::new(),
                reused: done.reused,
                ignored: 0,
                summary_md: format!(
                    "shard {}/{}: {} cells done ({} computed, {} reused from an earlier run) -> {}; \
                     join the shards with `chunkbench merge`",
                    s.index,
                    s.count,
                    done.cells,
                    done.cells - done.reused,
                    done.reused,
                    dir.display()
                ),
            });
        }
        let (cells, summary_md, ignored) =
            assemble(self.cfg, self.all_cells, &dir, &done.store, run_meta)?;
        Ok(RunOutcome {
            dir,
            cells,
            reused: done.reused,
            ignored,
            summary_md,
        })
    }

    /// Stage `reuse`: this shard's cells of (dataset, strategy) that must be computed, with
    /// their inputs; reused cells are counted and say nothing, recomputed ones say why.
    fn pending<'c>(
        &self,
        d: &DatasetStage,
        mine: &[&'c Cell],
        strategy: &str,
        reused: &mut usize,
    ) -> Result<Vec<(&'c Cell, CellInputs)>> {
        let mut pending = Vec::new();
        for &c in mine
            .iter()
            .filter(|c| c.dataset == d.name() && c.strategy == strategy)
        {
            let inputs = self.resolver.cell(c, &d.inputs)?;
            match cell_status(
                &self.cells_dir,
                c,
                &d.ds.manifest_sha256,
                &self.code,
                &inputs,
            ) {
                Reuse::Yes => {
                    *reused += 1;
                    self.progress.cells.inc(1);
                }
                Reuse::No(why) => {
                    if !why.is_empty() {
                        self.progress.log(format!(
                            "  cell {} ({} × {} × {} × {}) recomputed: {}",
                            c.id(),
                            c.strategy,
                            c.retriever,
                            c.depth_tag(),
                            c.reader,
                            why.join("; ")
                        ));
                    }
                    pending.push((c, inputs));
                }
            }
        }
        Ok(pending)
    }

    /// Stage `chunk`: builds the strategy, chunks the corpus (embedding when it must), records
    /// its chunk lengths and counters (`chunks/HASH.json`, for chunk_stats.csv and plots).
    fn chunk(
        &self,
        d: &DatasetStage,
        (s_name, s_cfg): (&str, &StrategyConfig),
        strategy: &dyn Chunker,
    ) -> Result<(Vec<chunker::Chunk>, Option<retriever::IndexedForm>)> {
        let ds_name = d.name();
        let t = Instant::now();
        let emb = if s_cfg.needs_embedder() {
            Some(self.embedder.get(&self.cfg.embedder)?)
        } else {
            None
        };
        let (chunks, mut stats) = strategy
            .chunk_corpus(&d.ds.documents, emb.as_deref())
            .with_context(|| format!("strategy `{s_name}` on `{ds_name}`"))?;
        self.progress.log(format!(
            "[{ds_name}] {s_name}: chunked in {:.1}s",
            t.elapsed().as_secs_f64()
        ));
        if !chunks.is_empty() {
            stats.uncovered_words = uncovered_words(&d.ds.documents, &chunks);
            let covered: std::collections::HashSet<&str> =
                chunks.iter().map(|c| c.doc_id.as_str()).collect();
            let (missed, nonblank) =
                d.ds.documents
                    .iter()
                    .filter(|doc| !doc.text.trim().is_empty())
                    .fold((0, 0), |(m, n), doc| {
                        (m + usize::from(!covered.contains(doc.id.as_str())), n + 1)
                    });
            if missed > 0 {
                self.progress.log(format!(
                    "warning: [{ds_name}] {s_name}: {missed} of {nonblank} non-empty documents \
                     have no chunk, so nothing of them can be retrieved"
                ));
            }
        }
        let t = Instant::now();
        let indexed = strategy
            .indexed(&d.ds.documents, &chunks, emb.as_deref(), &mut stats)
            .with_context(|| format!("strategy `{s_name}` on `{ds_name}`"))?;
        if let Some(form) = &indexed {
            stats.indexed = Some(form.label.clone());
            self.progress.log(format!(
                "[{ds_name}] {s_name}: indexed as {} in {:.1}s",
                form.label,
                t.elapsed().as_secs_f64()
            ));
        }
        stats.over_embedder_window =
            self.over_embedder_window(d, s_name, &chunks, indexed.as_ref())?;
        check_counters(strategy, &stats).with_context(|| format!("strategy `{s_name}`"))?;
        log_strategy_stats(
            &self.progress,
            ds_name,
            s_name,
            strategy,
            &stats,
            chunks.len(),
        );
        let lengths = ChunkLengths {
            dataset: ds_name.to_string(),
            strategy: s_name.to_string(),
            words: chunks.iter().map(|c| c.words).collect(),
            stats,
            passages_at_query_time: strategy.passages_at_query_time(),
            retrieved_words: None,
        };
        write_json(
            &chunk_lengths_path(&self.dir, ds_name, s_name, s_cfg)?,
            &lengths,
        )?;
        Ok((chunks, indexed))
    }

    /// Chunks longer than the embedder's window, counted whenever a cell of this (dataset,
    /// strategy) embeds passages, pending or not, so chunk_stats.csv does not depend on reuse
    /// or sharding; `None` when no cell embeds passages.
    fn over_embedder_window(
        &self,
        d: &DatasetStage,
        s_name: &str,
        chunks: &[chunker::Chunk],
        indexed: Option<&retriever::IndexedForm>,
    ) -> Result<Option<usize>> {
        let ds_name = d.name();
        if !self.all_cells.iter().any(|c| {
            c.dataset == ds_name && c.strategy == s_name && c.retriever_config.needs_embedder()
        }) {
            return Ok(None);
        }
        let e = self.embedder.get(&self.cfg.embedder)?;
        let Some(w) = crate::strategies::EmbedderWindow::of(e.as_ref()) else {
            return Ok(None);
        };
        // Late-chunked vectors are not embedded one chunk at a time: nothing is truncated.
        if indexed.is_some_and(|f| f.vectors.is_some()) {
            return Ok(Some(0));
        }
        let texts = indexed.and_then(|f| f.texts.as_deref());
        let n = chunks
            .par_iter()
            .enumerate()
            .filter(|(i, c)| match texts {
                Some(t) => w.exceeds(&t[*i]),
                None => d
                    .docs
                    .get(c.doc_id.as_str())
                    .is_some_and(|doc| w.exceeds(c.text(doc))),
            })
            .count();
        if n > 0 {
            self.progress.log(format!(
                "warning: [{ds_name}] {s_name}: {n} of {} chunks are longer than the \
                 embedder's {}-token window; dense retrieval embeds only their first \
                 {} tokens (chunk_stats.csv: over_embedder_window)",
                chunks.len(),
                w.max_tokens,
                w.max_tokens
            ));
        }
        Ok(Some(n))
    }

    /// Stages chunk → index → passages once for one (dataset, strategy), then per retriever
    /// retrieve once at the largest k of its pending cells and read each cell.
    fn strategy_cells(
        &self,
        d: &DatasetStage,
        (s_name, s_cfg): (&str, &StrategyConfig),
        strategy: &dyn Chunker,
        pending: &[(&Cell, CellInputs)],
    ) -> Result<()> {
        let (chunks, indexed) = self.chunk(d, (s_name, s_cfg), strategy)?;
        let mut index = self.index(d, s_name, chunks)?;
        if let Some(form) = indexed {
            index = index
                .with_indexed(form)
                .map_err(|e| anyhow::anyhow!("strategy `{s_name}` on `{}`: {e}", d.name()))?;
        }
        let passages = strategy
            .passages(&d.ds.documents, &index)
            .with_context(|| format!("strategy `{s_name}` on `{}`", d.name()))?;
        if let Some(line) = passages.describe() {
            self.progress
                .log(format!("[{}] {s_name}: {line}", d.name()));
        }
        for (r_name, r_cfg) in &self.cfg.retrievers {
            let r_cells: Vec<&(&Cell, CellInputs)> = pending
                .iter()
                .filter(|(c, _)| &c.retriever == r_name)
                .collect();
            let Some(kmax) = r_cells.iter().map(|(c, _)| c.k).max() else {
                continue;
            };
            let got = self.retrieve(d, &index, passages.as_ref(), (s_name, r_name, r_cfg), kmax)?;
            for (cell, inputs) in r_cells {
                stop::check()?;
                self.read_cell(d, cell, inputs, (&index, &got))?;
            }
        }
        Ok(())
    }

    /// Stage `index`: the chunks as exact slices of their documents.
    fn index(
        &self,
        d: &DatasetStage,
        s_name: &str,
        chunks: Vec<chunker::Chunk>,
    ) -> Result<PassageIndex> {
        let index = PassageIndex::new(&d.ds.documents, chunks)
            .map_err(|e| anyhow::anyhow!("strategy `{s_name}` on `{}`: {e}", d.name()))?;
        self.progress.log(format!(
            "[{}] {s_name}: {} passages from {} documents",
            d.name(),
            index.len(),
            d.ds.documents.len()
        ));
        if let Some(w) = repeated_text_warning(index.passage_bytes(), index.document_bytes()) {
            self.progress
                .log(format!("warning: [{}] {s_name}: {w}", d.name()));
        }
        Ok(index)
    }

    /// Stages `retrieve` and `passages`: the retriever's top `kmax` per question over the
    /// index, then the strategy's query-time step (windows, EAR) on them.
    fn retrieve(
        &self,
        d: &DatasetStage,
        index: &PassageIndex,
        passages: &dyn crate::strategies::Passages,
        (s_name, r_name, r_cfg): (&str, &str, &crate::config::RetrieverConfig),
        kmax: usize,
    ) -> Result<Retrieved> {
        let t = Instant::now();
        let emb = if r_cfg.needs_embedder() && passages.uses_hits() {
            Some(self.embedder.get(&self.cfg.embedder)?)
        } else {
            None
        };
        let retrieval = if passages.uses_hits() {
            retrieve(
                index,
                d.questions,
                r_cfg,
                kmax,
                emb.as_deref(),
                &self.progress,
            )
            .with_context(|| format!("retriever `{r_name}` on `{}`/{s_name}", d.name()))?
        } else {
            crate::retrievers::Retrieval {
                hits: vec![Vec::new(); d.questions.len()],
                degenerate: Default::default(),
            }
        };
        let (hits, degenerate) = (retrieval.hits, retrieval.degenerate);
        if degenerate != Default::default() {
            self.progress.log(format!(
                "  warning: [{}] {s_name} × {r_name}: the embedder returned degenerate (zero) \
                 vectors for {} of {} passages (never retrieved) and for every query of {} of \
                 {} questions (dense retrieval gave them no passage); counted per cell in \
                 summary.md; check the embedding server",
                d.name(),
                degenerate.passages,
                index.len(),
                degenerate.queries,
                d.questions.len()
            ));
        }
        let bar = self.progress.stage("passages", d.questions.len());
        let rankings: Vec<Ranking> = d
            .questions
            .par_iter()
            .zip(&hits)
            .map(|(q, h)| {
                let r = passages.rank(&d.ds.documents, index, q, h, kmax);
                bar.inc(1);
                r
            })
            .collect();
        bar.finish_and_clear();
        let (ranked, records): (Vec<Vec<Ranked>>, Vec<_>) =
            rankings.into_iter().map(|r| (r.ranked, r.record)).unzip();
        self.progress.log(format!(
            "[{}] {s_name} × {r_name}: top-{kmax} for {} questions in {:.1}s",
            d.name(),
            d.questions.len(),
            t.elapsed().as_secs_f64()
        ));
        Ok(Retrieved {
            ranked,
            records,
            degenerate,
        })
    }

    /// Stages `read` and `score` for one cell, then its files: the reader answers every
    /// question on its top-k passages, each row is scored, and the cell's rows, TREC run,
    /// strategy explanations and record are written (rows first, record last: a cell counts as
    /// finished once its record exists).
    fn read_cell(
        &self,
        d: &DatasetStage,
        cell: &Cell,
        inputs: &CellInputs,
        (index, got): (&PassageIndex, &Retrieved),
    ) -> Result<()> {
        let model_reader;
        let reader: Option<&dyn Reader> = if !cell.reader_config.reads() {
            None
        } else if cell.reader_config.per_dataset() {
            Some(&d.lexical)
        } else {
            model_reader = self.readers.get(&cell.reader, &cell.reader_config)?;
            Some(model_reader.as_ref())
        };
        let counter = d.tokens.counter(self.cfg, reader)?;
        let cx = ScoreContext {
            docs: &d.docs,
            words: &d.word_map,
            chars: &d.char_map,
            index,
        };
        self.progress.cells.set_message(format!(
            "{} × {} × {} × {}",
            cell.strategy,
            cell.retriever,
            cell.depth_tag(),
            cell.reader
        ));
        let bar = self.progress.stage("read", d.questions.len());
        let cell_id = cell.id();
        let rows: Vec<QuestionRow> = d
            .questions
            .par_iter()
            .zip(&got.ranked)
            .enumerate()
            .map(|(i, (q, h))| {
                stop::check()?;
                let top = &h[..h.len().min(cell.k)];
                let filled;
                let passages = match &cell.budget {
                    None => top,
                    Some(b) => {
                        filled = budget::fill_budget(top, b, &d.docs, &counter)
                            .with_context(|| format!("question {}", q.id))?;
                        &filled[..]
                    }
                };
                let row = answer(
                    cell,
                    &cell_id,
                    q,
                    passages,
                    got.records[i].as_deref(),
                    &cx,
                    reader,
                    &counter,
                );
                bar.inc(1);
                row
            })
            .collect::<Result<_>>()?;
        bar.finish_and_clear();
        self.write_cell(d, cell, cell_id, inputs, got, &rows, counter.name())
    }

    /// The files of a finished cell: TREC run, strategy explanations, rows, and the record last
    /// (a cell counts as finished once its record exists); then its log line.
    #[allow(clippy::too_many_arguments)]
    fn write_cell(
        &self,
        d: &DatasetStage,
        cell: &Cell,
        cell_id: String,
        inputs: &CellInputs,
        got: &Retrieved,
        rows: &[QuestionRow],
        tokens_by: String,
    ) -> Result<()> {
        write_trec(&self.dir, &cell_id, d.questions, &got.ranked, cell.k)?;
        write_explain(
            &self.dir,
            &cell_id,
            d.questions,
            &got.records,
            rows,
            cell.k,
            &d.ds.documents,
        )?;
        let csv = rows_csv(rows)?;
        let rec = CellRecord {
            id: cell_id,
            cell: cell.key(),
            dataset_manifest_sha256: d.ds.manifest_sha256.clone(),
            code: self.code.clone(),
            inputs: inputs.clone(),
            tokens_by,
            rows_sha256: sha256_hex(&csv),
            record_sha256: String::new(),
            summary: records::CellSummary {
                degenerate_passages: got.degenerate.passages,
                degenerate_queries: got.degenerate.queries,
                ..summarize(rows)
            },
        };
        write_atomic(&self.cells_dir.join(format!("{}.csv", rec.id)), &csv)?;
        let rec =
            records::write_cell_record(&self.cells_dir.join(format!("{}.json", rec.id)), &rec)?;
        self.progress.cells.inc(1);
        let invalid = if rec.summary.invalid > 0 {
            format!(", {} invalid answers", rec.summary.invalid)
        } else {
            String::new()
        };
        self.progress.log(format!(
            "  cell {} {} × {} × {} × {}: accuracy {}{invalid}",
            rec.id,
            cell.strategy,
            cell.retriever,
            cell.depth_tag(),
            cell.reader,
            reporting::fmt::accuracy(&rec.summary)
        ));
        Ok(())
    }
}

/// Resolves the content identities of cells ([`records::inputs`]), each file hashed once per
/// run (and once per content across runs, [`datasets::filehash`]).
struct Resolver<'a> {
    cfg: &'a RunConfig,
    readers: &'a ModelReaders,
    embedder: &'a LazyEmbedder,
    memo: std::sync::Mutex<HashMap<String, CellInputs>>,
}

impl<'a> Resolver<'a> {
    fn new(cfg: &'a RunConfig, readers: &'a ModelReaders, embedder: &'a LazyEmbedder) -> Self {
        Resolver {
            cfg,
            readers,
            embedder,
            memo: Default::default(),
        }
    }

    /// Memoised `make` under `key`.
    fn memo(&self, key: &str, make: impl FnOnce() -> Result<CellInputs>) -> Result<CellInputs> {
        if let Some(v) = self.memo.lock().expect("input memo").get(key) {
            return Ok(v.clone());
        }
        let v = make()?;
        self.memo
            .lock()
            .expect("input memo")
            .insert(key.to_string(), v.clone());
        Ok(v)
    }

    fn file(name: &str, path: &Path) -> Result<CellInputs> {
        // A named BPE encoding (`tokenizer: cl100k_base`) is no file: its name and the
        // pinned crate that holds it are its identity.
        if let Some(id) = path.to_str().and_then(chunker::units::bpe_identity) {
            return Ok(CellInputs::from([(name.to_string(), id)]));
        }
        let sha = datasets::filehash::sha256_file_cached(path)
            .with_context(|| format!("{name}: cannot hash {}", path.display()))?;
        Ok(CellInputs::from([(name.to_string(), sha)]))
    }

    /// The inputs of `cell`, on top of its dataset's.
    fn cell(&self, cell: &Cell, dataset: &CellInputs) -> Result<CellInputs> {
        let mut out = dataset.clone();
        if let Some(CellEmbedder::Server { .. }) = &cell.embedder {
            // What a server serves is known only by asking it: its identity carries the
            // fingerprint of its answer to the probe text (built once per run).
            let e = self.embedder.get(&self.cfg.embedder)?;
            out.insert("embedder/server".into(), e.identity());
            for (input, p) in self.cfg.embedder.input_files() {
                out.extend(self.memo(&format!("{input} {}", p.display()), || {
                    Self::file(&input, &p)
                })?);
            }
        }
        if let Some(CellEmbedder::Model(model)) = &cell.embedder {
            let model = &crate::models::resolve(model);
            out.extend(self.memo(&format!("embedder {}", model.display()), || {
                let mut m = CellInputs::new();
                for f in embed::model_files(model)
                    .with_context(|| format!("field `embedder.model`: {}", model.display()))?
                {
                    let rel = f.strip_prefix(model).unwrap_or(&f).display().to_string();
                    m.extend(Self::file(&format!("embedder/{rel}"), &f)?);
                }
                Ok(m)
            })?);
        }
        if let Some(p) = cell.strategy_config.tokenizer_file() {
            out.extend(self.memo(&format!("tok {}", p.display()), || {
                Self::file("strategy/tokenizer", &p)
            })?);
        }
        let sc = &cell.strategy_config;
        let key = format!("strategy-server {}", serde_json::to_string(sc)?);
        out.extend(self.memo(&key, || {
            let mut m = CellInputs::new();
            if let Some(id) = sc
                .server_identity()
                .with_context(|| format!("strategy `{}`", cell.strategy))?
            {
                m.insert("strategy/server".into(), id);
            }
            Ok(m)
        })?);
        for (input, p) in cell.strategy_config.input_files() {
            out.extend(self.memo(&format!("{input} {}", p.display()), || {
                Self::file(&input, &p)
            })?);
        }
        let rc = &cell.reader_config;
        for (input, path) in rc.input_files() {
            out.extend(self.memo(&format!("{input} {}", path.display()), || {
                Self::file(input, &path)
            })?);
        }
        if rc.identity_is_input() {
            let r = self.readers.get(&cell.reader, rc)?;
            out.insert("reader/server".into(), r.identity());
        }
        if !rc.counts_own_tokens() {
            if let Some(t) = &self.cfg.cost_tokenizer {
                let mut t = crate::models::resolve(t);
                if t.is_dir() {
                    t.push("tokenizer.json");
                }
                out.extend(self.memo(&format!("cost {}", t.display()), || {
                    Self::file("cost/tokenizer", &t)
                })?);
            }
        }
        Ok(out)
    }
}

/// LLM and server readers, built on first use and shared by every cell that names them,
/// each behind its response cache.
#[derive(Default)]
struct ModelReaders {
    built: std::sync::Mutex<HashMap<String, std::sync::Arc<dyn Reader>>>,
}

impl ModelReaders {
    fn get(
        &self,
        name: &str,
        cfg: &crate::config::ReaderConfig,
    ) -> Result<std::sync::Arc<dyn Reader>> {
        let mut built = self.built.lock().expect("reader registry");
        if let Some(r) = built.get(name) {
            return Ok(r.clone());
        }
        let r = cfg.build(name)?;
        built.insert(name.to_string(), r.clone());
        Ok(r)
    }
}

/// Top-`kmax` hits per question for one retriever entry (ranking deterministic, so smaller k
/// take the prefix): the questions' query texts and document scopes, then the registered
/// kind's [`crate::retrievers::Retriever`].
fn retrieve(
    index: &PassageIndex,
    questions: &[Question],
    r: &crate::config::RetrieverConfig,
    kmax: usize,
    embedder: Option<&dyn embed::Embedder>,
    progress: &Progress,
) -> Result<crate::retrievers::Retrieval> {
    let queries: Vec<Vec<String>> = questions
        .iter()
        .map(|q| retriever::query_texts(r.query(), &q.question, &q.options))
        .collect();
    let scopes: Vec<Option<Vec<bool>>> = questions
        .iter()
        .map(|q| index.scope_mask(q.doc_ids.as_deref()))
        .collect();
    let stage = |name: &str, n: usize| progress.stage(name, n);
    let input = crate::retrievers::Input {
        index,
        queries: &queries,
        scopes: &scopes,
        embedder,
        stage: &stage,
    };
    r.build()?.retrieve(&input, kmax)
}
