//! End-to-end tests of the `chunkbench` binary on the real SciQ data.
//!
//! They need the converted datasets in the store (`data/` at the workspace root, or
//! `CHUNKBENCH_STORE`); `scripts/test.sh` (the README's test command) fetches them first.

mod common;

use common::{chunkbench_env as chunkbench, store, workspace};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The quickstart config limited to `limit` questions, written into `dir`.
fn config(dir: &Path, limit: Option<usize>) -> PathBuf {
    let text = std::fs::read_to_string(workspace().join("configs/quickstart.yaml")).unwrap();
    let text = match limit {
        Some(n) => format!("{text}limit: {n}\n"),
        None => text,
    };
    let p = dir.join("quickstart.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(cfg: &Path, out: &Path, envs: &[(&str, &str)]) -> Output {
    let o = chunkbench(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--store",
            store().to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        envs,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

#[test]
fn quickstart_full_run_is_well_above_chance() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path(), None);
    let o = run(&cfg, tmp.path(), &[]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("4 cells"), "{stdout}");
    let summary = std::fs::read_to_string(tmp.path().join("quickstart/summary.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(summary.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(&r[col("n")], "1000");
        let acc: f64 = r[col("accuracy")].parse().unwrap();
        assert!(
            acc > 0.5,
            "accuracy {acc} is not clearly above the 25 % chance level"
        );
        let words: f64 = r[col("words_mean")].parse().unwrap();
        assert!(words > 0.0);
    }
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("quickstart/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["cells"].as_array().unwrap().len(), 4);
    assert_eq!(manifest["datasets"][0]["name"], "sciq");
    assert!(manifest["config_sha256"].as_str().unwrap().len() == 64);
    assert!(manifest["git_commit"].is_string());
    // Plots (PNG + SVG) and the Parquet table are written alongside.
    let run_dir = tmp.path().join("quickstart");
    for f in [
        "per_question.parquet",
        "chunk_stats.csv",
        "plots/accuracy-vs-words--sciq--lexical.png",
        "plots/accuracy-vs-words--sciq--lexical.svg",
        "plots/forest--sciq--lexical.png",
        "plots/chunk-lengths--sciq.png",
    ] {
        let len = std::fs::metadata(run_dir.join(f))
            .map(|m| m.len())
            .unwrap_or(0);
        let min = if f.ends_with(".csv") { 100 } else { 1000 };
        assert!(len > min, "{f} missing or too small ({len} bytes)");
    }
    let png = std::fs::read(run_dir.join("plots/forest--sciq--lexical.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
}

#[test]
fn reruns_and_thread_counts_give_byte_identical_results() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path(), Some(300));
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    run(&cfg, &a, &[("RAYON_NUM_THREADS", "2")]);
    run(&cfg, &b, &[("RAYON_NUM_THREADS", "1")]);
    for f in ["per_question.csv", "summary.csv", "summary.md"] {
        let x = std::fs::read(a.join("quickstart").join(f)).unwrap();
        let y = std::fs::read(b.join("quickstart").join(f)).unwrap();
        assert!(x == y, "{f} differs between runs");
    }
}

#[test]
fn interrupted_run_resumes_to_identical_results() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path(), Some(200));
    run(&cfg, tmp.path(), &[]);
    let dir = tmp.path().join("quickstart");
    let full = std::fs::read(dir.join("per_question.csv")).unwrap();
    // Lose one finished cell and the run-level files, as a kill before assembly would.
    let cell = std::fs::read_dir(dir.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    std::fs::remove_file(&cell).unwrap();
    std::fs::remove_file(dir.join("per_question.csv")).unwrap();
    let o = run(&cfg, tmp.path(), &[]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("3 reused"));
    assert_eq!(std::fs::read(dir.join("per_question.csv")).unwrap(), full);
}

#[test]
fn per_question_rows_have_exact_spans() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path(), Some(50));
    run(&cfg, tmp.path(), &[]);
    let docs: std::collections::HashMap<String, String> =
        std::fs::read_to_string(store().join("sciq/documents.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["id"].as_str().unwrap().to_string(),
                    v["text"].as_str().unwrap().to_string(),
                )
            })
            .collect();
    let mut rdr = csv::Reader::from_path(tmp.path().join("quickstart/per_question.csv")).unwrap();
    let headers = rdr.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let mut n = 0;
    for r in rdr.records() {
        let r = r.unwrap();
        let k: usize = r[col("k")].parse().unwrap();
        let ids: Vec<&str> = r[col("passages")]
            .split(' ')
            .filter(|s| !s.is_empty())
            .collect();
        assert!(ids.len() <= k);
        let mut words = 0;
        for id in ids {
            let (doc, span) = id.rsplit_once(':').unwrap();
            let (s, e) = span.split_once('-').unwrap();
            let (s, e): (usize, usize) = (s.parse().unwrap(), e.parse().unwrap());
            let text = &docs[doc][s..e];
            assert!(!text.trim().is_empty());
            words += text.split_whitespace().count();
        }
        assert_eq!(r[col("words")].parse::<usize>().unwrap(), words);
        n += 1;
    }
    assert_eq!(n, 200);
}

