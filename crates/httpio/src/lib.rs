//! The HTTP helpers chunkbench's embedding-server client (`embed::HttpEmbedder`) and
//! OpenAI-compatible reader (`reader::OpenAiReader`) share: one JSON POST, one bearer key
//! read from the environment, and one retry loop with exponential backoff.
//!
//! **What is retried.** HTTP 429 and 5xx answers, an unreadable response body, and transport
//! failures that may pass (timeouts, refused or reset connections, unresolved hosts, protocol
//! errors) are [`Transient`]: retried up to [`Backoff::max_retries`] times. Any other status
//! (2xx, and 4xx other than 429) is a [`Reply`] for the caller to judge; other transport errors
//! (a malformed URL, say) are [`Transport::Fatal`] and are not retried.
//!
//! **How long it waits.** Before retry `n` (0-based) the loop sleeps
//! `min(initial · 2^n, max)`, or the server's `Retry-After` (seconds, integer or decimal;
//! HTTP dates are ignored) capped at `max` when it sent one (RFC 9110 §10.2.3).
//!
//! **Secrets.** A [`Bearer`] key is read once from a named environment variable, sent only in
//! the `Authorization` header (or the one header a protocol names, [`Bearer::in_header`]), and prints as `<redacted>`. A key that looks secret (see
//! [`looks_secret`]) is also registered with the one redaction layer of the process
//! ([`redact`]), which applies where text *leaves* the process: error messages (every
//! [`Transport`] message, [`quote_body`]), and the stored, printed and reported copies of model
//! replies (the readers, the generation cache, `data generate`'s files). Replies are returned
//! to the caller exactly as the server sent them, so redaction never changes what is parsed,
//! scored, located or indexed. A placeholder key (`EMPTY`, `none`, `sk-no-key-required`: under
//! 8 characters, or without a digit and under 24) is sent but not redacted — replacing it would
//! rewrite replies that contain the word — and a warning says so once per variable.

#![forbid(unsafe_code)]

use std::time::Duration;

/// The HTTP client (ureq 3), re-exported so callers need no direct dependency on it.
pub use ureq::Agent;

/// Response bodies larger than this (bytes, 256 MiB) are an error, not a memory blow-up.
pub const BODY_LIMIT: u64 = 256 << 20;

/// The keys [`Bearer::from_env`] has read in this process (the redaction layer's list).
static SECRETS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Keys shorter than this (characters) are placeholders, never redacted ([`looks_secret`]).
pub const MIN_SECRET_LEN: usize = 8;

/// Whether `key` looks like a secret worth redacting: at least [`MIN_SECRET_LEN`] characters
/// without whitespace, and a digit among them or at least 24 characters. Placeholders local
/// servers take (`EMPTY`, `none`, `dummy`, `sk-no-key-required`) do not: replacing such a
/// word in a reply would change the reply ("the empty set").
pub fn looks_secret(key: &str) -> bool {
    let n = key.chars().count();
    n >= MIN_SECRET_LEN
        && !key.chars().any(char::is_whitespace)
        && (key.chars().any(|c| c.is_ascii_digit()) || n >= 24)
}

/// `text` with every secret key read by [`Bearer::from_env`] in this process replaced by
/// `<redacted>` (module docs: the one redaction layer applied where text leaves the process;
/// never to a reply before it is parsed).
///
/// A key is found as written and as a server may echo it: in any ASCII letter case,
/// JSON-escaped (`/` as `\/`, as PHP's `json_encode` writes it; `"` and `\` escaped),
/// URL-encoded (percent-encoding, either hex case), and base64 (standard and URL-safe, of the
/// key and of the header value `Bearer KEY`). Text that holds `\uXXXX` escapes is redacted by
/// decoding first: callers pass decoded strings, and [`quote_body`] decodes a JSON body before
/// quoting it.
pub fn redact(text: &str) -> String {
    let secrets = SECRETS.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = text.to_string();
    for s in secrets.iter() {
        for v in echoes(s) {
            out = replace_ascii_case_insensitive(&out, &v, "<redacted>");
        }
    }
    out
}

