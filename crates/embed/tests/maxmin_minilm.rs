//! Max-Min chunking (chunker::maxmin) on real sentences embedded with all-MiniLM-L6-v2,
//! checked against an independent, deliberately naive restatement of the reference rule
//! (hsdslab/MaxMinChunking, maxmin_chunker.py `process_sentences`; docs/reference.md §5).
//!
//! Needs the model (`chunkbench models fetch`; or `CHUNKBENCH_MODEL_DIR`). The passages are
//! the QuALITY and OpenStax excerpts committed for the Kamradt goldens
//! (`crates/chunker/tests/data/kamradt/inputs/`).
//!
//! `bench_maxmin_share` (ignored; run by `scripts/bench_maxmin.sh` in release mode) times
//! Max-Min per 1000 sentences on cached embeddings and compares it with the embedding time.

use chunker::maxmin::split_oversized;
use chunker::{Document, HfTokenizer, MaxMinConfig, SizeLimit, Span, Unit};
use embed::{BertEmbedder, Embedder};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

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

fn passage(name: &str) -> String {
    let p = workspace()
        .join("crates/chunker/tests/data/kamradt/inputs")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Cosine similarity, the textbook way: dot(a, b) / (|a| |b|), in f64. The reference gets
/// it from scikit-learn's `cosine_similarity`; MiniLM vectors are unit length and never zero.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// The oracle: Max-Min restated without any running state. For every sentence it recomputes
/// everything from scratch over the current chunk C, so one step costs O(|C|^2).
///
/// Returns the chunks as index ranges and the smallest |score - threshold| seen (how close
/// the closest decision was).
fn oracle(
    v: &[Vec<f32>],
    fixed_threshold: f64,
    c: f64,
    init_constant: f64,
) -> (Vec<Range<usize>>, f64) {
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    let mut chunks = Vec::new();
    let mut closest = f64::INFINITY;
    if v.is_empty() {
        return (chunks, closest);
    }
    let mut start = 0; // C = start..i
    for i in 1..v.len() {
        let size = i - start;
        let (score, threshold) = if size == 1 {
            // One sentence s in C: x joins iff init_constant * cos(x, s) exceeds the fixed
            // threshold (the reference compares with max(0, fixed_threshold)).
            (
                init_constant * cosine(&v[i], &v[start]),
                fixed_threshold.max(0.0),
            )
        } else {
            // |C| >= 2: the best similarity of x to any member of C ...
            let best = (start..i)
                .map(|j| cosine(&v[i], &v[j]))
                .fold(f64::NEG_INFINITY, f64::max);
            // ... must exceed max(fixed_threshold, c * sigmoid(|C| - 1) * min pairwise
            // similarity inside C), the minimum taken over every pair of C, recomputed here.
            let mut min_pair = f64::INFINITY;
            for a in start..i {
                for b in a + 1..i {
                    min_pair = min_pair.min(cosine(&v[a], &v[b]));
                }
            }
            let adaptive = c * sigmoid((size - 1) as f64) * min_pair;
            (best, fixed_threshold.max(adaptive))
        };
        closest = closest.min((score - threshold).abs());
        // Strict comparison, as in the reference.
        if score <= threshold {
            chunks.push(start..i);
            start = i;
        }
    }
    chunks.push(start..v.len());
    (chunks, closest)
}

#[test]
fn maxmin_on_minilm_embeddings_matches_the_quadratic_oracle() {
    let embedder = BertEmbedder::load(model_dir()).expect("load MiniLM");
    let tok = Arc::new(HfTokenizer::from_file(model_dir()).unwrap());
    let mut total_sentences = 0;
    let mut total_boundaries = 0;
    for name in ["quality_article.txt", "openstax_astronomy.txt"] {
        let text = passage(name);
        let doc = Document {
            id: name.into(),
            title: String::new(),
            text,
            source: String::new(),
            license: String::new(),
        };
        let cfg = MaxMinConfig::default();
        // Split anything over MiniLM's 254 word pieces (256 minus [CLS] and [SEP]) first.
        let limit = SizeLimit::with_unit(254, Unit::Tokens, Some(Arc::clone(&tok))).unwrap();
        let (units, split) = split_oversized(&doc.text, &cfg.units(&doc.text), &limit);
        assert_eq!(
            split.units_split, 0,
            "{name}: no sentence this long in these passages"
        );
        assert!(units.len() >= 20, "{name}: {} sentences", units.len());
        let texts: Vec<&str> = units.iter().map(|u| &doc.text[u.start..u.end]).collect();
        let vectors = embedder.embed(&texts).expect("embed");
        assert_eq!(vectors.len(), units.len());
        assert_eq!(embedder.stats().truncated, 0);

        // The reference parameters, and a lower fixed threshold under which MiniLM's
        // similarities form longer chunks, so the adaptive |C| >= 2 branch decides more often.
        for (fixed_threshold, c, init_constant) in [(0.6, 0.9, 1.5), (0.3, 0.9, 1.5)] {
            let cfg = MaxMinConfig {
                fixed_threshold,
                c,
                init_constant,
                ..MaxMinConfig::default()
            };
            let (chunks, stats) = cfg.chunk_with_stats(&doc, &units, &vectors).unwrap();
            let (want, closest) = oracle(&vectors, fixed_threshold, c, init_constant);
            let got = ranges(&units, &chunks);
            assert_eq!(
                got, want,
                "{name} ({fixed_threshold}): boundaries differ from the oracle"
            );
            eprintln!(
                "{name} (fixed_threshold {fixed_threshold}): {} sentences -> {} chunks {:?}; \
                 closest decision {:.2e} from its threshold",
                units.len(),
                chunks.len(),
                want.iter().map(|r| r.len()).collect::<Vec<_>>(),
                closest
            );
            // A meaningful case: some boundaries, and some multi-sentence chunks.
            assert!(chunks.len() >= 2 && chunks.len() < units.len(), "{want:?}");
            // Internal minimum similarity agrees with the pairwise minimum.
            for (r, m) in want.iter().zip(&stats.min_similarity) {
                let mut min_pair: Option<f64> = None;
                for a in r.clone() {
                    for b in a + 1..r.end {
                        let s = cosine(&vectors[a], &vectors[b]);
                        min_pair = Some(min_pair.map_or(s, |m: f64| m.min(s)));
                    }
                }
                match (m, min_pair) {
                    (Some(m), Some(p)) => assert!((m - p).abs() < 1e-9, "{m} vs {p}"),
                    (None, None) => {}
                    other => panic!("{other:?} for {r:?}"),
                }
            }
            assert_eq!(stats.degenerate_vectors, 0);
            if fixed_threshold == 0.6 {
                total_boundaries += chunks.len() - 1;
            }
        }
        total_sentences += units.len();
    }
    assert!(total_sentences >= 40 && total_boundaries >= 4);
}

/// The chunks as ranges of unit indices.
fn ranges(units: &[Span], chunks: &[chunker::Chunk]) -> Vec<Range<usize>> {
    chunks
        .iter()
        .map(|c| {
            let a = units.iter().position(|u| u.start == c.span.start).unwrap();
            let b = units.iter().position(|u| u.end == c.span.end).unwrap();
            a..b + 1
        })
        .collect()
}

/// Max-Min time per 1000 sentences on cached embeddings, and its share of the MiniLM
/// embedding time of the same sentences. Run in release mode by `scripts/bench_maxmin.sh`
/// (DOCS = a documents.jsonl, default data/quality/documents.jsonl from `chunkbench data
/// fetch`; N sentences, default 2000; REPEAT Max-Min passes, default 200).
#[test]
#[ignore = "benchmark: scripts/bench_maxmin.sh runs it in release mode"]
fn bench_maxmin_share() {
    let env_usize = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let n_target = env_usize("N", 2000);
    let repeat = env_usize("REPEAT", 200);
    let docs_path = std::env::var_os("DOCS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("data/quality/documents.jsonl"));
    let raw = std::fs::read_to_string(&docs_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run `chunkbench data fetch` or set DOCS)",
            docs_path.display()
        )
    });
    let tok = Arc::new(HfTokenizer::from_file(model_dir()).unwrap());
    let limit = SizeLimit::with_unit(254, Unit::Tokens, Some(Arc::clone(&tok))).unwrap();
    let cfg = MaxMinConfig::default();
    // Whole documents, in order, until N sentences (the last one cut to fit).
    let mut docs: Vec<(Document, Vec<Span>)> = Vec::new();
    let mut n = 0;
    let mut split_units = 0;
    for line in raw.lines().filter(|l| !l.trim().is_empty()) {
        if n >= n_target {
            break;
        }
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let doc = Document {
            id: v["id"].as_str().unwrap_or("").into(),
            title: String::new(),
            text: v["text"].as_str().unwrap().into(),
            source: String::new(),
            license: String::new(),
        };
        let (mut units, s) = split_oversized(&doc.text, &cfg.units(&doc.text), &limit);
        split_units += s.units_split;
        units.truncate(n_target - n);
        n += units.len();
        docs.push((doc, units));
    }
    assert!(n > 0);

    let embedder = BertEmbedder::load(model_dir()).unwrap();
    let t = Instant::now();
    let mut cached: Vec<Vec<Vec<f32>>> = Vec::new();
    for (doc, units) in &docs {
        let texts: Vec<&str> = units.iter().map(|u| &doc.text[u.start..u.end]).collect();
        cached.push(embedder.embed(&texts).unwrap());
    }
    let embed_secs = t.elapsed().as_secs_f64();
    let tokens = embedder.stats().tokens;

    let per_1000 = |s: f64| s * 1000.0 / n as f64;
    println!(
        "\nmaxmin-bench: {n} sentences in {} documents ({split_units} split at 254 tokens), \
         {tokens} word pieces",
        docs.len()
    );
    println!(
        "maxmin-bench: MiniLM embedding {:.2} s per 1000 sentences ({:.0} word pieces/s)",
        per_1000(embed_secs),
        tokens as f64 / embed_secs
    );
    // Max-Min over the cached vectors, REPEAT times (best and mean pass): the reference
    // parameters, then a lower fixed threshold that makes MiniLM chunks longer (the cost is
    // O(sum of |C|) similarity evaluations).
    let mut share = 0.0;
    for fixed_threshold in [0.6, 0.3] {
        let cfg = MaxMinConfig {
            fixed_threshold,
            ..MaxMinConfig::default()
        };
        let mut best = f64::INFINITY;
        let mut sum = 0.0;
        let mut chunks = 0;
        let mut sims = 0;
        for _ in 0..repeat {
            let t = Instant::now();
            chunks = 0;
            sims = 0;
            for ((doc, units), v) in docs.iter().zip(&cached) {
                let (c, s) = cfg.chunk_with_stats(doc, units, v).unwrap();
                chunks += c.len();
                sims += s.similarities;
                std::hint::black_box(&c);
            }
            let e = t.elapsed().as_secs_f64();
            best = best.min(e);
            sum += e;
        }
        let mean = sum / repeat as f64;
        let this_share = mean / embed_secs * 100.0;
        if fixed_threshold == 0.6 {
            share = this_share;
        }
        println!(
            "maxmin-bench: fixed_threshold {fixed_threshold}: {chunks} chunks (mean {:.2} \
             sentences), {sims} similarities; Max-Min {:.3} ms per 1000 sentences (mean of \
             {repeat}; best {:.3} ms) = {this_share:.3} % of the embedding time",
            n as f64 / chunks as f64,
            per_1000(mean) * 1e3,
            per_1000(best) * 1e3
        );
        println!(
            "maxmin-bench-row: | {fixed_threshold} | {n} | {:.2} | {:.3} | {:.3} | {:.2} | \
             {this_share:.3} % |",
            n as f64 / chunks as f64,
            per_1000(mean) * 1e3,
            per_1000(best) * 1e3,
            per_1000(embed_secs)
        );
    }
    println!("maxmin-bench: reference parameters: Max-Min share {share:.3} % (target <= 1 %)");
    assert!(
        share <= 1.0,
        "Max-Min takes {share:.3} % of the embedding time"
    );
}
