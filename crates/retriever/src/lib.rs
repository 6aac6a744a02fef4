//! Passage retrieval for chunkbench: the passage index, exact dense top-k, BM25, hybrid
//! fusion, query forms, retrieval metrics and TREC files.
//!
//! A [`PassageIndex`] is built once per (dataset, strategy) from chunks and their exact source
//! slices and is shared by every k and reader (docs/reference.md §1, "retrieve"). Retrievers return
//! [`Hit`]s (passage index + score) ranked by descending score with ties broken by ascending
//! passage index, identically under any thread count (docs/reference.md case 31):
//! - [`Bm25`]: Okapi BM25 with Lucene idf over a documented [`TextAnalyzer`];
//! - [`DenseIndex`]: exact cosine top-k by blocked matrix products (candle + gemm);
//! - [`rrf`]: reciprocal rank fusion (k = 60) of ranked lists, e.g. dense and BM25.
//!
//! [`QueryForm`] turns a question and its options into query texts; [`metrics`] scores the
//! retrieved passages against gold evidence; [`trec`] writes run and qrels files.

#![warn(missing_docs)]

pub mod bm25;
pub mod dense;
pub mod ear;
pub mod hybrid;
pub mod metrics;
pub mod query;
pub mod record_kind;
pub mod records;
pub mod trec;

pub use bm25::{Bm25, Bm25Params, Bm25Scratch};
/// The word analysers live with words, in `chunker` (shared with the lexical reader).
pub use chunker::analyzer::{self, Analyzer, Stemming, StopWords, TextAnalyzer};
pub use dense::{is_degenerate, DenseError, DenseIndex, DEFAULT_QUERY_BLOCK, PASSAGE_TILE};
pub use hybrid::{rrf, rrf_with, RRF_DEPTH, RRF_K};
pub use metrics::{words_retrieved, words_retrieved_in, DocSpan, WordsRetrieved};
pub use query::{flatten_queries, query_texts, QueryForm};

use chunker::{Chunk, Document};
use std::collections::HashMap;

/// One retrieved passage: its position in the index and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index of the passage in [`PassageIndex::passages`].
    pub passage: usize,
    /// Retriever score (higher is better): BM25 points for [`Bm25`], cosine in [-1, 1] for
    /// [`DenseIndex`], summed reciprocal ranks for [`rrf`].
    pub score: f64,
}

/// The chunks of one corpus, in document order, with their texts.
///
/// Memory is proportional to the documents and the spans, never to the passage texts
/// repeated: the index keeps one copy of each chunked document's text and each passage as
/// its document and byte span, so 2,000 overlapping near-whole-document spans cost 2,000
/// spans, not 2,000 copies of the document.
///
/// Invariant: [`PassageIndex::text`]`(i) == documents[passages[i].doc_id].text[span]` —
/// built only through [`PassageIndex::new`], which checks every span against its document.
#[derive(Debug, Clone)]
pub struct PassageIndex {
    passages: Vec<Chunk>,
    /// The text of each document with chunks, in order of first appearance.
    doc_texts: Vec<String>,
    /// For each passage, its document's position in `doc_texts`.
    doc_of: Vec<u32>,
    /// Σ passage bytes (overlapping spans count each time).
    passage_bytes: u64,
    doc_ranges: HashMap<String, std::ops::Range<usize>>,
    indexed: IndexedForm,
}

/// What the retrievers read for each passage when a strategy indexes it under something other
/// than its own text (docs/reference.md §3d): a contextual header or an LLM-written context
/// before the text, or a late-chunked vector. The passage itself — what the reader gets, the
/// words counted, every span metric — stays the exact byte span of its document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexedForm {
    /// One text per passage, in index order, that BM25 analyses and dense retrieval embeds
    /// instead of the passage text; `None`: the passage text.
    pub texts: Option<Vec<String>>,
    /// One vector per passage, in index order (the embedder's dimension; L2-normalised, or
    /// all zeros for a passage without one), that dense retrieval uses instead of embedding;
    /// `None`: dense retrieval embeds the indexed text.
    pub vectors: Option<Vec<Vec<f32>>>,
    /// What was indexed, in words for summary.md (empty: the passage text).
    pub label: String,
}