/// Whether [`redact`] would change `text`.
pub fn holds_secret(text: &str) -> bool {
    redact(text) != text
}

/// A server's body quoted for an error message: at most `max` bytes, redacted. A JSON body is
/// decoded and written again first, so a key echoed with `\uXXXX` escapes is found too.
pub fn quote_body(text: &str, max: usize) -> String {
    let decoded = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string(&v).ok());
    clip(&redact(decoded.as_deref().unwrap_or(text)), max)
}

/// The forms in which a server may echo `key` (see [`redact`]).
fn echoes(key: &str) -> Vec<String> {
    use base64::Engine;
    let json = key.replace('\\', "\\\\").replace('"', "\\\"");
    let mut v = vec![key.to_string(), json.clone(), json.replace('/', "\\/")];
    let percent: String = key
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    v.push(percent);
    for raw in [key.to_string(), format!("Bearer {key}")] {
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            // Without the last, partial group: the base64 of a longer text holding the key
            // at a 3-byte boundary starts with these characters too.
            let whole = raw.len() / 3 * 3;
            v.push(engine.encode(&raw.as_bytes()[..whole]));
        }
    }
    v.retain(|s| s.len() >= MIN_SECRET_LEN);
    v.sort();
    v.dedup();
    // Longest first, so a longer escaped form is not cut by a shorter one inside it.
    v.sort_by_key(|s| std::cmp::Reverse(s.len()));
    v
}

/// `hay` with every occurrence of `needle`, ignoring ASCII letter case, replaced by `with`.
/// ASCII lowercasing keeps every byte offset, so the matches of the lowercased strings are
/// the byte ranges to replace in `hay`.
fn replace_ascii_case_insensitive(hay: &str, needle: &str, with: &str) -> String {
    if needle.is_empty() {
        return hay.to_string();
    }
    let (h, n) = (hay.to_ascii_lowercase(), needle.to_ascii_lowercase());
    let mut out = String::with_capacity(hay.len());
    let mut last = 0;
    for (i, _) in h.match_indices(&n) {
        out.push_str(&hay[last..i]);
        out.push_str(with);
        last = i + n.len();
    }
    out.push_str(&hay[last..]);
    out
}

/// An API key from the environment, sent as `Authorization: Bearer <key>` (or, after
/// [`Bearer::in_header`], as the value of another header, e.g. Anthropic's `x-api-key`).
#[derive(Clone)]
pub struct Bearer(String, Option<&'static str>);

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(<redacted>)")
    }
}

impl Bearer {
    /// Reads the key from the environment variable `var` (surrounding whitespace trimmed).
    ///
    /// # Errors
    /// A message naming `var` (never a value) when it is unset, not Unicode, or blank.
    pub fn from_env(var: &str) -> Result<Bearer, String> {
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => {
                let key = v.trim().to_string();
                if looks_secret(&key) {
                    let mut secrets = SECRETS.lock().unwrap_or_else(|p| p.into_inner());
                    if !secrets.contains(&key) {
                        secrets.push(key.clone());
                    }
                } else {
                    warn_placeholder(var, &key);
                }
                Ok(Bearer(key, None))
            }
            _ => Err(format!("environment variable `{var}` is not set or empty")),
        }
    }

    /// `message` passed through [`redact`] (a placeholder key is left as it is).
    pub fn redact(&self, message: String) -> String {
        redact(&message)
    }

    /// The same key, sent as the whole value of the header `name` instead of
    /// `Authorization: Bearer` (Anthropic's Messages API: `x-api-key`).
    pub fn in_header(self, name: &'static str) -> Bearer {
        Bearer(self.0, Some(name))
    }

    /// Adds the key's header to `req`.
    pub fn authorize<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match self.1 {
            None => req.header("Authorization", format!("Bearer {}", self.0)),
            Some(name) => req.header(name, &self.0),
        }
    }
}

