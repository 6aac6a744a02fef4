//! Max-Min semantic chunking (docs/reference.md §5), as pure functions over units (sentences or
//! paragraphs, as byte spans) and one embedding vector per unit.
//!
//! # The rule
//! The reference is `process_sentences` in `maxmin_chunker.py` of hsdslab/MaxMinChunking
//! (the Max-Min chunking paper's published code). Units are visited in order; the current
//! chunk `C` starts with the first unit. For the next unit `x`:
//!
//! * `|C| = 1`, `C = {s}`: `x` joins iff `init_constant * cos(x, s) > max(0, fixed_threshold)`
//!   (the reference sets `adjusted_threshold = 0` in this branch and compares against
//!   `max(adjusted_threshold, fixed_threshold)`; docs/reference.md §5 states the threshold as
//!   `fixed_threshold`, which is the same for every `fixed_threshold >= 0`, the default 0.6
//!   included).
//! * `|C| >= 2`: `x` joins iff
//!   `max_{y in C} cos(x, y) > max(min_pairwise_cos(C) * c * sigmoid(|C| - 1), fixed_threshold)`,
//!   with `sigmoid(t) = 1 / (1 + exp(-t))`, multiplied in the reference's order.
//! * Otherwise `x` starts a new chunk.
//!
//! `min_pairwise_cos(C)` is kept as a running value: when `x` joins, the minimum of its
//! similarities to the members of `C` is folded in, so each step costs `O(|C|)` similarity
//! evaluations and the whole pass `O(sum |C|)`. Defaults `fixed_threshold = 0.6`, `c = 0.9`,
//! `init_constant = 1.5`, strict `>` reproduce the reference exactly.
//!
//! Cosine similarity is computed as the reference's scikit-learn `cosine_similarity` does
//! (each vector divided by its L2 norm, then a dot product), in `f64` from the `f32` inputs
//! (the reference demo passes `float64` arrays of the model's `float32` outputs).
//!
//! # Options (off by default; each counted in [`MaxMinStats`] when it fires)
//! * [`Comparison::Inclusive`]: `>=` instead of `>` in both branches (the Milvus write-up's
//!   variant).
//! * [`MaxMinConfig::max_chunk`]: a unit the rule would add is refused when the chunk would
//!   exceed the size ([`MaxMinStats::forced_splits`]); a single unit larger than the limit
//!   stays one chunk ([`MaxMinStats::oversized_units`]; split such units beforehand with
//!   [`split_oversized`]). Not in the reference.
//! * [`MaxMinConfig::min_chunk`]: after grouping, a chunk smaller than the size is merged
//!   into the neighbour it is more similar to ([`MaxMinStats::merges`]). Not in the
//!   reference.
//! * [`GroupUnit::Paragraph`]: group paragraphs instead of sentences.
//!
//! # Degenerate vectors (docs/reference.md case 7)
//! A vector with a non-finite component or an L2 norm below `10 * f64::EPSILON` is
//! *degenerate*: its similarity to anything is `0.0` (what scikit-learn returns for a zero
//! vector; NaN input makes the reference raise), it is never compared as a NaN, and it is
//! counted in [`MaxMinStats::degenerate_vectors`]. With the defaults a degenerate unit
//! therefore always forms a chunk of its own.
//!
//! # Differences from the reference
//! * No units: no chunks (the reference raises `IndexError` on `sentences[0]`).
//! * NaN/inf vectors are degenerate (above) instead of raising `ValueError`.
//! * The reference returns lists of sentence strings; here a chunk is the byte span from its
//!   first unit's start to its last unit's end, so the text between units (whitespace) is
//!   kept as it is in the document.
//! * Sentences come from [`crate::segment::sentences`], not NLTK punkt (the reference demo's
//!   splitter); the rule itself does not depend on the splitter.

use crate::units::SizeLimit;
use crate::{is_word_separator, word_spans, Chunk, Document, Span};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// Reference default of `fixed_threshold` (maxmin_chunker.py, `process_sentences`).
pub const FIXED_THRESHOLD: f64 = 0.6;
/// Reference default of `c` (maxmin_chunker.py, `process_sentences`).
pub const C: f64 = 0.9;
/// Reference default of `init_constant` (maxmin_chunker.py, `process_sentences`).
pub const INIT_CONSTANT: f64 = 1.5;

/// How a unit's score is compared with the threshold.
///
/// Parsed from and serialized as `strict` / `inclusive`.
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
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Comparison {
    /// `score > threshold`: the reference (maxmin_chunker.py) and the default.
    #[default]
    Strict,
    /// `score >= threshold`: the Milvus "Max-Min semantic chunking" write-up.
    Inclusive,
}

