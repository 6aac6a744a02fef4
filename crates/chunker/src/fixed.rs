//! Fixed-size chunking with overlap, in words, chars or model tokens.
//!
//! The text is cut into units ([`Sizer::unit_spans`]: words, Unicode scalar values, or the
//! tokens of a Hugging Face tokenizer, located through its offset mappings). Windows of
//! `size` units start every `size - overlap` units; the last window is the first one that
//! reaches the document's last unit, so no text is dropped and no window is a subset of its
//! predecessor (docs/reference.md, cases 1 and 24). Each chunk spans from the first
//! byte of its first unit to the last byte of its last unit:
//!
//! * words: whitespace between chunks (and at the document's edges) is not covered;
//! * chars: windows are exact, so with overlap 0 the chunks concatenate to the document,
//!   except that windows made only of word separators (whitespace, U+200B, U+2060, U+FEFF;
//!   [`crate::is_word_separator`]) are dropped (docs/reference.md case 3: blank text gives no chunk);
//! * tokens: text the tokenizer ignores (whitespace, control characters, chars its
//!   normalizer removes) may fall between chunks; token spans are snapped outwards to char
//!   boundaries, so a chunk never splits a character (case 12). A window may end between
//!   two word pieces of one word.
//!
//! This is the `fixed` strategy of docs/reference.md §1. The [`FixedConfig::bhat`] preset
//! reproduces the fixed token chunks of Bhat et al. 2025 (docs/reference.md §5), the kind LlamaIndex's
//! `TokenTextSplitter` produces (`llama_index/core/node_parser/text/token.py`). That splitter
//! first splits on a separator (`" "`, backups `"\n"`) and merges the words up to the token
//! budget, so it never cuts inside a word; these windows cut at exact token boundaries and
//! hold exactly `size` tokens (except the last).

use crate::units::{HfTokenizer, Sizer, Unit, UnknownUnit};
use crate::{is_word_separator, Chunk, Document, Span};
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::sync::Arc;

/// Token window sizes of the `bhat` preset (Bhat et al. 2025, arXiv 2505.21700; docs/reference.md
/// §5): 64, 128, 256, 512 and 1024 tokens, no overlap.
pub const BHAT_TOKEN_SIZES: [usize; 5] = [64, 128, 256, 512, 1024];

/// Parent size of the `ear-parent` preset in words (EAR, arXiv 2609.12268; docs/reference.md §5).
pub const EAR_PARENT_WORDS: usize = 260;

/// Overlap of the `ear-parent` preset in words.
pub const EAR_PARENT_OVERLAP_WORDS: usize = 60;

/// Configuration errors of the fixed-size chunker, raised before any work is done. Each
/// message names the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FixedError {
    /// `size` was 0.
    #[error("field `size` must be at least 1 (got 0)")]
    ZeroSize,
    /// `overlap` was not smaller than `size`.
    #[error(
        "field `overlap` ({overlap}) must be smaller than field `size` ({size}); \
         a window would never advance"
    )]
    OverlapTooLarge {
        /// The configured size in units.
        size: usize,
        /// The configured overlap in units.
        overlap: usize,
    },
    /// The unit is `tokens` but no tokenizer was given.
    #[error(
        "field `tokenizer`: unit `tokens` needs a tokenizer.json \
         (run `chunkbench models fetch` for the default models)"
    )]
    MissingTokenizer,
    /// The `bhat` preset was asked for a size outside [`BHAT_TOKEN_SIZES`].
    #[error("field `size`: the `bhat` preset has sizes 64, 128, 256, 512, 1024 tokens (got {0})")]
    NotABhatSize(usize),
    /// The unit string was not `words`, `chars` or `tokens`.
    #[error(transparent)]
    UnknownUnit(#[from] UnknownUnit),
}

/// A validated fixed-size chunker: windows of `size` units, `overlap` units shared by
/// consecutive windows, the unit being words, chars (Unicode scalar values) or tokens
/// ([`Sizer`]). Every value of this type can chunk: a tokens config holds its tokenizer.
///
/// Serializes as `{size, overlap, unit, tokenizer}` (`tokenizer` = the tokenizer's
/// [`HfTokenizer::source`] or `null`), for run manifests.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedConfig {
    size: usize,
    overlap: usize,
    sizer: Sizer,
}