/// Prints, once per variable and process, that the key in `var` is a placeholder: sent, not
/// redacted ([`looks_secret`]).
fn warn_placeholder(var: &str, key: &str) {
    static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    if !warned.iter().any(|v| v == var) {
        warned.push(var.to_string());
        eprintln!(
            "warning: environment variable `{var}` holds a placeholder key ({} characters{}); it \
             is sent as the bearer token but not redacted from replies and messages, since \
             replacing the word would rewrite replies that contain it. A real API key (8 or \
             more characters with a digit, or 24 or more) is redacted",
            key.chars().count(),
            if key.chars().all(|c| c.is_ascii_alphabetic()) {
                ", a word"
            } else {
                ""
            }
        );
    }
}

/// An agent whose every request (connect, send, read) must finish within `timeout`, and which
/// returns non-2xx statuses as replies rather than errors.
pub fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout.max(Duration::from_millis(1))))
        .http_status_as_error(false)
        .build()
        .into()
}

/// A reply the caller judges: a 2xx, or a 4xx other than 429.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body, decoded as UTF-8.
    pub text: String,
}

impl Reply {
    /// Whether the status is 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A failure that may pass: retried with backoff.
#[derive(Debug, Clone, PartialEq)]
pub struct Transient {
    /// What happened: `HTTP 503: <start of body>`, or the transport error.
    pub what: String,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// Whether the request timed out.
    pub timeout: bool,
    /// The server's `Retry-After`, when it sent a number of seconds.
    pub retry_after: Option<Duration>,
}

/// Why a POST gave no [`Reply`].
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// Worth retrying (see the crate docs).
    Transient(Transient),
    /// Not worth retrying (e.g. a malformed URL); the message is the transport error.
    Fatal(String),
}

/// `text` cut to at most `max` bytes at a character boundary, with `…` when it was longer
/// (for quoting a server's body in an error message).
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn transport_error(e: ureq::Error) -> Transport {
    let timeout = matches!(e, ureq::Error::Timeout(_))
        || matches!(&e, ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut);
    let passing = timeout
        || matches!(
            e,
            ureq::Error::Io(_)
                | ureq::Error::ConnectionFailed
                | ureq::Error::Protocol(_)
                | ureq::Error::HostNotFound
        );
    let what = format!("request failed: {e}");
    if passing {
        Transport::Transient(Transient {
            what,
            status: None,
            timeout,
            retry_after: None,
        })
    } else {
        Transport::Fatal(what)
    }
}

/// Sends one `POST url` with a JSON `body` (and the bearer key when given) and classifies the
/// outcome (see the crate docs).
///
/// # Errors
/// [`Transport::Transient`] for 429, 5xx, an unreadable body or a passing transport failure
/// (the message starts with the status and the first 200 bytes of the body);
/// [`Transport::Fatal`] for other transport errors.
pub fn post_json(
    agent: &ureq::Agent,
    url: &str,
    bearer: Option<&Bearer>,
    body: &[u8],
) -> Result<Reply, Transport> {
    post_json_with(agent, url, bearer, &[], body)
}

