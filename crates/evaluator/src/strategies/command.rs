//! `kind: command` — any program as a chunker. The documents go to its stdin as JSONL
//! (`{"id", "title", "text"}` per line, corpus order); it prints chunks on stdout in the line
//! format of [`super::spans`] (`{doc_id, start, end}` byte spans, or `{doc_id, text}`
//! located in order). It runs once per corpus, from the working directory of the run.
//!
//! A run that exceeds `timeout_secs` is killed; a non-zero exit, a crash or unreadable output
//! is an error with the exit status and the end of its stderr; nothing it printed is used then.
//! What it prints is read within bounds: stdout up to [`output_limit`] bytes (64 MiB plus 16
//! times the documents' JSONL: every chunk printed as text with room to spare), beyond which
//! the program is killed and the run fails, and only the last 64 KiB of stderr are kept.
//! Identity: the command line and the declared `version` are the entry's fields (so part of
//! the cell id), and the sha256 of every file in `files` (the script, a model, a config) is a
//! cell input, so editing the adapter recomputes its cells.
//!
//! Committed adapters: `scripts/adapters/` (LangChain, LlamaIndex, chonkie; set up by
//! `scripts/adapters/setup.sh`).

use super::{Chunker, Params, StrategyStats};
use anyhow::{bail, Context, Result};
use chunker::{Chunk, Document};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

/// An external chunker program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Command {
    /// The program and its arguments (no shell).
    pub command: Vec<String>,
    /// What the program is, declared by the user (e.g. `langchain-text-splitters 1.1.3`): part
    /// of the identity, since a program's behaviour is not visible in its command line. A
    /// YAML number (`version: 2`) is taken as its text.
    #[serde(deserialize_with = "text_or_number")]
    pub version: String,
    /// Files whose content the output depends on (the script, configs); their sha256 are cell
    /// inputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PathBuf>,
    /// Seconds the program may run for one corpus (default 600).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

/// A string, or a YAML number taken as its text (`2` → `"2"`, `1.5` → `"1.5"`). Quote versions
/// whose text matters (`"1.10"`): YAML reads `1.10` as the number 1.1.
fn text_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum TextOrNumber {
        Text(String),
        Int(i64),
        Float(f64),
    }
    Ok(match TextOrNumber::deserialize(d)? {
        TextOrNumber::Text(s) => s,
        TextOrNumber::Int(i) => i.to_string(),
        TextOrNumber::Float(f) => format!("{f:?}"),
    })
}

fn default_timeout() -> u64 {
    600
}

impl Params for Command {
    const KIND: &'static str = "command";
    const SUMMARY: &'static str = "an external program as the chunker: documents as JSONL on stdin, chunks as `{doc_id, start, end}` or `{doc_id, text}` JSONL on stdout; `command` (argv), `version` (declared), `files` (hashed into the identity), `timeout_secs` (600)";

    fn input_files(&self) -> Vec<(String, PathBuf)> {
        self.files
            .iter()
            .map(|f| (format!("strategy/file/{}", f.display()), f.clone()))
            .collect()
    }

    fn check(&self) -> Result<()> {
        if self.command.first().is_none_or(|p| p.trim().is_empty()) {
            bail!("field `command`: give the program and its arguments, e.g. [scripts/adapters/run.sh, langchain-recursive, --chunk-size, \"400\"]");
        }
        if self.version.trim().is_empty() {
            bail!("field `version`: declare what the program is (name and version), so results of another version are not reused");
        }
        let program = std::path::Path::new(&self.command[0]);
        let found = if program.components().count() > 1 {
            program.is_file()
        } else {
            std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        };
        if !found {
            bail!(
                "field `command`: program `{}` is not a file nor on PATH (a relative path is relative to the directory chunkbench runs in)",
                program.display()
            );
        }
        if self.timeout_secs == 0 {
            bail!("field `timeout_secs` must be at least 1");
        }
        for f in &self.files {
            if !f.is_file() {
                bail!(
                    "field `files`: {} is not a file (a relative path is relative to the directory chunkbench runs in)",
                    f.display()
                );
            }
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        Ok(Box::new(self.clone()))
    }
}

impl Chunker for Command {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        let mut input = Vec::new();
        for d in docs {
            serde_json::to_writer(
                &mut input,
                &serde_json::json!({"id": d.id, "title": d.title, "text": d.text}),
            )?;
            input.push(b'\n');
        }
        let limit = output_limit(input.len());
        let out = run(
            &self.command,
            input,
            Duration::from_secs(self.timeout_secs),
            limit,
        )?;
        let source = format!("output of `{}`", self.command.join(" "));
        let (chunks, blank) = super::spans::read_chunks(&out, docs, &source)?;
        super::spans::corpus_chunks(chunks, blank, docs, || {
            format!(
                "{source}: no chunk for any of the {} documents (the program printed nothing on stdout)",
                docs.len()
            )
        })
    }
}

