//! EAR: entity-aware anchor windows (arXiv 2609.12268; docs/reference.md §5).
//!
//! Index time: documents are cut into parents (260 words, 60 overlap in EAR; the caller
//! passes them as a [`PassageIndex`]), every document's surface anchors
//! ([`chunker::anchor`]) go into an inverted index from normalised anchor to occurrences, and
//! every document's normalised Unicode words go into a positional index (for phrase lookups
//! of query anchors that are not corpus anchors themselves, e.g. short options).
//!
//! Query time ([`EarIndex::search`]):
//! 1. anchors of the question and of each option (short options included);
//! 2. their corpus occurrences: *exact* matches (a corpus anchor with the same normalised
//!    form) and *phrase* matches (the anchor's normalised terms as consecutive corpus words);
//! 3. one child window per occurrence: up to `radius` words (whitespace words, the unit of
//!    "words retrieved") on each side of the anchor, clipped to the parent that holds the
//!    anchor furthest from its edges, optionally widened to sentence boundaries inside it;
//! 4. score = `w_anchor·anchor + w_lexical·lexical + w_date·date`, each part in [0, 1]:
//!    *anchor* is the idf-weighted mass of the matched anchor forms in the window — question
//!    forms plus the forms of the single best option (so naming several distractors gains
//!    nothing) — over the same mass for all matched forms; *lexical* the idf-weighted share of the query's content words (question and
//!    options, stop words removed) in the window; *date* the share of the query's date
//!    anchors whose year interval overlaps a date anchor in the window (0 without dates);
//! 5. windows sorted by score (ties: document order, then start), then deduplicated
//!    greedily: a window overlapping a kept one of the same document by at least
//!    `dedup_threshold` of the shorter window is dropped (default) or, with the same parent,
//!    merged into it (union span);
//! 6. top-k; each may be expanded to its parent passage or followed by an extractive summary
//!    of the parent (its whole sentences with the highest idf-weighted overlap with the
//!    question, in document order, within `summary_words`, never repeating text already
//!    returned for the question).
//!
//! When no query anchor occurs in the (scoped) corpus, the caller's ranking of parents is
//! used instead, and the result says so ([`EarStats::fallback`]).
//!
//! Every passage records which query anchor matched which corpus occurrence (kinds,
//! normalised forms, byte offsets) and its score parts ([`EarPassage`]).

use crate::{Hit, PassageIndex, TextAnalyzer};
use chunker::anchor::{tokenize, Anchor, AnchorConfig, AnchorIndex, AnchorKind};
use chunker::{words_from, CompactSpan, Document, Span};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Weights of the score parts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EarWeights {
    /// Weight of the anchor-match part (default 1.0).
    pub anchor: f64,
    /// Weight of the lexical-overlap part (default 1.0).
    pub lexical: f64,
    /// Weight of the date-match part (default 0.5).
    pub date: f64,
}

impl Default for EarWeights {
    fn default() -> Self {
        EarWeights {
            anchor: 1.0,
            lexical: 1.0,
            date: 0.5,
        }
    }
}

/// What happens to a window that overlaps a better one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dedup {
    /// Widen the kept window to the union of both spans when both lie in the same parent
    /// (otherwise drop the worse one, so windows never leave their parent).
    Merge,
    /// Drop the worse window (default: windows keep their radius, as in EAR's word budget).
    #[default]
    Drop,
}

/// What each retrieved window brings along.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expand {
    /// The window alone (default).
    #[default]
    None,
    /// The window's parent passage (which contains it); windows sharing a parent return it
    /// once.
    Parent,
    /// The window, then an extractive summary of its parent: the parent's sentences most
    /// similar to the question, within [`EarConfig::summary_words`].
    Summary,
}

/// EAR query-time settings (docs/reference.md §5 defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EarConfig {
    /// Anchor extraction and normalisation.
    pub anchors: AnchorConfig,
    /// Words on each side of an anchor (default 80).
    pub radius: usize,
    /// Widen windows to sentence boundaries inside the parent (default false).
    pub snap_sentences: bool,
    /// Score weights.
    pub weights: EarWeights,
    /// Overlap (share of the shorter window, in (0, 1]) at which windows are deduplicated
    /// (default 0.5).
    pub dedup_threshold: f64,
    /// Merge or drop overlapping windows.
    pub dedup: Dedup,
    /// Parent expansion.
    pub expand: Expand,
    /// Word budget of an extractive summary (default 60).
    pub summary_words: usize,
}

impl Default for EarConfig {
    fn default() -> Self {
        EarConfig {
            anchors: AnchorConfig::default(),
            radius: 80,
            snap_sentences: false,
            weights: EarWeights::default(),
            dedup_threshold: 0.5,
            dedup: Dedup::Drop,
            expand: Expand::None,
            summary_words: 60,
        }
    }
}

