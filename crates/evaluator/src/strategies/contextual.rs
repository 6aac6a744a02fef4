//! `kind: contextual` — contextual retrieval with an LLM (Anthropic, "Introducing Contextual
//! Retrieval", 2024; docs/reference.md §3d): for every chunk of the strategy in `over`, the
//! model writes a short context situating the chunk in its document, from Anthropic's
//! published prompt (the default template, `crates/evaluator/prompts/contextual.txt`), and
//! the chunk is indexed under `context + "\n\n" + chunk text`. The passage a question gets,
//! its words and every span metric stay the chunk's exact byte span.
//!
//! Cost: one request per chunk, each carrying its whole document (or `document_words` words
//! around the chunk), so prompt tokens grow as chunks × document length; the tokens the
//! server reports are counted per corpus and shown per document in summary.md. Replies are
//! cached under (model identity, request): the request holds the prompt, the document text
//! and the chunk text, so a changed document, chunk or prompt asks again.
//!
//! Malformed replies: an empty context (after trimming) is counted and the chunk is indexed
//! under its own text (the stated fallback); a reply cut at `max_tokens` is kept as written.

use super::llm::LlmEntry;
use super::{common, Chunker, Params, StrategyConfig, StrategyStats};
use anyhow::{bail, Context, Result};
use chunker::{Chunk, Document};
use embed::Embedder;
use reader::lm::ChatRequest;
use retriever::IndexedForm;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

/// Anthropic's published contextual-retrieval prompt (the default `prompt`).
pub const DEFAULT_PROMPT: &str = include_str!("../../prompts/contextual.txt");
/// The template's placeholder for the document.
pub const DOCUMENT: &str = "{{WHOLE_DOCUMENT}}";
/// The template's placeholder for the chunk.
pub const CHUNK: &str = "{{CHUNK_CONTENT}}";

/// The contextual-retrieval entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contextual {
    /// The strategy whose chunks get contexts (any kind that indexes chunks).
    pub over: StrategyConfig,
    /// The model server.
    pub llm: LlmEntry,
    /// A prompt template file holding `{{WHOLE_DOCUMENT}}` and `{{CHUNK_CONTENT}}` (default:
    /// Anthropic's prompt, [`DEFAULT_PROMPT`]); its sha256 is a cell input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PathBuf>,
    /// Reply limit in tokens (default 100; Anthropic's contexts are 50–100 tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Send at most this many words of the document: the words around the chunk, as many
    /// before as after where the document allows (default: the whole document, as Anthropic
    /// does; set it for models with short contexts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_words: Option<usize>,
}

impl Contextual {
    fn max_tokens(&self) -> u32 {
        self.max_tokens.unwrap_or(100)
    }

    fn template(&self) -> Result<String> {
        match &self.prompt {
            None => Ok(DEFAULT_PROMPT.to_string()),
            Some(p) => {
                let p = crate::models::resolve(p);
                let t = std::fs::read_to_string(&p)
                    .with_context(|| format!("field `prompt`: cannot read {}", p.display()))?;
                for ph in [DOCUMENT, CHUNK] {
                    if !t.contains(ph) {
                        bail!(
                            "field `prompt`: {} lacks the placeholder {ph} (the template needs \
                             {DOCUMENT} and {CHUNK})",
                            p.display()
                        );
                    }
                }
                Ok(t)
            }
        }
    }
}

impl Params for Contextual {
    const KIND: &'static str = "contextual";
    const SUMMARY: &'static str = "contextual retrieval with an LLM: for each chunk of `over`, `llm: {base_url, model, ...}` writes a situating context (Anthropic's prompt, or `prompt: FILE`), indexed as context + text; `max_tokens` (100), `document_words` (whole document); passages stay the chunks' spans";

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
        let mut f = self.over.input_files();
        if let Some(p) = &self.prompt {
            f.push(("strategy/prompt".into(), crate::models::resolve(p)));
        }
        f
    }

    fn server_identity(&self) -> Result<Option<String>> {
        Ok(Some(super::llm::connect(&self.llm)?.identity()))
    }

    fn resolve_defaults(&mut self) {
        self.over.resolve_defaults();
        self.max_tokens = Some(self.max_tokens());
    }

    fn check(&self) -> Result<()> {
        common::check_over(&self.over)?;
        super::llm::check(&self.llm)?;
        if self.max_tokens() == 0 {
            bail!("field `max_tokens`: must be at least 1");
        }
        if self.document_words == Some(0) {
            bail!(
                "field `document_words`: must be at least 1 (or left out for the whole document)"
            );
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        Ok(Box::new(ContextualChunker {
            inner: self.over.build()?,
            llm: self.llm.clone(),
            template: self.template()?,
            max_tokens: self.max_tokens(),
            document_words: self.document_words,
        }))
    }
}

struct ContextualChunker {
    inner: Box<dyn Chunker>,
    llm: LlmEntry,
    template: String,
    max_tokens: u32,
    document_words: Option<usize>,
}

