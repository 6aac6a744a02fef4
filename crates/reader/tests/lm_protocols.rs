//! The language-model seam ([`reader::lm::ChatModel`]) against real servers of both of its
//! protocols, on the pinned SmolLM2-135M-Instruct Q4_1 GGUF:
//!
//! - `protocol: openai` against llama.cpp's server (llama-cpp-python[server],
//!   scripts/llama-server/serve.sh);
//! - `protocol: anthropic` against the LiteLLM proxy (litellm[proxy] from PyPI,
//!   scripts/litellm/serve.sh), which serves Anthropic's Messages API (`POST /v1/messages`,
//!   `x-api-key`, `anthropic-version`) in front of that same llama.cpp server.
//!
//! Checked: the same messages at temperature 0 give the same text through both protocols (the
//! Messages API's `system` field carries the system message; `max_tokens` cuts are reported
//! as `length` on both); usage is reported and counted; the served model is in the identity,
//! and the two protocols' identities differ; the generation cache answers a second ask with no
//! HTTP request; a proxy that requires a key refuses a request without one (an HTTP error,
//! never a reply) and answers with the key sent as `x-api-key`.
//!
//! These tests need the model (`chunkbench models fetch`) and the two venvs (built on first
//! use); they fail, never skip, when any is missing.

use reader::generation_cache::GenerationCache;
use reader::lm::{ChatModel, ChatModelConfig, ChatRequest, Tally};
use reader::{CacheMode, ReaderError};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use testkit::workspace;

/// The proxy's master key (a test value, not a secret).
const KEY: &str = "sk-chunkbench-litellm-test-4821";

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `script args…` with its output in `log`, the watchdog set to this process.
fn start(script: &str, args: &[String], log: &Path) -> Proc {
    let setup = script.replace("serve.sh", "setup.sh");
    let out = Command::new(workspace().join(&setup))
        .output()
        .unwrap_or_else(|e| panic!("{setup} runs: {e}"));
    assert!(
        out.status.success(),
        "{setup} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Proc(
        Command::new(workspace().join(script))
            .args(args)
            .env("CHUNKBENCH_WATCH_PID", std::process::id().to_string())
            .stdout(std::fs::File::create(log).unwrap())
            .stderr(Stdio::from(
                std::fs::File::options().append(true).open(log).unwrap(),
            ))
            .spawn()
            .unwrap_or_else(|e| panic!("{script} starts: {e}")),
    )
}

