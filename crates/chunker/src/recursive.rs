//! Recursive splitting with LangChain's `RecursiveCharacterTextSplitter` semantics, reported
//! as exact byte spans.
//!
//! The algorithm is the one of langchain-text-splitters (pinned version in
//! `scripts/langchain_goldens.sh`), file `langchain_text_splitters/character.py`,
//! `RecursiveCharacterTextSplitter._split_text` and `_split_text_with_regex`, plus
//! `TextSplitter._merge_splits` / `_join_docs` in `base.py`:
//!
//! 1. Pick the first separator that occurs in the text (an empty separator always "occurs";
//!    if none occurs, the last one is used). The separators after it are kept for step 3.
//! 2. Split the text at every occurrence; with `keep_separator` = start (LangChain's `True`)
//!    each separator begins the following piece, with `end` it ends the preceding piece, with
//!    `false` it is dropped. An empty separator splits into single chars. Empty pieces are
//!    discarded.
//! 3. Pieces shorter than `chunk_size` (strictly `<`) are collected; a longer piece first
//!    flushes the collected ones through the merge step, then is split recursively with the
//!    remaining separators, or, if there are none, emitted unsplit as it is (it may be larger
//!    than `chunk_size`: counted in [`RecursiveStats::oversized`]).
//! 4. Merge: pieces are appended while the running total (piece sizes plus separator sizes;
//!    the separator is empty unless `keep_separator` is false) stays `<= chunk_size`; when
//!    the next piece does not fit, the current pieces become a chunk and pieces are dropped
//!    from the front while the total exceeds `chunk_overlap` (or the next piece still does
//!    not fit). With `strip_whitespace` each chunk is trimmed; a blank chunk is not emitted.
//!
//! Sizes are measured by a [`Sizer`]: chars (Unicode scalar values = Python `len`, the
//! LangChain default), model tokens (`from_huggingface_tokenizer`: token count without
//! special tokens), or words (not a LangChain preset; like `len(s.split())`).
//!
//! Offsets are computed structurally: every piece is a byte range of the input, so a chunk
//! is `text[start..end]` by construction (no `str.find` as in LangChain's `add_start_index`,
//! which can land on the wrong copy of a repeated passage, docs/reference.md case 18).
//!
//! # Differences from LangChain (all counted in [`RecursiveStats`])
//! * `keep_separator = false`: LangChain joins a chunk's pieces with the separator string,
//!   which collapses runs of separators and inserts a regex separator's *pattern* literally
//!   (docs/reference.md case 17). Here the chunk is the source text from its first to its last piece;
//!   chunks whose LangChain string differs are counted in
//!   [`RecursiveStats::joined_differs`]. [`RecursiveChunker::langchain_texts`] returns
//!   LangChain's strings.
//! * `strip_whitespace = true` trims every chunk, including pieces emitted unsplit, which
//!   LangChain leaves untrimmed; such a piece that is blank is dropped
//!   ([`RecursiveStats::trimmed_unsplit`]).
//! * A chunk that holds no word (only [`crate::is_word_separator`] characters: whitespace with
//!   `strip_whitespace = false`, zero-width spaces, which Python's `strip` keeps) is dropped and
//!   counted ([`RecursiveStats::dropped_blank`]); LangChain returns it, and it would fill a top-k
//!   slot with nothing. [`RecursiveChunker::langchain_texts`] still returns LangChain's list.
//! * A chunk contained in its neighbour (LangChain emits such chunks when overlap meets
//!   whitespace-only pieces) is dropped, so starts and ends strictly increase
//!   ([`RecursiveStats::dropped_contained`]).
//! * `chunk_overlap == chunk_size` is rejected (LangChain accepts it; docs/reference.md case 1).
//! * Regex separators use Rust `regex` syntax: look-around and back-references are rejected
//!   when the chunker is built, and so are capture groups (Python's `re.split` would return
//!   the captured text as extra pieces); use `(?:...)`. Empty matches are iterated like
//!   Python 3.7+ `re.split` (an empty match may follow a non-empty one; after an empty match
//!   the search moves on), except that Python can backtrack into a longer alternative at the
//!   position right after an empty match where this implementation moves one char on.
//! * "Whitespace" for trimming is Python's `str.isspace`: Unicode `White_Space` plus
//!   U+001C..U+001F ([`is_py_whitespace`]).

use crate::fixed::push_monotone_by;
use crate::units::{HfTokenizer, Sizer, Unit, UnknownUnit};
use crate::{Chunk, Document, Span};
use regex::Regex;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// LangChain's default separators for `RecursiveCharacterTextSplitter`: paragraph break,
/// line break, space, then single chars (docs/reference.md §5, "LangChain defaults").
pub const DEFAULT_SEPARATORS: [&str; 4] = ["\n\n", "\n", " ", ""];

/// Where a separator goes when text is split at it (LangChain's `keep_separator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeepSeparator {
    /// The separator begins the following piece (LangChain `True` / `"start"`, the default
    /// of `RecursiveCharacterTextSplitter`).
    #[default]
    Start,
    /// The separator ends the preceding piece (LangChain `"end"`).
    End,
    /// The separator is dropped and pieces are merged with the separator string between
    /// them (LangChain `False`); see the module docs for how spans differ.
    Discard,
}

impl KeepSeparator {
    /// LangChain's spelling: `start`, `end` or `false`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeepSeparator::Start => "start",
            KeepSeparator::End => "end",
            KeepSeparator::Discard => "false",
        }
    }
}

impl fmt::Display for KeepSeparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for KeepSeparator {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl FromStr for KeepSeparator {
    type Err = RecursiveError;

    /// Parses `start` or `true` (LangChain's `True`), `end`, `false` or `discard`.
    ///
    /// # Errors
    /// [`RecursiveError::UnknownKeepSeparator`] for anything else.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "start" | "true" => Ok(KeepSeparator::Start),
            "end" => Ok(KeepSeparator::End),
            "false" | "discard" => Ok(KeepSeparator::Discard),
            _ => Err(RecursiveError::UnknownKeepSeparator(s.to_string())),
        }
    }
}