/// [`post_json`] with fixed extra headers (name, value), e.g. `anthropic-version`.
///
/// # Errors
/// As [`post_json`].
pub fn post_json_with(
    agent: &ureq::Agent,
    url: &str,
    bearer: Option<&Bearer>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply, Transport> {
    let mut req = agent.post(url).header("Content-Type", "application/json");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(b) = bearer {
        req = b.authorize(req);
    }
    let mut resp = req.send(body).map_err(|e| redacted(transport_error(e)))?;
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64);
    let text = match resp
        .body_mut()
        .with_config()
        .limit(BODY_LIMIT)
        .read_to_string()
    {
        // As the server sent it: redaction applies where text leaves the process (module
        // docs), never to what is parsed.
        Ok(t) => t,
        Err(e) => {
            return Err(Transport::Transient(Transient {
                what: redact(&format!(
                    "HTTP {status}: cannot read the response body: {e}"
                )),
                status: Some(status),
                timeout: matches!(e, ureq::Error::Timeout(_)),
                retry_after,
            }))
        }
    };
    if status == 429 || status >= 500 {
        return Err(Transport::Transient(Transient {
            what: format!("HTTP {status}: {}", quote_body(&text, 200)),
            status: Some(status),
            timeout: false,
            retry_after,
        }));
    }
    Ok(Reply { status, text })
}

/// `t` with [`redact`] applied to its message.
fn redacted(t: Transport) -> Transport {
    match t {
        Transport::Transient(mut x) => {
            x.what = redact(&x.what);
            Transport::Transient(x)
        }
        Transport::Fatal(m) => Transport::Fatal(redact(&m)),
    }
}

/// Sends one `GET url` (with the bearer key when given) and returns the status and the body
/// (at most [`BODY_LIMIT`] bytes) as sent; the transport error's message is redacted.
///
/// # Errors
/// The transport error's message (redacted) when no answer came.
pub fn get(agent: &ureq::Agent, url: &str, bearer: Option<&Bearer>) -> Result<Reply, String> {
    get_with(agent, url, bearer, &[])
}

/// [`get`] with fixed extra headers (name, value).
///
/// # Errors
/// As [`get`].
pub fn get_with(
    agent: &ureq::Agent,
    url: &str,
    bearer: Option<&Bearer>,
    headers: &[(&str, &str)],
) -> Result<Reply, String> {
    let mut req = agent.get(url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(b) = bearer {
        req = b.authorize(req);
    }
    let mut resp = req.call().map_err(|e| redact(&e.to_string()))?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(BODY_LIMIT)
        .read_to_string()
        .unwrap_or_default();
    Ok(Reply { status, text })
}

/// How often and how long to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The wait before the first retry; doubled for each further one.
    pub initial: Duration,
    /// The longest wait, also the cap on a server's `Retry-After`.
    pub max: Duration,
}

impl Backoff {
    /// The wait before retry `retry` (0-based): the server's `retry_after` when given,
    /// otherwise `initial · 2^retry`, either capped at [`Backoff::max`].
    pub fn wait(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        retry_after
            .unwrap_or_else(|| self.initial.saturating_mul(1u32 << retry.min(20)))
            .min(self.max)
    }
}

/// What one attempt of [`with_retries`] came to.
#[derive(Debug)]
pub enum Step<T> {
    /// Finished.
    Done(T),
    /// Failed in a way that may pass: wait and retry, if retries are left.
    Transient(Transient),
    /// Try again at once without spending a retry (the caller changed its request, e.g. a
    /// reader that learnt the server refuses log-probs).
    Again,
}

/// The retries ran out.
#[derive(Debug, Clone, PartialEq)]
pub struct GaveUp {
    /// Attempts made (retries + 1, not counting [`Step::Again`]).
    pub attempts: u32,
    /// The last failure.
    pub last: Transient,
}

