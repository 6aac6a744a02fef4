//! Property tests of EAR windows ([`retriever::ear`]) on generated corpora: offsets are exact
//! UTF-8 slices, windows stay inside their parent and their word budget, deduplication holds,
//! results are deterministic; plus sentence snapping and date matching on fixed inputs.

use chunker::{count_words, Chunk, Document, FixedConfig};
use proptest::prelude::*;
use retriever::ear::{Dedup, EarConfig, EarIndex, Expand};
use retriever::PassageIndex;

fn doc(id: &str, text: &str) -> Document {
    Document::new(id, text)
}

fn parents(docs: &[Document], size: usize, overlap: usize) -> PassageIndex {
    let cfg = FixedConfig::new(size, overlap).unwrap();
    let chunks: Vec<Chunk> = docs.iter().flat_map(|d| cfg.chunk(d)).collect();
    PassageIndex::new(docs, chunks).unwrap()
}

const VOCAB: &[&str] = &[
    "the",
    "army",
    "marched",
    "Lincoln",
    "Grant",
    "Émile",
    "Durkheim",
    "in",
    "1863",
    "1860s",
    "Treaty",
    "of",
    "Paris",
    "war.",
    "cells",
    "divide",
    "São",
    "Paulo",
    "東京",
    "1914-1918",
    "19th",
    "century",
    "New",
    "Deal",
    "and",
    "Lincoln's",
    "voted.",
    "\n\n",
];

fn text_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec(0..VOCAB.len(), 0..120)
        .prop_map(|ix| ix.iter().map(|&i| VOCAB[i]).collect::<Vec<_>>().join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn windows_are_exact_bounded_and_deterministic(
        texts in proptest::collection::vec(text_strategy(), 1..4),
        radius in 0usize..12,
        size in 8usize..40,
        k in 1usize..6,
        drop in any::<bool>(),
    ) {
        let docs: Vec<Document> = texts.iter().enumerate().map(|(i, t)| doc(&format!("d{i}"), t)).collect();
        let idx = parents(&docs, size, size / 4);
        let cfg = EarConfig {
            radius,
            dedup: if drop { Dedup::Drop } else { Dedup::Merge },
            ..EarConfig::default()
        };
        let ear = EarIndex::new(&docs, &idx, cfg).unwrap();
        let options: Vec<String> = ["Lincoln", "Treaty of Paris", "1863", "cells divide"].map(String::from).to_vec();
        let q = "What did Grant do in the 1860s near São Paulo during the war?";
        let r = ear.search(q, &options, k, None, &[]);
        prop_assert_eq!(&r, &ear.search(q, &options, k, None, &[]));
        prop_assert!(r.passages.len() <= k);
        prop_assert!(r.stats.windows_after_dedup <= r.stats.windows_before_dedup);
        for p in &r.passages {
            let text = &docs[p.doc].text;
            prop_assert!(p.span.start < p.span.end && p.span.end <= text.len());
            prop_assert!(text.is_char_boundary(p.span.start) && text.is_char_boundary(p.span.end));
            let parent = idx.passages()[p.parent].span;
            if !p.fallback {
                prop_assert!(p.span.start >= parent.start && p.span.end <= parent.end);
                prop_assert!(!p.matches.is_empty());
                for m in &p.matches {
                    prop_assert!(m.corpus_span.start >= p.span.start && m.corpus_span.end <= p.span.end);
                }
                if drop {
                    // A window: the anchor's words plus at most `radius` on each side.
                    let anchor_words = p.matches.iter().map(|m| count_words(&text[m.corpus_span.start..m.corpus_span.end])).max().unwrap_or(1);
                    prop_assert!(count_words(&text[p.span.start..p.span.end]) <= 2 * radius + anchor_words + 2);
                }
            }
        }
        if drop {
            for (i, a) in r.passages.iter().enumerate() {
                for b in &r.passages[i + 1..] {
                    if a.doc == b.doc {
                        let shorter = a.span.len().min(b.span.len());
                        prop_assert!((a.span.overlap(&b.span) as f64) < 0.5 * shorter as f64);
                    }
                }
            }
        }
    }
}

#[test]
fn snapping_widens_windows_to_sentences_inside_the_parent() {
    let text = "First sentence here. The Treaty of Paris ended it in Europe. Last one follows now.";
    let docs = [doc("d", text)];
    let idx = parents(&docs, 260, 60);
    let cfg = EarConfig {
        radius: 0,
        snap_sentences: true,
        ..EarConfig::default()
    };
    let ear = EarIndex::new(&docs, &idx, cfg).unwrap();
    let r = ear.search(
        "Which treaty? The Treaty of Paris?",
        &["x y z w v".into()],
        1,
        None,
        &[],
    );
    let p = &r.passages[0];
    assert_eq!(
        &text[p.span.start..p.span.end],
        "The Treaty of Paris ended it in Europe."
    );
}

#[test]
fn date_match_rewards_overlapping_years() {
    let docs = [
        doc(
            "a",
            "The Sherman Act passed in 1890 after a long debate in Congress.",
        ),
        doc(
            "b",
            "The Sherman Act was enforced in 1911 against a large trust company.",
        ),
    ];
    let idx = parents(&docs, 260, 60);
    let ear = EarIndex::new(&docs, &idx, EarConfig::default()).unwrap();
    let r = ear.search(
        "What happened to the Sherman Act in the 1910s?",
        &["xx yy zz qq rr".into()],
        2,
        None,
        &[],
    );
    assert_eq!(r.passages[0].doc, 1, "{:?}", r.passages);
    assert_eq!(r.passages[0].parts.date, 1.0);
    assert_eq!(r.passages[1].parts.date, 0.0);
}

#[test]
fn summary_expansion_counts_its_sentences() {
    let text = "Mitochondria make energy for cells. Photosynthesis happens in the chloroplast of plants. \
                Plants need water and light. The Krebs Cycle runs in Mitochondria and makes energy carriers.";
    let docs = [doc("d", text)];
    let idx = parents(&docs, 260, 60);
    let cfg = EarConfig {
        radius: 1,
        expand: Expand::Summary,
        summary_words: 8,
        ..EarConfig::default()
    };
    let ear = EarIndex::new(&docs, &idx, cfg).unwrap();
    let r = ear.search(
        "Where does the Krebs Cycle make energy?",
        &["in plants".into()],
        1,
        None,
        &[],
    );
    let p = &r.passages[0];
    assert!(!p.summary.is_empty());
    let words: usize = p
        .summary
        .iter()
        .map(|s| count_words(&text[s.start..s.end]))
        .sum();
    assert!(words <= 8, "{words}");
    assert_eq!(
        &text[p.summary[0].start..p.summary[0].end],
        "Mitochondria make energy for cells."
    );
}
