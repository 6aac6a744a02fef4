//! Which MMLU questions the cleaned textbooks support, by an auditable anchor rule.
//!
//! # Scope
//! Every MMLU test question of the subjects a book covers ([`super::BookSpec::subjects`], from
//! the books file; for the `openstax` corpus `high_school_us_history` → U.S. History,
//! `high_school_psychology` → Psychology 2e, `astronomy` → Astronomy 2e, `high_school_biology`
//! and `college_biology` → Biology) is considered against *its* book's narrative pages (the
//! kept text only). A subject belongs to one book of a corpus.
//!
//! # Rule ([`support_rule`], generations [`SUPPORT_RULES`])
//! Anchors are [`chunker::anchor`] surface anchors with the default [`AnchorConfig`] at the
//! corpus's support generation (its anchor rules generation; generation 1 let capitalised runs
//! cross sentence ends, see [`SUPPORT_RULES`]); the
//! corpus anchors are those extracted from each narrative page's text, the option anchors
//! are [`AnchorConfig::option_anchors`] (extracted anchors plus the whole option when it has at
//! most 4 words). A question is **supported** when both hold:
//! - **(a) the gold option is in the book**: one of its anchors occurs in the book, either
//!   *exactly* (a corpus anchor has the same normalised form) or as a *phrase* (its normalised
//!   terms are consecutive normalised words of one page); or, only when the gold option has no
//!   anchor at all, its content words (Unicode words, lower-cased, minus NLTK English stop
//!   words, normalised with [`chunker::anchor::normalize_word`]; at least one) all occur in one
//!   kept paragraph of the book ([`CONTENT_COVERAGE`] of them, rounded up);
//! - **(b) the question is anchored**: at least one anchor of the question text or of any of
//!   its options has the normalised form of a corpus anchor of the book (an exact match).
//!
//! Every considered question gets one row in `support.jsonl` with the decision, the gold
//! option's anchors and where each was found (document id and byte span of the first
//! occurrence, in document order), the content-word evidence when used, and the exact
//! question/option anchor matches.

use super::{Corpus, Page};
use crate::dataset::Question;
use anyhow::{Context, Result};
use chunker::anchor::{tokenize, AnchorConfig, AnchorIndex, AnchorKind};
use chunker::Span;
use serde::Serialize;
use std::collections::HashMap;

/// The newest generation of the support rule. Generation N decides with anchor rules
/// generation N ([`chunker::anchor::AnchorConfig::rules`]): generation 2 no longer lets a
/// capitalised anchor run across a sentence end (`a the` from "10 A. The"), which made some
/// questions "anchored" by artefacts. A corpus pins its generation in the books file
/// (`support:`); the name ([`support_rule`]) is in the question sets' manifests and keys.
pub const SUPPORT_RULES: u8 = 2;

/// The name of support rule generation `generation`: `openstax-support-N`, recorded in
/// manifests and in the question sets' input key.
pub fn support_rule(generation: u8) -> String {
    format!("openstax-support-{generation}")
}

/// Share of a gold option's content words that must occur in one kept paragraph when the
/// option has no anchor (1.0 = all of them).
pub const CONTENT_COVERAGE: f64 = 1.0;

/// Where a text was found: a byte span of a corpus document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    /// Document id (`openstax-BOOK-MODULE`).
    pub doc_id: String,
    /// First byte in the document text.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// How the gold option was found in the book.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum GoldSupport {
    /// A gold anchor has the normalised form of a corpus anchor.
    AnchorExact,
    /// A gold anchor's terms occur as consecutive words (no exact match).
    AnchorPhrase,
    /// The gold option has no anchor; its content words occur in one paragraph.
    ContentWords,
    /// None of the above.
    None,
}

impl GoldSupport {
    /// The kebab-case name used in audit rows and counts.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One gold-option anchor and where it was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoldAnchor {
    /// Anchor kind.
    pub kind: AnchorKind,
    /// Normalised form.
    pub norm: String,
    /// `exact`, `phrase` or `none`.
    #[serde(rename = "match")]
    pub matched: &'static str,
    /// First occurrence (exact if any, else phrase).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Found>,
}

/// Content-word evidence for a gold option without anchors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContentEvidence {
    /// Distinct normalised content words of the gold option.
    pub words: Vec<String>,
    /// How many of them the best paragraph holds.
    pub covered: usize,
    /// How many were required.
    pub required: usize,
    /// The best paragraph (first in document order among the best).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paragraph: Option<Found>,
}

/// An exact match of a question or option anchor with a corpus anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuestionAnchor {
    /// `question` or `option:N` (0-based).
    pub source: String,
    /// Anchor kind on the question side.
    pub kind: AnchorKind,
    /// Normalised form.
    pub norm: String,
    /// First corpus occurrence.
    pub at: Found,
}

