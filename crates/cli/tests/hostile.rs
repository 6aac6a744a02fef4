//! Issue 36: no false significance, no lost data, no panic on a user's file. One end-to-end
//! test per numbered case of the issue that the binary can show (the others are unit tests next
//! to their code; the issue's closing note lists where each lives). Every test here failed on
//! the code before its fix; `CHUNKBENCH_TEST_BIN=OLD_BINARY cargo test -p chunkbench --test
//! hostile` runs them against another build.
//!
//! The tests build small datasets of their own in temporary stores; the case 22 test copies
//! the fetched all-MiniLM-L6-v2 (`chunkbench models fetch`, which `scripts/test.sh` runs).

mod common;

use common::{chunkbench, chunkbench_env, copy_dir, minilm, workspace};
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
        source: "written by crates/cli/tests/hostile.rs".into(),
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

/// `dir/NAME.yaml`: a config over dataset `toy` (plus `body`).
fn config(dir: &Path, name: &str, body: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, format!("name: {name}\ndatasets: [toy]\n{body}")).unwrap();
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

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(cfg: &Path, store: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", s(cfg), "--store", s(store), "--output", s(out)];
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

/// The stderr of a command that must exit 2 (bad input, a clear error, never a panic).
fn failed(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(2),
        "expected exit 2; stdout:\n{}\nstderr:\n{err}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.deserialize().map(Result::unwrap).collect()
}

/// Case 1: shards computed on two versions of a dataset (40 gold answers changed under the
/// same ids, `data rehash` between the shards) are not merged: merging gave Δ −30.8 points
/// and McNemar p < 0.001 where the unsharded run gives Δ 0.
#[test]
fn case01_merge_refuses_shards_of_two_dataset_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let ds = write_dataset(&store, "toy", DOCS, QUESTIONS);
    let cfg = config(tmp.path(), "shards", FIXED);
    let (s1, s2) = (tmp.path().join("s1"), tmp.path().join("s2"));
    ok(&run(&cfg, &store, &s1, &["--shard", "1/2"]));
    let edited = QUESTIONS.replace("\"answer\":1}", "\"answer\":2}");
    std::fs::write(ds.join("questions.jsonl"), edited).unwrap();
    ok(&chunkbench(&["data", "rehash", s(&ds)]));
    ok(&run(&cfg, &store, &s2, &["--shard", "2/2"]));
    let merged = tmp.path().join("merged");
    let err = failed(&chunkbench(&[
        "merge",
        s(&merged),
        s(&s1.join("shards")),
        s(&s2.join("shards")),
        "--store",
        s(&store),
    ]));
    assert!(
        err.contains("two versions") && err.contains("dataset manifest") && err.contains("`toy`"),
        "{err}"
    );
    assert!(
        !merged.join("per_question.csv").exists() && !merged.join("cells").exists(),
        "nothing is merged"
    );
    // Merging the stale shard into a finished run of the new data (OUT an existing run) is
    // refused before any of OUT's cells is replaced (a hostile probe: the good cells were
    // overwritten by the stale shard's, then the merge refused).
    let full = tmp.path().join("full");
    ok(&run(&cfg, &store, &full, &[]));
    let before: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(full.join("shards/cells"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    let err = failed(&chunkbench(&[
        "merge",
        s(&full.join("shards")),
        s(&s1.join("shards")),
        "--store",
        s(&store),
    ]));
    assert!(err.contains("two versions"), "{err}");
    for (p, bytes) in before {
        assert_eq!(
            std::fs::read(&p).unwrap(),
            bytes,
            "{} was overwritten",
            p.display()
        );
    }
}

/// Case 2: a cell whose rows (`cells/ID.csv`) were edited after it finished is never reused,
/// nor read by `compare` or `report`: 30 flipped `correct` values once made two cells of equal
/// accuracy differ by 15 points at p < 0.001.
#[test]
fn case02_a_tampered_cell_is_recomputed_and_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let cfg = config(tmp.path(), "tamper", FIXED);
    let (base, out) = (tmp.path().join("base"), tmp.path().join("runs"));
    ok(&run(&cfg, &store, &base, &[]));
    ok(&run(&cfg, &store, &out, &[]));
    let cells = out.join("tamper/cells");
    let csv = std::fs::read_dir(&cells)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "csv"))
        .unwrap();
    // Flip the first row's `correct` (column 10) in place, the record untouched.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut fields: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    fields[9] = if fields[9] == "1" {
        "0".into()
    } else {
        "1".into()
    };
    lines[1] = fields.join(",");
    std::fs::write(&csv, lines.join("\n") + "\n").unwrap();
    // compare and report refuse the cell, naming the file.
    let err = failed(&chunkbench(&[
        "compare",
        s(&base.join("tamper")),
        s(&out.join("tamper")),
        "--store",
        s(&store),
    ]));
    assert!(err.contains(s(&csv)) && err.contains("edited"), "{err}");
    let err = failed(&chunkbench(&[
        "report",
        s(&out.join("tamper")),
        "--store",
        s(&store),
    ]));
    assert!(err.contains(s(&csv)), "{err}");
    // A re-run recomputes it and says why; then the run equals the untouched one.
    let (stdout, stderr) = ok(&run(&cfg, &store, &out, &[]));
    assert!(stdout.contains("(3 reused"), "{stdout}");
    assert!(
        stderr.contains("recomputed") && stderr.contains("edited"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(out.join("tamper/per_question.csv")).unwrap(),
        std::fs::read(base.join("tamper/per_question.csv")).unwrap()
    );
    // The record's summary edited instead (a hostile probe: it was reused, and summary.md
    // showed the edited accuracy): recomputed by run, refused by report.
    let json = csv.with_extension("json");
    let text = std::fs::read_to_string(&json).unwrap();
    let edited = text.replacen("\"correct\": ", "\"correct\": 9", 1);
    assert_ne!(edited, text);
    std::fs::write(&json, edited).unwrap();
    let err = failed(&chunkbench(&[
        "report",
        s(&out.join("tamper")),
        "--store",
        s(&store),
    ]));
    assert!(err.contains(s(&json)) && err.contains("edited"), "{err}");
    let (stdout, stderr) = ok(&run(&cfg, &store, &out, &[]));
    assert!(stdout.contains("(3 reused"), "{stdout}");
    assert!(stderr.contains("edited"), "{stderr}");
    assert_eq!(
        std::fs::read(out.join("tamper/summary.md")).unwrap(),
        std::fs::read(base.join("tamper/summary.md")).unwrap()
    );
}

