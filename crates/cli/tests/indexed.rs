//! Strategies that index chunks under other text, or ask a model for them (issue 43):
//! `headers`, `late`, `contextual`, `llm-boundaries`.
//!
//! - `headers` (no model), hand-checked: a question whose distinguishing word is only in a
//!   section heading is answered from the chunk under that heading once headers are indexed,
//!   and not without; the passages are the same byte spans either way.
//! - `late` on SciQ with dense retrieval: runs, counts its windows, keeps the passages.
//! - `contextual` and `llm-boundaries` (both protocols) against the real llama.cpp server
//!   with SmolLM2-135M (scripts/llama-server/serve.sh): quality is not the point;
//!   determinism, caching, the counted fallbacks and exact spans are. A second run asks the
//!   model nothing and computes the same chunks and results.
//! - Against a scripted server (faults a real model cannot be made to produce on demand):
//!   replies without a usable answer are counted as malformed and handled by the stated
//!   fallback; an empty context falls back to the chunk's own text.

mod common;

use common::*;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Imports `docs` (file name, text) with MCQ `questions` (JSON lines) as dataset `name`.
fn import(store: &Path, name: &str, docs: &[(&str, &str)], questions: &str) {
    let dir = store.parent().unwrap().join(format!("{name}-src"));
    std::fs::create_dir_all(&dir).unwrap();
    for (f, t) in docs {
        std::fs::write(dir.join(f), t).unwrap();
    }
    let q = store.parent().unwrap().join(format!("{name}-q.jsonl"));
    std::fs::write(&q, questions).unwrap();
    let o = chunkbench(&[
        "data",
        "import",
        name,
        "--documents",
        s(&dir),
        "--questions",
        s(&q),
        "--options",
        "options",
        "--answer",
        "answer",
        "--answer-format",
        "index",
        "--store",
        s(store),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The passages column of a cell's rows: question id → passage ids.
fn passages(run: &Path, strategy: &str, k: usize) -> Vec<(String, Vec<String>)> {
    let c = cell(run, strategy, k);
    read_rows(&run.join("cells").join(format!("{}.csv", c.cell.id())))
        .into_iter()
        .map(|r| {
            let ids = r
                .passages
                .iter()
                .map(|p| format!("{}:{}-{}", p.doc_id, p.span.start, p.span.end))
                .collect();
            (r.question_id.clone(), ids)
        })
        .collect()
}

fn chunk_lengths(run: &Path, strategy: &str) -> serde_json::Value {
    let dir = run.join("chunks");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        if v["strategy"] == strategy {
            return v;
        }
    }
    panic!("no chunk lengths of {strategy} in {}", dir.display())
}

/// Three sections whose texts differ only in the valve: what tells them apart is the
/// heading.
const MANUAL: &str = "# Pump house manual\n\n## Cooling loop\n\nValve V7 was serviced in March.\n\n## Boiler room\n\nValve V2 was serviced in March.\n\n## Intake\n\nValve V5 was serviced in March.\n";

#[test]
fn headers_index_the_heading_path_and_keep_the_passages() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    import(
        &store,
        "manual",
        &[("manual.md", MANUAL)],
        "{\"id\":\"q1\",\"question\":\"Which valve of the cooling loop was serviced?\",\"options\":[\"V2\",\"V7\"],\"answer\":1}\n\
         {\"id\":\"q2\",\"question\":\"Which valve in the boiler room was serviced?\",\"options\":[\"V2\",\"V5\"],\"answer\":0}\n",
    );
    let yaml = "name: h\ndatasets: [manual]\nstrategies:\n  plain: {kind: recursive, size: 40, separators: [\"\\n\\n\"]}\n  headed: {kind: headers, over: {kind: recursive, size: 40, separators: [\"\\n\\n\"]}}\nretrievers:\n  bm25: {kind: bm25, query: question}\nk: [1]\nreaders:\n  lexical: {kind: lexical}\nbootstrap_resamples: 200\n";
    let run = run_yaml(tmp.path(), "h", yaml, &store);
    // The same chunks (spans and words) either way.
    let (a, b) = (chunk_lengths(&run, "plain"), chunk_lengths(&run, "headed"));
    assert_eq!(a["words"], b["words"]);
    assert!(b["stats"]["indexed"]
        .as_str()
        .unwrap()
        .contains("header + text"));
    let doc = &documents_in(&store, "manual")["manual.md"];
    let text_of = |id: &str| {
        let (_, span) = id.rsplit_once(':').unwrap();
        let (s, e) = span.split_once('-').unwrap();
        doc[s.parse::<usize>().unwrap()..e.parse::<usize>().unwrap()].to_string()
    };
    let headed = passages(&run, "headed", 1);
    let plain = passages(&run, "plain", 1);
    // With headers, "cooling loop" and "boiler room" (only in headings) find their sections.
    assert!(text_of(&headed[0].1[0]).contains("V7"), "{:?}", headed);
    assert!(text_of(&headed[1].1[0]).contains("V2"), "{:?}", headed);
    // Without, the boiler-room question cannot tell the sections apart.
    assert!(!text_of(&plain[1].1[0]).contains("V2"), "{plain:?}");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("## Indexed text"), "{summary}");
    assert!(
        summary.contains("| manual | headed | header + text"),
        "{summary}"
    );
    assert!(
        !summary.contains("| manual | plain |")
            || !summary[summary.find("## Indexed text").unwrap()..].contains("| manual | plain |")
    );
}

