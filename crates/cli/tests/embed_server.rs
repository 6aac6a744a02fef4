//! `embedder: {kind: openai, ...}` against a real embedding server: infinity-emb from PyPI
//! (scripts/embed-server/setup.sh pins it; serve.sh starts it) serving the pinned MiniLM
//! directory on 127.0.0.1 through sentence-transformers on PyTorch.
//!
//! - the server's vectors equal the local candle embedder's within 1e-5 on real text (OpenStax,
//!   QuALITY, CJK and emoji, inputs longer than the 256-token window);
//! - a run whose strategies and retriever embed through the server retrieves what the same run
//!   with the local embedder retrieves, records the server's identity (endpoint, model,
//!   dimension, probe fingerprint) in every embedding cell's inputs, never the API key, and a
//!   second run reuses every cell;
//! - the same server name serving other vectors (mean pooling switched to CLS) makes every
//!   embedding cell stale, and the run says `embedder/server` changed;
//! - a wrong key and a server that is down fail with errors naming `embedder`, and nothing is
//!   cached.

mod common;
use common::{chunkbench, minilm, run_env as run, store, workspace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KEY_VAR: &str = "CHUNKBENCH_TEST_EMBED_KEY";
const KEY: &str = "sk-embed-test-5f1d";

/// A running infinity-emb server, killed when dropped.
struct Server {
    child: Child,
    base_url: String,
    port: u16,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts scripts/embed-server/serve.sh with `model` on `port` (waiting while a stopped server
/// releases the port) and waits until `GET /models` answers (the first start
/// also creates the venv).
fn serve(dir: &Path, tag: &str, model: &Path, port: u16) -> Server {
    let setup = Command::new(workspace().join("scripts/embed-server/setup.sh"))
        .output()
        .expect("scripts/embed-server/setup.sh runs");
    assert!(
        setup.status.success(),
        "scripts/embed-server/setup.sh failed: {}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let started = Instant::now();
    while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "port {port} stays taken"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = dir.join(format!("server-{tag}.log"));
    let child = Command::new(workspace().join("scripts/embed-server/serve.sh"))
        .arg(model)
        .arg(port.to_string())
        .env("INFINITY_API_KEY", KEY)
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::from(
            std::fs::File::options().append(true).open(&log).unwrap(),
        ))
        .spawn()
        .expect("serve.sh starts");
    let mut server = Server {
        child,
        base_url: format!("http://127.0.0.1:{port}"),
        port,
        log,
    };
    let agent = ureq::Agent::new_with_defaults();
    let started = Instant::now();
    loop {
        let ready = agent
            .get(format!("{}/models", server.base_url))
            .header("Authorization", format!("Bearer {KEY}"))
            .call()
            .is_ok();
        if ready {
            break;
        }
        if let Some(status) = server.child.try_wait().unwrap() {
            panic!(
                "the embedding server exited ({status}):\n{}",
                std::fs::read_to_string(&server.log).unwrap_or_default()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "the embedding server did not answer within 900 s:\n{}",
            std::fs::read_to_string(&server.log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "embedding server (infinity-emb serving {}) ready at {} after {:.1} s",
        model.display(),
        server.base_url,
        started.elapsed().as_secs_f64()
    );
    server
}

/// Real texts: paragraphs of the LangChain parity inputs (OpenStax, QuALITY, CJK and emoji,
/// CRLF), whole files included (longer than MiniLM's 256-token window).
fn texts() -> Vec<String> {
    let dir = workspace().join("crates/chunker/tests/data/langchain/inputs");
    let mut out = vec![String::new(), "a".to_string()];
    for f in [
        "openstax_astronomy.txt",
        "quality_article.txt",
        "cjk_emoji.txt",
        "openstax_psychology_crlf.txt",
    ] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        out.extend(
            text.split("\n\n")
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .take(12)
                .map(str::to_string),
        );
        out.push(text);
    }
    out
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// (cell strategy, question id) → retrieved passages, from a run's per_question.csv.
fn retrieved(run_dir: &Path) -> BTreeMap<(String, String), String> {
    let mut r = csv::Reader::from_path(run_dir.join("per_question.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (s, q, p) = (col("strategy"), col("question_id"), col("passages"));
    r.records()
        .map(|row| {
            let row = row.unwrap();
            ((row[s].to_string(), row[q].to_string()), row[p].to_string())
        })
        .collect()
}

fn config(dir: &Path, name: &str, embedder: &str, cache: &Path) -> PathBuf {
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &p,
        format!(
            "name: {name}\ndatasets: [sciq]\nlimit: 40\n\
             strategies:\n  fixed-60: {{kind: fixed, unit: words, size: 60}}\n  maxmin: {{kind: max-min}}\n\
             retrievers:\n  dense: {{kind: dense}}\nk: [3]\n\
             readers:\n  lexical: {{kind: lexical}}\n\
             embedder: {{{embedder}, cache: {}}}\n",
            cache.display()
        ),
    )
    .unwrap();
    p
}

#[test]
fn openai_embedder_against_a_real_server() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store();
    let server = serve(tmp.path(), "mean", &minilm(), testkit::free_port());

    // 1. Vectors: the server's equal the local candle embedder's within 1e-5.
    use embed::Embedder;
    std::env::set_var(KEY_VAR, KEY);
    let mut http = embed::HttpConfig::openai(
        format!("{}/embeddings", server.base_url),
        "all-MiniLM-L6-v2",
    );
    http.api_key_env = Some(KEY_VAR.into());
    let remote = embed::HttpEmbedder::connect(http).unwrap();
    let local = embed::BertEmbedder::load(minilm()).unwrap();
    let texts = texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (a, b) = (remote.embed(&refs).unwrap(), local.embed(&refs).unwrap());
    assert_eq!((remote.dim(), a.len()), (384, texts.len()));
    let mut worst = (0.0f32, 0usize);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let d = x
            .iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f32::max);
        if d > worst.0 {
            worst = (d, i);
        }
    }
    eprintln!(
        "{} texts: largest |server - local| component difference {:.2e} (text {})",
        texts.len(),
        worst.0,
        worst.1
    );
    assert!(
        worst.0 <= 1e-5,
        "text {} differs by {}: {:?}",
        worst.1,
        worst.0,
        &texts[worst.1].chars().take(80).collect::<String>()
    );

    // 2. A run through the server retrieves what the local run retrieves.
    let envs = [(KEY_VAR, KEY)];
    let served = format!(
        "kind: openai, base_url: '{}', model: all-MiniLM-L6-v2, api_key_env: {KEY_VAR}, \
         tokenizer: {}, max_tokens: 256",
        server.base_url,
        minilm().join("tokenizer.json").display()
    );
    let cfg = config(
        tmp.path(),
        "server",
        &served,
        &tmp.path().join("cache-server"),
    );
    let out = tmp.path().join("runs");
    let o = run(&cfg, &store, &out, &envs);
    assert!(o.status.success(), "{}", text(&o));
    let local_cfg = config(
        tmp.path(),
        "local",
        &format!("model: {}", minilm().display()),
        &tmp.path().join("cache-local"),
    );
    let o = run(&local_cfg, &store, &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let (s, l) = (
        retrieved(&out.join("server")),
        retrieved(&out.join("local")),
    );
    assert_eq!(s.len(), 80, "2 strategies × 40 questions");
    let differ: Vec<_> = s.iter().filter(|(k, v)| l.get(*k) != Some(v)).collect();
    eprintln!(
        "retrieved passages equal to the local embedder's on {} of {} questions",
        s.len() - differ.len(),
        s.len()
    );
    assert!(differ.is_empty(), "different passages: {differ:?}");

    // The server's identity is an input of every cell; the key is nowhere in the run.
    let manifest_text = std::fs::read_to_string(out.join("server/manifest.json")).unwrap();
    assert!(!manifest_text.contains(KEY));
    let manifest: serde_json::Value = serde_json::from_str(&manifest_text).unwrap();
    let identity = manifest["embedder"]["identity"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        identity.starts_with(&format!("http:openai:{}/embeddings", server.base_url))
            && identity.contains(":model=all-MiniLM-L6-v2:")
            && identity.contains(":dim=384:probe="),
        "{identity}"
    );
    let inputs = manifest["cell_inputs"].as_object().unwrap();
    assert_eq!(inputs.len(), 2);
    for i in inputs.values() {
        assert_eq!(i["embedder/server"], identity.as_str(), "{i}");
        assert!(i["embedder/tokenizer"].is_string(), "{i}");
    }
    let o = run(&cfg, &store, &out, &envs);
    assert!(
        o.status.success() && text(&o).contains("(2 reused"),
        "{}",
        text(&o)
    );

    // 3. The same name at the same URL serving other vectors (the model directory behind the
    // server switched from mean to CLS pooling): every cell that embeds is stale.
    let cls = tmp.path().join("minilm-cls");
    common::copy_dir(&minilm(), &cls);
    let pooling = cls.join("1_Pooling/config.json");
    let p = std::fs::read_to_string(&pooling).unwrap();
    let switched = p
        .replace(
            "\"pooling_mode_cls_token\": false",
            "\"pooling_mode_cls_token\": true",
        )
        .replace(
            "\"pooling_mode_mean_tokens\": true",
            "\"pooling_mode_mean_tokens\": false",
        );
    assert_ne!(p, switched, "MiniLM pools by mean: {p}");
    std::fs::write(&pooling, switched).unwrap();
    let port = server.port;
    drop(server);
    let same_url = serve(tmp.path(), "cls", &cls, port);
    let o = run(&cfg, &store, &out, &envs);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("embedder/server") && !t.contains("(2 reused"),
        "a server serving other vectors under the same name must make the cells stale: {t}"
    );
    for l in t.lines().filter(|l| l.contains("embedder/server")).take(2) {
        eprintln!("after the model change: {l}");
    }
    let m2: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("server/manifest.json")).unwrap()).unwrap();
    assert_ne!(m2["embedder"]["identity"], identity.as_str());

    // 4. A wrong key, then a server that is down: errors naming `embedder`, nothing cached.
    let o = run(
        &cfg,
        &store,
        &tmp.path().join("runs-bad-key"),
        &[(KEY_VAR, "sk-wrong")],
    );
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("embedder") && !t.contains("sk-wrong"), "{t}");
    eprintln!("wrong key: {}", t.lines().last().unwrap_or(""));
    drop(same_url);
    let o = run(&cfg, &store, &tmp.path().join("runs-down"), &envs);
    let t = text(&o);
    assert!(!o.status.success() && t.contains("embedder"), "{t}");
    eprintln!("server down: {}", t.lines().last().unwrap_or(""));
    for bad in ["runs-bad-key", "runs-down"] {
        let cells = tmp.path().join(bad).join("server/cells");
        let n = std::fs::read_dir(&cells).map(|d| d.count()).unwrap_or(0);
        assert_eq!(n, 0, "{bad}: nothing is cached");
    }
    let o = chunkbench(&[
        "validate",
        cfg.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("field `embedder`"),
        "{}",
        text(&o)
    );
}
