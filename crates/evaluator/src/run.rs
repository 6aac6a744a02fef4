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
use crate::strategies::{Ranked, Ranking, StrategyConfig};
use anyhow::{bail, Context, Result};
use chunker::{unique_words, Span};
use datasets::dataset::{Dataset, Question};
use datasets::io::{sha256_hex, write_atomic, write_json};
use rayon::prelude::*;
use reader::{LexicalReader, Reader, ReaderInput};
use reporting::inputs::CellInputs;
use reporting::records::{
    read_rows_csv, round6, rows_csv, summarize, CellEmbedder, CellRecord, ChunkLengths, Failure,
    QuestionRow, REPLY_BYTES,
};
use retriever::PassageIndex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

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

/// The code identity stored in each cell: `chunkbench VERSION@GIT_COMMIT` (the commit with
/// `-dirty` for uncommitted changes, `unknown` outside a checkout).
pub fn code_version() -> String {
    format!("chunkbench {}@{}", env!("CARGO_PKG_VERSION"), git_commit())
}

/// Whether a stored cell can be reused.
enum Reuse {
    /// Stored with this configuration, code, dataset manifest and inputs.
    Yes,
    /// Not stored (empty list), or stored but stale: why.
    No(Vec<String>),
}

/// Checks `cells/` for a finished cell with this configuration, computed by the same code
/// (`code`) on the dataset whose manifest hashes to `data_sha` and on the same `inputs`.
fn cell_status(dir: &Path, cell: &Cell, data_sha: &str, code: &str, inputs: &CellInputs) -> Reuse {
    let id = cell.id();
    let r = match reporting::records::read_cell(dir, &id) {
        Ok(stored) => stored.record,
        Err(reporting::records::CellProblem::Missing) => return Reuse::No(Vec::new()),
        Err(damaged) => return Reuse::No(vec![damaged.to_string()]),
    };
    let mut why = Vec::new();
    if r.cell != cell.key() {
        why.push("its stored configuration differs".to_string());
    }
    if r.code != code {
        why.push(format!("the code changed ({} → {code})", r.code));
    }
    if r.dataset_manifest_sha256 != data_sha {
        why.push("the dataset manifest changed".to_string());
    }
    why.extend(reporting::inputs::changed(&r.inputs, inputs));
    if why.is_empty() {
        Reuse::Yes
    } else {
        Reuse::No(why)
    }
}

/// Progress display: on a terminal, a bar over the run's cells and a bar over the questions
/// of the current stage, both with ETAs (indicatif); otherwise plain log lines on stderr.
struct Progress {
    multi: Option<indicatif::MultiProgress>,
    cells: indicatif::ProgressBar,
}

impl Progress {
    fn new(total_cells: usize) -> Self {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            let multi = indicatif::MultiProgress::new();
            let cells = multi.add(indicatif::ProgressBar::new(total_cells as u64));
            cells.set_style(
                indicatif::ProgressStyle::with_template(
                    "cells  {bar:30} {pos}/{len} [{elapsed_precise} < {eta}] {msg}",
                )
                .expect("static template"),
            );
            Progress {
                multi: Some(multi),
                cells,
            }
        } else {
            Progress {
                multi: None,
                cells: indicatif::ProgressBar::hidden(),
            }
        }
    }

    /// A bar over `n` questions for one stage (hidden when not on a terminal).
    fn stage(&self, name: &str, n: usize) -> indicatif::ProgressBar {
        match &self.multi {
            Some(m) => {
                let b = m.add(indicatif::ProgressBar::new(n as u64));
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{prefix:>10} {bar:30} {pos}/{len} [{elapsed_precise} < {eta}]",
                    )
                    .expect("static template"),
                );
                b.set_prefix(name.to_string());
                b
            }
            None => indicatif::ProgressBar::hidden(),
        }
    }

    /// A log line: above the bars on a terminal, plain stderr otherwise; through the
    /// redaction layer ([`httpio::redact`]).
    fn log(&self, line: String) {
        let line = httpio::redact(&line);
        match &self.multi {
            Some(m) => {
                let _ = m.println(line);
            }
            None => eprintln!("{line}"),
        }
    }
}

