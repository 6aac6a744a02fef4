//! `kind: oracle` — the gold-evidence baseline: every question is read with exactly its gold
//! evidence spans (`evidence: [{doc_id, start, end}]` of the dataset, each an exact byte span
//! of its document), as one rank so that k never cuts them. A question without evidence reads
//! closed-book (its `evidence_hit`, recall and span columns stay empty, and a wrong answer is
//! attributed `no-evidence`). Nothing is indexed and the retriever is not asked.
//! The reference is the oracle-context upper bound of RAG evaluations (e.g. Bhat et al. 2025).

use super::{Chunker, Params, Passages, Ranked, Ranking, StrategyStats};
use anyhow::Result;
use chunker::{Chunk, Document};
use embed::Embedder;
use retriever::{Hit, PassageIndex};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The gold-evidence baseline (no fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Oracle {}

impl Params for Oracle {
    const KIND: &'static str = "oracle";
    const SUMMARY: &'static str = "gold-evidence baseline: every question is read with exactly its gold evidence spans (all of them, as one rank); without evidence it reads closed-book; the retriever is not asked; no fields";

    fn retrieves(&self) -> bool {
        false
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        Ok(Box::new(Oracle {}))
    }
}

impl Chunker for Oracle {
    /// Indexes nothing.
    fn chunk_corpus(
        &self,
        _: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        Ok((Vec::new(), StrategyStats::default()))
    }

    /// The gold evidence spans are the passages.
    fn passages_at_query_time(&self) -> bool {
        true
    }

    fn passages<'a>(
        &self,
        docs: &'a [Document],
        _: &'a PassageIndex,
    ) -> Result<Box<dyn Passages + 'a>> {
        Ok(Box::new(OraclePassages {
            docs: docs.iter().map(|d| (d.id.as_str(), d)).collect(),
        }))
    }
}

/// The documents by id, to slice evidence from.
struct OraclePassages<'a> {
    docs: HashMap<&'a str, &'a Document>,
}

impl Passages for OraclePassages<'_> {
    fn uses_hits(&self) -> bool {
        false
    }

    fn describe(&self) -> Option<String> {
        Some(
            "oracle: each question reads its gold evidence spans (closed-book without evidence)"
                .into(),
        )
    }

    /// The question's distinct evidence spans in their order (an exact duplicate once), as
    /// one rank of score 1. The loader has checked every span against its document.
    fn rank(
        &self,
        _: &[Document],
        _: &PassageIndex,
        q: &datasets::Question,
        _: &[Hit],
        _: usize,
    ) -> Ranking {
        let mut chunks: Vec<Chunk> = Vec::new();
        for e in q.evidence.iter().flatten() {
            let Some(d) = self.docs.get(e.doc_id.as_str()) else {
                continue; // unreachable: the loader rejects evidence of unknown documents
            };
            let c = Chunk::new(d, e.start, e.end);
            if !chunks.contains(&c) {
                chunks.push(c);
            }
        }
        Ranking {
            ranked: if chunks.is_empty() {
                Vec::new()
            } else {
                vec![Ranked { chunks, score: 1.0 }]
            },
            record: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_spans_are_the_passages_in_one_rank() {
        let docs = [
            Document::new("a", "Alpha beta. Gamma delta."),
            Document::new("b", "Épée ünïcode text."),
        ];
        let index = PassageIndex::new(&docs, Vec::new()).unwrap();
        let p = Oracle {}.passages(&docs, &index).unwrap();
        assert!(!p.uses_hits());
        let q: datasets::Question = serde_json::from_str(
            r#"{"id":"q","question":"Q?","options":["a","b"],"answer":0,
                "evidence":[{"doc_id":"a","start":12,"end":24},{"doc_id":"b","start":0,"end":6},
                            {"doc_id":"a","start":12,"end":24}]}"#,
        )
        .unwrap();
        let r = p.rank(&docs, &index, &q, &[], 1);
        assert_eq!(r.ranked.len(), 1, "one rank, so k = 1 keeps all evidence");
        let texts: Vec<&str> = r.ranked[0]
            .chunks
            .iter()
            .map(|c| {
                let d = docs.iter().find(|d| d.id == c.doc_id).unwrap();
                c.text(d)
            })
            .collect();
        assert_eq!(texts, ["Gamma delta.", "Épée"]);
        let none: datasets::Question =
            serde_json::from_str(r#"{"id":"n","question":"Q?","options":["a","b"],"answer":1}"#)
                .unwrap();
        assert!(p.rank(&docs, &index, &none, &[], 3).ranked.is_empty());
    }
}
