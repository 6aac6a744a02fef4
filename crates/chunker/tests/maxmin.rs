//! Max-Min chunking: the docs/reference.md §5 test vectors, the reference's corner cases, the
//! options, and docs/reference.md cases 4, 7, 8 and 25.

use chunker::maxmin::{paragraphs, split_oversized, FIXED_THRESHOLD};
use chunker::segment::sentences;
use chunker::{
    count_words, maxmin_groups, ChunkSummary, Comparison, Document, GroupUnit, HfTokenizer,
    MaxMinConfig, MaxMinError, SizeLimit, Span, Unit,
};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// Unit 2-D vectors at the given angles in degrees.
fn angles(deg: &[f64]) -> Vec<Vec<f32>> {
    deg.iter()
        .map(|d| {
            let r = d.to_radians();
            vec![r.cos() as f32, r.sin() as f32]
        })
        .collect()
}

fn doc(text: &str) -> Document {
    Document {
        id: "d".into(),
        title: String::new(),
        text: text.into(),
        source: String::new(),
        license: String::new(),
    }
}

fn tokenizer() -> Arc<HfTokenizer> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2/tokenizer.json");
    match HfTokenizer::from_file(&path) {
        Ok(t) => Arc::new(t),
        Err(e) => panic!(
            "{}: {e}. Run `chunkbench models fetch` first.",
            path.display()
        ),
    }
}

fn groups(vectors: &[Vec<f32>]) -> Vec<Range<usize>> {
    maxmin_groups(vectors).unwrap().0
}

/// Chunks are exact, non-empty, strictly increasing slices separated by whitespace only,
/// and their word counts add up to the document's (docs/reference.md invariants 2-4, case 25).
fn assert_chunk_invariants(d: &Document, chunks: &[chunker::Chunk]) {
    assert_chunk_slices(d, chunks);
    let words: usize = chunks.iter().map(|c| c.words).sum();
    assert_eq!(words, count_words(&d.text), "coverage");
}

/// Exact, non-empty, increasing slices with only whitespace between and around them (no
/// text lost), for chunkings that may cut inside a word.
fn assert_chunk_slices(d: &Document, chunks: &[chunker::Chunk]) {
    let mut prev_end = 0;
    for c in chunks {
        assert!(
            c.span.start >= prev_end && c.span.start < c.span.end,
            "{c:?}"
        );
        assert!(d.text[prev_end..c.span.start].trim().is_empty());
        prev_end = c.span.end;
    }
    assert!(d.text[prev_end..].trim().is_empty());
    for c in chunks {
        assert!(!c.text(d).trim().is_empty());
        assert_eq!(c.words, count_words(c.text(d)));
    }
}

// ---------------------------------------------------------------- docs/reference.md §5 vectors

#[test]
fn design_vectors_six_angles() {
    let v = angles(&[0.0, 10.0, 20.0, 90.0, 95.0, 180.0]);
    assert_eq!(groups(&v), vec![0..3, 3..5, 5..6]);
}

#[test]
fn design_vectors_three_angles() {
    assert_eq!(groups(&angles(&[0.0, 60.0, 120.0])), vec![0..2, 2..3]);
}

#[test]
fn design_vectors_two_angles() {
    assert_eq!(groups(&angles(&[0.0, 70.0])), vec![0..1, 1..2]);
}

#[test]
fn design_vectors_report_internal_minimum_similarity() {
    let (g, stats) = maxmin_groups(&angles(&[0.0, 10.0, 20.0, 90.0, 95.0, 180.0])).unwrap();
    assert_eq!(g.len(), 3);
    assert_eq!(stats.chunks, 3);
    assert_eq!(stats.units, 6);
    let m = &stats.min_similarity;
    assert!(
        (m[0].unwrap() - 20f64.to_radians().cos()).abs() < 1e-6,
        "{m:?}"
    );
    assert!(
        (m[1].unwrap() - 5f64.to_radians().cos()).abs() < 1e-6,
        "{m:?}"
    );
    assert_eq!(m[2], None);
    // O(|C|) per step: |C| = 1, 2, 3 (the refused 90°), then 1, then 2 (the refused 180°).
    assert_eq!(stats.similarities, 1 + 2 + 3 + 1 + 2);
}

