//! Retrieval metrics against gold evidence: pure functions, every value in [0, 1], never NaN.
//!
//! Inputs are [`DocSpan`]s: a document id and a `[start, end)` span. Retrieved passages are
//! given best first (rank 1 first), duplicates allowed; gold evidence is the question's
//! `evidence` list (docs/reference.md §3). The unit of a span is whatever its coordinates count:
//! bytes for chunk and evidence spans as stored, words after [`WordMap::to_words`]. A
//! metric that needs evidence returns `None` for a question without (non-empty) evidence,
//! which is how pytrec_eval/BEIR skip queries absent from the qrels: such questions belong in
//! no average.
//!
//! # Rank metrics (pytrec_eval / BEIR semantics, binary relevance)
//! The relevant items are the distinct non-empty evidence spans `E` (identical spans count
//! once). Retrieved passage `p` *covers* evidence `e` when they are in the same document and
//! share at least one unit (`overlap > 0`); an empty passage covers nothing (docs/reference.md case 29).
//! Walking the top `k` in rank order, the passage at rank `r` has gain `rel_r = 1` when it
//! covers some evidence that no passage at a better rank covered, else 0. So the same
//! evidence retrieved twice counts once (a duplicate passage, or a second chunk of the same
//! evidence, gains nothing), exactly as pytrec_eval scores a run whose docids are evidence ids
//! after dropping repeated ids. Then, as in trec_eval's `recall_k`, `ndcg_cut_k` and BEIR's
//! `top_k_accuracy` and `MRR@k`:
//! - `hit@k` = 1 if some `rel_r = 1`, else 0;
//! - `recall@k` = |evidence covered by the top k| / |E| (never above 1);
//! - `MRR@k` = 1 / (first `r` with `rel_r = 1`), 0 if none;
//! - `nDCG@k` = `Σ_r rel_r / log2(r + 1)` divided by `Σ_{i=1}^{min(|E|, k)} 1 / log2(i + 1)`.
//!
//! With `k = 0` every metric is 0. Note: when one passage covers two evidence spans, recall
//! is 1 at rank 1 but nDCG is below 1 (its ideal assumes one relevant item per rank), as it
//! would be in pytrec_eval.
//!
//! # Span metrics (Chroma, Smith & Troynikov 2024, "Evaluating Chunking Strategies for
//! Retrieval", `chunking_evaluation/evaluation_framework/base_evaluation.py`)
//! Per document, let `E*` be the union of the evidence spans and `R*` the union of the
//! retrieved spans; `covered = Σ_docs |E* ∩ R*|` and `retrieved = Σ_passages |p|` (with
//! multiplicity: a passage retrieved twice counts twice; passages of any document count):
//! - `recall = covered / |E*|`;
//! - `precision = covered / retrieved` (0 when nothing was retrieved);
//! - `IoU = covered / (retrieved + |E*| − covered)`;
//! - `precision_Ω` ([`precision_omega`]) = precision of the best retrieval the chunking allows:
//!   with `Ω` the union of *all* index passages that overlap **or touch** an evidence span
//!   of their document (`p.start <= e.end && e.start <= p.end`: Chroma's
//!   `intersect_two_ranges` returns the empty range `(x, x)` for a chunk ending where the
//!   excerpt starts, and its `_full_precision_score` counts that chunk among those containing
//!   the excerpt), `|E* ∩ Ω| / |Ω ∪ E*|`.
//!
//! The docs/reference.md §5 vector: excerpt [10, 20), retrieved [0, 15) and [12, 30) gives recall 1,
//! precision 10/33 and IoU 10/33. Differences from Chroma: Chroma scores each question at
//! k = the number of chunks overlapping its excerpts and measures tokens; here `k` is the
//! cell's and the unit is bytes or words. `E*` is a union, so overlapping evidence spans are
//! not double counted (Chroma sums them; they are disjoint in its data).
//!
//! # Answer recall (Bhat et al. 2025, arXiv 2505.21700)
//! [`answer_recall_at_k`]: 1 when the lower-cased, trimmed gold answer string occurs inside
//! one of the top `k` lower-cased passage texts, else 0; `None` for an empty answer.
//!
//! # Words retrieved
//! [`words_retrieved`]: with multiplicity (the sum of the passages' word counts) and unique
//! (words covered by the union of the passages' spans, per document; docs/reference.md §3).

