//! Size units shared by the chunkers: words, characters and model tokens.
//!
//! * [`Unit::Words`]: whitespace-separated words of the text ([`crate::word_spans`],
//!   docs/reference.md §3).
//! * [`Unit::Chars`]: Unicode scalar values (Rust `char`s, Python `len(str)` code points).
//!   Not bytes and not graphemes: `"é"` (U+00E9) is 1 char, `"e\u{301}"` is 2, and the
//!   ZWJ family emoji `"👩‍👩‍👧‍👦"` is 7.
//! * [`Unit::Tokens`]: tokens of a Hugging Face `tokenizer.json` ([`HfTokenizer`]) encoded
//!   without special tokens, without truncation and without padding, i.e. the count
//!   LangChain's `TextSplitter.from_huggingface_tokenizer` uses
//!   (`len(tokenizer.tokenize(text))`, langchain_text_splitters/base.py).
//!
//! [`Sizer`] is "what size means" for a chunker: a unit plus, for tokens, the tokenizer.

use crate::Span;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The unit a chunk size is measured in. Parsed from `words`, `chars` or `tokens`
/// ([`FromStr`]); serialized in the same lowercase form.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Unit {
    /// Whitespace-separated words ([`crate::word_spans`]).
    Words,
    /// Unicode scalar values (`char`s), not bytes and not graphemes.
    Chars,
    /// Model tokens of a Hugging Face tokenizer ([`HfTokenizer`]), special tokens excluded.
    Tokens,
}

impl Unit {
    /// Every unit, in the order the error message of [`UnknownUnit`] lists them (the declaration order; strum `VariantArray`).
    pub const ALL: [Unit; 3] = [Unit::Words, Unit::Chars, Unit::Tokens];

    /// The canonical lowercase name (`words`, `chars`, `tokens`), as accepted by [`FromStr`].
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of [`Unit::from_str`]: the string is not a known unit. Names the field `unit` and
/// lists the valid values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `unit`: unknown unit `{got}`; valid values are: words, chars, tokens")]
pub struct UnknownUnit {
    /// The rejected input.
    pub got: String,
}

impl FromStr for Unit {
    type Err = UnknownUnit;

    /// Parses `words`, `chars` or `tokens` (exact, lowercase).
    ///
    /// # Errors
    /// [`UnknownUnit`] for anything else.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Unit::ALL
            .iter()
            .copied()
            .find(|u| u.as_str() == s)
            .ok_or_else(|| UnknownUnit { got: s.to_string() })
    }
}

/// Errors loading a tokenizer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenizerError {
    /// The `tokenizer.json` file does not exist.
    #[error(
        "field `tokenizer`: `{path}` not found; run `chunkbench models fetch` to download the \
         models (or point at a Hugging Face model directory containing tokenizer.json)"
    )]
    NotFound {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The file exists but is not a usable `tokenizer.json`.
    #[error("field `tokenizer`: cannot load `{path}`: {message}")]
    Invalid {
        /// The path that was tried.
        path: PathBuf,
        /// The tokenizers library's message.
        message: String,
    },
}

/// A Hugging Face tokenizer (`tokenizer.json`) used to count tokens and to find token byte
/// spans. Truncation and padding configured in the file are always disabled (the MiniLM
/// file ships `truncation.max_length = 128` and fixed padding, docs/reference.md §4b), and special
/// tokens are never added: counts are exactly `len(tokenizer.tokenize(text))` of
/// `transformers` (what LangChain's `from_huggingface_tokenizer` measures).
///
/// If the tokenizer library fails on some input (not seen with WordPiece/BPE files), the
/// text is counted in chars instead and [`HfTokenizer::encode_failures`] is incremented;
/// nothing panics.
pub struct HfTokenizer {
    inner: Backend,
    source: String,
    failures: AtomicUsize,
}