/// Case 4: an embedding server answering all-zero vectors made dense retrieval return nothing
/// with no word (exit 0, 0 words, 0 % accuracy); a component beyond f32 did the same. Now a
/// zero vector is counted per cell and shown (stderr and summary.md), and a value a 32-bit
/// float cannot hold is an error naming it.
#[test]
fn case04_degenerate_vectors_are_counted_and_overflow_is_an_error() {
    fn server(component: &'static str) -> String {
        let url = testkit::serve(move |req| {
            let v: serde_json::Value = serde_json::from_str(&req.body).unwrap_or_default();
            let n = v["input"].as_array().map_or(1, Vec::len);
            // The probe text gets a real vector; every other text `component`s.
            let probe = v["input"][0].as_str() == Some(embed::PROBE_TEXT);
            let data: Vec<String> = (0..n)
                .map(|i| {
                    let x = if probe { "0.5" } else { component };
                    format!(r#"{{"index":{i},"embedding":[{x},{x},{x},{x}]}}"#)
                })
                .collect();
            (
                200,
                format!(r#"{{"data":[{}],"model":"m"}}"#, data.join(",")),
            )
        });
        format!("{url}/v1")
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let body = |url: &str, cache: &str| {
        format!(
            "strategies:\n  f10: {{kind: fixed, unit: words, size: 10}}\nretrievers:\n  dense: {{kind: dense}}\nreaders:\n  lexical: {{kind: lexical}}\nk: [2]\nembedder: {{kind: openai, base_url: \"{url}\", model: m, cache: {cache}}}\n"
        )
    };
    let zero = server("0.0");
    let cfg = config(tmp.path(), "zeros", &body(&zero, s(&tmp.path().join("c1"))));
    let out = tmp.path().join("runs");
    let (_, stderr) = ok(&run(&cfg, &store, &out, &[]));
    assert!(stderr.contains("degenerate"), "{stderr}");
    let md = std::fs::read_to_string(out.join("zeros/summary.md")).unwrap();
    assert!(md.contains("Degenerate vectors"), "{md}");
    let rec: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            std::fs::read_dir(out.join("zeros/cells"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|x| x == "json"))
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(rec["summary"]["degenerate_queries"], 4, "{rec}");
    assert!(
        rec["summary"]["degenerate_passages"].as_u64().unwrap() > 0,
        "{rec}"
    );
    let huge = server("1e39");
    let cfg = config(tmp.path(), "huge", &body(&huge, s(&tmp.path().join("c2"))));
    let err = failed(&run(&cfg, &store, &out, &[]));
    assert!(
        err.contains("not a finite 32-bit float") && err.contains("1e39"),
        "{err}"
    );
}

/// Case 5 and 13: a documents folder with `ln -s . self` imported 41 copies of every file, and
/// one with `sub/up -> ..` never finished; a table imported by a relative and by an absolute
/// path made two manifests of the same bytes (so runs recomputed and `compare` refused).
#[test]
fn case05_13_links_are_followed_once_and_paths_are_not_identity() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(docs.join("sub")).unwrap();
    std::fs::write(docs.join("a.txt"), "Valve V2 was replaced in March.").unwrap();
    std::fs::write(docs.join("sub/b.txt"), "Pump P3 failed in May.").unwrap();
    std::os::unix::fs::symlink(".", docs.join("self")).unwrap();
    std::os::unix::fs::symlink("..", docs.join("sub/up")).unwrap();
    std::os::unix::fs::symlink("a.txt", docs.join("alias.txt")).unwrap();
    let q = tmp.path().join("q.jsonl");
    std::fs::write(
        &q,
        "{\"id\":\"q1\",\"question\":\"Which valve?\",\"options\":[\"V1\",\"V2\"],\"answer\":1}\n",
    )
    .unwrap();
    let import = |name: &str, documents: &str, questions: &str| {
        chunkbench(&[
            "data",
            "import",
            name,
            "--documents",
            documents,
            "--questions",
            questions,
            "--options",
            "options",
            "--answer",
            "answer",
            "--answer-format",
            "index",
            "--store",
            s(&store),
        ])
    };
    let t = std::time::Instant::now();
    let (_, stderr) = ok(&import("folder", s(&docs), s(&q)));
    // A symlink cycle must not make the walk endless: minutes at most, even on a loaded machine.
    assert!(t.elapsed() < std::time::Duration::from_secs(300));
    let ids: Vec<String> = std::fs::read_to_string(store.join("folder/documents.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["a.txt", "sub/b.txt"], "{stderr}");
    assert!(
        stderr.contains("symbolic link") || stderr.contains("a link"),
        "{stderr}"
    );
    // A FIFO in the folder blocked the import forever (a hostile probe), and a link to
    // /dev/zero read until memory ran out: both are refused, naming the file.
    for (name, make) in [("pipe.txt", "fifo"), ("zero.txt", "link")] {
        let odd = tmp.path().join(format!("odd-{make}"));
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::write(odd.join("a.txt"), "Valve V2 was replaced in March.").unwrap();
        if make == "fifo" {
            assert!(std::process::Command::new("mkfifo")
                .arg(odd.join(name))
                .status()
                .unwrap()
                .success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", odd.join(name)).unwrap();
        }
        let o = std::process::Command::new("timeout")
            .arg("60")
            .arg(common::binary())
            .args([
                "data",
                "import",
                "odd",
                "--documents",
                s(&odd),
                "--questions",
                s(&q),
            ])
            .args([
                "--options",
                "options",
                "--answer",
                "answer",
                "--answer-format",
                "index",
            ])
            .args(["--store", s(&store)])
            .output()
            .unwrap();
        let err = failed(&o);
        assert!(
            err.contains(name) && err.contains("not a regular file"),
            "{err}"
        );
    }
    // The same bytes by relative and by absolute path: the same manifest, byte for byte.
    let table = tmp.path().join("d.jsonl");
    std::fs::write(&table, DOCS).unwrap();
    let rel_dir = tmp.path().to_path_buf();
    let o = std::process::Command::new(common::binary())
        .current_dir(&rel_dir)
        .args([
            "data",
            "import",
            "rel",
            "--documents",
            "d.jsonl",
            "--questions",
            "q.jsonl",
            "--options",
            "options",
            "--answer",
            "answer",
            "--answer-format",
            "index",
            "--store",
            s(&store),
        ])
        .output()
        .unwrap();
    ok(&o);
    ok(&import("abs", s(&table), s(&q)));
    let manifest = |n: &str| {
        let mut m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(store.join(n).join("manifest.json")).unwrap())
                .unwrap();
        m["name"] = "x".into();
        m
    };
    assert_eq!(manifest("rel"), manifest("abs"));
}

/// Case 6: `datasets: [toy, "toy/", "./toy"]` ran one dataset three times (tripling the Holm
/// family), and `../outside/x` or an absolute path read outside the store.
#[test]
fn case06_dataset_names_are_canonical_and_stay_in_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    write_dataset(&tmp.path().join("outside"), "x", DOCS, QUESTIONS);
    let base = "strategies:\n  f: {kind: fixed, size: 10}\nretrievers:\n  bm25: {kind: bm25}\nreaders:\n  lexical: {kind: lexical}\n";
    let p = tmp.path().join("three.yaml");
    std::fs::write(
        &p,
        format!("name: three\ndatasets: [toy, \"toy/\", \"./toy\"]\n{base}"),
    )
    .unwrap();
    let err = failed(&chunkbench(&["validate", s(&p), "--store", s(&store)]));
    assert!(err.contains("`toy` is listed twice"), "{err}");
    for bad in [
        "../outside/x",
        &format!("{}", tmp.path().join("outside/x").display()),
    ] {
        let p = tmp.path().join("out.yaml");
        std::fs::write(&p, format!("name: out\ndatasets: [\"{bad}\"]\n{base}")).unwrap();
        let err = failed(&chunkbench(&["validate", s(&p), "--store", s(&store)]));
        assert!(err.contains("is a path, not a dataset name"), "{err}");
    }
    let p = tmp.path().join("one.yaml");
    std::fs::write(&p, format!("name: one\ndatasets: [\"./toy/\"]\n{base}")).unwrap();
    let (stdout, _) = ok(&chunkbench(&["validate", s(&p), "--store", s(&store)]));
    assert!(
        stdout.contains("valid; 2 cells") && stdout.contains(" toy × "),
        "{stdout}"
    );
}

/// Case 7: a `|` in a strategy name shifted every column of summary.md and of compare.md (the
/// pull-request comment).
#[test]
fn case07_names_cannot_break_markdown_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let body = "strategies:\n  \"a|b\": {kind: fixed, unit: words, size: 5}\n  \"c`|*x*\": {kind: fixed, unit: words, size: 10}\nretrievers:\n  \"r|1\": {kind: bm25}\nreaders:\n  \"[l](http://e)\": {kind: lexical}\nk: [1]\nbaseline: \"a|b\"\n";
    let cfg = config(tmp.path(), "pipes", body);
    let (base, cand) = (tmp.path().join("base"), tmp.path().join("cand"));
    ok(&run(&cfg, &store, &base, &[]));
    ok(&run(&cfg, &store, &cand, &[]));
    ok(&chunkbench(&[
        "compare",
        s(&base.join("pipes")),
        s(&cand.join("pipes")),
        "--store",
        s(&store),
    ]));
    for md in [base.join("pipes/summary.md"), cand.join("pipes/compare.md")] {
        let text = std::fs::read_to_string(&md).unwrap();
        // Every row of a table has as many cells as its header.
        let mut header: Option<usize> = None;
        for line in text.lines() {
            if !line.starts_with('|') {
                header = None;
                continue;
            }
            let mut n = 0;
            let mut prev = ' ';
            for c in line.chars() {
                if c == '|' && prev != '\\' {
                    n += 1;
                }
                prev = c;
            }
            match header {
                None => header = Some(n),
                Some(h) => assert_eq!(n, h, "{}: {line}", md.display()),
            }
        }
        // The reader's name `[l](http://e)` is never a link: escaped, or in a code span.
        for (i, _) in text.match_indices("[l](http://e)") {
            let before = text[..i].chars().next_back();
            assert!(
                matches!(before, Some('`') | Some('\\')),
                "a link at {i}: {text}"
            );
        }
    }
}

/// Case 8: `chunkbench chunk --unit tokens` left trailing text the tokenizer drops (control
/// characters, a lone combining mark) in no chunk, and recursive emitted a chunk of zero-width
/// spaces (no word).
#[test]
fn case08_every_character_is_in_a_chunk_and_no_chunk_is_blank() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("t.txt");
    // Text MiniLM's tokenizer drops (a control character, a combining mark, zero-width
    // spaces) inside and at the end, and a paragraph of nothing but zero-width spaces.
    let text = "alpha beta gamma delta\u{1}\u{301}\n\n\u{200B}\u{200B}\n\nepsilon zeta\u{1}\u{301}\u{200B}";
    std::fs::write(&f, text).unwrap();
    for (strategy, unit, size) in [
        ("fixed", "tokens", "3"),
        ("fixed", "tokens", "2"),
        ("recursive", "tokens", "2"),
        ("recursive", "chars", "8"),
    ] {
        let strategy = format!("{strategy} ({unit}, {size})");
        let o = chunkbench(&[
            "chunk",
            s(&f),
            "--strategy",
            strategy.split(' ').next().unwrap(),
            "--unit",
            unit,
            "--size",
            size,
        ]);
        let (stdout, _) = ok(&o);
        let spans: Vec<(usize, usize, usize)> = stdout
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["start"].as_u64().unwrap() as usize,
                    v["end"].as_u64().unwrap() as usize,
                    v["words"].as_u64().unwrap() as usize,
                )
            })
            .collect();
        assert!(
            spans.iter().all(|&(_, _, w)| w > 0),
            "{strategy}: {spans:?}"
        );
        for (i, c) in text.char_indices() {
            if !chunker::is_word_separator(c) {
                assert!(
                    spans.iter().any(|&(a, b, _)| a <= i && i < b),
                    "{strategy}: {c:?} at {i} in no chunk: {spans:?}"
                );
            }
        }
    }
}