impl Serialize for FixedConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("FixedConfig", 4)?;
        st.serialize_field("size", &self.size)?;
        st.serialize_field("overlap", &self.overlap)?;
        st.serialize_field("unit", &self.sizer.unit())?;
        st.serialize_field("tokenizer", &self.sizer.tokenizer().map(|t| t.source()))?;
        st.end()
    }
}

impl FixedConfig {
    /// Word windows: validates `size >= 1` and `overlap < size` (both in words).
    ///
    /// # Errors
    /// [`FixedError::ZeroSize`] or [`FixedError::OverlapTooLarge`], naming the field.
    pub fn new(size: usize, overlap: usize) -> Result<Self, FixedError> {
        Self::with_sizer(size, overlap, Sizer::Words)
    }

    /// Char windows (Unicode scalar values): same validation as [`FixedConfig::new`].
    ///
    /// # Errors
    /// [`FixedError::ZeroSize`] or [`FixedError::OverlapTooLarge`].
    pub fn chars(size: usize, overlap: usize) -> Result<Self, FixedError> {
        Self::with_sizer(size, overlap, Sizer::Chars)
    }

    /// Token windows of `tokenizer` (special tokens excluded, its truncation and padding
    /// disabled): same validation as [`FixedConfig::new`].
    ///
    /// # Errors
    /// [`FixedError::ZeroSize`] or [`FixedError::OverlapTooLarge`].
    pub fn tokens(
        size: usize,
        overlap: usize,
        tokenizer: Arc<HfTokenizer>,
    ) -> Result<Self, FixedError> {
        Self::with_sizer(size, overlap, Sizer::Tokens(tokenizer))
    }

    /// Windows in `unit`; `tokenizer` is required for [`Unit::Tokens`] and ignored for the
    /// other units. Parse the unit with `str::parse::<Unit>()` (its error lists the valid
    /// values and converts into [`FixedError::UnknownUnit`]).
    ///
    /// # Errors
    /// [`FixedError::ZeroSize`], [`FixedError::OverlapTooLarge`] or
    /// [`FixedError::MissingTokenizer`].
    pub fn with_unit(
        size: usize,
        overlap: usize,
        unit: Unit,
        tokenizer: Option<Arc<HfTokenizer>>,
    ) -> Result<Self, FixedError> {
        let sizer = Sizer::for_unit(unit, tokenizer).ok_or(FixedError::MissingTokenizer)?;
        Self::with_sizer(size, overlap, sizer)
    }

    /// Windows of `size` units of `sizer`, `overlap` units shared.
    ///
    /// # Errors
    /// [`FixedError::ZeroSize`] or [`FixedError::OverlapTooLarge`].
    pub fn with_sizer(size: usize, overlap: usize, sizer: Sizer) -> Result<Self, FixedError> {
        if size == 0 {
            return Err(FixedError::ZeroSize);
        }
        if overlap >= size {
            return Err(FixedError::OverlapTooLarge { size, overlap });
        }
        Ok(FixedConfig {
            size,
            overlap,
            sizer,
        })
    }

    /// The `bhat` preset: `size` tokens (one of [`BHAT_TOKEN_SIZES`]), no overlap.
    ///
    /// # Errors
    /// [`FixedError::NotABhatSize`] for any other size.
    pub fn bhat(size: usize, tokenizer: Arc<HfTokenizer>) -> Result<Self, FixedError> {
        if !BHAT_TOKEN_SIZES.contains(&size) {
            return Err(FixedError::NotABhatSize(size));
        }
        Self::tokens(size, 0, tokenizer)
    }

    /// All five `bhat` configs, smallest first.
    pub fn bhat_all(tokenizer: &Arc<HfTokenizer>) -> Vec<Self> {
        BHAT_TOKEN_SIZES
            .iter()
            .map(|&size| FixedConfig {
                size,
                overlap: 0,
                sizer: Sizer::Tokens(Arc::clone(tokenizer)),
            })
            .collect()
    }

    /// The `ear-parent` preset: parents of [`EAR_PARENT_WORDS`] (260) words with
    /// [`EAR_PARENT_OVERLAP_WORDS`] (60) words of overlap.
    pub fn ear_parent() -> Self {
        FixedConfig {
            size: EAR_PARENT_WORDS,
            overlap: EAR_PARENT_OVERLAP_WORDS,
            sizer: Sizer::Words,
        }
    }

