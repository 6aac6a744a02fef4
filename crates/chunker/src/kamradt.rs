//! The Kamradt / LangChain `SemanticChunker` baseline (docs/reference.md §5, "LangChain defaults"),
//! as pure functions over sentence spans and precomputed embeddings.
//!
//! Reference: langchain-experimental's `langchain_experimental/text_splitter.py` (version
//! pinned in `scripts/kamradt_goldens.sh`): `SemanticChunker.split_text`,
//! `combine_sentences`, `calculate_cosine_distances`, `_calculate_breakpoint_threshold` and
//! `_threshold_from_clusters`, with `langchain_community.utils.math.cosine_similarity` (its
//! numpy path). Given the same embeddings the chunk texts are identical
//! ([`KamradtConfig::langchain_texts`]; `crates/chunker/tests/kamradt_golden.rs`).
//!
//! # Algorithm
//! 1. **Sentences** ([`split_sentences`]): `re.split(r"(?<=[.?!])\s+", text)`: the text is
//!    cut at every maximal run of Python whitespace (`str.isspace`,
//!    [`crate::recursive::is_py_whitespace`]) that directly follows `.`, `?` or `!`; the run
//!    is dropped. Pieces are not trimmed; the last piece is empty when the text ends in such
//!    a run, and an empty text is one empty piece.
//! 2. If there is one sentence, it is the only chunk; with the `gradient` type and two
//!    sentences, each sentence is a chunk. Nothing is embedded in either case
//!    ([`KamradtConfig::needs_embeddings`]).
//! 3. **Combined sentences** ([`KamradtConfig::combined_sentences`]): sentence `i` joined
//!    with `buffer_size` neighbours on each side by single spaces. These strings are what is
//!    embedded.
//! 4. **Distances**: `1 - cos(e_i, e_{i+1})` between consecutive combined sentences, cosine =
//!    `dot(a, b) / (||a|| * ||b||)` in `f64`; a NaN or infinite similarity (zero or
//!    non-finite vector) becomes `0` (distance `1`), as in LangChain's numpy path. Such
//!    vectors are counted ([`KamradtStats::degenerate_vectors`]).
//! 5. **Threshold** ([`KamradtConfig::breakpoint_threshold`]), numpy semantics
//!    ([`numpy`]): `percentile` = `np.percentile(d, amount)` (default 95);
//!    `standard_deviation` = `mean(d) + amount * std(d)` (population std, default 3);
//!    `interquartile` = `mean(d) + amount * (p75 - p25)` (default 1.5); `gradient` = the
//!    `amount` percentile (default 95) of `np.gradient(d)`, which is then compared instead of
//!    `d`. With `number_of_chunks = k`: the percentile `y = 100 * (len(d) - x) / (len(d) - 1)`
//!    for `x = clamp(k, 1, len(d))` (LangChain's `_threshold_from_clusters`), compared
//!    against `d`.
//! 6. **Breakpoints**: every index `i` whose value is strictly greater than the threshold
//!    ends a chunk after sentence `i`; the rest after the last breakpoint is the last chunk.
//!    With `min_chunk_size` (chars of the joined text, Python `len`), a chunk shorter than it
//!    is not cut (it grows until the next breakpoint); the final chunk is never checked.
//!
//! # Chunks as spans
//! LangChain's chunk texts join sentences with one space. [`KamradtConfig::chunk`] instead
//! returns the document's byte span from the chunk's first sentence to its last one, trimmed
//! of whitespace (so a blank line between two sentences is kept as it is, and text that
//! starts with spaces does not put them in the first chunk); a chunk that is blank after
//! trimming (an empty text, or a lone empty last piece) is dropped and counted in
//! [`KamradtStats::empty_dropped`]. [`KamradtConfig::langchain_texts`] returns LangChain's
//! strings.

