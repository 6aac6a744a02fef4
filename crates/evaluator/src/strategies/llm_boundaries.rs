//! `kind: llm-boundaries` — chunk boundaries chosen by an LLM (docs/reference.md §3d), by one
//! of two published protocols, through the OpenAI-compatible chat path, at temperature 0,
//! every reply cached ([`super::llm`]):
//!
//! - `protocol: chroma` — Chroma's `LLMSemanticChunker` (chunking_evaluation,
//!   `llm_semantic_chunker.py`; Smith & Troynikov, "Evaluating Chunking Strategies for
//!   Retrieval", Chroma 2024): the document is cut into pieces of about 50 tokens (`pieces`,
//!   default Chroma's `RecursiveTokenChunker(chunk_size=50, chunk_overlap=0)` with cl100k
//!   tokens); from the current piece on, pieces are tagged `<|start_chunk_X|>…<|end_chunk_X|>`
//!   (X from 1) until their tokens pass `window_tokens` (800); the model answers
//!   `split_after: 3, 5`; the numbers must ascend and be at least the current piece number;
//!   the next window starts after the last number. Until 4 pieces remain. Chroma's prompts
//!   are sent word for word (`prompts/llm_boundaries_chroma_*.txt`).
//! - `protocol: lumber` — LumberChunker (Duarte et al., "LumberChunker: Long-Form Narrative
//!   Document Segmentation", EMNLP Findings 2024; `LumberChunker-Segmentation.py`): paragraphs
//!   (text between blank lines) numbered `ID k: …` from 0; from the current paragraph on,
//!   paragraphs are added while their estimated tokens (1.2 × words, the paper's estimate)
//!   stay below `window_tokens` (550); the model answers `Answer: ID k` for the first
//!   paragraph where the content shifts; `k` starts a new chunk and the next group starts
//!   at `k + 1`. Until 5 paragraphs remain.
//!
//! Chunks are exact byte spans: from the first byte of a chunk's first piece (paragraph) to
//! the last byte of its last.
//!
//! **Malformed replies** (no `split_after:` line or `Answer: ID` in it, numbers out of order,
//! below the current piece, past the window, or not advancing) are counted in the run's
//! counters and handled by a stated fallback. Chroma: re-asked with Chroma's "the previous
//! response … was invalid" message up to `retries` times (Chroma re-asks forever; a re-ask
//! that would repeat the previous request is skipped: at temperature 0 its reply cannot
//! change), then a split after the window's last piece. Lumber: LumberChunker's own behaviour on a reply
//! without an answer — no boundary, the next group starts where this one's last paragraph
//! was (at least one paragraph on, so the loop always ends).
//!
//! Departures from the reference code, for determinism and termination: temperature 0
//! (Chroma 0.2, LumberChunker 0.1); bounded re-asks; a reply must advance.

use super::llm::LlmEntry;
use super::{Chunker, Params, StrategyConfig, StrategyStats};
use anyhow::{bail, Context, Result};
use chunker::{Chunk, Document, Sizer, Span};
use embed::Embedder;
use rayon::prelude::*;
use reader::lm::{ChatModel, ChatRequest};
use records::LlmUse;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::LazyLock;

const CHROMA_SYSTEM: &str = include_str!("../../prompts/llm_boundaries_chroma_system.txt");
const CHROMA_USER: &str = include_str!("../../prompts/llm_boundaries_chroma_user.txt");
const CHROMA_RETRY: &str = include_str!("../../prompts/llm_boundaries_chroma_retry.txt");
const LUMBER_SYSTEM: &str = include_str!("../../prompts/llm_boundaries_lumber.txt");

/// Which published protocol asks the model for boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Chroma's LLMSemanticChunker.
    Chroma,
    /// LumberChunker.
    Lumber,
}

/// The LLM-boundaries entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmBoundaries {
    /// `chroma` or `lumber` (module docs).
    pub protocol: Protocol,
    /// The model server.
    pub llm: LlmEntry,
    /// Chroma: the strategy entry cutting the ~50-token pieces (default
    /// [`chroma_pieces`]); not used by `lumber`, whose pieces are paragraphs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pieces: Option<StrategyConfig>,
    /// Tokens of text per request: Chroma 800 (cl100k tokens, the window ends with the
    /// piece that passes it), Lumber 550 (1.2 × words, the group stays below it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_tokens: Option<usize>,
    /// Chroma: re-asks after an invalid reply before the fallback (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// Reply limit in tokens (default 200, Chroma's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// Chroma's piece cutter: `RecursiveTokenChunker(chunk_size=50, chunk_overlap=0)` with its
