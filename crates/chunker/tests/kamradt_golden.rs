//! Parity of [`chunker::KamradtConfig`] with langchain-experimental's `SemanticChunker`.
//!
//! The data in `tests/data/kamradt/` is written by `scripts/kamradt_goldens.sh` (pinned
//! langchain-experimental, langchain-community, numpy): `inputs/*.txt` (OpenStax and QuALITY
//! excerpts plus synthetic edge cases), `vectors.json` (a deterministic hashed bag-of-words
//! embedding of every combined sentence LangChain embeds, keyed by the FNV-1a 64 of the
//! text), `goldens/*.json` (LangChain's sentences, distances, thresholds and chunk texts for
//! each input x config, computed with an `Embeddings` class that looks the vectors up), and
//! `numerics.json` (numpy's mean / std / percentile / gradient on fixed arrays).
//!
//! Checked for every input x config:
//! * [`split_sentences`] equals LangChain's `re.split` pieces exactly;
//! * every combined sentence built here has a vector in `vectors.json` (so the strings
//!   embedded are byte-identical to LangChain's);
//! * distances and thresholds equal LangChain's (1e-12; the cosine's dot product is summed
//!   in a different order than numpy's BLAS call), and the threshold computed here from
//!   *LangChain's* distances equals LangChain's threshold bit for bit;
//! * [`KamradtConfig::langchain_texts`] equals LangChain's chunk texts exactly;
//! * the span chunks are exact, non-empty, increasing slices whose texts equal LangChain's
//!   once whitespace runs are collapsed.

use chunker::kamradt::{numpy, split_sentences};
use chunker::{BreakpointType, Document, KamradtConfig};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kamradt")
}

fn fnv1a64(data: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn from_bits(v: &Value) -> f64 {
    f64::from_bits(u64::from_str_radix(v.as_str().unwrap(), 16).unwrap())
}

fn bits_vec(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(from_bits).collect()
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/kamradt_goldens.sh)", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn vectors() -> HashMap<String, Vec<f32>> {
    let v = load(&data_dir().join("vectors.json"));
    v["vectors"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, xs)| {
            let xs = xs
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap() as f32)
                .collect();
            (k.clone(), xs)
        })
        .collect()
}