use crate::recursive::is_py_whitespace;
use crate::{is_word_separator, Chunk, Document, Span};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// LangChain's `breakpoint_threshold_type`.
///
/// Parsed from and serialized as `percentile`, `standard_deviation`, `interquartile`,
/// `gradient`.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum BreakpointType {
    /// Distance above its `amount` percentile (default 95). LangChain's default.
    #[default]
    Percentile,
    /// Distance above `mean + amount * std` (default 3).
    StandardDeviation,
    /// Distance above `mean + amount * IQR` (default 1.5).
    Interquartile,
    /// Gradient of the distances above its `amount` percentile (default 95).
    Gradient,
}

impl BreakpointType {
    /// Every type, in LangChain's order (the declaration order; strum `VariantArray`).
    pub const ALL: &'static [BreakpointType] = <BreakpointType as strum::VariantArray>::VARIANTS;

    /// LangChain's `BREAKPOINT_DEFAULTS` amount for this type: 95, 3, 1.5, 95.
    pub fn default_amount(self) -> f64 {
        match self {
            BreakpointType::Percentile | BreakpointType::Gradient => 95.0,
            BreakpointType::StandardDeviation => 3.0,
            BreakpointType::Interquartile => 1.5,
        }
    }

    /// LangChain's name of the type.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl fmt::Display for BreakpointType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BreakpointType {
    type Err = KamradtError;

    /// Parses LangChain's names.
    ///
    /// # Errors
    /// [`KamradtError::UnknownBreakpointType`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BreakpointType::ALL
            .iter()
            .copied()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| KamradtError::UnknownBreakpointType(s.to_string()))
    }
}

/// Errors of the Kamradt chunker's configuration and input; messages name the field or
/// input at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KamradtError {
    /// `breakpoint_threshold_type` is not one of LangChain's four.
    #[error(
        "field `breakpoint_threshold_type`: unknown value `{0}`; valid values are: percentile, \
         standard_deviation, interquartile, gradient"
    )]
    UnknownBreakpointType(String),
    /// `breakpoint_threshold_amount` is NaN or infinite.
    #[error("field `breakpoint_threshold_amount` must be a finite number (got {0})")]
    NonFiniteAmount(f64),
    /// A percentile amount outside `[0, 100]` (numpy raises `ValueError` there).
    #[error(
        "field `breakpoint_threshold_amount` is a percentile for `{kind}` and must lie in \
         [0, 100] (got {value})"
    )]
    PercentileOutOfRange {
        /// The breakpoint type.
        kind: BreakpointType,
        /// The rejected amount.
        value: f64,
    },
    /// The number of vectors differs from the number of sentences.
    #[error(
        "{sentences} sentences but {vectors} vectors: one vector per combined sentence is \
         required"
    )]
    LengthMismatch {
        /// Sentences given.
        sentences: usize,
        /// Vectors given.
        vectors: usize,
    },
    /// Vectors of different dimensions (LangChain raises `ValueError` there too).
    #[error("vector {index} has dimension {got}, expected {expected} (that of vector 0)")]
    DimensionMismatch {
        /// Index of the first vector whose length differs from vector 0's.
        index: usize,
        /// Dimension of vector 0.
        expected: usize,
        /// Dimension of vector `index`.
        got: usize,
    },
    /// A sentence span is outside the text, off a char boundary, or before the previous one.
    #[error(
        "sentence {index} ({start}..{end}) is not a valid span: sentences must be inside the \
         text, on char boundaries and in non-decreasing, non-overlapping order"
    )]
    InvalidSentence {
        /// Index of the sentence.
        index: usize,
        /// Its start byte.
        start: usize,
        /// Its end byte.
        end: usize,
    },
}

