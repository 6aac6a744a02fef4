//! `kind: cluster-semantic` — Chroma's ClusterSemanticChunker (Smith & Troynikov 2024,
//! "Evaluating Chunking Strategies for Retrieval", Chroma technical report; reference
//! implementation `chunking_evaluation/chunking/cluster_semantic_chunker.py`):
//!
//! 1. Each document is cut into pieces of at most `min_size` units with the recursive splitter
//!    (separators `"\n\n"`, `"\n"`, `"."`, `"?"`, `"!"`, `" "`, `""`; overlap 0; the
//!    separator kept at the start of the next piece, pieces trimmed: the reference's
//!    `RecursiveTokenChunker`, LangChain's semantics).
//! 2. The pieces are embedded (the run's embedder) and normalised; S = their pairwise dot
//!    products. The mean of S's strict upper triangle is subtracted from S and its diagonal is
//!    set to 0.
//! 3. Dynamic programming over prefixes: `dp[i] = max over s in 1..=max_size/min_size of
//!    sum(S[i-s+1..=i, i-s+1..=i]) + dp[i-s]` (`dp[-1] = 0`), with `dp` initialised to 0, a
//!    candidate taken only when strictly greater, sizes tried in increasing order, and `start[i]`
//!    initialised to 0. Backtracking from the last piece gives the chunks.
//!
//! One departure from the reference, where it breaks `max_size`: where no candidate beats 0 at
//! piece `i`, the reference leaves `start[i]` at 0, so a backtrack reaching `i` takes the whole
//! prefix `0..=i` as one chunk — with all-non-positive rewards (every piece as similar as the
//! average) a document of any length became one chunk, whatever `max_size`, although its
//! pieces are divisible. Here that fallback is kept while the prefix fits (`i + 1 ≤ max_size /
//! min_size` pieces, so every boundary the reference draws within `max_size` is drawn the
//! same), and beyond that `start[i]` is the largest chunk that fits, `i + 1 − max_size /
//! min_size` (`dp[i]` stays 0, as in the reference). Chunks longer than `max_size` are then
//! only pieces longer than it, counted in `over_size` (chunk_stats.csv).
//!
//! Differences: a chunk is the exact byte span from its first piece's start to its last
//! piece's end (the reference joins piece texts with a space); the sizes are in the run's
//! units (default MiniLM word-piece tokens; the reference counts OpenAI `cl100k_base` tokens);
//! S is computed in f64 from the f32 vectors.

use super::{check_tokenizer_field, common, Chunker, Params, StrategyStats};
use anyhow::{bail, Context, Result};
use chunker::SizeLimit;
use chunker::{Chunk, Document, RecursiveChunker, Span, Unit};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The reference's piece separators, tried in order.
pub const SEPARATORS: [&str; 7] = ["\n\n", "\n", ".", "?", "!", " ", ""];

/// ClusterSemanticChunker settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSemantic {
    /// Unit of the sizes: `tokens` (default), `words` or `chars`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Largest chunk in units (reference `max_chunk_size`, default 400); a chunk holds at most
    /// `max_size / min_size` pieces.
    #[serde(default = "default_max")]
    pub max_size: usize,
    /// Piece size in units (reference `min_chunk_size`, default 50).
    #[serde(default = "default_min")]
    pub min_size: usize,
    /// tokenizer.json for `unit: tokens` (default [`super::DEFAULT_TOKENIZER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
}

fn default_max() -> usize {
    400
}
fn default_min() -> usize {
    50
}

impl ClusterSemantic {
    fn unit(&self) -> Unit {
        self.unit.unwrap_or(Unit::Tokens)
    }
}

impl Params for ClusterSemantic {
    const KIND: &'static str = "cluster-semantic";
    const SUMMARY: &'static str = "Chroma ClusterSemanticChunker: recursive pieces of `min_size` (50) joined into chunks of up to `max_size` (400) by dynamic programming over piece similarities (the run's embedder); `unit` tokens (default), words or chars";

    fn needs_embedder(&self) -> bool {
        true
    }

    fn tokenizer_file(&self) -> Option<PathBuf> {
        common::tokenizer_file(self.unit(), &self.tokenizer)
    }

    fn check(&self) -> Result<()> {
        check_tokenizer_field(self.unit(), &self.tokenizer)?;
        if self.min_size == 0 {
            bail!("field `min_size` must be at least 1");
        }
        if self.max_size < self.min_size {
            bail!(
                "field `max_size` ({}) must be at least `min_size` ({})",
                self.max_size,
                self.min_size
            );
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let tokenizer = common::load_tokenizer(self.unit(), &self.tokenizer)?;
        let pieces = RecursiveChunker::new(self.min_size, 0)?
            .with_separators(SEPARATORS, false)?
            .with_unit(self.unit(), tokenizer)?;
        let limit = SizeLimit::new(self.max_size, pieces.sizer().clone())?;
        Ok(Box::new(ClusterChunker {
            pieces,
            max_pieces: self.max_size / self.min_size,
            limit,
        }))
    }
}

