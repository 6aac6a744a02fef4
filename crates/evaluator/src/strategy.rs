//! Strategy entries of a run config (`strategies.NAME`) and the chunkers they build.
//!
//! One flat, strictly parsed entry per strategy (so YAML errors keep their line numbers);
//! [`StrategyConfig::check`] rejects fields that do not apply to the kind, and
//! [`StrategyConfig::build`] turns the entry into a [`Strategy`] that chunks documents.

use anyhow::{bail, Context, Result};
use chunker::maxmin::{Comparison, GroupUnit, SizeLimit};
use chunker::{
    BreakpointType, Chunk, Document, FixedConfig, HfTokenizer, KamradtConfig, KeepSeparator,
    MaxMinConfig, RecursiveChunker, Sizer, Unit,
};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// Default tokenizer for `unit: tokens` (the all-MiniLM-L6-v2 directory that
/// `chunkbench models fetch` unpacks).
pub const DEFAULT_TOKENIZER: &str = "models/all-MiniLM-L6-v2/tokenizer.json";

/// Chunking strategy kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    /// Fixed-size windows with overlap ([`chunker::FixedConfig`]); unit words by default.
    Fixed,
    /// LangChain `RecursiveCharacterTextSplitter` semantics ([`chunker::RecursiveChunker`]);
    /// unit chars by default.
    Recursive,
    /// Max-Min semantic chunking (Kiss, Nagy & Szilágyi 2025; hsdslab/MaxMinChunking) over
    /// sentence embeddings ([`chunker::MaxMinConfig`]); needs the run's embedder.
    MaxMin,
    /// Kamradt / LangChain `SemanticChunker` breakpoints over embeddings of buffered
    /// sentences ([`chunker::KamradtConfig`]); needs the run's embedder.
    Kamradt,
    /// EAR entity-aware anchor windows (arXiv 2609.12268; [`retriever::ear`]): parents of
    /// `size` words (default 260, overlap default 60) and query-time windows around anchors
    /// shared by the question, its options and the corpus; settings under `ear`.
    Ear,
}

/// One strategy entry (`strategies.NAME`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategyConfig {
    /// Strategy kind.
    pub kind: StrategyKind,
    /// Size unit: `words`, `chars` or `tokens` (default words for fixed, chars for recursive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Chunk size in `unit`s (fixed, recursive); for max-min the optional maximum chunk size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// Max-min: minimum chunk size in `unit`s; smaller chunks merge into a neighbour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<usize>,
    /// Max-min: `fixed_threshold` (reference 0.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_threshold: Option<f64>,
    /// Max-min: `c` (reference 0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<f64>,
    /// Max-min: `init_constant` (reference 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_constant: Option<f64>,
    /// Max-min: `strict` (reference `>`, default) or `inclusive` (`>=`, Milvus write-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<String>,
    /// Max-min: group `sentence`s (default) or `paragraph`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kamradt: `percentile` (default), `standard_deviation`, `interquartile`, `gradient`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakpoint_type: Option<BreakpointType>,
    /// Kamradt: the breakpoint amount (type default: 95, 3, 1.5, 95).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakpoint_amount: Option<f64>,
    /// Kamradt: sentences joined on each side before embedding (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_size: Option<usize>,
    /// Overlap between consecutive chunks (default 0): a whole number is a count of `unit`s;
    /// a fraction in (0, 1) is that share of `size`, rounded down (0.2 of 100 words = 20).
    #[serde(default)]
    pub overlap: f64,
    /// tokenizer.json (or a model directory holding one) for `unit: tokens`
    /// (default [`DEFAULT_TOKENIZER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
    /// Recursive only: separators, tried in order (default `["\n\n", "\n", " ", ""]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separators: Option<Vec<String>>,
    /// Recursive only: separators are regular expressions (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator_regex: Option<bool>,
    /// Recursive only: `start` (default), `end` or `false` (LangChain `keep_separator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_separator: Option<String>,
    /// Recursive only: trim chunks (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_whitespace: Option<bool>,
    /// EAR only: window, scoring, deduplication and expansion settings
    /// ([`retriever::ear::EarConfig`]; radius 80 words, weights anchor 1 / lexical 1 /
    /// date 0.5, drop at 0.5 overlap, `expand: none | parent | summary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ear: Option<retriever::ear::EarConfig>,
}