/// Configuration errors of [`RecursiveChunker`], raised before any text is split. Each
/// message names the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecursiveError {
    /// `chunk_size` was 0.
    #[error("field `chunk_size` must be at least 1 (got 0)")]
    ZeroSize,
    /// `chunk_overlap` was not smaller than `chunk_size`.
    #[error(
        "field `chunk_overlap` ({chunk_overlap}) must be smaller than field `chunk_size` \
         ({chunk_size})"
    )]
    OverlapTooLarge {
        /// The configured chunk size.
        chunk_size: usize,
        /// The configured overlap.
        chunk_overlap: usize,
    },
    /// A regex separator does not compile or has a capture group.
    #[error("field `separators[{index}]`: `{pattern}` {reason}")]
    BadSeparator {
        /// Position in the separator list.
        index: usize,
        /// The pattern as given.
        pattern: String,
        /// Why it was rejected.
        reason: String,
    },
    /// `keep_separator` was not one of the accepted spellings.
    #[error(
        "field `keep_separator`: unknown value `{0}`; valid values are: start (= true), end, \
         false"
    )]
    UnknownKeepSeparator(String),
    /// The length unit is `tokens` but no tokenizer was given.
    #[error(
        "field `tokenizer`: length unit `tokens` needs a tokenizer.json \
         (run `chunkbench models fetch` for the default models)"
    )]
    MissingTokenizer,
    /// The unit string was not `words`, `chars` or `tokens`.
    #[error(transparent)]
    UnknownUnit(#[from] UnknownUnit),
}

/// Counters of one [`RecursiveChunker`] run (or several, summed with
/// [`RecursiveStats::add`]). Sizes are in the chunker's length unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RecursiveStats {
    /// Chunks returned.
    pub chunks: usize,
    /// Returned chunks larger than `chunk_size`: indivisible pieces (no separator left) that
    /// LangChain also emits, with its "Created a chunk of size ..." warning (docs/reference.md (cases)
    /// invariant 5).
    pub oversized: usize,
    /// Largest chunk size returned, as LangChain measures it (sum of piece sizes plus
    /// separator sizes).
    pub max_size: usize,
    /// Unsplit pieces that were trimmed (or dropped when blank) by `strip_whitespace`,
    /// which LangChain returns untrimmed.
    pub trimmed_unsplit: usize,
    /// Chunks dropped because they were contained in a neighbouring chunk.
    pub dropped_contained: usize,
    /// With `keep_separator = false`: chunks whose LangChain string (pieces joined with the
    /// separator) is not the returned source slice.
    pub joined_differs: usize,
    /// Chunks dropped because they hold only word separators ([`crate::is_word_separator`]:
    /// whitespace and zero-width spaces) and so no word: LangChain returns a chunk of zero-width
    /// spaces (Python's `strip` keeps them); such a chunk would fill a top-k slot with nothing.
    pub dropped_blank: usize,
}

impl RecursiveStats {
    /// Adds `other`'s counters to these (`max_size` takes the maximum).
    pub fn add(&mut self, other: &RecursiveStats) {
        self.chunks += other.chunks;
        self.oversized += other.oversized;
        self.max_size = self.max_size.max(other.max_size);
        self.trimmed_unsplit += other.trimmed_unsplit;
        self.dropped_contained += other.dropped_contained;
        self.joined_differs += other.joined_differs;
        self.dropped_blank += other.dropped_blank;
    }
}

/// True for the chars Python's `str.isspace()` accepts, which is what LangChain's
/// `str.strip()` removes: Unicode `White_Space` plus U+001C..U+001F.
pub fn is_py_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c)
}

#[derive(Debug, Clone)]
enum Matcher {
    /// The empty separator: split into single chars.
    Chars,
    /// A literal string (LangChain `re.escape`s it).
    Literal,
    /// A compiled regex separator.
    Regex(Regex),
}

#[derive(Debug, Clone)]
struct Separator {
    raw: String,
    matcher: Matcher,
}

impl Separator {
    fn new(index: usize, raw: String, is_regex: bool) -> Result<Self, RecursiveError> {
        let matcher = if raw.is_empty() {
            Matcher::Chars
        } else if !is_regex {
            Matcher::Literal
        } else {
            let bad = |reason: String| RecursiveError::BadSeparator {
                index,
                pattern: raw.clone(),
                reason,
            };
            let re = Regex::new(&raw).map_err(|e| {
                bad(format!(
                    "is not a supported regular expression (Rust `regex` syntax: no \
                     look-around, no back-references): {e}"
                ))
            })?;
            if re.captures_len() > 1 {
                return Err(bad(
                    "has a capture group; use a non-capturing group `(?:...)` \
                     (Python's re.split would return the captured text as extra pieces)"
                        .to_string(),
                ));
            }
            Matcher::Regex(re)
        };
        Ok(Separator { raw, matcher })
    }

    /// LangChain's `re.search(separator_, text)`.
    fn found_in(&self, hay: &str) -> bool {
        match &self.matcher {
            Matcher::Chars => true,
            Matcher::Literal => hay.contains(self.raw.as_str()),
            Matcher::Regex(re) => re.is_match(hay),
        }
    }

    /// Byte ranges of the matches in `hay`, in the order Python's `re.split` finds them.
    fn matches(&self, hay: &str) -> Vec<(usize, usize)> {
        match &self.matcher {
            Matcher::Chars => Vec::new(),
            Matcher::Literal => hay
                .match_indices(self.raw.as_str())
                .map(|(i, m)| (i, i + m.len()))
                .collect(),
            Matcher::Regex(re) => python_matches(re, hay),
        }
    }
}

/// Matches of `re` in `hay` with Python 3.7+ `re.split`/`re.finditer` rules: the search
/// resumes at the end of the previous match, an empty match may directly follow a
/// non-empty one, and after an empty match another empty match at the same position is
/// not allowed (the search moves one char on).
fn python_matches(re: &Regex, hay: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut must_advance = false;
    while pos <= hay.len() {
        let Some(mut m) = re.find_at(hay, pos) else {
            break;
        };
        if must_advance && m.start() == pos && m.end() == pos {
            let Some(c) = hay[pos..].chars().next() else {
                break;
            };
            match re.find_at(hay, pos + c.len_utf8()) {
                Some(next) => m = next,
                None => break,
            }
        }
        out.push((m.start(), m.end()));
        must_advance = m.start() == m.end();
        pos = m.end();
    }
    out
}

