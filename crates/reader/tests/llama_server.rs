//! The OpenAI-compatible reader against a real llama.cpp server: llama-cpp-python[server] from
//! PyPI (scripts/llama-server/setup.sh pins and builds it; serve.sh starts it) serving the
//! pinned SmolLM2-135M-Instruct Q4_1 GGUF on 127.0.0.1.
//!
//! - `api: chat`: real replies, letter log-probs, the served model in the identity;
//! - `api: completions`: per-option log-likelihoods that agree with the local candle reader
//!   (same prompts, same choices; log-likelihoods within [`LOGLIK_TOLERANCE`]) for letters,
//!   cloze and cloze-norm scoring, on SciQ questions with their support paragraph;
//! - concurrency: four threads reading at once give the sequential answers;
//! - a server killed mid-run: the read fails with an HTTP error (never a wrong answer), and
//!   after a restart a new reader answers the questions already read from the response cache
//!   and the rest from the server, identically;
//! - a GGUF that is not the served one is caught by the token-count check.
//!
//! These tests need the model (`chunkbench models fetch`), SciQ (`chunkbench data fetch`) and
//! the server's venv (built on first use, about 4 min on 2 cores); they fail, never skip, when
//! any is missing.

use reader::{
    CacheMode, CachedReader, LlmConfig, LlmReader, OpenAiApi, OpenAiConfig, OpenAiReader, Reader,
    ReaderError, ReaderInput, ReaderOutput, ResponseCache, Scoring,
};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Allowed |Δ| between the server's and the local reader's per-option log-likelihoods:
/// `ABS + REL · |local|` nats. llama.cpp multiplies the Q4_1 blocks with 8-bit-quantized
/// activations; candle dequantizes the weights to f32 and multiplies in f32, so the logits
/// differ by noise that matters most for unlikely tokens. Measured on these SciQ questions:
/// letters up to 0.13 nats; cloze up to 0.89 nats on an option at -12.96 (BENCHMARKS.md,
/// "Server readers").
const TOLERANCE_ABS: f64 = 0.2;
/// See [`TOLERANCE_ABS`].
const TOLERANCE_REL: f64 = 0.1;

/// Read in any order, the same question gets the same scores: the server runs with
/// `--n_batch 1`. (With llama.cpp's default batch, a prompt evaluated as one batch and the
/// same prompt re-evaluated token by token after a cached prefix differ by up to 0.15 nats on
/// this model, so scores would depend on which requests came before.)
const ORDER_TOLERANCE: f64 = 1e-9;

/// Prints a summary line and appends it to `$CARGO_TARGET_TMPDIR/llama-server.log`, which
/// scripts/test.sh prints after the suite (cargo captures a passing test's output).
fn report(line: &str) {
    testkit::append_line(
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("llama-server.log"),
        line,
    );
}

use testkit::workspace;

fn model_path() -> PathBuf {
    let p = workspace().join("models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        p.is_file(),
        "SmolLM2 GGUF not found at {}: run `chunkbench models fetch`",
        p.display()
    );
    p
}