/// A built chunking strategy.
#[derive(Debug, Clone)]
pub enum Strategy {
    /// Fixed-size windows.
    Fixed(FixedConfig),
    /// Recursive separator splitting.
    Recursive(RecursiveChunker),
    /// Max-Min over sentence (or paragraph) embeddings. A unit longer than the maximum size
    /// (`config.max_chunk`) is split at that size in its unit before embedding, and a unit
    /// longer than the embedder's input window is split at the window, so no chunk exceeds
    /// `size` and the model never drops a unit's tail (docs/reference.md, "Size limits").
    MaxMin {
        /// The rule and its options (with the optional size limits).
        config: MaxMinConfig,
    },
    /// Kamradt breakpoints; with a size limit, a chunk longer than it is cut back into runs of
    /// whole sentences within the limit (sentences longer than the limit are split at it).
    Kamradt {
        /// LangChain's parameters.
        config: KamradtConfig,
        /// The optional maximum chunk size.
        size_limit: Option<SizeLimit>,
    },
    /// EAR: fixed word parents, searched at query time by [`retriever::ear::EarIndex`].
    Ear {
        /// How parents are cut (words).
        parents: FixedConfig,
        /// Query-time settings.
        config: retriever::ear::EarConfig,
    },
}

/// What a strategy did over a corpus (for `chunk_stats.csv` and the manifest).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StrategyStats {
    /// Units (sentences, combined sentences) sent to the embedder.
    pub embedded_units: usize,
    /// Units split before embedding because they exceeded the model's input.
    pub units_split_before_embedding: usize,
    /// Units (max-min) or chunks (kamradt) longer than the strategy's `size` that were split
    /// at the size, in the configured unit.
    #[serde(default)]
    pub units_split_at_size: usize,
    /// Units sent to the embedder that were longer than its input window and so truncated by
    /// it (kamradt's combined sentences; max-min splits its units instead, so 0 there).
    #[serde(default)]
    pub embedded_units_truncated: usize,
    /// Chunks longer than `size` in the configured unit (indivisible pieces: a recursive
    /// chunk with no separator left, a single token or char the sizer counts as more); 0
    /// when the strategy has no size.
    #[serde(default)]
    pub over_size: usize,
    /// Chunks longer than the run's embedder input window (`max_seq_length` tokens, special
    /// tokens included), which the embedder truncates when it embeds them for dense
    /// retrieval; `None` when the strategy's cells embed no passages.
    #[serde(default)]
    pub over_embedder_window: Option<usize>,
    /// Max-min: accepted units refused by the maximum size (a new chunk was started).
    pub forced_splits: usize,
    /// Chunks below the minimum size merged into a neighbour.
    pub merges: usize,
    /// Zero or non-finite vectors, given similarity 0 instead of being compared.
    pub degenerate_vectors: usize,
    /// Max-min: each chunk's internal minimum pairwise cosine similarity (None for a
    /// one-unit chunk), in chunk order; empty for other strategies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub min_similarity: Vec<Option<f64>>,
}

impl Strategy {
    /// True when the strategy needs sentence embeddings.
    pub fn needs_embedder(&self) -> bool {
        matches!(self, Strategy::MaxMin { .. } | Strategy::Kamradt { .. })
    }

    /// The size no chunk may exceed, in the strategy's unit: fixed and recursive `size`,
    /// max-min and kamradt `size` when given, EAR's parent size in words.
    pub fn size_limit(&self) -> Option<SizeLimit> {
        match self {
            Strategy::Fixed(f) | Strategy::Ear { parents: f, .. } => {
                SizeLimit::new(f.size(), f.sizer().clone()).ok()
            }
            Strategy::Recursive(r) => SizeLimit::new(r.chunk_size(), r.sizer().clone()).ok(),
            Strategy::MaxMin { config } => config.max_chunk.clone(),
            Strategy::Kamradt { size_limit, .. } => size_limit.clone(),
        }
    }