/// One chunk as LangChain emits it, before trimming and de-duplication.
struct RawChunk<'a> {
    /// First byte of the first piece.
    start: usize,
    /// One past the last byte of the last piece.
    end: usize,
    /// Size in the length unit, as LangChain's merge totals it.
    size: usize,
    /// Emitted by `final_chunks.append(s)` (not merged, not stripped by LangChain).
    unsplit: bool,
    /// With `keep_separator = false`: the pieces and the separator LangChain joins them
    /// with.
    join: Option<(Vec<Span>, &'a str)>,
}

/// A recursive chunker with LangChain `RecursiveCharacterTextSplitter` semantics (see the
/// module docs), built with fallible `with_*` methods:
///
/// ```
/// use chunker::{KeepSeparator, RecursiveChunker};
/// let rc = RecursiveChunker::new(20, 0)
///     .unwrap()
///     .with_separators(["\\. "], true)
///     .unwrap()
///     .with_keep_separator(KeepSeparator::End);
/// let text = "Apples are red. Bananas are yellow. Cherries are dark.";
/// let spans = rc.split_spans(text);
/// let texts: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
/// assert_eq!(texts, ["Apples are red.", "Bananas are yellow.", "Cherries are dark."]);
/// ```
///
/// Serializes as `{chunk_size, chunk_overlap, separators, is_separator_regex,
/// keep_separator, strip_whitespace, unit, tokenizer}` for run manifests.
#[derive(Debug, Clone)]
pub struct RecursiveChunker {
    chunk_size: usize,
    chunk_overlap: usize,
    separators: Vec<Separator>,
    is_separator_regex: bool,
    keep_separator: KeepSeparator,
    strip_whitespace: bool,
    sizer: Sizer,
}

impl Serialize for RecursiveChunker {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("RecursiveChunker", 8)?;
        st.serialize_field("chunk_size", &self.chunk_size)?;
        st.serialize_field("chunk_overlap", &self.chunk_overlap)?;
        st.serialize_field("separators", &self.separators())?;
        st.serialize_field("is_separator_regex", &self.is_separator_regex)?;
        st.serialize_field("keep_separator", &self.keep_separator)?;
        st.serialize_field("strip_whitespace", &self.strip_whitespace)?;
        st.serialize_field("unit", &self.sizer.unit())?;
        st.serialize_field("tokenizer", &self.sizer.tokenizer().map(|t| t.source()))?;
        st.end()
    }
}

impl RecursiveChunker {
    /// A chunker with LangChain's defaults except the sizes: separators
    /// [`DEFAULT_SEPARATORS`] (literal), `keep_separator` start, `strip_whitespace` true,
    /// length in chars. `chunk_size` and `chunk_overlap` are in the length unit.
    ///
    /// # Errors
    /// [`RecursiveError::ZeroSize`] or [`RecursiveError::OverlapTooLarge`]
    /// (`chunk_overlap >= chunk_size`).
    pub fn new(chunk_size: usize, chunk_overlap: usize) -> Result<Self, RecursiveError> {
        if chunk_size == 0 {
            return Err(RecursiveError::ZeroSize);
        }
        if chunk_overlap >= chunk_size {
            return Err(RecursiveError::OverlapTooLarge {
                chunk_size,
                chunk_overlap,
            });
        }
        Ok(RecursiveChunker {
            chunk_size,
            chunk_overlap,
            separators: DEFAULT_SEPARATORS
                .iter()
                .enumerate()
                .map(|(i, s)| Separator::new(i, (*s).to_string(), false))
                .collect::<Result<_, _>>()?,
            is_separator_regex: false,
            keep_separator: KeepSeparator::Start,
            strip_whitespace: true,
            sizer: Sizer::Chars,
        })
    }