/// LangChain `SemanticChunker` parameters. [`Default`] is LangChain's default:
/// `buffer_size = 1`, percentile 95, no `number_of_chunks`, no `min_chunk_size`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KamradtConfig {
    /// Sentences joined on each side of a sentence before embedding (`buffer_size`).
    pub buffer_size: usize,
    /// `breakpoint_threshold_type`.
    pub breakpoint_type: BreakpointType,
    /// `breakpoint_threshold_amount` (the type's default when built with
    /// [`KamradtConfig::new`]).
    pub breakpoint_amount: f64,
    /// `number_of_chunks`: when set, overrides the breakpoint type's threshold.
    pub number_of_chunks: Option<usize>,
    /// `min_chunk_size` in chars (Python `len` of the joined chunk text).
    pub min_chunk_size: Option<usize>,
}

impl Default for KamradtConfig {
    fn default() -> Self {
        Self::new(BreakpointType::Percentile)
    }
}

/// Counters of one Kamradt run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KamradtStats {
    /// Sentences (LangChain's pieces, including an empty last piece).
    pub sentences: usize,
    /// Groups formed (LangChain's chunk count).
    pub groups: usize,
    /// Chunks returned by [`KamradtConfig::chunk_with_stats`] (groups minus
    /// `empty_dropped`); equal to `groups` from [`KamradtConfig::groups`].
    pub chunks: usize,
    /// Combined sentences whose vectors were used (0 when nothing needs embedding).
    pub embedded: usize,
    /// Vectors with zero norm or a non-finite component (similarity taken as 0).
    pub degenerate_vectors: usize,
    /// The breakpoint threshold (`None` when nothing was embedded).
    pub threshold: Option<f64>,
    /// Indices above the threshold.
    pub breakpoints: usize,
    /// Breakpoints skipped because the chunk was shorter than `min_chunk_size` (merges).
    pub merges: usize,
    /// Groups that were blank after trimming and not returned as chunks.
    pub empty_dropped: usize,
}

/// The distances, the array compared with the threshold, the threshold and the
/// breakpoints of one text ([`KamradtConfig::breakpoints`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Breakpoints {
    /// `1 - cos` between consecutive combined sentences (`n - 1` values).
    pub distances: Vec<f64>,
    /// The values compared with the threshold: the distances, or their gradient.
    pub compared: Vec<f64>,
    /// The threshold.
    pub threshold: f64,
    /// Indices `i` of `compared` with `compared[i] > threshold`, increasing.
    pub indices: Vec<usize>,
    /// Degenerate vectors seen.
    pub degenerate_vectors: usize,
}

/// LangChain's sentence split `re.split(r"(?<=[.?!])\s+", text)` as byte spans of `text`
/// (look-behind semantics implemented directly).
///
/// Every maximal run of Python whitespace ([`is_py_whitespace`]) that directly follows
/// `.`, `?` or `!` separates two pieces and belongs to neither. Pieces are untrimmed and
/// may be empty (an empty text gives one empty piece; a text ending in `". "` gives an empty
/// last piece). Always at least one span; spans are increasing and char-aligned.
pub fn split_sentences(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<char> = None;
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if is_py_whitespace(c) && matches!(prev, Some('.' | '?' | '!')) {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = it.peek() {
                if !is_py_whitespace(d) {
                    break;
                }
                end = j + d.len_utf8();
                it.next();
            }
            out.push(Span { start, end: i });
            start = end;
            prev = None; // the run ends in whitespace: no look-behind match at `end`
            continue;
        }
        prev = Some(c);
    }
    out.push(Span {
        start,
        end: text.len(),
    });
    out
}

impl KamradtConfig {
    /// LangChain's defaults for `breakpoint_type`: `buffer_size = 1`, the type's default
    /// amount, no `number_of_chunks`, no `min_chunk_size`.
    pub fn new(breakpoint_type: BreakpointType) -> Self {
        KamradtConfig {
            buffer_size: 1,
            breakpoint_type,
            breakpoint_amount: breakpoint_type.default_amount(),
            number_of_chunks: None,
            min_chunk_size: None,
        }
    }