    /// Chunks a corpus; chunks are exact byte spans of their documents, in document order.
    /// Semantic strategies embed all units of the corpus in one call (so the embedder batches
    /// by length across documents).
    ///
    /// # Errors
    /// A semantic strategy without an embedder, embedding failures, and chunker errors, naming
    /// the document.
    pub fn chunk_corpus(
        &self,
        docs: &[Document],
        embedder: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        use rayon::prelude::*;
        let mut stats = StrategyStats::default();
        let need = || embedder.context("this strategy needs an embedder (the run's `embedder`)");
        let window = embedder.and_then(EmbedderWindow::of);
        let chunks: Vec<Chunk> = match self {
            Strategy::Fixed(f) | Strategy::Ear { parents: f, .. } => {
                docs.par_iter().flat_map_iter(|d| f.chunk(d)).collect()
            }
            Strategy::Recursive(r) => {
                let per: Vec<(Vec<Chunk>, chunker::RecursiveStats)> =
                    docs.par_iter().map(|d| r.chunk_with_stats(d)).collect();
                // Pieces with no separator left, measured as LangChain measures them.
                stats.over_size = per.iter().map(|(_, s)| s.oversized).sum();
                per.into_iter().flat_map(|(c, _)| c).collect()
            }
            Strategy::MaxMin { config } => {
                let embedder = need()?;
                let window = window.as_ref().context(
                    "max-min needs an embedder with a local tokenizer and a known input window",
                )?;
                let units: Vec<(Vec<chunker::Span>, usize, usize)> = docs
                    .par_iter()
                    .map(|d| {
                        // The window first, then the size: pieces within both limits, and
                        // exactly the pre-size-limit units whenever `size` is the larger bound.
                        let (mut units, w) = chunker::split_oversized(
                            &d.text,
                            &config.units(&d.text),
                            &window.limit,
                        );
                        let mut at_size = 0;
                        if let Some(max) = &config.max_chunk {
                            let (u, s) = chunker::split_oversized(&d.text, &units, max);
                            units = u;
                            at_size = s.units_split;
                        }
                        (units, at_size, w.units_split)
                    })
                    .collect();
                for (_, at_size, at_window) in &units {
                    stats.units_split_at_size += at_size;
                    stats.units_split_before_embedding += at_window;
                }
                let texts: Vec<&str> = docs
                    .iter()
                    .zip(&units)
                    .flat_map(|(d, (us, ..))| us.iter().map(|u| &d.text[u.start..u.end]))
                    .collect();
                stats.embedded_units = texts.len();
                let mut vectors = embedder.embed(&texts)?.into_iter();
                let mut out = Vec::new();
                for (d, (us, ..)) in docs.iter().zip(&units) {
                    let vs: Vec<Vec<f32>> = vectors.by_ref().take(us.len()).collect();
                    let (c, s) = config
                        .chunk_with_stats(d, us, &vs)
                        .with_context(|| format!("max-min on document {}", d.id))?;
                    stats
                        .min_similarity
                        .extend(s.min_similarity.iter().copied());
                    stats.forced_splits += s.forced_splits;
                    stats.merges += s.merges;
                    stats.degenerate_vectors += s.degenerate_vectors;
                    out.extend(c);
                }
                out
            }
            Strategy::Kamradt { config, size_limit } => {
                let embedder = need()?;
                let sentences: Vec<Vec<chunker::Span>> = docs
                    .iter()
                    .map(|d| chunker::kamradt::split_sentences(&d.text))
                    .collect();
                let combined: Vec<Vec<String>> = docs
                    .iter()
                    .zip(&sentences)
                    .map(|(d, s)| config.combined_sentences(&d.text, s))
                    .collect();
                let texts: Vec<&str> = combined.iter().flatten().map(String::as_str).collect();
                stats.embedded_units = texts.len();
                if let Some(w) = &window {
                    stats.embedded_units_truncated =
                        texts.par_iter().filter(|t| w.exceeds(t)).count();
                }
                let mut vectors = embedder.embed(&texts)?.into_iter();
                let mut out = Vec::new();
                for ((d, s), c) in docs.iter().zip(&sentences).zip(&combined) {
                    let vs: Vec<Vec<f32>> = vectors.by_ref().take(c.len()).collect();
                    let (chunks, st) = config
                        .chunk_with_stats(d, s, &vs)
                        .with_context(|| format!("kamradt on document {}", d.id))?;
                    stats.merges += st.merges;
                    stats.degenerate_vectors += st.degenerate_vectors;
                    match size_limit {
                        None => out.extend(chunks),
                        Some(limit) => {
                            for chunk in chunks {
                                let text = &d.text[chunk.span.start..chunk.span.end];
                                if limit.measure(text) <= limit.size() {
                                    out.push(chunk);
                                    continue;
                                }
                                // The chunk's sentences, each within the limit, packed again.
                                let inside: Vec<chunker::Span> = s
                                    .iter()
                                    .filter_map(|u| {
                                        let start = u.start.max(chunk.span.start);
                                        let end = u.end.min(chunk.span.end);
                                        (start < end).then_some(chunker::Span { start, end })
                                    })
                                    .collect();
                                let (pieces, _) = chunker::split_oversized(&d.text, &inside, limit);
                                let packed = chunker::pack_units(&d.text, &pieces, limit);
                                stats.units_split_at_size += 1;
                                out.extend(packed.into_iter().filter_map(|p| {
                                    let t = &d.text[p.start..p.end];
                                    let lead = t.len() - t.trim_start().len();
                                    let (a, b) = (p.start + lead, p.start + t.trim_end().len());
                                    (a < b).then(|| Chunk::new(d, a, b))
                                }));
                            }
                        }
                    }
                }
                out
            }
        };
        // Fixed windows (and EAR parents) are within their size by construction, in the
        // chunker's own measure (re-tokenising a token window can count differently), and the
        // recursive chunker counts its own oversized pieces as LangChain measures them.
        let semantic = matches!(self, Strategy::MaxMin { .. } | Strategy::Kamradt { .. });
        if let Some(limit) = self.size_limit().filter(|_| semantic) {
            let by_id: std::collections::HashMap<&str, &Document> =
                docs.iter().map(|d| (d.id.as_str(), d)).collect();
            stats.over_size = chunks
                .par_iter()
                .filter(|c| {
                    by_id
                        .get(c.doc_id.as_str())
                        .is_some_and(|d| limit.measure(c.text(d)) > limit.size())
                })
                .count();
        }
        Ok((chunks, stats))
    }
}