pub mod registry;

pub use registry::{Metric, MetricValues, ScoreInput, METRICS};

use chunker::{unique_words, Chunk, Document, Span};
use std::collections::{BTreeMap, HashMap};

/// A span of one document: a retrieved passage or a gold evidence span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocSpan<'a> {
    /// The document id.
    pub doc_id: &'a str,
    /// `[start, end)` in the document (bytes, or words after [`WordMap::to_words`]).
    pub span: Span,
}

impl<'a> DocSpan<'a> {
    /// A span `[start, end)` of document `doc_id`.
    pub fn new(doc_id: &'a str, start: usize, end: usize) -> Self {
        DocSpan {
            doc_id,
            span: Span { start, end },
        }
    }

    /// Number of units shared with `other` (0 for different documents).
    pub fn overlap(&self, other: &DocSpan<'_>) -> usize {
        if self.doc_id == other.doc_id {
            self.span.overlap(&other.span)
        } else {
            0
        }
    }
}

impl<'a> From<&'a Chunk> for DocSpan<'a> {
    fn from(c: &'a Chunk) -> Self {
        DocSpan {
            doc_id: &c.doc_id,
            span: c.span,
        }
    }
}

/// The four rank metrics of one question at one `k` (module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankMetrics {
    /// hit@k: 1 if any of the top k covers evidence.
    pub hit: f64,
    /// recall@k: fraction of distinct evidence spans covered by the top k.
    pub recall: f64,
    /// MRR@k: reciprocal rank of the first passage covering evidence.
    pub mrr: f64,
    /// nDCG@k with binary, once-per-evidence gains.
    pub ndcg: f64,
}

/// Distinct non-empty evidence spans, sorted (deterministic).
fn distinct_evidence<'a>(evidence: &[DocSpan<'a>]) -> Vec<DocSpan<'a>> {
    let mut e: Vec<DocSpan<'a>> = evidence
        .iter()
        .copied()
        .filter(|e| !e.span.is_empty())
        .collect();
    e.sort();
    e.dedup();
    e
}

/// hit@k, recall@k, MRR@k and nDCG@k of `retrieved` (best first) against `evidence`; `None`
/// when there is no non-empty evidence. See the module documentation for the exact rule.
pub fn rank_metrics(
    retrieved: &[DocSpan<'_>],
    evidence: &[DocSpan<'_>],
    k: usize,
) -> Option<RankMetrics> {
    let ev = distinct_evidence(evidence);
    if ev.is_empty() {
        return None;
    }
    let mut covered = vec![false; ev.len()];
    let mut n_covered = 0usize;
    let mut dcg = 0.0f64;
    let mut first: Option<usize> = None;
    for (r, p) in retrieved.iter().take(k).enumerate() {
        let mut gain = false;
        for (j, e) in ev.iter().enumerate() {
            if !covered[j] && p.overlap(e) > 0 {
                covered[j] = true;
                n_covered += 1;
                gain = true;
            }
        }
        if gain {
            let rank = r + 1;
            dcg += 1.0 / ((rank + 1) as f64).log2();
            first.get_or_insert(rank);
        }
    }
    let ideal: f64 = (1..=ev.len().min(k))
        .map(|i| 1.0 / ((i + 1) as f64).log2())
        .sum();
    Some(RankMetrics {
        hit: if first.is_some() { 1.0 } else { 0.0 },
        recall: n_covered as f64 / ev.len() as f64,
        mrr: first.map_or(0.0, |r| 1.0 / r as f64),
        ndcg: if ideal > 0.0 {
            (dcg / ideal).min(1.0)
        } else {
            0.0
        },
    })
}

/// hit@k (module documentation); `None` without evidence.
pub fn hit_at_k(retrieved: &[DocSpan<'_>], evidence: &[DocSpan<'_>], k: usize) -> Option<f64> {
    rank_metrics(retrieved, evidence, k).map(|m| m.hit)
}

/// recall@k (module documentation); `None` without evidence.
pub fn recall_at_k(retrieved: &[DocSpan<'_>], evidence: &[DocSpan<'_>], k: usize) -> Option<f64> {
    rank_metrics(retrieved, evidence, k).map(|m| m.recall)
}

/// MRR@k (module documentation); `None` without evidence.
pub fn mrr_at_k(retrieved: &[DocSpan<'_>], evidence: &[DocSpan<'_>], k: usize) -> Option<f64> {
    rank_metrics(retrieved, evidence, k).map(|m| m.mrr)
}

/// nDCG@k (module documentation); `None` without evidence.
pub fn ndcg_at_k(retrieved: &[DocSpan<'_>], evidence: &[DocSpan<'_>], k: usize) -> Option<f64> {
    rank_metrics(retrieved, evidence, k).map(|m| m.ndcg)
}

/// Per-document sorted, merged, non-empty spans.
fn unions<'a>(spans: impl IntoIterator<Item = DocSpan<'a>>) -> BTreeMap<&'a str, Vec<Span>> {
    let mut by_doc: BTreeMap<&'a str, Vec<Span>> = BTreeMap::new();
    for s in spans {
        if !s.span.is_empty() {
            by_doc.entry(s.doc_id).or_default().push(s.span);
        }
    }
    for v in by_doc.values_mut() {
        v.sort();
        let mut merged: Vec<Span> = Vec::with_capacity(v.len());
        for s in v.drain(..) {
            match merged.last_mut() {
                Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
                _ => merged.push(s),
            }
        }
        *v = merged;
    }
    by_doc
}

