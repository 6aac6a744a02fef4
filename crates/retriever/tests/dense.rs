//! Exact dense top-k: docs/reference.md (cases) 7 (degenerate vectors) and 31 (ties), agreement of the blocked
//! matmul path with the plain per-query loop, scopes, pooling and errors.

use retriever::{is_degenerate, DenseError, DenseIndex, Hit};

/// xorshift64* in [-1, 1): deterministic test vectors without a rand dependency.
fn vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.max(1);
    (0..n * dim)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let x = s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40;
            (x as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn ids(hits: &[Hit]) -> Vec<usize> {
    hits.iter().map(|h| h.passage).collect()
}

#[test]
fn case_7_zero_and_nan_vectors() {
    let chunks = vec![
        vec![0.0, 1.0],
        vec![0.6, 0.8],
        vec![0.0, 0.0],
        vec![f32::NAN, 1.0],
    ];
    let idx = DenseIndex::from_rows(&chunks, 2).unwrap();
    assert_eq!(idx.degenerate_passages(), [2, 3]);
    for hits in [
        idx.search(&[0.0, 1.0], 2, None).unwrap(),
        idx.search_loop(&[0.0, 1.0], 2, None).unwrap(),
    ] {
        assert_eq!(ids(&hits), [0, 1]);
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        assert!((hits[1].score - 0.8).abs() < 1e-6);
    }
    // Degenerate passages are never returned, even when k exceeds the valid ones.
    let all = idx.search(&[0.0, 1.0], 10, None).unwrap();
    assert_eq!(ids(&all), [0, 1]);
    assert!(all.iter().all(|h| h.score.is_finite()));
    // Degenerate queries return nothing.
    assert!(is_degenerate(&[0.0, 0.0]) && is_degenerate(&[f32::INFINITY, 0.0]));
    assert!(idx.search(&[0.0, 0.0], 2, None).unwrap().is_empty());
    assert!(idx.search(&[f32::NAN, 1.0], 2, None).unwrap().is_empty());
}

#[test]
fn case_31_ties_are_deterministic_across_runs_and_threads() {
    // Five passages with identical cosine 0.8125 to the query, plus two with cosine 0.
    let s = (1.0f32 - 0.8125 * 0.8125).sqrt();
    let mut rows = vec![vec![0.0, 1.0]; 2]; // score 0 vs query [1,0]
    for _ in 0..5 {
        rows.push(vec![0.8125, s]);
    }
    rows.swap(0, 4);
    let idx = DenseIndex::from_rows(&rows, 2)
        .unwrap()
        .with_passage_tile(3);
    let expect = [0, 2, 3]; // tied passages are 0, 2, 3, 5, 6
    let mut runs = Vec::new();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for _ in 0..2 {
            let q = vec![vec![1.0f32, 0.0]; 300]; // > one block of 256
            let hits = pool.install(|| idx.search_batch(&q, 3, &[]).unwrap());
            for h in &hits {
                assert_eq!(ids(h), expect);
                assert!(h.iter().all(|x| (x.score - 0.8125).abs() < 1e-6));
            }
            runs.push(hits);
        }
    }
    assert!(runs.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(ids(&idx.search_loop(&[1.0, 0.0], 3, None).unwrap()), expect);
}

#[test]
fn matmul_path_matches_plain_loop() {
    let (n, dim) = (1500, 48);
    let idx = DenseIndex::new(vectors(n, dim, 7), dim)
        .unwrap()
        .with_query_block(64)
        .with_passage_tile(400); // 4 tiles, the last one partial
    let qs = vectors(150, dim, 11);
    let queries: Vec<&[f32]> = qs.chunks(dim).collect();
    let batch = idx.search_batch(&queries, 10, &[]).unwrap();
    for (q, got) in queries.iter().zip(&batch) {
        let want = idx.search_loop(q, 10, None).unwrap();
        assert_eq!(got.len(), 10);
        for (a, b) in got.iter().zip(&want) {
            assert!((a.score - b.score).abs() < 1e-5);
        }
        // Same set up to near-ties in the last bits.
        if ids(got) != ids(&want) {
            let gap = got
                .windows(2)
                .map(|w| w[0].score - w[1].score)
                .fold(f64::INFINITY, f64::min);
            assert!(gap < 1e-5, "rankings differ without a near-tie");
        }
        // Scores are descending, ties by passage.
        assert!(got.windows(2).all(|w| w[0].score > w[1].score
            || (w[0].score == w[1].score && w[0].passage < w[1].passage)));
    }
    // k larger than the buffer threshold and than n.
    let big = idx.search(queries[0], 100, None).unwrap();
    assert_eq!(ids(&big)[..10], ids(&batch[0])[..]);
    assert_eq!(idx.search(queries[0], n + 5, None).unwrap().len(), n);
}

#[test]
fn scopes_small_and_large() {
    let (n, dim) = (400, 16);
    let idx = DenseIndex::new(vectors(n, dim, 3), dim).unwrap();
    let q = vectors(2, dim, 5);
    let (q0, q1) = (&q[..dim], &q[dim..]);
    // Small scope: direct path. Large scope: matmul path.
    let small: Vec<bool> = (0..n).map(|i| i % 50 == 0).collect();
    let large: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
    let hits = idx
        .search_batch(&[q0, q1], 5, &[Some(&small), Some(&large)])
        .unwrap();
    assert!(hits[0].iter().all(|h| small[h.passage]));
    assert_eq!(hits[0].len(), 5);
    assert!(hits[1].iter().all(|h| large[h.passage]));
    assert_eq!(
        ids(&hits[0]),
        ids(&idx.search_loop(q0, 5, Some(&small)).unwrap())
    );
    assert_eq!(
        ids(&hits[1]),
        ids(&idx.search_loop(q1, 5, Some(&large)).unwrap())
    );
    // An empty scope and a short mask (positions past its end are out of scope).
    let none = vec![false; n];
    assert!(idx.search(q0, 5, Some(&none)).unwrap().is_empty());
    let short = vec![true; 3];
    assert!(idx.search(q0, 5, Some(&short)).unwrap().len() <= 3);
}

#[test]
fn pooled_search_is_max_over_options() {
    let (n, dim) = (300, 8);
    let idx = DenseIndex::new(vectors(n, dim, 9), dim)
        .unwrap()
        .with_passage_tile(128);
    let q = vectors(5, dim, 13);
    let rows: Vec<&[f32]> = q.chunks(dim).collect();
    let groups = vec![0..3, 3..5];
    let pooled = idx.search_pooled_batch(&rows, &groups, 4, &[]).unwrap();
    for (g, got) in groups.iter().zip(&pooled) {
        let mut best = vec![f64::NEG_INFINITY; n];
        for r in g.clone() {
            for h in idx.search_loop(rows[r], n, None).unwrap() {
                best[h.passage] = best[h.passage].max(h.score);
            }
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| best[b].total_cmp(&best[a]).then(a.cmp(&b)));
        assert_eq!(ids(got), order[..4]);
    }
    // A group whose rows are all degenerate gets nothing; an empty group too.
    let zero = vec![0.0f32; dim];
    let rows2: Vec<&[f32]> = vec![&zero, rows[0]];
    let out = idx
        .search_pooled_batch(&rows2, &[0..1, 1..2, 2..2], 3, &[])
        .unwrap();
    assert!(out[0].is_empty() && out[2].is_empty());
    assert_eq!(out[1].len(), 3);
}

#[test]
fn empty_index_errors_and_k_zero() {
    let empty = DenseIndex::new(Vec::new(), 384).unwrap();
    assert!(empty.is_empty());
    assert!(empty.search(&[0.5; 384], 3, None).unwrap().is_empty());
    let idx = DenseIndex::new(vectors(10, 4, 1), 4).unwrap();
    assert!(idx
        .search(&[1.0, 0.0, 0.0, 0.0], 0, None)
        .unwrap()
        .is_empty());
    assert!(matches!(
        DenseIndex::new(vec![1.0; 7], 4),
        Err(DenseError::RaggedMatrix { .. })
    ));
    assert!(matches!(
        DenseIndex::new(vec![], 0),
        Err(DenseError::ZeroDimension)
    ));
    assert!(matches!(
        idx.search(&[1.0, 0.0], 3, None),
        Err(DenseError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        idx.search_batch(&[[1.0f32, 0.0, 0.0, 0.0]], 3, &[None, None]),
        Err(DenseError::ScopeCount { .. })
    ));
    let q = [[1.0f32, 0.0, 0.0, 0.0]];
    assert!(matches!(
        idx.search_pooled_batch(&q, &[0..2, 1..1], 3, &[]),
        Err(DenseError::GroupOutOfRange { .. })
    ));
}

#[test]
fn unnormalised_vectors_score_as_cosines() {
    let idx = DenseIndex::from_rows(&[vec![3.0, 4.0], vec![0.0, 10.0]], 2).unwrap();
    let hits = idx.search(&[0.0, 2.0], 2, None).unwrap();
    assert_eq!(ids(&hits), [1, 0]);
    assert!((hits[0].score - 1.0).abs() < 1e-6 && (hits[1].score - 0.8).abs() < 1e-6);
}