struct ClusterChunker {
    pieces: RecursiveChunker,
    max_pieces: usize,
    limit: SizeLimit,
}

impl Chunker for ClusterChunker {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        embedder: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        use rayon::prelude::*;
        let embedder =
            embedder.context("this strategy needs an embedder (the run's `embedder`)")?;
        let per: Vec<Vec<Span>> = docs
            .par_iter()
            .map(|d| self.pieces.chunk(d).into_iter().map(|c| c.span).collect())
            .collect();
        let texts: Vec<&str> = docs
            .iter()
            .zip(&per)
            .flat_map(|(d, ps)| ps.iter().map(|p| &d.text[p.start..p.end]))
            .collect();
        let mut stats = StrategyStats {
            embedded_units: texts.len(),
            ..Default::default()
        };
        let mut vectors = embedder.embed(&texts)?.into_iter();
        let mut out = Vec::new();
        for (d, pieces) in docs.iter().zip(&per) {
            let vs: Vec<Vec<f32>> = vectors.by_ref().take(pieces.len()).collect();
            let (s, degenerate) = similarity(&vs);
            stats.degenerate_vectors += degenerate;
            for (a, b) in optimal_segmentation(&s, self.max_pieces) {
                out.push(Chunk::new(d, pieces[a].start, pieces[b].end));
            }
        }
        stats.over_size = common::count_over_size(docs, &out, &self.limit);
        Ok((out, stats))
    }

    fn size_limit(&self) -> Option<SizeLimit> {
        Some(self.limit.clone())
    }
}

/// Pairwise dot products of the L2-normalised vectors (f64), and the number of zero or
/// non-finite vectors (their rows are 0).
pub fn similarity(vectors: &[Vec<f32>]) -> (Vec<Vec<f64>>, usize) {
    let mut degenerate = 0;
    let unit: Vec<Vec<f64>> = vectors
        .iter()
        .map(|v| {
            let n = v
                .iter()
                .map(|&x| f64::from(x) * f64::from(x))
                .sum::<f64>()
                .sqrt();
            if n > 0.0 && n.is_finite() {
                v.iter().map(|&x| f64::from(x) / n).collect()
            } else {
                degenerate += 1;
                vec![0.0; v.len()]
            }
        })
        .collect();
    let s = unit
        .iter()
        .map(|a| {
            unit.iter()
                .map(|b| a.iter().zip(b).map(|(x, y)| x * y).sum())
                .collect()
        })
        .collect();
    (s, degenerate)
}