/// A deterministic slice of a run's cells: shard `index` of `count` (1-based) takes the
/// cells at positions `p` (config order) with `p % count == index - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based shard number.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("--shard {s:?}: expected I/N with 1 <= I <= N, e.g. 2/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// Runs the cells of `cfg` (all, or one shard's) on the datasets in `store`, writing each
/// finished cell into `cfg.output/cfg.name/cells/`. An unsharded run then assembles the
/// run-level files ([`assemble`]); a shard leaves that to [`merge`].
///
/// Before any compute, [`crate::preflight::check`] verifies everything the run would fail on
/// and reports all problems at once.
///
/// # Errors
/// The preflight problems; invalid datasets (naming the file and line), I/O errors naming
/// the path, and reader errors naming the question.
pub fn run(cfg: &RunConfig, store: &Path, shard: Option<Shard>) -> Result<RunOutcome> {
    let started = Instant::now();
    let problems = crate::preflight::check(cfg, store);
    if !problems.is_empty() {
        bail!(
            "the run cannot start ({} problem{}):\n  - {}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            problems.join("\n  - ")
        );
    }
    let dir = cfg.output.join(&cfg.name);
    let cells_dir = dir.join("cells");
    std::fs::create_dir_all(&cells_dir)
        .with_context(|| format!("cannot create {}", cells_dir.display()))?;
    write_json(&dir.join("config.json"), cfg)?;
    let all_cells = cfg.cells();
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
    for ds_name in &cfg.datasets {
        let (ds, meta) = runner.load(store, ds_name)?;
        datasets_meta.push(meta);
        let d = DatasetStage::new(cfg, ds_name, &ds);
        for (s_name, s_cfg) in &cfg.strategies {
            let pending = runner.pending(&d, &mine, s_name, &mut reused)?;
            if !pending.is_empty() {
                runner.strategy_cells(&d, s_name, s_cfg, &pending)?;
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
/// largest k of its cells, and EAR's per-question records when the strategy keeps them.
struct Retrieved {
    ranked: Vec<Vec<Ranked>>,
    ear: Option<Vec<retriever::ear::EarResult>>,
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
        let (cells, summary_md, ignored) = assemble(self.cfg, &dir, &done.store, run_meta)?;
        Ok(RunOutcome {
            dir,
            cells,
            reused: done.reused,
            ignored,
            summary_md,
        })
    }

    /// Stage `load`: the dataset (hashes checked against its manifest) and its manifest entry.
    fn load(&self, store: &Path, name: &str) -> Result<(Dataset, serde_json::Value)> {
        let ds = Dataset::load(&store.join(name))
            .with_context(|| format!("dataset `{name}` (listed in `datasets`)"))?;
        let meta = serde_json::json!({
            "name": ds.name,
            "manifest_sha256": ds.manifest_sha256,
            "files": ds.manifest.files,
            "source": ds.manifest.source,
        });
        Ok((ds, meta))
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
                            "  cell {} ({} × {} × k={} × {}) recomputed: {}",
                            c.id(),
                            c.strategy,
                            c.retriever,
                            c.k,
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
        s_name: &str,
        s_cfg: &StrategyConfig,
    ) -> Result<(Box<dyn crate::strategies::Chunker>, Vec<chunker::Chunk>)> {
        let ds_name = d.name();
        let strategy = s_cfg
            .build()
            .with_context(|| format!("strategy `{s_name}`"))?;
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
        stats.over_embedder_window = self.over_embedder_window(d, s_name, &chunks)?;
        log_strategy_stats(
            &self.progress,
            ds_name,
            s_name,
            strategy.as_ref(),
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
        Ok((strategy, chunks))
    }

    /// Chunks longer than the embedder's window, counted whenever a cell of this (dataset,
    /// strategy) embeds passages, pending or not, so chunk_stats.csv does not depend on reuse
    /// or sharding; `None` when no cell embeds passages.
    fn over_embedder_window(
        &self,
        d: &DatasetStage,
        s_name: &str,
        chunks: &[chunker::Chunk],
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
        let n = chunks
            .par_iter()
            .filter(|c| {
                d.docs
                    .get(c.doc_id.as_str())
                    .is_some_and(|doc| w.exceeds(c.text(doc)))
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
        s_name: &str,
        s_cfg: &StrategyConfig,
        pending: &[(&Cell, CellInputs)],
    ) -> Result<()> {
        let (strategy, chunks) = self.chunk(d, s_name, s_cfg)?;
        let index = self.index(d, s_name, chunks)?;
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
            rankings.into_iter().map(|r| (r.ranked, r.ear)).unzip();
        let ear = passages.records_ear().then(|| {
            records
                .into_iter()
                .map(|r| r.expect("EAR records every question"))
                .collect()
        });
        self.progress.log(format!(
            "[{}] {s_name} × {r_name}: top-{kmax} for {} questions in {:.1}s",
            d.name(),
            d.questions.len(),
            t.elapsed().as_secs_f64()
        ));
        Ok(Retrieved {
            ranked,
            ear,
            degenerate,
        })
    }

    /// Stages `read` and `score` for one cell, then its files: the reader answers every
    /// question on its top-k passages, each row is scored, and the cell's rows, TREC run,
    /// EAR explanations and record are written (rows first, record last: a cell counts as
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
            "{} × {} × k={} × {}",
            cell.strategy, cell.retriever, cell.k, cell.reader
        ));
        let bar = self.progress.stage("read", d.questions.len());
        let cell_id = cell.id();
        let rows: Vec<QuestionRow> = d
            .questions
            .par_iter()
            .zip(&got.ranked)
            .enumerate()
            .map(|(i, (q, h))| {
                let row = answer(
                    cell,
                    &cell_id,
                    q,
                    &h[..h.len().min(cell.k)],
                    got.ear.as_ref().map(|r| &r[i].stats),
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

    /// The files of a finished cell: TREC run, EAR explanations, rows, and the record last
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
        if let Some(rs) = &got.ear {
            write_explain(
                &self.dir,
                &cell_id,
                d.questions,
                rs,
                rows,
                cell.k,
                &d.ds.documents,
            )?;
        }
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
            summary: reporting::records::CellSummary {
                degenerate_passages: got.degenerate.passages,
                degenerate_queries: got.degenerate.queries,
                ..summarize(rows)
            },
        };
        write_atomic(&self.cells_dir.join(format!("{}.csv", rec.id)), &csv)?;
        let rec = reporting::records::write_cell_record(
            &self.cells_dir.join(format!("{}.json", rec.id)),
            &rec,
        )?;
        self.progress.cells.inc(1);
        let invalid = if rec.summary.invalid > 0 {
            format!(", {} invalid answers", rec.summary.invalid)
        } else {
            String::new()
        };
        self.progress.log(format!(
            "  cell {} {} × {} × k={} × {}: accuracy {}{invalid}",
            rec.id,
            cell.strategy,
            cell.retriever,
            cell.k,
            cell.reader,
            reporting::report::fmt_accuracy(&rec.summary)
        ));
        Ok(())
    }
}

/// Logs what a strategy's counters say about its size limits: units split at `size`, chunks
/// over `size` (a warning), embedded units the embedder truncated (a warning).
fn log_strategy_stats(
    progress: &Progress,
    ds: &str,
    name: &str,
    strategy: &dyn crate::strategies::Chunker,
    s: &crate::strategies::StrategyStats,
    chunks: usize,
) {
    let limit = strategy.size_limit();
    let size = limit
        .as_ref()
        .map_or(String::new(), |l| format!("{} {}", l.size(), l.unit()));
    if s.units_split_at_size > 0 {
        progress.log(format!(
            "[{ds}] {name}: {} units split at size ({size})",
            s.units_split_at_size
        ));
    }
    if s.over_size > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: {} of {chunks} chunks are longer than size {size} \
             (indivisible pieces; chunk_stats.csv: over_size)",
            s.over_size
        ));
    }
    if s.blank_chunks_dropped > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: {} chunks held only whitespace or zero-width characters \
             and were not indexed",
            s.blank_chunks_dropped
        ));
    }
    if s.uncovered_words > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: {} words of the corpus are in no chunk, so they can never \
             be retrieved (summary.md: uncovered words)",
            s.uncovered_words
        ));
    }
    if s.degenerate_vectors > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: the embedder returned {} degenerate (zero) vectors for \
             units of this strategy; they were compared as similarity 0 (chunk_stats.csv: \
             degenerate_vectors)",
            s.degenerate_vectors
        ));
    }
    if s.embedded_units_truncated > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: {} of {} embedded units are longer than the embedder's \
             window and were truncated when embedded (chunk_stats.csv: embedded_units_truncated)",
            s.embedded_units_truncated, s.embedded_units
        ));
    }
}