impl Comparison {
    /// The canonical name (`strict`, `inclusive`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether `score` passes `threshold` under this comparison. Both are finite here.
    fn accepts(self, score: f64, threshold: f64) -> bool {
        match self {
            Comparison::Strict => score > threshold,
            Comparison::Inclusive => score >= threshold,
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Comparison {
    type Err = MaxMinError;

    /// Parses `strict` or `inclusive`.
    ///
    /// # Errors
    /// [`MaxMinError::UnknownValue`] naming the field `comparison`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "strict" => Ok(Comparison::Strict),
            "inclusive" => Ok(Comparison::Inclusive),
            _ => Err(MaxMinError::UnknownValue {
                field: "comparison",
                got: s.to_string(),
                valid: "strict, inclusive",
            }),
        }
    }
}

/// The unit Max-Min groups: sentences (the reference) or paragraphs.
///
/// Parsed from and serialized as `sentence` / `paragraph`.
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
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum GroupUnit {
    /// Sentences of [`crate::segment::sentences`]. The default.
    #[default]
    Sentence,
    /// Paragraphs of [`paragraphs`] (blocks separated by blank lines).
    Paragraph,
}

impl GroupUnit {
    /// The canonical name (`sentence`, `paragraph`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The units of `text` as byte spans: [`crate::segment::sentences`] or [`paragraphs`].
    /// Spans are non-empty, trimmed, strictly increasing; a blank text has none.
    pub fn spans(self, text: &str) -> Vec<Span> {
        match self {
            GroupUnit::Sentence => crate::segment::sentences(text),
            GroupUnit::Paragraph => paragraphs(text),
        }
    }
}

impl fmt::Display for GroupUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GroupUnit {
    type Err = MaxMinError;

    /// Parses `sentence` or `paragraph`.
    ///
    /// # Errors
    /// [`MaxMinError::UnknownValue`] naming the field `unit`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sentence" => Ok(GroupUnit::Sentence),
            "paragraph" => Ok(GroupUnit::Paragraph),
            _ => Err(MaxMinError::UnknownValue {
                field: "unit",
                got: s.to_string(),
                valid: "sentence, paragraph",
            }),
        }
    }
}

/// Errors of Max-Min configuration and input. Every message names the field or the input
/// at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MaxMinError {
    /// A numeric parameter is NaN or infinite.
    #[error("field `{field}` must be a finite number (got {value})")]
    NonFinite {
        /// The parameter (`fixed_threshold`, `c`, `init_constant`).
        field: &'static str,
        /// The rejected value.
        value: f64,
    },
    /// A size limit is 0.
    #[error("field `{field}` must be at least 1 (got 0)")]
    ZeroSize {
        /// `max_chunk`, `min_chunk` or `max_unit`.
        field: &'static str,
    },
    /// Tokens were asked for without a tokenizer.
    #[error(
        "field `tokenizer`: unit `tokens` needs a tokenizer.json \
         (run `chunkbench models fetch` for the default models)"
    )]
    MissingTokenizer,
    /// A string option has an unknown value.
    #[error("field `{field}`: unknown value `{got}`; valid values are: {valid}")]
    UnknownValue {
        /// The option.
        field: &'static str,
        /// The rejected input.
        got: String,
        /// The accepted values.
        valid: &'static str,
    },
    /// The number of vectors differs from the number of units.
    #[error("{units} units but {vectors} vectors: exactly one vector per unit is required")]
    LengthMismatch {
        /// Units given.
        units: usize,
        /// Vectors given.
        vectors: usize,
    },
    /// Vectors of different dimensions (two embedders mixed up).
    #[error("vector {index} has dimension {got}, expected {expected} (that of vector 0)")]
    DimensionMismatch {
        /// Index of the first vector whose length differs from vector 0's.
        index: usize,
        /// Dimension of vector 0.
        expected: usize,
        /// Dimension of vector `index`.
        got: usize,
    },
    /// A unit span is empty, out of the text, off a char boundary, or not after the previous
    /// unit.
    #[error(
        "unit {index} ({start}..{end}) is not a valid span: units must be non-empty, inside \
         the text, on char boundaries and in increasing, non-overlapping order"
    )]
    InvalidUnit {
        /// Index of the unit.
        index: usize,
        /// Its start byte.
        start: usize,
        /// Its end byte.
        end: usize,
    },
    /// `max_chunk`/`min_chunk` is set but no sizes were given ([`MaxMinConfig::groups`]).
    #[error(
        "fields `max_chunk`/`min_chunk` need unit sizes: use MaxMinConfig::groups_sized or \
         MaxMinConfig::chunk"
    )]
    SizesRequired,
}

