//! `kind: python` — a chunker object living in the Python process that started the run: the
//! Python API's `chunkbench_harness.run(config, chunkers={"NAME": obj})` (crates/python)
//! writes this entry for each object and hosts the object here ([`host`]) for the run.
//!
//! The object (a callable from text to strings or spans, a LangChain splitter, a chonkie
//! chunker, a LlamaIndex node parser) is called through [`HostedChunker`], in batches of
//! [`BATCH_DOCUMENTS`] documents; what it returns is located in each document exactly as the
//! command protocol's output is ([`super::spans::read_chunks`], one document at a time): texts
//! by its rule for located texts, character offsets checked against the text they claim, so
//! every passage is a byte span of its document; its errors name the document and the chunk.
//!
//! Identity: the entry's fields — the object's qualified name, the declared or package
//! `version`, and the `fingerprint` (sha256 of the object's source and state, computed by the
//! Python side) — are the cell's configuration, so the same object gives the same cell ids in
//! every process, and a changed object (source, parameters, version) new ones.
//!
//! The command line reads the entry too: it reuses the finished cells of such a strategy (a run
//! started in Python and continued with `chunkbench run`), but cannot compute new ones (no
//! object is hosted then): chunking fails with an error saying so.

use super::{Chunker, Params, StrategyStats};
use anyhow::{bail, Context, Result};
use chunker::{Chunk, Document};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Documents handed to the hosted object per call: few, so that a stop request (Ctrl-C in
/// Python) is seen after a few documents' chunking, not a corpus'.
pub const BATCH_DOCUMENTS: usize = 8;

/// A Python chunker object, identified by what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Python {
    /// The object's qualified name (`langchain_text_splitters.character.RecursiveCharacterTextSplitter`).
    pub object: String,
    /// Declared by the user (`version=`), else the version of the package the object comes
    /// from; may be empty for an object whose source could be read.
    #[serde(default)]
    pub version: String,
    /// sha256 (hex) of the object's source (its class and base classes, or the function) and
    /// state (attributes, a function's defaults and closure), as the Python side computes it.
    pub fingerprint: String,
}

/// One piece the hosted object returned for a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A chunk's text, located in order (the first occurrence starting after the previous
    /// chunk's start).
    Text(String),
    /// A chunk's text with the character offset the library reported for it (chonkie's
    /// `start_index`, LlamaIndex's `start_char_idx`): used when the document's text at that
    /// offset is this text, else the text is located in order.
    TextAt(String, usize),
    /// A span `[start, end)` in characters (Unicode scalar values) of the document's text.
    Chars(usize, usize),
}

/// A chunker hosted by the embedding process (the Python object behind an entry).
pub trait HostedChunker: Send + Sync {
    /// The pieces of each document of `docs`, in order, one list per document.
    ///
    /// # Errors
    /// The object raised (its message), or returned something that is not a list of chunks.
    fn split(&self, docs: &[&Document]) -> Result<Vec<Vec<Piece>>>;
}

type Hosted = Mutex<BTreeMap<String, Arc<dyn HostedChunker>>>;

fn hosted() -> &'static Hosted {
    static HOSTED: std::sync::OnceLock<Hosted> = std::sync::OnceLock::new();
    HOSTED.get_or_init(Default::default)
}

/// Hosts `chunker` for entries with this `fingerprint` until the guard is dropped.
pub fn host(fingerprint: &str, chunker: Arc<dyn HostedChunker>) -> HostGuard {
    hosted()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(fingerprint.to_string(), chunker);
    HostGuard(fingerprint.to_string())
}

/// Removes a hosted chunker when dropped ([`host`]).
pub struct HostGuard(String);

