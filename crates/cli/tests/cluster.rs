//! Running a sweep past one machine.
//!
//! A sweep on a real Slurm: `scripts/slurm-local.sh` starts a single-node cluster (Debian's
//! slurm-wlm and munge), `scripts/slurm-array.sh submit` sends the sweep as a job array with a
//! merge job that depends on it, one array task is killed mid-way and requeued, and the merged
//! run must equal the unsharded run byte for byte. The steps are logged to
//! `$CARGO_TARGET_DIR/tmp/slurm-test.log`, which scripts/test.sh prints after the suite.
//!
//! The Kubernetes indexed-Job manifest is documentation; it is checked against the Kubernetes
//! API schema (scripts/k8s-validate.sh, kubernetes-validate from PyPI, strict).

mod common;

use common::{store, workspace};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const REPORTS: [&str; 4] = [
    "per_question.csv",
    "summary.csv",
    "summary.md",
    "chunk_stats.csv",
];

fn sh(cmd: &str, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new(cmd);
    c.args(args).current_dir(workspace());
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

struct Log {
    path: PathBuf,
    lines: Vec<String>,
    start: Instant,
}

impl Log {
    fn say(&mut self, line: impl Into<String>) {
        let line = format!(
            "[{:>6.1} s] {}",
            self.start.elapsed().as_secs_f64(),
            line.into()
        );
        eprintln!("{line}");
        self.lines.push(line);
        let _ = std::fs::write(&self.path, self.lines.join("\n") + "\n");
    }
}

/// `scontrol show job ID` as `Key=Value` pairs (the first value of each key).
fn job_fields(id: &str, conf: &str) -> std::collections::HashMap<String, String> {
    let o = sh(
        "scontrol",
        &["-o", "show", "job", id],
        &[("SLURM_CONF", conf)],
    );
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .fold(Default::default(), |mut m, (k, v)| {
            m.entry(k).or_insert(v);
            m
        })
}

fn cells_done(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("cells"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_sweep_as_a_slurm_array_with_a_requeued_task_merges_to_the_unsharded_run() {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    std::fs::create_dir_all(target.join("tmp")).unwrap();
    let mut log = Log {
        path: target.join("tmp/slurm-test.log"),
        lines: Vec::new(),
        start: Instant::now(),
    };
    let o = sh("scripts/slurm-local.sh", &["start"], &[]);
    assert!(o.status.success(), "slurm-local.sh start: {}", text(&o));
    log.say(text(&o).trim().to_string());
    let conf_line = text(&sh("scripts/slurm-local.sh", &["env"], &[]));
    let conf = conf_line
        .trim()
        .strip_prefix("export SLURM_CONF=")
        .expect("slurm-local.sh env prints the config path")
        .to_string();
    let slurm = [("SLURM_CONF", conf.as_str())];

    // Two chunk sizes × BM25 and dense (MiniLM, embedded by the tasks into one shared cache
    // database) × top-3 and top-8: 8 cells, 4 per shard.
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("slurm-sweep.yaml");
    std::fs::write(
        &cfg,
        "name: slurm-sweep\ndatasets: [sciq]\nlimit: 300\nstrategies:\n  fixed: {kind: fixed, size: 100}\n\
         retrievers:\n  bm25: {kind: bm25}\n  dense: {kind: dense, query: question+options}\n\
         k: [3, 8]\nreaders:\n  lexical: {kind: lexical}\nbootstrap_resamples: 200\n\
         sweep:\n  grid:\n    strategies.fixed.size: [100, 150]\n",
    )
    .unwrap();
    let out = tmp.path().join("slurm");
    let cache = tmp.path().join("embeddings");
    let store = store();
    let set_cache = format!("embedder.cache={}", cache.display());
    let run_args = [
        "--store",
        store.to_str().unwrap(),
        "--set",
        set_cache.as_str(),
    ];
    let bin = env!("CARGO_BIN_EXE_chunkbench");
    let mut submit = vec!["submit", cfg.to_str().unwrap(), "2", out.to_str().unwrap()];
    submit.extend(run_args);
    let o = sh(
        "scripts/slurm-array.sh",
        &submit,
        &[("SLURM_CONF", conf.as_str()), ("CHUNKBENCH_BIN", bin)],
    );
    assert!(o.status.success(), "slurm-array.sh submit: {}", text(&o));
    let ids: std::collections::HashMap<String, String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (array, merge) = (ids["array"].clone(), ids["merge"].clone());
    log.say(format!(
        "submitted: array job {array} (tasks 1-2, --requeue), merge job {merge} (afterok:{array})"
    ));
    let task2 = format!("{array}_2");
    let shard2 = out.join("shards/2/slurm-sweep");

    // Kill task 2 mid-way: once it runs and has finished at least one cell, requeue it.
    let deadline = Instant::now() + Duration::from_secs(600);
    let cells_at_kill = loop {
        assert!(
            Instant::now() < deadline,
            "task 2 never ran: {:?}",
            job_fields(&task2, &conf)
        );
        let f = job_fields(&task2, &conf);
        let done = cells_done(&shard2);
        if f.get("JobState").map(String::as_str) == Some("RUNNING") && done >= 1 {
            let o = sh("scontrol", &["requeue", &task2], &slurm);
            assert!(o.status.success(), "scontrol requeue: {}", text(&o));
            break done;
        }
        assert!(
            !matches!(
                f.get("JobState").map(String::as_str),
                Some("COMPLETED" | "FAILED")
            ),
            "task 2 ended before it could be killed: {f:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    log.say(format!(
        "task {task2} killed mid-way by `scontrol requeue` with {cells_at_kill} cell(s) finished; state now {}",
        job_fields(&task2, &conf)["JobState"]
    ));
    // Slurm holds a requeued job until its old credential expires (scripts/slurm-local.sh
    // sets 10 s), then starts it again: nothing to do but wait.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let f = job_fields(&task2, &conf);
        if f.get("JobState").map(String::as_str) == Some("PENDING") {
            log.say(format!(
                "task {task2} pending again (reason {}, restarts {})",
                f.get("Reason").map_or("?", String::as_str),
                f.get("Restarts").map_or("?", String::as_str)
            ));
            break;
        }
        assert!(Instant::now() < deadline, "task 2 was not requeued: {f:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Wait for the merge job.
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let f = job_fields(&merge, &conf);
        match f.get("JobState").map(String::as_str) {
            Some("COMPLETED") => break,
            Some(s @ ("FAILED" | "CANCELLED" | "TIMEOUT")) => panic!(
                "merge job {s}: {:?}\n{}",
                f,
                std::fs::read_dir(out.join("logs"))
                    .unwrap()
                    .flatten()
                    .map(|e| format!(
                        "--- {}\n{}",
                        e.path().display(),
                        std::fs::read_to_string(e.path()).unwrap_or_default()
                    ))
                    .collect::<String>()
            ),
            _ => {}
        }
        assert!(Instant::now() < deadline, "merge did not finish: {f:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let t2 = job_fields(&task2, &conf);
    let t1 = job_fields(&format!("{array}_1"), &conf);
    log.say(format!(
        "tasks finished: {array}_1 {} (exit {}, restarts {}), {task2} {} (exit {}, restarts {}); merge {merge} COMPLETED",
        t1["JobState"], t1["ExitCode"], t1["Restarts"], t2["JobState"], t2["ExitCode"], t2["Restarts"]
    ));
    assert_eq!(t2["Restarts"], "1", "task 2 was requeued once");
    assert_eq!(t2["JobState"], "COMPLETED");
    let task_log = std::fs::read_to_string(out.join(format!("logs/task-{array}_2.log"))).unwrap();
    assert!(
        task_log.contains("restart 0") && task_log.contains("restart 1"),
        "the task log shows both starts:\n{task_log}"
    );
    let total2 = cells_done(&shard2);
    assert!(
        cells_at_kill < total2,
        "killed mid-way: {cells_at_kill} of {total2} cells"
    );
    log.say(format!(
        "task 2 ran twice; it had {cells_at_kill} of its {total2} cells when killed and resumed from them. Its log:\n{}",
        task_log.trim_end()
    ));

    // The unsharded run, on the cache the tasks filled.
    let full = tmp.path().join("full");
    let mut args = vec![
        "run",
        cfg.to_str().unwrap(),
        "--output",
        full.to_str().unwrap(),
    ];
    args.extend(run_args);
    let o = sh(bin, &args, &[]);
    assert!(o.status.success(), "unsharded run: {}", text(&o));
    for f in REPORTS {
        let a = std::fs::read(full.join("slurm-sweep").join(f)).unwrap();
        let b = std::fs::read(out.join("merged").join(f)).unwrap();
        assert!(
            a == b,
            "{f} differs between the Slurm merge and the unsharded run"
        );
    }
    log.say(format!(
        "merged run equals the unsharded run byte for byte: {}",
        REPORTS.join(", ")
    ));
    // Both tasks wrote one embedding database.
    let o = sh(
        bin,
        &[
            "cache",
            "stats",
            "--which",
            "embeddings",
            "--embeddings",
            cache.to_str().unwrap(),
            "--check",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stats = text(&o);
    assert!(stats.contains(" 0 corrupt"), "{stats}");
    log.say(format!(
        "shared embedding cache after the array:\n{}",
        stats.trim_end()
    ));
}

#[test]
fn the_kubernetes_manifest_validates_against_the_api_schema_and_a_broken_one_does_not() {
    let o = sh("scripts/k8s-validate.sh", &[], &[]);
    assert!(o.status.success(), "k8s-validate.sh: {}", text(&o));
    assert!(
        text(&o).contains("passed for resource job/chunkbench-sweep"),
        "{}",
        text(&o)
    );
    // The check can fail: a misspelt field and a wrong enum value are rejected.
    let tmp = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(workspace().join("scripts/k8s-indexed-job.yaml")).unwrap();
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(&bad, good.replace("completions: 8", "completion: 8")).unwrap();
    let o = sh("scripts/k8s-validate.sh", &[bad.to_str().unwrap()], &[]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("'completion' was unexpected"),
        "{}",
        text(&o)
    );
}