// ---------------------------------------------------------------- the reference's rule

#[test]
fn strict_comparison_is_the_default_and_inclusive_joins_ties() {
    // Identical vectors: cos = 1 exactly. With init_constant = 1 and fixed_threshold = 1,
    // the score equals the threshold in both branches.
    let v = vec![vec![1.0f32, 0.0]; 3];
    let mut cfg = MaxMinConfig {
        init_constant: 1.0,
        fixed_threshold: 1.0,
        c: 1.0,
        ..MaxMinConfig::default()
    };
    assert_eq!(cfg.comparison, Comparison::Strict);
    assert_eq!(cfg.groups(&v).unwrap().0, vec![0..1, 1..2, 2..3]);
    cfg.comparison = Comparison::Inclusive;
    assert_eq!(cfg.groups(&v).unwrap().0, vec![0..3]);
    assert_eq!(
        "inclusive".parse::<Comparison>().unwrap(),
        Comparison::Inclusive
    );
    assert_eq!(Comparison::Strict.to_string(), "strict");
}

#[test]
fn single_unit_branch_compares_against_max_of_zero_and_fixed_threshold() {
    // maxmin_chunker.py sets adjusted_threshold = 0 when |C| = 1 and compares against
    // max(adjusted_threshold, fixed_threshold): with a negative fixed_threshold, orthogonal
    // sentences (cos 0) still do not join, where "> fixed_threshold" alone would join them.
    let cfg = MaxMinConfig {
        fixed_threshold: -0.5,
        ..MaxMinConfig::default()
    };
    let v = vec![vec![1.0f32, 0.0], vec![0.0, 1.0]];
    assert_eq!(cfg.groups(&v).unwrap().0, vec![0..1, 1..2]);
    // ...while in the |C| >= 2 branch the negative fixed threshold is used as is.
    let v = angles(&[0.0, 1.0, 90.0]);
    let (g, _) = cfg.groups(&v).unwrap();
    // max cos(90°, C) = cos 89° = 0.017 > max(0.9998 * 0.9 * sigmoid(1), -0.5)? no.
    assert_eq!(g, vec![0..2, 2..3]);
}

#[test]
fn adaptive_threshold_uses_sigmoid_of_size_minus_one() {
    // C = {0°, 0°} (min pairwise 1): the next unit joins iff its best cosine exceeds
    // max(0.6, 1 * 0.9 * sigmoid(1)) = 0.6580. cos 48° = 0.669 joins, cos 49° = 0.656 does
    // not. With sigmoid(|C|) = sigmoid(2) the bound would be 0.7927 and both would split.
    let bound = 0.9 / (1.0 + (-1.0f64).exp());
    assert!(bound > 49f64.to_radians().cos() && bound < 48f64.to_radians().cos());
    assert_eq!(groups(&angles(&[0.0, 0.0, 48.0])), vec![0..3]);
    assert_eq!(groups(&angles(&[0.0, 0.0, 49.0])), vec![0..2, 2..3]);
    // The max over C is used: 49° from the first, 1° from the second -> joins.
    assert_eq!(groups(&angles(&[0.0, 48.0, 49.0])), vec![0..3]);
}

#[test]
fn zero_one_and_two_units() {
    let (g, s) = maxmin_groups(&[]).unwrap();
    assert!(g.is_empty() && s.chunks == 0 && s.similarities == 0);
    // One unit: no similarity is computed, even for a NaN vector (docs/reference.md case 4).
    let (g, s) = maxmin_groups(&[vec![f32::NAN, 1.0]]).unwrap();
    assert_eq!(g, vec![0..1]);
    assert_eq!(s.similarities, 0);
    assert_eq!(s.min_similarity, vec![None]);
    assert_eq!(groups(&angles(&[0.0, 30.0])), vec![0..2]);
    assert_eq!(groups(&angles(&[0.0, 80.0])), vec![0..1, 1..2]);
}

