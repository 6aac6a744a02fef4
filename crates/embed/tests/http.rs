//! The HTTP backend against real HTTP servers on 127.0.0.1 started by each test (tiny_http).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use embed::{EmbedError, Embedder, HttpApi, HttpConfig, HttpEmbedder};
use serde_json::{json, Value};

/// One recorded request.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    body: Value,
    auth: Option<String>,
}

/// What the scripted server answers to request number `n` (0-based).
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

struct TestServer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    server: Arc<tiny_http::Server>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

/// Starts a server on an ephemeral loopback port answering with `script`; it stops when the
/// test drops it (or after 10 s without requests).
fn serve(path: &str, script: impl Fn(usize, &Value) -> Reply + Send + 'static) -> TestServer {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
    let port = server.server_addr().to_ip().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s2, seen2) = (Arc::clone(&server), Arc::clone(&seen));
    std::thread::spawn(move || {
        let mut n = 0;
        while let Ok(Some(mut req)) = s2.recv_timeout(Duration::from_secs(10)) {
            let mut text = String::new();
            let _ = req.as_reader().read_to_string(&mut text);
            let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let auth = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string());
            seen2.lock().unwrap().push(Seen {
                path: req.url().to_string(),
                body: body.clone(),
                auth,
            });
            let r = script(n, &body);
            n += 1;
            // Answer from a separate thread so that a slow reply does not block the next one.
            std::thread::spawn(move || {
                std::thread::sleep(r.delay);
                let mut resp = tiny_http::Response::from_string(r.body)
                    .with_status_code(r.status)
                    .with_header(
                        tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap(),
                    );
                if let Some(ra) = r.retry_after {
                    resp =
                        resp.with_header(tiny_http::Header::from_bytes("Retry-After", ra).unwrap());
                }
                let _ = req.respond(resp);
            });
        }
    });
    TestServer {
        url: format!("http://127.0.0.1:{port}{path}"),
        seen,
        server,
    }
}

/// An OpenAI-style answer for the request's inputs: vector i = [i+1, 1, 0, ...] (dim 3), data in
/// reverse order to check that `index` is honoured.
fn openai_answer(body: &Value) -> String {
    let n = body["input"].as_array().map_or(0, Vec::len);
    let data: Vec<Value> = (0..n)
        .rev()
        .map(
            |i| json!({"object": "embedding", "index": i, "embedding": [i as f32 + 1.0, 1.0, 0.0]}),
        )
        .collect();
    json!({"object": "list", "data": data, "model": "m"}).to_string()
}

fn tei_answer(body: &Value) -> String {
    let texts = body["inputs"].as_array().cloned().unwrap_or_default();
    let rows: Vec<Value> = texts
        .iter()
        .map(|t| json!([t.as_str().unwrap().len() as f32, 1.0]))
        .collect();
    Value::Array(rows).to_string()
}

fn fast(mut c: HttpConfig) -> HttpConfig {
    c.backoff_ms = 5;
    // Generous for a loaded machine: the test servers answer at once unless delayed on purpose.
    c.timeout_ms = 60_000;
    c
}

#[test]
fn openai_500_then_success_with_key_and_ordering() {
    std::env::set_var("CHUNKBENCH_TEST_KEY_A", "sk-test-secret-123");
    let srv = serve("/v1/embeddings", |n, body| {
        if n == 0 {
            reply(500, "{\"error\":\"boom\"}")
        } else {
            reply(200, openai_answer(body))
        }
    });
    let mut cfg = fast(HttpConfig::openai(&srv.url, "text-embedding-3-small"));
    cfg.dim = Some(3);
    cfg.api_key_env = Some("CHUNKBENCH_TEST_KEY_A".into());
    let e = HttpEmbedder::new(cfg).unwrap();
    let got = e.embed(&["a", "b"]).unwrap();
    let norm = |v: [f32; 3]| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.map(|x| x / n).to_vec()
    };
    assert_eq!(got, vec![norm([1.0, 1.0, 0.0]), norm([2.0, 1.0, 0.0])]);
    let seen = srv.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "one failed attempt, one retry");
    assert_eq!(seen[1].path, "/v1/embeddings");
    assert_eq!(seen[1].body["model"], "text-embedding-3-small");
    assert_eq!(seen[1].body["input"], json!(["a", "b"]));
    assert_eq!(seen[1].auth.as_deref(), Some("Bearer sk-test-secret-123"));
    assert!(!format!("{e:?}").contains("sk-test-secret-123"));
    assert!(!e.identity().contains("sk-test"));
    assert_eq!(e.stats().texts, 2);
}

