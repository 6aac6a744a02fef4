//! One endpoint of a language-model server, shared by everything that talks to one (the
//! OpenAI-compatible reader, [`crate::lm::ChatModel`] behind the LLM strategies and `data
//! generate`): the URL, the API key (read once from the environment, never printed), fixed
//! headers, the concurrency limit, and the retry policy of [`httpio::with_retries`] (HTTP 429
//! and 5xx, connection errors and timeouts retried with exponential backoff, `Retry-After`
//! honoured up to the cap; other 4xx and malformed JSON not retried). Requests and retries are
//! counted here once.

use crate::ReaderError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// A counting semaphore (concurrency limit).
#[derive(Debug)]
struct Semaphore {
    free: Mutex<usize>,
    cv: Condvar,
}

impl Semaphore {
    fn acquire(&self) -> Permit<'_> {
        let mut n = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *n == 0 {
            n = self.cv.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n -= 1;
        Permit(self)
    }
}

struct Permit<'a>(&'a Semaphore);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.cv.notify_one();
    }
}

/// How a [`Transport`] connects: everything but the endpoint's path.
#[derive(Debug, Clone)]
pub struct TransportConfig<'a> {
    /// Who is configured, for error messages (`openai reader`, `field \`llm\``).
    pub who: &'a str,
    /// Base URL up to the API version (`http://127.0.0.1:8080/v1`); must be http(s).
    pub base_url: &'a str,
    /// Environment variable holding the API key (`None`: no key is sent).
    pub api_key_env: Option<&'a str>,
    /// The header the key is sent in (`None`: `Authorization: Bearer`).
    pub key_header: Option<&'static str>,
    /// Fixed headers of every request (name, value).
    pub headers: &'static [(&'static str, &'static str)],
    /// Total time allowed for one attempt, seconds (> 0).
    pub timeout_secs: f64,
    /// Retries after the first attempt of a transient failure.
    pub max_retries: u32,
    /// First backoff, milliseconds.
    pub backoff_initial_ms: u64,
    /// Backoff cap (also caps `Retry-After`), milliseconds.
    pub backoff_max_ms: u64,
    /// Requests in flight at once (≥ 1).
    pub concurrency: usize,
}

/// One endpoint (module docs).
#[derive(Debug)]
pub struct Transport {
    base_url: String,
    url: String,
    key: Option<httpio::Bearer>,
    headers: &'static [(&'static str, &'static str)],
    agent: httpio::Agent,
    sem: Semaphore,
    backoff: httpio::Backoff,
    requests: AtomicU64,
    retries: AtomicU64,
}