#[test]
fn identical_sentences_form_one_chunk() {
    let text = "The valve is closed. ".repeat(50);
    let d = doc(text.trim_end());
    let units = sentences(&d.text);
    assert_eq!(units.len(), 50);
    let v = vec![vec![0.3f32, -0.2, 0.9]; 50];
    let (chunks, stats) = MaxMinConfig::default()
        .chunk_with_stats(&d, &units, &v)
        .unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text(&d), d.text);
    assert!((stats.min_similarity[0].unwrap() - 1.0).abs() < 1e-12);
    // Running minimum: sum over steps of |C| = 1 + 1 + 2 + ... + 49.
    assert_eq!(stats.similarities, 1 + (2..50).sum::<usize>());
}

// ---------------------------------------------------------------- docs/reference.md (cases)

#[test]
fn case_04_single_sentence_document() {
    for text in [
        "The cooling loop was inspected on Tuesday.",
        "no terminal punctuation at all in this line",
        "Wait!",
        "  Wait!\n",
    ] {
        let d = doc(text);
        for unit in [GroupUnit::Sentence, GroupUnit::Paragraph] {
            let cfg = MaxMinConfig {
                unit,
                ..MaxMinConfig::default()
            };
            let units = cfg.units(&d.text);
            assert_eq!(units.len(), 1, "{text:?}");
            // Whatever the vector (even NaN), nothing is compared.
            let (chunks, stats) = cfg.chunk_with_stats(&d, &units, &[vec![f32::NAN]]).unwrap();
            assert_eq!(chunks.len(), 1);
            assert_eq!(chunks[0].text(&d), text.trim());
            assert_eq!(stats.similarities, 0);
            assert_eq!(stats.min_similarity, vec![None]);
        }
    }
}

#[test]
fn case_07_zero_and_nan_vectors_are_guarded_and_counted() {
    // The case's vectors as four sentence embeddings.
    let v = vec![
        vec![0.0f32, 1.0],
        vec![0.6, 0.8],
        vec![0.0, 0.0],
        vec![f32::NAN, 1.0],
    ];
    let (g, stats) = maxmin_groups(&v).unwrap();
    assert_eq!(g, vec![0..2, 2..3, 3..4]);
    assert_eq!(stats.degenerate_vectors, 2);
    assert!((stats.min_similarity[0].unwrap() - 0.8).abs() < 1e-6);
    assert_eq!(&stats.min_similarity[1..], &[None, None]);

    // The semantic-chunker text: the middle "sentence" embeds to a zero vector.
    let d = doc("Intro sentence here. ---- #### ----. Closing sentence here.");
    let units = sentences(&d.text);
    assert_eq!(units.len(), 3);
    let v = vec![vec![1.0f32, 0.0], vec![0.0, 0.0], vec![1.0, 0.0]];
    let (chunks, stats) = MaxMinConfig::default()
        .chunk_with_stats(&d, &units, &v)
        .unwrap();
    assert_eq!(chunks.len(), 3);
    assert_eq!(stats.degenerate_vectors, 1);
    assert_chunk_invariants(&d, &chunks);

    // A degenerate vector inside a run of similar ones: every value stays finite.
    let mut v = vec![vec![1.0f32, 0.1]; 6];
    v[2] = vec![f32::NAN, f32::INFINITY];
    v[4] = vec![0.0, 0.0];
    for comparison in [Comparison::Strict, Comparison::Inclusive] {
        let cfg = MaxMinConfig {
            comparison,
            fixed_threshold: -2.0,
            ..MaxMinConfig::default()
        };
        let (g, stats) = cfg.groups(&v).unwrap();
        assert_eq!(g.first().unwrap().start, 0);
        assert_eq!(g.last().unwrap().end, 6);
        assert_eq!(stats.degenerate_vectors, 2);
        for m in stats.min_similarity.iter().flatten() {
            assert!(m.is_finite());
        }
    }
}