/// An embedder's input window: the longest text it reads without truncation, measured with
/// its own tokenizer.
pub struct EmbedderWindow {
    /// Tokens of the window left for text (`max_seq_length` minus the special tokens), with
    /// the embedder's tokenizer as the sizer.
    pub limit: SizeLimit,
    /// The window in tokens, special tokens included.
    pub max_tokens: usize,
}

impl EmbedderWindow {
    /// The window of `embedder`; `None` when it has no local tokenizer or window (HTTP).
    pub fn of(embedder: &dyn Embedder) -> Option<Self> {
        let max_tokens = embedder.max_input_tokens()?;
        let tok = embedder.tokenizer()?;
        let specials = tok.encode("", true).map(|e| e.len()).unwrap_or(2);
        let tok = HfTokenizer::from_tokenizer(tok, embedder.identity()).ok()?;
        let limit = SizeLimit::new(
            max_tokens.saturating_sub(specials).max(1),
            Sizer::Tokens(Arc::new(tok)),
        )
        .ok()?;
        Some(EmbedderWindow { limit, max_tokens })
    }

    /// True when `text` is longer than the window (the embedder would truncate it).
    pub fn exceeds(&self, text: &str) -> bool {
        self.limit.measure(text) > self.limit.size()
    }
}

impl StrategyConfig {
    /// A fixed-size word entry (`kind: fixed, unit: words`).
    pub fn fixed_words(size: usize, overlap: usize) -> Self {
        StrategyConfig {
            kind: StrategyKind::Fixed,
            unit: Some(Unit::Words),
            size: Some(size),
            min_size: None,
            fixed_threshold: None,
            c: None,
            init_constant: None,
            comparison: None,
            group: None,
            breakpoint_type: None,
            breakpoint_amount: None,
            buffer_size: None,
            overlap: overlap as f64,
            tokenizer: None,
            separators: None,
            separator_regex: None,
            keep_separator: None,
            strip_whitespace: None,
            ear: None,
        }
    }