fn total(u: &BTreeMap<&str, Vec<Span>>) -> usize {
    u.values().flatten().map(Span::len).sum()
}

/// Units shared by two per-document unions.
fn intersection(a: &BTreeMap<&str, Vec<Span>>, b: &BTreeMap<&str, Vec<Span>>) -> usize {
    let mut n = 0;
    for (doc, xs) in a {
        let Some(ys) = b.get(doc) else { continue };
        let (mut i, mut j) = (0, 0);
        while i < xs.len() && j < ys.len() {
            n += xs[i].overlap(&ys[j]);
            if xs[i].end <= ys[j].end {
                i += 1;
            } else {
                j += 1;
            }
        }
    }
    n
}

/// Chroma's span recall, precision and IoU of one question (module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanMetrics {
    /// Covered evidence units / evidence units.
    pub recall: f64,
    /// Covered evidence units / retrieved units counted with multiplicity.
    pub precision: f64,
    /// Covered / (retrieved with multiplicity + evidence − covered).
    pub iou: f64,
}

/// Span recall, precision and IoU of `retrieved` (all of them: pass the top k) against
/// `evidence`, in the spans' unit; `None` when the evidence covers no unit.
pub fn span_metrics(retrieved: &[DocSpan<'_>], evidence: &[DocSpan<'_>]) -> Option<SpanMetrics> {
    let e = unions(evidence.iter().copied());
    let e_len = total(&e);
    if e_len == 0 {
        return None;
    }
    let r = unions(retrieved.iter().copied());
    let covered = intersection(&e, &r);
    let retrieved_len: usize = retrieved.iter().map(|p| p.span.len()).sum();
    let ratio = |num: usize, den: usize| {
        if den == 0 {
            0.0
        } else {
            (num as f64 / den as f64).min(1.0)
        }
    };
    Some(SpanMetrics {
        recall: ratio(covered, e_len),
        precision: ratio(covered, retrieved_len),
        iou: ratio(covered, retrieved_len + e_len - covered),
    })
}

