//! `kind: sentence-window` — LlamaIndex's sentence-window retrieval
//! (`SentenceWindowNodeParser` + `MetadataReplacementPostProcessor`, llama-index-core 0.14;
//! docs/reference.md §5, "LlamaIndex sentence windows"): single sentences are indexed, and a
//! retrieved sentence is returned as its window, the sentence with `window_size` sentences on
//! each side (fewer at a document's edges).
//!
//! Differences from LlamaIndex, by design:
//! - A window is an exact byte span of its document, from the first sentence's start to the
//!   last one's end; LlamaIndex joins the sentence texts with a space (each sentence keeps its
//!   trailing whitespace, so its windows hold doubled spaces).
//! - Sentences come from [`chunker::segment::sentences`] (UAX #29 plus abbreviation rules);
//!   LlamaIndex uses NLTK's Punkt *untrained* (no abbreviation list), so it also ends a sentence
//!   after "Dr." or "e.g.". The window logic is checked against LlamaIndex on its own sentence
//!   boundaries (`crates/evaluator/tests/sentence_window_golden.rs`).
//! - Like LlamaIndex, windows of two retrieved neighbouring sentences are not merged: top-k
//!   gives k windows, and their overlap counts in words retrieved (multiplicity), not in unique
//!   words.

use super::{Chunker, Params, Passages, Ranking, StrategyStats};
use anyhow::{bail, Result};
use chunker::{Chunk, Document, Span};
use embed::Embedder;
use retriever::{Hit, PassageIndex};
use serde::{Deserialize, Serialize};

/// Sentence-window settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SentenceWindow {
    /// Sentences on each side of the retrieved one (LlamaIndex `window_size`, default 3).
    #[serde(default = "default_window")]
    pub window_size: usize,
}

fn default_window() -> usize {
    3
}

impl Params for SentenceWindow {
    const KIND: &'static str = "sentence-window";
    const SUMMARY: &'static str = "LlamaIndex sentence windows: single sentences are indexed, a hit returns the sentence with `window_size` (3) sentences on each side, as one exact span";

    fn check(&self) -> Result<()> {
        // LlamaIndex requires window_size > 0 (a window of the sentence alone is chunking by
        // sentences, which this kind is not).
        if self.window_size == 0 {
            bail!("field `window_size` must be at least 1 (sentences on each side)");
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        Ok(Box::new(self.clone()))
    }
}

impl Chunker for SentenceWindow {
    /// The sentences of every document, in order.
    fn chunk_corpus(
        &self,
        docs: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        use rayon::prelude::*;
        let chunks = docs
            .par_iter()
            .flat_map_iter(|d| {
                chunker::segment::sentences(&d.text)
                    .into_iter()
                    .map(move |s| Chunk::new(d, s.start, s.end))
            })
            .collect();
        Ok((chunks, StrategyStats::default()))
    }

    /// A hit's window of sentences is made at query time.
    fn passages_at_query_time(&self) -> bool {
        true
    }

    fn passages<'a>(
        &self,
        docs: &'a [Document],
        index: &'a PassageIndex,
    ) -> Result<Box<dyn Passages + 'a>> {
        let passages = index.passages();
        let by_id: std::collections::HashMap<&str, &Document> =
            docs.iter().map(|d| (d.id.as_str(), d)).collect();
        let mut out = Vec::with_capacity(passages.len());
        // Runs of one document's sentences, in index order (chunks are in document order).
        let mut start = 0;
        while start < passages.len() {
            let doc = &passages[start].doc_id;
            let end = start
                + passages[start..]
                    .iter()
                    .take_while(|c| &c.doc_id == doc)
                    .count();
            let spans: Vec<Span> = passages[start..end].iter().map(|c| c.span).collect();
            let d = by_id[doc.as_str()];
            out.extend(
                windows(&spans, self.window_size)
                    .into_iter()
                    .map(|w| Chunk::new(d, w.start, w.end)),
            );
            start = end;
        }
        Ok(Box::new(Windows(out)))
    }
}

