//! A real headless Chromium driven through the DevTools protocol (CDP over a WebSocket), for
//! the report tests. The browser is Debian's `chromium` (`/usr/bin/chromium`, installed by
//! `scripts/test.sh`; another binary with `CHUNKBENCH_CHROMIUM`). Every page error is kept:
//! uncaught exceptions (`Runtime.exceptionThrown`), console errors and browser log errors, and
//! every network request that is not a `file:` or `data:` URL.

use base64::Engine as _;
use serde_json::{json, Value};
use std::io::ErrorKind;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// The Chromium binary the tests drive.
pub fn chromium() -> PathBuf {
    let p = std::env::var_os("CHUNKBENCH_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        p.exists(),
        "{} is missing: the report tests need a real Chromium; install Debian's `chromium` \
         package (scripts/test.sh does) or set CHUNKBENCH_CHROMIUM",
        p.display()
    );
    p
}

/// A headless Chromium with one page attached.
pub struct Browser {
    child: Child,
    ws: WebSocket<TcpStream>,
    next: u64,
    /// Every event received, in order.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    /// Starts Chromium headless with a fresh profile and attaches to its page, with the
    /// Page, Runtime, Log and Network domains enabled.
    pub fn launch() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "--window-size=1366,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        let port_file = profile.path().join("DevToolsActivePort");
        let t = Instant::now();
        let port: u16 = loop {
            if let Some(p) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|s| s.lines().next().and_then(|l| l.trim().parse().ok()))
            {
                break p;
            }
            assert!(
                t.elapsed() < Duration::from_secs(300),
                "chromium wrote no DevToolsActivePort in 300 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let list: Value = loop {
            let r = ureq::get(&format!("http://127.0.0.1:{port}/json/list"))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok());
            if let Some(v) = r.filter(|v| {
                v.as_array()
                    .is_some_and(|a| a.iter().any(|t| t["type"] == "page"))
            }) {
                break v;
            }
            assert!(
                t.elapsed() < Duration::from_secs(300),
                "no page target in 300 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let url = list
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .expect("a page target")
            .to_string();
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let (ws, _) = tungstenite::client(url.as_str(), stream).expect("CDP websocket");
        let mut b = Browser {
            child,
            ws,
            next: 0,
            events: Vec::new(),
            _profile: profile,
        };
        for domain in ["Page", "Runtime", "Log", "Network"] {
            b.call(&format!("{domain}.enable"), json!({}));
        }
        b
    }

    fn read(&mut self, deadline: Instant) -> Option<Value> {
        loop {
            match self.ws.read() {
                Ok(Message::Text(t)) => return Some(serde_json::from_str(t.as_str()).unwrap()),
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    if Instant::now() > deadline {
                        return None;
                    }
                }
                Err(e) => panic!("CDP connection failed: {e}"),
            }
        }
    }

    /// Calls a CDP method and returns its result; panics on a protocol error.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.ws
            .send(Message::text(
                json!({"id": id, "method": method, "params": params}).to_string(),
            ))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let v = self
                .read(deadline)
                .unwrap_or_else(|| panic!("no answer to {method} in 600 s"));
            if v["id"].as_u64() == Some(id) {
                if let Some(e) = v.get("error") {
                    panic!("{method} failed: {e}");
                }
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    /// Waits (up to `secs`) for an event named `method`, after every event already seen.
    pub fn wait_event(&mut self, method: &str, secs: u64) -> Value {
        let seen = self.events.len();
        if let Some(v) = self.events[..seen]
            .iter()
            .rev()
            .find(|e| e["method"] == method)
        {
            return v.clone();
        }
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let v = self
                .read(deadline)
                .unwrap_or_else(|| panic!("no {method} event in {secs} s"));
            self.events.push(v.clone());
            if v["method"] == method {
                return v;
            }
        }
    }

    /// Opens `path` (a local file) and waits for its load event; returns the milliseconds from
    /// the navigation to the load event.
    pub fn open(&mut self, path: &Path) -> f64 {
        self.open_at(path, "")
    }

    /// [`Browser::open`] with a URL fragment (`hash`, without the `#`).
    pub fn open_at(&mut self, path: &Path, hash: &str) -> f64 {
        let mut url = format!("file://{}", path.canonicalize().unwrap().display());
        if !hash.is_empty() {
            url = format!("{url}#{hash}");
        }
        // From a blank page, so that the same file with another hash loads anew (a change of
        // hash alone is a navigation within the document, with no load event).
        self.navigate("about:blank");
        self.navigate(&url)
    }

    fn navigate(&mut self, url: &str) -> f64 {
        self.events.clear();
        let t = Instant::now();
        self.call("Page.navigate", json!({ "url": url }));
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let v = self
                .read(deadline)
                .unwrap_or_else(|| panic!("{url} did not load in 600 s"));
            let done = v["method"] == "Page.loadEventFired";
            self.events.push(v);
            if done {
                return t.elapsed().as_secs_f64() * 1000.0;
            }
        }
    }

    /// Evaluates `expr` in the page (promises awaited) and returns its value; panics, with the
    /// exception, when it throws.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(ex) = r.get("exceptionDetails") {
            panic!("the page threw on {expr:.200}: {ex}");
        }
        r["result"]["value"].clone()
    }

    /// Collects the events that arrived since the last call (a short drain).
    pub fn drain(&mut self) {
        let deadline = Instant::now() + Duration::from_millis(300);
        while let Some(v) = self.read(deadline) {
            self.events.push(v);
        }
    }

    /// Page errors seen so far: uncaught exceptions, console errors and assertions, browser
    /// log errors.
    pub fn errors(&mut self) -> Vec<String> {
        self.drain();
        self.events
            .iter()
            .filter_map(|e| match e["method"].as_str()? {
                "Runtime.exceptionThrown" => {
                    Some(format!("exception: {}", e["params"]["exceptionDetails"]))
                }
                "Runtime.consoleAPICalled"
                    if matches!(e["params"]["type"].as_str(), Some("error" | "assert")) =>
                {
                    Some(format!(
                        "console.{}: {}",
                        e["params"]["type"], e["params"]["args"]
                    ))
                }
                "Log.entryAdded" if e["params"]["entry"]["level"] == "error" => {
                    Some(format!("log: {}", e["params"]["entry"]))
                }
                _ => None,
            })
            .collect()
    }

    /// URLs the page requested that are not the file itself or inline (`file:`, `data:`,
    /// `about:`): a self-contained page requests none.
    pub fn outside_requests(&mut self) -> Vec<String> {
        self.drain();
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .filter_map(|e| e["params"]["request"]["url"].as_str())
            .filter(|u| {
                !(u.starts_with("file:") || u.starts_with("data:") || u.starts_with("about:"))
            })
            .map(str::to_string)
            .collect()
    }

    /// A full-page PNG screenshot at `width` CSS pixels (`mobile` emulates a phone), written
    /// to `path`; the viewport is restored to 1366 × 900 afterwards.
    pub fn screenshot(&mut self, path: &Path, width: u32, mobile: bool) {
        let metrics =
            json!({"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile});
        self.call("Emulation.setDeviceMetricsOverride", metrics);
        let layout = self.call("Page.getLayoutMetrics", json!({}));
        let h = layout["cssContentSize"]["height"]
            .as_f64()
            .unwrap_or(900.0)
            .ceil();
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": width, "height": h.min(16000.0), "scale": 1}}),
        );
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1366, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
    }
}
