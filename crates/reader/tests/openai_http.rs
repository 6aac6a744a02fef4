//! The OpenAI-compatible reader against a real HTTP server (tiny_http in a thread): retries on
//! 429/5xx, malformed JSON, timeouts, log-prob scoring and negotiation, the API key, the
//! concurrency limit, and CASES 31/32/33 through the wire.

use reader::{
    LogprobsMode, OpenAiConfig, OpenAiReader, Reader, ReaderError, ReaderInput, ReaderOutput,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// One scripted reply.
#[derive(Clone)]
struct Reply {
    status: u16,
    body: String,
    delay: Duration,
    retry_after: Option<&'static str>,
}

fn reply(status: u16, body: impl Into<String>) -> Reply {
    Reply {
        status,
        body: body.into(),
        delay: Duration::ZERO,
        retry_after: None,
    }
}

/// What the server saw: request bodies and Authorization headers.
#[derive(Default)]
struct Seen {
    bodies: Vec<serde_json::Value>,
    auth: Vec<Option<String>>,
}

/// Starts a server that answers requests with `script` in order (the last reply repeats),
/// each request on its own thread so that slow replies do not block others. Returns the base
/// URL, what it saw, and the peak number of requests in flight.
fn serve(script: Vec<Reply>) -> (String, Arc<Mutex<Seen>>, Arc<AtomicUsize>) {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind");
    let port = server.server_addr().to_ip().expect("ip").port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let peak = Arc::new(AtomicUsize::new(0));
    let active = Arc::new(AtomicUsize::new(0));
    let (seen2, peak2) = (seen.clone(), peak.clone());
    thread::spawn(move || {
        for (i, mut req) in server.incoming_requests().enumerate() {
            let r = script[i.min(script.len() - 1)].clone();
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            let auth = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string());
            {
                let mut s = seen2.lock().unwrap();
                s.bodies
                    .push(serde_json::from_str(&body).unwrap_or(serde_json::Value::Null));
                s.auth.push(auth);
            }
            let (active, peak) = (active.clone(), peak2.clone());
            thread::spawn(move || {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                thread::sleep(r.delay);
                let mut resp = tiny_http::Response::from_string(r.body).with_status_code(r.status);
                if let Some(ra) = r.retry_after {
                    resp = resp.with_header(
                        tiny_http::Header::from_bytes(&b"Retry-After"[..], ra.as_bytes()).unwrap(),
                    );
                }
                active.fetch_sub(1, Ordering::SeqCst);
                let _ = req.respond(resp);
            });
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), seen, peak)
}

fn completion(content: &str) -> String {
    serde_json::json!({
        "id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}]
    })
    .to_string()
}

fn completion_with_logprobs(content: &str, tops: &[(&str, f64)]) -> String {
    let top: Vec<_> = tops
        .iter()
        .map(|(t, l)| serde_json::json!({"token": t, "logprob": l}))
        .collect();
    serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content},
                     "logprobs": {"content": [
                        {"token": content, "logprob": tops[0].1, "top_logprobs": top}]}}]
    })
    .to_string()
}

fn config(url: &str) -> OpenAiConfig {
    OpenAiConfig {
        base_url: url.to_string(),
        model: "test-model".into(),
        // Generous for a loaded machine: the local test servers answer at once unless a
        // test delays them on purpose.
        timeout_secs: 60.0,
        max_retries: 3,
        backoff_initial_ms: 10,
        backoff_max_ms: 100,
        ..Default::default()
    }
}

