//! `chunkbench chunk FILE --strategy KIND`: one file chunked by any registered strategy, as
//! JSON lines or a readable view.

use anyhow::{Context, Result};
use clap::ValueEnum;
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ChunkFormat {
    /// One JSON object per chunk: doc_id, start, end (bytes), words, text.
    Jsonl,
    /// A readable listing with offsets and word counts.
    View,
}

/// A registered strategy kind (for `chunk --strategy`).
pub(crate) fn strategy_kind(name: &str) -> Result<String, String> {
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

/// What `chunk` was asked: the file and the strategy entry's fields given as flags.
#[derive(clap::Args)]
pub(crate) struct ChunkArgs {
    /// The text file (UTF-8).
    pub(crate) file: PathBuf,
    /// Strategy kind (`chunkbench ls strategies`).
    #[arg(long, default_value = "fixed", value_parser = strategy_kind)]
    pub(crate) strategy: String,
    /// Size unit: words, chars or tokens (default: words for fixed, chars for recursive).
    #[arg(long)]
    pub(crate) unit: Option<chunker::Unit>,
    /// Chunk size in units (required by fixed and recursive; the optional maximum of the
    /// semantic kinds).
    #[arg(long)]
    pub(crate) size: Option<usize>,
    /// Overlap in units, or a fraction of the size in (0, 1).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) overlap: f64,
    /// tokenizer.json for --unit tokens (default: the fetched MiniLM tokenizer).
    #[arg(long)]
    pub(crate) tokenizer: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub(crate) format: ChunkFormat,
    /// Any other field of the kind's entry: FIELD=VALUE (YAML), e.g. window_size=2.
    #[arg(long = "with", value_name = "FIELD=VALUE")]
    pub(crate) with: Vec<String>,
}

/// Chunks the file and prints its chunks.
///
/// # Errors
/// An unreadable file, an invalid strategy entry (naming the flag to give), a model missing.
pub(crate) fn chunk(args: ChunkArgs) -> Result<()> {
    let cfg = strategy_entry(&args)?;
    let file = &args.file;
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read {} as UTF-8 text", file.display()))?;
    let doc = chunker::Document {
        id: file.display().to_string(),
        title: String::new(),
        text,
        source: String::new(),
        license: String::new(),
    };
    let (chunks, stats) = chunk_document(&cfg, &doc)
        .context("chunk options (--size, --overlap, --unit, --tokenizer, --with)")?;
    print_chunks(&doc, &chunks, &stats, args.format);
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

/// Chunks one document with the strategy `entry` (a registry entry, `{kind, ...fields}`),
/// loading the default embedder for kinds that embed: what `chunkbench chunk` prints and the
/// Python API's `chunk` returns.
///
/// # Errors
/// An invalid entry (naming the field), a model that cannot be loaded (naming the fix), and
/// the chunker's errors.
pub fn chunk_document(
    entry: &evaluator::strategies::StrategyConfig,
    doc: &chunker::Document,
) -> Result<(Vec<chunker::Chunk>, evaluator::strategies::StrategyStats)> {
    let chunker = entry.build()?;
    let embedder = if entry.needs_embedder() {
        let dir =
            evaluator::models::resolve(std::path::Path::new(evaluator::embedder::DEFAULT_MODEL));
        Some(embed::BertEmbedder::load(&dir).with_context(|| {
            format!(
                "cannot load {}; run `chunkbench models fetch`",
                dir.display()
            )
        })?)
    } else {
        None
    };
    chunker.chunk_corpus(
        std::slice::from_ref(doc),
        embedder.as_ref().map(|e| e as &dyn embed::Embedder),
    )
}

/// The flags as a strategy entry, parsed by the strategy registry like a config's; a missing
/// or unknown field names the flag to give.
///
/// # Errors
/// A `--with` that is not `FIELD=VALUE` with a YAML value, and the entry's errors.
fn strategy_entry(args: &ChunkArgs) -> Result<evaluator::strategies::StrategyConfig> {
    let mut entry = serde_yaml::Mapping::new();
    let mut put = |k: &str, v: serde_yaml::Value| {
        entry.insert(serde_yaml::Value::String(k.into()), v);
    };
    put("kind", args.strategy.clone().into());
    if let Some(n) = args.size {
        put("size", n.into());
    }
    if let Some(u) = args.unit {
        put("unit", serde_yaml::to_value(u)?);
    }
    if args.overlap != 0.0 {
        put("overlap", args.overlap.into());
    }
    if let Some(t) = &args.tokenizer {
        put("tokenizer", t.display().to_string().into());
    }
    for w in &args.with {
        let (k, v) = w
            .split_once('=')
            .with_context(|| format!("--with {w}: expected FIELD=VALUE"))?;
        let v: serde_yaml::Value = serde_yaml::from_str(v)
            .with_context(|| format!("--with {w}: the value is not YAML"))?;
        put(k, v);
    }
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
        anyhow::anyhow!("--strategy {}: {e}{hint}", args.strategy)
    })
}

/// Prints each chunk of `doc` as a JSONL line or a readable block, with its internal minimum
/// similarity when the strategy measured one.
fn print_chunks(
    doc: &chunker::Document,
    chunks: &[chunker::Chunk],
    stats: &evaluator::strategies::StrategyStats,
    format: ChunkFormat,
) {
    for (i, c) in chunks.iter().enumerate() {
        let min_sim = stats.min_similarity.get(i).copied().flatten();
        match format {
            ChunkFormat::Jsonl => {
                let mut v = serde_json::json!({
                    "doc_id": c.doc_id, "start": c.span.start, "end": c.span.end,
                    "words": c.words, "text": c.text(doc),
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
                c.text(doc)
            ),
        }
    }
}