impl EarConfig {
    /// Checks the settings.
    ///
    /// # Errors
    /// A message naming the field and the accepted range.
    pub fn check(&self) -> Result<(), String> {
        if !(self.dedup_threshold > 0.0 && self.dedup_threshold <= 1.0) {
            return Err(format!(
                "dedup_threshold {} must be in (0, 1] (share of the shorter window)",
                self.dedup_threshold
            ));
        }
        let w = self.weights;
        if [w.anchor, w.lexical, w.date]
            .iter()
            .any(|x| !x.is_finite() || *x < 0.0)
            || w.anchor + w.lexical + w.date == 0.0
        {
            return Err("weights must be finite, non-negative and not all zero".into());
        }
        if self.expand == Expand::Summary && self.summary_words == 0 {
            return Err("summary_words must be at least 1 with expand: summary".into());
        }
        Ok(())
    }
}

/// Where a query anchor comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnchorSource {
    /// The question text.
    Question,
    /// Option `i` (0-based).
    Option(usize),
}

/// A query anchor with its source; its span is a byte span of the question or option text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryAnchor {
    /// Question or option.
    pub source: AnchorSource,
    /// The anchor.
    pub anchor: Anchor,
}

/// One query anchor matched to one corpus occurrence inside a passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnchorMatch {
    /// Question or option the query anchor came from.
    pub source: AnchorSource,
    /// Query anchor kind.
    pub query_kind: AnchorKind,
    /// Normalised form (shared by both sides).
    pub norm: String,
    /// Byte span of the query anchor in its question or option text.
    pub query_span: Span,
    /// Kind of the corpus anchor for an exact match; `None` for a phrase match.
    pub corpus_kind: Option<AnchorKind>,
    /// Byte span of the occurrence in the document.
    pub corpus_span: Span,
}

/// Score parts of a passage, each in [0, 1] (module docs, step 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoreParts {
    /// Anchor-match share.
    pub anchor: f64,
    /// Lexical-overlap share.
    pub lexical: f64,
    /// Date-match share.
    pub date: f64,
}

/// One retrieved EAR passage: a byte span of document `doc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarPassage {
    /// Index of the document in the slice given to [`EarIndex::new`].
    pub doc: usize,
    /// The passage: the window, or the parent with [`Expand::Parent`].
    pub span: Span,
    /// The window (equal to `span` unless expanded; the parent for a fallback).
    pub window: Span,
    /// Index of the parent in the parent [`PassageIndex`].
    pub parent: usize,
    /// Final score (weighted sum of `parts`; the caller's score for a fallback).
    pub score: f64,
    /// Score parts.
    pub parts: ScoreParts,
    /// Query anchors matched inside the window, with their corpus occurrences.
    pub matches: Vec<AnchorMatch>,
    /// Extractive-summary sentences of the parent outside the window ([`Expand::Summary`]),
    /// byte spans of the document in order.
    pub summary: Vec<Span>,
    /// True when the passage comes from the fallback ranking of parents.
    pub fallback: bool,
}

/// Per-question bookkeeping (coverage statistics and failure attribution).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EarStats {
    /// Anchors found in the question.
    pub question_anchors: usize,
    /// Anchors found in the options (all options).
    pub option_anchors: usize,
    /// Distinct query anchor forms with at least one corpus occurrence in scope.
    pub matched_forms: usize,
    /// True when some query anchor equals a corpus anchor (an exact anchor match).
    pub exact_match: bool,
    /// Corpus occurrences found (exact and phrase).
    pub occurrences: usize,
    /// Candidate windows before deduplication.
    pub windows_before_dedup: usize,
    /// Windows left after deduplication (all, not only the top-k).
    pub windows_after_dedup: usize,
    /// True when nothing matched and the parents' fallback ranking was used.
    pub fallback: bool,
}

