//! `kind: spans` — precomputed chunks read from a JSONL file, and the chunk line format that
//! external chunkers (`kind: command`) print.
//!
//! One JSON object per line, in document order within each document:
//! - `{"doc_id": ID, "start": S, "end": E}`: the byte span `[S, E)` of the document's text
//!   (on character boundaries, within the text);
//! - `{"doc_id": ID, "text": T}`: a chunk given by its text, located in the document as the
//!   first occurrence starting after the previous chunk's start that ends after the previous
//!   chunk's end, else the first starting after the previous chunk's start (so overlapping
//!   chunks and repeated text are found in order, and a short chunk whose text also occurs
//!   inside the previous chunk is not placed there); an error when it does not occur.
//!
//! Every error names the source and the line, and no chunk of a failed read is used. Blank
//! lines are skipped; documents without chunks have none (the runner logs how many), and no
//! chunk at all for a non-empty corpus is an error. A `spans` file covers one dataset: a
//! `doc_id` of another dataset is an unknown document. An empty chunk (`start == end`, or an
//! empty `text`) is an error; a chunk of word separators only (whitespace, zero-width spaces:
//! no word) is not indexed, and counted (`blank_chunks_dropped` in the strategy's counters),
//! since it would fill a top-k slot with nothing. A span given twice for one document is an
//! error: the passage would fill two top-k slots and its words would count twice.

use super::{Chunker, Params, StrategyStats};
use anyhow::{bail, Context, Result};
use chunker::{Chunk, Document};
use embed::Embedder;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

/// Chunks from a JSONL file (the line format of the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spans {
    /// The JSONL file; its sha256 is part of every cell's inputs.
    pub file: PathBuf,
}

impl Params for Spans {
    const KIND: &'static str = "spans";
    const SUMMARY: &'static str = "precomputed chunks from a JSONL `file` of `{doc_id, start, end}` byte spans or `{doc_id, text}` (located in order); the file's sha256 is a cell input";

    fn input_files(&self) -> Vec<(String, PathBuf)> {
        vec![("strategy/spans".into(), self.file.clone())]
    }

    fn check(&self) -> Result<()> {
        if !self.file.is_file() {
            bail!(
                "field `file`: {} is not a file (a relative path is relative to the directory chunkbench runs in)",
                self.file.display()
            );
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        Ok(Box::new(self.clone()))
    }
}

impl Chunker for Spans {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        let text = std::fs::read_to_string(&self.file)
            .with_context(|| format!("field `file`: cannot read {}", self.file.display()))?;
        let (chunks, blank) = read_chunks(&text, docs, &self.file.display().to_string())?;
        corpus_chunks(chunks, blank, docs, || {
            format!(
                "{}: no chunk for any of the {} documents; give `{{doc_id, start, end}}` lines for this dataset's documents",
                self.file.display(),
                docs.len()
            )
        })
    }
}

/// The chunks read for a corpus with their counters (`blank` chunks of separators only left
/// out), or the error `none` says when a corpus with text got no chunk at all: what the
/// kinds whose chunks come from outside (`spans`, `command`, `python`) return.
///
/// # Errors
/// No chunk for a corpus with a non-blank document.
pub(super) fn corpus_chunks(
    chunks: Vec<Chunk>,
    blank: usize,
    docs: &[Document],
    none: impl FnOnce() -> String,
) -> Result<(Vec<Chunk>, StrategyStats)> {
    if chunks.is_empty() && docs.iter().any(|d| !d.text.trim().is_empty()) {
        bail!("{}", none());
    }
    Ok((
        chunks,
        StrategyStats {
            blank_chunks_dropped: blank,
            ..StrategyStats::default()
        },
    ))
}

/// One chunk line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    doc_id: String,
    #[serde(default)]
    start: Option<usize>,
    #[serde(default)]
    end: Option<usize>,
    #[serde(default)]
    text: Option<String>,
}

