//! Results you can trust when inputs change: one end-to-end test per fault of issue 14, each of
//! which printed a wrong number (or lost results) without a word before the fix:
//! a dataset edited in place (case 1), a model edited in place (2), stale cells in a run
//! directory for `compare` and `merge` (3), unparsable server replies (4), duplicate YAML keys
//! (5), duplicate datasets (6), sweep variants colliding with entries (7), `grid` and `zip` on
//! one key (8), `doc_ids: []` (9), ids a TREC file cannot carry (10), and the size limits of the
//! semantic chunkers (11).
//!
//! Most tests build a small dataset of their own (three documents, four questions) in a
//! temporary store; the model tests copy the fetched all-MiniLM-L6-v2 (`chunkbench models
//! fetch`, which `scripts/test.sh` runs first).

mod common;

use common::{chunkbench, copy_dir, minilm, workspace};
use datasets::dataset::DatasetManifest;
use datasets::io::sha256_hex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

const DOCS: &str = r#"{"id":"d1","title":"Valves","text":"Valve V2 was replaced in March after the leak. Valve V1 stayed in service all year.","source":"test","license":"CC0"}
{"id":"d2","title":"Pumps","text":"Pump P3 failed in May and was rebuilt by the night shift. Pump P1 never failed.","source":"test","license":"CC0"}
{"id":"d3","title":"Fans","text":"Fan F4 was cleaned in June. Fan F2 was replaced in July because its bearing seized.","source":"test","license":"CC0"}
"#;

const QUESTIONS: &str = r#"{"id":"q1","question":"Which valve was replaced in March?","options":["V1","V2","V3","V4"],"answer":1}
{"id":"q2","question":"Which pump failed in May?","options":["P1","P3","P5","P7"],"answer":1}
{"id":"q3","question":"Which fan was replaced in July?","options":["F1","F2","F3","F4"],"answer":1}
{"id":"q4","question":"Which valve stayed in service all year?","options":["V3","V1","V2","V4"],"answer":1}
"#;

/// Writes dataset `name` into `store` with a manifest whose file hashes match the files.
fn write_dataset(store: &Path, name: &str, docs: &str, questions: &str) -> PathBuf {
    let dir = store.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("documents.jsonl"), docs).unwrap();
    std::fs::write(dir.join("questions.jsonl"), questions).unwrap();
    let files: BTreeMap<String, String> =
        [("documents.jsonl", docs), ("questions.jsonl", questions)]
            .into_iter()
            .map(|(f, t)| (f.to_string(), sha256_hex(t.as_bytes())))
            .collect();
    let m = DatasetManifest {
        name: name.into(),
        source: "written by crates/cli/tests/trust.rs".into(),
        version: "1".into(),
        sha256: String::new(),
        license: "CC0".into(),
        counts: BTreeMap::new(),
        notes: vec![],
        files,
    };
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&m).unwrap(),
    )
    .unwrap();
    dir
}

