//! Helpers shared by the end-to-end tests of the `chunkbench` binary.
#![allow(dead_code)]

pub mod cdp;

use records::{read_rows_csv, rows_csv, summarize, CellRecord, QuestionRow};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
pub use testkit::workspace;

/// The dataset store (`CHUNKBENCH_STORE`, else `data/` at the workspace root), checked to hold
/// the converted `datasets`.
pub fn store_with(datasets: &[&str]) -> PathBuf {
    let s = std::env::var_os("CHUNKBENCH_STORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("data"));
    for ds in datasets {
        assert!(
            s.join(ds).join("manifest.json").exists(),
            "no converted {ds} in {}: run `scripts/test.sh` or `cargo run -p chunkbench -- data fetch` \
             (QuALITY and the textbooks need CHUNKBENCH_DATA)",
            s.display()
        );
    }
    s
}

/// The store, checked to hold SciQ.
pub fn store() -> PathBuf {
    store_with(&["sciq"])
}

/// The pinned MiniLM directory (`models/all-MiniLM-L6-v2`), checked to be fetched.
pub fn minilm() -> PathBuf {
    let m = workspace().join("models/all-MiniLM-L6-v2");
    assert!(
        m.join("model.safetensors").exists(),
        "{} is missing: run `chunkbench models fetch` (scripts/test.sh does)",
        m.display()
    );
    m
}

/// `chunkbench run CFG --store STORE --output OUT` with extra environment variables; the
/// output, whatever the exit status.
pub fn run_env(cfg: &Path, store: &Path, out: &Path, envs: &[(&str, &str)]) -> Output {
    let args = [
        "run",
        path_str(cfg),
        "--store",
        path_str(store),
        "--output",
        path_str(out),
    ];
    chunkbench_env(&args, envs)
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// The binary under test: this build's, or `CHUNKBENCH_TEST_BIN` when set (to run the
/// end-to-end tests against another build, e.g. to show that a regression test fails on the
/// code before its fix).
pub fn binary() -> PathBuf {
    std::env::var_os("CHUNKBENCH_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_chunkbench")))
}

/// Runs the binary from the workspace root with extra environment variables.
pub fn chunkbench_env(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(binary());
    cmd.args(args)
        .current_dir(workspace())
        .env_remove("CHUNKBENCH_STORE");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run chunkbench")
}

/// Runs the binary from the workspace root.
pub fn chunkbench(args: &[&str]) -> Output {
    chunkbench_env(args, &[])
}

/// Copies the directory tree `from` to `to` (created).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// `documents.jsonl` of a dataset in the store: id → text.
pub fn documents(ds: &str) -> std::collections::HashMap<String, String> {
    documents_in(&store_with(&[ds]), ds)
}

/// `documents.jsonl` of dataset `ds` in `store`: id → text.
pub fn documents_in(store: &Path, ds: &str) -> std::collections::HashMap<String, String> {
    std::fs::read_to_string(store.join(ds).join("documents.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                v["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Writes `yaml` as `dir/NAME.yaml` and runs it with the store into `dir/runs`; asserts
/// success and returns the run directory `dir/runs/NAME`.
pub fn run_yaml(dir: &Path, name: &str, yaml: &str, store: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let cfg = dir.join(format!("{name}.yaml"));
    std::fs::write(&cfg, yaml).unwrap();
    let out = dir.join("runs");
    let o = run_env(&cfg, store, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.join(name)
}

/// The JSON lines of a command's stdout.
pub fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The cell record of `run` with this strategy and k.
pub fn cell(run: &Path, strategy: &str, k: usize) -> CellRecord {
    std::fs::read_dir(run.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_slice::<CellRecord>(&std::fs::read(p).unwrap()).unwrap())
        .find(|r| r.cell.strategy == strategy && r.cell.k == k)
        .unwrap_or_else(|| panic!("no cell {strategy} k={k} in {}", run.display()))
}

/// The rows of a cell's CSV.
pub fn read_rows(path: &Path) -> Vec<QuestionRow> {
    read_rows_csv(&std::fs::read(path).unwrap(), &path.display().to_string()).unwrap()
}

/// Writes rows as a cell's CSV.
pub fn write_rows(path: &Path, rows: &[QuestionRow]) {
    std::fs::write(path, rows_csv(rows).unwrap()).unwrap();
}

/// Rewrites one cell of the candidate run consistently: its rows in `cells/ID.csv` and in
/// `per_question.csv`, and the summary in `cells/ID.json`. `edit` sees the rows in order and
/// returns whether it changed the row.
pub fn rewrite_cell(run: &Path, rec: &CellRecord, mut edit: impl FnMut(&mut QuestionRow) -> bool) {
    let csv_path = run.join("cells").join(format!("{}.csv", rec.id));
    let mut rows = read_rows(&csv_path);
    let mut changed = std::collections::HashMap::new();
    for r in rows.iter_mut() {
        if edit(r) {
            changed.insert(r.question_id.clone(), r.clone());
        }
    }
    assert!(!changed.is_empty(), "the edit changed no row");
    write_rows(&csv_path, &rows);
    let mut new_rec = rec.clone();
    new_rec.summary = summarize(&rows);
    new_rec.rows_sha256 = datasets::io::sha256_hex(&std::fs::read(&csv_path).unwrap());
    let json = run.join("cells").join(format!("{}.json", rec.id));
    records::write_cell_record(&json, &new_rec).unwrap();
    let pq = run.join("per_question.csv");
    let mut all = read_rows(&pq);
    let mut n = 0;
    for r in all.iter_mut().filter(|r| r.cell_id == rec.id) {
        if let Some(c) = changed.get(&r.question_id) {
            *r = c.clone();
            n += 1;
        }
    }
    assert_eq!(n, changed.len());
    write_rows(&pq, &all);
}

/// Runs the quickstart config with `limit` questions on `store` into `out`; returns the run
/// directory `out/quickstart`.
pub fn quickstart(out: &Path, limit: usize, store: &Path) -> PathBuf {
    let cfg = workspace().join("configs/quickstart.yaml");
    let o = chunkbench(&[
        "run",
        cfg.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--set",
        &format!("limit={limit}"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.join("quickstart")
}

/// scripts/llama-server/serve.sh with SmolLM2 on a free port (its log in `log`), killed when
/// dropped; `.1` is its `/v1` base URL.
pub struct Llama(pub std::process::Child, pub String);

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn llama(log: &Path) -> Llama {
    let model = workspace().join("models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        model.is_file(),
        "{}: run `chunkbench models fetch`",
        model.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(workspace().join("scripts/llama-server/serve.sh"))
        .arg(&model)
        .arg(port.to_string())
        .args(["--n_threads", "2"])
        .env("CHUNKBENCH_WATCH_PID", std::process::id().to_string())
        .stdout(std::fs::File::create(log).unwrap())
        .stderr(std::fs::File::options().append(true).open(log).unwrap())
        .spawn()
        .expect("serve.sh starts");
    let mut server = Llama(child, format!("http://127.0.0.1:{port}/v1"));
    let started = std::time::Instant::now();
    loop {
        use std::io::{Read, Write};
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(s, "GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
            let mut reply = String::new();
            let _ = s.read_to_string(&mut reply);
            if reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200") {
                return server;
            }
        }
        if let Some(status) = server.0.try_wait().unwrap() {
            panic!(
                "the llama.cpp server exited ({status}):\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            started.elapsed().as_secs() < 900,
            "the llama.cpp server did not answer in 15 min:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}
