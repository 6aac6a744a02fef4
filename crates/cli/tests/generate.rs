//! `chunkbench data generate`: questions with verified evidence from a bare corpus.
//!
//! - Against a scripted OpenAI-compatible server (a real HTTP server answering by a rule;
//!   the faults a real model cannot be made to produce on demand): every rejection reason is
//!   counted, accepted questions hold exact evidence spans containing their answer, a second
//!   run reads every reply from the cache and writes the same files byte for byte, another
//!   served model makes another dataset identity, the set runs through a retrieval-only
//!   sweep, and a server that only writes prose, an empty folder or a dead server leave the
//!   store untouched.
//! - Against the real llama.cpp server with SmolLM2-135M (scripts/llama-server/serve.sh):
//!   real replies from a real corpus, counted; every accepted question satisfies the
//!   invariants; the acceptance rate is printed to `$CARGO_TARGET_TMPDIR/llama-server.log`
//!   (scripts/test.sh shows it).

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const FILLER: &str = "The council keeps records of every repair in its archive by the harbour, \
    and visitors often ask to read them on rainy afternoons in the long winter.";

/// (file stem = title, the fact sentence) of the scripted corpus.
const DOCS: [(&str, &str); 12] = [
    ("good-1", "The lighthouse of Arden stands 31 metres tall."),
    (
        "good-2",
        "The Brisk ferry leaves the harbour at seven in the morning.",
    ),
    (
        "ws-3",
        "Corran's bakery was founded in 1887 by two\nsisters.",
    ),
    ("dup-4", "The lighthouse of Arden is painted red and white."),
    (
        "prose-5",
        "Elsby holds a cheese market on the first Monday of May.",
    ),
    (
        "noexcerpt-6",
        "Fenwick's bridge was rebuilt in stone after the flood.",
    ),
    (
        "notfound-7",
        "Garrow's school teaches sailing to every pupil.",
    ),
    ("ambiguous-8", "The bell of Hollin rings at noon."),
    (
        "noanswer-9",
        "Isham's orchard grows eleven kinds of apples.",
    ),
    (
        "unrelated-10",
        "Jarrow's choir sings in the old chapel every Sunday.",
    ),
    ("long-11", "Kelso's windmill grinds barley for the brewery."),
    (
        "cut-12",
        "Lydd's observatory opens to the public on clear nights.",
    ),
];

fn corpus(dir: &Path) -> PathBuf {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for (stem, fact) in DOCS {
        let mut text = format!("# {stem}\n\n{fact} {FILLER}");
        if stem.starts_with("ambiguous") {
            text.push_str(&format!(" {fact}"));
        }
        std::fs::write(docs.join(format!("{stem}.md")), text + "\n").unwrap();
    }
    docs
}