/// A config over dataset `toy`: fixed word chunks, BM25, the lexical reader (plus `extra`).
fn toy_config(dir: &Path, name: &str, body: &str) -> PathBuf {
    let text = format!("name: {name}\ndatasets: [toy]\n{body}");
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

const FIXED: &str = "strategies:
  f5: {kind: fixed, unit: words, size: 5}
  f10: {kind: fixed, unit: words, size: 10}
retrievers:
  bm25: {kind: bm25}
readers:
  lexical: {kind: lexical}
k: [1, 2]
";

fn run(cfg: &Path, store: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        cfg.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    chunkbench(&args)
}

fn ok(o: &Output) -> (String, String) {
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{err}");
    (out, err)
}

fn failed(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(2),
        "expected exit 2; stdout:\n{}\nstderr:\n{err}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

fn validate(cfg: &Path) -> Output {
    chunkbench(&["validate", cfg.to_str().unwrap()])
}

fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.deserialize().map(Result::unwrap).collect()
}

/// Case 1: a dataset file edited in place (manifest untouched) is an error naming the file and
/// the fix, never a reused cell; after the manifest is brought up to date the cells are
/// recomputed and the run says why.
#[test]
fn case01_dataset_edited_in_place_is_never_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let ds = write_dataset(&store, "toy", DOCS, QUESTIONS);
    let cfg = toy_config(tmp.path(), "edit", FIXED);
    let out = tmp.path().join("runs");
    ok(&run(&cfg, &store, &out, &[]));
    // Change one answer in place, without touching manifest.json.
    let edited = QUESTIONS.replacen("\"answer\":1}", "\"answer\":0}", 1);
    std::fs::write(ds.join("questions.jsonl"), &edited).unwrap();
    let err = failed(&run(&cfg, &store, &out, &[]));
    assert!(
        err.contains("questions.jsonl") && err.contains("sha256"),
        "the error names the edited file and its hash: {err}"
    );
    assert!(
        err.contains("chunkbench data rehash"),
        "the error names the command that fixes it: {err}"
    );
    // `validate` reports it before any compute, too.
    let o = chunkbench(&[
        "validate",
        cfg.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(failed(&o).contains("questions.jsonl"));
    // Accept the edit: the manifest now describes the new file, and every cell recomputes.
    ok(&chunkbench(&["data", "rehash", ds.to_str().unwrap()]));
    let (stdout, stderr) = ok(&run(&cfg, &store, &out, &[]));
    assert!(stdout.contains("(0 reused"), "{stdout}");
    assert!(
        stderr.contains("recomputed") && stderr.contains("questions.jsonl"),
        "the run says which input changed: {stderr}"
    );
    let rows = read_csv(&out.join("edit/per_question.csv"));
    let q1: Vec<_> = rows.iter().filter(|r| r["question_id"] == "q1").collect();
    assert!(q1.iter().all(|r| r["gold"] == "0"), "{q1:?}");
}

/// Case 2: replacing the tokenizer.json or flipping bytes of the weights of an embedder
/// directory in place recomputes every cell that embeds, says which file changed, and the
/// manifest names the embedder (with its hashes) for every such cell, reused or not.
#[test]
fn case02_model_edited_in_place_recomputes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let model = tmp.path().join("minilm");
    copy_dir(&minilm(), &model);
    let body = format!(
        "strategies:\n  f10: {{kind: fixed, unit: words, size: 10}}\nretrievers:\n  dense: {{kind: dense}}\nreaders:\n  lexical: {{kind: lexical}}\nk: [1, 2]\nembedder: {{model: {}, cache: {}}}\n",
        model.display(),
        tmp.path().join("cache").display()
    );
    let cfg = toy_config(tmp.path(), "model", &body);
    let out = tmp.path().join("runs");
    ok(&run(&cfg, &store, &out, &[]));
    let (stdout, _) = ok(&run(&cfg, &store, &out, &[]));
    assert!(
        stdout.contains("(2 reused"),
        "unchanged inputs reuse: {stdout}"
    );
    // The manifest names the embedder of every cell, even when every cell was reused.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("model/manifest.json")).unwrap()).unwrap();
    let inputs = manifest["cell_inputs"].as_object().expect("cell_inputs");
    assert_eq!(inputs.len(), 2);
    for (id, i) in inputs {
        assert!(
            i.get("embedder/model.safetensors").is_some()
                && i.get("embedder/tokenizer.json").is_some(),
            "cell {id}: {i}"
        );
    }
    // Replace the tokenizer in place: a different but valid tokenizer (no lower-casing).
    let tok = model.join("tokenizer.json");
    let text = std::fs::read_to_string(&tok).unwrap();
    let changed = text.replacen("\"lowercase\":true", "\"lowercase\":false", 1);
    assert_ne!(text, changed, "the MiniLM tokenizer lower-cases");
    std::fs::write(&tok, changed).unwrap();
    let (stdout, stderr) = ok(&run(&cfg, &store, &out, &[]));
    assert!(stdout.contains("(0 reused"), "{stdout}");
    assert!(
        stderr.contains("recomputed") && stderr.contains("tokenizer.json"),
        "{stderr}"
    );
    // Flip one byte of the weights (inside the tensor data, after the safetensors header).
    let w = model.join("model.safetensors");
    let mut bytes = std::fs::read(&w).unwrap();
    let header = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    bytes[8 + header + 4096] ^= 0x01;
    std::fs::write(&w, bytes).unwrap();
    let (stdout, stderr) = ok(&run(&cfg, &store, &out, &[]));
    assert!(stdout.contains("(0 reused"), "{stdout}");
    assert!(stderr.contains("model.safetensors"), "{stderr}");
}

/// Case 3: `compare` and `merge` use exactly the cells of the run's own config; cells left in
/// `cells/` by an earlier config are ignored and counted, and `merge` refuses an output
/// directory that holds another run unless told `--force`.
#[test]
fn case03_stale_cells_are_ignored_by_compare_and_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let cfg_a = toy_config(tmp.path(), "gate", FIXED);
    let edited = tmp.path().join("edited");
    std::fs::create_dir_all(&edited).unwrap();
    let cfg_b = toy_config(&edited, "gate", &FIXED.replace("size: 10", "size: 7"));
    let (base, cand) = (tmp.path().join("base"), tmp.path().join("cand"));
    ok(&run(&cfg_a, &store, &base, &[]));
    ok(&run(&cfg_a, &store, &cand, &[]));
    // The candidate directory is re-run with the edited config: f10 is now f10 of size 7.
    ok(&run(&cfg_b, &store, &cand, &[]));
    assert_eq!(
        std::fs::read_dir(cand.join("gate/cells")).unwrap().count(),
        12,
        "6 cells × (csv, json): the stale ones stay for reuse"
    );
    let rows = read_csv(&cand.join("gate/per_question.csv"));
    assert_eq!(
        rows.len(),
        4 * 4,
        "per_question.csv holds the edited config's 4 cells"
    );
    let o = chunkbench(&[
        "compare",
        base.join("gate").to_str().unwrap(),
        cand.join("gate").to_str().unwrap(),
    ]);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cand.join("gate/compare.json")).unwrap_or_default())
            .unwrap_or_default();
    let stdout = String::from_utf8_lossy(&o.stdout);
    // f5's two cells are in both configs (same ids); f10's pair by their coordinates with
    // the change shown (issue 38), never with the stale size-10 cells left in cells/.
    let cells = report["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(cells.len(), 4, "{stdout}");
    let by_id = cells.iter().filter(|c| c["paired_by"] == "id").count();
    assert_eq!(by_id, 2, "{stdout}");
    for c in cells.iter().filter(|c| c["strategy"] == "f10") {
        assert_eq!(c["paired_by"], "coordinates", "{stdout}");
        assert_eq!(c["changed"][0], "strategy_config.size: 10 → 7", "{stdout}");
        assert_ne!(c["cell_id"], c["baseline_cell_id"]);
    }
    assert_eq!(report["ignored_candidate_cells"], 2, "{stdout}");
    assert!(stdout.contains("ignored"), "{stdout}");
    // Merge: shards of config A into the candidate directory, which holds config B's run.
    let (s1, s2) = (tmp.path().join("s1"), tmp.path().join("s2"));
    ok(&run(&cfg_a, &store, &s1, &["--shard", "1/2"]));
    ok(&run(&cfg_a, &store, &s2, &["--shard", "2/2"]));
    let target = cand.join("gate");
    let shards = [s1.join("gate"), s2.join("gate")];
    let args = |force: bool| {
        let mut a = vec!["merge".to_string(), target.display().to_string()];
        a.extend(shards.iter().map(|s| s.display().to_string()));
        if force {
            a.push("--force".into());
        }
        a
    };
    let refuse = chunkbench(&args(false).iter().map(String::as_str).collect::<Vec<_>>());
    let err = failed(&refuse);
    assert!(err.contains("--force"), "{err}");
    let (stdout, _) = ok(&chunkbench(
        &args(true).iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(stdout.contains("ignored"), "{stdout}");
    let merged = std::fs::read(target.join("per_question.csv")).unwrap();
    let unsharded = std::fs::read(base.join("gate/per_question.csv")).unwrap();
    assert_eq!(merged, unsharded, "the merged run is config A's, unmixed");
}

/// Starts an OpenAI-compatible server on 127.0.0.1 that answers each chat request with the
/// reply scripted for the marker found in the prompt, and `GET /models` with one model.
fn reply_server(replies: &'static [(&'static str, &'static str)]) -> String {
    let url = testkit::serve(move |req| {
        let json = if req.url.ends_with("/models") {
            serde_json::json!({"object": "list", "data": [{"id": "scripted-1", "object": "model"}]})
        } else {
            let content = replies
                .iter()
                .find(|(marker, _)| req.body.contains(marker))
                .map_or("no script for this prompt", |(_, r)| r);
            serde_json::json!({"id": "x", "object": "chat.completion", "model": "scripted-1",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}]})
        };
        (200, json.to_string())
    });
    format!("{url}/v1")
}

