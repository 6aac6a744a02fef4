//! What a strategy did to a corpus: words per chunk ([`ChunkLengths`], `chunks/*.json`) and
//! its counters ([`StrategyStats`], [`LlmUse`]).

use crate::*;
use serde::{Deserialize, Serialize};

/// Words per chunk of one (dataset, strategy), as recorded by the runner.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChunkLengths {
    /// Dataset name.
    pub dataset: String,
    /// Strategy name.
    pub strategy: String,
    /// Words of each chunk, in corpus order.
    pub words: Vec<usize>,
    /// What the strategy counted (forced splits, merges, embedded units, ...).
    #[serde(default)]
    pub stats: StrategyStats,
    /// True when the strategy makes its passages at query time (EAR windows, sentence
    /// windows, oracle spans), so what a question reads is not one of these chunks.
    #[serde(default)]
    pub passages_at_query_time: bool,
    /// Words of each distinct passage the strategy's cells retrieved (by `DOC:START-END`, in
    /// span order), for strategies with [`ChunkLengths::passages_at_query_time`]; filled when
    /// the run is assembled (not stored), `None` when the documents were not at hand.
    #[serde(default, skip_serializing)]
    pub retrieved_words: Option<Vec<usize>>,
}

/// What a strategy did over a corpus (for `chunk_stats.csv` and the manifest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// Words of the corpus ([`chunker::word_spans`]) that share no byte with any chunk (a
    /// strategy that leaves text out, such as an external program skipping a document or a
    /// tail); set by the runner for every strategy that chunks the corpus, shown in
    /// summary.md when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncovered_words: usize,
    /// Chunks of an external program or spans file that held word separators only
    /// (whitespace, zero-width spaces) and were not indexed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blank_chunks_dropped: usize,
    /// Max-min: each chunk's internal minimum pairwise cosine similarity (None for a
    /// one-unit chunk), in chunk order; empty for other strategies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub min_similarity: Vec<Option<f64>>,
    /// What the retrievers indexed for each chunk when it was not the chunk's own text
    /// (`title > headings` + text, an LLM-written context + text, late-chunked vectors), in
    /// words for summary.md; `None`: the chunk's text. The passages stay exact spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed: Option<String>,
    /// Model use of an LLM strategy (contextual retrieval, LLM-guided boundaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmUse>,
    /// Late chunking: forward passes of the embedder over document windows.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_windows: usize,
    /// Late chunking: chunks that hold no token of the embedder's tokenizer (whitespace
    /// only); they get the zero vector, which dense retrieval never returns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunks_without_tokens: usize,
    /// The kind's own counters ([`Counter`]s it declares), by name; kinds with none leave
    /// it empty (and it is not written). Shown in `chunk_stats.csv` (one column per name
    /// any strategy of the run counted) and summary.md's "Strategy counters".
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub counters: std::collections::BTreeMap<String, u64>,
}

/// What an LLM strategy asked of its model over one corpus (summary.md "Indexed text").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmUse {
    /// Documents the strategy sent to the model.
    pub documents: usize,
    /// Requests made (replies read from the cache included).
    pub requests: usize,
    /// Replies read from the generation cache (no model call).
    pub cached: usize,
    /// Prompt tokens, as the server's `usage` reports them (0 when it reports none).
    pub prompt_tokens: u64,
    /// Reply tokens, as the server's `usage` reports them.
    pub completion_tokens: u64,
    /// Requests whose reply had no `usage` (their tokens are not in the sums).
    pub without_usage: usize,
    /// Replies that could not be used as the protocol asks (no number, a number out of
    /// range, an empty context, a reply cut at `max_tokens`).
    pub malformed: usize,
    /// Units handled by the stated fallback because the reply was malformed.
    pub fallbacks: usize,
    /// Replies longer than `max_tokens` tokens could make (more than 32 bytes a token, at
    /// least 4 KiB), cut there before they were cached, parsed or indexed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub oversized: usize,
}

impl LlmUse {
    /// Adds `other`'s counts (a wrapper's requests to those of the strategy it wraps).
    pub fn add(&mut self, other: &LlmUse) {
        self.documents = self.documents.max(other.documents);
        self.requests += other.requests;
        self.cached += other.cached;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.without_usage += other.without_usage;
        self.malformed += other.malformed;
        self.fallbacks += other.fallbacks;
        self.oversized += other.oversized;
    }
}
