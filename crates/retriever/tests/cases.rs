//! docs/reference.md (cases) 3 (blank documents / empty corpus), 24 (overlapping chunks and words retrieved),
//! 29 (empty retrieval is never perfect recall) for every retriever and metric here.

use chunker::{Chunk, Document};
use retriever::metrics::{
    answer_recall_at_k, precision_omega, rank_metrics, span_metrics, words_retrieved_in, WordMap,
};
use retriever::{rrf, words_retrieved, Bm25, Bm25Params, DenseIndex, DocSpan, Hit, PassageIndex};

fn doc(id: &str, text: &str) -> Document {
    Document::new(id, text)
}

#[test]
fn case_3_blank_documents_and_empty_corpus() {
    let docs: Vec<Document> = ["", "   \n\t  ", "\r\n\r\n", "\u{00A0}\u{200B}\u{FEFF}"]
        .iter()
        .enumerate()
        .map(|(i, t)| doc(&format!("d{i}"), t))
        .collect();
    // Blank documents produce no chunks; the index is empty and every retriever returns [].
    let index = PassageIndex::new(&docs, Vec::new()).unwrap();
    assert!(index.is_empty());
    let bm = Bm25::new(&index, Bm25Params::default());
    assert!(bm.search("pumps valves", 3, None).is_empty());
    let dense = DenseIndex::new(Vec::new(), 384).unwrap();
    assert!(dense.search(&[1.0; 384], 3, None).unwrap().is_empty());
    let no_lists: Vec<Vec<Hit>> = vec![vec![], vec![]];
    assert!(rrf(&no_lists, 3).is_empty());
    let w = words_retrieved_in(&[], &docs);
    assert_eq!((w.with_multiplicity, w.unique), (0, 0));
    // The normal document in the batch still works.
    let d = doc("d4", "Pumps hum. Valves click.");
    let idx = PassageIndex::new(std::slice::from_ref(&d), vec![Chunk::new(&d, 0, 24)]).unwrap();
    let bm = Bm25::new(&idx, Bm25Params::default());
    assert_eq!(bm.search("valves", 3, None).len(), 1);
}

#[test]
fn case_24_adjacent_overlapping_chunks_words_two_ways() {
    // Long line + lines; two adjacent chunks overlapping by 3 words are both retrieved.
    let text = "x ".repeat(20) + "line 0 of normal text here";
    let d = doc("d", &text);
    let words = chunker::word_spans(&text);
    let a = Chunk::new(&d, words[0].start, words[15].end); // words 0..16
    let b = Chunk::new(&d, words[13].start, words[25].end); // words 13..26
    assert_eq!((a.words, b.words), (16, 13));
    let w = words_retrieved_in(&[&a, &b], std::slice::from_ref(&d));
    assert_eq!(w.with_multiplicity, 29);
    assert_eq!(w.unique, 26);
    // The same chunk twice: multiplicity doubles, unique does not.
    let w2 = words_retrieved(&[&a, &a], |_| Some(text.as_str()));
    assert_eq!((w2.with_multiplicity, w2.unique), (32, 16));
    // Span metrics in words: evidence = words 14..16 (inside the overlap).
    let wm = WordMap::new(std::slice::from_ref(&d));
    let ev = DocSpan::new("d", words[14].start, words[15].end);
    let m = wm
        .span_metrics(&[DocSpan::from(&a), DocSpan::from(&b)], &[ev])
        .unwrap();
    assert_eq!(m.recall, 1.0);
    assert!((m.precision - 2.0 / 29.0).abs() < 1e-15);
    assert!((m.iou - 2.0 / 29.0).abs() < 1e-15);
    // Rank metrics: the second chunk covers the same evidence again and gains nothing.
    let r = rank_metrics(&[DocSpan::from(&a), DocSpan::from(&b)], &[ev], 2).unwrap();
    assert_eq!((r.hit, r.recall, r.mrr, r.ndcg), (1.0, 1.0, 1.0, 1.0));
    let omega = wm
        .precision_omega(&[DocSpan::from(&a), DocSpan::from(&b)], &[ev])
        .unwrap();
    assert!((omega - 2.0 / 26.0).abs() < 1e-15);
}