/// Waits until `model` connects (the server lists its models), or panics with the log.
fn wait_for(p: &mut Proc, cfg: &ChatModelConfig, log: &Path) {
    let started = Instant::now();
    loop {
        if ChatModel::new(cfg, "test").unwrap().connect().is_ok() {
            return;
        }
        if let Some(status) = p.0.try_wait().unwrap() {
            panic!(
                "the server exited ({status}):\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "no answer within 600 s:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Sets the tests' key variables, once, before any test reads one.
fn keys() {
    static K: OnceLock<()> = OnceLock::new();
    K.get_or_init(|| {
        std::env::set_var("CHUNKBENCH_TEST_LITELLM_KEY", KEY);
        std::env::set_var("CHUNKBENCH_TEST_WRONG_KEY", "sk-wrong-key-0000000000");
        std::env::set_var("CHUNKBENCH_TEST_WIRE_KEY", "sk-wire-test-key-12345");
    });
}

/// (llama.cpp base URL, LiteLLM base URL), started once per test binary.
fn servers() -> &'static (String, String) {
    keys();
    static S: OnceLock<(String, String)> = OnceLock::new();
    S.get_or_init(|| {
        let gguf = workspace().join("models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
        assert!(
            gguf.is_file(),
            "{} not found: run `chunkbench models fetch`",
            gguf.display()
        );
        let tmp = std::env::temp_dir();
        let (lp, xp) = (testkit::free_port(), testkit::free_port());
        let llama_log = tmp.join(format!("chunkbench-lm-llama-{}.log", std::process::id()));
        let mut llama = start(
            "scripts/llama-server/serve.sh",
            &[
                gguf.display().to_string(),
                lp.to_string(),
                "--n_threads".into(),
                "2".into(),
                // Replies that do not depend on which requests came before (llama_server.rs,
                // ORDER_TOLERANCE): with llama.cpp's default batch a prompt evaluated after a
                // cached prefix differs slightly, and greedy text can follow.
                "--n_batch".into(),
                "1".into(),
            ],
            &llama_log,
        );
        let llama_url = format!("http://127.0.0.1:{lp}/v1");
        wait_for(&mut llama, &openai(&llama_url), &llama_log);
        let proxy_log = tmp.join(format!("chunkbench-lm-litellm-{}.log", std::process::id()));
        let mut proxy = start(
            "scripts/litellm/serve.sh",
            &[llama_url.clone(), xp.to_string(), KEY.into()],
            &proxy_log,
        );
        let proxy_url = format!("http://127.0.0.1:{xp}/v1");
        wait_for(&mut proxy, &anthropic(&proxy_url, true), &proxy_log);
        // The statics are never dropped: the scripts' watchdogs stop both servers when the
        // test binary exits.
        std::mem::forget(llama);
        std::mem::forget(proxy);
        (llama_url, proxy_url)
    })
}

fn openai(base_url: &str) -> ChatModelConfig {
    ChatModelConfig {
        base_url: base_url.into(),
        model: "smollm2".into(),
        protocol: "openai".into(),
        api_key_env: None,
        seed: 0,
        timeout_secs: 600.0,
        max_retries: 1,
        concurrency: 2,
    }
}

fn anthropic(base_url: &str, key: bool) -> ChatModelConfig {
    ChatModelConfig {
        protocol: "anthropic".into(),
        api_key_env: key.then(|| "CHUNKBENCH_TEST_LITELLM_KEY".into()),
        ..openai(base_url)
    }
}

fn requests() -> Vec<ChatRequest> {
    let m = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(r, c)| (r.to_string(), c.to_string()))
            .collect()
    };
    vec![
        ChatRequest::new(
            m(&[
                ("system", "Answer in one short sentence."),
                ("user", "What gas do plants take in for photosynthesis?"),
            ]),
            40,
        ),
        ChatRequest::new(m(&[("user", "Name three primary colours.")]), 40),
        // Cut at max_tokens: `length` on both protocols.
        ChatRequest::new(
            m(&[("user", "Write a long story about a lighthouse keeper.")]),
            5,
        ),
    ]
}

#[test]
fn both_protocols_give_the_same_replies_and_count_them() {
    let (llama, proxy) = servers();
    let direct = ChatModel::new(&openai(llama), "test")
        .unwrap()
        .connect()
        .unwrap();
    let messages = ChatModel::new(&anthropic(proxy, true), "test")
        .unwrap()
        .connect()
        .unwrap();
    assert!(
        messages
            .identity()
            .starts_with("anthropic-messages-v1(endpoint=http://127.0.0.1:"),
        "{}",
        messages.identity()
    );
    assert!(
        messages.identity().contains("seed=none") && messages.identity().contains("served=smollm2"),
        "{}",
        messages.identity()
    );
    assert!(direct.identity().starts_with("openai-generate-v1("));
    let a = direct.ask(&requests()).unwrap();
    let b = messages.ask(&requests()).unwrap();
    let mut tally = Tally::default();
    for (x, y) in a.iter().zip(&b) {
        assert!(!x.generation.text.trim().is_empty(), "{x:?}");
        assert_eq!(
            x.generation.text, y.generation.text,
            "same model, same messages"
        );
        assert_eq!(x.generation.finish_reason, y.generation.finish_reason);
        assert!(
            y.generation.usage.is_some_and(|u| u.completion_tokens > 0),
            "{y:?}"
        );
        tally.count(y);
    }
    assert_eq!(a[2].generation.finish_reason, "length");
    assert_eq!(a[0].generation.finish_reason, "stop");
    assert_eq!(
        (tally.requests, tally.cached, tally.without_usage),
        (3, 0, 0)
    );
    eprintln!(
        "openai and anthropic protocols: {} identical replies ({} completion tokens)",
        a.len(),
        tally.completion_tokens
    );
}

#[test]
fn the_cache_answers_the_second_ask_without_a_request() {
    let (_, proxy) = servers();
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        ChatModel::new(&anthropic(proxy, true), "test")
            .unwrap()
            .connect()
            .unwrap()
            .with_cache(GenerationCache::open(dir.path(), CacheMode::ReadWrite).unwrap())
    };
    let first = open();
    let reqs = &requests()[..2];
    let a = first.ask(reqs).unwrap();
    assert!(a.iter().all(|r| !r.cached));
    let second = open();
    let b = second.ask(reqs).unwrap();
    assert!(b.iter().all(|r| r.cached));
    assert_eq!(second.http_counts().0, 0, "no request was sent");
    let texts =
        |v: &[reader::lm::Reply]| v.iter().map(|r| r.generation.clone()).collect::<Vec<_>>();
    assert_eq!(texts(&a), texts(&b));
}

#[test]
fn a_key_is_sent_as_x_api_key_and_a_missing_one_is_an_error() {
    let (_, proxy) = servers();
    // LiteLLM 1.91.5 without a database answers a request without a key with HTTP 500
    // (retried, then an error) and one with a wrong key with HTTP 400: an error either way,
    // never a reply.
    let without = ChatModel::new(&anthropic(proxy, false), "test").unwrap();
    let e = without.send(&requests()[1]).unwrap_err();
    assert!(
        matches!(&e, ReaderError::Http(_)),
        "expected an HTTP error, got {e}"
    );
    let wrong = ChatModel::new(
        &ChatModelConfig {
            api_key_env: Some("CHUNKBENCH_TEST_WRONG_KEY".into()),
            ..anthropic(proxy, true)
        },
        "test",
    )
    .unwrap();
    let e = wrong.send(&requests()[1]).unwrap_err().to_string();
    assert!(e.contains("HTTP 4"), "{e}");
    assert!(
        !e.contains("sk-wrong-key-0000000000") && !e.contains(KEY),
        "{e}"
    );
    let with = ChatModel::new(&anthropic(proxy, true), "test").unwrap();
    assert!(!with.send(&requests()[1]).unwrap().text.is_empty());
}

/// What goes on the wire for `protocol: anthropic` (LiteLLM takes a key in either header, the
/// Anthropic API only in `x-api-key`): recorded by a local HTTP server.
#[test]
fn the_anthropic_wire_form() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let url = testkit::serve(move |r| {
        log.lock().unwrap().push(r.clone());
        (
            200,
            r#"{"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}"#
                .into(),
        )
    });
    keys();
    let cfg = ChatModelConfig {
        api_key_env: Some("CHUNKBENCH_TEST_WIRE_KEY".into()),
        ..anthropic(&format!("{url}/v1"), false)
    };
    let g = ChatModel::new(&cfg, "test")
        .unwrap()
        .send(&requests()[0])
        .unwrap();
    assert_eq!((g.text.as_str(), g.finish_reason.as_str()), ("ok", "stop"));
    let r = seen.lock().unwrap()[0].clone();
    assert_eq!(
        (r.method.as_str(), r.url.as_str()),
        ("POST", "/v1/messages")
    );
    let header = |n: &str| {
        r.headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("x-api-key"), Some("sk-wire-test-key-12345"));
    assert_eq!(header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.authorization, None);
    let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["system"], "Answer in one short sentence.");
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(body["temperature"], 0);
}

