//! Late chunking ([`embed::late`], `kind: late`) against the reference implementation's
//! pooling (jina-ai/late-chunking: `_embed_with_overlap`, `chunked_pooling`,
//! `_extend_special_tokens`), run by `scripts/late_chunking_goldens.py` in PyTorch on the same
//! all-MiniLM-L6-v2 weights over real QuALITY text. The goldens hold, per case, the text, the
//! window and overlap, the chunk byte spans, the reference's token ranges and the reference's
//! L2-normalised chunk vectors; every vector must agree within 1e-5 per component.
//!
//! Needs the model (`chunkbench models fetch`; or `CHUNKBENCH_MODEL_DIR`).

use embed::{BertEmbedder, Embedder};
use serde_json::Value;
use std::path::PathBuf;
use testkit::workspace;

fn model_dir() -> PathBuf {
    let dir = std::env::var_os("CHUNKBENCH_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("models/all-MiniLM-L6-v2"));
    assert!(
        dir.join("model.safetensors").is_file(),
        "all-MiniLM-L6-v2 missing at {}: run `chunkbench models fetch` first",
        dir.display()
    );
    dir
}

fn goldens() -> Value {
    let p = workspace().join("crates/evaluator/tests/data/late_chunking/goldens.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run scripts/late_chunking_goldens.sh)",
            p.display()
        )
    }))
    .unwrap()
}

fn pairs(v: &Value) -> Vec<(usize, usize)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_u64().unwrap() as usize,
                p[1].as_u64().unwrap() as usize,
            )
        })
        .collect()
}

#[test]
fn late_chunked_vectors_equal_the_reference_within_1e_5() {
    let g = goldens();
    let e = BertEmbedder::load(model_dir()).unwrap();
    assert_eq!(
        g["model"]["weights_sha256"].as_str().unwrap(),
        e.info().weights_sha256,
        "the goldens were computed with other weights"
    );
    let cases = g["cases"].as_array().unwrap();
    assert!(cases.len() >= 5, "{} cases", cases.len());
    let (mut checked, mut worst) = (0usize, 0f64);
    let mut multi_window = false;
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let text = case["text"].as_str().unwrap();
        let window = case["window"].as_u64().unwrap() as usize;
        let overlap = case["overlap"].as_u64().unwrap() as usize;
        let states = e
            .token_states(text, window, overlap)
            .expect("the BERT embedder has token states")
            .unwrap();
        assert_eq!(
            states.len(),
            case["n_tokens"].as_u64().unwrap() as usize,
            "{name}: tokens"
        );
        assert_eq!(states.windows, pairs(&case["windows"]), "{name}: windows");
        multi_window |= states.windows.len() > 2;
        let spans = pairs(&case["spans"]);
        let ours = embed::late::pool_spans(&states, &spans);
        let want = case["vectors"].as_array().unwrap();
        assert_eq!(ours.len(), want.len(), "{name}");
        for (i, (o, w)) in ours.iter().zip(want).enumerate() {
            match (o, w.as_array()) {
                (None, None) => {}
                (Some(o), Some(w)) => {
                    assert_eq!(o.len(), w.len());
                    for (a, b) in o.iter().zip(w) {
                        let d = (f64::from(*a) - b.as_f64().unwrap()).abs();
                        worst = worst.max(d);
                        assert!(d <= 1e-5, "{name}: chunk {i} {:?} differs by {d}", spans[i]);
                    }
                    checked += 1;
                }
                (o, w) => panic!("{name}: chunk {i}: ours {:?}, reference {w:?}", o.is_some()),
            }
        }
    }
    assert!(multi_window, "no case ran more than two windows");
    assert!(checked >= 100, "{checked} vectors");
    eprintln!("late chunking: {checked} chunk vectors equal the reference's; largest difference {worst:.2e}");
}

/// The windows change the vectors (context beyond one window is not kept), and a chunk's
/// late vector differs from embedding the chunk alone: late chunking computes what it claims.
#[test]
fn late_vectors_carry_context() {
    let g = goldens();
    let e = BertEmbedder::load(model_dir()).unwrap();
    let case = &g["cases"].as_array().unwrap()[0];
    let text = case["text"].as_str().unwrap();
    let spans = pairs(&case["spans"]);
    let late = embed::late::pool_spans(&e.token_states(text, 512, 256).unwrap().unwrap(), &spans);
    let alone = e
        .embed(&spans.iter().map(|&(s, t)| &text[s..t]).collect::<Vec<_>>())
        .unwrap();
    let cos: Vec<f64> = late
        .iter()
        .zip(&alone)
        .map(|(l, a)| embed::cosine(l.as_ref().unwrap(), a))
        .collect();
    let mean = cos.iter().sum::<f64>() / cos.len() as f64;
    assert!(
        mean < 0.99 && mean > 0.3,
        "mean cosine late vs alone {mean}"
    );
}
