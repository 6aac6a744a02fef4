//! precision@k: the share of the top k that is relevant (trec_eval's `P_k`).
//!
//! A retrieved passage is relevant when it overlaps a non-empty gold evidence span (the rule
//! of the rank metrics, [`super::super::rank_metrics`]). precision@k = (distinct relevant
//! passages among the first k) / k, with k the cutoff of [`ScoreInput::k`]: as in trec_eval,
//! the denominator is k even when fewer passages were retrieved, and a passage retrieved twice
//! counts once (trec_eval drops repeated docids). Where recall@k asks how much of the evidence
//! the top k found, precision@k asks how much of the top k was spent on it: a chunker whose
//! passages each hold one evidence sentence scores higher than one that retrieves the same
//! evidence among unrelated passages. `None` for a question without evidence.

use super::{Aggregate, AppliesTo, Metric, ScoreInput, Unit};

/// The registry entry.
pub(super) const METRIC: Metric = Metric {
    name: "precision_at_k",
    summary_column: "precision_at_k",
    label: "precision@k",
    doc: "distinct passages in the top k that overlap evidence / k (trec_eval `P_k`)",
    unit: Unit::Passages,
    higher_is_better: true,
    applies: AppliesTo::Evidence,
    aggregate: Aggregate::Mean,
    compute,
};

fn compute(x: &ScoreInput<'_>) -> Option<f64> {
    let evidence = super::super::distinct_evidence(x.evidence);
    if evidence.is_empty() {
        return None;
    }
    if x.k == 0 {
        return Some(0.0);
    }
    let mut relevant: Vec<_> = x
        .retrieved
        .iter()
        .take(x.k)
        .filter(|p| evidence.iter().any(|e| p.overlap(e) > 0))
        .collect();
    relevant.sort();
    relevant.dedup();
    Some(relevant.len() as f64 / x.k as f64)
}

#[cfg(test)]
mod tests {
    use super::super::super::{CharMap, DocSpan, WordMap};
    use super::*;

    fn p_at_k(retrieved: &[DocSpan<'_>], evidence: &[DocSpan<'_>], k: usize) -> Option<f64> {
        let docs = [chunker::Document::new("d", "w ".repeat(40))];
        let (words, chars) = (WordMap::new(&docs), CharMap::new(&docs));
        let passages: Vec<&str> = retrieved.iter().map(|_| "").collect();
        compute(&ScoreInput::new(
            retrieved,
            &passages,
            evidence,
            &[],
            k,
            &words,
            &chars,
            None,
        ))
    }

    #[test]
    fn counts_relevant_passages_over_k() {
        let ev = [DocSpan::new("d", 10, 20)];
        let r = [
            DocSpan::new("d", 0, 15),
            DocSpan::new("d", 12, 30),
            DocSpan::new("d", 40, 50),
        ];
        assert_eq!(p_at_k(&r, &ev, 3), Some(2.0 / 3.0));
        // Fewer retrieved than k: the denominator is still k (trec_eval).
        assert_eq!(p_at_k(&r, &ev, 4), Some(2.0 / 4.0));
        // A passage touching the evidence without sharing a byte is not relevant.
        assert_eq!(p_at_k(&[DocSpan::new("d", 20, 30)], &ev, 1), Some(0.0));
        // Another document's passage at the same offsets is not relevant.
        assert_eq!(p_at_k(&[DocSpan::new("e", 10, 20)], &ev, 1), Some(0.0));
    }

    #[test]
    fn a_repeated_passage_counts_once() {
        let ev = [DocSpan::new("d", 10, 20)];
        let r = [DocSpan::new("d", 0, 15), DocSpan::new("d", 0, 15)];
        assert_eq!(p_at_k(&r, &ev, 2), Some(0.5));
    }

    #[test]
    fn undefined_without_evidence() {
        let r = [DocSpan::new("d", 0, 15)];
        assert_eq!(p_at_k(&r, &[], 1), None);
        assert_eq!(p_at_k(&r, &[DocSpan::new("d", 5, 5)], 1), None);
        assert_eq!(p_at_k(&[], &[DocSpan::new("d", 5, 9)], 0), Some(0.0));
    }
}