#[test]
fn unknown_config_key_is_named_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(workspace().join("configs/quickstart.yaml"))
        .unwrap()
        .replace("baseline: fixed-100", "baseline: fixed-100\nreaderz: {}");
    let p = tmp.path().join("bad.yaml");
    std::fs::write(&p, &text).unwrap();
    let line = text.lines().position(|l| l.starts_with("readerz")).unwrap() + 1;
    let o = chunkbench(&["validate", p.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.yaml") && err.contains("unknown field `readerz`"),
        "{err}"
    );
    assert!(err.contains(&format!("line {line}")), "{err}");
    assert!(err.contains("did you mean `readers`"), "{err}");
}

#[test]
fn invalid_dataset_line_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("store/sciq");
    std::fs::create_dir_all(&ds).unwrap();
    for f in ["documents.jsonl", "manifest.json"] {
        std::fs::copy(store().join("sciq").join(f), ds.join(f)).unwrap();
    }
    let qs = std::fs::read_to_string(store().join("sciq/questions.jsonl")).unwrap();
    let mut lines: Vec<String> = qs.lines().map(str::to_string).collect();
    lines[6] = lines[6].replace("\"answer\":", "\"answer_idx\":");
    let edited = lines.join("\n");
    std::fs::write(ds.join("questions.jsonl"), &edited).unwrap();
    // The manifest vouches for the edited file, so the line-level check is what fails.
    let m = ds.join("manifest.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
    v["files"]["questions.jsonl"] = datasets::io::sha256_hex(edited.as_bytes()).into();
    std::fs::write(&m, v.to_string()).unwrap();
    let cfg = config(tmp.path(), Some(10));
    let o = chunkbench(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--store",
            tmp.path().join("store").to_str().unwrap(),
            "--output",
            tmp.path().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("questions.jsonl:7:") && err.contains("answer_idx"),
        "{err}"
    );
}