/// The window of each sentence: from sentence `i - w` to sentence `i + w` (clamped to the
/// document), as one span from the first one's start to the last one's end.
/// `sentences` are one document's sentence spans in order; the result is aligned with them.
pub fn windows(sentences: &[Span], w: usize) -> Vec<Span> {
    let n = sentences.len();
    (0..n)
        .map(|i| Span {
            start: sentences[i.saturating_sub(w)].start,
            end: sentences[(i + w).min(n - 1)].end,
        })
        .collect()
}

/// Each indexed sentence's window, by passage position.
struct Windows(Vec<Chunk>);

impl Passages for Windows {
    fn rank(
        &self,
        _: &[Document],
        _: &PassageIndex,
        _: &datasets::Question,
        hits: &[Hit],
        _: usize,
    ) -> Ranking {
        super::one_per_hit(hits, &self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_clamp_at_document_edges() {
        let s: Vec<Span> = (0..5)
            .map(|i| Span {
                start: 10 * i,
                end: 10 * i + 8,
            })
            .collect();
        let w = windows(&s, 1);
        assert_eq!((w[0].start, w[0].end), (0, 18));
        assert_eq!((w[2].start, w[2].end), (10, 38));
        assert_eq!((w[4].start, w[4].end), (30, 48));
        let w = windows(&s, 0);
        assert_eq!((w[3].start, w[3].end), (30, 38));
        let w = windows(&s, 9);
        assert!(w.iter().all(|x| (x.start, x.end) == (0, 48)));
        assert!(windows(&[], 3).is_empty());
    }

    /// docs/reference.md case 27: windows of 2 on each side are symmetric, inclusive and
    /// clipped only at the document's edges.
    #[test]
    fn case_27_windows_at_the_edges() {
        let text = "S0 is first. S1 is next. S2 is middle. S3 is centre. S4 follows. S5 is late. S6 is last.";
        let s = chunker::segment::sentences(text);
        assert_eq!(s.len(), 7);
        let w = windows(&s, 2);
        let t = |i: usize| &text[w[i].start..w[i].end];
        assert_eq!(t(0), "S0 is first. S1 is next. S2 is middle.");
        assert_eq!(
            t(3),
            "S1 is next. S2 is middle. S3 is centre. S4 follows. S5 is late."
        );
        assert_eq!(t(6), "S4 follows. S5 is late. S6 is last.");
        assert!(SentenceWindow { window_size: 0 }.check().is_err());
    }

    #[test]
    fn hits_return_windows_of_their_own_document() {
        let docs = vec![
            Document::new("a", "One fish. Two fish. Red fish. Blue fish."),
            Document::new("b", "Alpha beta. Gamma delta."),
        ];
        let p = SentenceWindow { window_size: 1 };
        let (chunks, _) = p.chunk_corpus(&docs, None).unwrap();
        assert_eq!(chunks.len(), 6);
        let index = PassageIndex::new(&docs, chunks).unwrap();
        let passages = p.passages(&docs, &index).unwrap();
        let q = datasets::Question {
            id: "q".into(),
            question: "fish?".into(),
            options: vec!["x".into(), "y".into()],
            answer: Some(0),
            subject: None,
            doc_ids: None,
            evidence: None,
            answers: None,
        };
        let hits = [
            Hit {
                passage: 0,
                score: 2.0,
            },
            Hit {
                passage: 4,
                score: 1.0,
            },
        ];
        let r = passages.rank(&docs, &index, &q, &hits, 2);
        let texts: Vec<&str> = r
            .ranked
            .iter()
            .map(|x| {
                let c = &x.chunks[0];
                let d = docs.iter().find(|d| d.id == c.doc_id).unwrap();
                c.text(d)
            })
            .collect();
        assert_eq!(texts, ["One fish. Two fish.", "Alpha beta. Gamma delta."]);
        assert_eq!(r.ranked[0].score, 2.0);
    }
}