    /// Window size in units.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Units shared by consecutive windows.
    pub fn overlap(&self) -> usize {
        self.overlap
    }

    /// The unit of `size` and `overlap`.
    pub fn unit(&self) -> Unit {
        self.sizer.unit()
    }

    /// What size means for this config (unit and tokenizer).
    pub fn sizer(&self) -> &Sizer {
        &self.sizer
    }

    /// Chunks one document. A document without units (or, for chars and tokens, with only
    /// whitespace) yields no chunks.
    ///
    /// Output: chunks in document order with strictly increasing starts and ends; each has
    /// at most `size` units, and exactly `size` except possibly the last (for chars, a
    /// dropped all-whitespace window is not counted).
    pub fn chunk(&self, doc: &Document) -> Vec<Chunk> {
        self.chunk_spans(&doc.text)
            .into_iter()
            .map(|s| Chunk::new(doc, s.start, s.end))
            .collect()
    }

    /// The byte spans [`FixedConfig::chunk`] would return for `text`.
    pub fn chunk_spans(&self, text: &str) -> Vec<Span> {
        if let Sizer::Chars = self.sizer {
            return self.char_window_spans(text);
        }
        let mut spans = self.unit_window_spans(text, &self.sizer.unit_spans(text));
        cover_gaps(text, &mut spans);
        spans
    }

    /// Windows of `size` of the unit spans `units` of `text`, every `size - overlap` units.
    fn unit_window_spans(&self, text: &str, units: &[Span]) -> Vec<Span> {
        let n = units.len();
        let stride = self.size - self.overlap;
        let mut spans: Vec<Span> = Vec::with_capacity(n / stride + 1);
        // Running maximum of unit ends, so window ends never decrease even if a tokenizer
        // reports overlapping offsets.
        let mut max_end = Vec::with_capacity(n);
        let mut m = 0;
        for u in units {
            m = m.max(u.end);
            max_end.push(m);
        }
        let mut first = 0;
        while first < n {
            let last = (first + self.size).min(n);
            let span = Span {
                start: units[first].start,
                end: max_end[last - 1],
            };
            let blank = text[span.start..span.end].chars().all(is_word_separator);
            if !blank {
                push_monotone_by(&mut spans, span, |s| *s);
            }
            if last == n {
                break;
            }
            first += stride;
        }
        spans
    }

    /// [`FixedConfig::chunk_spans`] for chars without a span per char: windows are found by
    /// two cursors walking the text's bytes (window starts and window ends both advance by
    /// `size - overlap` chars, the ends `size` chars ahead), so the text is read once, in
    /// linear time, and memory is the output's only.
    fn char_window_spans(&self, text: &str) -> Vec<Span> {
        let stride = self.size - self.overlap;
        let mut spans: Vec<Span> = Vec::new();
        let mut starts = CharCursor::new(text);
        let mut ends = CharCursor::new(text);
        // First non-separator byte at or after the last window start that needed a scan
        // (text.len() if there is none; None before the first window): a window is blank
        // iff it ends at or before it. Starts only grow, so the scans never revisit text and
        // stay linear even with large overlaps.
        let mut next_text = None;
        let mut first = 0;
        while !text.is_empty() {
            // `first` is always a char of the text: the previous window did not reach the
            // end, and it was `size > stride` chars long.
            let span = Span {
                start: starts.byte_of(first),
                end: ends.byte_of(first.saturating_add(self.size)),
            };
            let next = match next_text {
                Some(b) if b >= span.start => b,
                _ => text[span.start..]
                    .find(|c: char| !is_word_separator(c))
                    .map_or(text.len(), |i| span.start + i),
            };
            next_text = Some(next);
            if next < span.end {
                push_monotone_by(&mut spans, span, |s| *s);
            }
            if span.end == text.len() {
                break;
            }
            first += stride;
        }
        spans
    }
}

