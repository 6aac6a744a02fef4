//! Helpers shared by strategy kinds: units and tokenizers, overlaps, size checks.

use super::DEFAULT_TOKENIZER;
use anyhow::{bail, Context, Result};
use chunker::SizeLimit;
use chunker::{Chunk, Document, HfTokenizer, Unit};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The tokenizer of `unit: tokens` (`tokenizer`, default [`DEFAULT_TOKENIZER`]; a directory
/// means its `tokenizer.json`), loaded; `None` for other units.
///
/// # Errors
/// A tokenizer that cannot be loaded, naming the field and the fix.
pub fn load_tokenizer(unit: Unit, tokenizer: &Option<PathBuf>) -> Result<Option<Arc<HfTokenizer>>> {
    if unit != Unit::Tokens {
        return Ok(None);
    }
    let path = tokenizer_path(tokenizer);
    Ok(Some(Arc::new(HfTokenizer::from_file(&path).with_context(
        || format!("field `tokenizer`: cannot load {}", path.display()),
    )?)))
}

/// The tokenizer path in force (`tokenizer` or [`DEFAULT_TOKENIZER`]), where it is read from
/// ([`crate::models::resolve`]).
pub fn tokenizer_path(tokenizer: &Option<PathBuf>) -> PathBuf {
    crate::models::resolve(
        &tokenizer
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_TOKENIZER)),
    )
}

/// The tokenizer *file* of `unit: tokens` (a directory's `tokenizer.json`), for the cell's
/// inputs; `None` for other units.
pub fn tokenizer_file(unit: Unit, tokenizer: &Option<PathBuf>) -> Option<PathBuf> {
    (unit == Unit::Tokens).then(|| {
        let p = tokenizer_path(tokenizer);
        if Path::new(&p).is_dir() {
            p.join("tokenizer.json")
        } else {
            p
        }
    })
}

/// An overlap in units: whole numbers as given, fractions in (0, 1) of `size`, rounded down
/// (0.2 of 100 words = 20).
///
/// # Errors
/// A negative, non-finite or non-integer value of 1 or more, naming the field.
pub fn overlap_units(overlap: f64, size: usize) -> Result<usize> {
    let o = overlap;
    if o.is_finite() && o >= 0.0 && o.fract() == 0.0 {
        Ok(o as usize)
    } else if o > 0.0 && o < 1.0 {
        Ok((size as f64 * o).floor() as usize)
    } else {
        bail!("field `overlap`: {o} is neither a whole number of units nor a fraction in (0, 1)")
    }
}

/// Checks a `size` of at least 1 and an `overlap` ([`overlap_units`]) smaller than it.
///
/// # Errors
/// Either rule broken, naming the fields.
pub fn check_size_overlap(size: usize, overlap: f64) -> Result<()> {
    let overlap = overlap_units(overlap, size)?;
    if size == 0 {
        bail!("field `size` must be at least 1");
    }
    if overlap >= size {
        bail!("field `overlap` ({overlap}) must be smaller than field `size` ({size})");
    }
    Ok(())
}

/// The `overlap` field of kinds that have none (max-min, kamradt): only 0 is accepted, and it
/// is always serialised as `0.0`. It is kept because those kinds' entries carried it before the
/// registry, and their cell ids hash the entry's JSON: dropping it would orphan every stored
/// cell and committed baseline of those kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NoOverlap;

impl Serialize for NoOverlap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(0.0)
    }
}

impl<'de> Deserialize<'de> for NoOverlap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v == 0.0 {
            Ok(NoOverlap)
        } else {
            Err(serde::de::Error::custom(
                "this kind has no overlap (its chunks never overlap); remove `overlap`",
            ))
        }
    }
}

/// Chunks longer than `limit` in its unit (for `StrategyStats::over_size`).
pub fn count_over_size(docs: &[Document], chunks: &[Chunk], limit: &SizeLimit) -> usize {
    use rayon::prelude::*;
    let by_id: std::collections::HashMap<&str, &Document> =
        docs.iter().map(|d| (d.id.as_str(), d)).collect();
    chunks
        .par_iter()
        .filter(|c| {
            by_id
                .get(c.doc_id.as_str())
                .is_some_and(|d| limit.measure(c.text(d)) > limit.size())
        })
        .count()
}

/// Checks the `over` entry of an indexing wrapper (`headers`, `late`, `contextual`): a kind
/// that indexes chunks, itself valid.
///
/// # Errors
/// A kind that retrieves nothing ([`super::Params::retrieves`]), another indexing wrapper
/// ([`super::Params::indexes_other_text`]: not stackable), or the entry's own check error,
/// naming the field.
pub fn check_over(over: &super::StrategyConfig) -> Result<()> {
    let k = over.kind();
    if !over.retrieves() {
        bail!("field `over`: kind `{k}` retrieves nothing, so there is nothing to index");
    }
    if over.indexes_other_text() {
        bail!(
            "field `over`: kind `{k}` also sets what chunks are indexed under; two such kinds \
             do not stack"
        );
    }
    over.check().context("field `over`")
}

/// The [`super::Chunker`] methods an indexing wrapper (`headers`, `late`, `contextual`) hands to
/// the strategy it wraps (`self.inner`): chunking, the size limit, the query-time passages, the
/// counters and the preflight (`delegate_chunking!(own preflight)` for a wrapper that adds its own checks
/// to the inner strategy's). Only `indexed` is the wrapper's own.
macro_rules! delegate_chunking {
    () => {
        $crate::strategies::common::delegate_chunking!(own preflight);

        fn preflight(&self, ctx: &super::Preflight) -> Vec<String> {
            self.inner.preflight(ctx)
        }
    };
    (own preflight) => {
        fn chunk_corpus(
            &self,
            docs: &[chunker::Document],
            embedder: Option<&dyn embed::Embedder>,
        ) -> anyhow::Result<(Vec<chunker::Chunk>, super::StrategyStats)> {
            self.inner.chunk_corpus(docs, embedder)
        }

        fn size_limit(&self) -> Option<chunker::SizeLimit> {
            self.inner.size_limit()
        }

        fn passages<'a>(
            &self,
            docs: &'a [chunker::Document],
            index: &'a retriever::PassageIndex,
        ) -> anyhow::Result<Box<dyn super::Passages + 'a>> {
            self.inner.passages(docs, index)
        }

        fn passages_at_query_time(&self) -> bool {
            self.inner.passages_at_query_time()
        }

        fn counters(&self) -> &'static [records::Counter] {
            self.inner.counters()
        }
    };
}
pub(crate) use delegate_chunking;