/// The multiple-choice reader through the seam: `protocol: anthropic` (LiteLLM) reads the same
/// questions as `protocol: openai` (llama.cpp directly, `logprobs: off`) and gives the same
/// parsed answers and replies; its identity names the Messages protocol.
#[test]
fn the_reader_reads_through_either_protocol() {
    use reader::{LogprobsMode, OpenAiConfig, OpenAiReader, Reader, ReaderInput};
    let (llama, proxy) = servers();
    let config = |base_url: &str, protocol: &str, key: bool| OpenAiConfig {
        base_url: base_url.into(),
        model: "smollm2".into(),
        protocol: protocol.into(),
        api_key_env: key.then(|| "CHUNKBENCH_TEST_LITELLM_KEY".into()),
        logprobs: LogprobsMode::Off,
        max_tokens: 24,
        timeout_secs: 600.0,
        max_retries: 1,
        ..OpenAiConfig::default()
    };
    let mut direct = OpenAiReader::new(config(llama, "openai", false)).unwrap();
    direct.probe_served_models().unwrap();
    let mut messages = OpenAiReader::new(config(proxy, "anthropic", true)).unwrap();
    assert_eq!(messages.probe_served_models().unwrap(), "smollm2");
    assert!(
        messages.identity().starts_with("chat-reader-v1(")
            && messages
                .identity()
                .contains("anthropic-messages-v1(endpoint="),
        "{}",
        messages.identity()
    );
    let questions: [(&str, [&str; 4], &str); 3] = [
        (
            "What gas do plants take in for photosynthesis?",
            ["oxygen", "carbon dioxide", "nitrogen", "helium"],
            "Plants take in carbon dioxide and release oxygen.",
        ),
        (
            "What is the boiling point of water at sea level?",
            [
                "50 degrees Celsius",
                "100 degrees Celsius",
                "0 degrees Celsius",
                "200 degrees Celsius",
            ],
            "At sea level water boils at 100 degrees Celsius.",
        ),
        (
            "Which planet is closest to the Sun?",
            ["Mercury", "Venus", "Earth", "Mars"],
            "Mercury is the planet closest to the Sun.",
        ),
    ];
    for (q, opts, passage) in questions {
        let options: Vec<String> = opts.iter().map(|s| s.to_string()).collect();
        let passages = [passage];
        let input = ReaderInput {
            question: q,
            options: &options,
            passages: &passages,
        };
        let a = direct.read(&input).unwrap();
        let b = messages.read(&input).unwrap();
        assert_eq!(
            (a.choice, &a.raw, a.invalid),
            (b.choice, &b.raw, b.invalid),
            "{q}"
        );
    }
    let s = messages.stats();
    assert_eq!(s.parsed + s.unparsable + s.ambiguous, 3);
    assert_eq!(s.logprob_scored, 0);
    let e = OpenAiReader::new(OpenAiConfig {
        api: reader::OpenAiApi::Completions,
        ..config(proxy, "anthropic", true)
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("`api: chat` only"), "{e}");
}