impl From<crate::units::SizeLimitError> for MaxMinError {
    fn from(e: crate::units::SizeLimitError) -> Self {
        match e {
            crate::units::SizeLimitError::ZeroSize { field } => MaxMinError::ZeroSize { field },
            crate::units::SizeLimitError::MissingTokenizer => MaxMinError::MissingTokenizer,
        }
    }
}

/// Max-Min parameters. [`Default`] is the reference configuration (maxmin_chunker.py
/// `process_sentences` defaults, strict comparison, sentences, no size limits).
///
/// Invalid values (non-finite numbers) are reported by [`MaxMinConfig::validate`], which
/// every entry point calls.
#[derive(Debug, Clone, PartialEq)]
pub struct MaxMinConfig {
    /// Lower bound of the join threshold (reference `fixed_threshold`, default 0.6).
    pub fixed_threshold: f64,
    /// Scale of the adaptive threshold `c * sigmoid(|C| - 1) * min_pairwise_cos(C)`
    /// (reference `c`, default 0.9).
    pub c: f64,
    /// Multiplier of `cos(x, s)` when the chunk has one unit (reference `init_constant`,
    /// default 1.5).
    pub init_constant: f64,
    /// `>` (reference, default) or `>=`.
    pub comparison: Comparison,
    /// Maximum chunk size (forced splits); `None` (default) as in the reference.
    pub max_chunk: Option<SizeLimit>,
    /// Minimum chunk size (small chunks merged into a neighbour); `None` (default).
    pub min_chunk: Option<SizeLimit>,
    /// What is grouped: sentences (default) or paragraphs.
    pub unit: GroupUnit,
}

impl Default for MaxMinConfig {
    fn default() -> Self {
        MaxMinConfig {
            fixed_threshold: FIXED_THRESHOLD,
            c: C,
            init_constant: INIT_CONSTANT,
            comparison: Comparison::Strict,
            max_chunk: None,
            min_chunk: None,
            unit: GroupUnit::Sentence,
        }
    }
}

/// Counters and per-chunk values of one Max-Min run (or several, summed with
/// [`MaxMinStats::add`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MaxMinStats {
    /// Units (sentences or paragraphs) grouped.
    pub units: usize,
    /// Chunks returned.
    pub chunks: usize,
    /// Cosine similarities evaluated (`sum |C|` over the steps, plus merge checks).
    pub similarities: usize,
    /// Degenerate vectors (zero norm or a non-finite component), each given similarity 0.
    pub degenerate_vectors: usize,
    /// Units the rule accepted but `max_chunk` refused (a new chunk was started).
    pub forced_splits: usize,
    /// Single units larger than `max_chunk` (each is one chunk; docs/reference.md invariant 5).
    pub oversized_units: usize,
    /// Chunks smaller than `min_chunk` merged into a neighbour.
    pub merges: usize,
    /// Returned chunks still smaller than `min_chunk` (the only chunk, or every merge would
    /// exceed `max_chunk`).
    pub small_unmerged: usize,
    /// Per returned chunk, in order: the minimum pairwise cosine similarity of its units
    /// (`None` for a one-unit chunk). This is the reference's running `pairwise_min`.
    pub min_similarity: Vec<Option<f64>>,
}

impl MaxMinStats {
    /// Adds `other`'s counters to these and appends its per-chunk values.
    pub fn add(&mut self, other: &MaxMinStats) {
        self.units += other.units;
        self.chunks += other.chunks;
        self.similarities += other.similarities;
        self.degenerate_vectors += other.degenerate_vectors;
        self.forced_splits += other.forced_splits;
        self.oversized_units += other.oversized_units;
        self.merges += other.merges;
        self.small_unmerged += other.small_unmerged;
        self.min_similarity.extend_from_slice(&other.min_similarity);
    }
}

/// Unit-normalised copies of the input vectors (`f64`), with degenerate vectors flagged.
struct Normalized {
    data: Vec<f64>,
    dim: usize,
    ok: Vec<bool>,
}

