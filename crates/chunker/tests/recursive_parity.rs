//! Parity of [`chunker::RecursiveChunker`] with langchain-text-splitters'
//! `RecursiveCharacterTextSplitter` on real texts.
//!
//! The goldens in `tests/data/langchain/goldens/*.json` are written by
//! `scripts/langchain_goldens.sh` (pinned langchain-text-splitters; see the script) from the
//! inputs in `tests/data/langchain/inputs/` (sources in `tests/data/langchain/SOURCES.md`).
//! For every input x config this test checks that
//! * [`RecursiveChunker::langchain_texts`] equals LangChain's chunk list exactly;
//! * every span chunk is an exact, non-empty, char-aligned slice of the input, starts and
//!   ends strictly increase;
//! * the span chunks' texts equal LangChain's chunks exactly, except where
//!   [`chunker::RecursiveStats`] counts a documented difference (only
//!   `keep_separator = false` joins occur in these goldens, and they must agree once
//!   whitespace is ignored).
//!
//! Token configs need `models/all-MiniLM-L6-v2/tokenizer.json`; without it the test fails
//! and says to run `chunkbench models fetch`.

use chunker::{HfTokenizer, KeepSeparator, RecursiveChunker, Unit};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/langchain")
}

fn tokenizer() -> Arc<HfTokenizer> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2/tokenizer.json");
    match HfTokenizer::from_file(&path) {
        Ok(t) => Arc::new(t),
        Err(e) => panic!(
            "the token-length goldens need {}: {e}. Run `chunkbench models fetch` first.",
            path.display()
        ),
    }
}

/// FNV-1a 64 of the input bytes, as the golden script computes it (guards against line
/// ending conversion of the committed inputs).
fn fnv1a64(data: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn build(cfg: &Value, tok: &Arc<HfTokenizer>) -> RecursiveChunker {
    let size = cfg["chunk_size"].as_u64().unwrap() as usize;
    let overlap = cfg["chunk_overlap"].as_u64().unwrap() as usize;
    let mut rc = RecursiveChunker::new(size, overlap).unwrap();
    let regex = cfg["is_separator_regex"].as_bool().unwrap();
    if let Some(seps) = cfg["separators"].as_array() {
        let seps: Vec<&str> = seps.iter().map(|s| s.as_str().unwrap()).collect();
        rc = rc.with_separators(seps, regex).unwrap();
    }
    let keep: KeepSeparator = cfg["keep_separator"].as_str().unwrap().parse().unwrap();
    let unit: Unit = cfg["length"].as_str().unwrap().parse().unwrap();
    rc.with_keep_separator(keep)
        .with_strip_whitespace(cfg["strip_whitespace"].as_bool().unwrap())
        .with_unit(unit, Some(Arc::clone(tok)))
        .unwrap()
}

fn without_whitespace(s: &str) -> String {
    s.chars()
        .filter(|c| !chunker::recursive::is_py_whitespace(*c))
        .collect()
}

#[test]
fn recursive_matches_langchain_goldens() {
    let tok = tokenizer();
    let mut goldens: Vec<PathBuf> = std::fs::read_dir(data_dir().join("goldens"))
        .expect("tests/data/langchain/goldens")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    goldens.sort();
    assert!(goldens.len() >= 5, "expected at least 5 golden files");
    let mut report = Vec::new();
    let mut cases = 0;
    for path in &goldens {
        let golden: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let input = data_dir().join(golden["input"].as_str().unwrap());
        let bytes = std::fs::read(&input).unwrap();
        assert_eq!(
            (bytes.len() as u64, fnv1a64(&bytes)),
            (
                golden["input_bytes"].as_u64().unwrap(),
                golden["input_fnv1a64"].as_str().unwrap().to_string()
            ),
            "{} changed (line-ending conversion?); regenerate with scripts/langchain_goldens.sh",
            input.display()
        );
        let text = String::from_utf8(bytes).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        for case in golden["cases"].as_array().unwrap() {
            cases += 1;
            let cname = case["name"].as_str().unwrap();
            let rc = build(&case["config"], &tok);
            let want: Vec<&str> = case["chunks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect();
            // LangChain's strings, reproduced exactly.
            let lc = rc.langchain_texts(&text);
            assert_eq!(lc, want, "{name} / {cname}: langchain_texts differ");
            // The spans leave out LangChain's chunks that hold no word (whitespace only, with
            // `strip_whitespace: false`; issue 36 case 8), and count them.
            let all = want.len();
            let want: Vec<&str> = want
                .into_iter()
                .filter(|w| !w.chars().all(chunker::is_word_separator))
                .collect();

            // Spans: exact slices, never empty, strictly increasing.
            let (spans, stats) = rc.split_spans_with_stats(&text);
            let mut prev: Option<chunker::Span> = None;
            for s in &spans {
                assert!(
                    s.start < s.end && s.end <= text.len(),
                    "{name} / {cname}: {s:?}"
                );
                assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
                if let Some(p) = prev {
                    assert!(s.start > p.start && s.end > p.end, "{name} / {cname}");
                }
                prev = Some(*s);
            }
            let got: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
            assert_eq!(stats.chunks, got.len());
            assert_eq!(all - want.len(), stats.dropped_blank, "{name} / {cname}");
            assert_eq!(stats.trimmed_unsplit, 0, "{name} / {cname}");
            let differing;
            if stats.dropped_contained > 0 {
                // LangChain emitted chunks contained in a neighbour (overlap followed by a
                // whitespace-only piece): the spans are LangChain's list without them.
                assert_ne!(rc.keep_separator(), KeepSeparator::Discard);
                assert_eq!(want.len() - got.len(), stats.dropped_contained);
                let mut j = 0;
                for (i, w) in want.iter().enumerate() {
                    if j < got.len() && got[j] == *w {
                        j += 1;
                        continue;
                    }
                    let in_prev = i > 0 && want[i - 1].contains(w);
                    let in_next = i + 1 < want.len() && want[i + 1].contains(w);
                    assert!(
                        in_prev || in_next,
                        "{name} / {cname}: chunk {i} {w:?} missing"
                    );
                }
                assert_eq!(j, got.len(), "{name} / {cname}: span texts differ");
                differing = stats.dropped_contained;
            } else if rc.keep_separator() == KeepSeparator::Discard {
                differing = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                // Spans keep the original separators where LangChain re-joins pieces with
                // one separator string; the words are the same.
                assert_eq!(got.len(), want.len(), "{name} / {cname}");
                assert_eq!(differing, stats.joined_differs, "{name} / {cname}");
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(without_whitespace(g), without_whitespace(w));
                }
            } else {
                assert_eq!(got, want, "{name} / {cname}: span texts differ");
                differing = 0;
            }
            report.push(format!(
                "{name:28} {cname:26} langchain {:3} = golden; spans {:3}, differing {} \
                 (dropped contained {}, without a word {}, joined differs {}), oversized {}",
                lc.len(),
                got.len(),
                differing,
                stats.dropped_contained,
                stats.dropped_blank,
                stats.joined_differs,
                stats.oversized
            ));
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        cases >= 15,
        "expected at least 5 texts x 3 configs, got {cases} cases"
    );
}