/// The part of `text` sent as the document: all of it, or `n` words around `[start, end)`
/// (the chunk's words first, then alternately one before and one after), as the exact slice
/// from the first to the last word kept.
fn document_part(text: &str, start: usize, end: usize, n: Option<usize>) -> &str {
    let Some(n) = n else { return text };
    let words = chunker::word_spans(text);
    if words.len() <= n {
        return text;
    }
    let first = words.partition_point(|w| w.end <= start);
    let last = words.partition_point(|w| w.start < end).max(first + 1);
    let (mut lo, mut hi) = (first, last.min(words.len()));
    while hi - lo < n && (lo > 0 || hi < words.len()) {
        lo = lo.saturating_sub(1);
        if hi - lo < n && hi < words.len() {
            hi += 1;
        }
    }
    if hi - lo > n {
        // The chunk alone is longer than `n` words: its first `n`.
        hi = lo + n;
    }
    &text[words[lo].start..words[hi - 1].end]
}

/// The template with its placeholders filled in one pass (a document that itself holds
/// `{{CHUNK_CONTENT}}` is sent as written).
fn fill(template: &str, document: &str, chunk: &str) -> String {
    let mut out = String::with_capacity(template.len() + document.len() + chunk.len());
    let mut rest = template;
    loop {
        let next = [(DOCUMENT, document), (CHUNK, chunk)]
            .into_iter()
            .filter_map(|(ph, v)| rest.find(ph).map(|i| (i, ph, v)))
            .min_by_key(|(i, _, _)| *i);
        match next {
            Some((i, ph, v)) => {
                out.push_str(&rest[..i]);
                out.push_str(v);
                rest = &rest[i + ph.len()..];
            }
            None => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

impl Chunker for ContextualChunker {
    common::delegate_chunking!();

    fn indexed(
        &self,
        docs: &[Document],
        chunks: &[Chunk],
        _: Option<&dyn Embedder>,
        stats: &mut StrategyStats,
    ) -> Result<Option<IndexedForm>> {
        let llm = super::llm::connect(&self.llm)?;
        let by_id: HashMap<&str, &Document> = docs.iter().map(|d| (d.id.as_str(), d)).collect();
        let requests: Vec<ChatRequest> = chunks
            .iter()
            .map(|c| {
                let d = by_id[c.doc_id.as_str()];
                let doc = document_part(&d.text, c.span.start, c.span.end, self.document_words);
                let prompt = fill(&self.template, doc, c.text(d));
                ChatRequest::new(vec![("user".to_string(), prompt)], self.max_tokens)
            })
            .collect();
        let mut use_ = records::LlmUse {
            documents: chunks
                .iter()
                .map(|c| c.doc_id.as_str())
                .collect::<std::collections::HashSet<_>>()
                .len(),
            ..Default::default()
        };
        let replies = llm.ask(&requests)?;
        for r in &replies {
            super::llm::count(&mut use_, r);
        }
        let texts = chunks
            .iter()
            .zip(&replies)
            .map(|(c, r)| {
                let text = c.text(by_id[c.doc_id.as_str()]);
                let context = r.generation.text.trim();
                if context.is_empty() {
                    use_.malformed += 1;
                    use_.fallbacks += 1;
                    text.to_string()
                } else {
                    format!("{context}\n\n{text}")
                }
            })
            .collect();
        // A wrapped strategy that asked a model too (llm-boundaries): both counted.
        match &mut stats.llm {
            Some(inner) => inner.add(&use_),
            None => stats.llm = Some(use_),
        }
        Ok(Some(IndexedForm {
            texts: Some(texts),
            vectors: None,
            label: format!(
                "LLM context + text (`{}`, {} tokens at most{})",
                self.llm.model,
                self.max_tokens,
                self.document_words
                    .map_or(String::new(), |n| format!(", documents cut to {n} words"))
            ),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_prompt_is_anthropics() {
        assert!(DEFAULT_PROMPT.starts_with("<document>\n{{WHOLE_DOCUMENT}}\n</document>"));
        assert!(DEFAULT_PROMPT.contains("<chunk>\n{{CHUNK_CONTENT}}\n</chunk>"));
        assert!(DEFAULT_PROMPT.contains("Answer only with the succinct context and nothing else."));
    }

    #[test]
    fn placeholders_are_filled_once() {
        let t = "<d>{{WHOLE_DOCUMENT}}</d><c>{{CHUNK_CONTENT}}</c>";
        assert_eq!(
            fill(t, "doc with {{CHUNK_CONTENT}}", "x"),
            "<d>doc with {{CHUNK_CONTENT}}</d><c>x</c>"
        );
    }

    #[test]
    fn document_part_keeps_the_chunk_and_words_around_it() {
        let t = "a b c d e f g h i j";
        assert_eq!(document_part(t, 8, 9, None), t);
        // Chunk "e" (bytes 8..9), 5 words: two before, two after.
        assert_eq!(document_part(t, 8, 9, Some(5)), "c d e f g");
        // At the start: the words after fill the budget.
        assert_eq!(document_part(t, 0, 1, Some(3)), "a b c");
        assert_eq!(document_part(t, 18, 19, Some(3)), "h i j");
        // A chunk longer than the budget: its first words.
        assert_eq!(document_part(t, 2, 13, Some(2)), "b c");
        assert_eq!(document_part(t, 0, 19, Some(100)), t);
    }
}