impl Normalized {
    /// Checks dimensions and normalises like scikit-learn's `normalize` (`x / ||x||`).
    fn new(vectors: &[Vec<f32>]) -> Result<Self, MaxMinError> {
        let dim = vectors.first().map_or(0, Vec::len);
        let mut data = Vec::with_capacity(vectors.len() * dim);
        let mut ok = Vec::with_capacity(vectors.len());
        for (index, v) in vectors.iter().enumerate() {
            if v.len() != dim {
                return Err(MaxMinError::DimensionMismatch {
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
            // scikit-learn treats norms below 10 * eps as zero (`_handle_zeros_in_scale`).
            let good = finite && norm.is_finite() && norm >= 10.0 * f64::EPSILON;
            ok.push(good);
            if good {
                data.extend(v.iter().map(|&x| f64::from(x) / norm));
            } else {
                data.extend(std::iter::repeat_n(0.0, dim));
            }
        }
        Ok(Normalized { data, dim, ok })
    }

    fn degenerate(&self) -> usize {
        self.ok.iter().filter(|&&g| !g).count()
    }

    /// Cosine similarity of units `i` and `j`; `0.0` when either vector is degenerate.
    /// Always finite.
    fn sim(&self, i: usize, j: usize) -> f64 {
        if !(self.ok[i] && self.ok[j]) {
            return 0.0;
        }
        let a = &self.data[i * self.dim..(i + 1) * self.dim];
        let b = &self.data[j * self.dim..(j + 1) * self.dim];
        let s: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        if s.is_finite() {
            s
        } else {
            0.0
        }
    }
}

/// The reference's `sigmoid(x) = 1 / (1 + np.exp(-x))`.
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

type SizeFn<'a> = &'a mut dyn FnMut(Range<usize>) -> usize;

impl MaxMinConfig {
    /// The reference configuration (same as [`Default`]).
    pub fn reference() -> Self {
        Self::default()
    }

    /// Checks that `fixed_threshold`, `c` and `init_constant` are finite.
    ///
    /// # Errors
    /// [`MaxMinError::NonFinite`] naming the first bad field.
    pub fn validate(&self) -> Result<(), MaxMinError> {
        for (field, value) in [
            ("fixed_threshold", self.fixed_threshold),
            ("c", self.c),
            ("init_constant", self.init_constant),
        ] {
            if !value.is_finite() {
                return Err(MaxMinError::NonFinite { field, value });
            }
        }
        Ok(())
    }

    /// The units of `text` this configuration groups ([`GroupUnit::spans`]).
    pub fn units(&self, text: &str) -> Vec<Span> {
        self.unit.spans(text)
    }

    /// Groups units given one vector per unit (shape `[n][dim]`, any `dim`, `f32`): returns
    /// the chunks as consecutive, non-empty index ranges that partition `0..n` in order, and
    /// the run's [`MaxMinStats`]. `n = 0` gives no groups; `n = 1` one group and no
    /// similarity is computed (docs/reference.md case 4).
    ///
    /// Source: maxmin_chunker.py `process_sentences` (module docs for the rule).
    ///
    /// # Errors
    /// [`MaxMinError::NonFinite`], [`MaxMinError::DimensionMismatch`], and
    /// [`MaxMinError::SizesRequired`] when `max_chunk` or `min_chunk` is set (use
    /// [`MaxMinConfig::groups_sized`]).
    pub fn groups(
        &self,
        vectors: &[Vec<f32>],
    ) -> Result<(Vec<Range<usize>>, MaxMinStats), MaxMinError> {
        if self.max_chunk.is_some() || self.min_chunk.is_some() {
            return Err(MaxMinError::SizesRequired);
        }
        self.run(vectors, None, None)
    }

    /// [`MaxMinConfig::groups`] with size limits: `size_of(a..b)` must return the size of
    /// the chunk made of units `a..b`, in the unit of `max_chunk` / `min_chunk` (both are
    /// measured with the same function). [`MaxMinConfig::chunk`] supplies it from the text.
    ///
    /// # Errors
    /// [`MaxMinError::NonFinite`], [`MaxMinError::DimensionMismatch`].
    pub fn groups_sized(
        &self,
        vectors: &[Vec<f32>],
        size_of: impl FnMut(Range<usize>) -> usize,
    ) -> Result<(Vec<Range<usize>>, MaxMinStats), MaxMinError> {
        let cell = std::cell::RefCell::new(size_of);
        let mut for_max = |r: Range<usize>| (cell.borrow_mut())(r);
        let mut for_min = |r: Range<usize>| (cell.borrow_mut())(r);
        self.run(vectors, Some(&mut for_max), Some(&mut for_min))
    }

    /// Chunks `doc` given its units (byte spans, e.g. [`MaxMinConfig::units`] or the output
    /// of [`split_oversized`]) and one vector per unit. Each chunk spans from its first
    /// unit's start to its last unit's end, so its text is an exact slice of `doc.text`.
    ///
    /// Sizes for `max_chunk` / `min_chunk` are measured on the chunk's slice with the
    /// limit's [`Sizer`] (when both are set, each with its own sizer).
    ///
    /// # Errors
    /// [`MaxMinError::InvalidUnit`], [`MaxMinError::LengthMismatch`],
    /// [`MaxMinError::NonFinite`], [`MaxMinError::DimensionMismatch`].
    pub fn chunk(
        &self,
        doc: &Document,
        units: &[Span],
        vectors: &[Vec<f32>],
    ) -> Result<Vec<Chunk>, MaxMinError> {
        self.chunk_with_stats(doc, units, vectors).map(|(c, _)| c)
    }

    /// [`MaxMinConfig::chunk`] plus the run's [`MaxMinStats`] (`min_similarity[i]` belongs
    /// to the `i`-th chunk).
    ///
    /// # Errors
    /// As [`MaxMinConfig::chunk`].
    pub fn chunk_with_stats(
        &self,
        doc: &Document,
        units: &[Span],
        vectors: &[Vec<f32>],
    ) -> Result<(Vec<Chunk>, MaxMinStats), MaxMinError> {
        validate_units(&doc.text, units)?;
        if units.len() != vectors.len() {
            return Err(MaxMinError::LengthMismatch {
                units: units.len(),
                vectors: vectors.len(),
            });
        }
        let text = doc.text.as_str();
        let slice = |r: &Range<usize>| &text[units[r.start].start..units[r.end - 1].end];
        let mut size_max =
            |r: Range<usize>| self.max_chunk.as_ref().map_or(0, |l| l.measure(slice(&r)));
        let mut size_min =
            |r: Range<usize>| self.min_chunk.as_ref().map_or(0, |l| l.measure(slice(&r)));
        let (groups, stats) = self.run(
            vectors,
            self.max_chunk
                .is_some()
                .then_some(&mut size_max as SizeFn<'_>),
            self.min_chunk
                .is_some()
                .then_some(&mut size_min as SizeFn<'_>),
        )?;
        let chunks = groups
            .iter()
            .map(|g| Chunk::new(doc, units[g.start].start, units[g.end - 1].end))
            .collect();
        Ok((chunks, stats))
    }

    /// The rule, plus the optional limits; `size_max` / `size_min` measure a range of
    /// units for `max_chunk` / `min_chunk` and are required when the limit is set.
    fn run(
        &self,
        vectors: &[Vec<f32>],
        mut size_max: Option<SizeFn<'_>>,
        size_min: Option<SizeFn<'_>>,
    ) -> Result<(Vec<Range<usize>>, MaxMinStats), MaxMinError> {
        self.validate()?;
        let n = vectors.len();
        let mut stats = MaxMinStats {
            units: n,
            ..MaxMinStats::default()
        };
        if n == 0 {
            return Ok((Vec::new(), stats));
        }
        let norm = Normalized::new(vectors)?;
        stats.degenerate_vectors = norm.degenerate();
        if (self.max_chunk.is_some() && size_max.is_none())
            || (self.min_chunk.is_some() && size_min.is_none())
        {
            return Err(MaxMinError::SizesRequired);
        }
        let max = self.max_chunk.as_ref().map(SizeLimit::size);

        let mut groups: Vec<Range<usize>> = Vec::new();
        let mut mins: Vec<Option<f64>> = Vec::new();
        let mut start = 0usize;
        // min_pairwise_cos(C); meaningful only while |C| >= 2.
        let mut pairwise_min = f64::INFINITY;
        let single_threshold = self.fixed_threshold.max(0.0);
        for i in 1..n {
            let size = i - start;
            let (score, threshold, next_min) = if size == 1 {
                // Reference: adjusted_threshold = 0; pairwise_min = cos(x, s);
                // new_sentence_similarity = init_constant * pairwise_min.
                let s = norm.sim(i, start);
                stats.similarities += 1;
                (self.init_constant * s, single_threshold, s)
            } else {
                let (mut most, mut least) = (f64::NEG_INFINITY, f64::INFINITY);
                for j in start..i {
                    let s = norm.sim(i, j);
                    most = most.max(s);
                    least = least.min(s);
                }
                stats.similarities += size;
                let adjusted = pairwise_min * self.c * sigmoid((size - 1) as f64);
                (
                    most,
                    adjusted.max(self.fixed_threshold),
                    least.min(pairwise_min),
                )
            };
            let mut join = self.comparison.accepts(score, threshold);
            if join {
                if let (Some(max), Some(f)) = (max, size_max.as_mut()) {
                    if f(start..i + 1) > max {
                        join = false;
                        stats.forced_splits += 1;
                    }
                }
            }
            if join {
                pairwise_min = next_min;
            } else {
                // `+ 0.0` reports a zero similarity (degenerate vectors) as 0, never -0.
                mins.push((size >= 2).then_some(pairwise_min + 0.0));
                groups.push(start..i);
                start = i;
                pairwise_min = f64::INFINITY;
            }
        }
        mins.push((n - start >= 2).then_some(pairwise_min + 0.0));
        groups.push(start..n);

        if let (Some(max), Some(f)) = (max, size_max.as_mut()) {
            stats.oversized_units = (0..n).filter(|&i| f(i..i + 1) > max).count();
        }
        let groups = match (&self.min_chunk, size_min) {
            (Some(min), Some(f)) => {
                let mut no_max = |_: Range<usize>| 0;
                let size_max: SizeFn<'_> = match size_max {
                    Some(g) => g,
                    None => &mut no_max,
                };
                merge_small(groups, &mut mins, &norm, min, max, f, size_max, &mut stats)
            }
            _ => groups,
        };
        stats.chunks = groups.len();
        stats.min_similarity = mins;
        Ok((groups, stats))
    }
}

/// Merges groups smaller than `min` (measured by `size_min`) into the neighbour whose
/// boundary similarity is higher (the previous one on ties), unless the merged group would
/// exceed `max` (measured by `size_max`), in which case the other neighbour is tried. A
/// merged group is checked again. Updates `mins` (per-group minimum pairwise similarity).
#[allow(clippy::too_many_arguments)]
fn merge_small(
    mut groups: Vec<Range<usize>>,
    mins: &mut Vec<Option<f64>>,
    norm: &Normalized,
    min: &SizeLimit,
    max: Option<usize>,
    size_min: &mut dyn FnMut(Range<usize>) -> usize,
    size_max: &mut dyn FnMut(Range<usize>) -> usize,
    stats: &mut MaxMinStats,
) -> Vec<Range<usize>> {
    let mut stuck = vec![false; groups.len()];
    let mut i = 0;
    while i < groups.len() {
        if groups.len() == 1 || stuck[i] || size_min(groups[i].clone()) >= min.size() {
            i += 1;
            continue;
        }
        let prev = i.checked_sub(1);
        let next = (i + 1 < groups.len()).then_some(i + 1);
        let sim_prev = prev.map(|p| norm.sim(groups[p].end - 1, groups[i].start));
        let sim_next = next.map(|q| norm.sim(groups[i].end - 1, groups[q].start));
        stats.similarities += usize::from(prev.is_some()) + usize::from(next.is_some());
        let order = match (sim_prev, sim_next) {
            (Some(p), Some(q)) if q > p => [next, prev],
            _ => [prev, next],
        };
        let mut merged_into = None;
        for cand in order.into_iter().flatten() {
            let (lo, hi) = if cand < i { (cand, i) } else { (i, cand) };
            let range = groups[lo].start..groups[hi].end;
            if max.is_none_or(|m| size_max(range.clone()) <= m) {
                merged_into = Some((lo, hi, range));
                break;
            }
        }
        match merged_into {
            Some((lo, hi, range)) => {
                let mut cross = f64::INFINITY;
                for a in groups[lo].clone() {
                    for b in groups[hi].clone() {
                        cross = cross.min(norm.sim(a, b));
                    }
                }
                stats.similarities += groups[lo].len() * groups[hi].len();
                let m = [mins[lo], mins[hi], Some(cross)]
                    .into_iter()
                    .flatten()
                    .fold(f64::INFINITY, f64::min);
                groups[lo] = range;
                mins[lo] = Some(m + 0.0);
                groups.remove(hi);
                mins.remove(hi);
                stuck.remove(hi);
                stuck[lo] = false;
                stats.merges += 1;
                i = lo;
            }
            None => {
                stuck[i] = true;
                i += 1;
            }
        }
    }
    stats.small_unmerged = groups
        .iter()
        .filter(|g| size_min((*g).clone()) < min.size())
        .count();
    groups
}

/// Max-Min with the reference configuration ([`MaxMinConfig::default`]): groups of units
/// given one vector per unit. Shapes, errors and source as [`MaxMinConfig::groups`].
///
/// # Errors
/// [`MaxMinError::DimensionMismatch`].
pub fn maxmin_groups(
    vectors: &[Vec<f32>],
) -> Result<(Vec<Range<usize>>, MaxMinStats), MaxMinError> {
    MaxMinConfig::default().groups(vectors)
}

/// Checks that `units` are non-empty, in-bounds, char-aligned, increasing, disjoint spans.
fn validate_units(text: &str, units: &[Span]) -> Result<(), MaxMinError> {
    let mut prev_end = 0;
    for (index, u) in units.iter().enumerate() {
        let ok = u.start < u.end
            && u.end <= text.len()
            && u.start >= prev_end
            && text.is_char_boundary(u.start)
            && text.is_char_boundary(u.end);
        if !ok {
            return Err(MaxMinError::InvalidUnit {
                index,
                start: u.start,
                end: u.end,
            });
        }
        prev_end = u.end;
    }
    Ok(())
}

/// Paragraphs of `text` as byte spans: maximal blocks separated by a whitespace gap that
/// holds two or more line breaks (`"\r\n"`, lone `"\r"`, `"\n"`, U+0085, U+2028 each count
/// as one) or a U+2029 paragraph separator — the same paragraph-break rule as
/// [`crate::segment`] rule 1. Spans are trimmed of separators
/// ([`crate::is_word_separator`]), non-empty and strictly increasing; a blank text has none.
pub fn paragraphs(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let mut block_start: Option<usize> = None;
    let mut last_end = 0; // end of the last non-separator char of the current block
    let mut breaks = 0usize;
    let mut prev_cr = false;
    let mut hard = false;
    for (i, ch) in text.char_indices() {
        if is_word_separator(ch) {
            match ch {
                '\n' if prev_cr => {}
                '\n' | '\r' | '\u{85}' | '\u{2028}' => breaks += 1,
                '\u{2029}' => hard = true,
                _ => {}
            }
            prev_cr = ch == '\r';
            continue;
        }
        prev_cr = false;
        if let Some(s) = block_start {
            if breaks >= 2 || hard {
                out.push(Span {
                    start: s,
                    end: last_end,
                });
                block_start = Some(i);
            }
        } else {
            block_start = Some(i);
        }
        breaks = 0;
        hard = false;
        last_end = i + ch.len_utf8();
    }
    if let Some(s) = block_start {
        out.push(Span {
            start: s,
            end: last_end,
        });
    }
    out
}

/// Counters of [`split_oversized`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OversizedStats {
    /// Units larger than the limit that were split.
    pub units_split: usize,
    /// Pieces those units were split into (included in the output).
    pub pieces: usize,
    /// Single words larger than the limit, split inside the word on char (or token)
    /// boundaries.
    pub words_split: usize,
    /// Pieces still larger than the limit: a single token or char the sizer measures as
    /// more than the limit (not seen with word, char or WordPiece sizers).
    pub still_oversized: usize,
}

/// Splits units larger than `limit` into pieces of at most `limit` (in its unit) before
/// embedding, so that an embedder with a maximum input length never silently drops a tail
/// (docs/reference.md case 8). For MiniLM (max_seq_length 256 including `[CLS]` and `[SEP]`) use a
/// token limit of 254.
///
/// Pieces are cut greedily on word boundaries ([`crate::word_spans`]): each piece is a run
/// of whole words, as long as possible; a single word longer than the limit is cut inside
/// on the sizer's unit boundaries (tokens or chars, always char-aligned). Units within the
/// limit are returned unchanged. The output spans are non-empty, trimmed, strictly
/// increasing, cover every word of the input units, and (except in
/// [`OversizedStats::still_oversized`] cases) measure at most `limit`.
///
/// Input: `units` are byte spans of `text` in increasing order (e.g.
/// [`MaxMinConfig::units`]). Output: the new unit spans and the counters.
pub fn split_oversized(
    text: &str,
    units: &[Span],
    limit: &SizeLimit,
) -> (Vec<Span>, OversizedStats) {
    let mut out = Vec::with_capacity(units.len());
    let mut stats = OversizedStats::default();
    let n = limit.size();
    for u in units {
        if limit.measure(&text[u.start..u.end]) <= n {
            out.push(*u);
            continue;
        }
        stats.units_split += 1;
        let before = out.len();
        let words: Vec<Span> = word_spans(&text[u.start..u.end])
            .into_iter()
            .map(|w| Span {
                start: u.start + w.start,
                end: u.start + w.end,
            })
            .collect();
        let mut piece: Option<(usize, usize, usize)> = None; // (first word, last word, est)
        for (k, w) in words.iter().enumerate() {
            let wsize = limit.measure(&text[w.start..w.end]);
            if wsize > n {
                if let Some((a, b, _)) = piece.take() {
                    flush_words(text, &words[a..=b], limit, &mut out, &mut stats);
                }
                stats.words_split += 1;
                split_word(text, *w, limit, &mut out, &mut stats);
                continue;
            }
            piece = match piece {
                None => Some((k, k, wsize)),
                Some((a, b, est)) => {
                    // Gap plus word: exact for words and chars, a close estimate for tokens
                    // (verified when the piece is flushed).
                    let add = limit.measure(&text[words[b].end..w.end]);
                    if est + add <= n {
                        Some((a, k, est + add))
                    } else {
                        flush_words(text, &words[a..=b], limit, &mut out, &mut stats);
                        Some((k, k, wsize))
                    }
                }
            };
        }
        if let Some((a, b, _)) = piece {
            flush_words(text, &words[a..=b], limit, &mut out, &mut stats);
        }
        stats.pieces += out.len() - before;
    }
    (out, stats)
}

/// Greedily joins consecutive `units` (byte spans of `text`, in increasing order) into spans
/// that measure at most `limit` in its unit: each output span runs from one unit's start to a
/// later unit's end and is as long as possible. A unit that alone exceeds the limit is
/// returned alone (split such units first with [`split_oversized`]). Used to bound the chunks
/// of a semantic chunker by a size: the units are the chunk's sentences.
pub fn pack_units(text: &str, units: &[Span], limit: &SizeLimit) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut current: Option<Span> = None;
    for u in units {
        current = Some(match current {
            None => *u,
            Some(c) => {
                let joined = Span {
                    start: c.start,
                    end: u.end,
                };
                if limit.measure(&text[joined.start..joined.end]) <= limit.size() {
                    joined
                } else {
                    out.push(c);
                    *u
                }
            }
        });
    }
    out.extend(current);
    out
}

/// Emits the run of whole `words` as one piece, or, if it measures more than the limit
/// (non-additive token counts), as the longest exact-greedy pieces.
fn flush_words(
    text: &str,
    words: &[Span],
    limit: &SizeLimit,
    out: &mut Vec<Span>,
    stats: &mut OversizedStats,
) {
    let span = |a: usize, b: usize| Span {
        start: words[a].start,
        end: words[b].end,
    };
    let all = span(0, words.len() - 1);
    if limit.measure(&text[all.start..all.end]) <= limit.size() {
        out.push(all);
        return;
    }
    let mut a = 0;
    while a < words.len() {
        let mut b = a;
        while b + 1 < words.len() {
            let s = span(a, b + 1);
            if limit.measure(&text[s.start..s.end]) > limit.size() {
                break;
            }
            b += 1;
        }
        let s = span(a, b);
        if limit.measure(&text[s.start..s.end]) > limit.size() {
            stats.still_oversized += 1;
        }
        out.push(s);
        a = b + 1;
    }
}

/// Cuts one word longer than the limit on the sizer's unit boundaries (token or char
/// starts), each piece as long as possible.
fn split_word(
    text: &str,
    w: Span,
    limit: &SizeLimit,
    out: &mut Vec<Span>,
    stats: &mut OversizedStats,
) {
    let word = &text[w.start..w.end];
    // Candidate cut points: starts of the sizer's units, strictly increasing, plus the end.
    let mut cuts: Vec<usize> = Vec::new();
    for s in limit.sizer().unit_spans(word) {
        if cuts.last().is_none_or(|&l| s.start > l) {
            cuts.push(s.start);
        }
    }
    if cuts.first() != Some(&0) {
        cuts.insert(0, 0);
    }
    cuts.push(word.len());
    let n = limit.size();
    let mut a = 0; // index into cuts
    while a + 1 < cuts.len() {
        // Start with n units, then shrink until the piece measures <= n (at least one).
        let mut b = (a + n).min(cuts.len() - 1);
        while b > a + 1 && limit.measure(&word[cuts[a]..cuts[b]]) > n {
            b -= 1;
        }
        if limit.measure(&word[cuts[a]..cuts[b]]) > n {
            stats.still_oversized += 1;
        }
        out.push(Span {
            start: w.start + cuts[a],
            end: w.start + cuts[b],
        });
        a = b;
    }
}

/// Per-strategy chunk size summary for run reports: chunk count, words per chunk (min,
/// median, 95th percentile, max; percentiles by linear interpolation as numpy's default),
/// forced splits and merges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ChunkSummary {
    /// Number of chunks.
    pub chunks: usize,
    /// Fewest words in a chunk (0 when there are no chunks).
    pub words_min: usize,
    /// Median words per chunk (0 when there are no chunks).
    pub words_median: f64,
    /// 95th percentile of words per chunk (0 when there are no chunks).
    pub words_p95: f64,
    /// Most words in a chunk (0 when there are no chunks).
    pub words_max: usize,
    /// Forced splits (a size limit refused a unit), as counted by the strategy.
    pub forced_splits: usize,
    /// Merges of small chunks, as counted by the strategy.
    pub merges: usize,
}

impl ChunkSummary {
    /// Summarises `chunks` (words = [`Chunk::words`]) with the strategy's counters.
    pub fn from_chunks(chunks: &[Chunk], forced_splits: usize, merges: usize) -> Self {
        let words: Vec<f64> = chunks.iter().map(|c| c.words as f64).collect();
        if words.is_empty() {
            return ChunkSummary {
                forced_splits,
                merges,
                ..ChunkSummary::default()
            };
        }
        ChunkSummary {
            chunks: chunks.len(),
            words_min: chunks.iter().map(|c| c.words).min().unwrap_or(0),
            words_median: crate::kamradt::numpy::percentile(&words, 50.0),
            words_p95: crate::kamradt::numpy::percentile(&words, 95.0),
            words_max: chunks.iter().map(|c| c.words).max().unwrap_or(0),
            forced_splits,
            merges,
        }
    }
}