#[test]
fn case_08_oversized_sentences_are_split_before_embedding() {
    let s1 = (1..=700)
        .map(|i| format!("item {i}"))
        .collect::<Vec<_>>()
        .join(", ")
        + ".";
    let s2 = "http://".to_string()
        + &(1..=400)
            .map(|i| format!("seg{i}"))
            .collect::<Vec<_>>()
            .join(".");
    let text = format!("Short intro. {s1} {s2} Short outro.");
    let d = doc(&text);
    let tok = tokenizer();
    let units = sentences(&d.text);
    // The model's budget: max_seq_length 256 minus [CLS] and [SEP].
    let limit = SizeLimit::with_unit(254, Unit::Tokens, Some(Arc::clone(&tok))).unwrap();
    let (pieces, stats) = split_oversized(&d.text, &units, &limit);
    assert!(stats.units_split >= 1, "{stats:?}");
    assert!(
        stats.words_split >= 1,
        "the URL is one word of ~1600 tokens: {stats:?}"
    );
    assert_eq!(stats.still_oversized, 0);
    for p in &pieces {
        let t = &d.text[p.start..p.end];
        assert!(tok.count(t) <= 254, "{} tokens", tok.count(t));
        assert_eq!(t, t.trim());
    }
    // Nothing dropped: the pieces and the gaps between them reproduce the text.
    let mut rebuilt = String::new();
    let mut prev = 0;
    for p in &pieces {
        assert!(p.start >= prev && p.start < p.end);
        assert!(d.text[prev..p.start].trim().is_empty());
        rebuilt.push_str(&d.text[p.start..p.end]);
        prev = p.end;
    }
    assert!(d.text[prev..].trim().is_empty());
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    assert_eq!(squeeze(&rebuilt), squeeze(&d.text));

    // Max-Min over the pieces with a 128-token max chunk: no chunk exceeds it.
    let max = SizeLimit::with_unit(128, Unit::Tokens, Some(Arc::clone(&tok))).unwrap();
    let (pieces, _) = split_oversized(&d.text, &units, &max);
    let v = vec![vec![1.0f32, 0.0]; pieces.len()];
    let cfg = MaxMinConfig {
        max_chunk: Some(max),
        ..MaxMinConfig::default()
    };
    let (chunks, stats) = cfg.chunk_with_stats(&d, &pieces, &v).unwrap();
    for c in &chunks {
        assert!(tok.count(c.text(&d)) <= 128);
    }
    assert!(stats.forced_splits > 0);
    assert_eq!(stats.oversized_units, 0);
    // The URL was cut inside the word, so word counts do not add up; the text does.
    assert_chunk_slices(&d, &chunks);
}

#[test]
fn two_thousand_word_sentence() {
    let long = (0..2000)
        .map(|i| format!("W{i}"))
        .collect::<Vec<_>>()
        .join(" ")
        + ".";
    let text = format!("A short opening sentence. {long} A short closing sentence.");
    let d = doc(&text);
    let units = sentences(&d.text);
    assert_eq!(units.len(), 3);
    let limit = SizeLimit::words(256).unwrap();
    let (pieces, stats) = split_oversized(&d.text, &units, &limit);
    assert_eq!(stats.units_split, 1);
    assert_eq!(stats.pieces, 8, "2000 words in pieces of at most 256");
    assert_eq!(pieces.len(), 10);
    let sizes: Vec<usize> = pieces
        .iter()
        .map(|p| count_words(&d.text[p.start..p.end]))
        .collect();
    assert_eq!(sizes, [4, 256, 256, 256, 256, 256, 256, 256, 208, 4]);

    // Grouped with a 256-word maximum: every chunk fits, every word is kept.
    let v = vec![vec![0.5f32, 0.5]; pieces.len()];
    let cfg = MaxMinConfig {
        max_chunk: Some(limit),
        ..MaxMinConfig::default()
    };
    let (chunks, stats) = cfg.chunk_with_stats(&d, &pieces, &v).unwrap();
    assert!(chunks.iter().all(|c| c.words <= 256));
    assert!(stats.forced_splits >= 7);
    assert_chunk_invariants(&d, &chunks);

    // Without splitting first, the long sentence is one oversized unit, counted.
    let v = vec![vec![0.5f32, 0.5]; units.len()];
    let (chunks, stats) = cfg.chunk_with_stats(&d, &units, &v).unwrap();
    assert_eq!(stats.oversized_units, 1);
    assert_eq!(chunks.len(), 3);
}