impl Transport {
    /// Checks `cfg` and reads the API key; `endpoint` is appended to the base URL
    /// (`chat/completions`, `messages`).
    ///
    /// # Errors
    /// [`ReaderError::Config`], prefixed by `cfg.who`, for a base URL that is not http(s), a
    /// non-positive timeout, `concurrency = 0`, or an `api_key_env` variable that is unset or
    /// empty (the message names the variable, never a value).
    pub fn new(cfg: &TransportConfig<'_>, endpoint: &str) -> Result<Self, ReaderError> {
        let who = cfg.who;
        let bad = |m: String| Err(ReaderError::Config(format!("{who}: {m}")));
        if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
            return bad(format!(
                "base_url `{}` must start with http:// or https://",
                cfg.base_url
            ));
        }
        if !(cfg.timeout_secs.is_finite() && cfg.timeout_secs > 0.0) {
            return bad("timeout_secs must be positive".into());
        }
        if cfg.concurrency == 0 {
            return bad("concurrency must be at least 1".into());
        }
        let key = match cfg.api_key_env {
            None => None,
            Some(var) => match httpio::Bearer::from_env(var) {
                Ok(k) => Some(match cfg.key_header {
                    Some(h) => k.in_header(h),
                    None => k,
                }),
                Err(m) => return bad(format!("{m} (api_key_env)")),
            },
        };
        let base_url = cfg.base_url.trim_end_matches('/').to_string();
        Ok(Transport {
            url: format!("{base_url}/{endpoint}"),
            base_url,
            key,
            headers: cfg.headers,
            agent: httpio::agent(Duration::from_secs_f64(cfg.timeout_secs)),
            sem: Semaphore {
                free: Mutex::new(cfg.concurrency),
                cv: Condvar::new(),
            },
            backoff: httpio::Backoff {
                max_retries: cfg.max_retries,
                initial: Duration::from_millis(cfg.backoff_initial_ms),
                max: Duration::from_millis(cfg.backoff_max_ms),
            },
            requests: AtomicU64::new(0),
            retries: AtomicU64::new(0),
        })
    }

    /// The base URL without a trailing `/` (identities name it).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// (HTTP attempts made, attempts that were retries) so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.requests.load(Ordering::Relaxed),
            self.retries.load(Ordering::Relaxed),
        )
    }

    /// POSTs the body `make_body` builds (afresh for each attempt, with a tag the caller
    /// keeps, e.g. whether it asked for log-probs) with retries; returns the body of a 2xx
    /// reply. A non-2xx reply for which `again(reply, tag)` holds is retried at once and not
    /// counted as a retry (a negotiation: the caller changed what the next body asks).
    ///
    /// # Errors
    /// [`ReaderError::Http`] for another non-2xx status or a fatal transport error,
    /// [`ReaderError::Timeout`] / [`ReaderError::Http`] when the retries are spent; whatever
    /// `make_body` returns.
    pub fn post<T>(
        &self,
        make_body: &dyn Fn() -> Result<(Vec<u8>, T), ReaderError>,
        again: &dyn Fn(&httpio::Reply, &T) -> bool,
    ) -> Result<String, ReaderError> {
        let attempt = || {
            let (body, tag) = make_body()?;
            let reply = {
                let _permit = self.sem.acquire();
                self.requests.fetch_add(1, Ordering::Relaxed);
                httpio::post_json_with(
                    &self.agent,
                    &self.url,
                    self.key.as_ref(),
                    self.headers,
                    &body,
                )
            };
            match reply {
                Ok(r) if r.ok() => Ok(httpio::Step::Done(r.text)),
                Ok(r) if again(&r, &tag) => Ok(httpio::Step::Again),
                Ok(r) => Err(ReaderError::Http(format!(
                    "{} answered HTTP {}: {}",
                    self.url,
                    r.status,
                    httpio::quote_body(&r.text, 300)
                ))),
                Err(httpio::Transport::Transient(t)) => Ok(httpio::Step::Transient(t)),
                Err(httpio::Transport::Fatal(m)) => {
                    Err(ReaderError::Http(format!("{}: {m}", self.url)))
                }
            }
        };
        let give_up = |g: httpio::GaveUp| {
            let msg = format!(
                "{} failed after {} attempt(s): {}",
                self.url, g.attempts, g.last.what
            );
            if g.last.timeout {
                ReaderError::Timeout(msg)
            } else {
                ReaderError::Http(msg)
            }
        };
        let bump = |_: &httpio::Transient| {
            self.retries.fetch_add(1, Ordering::Relaxed);
        };
        httpio::with_retries(&self.backoff, bump, attempt, give_up)
    }

    /// Parses a reply body as JSON; [`ReaderError::Protocol`] quoting its start otherwise.
    ///
    /// # Errors
    /// As said.
    pub fn parse_json(&self, body: &str) -> Result<serde_json::Value, ReaderError> {
        serde_json::from_str(body).map_err(|e| {
            ReaderError::Protocol(format!(
                "malformed JSON from {}: {e}: {}",
                self.url,
                httpio::quote_body(body, 200)
            ))
        })
    }

    /// Asks the server which models it serves (`GET {base_url}/models`; OpenAI's and
    /// Anthropic's model lists share the shape `{"data": [{"id": ...}, ...]}`) and returns the
    /// reported ids, sorted and comma-separated. A server that does not implement the endpoint
    /// (HTTP 404/405/501) gives `unreported (HTTP N)`, so an identity holding it still says
    /// that nothing was verified.
    ///
    /// # Errors
    /// [`ReaderError::Http`] when the server cannot be reached or answers another error;
    /// [`ReaderError::Protocol`] when the reply is not a model list.
    pub fn served_models(&self) -> Result<String, ReaderError> {
        let url = format!("{}/models", self.base_url);
        let v = match self.get_json(&url)? {
            Ok(v) => v,
            Err(status) => return Ok(format!("unreported (HTTP {status})")),
        };
        let mut ids: Vec<String> = v
            .get("data")
            .and_then(|d| d.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|m| m.get("id").and_then(|i| i.as_str()))
                    .map(str::to_string)
                    .collect()
            })
            .ok_or_else(|| {
                ReaderError::Protocol(format!(
                    "{url}: no `data` list of models in the reply: {}",
                    httpio::quote_body(&v.to_string(), 200)
                ))
            })?;
        ids.sort();
        Ok(ids.join(","))
    }

    /// Asks the server for the one model `model` (`GET {base_url}/models/{model}`, the model's
    /// own entry in OpenAI's and Anthropic's APIs) and returns its `id`: for an alias, the
    /// snapshot it resolves to now. A server without the endpoint (HTTP 404/405/501) gives
    /// `unreported (HTTP N)`.
    ///
    /// # Errors
    /// As [`Transport::served_models`]; [`ReaderError::Protocol`] when the reply has no `id`.
    pub fn served_model(&self, model: &str) -> Result<String, ReaderError> {
        let url = format!("{}/models/{}", self.base_url, path_segment(model));
        let v = match self.get_json(&url)? {
            Ok(v) => v,
            Err(status) => return Ok(format!("unreported (HTTP {status})")),
        };
        v.get("id")
            .and_then(|i| i.as_str())
            .map(str::to_string)
            .ok_or_else(|| {
                ReaderError::Protocol(format!(
                    "{url}: no model `id` in the reply: {}",
                    httpio::quote_body(&v.to_string(), 200)
                ))
            })
    }

    /// `GET url` with the key and headers: the JSON of a 2xx reply, or `Err(status)` for
    /// 404/405/501 (an endpoint the server does not implement).
    fn get_json(&self, url: &str) -> Result<Result<serde_json::Value, u16>, ReaderError> {
        let resp =
            httpio::get_with(&self.agent, url, self.key.as_ref(), self.headers).map_err(|e| {
                ReaderError::Http(format!(
                    "cannot ask {url} which model it serves: {e}; start the server (or fix \
                     `base_url`)"
                ))
            })?;
        match resp.status {
            200..=299 => serde_json::from_str(&resp.text).map(Ok).map_err(|e| {
                ReaderError::Protocol(format!(
                    "{url}: not a model list ({e}): {}",
                    httpio::quote_body(&resp.text, 200)
                ))
            }),
            404 | 405 | 501 => Ok(Err(resp.status)),
            status => Err(ReaderError::Http(format!(
                "{url} answered HTTP {status}: {}",
                httpio::quote_body(&resp.text, 300)
            ))),
        }
    }
}

/// `s` percent-encoded as one URL path segment (RFC 3986 unreserved characters kept).
fn path_segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_model_name_is_one_path_segment() {
        assert_eq!(super::path_segment("claude-haiku-4-5"), "claude-haiku-4-5");
        assert_eq!(
            super::path_segment("Qwen/Qwen2.5 7B"),
            "Qwen%2FQwen2.5%207B"
        );
    }
}