    /// Replaces the separators, tried in order; with `is_regex` each is a Rust `regex`
    /// pattern (LangChain `is_separator_regex=True`), otherwise a literal string. An empty
    /// separator means "split into chars". An empty list means [`DEFAULT_SEPARATORS`]
    /// (LangChain: `separators or [...]`).
    ///
    /// # Errors
    /// [`RecursiveError::BadSeparator`] for a pattern that does not compile (look-around,
    /// back-references) or has a capture group.
    pub fn with_separators<I, S>(
        mut self,
        separators: I,
        is_regex: bool,
    ) -> Result<Self, RecursiveError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut raw: Vec<String> = separators.into_iter().map(Into::into).collect();
        if raw.is_empty() {
            raw = DEFAULT_SEPARATORS
                .iter()
                .map(|s| (*s).to_string())
                .collect();
        }
        self.separators = raw
            .into_iter()
            .enumerate()
            .map(|(i, s)| Separator::new(i, s, is_regex))
            .collect::<Result<_, _>>()?;
        self.is_separator_regex = is_regex;
        Ok(self)
    }

    /// Sets where separators go ([`KeepSeparator`]; LangChain default `Start`).
    pub fn with_keep_separator(mut self, keep: KeepSeparator) -> Self {
        self.keep_separator = keep;
        self
    }

    /// Sets whether chunks are trimmed of [`is_py_whitespace`] chars (LangChain default
    /// true). When false, whitespace-only chunks can be returned (with 0 words), as in
    /// LangChain.
    pub fn with_strip_whitespace(mut self, strip: bool) -> Self {
        self.strip_whitespace = strip;
        self
    }

    /// Measures length with `sizer` (chars by default).
    pub fn with_sizer(mut self, sizer: Sizer) -> Self {
        self.sizer = sizer;
        self
    }

    /// Measures length in tokens of `tokenizer` (LangChain `from_huggingface_tokenizer`).
    pub fn with_tokenizer(self, tokenizer: Arc<HfTokenizer>) -> Self {
        self.with_sizer(Sizer::Tokens(tokenizer))
    }

    /// Measures length in `unit`; `tokenizer` is required for [`Unit::Tokens`] and ignored
    /// otherwise.
    ///
    /// # Errors
    /// [`RecursiveError::MissingTokenizer`].
    pub fn with_unit(
        self,
        unit: Unit,
        tokenizer: Option<Arc<HfTokenizer>>,
    ) -> Result<Self, RecursiveError> {
        let sizer = Sizer::for_unit(unit, tokenizer).ok_or(RecursiveError::MissingTokenizer)?;
        Ok(self.with_sizer(sizer))
    }

    /// Maximum chunk size in the length unit.
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// Overlap target between consecutive merged chunks, in the length unit.
    pub fn chunk_overlap(&self) -> usize {
        self.chunk_overlap
    }

    /// The separators as given, in the order they are tried.
    pub fn separators(&self) -> Vec<&str> {
        self.separators.iter().map(|s| s.raw.as_str()).collect()
    }

    /// Whether separators are regex patterns.
    pub fn is_separator_regex(&self) -> bool {
        self.is_separator_regex
    }

    /// Where separators go.
    pub fn keep_separator(&self) -> KeepSeparator {
        self.keep_separator
    }

    /// Whether chunks are trimmed.
    pub fn strip_whitespace(&self) -> bool {
        self.strip_whitespace
    }

    /// What length means (unit and tokenizer).
    pub fn sizer(&self) -> &Sizer {
        &self.sizer
    }

    /// Chunks one document: [`RecursiveChunker::chunk_with_stats`] without the stats.
    pub fn chunk(&self, doc: &Document) -> Vec<Chunk> {
        self.chunk_with_stats(doc).0
    }

    /// Chunks one document. Chunks are in document order with strictly increasing starts
    /// and ends, never empty, and each is exactly `doc.text[start..end]`.
    pub fn chunk_with_stats(&self, doc: &Document) -> (Vec<Chunk>, RecursiveStats) {
        let (spans, stats) = self.split_spans_with_stats(&doc.text);
        let chunks = spans
            .into_iter()
            .map(|s| Chunk::new(doc, s.start, s.end))
            .collect();
        (chunks, stats)
    }

    /// Byte spans of the chunks of `text` (see [`RecursiveChunker::chunk_with_stats`]).
    pub fn split_spans(&self, text: &str) -> Vec<Span> {
        self.split_spans_with_stats(text).0
    }

    /// Byte spans of the chunks of `text` and the run's counters.
    pub fn split_spans_with_stats(&self, text: &str) -> (Vec<Span>, RecursiveStats) {
        let mut stats = RecursiveStats::default();
        let mut out: Vec<(Span, usize)> = Vec::new();
        for raw in self.raw_chunks(text) {
            let full = Span {
                start: raw.start,
                end: raw.end,
            };
            let span = if self.strip_whitespace {
                trim_span(text, full)
            } else {
                full
            };
            if let Some((pieces, sep)) = &raw.join {
                let lc = self.finish(join(text, pieces, sep));
                if lc != text[span.start..span.end] {
                    stats.joined_differs += 1;
                }
            }
            if raw.unsplit && span != full {
                stats.trimmed_unsplit += 1;
            }
            if span.is_empty() {
                continue;
            }
            if text[span.start..span.end]
                .chars()
                .all(crate::is_word_separator)
            {
                stats.dropped_blank += 1;
                continue;
            }
            stats.dropped_contained += push_monotone_by(&mut out, (span, raw.size), |x| x.0);
        }
        stats.chunks = out.len();
        stats.oversized = out.iter().filter(|x| x.1 > self.chunk_size).count();
        stats.max_size = out.iter().map(|x| x.1).max().unwrap_or(0);
        (out.into_iter().map(|x| x.0).collect(), stats)
    }

    /// The strings LangChain's `RecursiveCharacterTextSplitter.split_text` returns for
    /// `text` with this configuration: untrimmed unsplit pieces, separator-joined chunks for
    /// `keep_separator = false`, and chunks contained in their neighbours included. Used to
    /// check parity; use [`RecursiveChunker::split_spans`] for chunking.
    pub fn langchain_texts(&self, text: &str) -> Vec<String> {
        self.raw_chunks(text)
            .into_iter()
            .filter_map(|raw| {
                if raw.unsplit {
                    return Some(text[raw.start..raw.end].to_string());
                }
                let joined = match &raw.join {
                    Some((pieces, sep)) => join(text, pieces, sep),
                    None => text[raw.start..raw.end].to_string(),
                };
                let s = self.finish(joined);
                (!s.is_empty()).then_some(s)
            })
            .collect()
    }

    /// LangChain `_join_docs` after joining: strip when configured.
    fn finish(&self, s: String) -> String {
        if self.strip_whitespace {
            s.trim_matches(is_py_whitespace).to_string()
        } else {
            s
        }
    }

    fn raw_chunks<'a>(&'a self, text: &str) -> Vec<RawChunk<'a>> {
        let mut out = Vec::new();
        let all = Span {
            start: 0,
            end: text.len(),
        };
        self.split_rec(text, all, &self.separators, &mut out);
        out
    }

    /// `RecursiveCharacterTextSplitter._split_text` on `text[span]` with `separators`.
    fn split_rec<'a>(
        &'a self,
        text: &str,
        span: Span,
        separators: &'a [Separator],
        out: &mut Vec<RawChunk<'a>>,
    ) {
        let part = &text[span.start..span.end];
        // Choose the separator: the first one found (an empty one always matches); if none
        // is found, the last one, with nothing left to recurse with.
        let mut chosen = separators.len() - 1;
        let mut rest: &'a [Separator] = &[];
        for (i, s) in separators.iter().enumerate() {
            if s.raw.is_empty() {
                chosen = i;
                break;
            }
            if s.found_in(part) {
                chosen = i;
                rest = &separators[i + 1..];
                break;
            }
        }
        let sep = &separators[chosen];
        let merge_sep = (self.keep_separator == KeepSeparator::Discard).then_some(sep.raw.as_str());
        // Pieces shorter than chunk_size stream into the merge step (LangChain collects them
        // in `_good_splits` and merges them before the next long piece and at the end: the
        // same chunks in the same order), so no list of all pieces is kept.
        let mut merger = Merger::new(self, merge_sep);
        self.for_each_piece(part, sep, |piece| {
            let piece = Span {
                start: span.start + piece.start,
                end: span.start + piece.end,
            };
            let len = self.sizer.size(&text[piece.start..piece.end]);
            if len < self.chunk_size {
                merger.push(piece, len, out);
                return;
            }
            merger.flush(out);
            if rest.is_empty() {
                out.push(RawChunk {
                    start: piece.start,
                    end: piece.end,
                    size: len,
                    unsplit: true,
                    join: None,
                });
            } else {
                self.split_rec(text, piece, rest, out);
            }
        });
        merger.flush(out);
    }

    /// Calls `f` with each non-empty piece of `part` (spans relative to it), in order
    /// (`_split_text_with_regex`): the single chars for the empty separator, without building
    /// a list of them, else [`RecursiveChunker::pieces`].
    fn for_each_piece(&self, part: &str, sep: &Separator, mut f: impl FnMut(Span)) {
        if let Matcher::Chars = sep.matcher {
            for (i, c) in part.char_indices() {
                f(Span {
                    start: i,
                    end: i + c.len_utf8(),
                });
            }
            return;
        }
        for piece in self.pieces(part, sep) {
            f(piece);
        }
    }

    /// `_split_text_with_regex` for a non-empty separator: the non-empty pieces of `part`
    /// (spans relative to it). The empty separator is [`RecursiveChunker::for_each_piece`]'s.
    fn pieces(&self, part: &str, sep: &Separator) -> Vec<Span> {
        debug_assert!(!matches!(sep.matcher, Matcher::Chars));
        let matches = sep.matches(part);
        let n = part.len();
        let mut pieces = Vec::with_capacity(matches.len() + 1);
        match self.keep_separator {
            // [s0, d0+s1, d1+s2, ...]
            KeepSeparator::Start => {
                let mut start = 0;
                for &(ms, _) in &matches {
                    pieces.push(Span { start, end: ms });
                    start = ms;
                }
                pieces.push(Span { start, end: n });
            }
            // [s0+d0, s1+d1, ..., sk]
            KeepSeparator::End => {
                let mut start = 0;
                for &(_, me) in &matches {
                    pieces.push(Span { start, end: me });
                    start = me;
                }
                pieces.push(Span { start, end: n });
            }
            // [s0, s1, ..., sk]
            KeepSeparator::Discard => {
                let mut start = 0;
                for &(ms, me) in &matches {
                    pieces.push(Span { start, end: ms });
                    start = me;
                }
                pieces.push(Span { start, end: n });
            }
        }
        pieces.retain(|p| !p.is_empty());
        pieces
    }
}

