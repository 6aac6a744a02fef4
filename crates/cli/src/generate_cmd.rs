//! `chunkbench data generate`: the flags, the corpus `--from` names, and the model behind the
//! one language-model seam (`reader::lm::ChatModel`, any protocol), handed to
//! `generate::generate` and written as a dataset (all or nothing).

use crate::dataset_out::{refuse_fetched_name, report};
use anyhow::{bail, Context, Result};
use datasets::io::sha256_file;
use std::path::{Path, PathBuf};

/// The flags of `data generate`.
#[derive(clap::Args)]
pub(crate) struct GenerateArgs {
    /// The new dataset's name.
    name: String,
    /// The documents: a dataset in the store (its documents; its questions are ignored) or a
    /// folder of .txt/.md/.html files (read as `data import` reads one).
    #[arg(long = "from", value_name = "DATASET_OR_FOLDER")]
    from: String,
    /// Base URL of the model's server, up to the API version (e.g.
    /// http://127.0.0.1:8000/v1 for vLLM, http://127.0.0.1:8765/v1 for
    /// scripts/llama-server/serve.sh, https://api.anthropic.com/v1 with --llm-protocol
    /// anthropic).
    #[arg(long, value_name = "URL", required_unless_present = "explain")]
    llm: Option<String>,
    /// The server's protocol: `openai` (Chat Completions) or `anthropic` (Messages; no
    /// response format, no seed).
    #[arg(long, value_name = "NAME", default_value = "openai")]
    llm_protocol: String,
    /// The model name sent with each request (any name for llama.cpp's server).
    #[arg(long, default_value = "default")]
    llm_model: String,
    /// The environment variable holding the server's API key (never printed or recorded).
    #[arg(long)]
    api_key_env: Option<String>,
    /// The GGUF file the server loaded: its sha256 joins the model's identity (the server
    /// reports only a path or a name).
    #[arg(long, value_name = "FILE")]
    llm_gguf: Option<PathBuf>,
    /// `seed` sent with each request (for servers that take one).
    #[arg(long, default_value_t = 0)]
    llm_seed: u64,
    /// Questions wanted: generation stops when this many are accepted.
    #[arg(long = "questions", default_value_t = 40)]
    target: usize,
    /// Candidates (passages, one request each) tried at most; default 5 × --questions.
    #[arg(long)]
    candidates: Option<usize>,
    /// Seed of the passage order and of the option order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// A passage ends after the sentence that brings it to this many words.
    #[arg(long, default_value_t = 120)]
    passage_words: usize,
    /// Passages shorter than this many words are not used.
    #[arg(long, default_value_t = 40)]
    min_passage_words: usize,
    /// Reject a question whose least similar excerpt has a lower cosine similarity.
    #[arg(long, default_value_t = 0.40, allow_hyphen_values = true)]
    relevance: f64,
    /// Reject a question with at least this cosine similarity to an accepted one.
    #[arg(long, default_value_t = 0.70, allow_hyphen_values = true)]
    duplicate: f64,
    /// Excerpts per question at most.
    #[arg(long, default_value_t = 3)]
    max_excerpts: usize,
    /// Words per excerpt at least.
    #[arg(long, default_value_t = 3)]
    min_excerpt_words: usize,
    /// Words per excerpt at most.
    #[arg(long, default_value_t = 80)]
    max_excerpt_words: usize,
    /// Words per question at most.
    #[arg(long, default_value_t = 40)]
    max_question_words: usize,
    /// `max_tokens` of each request.
    #[arg(long, default_value_t = 300)]
    max_tokens: u32,
    /// Multiple choice: also ask for three distractors (absent from the evidence); the
    /// options are the answer and the distractors in a seeded order.
    #[arg(long)]
    mcq: bool,
    /// With --mcq: ask the model each accepted question without a passage and flag those
    /// it answers (they measure nothing about retrieval).
    #[arg(long, conflicts_with = "drop_closed_book")]
    flag_closed_book: bool,
    /// With --mcq: as --flag-closed-book, and reject those questions.
    #[arg(long)]
    drop_closed_book: bool,
    /// How replies are constrained to JSON: none (the prompt asks), json-object (llama.cpp's
    /// Python server: a grammar from the schema), json-schema (OpenAI, vLLM).
    #[arg(long, value_enum, default_value_t = ResponseFormatArg::None)]
    response_format: ResponseFormatArg,
    /// Requests in flight at once (the result does not depend on it).
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
    /// Seconds allowed for one request (each attempt).
    #[arg(long, default_value_t = 120.0)]
    timeout_secs: f64,
    /// Retries of a request after a timeout, HTTP 429/5xx or a lost connection.
    #[arg(long, default_value_t = 2)]
    max_retries: u32,
    /// The embedder of the relevance and duplicate filters (a local model directory).
    #[arg(long, default_value = evaluator::embedder::DEFAULT_MODEL)]
    embedder: PathBuf,
    /// The embedding cache.
    #[arg(long, default_value = ".cache/embeddings")]
    embedding_cache: PathBuf,
    /// The generation cache (every reply, keyed by model identity and request).
    #[arg(long, default_value = ".cache/generations")]
    cache: PathBuf,
    /// read-write, read-only or never.
    #[arg(long, default_value = "read-write")]
    cache_mode: reader::CacheMode,
    /// License recorded for documents read from a folder.
    #[arg(long, default_value = "unknown")]
    license: String,
    /// Where datasets are (one directory per dataset).
    #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
    store: PathBuf,
    /// Replace an existing dataset of this name.
    #[arg(long)]
    force: bool,
    /// The user-message template instead of the committed one: a minijinja template over
    /// `passage`, `title`, `max_excerpts`, `max_excerpt_words` and `mcq` (`--explain` shows
    /// the default). Its text is part of the dataset's identity.
    #[arg(long, value_name = "FILE")]
    prompt: Option<PathBuf>,
    /// The system message instead of the committed one.
    #[arg(long, value_name = "FILE")]
    system_prompt: Option<PathBuf>,
    /// Print the prompts, the reply schema and the rules with these options, and exit
    /// (contacts nothing).
    #[arg(long)]
    explain: bool,
}