/// The library behind a [`HfTokenizer`].
enum Backend {
    /// A Hugging Face `tokenizer.json` (boxed: it is large, the BPE variant a reference).
    Hf(Box<tokenizers::Tokenizer>),
    /// An OpenAI BPE encoding (tiktoken-rs, the same BPE files and split regex as `tiktoken`).
    Bpe(&'static tiktoken_rs::CoreBPE),
}

/// The OpenAI encodings a `tokenizer:` field can name instead of a `tokenizer.json` path.
pub const BPE_ENCODINGS: [&str; 2] = ["cl100k_base", "o200k_base"];

/// Where the BPE encodings come from: the tiktoken-rs release pinned in Cargo.lock (a test
/// keeps the two equal). A named encoding's content identity is this and its name.
pub const BPE_SOURCE: &str = "tiktoken-rs 0.9.1";

/// The content identity of a named BPE encoding (`cl100k_base (tiktoken-rs 0.9.1)`), or
/// `None` when `name` is not one of [`BPE_ENCODINGS`].
pub fn bpe_identity(name: &str) -> Option<String> {
    BPE_ENCODINGS
        .contains(&name)
        .then(|| format!("{name} ({BPE_SOURCE})"))
}

impl fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl HfTokenizer {
    /// Loads `path`: a `tokenizer.json` file, or a model directory (Hugging Face snapshot
    /// layout) that contains one.
    ///
    /// # Errors
    /// [`TokenizerError::NotFound`] (the message says to run `chunkbench models fetch`) or
    /// [`TokenizerError::Invalid`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        if let Some(t) = path.as_ref().to_str().and_then(Self::named) {
            return Ok(t);
        }
        let mut path = path.as_ref().to_path_buf();
        if path.is_dir() {
            path.push("tokenizer.json");
        }
        if !path.is_file() {
            return Err(TokenizerError::NotFound { path });
        }
        let inner =
            tokenizers::Tokenizer::from_file(&path).map_err(|e| TokenizerError::Invalid {
                path: path.clone(),
                message: e.to_string(),
            })?;
        Self::from_tokenizer(inner, path.display().to_string()).map_err(|e| match e {
            TokenizerError::Invalid { message, .. } => TokenizerError::Invalid { path, message },
            other => other,
        })
    }

    /// The OpenAI BPE encoding `name` ([`BPE_ENCODINGS`]: `cl100k_base`, `o200k_base`),
    /// counted as `tiktoken`'s `encode_ordinary` does (special-token text is ordinary text);
    /// `None` for other names. A file of that name in the working directory is not consulted:
    /// the names are reserved.
    pub fn named(name: &str) -> Option<Self> {
        let bpe = match name {
            "cl100k_base" => tiktoken_rs::cl100k_base_singleton(),
            "o200k_base" => tiktoken_rs::o200k_base_singleton(),
            _ => return None,
        };
        Some(HfTokenizer {
            inner: Backend::Bpe(bpe),
            source: name.to_string(),
            failures: AtomicUsize::new(0),
        })
    }

    /// True for an OpenAI BPE encoding ([`HfTokenizer::named`]), whose identity is its name
    /// (the BPE file is part of the pinned tiktoken-rs crate), not a file's hash.
    pub fn is_named(&self) -> bool {
        matches!(self.inner, Backend::Bpe(_))
    }

    /// Wraps an already loaded tokenizer; `source` identifies it in reports (a path or a
    /// model name). Truncation and padding are disabled.
    ///
    /// # Errors
    /// [`TokenizerError::Invalid`] when truncation cannot be disabled.
    pub fn from_tokenizer(
        mut inner: tokenizers::Tokenizer,
        source: impl Into<String>,
    ) -> Result<Self, TokenizerError> {
        let source = source.into();
        inner
            .with_truncation(None)
            .map_err(|e| TokenizerError::Invalid {
                path: PathBuf::from(&source),
                message: e.to_string(),
            })?;
        inner.with_padding(None);
        Ok(HfTokenizer {
            inner: Backend::Hf(Box::new(inner)),
            source,
            failures: AtomicUsize::new(0),
        })
    }

    /// Where the tokenizer came from (the path given to [`HfTokenizer::from_file`]).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Number of inputs the tokenizer library failed on (each was counted in chars).
    pub fn encode_failures(&self) -> usize {
        self.failures.load(Ordering::Relaxed)
    }

    /// Number of tokens in `text`, without special tokens, truncation or padding.
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let inner = match &self.inner {
            Backend::Bpe(bpe) => return bpe.encode_ordinary(text).len(),
            Backend::Hf(t) => t,
        };
        match inner.encode_fast(text, false) {
            Ok(enc) => enc.get_ids().len(),
            Err(_) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                text.chars().count()
            }
        }
    }

    /// Byte spans of the tokens of `text`, in token order, from the tokenizer's offset
    /// mappings, snapped outwards to char boundaries (start down, end up). Tokens whose
    /// offsets cover no text (e.g. a prefix marker) are left out, so the result may be
    /// shorter than [`HfTokenizer::count`]. Starts are non-decreasing; byte-level BPE
    /// tokens of one multi-byte char may share the same span.
    pub fn token_spans(&self, text: &str) -> Vec<Span> {
        if text.is_empty() {
            return Vec::new();
        }
        let inner = match &self.inner {
            Backend::Bpe(bpe) => return bpe_spans(bpe, text),
            Backend::Hf(t) => t,
        };
        match inner.encode(text, false) {
            Ok(enc) => {
                let mut spans: Vec<Span> = Vec::with_capacity(enc.len());
                let mut last_start = 0;
                for &(s, e) in enc.get_offsets() {
                    let start = floor_char_boundary(text, s.min(text.len())).max(last_start);
                    let end = ceil_char_boundary(text, e.min(text.len()));
                    if end > start {
                        last_start = start;
                        spans.push(Span { start, end });
                    }
                }
                spans
            }
            Err(_) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                text.char_indices()
                    .map(|(i, c)| Span {
                        start: i,
                        end: i + c.len_utf8(),
                    })
                    .collect()
            }
        }
    }
}