fn config(cfg: &Value) -> KamradtConfig {
    let kind: BreakpointType = cfg["breakpoint_threshold_type"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    KamradtConfig {
        buffer_size: cfg["buffer_size"].as_u64().unwrap() as usize,
        breakpoint_type: kind,
        breakpoint_amount: cfg["breakpoint_threshold_amount"].as_f64().unwrap(),
        number_of_chunks: cfg["number_of_chunks"].as_u64().map(|k| k as usize),
        min_chunk_size: cfg["min_chunk_size"].as_u64().map(|k| k as usize),
    }
}

fn collapse(s: &str) -> String {
    s.split(|c: char| chunker::recursive::is_py_whitespace(c) || chunker::is_word_separator(c))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn kamradt_matches_langchain_goldens() {
    let table = vectors();
    let mut goldens: Vec<PathBuf> = std::fs::read_dir(data_dir().join("goldens"))
        .expect("tests/data/kamradt/goldens")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    goldens.sort();
    assert!(goldens.len() >= 10, "expected the committed goldens");
    let mut checked = 0;
    let mut per_type: HashMap<String, usize> = HashMap::new();
    for path in &goldens {
        let g = load(path);
        let raw = std::fs::read(data_dir().join(g["input"].as_str().unwrap())).unwrap();
        assert_eq!(
            fnv1a64(&raw),
            g["input_fnv1a64"].as_str().unwrap(),
            "{path:?}"
        );
        let text = String::from_utf8(raw).unwrap();
        let doc = Document {
            id: "d".into(),
            title: String::new(),
            text: text.clone(),
            source: String::new(),
            license: String::new(),
        };
        let name = path.file_stem().unwrap().to_string_lossy().to_string();

        // Sentences: LangChain's re.split pieces, exactly.
        let spans = split_sentences(&text);
        let ours: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
        let theirs: Vec<&str> = g["sentences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(ours, theirs, "{name}: sentence split");

        for case in g["cases"].as_array().unwrap() {
            let label = format!("{name} / {}", case["name"].as_str().unwrap());
            let cfg = config(&case["config"]);
            let embedded = case["embedded"].as_bool().unwrap();
            assert_eq!(cfg.needs_embeddings(spans.len()), embedded, "{label}");
            let vecs: Vec<Vec<f32>> = if embedded {
                cfg.combined_sentences(&text, &spans)
                    .iter()
                    .map(|c| {
                        table
                            .get(&fnv1a64(c.as_bytes()))
                            .unwrap_or_else(|| {
                                panic!(
                                    "{label}: combined sentence not embedded by LangChain: {c:?}"
                                )
                            })
                            .clone()
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let (groups, stats) = cfg.groups(&ours, &vecs).unwrap();
            if embedded {
                let bp = cfg.breakpoints(&vecs).unwrap();
                let key = cfg.buffer_size.to_string();
                let lc_distances = bits_vec(&g["distances_by_buffer_size"][&key]);
                assert_eq!(bp.distances.len(), lc_distances.len(), "{label}");
                for (a, b) in bp.distances.iter().zip(&lc_distances) {
                    assert!((a - b).abs() < 1e-12, "{label}: distance {a} vs {b}");
                }
                let lc_threshold = from_bits(&case["threshold"]);
                assert!(
                    (bp.threshold - lc_threshold).abs() < 1e-12,
                    "{label}: threshold {} vs {lc_threshold}",
                    bp.threshold
                );
                // Same distances in, same threshold out, to the bit.
                let (t, compared) = cfg.breakpoint_threshold(&lc_distances);
                assert_eq!(
                    t.to_bits(),
                    lc_threshold.to_bits(),
                    "{label}: {t} vs {lc_threshold}"
                );
                if let Some(grad) = case.get("gradient") {
                    let grad = bits_vec(grad);
                    let same = compared
                        .iter()
                        .zip(&grad)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same && compared.len() == grad.len(), "{label}: gradient");
                }
                assert_eq!(stats.threshold, Some(bp.threshold));
            }
            // Chunk texts, exactly.
            let expected: Vec<&str> = case["chunks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            let texts = cfg.langchain_texts(&text, &spans, &groups);
            assert_eq!(texts, expected, "{label}: chunk texts");

            // Span chunks: exact slices, increasing, same words as LangChain's texts.
            let (chunks, cstats) = cfg.chunk_with_stats(&doc, &spans, &vecs).unwrap();
            let non_blank: Vec<&str> = expected
                .iter()
                .copied()
                .filter(|t| !collapse(t).is_empty())
                .collect();
            assert_eq!(chunks.len(), non_blank.len(), "{label}");
            assert_eq!(
                cstats.empty_dropped,
                expected.len() - non_blank.len(),
                "{label}"
            );
            let mut prev_end = 0;
            for (c, t) in chunks.iter().zip(&non_blank) {
                assert!(
                    c.span.start >= prev_end && c.span.start < c.span.end,
                    "{label}"
                );
                prev_end = c.span.end;
                assert_eq!(collapse(c.text(&doc)), collapse(t), "{label}");
            }
            *per_type
                .entry(case["name"].as_str().unwrap().to_string())
                .or_default() += 1;
            checked += 1;
        }
    }
    for t in [
        "percentile",
        "standard_deviation",
        "interquartile",
        "gradient",
    ] {
        assert!(
            per_type.get(t).copied().unwrap_or(0) >= 10,
            "{t}: {per_type:?}"
        );
    }
    println!("checked {checked} input x config cases against LangChain");
}

#[test]
fn numpy_reductions_are_bit_exact() {
    let n = load(&data_dir().join("numerics.json"));
    let qs: Vec<(String, f64)> = n["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let s = q.as_str().unwrap().to_string();
            let v = s.parse().unwrap();
            (s, v)
        })
        .collect();
    let arrays = n["arrays"].as_array().unwrap();
    assert!(arrays.len() >= 15);
    for a in arrays {
        let values = bits_vec(&a["values"]);
        let len = values.len();
        assert_eq!(
            numpy::mean(&values).to_bits(),
            from_bits(&a["mean"]).to_bits(),
            "mean n={len}"
        );
        assert_eq!(
            numpy::std(&values).to_bits(),
            from_bits(&a["std"]).to_bits(),
            "std n={len}"
        );
        for (s, q) in &qs {
            let want = from_bits(&a["percentiles"][s]);
            let got = numpy::percentile(&values, *q);
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "percentile {s} n={len}: {got} vs {want}"
            );
        }
        if let Some(g) = a.get("gradient") {
            let want = bits_vec(g);
            let got = numpy::gradient(&values);
            assert_eq!(got.len(), want.len());
            for (x, y) in got.iter().zip(&want) {
                assert_eq!(x.to_bits(), y.to_bits(), "gradient n={len}");
            }
        }
        for (k, want) in a["threshold_from_clusters"].as_object().unwrap() {
            let cfg = KamradtConfig {
                number_of_chunks: Some(k.parse().unwrap()),
                ..KamradtConfig::default()
            };
            let (got, _) = cfg.breakpoint_threshold(&values);
            assert_eq!(
                got.to_bits(),
                from_bits(want).to_bits(),
                "clusters k={k} n={len}"
            );
        }
    }
}