#[test]
fn tei_batches_keep_order_and_honour_retry_after() {
    let srv = serve("/embed", |n, body| {
        if n == 1 {
            Reply {
                retry_after: Some("0"),
                ..reply(429, "slow down")
            }
        } else {
            reply(200, tei_answer(body))
        }
    });
    let mut cfg = fast(HttpConfig::tei(&srv.url));
    cfg.batch_size = 2;
    cfg.dim = Some(2);
    let e = HttpEmbedder::new(cfg).unwrap();
    let texts = ["a", "bb", "ccc", "dddd", "eeeee"];
    let got = e.embed(&texts).unwrap();
    for (t, v) in texts.iter().zip(&got) {
        let l = t.len() as f32;
        let n = (l * l + 1.0).sqrt();
        assert!((v[0] - l / n).abs() < 1e-6 && (v[1] - 1.0 / n).abs() < 1e-6);
    }
    let seen = srv.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "3 batches + 1 retry after the 429");
    assert_eq!(
        seen[0].body,
        json!({"inputs": ["a", "bb"], "normalize": true, "truncate": true})
    );
    assert_eq!(seen[3].body["inputs"], json!(["eeeee"]));
    assert!(seen[0].auth.is_none());
}

#[test]
fn a_slow_server_times_out() {
    let srv = serve("/embed", |_, body| Reply {
        // Far beyond the 200 ms timeout, so that a loaded machine cannot blur the two.
        delay: Duration::from_millis(60_000),
        ..reply(200, tei_answer(body))
    });
    let mut cfg = fast(HttpConfig::tei(&srv.url));
    cfg.dim = Some(2);
    cfg.timeout_ms = 200;
    cfg.max_retries = 1;
    let e = HttpEmbedder::new(cfg).unwrap();
    let t0 = Instant::now();
    let err = e.embed(&["x"]).unwrap_err();
    let elapsed = t0.elapsed();
    let msg = err.to_string();
    assert!(
        matches!(err, EmbedError::Http { status: None, .. }),
        "{msg}"
    );
    assert!(
        msg.to_lowercase().contains("timeout") || msg.to_lowercase().contains("timed out"),
        "{msg}"
    );
    assert!(msg.contains("gave up after 2 attempts"), "{msg}");
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    assert_eq!(srv.seen.lock().unwrap().len(), 2);
}

#[test]
fn malformed_json_fails_without_retry() {
    let srv = serve("/v1/embeddings", |_, _| {
        reply(200, "{\"data\": [ {\"embedding\": [1, 2")
    });
    let mut cfg = fast(HttpConfig::openai(&srv.url, "m"));
    cfg.dim = Some(2);
    let e = HttpEmbedder::new(cfg).unwrap();
    let msg = e.embed(&["x"]).unwrap_err().to_string();
    assert!(
        msg.contains("malformed JSON") && msg.contains(&srv.url),
        "{msg}"
    );
    assert_eq!(srv.seen.lock().unwrap().len(), 1);

    // Well-formed JSON of the wrong shape, and a wrong dimension, are errors too.
    let srv = serve("/embed", |n, _| {
        if n == 0 {
            reply(200, "{\"vectors\": []}")
        } else {
            reply(200, "[[1.0, 2.0, 3.0]]")
        }
    });
    let mut cfg = fast(HttpConfig::tei(&srv.url));
    cfg.dim = Some(2);
    let e = HttpEmbedder::new(cfg).unwrap();
    assert!(e
        .embed(&["x"])
        .unwrap_err()
        .to_string()
        .contains("expected a JSON array"));
    assert!(e
        .embed(&["x"])
        .unwrap_err()
        .to_string()
        .contains("dimension 3, expected 2"));
}

