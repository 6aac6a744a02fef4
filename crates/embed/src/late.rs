//! Late chunking (Günther et al. 2024, "Late Chunking: Contextual Chunk Embeddings Using
//! Long-Context Embedding Models", arXiv:2409.04701; reference implementation
//! jina-ai/late-chunking): the whole document goes through the encoder once, and each chunk's
//! vector is the mean of the *contextual* token states inside its span, so a chunk's vector
//! carries what the text around it says.
//!
//! Two steps, both here so that their parity with the reference is tested in one place
//! (`crates/evaluator/tests/late_chunking.rs` against `scripts/late_chunking_goldens.py`):
//! - [`TokenStates`]: the text tokenised without truncation; when it is longer than the
//!   window, windows of `window` tokens whose starts advance by `window - overlap`, each run
//!   on its own (positions from 0), the first window's states all kept and each later
//!   window's states from its `overlap`-th on (the reference's `_embed_with_overlap`, in
//!   `chunked_pooling/mteb_chunked_eval.py`), so every token has exactly one state, computed
//!   with at least `overlap` tokens of left context once past the first window.
//! - [`pool_spans`]: per chunk byte span, the tokens sharing at least one byte with it; the
//!   chunk that holds the document's first text token also pools the leading special tokens
//!   (`[CLS]`) and the one holding its last text token the trailing ones (`[SEP]`), as the
//!   reference's `_extend_special_tokens` does for the first and last chunk; mean of the
//!   states (`chunked_pooling`), then L2 normalisation (`flatten_corpus_embs`).

use crate::l2_normalize;

/// The contextual token states of one text (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenStates {
    /// Hidden size (columns of `rows`).
    pub dim: usize,
    /// One `[dim]` row per token of the whole sequence, special tokens included, row-major.
    pub rows: Vec<f32>,
    /// Byte span of each token in the text; `None` for special tokens.
    pub offsets: Vec<Option<(usize, usize)>>,
    /// The windows run, as `[start, end)` token ranges of the sequence.
    pub windows: Vec<(usize, usize)>,
}

impl TokenStates {
    /// Tokens in the sequence.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// True for a sequence of no token.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }
}

/// The windows of a sequence of `n` tokens: `[(0, n)]` when `n <= window`, else starts
/// `0, window - overlap, …` below `n`, each `[s, min(s + window, n))` (the reference's
/// `_embed_with_overlap`). With the kept rows of [`assemble`], every token is covered once.
///
/// # Panics
/// When `overlap >= window` (callers check it).
pub fn windows(n: usize, window: usize, overlap: usize) -> Vec<(usize, usize)> {
    assert!(overlap < window, "overlap {overlap} >= window {window}");
    if n <= window {
        return vec![(0, n)];
    }
    (0..n)
        .step_by(window - overlap)
        .map(|s| (s, (s + window).min(n)))
        .collect()
}

/// Joins the windows' states (`outputs[i]` = `[len_i × dim]` rows of window `i`): all rows of
/// the first window, rows from `overlap` on of each later one.
pub fn assemble(outputs: &[Vec<f32>], dim: usize, overlap: usize) -> Vec<f32> {
    let mut rows = Vec::new();
    for (i, o) in outputs.iter().enumerate() {
        let skip = if i == 0 { 0 } else { overlap * dim };
        if skip < o.len() {
            rows.extend_from_slice(&o[skip..]);
        }
    }
    rows
}

/// The chunk vectors of `spans` (byte spans of the text `states` was computed from), in span
/// order: `None` for a span that shares no byte with any token (whitespace only).
pub fn pool_spans(states: &TokenStates, spans: &[(usize, usize)]) -> Vec<Option<Vec<f32>>> {
    let text: Vec<(usize, (usize, usize))> = states
        .offsets
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.filter(|(s, e)| s < e).map(|o| (i, o)))
        .collect();
    let (Some(&(first, _)), Some(&(last, _))) = (text.first(), text.last()) else {
        return vec![None; spans.len()];
    };
    let n = states.len();
    let dim = states.dim;
    spans
        .iter()
        .map(|&(cs, ce)| {
            // Token byte ranges are in text order: the shared tokens are a contiguous run.
            let a = text.partition_point(|(_, (_, e))| *e <= cs);
            let b = text.partition_point(|(_, (s, _))| *s < ce);
            if a >= b {
                return None;
            }
            let (mut lo, mut hi) = (text[a].0, text[b - 1].0 + 1);
            if text[a].0 == first {
                lo = 0;
            }
            if text[b - 1].0 == last {
                hi = n;
            }
            let mut acc = vec![0f64; dim];
            for r in lo..hi {
                for (a, x) in acc.iter_mut().zip(&states.rows[r * dim..(r + 1) * dim]) {
                    *a += f64::from(*x);
                }
            }
            let k = (hi - lo) as f64;
            let mut v: Vec<f32> = acc.into_iter().map(|s| (s / k) as f32).collect();
            l2_normalize(&mut v);
            Some(v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_token_once() {
        for (n, w, o) in [
            (10, 4, 1),
            (1000, 512, 256),
            (1100, 512, 256),
            (5, 8, 2),
            (9, 4, 3),
        ] {
            let ws = windows(n, w, o);
            let outs: Vec<Vec<f32>> = ws
                .iter()
                .map(|&(s, e)| (s..e).map(|t| t as f32).collect())
                .collect();
            let rows = assemble(&outs, 1, o);
            let want: Vec<f32> = (0..n).map(|t| t as f32).collect();
            assert_eq!(rows, want, "n={n} w={w} o={o} windows={ws:?}");
        }
    }

    #[test]
    fn spans_pool_their_tokens_and_the_ends_take_the_specials() {
        // [CLS] "ab" "cd" " " "ef" [SEP]: text "abcd ef".
        let states = TokenStates {
            dim: 1,
            rows: vec![10.0, 1.0, 2.0, 3.0, 20.0],
            offsets: vec![None, Some((0, 2)), Some((2, 4)), Some((5, 7)), None],
            windows: vec![(0, 5)],
        };
        let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
        let got = pool_spans(&states, &[(0, 2), (2, 5), (3, 4), (4, 5), (5, 7)]);
        // Normalised 1-d vectors are ±1: check the sign and the presence only, and the raw
        // means through a 2-d copy below.
        assert!(got[..3].iter().all(|v| v.as_deref() == Some(&[1.0][..])));
        assert_eq!(got[3], None, "a whitespace-only span holds no token");
        assert!(got[4].is_some());
        let two = TokenStates {
            dim: 2,
            rows: states.rows.iter().flat_map(|&x| [x, 1.0]).collect(),
            ..states
        };
        let v = pool_spans(&two, &[(0, 2), (5, 7)]);
        let ratio = |v: &[f32]| v[0] / v[1];
        assert!((ratio(v[0].as_ref().unwrap()) - mean(&[10.0, 1.0])).abs() < 1e-5);
        assert!((ratio(v[1].as_ref().unwrap()) - mean(&[3.0, 20.0])).abs() < 1e-5);
    }
}