    /// The unit in force (the kind's default when not given).
    pub fn unit(&self) -> Unit {
        self.unit.unwrap_or(match self.kind {
            StrategyKind::Recursive => Unit::Chars,
            _ => Unit::Words,
        })
    }

    /// The overlap in units: whole numbers as given, fractions in (0, 1) of `size`.
    ///
    /// # Errors
    /// A negative, non-finite or non-integer value of 1 or more, naming the field.
    pub fn overlap_units(&self) -> Result<usize> {
        let o = self.overlap;
        if o.is_finite() && o >= 0.0 && o.fract() == 0.0 {
            Ok(o as usize)
        } else if o > 0.0 && o < 1.0 {
            Ok((self.size.unwrap_or(0) as f64 * o).floor() as usize)
        } else {
            bail!(
                "field `overlap`: {o} is neither a whole number of units nor a fraction in (0, 1)"
            )
        }
    }

    fn keep(&self) -> Result<KeepSeparator> {
        Ok(match self.keep_separator.as_deref() {
            None | Some("true") => KeepSeparator::Start,
            Some(v) => v.parse()?,
        })
    }

    /// Checks the entry without loading anything: fields that do not apply to the kind, the
    /// overlap, and the chunker's own size/overlap rules.
    ///
    /// # Errors
    /// The first problem, naming the field.
    pub fn check(&self) -> Result<()> {
        use StrategyKind::*;
        let fields: [(&str, bool, &[StrategyKind]); 14] = [
            (
                "size",
                self.size.is_some(),
                &[Fixed, Recursive, MaxMin, Kamradt, Ear],
            ),
            ("overlap", self.overlap != 0.0, &[Fixed, Recursive, Ear]),
            ("ear", self.ear.is_some(), &[Ear]),
            ("separators", self.separators.is_some(), &[Recursive]),
            (
                "separator_regex",
                self.separator_regex.is_some(),
                &[Recursive],
            ),
            (
                "keep_separator",
                self.keep_separator.is_some(),
                &[Recursive],
            ),
            (
                "strip_whitespace",
                self.strip_whitespace.is_some(),
                &[Recursive],
            ),
            ("min_size", self.min_size.is_some(), &[MaxMin]),
            ("fixed_threshold", self.fixed_threshold.is_some(), &[MaxMin]),
            ("c", self.c.is_some(), &[MaxMin]),
            ("init_constant", self.init_constant.is_some(), &[MaxMin]),
            ("comparison", self.comparison.is_some(), &[MaxMin]),
            ("group", self.group.is_some(), &[MaxMin]),
            (
                "breakpoint_type",
                self.breakpoint_type.is_some()
                    || self.breakpoint_amount.is_some()
                    || self.buffer_size.is_some(),
                &[Kamradt],
            ),
        ];
        for (field, set, kinds) in fields {
            if set && !kinds.contains(&self.kind) {
                bail!(
                    "field `{field}` does not apply to kind `{}`",
                    kind_name(self.kind)
                );
            }
        }
        if self.tokenizer.is_some() && self.unit() != Unit::Tokens {
            bail!("field `tokenizer` applies only with `unit: tokens`");
        }
        let overlap = self.overlap_units()?;
        if matches!(self.kind, Fixed | Recursive) {
            let Some(size) = self.size else {
                bail!(
                    "field `size` is required for kind `{}`",
                    kind_name(self.kind)
                );
            };
            if size == 0 {
                bail!("field `size` must be at least 1");
            }
            if overlap >= size {
                bail!("field `overlap` ({overlap}) must be smaller than field `size` ({size})");
            }
        }
        self.keep()?;
        if self.kind == Ear {
            if self.unit() != Unit::Words {
                bail!("field `unit`: EAR parents are counted in words; remove `unit`");
            }
            let (size, overlap) = self.ear_parent_size()?;
            FixedConfig::new(size, overlap).context("fields `size`/`overlap` (EAR parents)")?;
            if let Some(e) = &self.ear {
                e.check().map_err(|e| anyhow::anyhow!("field `ear`: {e}"))?;
            }
        }
        if self.kind == MaxMin {
            self.maxmin_config(None)?;
        }
        if self.kind == Kamradt {
            self.kamradt_config()?.validate()?;
            if self.size == Some(0) {
                bail!("field `size` must be at least 1");
            }
        }
        Ok(())
    }