/// The scripted model's reply to a request whose user message names document `title`.
fn scripted_reply(title: &str) -> (String, &'static str) {
    let fact = DOCS.iter().find(|(s, _)| *s == title).map_or("", |d| d.1);
    let j = |q: &str, e: &str, a: &str| {
        serde_json::json!({"question": q, "excerpts": [e], "answer": a}).to_string()
    };
    let stop = "stop";
    match title.split('-').next().unwrap() {
        "good" if title == "good-1" => (j("How tall is the lighthouse of Arden?", fact, "31 metres"), stop),
        "good" => (
            format!(
                "Here is the question:\n```json\n{}\n```",
                j("When does the Brisk ferry leave the harbour?", fact, "seven in the morning")
            ),
            stop,
        ),
        "ws" => (
            j(
                "Who founded the bakery of Corran?",
                "Corran's bakery was founded  in 1887\nby two sisters.",
                "two sisters",
            ),
            stop,
        ),
        "dup" => (j("How tall is the lighthouse of Arden?", fact, "red and white"), stop),
        "prose" => ("Elsby is a lovely town with a market.".into(), stop),
        "noexcerpt" => (
            r#"{"question": "When was the bridge of Fenwick rebuilt?", "answer": "after the flood"}"#
                .into(),
            stop,
        ),
        "notfound" => (
            j("What does Garrow's school teach?", "Garrow's school teaches rowing to every pupil.", "rowing"),
            stop,
        ),
        "ambiguous" => (j("When does the bell of Hollin ring?", fact, "at noon"), stop),
        "noanswer" => (
            j("How many kinds of apples grow in Isham's orchard?", fact, "twelve kinds"),
            stop,
        ),
        "unrelated" => (
            j(
                "What is the chemical formula of table salt?",
                "The council keeps records of every repair in its archive by the harbour",
                "the harbour",
            ),
            stop,
        ),
        "long" => (
            j(&"What does the windmill grind ".repeat(9), fact, "barley"),
            stop,
        ),
        "cut" => (r#"{"question": "When does Lydd's observatory open?", "excerpts": ["Lydd's obs"#.into(), "length"),
        _ => ("?".into(), stop),
    }
}

/// The scripted model's multiple-choice reply (with distractors) for document `title`.
fn scripted_mcq_reply(title: &str) -> String {
    let fact = DOCS.iter().find(|(s, _)| *s == title).map_or("", |d| d.1);
    let j = |q: &str, a: &str, d: [&str; 3]| {
        serde_json::json!({"question": q, "excerpts": [fact], "answer": a, "distractors": d})
            .to_string()
    };
    match title {
        "good-1" => j(
            "How tall is the lighthouse of Arden?",
            "31 metres",
            ["45 metres", "12 metres", "80 metres"],
        ),
        "good-2" => j(
            "When does the Brisk ferry leave the harbour?",
            "seven in the morning",
            ["noon", "midnight", "six in the evening"],
        ),
        "ws-3" => j(
            "Who founded the bakery of Corran?",
            "two sisters",
            ["two brothers", "1887", "a baker"],
        ),
        "dup-4" => j(
            "What colours is the lighthouse of Arden painted?",
            "red and white",
            ["blue", "Blue", "green"],
        ),
        _ => "A town.".into(),
    }
}

/// The closed-book answer of the scripted model: the right letter for the lighthouse's
/// height (the model "knows" it), a wrong one ("noon") for the ferry.
fn scripted_closed_book(user: &str) -> String {
    let letter = |text: &str| {
        user.lines()
            .find(|l| l.ends_with(&format!(". {text}")))
            .and_then(|l| l.chars().next())
    };
    format!(
        "Answer: {}",
        letter("31 metres").or(letter("noon")).unwrap_or('A')
    )
}

/// How the scripted server answers.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Rule,
    Prose,
    Mcq,
}

/// A scripted server: `/v1/models` reports `model`; chat completions answer by the rule
/// (always with prose in `Mode::Prose`). Counts the chat requests.
struct Scripted {
    url: String,
    model: Arc<Mutex<String>>,
    chats: Arc<AtomicUsize>,
}

fn scripted(mode: Mode) -> Scripted {
    let model = Arc::new(Mutex::new("scripted-model-a".to_string()));
    let chats = Arc::new(AtomicUsize::new(0));
    let (m, c) = (model.clone(), chats.clone());
    let url = testkit::serve(move |r| {
        if r.url.ends_with("/models") {
            let id = m.lock().unwrap().clone();
            return (200, serde_json::json!({"data": [{"id": id}]}).to_string());
        }
        c.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_str(&r.body).unwrap();
        let user = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let title = user
            .split("From \"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or("");
        let (text, finish) = match mode {
            Mode::Prose => ("I think this text is about a town.".to_string(), "stop"),
            Mode::Rule => scripted_reply(title),
            Mode::Mcq if title.is_empty() => (scripted_closed_book(user), "stop"),
            Mode::Mcq => (scripted_mcq_reply(title), "stop"),
        };
        (
            200,
            serde_json::json!({"choices": [{"message": {"role": "assistant", "content": text},
                                            "finish_reason": finish}]})
            .to_string(),
        )
    });
    Scripted {
        url: format!("{url}/v1"),
        model,
        chats,
    }
}

fn generate_args<'a>(
    name: &'a str,
    docs: &'a str,
    store: &'a str,
    url: &'a str,
    cache: &'a str,
    ecache: &'a str,
) -> Vec<&'a str> {
    vec![
        "data",
        "generate",
        name,
        "--from",
        docs,
        "--store",
        store,
        "--llm",
        url,
        "--questions",
        "20",
        "--passage-words",
        "30",
        "--min-passage-words",
        "10",
        "--cache",
        cache,
        "--embedding-cache",
        ecache,
    ]
}