/// Chroma's precision_Ω: the precision of the best retrieval the chunking allows, from all
/// passages of the index (`passages`, any order) against `evidence`: `|E* ∩ Ω| / |Ω ∪ E*|`
/// with `Ω` the union of the passages that *touch* the evidence ([`touches`]: they share a
/// unit or one ends where an evidence span starts, or starts where it ends — Chroma's
/// `_full_precision_score` in `base_evaluation.py`, whose `intersect_two_ranges` returns an
/// empty range rather than `None` for touching ranges); `None` without evidence. Units are
/// those of the spans given (words or characters; Chroma's are characters).
pub fn precision_omega(passages: &[DocSpan<'_>], evidence: &[DocSpan<'_>]) -> Option<f64> {
    let e = unions(evidence.iter().copied());
    let e_len = total(&e);
    if e_len == 0 {
        return None;
    }
    let hits: Vec<DocSpan<'_>> = passages
        .iter()
        .copied()
        .filter(|p| evidence.iter().any(|ev| touches(p, ev)))
        .collect();
    let omega = unions(hits.iter().copied());
    let num = intersection(&e, &omega);
    let both = unions(hits.iter().copied().chain(evidence.iter().copied()));
    let den = total(&both);
    Some(if den == 0 {
        0.0
    } else {
        (num as f64 / den as f64).min(1.0)
    })
}

/// True when span `p` and evidence span `e` are in the same document and share a unit or
/// meet end to start (`p.start <= e.end && e.start <= p.end`): Chroma's
/// `intersect_two_ranges(a, b)` is not `None` exactly then (it returns `(max(a0, b0),
/// min(a1, b1))` when `max <= min`), which is how its `_full_precision_score` decides that a
/// chunk contains an excerpt. Disjoint spans with a gap between them do not touch.
pub fn touches(p: &DocSpan<'_>, e: &DocSpan<'_>) -> bool {
    p.doc_id == e.doc_id && p.span.start <= e.span.end && e.span.start <= p.span.end
}

/// Bhat et al. answer recall@k: 1.0 when the trimmed, lower-cased `answer` occurs in one of
/// the first `k` lower-cased `passages`, else 0.0; `None` for an empty answer.
pub fn answer_recall_at_k<S: AsRef<str>>(passages: &[S], answer: &str, k: usize) -> Option<f64> {
    let needle = answer.trim().to_lowercase();
    if needle.is_empty() {
        return None;
    }
    let found = passages
        .iter()
        .take(k)
        .any(|p| p.as_ref().to_lowercase().contains(&needle));
    Some(if found { 1.0 } else { 0.0 })
}

/// Words between two word-index checkpoints of a [`WordMap`]: a lookup scans at most this
/// many words of the document text from the nearest checkpoint.
pub const WORD_CHECKPOINT: usize = 32;

/// Maps byte spans to word-index spans, per document, for the word-unit span metrics.
///
/// Words are [`chunker::word_spans`] (whitespace-separated tokens, docs/reference.md §3). A byte span
/// covers the words that share at least one byte with it (the rule of
/// [`chunker::unique_words`]), which always form a contiguous range `[first, last + 1)`; so
/// the word length of a chunk's span is its [`Chunk::words`].
///
/// Memory: the map borrows the documents' texts and keeps, per document, the byte offset of
/// every [`WORD_CHECKPOINT`]-th word (8 bytes per 32 words); a lookup scans at most that many
/// words from the checkpoint before it. (Keeping every word's span cost 16 bytes per word:
/// 1.6 GB for a million 100-word passages.)
#[derive(Debug, Clone, Default)]
pub struct WordMap<'a> {
    docs: HashMap<&'a str, DocWords<'a>>,
}

/// One document's text and the byte start of its words `0, C, 2C, …` (`C` =
/// [`WORD_CHECKPOINT`]).
#[derive(Debug, Clone)]
struct DocWords<'a> {
    text: &'a str,
    checkpoints: Vec<usize>,
}

impl<'a> DocWords<'a> {
    fn new(text: &'a str) -> Self {
        let checkpoints = chunker::words_from(text, 0)
            .step_by(WORD_CHECKPOINT)
            .map(|w| w.start)
            .collect();
        DocWords { text, checkpoints }
    }

    /// Number of words `w` with `pred(w)`, for a predicate that holds for a prefix of the
    /// words and is monotone in their byte offsets (`w.end <= a`, `w.start < b`); `key` is
    /// the byte offset the prefix ends before: checkpoints starting at or past it are
    /// skipped.
    fn count_prefix(&self, key: usize, pred: impl Fn(Span) -> bool) -> usize {
        let c = self.checkpoints.partition_point(|&s| s < key);
        let Some(block) = c.checked_sub(1) else {
            return 0;
        };
        let base = block * WORD_CHECKPOINT;
        base + chunker::words_from(self.text, self.checkpoints[block])
            .take_while(|w| pred(*w))
            .count()
    }
}

