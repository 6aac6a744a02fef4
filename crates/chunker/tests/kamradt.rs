//! Kamradt / LangChain SemanticChunker: the sentence regex, the early returns, degenerate
//! vectors, errors, and docs/reference.md cases 4, 7 and 25. Parity with LangChain itself is in
//! `kamradt_golden.rs`.

use chunker::kamradt::{numpy, split_sentences};
use chunker::{count_words, BreakpointType, Document, KamradtConfig, KamradtError};

fn doc(text: &str) -> Document {
    Document {
        id: "d".into(),
        title: String::new(),
        text: text.into(),
        source: String::new(),
        license: String::new(),
    }
}

fn pieces(text: &str) -> Vec<&str> {
    split_sentences(text)
        .iter()
        .map(|s| &text[s.start..s.end])
        .collect()
}

#[test]
fn sentence_split_has_python_re_split_semantics() {
    assert_eq!(pieces(""), [""]);
    assert_eq!(pieces("No punctuation"), ["No punctuation"]);
    assert_eq!(pieces("A. B"), ["A.", "B"]);
    assert_eq!(pieces("A.  \n\t B"), ["A.", "B"]);
    assert_eq!(pieces("A. "), ["A.", ""]);
    assert_eq!(pieces("Wait! Really? Yes."), ["Wait!", "Really?", "Yes."]);
    assert_eq!(
        pieces("3.14 is pi. e.g. this"),
        ["3.14 is pi.", "e.g.", "this"]
    );
    // Leading whitespace is not split off (no punctuation before it).
    assert_eq!(pieces("  A. B"), ["  A.", "B"]);
    // Python's \s: NBSP, U+001C..U+001F, U+2003 count; U+200B does not.
    assert_eq!(
        pieces("A.\u{a0}B.\u{1c}C.\u{2003}D.\u{200b}E"),
        ["A.", "B.", "C.", "D.\u{200b}E"]
    );
    // A quote or bracket after the period blocks the look-behind.
    assert_eq!(pieces("\"A.\" B. (C.) D"), ["\"A.\" B.", "(C.) D"]);
    assert_eq!(pieces("日本。 한국"), ["日本。 한국"]);
}

#[test]
fn combined_sentences_join_neighbours_with_spaces() {
    let text = "One.\n\nTwo. Three.  Four.";
    let s = split_sentences(text);
    let cfg = KamradtConfig::default();
    assert_eq!(
        cfg.combined_sentences(text, &s),
        [
            "One. Two.",
            "One. Two. Three.",
            "Two. Three. Four.",
            "Three. Four."
        ]
    );
    let cfg0 = KamradtConfig {
        buffer_size: 0,
        ..KamradtConfig::default()
    };
    assert_eq!(
        cfg0.combined_sentences(text, &s),
        ["One.", "Two.", "Three.", "Four."]
    );
    let big = KamradtConfig {
        buffer_size: usize::MAX,
        ..KamradtConfig::default()
    };
    assert_eq!(
        big.combined_sentences(text, &s)[0],
        "One. Two. Three. Four."
    );
}

#[test]
fn case_04_single_sentence_needs_no_embedding() {
    for text in [
        "The cooling loop was inspected on Tuesday.",
        "no terminal punctuation at all in this line",
        "Wait!",
    ] {
        let d = doc(text);
        let s = split_sentences(text);
        assert_eq!(s.len(), 1);
        for &t in BreakpointType::ALL {
            let cfg = KamradtConfig::new(t);
            assert!(!cfg.needs_embeddings(1));
            let (chunks, stats) = cfg.chunk_with_stats(&d, &s, &[]).unwrap();
            assert_eq!(chunks.len(), 1);
            assert_eq!(chunks[0].text(&d), text);
            assert_eq!(stats.threshold, None);
            assert_eq!(stats.embedded, 0);
        }
    }
    // Two sentences with the gradient type: LangChain returns them unembedded, one each.
    let text = "Pumps move water. Valves stop it.";
    let s = split_sentences(text);
    let cfg = KamradtConfig::new(BreakpointType::Gradient);
    assert!(!cfg.needs_embeddings(2));
    assert_eq!(cfg.chunk(&doc(text), &s, &[]).unwrap().len(), 2);
    assert!(KamradtConfig::default().needs_embeddings(2));
}

#[test]
fn empty_text_gives_no_chunk() {
    let d = doc("");
    let s = split_sentences("");
    let cfg = KamradtConfig::default();
    let (chunks, stats) = cfg.chunk_with_stats(&d, &s, &[]).unwrap();
    assert!(chunks.is_empty());
    assert_eq!((stats.groups, stats.empty_dropped), (1, 1));
    // LangChain's own output for "" is [""]:
    let (groups, _) = cfg.groups(&[""], &[]).unwrap();
    assert_eq!(cfg.langchain_texts("", &s, &groups), [""]);
}

#[test]
fn case_07_degenerate_vectors_become_distance_one() {
    let text = "Intro sentence here. ---- #### ----. Closing sentence here.";
    let s = split_sentences(text);
    assert_eq!(s.len(), 3);
    let cfg = KamradtConfig {
        buffer_size: 0,
        ..KamradtConfig::default()
    };
    for middle in [
        vec![0.0f32, 0.0],
        vec![f32::NAN, 1.0],
        vec![f32::INFINITY, 0.0],
    ] {
        let v = vec![vec![1.0f32, 0.0], middle, vec![1.0, 0.0]];
        let bp = cfg.breakpoints(&v).unwrap();
        assert_eq!(bp.distances, [1.0, 1.0]);
        assert_eq!(bp.degenerate_vectors, 1);
        assert!(bp.threshold.is_finite());
        let (chunks, stats) = cfg.chunk_with_stats(&doc(text), &s, &v).unwrap();
        assert_eq!(
            chunks.len(),
            1,
            "equal distances: none above the 95th percentile"
        );
        assert_eq!(stats.degenerate_vectors, 1);
    }
}