    /// Checks the amount: finite, and within `[0, 100]` for `percentile` and `gradient`.
    ///
    /// # Errors
    /// [`KamradtError::NonFiniteAmount`], [`KamradtError::PercentileOutOfRange`].
    pub fn validate(&self) -> Result<(), KamradtError> {
        let a = self.breakpoint_amount;
        if !a.is_finite() {
            return Err(KamradtError::NonFiniteAmount(a));
        }
        let is_percentile = matches!(
            self.breakpoint_type,
            BreakpointType::Percentile | BreakpointType::Gradient
        );
        if is_percentile && !(0.0..=100.0).contains(&a) {
            return Err(KamradtError::PercentileOutOfRange {
                kind: self.breakpoint_type,
                value: a,
            });
        }
        Ok(())
    }

    /// Whether `n` sentences need embeddings: false for `n <= 1`, and for `n == 2` with the
    /// `gradient` type (LangChain returns the sentences unembedded in both cases).
    pub fn needs_embeddings(&self, n: usize) -> bool {
        n >= 2 && !(self.breakpoint_type == BreakpointType::Gradient && n == 2)
    }

    /// The strings LangChain embeds (`combine_sentences`): for each sentence `i`, sentences
    /// `i - buffer_size ..= i + buffer_size` (clipped) of `text` joined by single spaces.
    /// `sentences` are byte spans of `text` (normally [`split_sentences`]).
    pub fn combined_sentences(&self, text: &str, sentences: &[Span]) -> Vec<String> {
        let n = sentences.len();
        (0..n)
            .map(|i| {
                let lo = i.saturating_sub(self.buffer_size);
                let hi = i.saturating_add(self.buffer_size).min(n - 1);
                join_spaces(text, &sentences[lo..=hi])
            })
            .collect()
    }

    /// LangChain's threshold for `distances` (non-empty): `_calculate_breakpoint_threshold`,
    /// or `_threshold_from_clusters` when `number_of_chunks` is set. Returns the threshold
    /// and the array to compare with it (the distances, or their gradient).
    ///
    /// For an empty input the threshold is `+inf` (no breakpoint; LangChain never gets
    /// here). The gradient type needs at least 2 distances; with 1 it compares the distance
    /// itself against its own value (no breakpoint).
    pub fn breakpoint_threshold(&self, distances: &[f64]) -> (f64, Vec<f64>) {
        if distances.is_empty() {
            return (f64::INFINITY, Vec::new());
        }
        if let Some(k) = self.number_of_chunks {
            return (threshold_from_clusters(distances, k), distances.to_vec());
        }
        let amount = self.breakpoint_amount;
        match self.breakpoint_type {
            BreakpointType::Percentile => {
                (numpy::percentile(distances, amount), distances.to_vec())
            }
            BreakpointType::StandardDeviation => (
                numpy::mean(distances) + amount * numpy::std(distances),
                distances.to_vec(),
            ),
            BreakpointType::Interquartile => {
                let q1 = numpy::percentile(distances, 25.0);
                let q3 = numpy::percentile(distances, 75.0);
                (
                    numpy::mean(distances) + amount * (q3 - q1),
                    distances.to_vec(),
                )
            }
            BreakpointType::Gradient => {
                if distances.len() < 2 {
                    return (distances[0], distances.to_vec());
                }
                let g = numpy::gradient(distances);
                (numpy::percentile(&g, amount), g)
            }
        }
    }