#[test]
fn case_25_last_sentence_is_kept() {
    let d = doc("Ana ate an apple. Ben ate a banana. Cai ate a cherry. Dee ate a date.");
    let units = sentences(&d.text);
    assert_eq!(units.len(), 4);
    let tok = tokenizer();
    let vector_sets = [
        vec![vec![1.0f32, 0.0]; 4],
        angles(&[0.0, 90.0, 0.0, 90.0]),
        angles(&[0.0, 10.0, 20.0, 90.0]),
        angles(&[0.0, 90.0, 180.0, 185.0]),
    ];
    let limits = [
        None,
        Some(SizeLimit::words(5).unwrap()),
        Some(SizeLimit::with_unit(10, Unit::Tokens, Some(Arc::clone(&tok))).unwrap()),
    ];
    for v in &vector_sets {
        for max in &limits {
            let cfg = MaxMinConfig {
                max_chunk: max.clone(),
                ..MaxMinConfig::default()
            };
            let chunks = cfg.chunk(&d, &units, v).unwrap();
            assert_chunk_invariants(&d, &chunks);
            assert_eq!(chunks.last().unwrap().span.end, d.text.len());
            assert!(chunks.last().unwrap().text(&d).ends_with("Dee ate a date."));
        }
    }
}

// ---------------------------------------------------------------- options

#[test]
fn max_chunk_forces_splits_and_counts_them() {
    let text = (0..10)
        .map(|i| format!("Sentence number {i} here."))
        .collect::<Vec<_>>()
        .join(" ");
    let d = doc(&text);
    let units = sentences(&d.text);
    assert_eq!(units.len(), 10);
    let v = vec![vec![1.0f32, 1.0]; 10];
    let cfg = MaxMinConfig {
        max_chunk: Some(SizeLimit::words(10).unwrap()),
        ..MaxMinConfig::default()
    };
    let (chunks, stats) = cfg.chunk_with_stats(&d, &units, &v).unwrap();
    assert_eq!(chunks.len(), 5);
    assert!(chunks.iter().all(|c| c.words == 8));
    assert_eq!(stats.forced_splits, 4);
    assert_eq!(stats.oversized_units, 0);
    // `groups` refuses to run without sizes; `groups_sized` takes them.
    assert_eq!(cfg.groups(&v).unwrap_err(), MaxMinError::SizesRequired);
    let (g, s) = cfg.groups_sized(&v, |r| r.len() * 4).unwrap();
    assert_eq!(g.len(), 5);
    assert_eq!(s.forced_splits, 4);
}

#[test]
fn min_chunk_merges_small_chunks_into_the_more_similar_neighbour() {
    // Each unit alone under the rule; sizes in "words" via groups_sized.
    let v = angles(&[0.0, 80.0, 150.0, 260.0, 350.0]);
    assert_eq!(groups(&v).len(), 5);
    let cfg = MaxMinConfig {
        min_chunk: Some(SizeLimit::words(3).unwrap()),
        ..MaxMinConfig::default()
    };
    let sizes = [5usize, 1, 1, 5, 5];
    let (g, stats) = cfg.groups_sized(&v, |r| sizes[r].iter().sum()).unwrap();
    // Unit 1 (1 word): boundary cos with unit 0 = cos 80°, with unit 2 = cos 70° -> next.
    // Then {1, 2} (2 words): with unit 0 cos 80°, with unit 3 cos 110° -> previous.
    assert_eq!(g, vec![0..3, 3..4, 4..5]);
    assert_eq!(stats.merges, 2);
    assert_eq!(stats.small_unmerged, 0);
    assert_eq!(stats.chunks, 3);
    let m = stats.min_similarity[0].unwrap();
    assert!((m - 150f64.to_radians().cos()).abs() < 1e-6, "{m}");
    // A max_chunk that every merge would exceed leaves the small chunk alone, counted.
    let cfg = MaxMinConfig {
        max_chunk: Some(SizeLimit::words(5).unwrap()),
        min_chunk: Some(SizeLimit::words(3).unwrap()),
        ..MaxMinConfig::default()
    };
    let sizes = [5usize, 1, 5];
    let (g, stats) = cfg
        .groups_sized(&angles(&[0.0, 90.0, 180.0]), |r| sizes[r].iter().sum())
        .unwrap();
    assert_eq!(g, vec![0..1, 1..2, 2..3]);
    assert_eq!((stats.merges, stats.small_unmerged), (0, 1));
}