/// Case 9: a `spans` file's empty chunk (`start == end`) and whitespace-only chunk were indexed
/// and filled top-k slots.
#[test]
fn case09_empty_chunks_are_errors_and_blank_chunks_are_not_indexed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let spans = tmp.path().join("spans.jsonl");
    let cfg = config(
        tmp.path(),
        "spans",
        &format!(
            "strategies:\n  s: {{kind: spans, file: {}}}\nretrievers:\n  bm25: {{kind: bm25}}\nreaders:\n  lexical: {{kind: lexical}}\nk: [3]\n",
            spans.display()
        ),
    );
    let out = tmp.path().join("runs");
    std::fs::write(
        &spans,
        "{\"doc_id\":\"d1\",\"start\":0,\"end\":46}\n{\"doc_id\":\"d1\",\"start\":46,\"end\":46}\n",
    )
    .unwrap();
    let err = failed(&run(&cfg, &store, &out, &[]));
    assert!(err.contains("line 2: empty chunk"), "{err}");
    std::fs::write(
        &spans,
        "{\"doc_id\":\"d1\",\"start\":0,\"end\":46}\n{\"doc_id\":\"d1\",\"start\":46,\"end\":47}\n{\"doc_id\":\"d2\",\"text\":\"Pump P3 failed in May\"}\n{\"doc_id\":\"d3\",\"text\":\"Fan F2 was replaced in July\"}\n",
    )
    .unwrap();
    let (_, stderr) = ok(&run(&cfg, &store, &out, &[]));
    assert!(stderr.contains("1 chunks held only whitespace"), "{stderr}");
    for r in read_csv(&out.join("spans/per_question.csv")) {
        assert!(!r["passages"].contains("d1:46-47"), "{r:?}");
    }
}