/// separators and cl100k tokens.
pub fn chroma_pieces() -> StrategyConfig {
    StrategyConfig::from_yaml(
        serde_yaml::from_str(
            r#"{kind: recursive, unit: tokens, tokenizer: cl100k_base, size: 50, overlap: 0,
                separators: ["\n\n", "\n", ".", "?", "!", " ", ""], keep_separator: start}"#,
        )
        .expect("Chroma's piece entry is YAML"),
    )
    .expect("Chroma's piece entry parses")
}

impl LlmBoundaries {
    fn window_tokens(&self) -> usize {
        self.window_tokens.unwrap_or(match self.protocol {
            Protocol::Chroma => 800,
            Protocol::Lumber => 550,
        })
    }

    fn pieces(&self) -> StrategyConfig {
        self.pieces.clone().unwrap_or_else(chroma_pieces)
    }
}

impl Params for LlmBoundaries {
    const KIND: &'static str = "llm-boundaries";
    const SUMMARY: &'static str = "chunk boundaries chosen by an LLM (`llm: {base_url, model, ...}`): `protocol: chroma` (Chroma's LLMSemanticChunker: ~50-token `pieces`, windows of `window_tokens` 800, `split_after: …`, `retries` 2) or `lumber` (LumberChunker: paragraphs, groups under 550 tokens, `Answer: ID k`); `max_tokens` (200); malformed replies counted, stated fallback";

    fn tokenizer_file(&self) -> Option<PathBuf> {
        match self.protocol {
            Protocol::Chroma => self.pieces().tokenizer_file(),
            Protocol::Lumber => None,
        }
    }

    fn server_identity(&self) -> Result<Option<String>> {
        Ok(Some(super::llm::connect(&self.llm)?.identity()))
    }

    fn resolve_defaults(&mut self) {
        if self.protocol == Protocol::Chroma {
            let mut p = self.pieces();
            p.resolve_defaults();
            self.pieces = Some(p);
            self.retries = Some(self.retries.unwrap_or(2));
        }
        self.window_tokens = Some(self.window_tokens());
        self.max_tokens = Some(self.max_tokens.unwrap_or(200));
    }

    fn check(&self) -> Result<()> {
        super::llm::check(&self.llm)?;
        if self.window_tokens() == 0 {
            bail!("field `window_tokens`: must be at least 1");
        }
        if self.max_tokens == Some(0) {
            bail!("field `max_tokens`: must be at least 1");
        }
        match self.protocol {
            Protocol::Chroma => {
                let p = self.pieces();
                if p.needs_embedder() || p.indexes_other_text() {
                    bail!("field `pieces`: a plain splitter is needed (fixed, recursive, …)");
                }
                p.check().context("field `pieces`")?;
            }
            Protocol::Lumber => {
                if self.pieces.is_some() {
                    bail!("field `pieces` applies only with `protocol: chroma` (lumber's pieces are paragraphs)");
                }
                if self.retries.is_some() {
                    bail!("field `retries` applies only with `protocol: chroma`");
                }
            }
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let counter = match self.protocol {
            Protocol::Chroma => Some(Sizer::Tokens(
                super::common::load_tokenizer(
                    chunker::Unit::Tokens,
                    &Some(PathBuf::from("cl100k_base")),
                )?
                .context("the cl100k_base encoding")?,
            )),
            Protocol::Lumber => None,
        };
        Ok(Box::new(LlmBoundariesChunker {
            protocol: self.protocol,
            llm: self.llm.clone(),
            pieces: match self.protocol {
                Protocol::Chroma => Some(self.pieces().build().context("field `pieces`")?),
                Protocol::Lumber => None,
            },
            counter,
            window_tokens: self.window_tokens(),
            retries: self.retries.unwrap_or(2),
            max_tokens: self.max_tokens.unwrap_or(200),
        }))
    }
}

struct LlmBoundariesChunker {
    protocol: Protocol,
    llm: LlmEntry,
    pieces: Option<Box<dyn Chunker>>,
    counter: Option<Sizer>,
    window_tokens: usize,
    retries: u32,
    max_tokens: u32,
}