/// Case 4: replies chat models commonly write (`**B**`, `b`, `answer: b`, `The correct option
/// is (b).`) parse; an unparsable one (`banana`) is flagged invalid, attributed
/// `invalid-answer`, counted in summary.md and summary.csv, and its raw text is in
/// per_question.csv.
#[test]
fn case04_server_replies_parse_or_show_as_invalid() {
    static REPLIES: &[(&str, &str)] = &[
        ("Which valve was replaced", "**B**"),
        ("Which pump failed", "b"),
        ("Which fan was replaced", "answer: b"),
        ("Which valve stayed", "banana"),
        ("rebuilt by the night shift", "The correct option is (b)."),
    ];
    let url = reply_server(REPLIES);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut qs = QUESTIONS.to_string();
    for (id, q) in [
        ("q5", "Which pump was rebuilt by the night shift?"),
        ("q6", "Which pump never failed?"),
    ] {
        qs.push_str(&format!(
            r#"{{"id":"{id}","question":"{q}","options":["P1","P3","P5","P7"],"answer":1}}"#
        ));
        qs.push('\n');
    }
    write_dataset(&store, "toy", DOCS, &qs);
    let body = format!(
        "strategies:\n  f10: {{kind: fixed, unit: words, size: 10}}\nretrievers:\n  bm25: {{kind: bm25}}\nreaders:\n  server: {{kind: openai, cache: never, openai: {{base_url: \"{url}\", model: scripted-1, logprobs: off, max_retries: 0}}}}\nk: [2]\n"
    );
    let cfg = toy_config(tmp.path(), "replies", &body);
    let out = tmp.path().join("runs");
    // q6's prompt matches no script: "no script for this prompt" is unparsable too.
    ok(&run(&cfg, &store, &out, &[]));
    let rows = read_csv(&out.join("replies/per_question.csv"));
    let row = |q: &str| rows.iter().find(|r| r["question_id"] == q).unwrap();
    for q in ["q1", "q2", "q3", "q5"] {
        assert_eq!(row(q)["choice"], "1", "{q}: {:?}", row(q));
        assert_eq!(row(q)["invalid"], "0", "{q}");
        assert_eq!(row(q)["correct"], "1", "{q}");
    }
    let banana = row("q4");
    assert_eq!(banana["invalid"], "1");
    assert_eq!(banana["correct"], "0");
    assert_eq!(banana["failure"], "invalid-answer");
    assert!(banana["reply"].contains("banana"), "{banana:?}");
    let summary = read_csv(&out.join("replies/summary.csv"));
    assert_eq!(
        summary[0]["invalid"], "2",
        "banana and the unscripted reply"
    );
    let md = std::fs::read_to_string(out.join("replies/summary.md")).unwrap();
    assert!(md.contains("| invalid |") || md.contains("invalid"), "{md}");
    assert!(md.contains("invalid-answer"), "{md}");
}