/// `TextSplitter._merge_splits`, fed one piece at a time: merges consecutive pieces (with
/// their sizes) into chunks of at most `chunk_size`, keeping about `chunk_overlap` between
/// them. [`Merger::flush`] ends one `_merge_splits` call (emits the last chunk and starts
/// afresh). `sep` is the separator string LangChain inserts between pieces (`None` = empty
/// string).
struct Merger<'a, 'c> {
    chunker: &'c RecursiveChunker,
    sep: Option<&'a str>,
    sep_len: usize,
    cur: VecDeque<(Span, usize)>,
    total: usize,
}

impl<'a, 'c> Merger<'a, 'c> {
    fn new(chunker: &'c RecursiveChunker, sep: Option<&'a str>) -> Self {
        Merger {
            chunker,
            sep,
            sep_len: sep.map_or(0, |s| chunker.sizer.size(s)),
            cur: VecDeque::new(),
            total: 0,
        }
    }

    fn sep_if(&self, cond: bool) -> usize {
        if cond {
            self.sep_len
        } else {
            0
        }
    }

    /// One iteration of `_merge_splits`' loop.
    fn push(&mut self, piece: Span, len: usize, out: &mut Vec<RawChunk<'a>>) {
        let (size, overlap) = (self.chunker.chunk_size, self.chunker.chunk_overlap);
        if self.total + len + self.sep_if(!self.cur.is_empty()) > size && !self.cur.is_empty() {
            out.push(raw_merged(&self.cur, self.total, self.sep));
            while self.total > overlap
                || (self.total + len + self.sep_if(!self.cur.is_empty()) > size && self.total > 0)
            {
                let Some((_, first)) = self.cur.front().copied() else {
                    break;
                };
                self.total = self
                    .total
                    .saturating_sub(first + self.sep_if(self.cur.len() > 1));
                self.cur.pop_front();
            }
        }
        self.cur.push_back((piece, len));
        self.total += len + self.sep_if(self.cur.len() > 1);
    }

    /// The end of `_merge_splits`: emits the current chunk, if any, and starts afresh.
    fn flush(&mut self, out: &mut Vec<RawChunk<'a>>) {
        if !self.cur.is_empty() {
            out.push(raw_merged(&self.cur, self.total, self.sep));
            self.cur.clear();
        }
        self.total = 0;
    }
}

fn raw_merged<'a>(
    cur: &VecDeque<(Span, usize)>,
    total: usize,
    sep: Option<&'a str>,
) -> RawChunk<'a> {
    let start = cur.front().map_or(0, |p| p.0.start);
    let end = cur.back().map_or(0, |p| p.0.end);
    RawChunk {
        start,
        end,
        size: total,
        unsplit: false,
        join: sep.map(|s| (cur.iter().map(|p| p.0).collect(), s)),
    }
}

/// LangChain's `separator.join(docs)` for pieces of `text`.
fn join(text: &str, pieces: &[Span], sep: &str) -> String {
    let mut s = String::new();
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            s.push_str(sep);
        }
        s.push_str(&text[p.start..p.end]);
    }
    s
}