/// `data generate --response-format`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum ResponseFormatArg {
    /// No response_format.
    None,
    /// `{"type": "json_object", "schema": …}`.
    JsonObject,
    /// `{"type": "json_schema", …}`.
    JsonSchema,
}

/// `data generate`: questions from documents, written as a dataset (all or nothing).
pub(crate) fn generate_dataset(a: &GenerateArgs) -> Result<()> {
    let opts = generate_options(a)?;
    opts.check()?;
    if a.explain {
        out!("{}", generate::explain(&opts));
        return Ok(());
    }
    if !(a.timeout_secs.is_finite() && a.timeout_secs > 0.0) {
        bail!("--timeout-secs must be positive");
    }
    refuse_fetched_name(&a.name)?;
    let name = datasets::dataset::canonical_name(&a.name)
        .map_err(|e| anyhow::anyhow!("dataset name {e}"))?;
    let target = a.store.join(&name);
    if target.exists() && !a.force {
        bail!(
            "{}: a dataset of this name exists; give --force to replace it",
            target.display()
        );
    }
    let corpus = generate_corpus(a, &name)?;
    let started = std::time::Instant::now();
    let llm = connect_model(a, &opts)?;
    let embedder = evaluator::embedder::EmbedderConfig {
        model: Some(a.embedder.clone()),
        cache: a.embedding_cache.clone(),
        ..evaluator::embedder::EmbedderConfig::default()
    }
    .build()
    .context("--embedder / --embedding-cache")?;
    let llm = llm.with_cache(
        generate::cache::GenerationCache::open(&a.cache, a.cache_mode).context("--cache")?,
    );
    eprintln!(
        "generating up to {} questions from {} ({} documents) with {}",
        opts.target,
        corpus.source,
        corpus.documents.len(),
        llm.identity()
    );
    let mut shown = 0;
    let g = generate::generate(&corpus, &opts, &llm, embedder.as_ref(), &mut |p| {
        if p.candidates >= shown + 20 {
            shown = p.candidates;
            eprintln!(
                "  {} candidates of at most {}: {} accepted",
                p.candidates, p.limit, p.accepted
            );
        }
    })?;
    let stats = llm.cache_stats().unwrap_or_default();
    eprintln!(
        "  {}; replies: {} from the cache, {} from the model{}; {:.1} s",
        generate::rejection_summary(&g.counts),
        stats.hits,
        g.model_replies,
        if stats.corrupt > 0 {
            format!(" ({} corrupt cache entries recomputed)", stats.corrupt)
        } else {
            String::new()
        },
        started.elapsed().as_secs_f64()
    );
    write_generated(a, &name, &corpus, &opts, &g)
}