/// Byte spans of the BPE tokens of `text`: each token's bytes follow the previous one's, so
/// the spans are the running sums of their lengths, snapped outwards to char boundaries as
/// for Hugging Face offsets (tokens inside one multi-byte char share its span; an empty span
/// is left out).
fn bpe_spans(bpe: &tiktoken_rs::CoreBPE, text: &str) -> Vec<Span> {
    let tokens = bpe.encode_ordinary(text);
    let mut spans: Vec<Span> = Vec::with_capacity(tokens.len());
    let (mut at, mut last_start) = (0usize, 0usize);
    for bytes in bpe._decode_native_and_split(tokens) {
        let (s, e) = (at, (at + bytes.len()).min(text.len()));
        at += bytes.len();
        let start = floor_char_boundary(text, s.min(text.len())).max(last_start);
        let end = ceil_char_boundary(text, e);
        if end > start {
            last_start = start;
            spans.push(Span { start, end });
        }
    }
    spans
}

/// What "size" means for a chunker: a [`Unit`] plus the tokenizer for [`Unit::Tokens`].
///
/// The size of a text is its number of words ([`crate::count_words`]), chars (Unicode
/// scalar values) or tokens ([`HfTokenizer::count`]). Two `Tokens` sizers are equal when
/// they share the tokenizer or their [`HfTokenizer::source`]s are equal.
#[derive(Debug, Clone)]
pub enum Sizer {
    /// Whitespace-separated words.
    Words,
    /// Unicode scalar values.
    Chars,
    /// Model tokens of this tokenizer.
    Tokens(Arc<HfTokenizer>),
}

impl PartialEq for Sizer {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Sizer::Words, Sizer::Words) | (Sizer::Chars, Sizer::Chars) => true,
            (Sizer::Tokens(a), Sizer::Tokens(b)) => Arc::ptr_eq(a, b) || a.source == b.source,
            _ => false,
        }
    }
}

impl Sizer {
    /// The sizer for `unit`; `tokenizer` is required for [`Unit::Tokens`] and ignored
    /// otherwise. Returns `None` when tokens are asked for without a tokenizer (callers
    /// turn this into their own error naming the field `tokenizer`).
    pub fn for_unit(unit: Unit, tokenizer: Option<Arc<HfTokenizer>>) -> Option<Self> {
        match unit {
            Unit::Words => Some(Sizer::Words),
            Unit::Chars => Some(Sizer::Chars),
            Unit::Tokens => tokenizer.map(Sizer::Tokens),
        }
    }

    /// The unit this sizer counts.
    pub fn unit(&self) -> Unit {
        match self {
            Sizer::Words => Unit::Words,
            Sizer::Chars => Unit::Chars,
            Sizer::Tokens(_) => Unit::Tokens,
        }
    }

    /// The tokenizer of a `Tokens` sizer.
    pub fn tokenizer(&self) -> Option<&Arc<HfTokenizer>> {
        match self {
            Sizer::Tokens(t) => Some(t),
            _ => None,
        }
    }