#[test]
fn chunk_command_prints_exact_slices() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "The valve is closed. ".repeat(30) + "Grüße aus Köln 日本語。";
    let p = tmp.path().join("doc.txt");
    std::fs::write(&p, &text).unwrap();
    let o = chunkbench(
        &[
            "chunk",
            "--strategy",
            "fixed",
            "--size",
            "20",
            "--overlap",
            "5",
            p.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 5);
    for v in &lines {
        let (s, e) = (
            v["start"].as_u64().unwrap() as usize,
            v["end"].as_u64().unwrap() as usize,
        );
        assert_eq!(v["text"].as_str().unwrap(), &text[s..e]);
    }
    let o = chunkbench(
        &[
            "chunk",
            "--size",
            "5",
            "--overlap",
            "5",
            p.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`overlap`"));
}

/// A sweep config with many cells, for shard and kill tests.
fn sweep_config(dir: &Path, limit: usize) -> PathBuf {
    let text = format!(
        "name: sweep\ndatasets: [sciq]\nlimit: {limit}\nstrategies:\n  fixed: {{kind: fixed, size: 100}}\n\
         retrievers:\n  bm25: {{kind: bm25}}\nk: [1, 3, 8]\nreaders:\n  lexical: {{kind: lexical}}\n\
         bootstrap_resamples: 500\nsweep:\n  grid:\n    strategies.fixed.size: [40, 60, 80, 100, 150]\n    strategies.fixed.overlap: [0, 0.25]\n"
    );
    let p = dir.join("sweep.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

const REPORTS: [&str; 5] = [
    "per_question.csv",
    "per_question.parquet",
    "summary.csv",
    "summary.md",
    "chunk_stats.csv",
];

#[test]
fn shards_merged_equal_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = sweep_config(tmp.path(), 150);
    let (full, s1, s2) = (
        tmp.path().join("full"),
        tmp.path().join("s1"),
        tmp.path().join("s2"),
    );
    run(&cfg, &full, &[]);
    for (dir, shard) in [(&s1, "1/2"), (&s2, "2/2")] {
        let o = chunkbench(
            &[
                "run",
                cfg.to_str().unwrap(),
                "--store",
                store().to_str().unwrap(),
                "--output",
                dir.to_str().unwrap(),
                "--shard",
                shard,
            ],
            &[],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let n1 = std::fs::read_dir(s1.join("sweep/cells")).unwrap().count();
    let n2 = std::fs::read_dir(s2.join("sweep/cells")).unwrap().count();
    assert_eq!(
        n1 + n2,
        2 * 30,
        "each of the 30 cells is computed by exactly one shard"
    );
    assert!(!s1.join("sweep/summary.md").exists());
    let merged = tmp.path().join("merged");
    let o = chunkbench(
        &[
            "merge",
            merged.to_str().unwrap(),
            s1.join("sweep").to_str().unwrap(),
            s2.join("sweep").to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in REPORTS {
        let a = std::fs::read(full.join("sweep").join(f)).unwrap();
        let b = std::fs::read(merged.join(f)).unwrap();
        assert!(
            a == b,
            "{f} differs between the merged shards and the unsharded run"
        );
    }
    // One shard alone cannot be merged into a complete run.
    let o = chunkbench(
        &[
            "merge",
            tmp.path().join("m1").to_str().unwrap(),
            s1.join("sweep").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing"));
}

#[test]
fn sigkilled_run_resumes_to_identical_results() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = sweep_config(tmp.path(), 500);
    let reference = tmp.path().join("ref");
    run(&cfg, &reference, &[]);
    let out = tmp.path().join("killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_chunkbench"))
        .current_dir(workspace())
        .args([
            "run",
            cfg.to_str().unwrap(),
            "--store",
            store().to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let cells = out.join("sweep/cells");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
    let done = |p: &Path| {
        std::fs::read_dir(p).map_or(0, |d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
    };
    while done(&cells) < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "no cell finished in time"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let finished = done(&cells);
    assert!(
        finished < 30,
        "the run finished ({finished} cells) before it could be killed"
    );
    assert!(!out.join("sweep/per_question.csv").exists());
    let o = run(&cfg, &out, &[]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!("({finished} reused")) || stdout.contains("reused"),
        "{stdout}"
    );
    for f in REPORTS {
        let a = std::fs::read(reference.join("sweep").join(f)).unwrap();
        let b = std::fs::read(out.join("sweep").join(f)).unwrap();
        assert!(a == b, "{f} differs after resuming a killed run");
    }
}

#[test]
fn cache_stats_and_prune_report_and_remove_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("emb");
    let cache = embed::EmbeddingCache::open(&dir).unwrap();
    for i in 0..5 {
        cache
            .put("model-a", &format!("text {i}"), &[0.6, 0.8])
            .unwrap();
    }
    cache.put("model-b", "other", &[1.0, 0.0]).unwrap();
    // Damage one entry inside the database.
    let key = embed::EmbeddingCache::key("model-a", "text 3");
    cache.db().put("model-a", &key, b"garbage").unwrap();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        v.extend(["--which", "embeddings", "--embeddings"].map(String::from));
        v.push(dir.display().to_string());
        v
    };
    let call = |a: Vec<String>| {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        chunkbench(&refs, &[])
    };
    let o = call(args(&["cache", "stats", "--check"]));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("6 entries under 2 identities"), "{out}");
    assert!(
        out.contains("        5  ") && out.contains("model-a"),
        "{out}"
    );
    assert!(
        out.contains("check: 6 entries, 5 valid, 1 corrupt"),
        "{out}"
    );
    assert!(out.contains("quick_check: ok"), "{out}");

    let o = call(args(&["cache", "prune", "--corrupt", "--dry-run"]));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("1 entries would be removed"), "{out}");
    let o = call(args(&["cache", "prune", "--corrupt"]));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success() && out.contains("removed 1 entries"),
        "{out}"
    );
    let o = call(args(&["cache", "prune", "--identity", "model-b"]));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("removed 1 entries"), "{out}");
    let o = call(args(&["cache", "prune", "--older-than", "1"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("removed 0 entries"));
    assert_eq!(cache.db().len().unwrap(), 4);
    // No condition: refused, with the alternatives.
    let o = call(args(&["cache", "prune"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("--identity TEXT, --older-than DAYS, --corrupt"));
}