/// Case 5: duplicate keys in a YAML mapping are an error naming both lines.
#[test]
fn case05_duplicate_yaml_keys_are_rejected_with_both_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = toy_config(
        tmp.path(),
        "dup",
        "strategies:\n  f: {kind: fixed, size: 10}\n  f: {kind: fixed, size: 20}\nretrievers:\n  bm25: {kind: bm25}\nreaders:\n  lexical: {kind: lexical}\n",
    );
    let err = failed(&validate(&cfg));
    assert!(err.contains("duplicate") && err.contains("`f`"), "{err}");
    assert!(err.contains("line 4") && err.contains("line 5"), "{err}");
}

/// Case 6: a dataset listed twice is rejected (every row would count twice, and Holm would run
/// over a doubled family).
#[test]
fn case06_duplicate_datasets_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("twice.yaml");
    std::fs::write(
        &p,
        "name: twice\ndatasets: [sciq, sciq]\nstrategies:\n  f: {kind: fixed, size: 10}\nretrievers:\n  bm25: {kind: bm25}\nreaders:\n  lexical: {kind: lexical}\n",
    )
    .unwrap();
    let err = failed(&validate(&p));
    assert!(
        err.contains("datasets") && err.contains("sciq") && err.contains("twice"),
        "{err}"
    );
}

/// Case 7: a sweep variant whose name equals an explicit entry is an error, not a silent drop.
#[test]
fn case07_sweep_variant_colliding_with_an_entry_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = toy_config(
        tmp.path(),
        "collide",
        "strategies:\n  f: {kind: fixed, size: 20}\n  \"f[size=10]\": {kind: fixed, size: 30}\nretrievers:\n  bm25: {kind: bm25}\nreaders:\n  lexical: {kind: lexical}\nsweep:\n  grid:\n    strategies.f.size: [10, 40]\n",
    );
    let err = failed(&validate(&cfg));
    assert!(err.contains("f[size=10]") && err.contains("sweep"), "{err}");
}

/// Case 8: `grid` and `zip` on the same key are rejected (they gave duplicate cells under
/// different names).
#[test]
fn case08_grid_and_zip_on_one_key_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = toy_config(
        tmp.path(),
        "both",
        "strategies:\n  f: {kind: fixed, size: 20}\nretrievers:\n  bm25: {kind: bm25}\nreaders:\n  lexical: {kind: lexical}\nsweep:\n  grid:\n    strategies.f.size: [10, 40]\n  zip:\n    strategies.f.size: [10, 40]\n",
    );
    let err = failed(&validate(&cfg));
    assert!(
        err.contains("strategies.f.size") && err.contains("grid") && err.contains("zip"),
        "{err}"
    );
}