/// `span` without leading and trailing [`is_py_whitespace`] chars (empty if blank).
fn trim_span(text: &str, span: Span) -> Span {
    let s = &text[span.start..span.end];
    let lead = s.len() - s.trim_start_matches(is_py_whitespace).len();
    let t = s.trim_matches(is_py_whitespace);
    let start = span.start + lead;
    Span {
        start,
        end: start + t.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::test_tokenizer;
    use proptest::prelude::*;

    fn texts(rc: &RecursiveChunker, text: &str) -> Vec<String> {
        let (spans, _) = rc.split_spans_with_stats(text);
        spans
            .iter()
            .map(|s| text[s.start..s.end].to_string())
            .collect()
    }

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
    fn config_errors_name_the_field() {
        let e = RecursiveChunker::new(0, 0).unwrap_err();
        assert!(e.to_string().contains("`chunk_size`"), "{e}");
        let e = RecursiveChunker::new(10, 10).unwrap_err();
        assert!(e.to_string().contains("`chunk_overlap`"), "{e}");
        assert!(RecursiveChunker::new(10, 11).is_err());
        let rc = RecursiveChunker::new(10, 0).unwrap();
        let e = rc.clone().with_separators(["(?<=\\.) "], true).unwrap_err();
        assert!(e.to_string().contains("`separators[0]`"), "{e}");
        let e = rc
            .clone()
            .with_separators(["\n", "(\\.) "], true)
            .unwrap_err();
        assert!(e.to_string().contains("`separators[1]`") && e.to_string().contains("(?:"));
        // Literal separators are never compiled.
        assert!(rc.clone().with_separators(["(\\.) "], false).is_ok());
        let e = "both".parse::<KeepSeparator>().unwrap_err();
        assert!(e.to_string().contains("`keep_separator`"), "{e}");
        assert_eq!("true".parse::<KeepSeparator>(), Ok(KeepSeparator::Start));
        let e = rc.clone().with_unit(Unit::Tokens, None).unwrap_err();
        assert!(e.to_string().contains("`tokenizer`"), "{e}");
        let e: RecursiveError = "bytes".parse::<Unit>().unwrap_err().into();
        assert!(e.to_string().contains("`unit`"), "{e}");
    }

    /// Expected values from langchain-text-splitters 1.1.3 (see the parity test for more).
    #[test]
    fn langchain_small_examples() {
        let text = "Hello world.\n\nThis is a test of the splitter.\nIt works well enough.";
        let rc = RecursiveChunker::new(20, 5).unwrap();
        assert_eq!(
            texts(&rc, text),
            [
                "Hello world.",
                "This is a test of",
                "of the splitter.",
                "It works well",
                "well enough."
            ]
        );
        assert_eq!(rc.langchain_texts(text), texts(&rc, text));
    }

    #[test]
    fn case17_separator_placement() {
        let text = "Apples are red. Bananas are yellow. Cherries are dark.";
        let base = RecursiveChunker::new(20, 0).unwrap();
        let end = base
            .clone()
            .with_separators(["\\. "], true)
            .unwrap()
            .with_keep_separator(KeepSeparator::End);
        let (spans, stats) = end.split_spans_with_stats(text);
        let got: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(
            got,
            [
                "Apples are red.",
                "Bananas are yellow.",
                "Cherries are dark."
            ]
        );
        // LangChain leaves the unsplit 20-char piece "Bananas are yellow. " untrimmed.
        assert_eq!(
            end.langchain_texts(text),
            [
                "Apples are red.",
                "Bananas are yellow. ",
                "Cherries are dark."
            ]
        );
        assert_eq!(stats.trimmed_unsplit, 1);
        assert_eq!(stats.oversized, 0);
        // The same with the literal separator.
        let lit = end.clone().with_separators([". "], false).unwrap();
        assert_eq!(texts(&lit, text), got);
        // LangChain's default (keep = start) moves ". " to the next chunk; no period is
        // lost and no chunk text is invented, though.
        let start = end.clone().with_keep_separator(KeepSeparator::Start);
        assert_eq!(
            texts(&start, text),
            [
                "Apples are red",
                ". Bananas are yellow",
                ". Cherries are dark."
            ]
        );
        // keep = false: LangChain joins with the pattern `\. ` literally; spans never insert
        // anything (each chunk is a slice).
        let discard = end
            .clone()
            .with_keep_separator(KeepSeparator::Discard)
            .with_separators(["\\. "], true)
            .unwrap();
        let rc40 = RecursiveChunker::new(40, 0)
            .unwrap()
            .with_separators(["\\. "], true)
            .unwrap()
            .with_keep_separator(KeepSeparator::Discard);
        assert_eq!(
            rc40.langchain_texts(text),
            ["Apples are red\\. Bananas are yellow", "Cherries are dark."]
        );
        let (spans, stats) = rc40.split_spans_with_stats(text);
        let got: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(
            got,
            ["Apples are red. Bananas are yellow", "Cherries are dark."]
        );
        assert_eq!(stats.joined_differs, 1);
        for t in texts(&discard, text) {
            assert!(!t.contains('\\'));
        }
    }

    #[test]
    fn case19_offsets_round_trip() {
        let text =
            "Para one, line one.\n\n\n   Para two,  with   double  spaces.\tTabbed item.\n  Trailing line.   ";
        for strip in [true, false] {
            for keep in [
                KeepSeparator::Start,
                KeepSeparator::End,
                KeepSeparator::Discard,
            ] {
                let rc = RecursiveChunker::new(24, 6)
                    .unwrap()
                    .with_strip_whitespace(strip)
                    .with_keep_separator(keep);
                let d = doc(text);
                let chunks = rc.chunk(&d);
                assert!(!chunks.is_empty());
                for c in &chunks {
                    let t = c.text(&d);
                    assert_eq!(t, &text[c.span.start..c.span.end]);
                    if strip {
                        assert_eq!(t, t.trim(), "{keep:?}");
                    }
                    assert_eq!(c.words, crate::count_words(t));
                }
                if keep != KeepSeparator::Discard {
                    // LangChain's chunks but those without a word (dropped here, counted).
                    let lc: Vec<String> = rc
                        .langchain_texts(text)
                        .into_iter()
                        .filter(|t| !t.chars().all(crate::is_word_separator))
                        .collect();
                    assert_eq!(lc, texts(&rc, text), "{keep:?} {strip}");
                }
            }
        }
        let rc = RecursiveChunker::new(24, 0).unwrap();
        assert_eq!(
            texts(&rc, text),
            [
                "Para one, line one.",
                "Para two,  with",
                "double  spaces.\tTabbed",
                "item.",
                "Trailing line."
            ]
        );
    }

    #[test]
    fn case22_crlf_boundaries_match_lf() {
        let crlf = "Para one line.\r\n\r\nPara two line.\r\nsame para.\r\n\r\nPara three.";
        let lf = crlf.replace("\r\n", "\n");
        let cr = "A first.\rB second.\rC third.";
        for (size, seps) in [
            (20, vec!["\r\n\r\n", "\n\n", "\r\n", "\n", "\r", " ", ""]),
            (30, vec!["\r\n\r\n", "\n\n", "\r\n", "\n", "\r", " ", ""]),
        ] {
            for keep in [KeepSeparator::Start, KeepSeparator::End] {
                let rc = RecursiveChunker::new(size, 0)
                    .unwrap()
                    .with_separators(seps.clone(), false)
                    .unwrap()
                    .with_keep_separator(keep);
                let a = texts(&rc, crlf);
                let b = texts(&rc, &lf);
                let norm: Vec<String> = a.iter().map(|t| t.replace("\r\n", "\n")).collect();
                assert_eq!(norm, b, "{size} {keep:?}");
                for t in &a {
                    assert!(!t.ends_with('\r') && !t.starts_with('\n'), "{t:?}");
                }
                let words: Vec<usize> = a.iter().map(|t| crate::count_words(t)).collect();
                let words_lf: Vec<usize> = b.iter().map(|t| crate::count_words(t)).collect();
                assert_eq!(words, words_lf);
                let c = texts(&rc, cr);
                assert_eq!(c.iter().map(|t| crate::count_words(t)).sum::<usize>(), 6);
            }
        }
        // LangChain's default separators know only "\n": with strip (the default) the "\r"
        // is trimmed away from chunk edges, so no chunk ends in a stray "\r" either.
        let rc = RecursiveChunker::new(20, 0).unwrap();
        for t in texts(&rc, crlf) {
            assert!(!t.ends_with('\r') && !t.starts_with('\n'), "{t:?}");
        }
        assert_eq!(
            texts(&rc, crlf)
                .iter()
                .map(|t| t.replace("\r\n", "\n"))
                .collect::<Vec<_>>(),
            texts(&rc, &lf)
        );
    }

    #[test]
    fn case24_token_overlap_with_one_long_line() {
        let text = "x".repeat(8000)
            + "\n"
            + &(0..300)
                .map(|i| format!("line {i} of normal text here\n"))
                .collect::<String>();
        let rc = RecursiveChunker::new(400, 50)
            .unwrap()
            .with_tokenizer(test_tokenizer());
        let (spans, stats) = rc.split_spans_with_stats(&text);
        for w in spans.windows(2) {
            assert!(w[1].end > w[0].end && w[1].start > w[0].start);
        }
        let long = spans.iter().filter(|s| s.start < 8000).count();
        assert!((1..=2).contains(&long), "{long}");
        // WordPiece turns the 8000-char word (over 100 chars) into a single [UNK] token, so
        // the long line fits and nothing is oversized.
        assert_eq!(stats.oversized, 0);
        assert_eq!(rc.langchain_texts(&text).len(), spans.len());
    }

    #[test]
    fn oversized_pieces_are_counted() {
        let text = "short words here ".to_string() + &"y".repeat(50) + " tail";
        let rc = RecursiveChunker::new(10, 0)
            .unwrap()
            .with_separators([" "], false)
            .unwrap();
        let (spans, stats) = rc.split_spans_with_stats(&text);
        assert_eq!(stats.oversized, 1);
        assert_eq!(stats.max_size, 51);
        assert!(spans.iter().any(|s| s.len() >= 50));
    }

    #[test]
    fn case3_blank_documents() {
        let rc = RecursiveChunker::new(10, 2).unwrap();
        for t in ["", "   \n\t  ", "\r\n\r\n", "\u{00A0}\u{2028} "] {
            assert!(rc.split_spans(t).is_empty(), "{t:?}");
        }
        // U+200B and U+FEFF are not Python whitespace: LangChain keeps them as a chunk. It
        // holds no word, so it is dropped here (issue 36 case 8) and counted.
        assert!(rc.split_spans("\u{200B}\u{FEFF}").is_empty());
        assert_eq!(
            rc.split_spans_with_stats("\u{200B}\u{FEFF}")
                .1
                .dropped_blank,
            1
        );
        assert_eq!(
            texts(&rc, "Pumps hum. Valves click."),
            ["Pumps hum.", "Valves", "click."]
        );
    }

    #[test]
    fn case11_and_12_multibyte() {
        let tok = test_tokenizer();
        let inputs = [
            "…".repeat(2000),
            "é".repeat(1000),
            "日本語のテキスト".repeat(300),
            "👩‍👩‍👧‍👦".repeat(100),
            "aé😀".repeat(500),
            "x".repeat(9) + "😀" + &"y".repeat(20),
            "Grüße aus Köln, schöne Übergänge über Flüsse.".repeat(20),
            "🚀".into(),
            "가방".repeat(50),
            "猫と犬。".repeat(100),
        ];
        let chars = RecursiveChunker::new(7, 3).unwrap();
        let tokens = RecursiveChunker::new(5, 1)
            .unwrap()
            .with_tokenizer(tok.clone());
        let tokens1 = RecursiveChunker::new(1, 0).unwrap().with_tokenizer(tok);
        for t in &inputs {
            for rc in [&chars, &tokens, &tokens1] {
                let (spans, _) = rc.split_spans_with_stats(t);
                assert!(!spans.is_empty());
                let lc = rc.langchain_texts(t);
                for s in &spans {
                    let c = &t[s.start..s.end];
                    assert!(!c.is_empty() && !c.contains('\u{FFFD}'));
                }
                assert!(lc.iter().all(|c| !c.is_empty()));
            }
        }
    }

    #[test]
    fn python_regex_empty_match_rules() {
        // Values from Python 3.11: [m.span() for m in re.finditer(p, s)]
        type Matches = &'static [(usize, usize)];
        let cases: [(&str, &str, Matches); 4] = [
            ("x*", "axxb", &[(0, 0), (1, 3), (3, 3), (4, 4)]),
            ("\\b", "ab cd", &[(0, 0), (2, 2), (3, 3), (5, 5)]),
            ("", "abc", &[(0, 0), (1, 1), (2, 2), (3, 3)]),
            ("\\s*", "a  b", &[(0, 0), (1, 3), (3, 3), (4, 4)]),
        ];
        for (p, s, want) in cases {
            let re = Regex::new(p).unwrap();
            assert_eq!(python_matches(&re, s), want, "{p:?} on {s:?}");
        }
    }

    #[test]
    fn repeated_text_gets_distinct_offsets() {
        // docs/reference.md case 18: structurally computed offsets, not str.find.
        let text = "The valve is closed. ".repeat(8);
        let rc = RecursiveChunker::new(42, 0)
            .unwrap()
            .with_separators([". "], false)
            .unwrap()
            .with_keep_separator(KeepSeparator::End);
        let starts: Vec<usize> = rc.split_spans(&text).iter().map(|s| s.start).collect();
        assert_eq!(starts, [0, 42, 84, 126]);
        let rc = RecursiveChunker::new(512, 64).unwrap();
        let a = "a".repeat(2000);
        let spans = rc.split_spans(&a);
        for w in spans.windows(2) {
            assert!(w[1].start > w[0].start && w[1].end > w[0].end);
        }
    }

    /// Invariants 1, 2, 4 (and 3 with overlap 0) of docs/reference.md (cases) for one chunker and text.
    fn check(rc: &RecursiveChunker, text: &str) -> Result<(), TestCaseError> {
        let d = doc(text);
        let (chunks, stats) = rc.chunk_with_stats(&d);
        let mut prev: Option<Span> = None;
        for c in &chunks {
            let t = c.text(&d);
            prop_assert!(!t.is_empty());
            prop_assert!(text.is_char_boundary(c.span.start) && text.is_char_boundary(c.span.end));
            if rc.strip_whitespace() {
                prop_assert!(!t.chars().all(is_py_whitespace));
            }
            if let Some(p) = prev {
                prop_assert!(
                    c.span.start > p.start && c.span.end > p.end,
                    "{:?} then {:?}",
                    p,
                    c.span
                );
            }
            prev = Some(c.span);
        }
        prop_assert_eq!(stats.chunks, chunks.len());
        let lc = rc.langchain_texts(text);
        prop_assert!(lc.iter().all(|s| !s.is_empty()));
        if rc.keep_separator() != KeepSeparator::Discard {
            // Every LangChain string is a chunk (modulo trimming of unsplit pieces) or was
            // contained in one.
            prop_assert!(lc.len() >= chunks.len());
            if stats.dropped_contained == 0
                && stats.trimmed_unsplit == 0
                && stats.dropped_blank == 0
            {
                let ours: Vec<&str> = chunks.iter().map(|c| c.text(&d)).collect();
                prop_assert_eq!(lc, ours);
            }
        }
        if rc.chunk_overlap() == 0 {
            // 3. coverage: disjoint chunks; only whitespace (strip) or discarded separators
            // lie between them.
            let mut covered = 0;
            for c in &chunks {
                if c.span.start < covered {
                    // Overlap 0 is measured in the length unit: in tokens, pieces of 0
                    // tokens (whitespace, chars the normalizer drops) can be shared.
                    let shared = &text[c.span.start..covered];
                    prop_assert_eq!(rc.sizer().size(shared), 0, "shared {:?}", shared);
                } else if rc.keep_separator() != KeepSeparator::Discard {
                    let gap = &text[covered..c.span.start];
                    prop_assert!(
                        gap.chars()
                            .all(|c| is_py_whitespace(c) || crate::is_word_separator(c)),
                        "gap {:?}",
                        gap
                    );
                }
                covered = c.span.end;
            }
            if rc.keep_separator() != KeepSeparator::Discard {
                prop_assert!(text[covered..]
                    .chars()
                    .all(|c| is_py_whitespace(c) || crate::is_word_separator(c)));
            }
        }
        Ok(())
    }

    fn keep_strategy() -> impl Strategy<Value = KeepSeparator> {
        prop::sample::select(vec![
            KeepSeparator::Start,
            KeepSeparator::End,
            KeepSeparator::Discard,
        ])
    }

    /// Issue 36 case 8: a chunk of zero-width spaces (no word) was emitted.
    #[test]
    fn chunks_without_a_word_are_dropped_and_counted() {
        let text = "alpha beta\n\n\u{200B}\u{200B}\u{FEFF}\n\ngamma delta";
        let rc = RecursiveChunker::new(12, 0).unwrap();
        let (spans, stats) = rc.split_spans_with_stats(text);
        assert!(
            spans
                .iter()
                .all(|s| crate::count_words(&text[s.start..s.end]) > 0),
            "{spans:?}"
        );
        assert_eq!(stats.dropped_blank, 1, "{stats:?}");
        let joined: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(joined, ["alpha beta", "gamma delta"]);
    }

    /// Found by the `chunkers` fuzz target: the trim strips Python whitespace, which includes
    /// U+001C..U+001F, so a trailing U+001D was in no chunk while the word count called it a
    /// word's character. Words are now separated by Python whitespace too.
    #[test]
    fn what_the_trim_strips_is_never_a_word() {
        let text = "   \0\0\0\u{1D}\n\t  ab\u{1C}cd\u{1F}";
        assert_eq!(crate::count_words(text), 3);
        for c in '\u{1C}'..='\u{1F}' {
            assert!(crate::is_word_separator(c), "{c:?}");
        }
        let rc = RecursiveChunker::new(8, 2).unwrap();
        let spans = rc.split_spans(text);
        for (i, c) in text.char_indices() {
            if !crate::is_word_separator(c) {
                assert!(
                    spans.iter().any(|s| s.start <= i && i < s.end),
                    "{c:?} at {i} in no chunk: {spans:?}"
                );
            }
        }
    }

    #[test]
    fn zero_token_chars_may_be_shared_with_overlap_0() {
        // Found by `invariants_tokens`: U+0591 (a combining mark) is 0 MiniLM tokens, so
        // LangChain's merge keeps it in the next chunk although the overlap is 0.
        let text = "\u{11d3c}Aa𑶠®0aΣ𑌲0Σ0𐂀!¡ׯa𮯰A0A!0aaA!𝑖!AAa𑼾A𑎋a\u{591}!";
        for keep in [KeepSeparator::Start, KeepSeparator::End] {
            let rc = RecursiveChunker::new(2, 0)
                .unwrap()
                .with_tokenizer(test_tokenizer())
                .with_keep_separator(keep)
                .with_strip_whitespace(false);
            check(&rc, text).unwrap();
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 128,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn invariants_chars(
            text in "\\PC{0,300}|[a-zé日本語😀👩‍ \u{200B}\n\r\t.,]{0,300}",
            size in 1usize..40,
            ov in 0usize..39,
            keep in keep_strategy(),
            strip in any::<bool>(),
            regex in any::<bool>(),
        ) {
            let ov = ov % size;
            let seps: Vec<&str> = if regex {
                vec!["\\n\\s*\\n", "\\n", "[.!?]\\s+", "\\s*", ""]
            } else {
                DEFAULT_SEPARATORS.to_vec()
            };
            let rc = RecursiveChunker::new(size, ov)
                .unwrap()
                .with_separators(seps, regex)
                .unwrap()
                .with_keep_separator(keep)
                .with_strip_whitespace(strip);
            check(&rc, &text)?;
        }

        #[test]
        fn invariants_tokens(
            text in "\\PC{0,150}|[a-zé日本語😀👩‍ \u{200B}\n\r\t.,]{0,150}",
            size in 1usize..16,
            ov in 0usize..15,
            keep in keep_strategy(),
            strip in any::<bool>(),
        ) {
            let ov = ov % size;
            let rc = RecursiveChunker::new(size, ov)
                .unwrap()
                .with_tokenizer(test_tokenizer())
                .with_keep_separator(keep)
                .with_strip_whitespace(strip);
            check(&rc, &text)?;
        }
    }
}