impl PassageIndex {
    /// Builds the index from documents and their chunks (chunks of one document contiguous,
    /// as every chunker in this workspace emits them).
    ///
    /// # Errors
    /// A message naming the chunk when it refers to an unknown document, when its span is
    /// outside the text or not on character boundaries, or when a document's chunks are not
    /// contiguous.
    pub fn new(documents: &[Document], chunks: Vec<Chunk>) -> Result<Self, String> {
        let by_id: HashMap<&str, &Document> =
            documents.iter().map(|d| (d.id.as_str(), d)).collect();
        let mut doc_texts: Vec<String> = Vec::new();
        let mut doc_of = Vec::with_capacity(chunks.len());
        let mut passage_bytes = 0u64;
        let mut doc_ranges: HashMap<String, std::ops::Range<usize>> = HashMap::new();
        for (i, c) in chunks.iter().enumerate() {
            let doc = by_id
                .get(c.doc_id.as_str())
                .ok_or_else(|| format!("chunk {} refers to unknown document", c.id()))?;
            let (s, e) = (c.span.start, c.span.end);
            if s > e
                || e > doc.text.len()
                || !doc.text.is_char_boundary(s)
                || !doc.text.is_char_boundary(e)
            {
                return Err(format!(
                    "chunk {} is not a character-aligned span of its document",
                    c.id()
                ));
            }
            passage_bytes += (e - s) as u64;
            match doc_ranges.get_mut(&c.doc_id) {
                Some(r) if r.end == i => r.end = i + 1,
                Some(_) => {
                    return Err(format!(
                        "chunks of document {} are not contiguous in the index",
                        c.doc_id
                    ))
                }
                None => {
                    doc_ranges.insert(c.doc_id.clone(), i..i + 1);
                    doc_texts.push(doc.text.clone());
                }
            }
            let d = u32::try_from(doc_texts.len() - 1)
                .map_err(|_| "more than 2^32 documents in one index".to_string())?;
            doc_of.push(d);
        }
        Ok(PassageIndex {
            passages: chunks,
            doc_texts,
            doc_of,
            passage_bytes,
            doc_ranges,
            indexed: IndexedForm::default(),
        })
    }

    /// The index with `form` as what the retrievers read (see [`IndexedForm`]).
    ///
    /// # Errors
    /// When `form` holds a number of texts or vectors other than one per passage, or vectors
    /// of unequal lengths.
    pub fn with_indexed(mut self, form: IndexedForm) -> Result<Self, String> {
        let n = self.passages.len();
        if let Some(t) = &form.texts {
            if t.len() != n {
                return Err(format!(
                    "{} indexed texts for {n} passages (one per passage expected)",
                    t.len()
                ));
            }
        }
        if let Some(v) = &form.vectors {
            if v.len() != n {
                return Err(format!(
                    "{} indexed vectors for {n} passages (one per passage expected)",
                    v.len()
                ));
            }
            if let Some(d) = v.first().map(Vec::len) {
                if let Some(i) = v.iter().position(|x| x.len() != d) {
                    return Err(format!(
                        "indexed vector {i} has {} dimensions, the first has {d}",
                        v[i].len()
                    ));
                }
            }
        }
        self.indexed = form;
        Ok(self)
    }

    /// What the retrievers read for passage `i`: its indexed text ([`IndexedForm::texts`])
    /// when the strategy set one, else exactly its document slice ([`PassageIndex::text`]).
    ///
    /// # Panics
    /// When `i >= len()`.
    pub fn index_text(&self, i: usize) -> &str {
        match &self.indexed.texts {
            Some(t) => &t[i],
            None => self.text(i),
        }
    }