/// `data generate` of the scripted corpus into `store`, which must succeed; its stderr.
fn generate_ok(
    name: &str,
    docs: &Path,
    store: &str,
    url: &str,
    cache: &str,
    ecache: &str,
) -> String {
    let out = chunkbench(&generate_args(
        name,
        docs.to_str().unwrap(),
        store,
        url,
        cache,
        ecache,
    ));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn jsonl(p: &Path) -> Vec<Value> {
    read(p)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// No dataset directory and no hidden work directory in `store`.
fn untouched(store: &Path, name: &str) {
    assert!(!store.join(name).exists(), "{name} was written");
    if let Ok(entries) = std::fs::read_dir(store) {
        for e in entries {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!n.starts_with('.'), "a work directory is left: {n}");
        }
    }
}

#[test]
fn generated_set_counts_every_rejection_keeps_exact_spans_and_regenerates_byte_for_byte() {
    minilm();
    let tmp = tempfile::tempdir().unwrap();
    let docs = corpus(tmp.path());
    let t = |p: &str| tmp.path().join(p).to_str().unwrap().to_string();
    let (store, cache, ecache) = (t("store"), t("cache"), t("ecache"));
    let server = scripted(Mode::Rule);
    let err = generate_ok("towns-gen", &docs, &store, &server.url, &cache, &ecache);
    let dir = Path::new(&store).join("towns-gen");
    let m: Value = serde_json::from_str(&read(&dir.join("manifest.json"))).unwrap();
    let c = &m["counts"];
    let expect = [
        ("candidates", 12),
        ("accepted", 3),
        ("rejected_malformed_reply", 3),
        ("rejected_excerpt_not_found", 1),
        ("rejected_excerpt_ambiguous", 1),
        ("rejected_answer_not_in_excerpt", 1),
        ("rejected_excerpt_unrelated", 1),
        ("rejected_duplicate_question", 1),
        ("rejected_too_long", 1),
        ("excerpts_normalised", 1),
        ("replies_cut", 1),
        ("questions", 3),
        ("documents", 12),
    ];
    for (k, v) in expect {
        assert_eq!(c[k], v, "count {k}: {c}\n{err}");
    }
    assert!(err.contains("accepted 3 of 12 candidates"), "{err}");
    assert_eq!(server.chats.load(Ordering::SeqCst), 12);
    // Every accepted question: evidence spans are exact slices of their document that
    // contain the answer; the ws- excerpt's span is the document's own bytes.
    let texts: std::collections::HashMap<String, String> = jsonl(&dir.join("documents.jsonl"))
        .into_iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().into(),
                d["text"].as_str().unwrap().into(),
            )
        })
        .collect();
    let qs = jsonl(&dir.join("questions.jsonl"));
    assert_eq!(qs.len(), 3);
    for q in &qs {
        let answer = q["answers"][0].as_str().unwrap().to_lowercase();
        let ev = q["evidence"].as_array().unwrap();
        assert!(!ev.is_empty());
        let slices: Vec<&str> = ev
            .iter()
            .map(|e| {
                let t = &texts[e["doc_id"].as_str().unwrap()];
                &t[e["start"].as_u64().unwrap() as usize..e["end"].as_u64().unwrap() as usize]
            })
            .collect();
        assert!(
            slices.iter().any(|s| s.to_lowercase().contains(&answer)),
            "{q}"
        );
        assert!(
            q.get("options").is_none() && q.get("doc_ids").is_none(),
            "{q}"
        );
        if q["question"] == "Who founded the bakery of Corran?" {
            assert_eq!(
                slices,
                vec!["Corran's bakery was founded in 1887 by two\nsisters."]
            );
            // The answer as the document writes it: answer recall (lower-cased, exact)
            // finds it wherever this evidence is retrieved.
            assert_eq!(q["answers"][0], "two\nsisters");
        }
    }
    // generation.jsonl: one row per candidate, with its reason; report.html shows them.
    let rows = jsonl(&dir.join("generation.jsonl"));
    assert_eq!(rows.len(), 12);
    let cut = rows
        .iter()
        .find(|r| r["finish_reason"] == "length")
        .unwrap();
    assert_eq!(cut["reason"], "malformed_reply");
    assert!(
        cut["detail"]
            .as_str()
            .unwrap()
            .contains("cut at max_tokens"),
        "{cut}"
    );
    let page = read(&dir.join("report.html"));
    assert!(page.contains("<mark>Corran&#x27;s bakery was founded in 1887 by two\nsisters.</mark>"));
    assert!(page.contains("excerpt_ambiguous") && page.contains("scripted-model-a"));
    assert!(!page.contains("<script"));

    // Regeneration from the cache: no request, the same bytes.
    let store2 = t("store2");
    let err2 = generate_ok("towns-gen", &docs, &store2, &server.url, &cache, &ecache);
    assert_eq!(
        server.chats.load(Ordering::SeqCst),
        12,
        "the second run asked the model"
    );
    assert!(err2.contains("replies: 12 from the cache, 0 from the model"));
    let dir2 = Path::new(&store2).join("towns-gen");
    for f in [
        "documents.jsonl",
        "questions.jsonl",
        "manifest.json",
        "generation.jsonl",
        "report.html",
    ] {
        assert_eq!(read(&dir.join(f)), read(&dir2.join(f)), "{f} differs");
    }

    // Another served model: every reply is asked again, and the dataset identity differs
    // even though the scripted replies (and so the questions) are the same.
    *server.model.lock().unwrap() = "scripted-model-b".into();
    let store3 = t("store3");
    generate_ok("towns-gen", &docs, &store3, &server.url, &cache, &ecache);
    assert_eq!(server.chats.load(Ordering::SeqCst), 24);
    let m3: Value =
        serde_json::from_str(&read(&Path::new(&store3).join("towns-gen/manifest.json"))).unwrap();
    assert_ne!(m3["sha256"], m["sha256"]);
    assert_eq!(
        read(&Path::new(&store3).join("towns-gen/questions.jsonl")),
        read(&dir.join("questions.jsonl"))
    );

    // The set runs through a retrieval-only sweep.
    let cfg = tmp.path().join("sweep.yaml");
    std::fs::write(
        &cfg,
        "name: gen-sweep\ndatasets: [towns-gen]\nstrategies:\n  fixed-8: {kind: fixed, unit: words, size: 8, overlap: 0}\n  fixed-32: {kind: fixed, unit: words, size: 32, overlap: 0}\nbaseline: fixed-32\nretrievers:\n  bm25: {kind: bm25}\nk: [1, 3]\nreaders:\n  retrieval: {kind: none}\nbootstrap_resamples: 200\n",
    )
    .unwrap();
    let runs = tmp.path().join("runs");
    let r = run_env(&cfg, Path::new(&store), &runs, &[]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let summary = read(&runs.join("gen-sweep/summary.csv"));
    assert!(summary.lines().count() >= 3, "{summary}");
    assert!(
        summary.contains("fixed-8") && summary.contains("towns-gen"),
        "{summary}"
    );

    // Generating into the dataset it reads is refused, and leaves it as it was.
    let out = chunkbench(&[
        "data",
        "generate",
        "towns-gen",
        "--from",
        "towns-gen",
        "--store",
        &store,
        "--llm",
        &server.url,
        "--force",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another name"));
    assert_eq!(
        read(&dir.join("manifest.json")),
        read(&dir2.join("manifest.json"))
    );
}

#[test]
fn multiple_choice_distractors_and_the_closed_book_check() {
    minilm();
    let tmp = tempfile::tempdir().unwrap();
    let docs = corpus(tmp.path());
    let t = |p: &str| tmp.path().join(p).to_str().unwrap().to_string();
    let (cache, ecache) = (t("cache"), t("ecache"));
    let server = scripted(Mode::Mcq);
    let run = |store: &str, check: &str| {
        let mut a = generate_args(
            "towns-mcq",
            docs.to_str().unwrap(),
            store,
            &server.url,
            &cache,
            &ecache,
        );
        a.extend(["--mcq", check]);
        let out = chunkbench(&a);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = Path::new(store).join("towns-mcq");
        let m: Value = serde_json::from_str(&read(&dir.join("manifest.json"))).unwrap();
        (
            m["counts"].clone(),
            jsonl(&dir.join("questions.jsonl")),
            jsonl(&dir.join("generation.jsonl")),
        )
    };
    let (c, qs, _) = run(&t("drop"), "--drop-closed-book");
    for (k, v) in [
        ("accepted", 1),
        ("rejected_closed_book", 1),
        ("rejected_distractor_in_evidence", 1),
        ("rejected_bad_distractors", 1),
        ("rejected_malformed_reply", 8),
        ("closed_book_flagged", 0),
    ] {
        assert_eq!(c[k], v, "{k}: {c}");
    }
    assert_eq!(qs.len(), 1);
    let q = &qs[0];
    let options: Vec<&str> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert_eq!(options.len(), 4);
    assert_eq!(
        options[q["answer"].as_u64().unwrap() as usize],
        "seven in the morning"
    );
    assert_eq!(q["answers"][0], "seven in the morning");
    // Flagged instead of dropped: both questions kept, the known one flagged; its options hold
    // no distractor that occurs in the evidence. The replies come from the cache.
    let before = server.chats.load(Ordering::SeqCst);
    let (c, qs, rows) = run(&t("flag"), "--flag-closed-book");
    assert_eq!(
        server.chats.load(Ordering::SeqCst),
        before,
        "replies were asked again"
    );
    assert_eq!(
        (c["accepted"].as_u64(), c["closed_book_flagged"].as_u64()),
        (Some(2), Some(1)),
        "{c}"
    );
    let flagged: Vec<&Value> = rows.iter().filter(|r| r["closed_book"] == true).collect();
    assert_eq!(flagged.len(), 1);
    assert_eq!(
        flagged[0]["draft"]["question"],
        "How tall is the lighthouse of Arden?"
    );
    assert_eq!(qs.len(), 2);
}

/// Prints `line` and appends it to `$CARGO_TARGET_TMPDIR/llama-server.log` (printed by
/// scripts/test.sh).
fn report_line(line: &str) {
    testkit::append_line(
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("llama-server.log"),
        line,
    );
}

/// A user-style corpus of real text: 10 Markdown files of 4 SciQ support paragraphs each.
fn sciq_folder(dir: &Path) -> PathBuf {
    let docs = dir.join("sciq-docs");
    std::fs::create_dir_all(&docs).unwrap();
    let paragraphs: Vec<String> =
        read(&store_with(&["sciq-retrieval"]).join("sciq-retrieval/documents.jsonl"))
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["text"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .filter(|t| t.split_whitespace().count() >= 40)
            .take(40)
            .collect();
    for (i, group) in paragraphs.chunks(4).enumerate() {
        std::fs::write(
            docs.join(format!("topic-{i:02}.md")),
            group.join("\n\n") + "\n",
        )
        .unwrap();
    }
    docs
}

#[test]
fn smollm2_on_the_real_llama_cpp_server_generates_counted_verified_candidates() {
    minilm();
    let tmp = tempfile::tempdir().unwrap();
    let server = llama(&tmp.path().join("server.log"));
    let docs = sciq_folder(tmp.path());
    let t = |p: &str| tmp.path().join(p).to_str().unwrap().to_string();
    let (store, cache, ecache) = (t("store"), t("cache"), t("ecache"));
    let args = |store: &str| -> Vec<String> {
        [
            "data",
            "generate",
            "sciq-gen",
            "--from",
            docs.to_str().unwrap(),
            "--store",
            store,
            "--llm",
            &server.1,
            "--questions",
            "12",
            "--candidates",
            "12",
            "--passage-words",
            "60",
            "--min-passage-words",
            "20",
            "--response-format",
            "json-object",
            "--cache",
            &cache,
            "--embedding-cache",
            &ecache,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let started = std::time::Instant::now();
    let a = args(&store);
    let out = chunkbench(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let secs = started.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    // Accepted or not, every candidate is counted under exactly one verdict.
    let line = err
        .lines()
        .find(|l| l.contains(" candidates; rejected: "))
        .unwrap_or_else(|| panic!("no counts:\n{err}"));
    let counts: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let (accepted, candidates) = (counts[0], counts[1]);
    assert_eq!(candidates, 12, "{line}");
    let rejected: u64 = line
        .split("rejected: ")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .split(", ")
        .filter_map(|p| p.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(accepted + rejected, candidates, "{line}");
    report_line(&format!(
        "data generate, SmolLM2-135M Q4_1 on llama.cpp (json-object), 10 SciQ files: {} \
         (the command, with the embedder's start: {secs:.0} s)",
        line.trim()
    ));
    let dir = Path::new(&store).join("sciq-gen");
    if accepted == 0 {
        assert_eq!(out.status.code(), Some(2), "{err}");
        untouched(Path::new(&store), "sciq-gen");
    } else {
        assert!(out.status.success(), "{err}");
        for q in jsonl(&dir.join("questions.jsonl")) {
            let docs: std::collections::HashMap<String, String> =
                jsonl(&dir.join("documents.jsonl"))
                    .into_iter()
                    .map(|d| {
                        (
                            d["id"].as_str().unwrap().into(),
                            d["text"].as_str().unwrap().into(),
                        )
                    })
                    .collect();
            let answer = q["answers"][0].as_str().unwrap().to_lowercase();
            let ok = q["evidence"].as_array().unwrap().iter().any(|e| {
                let t = &docs[e["doc_id"].as_str().unwrap()];
                t[e["start"].as_u64().unwrap() as usize..e["end"].as_u64().unwrap() as usize]
                    .to_lowercase()
                    .contains(&answer)
            });
            assert!(ok, "{q}");
        }
    }
    // The same command again: every reply from the cache, the same outcome.
    let store2 = t("store2");
    let a2 = args(&store2);
    let out2 = chunkbench(&a2.iter().map(String::as_str).collect::<Vec<_>>());
    let err2 = String::from_utf8_lossy(&out2.stderr);
    assert!(
        err2.contains("replies: 12 from the cache, 0 from the model"),
        "{err2}"
    );
    assert_eq!(out2.status.code(), out.status.code());
    if accepted > 0 {
        for f in [
            "questions.jsonl",
            "manifest.json",
            "generation.jsonl",
            "report.html",
        ] {
            assert_eq!(
                read(&dir.join(f)),
                read(&Path::new(&store2).join("sciq-gen").join(f))
            );
        }
    }
}

#[test]
fn prose_only_server_empty_folder_and_dead_server_write_nothing() {
    minilm();
    let tmp = tempfile::tempdir().unwrap();
    let docs = corpus(tmp.path());
    let t = |p: &str| tmp.path().join(p).to_str().unwrap().to_string();
    let (store, cache, ecache) = (t("store"), t("cache"), t("ecache"));
    std::fs::create_dir_all(&store).unwrap();
    // Each case exits 2 with the message, and leaves no dataset and no work directory.
    let fails = |name: &str, docs: &Path, url: &str| -> String {
        let out = chunkbench(&generate_args(
            name,
            docs.to_str().unwrap(),
            &store,
            url,
            &cache,
            &ecache,
        ));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{err}");
        untouched(Path::new(&store), name);
        err
    };
    // Prose only: every candidate malformed, the audit page outside the store.
    let server = scripted(Mode::Prose);
    let err = fails("prose", &docs, &server.url);
    assert!(
        err.contains(
            "no candidate was accepted (accepted 0 of 12 candidates; rejected: malformed_reply 12)"
        ),
        "{err}"
    );
    assert!(Path::new(&cache).join("rejected/prose.html").is_file());
    // An empty folder.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = fails("none", &empty, &server.url);
    assert!(err.contains("no documents"), "{err}");
    // A dead server: a clear error naming the URL.
    let err = fails("dead", &docs, "http://127.0.0.1:9/v1");
    assert!(
        err.contains("127.0.0.1:9/v1") && err.contains("--llm"),
        "{err}"
    );
}
