//! Named BPE encodings (`tokenizer: cl100k_base` / `o200k_base`) count exactly as OpenAI's
//! `tiktoken` (PyPI, `encode_ordinary`) on 1.1 MB of real text: every QuALITY article and the
//! first OpenStax pages (goldens by scripts/tiktoken_goldens.sh; the texts are read from the
//! dataset store `chunkbench data fetch` fills, and checked against the goldens' sha256).
//! Token spans cover each text exactly, in order, on character boundaries.

use chunker::HfTokenizer;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use testkit::workspace;

fn texts(dataset: &str) -> HashMap<String, String> {
    let store = std::env::var_os("CHUNKBENCH_STORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("data"));
    let path = store.join(dataset).join("documents.jsonl");
    let body = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run `chunkbench data fetch` first", path.display()));
    body.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                v["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn counts_equal_tiktoken_on_a_megabyte_of_real_text() {
    let goldens: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tiktoken/counts.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let encs = ["cl100k_base", "o200k_base"].map(|n| (n, HfTokenizer::named(n).unwrap()));
    let mut by_dataset: HashMap<String, HashMap<String, String>> = HashMap::new();
    let (mut bytes, mut tokens, mut mismatches) = (0usize, 0usize, Vec::new());
    for d in goldens["documents"].as_array().unwrap() {
        let ds = d["dataset"].as_str().unwrap();
        let id = d["id"].as_str().unwrap();
        let text = &by_dataset
            .entry(ds.to_string())
            .or_insert_with(|| texts(ds))[id];
        assert_eq!(
            hex::encode(Sha256::digest(text.as_bytes())),
            d["sha256"].as_str().unwrap(),
            "{ds}/{id}: the text differs from the goldens' (re-run scripts/tiktoken_goldens.sh)"
        );
        bytes += text.len();
        for (name, t) in &encs {
            let want = d[*name].as_u64().unwrap() as usize;
            let got = t.count(text);
            tokens += got;
            if got != want {
                mismatches.push(format!("{ds}/{id} {name}: {got} != tiktoken's {want}"));
            }
            let spans = t.token_spans(text);
            assert_eq!(spans.first().map(|s| s.start), Some(0), "{ds}/{id} {name}");
            assert_eq!(
                spans.last().map(|s| s.end),
                Some(text.len()),
                "{ds}/{id} {name}"
            );
            assert!(spans
                .windows(2)
                .all(|w| w[0].end <= w[1].end && w[0].start <= w[1].start));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert!(bytes >= 1_000_000, "only {bytes} bytes of text");
    assert!(tokens > 400_000, "{tokens} tokens");
}

/// Fixed windows of 200 cl100k_base tokens over a real article: contiguous exact slices that
/// cover it, in order; re-counted, none over 201 tokens and all but the last at least 195
/// (a slice can re-tokenise differently at its edges).
#[test]
fn fixed_token_windows_with_a_named_encoding() {
    let t = std::sync::Arc::new(HfTokenizer::named("cl100k_base").unwrap());
    let text = texts("quality").remove("quality-01").unwrap();
    let doc = chunker::Document::new("quality-01", text.clone());
    let cfg =
        chunker::FixedConfig::with_unit(200, 0, chunker::Unit::Tokens, Some(t.clone())).unwrap();
    let chunks = cfg.chunk(&doc);
    assert!(chunks.len() > 10);
    let mut at = 0;
    for (i, c) in chunks.iter().enumerate() {
        let slice = c.text(&doc);
        let n = t.count(slice);
        assert!(n <= 200 + 1, "window {i}: {n} tokens");
        if i + 1 < chunks.len() {
            assert!(n >= 195, "window {i}: {n} tokens");
        }
        assert!(c.span.start >= at);
        at = c.span.end;
    }
    assert!(
        at >= text.trim_end().len(),
        "the windows end at {at} of {}",
        text.len()
    );
}
