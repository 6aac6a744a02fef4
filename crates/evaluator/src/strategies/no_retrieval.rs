//! `kind: no-retrieval` — the closed-book baseline: every question is read with no passages
//! (Bhat et al. 2025's "no retrieval" row; [`reader::ReaderInput::closed_book`]). Nothing is
//! indexed and the retriever is not asked; words retrieved are 0.

use super::{Chunker, Params, Passages, Ranking, StrategyStats};
use anyhow::Result;
use chunker::{Chunk, Document};
use embed::Embedder;
use retriever::{Hit, PassageIndex};
use serde::{Deserialize, Serialize};

/// The closed-book baseline (no fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoRetrieval {}

impl Params for NoRetrieval {
    const KIND: &'static str = "no-retrieval";
    const SUMMARY: &'static str = "closed-book baseline: every question is read with no passages (0 words retrieved); the retriever is not asked; no fields";

    fn retrieves(&self) -> bool {
        false
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        Ok(Box::new(NoRetrieval {}))
    }
}

impl Chunker for NoRetrieval {
    /// Indexes nothing.
    fn chunk_corpus(
        &self,
        _: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        Ok((Vec::new(), StrategyStats::default()))
    }

    fn passages<'a>(
        &self,
        _: &'a [Document],
        _: &'a PassageIndex,
    ) -> Result<Box<dyn Passages + 'a>> {
        Ok(Box::new(NoRetrieval {}))
    }
}

impl Passages for NoRetrieval {
    fn uses_hits(&self) -> bool {
        false
    }

    fn rank(
        &self,
        _: &[Document],
        _: &PassageIndex,
        _: &datasets::Question,
        _: &[Hit],
        _: usize,
    ) -> Ranking {
        Ranking {
            ranked: Vec::new(),
            record: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_question_reads_closed_book() {
        let docs = [Document::new("d", "Some text here.")];
        let (chunks, _) = NoRetrieval {}.chunk_corpus(&docs, None).unwrap();
        assert!(chunks.is_empty());
        let index = PassageIndex::new(&docs, chunks).unwrap();
        let p = NoRetrieval {}.passages(&docs, &index).unwrap();
        assert!(!p.uses_hits());
        let q: datasets::Question =
            serde_json::from_str(r#"{"id":"q","question":"Q?","options":["a","b"],"answer":0}"#)
                .unwrap();
        assert!(p.rank(&docs, &index, &q, &[], 3).ranked.is_empty());
    }
}
