//! Hybrid retrieval by reciprocal rank fusion (RRF).
//!
//! Cormack, Clarke & Büttcher (SIGIR 2009), "Reciprocal rank fusion outperforms Condorcet and
//! individual rank learning methods": `score(p) = Σ_lists 1 / (c + rank_list(p))` with 1-based
//! ranks and `c = 60`; a passage absent from a list contributes nothing for it. Only ranks
//! matter, so BM25 points and cosines need no calibration. Ties (e.g. a passage ranked 1st
//! by one retriever and another ranked 1st by the other) are broken by ascending passage
//! index, as everywhere in this crate. Fuse lists retrieved to a depth of at least
//! [`RRF_DEPTH`] (or `k`, if larger), then keep `k`.

use crate::{top_k, Hit};
use std::collections::HashMap;

/// The RRF constant `c` (Cormack et al. 2009).
pub const RRF_K: f64 = 60.0;

/// Recommended depth of each fused list (each retriever's top-100).
pub const RRF_DEPTH: usize = 100;

/// Reciprocal rank fusion of ranked `lists` (best first) with `c = 60`, keeping `k` hits whose
/// scores are the fused RRF scores. A passage repeated within one list counts at its best
/// rank only.
pub fn rrf<L: AsRef<[Hit]>>(lists: &[L], k: usize) -> Vec<Hit> {
    rrf_with(lists, RRF_K, k)
}

/// [`rrf`] with an explicit constant `c` (> 0 recommended).
pub fn rrf_with<L: AsRef<[Hit]>>(lists: &[L], c: f64, k: usize) -> Vec<Hit> {
    // Accumulate in list order so sums are bit-identical across runs.
    let mut order: Vec<usize> = Vec::new();
    let mut fused: HashMap<usize, f64> = HashMap::new();
    for list in lists {
        let mut seen = std::collections::HashSet::new();
        let mut rank = 0usize;
        for h in list.as_ref() {
            if !seen.insert(h.passage) {
                continue;
            }
            rank += 1;
            let contribution = 1.0 / (c + rank as f64);
            match fused.get_mut(&h.passage) {
                Some(s) => *s += contribution,
                None => {
                    order.push(h.passage);
                    fused.insert(h.passage, contribution);
                }
            }
        }
    }
    let hits = order
        .into_iter()
        .map(|p| Hit {
            passage: p,
            score: fused[&p],
        })
        .collect();
    top_k(hits, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[usize]) -> Vec<Hit> {
        ids.iter()
            .enumerate()
            .map(|(r, &p)| Hit {
                passage: p,
                score: 10.0 - r as f64,
            })
            .collect()
    }

    #[test]
    fn fuses_by_reciprocal_rank() {
        let dense = list(&[3, 1, 2]);
        let bm25 = list(&[1, 4]);
        let fused = rrf(&[dense, bm25], 10);
        let ids: Vec<usize> = fused.iter().map(|h| h.passage).collect();
        // 1: 1/62 + 1/61; 3: 1/61; 4: 1/62; 2: 1/63.
        assert_eq!(ids, [1, 3, 4, 2]);
        assert!((fused[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-15);
    }

    #[test]
    fn ties_break_by_passage_order_and_empty_lists() {
        let a = list(&[7, 5]);
        let b = list(&[5, 7]);
        let ids: Vec<usize> = rrf(&[a, b], 2).iter().map(|h| h.passage).collect();
        assert_eq!(ids, [5, 7]);
        let empty: Vec<Vec<Hit>> = vec![vec![], vec![]];
        assert!(rrf(&empty, 3).is_empty());
        let dup = list(&[2, 2, 3]);
        let fused = rrf(&[dup], 5);
        assert_eq!(fused.len(), 2);
        assert!((fused[1].score - 1.0 / 62.0).abs() < 1e-15);
    }
}
