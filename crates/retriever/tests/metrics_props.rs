//! Property tests: every metric lies in [0, 1] and is never NaN (docs/reference.md invariant 6);
//! duplicates never push recall above 1 or change it; recall and hit grow with k.

use proptest::prelude::*;
use retriever::metrics::{answer_recall_at_k, precision_omega, rank_metrics, span_metrics};
use retriever::DocSpan;

const DOCS: [&str; 3] = ["a", "b", "c"];

fn span() -> impl Strategy<Value = DocSpan<'static>> {
    (0usize..3, 0usize..60, 0usize..25).prop_map(|(d, s, len)| DocSpan::new(DOCS[d], s, s + len))
}

fn in_unit(x: f64) -> bool {
    !x.is_nan() && (0.0..=1.0).contains(&x)
}

proptest! {
    #[test]
    fn metrics_are_in_unit_interval(
        retrieved in prop::collection::vec(span(), 0..12),
        evidence in prop::collection::vec(span(), 0..4),
        k in 0usize..15,
    ) {
        if let Some(m) = rank_metrics(&retrieved, &evidence, k) {
            for x in [m.hit, m.recall, m.mrr, m.ndcg] {
                prop_assert!(in_unit(x), "{m:?}");
            }
            prop_assert!(m.hit >= m.recall.min(1.0) || m.recall == 0.0);
            prop_assert_eq!(m.hit == 1.0, m.mrr > 0.0);
        }
        if let Some(s) = span_metrics(&retrieved, &evidence) {
            for x in [s.recall, s.precision, s.iou] {
                prop_assert!(in_unit(x), "{s:?}");
            }
            prop_assert!(s.iou <= s.precision.min(s.recall) + 1e-12);
        }
        if let Some(p) = precision_omega(&retrieved, &evidence) {
            prop_assert!(in_unit(p));
        }
    }

    #[test]
    fn duplicates_never_raise_recall(
        retrieved in prop::collection::vec(span(), 0..8),
        evidence in prop::collection::vec(span(), 1..4),
    ) {
        let doubled: Vec<DocSpan> = retrieved.iter().flat_map(|s| [*s, *s]).collect();
        let k = retrieved.len();
        if let (Some(a), Some(b)) = (
            rank_metrics(&retrieved, &evidence, k),
            rank_metrics(&doubled, &evidence, 2 * k),
        ) {
            prop_assert_eq!(a.recall, b.recall);
            prop_assert!(b.recall <= 1.0);
            prop_assert_eq!(a.hit, b.hit);
        }
        if let (Some(a), Some(b)) = (span_metrics(&retrieved, &evidence), span_metrics(&doubled, &evidence)) {
            prop_assert_eq!(a.recall, b.recall);
            prop_assert!(b.precision <= a.precision + 1e-12);
        }
    }

    #[test]
    fn recall_and_hit_grow_with_k(
        retrieved in prop::collection::vec(span(), 0..10),
        evidence in prop::collection::vec(span(), 1..4),
        k in 0usize..10,
    ) {
        if let (Some(a), Some(b)) = (
            rank_metrics(&retrieved, &evidence, k),
            rank_metrics(&retrieved, &evidence, k + 1),
        ) {
            prop_assert!(b.recall >= a.recall && b.hit >= a.hit && b.mrr >= a.mrr);
        }
    }

    #[test]
    fn answer_recall_is_binary(passages in prop::collection::vec(".{0,20}", 0..5), answer in ".{0,5}", k in 0usize..6) {
        if let Some(x) = answer_recall_at_k(&passages, &answer, k) {
            prop_assert!(x == 0.0 || x == 1.0);
        }
    }
}
