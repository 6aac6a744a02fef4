//! Property tests: Max-Min groups partition the units in order and equal a plain
//! O(|C|^2) restatement of the reference rule; the size options keep their promises;
//! oversized units are split without losing words; Kamradt groups partition too.

use chunker::maxmin::split_oversized;
use chunker::{count_words, BreakpointType, Comparison, KamradtConfig, MaxMinConfig, SizeLimit};
use proptest::prelude::*;
use std::ops::Range;

/// Vectors of one dimension, components in [-1, 1] with some exact zeros and rare NaNs.
fn vectors(max_n: usize) -> impl Strategy<Value = Vec<Vec<f32>>> {
    (1usize..5, 0..max_n).prop_flat_map(|(dim, n)| {
        let comp = prop_oneof![
            8 => -1.0f32..1.0,
            2 => Just(0.0f32),
            1 => Just(f32::NAN),
        ];
        prop::collection::vec(prop::collection::vec(comp, dim), n)
    })
}

fn assert_partition(groups: &[Range<usize>], n: usize) {
    let mut next = 0;
    for g in groups {
        assert_eq!(g.start, next, "{groups:?}");
        assert!(g.end > g.start, "{groups:?}");
        next = g.end;
    }
    assert_eq!(next, n, "{groups:?}");
}

/// Cosine as scikit-learn computes it (x / ||x||, then a dot product), 0 for a vector with
/// a non-finite component or a (near-)zero norm.
fn cos(a: &[f32], b: &[f32]) -> f64 {
    let unit = |v: &[f32]| -> Option<Vec<f64>> {
        let norm = v
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        let ok = v.iter().all(|x| x.is_finite()) && norm.is_finite() && norm >= 10.0 * f64::EPSILON;
        ok.then(|| v.iter().map(|&x| f64::from(x) / norm).collect())
    };
    match (unit(a), unit(b)) {
        (Some(a), Some(b)) => a.iter().zip(&b).map(|(x, y)| x * y).sum(),
        _ => 0.0,
    }
}

/// The rule restated without any running state: for every candidate, the chunk's minimum
/// pairwise similarity is recomputed over all pairs (O(|C|^2) per step).
fn oracle(cfg: &MaxMinConfig, v: &[Vec<f32>]) -> (Vec<Range<usize>>, Vec<Option<f64>>) {
    let pass = |score: f64, threshold: f64| match cfg.comparison {
        Comparison::Strict => score > threshold,
        Comparison::Inclusive => score >= threshold,
    };
    let min_pairwise = |c: Range<usize>| -> Option<f64> {
        let mut m: Option<f64> = None;
        for a in c.clone() {
            for b in a + 1..c.end {
                let s = cos(&v[a], &v[b]);
                m = Some(m.map_or(s, |m| m.min(s)));
            }
        }
        m
    };
    let mut groups = Vec::new();
    let mut start = 0;
    for i in 1..v.len() {
        let c = start..i;
        let join = if c.len() == 1 {
            pass(
                cfg.init_constant * cos(&v[i], &v[start]),
                cfg.fixed_threshold.max(0.0),
            )
        } else {
            let best = c
                .clone()
                .map(|j| cos(&v[i], &v[j]))
                .fold(f64::NEG_INFINITY, f64::max);
            let k = c.len() as f64 - 1.0;
            let adaptive = min_pairwise(c.clone()).unwrap() * cfg.c * (1.0 / (1.0 + (-k).exp()));
            pass(best, adaptive.max(cfg.fixed_threshold))
        };
        if !join {
            groups.push(c);
            start = i;
        }
    }
    if !v.is_empty() {
        groups.push(start..v.len());
    }
    let mins = groups.iter().map(|g| min_pairwise(g.clone())).collect();
    (groups, mins)
}

