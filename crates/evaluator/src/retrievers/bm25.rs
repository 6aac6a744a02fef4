//! `kind: bm25` — Okapi BM25 with Lucene's idf ([`retriever::Bm25`]).

use super::{Input, Params, Retrieval, Retriever};
use anyhow::{bail, Result};
use rayon::prelude::*;
use retriever::{Bm25Params, QueryForm, Stemming, StopWords, TextAnalyzer};
use serde::{Deserialize, Serialize};

/// BM25's entry; also the lexical half of [`super::Hybrid`]. The analyser and parameters are
/// written into the entry when the config is resolved, so equal computations get equal cell
/// ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bm25 {
    /// Query form: `question`, `question+options` (default) or `per-option` (one query per
    /// option, max-pooled per passage).
    #[serde(default)]
    pub query: QueryForm,
    /// k1, term-frequency saturation (default 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k1: Option<f64>,
    /// b, length normalisation in [0, 1] (default 0.75).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<f64>,
    /// Drop English stop words (NLTK list; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_words: Option<bool>,
    /// Snowball English stemming (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stemming: Option<bool>,
}

impl Bm25 {
    /// k1 in force.
    pub fn k1(&self) -> f64 {
        self.k1.unwrap_or(1.2)
    }

    /// b in force.
    pub fn b(&self) -> f64 {
        self.b.unwrap_or(0.75)
    }

    /// The analyser in force.
    pub fn analyzer(&self) -> TextAnalyzer {
        TextAnalyzer {
            stop_words: if self.stop_words.unwrap_or(false) {
                StopWords::English
            } else {
                StopWords::None
            },
            stemming: if self.stemming.unwrap_or(false) {
                Stemming::English
            } else {
                Stemming::None
            },
        }
    }
}

impl Params for Bm25 {
    const KIND: &'static str = "bm25";
    const SUMMARY: &'static str = "Okapi BM25 with Lucene's idf; `k1` (1.2), `b` (0.75), `stop_words` (false), `stemming` (false); `query`: question, question+options (default) or per-option";

    fn query(&self) -> QueryForm {
        self.query
    }

    fn resolve_defaults(&mut self) {
        self.k1 = Some(self.k1());
        self.b = Some(self.b());
        self.stop_words = Some(self.stop_words.unwrap_or(false));
        self.stemming = Some(self.stemming.unwrap_or(false));
    }

    fn check(&self) -> Result<()> {
        if !(self.k1().is_finite() && self.k1() >= 0.0) {
            bail!("field `k1`: must be a finite number >= 0");
        }
        if !(0.0..=1.0).contains(&self.b()) {
            bail!("field `b`: must be in [0, 1]");
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Retriever> {
        Box::new(self.clone())
    }
}

impl Retriever for Bm25 {
    fn retrieve(&self, input: &Input<'_>, depth: usize) -> Result<Retrieval> {
        let bm25 = retriever::Bm25::with_analyzer(
            input.index,
            Bm25Params {
                k1: self.k1(),
                b: self.b(),
            },
            self.analyzer(),
        );
        let bar = (input.stage)("bm25", input.queries.len());
        let hits = input
            .queries
            .par_iter()
            .zip(input.scopes)
            .map_init(retriever::Bm25Scratch::default, |scratch, (qs, m)| {
                let h = bm25.search_pooled_with(scratch, qs, depth, m.as_deref());
                bar.inc(1);
                h
            })
            .collect();
        bar.finish_and_clear();
        Ok(Retrieval {
            hits,
            degenerate: Default::default(),
        })
    }
}