    /// Fills in EAR defaults: parent `size`/`overlap` (260/60 when `size` is not given) and the
    /// `ear` block ([`retriever::ear::EarConfig::default`]); other kinds are left as written.
    pub fn resolve_defaults(&mut self) {
        if self.kind != StrategyKind::Ear {
            return;
        }
        if let Ok((size, overlap)) = self.ear_parent_size() {
            self.size = Some(size);
            self.overlap = overlap as f64;
        }
        if self.ear.is_none() {
            self.ear = Some(retriever::ear::EarConfig::default());
        }
    }

    /// EAR parent size and overlap in words: `size` (default 260) and `overlap` (default 60
    /// when `size` is not given, as in EAR's 260/60 parents).
    fn ear_parent_size(&self) -> Result<(usize, usize)> {
        Ok(match self.size {
            None if self.overlap == 0.0 => (260, 60),
            None => (260, self.overlap_units()?),
            Some(n) => (n, self.overlap_units()?),
        })
    }

    fn maxmin_config(&self, tokenizer: Option<Arc<HfTokenizer>>) -> Result<MaxMinConfig> {
        let mut m = MaxMinConfig::reference();
        if let Some(v) = self.fixed_threshold {
            m.fixed_threshold = v;
        }
        if let Some(v) = self.c {
            m.c = v;
        }
        if let Some(v) = self.init_constant {
            m.init_constant = v;
        }
        m.comparison = match self.comparison.as_deref() {
            None => Comparison::Strict,
            Some(v) => v.parse()?,
        };
        m.unit = match self.group.as_deref() {
            None => GroupUnit::Sentence,
            Some(v) => v
                .parse()
                .map_err(|e| anyhow::anyhow!("field `group`: {e}"))?,
        };
        let limit = |n: usize, field: &str| -> Result<SizeLimit> {
            let sizer = match self.unit() {
                Unit::Tokens => match &tokenizer {
                    Some(t) => Sizer::Tokens(t.clone()),
                    // Checked without loading the tokenizer: any positive size is valid.
                    None => Sizer::Words,
                },
                Unit::Words => Sizer::Words,
                Unit::Chars => Sizer::Chars,
            };
            SizeLimit::new(n, sizer).with_context(|| format!("field `{field}`"))
        };
        m.max_chunk = self.size.map(|n| limit(n, "size")).transpose()?;
        m.min_chunk = self.min_size.map(|n| limit(n, "min_size")).transpose()?;
        m.validate()?;
        Ok(m)
    }

    fn kamradt_config(&self) -> Result<KamradtConfig> {
        let mut k = KamradtConfig::new(self.breakpoint_type.unwrap_or(BreakpointType::Percentile));
        if let Some(a) = self.breakpoint_amount {
            k.breakpoint_amount = a;
        }
        if let Some(b) = self.buffer_size {
            k.buffer_size = b;
        }
        Ok(k)
    }

