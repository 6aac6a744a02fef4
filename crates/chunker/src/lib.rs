//! Documents, byte spans, word segmentation and chunking strategies for chunkbench.
//!
//! The span model (docs/reference.md §3): every chunk is a byte span `[start, end)` of its source
//! document's cleaned text, and the chunk's text is exactly `text[start..end]`. Offsets are
//! never recomputed by searching for text, so repeated passages keep their own positions.
//!
//! Words are whitespace-separated tokens of the text (docs/reference.md §3, "parents of 260 words");
//! see [`word_spans`] for the exact separator set.

#![warn(missing_docs)]

pub mod analyzer;
pub mod anchor;
pub mod fixed;
pub mod headings;
pub mod kamradt;
pub mod maxmin;
pub mod recursive;
pub mod segment;
pub mod units;

pub use analyzer::{Analyzer, Stemming, StopWords, TextAnalyzer};
pub use fixed::{FixedConfig, FixedError};
pub use kamradt::{BreakpointType, KamradtConfig, KamradtError, KamradtStats};
pub use maxmin::{
    maxmin_groups, pack_units, split_oversized, ChunkSummary, Comparison, GroupUnit, MaxMinConfig,
    MaxMinError, MaxMinStats, OversizedStats,
};
pub use recursive::{KeepSeparator, RecursiveChunker, RecursiveError, RecursiveStats};
pub use units::{HfTokenizer, SizeLimit, SizeLimitError, Sizer, TokenizerError, Unit, UnknownUnit};

use serde::{Deserialize, Serialize};

/// A source document in the canonical `documents.jsonl` format (docs/reference.md §3).
///
/// `text` is the cleaned text that every byte offset in chunkbench refers to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// Unique document id within its dataset.
    pub id: String,
    /// Human-readable title (may be empty).
    #[serde(default)]
    pub title: String,
    /// Cleaned text; all spans are byte offsets into it.
    pub text: String,
    /// Where the text comes from (dataset name, URL or file).
    #[serde(default)]
    pub source: String,
    /// License of the text (SPDX id or a short description).
    #[serde(default)]
    pub license: String,
}

impl Document {
    /// A document with only an id and a text (empty title, source and license).
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Document {
            id: id.into(),
            title: String::new(),
            text: text.into(),
            source: String::new(),
            license: String::new(),
        }
    }
}

/// A byte span `[start, end)` of one document's cleaned text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    /// First byte of the span (inclusive), on a UTF-8 character boundary.
    pub start: usize,
    /// One past the last byte (exclusive), on a UTF-8 character boundary.
    pub end: usize,
}

impl Span {
    /// Length of the span in bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True when the span covers no bytes.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// Number of bytes shared with `other` (0 when disjoint).
    pub fn overlap(&self, other: &Span) -> usize {
        self.end
            .min(other.end)
            .saturating_sub(self.start.max(other.start))
    }
}

/// Largest document, in bytes, chunkbench indexes: the per-word tables of the anchor
/// index and of EAR store offsets as [`CompactSpan`]s (`u32`, half a [`Span`]'s 16 bytes, which
/// is what lets a million-passage EAR index fit in 8 GiB). `datasets` rejects larger documents
/// when a dataset is loaded.
pub const MAX_DOCUMENT_BYTES: usize = u32::MAX as usize;

/// A [`Span`] stored as two `u32` byte offsets (8 bytes instead of 16), for the per-word
/// tables kept for every document of a corpus. Only for texts of at most
/// [`MAX_DOCUMENT_BYTES`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct CompactSpan {
    start: u32,
    end: u32,
}

impl CompactSpan {
    /// Packs `span`.
    ///
    /// # Panics
    /// When `span.end > MAX_DOCUMENT_BYTES` (a document larger than 4 GiB, which dataset
    /// loading rejects with an error naming it).
    pub fn new(span: Span) -> Self {
        let pack = |v: usize| {
            u32::try_from(v).unwrap_or_else(|_| {
                panic!("byte offset {v} is past MAX_DOCUMENT_BYTES ({MAX_DOCUMENT_BYTES})")
            })
        };
        CompactSpan {
            start: pack(span.start),
            end: pack(span.end),
        }
    }

    /// First byte (inclusive).
    pub fn start(self) -> usize {
        self.start as usize
    }

    /// One past the last byte (exclusive).
    pub fn end(self) -> usize {
        self.end as usize
    }

    /// The span, unpacked.
    pub fn span(self) -> Span {
        Span {
            start: self.start(),
            end: self.end(),
        }
    }
}

