//! Helpers shared by the end-to-end tests of the `chunkbench` binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

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

/// Runs the binary from the workspace root with extra environment variables.
pub fn chunkbench_env(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chunkbench"));
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