    /// Size of `text` in this sizer's unit.
    pub fn size(&self, text: &str) -> usize {
        match self {
            Sizer::Words => crate::count_words(text),
            Sizer::Chars => text.chars().count(),
            Sizer::Tokens(t) => t.count(text),
        }
    }

    /// Byte spans of the units of `text`, in order: words ([`crate::word_spans`]), every
    /// char, or tokens ([`HfTokenizer::token_spans`]). Never contains an empty span.
    pub fn unit_spans(&self, text: &str) -> Vec<Span> {
        match self {
            Sizer::Words => crate::word_spans(text),
            Sizer::Chars => text
                .char_indices()
                .map(|(i, c)| Span {
                    start: i,
                    end: i + c.len_utf8(),
                })
                .collect(),
            Sizer::Tokens(t) => t.token_spans(text),
        }
    }
}

/// Largest char boundary `<= i` (`i <= text.len()`).
pub(crate) fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Smallest char boundary `>= i` (`i <= text.len()`).
pub(crate) fn ceil_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Why a [`SizeLimit`] could not be made; its messages are Max-Min's (it converts into
/// [`crate::MaxMinError`], whose fields they name, where a size limit was first needed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeLimitError {
    /// The size is 0.
    #[error("field `{field}` must be at least 1 (got 0)")]
    ZeroSize {
        /// The field reported (`max_chunk`).
        field: &'static str,
    },
    /// Tokens were asked for without a tokenizer.
    #[error(
        "field `tokenizer`: unit `tokens` needs a tokenizer.json \
         (run `chunkbench models fetch` for the default models)"
    )]
    MissingTokenizer,
}

/// A chunk size limit: a number of words, chars or tokens ([`Sizer`]), used by every
/// strategy with a size. Its errors ([`SizeLimitError`]) read as Max-Min's, which name the
/// field.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeLimit {
    size: usize,
    sizer: Sizer,
}

impl SizeLimit {
    /// A limit of `size` units of `sizer`.
    ///
    /// # Errors
    /// [`SizeLimitError::ZeroSize`] when `size == 0` (reported for field `max_chunk`; callers
    /// building a `min_chunk` get the same check).
    pub fn new(size: usize, sizer: Sizer) -> Result<Self, SizeLimitError> {
        if size == 0 {
            return Err(SizeLimitError::ZeroSize { field: "max_chunk" });
        }
        Ok(SizeLimit { size, sizer })
    }

    /// A limit of `size` whitespace-separated words.
    ///
    /// # Errors
    /// [`SizeLimitError::ZeroSize`] when `size == 0`.
    pub fn words(size: usize) -> Result<Self, SizeLimitError> {
        Self::new(size, Sizer::Words)
    }

    /// A limit in `unit`; `tokenizer` is required for [`Unit::Tokens`].
    ///
    /// # Errors
    /// [`SizeLimitError::ZeroSize`] or [`SizeLimitError::MissingTokenizer`].
    pub fn with_unit(
        size: usize,
        unit: Unit,
        tokenizer: Option<Arc<HfTokenizer>>,
    ) -> Result<Self, SizeLimitError> {
        let sizer = Sizer::for_unit(unit, tokenizer).ok_or(SizeLimitError::MissingTokenizer)?;
        Self::new(size, sizer)
    }

    /// The limit, in [`SizeLimit::unit`]s.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The unit the limit is counted in.
    pub fn unit(&self) -> Unit {
        self.sizer.unit()
    }

    /// The sizer that measures texts against the limit.
    pub fn sizer(&self) -> &Sizer {
        &self.sizer
    }

    /// Size of `text` in this limit's unit ([`Sizer::size`]).
    pub fn measure(&self, text: &str) -> usize {
        self.sizer.size(text)
    }
}

/// Path of the MiniLM `tokenizer.json` used by the tests, relative to this crate.
#[cfg(test)]
pub(crate) const TEST_TOKENIZER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/all-MiniLM-L6-v2/tokenizer.json"
);

