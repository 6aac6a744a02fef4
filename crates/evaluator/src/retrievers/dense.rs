//! `kind: dense` — exact cosine top-k over the run's embedder ([`retriever::DenseIndex`]).

use super::{Degenerate, Input, Params, Retrieval, Retriever};
use anyhow::{Context, Result};
use retriever::QueryForm;
use serde::{Deserialize, Serialize};

/// The dense retriever's entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dense {
    /// Query form: `question`, `question+options` (default) or `per-option`.
    #[serde(default)]
    pub query: QueryForm,
}

impl Params for Dense {
    const KIND: &'static str = "dense";
    const SUMMARY: &'static str = "exact cosine top-k over the run's embedder (passages and queries embedded; L2-normalised dot product); `query` as for bm25";

    fn query(&self) -> QueryForm {
        self.query
    }

    fn needs_embedder(&self) -> bool {
        true
    }

    fn build(&self) -> Box<dyn Retriever> {
        Box::new(self.clone())
    }
}

impl Retriever for Dense {
    /// Embeds every passage's indexed text ([`retriever::PassageIndex::index_text`]: its own
    /// text, or the text its strategy indexes it under) and every query text in one call each
    /// (the embedder batches by length and caches by content). Passage vectors a strategy
    /// computed itself (late chunking, [`retriever::PassageIndex::indexed_vectors`]) are used
    /// as they are.
    fn retrieve(&self, input: &Input<'_>, depth: usize) -> Result<Retrieval> {
        let e = input
            .embedder
            .context("dense retrieval needs the run's embedder")?;
        let index = input.index;
        let vectors = match index.indexed_vectors() {
            Some(v) => {
                if let Some(bad) = v.iter().find(|x| x.len() != e.dim()) {
                    anyhow::bail!(
                        "the strategy's passage vectors have {} dimensions, the embedder's {}",
                        bad.len(),
                        e.dim()
                    );
                }
                v.to_vec()
            }
            None => {
                let texts: Vec<&str> = (0..index.len()).map(|i| index.index_text(i)).collect();
                e.embed(&texts)?
            }
        };
        // By value: each row is freed as it is copied (one copy of the vectors at the peak).
        let dense = retriever::DenseIndex::from_rows(vectors, e.dim())?;
        let (qtexts, groups) = retriever::flatten_queries(input.queries);
        let qvecs = e.embed(&qtexts)?;
        let scopes: Vec<Option<&[bool]>> = input.scopes.iter().map(|m| m.as_deref()).collect();
        let hits = dense.search_pooled_batch(&qvecs, &groups, depth, &scopes)?;
        let degenerate = Degenerate {
            passages: dense.degenerate_passages().len(),
            queries: groups
                .iter()
                .filter(|g| {
                    qvecs[(*g).clone()]
                        .iter()
                        .all(|v| retriever::is_degenerate(v))
                })
                .count(),
        };
        Ok(Retrieval { hits, degenerate })
    }
}