/// The paragraphs of `text`: maximal runs of lines between blank lines (lines of whitespace
/// only), each span from its first to its last non-whitespace byte.
pub fn paragraphs(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let mut cur: Option<Span> = None;
    let mut pos = 0;
    for raw in text.split_inclusive('\n') {
        let line = raw.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim();
        if trimmed.is_empty() {
            out.extend(cur.take());
        } else {
            let lead = line.len() - line.trim_start().len();
            let s = pos + lead;
            let e = s + trimmed.len();
            cur = Some(match cur {
                Some(c) => Span {
                    start: c.start,
                    end: e,
                },
                None => Span { start: s, end: e },
            });
        }
        pos += raw.len();
    }
    out.extend(cur);
    out
}

static SPLIT_AFTER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+").expect("digits"));
static ANSWER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Answer: ID \w+").expect("answer regex"));

/// Chroma's reading of a reply: the integers of its first line holding `split_after:`;
/// `None` when there is no such line.
pub fn chroma_numbers(reply: &str) -> Option<Vec<usize>> {
    let line = reply.split('\n').find(|l| l.contains("split_after:"))?;
    // A number too large for usize is out of every range: kept as usize::MAX, so the reply
    // is invalid rather than silently shortened.
    Some(
        SPLIT_AFTER
            .find_iter(line)
            .map(|m| m.as_str().parse().unwrap_or(usize::MAX))
            .collect(),
    )
}

/// LumberChunker's reading of a reply: the first `Answer: ID …` and the first number in it.
pub fn lumber_answer(reply: &str) -> Option<usize> {
    let m = ANSWER.find(reply)?;
    SPLIT_AFTER.find(m.as_str())?.as_str().parse().ok()
}