/// Widens `spans` (sorted, with strictly increasing starts and ends) so that every
/// non-separator character of `text` ([`is_word_separator`]) lies in some span: text before
/// the first span, between two spans or after the last that is not separators alone joins
/// the span before it (the first span reaches back for text before it), up to its last
/// non-separator character. Windows of tokenizer tokens need this: a tokenizer drops control
/// characters, zero-width and other characters it has no token for (BERT's normaliser), and
/// a window from the first token's start to the last token's end left such text, at the end of
/// a document or between two windows, in no chunk. Units that cover every non-separator
/// character (words) are unchanged; no token is added to any span.
/// A text with non-separator characters but no unit at all (only characters the tokenizer
/// drops) becomes one span over them.
pub(crate) fn cover_gaps(text: &str, spans: &mut Vec<Span>) {
    if spans.is_empty() {
        let start = text.find(|c: char| !is_word_separator(c));
        let end = text.rfind(|c: char| !is_word_separator(c));
        if let (Some(start), Some(end)) = (start, end) {
            let last = text[end..].chars().next().map_or(0, char::len_utf8);
            spans.push(Span {
                start,
                end: end + last,
            });
        }
        return;
    }
    let first = &mut spans[0];
    if let Some(lead) = text[..first.start].find(|c: char| !is_word_separator(c)) {
        first.start = lead;
    }
    for i in 0..spans.len() {
        let gap_end = spans.get(i + 1).map_or(text.len(), |s| s.start);
        let from = spans[i].end;
        if from >= gap_end {
            continue;
        }
        if let Some((j, c)) = text[from..gap_end]
            .char_indices()
            .rev()
            .find(|&(_, c)| !is_word_separator(c))
        {
            spans[i].end = from + j + c.len_utf8();
        }
    }
}

/// Maps increasing char indices of a text to byte offsets in one forward pass.
struct CharCursor<'a> {
    bytes: &'a [u8],
    byte: usize,
    chr: usize,
}

impl<'a> CharCursor<'a> {
    fn new(text: &'a str) -> Self {
        CharCursor {
            bytes: text.as_bytes(),
            byte: 0,
            chr: 0,
        }
    }

    /// Byte offset of char `index`, or the text's length if the text has at most `index`
    /// chars; `index` must not be smaller than the previous call's.
    fn byte_of(&mut self, index: usize) -> usize {
        debug_assert!(index >= self.chr || self.byte == self.bytes.len());
        while self.chr < index && self.byte < self.bytes.len() {
            // Skip one char: its lead byte, then its continuation bytes (0b10xx_xxxx).
            self.byte += 1;
            while self.byte < self.bytes.len() && (self.bytes[self.byte] & 0xC0) == 0x80 {
                self.byte += 1;
            }
            self.chr += 1;
        }
        self.byte
    }
}