    /// The passage vectors the strategy computed ([`IndexedForm::vectors`]), if any.
    pub fn indexed_vectors(&self) -> Option<&[Vec<f32>]> {
        self.indexed.vectors.as_deref()
    }

    /// What was indexed, in words (empty: the passage text).
    pub fn indexed_label(&self) -> &str {
        &self.indexed.label
    }

    /// The passages (chunks) in index order.
    pub fn passages(&self) -> &[Chunk] {
        &self.passages
    }

    /// The text of passage `i`: exactly its document slice.
    ///
    /// # Panics
    /// When `i >= len()`.
    pub fn text(&self, i: usize) -> &str {
        let span = self.passages[i].span;
        &self.doc_texts[self.doc_of[i] as usize][span.start..span.end]
    }

    /// Σ passage bytes: the bytes of every passage's text, overlapping spans counted each
    /// time — what the retrievers analyse and embed.
    pub fn passage_bytes(&self) -> u64 {
        self.passage_bytes
    }

    /// Σ bytes of the chunked documents' texts, each counted once.
    pub fn document_bytes(&self) -> u64 {
        self.doc_texts.iter().map(|t| t.len() as u64).sum()
    }

    /// Stable id of passage `i` (`DOC_ID:START-END`, [`Chunk::id`]), as written to TREC files.
    ///
    /// # Panics
    /// When `i >= len()`.
    pub fn passage_id(&self, i: usize) -> String {
        self.passages[i].id()
    }

    /// The passages of document `doc_id`, in order (empty for an unknown document or one
    /// without chunks).
    pub fn doc_passages(&self, doc_id: &str) -> &[Chunk] {
        self.doc_ranges
            .get(doc_id)
            .map_or(&[], |r| &self.passages[r.clone()])
    }

    /// Number of passages.
    pub fn len(&self) -> usize {
        self.passages.len()
    }

    /// True when the corpus produced no passages.
    pub fn is_empty(&self) -> bool {
        self.passages.is_empty()
    }

    /// A mask of the passages belonging to `doc_ids` (the question's retrieval scope);
    /// `None` means the whole corpus. Unknown ids select nothing. Every retriever here takes
    /// the mask as `Option<&[bool]>` (`scope.as_deref()`).
    pub fn scope_mask(&self, doc_ids: Option<&[String]>) -> Option<Vec<bool>> {
        let ids = doc_ids?;
        let mut mask = vec![false; self.passages.len()];
        for id in ids {
            if let Some(r) = self.doc_ranges.get(id) {
                mask[r.clone()].iter_mut().for_each(|m| *m = true);
            }
        }
        Some(mask)
    }
}

/// Whether passage `p` is inside `scope` (a mask from [`PassageIndex::scope_mask`]; `None` =
/// every passage; positions past the mask's end are out of scope). The one rule every
/// retriever here applies.
#[inline]
pub(crate) fn in_scope(scope: Option<&[bool]>, p: usize) -> bool {
    scope.is_none_or(|m| m.get(p).copied().unwrap_or(false))
}

/// The ranking order of [`top_k`]: descending score (NaN last), ties by ascending passage;
/// `Less` = ranked first.
fn rank_order(a: &Hit, b: &Hit) -> std::cmp::Ordering {
    fn key(h: &Hit) -> f64 {
        if h.score.is_nan() {
            f64::NEG_INFINITY
        } else {
            h.score
        }
    }
    key(b).total_cmp(&key(a)).then(a.passage.cmp(&b.passage))
}

/// A hit ordered by [`rank_order`], so a max-heap of them has the worst kept hit on top.
#[derive(Debug, Clone, Copy)]
struct Ranked(Hit);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        rank_order(&self.0, &other.0).is_eq()
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        rank_order(&self.0, &other.0)
    }
}

/// Streaming [`top_k`]: hits offered one at a time, the `k` best kept in a heap of `k` slots.
/// [`BestHits::into_sorted`] equals [`top_k`] of every offered hit (same order, same tie-breaks),
/// without holding the candidates: O(1) per offer that does not enter, O(log k) per one that
/// does. Offers may come in any passage order (BM25's sparse path offers passages in the order
/// its postings touched them); the dense index keeps its own f32 buffer, which relies on
/// ascending passage order.
#[derive(Debug)]
pub(crate) struct BestHits {
    k: usize,
    heap: std::collections::BinaryHeap<Ranked>,
}