/// The generation options the flags give (prompt files read).
///
/// # Errors
/// A prompt file that cannot be read.
fn generate_options(a: &GenerateArgs) -> Result<generate::GenerateOptions> {
    use generate::{ClosedBook, GenerateOptions, ResponseFormat};
    Ok(GenerateOptions {
        target: a.target,
        max_candidates: a.candidates.unwrap_or(a.target.saturating_mul(5)),
        seed: a.seed,
        passage_words: a.passage_words,
        min_passage_words: a.min_passage_words,
        relevance_threshold: a.relevance,
        duplicate_threshold: a.duplicate,
        max_excerpts: a.max_excerpts,
        min_excerpt_words: a.min_excerpt_words,
        max_excerpt_words: a.max_excerpt_words,
        max_question_words: a.max_question_words,
        max_tokens: a.max_tokens,
        mcq: a.mcq,
        closed_book: if a.drop_closed_book {
            ClosedBook::Drop
        } else if a.flag_closed_book {
            ClosedBook::Flag
        } else {
            ClosedBook::Off
        },
        response_format: match a.response_format {
            ResponseFormatArg::None => ResponseFormat::None,
            ResponseFormatArg::JsonObject => ResponseFormat::JsonObject,
            ResponseFormatArg::JsonSchema => ResponseFormat::JsonSchema,
        },
        concurrency: a.concurrency,
        system_prompt: match &a.system_prompt {
            Some(p) => std::fs::read_to_string(p)
                .with_context(|| format!("--system-prompt {}", p.display()))?,
            None => generate::SYSTEM_PROMPT.to_string(),
        },
        question_template: match &a.prompt {
            Some(p) => {
                std::fs::read_to_string(p).with_context(|| format!("--prompt {}", p.display()))?
            }
            None => generate::QUESTION_TEMPLATE.to_string(),
        },
    })
}

/// The model `--llm*` name, through the one seam (`reader::lm`), its served model probed for
/// the identity (and the GGUF's sha256 joined when `--llm-gguf` names it).
///
/// # Errors
/// A bad flag, a response format the protocol cannot send, a server that does not answer.
fn connect_model(
    a: &GenerateArgs,
    opts: &generate::GenerateOptions,
) -> Result<reader::lm::ChatModel> {
    let base_url = a
        .llm
        .clone()
        .expect("clap requires --llm without --explain");
    let llm = reader::lm::ChatModel::new(
        &reader::lm::ChatModelConfig {
            base_url,
            model: a.llm_model.clone(),
            protocol: a.llm_protocol.clone(),
            api_key_env: a.api_key_env.clone(),
            seed: a.llm_seed,
            timeout_secs: a.timeout_secs,
            max_retries: a.max_retries,
            concurrency: a.concurrency.max(1),
        },
        "--llm",
    )?;
    if opts.response_format != generate::ResponseFormat::None
        && !llm.protocol().takes_response_format()
    {
        bail!(
            "--response-format: protocol `{}` takes no response format; give \
             --response-format none (the prompt asks for JSON)",
            a.llm_protocol
        );
    }
    let mut llm = llm.connect().context("--llm")?;
    if let Some(p) = &a.llm_gguf {
        let sha = sha256_file(p).with_context(|| format!("--llm-gguf {}", p.display()))?;
        llm = llm.with_identity_suffix(&format!("weights_sha256={sha}"));
    }
    Ok(llm)
}