/// A chunk: a byte span of a document plus its word count.
///
/// Invariant: `text == document.text[span.start..span.end]`, never empty, never trimmed
/// after the fact; build chunks with [`Chunk::new`] so the word count matches the slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Id of the source document.
    pub doc_id: String,
    /// Byte span of the chunk in the document's cleaned text.
    pub span: Span,
    /// Words (whitespace-separated tokens, [`count_words`]) in the chunk text.
    pub words: usize,
}

impl Chunk {
    /// Builds the chunk for `doc.text[start..end]`, counting its words.
    ///
    /// # Panics
    /// Never for spans produced by this crate; callers passing their own offsets must keep
    /// them on character boundaries inside the text (checked with a debug assertion).
    pub fn new(doc: &Document, start: usize, end: usize) -> Self {
        debug_assert!(start <= end && end <= doc.text.len());
        debug_assert!(doc.text.is_char_boundary(start) && doc.text.is_char_boundary(end));
        Chunk {
            doc_id: doc.id.clone(),
            span: Span { start, end },
            words: count_words(&doc.text[start..end]),
        }
    }

    /// Stable passage id `DOC_ID:START-END` (byte offsets), used in run files and reports.
    pub fn id(&self) -> String {
        format!("{}:{}-{}", self.doc_id, self.span.start, self.span.end)
    }

    /// The document id and byte span of a passage id written by [`Chunk::id`]; `None` when
    /// `id` is not `DOC_ID:START-END` (the document id may itself contain `:`).
    pub fn parse_id(id: &str) -> Option<(&str, Span)> {
        let (doc, span) = id.rsplit_once(':')?;
        let (s, e) = span.split_once('-')?;
        Some((
            doc,
            Span {
                start: s.parse().ok()?,
                end: e.parse().ok()?,
            },
        ))
    }

    /// The chunk's text: the exact slice of its document.
    pub fn text<'a>(&self, doc: &'a Document) -> &'a str {
        &doc.text[self.span.start..self.span.end]
    }
}

/// True for characters that separate words: Python's `str.isspace()` (Unicode `White_Space`
/// plus the information separators U+001C..U+001F, [`recursive::is_py_whitespace`], so a word
/// count is Python's `len(text.split())` and nothing the recursive chunker strips is a word's
/// character) plus the invisible separators U+200B (zero-width space), U+2060 (word joiner)
/// and U+FEFF (BOM), which otherwise turn a blank document into one "word" (docs/reference.md,
/// case 3).
pub fn is_word_separator(c: char) -> bool {
    recursive::is_py_whitespace(c) || matches!(c, '\u{200B}' | '\u{2060}' | '\u{FEFF}')
}

/// Byte spans of the words of `text`: maximal runs of non-separator characters
/// ([`is_word_separator`]). Spans are in increasing order and never empty.
pub fn word_spans(text: &str) -> Vec<Span> {
    words_from(text, 0).collect()
}

/// The words of `text` ([`word_spans`]) as an iterator, from byte `from` on. `from` must be 0
/// or the start of a word (a span of [`word_spans`]), so the segmentation from there on is
/// [`word_spans`]'s; indexes that keep only some word starts resume from one with this.
///
/// # Panics
/// When `from` is past the end of `text` or not on a character boundary.
pub fn words_from(text: &str, from: usize) -> WordSpans<'_> {
    assert!(
        text.is_char_boundary(from),
        "byte {from} is not a character boundary"
    );
    WordSpans { text, pos: from }
}

/// Iterator over word byte spans, made by [`words_from`].
#[derive(Debug, Clone)]
pub struct WordSpans<'t> {
    text: &'t str,
    pos: usize,
}

impl Iterator for WordSpans<'_> {
    type Item = Span;

    fn next(&mut self) -> Option<Span> {
        let rest = &self.text[self.pos..];
        let start = self.pos + rest.find(|c: char| !is_word_separator(c))?;
        let end = self.text[start..]
            .find(is_word_separator)
            .map_or(self.text.len(), |i| start + i);
        self.pos = end;
        Some(Span { start, end })
    }
}

/// Number of words in `text` (the length of [`word_spans`]), without allocating.
pub fn count_words(text: &str) -> usize {
    let mut n = 0;
    let mut in_word = false;
    for c in text.chars() {
        if is_word_separator(c) {
            in_word = false;
        } else if !in_word {
            in_word = true;
            n += 1;
        }
    }
    n
}