/// Words of `docs` ([`chunker::word_spans`]) that share no byte with any of the `chunks` of
/// their document: text a strategy left out of every chunk, which no retriever can return
/// (docs/reference.md (cases) invariant 3, coverage, checked for every strategy that chunks
/// the corpus; a word cut by a chunk boundary, or whose separator a `keep_separator: discard`
/// chunker dropped, still counts as covered).
fn uncovered_words(docs: &[chunker::Document], chunks: &[chunker::Chunk]) -> usize {
    let mut by_doc: HashMap<&str, Vec<Span>> = HashMap::new();
    for c in chunks {
        by_doc.entry(c.doc_id.as_str()).or_default().push(c.span);
    }
    docs.par_iter()
        .map(|d| {
            let mut spans = by_doc.get(d.id.as_str()).cloned().unwrap_or_default();
            spans.sort_by_key(|s| (s.start, s.end));
            // Merged, disjoint, in order.
            let mut union: Vec<Span> = Vec::with_capacity(spans.len());
            for s in spans {
                match union.last_mut() {
                    Some(u) if s.start <= u.end => u.end = u.end.max(s.end),
                    _ => union.push(s),
                }
            }
            let mut j = 0;
            chunker::word_spans(&d.text)
                .into_iter()
                .filter(|w| {
                    while j < union.len() && union[j].end <= w.start {
                        j += 1;
                    }
                    !(j < union.len() && union[j].start < w.end)
                })
                .count()
        })
        .sum()
}