impl Drop for HostGuard {
    fn drop(&mut self) {
        hosted()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

impl Params for Python {
    const KIND: &'static str = "python";
    const SUMMARY: &'static str = "a Python chunker object given to `chunkbench_harness.run(config, chunkers={NAME: obj})` (README \"From Python\"): a callable from text to strings or spans, or an object with `split_text`, `chunk` or `get_nodes_from_documents`; `object`, `version`, `fingerprint` (sha256 of its source and state) are written by the API; `chunkbench run` reuses its finished cells";

    fn check(&self) -> Result<()> {
        if self.object.trim().is_empty() {
            bail!("field `object`: the Python object's qualified name is missing (entries of kind `python` are written by chunkbench_harness.run)");
        }
        if self.fingerprint.len() != 64 || !self.fingerprint.bytes().all(|b| b.is_ascii_hexdigit())
        {
            bail!(
                "field `fingerprint`: {:?} is not a sha256 in hex (entries of kind `python` are written by chunkbench_harness.run)",
                self.fingerprint
            );
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let host = hosted()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self.fingerprint)
            .cloned();
        Ok(Box::new(PythonChunker {
            entry: self.clone(),
            host,
        }))
    }
}

/// The entry with its hosted object, if the process hosts one.
struct PythonChunker {
    entry: Python,
    host: Option<Arc<dyn HostedChunker>>,
}

impl Chunker for PythonChunker {
    /// Without its hosted object, every cell must be finished (by this code version) already:
    /// the command line can reuse them but not compute them.
    fn preflight(&self, ctx: &super::Preflight) -> Vec<String> {
        if self.host.is_some() {
            return Vec::new();
        }
        let unfinished = ctx
            .cell_ids
            .iter()
            .filter(|id| match records::read_cell(&ctx.cells_dir, id) {
                Ok(stored) => stored.record.code != ctx.code,
                Err(_) => true,
            })
            .count();
        if unfinished == 0 {
            return Vec::new();
        }
        vec![format!(
            "{unfinished} of its {} cells are not finished in {} by this version, and this \
             strategy is the Python object `{}` (kind `python`): its chunks are computed only \
             inside Python, by chunkbench_harness.run(config, chunkers={{...}}) with that \
             object. Run it there, or drop the entry",
            ctx.cell_ids.len(),
            ctx.cells_dir.display(),
            self.entry.object
        )]
    }

    fn chunk_corpus(
        &self,
        docs: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        let Some(host) = &self.host else {
            bail!(
                "this strategy is the Python object `{}` (kind `python`): its chunks are computed \
                 only inside Python, by chunkbench_harness.run(config, chunkers={{...}}) with that \
                 object; the command line reuses its finished cells but cannot chunk with it",
                self.entry.object
            );
        };
        let source = format!("Python chunker `{}`", self.entry.object);
        let mut chunks = Vec::new();
        let mut blank = 0;
        for batch in docs.chunks(BATCH_DOCUMENTS) {
            crate::stop::check()?;
            let refs: Vec<&Document> = batch.iter().collect();
            let pieces = host.split(&refs).with_context(|| source.clone())?;
            if pieces.len() != batch.len() {
                bail!(
                    "{source}: returned chunks for {} documents of a batch of {}",
                    pieces.len(),
                    batch.len()
                );
            }
            for (d, ps) in batch.iter().zip(pieces) {
                let mut lines = String::new();
                piece_lines(d, &ps, &source, &mut lines)?;
                // One document at a time, so that "chunk N" in an error is its Nth chunk.
                let (mut c, b) = super::spans::read_chunks(
                    &lines,
                    std::slice::from_ref(d),
                    &format!("{source} on document `{}`", d.id),
                )
                .map_err(|e| anyhow::anyhow!(python_words(&format!("{e:#}"))))?;
                chunks.append(&mut c);
                blank += b;
            }
        }
        super::spans::corpus_chunks(chunks, blank, docs, || {
            format!(
                "{source}: no chunk for any of the {} documents (it returned empty lists)",
                docs.len()
            )
        })
    }
}

/// An error of the command protocol's line reader in the words of a Python chunker: its
/// "line N" is the document's Nth chunk, and the fix is the Python one.
fn python_words(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find(": line ") {
        out.push_str(&rest[..i]);
        out.push_str(": chunk ");
        rest = &rest[i + ": line ".len()..];
    }
    out.push_str(rest);
    out.replace(
        "give start/end spans instead",
        "return the chunk's text as it is in the document, or (start, end) character spans",
    )
    .replace("repeats line", "repeats chunk")
}

/// Appends the chunk lines ([`super::spans`]) of one document's pieces to `out`: byte spans
/// for character spans and for texts found at their reported offset, texts to locate in order
/// otherwise.
///
/// # Errors
/// A character span outside the text or reversed, naming the document and the piece.
fn piece_lines(d: &Document, pieces: &[Piece], source: &str, out: &mut String) -> Result<()> {
    // Byte offset of every character, and of the end: built once, when a piece needs it.
    let mut char_offsets: Option<Vec<usize>> = None;
    for (i, p) in pieces.iter().enumerate() {
        let line = match p {
            Piece::Text(t) => serde_json::json!({"doc_id": d.id, "text": t}),
            Piece::TextAt(t, c) => match byte_offsets(&mut char_offsets, &d.text).get(*c) {
                Some(&b) if d.text[b..].starts_with(t.as_str()) => {
                    serde_json::json!({"doc_id": d.id, "start": b, "end": b + t.len()})
                }
                _ => serde_json::json!({"doc_id": d.id, "text": t}),
            },
            Piece::Chars(s, e) => {
                let o = byte_offsets(&mut char_offsets, &d.text);
                let n = o.len() - 1;
                if s > e {
                    bail!(
                        "{source}: chunk {} of document `{}` is the character span {s}..{e}, \
                         reversed (spans are (start, end) with start <= end)",
                        i + 1,
                        d.id
                    );
                }
                if *e > n {
                    bail!(
                        "{source}: chunk {} of document `{}` is the character span {s}..{e}, \
                         outside its {n} characters (spans are (start, end) character offsets \
                         into the text, end exclusive)",
                        i + 1,
                        d.id
                    );
                }
                serde_json::json!({"doc_id": d.id, "start": o[*s], "end": o[*e]})
            }
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    Ok(())
}

/// The byte offset of every character of `text` and of its end, computed into `cache` once.
fn byte_offsets<'a>(cache: &'a mut Option<Vec<usize>>, text: &str) -> &'a [usize] {
    cache.get_or_insert_with(|| {
        text.char_indices()
            .map(|(b, _)| b)
            .chain(std::iter::once(text.len()))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits on ". " and returns each document's sentences in the form `form` gives.
    struct Sentences(fn(&str, usize, usize) -> Piece);

    impl HostedChunker for Sentences {
        fn split(&self, docs: &[&Document]) -> Result<Vec<Vec<Piece>>> {
            Ok(docs
                .iter()
                .map(|d| {
                    let mut pieces = Vec::new();
                    let mut start = 0;
                    let chars: Vec<char> = d.text.chars().collect();
                    for (i, w) in chars.windows(2).enumerate() {
                        if w == ['.', ' '] {
                            let t: String = chars[start..=i].iter().collect();
                            pieces.push((self.0)(&t, start, i + 1));
                            start = i + 2;
                        }
                    }
                    let t: String = chars[start..].iter().collect();
                    pieces.push((self.0)(&t, start, chars.len()));
                    pieces
                })
                .collect())
        }
    }

    fn entry(fp: char) -> Python {
        Python {
            object: "tests.Sentences".into(),
            version: "1".into(),
            fingerprint: fp.to_string().repeat(64),
        }
    }

    fn spans(form: fn(&str, usize, usize) -> Piece, fp: char, text: &str) -> Vec<(usize, usize)> {
        let _guard = host(&entry(fp).fingerprint, Arc::new(Sentences(form)));
        let docs = [Document::new("d", text)];
        let (chunks, _) = entry(fp)
            .build()
            .unwrap()
            .chunk_corpus(&docs, None)
            .unwrap();
        chunks.iter().map(|c| (c.span.start, c.span.end)).collect()
    }

    #[test]
    fn texts_offsets_and_character_spans_become_the_same_byte_spans() {
        // Multi-byte characters before the chunks: character and byte offsets differ.
        let text = "Ärger über Öl. Café crème. Fin.";
        let want = vec![(0, 17), (18, 31), (32, 36)];
        let slices: Vec<&str> = want.iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(slices, ["Ärger über Öl.", "Café crème.", "Fin."]);
        assert_eq!(spans(|t, _, _| Piece::Text(t.into()), 'a', text), want);
        assert_eq!(spans(|t, s, _| Piece::TextAt(t.into(), s), 'b', text), want);
        assert_eq!(spans(|_, s, e| Piece::Chars(s, e), 'c', text), want);
        // A wrong offset falls back to locating the text in order.
        assert_eq!(spans(|t, _, _| Piece::TextAt(t.into(), 1), 'd', text), want);
        for (s, e) in want {
            assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
        }
    }

    #[test]
    fn bad_spans_and_missing_hosts_are_errors() {
        let _guard = host(
            &entry('e').fingerprint,
            Arc::new(Sentences(|_, s, e| Piece::Chars(s, e + 50))),
        );
        let docs = [Document::new("d", "One. Two.")];
        let e = format!(
            "{:#}",
            entry('e')
                .build()
                .unwrap()
                .chunk_corpus(&docs, None)
                .unwrap_err()
        );
        assert!(
            e.contains("outside its 9 characters") && e.contains("document `d`"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            entry('f')
                .build()
                .unwrap()
                .chunk_corpus(&docs, None)
                .unwrap_err()
        );
        assert!(e.contains("computed only inside Python"), "{e}");
        struct Liar;
        impl HostedChunker for Liar {
            fn split(&self, docs: &[&Document]) -> Result<Vec<Vec<Piece>>> {
                Ok(docs
                    .iter()
                    .map(|_| vec![Piece::Text("One.".into()), Piece::Text("zzz".into())])
                    .collect())
            }
        }
        let _liar = host(&entry('g').fingerprint, Arc::new(Liar));
        let e = format!(
            "{:#}",
            entry('g')
                .build()
                .unwrap()
                .chunk_corpus(&docs, None)
                .unwrap_err()
        );
        assert!(
            e.contains("on document `d`: chunk 2: chunk text \"zzz\" does not occur")
                && e.contains("(start, end) character spans")
                && !e.contains("line 2"),
            "{e}"
        );
        let mut bad = entry('f');
        bad.fingerprint = "xyz".into();
        assert!(bad
            .check()
            .unwrap_err()
            .to_string()
            .contains("`fingerprint`"));
    }
}