#[test]
fn late_chunking_runs_dense_over_sciq_and_keeps_the_passages() {
    minilm();
    let tmp = tempfile::tempdir().unwrap();
    let yaml = "name: late\ndatasets: [sciq]\nlimit: 30\nstrategies:\n  fixed: {kind: fixed, size: 64}\n  late: {kind: late, over: {kind: fixed, size: 64}}\nretrievers:\n  dense: {kind: dense, query: question}\nk: [3]\nreaders:\n  lexical: {kind: lexical}\nbootstrap_resamples: 200\n";
    let run = run_yaml(tmp.path(), "late", yaml, &store());
    let (a, b) = (chunk_lengths(&run, "fixed"), chunk_lengths(&run, "late"));
    assert_eq!(a["words"], b["words"]);
    assert!(b["stats"]["late_windows"].as_u64().unwrap() > 0);
    assert_eq!(b["stats"]["over_embedder_window"], 0);
    let docs = documents("sciq");
    for (_, ids) in passages(&run, "late", 3) {
        assert!(ids.len() <= 3);
        for id in ids {
            let (d, span) = id.rsplit_once(':').unwrap();
            let (s, e) = span.split_once('-').unwrap();
            let (s, e): (usize, usize) = (s.parse().unwrap(), e.parse().unwrap());
            assert!(docs[d].is_char_boundary(s) && e <= docs[d].len());
        }
    }
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains("late-chunked vectors (windows of 512 tokens, overlap 256)"),
        "{summary}"
    );
}

