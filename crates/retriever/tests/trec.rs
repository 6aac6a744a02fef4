//! TREC run and qrels writers; query forms and BM25 options as the runner uses them.

use chunker::{Chunk, Document};
use retriever::trec::{evidence_qrels, write_qrels, RunWriter, TrecError};
use retriever::{
    query_texts, Bm25, Bm25Params, DocSpan, Hit, PassageIndex, QueryForm, TextAnalyzer,
};

fn doc(id: &str, text: &str) -> Document {
    Document::new(id, text)
}

fn index() -> (Vec<Document>, PassageIndex) {
    let a = doc(
        "a",
        "Valve V2 was replaced in March. Pump P1 was inspected.",
    );
    let b = doc("b", "The valves were cleaned.");
    let chunks = vec![
        Chunk::new(&a, 0, 31),
        Chunk::new(&a, 32, 54),
        Chunk::new(&b, 0, 24),
    ];
    let docs = vec![a, b];
    let idx = PassageIndex::new(&docs, chunks).unwrap();
    (docs, idx)
}

#[test]
fn run_and_qrels_format() {
    let (_, idx) = index();
    let hits = [
        Hit {
            passage: 2,
            score: 1.5,
        },
        Hit {
            passage: 0,
            score: 0.25,
        },
    ];
    let mut w = RunWriter::new(Vec::new(), "cell-1").unwrap();
    w.write_hits("q1", &hits, &idx).unwrap();
    w.write_hits("q2", &[], &idx).unwrap();
    let text = String::from_utf8(w.finish().unwrap()).unwrap();
    assert_eq!(
        text,
        "q1 Q0 b:0-24 1 1.5 cell-1\nq1 Q0 a:0-31 2 0.25 cell-1\n"
    );

    let ev = [DocSpan::new("a", 10, 40)];
    let rel = evidence_qrels(&idx, &ev);
    assert_eq!(rel, [0, 1]);
    let mut out = Vec::new();
    write_qrels(&mut out, "q1", &rel, &idx).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "q1 0 a:0-31 1\nq1 0 a:32-54 1\n"
    );
}

#[test]
fn run_writer_rejects_bad_fields() {
    assert!(matches!(
        RunWriter::new(Vec::new(), "a tag"),
        Err(TrecError::InvalidField { field: "tag", .. })
    ));
    let mut w = RunWriter::new(Vec::new(), "t").unwrap();
    assert!(matches!(
        w.write_ranking("q 1", &[("d", 1.0)]),
        Err(TrecError::InvalidField { field: "qid", .. })
    ));
    assert!(matches!(
        w.write_ranking("q1", &[("d x", 1.0)]),
        Err(TrecError::InvalidField { field: "docid", .. })
    ));
    assert!(matches!(
        w.write_ranking("q1", &[("d", f64::NAN)]),
        Err(TrecError::NonFiniteScore { .. })
    ));
}

#[test]
fn query_forms_with_bm25_pooling_and_scope() {
    let (_, idx) = index();
    let bm = Bm25::new(&idx, Bm25Params::default());
    let options = ["March", "inspected"];
    let per = query_texts(
        QueryForm::PerOption,
        "When was the valve replaced?",
        &options,
    );
    assert_eq!(per.len(), 2);
    let pooled = bm.search_pooled(&per, 3, None);
    // Max-pooling: each passage scores its best option query.
    for h in &pooled {
        let best = per
            .iter()
            .map(|q| bm.scores(q)[h.passage])
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(h.score, best);
    }
    let scope = idx.scope_mask(Some(&["b".to_string()])).unwrap();
    let scoped = bm.search_pooled(&per, 3, Some(&scope));
    assert!(scoped
        .iter()
        .all(|h| idx.passages()[h.passage].doc_id == "b"));
    // Stemming joins "valves" and "valve".
    let stem = Bm25::with_analyzer(&idx, Bm25Params::default(), TextAnalyzer::english());
    let hits = stem.search("valve", 3, None);
    assert_eq!(hits.len(), 2);
    let plain = bm.search("valve", 3, None);
    assert_eq!(plain.len(), 1);
}