/// Parses chunk lines (module docs) against `docs`; `source` names the input in errors.
/// Chunks come back grouped by document in corpus order, each document's in its lines' order,
/// with the number of chunks of separators only that were left out.
///
/// # Errors
/// A line that is not such an object, an unknown document, a span outside the text or off a
/// character boundary, an empty span, a text that does not occur, or a line with both or
/// neither of `start`/`end` and `text`, naming `source` and the line number.
pub fn read_chunks(lines: &str, docs: &[Document], source: &str) -> Result<(Vec<Chunk>, usize)> {
    let mut blank = 0;
    let by_id: HashMap<&str, usize> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i))
        .collect();
    let mut per_doc: Vec<Vec<Chunk>> = vec![Vec::new(); docs.len()];
    let mut seen: HashMap<(usize, usize, usize), usize> = HashMap::new();
    for (n, raw) in lines.lines().enumerate() {
        let at = format!("{source}: line {}", n + 1);
        if raw.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(raw).with_context(|| {
            format!("{at}: not a chunk object {{doc_id, start, end}} or {{doc_id, text}}")
        })?;
        let Some(&di) = by_id.get(line.doc_id.as_str()) else {
            bail!("{at}: unknown document `{}`", line.doc_id);
        };
        let d = &docs[di];
        let (start, end) = match (line.start, line.end, &line.text) {
            (Some(s), Some(e), None) => {
                if s > e {
                    bail!("{at}: span {s}..{e} is reversed (start > end)");
                }
                if e > d.text.len() {
                    bail!(
                        "{at}: span {s}..{e} is outside document `{}` ({} bytes)",
                        d.id,
                        d.text.len()
                    );
                }
                if !(d.text.is_char_boundary(s) && d.text.is_char_boundary(e)) {
                    bail!(
                        "{at}: span {s}..{e} of document `{}` cuts a UTF-8 character (offsets are bytes, not characters)",
                        d.id
                    );
                }
                (s, e)
            }
            (None, None, Some(t)) => {
                let prev = per_doc[di].last().map(|c| (c.span.start, c.span.end));
                let Some(start) = locate(&d.text, t, prev) else {
                    bail!(
                        "{at}: chunk text {:?} does not occur in document `{}`{} (the chunker \
                         changed the text, or repeated a chunk; give start/end spans instead)",
                        clip(t),
                        d.id,
                        match prev {
                            Some((s, _)) =>
                                format!(" after byte {s}, where the previous chunk starts"),
                            None => String::new(),
                        }
                    );
                };
                (start, start + t.len())
            }
            _ => bail!("{at}: give either `start` and `end` or `text`"),
        };
        if start == end {
            bail!(
                "{at}: empty chunk ({start}..{end} of document `{}`); a chunk holds text: drop \
                 the line or give the span its text",
                d.id
            );
        }
        if let Some(first) = seen.insert((di, start, end), n + 1) {
            bail!(
                "{at}: span {start}..{end} of document `{}` repeats line {first}; each chunk is \
                 one passage (a repeat would fill two top-k slots): print it once",
                d.id
            );
        }
        if d.text[start..end].chars().all(chunker::is_word_separator) {
            blank += 1;
            continue;
        }
        per_doc[di].push(Chunk::new(d, start, end));
    }
    Ok((per_doc.into_iter().flatten().collect(), blank))
}

/// Where chunk text `t` is in `text`, given the previous chunk's span `prev` of the same
/// document: the first occurrence starting after the previous chunk's start that is not
/// contained in the previous chunk (it ends after the previous chunk's end), else the first
/// occurrence starting after the previous chunk's start, else `None`. Chunkers emit chunks in
/// order, each reaching past the one before (overlapping it or not), so a short chunk whose
/// text also occurs inside the previous chunk (`"weather."`) is placed after it, where it is,
/// not inside it.
fn locate(text: &str, t: &str, prev: Option<(usize, usize)>) -> Option<usize> {
    let Some((prev_start, prev_end)) = prev else {
        return text.find(t);
    };
    let mut from = next_char(text, prev_start);
    let mut first = None;
    while let Some(pos) = text[from..].find(t).map(|p| from + p) {
        if pos + t.len() > prev_end {
            return Some(pos);
        }
        first.get_or_insert(pos);
        from = next_char(text, pos);
        if from >= text.len() {
            break;
        }
    }
    first
}

/// The byte index after the character starting at `i` (the end for the last one).
fn next_char(text: &str, i: usize) -> usize {
    text[i..]
        .chars()
        .next()
        .map_or(text.len(), |c| i + c.len_utf8())
}