/// Writes the generated set (or, when nothing was accepted, the page of rejected candidates and
/// the error), with the warnings a user acts on.
///
/// # Errors
/// Nothing accepted; the dataset cannot be written.
fn write_generated(
    a: &GenerateArgs,
    name: &str,
    corpus: &generate::Corpus,
    opts: &generate::GenerateOptions,
    g: &generate::Generated,
) -> Result<()> {
    let target = a.store.join(name);
    if g.questions.is_empty() {
        let page = a.cache.join("rejected").join(format!("{name}.html"));
        generate::write_rejected_report(&page, name, corpus, opts, g)?;
        let e = generate::write(&a.store, name, corpus, opts, g).expect_err("nothing accepted");
        bail!(
            "{e:#}; every candidate and the model's reply: {}",
            page.display()
        );
    }
    let m = generate::write(&a.store, name, corpus, opts, g)?;
    let too_long = g.counts.get("passages_too_long").copied().unwrap_or(0);
    if too_long > 0 {
        eprintln!(
            "warning: {too_long} passage(s) ran past {} words without a sentence end and were \
             left out (a table or list?); raise --passage-words to use them",
            opts.passage_words * generate::sample::MAX_PASSAGE_FACTOR
        );
    }
    if g.questions.len() < opts.target {
        eprintln!(
            "warning: {} of the {} questions wanted were accepted; {}, or use a more capable \
             model",
            g.questions.len(),
            opts.target,
            generate::more_candidates_advice(&g.counts)
        );
    }
    eprintln!("  audit it: {}", target.join("report.html").display());
    report(&m, &target);
    Ok(())
}

/// The documents `data generate --from` names: a dataset in the store, else a folder.
fn generate_corpus(a: &GenerateArgs, name: &str) -> Result<generate::Corpus> {
    let folder = Path::new(&a.from);
    // A dataset of the store unless the name is written as a path (`./docs`, `a/b`) of a
    // folder; a folder otherwise.
    let in_store = datasets::dataset::canonical_name(&a.from)
        .is_ok_and(|n| a.store.join(n).join("manifest.json").is_file());
    if folder.is_dir() && (!in_store || a.from.contains('/')) {
        let mut log = tables::ImportLog::default();
        let f = tables::read_folder(folder, &a.license, tables::FolderIds::Path, &mut log)?;
        for w in &log.warnings {
            eprintln!("warning: {w}");
        }
        if f.docs.is_empty() {
            bail!(
                "{}: no documents (a folder needs .txt, .md or .html files with text)",
                folder.display()
            );
        }
        return Ok(generate::Corpus {
            documents: f.docs,
            source: format!("folder {}", tables::base_name(folder)),
            source_sha256: tables::sources_sha256(&f.sources),
            license: a.license.clone(),
            notes: f.notes,
        });
    }
    let from = datasets::dataset::canonical_name(&a.from)
        .map_err(|e| anyhow::anyhow!("--from {e}; or give a folder of .txt/.md/.html files"))?;
    if from == name {
        bail!(
            "--from {from}: generating into the dataset it reads would replace its documents; \
             give the new dataset another name"
        );
    }
    let dir = a.store.join(&from);
    if !dir.join("manifest.json").is_file() {
        bail!(
            "--from {}: neither a dataset in {} (`chunkbench ls datasets`) nor a folder",
            a.from,
            a.store.display()
        );
    }
    let d = datasets::Dataset::load(&dir)?;
    Ok(generate::Corpus {
        documents: d.documents,
        source: format!("dataset {from} (manifest sha256 {})", d.manifest_sha256),
        source_sha256: d.manifest_sha256,
        license: d.manifest.license.clone(),
        notes: vec![format!(
            "documents: those of dataset {from}, unchanged (its questions are not used)"
        )],
    })
}