    /// Distances between consecutive vectors, threshold and breakpoints
    /// (`calculate_cosine_distances` and the breakpoint step of `split_text`). `vectors`
    /// has shape `[n][dim]`, one per combined sentence, `n >= 2`.
    ///
    /// # Errors
    /// [`KamradtError::NonFiniteAmount`], [`KamradtError::PercentileOutOfRange`],
    /// [`KamradtError::DimensionMismatch`].
    pub fn breakpoints(&self, vectors: &[Vec<f32>]) -> Result<Breakpoints, KamradtError> {
        self.validate()?;
        let dim = vectors.first().map_or(0, Vec::len);
        let mut norms = Vec::with_capacity(vectors.len());
        let mut degenerate = 0;
        for (index, v) in vectors.iter().enumerate() {
            if v.len() != dim {
                return Err(KamradtError::DimensionMismatch {
                    index,
                    expected: dim,
                    got: v.len(),
                });
            }
            let finite = v.iter().all(|x| x.is_finite());
            let norm = v
                .iter()
                .map(|&x| f64::from(x) * f64::from(x))
                .sum::<f64>()
                .sqrt();
            if !finite || norm == 0.0 || !norm.is_finite() {
                degenerate += 1;
            }
            norms.push(norm);
        }
        let distances: Vec<f64> = vectors
            .windows(2)
            .zip(norms.windows(2))
            .map(|(v, n)| {
                let dot: f64 = v[0]
                    .iter()
                    .zip(&v[1])
                    .map(|(&a, &b)| f64::from(a) * f64::from(b))
                    .sum();
                let sim = dot / (n[0] * n[1]);
                // LangChain: similarity[isnan | isinf] = 0.0
                let sim = if sim.is_finite() { sim } else { 0.0 };
                1.0 - sim
            })
            .collect();
        let (threshold, compared) = self.breakpoint_threshold(&distances);
        let indices = compared
            .iter()
            .enumerate()
            .filter(|(_, &x)| x > threshold)
            .map(|(i, _)| i)
            .collect();
        Ok(Breakpoints {
            distances,
            compared,
            threshold,
            indices,
            degenerate_vectors: degenerate,
        })
    }

    /// Groups `sentences` (their texts, LangChain's pieces) into chunks given one vector
    /// per combined sentence ([`KamradtConfig::combined_sentences`]; shape `[n][dim]`).
    /// `vectors` is ignored (may be empty) when
    /// [`KamradtConfig::needs_embeddings`] is false. Returns consecutive index ranges
    /// partitioning `0..n` in order (`n = 0` gives none) and the counters.
    ///
    /// # Errors
    /// [`KamradtError::LengthMismatch`], [`KamradtError::DimensionMismatch`], or an invalid
    /// amount.
    pub fn groups(
        &self,
        sentences: &[&str],
        vectors: &[Vec<f32>],
    ) -> Result<(Vec<Range<usize>>, KamradtStats), KamradtError> {
        self.validate()?;
        let n = sentences.len();
        let mut stats = KamradtStats {
            sentences: n,
            ..KamradtStats::default()
        };
        let groups: Vec<Range<usize>> = if !self.needs_embeddings(n) {
            (0..n).map(|i| i..i + 1).collect()
        } else {
            if vectors.len() != n {
                return Err(KamradtError::LengthMismatch {
                    sentences: n,
                    vectors: vectors.len(),
                });
            }
            let bp = self.breakpoints(vectors)?;
            stats.embedded = n;
            stats.degenerate_vectors = bp.degenerate_vectors;
            stats.threshold = Some(bp.threshold);
            stats.breakpoints = bp.indices.len();
            let chars: Vec<usize> = sentences.iter().map(|s| s.chars().count()).collect();
            let mut groups = Vec::new();
            let mut start = 0;
            for &index in &bp.indices {
                if let Some(min) = self.min_chunk_size {
                    // len(" ".join(sentences[start..=index]))
                    let joined = chars[start..=index].iter().sum::<usize>() + (index - start);
                    if joined < min {
                        stats.merges += 1;
                        continue;
                    }
                }
                groups.push(start..index + 1);
                start = index + 1;
            }
            if start < n {
                groups.push(start..n);
            }
            groups
        };
        stats.groups = groups.len();
        stats.chunks = groups.len();
        Ok((groups, stats))
    }

    /// LangChain's chunk strings for `groups` of `sentences` (byte spans of `text`): each
    /// group's sentences joined by single spaces (`" ".join(...)` in `split_text`).
    pub fn langchain_texts(
        &self,
        text: &str,
        sentences: &[Span],
        groups: &[Range<usize>],
    ) -> Vec<String> {
        groups
            .iter()
            .map(|g| join_spaces(text, &sentences[g.clone()]))
            .collect()
    }