/// Case 9: `doc_ids: []` (a question that may retrieve nothing) is a load error with file and
/// line, not a question silently scored wrong.
#[test]
fn case09_empty_doc_ids_are_a_load_error() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let qs = QUESTIONS.replacen("\"answer\":1}", "\"answer\":1,\"doc_ids\":[]}", 2);
    write_dataset(&store, "toy", DOCS, &qs);
    let cfg = toy_config(tmp.path(), "scope", FIXED);
    let err = failed(&run(&cfg, &store, &tmp.path().join("runs"), &[]));
    assert!(
        err.contains("questions.jsonl:1:") && err.contains("doc_ids"),
        "{err}"
    );
}

/// Case 10: ids that a TREC run file or a passage id cannot carry (whitespace) are rejected when
/// the dataset loads, with file and line, before any compute, and nothing half-written is left.
#[test]
fn case10_ids_with_whitespace_are_rejected_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let qs = QUESTIONS.replace("\"id\":\"q3\"", "\"id\":\"q 3\"");
    write_dataset(&store, "toy", DOCS, &qs);
    let cfg = toy_config(tmp.path(), "ids", FIXED);
    let out = tmp.path().join("runs");
    let err = failed(&run(&cfg, &store, &out, &[]));
    assert!(
        err.contains("questions.jsonl:3:") && err.contains("`id`") && err.contains("whitespace"),
        "{err}"
    );
    assert!(
        !out.join("ids/cells").exists()
            || std::fs::read_dir(out.join("ids/cells")).unwrap().count() == 0,
        "no compute happened"
    );
    let docs = DOCS.replace("\"id\":\"d2\"", "\"id\":\"d\\t2\"");
    write_dataset(&store, "toy", &docs, QUESTIONS);
    let err = failed(&run(&cfg, &store, &out, &[]));
    assert!(
        err.contains("documents.jsonl:2:") && err.contains("`id`"),
        "{err}"
    );
}

/// Case 11: semantic chunkers given `size` never exceed it, in the configured unit, and count
/// the forced splits: max-min in tokens (a 250-token sentence) and in chars, kamradt in words.
#[test]
fn case11_semantic_chunkers_respect_size() {
    minilm();
    let tok = chunker::HfTokenizer::from_file(workspace().join("models/all-MiniLM-L6-v2"))
        .expect("MiniLM tokenizer");
    let long: Vec<String> = (1..=120).map(|i| format!("item {i}")).collect();
    let long = format!("The inventory lists {}.", long.join(", "));
    assert!(tok.count(&long) >= 250, "{} tokens", tok.count(&long));
    let text = format!(
        "The pumps were inspected on Monday. {long} The valves were replaced. Fans hum quietly in the hall. The night shift logged every fault."
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("long.txt");
    std::fs::write(&file, &text).unwrap();
    let chunks = |args: &[&str]| -> (Vec<String>, String) {
        let mut a = vec!["chunk", file.to_str().unwrap()];
        a.extend_from_slice(args);
        let (stdout, stderr) = ok(&chunkbench(&a));
        let texts = stdout
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let (s, e) = (
                    v["start"].as_u64().unwrap() as usize,
                    v["end"].as_u64().unwrap() as usize,
                );
                assert_eq!(v["text"].as_str().unwrap(), &text[s..e], "exact slice");
                text[s..e].to_string()
            })
            .collect();
        (texts, stderr)
    };
    let (c, err) = chunks(&["--strategy", "max-min", "--size", "64", "--unit", "tokens"]);
    assert!(c.len() > 4, "{c:?}");
    for t in &c {
        assert!(tok.count(t) <= 64, "{} tokens: {t}", tok.count(t));
    }
    assert!(
        err.contains("split at size"),
        "forced splits are counted: {err}"
    );
    let (c, _) = chunks(&["--strategy", "max-min", "--size", "64", "--unit", "chars"]);
    for t in &c {
        assert!(t.chars().count() <= 64, "{} chars: {t}", t.chars().count());
    }
    let (c, err) = chunks(&["--strategy", "kamradt", "--size", "40", "--unit", "words"]);
    for t in &c {
        assert!(
            chunker::count_words(t) <= 40,
            "{} words: {t}",
            chunker::count_words(t)
        );
    }
    assert!(err.contains("split at size"), "{err}");
}