proptest! {
    #[test]
    fn maxmin_partitions_in_order_and_matches_the_quadratic_oracle(
        v in vectors(40),
        fixed_threshold in -1.0f64..1.0,
        c in 0.0f64..2.0,
        init_constant in 0.0f64..3.0,
        inclusive in any::<bool>(),
        reference in any::<bool>(),
    ) {
        let cfg = if reference {
            MaxMinConfig::default()
        } else {
            MaxMinConfig {
                fixed_threshold,
                c,
                init_constant,
                comparison: if inclusive { Comparison::Inclusive } else { Comparison::Strict },
                ..MaxMinConfig::default()
            }
        };
        let (groups, stats) = cfg.groups(&v).unwrap();
        assert_partition(&groups, v.len());
        prop_assert_eq!(stats.chunks, groups.len());
        prop_assert_eq!(stats.min_similarity.len(), groups.len());
        let (want, want_mins) = oracle(&cfg, &v);
        prop_assert_eq!(&groups, &want);
        for ((g, m), w) in groups.iter().zip(&stats.min_similarity).zip(&want_mins) {
            prop_assert_eq!(m.is_some(), g.len() >= 2);
            if let (Some(m), Some(w)) = (m, w) {
                prop_assert!(m.is_finite());
                // Bit-exact, but a zero similarity is reported as +0 (the oracle's dot product
                // of orthogonal vectors may be -0).
                prop_assert_eq!(m.to_bits(), (w + 0.0).to_bits());
            }
        }
        let degenerate = v.iter().filter(|x| cos(x, x) == 0.0).count();
        if !v.is_empty() {
            prop_assert_eq!(stats.degenerate_vectors, degenerate);
        }
        // O(|C|) per step: a group of L units costs 1 + 2 + ... + (L - 1) for its joins,
        // plus L for the refused unit that starts the next group.
        let expected: usize = groups.iter().map(|g| g.len() * (g.len() - 1) / 2).sum::<usize>()
            + groups.iter().rev().skip(1).map(|g| g.len()).sum::<usize>();
        prop_assert_eq!(stats.similarities, expected);
    }

    #[test]
    fn max_and_min_chunk_sizes_hold(
        v in vectors(30),
        sizes_seed in prop::collection::vec(1usize..12, 30),
        max in 1usize..30,
        min in 1usize..15,
        use_min in any::<bool>(),
    ) {
        let n = v.len();
        let sizes = &sizes_seed[..n];
        let cfg = MaxMinConfig {
            fixed_threshold: -1.0, // the rule would join almost everything
            max_chunk: Some(SizeLimit::words(max).unwrap()),
            min_chunk: use_min.then(|| SizeLimit::words(min).unwrap()),
            ..MaxMinConfig::default()
        };
        let size = |r: Range<usize>| sizes[r].iter().sum::<usize>();
        let (groups, stats) = cfg.groups_sized(&v, size).unwrap();
        assert_partition(&groups, n);
        prop_assert_eq!(stats.min_similarity.len(), groups.len());
        for g in &groups {
            prop_assert!(g.len() == 1 || size(g.clone()) <= max, "{:?} > {}", g, max);
        }
        let oversized = sizes.iter().filter(|&&s| s > max).count();
        prop_assert_eq!(stats.oversized_units, oversized);
        if use_min {
            let small = groups.iter().filter(|g| size((*g).clone()) < min).count();
            prop_assert_eq!(small, stats.small_unmerged);
        } else {
            prop_assert_eq!(stats.merges + stats.small_unmerged, 0);
        }
        for m in stats.min_similarity.iter().flatten() {
            prop_assert!(m.is_finite());
        }
    }

    #[test]
    fn split_oversized_keeps_every_word_within_the_limit(
        words in prop::collection::vec("[a-zé]{1,6}", 0..200),
        seps in prop::collection::vec(prop_oneof![Just(" "), Just("  "), Just("\n"), Just(". ")], 200),
        limit in 1usize..40,
    ) {
        let mut text = String::new();
        for (w, s) in words.iter().zip(&seps) {
            text.push_str(w);
            text.push_str(s);
        }
        let units = chunker::segment::sentences(&text);
        let lim = SizeLimit::words(limit).unwrap();
        let (pieces, stats) = split_oversized(&text, &units, &lim);
        let mut prev = 0;
        let mut total = 0;
        for p in &pieces {
            prop_assert!(p.start >= prev && p.start < p.end);
            prev = p.end;
            let w = count_words(&text[p.start..p.end]);
            prop_assert!(w <= limit);
            total += w;
        }
        prop_assert_eq!(total, count_words(&text));
        prop_assert_eq!(stats.still_oversized, 0);
        prop_assert_eq!(pieces.len() - stats.pieces, units.len() - stats.units_split);
    }

    #[test]
    fn kamradt_groups_partition_in_order(
        v in vectors(30),
        kind in 0usize..4,
        buffer_size in 0usize..3,
        number_of_chunks in prop::option::of(0usize..8),
        min_chunk_size in prop::option::of(0usize..30),
    ) {
        let n = v.len();
        let texts: Vec<String> = (0..n).map(|i| format!("s{i}.")).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let cfg = KamradtConfig {
            buffer_size,
            number_of_chunks,
            min_chunk_size,
            ..KamradtConfig::new(BreakpointType::ALL[kind])
        };
        let (groups, stats) = cfg.groups(&texts, &v).unwrap();
        assert_partition(&groups, n);
        if let Some(t) = stats.threshold {
            prop_assert!(!t.is_nan());
        }
    }
}