/// Resolves the content identities of cells ([`reporting::inputs`]), each file hashed once per
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

/// What counts the `tokens` column of a cell, with a memo per passage span.
struct TokenCounter<'a> {
    by: TokensBy<'a>,
    memo: &'a std::sync::Mutex<HashMap<(String, String), usize>>,
}

enum TokensBy<'a> {
    Reader(&'a dyn Reader, String),
    Tokenizer(std::sync::Arc<chunker::HfTokenizer>, String),
    None,
}

impl TokenCounter<'_> {
    /// `reader:NAME`, `tokenizer.json:PATH` or `none`.
    fn name(&self) -> String {
        match &self.by {
            TokensBy::Reader(_, n) => format!("reader:{n}"),
            TokensBy::Tokenizer(t, p) if t.is_named() => format!("bpe:{p}"),
            TokensBy::Tokenizer(_, p) => format!("tokenizer.json:{p}"),
            TokensBy::None => "none".into(),
        }
    }

    /// Tokens of `text` (the passage `id`), or `None` when nothing counts tokens.
    fn count(&self, id: &str, text: &str) -> Option<usize> {
        let (who, f): (&str, Box<dyn Fn() -> Option<usize> + '_>) = match &self.by {
            TokensBy::Reader(r, n) => (n, Box::new(|| r.count_tokens(text))),
            TokensBy::Tokenizer(t, p) => (p, Box::new(|| Some(t.count(text)))),
            TokensBy::None => return None,
        };
        let key = (who.to_string(), id.to_string());
        if let Some(&n) = self.memo.lock().expect("token memo").get(&key) {
            return Some(n);
        }
        let n = f()?;
        self.memo.lock().expect("token memo").insert(key, n);
        Some(n)
    }
}

/// The run's token counters: the cost tokenizer (loaded once) and the shared memo.
#[derive(Default)]
struct TokenCounters {
    cost: std::sync::OnceLock<std::sync::Arc<chunker::HfTokenizer>>,
    memo: std::sync::Mutex<HashMap<(String, String), usize>>,
}

impl TokenCounters {
    /// The counter for a cell read by `reader`: the reader's own tokenizer, else the run's
    /// `cost_tokenizer`, else none.
    fn counter<'a>(
        &'a self,
        cfg: &RunConfig,
        reader: Option<&'a dyn Reader>,
    ) -> Result<TokenCounter<'a>> {
        let by = if let Some((reader, name)) =
            reader.and_then(|r| r.tokenizer_name().map(|n| (r, n)))
        {
            TokensBy::Reader(reader, name)
        } else if let Some(path) = &cfg.cost_tokenizer {
            let t = match self.cost.get() {
                Some(t) => t.clone(),
                None => {
                    let file = crate::models::resolve(path);
                    let t = chunker::HfTokenizer::from_file(&file)
                        .with_context(|| format!("field `cost_tokenizer`: {}", file.display()))?;
                    self.cost.get_or_init(|| std::sync::Arc::new(t)).clone()
                }
            };
            TokensBy::Tokenizer(t, path.display().to_string())
        } else {
            TokensBy::None
        };
        Ok(TokenCounter {
            by,
            memo: &self.memo,
        })
    }
}