/// Every byte position where `needle` starts in `hay`, overlapping occurrences included
/// (`"aaa"` holds `"aa"` at 0 and 1); the search resumes one character after each match, so
/// every position is a character boundary. Used to locate an excerpt exactly once (`data
/// import`) and to count an answer's occurrences (`data stitch --unique-answers`).
pub fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = hay[from..].find(needle) {
        out.push(from + p);
        from += p + hay[from + p..].chars().next().map_or(1, char::len_utf8);
        if from > hay.len() {
            break;
        }
    }
    out
}

/// Number of words covered by the union of `spans` of one document (overlaps counted once).
///
/// `spans` may be in any order and may overlap; this is the "unique words retrieved" count
/// (docs/reference.md §3), as opposed to the sum of per-chunk counts (words with multiplicity).
pub fn unique_words(text: &str, spans: &[Span]) -> usize {
    let mut sorted: Vec<Span> = spans.iter().copied().filter(|s| !s.is_empty()).collect();
    sorted.sort();
    let mut merged: Vec<Span> = Vec::with_capacity(sorted.len());
    for s in sorted {
        match merged.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => merged.push(s),
        }
    }
    // A word counts once if any of its bytes is covered by the union.
    let words = word_spans(text);
    let mut count = 0;
    let mut j = 0;
    for w in words {
        while j < merged.len() && merged[j].end <= w.start {
            j += 1;
        }
        if j < merged.len() && merged[j].start < w.end {
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {

    #[test]
    fn compact_spans_keep_offsets_up_to_the_limit() {
        use super::{CompactSpan, Span, MAX_DOCUMENT_BYTES};
        for (start, end) in [
            (0, 0),
            (3, 17),
            (MAX_DOCUMENT_BYTES - 1, MAX_DOCUMENT_BYTES),
        ] {
            let s = Span { start, end };
            let c = CompactSpan::new(s);
            assert_eq!((c.span(), c.start(), c.end()), (s, start, end));
        }
        assert!(std::panic::catch_unwind(|| CompactSpan::new(Span {
            start: 0,
            end: MAX_DOCUMENT_BYTES + 1
        }))
        .is_err());
        assert_eq!(std::mem::size_of::<CompactSpan>(), 8);
    }

    // Every variant's strum name equals its serde name, so the two derives agree.
    use testkit::names_agree;

    #[test]
    fn enum_names_are_the_serde_names() {
        names_agree::<crate::anchor::AnchorKind>();
        names_agree::<crate::units::Unit>();
        names_agree::<crate::kamradt::BreakpointType>();
        names_agree::<crate::maxmin::Comparison>();
        names_agree::<crate::maxmin::GroupUnit>();
    }
    use super::*;

    fn doc(text: &str) -> Document {
        Document {
            id: "d".into(),
            title: String::new(),
            text: text.into(),
            source: String::new(),
            license: String::new(),
        }
    }

    #[test]
    fn words_ignore_invisible_separators() {
        assert_eq!(count_words("\u{00A0}\u{200B}\u{FEFF}"), 0);
        assert_eq!(count_words("   \n\t  "), 0);
        assert_eq!(count_words("Pumps hum. Valves click."), 4);
        assert_eq!(
            count_words("Para two,  with   double  spaces."),
            count_words("Para two, with double spaces.")
        );
    }

    #[test]
    fn word_spans_match_count() {
        let t = "  a bb\tccc\r\n日本語  é ";
        let spans = word_spans(t);
        assert_eq!(spans.len(), count_words(t));
        let words: Vec<&str> = spans.iter().map(|s| &t[s.start..s.end]).collect();
        assert_eq!(words, ["a", "bb", "ccc", "日本語", "é"]);
    }

    #[test]
    fn unique_words_counts_overlap_once() {
        let d = doc("one two three four five six");
        // "one two three" = [0,13), "three four" = [8,18)
        let a = Span { start: 0, end: 13 };
        let b = Span { start: 8, end: 18 };
        assert_eq!(unique_words(&d.text, &[a, b]), 4);
        assert_eq!(unique_words(&d.text, &[b, a, a]), 4);
        assert_eq!(unique_words(&d.text, &[]), 0);
    }

    #[test]
    fn chunk_text_is_slice() {
        let d = doc("The valve is closed. The valve is closed.");
        let c = Chunk::new(&d, 21, 41);
        assert_eq!(c.text(&d), "The valve is closed.");
        assert_eq!(c.words, 4);
        assert_eq!(c.id(), "d:21-41");
    }
}
