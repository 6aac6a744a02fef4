//! What the runner checks and logs about a strategy's chunks once it has them: counters its
//! kind did not declare, its counters and size limits in the log, passages that repeat their
//! documents' text many times over, and words of the corpus left in no chunk.

use super::progress::Progress;
use anyhow::Result;
use chunker::Span;
use rayon::prelude::*;
use std::collections::HashMap;

/// Refuses a count under a name the strategy's kind did not declare ([`Chunker::counters`]
/// (crate::strategies::Chunker::counters)): a counter without a declaration would reach the
/// reports with no line saying what it counts.
///
/// # Errors
/// The undeclared name and the declared ones (a programming error in the kind).
pub(super) fn check_counters(
    strategy: &dyn crate::strategies::Chunker,
    s: &crate::strategies::StrategyStats,
) -> Result<()> {
    let declared = strategy.counters();
    for name in s.counters.keys() {
        if !declared.iter().any(|c| c.name == name) {
            anyhow::bail!(
                "the kind counted `{name}`, which it does not declare (declared: {}); \
                 declare it in its `Chunker::counters`",
                declared
                    .iter()
                    .map(|c| c.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(())
}

/// Logs what a strategy's counters say about its size limits: units split at `size`, chunks
/// over `size` (a warning), embedded units the embedder truncated (a warning).
pub(super) fn log_strategy_stats(
    progress: &Progress,
    ds: &str,
    name: &str,
    strategy: &dyn crate::strategies::Chunker,
    s: &crate::strategies::StrategyStats,
    chunks: usize,
) {
    let limit = strategy.size_limit();
    let size = limit
        .as_ref()
        .map_or(String::new(), |l| format!("{} {}", l.size(), l.unit()));
    if s.units_split_at_size > 0 {
        progress.log(format!(
            "[{ds}] {name}: {} units split at size ({size})",
            s.units_split_at_size
        ));
    }
    if s.over_size > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: {} of {chunks} chunks are longer than size {size} \
             (indivisible pieces; chunk_stats.csv: over_size)",
            s.over_size
        ));
    }
    if s.blank_chunks_dropped > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: {} chunks held only whitespace or zero-width characters \
             and were not indexed",
            s.blank_chunks_dropped
        ));
    }
    if s.uncovered_words > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: {} words of the corpus are in no chunk, so they can never \
             be retrieved (summary.md: uncovered words)",
            s.uncovered_words
        ));
    }
    if s.degenerate_vectors > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: the embedder returned {} degenerate (zero) vectors for \
             units of this strategy; they were compared as similarity 0 (chunk_stats.csv: \
             degenerate_vectors)",
            s.degenerate_vectors
        ));
    }
    for c in strategy.counters() {
        let n = s.counters.get(c.name).copied().unwrap_or(0);
        if n > 0 {
            let warn = if c.warn { "warning: " } else { "" };
            progress.log(format!(
                "{warn}[{ds}] {name}: {} = {n}: {} (chunk_stats.csv: {})",
                c.name, c.doc, c.name
            ));
        }
    }
    if s.embedded_units_truncated > 0 {
        progress.log(format!(
            "warning: [{ds}] {name}: {} of {} embedded units are longer than the embedder's \
             window and were truncated when embedded (chunk_stats.csv: embedded_units_truncated)",
            s.embedded_units_truncated, s.embedded_units
        ));
    }
}

/// Passages may repeat their documents' text this many times on average (Σ passage bytes
/// over the chunked documents' bytes) before a run warns: overlapping windows at 50 %
/// repeat it twice, a sliding window of stride 1/8 eight times.
const REPEATED_TEXT_WARNING: u64 = 8;

/// The warning for passages that repeat their documents' text more than
/// [`REPEATED_TEXT_WARNING`] times (and hold over 1 MiB): retrieval analyses and embeds every
/// passage's text, so its time grows with Σ passage bytes, while memory stays proportional
/// to the documents and the spans ([`PassageIndex`]). `None` below the bound.
pub(super) fn repeated_text_warning(passage_bytes: u64, document_bytes: u64) -> Option<String> {
    if passage_bytes <= REPEATED_TEXT_WARNING * document_bytes || passage_bytes <= 1 << 20 {
        return None;
    }
    let mb = |b: u64| b as f64 / 1e6;
    Some(format!(
        "the passages hold {:.1} MB of text, {:.0}× the {:.1} MB of their documents \
         (overlapping spans); BM25 analyses and dense retrieval embeds each passage's text, \
         so retrieval time grows with that figure (memory does not: passages are kept as \
         spans); fewer or less overlapping chunks bring it down",
        mb(passage_bytes),
        passage_bytes as f64 / document_bytes.max(1) as f64,
        mb(document_bytes)
    ))
}

/// Words of `docs` ([`chunker::word_spans`]) that share no byte with any of the `chunks` of
/// their document: text a strategy left out of every chunk, which no retriever can return
/// (docs/reference.md (cases) invariant 3, coverage, checked for every strategy that chunks
/// the corpus; a word cut by a chunk boundary, or whose separator a `keep_separator: discard`
/// chunker dropped, still counts as covered).
pub(super) fn uncovered_words(docs: &[chunker::Document], chunks: &[chunker::Chunk]) -> usize {
    let mut by_doc: HashMap<&str, Vec<Span>> = HashMap::new();
    for c in chunks {
        by_doc.entry(c.doc_id.as_str()).or_default().push(c.span);
    }
    docs.par_iter()
        .map(|d| {
            let mut spans = by_doc.get(d.id.as_str()).cloned().unwrap_or_default();
            spans.sort_by_key(|s| (s.start, s.end));
            // Merged, disjoint, in order.
            let mut union: Vec<Span> = Vec::with_capacity(spans.len());
            for s in spans {
                match union.last_mut() {
                    Some(u) if s.start <= u.end => u.end = u.end.max(s.end),
                    _ => union.push(s),
                }
            }
            let mut j = 0;
            chunker::word_spans(&d.text)
                .into_iter()
                .filter(|w| {
                    while j < union.len() && union[j].end <= w.start {
                        j += 1;
                    }
                    !(j < union.len() && union[j].start < w.end)
                })
                .count()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::{Chunker, StrategyStats};

    struct Declares;

    impl Chunker for Declares {
        fn chunk_corpus(
            &self,
            _: &[chunker::Document],
            _: Option<&dyn embed::Embedder>,
        ) -> Result<(Vec<chunker::Chunk>, StrategyStats)> {
            Ok((Vec::new(), StrategyStats::default()))
        }

        fn counters(&self) -> &'static [records::Counter] {
            &[records::Counter {
                name: "declared",
                doc: "a declared count",
                warn: false,
            }]
        }
    }

    /// A count under a name the kind declares passes; any other name is refused, naming it
    /// and the declared ones.
    #[test]
    fn only_declared_counters_are_accepted() {
        let mut s = StrategyStats::default();
        s.counters.insert("declared".into(), 3);
        check_counters(&Declares, &s).unwrap();
        s.counters.insert("stray".into(), 1);
        let e = check_counters(&Declares, &s).unwrap_err().to_string();
        assert!(
            e.contains("`stray`") && e.contains("declared: declared"),
            "{e}"
        );
    }
}
