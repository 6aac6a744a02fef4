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
/// Invariant: `texts[i] == documents[passages[i].doc_id].text[span]` — built only through
/// [`PassageIndex::new`], which slices the documents itself.
#[derive(Debug, Clone)]
pub struct PassageIndex {
    passages: Vec<Chunk>,
    texts: Vec<String>,
    doc_ranges: HashMap<String, std::ops::Range<usize>>,
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
        let mut texts = Vec::with_capacity(chunks.len());
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
            texts.push(doc.text[s..e].to_string());
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
                }
            }
        }
        Ok(PassageIndex {
            passages: chunks,
            texts,
            doc_ranges,
        })
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
        &self.texts[i]
    }

    /// The passage texts in index order (e.g. to embed them for a [`DenseIndex`]).
    pub fn texts(&self) -> &[String] {
        &self.texts
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

/// Sorts `(passage, score)` pairs by descending score with ties broken by ascending passage
/// index (deterministic under any thread count), NaN scores ranked last, and keeps `k`.
///
/// Cost: O(n) selection of the `k` best, then O(k log k) to sort them; the result owns only
/// `k` slots (a caller keeping one list per question must not hold the candidates' memory:
/// 14k questions × 100k candidates of 16 bytes is 22 GB).
pub fn top_k(mut hits: Vec<Hit>, k: usize) -> Vec<Hit> {
    fn key(h: &Hit) -> f64 {
        if h.score.is_nan() {
            f64::NEG_INFINITY
        } else {
            h.score
        }
    }
    let order = |a: &Hit, b: &Hit| key(b).total_cmp(&key(a)).then(a.passage.cmp(&b.passage));
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