/// A running llama.cpp server, killed when dropped.
struct Server {
    child: Child,
    base_url: String,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts scripts/llama-server/serve.sh on `port` (waiting while a stopped server releases
/// it) and waits until `GET /v1/models` answers.
fn serve(port: u16, log: &Path) -> Server {
    static SETUP: OnceLock<()> = OnceLock::new();
    SETUP.get_or_init(|| {
        let setup = Command::new(workspace().join("scripts/llama-server/setup.sh"))
            .output()
            .expect("scripts/llama-server/setup.sh runs");
        assert!(
            setup.status.success(),
            "scripts/llama-server/setup.sh failed: {}",
            String::from_utf8_lossy(&setup.stderr)
        );
    });
    let started = Instant::now();
    while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "port {port} stays taken"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let child = Command::new(workspace().join("scripts/llama-server/serve.sh"))
        .arg(model_path())
        .arg(port.to_string())
        .args(["--n_threads", "2", "--n_batch", "1"])
        .env("CHUNKBENCH_WATCH_PID", std::process::id().to_string())
        .stdout(std::fs::File::create(log).unwrap())
        .stderr(Stdio::from(
            std::fs::File::options().append(true).open(log).unwrap(),
        ))
        .spawn()
        .expect("serve.sh starts");
    let mut server = Server {
        child,
        base_url: format!("http://127.0.0.1:{port}/v1"),
        log: log.to_path_buf(),
    };
    let started = Instant::now();
    loop {
        let mut probe = OpenAiReader::new(config(&server.base_url, OpenAiApi::Chat)).unwrap();
        if probe.probe_served_models().is_ok() {
            break;
        }
        if let Some(status) = server.child.try_wait().unwrap() {
            panic!(
                "the llama.cpp server exited ({status}):\n{}",
                std::fs::read_to_string(&server.log).unwrap_or_default()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the llama.cpp server did not answer within 600 s:\n{}",
            std::fs::read_to_string(&server.log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    eprintln!(
        "llama.cpp server (llama-cpp-python) serving {} ready at {} after {:.1} s",
        model_path().display(),
        server.base_url,
        started.elapsed().as_secs_f64()
    );
    server
}

/// The base URL of the server most tests share (started once per test binary; never killed
/// by a test).
fn shared() -> String {
    static S: OnceLock<Mutex<Server>> = OnceLock::new();
    let s = S.get_or_init(|| {
        let log = std::env::temp_dir().join(format!("chunkbench-llama-{}.log", std::process::id()));
        Mutex::new(serve(testkit::free_port(), &log))
    });
    // Statics are never dropped: serve.sh's watchdog (CHUNKBENCH_WATCH_PID) stops the server
    // when the test binary exits.
    s.lock().unwrap().base_url.clone()
}

fn config(base_url: &str, api: OpenAiApi) -> OpenAiConfig {
    OpenAiConfig {
        base_url: base_url.to_string(),
        model: "smollm2".into(),
        api,
        gguf: (api == OpenAiApi::Completions).then(model_path),
        // Sized for a loaded 2-core machine, not for the request: the shared server runs at
        // `--n_batch 1` (about 20 prompt tokens/s unloaded) and serves the concurrent tests'
        // requests one at a time, so a request may wait behind several others. Each test
        // bounds its own work; this only turns a hung server into a failure.
        timeout_secs: 1800.0,
        max_retries: 1,
        backoff_initial_ms: 100,
        backoff_max_ms: 200,
        ..Default::default()
    }
}

#[derive(Deserialize)]
struct Question {
    id: String,
    question: String,
    options: Vec<String>,
    answer: usize,
}

#[derive(Deserialize)]
struct Doc {
    id: String,
    text: String,
}

/// SciQ validation questions that have a support paragraph, with that paragraph as the one
/// passage: `(id, question, options, gold, passage)`.
fn sciq(n: usize) -> Vec<(String, String, Vec<String>, usize, String)> {
    let dir = workspace().join("data/sciq");
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run `chunkbench data fetch`",
                dir.join(f).display()
            )
        })
    };
    let docs: std::collections::HashMap<String, String> = read("documents.jsonl")
        .lines()
        .map(|l| {
            let d: Doc = serde_json::from_str(l).unwrap();
            (d.id, d.text)
        })
        .collect();
    read("questions.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<Question>(l).unwrap())
        .filter_map(|q| {
            let support = docs.get(&format!("{}-support", q.id))?.clone();
            Some((q.id, q.question, q.options, q.answer, support))
        })
        .take(n)
        .collect()
}

fn read_one(
    r: &dyn Reader,
    q: &(String, String, Vec<String>, usize, String),
) -> Result<ReaderOutput, ReaderError> {
    let passages = [q.4.as_str()];
    r.read(&ReaderInput {
        question: &q.1,
        options: &q.2,
        passages: &passages,
    })
}

#[test]
fn chat_answers_with_letter_logprobs_from_a_real_server() {
    let url = shared();
    let mut r = OpenAiReader::new(config(&url, OpenAiApi::Chat)).unwrap();
    let served = r.probe_served_models().unwrap();
    assert!(
        served.ends_with("SmolLM2-135M-Instruct.Q4_1.gguf"),
        "{served}"
    );
    assert!(r.identity().contains(&served), "{}", r.identity());
    let qs = sciq(8);
    let mut correct = 0;
    for q in &qs {
        let out = read_one(&r, q).unwrap();
        assert_eq!(out.scores.len(), q.2.len());
        correct += usize::from(out.is_correct(q.3));
        eprintln!("chat {}: {}", q.0, out.raw);
    }
    let st = r.stats();
    report(&format!(
        "openai chat reader vs llama.cpp server: {} questions, {correct} correct, stats {st:?}",
        qs.len()
    ));
    assert_eq!(st.requests, qs.len() as u64);
    // Every reply was read: scored by its letter's log-probs, parsed, or counted unusable.
    assert_eq!(
        st.logprob_scored + st.parsed + st.unparsable + st.ambiguous,
        qs.len() as u64
    );
    assert_eq!(st.logprobs_rejected, 0, "llama.cpp takes `logprobs`");
    assert!(
        st.logprob_scored > 0,
        "no reply was scored by log-probs: {st:?}"
    );
}

/// Per-option log-likelihoods of the server reader (completions) and the local reader on the
/// same questions and scoring; returns (same choices, questions, options outside the
/// tolerance).
fn parity(scoring: Scoring, n: usize) -> (usize, usize, usize) {
    let url = shared();
    let cfg = OpenAiConfig {
        scoring,
        ..config(&url, OpenAiApi::Completions)
    };
    let server = OpenAiReader::new(cfg).unwrap();
    let local = LlmReader::load(
        &model_path(),
        LlmConfig {
            scoring,
            ..LlmConfig::default()
        },
    )
    .unwrap();
    // The two readers build the same prompt.
    let qs = sciq(n);
    let (mut same, mut max_delta, mut outside) = (0, 0.0f64, 0);
    let mut worst = String::new();
    for q in &qs {
        let input_passages = [q.4.as_str()];
        let input = ReaderInput {
            question: &q.1,
            options: &q.2,
            passages: &input_passages,
        };
        assert_eq!(
            server.cache_material(&input).unwrap(),
            local.cache_material(&input).unwrap()
        );
        let a = server.read(&input).unwrap();
        let b = local.read(&input).unwrap();
        assert_eq!(a.context, b.context);
        same += usize::from(a.choice == b.choice && a.tied == b.tied);
        for ((x, y), o) in a.scores.iter().zip(&b.scores).zip(&q.2) {
            // cloze-norm divides by characters: compare the sums.
            let scale = match scoring {
                Scoring::ClozeNorm => o.trim().chars().count().max(1) as f64,
                _ => 1.0,
            };
            let d = (x - y).abs() * scale;
            if d > max_delta {
                worst = format!("{:?} option {o:?}: server {x:.4}, local {y:.4}", q.0);
            }
            max_delta = max_delta.max(d);
            let bound = TOLERANCE_ABS + TOLERANCE_REL * (y * scale).abs();
            if d > bound {
                outside += 1;
                report(&format!(
                    "parity {scoring:?}: outside the tolerance: {:?} option {o:?}: server \
                     {x:.4}, local {y:.4}, |Δ| {d:.4} > {bound:.4}",
                    q.0
                ));
            }
        }
    }
    report(&format!(
        "parity {scoring:?}: server (llama.cpp) and local (candle) readers choose the same \
         option on {same}/{} SciQ questions; max |Δ log-likelihood| = {max_delta:.4} nats \
         per option ({worst}); {outside} options outside {TOLERANCE_ABS} + \
         {TOLERANCE_REL}·|local|",
        qs.len()
    ));
    (same, qs.len(), outside)
}

#[test]
fn completions_letter_scores_match_the_local_reader() {
    let (same, n, outside) = parity(Scoring::Letters, 12);
    assert_eq!((same, outside), (n, 0));
}

#[test]
fn completions_cloze_scores_match_the_local_reader() {
    for scoring in [Scoring::Cloze, Scoring::ClozeNorm] {
        let (same, n, outside) = parity(scoring, 12);
        assert_eq!((same, outside), (n, 0), "{scoring:?}");
    }
}

#[test]
fn concurrent_reads_give_the_sequential_answers() {
    let url = shared();
    let cfg = OpenAiConfig {
        scoring: Scoring::Cloze,
        concurrency: 4,
        ..config(&url, OpenAiApi::Completions)
    };
    let r = OpenAiReader::new(cfg).unwrap();
    let qs = sciq(8);
    let sequential: Vec<ReaderOutput> = qs.iter().map(|q| read_one(&r, q).unwrap()).collect();
    let parallel: Vec<ReaderOutput> = std::thread::scope(|s| {
        let hs: Vec<_> = qs
            .iter()
            .map(|q| {
                let r = &r;
                s.spawn(move || read_one(r, q).unwrap())
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (a, b) in sequential.iter().zip(&parallel) {
        assert_eq!((a.choice, a.tied), (b.choice, b.tied));
        for (x, y) in a.scores.iter().zip(&b.scores) {
            assert!((x - y).abs() < ORDER_TOLERANCE, "{x} vs {y}");
        }
    }
    report(&format!(
        "concurrency: {} questions read by 4 threads at once equal the sequential answers \
         ({} requests)",
        qs.len(),
        r.stats().requests
    ));
}

#[test]
fn a_server_killed_mid_run_fails_loudly_and_the_rerun_resumes_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let port = testkit::free_port();
    let qs = sciq(6);
    let cfg = |url: &str| OpenAiConfig {
        scoring: Scoring::Cloze,
        ..config(url, OpenAiApi::Completions)
    };
    let cached = |url: &str| {
        let mut oa = OpenAiReader::new(cfg(url)).unwrap();
        oa.probe_served_models().unwrap();
        let cache = ResponseCache::new(dir.path().join("responses"), CacheMode::ReadWrite).unwrap();
        CachedReader::new(oa, cache)
    };
    let mut server = serve(port, &dir.path().join("server-1.log"));
    let url = server.base_url.clone();
    let first = cached(&url);
    let before: Vec<ReaderOutput> = qs[..3]
        .iter()
        .map(|q| read_one(&first, q).unwrap())
        .collect();
    // The server dies: the next question fails with an HTTP error, it is not answered.
    let _ = server.child.kill();
    let _ = server.child.wait();
    let err = read_one(&first, &qs[3]).unwrap_err();
    assert!(
        matches!(err, ReaderError::Http(_) | ReaderError::Timeout(_)),
        "{err}"
    );
    report(&format!(
        "server killed: question {} fails with: {err}",
        qs[3].0
    ));
    drop(first);
    // Restarted on the same port: a new reader takes the three answers from the cache.
    let server = serve(port, &dir.path().join("server-2.log"));
    let second = cached(&server.base_url);
    let after: Vec<ReaderOutput> = qs.iter().map(|q| read_one(&second, q).unwrap()).collect();
    let st = second.cache().stats();
    report(&format!("after the restart: cache {st:?}"));
    assert_eq!((st.hits, st.misses), (3, 3), "{st:?}");
    assert_eq!(&after[..3], &before[..]);
    // The three new answers equal what a reader without cache gets from the server.
    let fresh = OpenAiReader::new(cfg(&server.base_url)).unwrap();
    for (q, a) in qs[3..].iter().zip(&after[3..]) {
        let b = read_one(&fresh, q).unwrap();
        assert_eq!((a.choice, a.tied), (b.choice, b.tied));
    }
}

#[test]
fn a_gguf_other_than_the_served_one_is_caught() {
    // SmolLM2's metadata with only its first 2,000 BPE merges: the reader tokenizes into far
    // more tokens than the served model.
    use candle_core::quantized::gguf_file::{self, Value};
    let url = shared();
    let dir = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::open(model_path()).unwrap();
    let content = gguf_file::Content::read(&mut f).unwrap();
    let mut md: Vec<(&str, &Value)> = content
        .metadata
        .iter()
        .filter(|(k, _)| k.as_str() != "tokenizer.ggml.merges")
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let merges = match &content.metadata["tokenizer.ggml.merges"] {
        Value::Array(a) => Value::Array(a[..2000].to_vec()),
        other => panic!("merges: {other:?}"),
    };
    md.push(("tokenizer.ggml.merges", &merges));
    let other = dir.path().join("smollm2-fewer-merges.gguf");
    gguf_file::write(&mut std::fs::File::create(&other).unwrap(), &md, &[]).unwrap();
    let cfg = OpenAiConfig {
        gguf: Some(other),
        ..config(&url, OpenAiApi::Completions)
    };
    let r = OpenAiReader::new(cfg).unwrap();
    let e = read_one(&r, &sciq(1)[0]).unwrap_err();
    assert!(matches!(e, ReaderError::Protocol(_)), "{e}");
    assert!(
        e.to_string()
            .contains("is `gguf` the file the server loaded?"),
        "{e}"
    );
}