/// An OpenAI-compatible server for the reader tests: `GET /models` lists one model; a chat
/// request is answered by `reply`, given the request's Authorization header.
fn chat_server(reply: fn(Option<&str>) -> (u16, String)) -> String {
    let url = testkit::serve(move |req| {
        if req.url.ends_with("/models") {
            return (
                200,
                r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#.to_string(),
            );
        }
        let (status, content) = reply(req.authorization.as_deref());
        if status != 200 {
            return (status, content);
        }
        (
            200,
            serde_json::json!({"id": "x", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}]})
            .to_string(),
        )
    });
    format!("{url}/v1")
}

fn reader_config(dir: &Path, name: &str, url: &str, cache: &str) -> PathBuf {
    config(
        dir,
        name,
        &format!(
            "strategies:\n  f10: {{kind: fixed, unit: words, size: 10}}\nretrievers:\n  bm25: {{kind: bm25}}\nreaders:\n  server: {{kind: openai, cache: {cache}, openai: {{base_url: \"{url}\", model: m, logprobs: off, max_retries: 0, api_key_env: HOSTILE_TEST_KEY}}}}\nk: [2]\n"
        ),
    )
}

const KEY: &str = "sk-hostile-0123456789abcdef";

/// Case 10 and 17: an invalid reply was stored with `choice = 0` (option A), so `choice ==
/// gold` counted it correct; a server echoing the bearer token put the key on stderr (403) and,
/// in a reply, in per_question.csv/parquet, the cells, report.html and the response cache.
#[test]
fn case10_17_invalid_replies_choose_nothing_and_the_key_is_never_written() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let out = tmp.path().join("runs");
    let env = [("HOSTILE_TEST_KEY", KEY)];
    let run_env = |cfg: &Path| {
        chunkbench_env(
            &["run", s(cfg), "--store", s(&store), "--output", s(&out)],
            &env,
        )
    };
    // A 403 quoting the Authorization header.
    let url = chat_server(|auth| {
        (
            403,
            format!("{{\"error\": \"bad key: {}\"}}", auth.unwrap_or("")),
        )
    });
    let cfg = reader_config(tmp.path(), "denied", &url, "never");
    let o = run_env(&cfg);
    let err = failed(&o);
    assert!(err.contains("403") && err.contains("<redacted>"), "{err}");
    assert!(!err.contains(KEY) && !err.contains(&KEY[..12]), "{err}");
    // A reply repeating the key, which no rule reads as a letter: invalid.
    let url = chat_server(|auth| {
        (
            200,
            format!(
                "unsure; token {}",
                auth.unwrap_or("").trim_start_matches("Bearer ")
            ),
        )
    });
    let cfg = reader_config(tmp.path(), "echo", &url, "read-write");
    ok(&run_env(&cfg));
    for r in read_csv(&out.join("echo/per_question.csv")) {
        assert_eq!(r["invalid"], "1", "{r:?}");
        assert_eq!(r["choice"], "", "an invalid reply chose nothing: {r:?}");
        assert!(r["reply"].contains("<redacted>"), "{r:?}");
    }
    assert_key_in_no_file(vec![out.join("echo"), workspace().join(".cache/responses")]);
}

/// Asserts that no file under `paths` (files or directories, walked) holds [`KEY`].
fn assert_key_in_no_file(mut paths: Vec<PathBuf>) {
    while let Some(p) = paths.pop() {
        if p.is_dir() {
            paths.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if let Ok(bytes) = std::fs::read(&p) {
            let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
            assert!(!found, "the key is in {}", p.display());
        }
    }
}

/// Case 11: `output` equal to the store made a run named like a dataset overwrite that
/// dataset's manifest.json (the dataset no longer loaded).
#[test]
fn case11_a_run_never_writes_into_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let ds = write_dataset(&store, "toy", DOCS, QUESTIONS);
    let before = std::fs::read(ds.join("manifest.json")).unwrap();
    let cfg = config(tmp.path(), "toy", FIXED);
    let err = failed(&run(&cfg, &store, &store, &[]));
    assert!(err.contains("dataset store"), "{err}");
    assert_eq!(std::fs::read(ds.join("manifest.json")).unwrap(), before);
    let err = failed(&run(&cfg, &store, &ds, &[]));
    assert!(err.contains("inside the dataset store"), "{err}");
    let err = failed(&chunkbench(&[
        "validate",
        s(&cfg),
        "--store",
        s(&store),
        "--set",
        &format!("output={}", store.display()),
    ]));
    assert!(err.contains("dataset store"), "{err}");
    assert_eq!(std::fs::read(ds.join("manifest.json")).unwrap(), before);
    ok(&chunkbench(&["ls", "datasets", "--store", s(&store)]));
}

/// Case 12 and 20: `data import` panicked (exit 101) on a JSONL integer ≥ 2^63, even in a
/// column no flag maps; it stopped at the first bad row; an excerpt that differs from its
/// document only in whitespace got no hint.
#[test]
fn case12_20_import_reads_any_integer_and_reports_every_bad_row() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let docs = tmp.path().join("docs.jsonl");
    std::fs::write(
        &docs,
        "{\"id\": \"d1\", \"text\": \"Valve V2 was replaced\\nin March.\", \"views\": 123456789012345678901234567890, \"likes\": 18446744073709551615}\n{\"id\": \"d2\", \"text\": \"Pump P3 failed in May.\", \"views\": 9223372036854775808, \"likes\": 9223372036854775808}\n",
    )
    .unwrap();
    let q = tmp.path().join("q.jsonl");
    let import = |q: &Path| {
        chunkbench(&[
            "data",
            "import",
            "t",
            "--documents",
            s(&docs),
            "--questions",
            s(q),
            "--evidence-text",
            "excerpt",
            "--answers",
            "answers",
            "--store",
            s(&store),
        ])
    };
    std::fs::write(
        &q,
        "{\"id\":\"q1\",\"question\":\"Which valve?\",\"excerpt\":\"Valve V2 was replaced in March.\",\"answers\":[\"V2\"]}\n{\"id\":\"q2\",\"question\":\"When?\",\"excerpt\":\"not in any document\",\"answers\":[\"May\"]}\n{\"id\":\"q2\",\"question\":\"Again?\",\"excerpt\":\"Pump P3 failed\",\"answers\":[\"P3\"]}\n",
    )
    .unwrap();
    let err = failed(&import(&q));
    assert!(err.contains("3 of 3 rows have problems"), "{err}");
    assert!(
        err.contains("row 1") && err.contains("row 2") && err.contains("row 3"),
        "{err}"
    );
    assert!(
        err.contains("when whitespace is ignored") && err.contains("`d1`"),
        "the whitespace-only difference is pointed out: {err}"
    );
    std::fs::write(
        &q,
        "{\"id\":\"q1\",\"question\":\"Which valve?\",\"excerpt\":\"Valve V2 was replaced\\nin March.\",\"answers\":[\"V2\"]}\n",
    )
    .unwrap();
    ok(&import(&q));
    // A huge integer in a mapped column is an error naming the column and line.
    let err = failed(&chunkbench(&[
        "data",
        "import",
        "u",
        "--documents",
        s(&docs),
        "--doc-id",
        "views",
        "--questions",
        s(&q),
        "--evidence-text",
        "excerpt",
        "--answers",
        "answers",
        "--store",
        s(&store),
    ]));
    assert!(err.contains("`views`") && err.contains("line 1"), "{err}");
}