    /// Chunks `doc` given its sentences ([`split_sentences`] of `doc.text`) and one vector per
    /// combined sentence. Each chunk is the document's span from the group's first sentence
    /// to its last, trimmed of whitespace; blank groups are dropped (module docs).
    ///
    /// # Errors
    /// [`KamradtError::InvalidSentence`] and the errors of [`KamradtConfig::groups`].
    pub fn chunk(
        &self,
        doc: &Document,
        sentences: &[Span],
        vectors: &[Vec<f32>],
    ) -> Result<Vec<Chunk>, KamradtError> {
        self.chunk_with_stats(doc, sentences, vectors)
            .map(|(c, _)| c)
    }

    /// [`KamradtConfig::chunk`] plus the run's counters.
    ///
    /// # Errors
    /// As [`KamradtConfig::chunk`].
    pub fn chunk_with_stats(
        &self,
        doc: &Document,
        sentences: &[Span],
        vectors: &[Vec<f32>],
    ) -> Result<(Vec<Chunk>, KamradtStats), KamradtError> {
        let text = doc.text.as_str();
        let mut prev_end = 0;
        for (index, s) in sentences.iter().enumerate() {
            let ok = s.start <= s.end
                && s.end <= text.len()
                && s.start >= prev_end
                && text.is_char_boundary(s.start)
                && text.is_char_boundary(s.end);
            if !ok {
                return Err(KamradtError::InvalidSentence {
                    index,
                    start: s.start,
                    end: s.end,
                });
            }
            prev_end = s.end;
        }
        let texts: Vec<&str> = sentences.iter().map(|s| &text[s.start..s.end]).collect();
        let (groups, mut stats) = self.groups(&texts, vectors)?;
        let mut chunks = Vec::with_capacity(groups.len());
        for g in &groups {
            let (mut start, mut end) = (sentences[g.start].start, sentences[g.end - 1].end);
            let is_space = |c: char| is_py_whitespace(c) || is_word_separator(c);
            let slice = &text[start..end];
            let trimmed_front = slice.trim_start_matches(is_space);
            start += slice.len() - trimmed_front.len();
            end -= trimmed_front.len() - trimmed_front.trim_end_matches(is_space).len();
            if start >= end {
                stats.empty_dropped += 1;
                continue;
            }
            chunks.push(Chunk::new(doc, start, end));
        }
        stats.chunks = chunks.len();
        Ok((chunks, stats))
    }
}

/// `" ".join(text[s] for s in spans)`.
fn join_spaces(text: &str, spans: &[Span]) -> String {
    let mut out = String::new();
    for (k, s) in spans.iter().enumerate() {
        if k > 0 {
            out.push(' ');
        }
        out.push_str(&text[s.start..s.end]);
    }
    out
}

/// LangChain's `_threshold_from_clusters` (the inverse of the percentile method).
fn threshold_from_clusters(distances: &[f64], number_of_chunks: usize) -> f64 {
    let x1 = distances.len() as f64;
    let (y1, x2, y2) = (0.0_f64, 1.0_f64, 100.0_f64);
    // x = max(min(number_of_chunks, x1), x2)
    let x = (number_of_chunks as f64).min(x1).max(x2);
    let y = if x2 == x1 {
        y2
    } else {
        y1 + ((y2 - y1) / (x2 - x1)) * (x - x1)
    };
    let y = y.clamp(0.0, 100.0);
    numpy::percentile(distances, y)
}