/// A scripted OpenAI-compatible server: `/models` names one model; chat replies come from
/// `reply(system + user)`.
fn scripted(reply: fn(&str) -> String) -> String {
    testkit::serve(move |req| {
        if req.url.ends_with("/models") {
            return (200, r#"{"data":[{"id":"scripted"}]}"#.to_string());
        }
        let body: serde_json::Value = serde_json::from_str(&req.body).unwrap();
        let prompt: String = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect();
        let text = reply(&prompt);
        (
            200,
            serde_json::json!({"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 10, "completion_tokens": 2}})
            .to_string(),
        )
    })
}

fn paragraphs(n: usize) -> String {
    (0..n)
        .map(|i| format!("Paragraph {i} tells of the harbour and its many boats."))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn malformed_replies_are_counted_and_fall_back_as_stated() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let doc = paragraphs(12);
    import(
        &store,
        "harbour",
        &[("harbour.txt", &doc)],
        "{\"id\":\"q1\",\"question\":\"What is item 3?\",\"options\":[\"boats\",\"cars\"],\"answer\":0}\n",
    );
    let url = scripted(|p| {
        if p.contains("split_after") {
            "I cannot decide.".into() // no `split_after:` line: malformed, re-asked, fallback
        } else if p.contains("Answer: ID") {
            "Answer: ID 0".into() // the group's first paragraph: not a shift
        } else {
            "   ".into() // an empty context
        }
    });
    let yaml = format!(
        "name: m\ndatasets: [harbour]\nstrategies:\n  chroma: {{kind: llm-boundaries, protocol: chroma, llm: {{base_url: '{url}', model: m}}, pieces: {{kind: fixed, size: 5}}, window_tokens: 40}}\n  lumber: {{kind: llm-boundaries, protocol: lumber, llm: {{base_url: '{url}', model: m}}, window_tokens: 40}}\n  ctx: {{kind: contextual, over: {{kind: fixed, size: 20}}, llm: {{base_url: '{url}', model: m}}}}\n  ctx-chroma: {{kind: contextual, over: {{kind: llm-boundaries, protocol: chroma, llm: {{base_url: '{url}', model: m}}, pieces: {{kind: fixed, size: 5}}, window_tokens: 40}}, llm: {{base_url: '{url}', model: m}}}}\nretrievers:\n  bm25: {{kind: bm25}}\nk: [1]\nreaders:\n  lexical: {{kind: lexical}}\nbootstrap_resamples: 200\n"
    );
    let cache = tmp.path().join("gen");
    let cfg = tmp.path().join("m.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let out = tmp.path().join("runs");
    let o = run_env(
        &cfg,
        &store,
        &out,
        &[("CHUNKBENCH_GENERATION_CACHE", s(&cache))],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = out.join("m");
    let chroma = chunk_lengths(&run, "chroma");
    let u = &chroma["stats"]["llm"];
    // Every window: the ask and one re-ask (the second re-ask would repeat the first, with
    // the same invalid `[]`, so it is skipped), both malformed, then one fallback split.
    let windows = u["fallbacks"].as_u64().unwrap();
    assert!(windows >= 1);
    assert_eq!(u["requests"].as_u64().unwrap(), 2 * windows);
    assert_eq!(u["malformed"].as_u64().unwrap(), 2 * windows);
    assert_eq!(u["prompt_tokens"].as_u64().unwrap(), 20 * windows);
    // Lumber: no usable answer, so no boundary: the document is one chunk.
    let lumber = chunk_lengths(&run, "lumber");
    assert_eq!(lumber["words"].as_array().unwrap().len(), 1);
    assert!(lumber["stats"]["llm"]["fallbacks"].as_u64().unwrap() >= 1);
    // Contextual: every context empty, each chunk indexed under its own text, counted.
    let ctx = chunk_lengths(&run, "ctx");
    let n = ctx["words"].as_array().unwrap().len() as u64;
    assert_eq!(ctx["stats"]["llm"]["malformed"].as_u64().unwrap(), n);
    assert_eq!(ctx["stats"]["llm"]["fallbacks"].as_u64().unwrap(), n);
    // Contextual over llm-boundaries counts both models' requests.
    let both = chunk_lengths(&run, "ctx-chroma");
    let chunks = both["words"].as_array().unwrap().len() as u64;
    assert_eq!(
        both["stats"]["llm"]["requests"].as_u64().unwrap(),
        u["requests"].as_u64().unwrap() + chunks
    );
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains("| harbour | chroma | chunk text |"),
        "{summary}"
    );
    // Overlapping Chroma pieces are refused, naming the field and the fix.
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(
        &bad,
        format!("name: bad\ndatasets: [harbour]\nstrategies:\n  c: {{kind: llm-boundaries, protocol: chroma, llm: {{base_url: '{url}', model: m}}, pieces: {{kind: fixed, size: 6, overlap: 2}}}}\nretrievers:\n  bm25: {{kind: bm25}}\nk: [1]\nreaders:\n  lexical: {{kind: lexical}}\n"),
    )
    .unwrap();
    let o = run_env(
        &bad,
        &store,
        &out,
        &[("CHUNKBENCH_GENERATION_CACHE", s(&cache))],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("field `pieces`") && err.contains("overlap: 0"),
        "{err}"
    );
    // A bad `llm` entry names its cause at validation, not only the field.
    std::fs::write(
        &bad,
        "name: bad\ndatasets: [harbour]\nstrategies:\n  c: {kind: contextual, over: {kind: fixed, size: 5}, llm: {base_url: 'not a url', model: m}}\nretrievers:\n  bm25: {kind: bm25}\nk: [1]\nreaders:\n  lexical: {kind: lexical}\n",
    )
    .unwrap();
    let o = chunkbench(&["validate", s(&bad), "--store", s(&store)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("field `llm`: ") && err.contains("base_url"),
        "{err}"
    );
    // `validate` asks a strategy's model server, as it asks readers'.
    std::fs::write(
        &bad,
        "name: bad\ndatasets: [harbour]\nstrategies:\n  c: {kind: llm-boundaries, protocol: lumber, llm: {base_url: 'http://127.0.0.1:9/v1', model: m, max_retries: 0}}\nretrievers:\n  bm25: {kind: bm25}\nk: [1]\nreaders:\n  lexical: {kind: lexical}\n",
    )
    .unwrap();
    let o = chunkbench(&["validate", s(&bad), "--store", s(&store)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("strategy `c`") && err.contains("127.0.0.1:9"),
        "{err}"
    );
}

/// The number after `marker` in `text`.
fn number_after(text: &str, marker: &str) -> usize {
    let i = text.find(marker).unwrap() + marker.len();
    text[i..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// Hand-checked boundaries: a server that always answers validly (Chroma: split two pieces
/// after the current one; Lumber: the shift at the group's second paragraph) gives exactly
/// the chunks the protocols prescribe, worked out by hand below.
#[test]
fn valid_replies_set_the_boundaries_the_protocols_prescribe() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let doc = paragraphs(12); // 12 paragraphs of 10 words
    import(
        &store,
        "harbour",
        &[("harbour.txt", &doc)],
        "{\"id\":\"q1\",\"question\":\"What is item 3?\",\"options\":[\"boats\",\"cars\"],\"answer\":0}\n",
    );
    let url = scripted(|p| {
        if p.contains("split_after") {
            format!(
                "split_after: {}",
                number_after(p, "EQUAL OR LARGER THAN: ") + 2
            )
        } else {
            format!("Answer: ID {}", number_after(p, "Document:\nID ") + 1)
        }
    });
    let yaml = format!(
        "name: v\ndatasets: [harbour]\nstrategies:\n  chroma: {{kind: llm-boundaries, protocol: chroma, llm: {{base_url: '{url}', model: m}}, pieces: {{kind: fixed, size: 5}}, window_tokens: 40}}\n  lumber: {{kind: llm-boundaries, protocol: lumber, llm: {{base_url: '{url}', model: m}}, window_tokens: 40}}\nretrievers:\n  bm25: {{kind: bm25}}\nk: [1]\nreaders:\n  lexical: {{kind: lexical}}\nbootstrap_resamples: 200\n"
    );
    let cfg = tmp.path().join("v.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let out = tmp.path().join("runs");
    let cache = tmp.path().join("gen");
    let o = run_env(
        &cfg,
        &store,
        &out,
        &[("CHUNKBENCH_GENERATION_CACHE", s(&cache))],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = out.join("v");
    // Chroma: 24 pieces of 5 words; splits after 2, 4, …, 20 (it stops once 4 pieces
    // remain), so ten chunks of one paragraph each and the last two paragraphs together.
    let chroma = chunk_lengths(&run, "chroma");
    let mut want = vec![10u64; 10];
    want.push(20);
    assert_eq!(chroma["words"], serde_json::json!(want));
    assert_eq!(chroma["stats"]["llm"]["requests"], 10);
    assert_eq!(chroma["stats"]["llm"]["malformed"], 0);
    // Lumber: groups of 3 paragraphs (a 4th would reach 40 estimated tokens); shifts at 1,
    // 3, 5, 7, each next group starting one after the shift, until 5 paragraphs remain.
    let lumber = chunk_lengths(&run, "lumber");
    assert_eq!(lumber["words"], serde_json::json!([10, 20, 20, 20, 50]));
    assert_eq!(lumber["stats"]["llm"]["requests"], 4);
    // Every chunk starts and ends on a paragraph's text.
    for (_, ids) in passages(&run, "lumber", 1)
        .into_iter()
        .chain(passages(&run, "chroma", 1))
    {
        for id in ids {
            let span = id.rsplit_once(':').unwrap().1;
            let (a, b) = span.split_once('-').unwrap();
            let t = &doc[a.parse::<usize>().unwrap()..b.parse::<usize>().unwrap()];
            assert!(t.starts_with("Paragraph ") && t.ends_with('.'), "{t:?}");
        }
    }
}

/// Three documents of eight real SciQ support paragraphs each.
fn sciq_docs() -> Vec<(String, String)> {
    let store = store_with(&["sciq-retrieval"]);
    let paras: Vec<String> = std::fs::read_to_string(store.join("sciq-retrieval/documents.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|t| (30..90).contains(&t.split_whitespace().count()))
        .take(24)
        .collect();
    paras
        .chunks(8)
        .enumerate()
        .map(|(i, g)| (format!("topic-{i}.md"), g.join("\n\n") + "\n"))
        .collect()
}

#[test]
fn llm_strategies_on_the_real_llama_cpp_server_are_cached_deterministic_and_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let server = llama(&tmp.path().join("server.log"));
    let store = tmp.path().join("store");
    let docs = sciq_docs();
    let refs: Vec<(&str, &str)> = docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    import(
        &store,
        "sciq3",
        &refs,
        "{\"id\":\"q1\",\"question\":\"What do plants need for photosynthesis?\",\"options\":[\"light\",\"sand\"],\"answer\":0}\n\
         {\"id\":\"q2\",\"question\":\"What is the unit of force?\",\"options\":[\"newton\",\"litre\"],\"answer\":0}\n",
    );
    let url = &server.1;
    let yaml = format!(
        "name: llm\ndatasets: [sciq3]\nstrategies:\n  ctx: {{kind: contextual, over: {{kind: fixed, size: 120}}, llm: {{base_url: '{url}', model: default}}, document_words: 150, max_tokens: 40}}\n  chroma: {{kind: llm-boundaries, protocol: chroma, llm: {{base_url: '{url}', model: default}}, max_tokens: 40}}\n  lumber: {{kind: llm-boundaries, protocol: lumber, llm: {{base_url: '{url}', model: default}}, window_tokens: 200, max_tokens: 20}}\nretrievers:\n  bm25: {{kind: bm25, query: question}}\nk: [1]\nreaders:\n  lexical: {{kind: lexical}}\nbootstrap_resamples: 200\n"
    );
    let cache = tmp.path().join("gen");
    let cfg = tmp.path().join("llm.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let env = [("CHUNKBENCH_GENERATION_CACHE", s(&cache))];
    let started = std::time::Instant::now();
    let o = run_env(&cfg, &store, &tmp.path().join("a"), &env);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let secs = started.elapsed().as_secs_f64();
    let o = run_env(&cfg, &store, &tmp.path().join("b"), &env);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (a, b) = (tmp.path().join("a/llm"), tmp.path().join("b/llm"));
    let texts = documents_in(&store, "sciq3");
    let mut line = String::new();
    for strategy in ["ctx", "chroma", "lumber"] {
        let (la, lb) = (chunk_lengths(&a, strategy), chunk_lengths(&b, strategy));
        assert_eq!(
            la["words"], lb["words"],
            "{strategy}: the same chunks twice"
        );
        let (ua, ub) = (&la["stats"]["llm"], &lb["stats"]["llm"]);
        // A fresh cache: only repeated requests within the run (a re-ask) can be cached.
        assert!(
            ua["cached"].as_u64() < ua["requests"].as_u64(),
            "{strategy}: {ua}"
        );
        assert_eq!(
            ub["cached"], ub["requests"],
            "{strategy}: the second run asks nothing"
        );
        assert_eq!(ua["requests"], ub["requests"]);
        assert_eq!(ua["malformed"], ub["malformed"]);
        assert_eq!(passages(&a, strategy, 1), passages(&b, strategy, 1));
        line.push_str(&format!(
            "{strategy}: {} chunks, {} requests, {} malformed, {} fallbacks; ",
            la["words"].as_array().unwrap().len(),
            ua["requests"],
            ua["malformed"],
            ua["fallbacks"]
        ));
    }
    // LLM boundaries: chunks are exact spans that tile each document's pieces in order.
    for strategy in ["chroma", "lumber"] {
        let out = chunkbench_env(
            &[
                "run",
                s(&cfg),
                "--store",
                s(&store),
                "--output",
                s(&tmp.path().join("c")),
            ],
            &env,
        );
        assert!(out.status.success());
        let rows = passages(&tmp.path().join("c/llm"), strategy, 1);
        for (_, ids) in rows {
            for id in ids {
                let (d, span) = id.rsplit_once(':').unwrap();
                let (st, e) = span.split_once('-').unwrap();
                let (st, e): (usize, usize) = (st.parse().unwrap(), e.parse().unwrap());
                let t = &texts[d];
                assert!(st < e && e <= t.len() && t.is_char_boundary(st) && t.is_char_boundary(e));
                assert!(
                    !t[st..e].starts_with(char::is_whitespace),
                    "{strategy}: {id}"
                );
            }
        }
    }
    testkit::append_line(
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("llama-server.log"),
        &format!(
            "LLM strategies, SmolLM2-135M Q4_1 on llama.cpp, 3 SciQ documents: {line}first run {secs:.0} s, second run from the cache"
        ),
    );
    let _: PathBuf = a;
}
