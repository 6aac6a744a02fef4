//! External chunkers through `kind: command`, end to end with the real libraries from PyPI
//! (pinned in scripts/adapters/setup.sh): LangChain `RecursiveCharacterTextSplitter`,
//! LlamaIndex `SentenceSplitter` and chonkie's `RecursiveChunker`/`TokenChunker`, each on real
//! texts (OpenStax with curly quotes, a QuALITY story, CJK and emoji, CRLF). For every chunk
//! `chunkbench chunk` prints, the text is the exact byte slice of its span and equals, in
//! order, what the library returns when called directly. Plus `kind: spans` and the errors of
//! a command chunker inside a run (nothing of a failed chunker is kept).

mod common;
use common::{chunkbench, json_lines, store, workspace};
use std::path::PathBuf;

/// The adapters' Python (set up, or reused, by scripts/adapters/setup.sh).
fn adapters_python() -> String {
    let o = std::process::Command::new(workspace().join("scripts/adapters/setup.sh"))
        .output()
        .expect("scripts/adapters/setup.sh runs");
    assert!(
        o.status.success(),
        "scripts/adapters/setup.sh failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

fn inputs() -> Vec<PathBuf> {
    let dir = workspace().join("crates/chunker/tests/data/langchain/inputs");
    [
        "openstax_astronomy.txt",
        "quality_article.txt",
        "cjk_emoji.txt",
        "openstax_psychology_crlf.txt",
    ]
    .iter()
    .map(|f| dir.join(f))
    .collect()
}

/// The library's own chunk texts for `file`, through the adapter's `--direct` mode.
fn direct(py: &str, args: &[&str], file: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let doc = serde_json::json!({"id": "d", "title": "", "text": text}).to_string();
    let mut child = std::process::Command::new(py)
        .arg(workspace().join("scripts/adapters/chunk.py"))
        .args(args)
        .arg("--direct")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(doc.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

/// `chunkbench chunk --strategy command` with `argv`, `version` and extra `--with` fields.
fn chunk_command(
    argv: &[String],
    version: &str,
    extra: &[&str],
    file: &str,
) -> std::process::Output {
    let command = format!("command={}", serde_json::to_string(argv).unwrap());
    let version = format!("version={version}");
    let mut args = vec![
        "chunk",
        "--strategy",
        "command",
        "--with",
        &command,
        "--with",
        &version,
    ];
    for w in extra {
        args.extend(["--with", w]);
    }
    args.push(file);
    chunkbench(&args)
}

#[test]
fn adapters_give_the_libraries_chunks_as_exact_spans() {
    let py = adapters_python();
    let script = workspace().join("scripts/adapters/chunk.py");
    let cases: [&[&str]; 4] = [
        &[
            "langchain-recursive",
            "--chunk-size",
            "300",
            "--chunk-overlap",
            "40",
        ],
        &[
            "llamaindex-sentence",
            "--chunk-size",
            "60",
            "--chunk-overlap",
            "10",
        ],
        &["chonkie-recursive", "--chunk-size", "250"],
        &[
            "chonkie-token",
            "--chunk-size",
            "200",
            "--chunk-overlap",
            "30",
        ],
    ];
    let mut total = 0;
    // The README's form of the command: run.sh finds the venv itself.
    let readme = [
        workspace()
            .join("scripts/adapters/run.sh")
            .display()
            .to_string(),
        "langchain-recursive".into(),
        "--chunk-size".into(),
        "300".into(),
    ];
    let f = &inputs()[0];
    let o = chunk_command(
        &readme,
        "langchain-text-splitters 1.1.3",
        &["files=[scripts/adapters/chunk.py, scripts/adapters/setup.sh]"],
        f.to_str().unwrap(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts: Vec<String> = json_lines(&o)
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        texts,
        direct(&py, &["langchain-recursive", "--chunk-size", "300"], f)
    );
    for args in cases {
        for file in inputs() {
            let mut argv = vec![py.clone(), script.display().to_string()];
            argv.extend(args.iter().map(|s| s.to_string()));
            let o = chunk_command(
                &argv,
                &format!("adapter {}", args[0]),
                &[],
                file.to_str().unwrap(),
            );
            assert!(
                o.status.success(),
                "{args:?} on {}: {}",
                file.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            let text = std::fs::read_to_string(&file).unwrap();
            let chunks = json_lines(&o);
            let got: Vec<String> = chunks
                .iter()
                .map(|c| {
                    let (s, e) = (
                        c["start"].as_u64().unwrap() as usize,
                        c["end"].as_u64().unwrap() as usize,
                    );
                    assert_eq!(
                        c["text"].as_str().unwrap(),
                        &text[s..e],
                        "a chunk is its slice"
                    );
                    text[s..e].to_string()
                })
                .collect();
            let want = direct(&py, args, &file);
            assert_eq!(got, want, "{args:?} on {}", file.display());
            assert!(!got.is_empty());
            total += got.len();
        }
    }
    assert!(total > 100, "{total} chunks");
}

#[test]
fn spans_files_and_failing_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("t.txt");
    std::fs::write(&f, "Épée one. Two three.").unwrap();
    let id = f.to_str().unwrap();
    let spans = tmp.path().join("spans.jsonl");
    std::fs::write(
        &spans,
        format!("{{\"doc_id\":{id:?},\"start\":0,\"end\":11}}\n{{\"doc_id\":{id:?},\"text\":\"Two three.\"}}\n"),
    )
    .unwrap();
    let o = chunkbench(&[
        "chunk",
        "--strategy",
        "spans",
        "--with",
        &format!("file={}", spans.display()),
        id,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts: Vec<String> = json_lines(&o)
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, ["Épée one.", "Two three."]);
    // A chunker that crashes, hangs or prints spans out of bounds: an error naming it.
    for (script, want) in [
        ("echo broken >&2; exit 7", "broken"),
        ("sleep 20", "did not finish within 1 s"),
        (
            &format!("cat >/dev/null; echo '{{\"doc_id\":{id:?},\"start\":3,\"end\":999}}'")
                as &str,
            "outside document",
        ),
    ] {
        let argv = ["sh".to_string(), "-c".into(), script.to_string()];
        let o = chunk_command(&argv, "test", &["timeout_secs=1"], id);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "{script}: {err}");
    }

    // Inside a run: the run fails naming the strategy, and no cell or chunk file is kept.
    let cfg = tmp.path().join("bad.yaml");
    std::fs::write(
        &cfg,
        "name: bad\ndatasets: [sciq]\nlimit: 5\nstrategies:\n  ext: {kind: command, command: [sh, -c, 'exit 9'], version: v}\nretrievers:\n  bm25: {kind: bm25}\nk: [3]\nreaders:\n  lexical: {kind: lexical}\n",
    )
    .unwrap();
    let out = tmp.path().join("runs");
    let o = chunkbench(&[
        "run",
        cfg.to_str().unwrap(),
        "--store",
        store().to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("exit status: 9"),
        "{err}"
    );
    let kept: Vec<_> = ["cells", "chunks"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(out.join("bad").join(d))
                .into_iter()
                .flatten()
        })
        .collect();
    assert!(
        kept.is_empty(),
        "files of a failed chunker were kept: {kept:?}"
    );
}