/// The most bytes a chunker may print on stdout for `input` bytes of documents: 64 MiB plus
/// 16 times the input (a program printing every chunk as `{doc_id, text}` with 50 % overlap
/// needs about 2 times).
pub fn output_limit(input: usize) -> u64 {
    (64u64 << 20).saturating_add((input as u64).saturating_mul(16))
}

/// The stderr bytes kept: the last 64 KiB.
const STDERR_KEEP: usize = 64 << 10;

/// Reads `r` to its end keeping only the last `keep` bytes.
fn read_tail(mut r: impl Read, keep: usize) -> Vec<u8> {
    let mut tail: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match r.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * keep {
                    tail.drain(..tail.len() - keep);
                }
            }
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
    }
    tail
}

/// Runs `argv` with `input` on stdin and returns its stdout (at most `limit` bytes).
///
/// # Errors
/// The program cannot start, exceeds `timeout` (it is killed), prints more than `limit`
/// bytes (it is killed), exits unsuccessfully, or prints non-UTF-8; each error holds the
/// command line and the last lines of stderr.
fn run(argv: &[String], input: Vec<u8>, timeout: Duration, limit: u64) -> Result<String> {
    let line = argv.join(" ");
    use std::os::unix::process::CommandExt;
    let mut child = Process::new(&argv[0])
        .args(&argv[1..])
        // Its own process group, so a timeout kills what it started too.
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("field `command`: cannot start `{line}`"))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || {
        // A program that exits early closes its stdin; that is its exit status's story.
        let _ = stdin.write_all(&input);
    });
    let stdout = child.stdout.take().expect("piped stdout");
    let over = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let over = over.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let r = stdout.take(limit + 1).read_to_end(&mut buf).map(|_| buf);
            if r.as_ref().is_ok_and(|b| b.len() as u64 > limit) {
                over.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            r
        })
    };
    let stderr = child.stderr.take().expect("piped stderr");
    let err_reader = std::thread::spawn(move || read_tail(stderr, STDERR_KEEP));
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if over.load(std::sync::atomic::Ordering::SeqCst) {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let err = tail(&err_reader.join().unwrap_or_default());
            bail!(
                "command chunker `{line}` printed more than {} MiB on stdout (64 MiB plus 16 \
                 times its input) and was killed: it does not stop, or prints far more than \
                 its chunks{err}",
                limit >> 20
            );
        }
        if started.elapsed() > timeout {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let err = tail(&err_reader.join().unwrap_or_default());
            bail!(
                "command chunker `{line}` did not finish within {} s (field `timeout_secs`) and was killed{err}",
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Whatever it left running would hold the pipes open.
    kill_group(child.id());
    let _ = writer.join();
    let out = reader
        .join()
        .map_err(|_| anyhow::anyhow!("reading the output of `{line}` failed"))?
        .with_context(|| format!("cannot read the output of `{line}`"))?;
    if out.len() as u64 > limit {
        bail!(
            "command chunker `{line}` printed more than {} MiB on stdout (64 MiB plus 16 times \
             its input); nothing it printed is used",
            limit >> 20
        );
    }
    let err = tail(&err_reader.join().unwrap_or_default());
    if !status.success() {
        bail!("command chunker `{line}` failed ({status}){err}");
    }
    String::from_utf8(out).map_err(|e| anyhow::anyhow!("the output of `{line}` is not UTF-8: {e}"))
}

/// Kills the process group `pgid` (the chunker and what it started), if any is left; through
/// the system's `kill`, as the workspace forbids unsafe code.
fn kill_group(pgid: u32) {
    let _ = Process::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The last 20 lines of stderr, as `; stderr:\n…` (saying when earlier lines were left out),
/// or nothing when it is empty.
fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let cut = lines.len().saturating_sub(20);
    let head = if cut > 0 {
        format!("; stderr (last 20 of {} lines):", lines.len())
    } else {
        "; stderr:".to_string()
    };
    format!("{head}\n{}", lines[cut..].join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(script: &str, timeout: u64) -> Command {
        Command {
            command: vec!["sh".into(), "-c".into(), script.into()],
            version: "test".into(),
            files: Vec::new(),
            timeout_secs: timeout,
        }
    }

    fn docs() -> Vec<Document> {
        vec![Document::new("a", "alpha beta gamma")]
    }

    #[test]
    fn a_program_chunks_through_stdin_and_stdout() {
        // Reads the JSONL documents and prints one span per document and one located text.
        let c = cmd(
            "n=$(wc -l); printf '{\"doc_id\":\"a\",\"start\":0,\"end\":5}\\n{\"doc_id\":\"a\",\"text\":\"gamma\"}\\n'; echo \"$n docs\" >&2",
            10,
        );
        let (chunks, _) = c.chunk_corpus(&docs(), None).unwrap();
        let spans: Vec<(usize, usize)> =
            chunks.iter().map(|c| (c.span.start, c.span.end)).collect();
        assert_eq!(spans, [(0, 5), (11, 16)]);
    }

    #[test]
    fn crashes_hangs_and_bad_spans_are_errors() {
        let e = |c: Command| format!("{:#}", c.chunk_corpus(&docs(), None).unwrap_err());
        let crash = e(cmd("echo boom >&2; exit 3", 10));
        assert!(
            crash.contains("failed") && crash.contains("3") && crash.contains("boom"),
            "{crash}"
        );
        let t = Instant::now();
        let hang = e(cmd("cat >/dev/null; sleep 600", 1));
        assert!(hang.contains("did not finish within 1 s"), "{hang}");
        assert!(t.elapsed() < Duration::from_secs(120), "killed promptly");
        let oob = e(cmd(
            "cat >/dev/null; echo '{\"doc_id\":\"a\",\"start\":0,\"end\":99}'",
            10,
        ));
        assert!(
            oob.contains("line 1") && oob.contains("outside document `a`"),
            "{oob}"
        );
        let missing = e(Command {
            command: vec!["/nonexistent/chunker".into()],
            ..cmd("", 10)
        });
        assert!(missing.contains("cannot start"), "{missing}");
    }

    /// Issue 36 case 14: a chunker that never stops printing was buffered without limit.
    #[test]
    fn endless_output_is_cut_off_and_stderr_is_kept_short() {
        let t = Instant::now();
        let e = format!(
            "{:#}",
            cmd("cat >/dev/null; yes", 600)
                .chunk_corpus(&docs(), None)
                .unwrap_err()
        );
        assert!(e.contains("printed more than 64 MiB"), "{e}");
        assert!(
            t.elapsed() < Duration::from_secs(300),
            "killed promptly, not at the timeout"
        );
        let e = format!(
            "{:#}",
            cmd(
                "cat >/dev/null; head -c 50000000 /dev/zero | tr '\\0' 'x' >&2; exit 3",
                600
            )
            .chunk_corpus(&docs(), None)
            .unwrap_err()
        );
        assert!(e.contains("failed") && e.len() < 70_000, "{}", e.len());
        assert_eq!(output_limit(0), 64 << 20);
        assert_eq!(read_tail(&b"abcdef"[..], 2), b"ef");
    }

    #[test]
    fn entries_are_checked() {
        let mut c = cmd("true", 10);
        c.version = " ".into();
        assert!(c.check().unwrap_err().to_string().contains("`version`"));
        let mut c = cmd("true", 10);
        c.files = vec!["/nonexistent/file.py".into()];
        assert!(c.check().unwrap_err().to_string().contains("`files`"));
        assert!(Command {
            command: vec![],
            ..cmd("", 1)
        }
        .check()
        .is_err());
        let missing = Command {
            command: vec!["/nonexistent/chunker".into()],
            ..cmd("", 1)
        };
        assert!(missing
            .check()
            .unwrap_err()
            .to_string()
            .contains("not a file nor on PATH"));
        // A YAML number is a version's text; printing nothing is an error, not 0 chunks.
        let c: Command =
            serde_yaml::from_str("{command: [sh, -c, 'cat >/dev/null'], version: 2}").unwrap();
        assert_eq!(c.version, "2");
        let e = format!("{:#}", c.chunk_corpus(&docs(), None).unwrap_err());
        assert!(e.contains("no chunk for any of the 1 documents"), "{e}");
    }
}