#[test]
fn case_29_empty_retrieval_is_zero_not_one() {
    let text = "Valve V2 was replaced in March. Pump P1 was inspected.";
    let d = doc("d", text);
    let evidence = [DocSpan::new("d", 0, 31)];
    let empty_chunk = Chunk::new(&d, 40, 40); // the retrieved passage ""
    for retrieved in [vec![], vec![DocSpan::from(&empty_chunk)]] {
        for k in [1, 3, 8] {
            let m = rank_metrics(&retrieved, &evidence, k).unwrap();
            assert_eq!((m.hit, m.recall, m.mrr, m.ndcg), (0.0, 0.0, 0.0, 0.0));
        }
        let s = span_metrics(&retrieved, &evidence).unwrap();
        assert_eq!((s.recall, s.precision, s.iou), (0.0, 0.0, 0.0));
        let wm = WordMap::new(std::slice::from_ref(&d));
        let s = wm.span_metrics(&retrieved, &evidence).unwrap();
        assert_eq!((s.recall, s.precision, s.iou), (0.0, 0.0, 0.0));
    }
    let w = words_retrieved_in(&[&empty_chunk], std::slice::from_ref(&d));
    assert_eq!((w.with_multiplicity, w.unique), (0, 0));
    let none: [&str; 0] = [];
    assert_eq!(answer_recall_at_k(&none, "V2", 3), Some(0.0));
    assert_eq!(answer_recall_at_k(&[""], "V2", 3), Some(0.0));
    assert_eq!(
        answer_recall_at_k(&["Valve v2 was replaced"], "V2", 3),
        Some(1.0)
    );
    // An empty answer or no evidence is undefined (excluded), never a perfect score.
    assert_eq!(answer_recall_at_k(&[""], "  ", 3), None);
    assert_eq!(rank_metrics(&[DocSpan::new("d", 0, 5)], &[], 3), None);
    assert_eq!(
        span_metrics(&[DocSpan::new("d", 0, 5)], &[DocSpan::new("d", 3, 3)]),
        None
    );
    assert_eq!(precision_omega(&[], &[]), None);
}

#[test]
fn design_vector_span_metrics_and_duplicates() {
    let ev = [DocSpan::new("d", 10, 20)];
    let m = span_metrics(&[DocSpan::new("d", 0, 15), DocSpan::new("d", 12, 30)], &ev).unwrap();
    assert_eq!(m.recall, 1.0);
    assert_eq!(m.precision, 10.0 / 33.0);
    assert_eq!(m.iou, 10.0 / 33.0);
    // Duplicated retrieval: recall stays 1, precision and IoU halve.
    let dup = [DocSpan::new("d", 10, 20), DocSpan::new("d", 10, 20)];
    let m = span_metrics(&dup, &ev).unwrap();
    assert_eq!((m.recall, m.precision, m.iou), (1.0, 0.5, 0.5));
    let r = rank_metrics(&dup, &ev, 2).unwrap();
    assert_eq!((r.recall, r.ndcg), (1.0, 1.0));
    // Evidence listed twice counts once.
    let r = rank_metrics(&dup[..1], &[ev[0], ev[0]], 1).unwrap();
    assert_eq!(r.recall, 1.0);
    // Another document's identical span is not evidence.
    let r = rank_metrics(&[DocSpan::new("e", 10, 20)], &ev, 1).unwrap();
    assert_eq!(r.hit, 0.0);
    // Spans in words: the Chroma vector with one-letter words.
    let d = doc("d", &"w ".repeat(40));
    let wm = WordMap::new(std::slice::from_ref(&d));
    let bytes = |a: usize, b: usize| DocSpan::new("d", 2 * a, 2 * b - 1);
    let m = wm
        .span_metrics(&[bytes(0, 15), bytes(12, 30)], &[bytes(10, 20)])
        .unwrap();
    assert_eq!(
        (m.recall, m.precision, m.iou),
        (1.0, 10.0 / 33.0, 10.0 / 33.0)
    );
}