impl<'a> WordMap<'a> {
    /// Indexes every document's word checkpoints once (the texts are borrowed).
    pub fn new(documents: &'a [Document]) -> Self {
        WordMap {
            docs: documents
                .iter()
                .map(|d| (d.id.as_str(), DocWords::new(&d.text)))
                .collect(),
        }
    }

    /// The word-index span of a byte span; `None` when the document is unknown. An empty
    /// byte span, or one covering only separators, maps to an empty word span.
    pub fn to_words<'s>(&self, s: DocSpan<'s>) -> Option<DocSpan<'s>> {
        let words = self.docs.get(s.doc_id)?;
        let (a, b) = (s.span.start, s.span.end);
        if a >= b {
            return Some(DocSpan::new(s.doc_id, 0, 0));
        }
        // first = words ending at or before a; end = words starting before b. A word whose
        // checkpoint starts at or after `a` ends after `a`, so the scan starts earlier.
        let first = words.count_prefix(a, |w| w.end <= a);
        let end = words.count_prefix(b, |w| w.start < b);
        Some(DocSpan::new(s.doc_id, first, end.max(first)))
    }

    /// Maps every span; spans of unknown documents are dropped.
    pub fn all_to_words<'s>(&self, spans: &[DocSpan<'s>]) -> Vec<DocSpan<'s>> {
        spans.iter().filter_map(|s| self.to_words(*s)).collect()
    }

    /// [`span_metrics`] in words.
    pub fn span_metrics(
        &self,
        retrieved: &[DocSpan<'_>],
        evidence: &[DocSpan<'_>],
    ) -> Option<SpanMetrics> {
        span_metrics(&self.all_to_words(retrieved), &self.all_to_words(evidence))
    }

    /// [`precision_omega`] in words.
    pub fn precision_omega(
        &self,
        passages: &[DocSpan<'_>],
        evidence: &[DocSpan<'_>],
    ) -> Option<f64> {
        precision_omega(&self.all_to_words(passages), &self.all_to_words(evidence))
    }
}

/// Byte spans as character spans (Unicode scalar values), per document: the unit of Chroma's
/// published span metrics, and the one that means the same for text without spaces.
///
/// A byte span `[a, b)` on character boundaries maps to `[chars before a, chars before b)`;
/// a span inside a character (which a valid passage or evidence span never is) covers the
/// characters it touches.
///
/// Memory: per document, one entry per multi-byte character only (ASCII text costs
/// nothing), from which the character count before any byte offset follows. (Keeping every
/// character's offset cost 8 bytes per character: 4.8 GB for a million 600-byte passages.)
#[derive(Debug, Clone, Default)]
pub struct CharMap {
    docs: HashMap<String, Vec<WideChar>>,
}

/// A character of more than one byte: where it starts, its length, and the continuation
/// bytes (bytes that start no character) before it in the document.
#[derive(Debug, Clone, Copy)]
struct WideChar {
    start: usize,
    len: usize,
    continuation_before: usize,
}

/// Characters starting before byte `b` (any `b`, on a boundary or not): `b` minus the
/// continuation bytes before it.
fn chars_before(wide: &[WideChar], b: usize) -> usize {
    let j = wide.partition_point(|w| w.start < b);
    let Some(w) = j.checked_sub(1).map(|i| wide[i]) else {
        return b;
    };
    let inside = (w.len - 1).min(b - w.start - 1);
    b - (w.continuation_before + inside)
}

impl CharMap {
    /// Indexes every document's multi-byte characters once.
    pub fn new(documents: &[Document]) -> Self {
        CharMap {
            docs: documents
                .iter()
                .map(|d| {
                    let mut continuation_before = 0;
                    let wide = d
                        .text
                        .char_indices()
                        .filter(|(_, c)| c.len_utf8() > 1)
                        .map(|(start, c)| {
                            let w = WideChar {
                                start,
                                len: c.len_utf8(),
                                continuation_before,
                            };
                            continuation_before += w.len - 1;
                            w
                        })
                        .collect();
                    (d.id.clone(), wide)
                })
                .collect(),
        }
    }

    /// The character-index span of a byte span; `None` when the document is unknown.
    pub fn to_chars<'a>(&self, s: DocSpan<'a>) -> Option<DocSpan<'a>> {
        let wide = self.docs.get(s.doc_id)?;
        if s.span.start >= s.span.end {
            return Some(DocSpan::new(s.doc_id, 0, 0));
        }
        // Characters starting before `start` but ending after it are touched: count from the
        // character containing `start` (characters starting at or before it, minus one).
        let first = chars_before(wide, s.span.start + 1).saturating_sub(1);
        let end = chars_before(wide, s.span.end);
        Some(DocSpan::new(s.doc_id, first, end.max(first)))
    }

    /// Maps every span; spans of unknown documents are dropped.
    pub fn all_to_chars<'a>(&self, spans: &[DocSpan<'a>]) -> Vec<DocSpan<'a>> {
        spans.iter().filter_map(|s| self.to_chars(*s)).collect()
    }

    /// [`span_metrics`] in characters.
    pub fn span_metrics(
        &self,
        retrieved: &[DocSpan<'_>],
        evidence: &[DocSpan<'_>],
    ) -> Option<SpanMetrics> {
        span_metrics(&self.all_to_chars(retrieved), &self.all_to_chars(evidence))
    }

    /// [`precision_omega`] in characters.
    pub fn precision_omega(
        &self,
        passages: &[DocSpan<'_>],
        evidence: &[DocSpan<'_>],
    ) -> Option<f64> {
        precision_omega(&self.all_to_chars(passages), &self.all_to_chars(evidence))
    }
}

/// Bhat et al. answer recall@k over several acceptable answer strings: 1.0 when any of the
/// non-empty `answers` occurs (trimmed, lower-cased) in one of the first `k` lower-cased
/// `passages`, else 0.0; `None` when no answer is non-empty.
pub fn any_answer_recall_at_k<S: AsRef<str>, A: AsRef<str>>(
    passages: &[S],
    answers: &[A],
    k: usize,
) -> Option<f64> {
    answers
        .iter()
        .filter_map(|a| answer_recall_at_k(passages, a.as_ref(), k))
        .reduce(f64::max)
}

/// Words retrieved by one question's passages, counted two ways (docs/reference.md §3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WordsRetrieved {
    /// Sum of the passages' word counts ([`Chunk::words`]): a word in two retrieved
    /// (overlapping or duplicate) passages counts twice.
    pub with_multiplicity: usize,
    /// Words of the documents covered by the union of the passages' spans
    /// ([`chunker::unique_words`] per document): each source word once.
    pub unique: usize,
}

/// Counts the words of `chunks` with multiplicity and unique; `text_of` gives a document's
/// text by id (a chunk of an unknown document adds to `with_multiplicity` only). Always
/// `unique <= with_multiplicity`; both 0 for no chunks or empty chunks (docs/reference.md (cases) 29).
pub fn words_retrieved<'d, F>(chunks: &[&Chunk], text_of: F) -> WordsRetrieved
where
    F: Fn(&str) -> Option<&'d str>,
{
    let with_multiplicity = chunks.iter().map(|c| c.words).sum();
    let mut by_doc: BTreeMap<&str, Vec<Span>> = BTreeMap::new();
    for c in chunks {
        by_doc.entry(c.doc_id.as_str()).or_default().push(c.span);
    }
    let unique = by_doc
        .iter()
        .map(|(d, spans)| text_of(d).map_or(0, |t| unique_words(t, spans)))
        .sum();
    WordsRetrieved {
        with_multiplicity,
        unique,
    }
}

/// [`words_retrieved`] with the documents given as a slice (looked up by id).
pub fn words_retrieved_in(chunks: &[&Chunk], documents: &[Document]) -> WordsRetrieved {
    let by_id: HashMap<&str, &str> = documents
        .iter()
        .map(|d| (d.id.as_str(), d.text.as_str()))
        .collect();
    words_retrieved(chunks, |id| by_id.get(id).copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chunker::word_spans;

    fn ds(start: usize, end: usize) -> DocSpan<'static> {
        DocSpan::new("d", start, end)
    }

    /// Multi-byte text: byte spans become character spans, and span metrics in characters
    /// differ from the same metrics in bytes exactly as the character counts say.
    #[test]
    fn char_map_counts_characters() {
        let text = "héllo wörld — ünïcode";
        let doc = Document {
            id: "d".into(),
            title: String::new(),
            text: text.into(),
            source: String::new(),
            license: String::new(),
        };
        let cm = CharMap::new(std::slice::from_ref(&doc));
        let w = text.find("wörld").unwrap();
        let span = ds(w, w + "wörld".len());
        assert_eq!(cm.to_chars(span), Some(ds(6, 11)));
        assert_eq!(
            cm.to_chars(ds(0, text.len())),
            Some(ds(0, text.chars().count()))
        );
        assert_eq!(cm.to_chars(DocSpan::new("other", 0, 1)), None);
        // Retrieved "héllo wörld" (11 chars, 13 bytes) against evidence "wörld" (5 chars,
        // 6 bytes): precision 5/11 in characters, 6/13 in bytes.
        let retrieved = [ds(0, w + "wörld".len())];
        let m = cm.span_metrics(&retrieved, &[span]).unwrap();
        assert!((m.precision - 5.0 / 11.0).abs() < 1e-15);
        let b = span_metrics(&retrieved, &[span]).unwrap();
        assert!((b.precision - 6.0 / 13.0).abs() < 1e-15);
        assert!((cm.precision_omega(&retrieved, &[span]).unwrap() - 5.0 / 11.0).abs() < 1e-15);
    }

    /// The per-word and per-character tables the compact maps replaced: every word's span
    /// and every character's first byte, searched by binary search.
    fn reference_words(text: &str, a: usize, b: usize) -> (usize, usize) {
        let words = word_spans(text);
        let first = words.partition_point(|w| w.end <= a);
        let end = words.partition_point(|w| w.start < b);
        (first, end.max(first))
    }

    fn reference_chars(text: &str, a: usize, b: usize) -> (usize, usize) {
        let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let first = starts.partition_point(|&s| s <= a).saturating_sub(1);
        let end = starts.partition_point(|&s| s < b);
        (first, end.max(first))
    }

    proptest::proptest! {
        /// Every byte span (on a character boundary or not) of texts with runs of
        /// separators, multi-byte letters and separators (NBSP, ideographic space), and more
        /// than a few checkpoints of words: the compact maps equal the full tables.
        #[test]
        fn compact_maps_equal_the_full_tables(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[a-z]{1,6}").unwrap(),
                    proptest::string::string_regex("[ \\n\\t]{1,3}").unwrap(),
                    proptest::string::string_regex("[éü—漢😀]{1,3}").unwrap(),
                    proptest::string::string_regex("[\u{a0}\u{3000}]").unwrap(),
                ],
                0..200,
            ),
            cuts in proptest::collection::vec((0usize..2000, 0usize..2000), 1..40),
        ) {
            let text: String = pieces.concat();
            let doc = Document::new("d", text.clone());
            let wm = WordMap::new(std::slice::from_ref(&doc));
            let cm = CharMap::new(std::slice::from_ref(&doc));
            for (x, y) in cuts {
                let (a, b) = (x % (text.len() + 1), y % (text.len() + 1));
                let got = wm.to_words(ds(a, b)).unwrap().span;
                let want = if a >= b { (0, 0) } else { reference_words(&text, a, b) };
                proptest::prop_assert_eq!((got.start, got.end), want, "words of [{}, {})", a, b);
                let got = cm.to_chars(ds(a, b)).unwrap().span;
                let want = if a >= b { (0, 0) } else { reference_chars(&text, a, b) };
                proptest::prop_assert_eq!((got.start, got.end), want, "chars of [{}, {})", a, b);
            }
        }
    }

    #[test]
    fn any_answer_recall_takes_the_best_string() {
        let p = ["The Valve was replaced in 1990"];
        assert_eq!(any_answer_recall_at_k(&p, &["x", "1990"], 1), Some(1.0));
        assert_eq!(any_answer_recall_at_k(&p, &["x", "2000"], 1), Some(0.0));
        assert_eq!(any_answer_recall_at_k(&p, &[" "], 1), None);
        assert_eq!(any_answer_recall_at_k::<_, &str>(&p, &[], 1), None);
    }

    #[test]
    fn chroma_vector() {
        let m = span_metrics(&[ds(0, 15), ds(12, 30)], &[ds(10, 20)]).unwrap();
        assert_eq!(m.recall, 1.0);
        assert!((m.precision - 10.0 / 33.0).abs() < 1e-15);
        assert!((m.iou - 10.0 / 33.0).abs() < 1e-15);
    }

    #[test]
    fn precision_omega_uses_union_of_overlapping_chunks() {
        // Chunks [0,15), [15,30), [30,45); evidence [10,20) -> Ω = [0,30), 10/30.
        let chunks = [ds(0, 15), ds(15, 30), ds(30, 45)];
        let p = precision_omega(&chunks, &[ds(10, 20)]).unwrap();
        assert!((p - 10.0 / 30.0).abs() < 1e-15);
        assert_eq!(precision_omega(&chunks, &[]), None);
    }

    #[test]
    fn precision_omega_counts_touching_chunks_as_chroma_does() {
        // Hand-checked against Chroma's rule (intersect_two_ranges not None):
        // evidence [10,20); chunk [0,10) touches it (ends where it starts), [20,25) touches
        // it (starts where it ends), [12,18) overlaps, [26,30) is disjoint.
        let ev = [ds(10, 20)];
        // Touching only: Ω = [0,10) ∪ [20,25); E* ∩ Ω = ∅ -> 0 / |[0,25)| = 0.
        let p = precision_omega(&[ds(0, 10), ds(20, 25), ds(26, 30)], &ev).unwrap();
        assert_eq!(p, 0.0);
        // Overlapping plus touching: Ω = [0,10) ∪ [12,18) ∪ [20,25); numerator 6;
        // denominator |Ω ∪ E*| = |[0,25)| = 25. The strict-overlap rule would give 6/10.
        let p = precision_omega(&[ds(0, 10), ds(12, 18), ds(20, 25), ds(26, 30)], &ev).unwrap();
        assert!((p - 6.0 / 25.0).abs() < 1e-15);
        // Disjoint with a gap of one unit: not counted.
        let p = precision_omega(&[ds(0, 9), ds(12, 18), ds(21, 30)], &ev).unwrap();
        assert!((p - 6.0 / 10.0).abs() < 1e-15);
        // Another document never touches.
        assert!(!touches(&DocSpan::new("b", 0, 10), &ds(10, 20)));
        assert!(touches(&ds(0, 10), &ds(10, 20)) && !touches(&ds(0, 9), &ds(10, 20)));
    }

    #[test]
    fn rank_metrics_hand_computed() {
        // Evidence e1 [0,10), e2 [50,60). Ranks: miss, e1, e1 again, e2.
        let ev = [ds(0, 10), ds(50, 60)];
        let run = [ds(20, 30), ds(5, 15), ds(0, 5), ds(55, 70)];
        let m = rank_metrics(&run, &ev, 4).unwrap();
        assert_eq!(m.hit, 1.0);
        assert_eq!(m.recall, 1.0);
        assert_eq!(m.mrr, 0.5);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((m.ndcg - dcg / idcg).abs() < 1e-15);
        let m2 = rank_metrics(&run, &ev, 3).unwrap();
        assert_eq!(m2.recall, 0.5);
        let m0 = rank_metrics(&run, &ev, 0).unwrap();
        assert_eq!((m0.hit, m0.recall, m0.mrr, m0.ndcg), (0.0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn word_map_round_trip() {
        let d = Document {
            id: "d".into(),
            title: String::new(),
            text: "one two  three four".into(),
            source: String::new(),
            license: String::new(),
        };
        let wm = WordMap::new(std::slice::from_ref(&d));
        // "two  thr" = bytes [4, 12) covers words 1..3.
        assert_eq!(
            wm.to_words(ds(4, 12)).unwrap().span,
            Span { start: 1, end: 3 }
        );
        // only the double space -> empty
        assert!(wm.to_words(ds(7, 9)).unwrap().span.is_empty());
        assert_eq!(wm.to_words(DocSpan::new("x", 0, 3)), None);
    }
}