/// Case 15: `kill -9` during an import left `.NAME.importing-PID` directories that `ls
/// datasets` listed as more copies of NAME.
#[test]
fn case15_work_directories_of_a_killed_import_are_not_datasets() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    // What a killed import leaves: a full dataset under a hidden name, its process gone.
    let dead = store.join(".toy.importing-999999999");
    copy_dir(&store.join("toy"), &dead);
    let (stdout, _) = ok(&chunkbench(&["ls", "datasets", "--store", s(&store)]));
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let q = tmp.path().join("q.jsonl");
    std::fs::write(
        &q,
        "{\"id\":\"q1\",\"question\":\"Which valve?\",\"options\":[\"V1\",\"V2\"],\"answer\":1}\n",
    )
    .unwrap();
    let docs = tmp.path().join("d.jsonl");
    std::fs::write(&docs, DOCS).unwrap();
    let (_, stderr) = ok(&chunkbench(&[
        "data",
        "import",
        "toy",
        "--force",
        "--documents",
        s(&docs),
        "--questions",
        s(&q),
        "--options",
        "options",
        "--answer",
        "answer",
        "--answer-format",
        "index",
        "--store",
        s(&store),
    ]));
    assert!(!dead.exists(), "{stderr}");
    assert!(stderr.contains("killed before it finished"), "{stderr}");
}

/// Case 16: a truncated cache database made `run`, `cache stats --check` and `cache prune
/// --corrupt` fail with "database disk image is malformed" and no way forward.
#[test]
fn case16_a_truncated_cache_is_set_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let out = tmp.path().join("runs");
    let url = chat_server(|_| (200, "B".to_string()));
    let cfg = config(
        tmp.path(),
        "cached",
        &format!(
            "strategies:\n  f10: {{kind: fixed, unit: words, size: 10}}\n  f5: {{kind: fixed, unit: words, size: 5}}\nretrievers:\n  bm25: {{kind: bm25}}\nreaders:\n  server: {{kind: openai, openai: {{base_url: \"{url}\", model: m, logprobs: off, max_retries: 0}}}}\nk: [1, 2]\ncost_tokenizer: null\n"
        ),
    );
    // The response cache lives under the working directory (.cache/responses): run from a
    // directory of the test's own.
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let cmd = |args: &[&str]| {
        std::process::Command::new(common::binary())
            .current_dir(&cwd)
            .args(args)
            .output()
            .unwrap()
    };
    let run_args = ["run", s(&cfg), "--store", s(&store), "--output", s(&out)];
    ok(&cmd(&run_args));
    let db = cwd.join(".cache/responses/responses.sqlite3");
    let len = std::fs::metadata(&db).unwrap().len();
    assert!(len > 8192, "{len}");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let stats = cmd(&["cache", "stats", "--check", "--which", "responses"]);
    let err = failed(&stats);
    let stdout = String::from_utf8_lossy(&stats.stdout);
    assert!(
        stdout.contains("DAMAGED") && stdout.contains("prune --corrupt"),
        "{stdout}"
    );
    assert!(err.contains("damaged"), "{err}");
    let (stdout, _) = ok(&cmd(&[
        "cache",
        "prune",
        "--corrupt",
        "--which",
        "responses",
    ]));
    assert!(stdout.contains("set aside"), "{stdout}");
    ok(&cmd(&["cache", "stats", "--check", "--which", "responses"]));
    // Damaged again: a run sets it aside by itself and goes on.
    std::fs::write(&db, vec![b'x'; 10_000]).unwrap();
    let out2 = tmp.path().join("runs2");
    let (_, stderr) = ok(&cmd(&[
        "run",
        s(&cfg),
        "--store",
        s(&store),
        "--output",
        s(&out2),
    ]));
    assert!(
        stderr.contains("is damaged") && stderr.contains("moved aside"),
        "{stderr}"
    );
}

/// Case 18: a typo in the third strategy (or the second retriever) was reported at the first
/// entry's line.
#[test]
fn case18_yaml_errors_name_the_entry_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        tmp.path(),
        "typo",
        "strategies:\n  a: {kind: fixed, size: 100}\n  b: {kind: fixed, size: 200}\n  c:\n    kind: fixed\n    sise: 300\nretrievers:\n  bm25: {kind: bm25}\nreaders:\n  lexical: {kind: lexical}\n",
    );
    let err = failed(&chunkbench(&["validate", s(&cfg)]));
    assert!(
        err.contains("strategies.c: unknown field `sise`") && err.contains("line 8"),
        "{err}"
    );
}

/// Case 19: `validate` passed a retrieval-only dataset with a reader, which `run` refused at
/// once.
#[test]
fn case19_validate_refuses_what_run_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(
        &store,
        "toy",
        DOCS,
        "{\"id\":\"q1\",\"question\":\"Which valve was replaced?\",\"answers\":[\"V2\"]}\n",
    );
    let cfg = config(tmp.path(), "ro", FIXED);
    let err = failed(&chunkbench(&["validate", s(&cfg), "--store", s(&store)]));
    assert!(
        err.contains("retrieval-only") && err.contains("kind: none"),
        "{err}"
    );
}