    /// The tokenizer path for `unit: tokens`.
    pub fn tokenizer_path(&self) -> PathBuf {
        self.tokenizer
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_TOKENIZER))
    }

    /// Builds the chunker (loading the tokenizer for `unit: tokens`).
    ///
    /// # Errors
    /// [`StrategyConfig::check`] errors, a tokenizer that cannot be loaded (with the fix), and
    /// invalid separators, naming the field.
    pub fn build(&self) -> Result<Strategy> {
        self.check()?;
        let overlap = self.overlap_units()?;
        let tokenizer = match self.unit() {
            Unit::Tokens => {
                let path = self.tokenizer_path();
                Some(Arc::new(HfTokenizer::from_file(&path).with_context(
                    || format!("field `tokenizer`: cannot load {}", path.display()),
                )?))
            }
            _ => None,
        };
        let size = self.size.unwrap_or(0);
        Ok(match self.kind {
            StrategyKind::Fixed => Strategy::Fixed(FixedConfig::with_unit(
                size,
                overlap,
                self.unit(),
                tokenizer,
            )?),
            StrategyKind::MaxMin => Strategy::MaxMin {
                config: self.maxmin_config(tokenizer)?,
            },
            StrategyKind::Kamradt => {
                let size_limit = match self.size {
                    None => None,
                    Some(n) => {
                        let sizer = Sizer::for_unit(self.unit(), tokenizer)
                            .context("field `tokenizer`: `unit: tokens` needs a tokenizer")?;
                        Some(SizeLimit::new(n, sizer).context("field `size`")?)
                    }
                };
                Strategy::Kamradt {
                    config: self.kamradt_config()?,
                    size_limit,
                }
            }
            StrategyKind::Ear => {
                let (size, overlap) = self.ear_parent_size()?;
                Strategy::Ear {
                    parents: FixedConfig::new(size, overlap)?,
                    config: self.ear.clone().unwrap_or_default(),
                }
            }
            StrategyKind::Recursive => {
                let mut r = RecursiveChunker::new(size, overlap)?
                    .with_keep_separator(self.keep()?)
                    .with_strip_whitespace(self.strip_whitespace.unwrap_or(true))
                    .with_unit(self.unit(), tokenizer)?;
                if let Some(seps) = &self.separators {
                    r = r.with_separators(seps.clone(), self.separator_regex.unwrap_or(false))?;
                } else if self.separator_regex == Some(true) {
                    bail!("field `separator_regex`: give `separators` to interpret as patterns");
                }
                Strategy::Recursive(r)
            }
        })
    }
}

fn kind_name(k: StrategyKind) -> &'static str {
    match k {
        StrategyKind::Fixed => "fixed",
        StrategyKind::Recursive => "recursive",
        StrategyKind::MaxMin => "max-min",
        StrategyKind::Kamradt => "kamradt",
        StrategyKind::Ear => "ear",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        Document {
            id: "d".into(),
            title: String::new(),
            text: text.into(),
            source: String::new(),
            license: String::new(),
        }
    }

    #[test]
    fn builds_fixed_and_recursive() {
        let d = doc("Apples are red. Bananas are yellow. Cherries are dark.");
        let docs = [d.clone()];
        let chunk = |s: &Strategy| s.chunk_corpus(&docs, None).unwrap().0;
        let f = StrategyConfig::fixed_words(3, 0).build().unwrap();
        assert_eq!(chunk(&f).len(), 3);
        let mut r = StrategyConfig::fixed_words(20, 0);
        r.kind = StrategyKind::Recursive;
        r.unit = None;
        r.separators = Some(vec![". ".into()]);
        r.keep_separator = Some("end".into());
        let chunks = chunk(&r.build().unwrap());
        let texts: Vec<&str> = chunks.iter().map(|c| c.text(&d)).collect();
        assert_eq!(
            texts,
            [
                "Apples are red.",
                "Bananas are yellow.",
                "Cherries are dark."
            ]
        );
    }

    #[test]
    fn misplaced_fields_are_named() {
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.separators = Some(vec![]);
        assert!(c.check().unwrap_err().to_string().contains("`separators`"));
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.tokenizer = Some("x".into());
        assert!(c.check().unwrap_err().to_string().contains("`tokenizer`"));
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.kind = StrategyKind::MaxMin;
        c.c = Some(0.5);
        c.comparison = Some("loose".into());
        assert!(c.check().unwrap_err().to_string().contains("`comparison`"));
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.fixed_threshold = Some(0.5);
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("`fixed_threshold`"));
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.kind = StrategyKind::Recursive;
        c.keep_separator = Some("middle".into());
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("`keep_separator`"));
        let c = StrategyConfig::fixed_words(10, 10);
        assert!(c.check().unwrap_err().to_string().contains("`overlap`"));
    }

    #[test]
    fn missing_tokenizer_names_the_fix() {
        let mut c = StrategyConfig::fixed_words(10, 0);
        c.unit = Some(Unit::Tokens);
        c.tokenizer = Some("/nonexistent/tokenizer.json".into());
        let e = format!("{:#}", c.build().unwrap_err());
        assert!(
            e.contains("`tokenizer`") && e.contains("models fetch"),
            "{e}"
        );
    }
}