/// The decision for one question (one row of `support.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// Question id (the MMLU id).
    pub id: String,
    /// MMLU subject.
    pub subject: String,
    /// Book slug it was checked against.
    pub book: String,
    /// (a) and (b) both hold.
    pub supported: bool,
    /// A one-line explanation.
    pub reason: String,
    /// Rule (a): how the gold option was found.
    pub gold_support: GoldSupport,
    /// The gold option's anchors.
    pub gold_anchors: Vec<GoldAnchor>,
    /// Content-word evidence (only for gold options without anchors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold_content: Option<ContentEvidence>,
    /// Rule (b): exact anchor matches of the question and options (first per form).
    pub question_anchors: Vec<QuestionAnchor>,
}

/// Anchors and words of one book's narrative pages.
pub struct BookIndex {
    doc_ids: Vec<String>,
    /// Anchors and normalised words of the pages (text `d` = `doc_ids[d]`).
    index: AnchorIndex,
    /// Kept paragraphs: (document, span); token id → paragraphs holding it (sorted, unique).
    paragraphs: Vec<(usize, Span)>,
    para_postings: Vec<Vec<u32>>,
    config: AnchorConfig,
}

impl BookIndex {
    /// Indexes the narrative pages of one book.
    pub fn new(pages: &[&Page], config: AnchorConfig) -> BookIndex {
        let narrative: Vec<&&Page> = pages.iter().filter(|p| p.is_narrative()).collect();
        let texts: Vec<(String, Vec<Option<Span>>)> =
            narrative.iter().map(|p| p.text_and_spans()).collect();
        let index = AnchorIndex::new(texts.iter().map(|(t, _)| t.as_str()), &config);
        let mut paragraphs = Vec::new();
        let mut para_postings: Vec<Vec<u32>> = Vec::new();
        for (d, (_, spans)) in texts.iter().enumerate() {
            // Paragraph postings: tokens fall in kept-block spans in order.
            let t = index.text(d);
            let mut ti = 0;
            for span in spans.iter().flatten() {
                let p = paragraphs.len() as u32;
                paragraphs.push((d, *span));
                while ti < t.token_ids.len() && t.token_spans[ti].start() < span.end {
                    if t.token_spans[ti].start() >= span.start {
                        let id = t.token_ids[ti] as usize;
                        if para_postings.len() <= id {
                            para_postings.resize(id + 1, Vec::new());
                        }
                        let list = &mut para_postings[id];
                        if list.last() != Some(&p) {
                            list.push(p);
                        }
                    }
                    ti += 1;
                }
            }
        }
        BookIndex {
            doc_ids: narrative.iter().map(|p| p.doc_id()).collect(),
            index,
            paragraphs,
            para_postings,
            config,
        }
    }

    fn found(&self, d: usize, span: Span) -> Found {
        Found {
            doc_id: self.doc_ids[d].clone(),
            start: span.start,
            end: span.end,
        }
    }

    /// The first occurrence of `terms` as consecutive normalised words of one page.
    fn phrase(&self, terms: &[String]) -> Option<Found> {
        self.index
            .phrase(terms)
            .next()
            .map(|(d, span)| self.found(d, span))
    }

    /// The first corpus anchor with normalised form `norm`.
    fn exact(&self, norm: &str) -> Option<Found> {
        self.index.exact(norm).first().map(|&(d, i)| {
            let d = d as usize;
            self.found(d, self.index.text(d).anchors[i as usize].span)
        })
    }

