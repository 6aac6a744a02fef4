//! `kind: hybrid` — reciprocal rank fusion (k = 60) of dense and BM25 ([`retriever::rrf`];
//! Cormack, Clarke & Büttcher 2009).

use super::{Bm25, Dense, Input, Params, Retrieval, Retriever};
use anyhow::Result;
use retriever::QueryForm;
use serde::{Deserialize, Serialize};

/// The hybrid entry: the fields of its BM25 half (the dense half has none but `query`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Hybrid {
    /// The BM25 half's entry (and the shared query form).
    pub bm25: Bm25,
}

impl Params for Hybrid {
    const KIND: &'static str = "hybrid";
    const SUMMARY: &'static str = "reciprocal rank fusion (k = 60) of dense and BM25, each to depth max(k, 100); BM25 fields and `query` as for bm25";

    fn query(&self) -> QueryForm {
        self.bm25.query
    }

    fn needs_embedder(&self) -> bool {
        true
    }

    fn resolve_defaults(&mut self) {
        self.bm25.resolve_defaults()
    }

    fn check(&self) -> Result<()> {
        self.bm25.check()
    }

    fn build(&self) -> Box<dyn Retriever> {
        Box::new(self.clone())
    }
}

impl Retriever for Hybrid {
    fn retrieve(&self, input: &Input<'_>, depth: usize) -> Result<Retrieval> {
        let part = depth.max(retriever::RRF_DEPTH);
        let dense = Dense {
            query: self.bm25.query,
        }
        .retrieve(input, part)?;
        let lexical = self.bm25.retrieve(input, part)?;
        Ok(Retrieval {
            hits: dense
                .hits
                .iter()
                .zip(&lexical.hits)
                .map(|(d, b)| retriever::rrf(&[d.as_slice(), b.as_slice()], depth))
                .collect(),
            degenerate: dense.degenerate,
        })
    }
}
