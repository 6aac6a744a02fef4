//! `kind: ear` — EAR entity-aware anchor windows (arXiv 2609.12268; [`retriever::ear`]):
//! fixed word parents go into the index, and at query time windows are cut around the anchors
//! a question and its options share with the corpus (docs/reference.md §6).

use super::fixed::FixedChunker;
use super::{common, Chunker, Params, Passages, QuestionRecord, Ranked, Ranking, StrategyStats};
use anyhow::{bail, Context, Result};
use chunker::SizeLimit;
use chunker::{Chunk, Document, FixedConfig, Unit};
use embed::Embedder;
use retriever::ear::{EarConfig, EarIndex, EarResult};
use retriever::{Hit, PassageIndex};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// EAR parents (`size`/`overlap` words, default 260/60) and the query-time settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ear {
    /// Only `words` (parents are counted in words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Parent size in words (default 260).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// Parent overlap in words, or a fraction of `size` (default 60 when `size` is not given).
    #[serde(default)]
    pub overlap: f64,
    /// Window, scoring, deduplication and expansion settings ([`EarConfig`]; radius 80 words,
    /// weights anchor 1 / lexical 1 / date 0.5, drop at 0.5 overlap, `expand: none | parent |
    /// summary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ear: Option<EarConfig>,
}

impl Ear {
    /// Parent size and overlap in words: `size` (default 260) and `overlap` (default 60 when
    /// `size` is not given, as in EAR's 260/60 parents).
    fn parent_size(&self) -> Result<(usize, usize)> {
        Ok(match self.size {
            None if self.overlap == 0.0 => (260, 60),
            None => (260, common::overlap_units(self.overlap, 260)?),
            Some(n) => (n, common::overlap_units(self.overlap, n)?),
        })
    }
}

impl Params for Ear {
    const KIND: &'static str = "ear";
    const SUMMARY: &'static str = "EAR anchor windows over parents of `size`/`overlap` words (default 260/60); `ear: {radius: 80, snap_sentences, weights: {anchor: 1, lexical: 1, date: 0.5}, dedup: drop or merge, dedup_threshold: 0.5, expand: none, parent or summary, summary_words: 60, anchors: {domain_suffixes, short_option_max_words: 4, rules: 2}}` (anchor rules generation: 2 stops capitalised anchors at sentence ends, 1 reproduces releases before it)";

    fn resolve_defaults(&mut self) {
        if let Ok((size, overlap)) = self.parent_size() {
            self.size = Some(size);
            self.overlap = overlap as f64;
        }
        if self.ear.is_none() {
            self.ear = Some(EarConfig::default());
        }
    }

    fn check(&self) -> Result<()> {
        if self.unit.is_some_and(|u| u != Unit::Words) {
            bail!("field `unit`: EAR parents are counted in words; remove `unit`");
        }
        let (size, overlap) = self.parent_size()?;
        FixedConfig::new(size, overlap).context("fields `size`/`overlap` (EAR parents)")?;
        if let Some(e) = &self.ear {
            e.check()
                .map_err(|e| anyhow::anyhow!("field `ear`: {e:#}"))?;
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let (size, overlap) = self.parent_size()?;
        Ok(Box::new(EarChunker {
            parents: FixedChunker(FixedConfig::new(size, overlap)?),
            config: self.ear.clone().unwrap_or_default(),
        }))
    }
}

/// Parents as fixed windows; the anchor index and windows at query time.
struct EarChunker {
    parents: FixedChunker,
    config: EarConfig,
}

impl Chunker for EarChunker {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        embedder: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        self.parents.chunk_corpus(docs, embedder)
    }

    fn size_limit(&self) -> Option<SizeLimit> {
        self.parents.size_limit()
    }

    /// Anchor windows (and their expansions) are made per question from the parents.
    fn passages_at_query_time(&self) -> bool {
        true
    }

    fn passages<'a>(
        &self,
        docs: &'a [Document],
        index: &'a PassageIndex,
    ) -> Result<Box<dyn Passages + 'a>> {
        let t = Instant::now();
        let ear = EarIndex::new(docs, index, self.config.clone())
            .map_err(|e| anyhow::anyhow!("field `ear`: {e:#}"))?;
        Ok(Box::new(EarPassages {
            built: format!(
                "anchor index of {} forms in {:.1}s",
                ear.anchor_forms(),
                t.elapsed().as_secs_f64()
            ),
            ear,
        }))
    }
}

struct EarPassages<'a> {
    ear: EarIndex<'a>,
    built: String,
}

impl Passages for EarPassages<'_> {
    fn describe(&self) -> Option<String> {
        Some(self.built.clone())
    }

    /// EAR's windows for the question; the retriever's `hits` over the parents are its
    /// fallback when no anchor matches.
    fn rank(
        &self,
        docs: &[Document],
        _: &PassageIndex,
        q: &datasets::Question,
        hits: &[Hit],
        kmax: usize,
    ) -> Ranking {
        let r = self
            .ear
            .search(&q.question, &q.options, kmax, q.doc_ids.as_deref(), hits);
        Ranking {
            ranked: ranked(&r, docs),
            record: Some(Arc::new(EarRecord(r))),
        }
    }
}

/// EAR's record of one question: its [`retriever::ear::RECORD`] fields, its anchor matching
/// for failure attribution and its explain line ([`reporting::explain::ExplainLine`]).
#[derive(Debug)]
struct EarRecord(EarResult);

impl QuestionRecord for EarRecord {
    fn values(&self) -> retriever::records::RecordValues {
        retriever::records::RecordValues::of(&retriever::ear::RECORD, &self.0.stats.record_values())
    }

    fn matching(&self) -> Option<(usize, usize)> {
        let st = &self.0.stats;
        Some((st.question_anchors + st.option_anchors, st.matched_forms))
    }

    fn explain(
        &self,
        question: &datasets::Question,
        row: &records::QuestionRow,
        k: usize,
        docs: &[Document],
    ) -> Result<Option<serde_json::Value>> {
        let line = reporting::explain::ExplainLine::of(question, &self.0, row, k, docs);
        // Through a Value: keys sorted, as the files have always been written.
        Ok(Some(serde_json::to_value(&line)?))
    }
}

/// One rank per EAR passage: the window, then its summary sentences (`expand: summary`).
fn ranked(r: &EarResult, docs: &[Document]) -> Vec<Ranked> {
    r.passages
        .iter()
        .map(|p| {
            let d = &docs[p.doc];
            let mut chunks = vec![Chunk::new(d, p.span.start, p.span.end)];
            chunks.extend(p.summary.iter().map(|s| Chunk::new(d, s.start, s.end)));
            Ranked {
                chunks,
                score: p.score,
            }
        })
        .collect()
}