/// Case 22: `CHUNKBENCH_MODELS` was ignored by `run` and `validate`, and a local model's path
/// was part of the cell id, so moving the models directory recomputed everything.
#[test]
fn case22_the_models_directory_moves_without_recomputing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let moved = tmp.path().join("moved-models");
    copy_dir(&minilm(), &moved.join("all-MiniLM-L6-v2"));
    let cfg = config(
        tmp.path(),
        "dense",
        &format!(
            "strategies:\n  f10: {{kind: fixed, unit: words, size: 10}}\nretrievers:\n  dense: {{kind: dense}}\nreaders:\n  lexical: {{kind: lexical}}\nk: [2]\nembedder: {{cache: {}}}\n",
            tmp.path().join("cache").display()
        ),
    );
    let out = tmp.path().join("runs");
    let args = ["run", s(&cfg), "--store", s(&store), "--output", s(&out)];
    ok(&chunkbench(&args));
    let (stdout, _) = ok(&chunkbench_env(&args, &[("CHUNKBENCH_MODELS", s(&moved))]));
    assert!(
        stdout.contains("(1 reused"),
        "the same content reuses: {stdout}"
    );
    // The variable is honoured: a models directory without the model fails validation.
    let empty = tmp.path().join("empty-models");
    std::fs::create_dir_all(&empty).unwrap();
    let o = chunkbench_env(
        &["validate", s(&cfg), "--store", s(&store)],
        &[("CHUNKBENCH_MODELS", s(&empty))],
    );
    let err = failed(&o);
    assert!(err.contains(s(&empty)), "{err}");
}

// Issue 56 (Trust III): one run per directory, secrets that never touch an answer.

/// Issue 56 case 1: two runs into one output directory both exited 0, config.json saying one
/// config and per_question.csv holding the other's cells; two imports of one NAME at once
/// likewise. Every writer of a run directory (`run`, `merge`, `report`) and of a dataset
/// (`data import`, `stitch`, `generate`, `fetch`) now holds a lock, and the second fails at
/// once naming the first's pid.
#[test]
fn issue56_case01_one_writer_per_run_directory_and_per_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let out = tmp.path().join("runs");
    let cfg = config(tmp.path(), "locked", FIXED);
    ok(&run(&cfg, &store, &out, &[]));
    let run_dir = out.join("locked");
    assert!(
        !run_dir.join(".chunkbench.lock").exists(),
        "the lock goes with its run"
    );
    let me = format!("pid {}", std::process::id());
    {
        // This test process plays the first writer.
        let _first = evaluator::run::lock_run_dir(&run_dir).unwrap();
        let err = failed(&run(&cfg, &store, &out, &[]));
        assert!(
            err.contains("is being written by another chunkbench process"),
            "{err}"
        );
        assert!(
            err.contains(&me) && err.contains("another directory"),
            "{err}"
        );
        let err = failed(&chunkbench(&["report", s(&run_dir), "--store", s(&store)]));
        assert!(err.contains(&me), "{err}");
        let merged = out.join("merged");
        let _other = evaluator::run::lock_run_dir(&merged).unwrap();
        let err = failed(&chunkbench(&[
            "merge",
            s(&merged),
            s(&run_dir),
            "--store",
            s(&store),
        ]));
        assert!(err.contains(&me), "{err}");
    }
    ok(&run(&cfg, &store, &out, &[]));
    // The dataset store: an import of a NAME another process is writing.
    let docs = tmp.path().join("d.jsonl");
    std::fs::write(&docs, DOCS).unwrap();
    let q = tmp.path().join("q.jsonl");
    std::fs::write(&q, QUESTIONS).unwrap();
    let import = || import_toy("toy2", &docs, &q, &store);
    {
        let _first = datasets::io::StagedDataset::begin(&store, "toy2", &mut Vec::new()).unwrap();
        let err = failed(&import());
        assert!(
            err.contains("dataset toy2 of") && err.contains(&me),
            "{err}"
        );
    }
    ok(&import());
    let left: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(
        left.is_empty(),
        "no lock or work directory is left: {left:?}"
    );
}

/// `data import NAME` of JSON-lines documents and multiple-choice questions (`options`,
/// `answer` as an index) into `store`.
fn import_toy(name: &str, docs: &Path, questions: &Path, store: &Path) -> Output {
    chunkbench(&[
        "data",
        "import",
        name,
        "--documents",
        s(docs),
        "--questions",
        s(questions),
        "--options",
        "options",
        "--answer",
        "answer",
        "--answer-format",
        "index",
        "--store",
        s(store),
    ])
}

/// Issue 56 case 2: with a placeholder key (`EMPTY`, common for local servers) the reply "the
/// empty set" was redacted to "the <redacted> set" before parsing and scored invalid.
#[test]
fn issue56_case02_a_placeholder_key_never_rewrites_a_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(
        &store,
        "toy",
        DOCS,
        "{\"id\":\"q1\",\"question\":\"Which set has no members?\",\"options\":[\"the empty set\",\"the full set\",\"a singleton\",\"a pair\"],\"answer\":0}\n",
    );
    let out = tmp.path().join("runs");
    let url = chat_server(|_| (200, "the empty set".to_string()));
    let cfg = reader_config(tmp.path(), "placeholder", &url, "never");
    let o = chunkbench_env(
        &["run", s(&cfg), "--store", s(&store), "--output", s(&out)],
        &[("HOSTILE_TEST_KEY", "EMPTY")],
    );
    let (_, stderr) = ok(&o);
    assert!(stderr.contains("holds a placeholder key"), "{stderr}");
    for r in read_csv(&out.join("placeholder/per_question.csv")) {
        assert_eq!(
            (r["invalid"].as_str(), r["choice"].as_str()),
            ("0", "0"),
            "{r:?}"
        );
        assert!(r["reply"].contains("the empty set"), "{r:?}");
    }
}

/// Issue 56 case 3: a key echoed with `\uXXXX` JSON escapes passed the redaction (which ran
/// before decoding) into per_question.csv, the cells, report.html and the response cache.
#[test]
fn issue56_case03_a_key_echoed_in_json_escapes_is_never_written() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let out = tmp.path().join("runs");
    let url = testkit::serve(|req| {
        if req.url.ends_with("/models") {
            return (
                200,
                r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#.into(),
            );
        }
        let key = req
            .authorization
            .as_deref()
            .unwrap_or("")
            .trim_start_matches("Bearer ");
        let escaped: String = key
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        (
            200,
            format!(
                "{{\"id\":\"x\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"finish_reason\":\"stop\",\"message\":{{\"role\":\"assistant\",\"content\":\"Answer: B; token {escaped}\"}}}}]}}"
            ),
        )
    });
    let cfg = reader_config(tmp.path(), "escaped", &format!("{url}/v1"), "read-write");
    let o = chunkbench_env(
        &["run", s(&cfg), "--store", s(&store), "--output", s(&out)],
        &[("HOSTILE_TEST_KEY", KEY)],
    );
    ok(&o);
    for r in read_csv(&out.join("escaped/per_question.csv")) {
        // Parsed from the reply as sent (B), shown redacted.
        assert_eq!(r["choice"], "1", "{r:?}");
        assert!(r["reply"].contains("<redacted>"), "{r:?}");
    }
    assert_key_in_no_file(vec![
        out.join("escaped"),
        workspace().join(".cache/responses"),
    ]);
}