fn clip(t: &str) -> String {
    reader::clip(t, 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> Vec<Document> {
        vec![
            Document::new("a", "one two one two"),
            Document::new("b", "Ünïcode text"),
        ]
    }

    #[test]
    fn spans_and_texts_become_exact_chunks_in_order() {
        let lines = r#"{"doc_id":"b","start":0,"end":9}
{"doc_id":"a","text":"one two"}

{"doc_id":"a","text":"two one"}
{"doc_id":"a","text":"one two"}"#;
        let d = docs();
        let (c, blank) = read_chunks(lines, &d, "t.jsonl").unwrap();
        assert_eq!(blank, 0);
        let got: Vec<(&str, usize, usize)> = c
            .iter()
            .map(|c| (c.doc_id.as_str(), c.span.start, c.span.end))
            .collect();
        assert_eq!(got, [("a", 0, 7), ("a", 4, 11), ("a", 8, 15), ("b", 0, 9)]);
        assert_eq!(c[3].text(&d[1]), "Ünïcode");
    }

    /// A hostile probe (issue 41): LangChain's chunks fed back as texts put a short chunk
    /// (`weather.`) at its first occurrence after the previous chunk's start, inside the
    /// previous chunk, instead of after it where it was cut from.
    #[test]
    fn a_short_chunk_is_placed_after_the_previous_chunk_not_inside_it() {
        let text = "Warm weather. It rained in the weather.";
        let d = vec![Document::new("a", text)];
        let lines = "{\"doc_id\":\"a\",\"text\":\"Warm weather. It rained in the\"}\n{\"doc_id\":\"a\",\"text\":\"weather.\"}";
        let (c, _) = read_chunks(lines, &d, "t.jsonl").unwrap();
        let spans: Vec<(usize, usize)> = c.iter().map(|c| (c.span.start, c.span.end)).collect();
        assert_eq!(spans, [(0, 30), (31, 39)]);
        // Overlapping chunks still land where they overlap; a chunk that occurs only inside
        // the previous one is placed there.
        let d = vec![Document::new("a", "alpha beta gamma")];
        let lines = "{\"doc_id\":\"a\",\"text\":\"alpha beta\"}\n{\"doc_id\":\"a\",\"text\":\"beta gamma\"}\n{\"doc_id\":\"a\",\"text\":\"gamma\"}\n{\"doc_id\":\"a\",\"text\":\"amm\"}";
        let (c, _) = read_chunks(lines, &d, "t.jsonl").unwrap();
        let spans: Vec<(usize, usize)> = c.iter().map(|c| (c.span.start, c.span.end)).collect();
        assert_eq!(spans, [(0, 10), (6, 16), (11, 16), (12, 15)]);
    }

    /// Issue 36 case 9: empty and whitespace-only chunks were embedded and filled top-k slots.
    #[test]
    fn empty_chunks_are_errors_and_blank_ones_are_dropped() {
        let d = vec![Document::new("a", "one \u{200B}  two")];
        let e = |l: &str| format!("{:#}", read_chunks(l, &d, "t.jsonl").unwrap_err());
        assert!(e("{\"doc_id\":\"a\",\"start\":3,\"end\":3}").contains("line 1: empty chunk"));
        assert!(e("{\"doc_id\":\"a\",\"text\":\"\"}").contains("line 1: empty chunk"));
        // A hostile probe: a repeated span was indexed twice and its words counted twice.
        let twice = "{\"doc_id\":\"a\",\"start\":0,\"end\":7}\n{\"doc_id\":\"a\",\"start\":4,\"end\":7}\n{\"doc_id\":\"a\",\"start\":0,\"end\":7}";
        assert!(
            e(twice).contains("line 3: span 0..7 of document `a` repeats line 1"),
            "{}",
            e(twice)
        );
        let lines = "{\"doc_id\":\"a\",\"start\":0,\"end\":3}\n{\"doc_id\":\"a\",\"start\":3,\"end\":9}\n{\"doc_id\":\"a\",\"text\":\"two\"}";
        let (c, blank) = read_chunks(lines, &d, "t.jsonl").unwrap();
        assert_eq!(blank, 1);
        let texts: Vec<&str> = c.iter().map(|c| c.text(&d[0])).collect();
        assert_eq!(texts, ["one", "two"]);
    }

    #[test]
    fn bad_lines_name_the_source_line_and_fix() {
        let d = docs();
        let e = |l: &str| format!("{:#}", read_chunks(l, &d, "t.jsonl").unwrap_err());
        assert!(
            e("{\"doc_id\":\"z\",\"start\":0,\"end\":1}").contains("line 1: unknown document `z`")
        );
        assert!(e("{\"doc_id\":\"a\",\"start\":0,\"end\":99}").contains("outside document `a`"));
        assert!(e("{\"doc_id\":\"b\",\"start\":0,\"end\":1}").contains("cuts a UTF-8 character"));
        assert!(e("{\"doc_id\":\"a\",\"text\":\"three\"}").contains("does not occur"));
        assert!(e("{\"doc_id\":\"a\"}").contains("either `start` and `end` or `text`"));
        assert!(e("\n[1]").contains("t.jsonl: line 2: not a chunk object"));
        assert!(e("{\"doc_id\":\"a\",\"start\":5,\"end\":2}").contains("reversed"));
        let missing = Spans {
            file: "/nonexistent/spans.jsonl".into(),
        };
        assert!(missing
            .check()
            .unwrap_err()
            .to_string()
            .contains("is not a file"));
    }
}