    /// Content-word coverage of `text` by the best kept paragraph.
    fn content(&self, text: &str) -> ContentEvidence {
        let stop = chunker::analyzer::TextAnalyzer::default()
            .with_stop_words(chunker::analyzer::StopWords::English);
        let mut words: Vec<String> = Vec::new();
        for t in tokenize(text) {
            let raw = &text[t.span.start..t.span.end];
            if stop.is_stop_word(&raw.to_lowercase()) || words.contains(&t.norm) {
                continue;
            }
            words.push(t.norm);
        }
        let required = ((words.len() as f64) * CONTENT_COVERAGE).ceil() as usize;
        let mut hits: HashMap<u32, usize> = HashMap::new();
        for w in &words {
            if let Some(id) = self.index.term(w) {
                for &p in self.para_postings.get(id as usize).into_iter().flatten() {
                    *hits.entry(p).or_default() += 1;
                }
            }
        }
        let best = hits
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(&p, &n)| (p, n));
        ContentEvidence {
            covered: best.map_or(0, |b| b.1),
            paragraph: best.map(|(p, _)| {
                let (d, s) = self.paragraphs[p as usize];
                self.found(d, s)
            }),
            words,
            required,
        }
    }

    /// Applies the rule to one question.
    pub fn decide(&self, q: &Question, book: &str) -> Decision {
        let gold_text = q.gold().map_or("", |g| q.options[g].as_str());
        let mut gold_anchors = Vec::new();
        let (mut any_exact, mut any_phrase) = (false, false);
        for a in self.config.option_anchors(gold_text) {
            let (matched, at) = match self.exact(&a.norm) {
                Some(f) => {
                    any_exact = true;
                    ("exact", Some(f))
                }
                None => match self.phrase(&a.terms) {
                    Some(f) => {
                        any_phrase = true;
                        ("phrase", Some(f))
                    }
                    None => ("none", None),
                },
            };
            gold_anchors.push(GoldAnchor {
                kind: a.kind,
                norm: a.norm,
                matched,
                at,
            });
        }
        let mut gold_content = None;
        let gold_support = if any_exact {
            GoldSupport::AnchorExact
        } else if any_phrase {
            GoldSupport::AnchorPhrase
        } else if gold_anchors.is_empty() {
            let c = self.content(gold_text);
            let ok = c.required > 0 && c.covered >= c.required;
            gold_content = Some(c);
            if ok {
                GoldSupport::ContentWords
            } else {
                GoldSupport::None
            }
        } else {
            GoldSupport::None
        };
        let mut question_anchors: Vec<QuestionAnchor> = Vec::new();
        let mut sources: Vec<(String, Vec<chunker::anchor::Anchor>)> =
            vec![("question".into(), self.config.extract(&q.question))];
        for (i, o) in q.options.iter().enumerate() {
            sources.push((format!("option:{i}"), self.config.option_anchors(o)));
        }
        for (source, anchors) in sources {
            for a in anchors {
                if question_anchors.iter().any(|x| x.norm == a.norm) {
                    continue;
                }
                if let Some(at) = self.exact(&a.norm) {
                    question_anchors.push(QuestionAnchor {
                        source: source.clone(),
                        kind: a.kind,
                        norm: a.norm,
                        at,
                    });
                }
            }
        }
        let anchored = !question_anchors.is_empty();
        let supported = gold_support != GoldSupport::None && anchored;
        let reason = match (gold_support, anchored) {
            (GoldSupport::None, _) if gold_anchors.is_empty() => {
                "unsupported: the gold option has no anchor and its content words are not all in one paragraph".to_string()
            }
            (GoldSupport::None, _) => {
                "unsupported: no anchor of the gold option occurs in the book".to_string()
            }
            (g, false) => format!(
                "unsupported: gold found ({}) but no question or option anchor equals a corpus anchor",
                g.as_str()
            ),
            (g, true) => format!(
                "supported: gold found ({}); anchored by {:?}",
                g.as_str(),
                question_anchors[0].norm
            ),
        };
        Decision {
            id: q.id.clone(),
            subject: q.subject.clone().unwrap_or_default(),
            book: book.to_string(),
            supported,
            reason,
            gold_support,
            gold_anchors,
            gold_content,
            question_anchors,
        }
    }
}

/// Decides every question whose subject one of the corpus's books covers, in the order of
/// `questions`; questions of other subjects are not considered (not returned).
///
/// # Errors
/// A considered question without a valid gold index, naming it.
pub fn decide_all(corpus: &Corpus, questions: &[Question]) -> Result<Vec<Decision>> {
    use rayon::prelude::*;
    // One index per book, built in parallel (rayon keeps the order).
    let built: Vec<BookIndex> = corpus
        .books
        .par_iter()
        .map(|book| {
            let pages: Vec<&Page> = book.pages.iter().collect();
            let config = AnchorConfig {
                rules: corpus.spec.support_generation(),
                ..AnchorConfig::default()
            };
            BookIndex::new(&pages, config)
        })
        .collect();
    // The books file gives each subject to one book of a corpus (BooksFile::parse).
    let mut indexes: HashMap<&str, (&str, &BookIndex)> = HashMap::new();
    for (book, ix) in corpus.books.iter().zip(&built) {
        for s in &book.spec.subjects {
            indexes.insert(s, (&book.spec.slug, ix));
        }
    }
    let mut out = Vec::new();
    for q in questions {
        let Some((book, ix)) = q.subject.as_deref().and_then(|s| indexes.get(s)) else {
            continue;
        };
        q.answer
            .filter(|&a| a < q.options.len())
            .with_context(|| format!("question {}: no valid gold answer", q.id))?;
        out.push(ix.decide(q, book));
    }
    Ok(out)
}