/// Python's repr of a list of ints (`[3, 5]`), as Chroma's retry message prints it.
fn py_list(v: &[usize]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl LlmBoundariesChunker {
    fn ask(&self, llm: &ChatModel, req: ChatRequest, use_: &mut LlmUse) -> Result<String> {
        let r = llm.ask_one(&req)?;
        super::llm::count(use_, &r);
        Ok(r.generation.text)
    }

    /// Chroma's protocol over one document's pieces; the 0-based indices of the pieces a
    /// chunk ends with.
    fn chroma(
        &self,
        llm: &ChatModel,
        text: &str,
        pieces: &[Span],
        use_: &mut LlmUse,
    ) -> Result<Vec<usize>> {
        let n = pieces.len();
        let counter = self.counter.as_ref().context("Chroma's token counter")?;
        let tokens: Vec<usize> = pieces
            .iter()
            .map(|p| counter.size(&text[p.start..p.end]))
            .collect();
        let mut splits: Vec<usize> = Vec::new(); // 1-based piece numbers
        let mut current = 0usize;
        while n > 4 && current < n - 4 {
            let mut count = 0;
            let mut input = String::new();
            let mut last = current;
            for i in current..n {
                count += tokens[i];
                input.push_str(&format!(
                    "<|start_chunk_{}|>{}<|end_chunk_{}|>",
                    i + 1,
                    &text[pieces[i].start..pieces[i].end],
                    i + 1
                ));
                last = i;
                if count > self.window_tokens {
                    break;
                }
            }
            let mut invalid: Option<Vec<usize>> = None;
            let mut accepted = None;
            let mut asked: Option<ChatRequest> = None;
            for _ in 0..=self.retries {
                let (head, tail) = CHROMA_USER
                    .trim_end_matches('\n')
                    .split_once("{chunked_input}")
                    .context("Chroma's user prompt has {chunked_input}")?;
                let mut user = format!(
                    "{head}{input}{}",
                    tail.replace("{current_chunk}", &current.to_string())
                );
                if let Some(bad) = &invalid {
                    user.push_str(
                        &CHROMA_RETRY
                            .trim_end_matches('\n')
                            .replace("{invalid_response}", &py_list(bad)),
                    );
                }
                let req = ChatRequest::new(
                    vec![
                        (
                            "system".to_string(),
                            CHROMA_SYSTEM.trim_end_matches('\n').to_string(),
                        ),
                        ("user".to_string(), user),
                    ],
                    self.max_tokens,
                );
                // At temperature 0 the same request gets the same reply: a re-ask that
                // repeats the last request (the same invalid numbers) cannot help.
                if asked.as_ref() == Some(&req) {
                    break;
                }
                asked = Some(req.clone());
                let reply = self.ask(llm, req, use_)?;
                let nums = chroma_numbers(&reply).unwrap_or_default();
                let ok = !nums.is_empty()
                    && nums.windows(2).all(|w| w[0] <= w[1])
                    && nums.iter().all(|&x| x >= current && x <= last + 1)
                    && nums.last().is_some_and(|&x| x > current);
                if ok {
                    accepted = Some(nums);
                    break;
                }
                use_.malformed += 1;
                invalid = Some(nums);
            }
            match accepted {
                Some(nums) => {
                    current = *nums.last().expect("non-empty");
                    splits.extend(nums);
                }
                None => {
                    use_.fallbacks += 1;
                    splits.push(last + 1);
                    current = last + 1;
                }
            }
        }
        let mut ends: Vec<usize> = splits
            .into_iter()
            .filter(|&x| x >= 1 && x < n)
            .map(|x| x - 1)
            .collect();
        ends.sort_unstable();
        ends.dedup();
        ends.push(n - 1);
        Ok(ends)
    }

    /// LumberChunker's protocol over one document's paragraphs; the 0-based indices of the
    /// paragraphs a chunk ends with ([`lumber_ends`], each group asked of `llm`).
    fn lumber(
        &self,
        llm: &ChatModel,
        text: &str,
        paras: &[Span],
        use_: &mut LlmUse,
    ) -> Result<Vec<usize>> {
        let (ends, malformed) = lumber_ends(text, paras, self.window_tokens, |doc| {
            let system = LUMBER_SYSTEM.trim_end_matches('\n');
            let user = format!("{system}\nDocument:\n{}", doc.join("\n"));
            let req = ChatRequest::new(
                vec![
                    ("system".to_string(), system.to_string()),
                    ("user".to_string(), user),
                ],
                self.max_tokens,
            );
            self.ask(llm, req, use_)
        })?;
        use_.malformed += malformed;
        use_.fallbacks += malformed;
        Ok(ends)
    }
}

/// LumberChunker's loop (`LumberChunker-Segmentation.py`) over one document's paragraphs:
/// the 0-based indices of the paragraphs a chunk ends with, and the number of malformed
/// replies. `ask` gets a group's lines (`ID k: text`) and returns the model's reply.
///
/// From paragraph `c`, paragraphs are added while the estimate (1.2 × words) of the group
/// stays under `window` and one paragraph remains after it; with `i` paragraphs added, the
/// group shown is `c..c+i-1`, or `c` alone when `i` is 1. As in the reference, the answer
/// `Answer: ID k` ends a chunk before `k` and the next group starts at `k + 1` — also for
/// `k = c`, the only answer a one-paragraph group has (the reference's `i = 2` case: `c`
/// alone under the window, `c` and `c + 1` over it), so a run of long paragraphs gives a
/// chunk each. Departures: a group of `i = 1` is not asked (its only answer is `c`); an
/// answer outside the group shown is malformed, and then the next group starts where the
/// reference's would (`c + i - 1`, at least one paragraph on, so the loop ends).
///
/// # Errors
/// `ask`'s.
pub(crate) fn lumber_ends(
    text: &str,
    paras: &[Span],
    window: usize,
    mut ask: impl FnMut(&[String]) -> Result<String>,
) -> Result<(Vec<usize>, usize)> {
    let n = paras.len();
    let estimate = |s: &str| (1.2 * s.split_whitespace().count() as f64).round() as usize;
    let line = |k: usize| format!("ID {k}: {}", &text[paras[k].start..paras[k].end]);
    let mut starts: Vec<usize> = Vec::new();
    let mut malformed = 0usize;
    let mut chunk_number = 0usize;
    while n > 5 && chunk_number < n - 5 {
        let mut i = 0;
        let mut words = 0;
        while words < window && i + chunk_number < n - 1 {
            i += 1;
            let doc: Vec<String> = (chunk_number..chunk_number + i).map(line).collect();
            words = estimate(&doc.join("\n"));
        }
        if i == 1 {
            // One paragraph alone reaches the window: its only answer is itself, which
            // starts a chunk (what the reference makes of `Answer: ID c`); nothing is asked.
            if chunk_number > 0 {
                starts.push(chunk_number);
            }
            chunk_number += 1;
            continue;
        }
        let end = chunk_number + i - 1;
        let doc: Vec<String> = (chunk_number..end).map(line).collect();
        let reply = ask(&doc)?;
        match lumber_answer(&reply).filter(|&k| k >= chunk_number && k < end) {
            Some(k) => {
                starts.push(k);
                chunk_number = k + 1;
            }
            None => {
                malformed += 1;
                chunk_number = end.max(chunk_number + 1);
            }
        }
    }
    let mut ends: Vec<usize> = starts
        .into_iter()
        .filter(|&k| k >= 1 && k < n)
        .map(|k| k - 1)
        .collect();
    ends.sort_unstable();
    ends.dedup();
    if n > 0 {
        ends.push(n - 1);
    }
    Ok((ends, malformed))
}

impl Chunker for LlmBoundariesChunker {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        embedder: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        let llm = super::llm::connect(&self.llm)?;
        let pieces: Vec<Vec<Span>> = match (&self.pieces, self.protocol) {
            (Some(p), Protocol::Chroma) => {
                let (chunks, _) = p.chunk_corpus(docs, embedder)?;
                let mut by_doc: std::collections::HashMap<&str, Vec<Span>> = Default::default();
                for c in &chunks {
                    let v = by_doc.entry(c.doc_id.as_str()).or_default();
                    if v.last().is_some_and(|p: &Span| c.span.start < p.end) {
                        bail!(
                            "field `pieces`: pieces of document `{}` overlap ({}-{} and \
                             {}-{}); Chroma's pieces have no overlap (chunk_overlap=0): \
                             set `overlap: 0`",
                            c.doc_id,
                            v.last().expect("a piece").start,
                            v.last().expect("a piece").end,
                            c.span.start,
                            c.span.end
                        );
                    }
                    v.push(c.span);
                }
                docs.iter()
                    .map(|d| by_doc.remove(d.id.as_str()).unwrap_or_default())
                    .collect()
            }
            _ => docs.iter().map(|d| paragraphs(&d.text)).collect(),
        };
        let per_doc: Vec<Result<(Vec<Chunk>, LlmUse)>> = llm.pool()?.install(|| {
            docs.par_iter()
                .zip(&pieces)
                .map(|(d, ps)| {
                    let mut use_ = LlmUse::default();
                    if ps.is_empty() {
                        return Ok((Vec::new(), use_));
                    }
                    use_.documents = 1;
                    let ends = match self.protocol {
                        Protocol::Chroma => self.chroma(&llm, &d.text, ps, &mut use_),
                        Protocol::Lumber => self.lumber(&llm, &d.text, ps, &mut use_),
                    }
                    .with_context(|| format!("document `{}`", d.id))?;
                    let mut out = Vec::with_capacity(ends.len());
                    let mut first = 0;
                    for e in ends {
                        out.push(Chunk::new(d, ps[first].start, ps[e].end));
                        first = e + 1;
                    }
                    Ok((out, use_))
                })
                .collect()
        });
        let mut chunks = Vec::new();
        let mut total = LlmUse::default();
        for r in per_doc {
            let (c, u) = r?;
            chunks.extend(c);
            // `add` keeps the larger document count (a wrapper's and its inner strategy's
            // requests are over the same documents); here each document is counted once.
            let documents = total.documents + u.documents;
            total.add(&u);
            total.documents = documents;
        }
        Ok((
            chunks,
            StrategyStats {
                llm: Some(total),
                ..Default::default()
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_as_the_references_read_them() {
        assert_eq!(
            chroma_numbers("ok\nsplit_after: 3, 5\nsplit_after: 9"),
            Some(vec![3, 5])
        );
        assert_eq!(chroma_numbers("split_after:"), Some(vec![]));
        assert_eq!(
            chroma_numbers("split_after: 2, 99999999999999999999999999"),
            Some(vec![2, usize::MAX])
        );
        assert_eq!(chroma_numbers("I would split after 3"), None);
        assert_eq!(lumber_answer("The shift is at Answer: ID 0012."), Some(12));
        assert_eq!(lumber_answer("Answer: 12"), None);
        assert_eq!(py_list(&[3, 5]), "[3, 5]");
    }

    #[test]
    fn paragraphs_are_exact_spans() {
        let t = "  First para\nline two.  \n\n\n Second.\n \nThird";
        let p = paragraphs(t);
        let s: Vec<&str> = p.iter().map(|x| &t[x.start..x.end]).collect();
        assert_eq!(s, ["First para\nline two.", "Second.", "Third"]);
    }

    /// The reference's loop (LumberChunker-Segmentation.py), transcribed for valid replies:
    /// the chunk starts (`new_id_list` without its last entry) for `paragraph_words`, when
    /// the model answers the paragraph at `pick` (0 = the group's first) of each group shown.
    fn reference_starts(paragraph_words: &[usize], pick: usize) -> Vec<usize> {
        let n = paragraph_words.len();
        let count = |ids: std::ops::Range<usize>| {
            // "ID k: " adds two words per paragraph.
            let words: usize = ids.map(|k| paragraph_words[k] + 2).sum();
            (1.2 * words as f64).round() as usize
        };
        let (mut chunk_number, mut new_id_list) = (0usize, Vec::new());
        while n >= 5 && chunk_number + 5 < n {
            let (mut i, mut word_count) = (0, 0);
            while word_count < 550 && i + chunk_number < n - 1 {
                i += 1;
                word_count = count(chunk_number..chunk_number + i);
            }
            let shown = if i == 1 {
                chunk_number..chunk_number + 1
            } else {
                chunk_number..chunk_number + i - 1
            };
            let k = (shown.start + pick).min(shown.end - 1);
            new_id_list.push(k);
            chunk_number = k + 1;
        }
        new_id_list
    }

    /// Issue 56 case 6: a group of one paragraph (the reference's `i = 2` case) took only
    /// answers after it, so every reply was "malformed" and 12 paragraphs of 300 words became
    /// one 3,600-word chunk. Now the loop gives the reference's chunks, for runs of long
    /// paragraphs and mixed ones, whichever paragraph of a group the model names.
    #[test]
    fn lumber_matches_the_reference_loop() {
        let para = |w: usize, k: usize| vec![format!("p{k}"); w].join(" ");
        let mut cases: Vec<Vec<usize>> = vec![vec![300; 12], vec![600; 8], vec![40; 30]];
        let mut state = 7u64;
        for _ in 0..30 {
            let len = 6 + (state % 25) as usize;
            let v = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    [20, 80, 150, 300, 480, 700][(state >> 33) as usize % 6]
                })
                .collect();
            cases.push(v);
        }
        for words in cases {
            let text = words
                .iter()
                .enumerate()
                .map(|(k, &w)| para(w, k))
                .collect::<Vec<_>>()
                .join("\n\n");
            let paras = paragraphs(&text);
            assert_eq!(paras.len(), words.len());
            for pick in [0, 1, 3] {
                let (ends, malformed) = lumber_ends(&text, &paras, 550, |doc| {
                    let first: usize = doc[0][3..doc[0].find(':').unwrap()].parse().unwrap();
                    Ok(format!("Answer: ID {}", first + pick.min(doc.len() - 1)))
                })
                .unwrap();
                assert_eq!(malformed, 0, "{words:?}");
                let mut want: Vec<usize> = reference_starts(&words, pick)
                    .into_iter()
                    .filter(|&k| k >= 1)
                    .map(|k| k - 1)
                    .collect();
                want.dedup();
                want.push(words.len() - 1);
                assert_eq!(ends, want, "{words:?}, pick {pick}");
            }
        }
        // The issue's document: 12 paragraphs of 300 words, a chunk each until five are
        // left (the loop stops there, as the reference's does): 6 + 1 chunks, not 1.
        let text = (0..12)
            .map(|k| para(300, k))
            .collect::<Vec<_>>()
            .join("\n\n");
        let (ends, _) = lumber_ends(&text, &paragraphs(&text), 550, |doc| {
            Ok(format!(
                "Answer: ID {}",
                &doc[0][3..doc[0].find(':').unwrap()]
            ))
        })
        .unwrap();
        assert_eq!(ends, [0, 1, 2, 3, 4, 5, 11]);
    }

    #[test]
    fn prompts_are_the_published_ones() {
        assert!(CHROMA_SYSTEM.starts_with("You are an assistant specialized in splitting text into thematically consistent sections."));
        assert!(CHROMA_USER.starts_with("CHUNKED_TEXT: {chunked_input}"));
        assert!(LUMBER_SYSTEM.starts_with("You will receive as input an english document"));
    }
}