#[test]
fn min_chunk_on_a_document_keeps_exact_spans() {
    let d = doc("Tiny. Another small one. Then a much longer sentence with many words in it. End.");
    let units = sentences(&d.text);
    assert_eq!(units.len(), 4);
    let v = angles(&[0.0, 90.0, 180.0, 270.0]);
    let cfg = MaxMinConfig {
        min_chunk: Some(SizeLimit::words(4).unwrap()),
        ..MaxMinConfig::default()
    };
    let (chunks, stats) = cfg.chunk_with_stats(&d, &units, &v).unwrap();
    assert!(stats.merges >= 2, "{stats:?}");
    assert!(chunks.iter().all(|c| c.words >= 4), "{chunks:?}");
    assert_chunk_invariants(&d, &chunks);
    assert_eq!(stats.min_similarity.len(), chunks.len());
}

#[test]
fn paragraph_unit_groups_paragraphs() {
    let text = "Stars form in clouds. They shine.\n\nGalaxies hold stars.\r\n\r\nPlanets orbit stars.\n   \nMoons orbit planets.";
    let d = doc(text);
    let cfg = MaxMinConfig {
        unit: GroupUnit::Paragraph,
        ..MaxMinConfig::default()
    };
    let units = cfg.units(&d.text);
    let texts: Vec<&str> = units.iter().map(|u| &text[u.start..u.end]).collect();
    assert_eq!(
        texts,
        [
            "Stars form in clouds. They shine.",
            "Galaxies hold stars.",
            "Planets orbit stars.",
            "Moons orbit planets."
        ]
    );
    let v = angles(&[0.0, 5.0, 90.0, 92.0]);
    let chunks = cfg.chunk(&d, &units, &v).unwrap();
    let got: Vec<&str> = chunks.iter().map(|c| c.text(&d)).collect();
    assert_eq!(
        got,
        [
            "Stars form in clouds. They shine.\n\nGalaxies hold stars.",
            "Planets orbit stars.\n   \nMoons orbit planets."
        ]
    );
    assert_eq!(
        "paragraph".parse::<GroupUnit>().unwrap(),
        GroupUnit::Paragraph
    );
}

#[test]
fn paragraphs_follow_the_blank_line_rule() {
    let spans = |t: &str| -> Vec<String> {
        paragraphs(t)
            .iter()
            .map(|s| t[s.start..s.end].to_string())
            .collect()
    };
    assert!(spans("").is_empty());
    assert!(spans(" \n\n \u{200B}").is_empty());
    assert_eq!(spans("a\nb"), ["a\nb"]);
    assert_eq!(spans("a\r\nb"), ["a\r\nb"]);
    assert_eq!(spans("a\r\rb"), ["a", "b"]);
    assert_eq!(spans("a\r\n\r\nb"), ["a", "b"]);
    assert_eq!(spans("a\u{2029}b"), ["a", "b"]);
    assert_eq!(spans("  a \n \t\n b  "), ["a", "b"]);
    assert_eq!(spans("日本。\n\n한국"), ["日本。", "한국"]);
}

// ---------------------------------------------------------------- errors and reporting