/// numpy's reductions as LangChain calls them, reproduced operation for operation so that
/// thresholds agree to the bit (checked against numpy in
/// `crates/chunker/tests/kamradt_golden.rs`).
pub mod numpy {
    /// numpy's pairwise summation of a contiguous `float64` array (`DOUBLE_pairwise_sum`,
    /// `numpy/_core/src/umath/loops_utils.h.src`): blocks of at most 128 values summed with 8
    /// accumulators, larger arrays split in two at a multiple of 8.
    pub fn pairwise_sum(a: &[f64]) -> f64 {
        let n = a.len();
        if n < 8 {
            let mut res = -0.0;
            for &x in a {
                res += x;
            }
            res
        } else if n <= 128 {
            let mut r = [0.0f64; 8];
            r.copy_from_slice(&a[..8]);
            let mut i = 8;
            while i < n - (n % 8) {
                for (j, rj) in r.iter_mut().enumerate() {
                    *rj += a[i + j];
                }
                i += 8;
            }
            let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            while i < n {
                res += a[i];
                i += 1;
            }
            res
        } else {
            let mut n2 = n / 2;
            n2 -= n2 % 8;
            pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
        }
    }

    /// `np.mean(a)` for a non-empty `float64` array: `(0.0 + pairwise_sum(a)) / n`. NaN for
    /// an empty array (numpy warns and returns NaN).
    pub fn mean(a: &[f64]) -> f64 {
        (0.0 + pairwise_sum(a)) / a.len() as f64
    }

    /// `np.std(a)` (population, `ddof = 0`): `sqrt(sum((a - mean)^2) / n)` with numpy's
    /// summation. NaN for an empty array.
    pub fn std(a: &[f64]) -> f64 {
        let m = mean(a);
        let sq: Vec<f64> = a
            .iter()
            .map(|&x| {
                let d = x - m;
                d * d
            })
            .collect();
        ((0.0 + pairwise_sum(&sq)) / a.len() as f64).sqrt()
    }

    /// `np.percentile(a, q)` with the default `linear` method (Hyndman & Fan type 7) for
    /// `q` in `[0, 100]`: virtual index `(n - 1) * (q / 100)`, then numpy's `_lerp`
    /// (`a + (b - a) * t`, or `b - (b - a) * (1 - t)` when `t >= 0.5`). The input need not
    /// be sorted. NaN for an empty array (numpy raises); NaN inputs are sorted last, as
    /// numpy does, and propagate.
    pub fn percentile(a: &[f64], q: f64) -> f64 {
        if a.is_empty() {
            return f64::NAN;
        }
        let mut s = a.to_vec();
        s.sort_by(f64::total_cmp);
        if s.iter().any(|x| x.is_nan()) {
            return f64::NAN;
        }
        let n = s.len();
        let virtual_index = (n - 1) as f64 * (q / 100.0);
        let (prev, next, gamma) = if virtual_index >= (n - 1) as f64 {
            // numpy sets both neighbours to the last element (index -1).
            (n - 1, n - 1, virtual_index + 1.0)
        } else if virtual_index < 0.0 {
            (0, 0, virtual_index)
        } else {
            let p = virtual_index.floor();
            (p as usize, p as usize + 1, virtual_index - p)
        };
        lerp(s[prev], s[next], gamma)
    }

    /// numpy's `_lerp(a, b, t)`.
    fn lerp(a: f64, b: f64, t: f64) -> f64 {
        let diff = b - a;
        if t >= 0.5 {
            b - diff * (1.0 - t)
        } else {
            a + diff * t
        }
    }

    /// `np.gradient(f, range(len(f)))` (unit spacing, `edge_order = 1`): one-sided
    /// differences at the ends, `(f[i+1] - f[i-1]) / 2` inside. Needs `len >= 2`; shorter
    /// inputs give an empty vector (numpy raises).
    pub fn gradient(f: &[f64]) -> Vec<f64> {
        let n = f.len();
        if n < 2 {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(n);
        out.push((f[1] - f[0]) / 1.0);
        for i in 1..n - 1 {
            out.push((f[i + 1] - f[i - 1]) / 2.0);
        }
        out.push((f[n - 1] - f[n - 2]) / 1.0);
        out
    }
}
