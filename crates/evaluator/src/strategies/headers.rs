//! `kind: headers` — contextual chunk headers, no model (docs/reference.md §3d): the chunks
//! of the strategy in `over`, each indexed under its document's title and the heading path in
//! force where it starts ([`chunker::headings`]: Markdown and HTML headings of the text) put
//! before its text, as Anthropic's contextual retrieval does with a written context
//! ("Introducing Contextual Retrieval", 2024) and LlamaIndex's metadata headers do with
//! titles. The passage a question gets, its words and every span metric stay the chunk's
//! exact byte span: only what BM25 analyses and the embedder embeds changes.

use super::{common, Chunker, Params, StrategyConfig, StrategyStats};
use anyhow::{bail, Result};
use chunker::headings::{headings, path_at};
use chunker::{Chunk, Document};
use embed::Embedder;
use retriever::IndexedForm;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

/// Default template of the indexed text.
pub const DEFAULT_FORMAT: &str = "{header}\n\n{text}";
/// Default separator of the heading path.
pub const DEFAULT_SEPARATOR: &str = " > ";

/// The headers entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Headers {
    /// The strategy whose chunks are indexed with headers (any kind that indexes chunks:
    /// not `no-retrieval`, `oracle` or another indexing wrapper).
    pub over: StrategyConfig,
    /// Template of the indexed text (default [`DEFAULT_FORMAT`]): `{title}` (the document's
    /// title), `{headings}` (the heading path joined by `separator`), `{header}` (title and
    /// headings, the empty ones left out, joined by `separator`) and `{text}` (the chunk's
    /// text, required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Separator of `{headings}` and `{header}` (default [`DEFAULT_SEPARATOR`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
}

impl Headers {
    fn format(&self) -> &str {
        self.format.as_deref().unwrap_or(DEFAULT_FORMAT)
    }

    fn separator(&self) -> &str {
        self.separator.as_deref().unwrap_or(DEFAULT_SEPARATOR)
    }
}

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(String),
    Title,
    Headings,
    Header,
    Text,
}

/// Parses a template (`{{` and `}}` are literal braces).
///
/// # Errors
/// An unknown placeholder, an unclosed brace, or no `{text}`, naming the field.
fn parse_format(f: &str) -> Result<Vec<Piece>> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut rest = f;
    while let Some(i) = rest.find(['{', '}']) {
        lit.push_str(&rest[..i]);
        let r = &rest[i..];
        if r.starts_with("{{") || r.starts_with("}}") {
            lit.push_str(&r[..1]);
            rest = &r[2..];
            continue;
        }
        if r.starts_with('}') {
            bail!("field `format`: a lone `}}` (write `}}}}` for a brace)");
        }
        let Some(end) = r.find('}') else {
            bail!("field `format`: `{{` without its `}}`");
        };
        let piece = match &r[1..end] {
            "title" => Piece::Title,
            "headings" => Piece::Headings,
            "header" => Piece::Header,
            "text" => Piece::Text,
            other => bail!(
                "field `format`: unknown placeholder `{{{other}}}` (known: {{title}}, \
                 {{headings}}, {{header}}, {{text}}; `{{{{` for a brace)"
            ),
        };
        if !lit.is_empty() {
            out.push(Piece::Lit(std::mem::take(&mut lit)));
        }
        out.push(piece);
        rest = &r[end + 1..];
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    if !out.contains(&Piece::Text) {
        bail!("field `format`: must hold `{{text}}` (the chunk's text is what is indexed)");
    }
    Ok(out)
}

impl Params for Headers {
    const KIND: &'static str = "headers";
    const SUMMARY: &'static str = "contextual chunk headers, no model: the chunks of `over` (any strategy entry) indexed under `format` (default `{header}\\n\\n{text}`; `{title}`, `{headings}`: Markdown/HTML heading path, `{header}`, `{text}`) with `separator` (` > `); passages stay the chunks' spans";

    fn indexes_other_text(&self) -> bool {
        true
    }

    fn needs_embedder(&self) -> bool {
        self.over.needs_embedder()
    }

    fn tokenizer_file(&self) -> Option<PathBuf> {
        self.over.tokenizer_file()
    }

    fn input_files(&self) -> Vec<(String, PathBuf)> {
        self.over.input_files()
    }

    fn server_identity(&self) -> Result<Option<String>> {
        self.over.server_identity()
    }

    fn resolve_defaults(&mut self) {
        self.over.resolve_defaults();
        self.format = Some(self.format().to_string());
        self.separator = Some(self.separator().to_string());
    }

    fn check(&self) -> Result<()> {
        common::check_over(&self.over)?;
        parse_format(self.format())?;
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        Ok(Box::new(HeadersChunker {
            inner: self.over.build()?,
            format: parse_format(self.format())?,
            separator: self.separator().to_string(),
            label: format!(
                "header + text (`{}`, headings joined by `{}`)",
                self.format().replace('\n', "\\n"),
                self.separator()
            ),
        }))
    }
}

