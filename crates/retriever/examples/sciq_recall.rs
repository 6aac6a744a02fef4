//! Retrieval metrics on an imported dataset (e.g. SciQ, gold evidence = the support
//! paragraph) over fixed word chunks: BM25 always; dense and hybrid (RRF) when vectors are
//! given.
//!
//! ```text
//! cargo run --release -p retriever --example sciq_recall -- DATA_DIR [--size 100] [--k 3,8]
//!     [--form question|question+options|per-option] [--stemming]
//!     [--passages P.f32 --queries Q.f32 --dim 384]
//! ```
//! `DATA_DIR` holds `documents.jsonl` and `questions.jsonl` (docs/reference.md §3; `chunkbench data`
//! writes them, e.g. `data/sciq`). Vectors are raw little-endian `f32`, row-major: `P.f32`
//! one row per passage in index order (documents in file order, fixed chunks of `--size`
//! words, no overlap), `Q.f32` one row per question in file order, embedded from the
//! `question+options` text ([`retriever::query_texts`]). Only questions with evidence are
//! scored. Prints a Markdown table of hit@k, recall@k, MRR@k, nDCG@k, span recall/precision/IoU
//! in words, answer recall@k and words retrieved per question.

use chunker::{Chunk, Document, FixedConfig};
use retriever::metrics::{answer_recall_at_k, rank_metrics, WordMap};
use retriever::{
    query_texts, rrf, words_retrieved_in, Bm25, Bm25Params, DenseIndex, DocSpan, Hit, PassageIndex,
    QueryForm, Stemming, TextAnalyzer, RRF_DEPTH,
};
use serde_json::Value;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct Question {
    text: String,
    options: Vec<String>,
    answer: usize,
    evidence: Vec<(String, usize, usize)>,
}

fn read_jsonl(path: &std::path::Path) -> Res<Vec<Value>> {
    std::fs::read_to_string(path)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Ok(serde_json::from_str(l)?))
        .collect()
}