/// Appends `item` (whose span is `span(&item)`) keeping starts and ends strictly
/// increasing, given spans whose starts and ends never decrease: an item contained in the
/// last one is skipped, and last items contained in it are removed. Returns the number of
/// items skipped or removed.
pub(crate) fn push_monotone_by<T>(items: &mut Vec<T>, item: T, span: impl Fn(&T) -> Span) -> usize {
    let s = span(&item);
    if let Some(last) = items.last().map(&span) {
        if s.start >= last.start && s.end <= last.end {
            return 1;
        }
    }
    let mut removed = 0;
    while let Some(last) = items.last().map(&span) {
        if last.start >= s.start && last.end <= s.end {
            items.pop();
            removed += 1;
        } else {
            break;
        }
    }
    items.push(item);
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::test_tokenizer;
    use proptest::prelude::*;

    fn doc(text: &str) -> Document {
        Document {
            id: "d".into(),
            title: String::new(),
            text: text.into(),
            source: String::new(),
            license: String::new(),
        }
    }

    const TEN: &str = "alpha beta gamma delta epsilon zeta eta theta iota kappa";

    #[test]
    fn case1_rejects_bad_configs() {
        assert_eq!(
            FixedConfig::new(4, 4),
            Err(FixedError::OverlapTooLarge {
                size: 4,
                overlap: 4
            })
        );
        assert!(FixedConfig::new(4, 5).is_err());
        assert_eq!(FixedConfig::new(0, 0), Err(FixedError::ZeroSize));
        assert!(FixedConfig::new(4, 5)
            .unwrap_err()
            .to_string()
            .contains("`overlap`"));
    }

    #[test]
    fn config_errors_name_the_field_for_every_unit() {
        let tok = test_tokenizer();
        for unit in Unit::ALL {
            let t = Some(Arc::clone(&tok));
            let e = FixedConfig::with_unit(0, 0, unit, t.clone()).unwrap_err();
            assert!(e.to_string().contains("`size`"), "{e}");
            let e = FixedConfig::with_unit(3, 3, unit, t).unwrap_err();
            assert!(e.to_string().contains("`overlap`"), "{e}");
        }
        let e = FixedConfig::with_unit(8, 0, Unit::Tokens, None).unwrap_err();
        assert_eq!(e, FixedError::MissingTokenizer);
        assert!(e.to_string().contains("`tokenizer`"), "{e}");
        let e: FixedError = "graphemes".parse::<Unit>().unwrap_err().into();
        let msg = e.to_string();
        assert!(
            msg.contains("`unit`") && msg.contains("words, chars, tokens"),
            "{msg}"
        );
        let e = FixedConfig::bhat(100, tok).unwrap_err();
        assert!(e.to_string().contains("`size`"), "{e}");
    }

    #[test]
    fn presets() {
        let tok = test_tokenizer();
        let all = FixedConfig::bhat_all(&tok);
        assert_eq!(
            all.iter().map(|c| c.size()).collect::<Vec<_>>(),
            BHAT_TOKEN_SIZES
        );
        assert!(all
            .iter()
            .all(|c| c.overlap() == 0 && c.unit() == Unit::Tokens));
        assert_eq!(FixedConfig::bhat(256, tok).unwrap(), all[2]);
        let ear = FixedConfig::ear_parent();
        assert_eq!(
            (ear.size(), ear.overlap(), ear.unit()),
            (260, 60, Unit::Words)
        );
        assert_eq!(ear, FixedConfig::new(260, 60).unwrap());
        let json = serde_json::to_string(&all[0]).unwrap();
        assert!(json.contains("\"unit\":\"tokens\"") && json.contains("tokenizer.json"));
    }

    #[test]
    fn case1_valid_control_and_degenerate() {
        let d = doc(TEN);
        let chunks = FixedConfig::new(4, 3).unwrap().chunk(&d);
        assert_eq!(chunks.len(), 7);
        assert!(chunks.last().unwrap().text(&d).ends_with("kappa"));
        let firsts: Vec<&str> = chunks
            .iter()
            .map(|c| c.text(&d).split(' ').next().unwrap())
            .collect();
        assert_eq!(
            firsts,
            ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
        );
        let ones = FixedConfig::new(1, 0).unwrap().chunk(&d);
        assert_eq!(ones.len(), 10);
        assert!(ones.iter().all(|c| c.words == 1));
    }

    #[test]
    fn case3_blank_documents_give_no_chunks() {
        let tok = test_tokenizer();
        let configs = [
            FixedConfig::new(3, 1).unwrap(),
            FixedConfig::chars(3, 1).unwrap(),
            FixedConfig::tokens(3, 1, tok).unwrap(),
        ];
        for cfg in &configs {
            for t in ["", "   \n\t  ", "\r\n\r\n", "\u{00A0}\u{200B}\u{FEFF}"] {
                assert!(cfg.chunk(&doc(t)).is_empty(), "{:?} {t:?}", cfg.unit());
            }
            assert!(!cfg.chunk(&doc("Pumps hum. Valves click.")).is_empty());
        }
        assert_eq!(configs[0].chunk(&doc("Pumps hum. Valves click.")).len(), 2);
    }

    #[test]
    fn chars_unit_counts_scalar_values() {
        let d = doc("aé😀bc");
        let spans: Vec<&str> = FixedConfig::chars(2, 0)
            .unwrap()
            .chunk(&d)
            .iter()
            .map(|c| c.text(&d))
            .collect();
        assert_eq!(spans, ["aé", "😀b", "c"]);
        // The ZWJ family emoji is 7 scalar values: it is cut, but only at char boundaries.
        let fam = doc("👩‍👩‍👧‍👦");
        let parts = FixedConfig::chars(3, 0).unwrap().chunk(&fam);
        assert_eq!(parts.len(), 3);
        let joined: String = parts.iter().map(|c| c.text(&fam)).collect();
        assert_eq!(joined, fam.text);
    }

    #[test]
    fn case11_multibyte_never_panics_and_covers() {
        let texts = [
            "…".repeat(2000),
            "é".repeat(1000),
            "日本語のテキスト".repeat(300),
            "👩‍👩‍👧‍👦".repeat(100),
            "aé😀".repeat(500),
            "x".repeat(9) + "😀" + &"y".repeat(20),
        ];
        let cfg = FixedConfig::chars(7, 3).unwrap();
        for t in &texts {
            let d = doc(t);
            let chunks = cfg.chunk(&d);
            assert!(chunks.iter().all(|c| c.text(&d).chars().count() <= 7));
            assert_eq!(chunks[0].span.start, 0);
            assert_eq!(chunks.last().unwrap().span.end, t.len());
            for w in chunks.windows(2) {
                // Overlap 3 of 7: every char is covered (next start inside previous).
                assert!(w[1].span.start < w[0].span.end);
            }
        }
    }

    #[test]
    fn case12_token_windows_are_char_aligned() {
        let tok = test_tokenizer();
        let cases: [(String, usize, usize); 4] = [
            (
                "Grüße aus Köln, schöne Übergänge über Flüsse.".repeat(20),
                5,
                1,
            ),
            ("🚀".into(), 1, 0),
            ("가방".repeat(50), 2, 0),
            ("猫と犬。".repeat(100), 3, 0),
        ];
        for (t, size, ov) in cases {
            let d = doc(&t);
            let cfg = FixedConfig::tokens(size, ov, Arc::clone(&tok)).unwrap();
            let chunks = cfg.chunk(&d);
            assert!(!chunks.is_empty(), "{t:?}");
            let tokens = tok.token_spans(&t);
            for c in &chunks {
                let text = c.text(&d);
                assert!(!text.is_empty() && !text.contains('\u{FFFD}'));
                // At most `size` tokens of the document's tokenization (re-tokenizing a
                // slice that starts inside a word can give a different count).
                let inside = tokens
                    .iter()
                    .filter(|s| s.start >= c.span.start && s.end <= c.span.end)
                    .count();
                assert!(inside <= size, "{text:?}");
            }
            assert_eq!(chunks.last().unwrap().span.end, t.len());
        }
    }

    #[test]
    fn case24_token_overlap_never_repeats_the_long_line_thrice() {
        let tok = test_tokenizer();
        let text = "x".repeat(8000)
            + "\n"
            + &(0..300)
                .map(|i| format!("line {i} of normal text here\n"))
                .collect::<String>();
        let d = doc(&text);
        let chunks = FixedConfig::tokens(400, 50, tok).unwrap().chunk(&d);
        for w in chunks.windows(2) {
            assert!(w[1].span.end > w[0].span.end && w[1].span.start > w[0].span.start);
        }
        let long = chunks.iter().filter(|c| c.span.start < 8000).count();
        assert!((1..=2).contains(&long), "{long}");
    }

    #[test]
    fn case36_8_text_the_tokenizer_drops_stays_in_a_chunk() {
        // BERT's normaliser drops control characters and has no token for a lone combining
        // mark or a zero-width joiner: at the end of a document, or between two windows, they
        // were in no chunk.
        let cfg = FixedConfig::with_unit(2, 0, Unit::Tokens, Some(test_tokenizer())).unwrap();
        for text in [
            "alpha beta gamma\u{1}\u{301}",
            "\u{1} alpha beta \u{200D}\u{7f} gamma delta",
            "alpha beta\u{1}\u{1}gamma",
        ] {
            let spans = cfg.chunk_spans(text);
            for (i, c) in text.char_indices() {
                if !is_word_separator(c) {
                    assert!(
                        spans.iter().any(|s| s.start <= i && i < s.end),
                        "{text:?}: {c:?} at {i} in no chunk of {spans:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn case22_crlf_matches_lf_word_counts() {
        let crlf = "Para one line.\r\n\r\nPara two line.\r\nsame para.\r\n\r\nPara three.";
        let lf = crlf.replace("\r\n", "\n");
        let cfg = FixedConfig::new(3, 0).unwrap();
        let a: Vec<usize> = cfg.chunk(&doc(crlf)).iter().map(|c| c.words).collect();
        let b: Vec<usize> = cfg.chunk(&doc(&lf)).iter().map(|c| c.words).collect();
        assert_eq!(a, b);
        for c in cfg.chunk(&doc(crlf)) {
            let t = &crlf[c.span.start..c.span.end];
            assert!(!t.ends_with('\r') && !t.starts_with('\n'));
        }
    }

    /// Checks invariants 1, 2, 4 and 3 (coverage) of docs/reference.md (cases) for one config and text.
    fn check_invariants(cfg: &FixedConfig, text: &str) -> Result<(), TestCaseError> {
        let d = doc(text);
        let chunks = cfg.chunk(&d);
        let sizer = cfg.sizer();
        let mut prev: Option<Span> = None;
        for c in &chunks {
            // 1. never empty or blank; 2. exact slice with a matching word count
            let t = c.text(&d);
            prop_assert!(!t.is_empty() && !t.chars().all(is_word_separator));
            prop_assert_eq!(crate::count_words(t), c.words);
            if cfg.unit() != Unit::Tokens {
                prop_assert!(sizer.size(t) <= cfg.size());
            }
            // 4. strictly increasing starts and ends
            if let Some(p) = prev {
                prop_assert!(c.span.start > p.start && c.span.end > p.end);
            }
            prev = Some(c.span);
        }
        // 3. coverage: every unit lies inside some chunk; with overlap 0 the chunks are
        // disjoint and only uncounted text (separators, or text without tokens) lies
        // between them.
        let units = sizer.unit_spans(text);
        let mut j = 0;
        for u in units {
            if text[u.start..u.end].chars().all(is_word_separator) {
                continue;
            }
            while j < chunks.len() && chunks[j].span.end < u.end {
                j += 1;
            }
            prop_assert!(
                j < chunks.len() && chunks[j].span.start <= u.start,
                "unit {:?} uncovered",
                u
            );
        }
        // Issue 36 case 8: every non-separator character is in some chunk, whatever the unit
        // (a tokenizer drops control and zero-width characters, which once fell outside).
        for (i, c) in text.char_indices() {
            if !is_word_separator(c) {
                prop_assert!(
                    chunks
                        .iter()
                        .any(|ch| ch.span.start <= i && i < ch.span.end),
                    "char {:?} at {} in no chunk",
                    c,
                    i
                );
            }
        }
        if cfg.overlap() == 0 {
            for w in chunks.windows(2) {
                prop_assert!(w[0].span.end <= w[1].span.start);
            }
            if cfg.unit() == Unit::Words {
                let total = crate::count_words(text);
                prop_assert_eq!(chunks.iter().map(|c| c.words).sum::<usize>(), total);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn char_windows_equal_windows_of_char_spans(
            text in "\\PC{0,300}|[a-zé日本語😀👩‍ \u{200B}\n\r\t.,]{0,300}|[ \n\u{200B}\u{FEFF}x]{0,300}",
            size in 1usize..20,
            ov in 0usize..19,
        ) {
            let cfg = FixedConfig::chars(size, ov % size).unwrap();
            let units = Sizer::Chars.unit_spans(&text);
            prop_assert_eq!(cfg.char_window_spans(&text), cfg.unit_window_spans(&text, &units));
        }

        #[test]
        fn invariants_hold_on_random_text(text in "\\PC{0,300}|[a-zé日本 \n\r\t]{0,300}", size in 1usize..20, ov in 0usize..19) {
            let ov = ov % size;
            let d = doc(&text);
            let cfg = FixedConfig::new(size, ov).unwrap();
            let chunks = cfg.chunk(&d);
            let total = crate::count_words(&text);
            let mut prev: Option<crate::Span> = None;
            for c in &chunks {
                // 1. never empty; 2. exact slice with a matching word count
                prop_assert!(c.words >= 1 && c.words <= size);
                prop_assert_eq!(crate::count_words(c.text(&d)), c.words);
                // 4. strictly increasing starts and ends
                if let Some(p) = prev {
                    prop_assert!(c.span.start > p.start && c.span.end > p.end);
                }
                prev = Some(c.span);
            }
            // 3. coverage: every word is in some chunk
            let spans: Vec<crate::Span> = chunks.iter().map(|c| c.span).collect();
            prop_assert_eq!(crate::unique_words(&text, &spans), total);
            if ov == 0 {
                prop_assert_eq!(chunks.iter().map(|c| c.words).sum::<usize>(), total);
            }
        }

        #[test]
        fn invariants_hold_for_every_unit(
            text in "\\PC{0,200}|[a-zé日本語😀👩‍ \u{200B}\n\r\t.,]{0,200}|[a \u{1}\u{7f}\u{200B}\u{200D}\u{301}\u{AD}\u{FEFF}]{0,60}",
            size in 1usize..12,
            ov in 0usize..11,
            unit in prop::sample::select(Unit::ALL.to_vec()),
        ) {
            let ov = ov % size;
            let cfg = FixedConfig::with_unit(size, ov, unit, Some(test_tokenizer())).unwrap();
            check_invariants(&cfg, &text)?;
        }
    }
}