/// Calls `attempt` until it is done, fails, or has failed transiently more than
/// [`Backoff::max_retries`] times; `on_retry` is called before each wait (for counters).
///
/// # Errors
/// The error `attempt` returned, or `give_up`'s when the retries ran out.
pub fn with_retries<T, E>(
    backoff: &Backoff,
    mut on_retry: impl FnMut(&Transient),
    mut attempt: impl FnMut() -> Result<Step<T>, E>,
    give_up: impl FnOnce(GaveUp) -> E,
) -> Result<T, E> {
    let mut retry = 0u32;
    loop {
        match attempt()? {
            Step::Done(v) => return Ok(v),
            Step::Again => {}
            Step::Transient(t) => {
                if retry >= backoff.max_retries {
                    return Err(give_up(GaveUp {
                        attempts: retry + 1,
                        last: t,
                    }));
                }
                on_retry(&t);
                std::thread::sleep(backoff.wait(retry, t.retry_after));
                retry += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A hostile probe: a server that JSON-escapes `/` (PHP's `json_encode`) or upper-cases
    /// the key echoed it past the redaction.
    #[test]
    fn echoed_keys_are_redacted_in_every_form() {
        let key = "Zm9v/YmFy+YmF6/cXV4MTIzNDU2Nzg5";
        SECRETS.lock().unwrap().push(key.to_string());
        for echo in [
            key.to_string(),
            key.replace('/', "\\/"),
            key.to_ascii_uppercase(),
            key.to_ascii_lowercase(),
        ] {
            let got = redact(&format!(
                "HTTP 401: {{\"error\": \"Invalid key: {echo}\"}} ünï"
            ));
            assert_eq!(
                got, "HTTP 401: {\"error\": \"Invalid key: <redacted>\"} ünï",
                "{echo}"
            );
        }
    }

    /// Issue 56 case 3: a key echoed with `\uXXXX` escapes, URL-encoded or in base64.
    #[test]
    fn escaped_url_encoded_and_base64_echoes_are_redacted() {
        use base64::Engine;
        let key = "sk-Live/4242+abcdefgh";
        SECRETS.lock().unwrap().push(key.to_string());
        let escaped: String = key
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let body = format!("{{\"error\": \"bad key {escaped}\"}}");
        assert_eq!(quote_body(&body, 200), "{\"error\":\"bad key <redacted>\"}");
        let url = "sk-Live%2F4242%2babcdefgh";
        assert_eq!(redact(&format!("GET /?key={url}")), "GET /?key=<redacted>");
        for raw in [key.to_string(), format!("Bearer {key}")] {
            let b64 = base64::engine::general_purpose::STANDARD.encode(&raw);
            assert!(holds_secret(&format!("auth: {b64}")), "{b64}");
        }
    }

    /// Issue 56 case 2: a placeholder key is never redacted, so a reply saying "the empty
    /// set" stays as it is.
    #[test]
    fn placeholder_keys_are_sent_but_never_rewrite_text() {
        for k in [
            "EMPTY",
            "none",
            "dummy",
            "sk-no-key-required",
            "not needed at all 123",
        ] {
            assert!(!looks_secret(k), "{k}");
        }
        for k in ["sk-proj-1a2b3c4d", "abcdefghijklmnopqrstuvwxyz"] {
            assert!(looks_secret(k), "{k}");
        }
        std::env::set_var("HTTPIO_PLACEHOLDER_KEY", "EMPTY");
        let key = Bearer::from_env("HTTPIO_PLACEHOLDER_KEY").unwrap();
        assert_eq!(key.0, "EMPTY");
        assert_eq!(redact("the empty set is EMPTY"), "the empty set is EMPTY");
    }

    #[test]
    fn clip_cuts_at_a_character_boundary() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcd", 3), "abc…");
        assert_eq!(clip("aé", 2), "a…", "é is two bytes");
    }

    #[test]
    fn waits_double_and_are_capped_retry_after_too() {
        let b = Backoff {
            max_retries: 9,
            initial: 250 * MS,
            max: 1500 * MS,
        };
        let waits: Vec<u128> = (0..5).map(|r| b.wait(r, None).as_millis()).collect();
        assert_eq!(waits, [250, 500, 1000, 1500, 1500]);
        assert_eq!(b.wait(0, Some(700 * MS)), 700 * MS);
        assert_eq!(b.wait(3, Some(Duration::from_secs(60))), 1500 * MS);
        assert_eq!(b.wait(40, None), 1500 * MS, "no overflow on many retries");
    }

    fn transient(n: u16) -> Transient {
        Transient {
            what: format!("HTTP {n}"),
            status: Some(n),
            timeout: false,
            retry_after: Some(Duration::ZERO),
        }
    }

    #[test]
    fn retries_run_out_after_max_retries_and_again_is_free() {
        let b = Backoff {
            max_retries: 2,
            initial: MS,
            max: MS,
        };
        let (mut calls, mut retries) = (0, 0);
        let r: Result<(), GaveUp> = with_retries(
            &b,
            |_| retries += 1,
            || {
                calls += 1;
                Ok(if calls == 1 {
                    Step::Again
                } else {
                    Step::Transient(transient(503))
                })
            },
            |g| g,
        );
        let g = r.unwrap_err();
        assert_eq!((g.attempts, calls, retries), (3, 4, 2));
        assert_eq!(g.last.status, Some(503));

        let mut calls = 0;
        let r: Result<u32, String> = with_retries(
            &b,
            |_| {},
            || {
                calls += 1;
                Ok(if calls < 3 {
                    Step::Transient(transient(429))
                } else {
                    Step::Done(calls)
                })
            },
            |g| format!("{g:?}"),
        );
        assert_eq!(r, Ok(3));
        let r: Result<u32, String> = with_retries(
            &b,
            |_| {},
            || Err("fatal".to_string()),
            |g| format!("{g:?}"),
        );
        assert_eq!(r, Err("fatal".into()));
    }

    /// A real server: 503 with `Retry-After: 0.01`, then 404, then 200; the key is sent.
    #[test]
    fn post_json_classifies_a_real_server() {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", server.server_addr().to_ip().unwrap());
        let handle = std::thread::spawn(move || {
            let mut auth = Vec::new();
            for (status, extra) in [(503, true), (404, false), (200, false)] {
                let req = server.recv().unwrap();
                auth.push(
                    req.headers()
                        .iter()
                        .find(|h| h.field.equiv("Authorization"))
                        .map(|h| h.value.to_string()),
                );
                let mut resp = tiny_http::Response::from_string(format!("body {status}"))
                    .with_status_code(status);
                if extra {
                    resp = resp
                        .with_header(tiny_http::Header::from_bytes("Retry-After", "0.01").unwrap());
                }
                req.respond(resp).unwrap();
            }
            auth
        });
        std::env::set_var("HTTPIO_TEST_KEY", " sk-test-0123 ");
        let key = Bearer::from_env("HTTPIO_TEST_KEY").unwrap();
        assert_eq!(format!("{key:?}"), "Bearer(<redacted>)");
        assert_eq!(key.redact("x sk-test-0123 y".into()), "x <redacted> y");
        let a = agent(Duration::from_secs(5));
        match post_json(&a, &url, Some(&key), b"{}") {
            Err(Transport::Transient(t)) => {
                assert_eq!(t.status, Some(503));
                assert_eq!(t.retry_after, Some(10 * MS));
                assert!(t.what.starts_with("HTTP 503: body 503"), "{}", t.what);
            }
            other => panic!("{other:?}"),
        }
        let r = post_json(&a, &url, Some(&key), b"{}").unwrap();
        assert_eq!((r.status, r.ok()), (404, false));
        let r = post_json(&a, &url, None, b"{}").unwrap();
        assert_eq!((r.status, r.ok(), r.text.as_str()), (200, true, "body 200"));
        let auth = handle.join().unwrap();
        assert_eq!(
            auth,
            [
                Some("Bearer sk-test-0123".into()),
                Some("Bearer sk-test-0123".into()),
                None
            ]
        );
        assert!(Bearer::from_env("HTTPIO_UNSET_VARIABLE")
            .unwrap_err()
            .contains("`HTTPIO_UNSET_VARIABLE`"));
        match post_json(&a, "not a url", None, b"{}") {
            Err(Transport::Fatal(m)) => assert!(m.starts_with("request failed"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