fn read_f32(path: &str, dim: usize) -> Res<Vec<f32>> {
    let bytes = std::fs::read(path)?;
    if bytes.len() % (4 * dim) != 0 {
        return Err(format!("{path}: not a whole number of {dim}-d f32 rows").into());
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

#[derive(Default)]
struct Acc {
    n: usize,
    sums: [f64; 10],
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let dir = std::path::PathBuf::from(args.first().ok_or("usage: sciq_recall DATA_DIR …")?);
    let size: usize = get("--size").map_or(Ok(100), |s| s.parse())?;
    let dim: usize = get("--dim").map_or(Ok(384), |s| s.parse())?;
    let ks: Vec<usize> = get("--k")
        .unwrap_or_else(|| "3,8".into())
        .split(',')
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let form: QueryForm = match get("--form") {
        Some(f) => serde_json::from_value(Value::String(f))?,
        None => QueryForm::QuestionOptions,
    };
    let analyzer = if args.iter().any(|a| a == "--stemming") {
        TextAnalyzer::default().with_stemming(Stemming::English)
    } else {
        TextAnalyzer::default()
    };

    let documents: Vec<Document> = read_jsonl(&dir.join("documents.jsonl"))?
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()?;
    let questions: Vec<Question> = read_jsonl(&dir.join("questions.jsonl"))?
        .into_iter()
        .map(|q| Question {
            text: q["question"].as_str().unwrap_or_default().to_string(),
            options: q["options"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|o| o.as_str().unwrap_or_default().to_string())
                        .collect()
                })
                .unwrap_or_default(),
            answer: q["answer"].as_u64().unwrap_or(0) as usize,
            evidence: q["evidence"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|e| {
                            (
                                e["doc_id"].as_str().unwrap_or_default().to_string(),
                                e["start"].as_u64().unwrap_or(0) as usize,
                                e["end"].as_u64().unwrap_or(0) as usize,
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    let fixed = FixedConfig::new(size, 0)?;
    let chunks: Vec<Chunk> = documents.iter().flat_map(|d| fixed.chunk(d)).collect();
    let index = PassageIndex::new(&documents, chunks)?;
    let words = WordMap::new(&documents);
    let kmax = ks.iter().copied().max().unwrap_or(8);
    let depth = kmax.max(RRF_DEPTH);
    eprintln!(
        "{} documents, {} passages of <= {size} words, {} questions ({} with evidence)",
        documents.len(),
        index.len(),
        questions.len(),
        questions.iter().filter(|q| !q.evidence.is_empty()).count()
    );

    let bm25 = Bm25::with_analyzer(&index, Bm25Params::default(), analyzer);
    let texts: Vec<Vec<String>> = questions
        .iter()
        .map(|q| query_texts(form, &q.text, &q.options))
        .collect();
    let t = std::time::Instant::now();
    let bm25_hits: Vec<Vec<Hit>> = texts
        .iter()
        .map(|qs| bm25.search_pooled(qs, depth, None))
        .collect();
    eprintln!("bm25: {:.2}s", t.elapsed().as_secs_f64());
    let mut runs: Vec<(String, Vec<Vec<Hit>>)> =
        vec![(format!("bm25 ({})", form.as_str()), bm25_hits.clone())];
    if let (Some(p), Some(q)) = (get("--passages"), get("--queries")) {
        let dense = DenseIndex::new(read_f32(&p, dim)?, dim)?;
        if dense.len() != index.len() {
            return Err(format!("{p}: {} rows for {} passages", dense.len(), index.len()).into());
        }
        let qv = read_f32(&q, dim)?;
        let rows: Vec<&[f32]> = qv.chunks(dim).collect();
        if rows.len() != questions.len() {
            return Err(
                format!("{q}: {} rows for {} questions", rows.len(), questions.len()).into(),
            );
        }
        let t = std::time::Instant::now();
        let dense_hits = dense.search_batch(&rows, depth, &[])?;
        eprintln!("dense: {:.2}s", t.elapsed().as_secs_f64());
        let hybrid: Vec<Vec<Hit>> = dense_hits
            .iter()
            .zip(&bm25_hits)
            .map(|(d, b)| rrf(&[&d[..], &b[..]], depth))
            .collect();
        runs.push(("dense (question+options)".into(), dense_hits));
        runs.push(("hybrid RRF k=60".into(), hybrid));
    }

    println!("| retriever | k | n | hit@k | recall@k | MRR@k | nDCG@k | span recall (words) | span precision | span IoU | answer recall@k | words/question | unique words/question |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, hits) in &runs {
        for &k in &ks {
            let mut acc = Acc::default();
            for (q, h) in questions.iter().zip(hits) {
                if q.evidence.is_empty() {
                    continue;
                }
                let top = &h[..h.len().min(k)];
                let chunks: Vec<&Chunk> =
                    top.iter().map(|x| &index.passages()[x.passage]).collect();
                let retrieved: Vec<DocSpan> = chunks.iter().map(|c| DocSpan::from(*c)).collect();
                let evidence: Vec<DocSpan> = q
                    .evidence
                    .iter()
                    .map(|(d, s, e)| DocSpan::new(d, *s, *e))
                    .collect();
                let Some(r) = rank_metrics(&retrieved, &evidence, k) else {
                    continue;
                };
                let s = words.span_metrics(&retrieved, &evidence);
                let passages: Vec<&str> = top.iter().map(|x| index.text(x.passage)).collect();
                let ans = q
                    .options
                    .get(q.answer)
                    .and_then(|a| answer_recall_at_k(&passages, a, k))
                    .unwrap_or(0.0);
                let w = words_retrieved_in(&chunks, &documents);
                acc.n += 1;
                let (sr, sp, si) = s.map_or((0.0, 0.0, 0.0), |s| (s.recall, s.precision, s.iou));
                for (i, x) in [
                    r.hit,
                    r.recall,
                    r.mrr,
                    r.ndcg,
                    sr,
                    sp,
                    si,
                    ans,
                    w.with_multiplicity as f64,
                    w.unique as f64,
                ]
                .into_iter()
                .enumerate()
                {
                    acc.sums[i] += x;
                }
            }
            let n = acc.n.max(1) as f64;
            let m: Vec<f64> = acc.sums.iter().map(|s| s / n).collect();
            println!(
                "| {name} | {k} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} |",
                acc.n, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9]
            );
        }
    }
    Ok(())
}