/// EAR's per-question record ([`crate::records`]): the columns `anchors`, `anchor_match`,
/// `windows_before`, `windows_after`, `fallback` of the per-question tables (values from
/// [`EarStats::record_values`]) and the cell's anchor coverage (`ear` in the cell record,
/// "EAR anchor coverage" in summary.md; EAR reports exact anchoring for 151/153 questions).
pub const RECORD: crate::record_kind::RecordKind = {
    use crate::record_kind::{Aggregate::*, FieldKind::*, Figure, Print, RecordField};
    crate::record_kind::RecordKind {
        strategy: "ear",
        key: "ear",
        listed_as: "ear_coverage",
        doc: "EAR: exact anchor matches, anchors/question, windows before/after dedup, fallbacks",
        title: "EAR anchor coverage",
        intro: "Exact anchor match: some question or option anchor equals a corpus anchor \
                (questions matched only as phrases are not counted). Windows: candidate windows \
                per question before and after deduplication, averaged over all questions \
                (fallbacks count 0). Fallbacks: no anchor matched, the retriever's ranking of \
                parents was used.",
        fields: &[
            RecordField {
                name: "anchors",
                doc: "EAR: anchors in the question and its options",
                kind: Count,
            },
            RecordField {
                name: "anchor_match",
                doc: "EAR: 1 when some query anchor equals a corpus anchor (exact anchor match)",
                kind: Flag,
            },
            RecordField {
                name: "windows_before",
                doc: "EAR: candidate windows before deduplication",
                kind: Count,
            },
            RecordField {
                name: "windows_after",
                doc: "EAR: windows after deduplication",
                kind: Count,
            },
            RecordField {
                name: "fallback",
                doc: "EAR: 1 when no anchor matched and the parents' ranking was used",
                kind: Flag,
            },
        ],
        figures: &[
            Figure {
                key: "exact_match",
                label: "exact anchor match",
                aggregate: Ones("anchor_match"),
                print: Print::OfRows,
            },
            Figure {
                key: "questions",
                label: "questions",
                aggregate: Rows,
                print: Print::Hidden,
            },
            Figure {
                key: "anchors_mean",
                label: "anchors / question",
                aggregate: Mean("anchors"),
                print: Print::Decimals(2),
            },
            Figure {
                key: "windows_before_mean",
                label: "windows before dedup",
                aggregate: Mean("windows_before"),
                print: Print::Decimals(1),
            },
            Figure {
                key: "windows_after_mean",
                label: "windows after dedup",
                aggregate: Mean("windows_after"),
                print: Print::Decimals(1),
            },
            Figure {
                key: "fallbacks",
                label: "fallbacks",
                aggregate: Ones("fallback"),
                print: Print::Count,
            },
        ],
    }
};

impl EarStats {
    /// The values of [`RECORD`]'s fields for this question, in field order (the pipeline
    /// places them with `records::RecordValues::of`).
    pub fn record_values(&self) -> [Option<u64>; 5] {
        [
            Some((self.question_anchors + self.option_anchors) as u64),
            Some(u64::from(self.exact_match)),
            Some(self.windows_before_dedup as u64),
            Some(self.windows_after_dedup as u64),
            Some(u64::from(self.fallback)),
        ]
    }
}

/// The answer to one query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarResult {
    /// Top-k passages, best first.
    pub passages: Vec<EarPassage>,
    /// Bookkeeping.
    pub stats: EarStats,
    /// All query anchors, question first, then options in order.
    pub query_anchors: Vec<QueryAnchor>,
}

struct DocIndex {
    /// Whitespace words ([`chunker::word_spans`]), packed: 8 bytes a word (a 1M-passage corpus holds
    /// ~100M of them).
    words: Vec<CompactSpan>,
    /// Parents of this document: (parent index, first word, last word), in order.
    parents: Vec<(usize, usize, usize)>,
    sentences: Vec<Span>,
}

/// The EAR index over one corpus (module docs).
pub struct EarIndex<'a> {
    docs: &'a [Document],
    parents: &'a PassageIndex,
    config: EarConfig,
    per_doc: Vec<DocIndex>,
    doc_by_id: HashMap<&'a str, usize>,
    /// Anchors and normalised words of every document (text `d` = document `d`).
    index: AnchorIndex,
    analyzer: TextAnalyzer,
}

/// Occurrence of a query form in the corpus.
#[derive(Clone)]
struct Occurrence {
    doc: usize,
    span: Span,
    corpus_kind: Option<AnchorKind>,
}

struct Candidate {
    doc: usize,
    parent: usize,
    span: Span,
    score: f64,
    parts: ScoreParts,
    forms: BTreeSet<usize>,
}

fn idf(n: usize, df: u32) -> f64 {
    (1.0 + n as f64 / (1.0 + df as f64)).ln()
}