/// Where the chunk lengths of one (dataset, strategy) are kept: `chunks/HASH.json`, the hash
/// covering the dataset, the strategy name and its resolved parameters.
fn chunk_lengths_path(
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
/// `cfg` are used: finished cells of other configs in `cells/` (an edited config re-run into
/// the same directory) are kept for reuse but ignored and counted (the third value, also in
/// the manifest as `ignored_cells`); their TREC and explain files and stale plots are removed,
/// so the directory describes `cfg` only.
///
/// # Errors
/// A cell of the config missing from `cells/` (names it and the fix), unreadable cells, and
/// I/O errors.
pub fn assemble(
    cfg: &RunConfig,
    dir: &Path,
    store: &Path,
    extra: serde_json::Value,
) -> Result<(Vec<CellRecord>, String, usize)> {
    let cells_dir = dir.join("cells");
    let ids: std::collections::BTreeSet<String> = cfg.cells().iter().map(Cell::id).collect();
    let ignored = reporting::records::foreign_cells(&cells_dir, &ids).len();
    for (sub, ext) in [("trec", "run"), ("explain", "jsonl")] {
        for stale in reporting::records::foreign_files(&dir.join(sub), ext, &ids) {
            std::fs::remove_file(&stale)
                .with_context(|| format!("cannot remove stale {}", stale.display()))?;
        }
    }
    let (cells, rows_by_cell, per_question) = read_cells(cfg, &cells_dir)?;
    write_atomic(&dir.join("per_question.csv"), &per_question)?;
    let all_rows: Vec<QuestionRow> = cells
        .iter()
        .flat_map(|c| rows_by_cell[&c.id].iter().cloned())
        .collect();
    reporting::records::write_rows_parquet(&dir.join("per_question.parquet"), &all_rows)?;
    let (mut summary_md, comparisons) =
        reporting::report::write_reports(dir, &cfg.report_settings(), &cells, &rows_by_cell)?;
    let corpora = load_corpora(cfg, store, &cells);
    let lengths = read_chunk_lengths(cfg, dir, &cells, &rows_by_cell, &corpora)?;
    if let Some(note) = reporting::report::uncovered_note(&lengths) {
        summary_md.push_str(&note);
        write_atomic(&dir.join("summary.md"), summary_md.as_bytes())?;
    }
    reporting::report::write_chunk_stats(dir, &lengths)?;
    let plots = reporting::plots::write_plots(dir, &cells, &comparisons, &lengths)?;
    remove_stale_plots(dir, &plots)?;
    write_html(
        cfg,
        dir,
        (&cells, &rows_by_cell, &comparisons),
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
    write_json(&dir.join("manifest.json"), &manifest)?;
    Ok((cells, summary_md, ignored))
}

/// Each dataset of `cfg` from `store`, for the report's texts ([`reporting::html::Corpus::load`]:
/// a dataset that is missing or not the data the cells read becomes a note, never an error).
fn load_corpora(
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
fn read_chunk_lengths(
    cfg: &RunConfig,
    dir: &Path,
    cells: &[CellRecord],
    rows: &HashMap<String, Vec<QuestionRow>>,
    corpora: &[reporting::html::Corpus],
) -> Result<Vec<reporting::records::ChunkLengths>> {
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
                .and_then(|b| serde_json::from_slice::<reporting::records::ChunkLengths>(&b).ok())
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
                        spans.extend(r.passages.iter().map(String::as_str));
                    }
                }
                let mut words = Vec::with_capacity(spans.len());
                for id in spans {
                    let (doc, span) = chunker::Chunk::parse_id(id)
                        .with_context(|| format!("passage id {id:?} is not DOC:START-END"))?;
                    let text = docs
                        .get(doc)
                        .and_then(|d| d.text.get(span.start..span.end))
                        .with_context(|| {
                            format!(
                                "passage {id} of strategy `{name}` is not a slice of a document \
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
    let cells_dir = dir.join("cells");
    let ids: std::collections::BTreeSet<String> = cfg.cells().iter().map(Cell::id).collect();
    let ignored = reporting::records::foreign_cells(&cells_dir, &ids).len();
    let (cells, rows_by_cell, _) = read_cells(&cfg, &cells_dir)?;
    let comparisons =
        reporting::report::compare_cells(&cfg.report_settings(), &cells, &rows_by_cell)?;
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
        (&cells, &rows_by_cell, &comparisons),
        &corpora,
        &plots,
        ignored,
    )
}

/// A run's cells, their rows by cell id, and each non-baseline cell's comparison.
type Results<'a> = (
    &'a [CellRecord],
    &'a HashMap<String, Vec<QuestionRow>>,
    &'a HashMap<String, reporting::records::Comparison>,
);

/// Writes `dir/report.html` ([`reporting::html::write_run_report`]).
fn write_html(
    cfg: &RunConfig,
    dir: &Path,
    (cells, rows, comparisons): Results<'_>,
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
        corpora,
        plots,
        ignored_cells,
    })
}

/// Records, rows by cell id, and per_question.csv's bytes.
type CellRows = (Vec<CellRecord>, HashMap<String, Vec<QuestionRow>>, Vec<u8>);

/// The records and rows of the config's cells, in config order, and their rows
/// concatenated as CSV bytes (one header): per_question.csv.
///
/// # Errors
/// A cell that is missing or was computed for another configuration (naming the shard fix),
/// and rows that cannot be read.
fn read_cells(cfg: &RunConfig, cells_dir: &Path) -> Result<CellRows> {
    let mut per_question = Vec::new();
    let mut cells = Vec::new();
    let mut rows_by_cell: HashMap<String, Vec<QuestionRow>> = HashMap::new();
    for (i, c) in cfg.cells().iter().enumerate() {
        let (id, key) = (c.id(), c.key());
        let what = format!(
            "cell {id} ({} × {} × {} × k={} × {})",
            c.dataset, c.strategy, c.retriever, c.k, c.reader
        );
        let stored = match reporting::records::read_cell(cells_dir, &id) {
            Ok(s) if s.record.cell == key => s,
            Ok(_) => bail!(
                "{what}: {} holds another configuration under this id; delete the cell's two \
                 files and run the config again",
                cells_dir.join(format!("{id}.json")).display()
            ),
            Err(reporting::records::CellProblem::Missing) => bail!(
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
    let located: Vec<reporting::records::Located<'_>> =
        cells.iter().map(|c| (c, cells_dir)).collect();
    reporting::records::check_consistent(&located)?;
    Ok((cells, rows_by_cell, per_question))
}

/// Removes plots left by an earlier config (files in plots/ not among `plots`).
fn remove_stale_plots(dir: &Path, plots: &[String]) -> Result<()> {
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

/// Joins shard run directories into `out`: copies every cell of the shards' config (checking
/// that all shards ran the same resolved config), then assembles the run-level files from
/// exactly that config's cells. The result equals the unsharded run's per_question.csv,
/// summary.csv and summary.md byte for byte. An `out` that already holds another run (a
/// config.json that differs) is refused unless `force`; with it, the other run's cells stay in
/// `cells/` but are ignored and counted (the last value).
///
/// # Errors
/// Shards with different configs, an `out` holding another run without `force`, missing
/// cells, and I/O errors naming the path.
pub fn merge(
    shard_dirs: &[PathBuf],
    out: &Path,
    store: &Path,
    force: bool,
) -> Result<(RunConfig, Vec<CellRecord>, String, usize)> {
    let first = shard_dirs
        .first()
        .context("name at least one shard directory")?;
    if let Some(clash) = crate::preflight::output_clash(out, store) {
        bail!("merge OUT: {clash}");
    }
    // Shards differ only in where they wrote their output.
    let read_cfg = |d: &Path| -> Result<RunConfig> {
        let p = d.join("config.json");
        let bytes = std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?;
        let mut cfg: RunConfig = serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a chunkbench run config", p.display()))?;
        cfg.output = PathBuf::new();
        Ok(cfg)
    };
    let cfg = read_cfg(first)?;
    if out.join("config.json").exists() && !shard_dirs.iter().any(|d| d == out) {
        let other = read_cfg(out).ok();
        if other.as_ref() != Some(&cfg) && !force {
            bail!(
                "{} already holds {}; merging into it would mix two runs. Merge into a new \
                 directory, or pass --force to make it describe the shards' run (its other \
                 cells stay in cells/ for reuse but are ignored)",
                out.display(),
                match &other {
                    Some(c) => format!("another run (`{}`, a different config)", c.name),
                    None => "a config.json that is not a chunkbench run config".to_string(),
                }
            );
        }
    }
    let ids: std::collections::BTreeSet<String> = cfg.cells().iter().map(Cell::id).collect();
    // Every shard's finished cells of the config, verified, and checked to come from one
    // version of the data, inputs and code before anything is copied.
    let mut stored: Vec<(reporting::records::CellRecord, PathBuf)> = Vec::new();
    for d in shard_dirs {
        if read_cfg(d)? != cfg {
            bail!(
                "{} ran a different config than {}; only shards of one run can be merged",
                d.display(),
                first.display()
            );
        }
        let shard_cells = d.join("cells");
        for id in &ids {
            match reporting::records::read_cell(&shard_cells, id) {
                Ok(s) => stored.push((s.record, shard_cells.clone())),
                Err(reporting::records::CellProblem::Missing) => {}
                Err(damaged) => bail!(
                    "shard {}: {damaged}; run that shard again, then merge",
                    d.display()
                ),
            }
        }
    }
    // OUT's own cells of the config (merging into an existing run) are assembled with the
    // shards' ones, so they are checked too, before anything in OUT is overwritten.
    if !shard_dirs.iter().any(|d| d == out) {
        let out_cells = out.join("cells");
        for id in &ids {
            if let Ok(s) = reporting::records::read_cell(&out_cells, id) {
                stored.push((s.record, out_cells.clone()));
            }
        }
    }
    let located: Vec<reporting::records::Located<'_>> =
        stored.iter().map(|(r, p)| (r, p.as_path())).collect();
    reporting::records::check_consistent(&located)?;
    let cells_out = out.join("cells");
    std::fs::create_dir_all(&cells_out)
        .with_context(|| format!("cannot create {}", cells_out.display()))?;
    let mut datasets = serde_json::Value::Null;
    for d in shard_dirs {
        for sub in ["cells", "chunks", "explain", "trec"] {
            let Ok(entries) = std::fs::read_dir(d.join(sub)) else {
                continue;
            };
            for entry in entries {
                let p = entry?.path();
                let of_cfg = sub == "chunks"
                    || p.file_stem()
                        .and_then(|s| s.to_str())
                        .is_some_and(|s| ids.contains(s));
                if let Some(name) = p.file_name().filter(|_| p.is_file() && of_cfg) {
                    let dest = out.join(sub).join(name);
                    if p != dest {
                        write_atomic(&dest, &std::fs::read(&p)?)?;
                    }
                }
            }
        }
        for entry in std::fs::read_dir(d)?.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("shard-") && datasets.is_null() {
                let v: serde_json::Value = serde_json::from_slice(&std::fs::read(entry.path())?)?;
                datasets = v["datasets"].clone();
            }
        }
    }
    write_json(&out.join("config.json"), &cfg)?;
    let extra = serde_json::json!({
        "datasets": datasets,
        "merged_from": shard_dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
    });
    let (cells, md, ignored) = assemble(&cfg, out, store, extra)?;
    Ok((cfg, cells, md, ignored))
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

/// Writes the cell's TREC run file `trec/CELL.run` (`qid Q0 docid rank score tag`); every
/// passage of a rank gets its own line, with the rank's score.
fn write_trec(
    dir: &Path,
    cell_id: &str,
    questions: &[Question],
    ranked: &[Vec<Ranked>],
    k: usize,
) -> Result<()> {
    let mut buf = Vec::new();
    {
        let mut w = retriever::trec::RunWriter::new(&mut buf, cell_id)?;
        for (q, r) in questions.iter().zip(ranked) {
            let lines: Vec<(String, f64)> = r
                .iter()
                .take(k)
                .flat_map(|g| g.chunks.iter().map(move |c| (c.id(), g.score)))
                .collect();
            w.write_ranking(&q.id, &lines)?;
        }
    }
    write_atomic(&dir.join("trec").join(format!("{cell_id}.run")), &buf)
}

/// An EAR result as ranks: each passage (window, parent or fallback parent), followed by its
/// summary sentences.
/// Writes `explain/CELL.jsonl` for an EAR cell: per question (in order) its anchors, the
/// bookkeeping of [`retriever::ear::EarStats`], its failure attribution and, per retrieved
/// passage, the matched anchors (query side and corpus side, kinds, normalised forms, byte
/// offsets and texts) and the score parts. Read by `chunkbench explain`.
fn write_explain(
    dir: &Path,
    cell_id: &str,
    questions: &[Question],
    results: &[retriever::ear::EarResult],
    rows: &[QuestionRow],
    k: usize,
    docs: &[chunker::Document],
) -> Result<()> {
    let mut out = Vec::new();
    for ((q, r), row) in questions.iter().zip(results).zip(rows) {
        let record = reporting::explain::ExplainLine::of(q, r, row, k, docs);
        // Through a Value: keys sorted, as the files have always been written.
        let line = serde_json::to_value(&record)?;
        serde_json::to_writer(&mut out, &line)?;
        out.push(b'\n');
    }
    write_atomic(&dir.join("explain").join(format!("{cell_id}.jsonl")), &out)
}

/// Stage `score`, retrieval side: what a question's retrieved passages are worth against
/// its gold evidence and answer strings, before (or without) a reader.
struct RetrievalScores {
    unique_words: usize,
    /// hit@k: some retrieved passage overlaps a gold span (`None` without evidence); the
    /// failure attribution's input.
    evidence_hit: Option<u8>,
    /// Every registered metric ([`retriever::metrics::METRICS`]).
    metrics: retriever::metrics::MetricValues,
}

/// What scoring a question's retrieval reads besides its passages: the documents, the word
/// and character maps, and the index (for precision_Ω, over all passages of the evidence's
/// documents).
struct ScoreContext<'a> {
    docs: &'a HashMap<&'a str, &'a chunker::Document>,
    words: &'a retriever::metrics::WordMap<'a>,
    chars: &'a retriever::metrics::CharMap,
    index: &'a PassageIndex,
}

/// Unique words (overlapping spans once), the evidence hit (hit@k) and every registered
/// metric, from the retrieved passages (ranks with several passages and EAR summaries
/// flattened in rank order), the gold evidence, the answer strings and the index passages of
/// the evidence's documents (precision_Ω: the best retrieval this chunking allows; absent for
/// a strategy without an index).
fn score_retrieval(
    q: &Question,
    chunks: &[&chunker::Chunk],
    passages: &[&str],
    cx: &ScoreContext<'_>,
    k: usize,
) -> RetrievalScores {
    use retriever::metrics::DocSpan;
    let mut by_doc: BTreeMap<&str, Vec<Span>> = BTreeMap::new();
    for c in chunks {
        by_doc.entry(c.doc_id.as_str()).or_default().push(c.span);
    }
    let unique_words = by_doc
        .iter()
        .map(|(d, spans)| {
            cx.docs
                .get(d)
                .map_or(0, |doc| unique_words(&doc.text, spans))
        })
        .sum();
    let retrieved: Vec<DocSpan> = chunks.iter().map(|c| DocSpan::from(*c)).collect();
    let evidence: Vec<DocSpan> = q
        .evidence
        .iter()
        .flatten()
        .map(|e| DocSpan::new(&e.doc_id, e.start, e.end))
        .collect();
    let mut ev_docs: Vec<&str> = evidence.iter().map(|e| e.doc_id).collect();
    ev_docs.sort_unstable();
    ev_docs.dedup();
    let all: Vec<DocSpan> = ev_docs
        .iter()
        .flat_map(|d| cx.index.doc_passages(d))
        .map(DocSpan::from)
        .collect();
    let answers = q.answer_strings();
    let input = retriever::metrics::ScoreInput::new(
        &retrieved,
        passages,
        &evidence,
        &answers,
        k,
        cx.words,
        cx.chars,
        // A strategy without an index (oracle, no-retrieval) has no chunking to bound.
        (!cx.index.is_empty()).then_some(all.as_slice()),
    );
    RetrievalScores {
        unique_words,
        evidence_hit: input.rank().map(|m| u8::from(m.hit > 0.0)),
        metrics: retriever::metrics::MetricValues::compute(&input),
    }
}

/// Stages `read` and `score` for one question of one cell: the reader's answer on the
/// passages (none for a cell without a reader), then the row with its retrieval scores,
/// costs and failure attribution.
#[allow(clippy::too_many_arguments)]
fn answer(
    cell: &Cell,
    cell_id: &str,
    q: &Question,
    ranked: &[Ranked],
    ear: Option<&retriever::ear::EarStats>,
    cx: &ScoreContext<'_>,
    reader: Option<&dyn Reader>,
    tokens: &TokenCounter<'_>,
) -> Result<QuestionRow> {
    let chunks: Vec<&chunker::Chunk> = ranked.iter().flat_map(|r| &r.chunks).collect();
    let passages: Vec<&str> = chunks
        .iter()
        .map(|c| {
            cx.docs
                .get(c.doc_id.as_str())
                .map_or("", |d| &d.text[c.span.start..c.span.end])
        })
        .collect();
    let out = match reader {
        Some(reader) => Some(
            reader
                .read(&ReaderInput {
                    question: &q.question,
                    options: &q.options,
                    passages: &passages,
                })
                .with_context(|| format!("question {}", q.id))?,
        ),
        None => None,
    };
    let m = score_retrieval(q, &chunks, &passages, cx, cell.k);
    let gold = q.gold();
    let correct = out.as_ref().map(|o| gold.is_some_and(|g| o.is_correct(g)));
    let token_count: Option<usize> = chunks
        .iter()
        .zip(&passages)
        .map(|(c, t)| tokens.count(&c.id(), t))
        .sum();
    // Attribution judges an answer: a cell without a reader has none to attribute.
    let failure = match (&out, correct) {
        (Some(o), Some(c)) => Some(Failure::attribute(
            c,
            o.invalid,
            ear.map(|e| (e.question_anchors + e.option_anchors, e.matched_forms)),
            m.evidence_hit,
        )),
        _ => None,
    };
    Ok(QuestionRow {
        cell_id: cell_id.to_string(),
        dataset: cell.dataset.clone(),
        strategy: cell.strategy.clone(),
        retriever: cell.retriever.clone(),
        k: cell.k,
        reader: cell.reader.clone(),
        question_id: q.id.clone(),
        gold,
        // Only a single, valid choice is a choice: an invalid reply or a tie between the best
        // options names none, so `choice == gold` never counts either as correct.
        choice: out
            .as_ref()
            .filter(|o| !o.invalid && o.tied <= 1)
            .map(|o| o.choice),
        correct: correct.map(u8::from),
        tied: out.as_ref().map_or(0, |o| o.tied),
        invalid: out.as_ref().map_or(0, |o| u8::from(o.invalid)),
        scores: out
            .as_ref()
            .map(|o| o.scores.iter().map(|&x| round6(x)).collect())
            .unwrap_or_default(),
        passages: chunks.iter().map(|c| c.id()).collect(),
        passage_scores: ranked
            .iter()
            .flat_map(|r| r.chunks.iter().map(move |_| round6(r.score)))
            .collect(),
        words: chunks.iter().map(|c| c.words).sum(),
        unique_words: m.unique_words,
        chars: passages.iter().map(|p| p.chars().count()).sum(),
        tokens: token_count,
        evidence_hit: m.evidence_hit,
        metrics: m.metrics,
        failure,
        anchors: ear.map(|e| e.question_anchors + e.option_anchors),
        anchor_match: ear.map(|e| u8::from(e.exact_match)),
        windows_before: ear.map(|e| e.windows_before_dedup),
        windows_after: ear.map(|e| e.windows_after_dedup),
        fallback: ear.map(|e| u8::from(e.fallback)),
        reply: out
            .as_ref()
            .map(|o| reader::clip(&o.raw, REPLY_BYTES))
            .unwrap_or_default(),
    })
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