/// The shared test tokenizer. Fails the test (never skips) when the model is missing.
#[cfg(test)]
pub(crate) fn test_tokenizer() -> Arc<HfTokenizer> {
    static TOK: std::sync::OnceLock<Arc<HfTokenizer>> = std::sync::OnceLock::new();
    TOK.get_or_init(|| match HfTokenizer::from_file(TEST_TOKENIZER) {
        Ok(t) => Arc::new(t),
        Err(e) => panic!(
            "token-unit tests need {TEST_TOKENIZER}: {e} (run `chunkbench models fetch` first)"
        ),
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_parses_and_lists_valid_values() {
        assert_eq!("words".parse::<Unit>(), Ok(Unit::Words));
        assert_eq!("chars".parse::<Unit>(), Ok(Unit::Chars));
        assert_eq!("tokens".parse::<Unit>(), Ok(Unit::Tokens));
        let e = "bytes".parse::<Unit>().unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("`unit`") && msg.contains("`bytes`"), "{msg}");
        assert!(msg.contains("words, chars, tokens"), "{msg}");
        for u in Unit::ALL {
            assert_eq!(u.to_string().parse::<Unit>(), Ok(u));
        }
    }

    #[test]
    fn missing_tokenizer_says_how_to_fetch() {
        let e = HfTokenizer::from_file("/nonexistent/model/tokenizer.json").unwrap_err();
        assert!(e.to_string().contains("chunkbench models fetch"), "{e}");
    }

    #[test]
    fn tokenizer_loads_from_a_model_directory() {
        let dir = Path::new(TEST_TOKENIZER).parent().unwrap();
        let tok = HfTokenizer::from_file(dir).unwrap();
        assert!(tok.source().ends_with("tokenizer.json"));
        assert_eq!(tok.count("hello world"), 2);
    }

    #[test]
    fn tokenizer_ignores_file_truncation_and_padding() {
        let tok = test_tokenizer();
        // 300 words: far past the file's truncation.max_length = 128.
        let text = "alpha ".repeat(300);
        assert_eq!(tok.count(&text), 300);
        assert_eq!(tok.token_spans(&text).len(), 300);
        assert_eq!(tok.count(""), 0);
        assert_eq!(tok.count("   \n "), 0);
        assert_eq!(tok.count("a"), 1);
    }

    #[test]
    fn token_spans_are_char_aligned_slices() {
        let tok = test_tokenizer();
        let text = "Grüße aus Köln 🚀 猫と犬。 가방 x";
        let spans = tok.token_spans(text);
        assert!(!spans.is_empty());
        let mut prev = 0;
        for s in &spans {
            assert!(s.start < s.end && s.start >= prev);
            assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
            prev = s.start;
        }
        assert_eq!(spans[0].start, 0);
        assert_eq!(spans.last().unwrap().end, text.len());
    }

    #[test]
    fn sizer_counts_scalar_values() {
        assert_eq!(Sizer::Chars.size("👩‍👩‍👧‍👦"), 7);
        assert_eq!(Sizer::Chars.size("e\u{301}é"), 3);
        assert_eq!(Sizer::Words.size(" a  b\u{200B}c "), 3);
        assert_eq!(Sizer::for_unit(Unit::Tokens, None), None);
    }

    #[test]
    fn bpe_encodings_by_name() {
        let t = HfTokenizer::from_file("cl100k_base").unwrap();
        assert!(t.is_named() && t.source() == "cl100k_base");
        // tiktoken: enc.encode_ordinary("hello world") == [15339, 1917]
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.count(""), 0);
        let text = "Épée — naïve 北京 🙂 text";
        let spans = t.token_spans(text);
        assert!(!spans.is_empty());
        assert_eq!(spans.first().unwrap().start, 0);
        assert_eq!(spans.last().unwrap().end, text.len());
        for w in spans.windows(2) {
            assert!(
                w[0].start <= w[1].start && w[0].end <= w[1].end,
                "{spans:?}"
            );
        }
        for s in &spans {
            assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
        }
        assert!(HfTokenizer::named("o200k_base").is_some());
        assert!(HfTokenizer::named("gpt2").is_none());
        assert_eq!(
            bpe_identity("o200k_base").as_deref(),
            Some("o200k_base (tiktoken-rs 0.9.1)")
        );
    }

    #[test]
    fn bpe_source_is_the_locked_crate() {
        let lock =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock"))
                .unwrap();
        let version = BPE_SOURCE.strip_prefix("tiktoken-rs ").unwrap();
        assert!(
            lock.contains(&format!("name = \"tiktoken-rs\"\nversion = \"{version}\"")),
            "Cargo.lock pins another tiktoken-rs than BPE_SOURCE says"
        );
    }
}