/// Issue 56 case 7: a blank question, a blank option and two identical options (one of them
/// the gold answer, which the lexical reader can then never choose alone) were imported.
#[test]
fn issue56_case07_blank_cells_and_a_duplicated_gold_option_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let docs = tmp.path().join("d.jsonl");
    std::fs::write(&docs, DOCS).unwrap();
    let q = tmp.path().join("q.jsonl");
    let import = |name: &str| import_toy(name, &docs, &q, &store);
    std::fs::write(
        &q,
        concat!(
            "{\"id\":\"q1\",\"question\":\"   \",\"options\":[\"V1\",\"V2\"],\"answer\":1}\n",
            "{\"id\":\"q2\",\"question\":\"Which valve?\",\"options\":[\"V1\",\" \"],\"answer\":0}\n",
            "{\"id\":\"q3\",\"question\":\"Which valve?\",\"options\":[\"V1\",\"v1 \",\"V3\"],\"answer\":1}\n",
        ),
    )
    .unwrap();
    let err = failed(&import("blank"));
    assert!(err.contains("empty, blank or missing"), "{err}");
    assert!(err.contains("item 2: empty, blank or null"), "{err}");
    assert!(
        err.contains("options A and B are the same text") && err.contains("drop the row"),
        "{err}"
    );
    assert!(!store.join("blank").exists());
    // Two equal distractors: a fair question still, imported with a warning and a count.
    std::fs::write(
        &q,
        "{\"id\":\"q1\",\"question\":\"Which valve?\",\"options\":[\"V2\",\"V3\",\"V3\"],\"answer\":0}\n",
    )
    .unwrap();
    let (_, stderr) = ok(&import("dup"));
    assert!(
        stderr.contains("repeat an option text") && stderr.contains("rows 1"),
        "{stderr}"
    );
    let m: DatasetManifest =
        serde_json::from_str(&std::fs::read_to_string(store.join("dup/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(m.counts["questions_with_duplicate_options"], 1);
}

/// Issue 56 case 11: `cache prune --identity ''` selected every entry; case 16: `--set name=`
/// made a run named `null`, and names holding line separators or bidirectional overrides
/// were accepted.
#[test]
fn issue56_case11_16_empty_filters_and_invisible_names_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let err = failed(&chunkbench(&[
        "cache",
        "prune",
        "--identity",
        "",
        "--dry-run",
        "--which",
        "generations",
        "--generations",
        s(tmp.path()),
    ]));
    assert!(err.contains("an empty TEXT matches every entry"), "{err}");
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let cfg = config(tmp.path(), "names", FIXED);
    let err = failed(&chunkbench(&[
        "validate",
        s(&cfg),
        "--store",
        s(&store),
        "--set",
        "name=",
    ]));
    assert!(err.contains("`name=` gives no value"), "{err}");
    // YAML escapes for U+2028 (line separator) and U+202E (right-to-left override).
    for bad in ["a\\u2028b", "evil\\u202Ecod", "   "] {
        let err = failed(&chunkbench(&[
            "validate",
            s(&cfg),
            "--store",
            s(&store),
            "--set",
            &format!("name=\"{bad}\""),
        ]));
        assert!(
            err.contains("must be a plain directory name"),
            "{bad:?}: {err}"
        );
    }
    let renamed = config(tmp.path(), "entry", &FIXED.replace("f5:", "\"f\\u202E5\":"));
    let err = failed(&chunkbench(&[
        "validate",
        s(&renamed),
        "--store",
        s(&store),
    ]));
    assert!(err.contains("bidirectional"), "{err}");
    // A YAML merge key: refused naming its line and the cause (not applied by chunkbench).
    let merged = config(
        tmp.path(),
        "merged",
        "strategies:\n  base: &base {kind: fixed, unit: words, size: 5}\n  g: {<<: *base, size: 20}\nretrievers:\n  bm25: {kind: bm25}\nk: [1]\n",
    );
    let err = failed(&chunkbench(&["validate", s(&merged), "--store", s(&store)]));
    assert!(err.contains("line 5: YAML merge keys"), "{err}");
}

/// Issue 56 case 9: contextual and llm-boundaries read replies up to the 256 MiB body limit
/// and cached and indexed them whole (4 MB "contexts" under "100 tokens at most"). A reply
/// longer than `max_tokens` can make is cut at 32 bytes a token (4 KiB at least), counted and
/// shown; the generation cache holds the cut reply.
#[test]
fn issue56_case09_replies_past_max_tokens_are_cut_counted_and_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let out = tmp.path().join("runs");
    let url = chat_server(|_| (200, "context ".repeat(250_000)));
    let cfg = config(
        tmp.path(),
        "long",
        &format!("strategies:\n  ctx: {{kind: contextual, over: {{kind: fixed, unit: words, size: 10}}, llm: {{base_url: '{url}', model: m}}}}\nretrievers:\n  bm25: {{kind: bm25}}\nreaders:\n  lexical: {{kind: lexical}}\nk: [1]\n"),
    );
    let cache = tmp.path().join("generations");
    let (_, stderr) = ok(&chunkbench_env(
        &["run", s(&cfg), "--store", s(&store), "--output", s(&out)],
        &[("CHUNKBENCH_GENERATION_CACHE", s(&cache))],
    ));
    let md = std::fs::read_to_string(out.join("long/summary.md")).unwrap();
    assert!(
        md.contains("model replies were longer than `max_tokens`"),
        "{md}\n{stderr}"
    );
    let bytes: u64 = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    // 2 MB a reply before; each now kept to 4 KiB (100 tokens × 32 bytes < 4 KiB).
    assert!(bytes < 1 << 20, "the generation cache holds {bytes} bytes");
    let (stats, _) = ok(&chunkbench(&[
        "cache",
        "stats",
        "--which",
        "generations",
        "--generations",
        s(&cache),
        "--check",
    ]));
    assert!(stats.contains("generations"), "{stats}");
}