#[test]
fn errors_name_the_field_or_input() {
    let cfg = MaxMinConfig {
        c: f64::NAN,
        ..MaxMinConfig::default()
    };
    let e = cfg.groups(&angles(&[0.0])).unwrap_err();
    assert!(e.to_string().contains("`c`"), "{e}");
    let e = maxmin_groups(&[vec![1.0, 0.0], vec![1.0]]).unwrap_err();
    assert_eq!(
        e,
        MaxMinError::DimensionMismatch {
            index: 1,
            expected: 2,
            got: 1
        }
    );
    let d = doc("One. Two.");
    let units = sentences(&d.text);
    let e = MaxMinConfig::default()
        .chunk(&d, &units, &angles(&[0.0]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            MaxMinError::LengthMismatch {
                units: 2,
                vectors: 1
            }
        ),
        "{e}"
    );
    let bad = [Span { start: 5, end: 9 }, Span { start: 0, end: 4 }];
    let e = MaxMinConfig::default()
        .chunk(&d, &bad, &angles(&[0.0, 1.0]))
        .unwrap_err();
    assert!(
        matches!(e, MaxMinError::InvalidUnit { index: 1, .. }),
        "{e}"
    );
    assert!(SizeLimit::words(0).is_err());
    assert_eq!(
        MaxMinError::from(SizeLimit::with_unit(5, Unit::Tokens, None).unwrap_err()),
        MaxMinError::MissingTokenizer
    );
    let e = "loose".parse::<Comparison>().unwrap_err();
    assert!(e.to_string().contains("strict, inclusive"), "{e}");
    assert_eq!(MaxMinConfig::default().fixed_threshold, FIXED_THRESHOLD);
}

#[test]
fn summary_and_stats_for_reports() {
    let d = doc("One two. Three four five. Six. Seven eight nine ten.");
    let units = sentences(&d.text);
    let v = angles(&[0.0, 90.0, 180.0, 270.0]);
    let (chunks, stats) = MaxMinConfig::default()
        .chunk_with_stats(&d, &units, &v)
        .unwrap();
    let s = ChunkSummary::from_chunks(&chunks, stats.forced_splits, stats.merges);
    assert_eq!(s.chunks, 4);
    assert_eq!((s.words_min, s.words_max), (1, 4));
    assert_eq!(s.words_median, 2.5);
    assert!((s.words_p95 - 3.85).abs() < 1e-12);
    let json = serde_json::to_value(&stats).unwrap();
    for key in [
        "forced_splits",
        "merges",
        "degenerate_vectors",
        "min_similarity",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    let mut total = stats.clone();
    total.add(&stats);
    assert_eq!(total.chunks, 8);
    assert_eq!(total.min_similarity.len(), 8);
    assert_eq!(ChunkSummary::from_chunks(&[], 0, 0).chunks, 0);
}

#[test]
fn split_oversized_in_chars_cuts_long_words_on_char_boundaries() {
    let text = "Short one. ".to_string() + &"é".repeat(20) + "ab cd. Next.";
    let units = sentences(&text);
    let limit = SizeLimit::with_unit(8, Unit::Chars, None).unwrap();
    let (pieces, stats) = split_oversized(&text, &units, &limit);
    assert_eq!(stats.words_split, 1);
    assert_eq!(stats.still_oversized, 0);
    let texts: Vec<&str> = pieces.iter().map(|p| &text[p.start..p.end]).collect();
    for t in &texts {
        assert!(t.chars().count() <= 8, "{t:?}");
    }
    assert_eq!(texts.concat().replace(' ', ""), text.replace(' ', ""));
    assert_eq!(texts[0], "Short");
    assert_eq!(*texts.last().unwrap(), "Next.");
}

/// `pack_units` joins consecutive units while the joined span stays within the limit, keeps an
/// over-limit unit alone, and never loses or reorders text.
#[test]
fn pack_units_bounds_joined_spans() {
    use chunker::{pack_units, SizeLimit, Span};
    let text = "One two three. Four five. Six seven eight nine ten eleven. Twelve.";
    let units = chunker::kamradt::split_sentences(text);
    let limit = SizeLimit::words(5).unwrap();
    let packed = pack_units(text, &units, &limit);
    let texts: Vec<&str> = packed.iter().map(|s| &text[s.start..s.end]).collect();
    assert_eq!(
        texts,
        [
            "One two three. Four five.",
            "Six seven eight nine ten eleven.",
            "Twelve."
        ]
    );
    assert!(pack_units(text, &[], &limit).is_empty());
    let one = [Span { start: 0, end: 3 }];
    assert_eq!(pack_units(text, &one, &limit), one);
}
