//! Test helpers shared by the workspace's crates (a dev-dependency only; nothing here ships).
//!
//! - [`workspace`]: the repository root, where `models/`, `data/`, `configs/` and `README.md`
//!   are found.
//! - [`names_agree`]: an enum's strum names equal its serde names.
//! - [`append_line`]: a summary line kept for the test script to print.
//! - [`serve`]: a real HTTP server on 127.0.0.1 (tiny_http) answering each request with a
//!   function of it, for tests of the HTTP embedder and readers against scripted replies.

use std::path::PathBuf;

/// The workspace root (this crate is `crates/testkit`).
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Asserts that every variant's strum name (`Into<&'static str>`) equals its serde name, so
/// the two derives of an enum agree.
///
/// # Panics
/// On the first variant whose names differ, naming the type.
pub fn names_agree<T>()
where
    T: serde::Serialize + strum::VariantArray + Copy + Into<&'static str>,
{
    for v in T::VARIANTS {
        let serde_name = serde_json::to_value(v).expect("variant serialises");
        let name: &'static str = (*v).into();
        assert_eq!(serde_name, name, "{}", std::any::type_name::<T>());
    }
}

/// Prints `line` on stderr and appends it to the file `path` (a summary that a test script
/// shows after the suite, since cargo hides a passing test's output). Never fails.
pub fn append_line(path: &std::path::Path, line: &str) {
    use std::io::Write;
    eprintln!("{line}");
    if let Ok(mut f) = std::fs::File::options()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

/// One request as the handler of [`serve`] sees it.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method (`GET`, `POST`, …).
    pub method: String,
    /// The path and query, as sent.
    pub url: String,
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
    /// Every header as (lower-case name, value), in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy UTF-8).
    pub body: String,
}

/// A TCP port on 127.0.0.1 that was free a moment ago (for a server a test starts).
///
/// # Panics
/// When no local port can be bound.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind 127.0.0.1")
        .local_addr()
        .expect("a local address")
        .port()
}

/// Starts a real HTTP server on 127.0.0.1 (a free port) that answers every request with
/// `handler(request)` = `(status, JSON body text)`, on a background thread for the rest of
/// the test process. Returns `http://127.0.0.1:PORT`.
///
/// # Panics
/// When no local port can be bound.
pub fn serve<F>(handler: F) -> String
where
    F: Fn(&Request) -> (u16, String) + Send + 'static,
{
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = server.server_addr().to_ip().expect("an IP address").port();
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            let mut bytes = Vec::new();
            let _ = req.as_reader().read_to_end(&mut bytes);
            let request = Request {
                method: req.method().to_string(),
                url: req.url().to_string(),
                authorization: req
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Authorization"))
                    .map(|h| h.value.to_string()),
                headers: req
                    .headers()
                    .iter()
                    .map(|h| {
                        (
                            h.field.as_str().as_str().to_ascii_lowercase(),
                            h.value.to_string(),
                        )
                    })
                    .collect(),
                body: String::from_utf8_lossy(&bytes).into_owned(),
            };
            let (status, text) = handler(&request);
            let header = tiny_http::Header::from_bytes("Content-Type", "application/json")
                .expect("a valid header");
            let _ = req.respond(
                tiny_http::Response::from_string(text)
                    .with_status_code(status)
                    .with_header(header),
            );
        }
    });
    format!("http://127.0.0.1:{port}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server answers with the handler's status and body, and passes the request through.
    #[test]
    fn serve_answers_with_the_handler() {
        let url = serve(|r| {
            (
                if r.url == "/missing" { 404 } else { 200 },
                format!("{{\"echo\": {:?}}}", r.body),
            )
        });
        let addr = url.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        use std::io::{Read as _, Write as _};
        write!(
            s,
            "POST /x HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(reply.ends_with("{\"echo\": \"hi\"}"), "{reply}");
        assert!(workspace().join("Cargo.toml").exists());
    }
}