struct HeadersChunker {
    inner: Box<dyn Chunker>,
    format: Vec<Piece>,
    separator: String,
    label: String,
}

impl HeadersChunker {
    fn render(&self, title: &str, path: &[&str], text: &str) -> String {
        let headings = path.join(&self.separator);
        // A document whose title is its first heading (`data import` titles Markdown files
        // by their `# ` line) is not headed "Title > Title".
        let path_after_title = match path.first() {
            Some(h) if h.trim().eq_ignore_ascii_case(title.trim()) => &path[1..],
            _ => path,
        };
        let header = std::iter::once(title.trim())
            .chain(path_after_title.iter().copied())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(&self.separator);
        let mut out = String::new();
        for p in &self.format {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Title => out.push_str(title.trim()),
                Piece::Headings => out.push_str(&headings),
                Piece::Header => out.push_str(&header),
                Piece::Text => out.push_str(text),
            }
        }
        out
    }
}

impl Chunker for HeadersChunker {
    common::delegate_chunking!();

    fn indexed(
        &self,
        docs: &[Document],
        chunks: &[Chunk],
        _: Option<&dyn Embedder>,
        _: &mut StrategyStats,
    ) -> Result<Option<IndexedForm>> {
        use rayon::prelude::*;
        let by_id: HashMap<&str, &Document> = docs.iter().map(|d| (d.id.as_str(), d)).collect();
        let found: HashMap<&str, Vec<chunker::headings::Heading>> = docs
            .par_iter()
            .map(|d| (d.id.as_str(), headings(&d.text)))
            .collect();
        let texts = chunks
            .par_iter()
            .map(|c| {
                let d = by_id[c.doc_id.as_str()];
                let path = path_at(&found[c.doc_id.as_str()], c.span.start);
                self.render(&d.title, &path, c.text(d))
            })
            .collect();
        Ok(Some(IndexedForm {
            texts: Some(texts),
            vectors: None,
            label: self.label.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(y: &str) -> Headers {
        let c = StrategyConfig::from_yaml(serde_yaml::from_str(y).unwrap()).unwrap();
        c.params::<Headers>().unwrap().clone()
    }

    #[test]
    fn indexed_text_has_the_header_and_passages_stay_spans() {
        let mut d = Document::new(
            "d",
            "# Cells\n\nCells divide.\n\n## Membranes\n\nLipids form bilayers here.",
        );
        d.title = "Biology — Chapter 4".into();
        let docs = [d.clone()];
        let h = entry("{kind: headers, over: {kind: fixed, size: 3}}");
        h.check().unwrap();
        let c = h.build().unwrap();
        let (chunks, _) = c.chunk_corpus(&docs, None).unwrap();
        let plain = StrategyConfig::fixed_words(3, 0).build().unwrap();
        assert_eq!(chunks, plain.chunk_corpus(&docs, None).unwrap().0);
        let form = c
            .indexed(&docs, &chunks, None, &mut StrategyStats::default())
            .unwrap()
            .unwrap();
        let texts = form.texts.unwrap();
        assert_eq!(texts[0], "Biology — Chapter 4 > Cells\n\n# Cells\n\nCells");
        let last = chunks.len() - 1;
        assert_eq!(
            texts[last],
            format!(
                "Biology — Chapter 4 > Cells > Membranes\n\n{}",
                chunks[last].text(&d)
            )
        );
    }

    #[test]
    fn formats_are_checked_and_rendered() {
        assert!(parse_format("{header}")
            .unwrap_err()
            .to_string()
            .contains("{text}"));
        let e = parse_format("{head} {text}").unwrap_err().to_string();
        assert!(e.contains("unknown placeholder `{head}`"), "{e}");
        assert!(parse_format("{text").is_err());
        let c = HeadersChunker {
            inner: StrategyConfig::fixed_words(3, 0).build().unwrap(),
            format: parse_format("[{title}|{headings}] {{x}} {text}").unwrap(),
            separator: "/".into(),
            label: String::new(),
        };
        assert_eq!(c.render(" T ", &["a", "b"], "body"), "[T|a/b] {x} body");
        let h = HeadersChunker {
            format: parse_format("{header}: {text}").unwrap(),
            inner: StrategyConfig::fixed_words(3, 0).build().unwrap(),
            separator: "/".into(),
            label: String::new(),
        };
        assert_eq!(
            h.render("Quokka", &["Quokka", "Diet"], "b"),
            "Quokka/Diet: b"
        );
        // No title and no headings: the header is empty, not a dangling separator.
        let d = HeadersChunker {
            format: parse_format(DEFAULT_FORMAT).unwrap(),
            ..c
        };
        assert_eq!(d.render("", &[], "body"), "\n\nbody");
        assert!(entry("{kind: headers, over: {kind: oracle}}")
            .check()
            .is_err());
    }
}