impl BestHits {
    /// An empty collector of the `k` best. Capacity grows with what is kept, so a huge `k`
    /// (a config's "all passages") allocates nothing up front.
    pub(crate) fn new(k: usize) -> Self {
        BestHits {
            k,
            heap: std::collections::BinaryHeap::with_capacity(k.min(1024)),
        }
    }

    /// Offers one hit; it is kept when fewer than `k` are held or it ranks before the worst.
    #[inline]
    pub(crate) fn offer(&mut self, hit: Hit) {
        if self.heap.len() < self.k {
            self.heap.push(Ranked(hit));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if rank_order(&hit, &worst.0).is_lt() {
                *worst = Ranked(hit);
            }
        }
    }

    /// The kept hits, best first.
    pub(crate) fn into_sorted(self) -> Vec<Hit> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

/// Sorts `(passage, score)` pairs by descending score with ties broken by ascending passage
/// index (deterministic under any thread count), NaN scores ranked last, and keeps `k`.
///
/// Cost: O(n) selection of the `k` best, then O(k log k) to sort them; the result owns only
/// `k` slots (a caller keeping one list per question must not hold the candidates' memory:
/// 14k questions × 100k candidates of 16 bytes is 22 GB).
pub fn top_k(mut hits: Vec<Hit>, k: usize) -> Vec<Hit> {
    let order = rank_order;
    if k == 0 {
        return Vec::new();
    }
    if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, order);
        hits.truncate(k);
        hits.shrink_to_fit();
    }
    hits.sort_unstable_by(order);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept list owns `k` slots, not the candidates' (a list per question is kept for
    /// the whole run), and selection gives the order a full sort gives.
    #[test]
    fn top_k_keeps_k_slots_and_equals_a_full_sort() {
        let hits: Vec<Hit> = (0..10_000)
            .map(|i| Hit {
                passage: i,
                score: ((i * 7919) % 101) as f64,
            })
            .collect();
        let mut sorted = hits.clone();
        sorted.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.passage.cmp(&b.passage)));
        let top = top_k(hits.clone(), 8);
        assert_eq!(top.capacity(), 8);
        assert_eq!(top, sorted[..8]);
        assert!(top_k(hits.clone(), 0).is_empty());
        // The streaming collector keeps exactly what top_k keeps, whatever the offer order
        // (ties at equal scores included), NaN last.
        let mut with_nan = hits.clone();
        with_nan[17].score = f64::NAN;
        with_nan.reverse();
        for k in [0, 1, 8, 101, 20_000, usize::MAX] {
            let mut best = BestHits::new(k);
            with_nan.iter().for_each(|&h| best.offer(h));
            let bits = |v: Vec<Hit>| -> Vec<(usize, u64)> {
                v.iter().map(|h| (h.passage, h.score.to_bits())).collect()
            };
            assert_eq!(
                bits(best.into_sorted()),
                bits(top_k(with_nan.clone(), k)),
                "k = {k}"
            );
        }
        assert_eq!(top_k(hits, 20_000), sorted);
    }

    #[test]
    fn top_k_breaks_ties_by_passage_order_and_sinks_nan() {
        let hits = vec![
            Hit {
                passage: 4,
                score: 0.8125,
            },
            Hit {
                passage: 1,
                score: 0.8125,
            },
            Hit {
                passage: 0,
                score: f64::NAN,
            },
            Hit {
                passage: 3,
                score: 0.8125,
            },
            Hit {
                passage: 2,
                score: 0.8125,
            },
        ];
        let ids: Vec<usize> = top_k(hits, 3).iter().map(|h| h.passage).collect();
        assert_eq!(ids, [1, 2, 3]);
    }
}