#[test]
fn persistent_5xx_gives_up_and_4xx_is_not_retried() {
    std::env::set_var("CHUNKBENCH_TEST_KEY_B", "sk-other-secret-456");
    let srv = serve("/v1/embeddings", |_, _| reply(503, "unavailable"));
    let mut cfg = fast(HttpConfig::openai(&srv.url, "m"));
    cfg.dim = Some(2);
    cfg.max_retries = 2;
    let e = HttpEmbedder::new(cfg).unwrap();
    let err = e.embed(&["x"]).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::Http {
                status: Some(503),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("gave up after 3 attempts"));
    assert_eq!(srv.seen.lock().unwrap().len(), 3);

    // A 401 whose body echoes the key: not retried, key redacted.
    let srv = serve("/v1/embeddings", |_, _| {
        reply(401, "invalid key sk-other-secret-456")
    });
    let mut cfg = fast(HttpConfig::openai(&srv.url, "m"));
    cfg.dim = Some(2);
    cfg.api_key_env = Some("CHUNKBENCH_TEST_KEY_B".into());
    let e = HttpEmbedder::new(cfg).unwrap();
    let msg = e.embed(&["x"]).unwrap_err().to_string();
    assert!(
        msg.contains("HTTP 401")
            && !msg.contains("sk-other-secret-456")
            && msg.contains("<redacted>"),
        "{msg}"
    );
    assert_eq!(srv.seen.lock().unwrap().len(), 1);
}

#[test]
fn configuration_errors_and_dimension_probe() {
    let mut cfg = HttpConfig::openai("http://127.0.0.1:9/v1/embeddings", "m");
    cfg.api_key_env = Some("CHUNKBENCH_TEST_KEY_UNSET_XYZ".into());
    let msg = HttpEmbedder::new(cfg).unwrap_err().to_string();
    assert!(
        msg.contains("CHUNKBENCH_TEST_KEY_UNSET_XYZ") && msg.contains("not set"),
        "{msg}"
    );
    let msg = HttpEmbedder::new(HttpConfig::tei("ftp://x/embed"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("http://"), "{msg}");
    let mut cfg = HttpConfig::tei("http://127.0.0.1:9/embed");
    cfg.batch_size = 0;
    assert!(HttpEmbedder::new(cfg).is_err());

    // Without `dim`, one probe request learns it.
    let srv = serve("/embed", |_, body| reply(200, tei_answer(body)));
    let e = HttpEmbedder::new(fast(HttpConfig::tei(&srv.url))).unwrap();
    assert_eq!(e.dim(), 2);
    assert_eq!(srv.seen.lock().unwrap().len(), 1);

    // Config deserialises from YAML/JSON-like maps with defaults.
    let c: HttpConfig = serde_json::from_str(
        r#"{"api": "openai", "url": "http://h/v1/embeddings", "model": "m", "api_key_env": "K"}"#,
    )
    .unwrap();
    assert_eq!(
        (c.api, c.batch_size, c.max_retries),
        (HttpApi::OpenAi, 32, 4)
    );
}

#[test]
fn connect_puts_the_probe_fingerprint_in_the_identity() {
    // A server answering `scale * [1, -1, 1 + noise]` for every text.
    let server_of = |v: [f32; 3]| {
        serve("/v1/embeddings", move |_, body| {
            let n = body["input"].as_array().map_or(0, Vec::len);
            let data: Vec<Value> = (0..n)
                .map(|i| json!({"index": i, "embedding": v}))
                .collect();
            reply(200, json!({"data": data}).to_string())
        })
    };
    let identity = |srv: &TestServer| {
        let mut cfg = fast(HttpConfig::openai(&srv.url, "m"));
        cfg.dim = Some(3);
        let e = HttpEmbedder::connect(cfg).unwrap();
        // `connect` probes even when the dimension is configured, with the probe text.
        let seen = srv.seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].body["input"], json!([embed::PROBE_TEXT]));
        assert!(e.fingerprint().is_some());
        e.identity().replace(&srv.url, "URL")
    };
    let a = identity(&server_of([0.5, -0.5, 0.7]));
    let noisy = identity(&server_of([0.5000001, -0.4999999, 0.7000001]));
    let other = identity(&server_of([0.5, 0.5, -0.7]));
    assert!(a.contains(":dim=3:probe="), "{a}");
    assert_eq!(a, noisy, "float noise keeps the identity");
    assert_ne!(a, other, "another model's vectors change it");
    // Without a probe (`new` with a configured dimension) there is no fingerprint.
    let srv = server_of([1.0, 0.0, 0.0]);
    let mut cfg = fast(HttpConfig::openai(&srv.url, "m"));
    cfg.dim = Some(3);
    let e = HttpEmbedder::new(cfg).unwrap();
    assert!(e.fingerprint().is_none() && !e.identity().contains("probe="));
    assert_eq!(srv.seen.lock().unwrap().len(), 0);
}