#[test]
fn case_25_last_sentence_is_kept() {
    let text = "Ana ate an apple. Ben ate a banana. Cai ate a cherry. Dee ate a date.";
    let d = doc(text);
    let s = split_sentences(text);
    assert_eq!(s.len(), 4);
    let vector_sets = [
        vec![vec![1.0f32, 0.0]; 4],
        vec![
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 0.0],
            vec![0.0, 1.0],
        ],
        vec![
            vec![1.0, 0.0],
            vec![1.0, 0.1],
            vec![0.0, 1.0],
            vec![-1.0, 0.0],
        ],
    ];
    for &t in BreakpointType::ALL {
        for v in &vector_sets {
            for min_chunk_size in [None, Some(10), Some(1000)] {
                let cfg = KamradtConfig {
                    min_chunk_size,
                    ..KamradtConfig::new(t)
                };
                let chunks = cfg.chunk(&d, &s, v).unwrap();
                let words: usize = chunks.iter().map(|c| c.words).sum();
                assert_eq!(words, count_words(text), "{t} {v:?}");
                assert!(chunks.last().unwrap().text(&d).ends_with("Dee ate a date."));
            }
        }
    }
}

#[test]
fn number_of_chunks_and_min_chunk_size() {
    // Alternating orthogonal vectors: every distance is exactly 1.
    let v: Vec<Vec<f32>> = (0..6)
        .map(|i| {
            if i % 2 == 0 {
                vec![1.0, 0.0]
            } else {
                vec![0.0, 1.0]
            }
        })
        .collect();
    let texts = ["a.", "b.", "c.", "d.", "e.", "f."];
    let cfg = KamradtConfig {
        number_of_chunks: Some(3),
        ..KamradtConfig::default()
    };
    let (groups, stats) = cfg.groups(&texts, &v).unwrap();
    // All distances are 1: threshold = 1 (a percentile of equal values), none above.
    assert_eq!(groups, vec![0..6]);
    assert_eq!(stats.breakpoints, 0);
    // Distances exactly [0, 1, 0, 1, 0].
    let (x, y) = (vec![1.0f32, 0.0], vec![0.0f32, 1.0]);
    let v2 = vec![x.clone(), x.clone(), y.clone(), y, x.clone(), x];
    let (groups, _) = cfg.groups(&texts, &v2).unwrap();
    assert_eq!(groups, vec![0..2, 2..4, 4..6]);
    let cfg = KamradtConfig {
        breakpoint_amount: 50.0,
        min_chunk_size: Some(6),
        ..KamradtConfig::default()
    };
    let (groups, stats) = cfg.groups(&texts, &v2).unwrap();
    // "a. b." is 5 chars < 6: that breakpoint is skipped; "a. b. c. d." is kept.
    assert_eq!(groups, vec![0..4, 4..6]);
    assert_eq!(stats.merges, 1);
}

#[test]
fn errors_name_the_field() {
    let e = "median".parse::<BreakpointType>().unwrap_err();
    assert!(e.to_string().contains("breakpoint_threshold_type"), "{e}");
    let cfg = KamradtConfig {
        breakpoint_amount: 101.0,
        ..KamradtConfig::default()
    };
    assert!(matches!(
        cfg.validate().unwrap_err(),
        KamradtError::PercentileOutOfRange { .. }
    ));
    let cfg = KamradtConfig {
        breakpoint_amount: f64::NAN,
        ..KamradtConfig::new(BreakpointType::StandardDeviation)
    };
    assert!(cfg.validate().is_err());
    let cfg = KamradtConfig::default();
    let e = cfg.groups(&["a.", "b.", "c."], &[vec![1.0]]).unwrap_err();
    assert_eq!(
        e,
        KamradtError::LengthMismatch {
            sentences: 3,
            vectors: 1
        }
    );
    let e = cfg
        .groups(&["a.", "b."], &[vec![1.0], vec![1.0, 0.0]])
        .unwrap_err();
    assert!(matches!(
        e,
        KamradtError::DimensionMismatch { index: 1, .. }
    ));
    for &t in BreakpointType::ALL {
        assert_eq!(t.to_string().parse::<BreakpointType>().unwrap(), t);
    }
    assert_eq!(BreakpointType::Interquartile.default_amount(), 1.5);
}

#[test]
fn numpy_helpers_on_small_inputs() {
    assert_eq!(numpy::percentile(&[3.0, 1.0, 2.0], 50.0), 2.0);
    assert!((numpy::percentile(&[1.0, 2.0], 95.0) - 1.95).abs() < 1e-15);
    assert!(numpy::percentile(&[], 50.0).is_nan());
    assert_eq!(numpy::gradient(&[1.0, 2.0, 4.0]), [1.0, 1.5, 2.0]);
    assert!(numpy::gradient(&[1.0]).is_empty());
    assert_eq!(numpy::mean(&[1.0, 2.0, 3.0, 4.0]), 2.5);
    assert_eq!(numpy::std(&[1.0, 1.0]), 0.0);
}