/// The reference's segmentation of pieces `0..n` given their raw similarity matrix `s`
/// (n × n) and the largest cluster in pieces: inclusive `(first, last)` piece ranges in order,
/// covering `0..n`, none longer than `max_pieces`. Follows the reference step by step (see the
/// module docs), including the whole-prefix fallback where no candidate beats 0 while that
/// prefix fits in `max_pieces`.
pub fn optimal_segmentation(s: &[Vec<f64>], max_pieces: usize) -> Vec<(usize, usize)> {
    let n = s.len();
    if n == 0 {
        return Vec::new();
    }
    // Mean of the strict upper triangle; with one piece there is none (NaN in numpy, which
    // leaves every reward 0 and the piece one chunk — the same result).
    let pairs = n * (n - 1) / 2;
    let mean = if pairs == 0 {
        0.0
    } else {
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .map(|(i, j)| s[i][j])
            .sum::<f64>()
            / pairs as f64
    };
    let m: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| if i == j { 0.0 } else { s[i][j] - mean })
                .collect()
        })
        .collect();
    let max_pieces = max_pieces.max(1);
    let mut dp = vec![0.0f64; n];
    let mut start = vec![0usize; n];
    for i in 0..n {
        let mut chosen = false;
        for size in 1..=max_pieces {
            if size > i + 1 {
                break;
            }
            let a = i + 1 - size;
            let mut reward: f64 = (a..=i).map(|r| m[r][a..=i].iter().sum::<f64>()).sum();
            if a > 0 {
                reward += dp[a - 1];
            }
            if reward > dp[i] {
                dp[i] = reward;
                start[i] = a;
                chosen = true;
            }
        }
        if !chosen && i + 1 > max_pieces {
            start[i] = i + 1 - max_pieces;
        }
    }
    let mut clusters = Vec::new();
    let mut i = n as isize - 1;
    while i >= 0 {
        let a = start[i as usize];
        clusters.push((a, i as usize));
        i = a as isize - 1;
    }
    clusters.reverse();
    clusters
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[f64]]) -> Vec<Vec<f64>> {
        r.iter().map(|x| x.to_vec()).collect()
    }

    /// Two clear pairs. Upper-triangle mean = (0.9 + 4 × 0.1 + 0.9) / 6 = 0.3667, so within a
    /// pair M = 0.5333 and across −0.2667: dp = [0, 1.0667, 1.0667, 2.1333], start[3] = 2,
    /// start[1] = 0 → (0, 1), (2, 3). (The reference's numpy code gives the same.)
    #[test]
    fn two_pairs() {
        let s = rows(&[
            &[1.0, 0.9, 0.1, 0.1],
            &[0.9, 1.0, 0.1, 0.1],
            &[0.1, 0.1, 1.0, 0.9],
            &[0.1, 0.1, 0.9, 1.0],
        ]);
        assert_eq!(optimal_segmentation(&s, 2), [(0, 1), (2, 3)]);
        assert_eq!(optimal_segmentation(&s, 8), [(0, 1), (2, 3)]);
    }

    /// Three topics. Mean = 5.0 / 15 = 0.3333; with at most 3 pieces: (0..=2), (3, 4), (5);
    /// at most 2: (0, 1), (2), (3, 4), (5) — dp [0, .9333, .9333, .9333, 1.9667, 1.9667].
    #[test]
    fn three_topics_and_the_cluster_cap() {
        let s = rows(&[
            &[1.0, 0.8, 0.7, 0.2, 0.1, 0.0],
            &[0.8, 1.0, 0.75, 0.2, 0.2, 0.1],
            &[0.7, 0.75, 1.0, 0.3, 0.2, 0.1],
            &[0.2, 0.2, 0.3, 1.0, 0.85, 0.2],
            &[0.1, 0.2, 0.2, 0.85, 1.0, 0.3],
            &[0.0, 0.1, 0.1, 0.2, 0.3, 1.0],
        ]);
        assert_eq!(optimal_segmentation(&s, 3), [(0, 2), (3, 4), (5, 5)]);
        assert_eq!(optimal_segmentation(&s, 8), [(0, 2), (3, 4), (5, 5)]);
        assert_eq!(
            optimal_segmentation(&s, 2),
            [(0, 1), (2, 2), (3, 4), (5, 5)]
        );
    }

    /// Issue 36 case 21. All rewards non-positive: every off-diagonal equals the mean, so
    /// M = 0 everywhere and no candidate beats dp = 0. The reference then takes the whole
    /// document as one chunk whatever `max_size` (5 pieces at most 2 per chunk); here the
    /// fallback takes at most `max_pieces` pieces, and the whole prefix only while it fits.
    #[test]
    fn all_non_positive_rewards_keep_max_size() {
        let s = vec![vec![0.5; 5]; 5];
        assert_eq!(optimal_segmentation(&s, 2), [(0, 0), (1, 2), (3, 4)]);
        assert_eq!(optimal_segmentation(&s, 5), [(0, 4)]);
        assert_eq!(optimal_segmentation(&s, 8), [(0, 4)]);
        // At most one piece per chunk: a single piece's reward is 0, never > 0.
        let s = rows(&[&[1.0, 0.2, 0.9], &[0.2, 1.0, 0.3], &[0.9, 0.3, 1.0]]);
        assert_eq!(optimal_segmentation(&s, 1), [(0, 0), (1, 1), (2, 2)]);
        // Every segmentation of random matrices keeps the cap.
        let mut x = 12345u64;
        for n in 1..40 {
            let mut s = vec![vec![0.0; n]; n];
            for v in s.iter_mut().flatten() {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *v = (x >> 11) as f64 / (1u64 << 53) as f64;
            }
            for cap in 1..6 {
                let segs = optimal_segmentation(&s, cap);
                assert!(
                    segs.iter().all(|&(a, b)| b + 1 - a <= cap),
                    "{n} {cap} {segs:?}"
                );
                assert_eq!(segs.first().map(|s| s.0), Some(0));
                assert_eq!(segs.last().map(|s| s.1), Some(n - 1));
                assert!(segs.windows(2).all(|w| w[1].0 == w[0].1 + 1));
            }
        }
        // One piece; no piece.
        assert_eq!(optimal_segmentation(&[vec![1.0]], 8), [(0, 0)]);
        assert!(optimal_segmentation(&[], 8).is_empty());
    }

    /// A first piece unlike the rest: mean 0.2, M = −0.7 to it and 0.7 among the others;
    /// dp = [0, 0, 1.4, 4.2], start[3] = 1 and start[0] = 0 → (0), (1..=3).
    #[test]
    fn an_outlier_first_piece() {
        let s = rows(&[
            &[1.0, -0.5, -0.5, -0.5],
            &[-0.5, 1.0, 0.9, 0.9],
            &[-0.5, 0.9, 1.0, 0.9],
            &[-0.5, 0.9, 0.9, 1.0],
        ]);
        assert_eq!(optimal_segmentation(&s, 3), [(0, 0), (1, 3)]);
    }

    #[test]
    fn similarity_normalises_and_counts_zero_vectors() {
        let (s, bad) = similarity(&[vec![3.0, 4.0], vec![6.0, 8.0], vec![0.0, 0.0]]);
        assert!((s[0][1] - 1.0).abs() < 1e-12 && (s[0][0] - 1.0).abs() < 1e-12);
        assert_eq!((s[2][0], bad), (0.0, 1));
    }
}