fn opts(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn ask(r: &OpenAiReader, options: &[String]) -> Result<ReaderOutput, ReaderError> {
    r.read(&ReaderInput {
        question: "Pick one.",
        options,
        passages: &["Some context."],
    })
}

#[test]
fn http_429_then_success() {
    let mut limited = reply(429, r#"{"error":"rate limited"}"#);
    limited.retry_after = Some("0");
    let (url, seen, _) = serve(vec![limited, reply(200, completion("Answer: B"))]);
    let r = OpenAiReader::new(config(&url)).unwrap();
    let out = ask(&r, &opts(&["2", "4", "6", "8"])).unwrap();
    assert_eq!((out.choice, out.tied, out.invalid), (1, 1, false));
    let st = r.stats();
    assert_eq!((st.requests, st.retries, st.parsed), (2, 1, 1));
    let s = seen.lock().unwrap();
    assert_eq!(s.bodies[0]["temperature"], 0);
    assert_eq!(s.bodies[0]["model"], "test-model");
    assert_eq!(s.bodies[0]["logprobs"], true);
    assert_eq!(s.bodies[0]["messages"][0]["role"], "user");
    let user = s.bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        user.contains("[1] Some context.") && user.ends_with("D. 8\nAnswer:"),
        "{user}"
    );
}

#[test]
fn http_5xx_retries_then_gives_up() {
    let (url, _, _) = serve(vec![reply(503, "busy")]);
    let cfg = OpenAiConfig {
        max_retries: 2,
        ..config(&url)
    };
    let r = OpenAiReader::new(cfg).unwrap();
    let e = ask(&r, &opts(&["a", "b"])).unwrap_err();
    assert!(matches!(e, ReaderError::Http(_)), "{e}");
    assert!(e.to_string().contains("503"), "{e}");
    assert_eq!((r.stats().requests, r.stats().retries), (3, 2));
}

#[test]
fn http_malformed_json_is_a_protocol_error_without_retry() {
    let (url, _, _) = serve(vec![reply(200, "{\"choices\": [ {not json")]);
    let r = OpenAiReader::new(config(&url)).unwrap();
    let e = ask(&r, &opts(&["a", "b"])).unwrap_err();
    assert!(matches!(e, ReaderError::Protocol(_)), "{e}");
    assert!(e.to_string().contains("malformed JSON"), "{e}");
    assert_eq!(r.stats().requests, 1);
    // Valid JSON that is not a completion is a protocol error too.
    let (url, _, _) = serve(vec![reply(200, r#"{"object":"error"}"#)]);
    let r = OpenAiReader::new(config(&url)).unwrap();
    assert!(matches!(
        ask(&r, &opts(&["a", "b"])),
        Err(ReaderError::Protocol(_))
    ));
}

#[test]
fn http_slower_than_the_timeout() {
    let mut slow = reply(200, completion("A"));
    // The server answers after 60 s; the reader must give up at its 0.3 s timeout (twice,
    // with the retry), far sooner even on a loaded machine.
    slow.delay = Duration::from_secs(60);
    let (url, _, _) = serve(vec![slow]);
    let cfg = OpenAiConfig {
        timeout_secs: 0.3,
        max_retries: 1,
        ..config(&url)
    };
    let r = OpenAiReader::new(cfg).unwrap();
    let t = Instant::now();
    let e = ask(&r, &opts(&["a", "b"])).unwrap_err();
    let took = t.elapsed();
    assert!(matches!(e, ReaderError::Timeout(_)), "{e}");
    assert!(took < Duration::from_secs(20), "gave up after {took:?}");
    assert_eq!((r.stats().requests, r.stats().retries), (2, 1));
}

#[test]
fn http_other_4xx_is_not_retried() {
    let (url, _, _) = serve(vec![reply(401, r#"{"error":"bad key"}"#)]);
    let cfg = OpenAiConfig {
        logprobs: LogprobsMode::Off,
        ..config(&url)
    };
    let r = OpenAiReader::new(cfg).unwrap();
    let e = ask(&r, &opts(&["a", "b"])).unwrap_err();
    assert!(e.to_string().contains("401"), "{e}");
    assert_eq!(r.stats().requests, 1);
}

#[test]
fn http_logprobs_score_the_letters() {
    let body = completion_with_logprobs("C", &[("C", -0.1), (" B", -2.5), ("A", -3.0)]);
    let (url, _, _) = serve(vec![reply(200, body)]);
    let r = OpenAiReader::new(config(&url)).unwrap();
    let out = ask(&r, &opts(&["2", "4", "6", "8"])).unwrap();
    assert_eq!((out.choice, out.tied), (2, 1));
    assert_eq!(
        out.scores,
        vec![-3.0, -2.5, -0.1, reader::openai::ABSENT_LOGPROB]
    );
    assert_eq!(r.stats().logprob_scored, 1);
}

#[test]
fn http_logprobs_rejected_falls_back_to_parsing() {
    let (url, seen, _) = serve(vec![
        reply(400, r#"{"error":"logprobs not supported"}"#),
        reply(200, completion("The answer is B.")),
    ]);
    let r = OpenAiReader::new(config(&url)).unwrap();
    let o = opts(&["2", "4", "6", "8"]);
    assert_eq!(ask(&r, &o).unwrap().choice, 1);
    assert_eq!(ask(&r, &o).unwrap().choice, 1);
    let s = seen.lock().unwrap();
    assert_eq!(s.bodies.len(), 3);
    assert_eq!(s.bodies[0]["logprobs"], true);
    assert!(s.bodies[1].get("logprobs").is_none());
    assert!(s.bodies[2].get("logprobs").is_none(), "stopped asking");
    assert_eq!(r.stats().logprobs_rejected, 1);
}

#[test]
fn http_api_key_from_env_is_sent_but_never_written_out() {
    let var = "CHUNKBENCH_READER_TEST_API_KEY";
    std::env::set_var(var, "sk-test-secret-123");
    let (url, seen, _) = serve(vec![reply(200, completion("A"))]);
    let cfg = OpenAiConfig {
        api_key_env: Some(var.into()),
        ..config(&url)
    };
    let r = OpenAiReader::new(cfg).unwrap();
    let out = ask(&r, &opts(&["x", "y"])).unwrap();
    assert_eq!(
        seen.lock().unwrap().auth[0].as_deref(),
        Some("Bearer sk-test-secret-123")
    );
    assert!(!r.identity().contains("sk-test"));
    assert!(!format!("{r:?}").contains("sk-test"));
    assert!(!serde_json::to_string(&out).unwrap().contains("sk-test"));
    std::env::remove_var(var);
}

#[test]
fn http_concurrency_limit_holds() {
    let mut slow = reply(200, completion("A"));
    slow.delay = Duration::from_millis(150);
    let (url, _, peak) = serve(vec![slow]);
    let cfg = OpenAiConfig {
        concurrency: 2,
        ..config(&url)
    };
    let r = Arc::new(OpenAiReader::new(cfg).unwrap());
    let o = opts(&["x", "y"]);
    thread::scope(|s| {
        for _ in 0..6 {
            let (r, o) = (r.clone(), o.clone());
            s.spawn(move || ask(&r, &o).unwrap());
        }
    });
    assert_eq!(r.stats().requests, 6);
    assert!(
        peak.load(Ordering::SeqCst) <= 2,
        "peak {}",
        peak.load(Ordering::SeqCst)
    );
}

/// CASES 31: equal letter log-probs are a tie, never counted correct.
#[test]
fn case31_tied_logprobs_are_not_correct() {
    let body = completion_with_logprobs("A", &[("A", -0.7), ("B", -0.7), ("C", -3.0)]);
    let (url, _, _) = serve(vec![reply(200, body)]);
    let r = OpenAiReader::new(config(&url)).unwrap();
    let out = ask(&r, &opts(&["0.40", "0.40", "0.10", "0.10"])).unwrap();
    assert_eq!((out.choice, out.tied), (0, 2));
    assert!(!out.is_correct(1) && !out.is_correct(0));
}

/// CASES 32, over the wire, 4- and 10-option variants.
#[test]
fn case32_answer_extraction_over_http() {
    let table: &[(&str, Option<usize>)] = &[
        ("ANSWER: D", Some(3)),
        ("ANSWER: All of the above", Some(3)),
        ("The answer is B. A is a tempting distractor.", Some(1)),
        ("I think the answer is C.", Some(2)),
        ("Answer: (C)\nAnswer: C", Some(2)),
        ("a", None),
        ("None of these", None),
    ];
    let four = opts(&["2", "4", "6", "All of the above"]);
    let ten = opts(&[
        "2",
        "4",
        "6",
        "All of the above",
        "8",
        "10",
        "12",
        "14",
        "16",
        "18",
    ]);
    let script: Vec<Reply> = table
        .iter()
        .chain(table.iter())
        .map(|(c, _)| reply(200, completion(c)))
        .collect();
    let (url, _, _) = serve(script);
    let cfg = OpenAiConfig {
        logprobs: LogprobsMode::Off,
        ..config(&url)
    };
    let r = OpenAiReader::new(cfg).unwrap();
    let mut invalid = 0;
    for options in [&four, &ten] {
        for (content, want) in table {
            let out = ask(&r, options).unwrap();
            match want {
                Some(i) => {
                    assert_eq!((out.choice, out.invalid), (*i, false), "{content:?}");
                    assert!(out.is_correct(*i));
                }
                None => {
                    invalid += 1;
                    assert!(out.invalid, "{content:?}");
                    assert!(
                        (0..options.len()).all(|g| !out.is_correct(g)),
                        "{content:?}"
                    );
                }
            }
        }
    }
    assert_eq!(r.stats().unparsable, invalid);
}

/// CASES 33: six options work; an empty option does not shift later letters.
#[test]
fn case33_variable_option_counts_over_http() {
    let (url, seen, _) = serve(vec![
        reply(200, completion("Answer: C")),
        reply(200, completion("Answer: C")),
    ]);
    let cfg = OpenAiConfig {
        logprobs: LogprobsMode::Off,
        ..config(&url)
    };
    let r = OpenAiReader::new(cfg).unwrap();
    let six = opts(&["4", "6", "7", "8", "9", "10"]);
    let out = r
        .read(&ReaderInput::closed_book("Pick the prime.", &six))
        .unwrap();
    assert_eq!((out.choice, out.scores.len()), (2, 6));
    let vowels = opts(&["b", "", "e", "k"]);
    let out = r
        .read(&ReaderInput::closed_book("Pick the vowel.", &vowels))
        .unwrap();
    assert_eq!(out.choice, 2);
    assert!(out.is_correct(2));
    let s = seen.lock().unwrap();
    let prompt = s.bodies[1]["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("A. b\nB.\nC. e\nD. k"), "{prompt}");
    assert!(
        !prompt.contains("Context:"),
        "closed-book has no context block"
    );
}

/// A server that ignores `logit_bias` (it always generates " A") would report the log-prob
/// of another token than the one scored: the completions reader checks the generated token
/// and fails instead (no real server here behaves so, hence the scripted one).
#[test]
fn completions_scoring_refuses_a_server_that_ignores_logit_bias() {
    let gguf = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        gguf.is_file(),
        "{}: run `chunkbench models fetch`",
        gguf.display()
    );
    let always_a = serde_json::json!({
        "choices": [{"index": 0, "text": " A", "finish_reason": "length",
                     "logprobs": {"tokens": [" A"], "token_logprobs": [-0.7],
                                  "text_offset": [0], "top_logprobs": [{" A": -0.7}]}}]
    })
    .to_string();
    let (url, seen, _) = serve(vec![reply(200, always_a)]);
    let r = OpenAiReader::new(OpenAiConfig {
        api: reader::OpenAiApi::Completions,
        gguf: Some(gguf),
        ..config(&url)
    })
    .unwrap();
    let e = ask(&r, &opts(&["2", "4", "6", "8"])).unwrap_err();
    assert!(matches!(e, ReaderError::Protocol(_)), "{e}");
    assert!(e.to_string().contains("ignores `logit_bias`"), "{e}");
    // " A" was accepted, " B" was not: two requests, the second forcing another token.
    let bodies = &seen.lock().unwrap().bodies;
    assert_eq!(bodies.len(), 2);
    assert_ne!(bodies[0]["logit_bias"], bodies[1]["logit_bias"]);
}