/// Issue 56 case 10: 2,000 overlapping near-whole-document spans of one 847 kB document took
/// 2.1 GB and 52 s (BM25), over 10 minutes dense: every passage's text was copied, and the
/// embedder tokenized each whole before truncating it to its window. Passages are now kept
/// as spans (crates/retriever/tests/memory.rs measures that), the embedder tokenizes a
/// prefix (`bert::head_tests`), and the run warns with the figure.
#[test]
fn issue56_case10_overlapping_spans_are_warned_with_the_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let text = "Pump P3 failed in May and the valve stayed in service all year. ".repeat(4_000);
    let docs = format!(
        "{}\n",
        serde_json::json!({"id": "d1", "title": "log", "text": text})
    );
    write_dataset(&store, "toy", &docs, QUESTIONS);
    let spans = tmp.path().join("spans.jsonl");
    let n = text.len();
    let lines: String = (0..200)
        .map(|i| {
            format!(
                "{{\"doc_id\":\"d1\",\"start\":{},\"end\":{}}}\n",
                i * 64,
                n - i * 64
            )
        })
        .collect();
    std::fs::write(&spans, lines).unwrap();
    let cfg = config(
        tmp.path(),
        "overlap",
        &format!(
            "strategies:\n  s: {{kind: spans, file: {}}}\nretrievers:\n  bm25: {{kind: bm25}}\n  dense: {{kind: dense}}\nreaders:\n  lexical: {{kind: lexical}}\nk: [1]\nembedder: {{cache: {}}}\n",
            spans.display(),
            tmp.path().join("cache").display()
        ),
    );
    let out = tmp.path().join("runs");
    let (_, stderr) = ok(&run(&cfg, &store, &out, &[]));
    assert!(
        stderr.contains("the passages hold 48.7 MB of text, 190× the 0.3 MB of their documents"),
        "{stderr}"
    );
    let rows = read_csv(&out.join("overlap/per_question.csv"));
    assert_eq!(rows.len(), 2 * 4, "{rows:?}");
}

/// Issue 56 case 14: serde's internals reached the user ("expected a Value::Tagged enum",
/// "expected a YAML tag starting with '!'"); the message names the field and its values.
#[test]
fn issue56_case14_a_wrong_type_names_the_fields_values() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    for (name, body, field, values) in [
        (
            "logprobs",
            "strategies:\n  f: {kind: fixed, unit: words, size: 10}\nretrievers:\n  b: {kind: bm25}\nreaders:\n  r: {kind: openai, openai: {base_url: 'http://127.0.0.1:9/v1', model: m, logprobs: false}}\nk: [1]\n",
            "openai.logprobs",
            "`auto`, `on`, `off`",
        ),
        (
            "resample",
            "strategies:\n  f: {kind: fixed, unit: words, size: 10}\nretrievers:\n  b: {kind: bm25}\nk: [1]\nresample: [question]\n",
            "resample",
            "`question`, `document`, `subject`",
        ),
    ] {
        let cfg = config(tmp.path(), name, body);
        let err = failed(&chunkbench(&["validate", s(&cfg), "--store", s(&store)]));
        assert!(!err.contains("Value::Tagged") && !err.contains("YAML tag"), "{err}");
        assert!(err.contains(field) && err.contains(values), "{err}");
    }
    // An integer past 64 bits, in the file and through --set.
    let body = "strategies:\n  f: {kind: fixed, unit: words, size: 10}\nretrievers:\n  b: {kind: bm25}\nreaders:\n  l: {kind: lexical}\nk: [1]\n";
    let cfg = config(
        tmp.path(),
        "big",
        &format!("{body}budget: {{unit: words, sizes: [18446744073709551616]}}\n"),
    );
    let err = failed(&chunkbench(&["validate", s(&cfg), "--store", s(&store)]));
    assert!(
        err.contains("budget.sizes")
            && err.contains("too large")
            && err.contains("18446744073709551615"),
        "{err}"
    );
    let cfg = config(tmp.path(), "set", body);
    let err = failed(&chunkbench(&[
        "validate",
        s(&cfg),
        "--store",
        s(&store),
        "--set",
        "budget={unit: words, sizes: [18446744073709551616]}",
    ]));
    assert!(
        err.contains("too large") && !err.contains("any YAML value"),
        "{err}"
    );
}

/// Issue 56 case 13: an error inside a nested entry (`over:`, `pieces:`) lost its cause
/// ("field `strategies.y`: field `over`") or was blamed on the wrapper ("it is a setting of
/// `fixed`, `recursive`, …"). The whole chain is printed, with the inner entry's own hint.
#[test]
fn issue56_case13_errors_inside_nested_entries_keep_their_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let tail = "retrievers:\n  b: {kind: bm25}\nk: [1]\nreaders:\n  l: {kind: lexical}\n";
    for (name, entry, want) in [
        ("overlap", "{kind: headers, over: {kind: fixed, unit: words, size: 10, overlap: 20}}", &["field `over`", "overlap"][..]),
        ("misspelt", "{kind: headers, over: {kind: fixed, unit: words, size: 10, sise: 20}}", &["field `over`", "`sise`", "did you mean `size`"][..]),
        ("pieces", "{kind: llm-boundaries, protocol: chroma, llm: {base_url: 'http://127.0.0.1:9/v1', model: m}, pieces: {kind: fixed, size: 5, sise: 3}}", &["field `pieces`", "`sise`"][..]),
        ("kind", "{kind: contextual, over: {kind: fixd, size: 5}, llm: {base_url: 'http://127.0.0.1:9/v1', model: m}}", &["field `over`", "`fixd`", "did you mean `fixed`"][..]),
    ] {
        let cfg = config(tmp.path(), name, &format!("strategies:\n  y: {entry}\n{tail}"));
        let err = failed(&chunkbench(&["validate", s(&cfg), "--store", s(&store)]));
        for w in want {
            assert!(err.contains(w), "{name}: {w}: {err}");
        }
        assert!(!err.contains("does not apply to kind `headers`"), "{err}");
    }
}

/// Issue 56 case 12: `validate` said "valid" for a `kind: python` entry this process cannot
/// compute (no finished cells) and for `late` with a window past the model's 512 positions;
/// `run` failed on them only after computing the other cells. Both are found before any cell.
#[test]
fn issue56_case12_validate_refuses_what_run_would_refuse_later() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    write_dataset(&store, "toy", DOCS, QUESTIONS);
    let cfg = config(
        tmp.path(),
        "late",
        &format!(
            "strategies:\n  f: {{kind: fixed, unit: words, size: 10}}\n  py: {{kind: python, object: mod.Chunker, fingerprint: {}}}\n  wide: {{kind: late, over: {{kind: fixed, unit: words, size: 10}}, window: 100000}}\nretrievers:\n  bm25: {{kind: bm25}}\nreaders:\n  lexical: {{kind: lexical}}\nk: [1]\n",
            "ab".repeat(32)
        ),
    );
    let err = failed(&chunkbench(&["validate", s(&cfg), "--store", s(&store)]));
    assert!(
        err.contains("strategy `py`: 1 of its 1 cells are not finished"),
        "{err}"
    );
    assert!(
        err.contains("strategy `wide`: field `window`: 100000 is more than the embedder's 512"),
        "{err}"
    );
    let out = tmp.path().join("runs");
    let err = failed(&run(&cfg, &store, &out, &[]));
    assert!(
        err.contains("the run cannot start") && err.contains("strategy `py`"),
        "{err}"
    );
    assert!(
        !out.join("late/cells").exists()
            || std::fs::read_dir(out.join("late/cells"))
                .unwrap()
                .next()
                .is_none(),
        "no cell was computed"
    );
}