impl<'a> EarIndex<'a> {
    /// Builds the index over `docs`, whose parents are the chunks of `parents`.
    ///
    /// # Errors
    /// An invalid [`EarConfig`], or a parent naming a document not in `docs`.
    pub fn new(
        docs: &'a [Document],
        parents: &'a PassageIndex,
        config: EarConfig,
    ) -> Result<Self, String> {
        config.check()?;
        let doc_by_id: HashMap<&str, usize> = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.id.as_str(), i))
            .collect();
        let index = AnchorIndex::new(docs.iter().map(|d| d.text.as_str()), &config.anchors);
        let mut per_doc = Vec::with_capacity(docs.len());
        for doc in docs {
            let sentences = if config.snap_sentences || config.expand == Expand::Summary {
                chunker::segment::sentences(&doc.text)
            } else {
                Vec::new()
            };
            per_doc.push(DocIndex {
                words: words_from(&doc.text, 0).map(CompactSpan::new).collect(),
                parents: Vec::new(),
                sentences,
            });
        }
        for (p, c) in parents.passages().iter().enumerate() {
            let d = *doc_by_id
                .get(c.doc_id.as_str())
                .ok_or_else(|| format!("parent {} names an unknown document", c.id()))?;
            let words = &per_doc[d].words;
            let w0 = words.partition_point(|w| w.start() < c.span.start);
            let w1 = words.partition_point(|w| w.start() < c.span.end);
            if w1 > w0 {
                per_doc[d].parents.push((p, w0, w1 - 1));
            }
        }
        Ok(EarIndex {
            docs,
            parents,
            config,
            per_doc,
            doc_by_id,
            index,
            analyzer: TextAnalyzer::english(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &EarConfig {
        &self.config
    }

    /// Distinct normalised corpus anchors.
    pub fn anchor_forms(&self) -> usize {
        self.index.anchor_forms()
    }

    /// The anchors of a question and its options, question first.
    pub fn query_anchors(&self, question: &str, options: &[String]) -> Vec<QueryAnchor> {
        let mut out: Vec<QueryAnchor> = self
            .config
            .anchors
            .extract(question)
            .into_iter()
            .map(|anchor| QueryAnchor {
                source: AnchorSource::Question,
                anchor,
            })
            .collect();
        for (i, o) in options.iter().enumerate() {
            out.extend(
                self.config
                    .anchors
                    .option_anchors(o)
                    .into_iter()
                    .map(|anchor| QueryAnchor {
                        source: AnchorSource::Option(i),
                        anchor,
                    }),
            );
        }
        out
    }

    /// Exact and phrase occurrences of one query anchor in the scoped documents.
    fn occurrences(&self, a: &Anchor, in_scope: &dyn Fn(usize) -> bool) -> Vec<Occurrence> {
        let mut out = Vec::new();
        let mut exact_at: BTreeSet<(usize, usize)> = BTreeSet::new();
        for &(d, i) in self.index.exact(&a.norm) {
            let d = d as usize;
            if !in_scope(d) {
                continue;
            }
            let c = &self.index.text(d).anchors[i as usize];
            if exact_at.insert((d, c.span.start)) {
                out.push(Occurrence {
                    doc: d,
                    span: c.span,
                    corpus_kind: Some(c.kind),
                });
            }
        }
        for (d, span) in self.index.phrase(&a.terms) {
            if in_scope(d) && !exact_at.contains(&(d, span.start)) {
                out.push(Occurrence {
                    doc: d,
                    span,
                    corpus_kind: None,
                });
            }
        }
        out.sort_by_key(|o| (o.doc, o.span.start, o.span.end));
        out
    }

    /// The parent holding `[wa, wb]` furthest from its edges, and its word range.
    fn parent_for(&self, d: usize, wa: usize, wb: usize) -> Option<(usize, usize, usize)> {
        self.per_doc[d]
            .parents
            .iter()
            .filter(|(_, w0, w1)| *w0 <= wa && wb <= *w1)
            .max_by_key(|(p, w0, w1)| ((wa - w0).min(w1 - wb), std::cmp::Reverse(*p)))
            .copied()
    }

    fn content_terms(&self, text: &str) -> BTreeSet<u32> {
        tokenize(text)
            .iter()
            .filter(|t| !self.analyzer.is_stop_word(&t.norm))
            .filter_map(|t| self.index.term(&t.norm))
            .collect()
    }

    fn overlap_share(&self, d: usize, span: Span, terms: &BTreeSet<u32>) -> f64 {
        let n = self.docs.len();
        let total: f64 = terms.iter().map(|t| idf(n, self.index.term_df(*t))).sum();
        if total == 0.0 {
            return 0.0;
        }
        let di = self.index.text(d);
        let a = di.token_spans.partition_point(|s| s.start() < span.start);
        let b = di.token_spans.partition_point(|s| s.start() < span.end);
        let present: BTreeSet<u32> = di.token_ids[a..b]
            .iter()
            .copied()
            .filter(|t| terms.contains(t))
            .collect();
        present
            .iter()
            .map(|t| idf(n, self.index.term_df(*t)))
            .sum::<f64>()
            / total
    }

    /// Ranks EAR windows for one question (module docs). `scope` restricts the search to
    /// those document ids (QuALITY-style per-article questions); `fallback` is the caller's
    /// ranking of parents, used when no query anchor occurs in scope.
    pub fn search(
        &self,
        question: &str,
        options: &[String],
        k: usize,
        scope: Option<&[String]>,
        fallback: &[Hit],
    ) -> EarResult {
        let scope_set: Option<BTreeSet<usize>> = scope.map(|ids| {
            ids.iter()
                .filter_map(|id| self.doc_by_id.get(id.as_str()).copied())
                .collect()
        });
        let in_scope = |d: usize| scope_set.as_ref().is_none_or(|s| s.contains(&d));
        let query_anchors = self.query_anchors(question, options);
        let mut stats = EarStats {
            question_anchors: query_anchors
                .iter()
                .filter(|q| q.source == AnchorSource::Question)
                .count(),
            option_anchors: query_anchors
                .iter()
                .filter(|q| q.source != AnchorSource::Question)
                .count(),
            ..EarStats::default()
        };
        // Distinct forms, each with the query anchors that share it and its occurrences.
        let mut forms: Vec<(String, Vec<usize>, Vec<Occurrence>)> = Vec::new();
        let mut form_of: HashMap<&str, usize> = HashMap::new();
        for (i, qa) in query_anchors.iter().enumerate() {
            match form_of.get(qa.anchor.norm.as_str()) {
                Some(&f) => forms[f].1.push(i),
                None => {
                    form_of.insert(&qa.anchor.norm, forms.len());
                    let occ = self.occurrences(&qa.anchor, &in_scope);
                    forms.push((qa.anchor.norm.clone(), vec![i], occ));
                }
            }
        }
        let n_docs = self.docs.len();
        let form_idf: Vec<f64> = forms
            .iter()
            .map(|(norm, _, _)| idf(n_docs, self.index.anchor_df(norm)))
            .collect();
        let matched: Vec<usize> = (0..forms.len())
            .filter(|&f| !forms[f].2.is_empty())
            .collect();
        stats.matched_forms = matched.len();
        stats.exact_match = forms
            .iter()
            .any(|(_, _, occ)| occ.iter().any(|o| o.corpus_kind.is_some()));
        stats.occurrences = forms.iter().map(|f| f.2.len()).sum();
        if matched.is_empty() {
            stats.fallback = true;
            let passages = fallback
                .iter()
                .take(k)
                .map(|h| {
                    let c = &self.parents.passages()[h.passage];
                    EarPassage {
                        doc: self.doc_by_id[c.doc_id.as_str()],
                        span: c.span,
                        window: c.span,
                        parent: h.passage,
                        score: h.score,
                        parts: ScoreParts::default(),
                        matches: Vec::new(),
                        summary: Vec::new(),
                        fallback: true,
                    }
                })
                .collect();
            return EarResult {
                passages,
                stats,
                query_anchors,
            };
        }
        // Per-document occurrences of every matched form, sorted by start.
        let mut by_doc: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
        for &f in &matched {
            for (o, occ) in forms[f].2.iter().enumerate() {
                by_doc.entry(occ.doc).or_default().push((f, o));
            }
        }
        for v in by_doc.values_mut() {
            v.sort_by_key(|&(f, o)| (forms[f].2[o].span.start, f));
        }
        let mut text = question.to_string();
        for o in options {
            text.push(' ');
            text.push_str(o);
        }
        let query_terms = self.content_terms(&text);
        let query_dates: Vec<(i32, i32)> = query_anchors
            .iter()
            .filter_map(|q| q.anchor.years)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // A form belongs to the question when any of its anchors comes from the question,
        // else to every option that has it.
        let in_question: Vec<bool> = forms
            .iter()
            .map(|(_, qs, _)| {
                qs.iter()
                    .any(|&q| query_anchors[q].source == AnchorSource::Question)
            })
            .collect();
        let option_of = |f: usize, i: usize| {
            !in_question[f]
                && forms[f]
                    .1
                    .iter()
                    .any(|&q| query_anchors[q].source == AnchorSource::Option(i))
        };
        // Anchor part of a set of forms: question forms plus the best single option's forms,
        // so windows naming several distractors gain nothing over one naming the answer.
        let anchor_mass = |present: &dyn Fn(usize) -> bool| -> f64 {
            let q: f64 = (0..forms.len())
                .filter(|&f| in_question[f] && present(f))
                .map(|f| form_idf[f])
                .sum();
            let o = (0..options.len())
                .map(|i| {
                    (0..forms.len())
                        .filter(|&f| option_of(f, i) && present(f))
                        .map(|f| form_idf[f])
                        .sum::<f64>()
                })
                .fold(0.0, f64::max);
            q + o
        };
        let matched_set: BTreeSet<usize> = matched.iter().copied().collect();
        let matched_idf = anchor_mass(&|f| matched_set.contains(&f));
        // Candidate windows, one per occurrence (identical windows merged).
        let mut windows: BTreeMap<(usize, Span), usize> = BTreeMap::new();
        let mut cands: Vec<Candidate> = Vec::new();
        for (&d, occs) in &by_doc {
            let di = &self.per_doc[d];
            for &(f, o) in occs {
                let occ = &forms[f].2[o];
                let wa = di.words.partition_point(|w| w.end() <= occ.span.start);
                let wb = di
                    .words
                    .partition_point(|w| w.start() < occ.span.end)
                    .saturating_sub(1)
                    .max(wa);
                let (parent, p0, p1) = self.parent_for(d, wa, wb).unwrap_or((
                    usize::MAX,
                    0,
                    di.words.len().saturating_sub(1),
                ));
                if di.words.is_empty() {
                    continue;
                }
                let w0 = wa.saturating_sub(self.config.radius).max(p0);
                let w1 = (wb + self.config.radius).min(p1);
                let mut span = Span {
                    start: di.words[w0].start(),
                    end: di.words[w1].end(),
                };
                if self.config.snap_sentences {
                    let bound = Span {
                        start: di.words[p0].start(),
                        end: di.words[p1].end(),
                    };
                    span = snap(&di.sentences, span, bound);
                }
                stats.windows_before_dedup += 1;
                if windows.contains_key(&(d, span)) {
                    continue;
                }
                windows.insert((d, span), cands.len());
                cands.push(Candidate {
                    doc: d,
                    parent,
                    span,
                    score: 0.0,
                    parts: ScoreParts::default(),
                    forms: BTreeSet::new(),
                });
            }
        }
        for c in &mut cands {
            let occs = &by_doc[&c.doc];
            for &(f, o) in occs {
                let s = forms[f].2[o].span;
                if s.start >= c.span.start && s.end <= c.span.end {
                    c.forms.insert(f);
                }
            }
            let anchor = anchor_mass(&|f| c.forms.contains(&f)) / matched_idf;
            let lexical = self.overlap_share(c.doc, c.span, &query_terms);
            let date = if query_dates.is_empty() {
                0.0
            } else {
                let di = self.index.text(c.doc);
                let here: Vec<(i32, i32)> = di
                    .anchors
                    .iter()
                    .filter(|a| a.span.start >= c.span.start && a.span.end <= c.span.end)
                    .filter_map(|a| a.years)
                    .collect();
                query_dates
                    .iter()
                    .filter(|(a, b)| here.iter().any(|(x, y)| x <= b && a <= y))
                    .count() as f64
                    / query_dates.len() as f64
            };
            let w = self.config.weights;
            c.parts = ScoreParts {
                anchor,
                lexical,
                date,
            };
            c.score = w.anchor * anchor + w.lexical * lexical + w.date * date;
        }
        let mut order: Vec<usize> = (0..cands.len()).collect();
        order.sort_by(|&a, &b| {
            cands[b]
                .score
                .total_cmp(&cands[a].score)
                .then(cands[a].doc.cmp(&cands[b].doc))
                .then(cands[a].span.cmp(&cands[b].span))
        });
        // Kept windows in rank order, and per document the kept windows of that document
        // (in the same order): a window is compared only with its own document's, so the
        // pass is linear in the candidates, not quadratic (a million-passage corpus gives a
        // question hundreds of thousands of windows, nearly all in distinct documents).
        let mut kept: Vec<usize> = Vec::new();
        let mut kept_in_doc: HashMap<usize, Vec<usize>> = HashMap::new();
        for i in order {
            let c = &cands[i];
            let same_doc = kept_in_doc.get(&c.doc).map_or(&[][..], Vec::as_slice);
            let hit = same_doc.iter().copied().find(|&j| {
                let o = &cands[j];
                let shorter = o.span.len().min(c.span.len()).max(1);
                o.span.overlap(&c.span) as f64 / shorter as f64 >= self.config.dedup_threshold
            });
            match (hit, self.config.dedup) {
                (None, _) => {
                    kept.push(i);
                    kept_in_doc.entry(c.doc).or_default().push(i);
                }
                (Some(_), Dedup::Drop) => {}
                // Windows of different parents are not merged (the union would leave
                // both parents): the worse one is dropped.
                (Some(j), Dedup::Merge) if cands[j].parent != c.parent => {}
                (Some(j), Dedup::Merge) => {
                    let (s, f) = (c.span, c.forms.clone());
                    let o = &mut cands[j];
                    o.span = Span {
                        start: o.span.start.min(s.start),
                        end: o.span.end.max(s.end),
                    };
                    o.forms.extend(f);
                }
            }
        }
        stats.windows_after_dedup = kept.len();
        let mut passages: Vec<EarPassage> = Vec::new();
        let question_terms = self.content_terms(question);
        for &i in &kept {
            if passages.len() == k {
                break;
            }
            let c = &cands[i];
            let mut matches = Vec::new();
            for &(f, o) in &by_doc[&c.doc] {
                let occ = &forms[f].2[o];
                if occ.span.start < c.span.start || occ.span.end > c.span.end {
                    continue;
                }
                for &qi in &forms[f].1 {
                    let qa = &query_anchors[qi];
                    matches.push(AnchorMatch {
                        source: qa.source,
                        query_kind: qa.anchor.kind,
                        norm: qa.anchor.norm.clone(),
                        query_span: qa.anchor.span,
                        corpus_kind: occ.corpus_kind,
                        corpus_span: occ.span,
                    });
                }
            }
            let parent_span = self
                .parents
                .passages()
                .get(c.parent)
                .map(|p| p.span)
                .unwrap_or(c.span);
            let (span, summary) = match self.config.expand {
                Expand::None => (c.span, Vec::new()),
                Expand::Parent => {
                    if passages
                        .iter()
                        .any(|p| p.doc == c.doc && p.span == parent_span)
                    {
                        continue;
                    }
                    (parent_span, Vec::new())
                }
                Expand::Summary => {
                    // Sentences already retrieved (in any window or summary of this
                    // document) are not repeated.
                    let mut taken: Vec<Span> = vec![c.span];
                    for p in passages.iter().filter(|p| p.doc == c.doc) {
                        taken.push(p.span);
                        taken.extend(p.summary.iter().copied());
                    }
                    (
                        c.span,
                        self.summary(c.doc, parent_span, &taken, &question_terms),
                    )
                }
            };
            passages.push(EarPassage {
                doc: c.doc,
                span,
                window: c.span,
                parent: c.parent,
                score: c.score,
                parts: c.parts,
                matches,
                summary,
                fallback: false,
            });
        }
        EarResult {
            passages,
            stats,
            query_anchors,
        }
    }

    /// The parent's whole sentences outside `taken` (the window and what this document
    /// already returned) with the highest idf-weighted overlap with the question terms, in
    /// document order, within the word budget.
    fn summary(&self, d: usize, parent: Span, taken: &[Span], terms: &BTreeSet<u32>) -> Vec<Span> {
        let di = &self.per_doc[d];
        let text = &self.docs[d].text;
        let mut scored: Vec<(f64, Span)> = di
            .sentences
            .iter()
            .copied()
            .filter(|s| s.start >= parent.start && s.end <= parent.end)
            .filter(|s| s.start < s.end && taken.iter().all(|t| s.overlap(t) == 0))
            .map(|s| (self.overlap_share(d, s, terms), s))
            .filter(|(score, _)| *score > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut budget = self.config.summary_words;
        let mut out = Vec::new();
        for (_, s) in scored {
            let w = chunker::count_words(&text[s.start..s.end]);
            if w == 0 || w > budget {
                continue;
            }
            budget -= w;
            out.push(s);
        }
        out.sort();
        out
    }
}

/// Widens `span` to the sentences it touches, inside `bound`.
fn snap(sentences: &[Span], span: Span, bound: Span) -> Span {
    let mut out = span;
    for s in sentences {
        if s.end > span.start && s.start < span.end {
            out.start = out.start.min(s.start);
            out.end = out.end.max(s.end);
        }
    }
    Span {
        start: out.start.max(bound.start),
        end: out.end.min(bound.end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chunker::{Chunk, FixedConfig};

    fn doc(id: &str, text: &str) -> Document {
        Document::new(id, text)
    }

    fn parents(docs: &[Document], size: usize, overlap: usize) -> PassageIndex {
        let cfg = FixedConfig::new(size, overlap).unwrap();
        let chunks: Vec<Chunk> = docs.iter().flat_map(|d| cfg.chunk(d)).collect();
        PassageIndex::new(docs, chunks).unwrap()
    }

    fn text_of<'a>(docs: &'a [Document], p: &EarPassage) -> &'a str {
        &docs[p.doc].text[p.span.start..p.span.end]
    }

    #[test]
    fn repeated_anchor_gives_three_windows() {
        // docs/reference.md case 18: three distinct positions, never three copies of position 0.
        let docs = [doc("d", "Bolt A failed. Bolt A passed. Bolt A failed.")];
        let idx = parents(&docs, 260, 60);
        let cfg = EarConfig {
            radius: 0,
            dedup_threshold: 1.0,
            dedup: Dedup::Drop,
            ..EarConfig::default()
        };
        let ear = EarIndex::new(&docs, &idx, cfg).unwrap();
        let r = ear.search(
            "Did Bolt A fail?",
            &["yes".into(), "no".into()],
            8,
            None,
            &[],
        );
        let mut starts: Vec<usize> = r.passages.iter().map(|p| p.window.start).collect();
        starts.sort();
        assert_eq!(starts, [0, 15, 30]);
        for p in &r.passages {
            assert_eq!(text_of(&docs, p), "Bolt A");
            assert_eq!(p.matches[0].corpus_span, p.span);
        }
    }

    #[test]
    fn windows_are_symmetric_and_clipped_at_document_edges() {
        // docs/reference.md case 27 for word radii.
        let text = "Alpha w1 w2 w3 Gamma w5 w6 w7 Omega";
        let docs = [doc("d", text)];
        let idx = parents(&docs, 260, 60);
        let cfg = EarConfig {
            radius: 2,
            dedup: Dedup::Drop,
            dedup_threshold: 1.0,
            ..EarConfig::default()
        };
        let ear = EarIndex::new(&docs, &idx, cfg).unwrap();
        for (q, want) in [
            ("Alpha", "Alpha w1 w2"),
            ("Gamma", "w2 w3 Gamma w5 w6"),
            ("Omega", "w6 w7 Omega"),
        ] {
            let r = ear.search(&format!("What about {q}?"), &["x y".into()], 3, None, &[]);
            assert_eq!(r.passages.len(), 1, "{q}");
            assert_eq!(text_of(&docs, &r.passages[0]), want);
        }
    }

    #[test]
    fn windows_stay_inside_their_parent() {
        let words: Vec<String> = (0..30).map(|i| format!("w{i}")).collect();
        let mut text = words.join(" ");
        text.push_str(" Zeta ");
        text.push_str(&words.join(" "));
        let docs = [doc("d", &text)];
        // Parents of 20 words, 5 overlap: `Zeta` (word 30) sits in parents [15, 35) (4 words
        // from its edge) and [30, 50) (0 words), so the window is clipped to the first one:
        // words 20..=34.
        let idx = parents(&docs, 20, 5);
        let cfg = EarConfig {
            radius: 10,
            ..EarConfig::default()
        };
        let ear = EarIndex::new(&docs, &idx, cfg).unwrap();
        let r = ear.search("Where is Zeta?", &["here".into()], 3, None, &[]);
        let p = &r.passages[0];
        let parent = idx.passages()[p.parent].span;
        assert!(p.span.start >= parent.start && p.span.end <= parent.end);
        assert!(
            text_of(&docs, p).starts_with("w20 "),
            "{}",
            text_of(&docs, p)
        );
        assert!(text_of(&docs, p).ends_with(" w3"), "{}", text_of(&docs, p));
    }

    #[test]
    fn scoring_dedup_fallback_and_expansion() {
        let docs = [
            doc(
                "a",
                "The Treaty of Paris ended the war in 1783. Britain recognised the United States. \
                 Farmers planted corn that year and the weather was fine.",
            ),
            doc(
                "b",
                "The Treaty of Paris was also signed in 1898 after another war with Spain.",
            ),
            doc(
                "c",
                "Photosynthesis turns light into chemical energy in the chloroplast.",
            ),
        ];
        let idx = parents(&docs, 260, 60);
        let merge = EarConfig {
            dedup: Dedup::Merge,
            ..EarConfig::default()
        };
        let ear = EarIndex::new(&docs, &idx, merge).unwrap();
        let opts: Vec<String> = ["1783", "1898", "1776", "1812"].map(String::from).to_vec();
        let r = ear.search(
            "In which year did the Treaty of Paris recognise the United States?",
            &opts,
            3,
            None,
            &[],
        );
        assert!(r.stats.exact_match && !r.stats.fallback);
        assert_eq!(r.passages[0].doc, 0, "{:?}", r.passages);
        assert!(r.passages[0].score > r.passages[1].score);
        assert!(r.passages[0]
            .matches
            .iter()
            .any(|m| m.norm == "treaty of paris"
                && m.corpus_kind == Some(AnchorKind::Event)
                && m.source == AnchorSource::Question));
        assert!(r.passages[0]
            .matches
            .iter()
            .any(|m| m.source == AnchorSource::Option(0)));
        // Overlapping windows of one document were merged into one.
        assert_eq!(r.passages.iter().filter(|p| p.doc == 0).count(), 1);
        assert!(r.stats.windows_before_dedup > r.stats.windows_after_dedup);
        // Nothing matches: the caller's parents come back, flagged.
        let fb = [Hit {
            passage: 2,
            score: 1.5,
        }];
        let r = ear.search(
            "what does chlorophyll absorb?",
            &["light rays and more words here".into()],
            3,
            None,
            &fb,
        );
        assert!(r.stats.fallback);
        assert_eq!(r.passages.len(), 1);
        assert!(r.passages[0].fallback && r.passages[0].doc == 2);
        // Scope: only document b may answer.
        let scope = ["b".to_string()];
        let r = ear.search(
            "When was the Treaty of Paris signed?",
            &opts,
            3,
            Some(&scope),
            &[],
        );
        assert!(r.passages.iter().all(|p| p.doc == 1));
        // Parent expansion returns the parent containing the window.
        let cfg = EarConfig {
            expand: Expand::Parent,
            radius: 3,
            ..EarConfig::default()
        };
        let ear = EarIndex::new(&docs, &idx, cfg).unwrap();
        let r = ear.search("When was the Treaty of Paris signed?", &opts, 3, None, &[]);
        for p in &r.passages {
            assert_eq!(p.span, idx.passages()[p.parent].span);
            assert!(p.window.start >= p.span.start && p.window.end <= p.span.end);
        }
        // Summary expansion: sentences outside the window, within the budget.
        let cfg = EarConfig {
            expand: Expand::Summary,
            radius: 2,
            summary_words: 12,
            ..EarConfig::default()
        };
        let ear = EarIndex::new(&docs, &idx, cfg).unwrap();
        let r = ear.search(
            "Which country recognised the United States after the war?",
            &opts,
            1,
            None,
            &[],
        );
        let p = &r.passages[0];
        let words: usize = p
            .summary
            .iter()
            .map(|s| chunker::count_words(&docs[p.doc].text[s.start..s.end]))
            .sum();
        assert!(words <= 12);
        assert!(p.summary.iter().all(|s| s.overlap(&p.window) == 0));
    }

    #[test]
    fn config_errors_name_the_field() {
        let bad = EarConfig {
            dedup_threshold: 0.0,
            ..EarConfig::default()
        };
        assert!(bad.check().unwrap_err().contains("dedup_threshold"));
    }
}
