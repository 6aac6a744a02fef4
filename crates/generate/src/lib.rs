//! Questions with verified evidence from a bare corpus (`chunkbench data generate`,
//! docs/reference.md §3c).
//!
//! The method follows Chroma's `SyntheticEvaluation` (Smith & Troynikov 2024, "Evaluating
//! Chunking Strategies for Retrieval", Chroma technical report: an LLM writes a question and
//! quotes the excerpts that answer it; excerpts must be found in the text; questions whose
//! worst excerpt is weakly related to them, and near-duplicate questions, are filtered by
//! embedding similarity) and chonkie's MTCB rule (a question is kept only when its
//! supporting text appears word for word in the source). Per candidate:
//!
//! 1. a passage is taken in the seeded, stratified order of [`sample`];
//! 2. the model gets the committed prompt ([`SYSTEM_PROMPT`], [`QUESTION_TEMPLATE`]) at
//!    temperature 0 (with the configured seed); every reply goes through the
//!    [`cache::GenerationCache`], keyed by the model's identity and the request;
//! 3. the reply is parsed ([`reply`]), each excerpt located as an exact byte span of its
//!    document ([`locate`]), the answer checked against the excerpts (and for multiple
//!    choice the distractors against the evidence), sizes checked, the question compared
//!    with its excerpts and with the questions already accepted through the embedder;
//! 4. the first failing check rejects the candidate, counted under its [`Reason`]; the
//!    first `target` accepted candidates make the dataset.
//!
//! Candidates are tried in order and judged in order (replies are fetched `concurrency` at
//! a time), so the dataset depends on the corpus, the options, the model's replies and the
//! embedder only — never on the thread count or on which replies came from the cache.

#![warn(missing_docs)]

pub use reader::generation_cache as cache;
mod checks;
pub mod locate;
pub mod reply;
pub mod report;
pub mod sample;

use anyhow::{bail, Context, Result};
use chunker::{Document, Span};
use datasets::dataset::{DatasetManifest, Evidence, Question};
use reader::lm::{ChatModel, ChatRequest, Generation};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the generation rule (manifest `version` and identity).
pub const RULE: &str = "chunkbench-generate-1";

/// The system message of every generation request.
pub const SYSTEM_PROMPT: &str = include_str!("../prompts/system.txt");

/// The user message, a minijinja template over `title`, `passage`, `max_excerpts`,
/// `max_excerpt_words` and `mcq`.
pub const QUESTION_TEMPLATE: &str = include_str!("../prompts/question.jinja");

/// `max_tokens` of the closed-book check's request (an answer letter).
const CLOSED_BOOK_MAX_TOKENS: u32 = 16;

/// How replies are constrained to JSON (`--response-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ResponseFormat {
    /// No `response_format`: the prompt alone asks for JSON (every server).
    #[default]
    None,
    /// `{"type": "json_object", "schema": S}`: llama.cpp's Python server turns the schema
    /// into a grammar.
    JsonObject,
    /// `{"type": "json_schema", "json_schema": {"name": "question", "schema": S}}`: OpenAI
    /// and vLLM structured outputs.
    JsonSchema,
}

/// The closed-book check (`--flag-closed-book`, `--drop-closed-book`; multiple choice only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ClosedBook {
    /// Not checked.
    #[default]
    Off,
    /// Checked; a question the model answers without any passage is kept and flagged.
    Flag,
    /// Checked; such a question is rejected ([`Reason::ClosedBook`]).
    Drop,
}

/// Everything a generated set depends on besides the corpus, the model and the embedder
/// (recorded in the manifest; part of the dataset's identity).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerateOptions {
    /// Questions wanted: generation stops when this many are accepted.
    pub target: usize,
    /// Candidates tried at most (each one passage, one request).
    pub max_candidates: usize,
    /// Seed of the passage order and of the option order.
    pub seed: u64,
    /// A passage ends after the sentence that brings it to this many words.
    pub passage_words: usize,
    /// Shorter passages are not used.
    pub min_passage_words: usize,
    /// A question is rejected when its least similar excerpt is below this cosine similarity
    /// (Chroma's poor-excerpt filter; its general benchmark used about 0.40–0.43).
    pub relevance_threshold: f64,
    /// A question is rejected when its cosine similarity to an accepted question is at least
    /// this (Chroma's duplicate filter used 0.67–0.73 on its general benchmark).
    pub duplicate_threshold: f64,
    /// Excerpts per question at most.
    pub max_excerpts: usize,
    /// Words per excerpt at least.
    pub min_excerpt_words: usize,
    /// Words per excerpt at most.
    pub max_excerpt_words: usize,
    /// Words per question at most.
    pub max_question_words: usize,
    /// `max_tokens` of each generation request.
    pub max_tokens: u32,
    /// Multiple choice: the answer and three distractors as options.
    pub mcq: bool,
    /// The closed-book check.
    pub closed_book: ClosedBook,
    /// How replies are constrained to JSON.
    pub response_format: ResponseFormat,
    /// Requests in flight at once (does not change the result).
    #[serde(skip)]
    pub concurrency: usize,
    /// The system message (default [`SYSTEM_PROMPT`]; `--system-prompt FILE`). Recorded in
    /// the manifest's notes and identity by its text.
    #[serde(skip)]
    pub system_prompt: String,
    /// The user-message template (default [`QUESTION_TEMPLATE`]; `--prompt FILE`).
    #[serde(skip)]
    pub question_template: String,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            target: 40,
            max_candidates: 200,
            seed: 0,
            passage_words: 120,
            min_passage_words: 40,
            relevance_threshold: 0.40,
            duplicate_threshold: 0.70,
            max_excerpts: 3,
            min_excerpt_words: 3,
            max_excerpt_words: 80,
            max_question_words: 40,
            max_tokens: 300,
            mcq: false,
            closed_book: ClosedBook::Off,
            response_format: ResponseFormat::None,
            concurrency: 2,
            system_prompt: SYSTEM_PROMPT.to_string(),
            question_template: QUESTION_TEMPLATE.to_string(),
        }
    }
}

impl GenerateOptions {
    /// Checks the options.
    ///
    /// # Errors
    /// A message naming the flag and the allowed range.
    pub fn check(&self) -> Result<()> {
        if self.target == 0 {
            bail!("--questions must be at least 1");
        }
        if self.max_candidates == 0 {
            bail!("--candidates must be at least 1");
        }
        if self.passage_words == 0 || self.min_passage_words > self.passage_words {
            bail!("--passage-words must be at least 1 and at least --min-passage-words");
        }
        for (v, flag) in [
            (self.relevance_threshold, "--relevance"),
            (self.duplicate_threshold, "--duplicate"),
        ] {
            if !(-1.0..=1.0).contains(&v) {
                bail!("{flag} is a cosine similarity: give a value in [-1, 1], not {v}");
            }
        }
        if self.max_excerpts == 0 || self.max_excerpt_words < self.min_excerpt_words {
            bail!(
                "--max-excerpts must be at least 1 and --max-excerpt-words at least \
                 --min-excerpt-words"
            );
        }
        if self.closed_book != ClosedBook::Off && !self.mcq {
            bail!(
                "--flag-closed-book and --drop-closed-book need --mcq: the check asks the model \
                 to choose among the options without a passage"
            );
        }
        if self.concurrency == 0 {
            bail!("--concurrency must be at least 1");
        }
        if self.max_tokens == 0 || self.max_question_words == 0 || self.max_excerpt_words == 0 {
            bail!("--max-tokens, --max-question-words and --max-excerpt-words must be at least 1");
        }
        if self.system_prompt.trim().is_empty() || self.question_template.trim().is_empty() {
            bail!("--system-prompt and --prompt must not be empty");
        }
        const SENTINEL: &str = "\u{1f}chunkbench-passage\u{1f}";
        let m = render_messages(self, "TITLE", SENTINEL).context("--prompt")?;
        if !m.iter().any(|(_, c)| c.contains(SENTINEL)) {
            bail!(
                "--prompt: the template never shows the passage; put {{{{ passage }}}} where the \
                 text goes"
            );
        }
        Ok(())
    }

    /// The JSON schema of a reply (sent with `--response-format json-object|json-schema`), as
    /// JSON text with its properties in the order the model should write them (question,
    /// excerpts, answer, distractors): llama.cpp's grammar follows that order.
    pub fn reply_schema(&self) -> String {
        let strings = |min: usize, max: usize| {
            format!(
                r#"{{"type":"array","items":{{"type":"string"}},"minItems":{min},"maxItems":{max}}}"#
            )
        };
        let mut props = vec![
            r#""question":{"type":"string"}"#.to_string(),
            format!(r#""excerpts":{}"#, strings(1, self.max_excerpts)),
            r#""answer":{"type":"string"}"#.to_string(),
        ];
        let mut required = vec![r#""question""#, r#""excerpts""#, r#""answer""#];
        if self.mcq {
            props.push(format!(r#""distractors":{}"#, strings(3, 3)));
            required.push(r#""distractors""#);
        }
        format!(
            r#"{{"type":"object","properties":{{{}}},"required":[{}]}}"#,
            props.join(","),
            required.join(",")
        )
    }

    /// sha256 of the system prompt and the question template (NUL-separated).
    pub fn prompts_sha256(&self) -> String {
        fsio::sha256_hex(format!("{}\0{}", self.system_prompt, self.question_template).as_bytes())
    }

    /// The `response_format` JSON text sent with each request, if any.
    pub fn response_format_value(&self) -> Option<String> {
        match self.response_format {
            ResponseFormat::None => None,
            ResponseFormat::JsonObject => Some(format!(
                r#"{{"type":"json_object","schema":{}}}"#,
                self.reply_schema()
            )),
            ResponseFormat::JsonSchema => Some(format!(
                r#"{{"type":"json_schema","json_schema":{{"name":"question","schema":{}}}}}"#,
                self.reply_schema()
            )),
        }
    }
}

/// Renders the messages of one candidate.
///
/// # Errors
/// The template does not render (it is committed; a test renders it).
pub fn render_messages(
    opts: &GenerateOptions,
    title: &str,
    passage: &str,
) -> Result<Vec<(String, String)>> {
    let env = minijinja::Environment::new();
    let user = env
        .render_str(
            &opts.question_template,
            minijinja::context! {
                title => title,
                passage => passage,
                max_excerpts => opts.max_excerpts,
                max_excerpt_words => opts.max_excerpt_words,
                mcq => opts.mcq,
            },
        )
        .context("the question template does not render")?;
    Ok(vec![
        ("system".into(), opts.system_prompt.trim_end().to_string()),
        ("user".into(), user.trim_end().to_string()),
    ])
}

/// Why a candidate was rejected. The first failing check, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The reply is not a JSON object with the fields asked for.
    MalformedReply,
    /// The question, an excerpt or the number of excerpts is over its limit.
    TooLong,
    /// An excerpt has fewer words than the minimum.
    TooShort,
    /// An excerpt is not in the passage (not even with whitespace normalised).
    ExcerptNotFound,
    /// An excerpt occurs more than once in its document.
    ExcerptAmbiguous,
    /// The answer is not in any excerpt.
    AnswerNotInExcerpt,
    /// Fewer than three usable distractors (empty, repeated, or equal to the answer).
    BadDistractors,
    /// A distractor occurs in the evidence.
    DistractorInEvidence,
    /// The question's least similar excerpt is below the relevance threshold.
    ExcerptUnrelated,
    /// The question is a near-duplicate of an accepted one.
    DuplicateQuestion,
    /// The model answers it without a passage (`--drop-closed-book`).
    ClosedBook,
}

impl Reason {
    /// Every reason, in check order.
    pub const ALL: [Reason; 11] = [
        Reason::MalformedReply,
        Reason::TooLong,
        Reason::TooShort,
        Reason::ExcerptNotFound,
        Reason::ExcerptAmbiguous,
        Reason::AnswerNotInExcerpt,
        Reason::BadDistractors,
        Reason::DistractorInEvidence,
        Reason::ExcerptUnrelated,
        Reason::DuplicateQuestion,
        Reason::ClosedBook,
    ];

    /// The snake-case name (manifest counts are `rejected_NAME`).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::MalformedReply => "malformed_reply",
            Reason::TooLong => "too_long",
            Reason::TooShort => "too_short",
            Reason::ExcerptNotFound => "excerpt_not_found",
            Reason::ExcerptAmbiguous => "excerpt_ambiguous",
            Reason::AnswerNotInExcerpt => "answer_not_in_excerpt",
            Reason::BadDistractors => "bad_distractors",
            Reason::DistractorInEvidence => "distractor_in_evidence",
            Reason::ExcerptUnrelated => "excerpt_unrelated",
            Reason::DuplicateQuestion => "duplicate_question",
            Reason::ClosedBook => "closed_book",
        }
    }

    /// What the reason means, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::MalformedReply => "the reply is not a JSON object with the fields asked for",
            Reason::TooLong => {
                "the question, an excerpt or the number of excerpts is over its limit"
            }
            Reason::TooShort => "an excerpt is shorter than the minimum",
            Reason::ExcerptNotFound => {
                "an excerpt is not in the passage, even with whitespace normalised"
            }
            Reason::ExcerptAmbiguous => "an excerpt occurs more than once in its document",
            Reason::AnswerNotInExcerpt => "the answer is not in any excerpt",
            Reason::BadDistractors => {
                "fewer than three distinct distractors different from the answer"
            }
            Reason::DistractorInEvidence => "a distractor occurs in the evidence",
            Reason::ExcerptUnrelated => {
                "the least similar excerpt is below the relevance threshold"
            }
            Reason::DuplicateQuestion => "a near-duplicate of an accepted question",
            Reason::ClosedBook => "the model answers it without any passage",
        }
    }
}

/// The documents to generate from, and where they came from.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The documents (written unchanged into the generated dataset).
    pub documents: Vec<Document>,
    /// Where they came from, in words (`dataset openstax-chemistry`, `folder my-docs`).
    pub source: String,
    /// The content identity of the source (a dataset's manifest sha256, or the sha256 of
    /// the folder's `path<TAB>sha256` lines).
    pub source_sha256: String,
    /// License of the texts.
    pub license: String,
    /// How the documents were read (for the manifest).
    pub notes: Vec<String>,
}

/// One candidate as judged: a row of `generation.jsonl` and of the report.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateRecord {
    /// 1-based position in the candidate order.
    pub candidate: usize,
    /// The passage's document.
    pub doc_id: String,
    /// The passage's byte span in its document.
    pub passage: Evidence,
    /// `accepted` or `rejected`.
    pub status: &'static str,
    /// Why it was rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// The failing check in words (empty when accepted).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The question id, when accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question_id: Option<String>,
    /// The reply's fields, when it parsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft: Option<reply::Draft>,
    /// The answer as stored: the model's answer as the evidence writes it (case and
    /// whitespace of the document), once found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The excerpts' spans found so far (all of them when accepted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// Excerpts found only with whitespace normalised.
    #[serde(skip_serializing_if = "is_zero")]
    pub normalised_excerpts: usize,
    /// Cosine similarity of the question to its least similar excerpt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
    /// The most similar accepted question and the similarity, when compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nearest: Option<(String, f64)>,
    /// Multiple choice with the closed-book check: whether the model answered it without a
    /// passage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_book: Option<bool>,
    /// The reply's text, as the model wrote it.
    pub reply: String,
    /// The server's finish reason.
    pub finish_reason: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The result of [`generate`].
#[derive(Debug, Clone)]
pub struct Generated {
    /// The accepted questions, in acceptance order (ids `gen-0001`, …).
    pub questions: Vec<Question>,
    /// Every judged candidate, in order.
    pub records: Vec<CandidateRecord>,
    /// Counts: `passages`, `passages_too_long`, `candidates`, `accepted`, `rejected_REASON` for every reason,
    /// `excerpts_normalised`, `replies_cut`, `replies_oversized`, `closed_book_flagged`.
    pub counts: BTreeMap<String, u64>,
    /// The model's identity.
    pub llm_identity: String,
    /// The embedder's identity.
    pub embedder_identity: String,
    /// Replies this call asked the model for (the rest came from the cache).
    pub model_replies: u64,
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut d, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        d += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        d / (na.sqrt() * nb.sqrt())
    }
}

/// One reply, through the model's cache ([`ChatModel::ask_one`]); `asked` counts those the
/// server wrote.
fn reply_for(
    llm: &ChatModel,
    asked: &std::sync::atomic::AtomicU64,
    messages: Vec<(String, String)>,
    max_tokens: u32,
    format: Option<&str>,
) -> Result<Generation> {
    let r = llm.ask_one(&ChatRequest {
        messages,
        max_tokens,
        response_format: format.map(str::to_string),
    })?;
    if !r.cached {
        asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(r.generation)
}

/// What the progress callback of [`generate`] is told after each batch.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Candidates judged so far.
    pub candidates: usize,
    /// Accepted so far.
    pub accepted: usize,
    /// Candidates that may be tried.
    pub limit: usize,
}

/// Generates questions from `corpus` (module docs).
///
/// # Errors
/// A corpus with no passage of `min_passage_words` words; a model that cannot answer (the
/// replies already received stay in the cache, so a new run resumes); an embedder or cache
/// failure. Rejected candidates are not errors: they are counted.
pub fn generate(
    corpus: &Corpus,
    opts: &GenerateOptions,
    llm: &ChatModel,
    embedder: &dyn embed::Embedder,
    progress: &mut dyn FnMut(Progress),
) -> Result<Generated> {
    opts.check()?;
    if corpus.documents.is_empty() {
        bail!("{}: no documents to generate questions from", corpus.source);
    }
    let (order, too_long) = sample::candidate_order(
        &corpus.documents,
        opts.seed,
        opts.passage_words,
        opts.min_passage_words,
    );
    if order.is_empty() {
        let fix = if too_long > 0 {
            format!(
                "{too_long} passage(s) ran past {} words without a sentence end (4 × \
                 --passage-words): raise --passage-words",
                opts.passage_words * sample::MAX_PASSAGE_FACTOR
            )
        } else {
            "lower --min-passage-words or give longer documents".to_string()
        };
        bail!(
            "{}: no passage of {} to {} words in its {} document(s); {fix}",
            corpus.source,
            opts.min_passage_words,
            opts.passage_words * sample::MAX_PASSAGE_FACTOR,
            corpus.documents.len()
        );
    }
    let identity = llm.identity();
    let format = opts.response_format_value();
    let limit = opts.max_candidates.min(order.len());
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    counts.insert("passages".into(), order.len() as u64);
    counts.insert("passages_too_long".into(), too_long as u64);
    for r in Reason::ALL {
        counts.insert(format!("rejected_{}", r.as_str()), 0);
    }
    let asked = std::sync::atomic::AtomicU64::new(0);
    let mut state = Judge {
        asked: &asked,
        corpus,
        opts,
        llm,
        embedder,
        questions: Vec::new(),
        vectors: Vec::new(),
        records: Vec::new(),
    };
    let mut next = 0;
    'outer: while next < limit && state.questions.len() < opts.target {
        let batch: Vec<(usize, sample::Passage)> = (next..limit.min(next + opts.concurrency))
            .map(|i| (i, order[i]))
            .collect();
        next += batch.len();
        let replies: Vec<Result<Generation>> = std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .iter()
                .map(|(_, p)| {
                    let (format, asked) = (format.as_deref(), &asked);
                    s.spawn(move || {
                        let d = &corpus.documents[p.doc];
                        let msgs =
                            render_messages(opts, &d.title, &d.text[p.span.start..p.span.end])?;
                        reply_for(llm, asked, msgs, opts.max_tokens, format)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| bail!("a generation thread panicked"))
                })
                .collect()
        });
        for ((i, p), r) in batch.into_iter().zip(replies) {
            let g = r.with_context(|| {
                format!(
                    "candidate {} (document {}): the model did not answer; nothing was written \
                     (the replies received so far are cached: run the same command again to \
                     resume)",
                    i + 1,
                    corpus.documents[p.doc].id
                )
            })?;
            state.judge(i + 1, p, g)?;
            if state.questions.len() >= opts.target {
                break 'outer;
            }
        }
        progress(Progress {
            candidates: state.records.len(),
            accepted: state.questions.len(),
            limit,
        });
    }
    let records = state.records;
    counts.insert("candidates".into(), records.len() as u64);
    counts.insert("accepted".into(), state.questions.len() as u64);
    for r in &records {
        if let Some(reason) = r.reason {
            *counts
                .entry(format!("rejected_{}", reason.as_str()))
                .or_default() += 1;
        }
    }
    let sum = |f: &dyn Fn(&CandidateRecord) -> u64| records.iter().map(f).sum::<u64>();
    counts.insert(
        "excerpts_normalised".into(),
        sum(&|r| (r.status == "accepted") as u64 * r.normalised_excerpts as u64),
    );
    counts.insert(
        "replies_cut".into(),
        sum(&|r| (r.finish_reason == "length") as u64),
    );
    counts.insert(
        "replies_oversized".into(),
        sum(&|r| (r.finish_reason == reader::lm::OVERSIZED) as u64),
    );
    if opts.closed_book != ClosedBook::Off {
        counts.insert(
            "closed_book_flagged".into(),
            sum(&|r| (r.status == "accepted" && r.closed_book == Some(true)) as u64),
        );
    }
    Ok(Generated {
        questions: state.questions,
        records,
        model_replies: asked.load(std::sync::atomic::Ordering::Relaxed),
        counts,
        llm_identity: identity.clone(),
        embedder_identity: embedder.identity(),
    })
}

/// A candidate's verdict: the question's vector when every check passed, else the first
/// failing check's reason and detail.
type Verdict = std::result::Result<Vec<f32>, (Reason, String)>;

/// The judging state of one [`generate`] call.
struct Judge<'a> {
    asked: &'a std::sync::atomic::AtomicU64,
    corpus: &'a Corpus,
    opts: &'a GenerateOptions,
    llm: &'a ChatModel,
    embedder: &'a dyn embed::Embedder,
    /// The accepted questions, and their vectors (same order).
    questions: Vec<Question>,
    vectors: Vec<Vec<f32>>,
    records: Vec<CandidateRecord>,
}

impl Judge<'_> {
    /// Judges candidate `n` (1-based) and records it.
    fn judge(&mut self, n: usize, p: sample::Passage, g: Generation) -> Result<()> {
        let doc = &self.corpus.documents[p.doc];
        let mut rec = CandidateRecord {
            candidate: n,
            doc_id: doc.id.clone(),
            passage: Evidence {
                doc_id: doc.id.clone(),
                start: p.span.start,
                end: p.span.end,
            },
            status: "rejected",
            reason: None,
            detail: String::new(),
            question_id: None,
            draft: None,
            answer: None,
            evidence: Vec::new(),
            normalised_excerpts: 0,
            relevance: None,
            nearest: None,
            closed_book: None,
            reply: reader::clip(&httpio::redact(&g.text), reply::MAX_REPLY_BYTES),
            finish_reason: g.finish_reason.clone(),
        };
        let verdict = self.check(doc, p.span, &g, &mut rec)?;
        match verdict {
            Err((reason, detail)) => {
                rec.reason = Some(reason);
                rec.detail = detail;
            }
            Ok(vector) => {
                let id = format!("gen-{:04}", self.questions.len() + 1);
                let d = rec
                    .draft
                    .as_ref()
                    .expect("an accepted candidate has a draft");
                let answer = rec
                    .answer
                    .clone()
                    .expect("an accepted candidate has its answer");
                let mut q = Question {
                    id: id.clone(),
                    question: d.question.clone(),
                    options: Vec::new(),
                    answer: None,
                    answers: Some(vec![answer.clone()]),
                    subject: None,
                    doc_ids: None,
                    evidence: Some(rec.evidence.clone()),
                };
                if self.opts.mcq {
                    let (options, gold) = option_order(self.opts.seed, &id, &answer, d);
                    q.options = options;
                    q.answer = Some(gold);
                    if self.opts.closed_book != ClosedBook::Off {
                        let hit = self.closed_book(&q)?;
                        rec.closed_book = Some(hit);
                        if hit && self.opts.closed_book == ClosedBook::Drop {
                            rec.reason = Some(Reason::ClosedBook);
                            rec.detail =
                                "the model chose the right option without a passage".into();
                            self.records.push(rec);
                            return Ok(());
                        }
                    }
                }
                rec.status = "accepted";
                rec.question_id = Some(id.clone());
                self.vectors.push(vector);
                self.questions.push(q);
            }
        }
        self.records.push(rec);
        Ok(())
    }

    /// The checks, in [`Reason`] order: `Ok(question vector)` or the first failure.
    fn check(
        &self,
        doc: &Document,
        passage: Span,
        g: &Generation,
        rec: &mut CandidateRecord,
    ) -> Result<Verdict> {
        let o = self.opts;
        let draft = match checks::checked_draft(o, g) {
            Ok(d) => d,
            Err(r) => return Ok(Err(r)),
        };
        rec.draft = Some(draft.clone());
        if let Err(r) = checks::size_checks(o, &draft) {
            return Ok(Err(r));
        }
        let evidence = match checks::located_evidence(doc, passage, &draft, rec) {
            Ok(e) => e,
            Err(r) => return Ok(Err(r)),
        };
        rec.evidence = evidence.clone();
        let texts: Vec<&str> = evidence.iter().map(|e| &doc.text[e.start..e.end]).collect();
        // The answer as the document writes it (case, whitespace): what answer recall, which
        // compares lower-cased text exactly, will look for.
        let Some(answer) = texts
            .iter()
            .find_map(|t| locate::find_loose(t, &draft.answer).map(|(a, b)| t[a..b].to_string()))
        else {
            return Ok(Err((
                Reason::AnswerNotInExcerpt,
                format!("the answer {:?} is in no excerpt", draft.answer),
            )));
        };
        rec.answer = Some(answer.clone());
        if o.mcq {
            if let Err(r) = checks::distractor_checks(&draft, &answer, &texts) {
                return Ok(Err(r));
            }
        }
        self.embedding_checks(&draft, &texts, rec)
    }

    /// The checks through the embedder: every excerpt related to the question (the least
    /// similar one's cosine at least `relevance_threshold`), and the question no near-duplicate
    /// of one already accepted.
    ///
    /// # Errors
    /// The embedder fails.
    fn embedding_checks(
        &self,
        draft: &reply::Draft,
        texts: &[&str],
        rec: &mut CandidateRecord,
    ) -> Result<Verdict> {
        let o = self.opts;
        let mut inputs: Vec<&str> = vec![draft.question.as_str()];
        inputs.extend(texts.iter().copied());
        let vectors = self
            .embedder
            .embed(&inputs)
            .map_err(|e| anyhow::anyhow!("the embedder failed: {e}"))?;
        let worst = vectors[1..]
            .iter()
            .map(|v| cosine(&vectors[0], v))
            .fold(f64::INFINITY, f64::min);
        rec.relevance = Some(worst);
        if worst < o.relevance_threshold {
            return Ok(Err((
                Reason::ExcerptUnrelated,
                format!(
                    "the least similar excerpt has cosine {worst:.3} (threshold {})",
                    o.relevance_threshold
                ),
            )));
        }
        let question_norm = locate::normalise_text(&draft.question.to_lowercase());
        let mut nearest: Option<(String, f64)> = None;
        for (q, v) in self.questions.iter().zip(&self.vectors) {
            let same = locate::normalise_text(&q.question.to_lowercase()) == question_norm;
            let s = if same { 1.0 } else { cosine(&vectors[0], v) };
            if nearest.as_ref().is_none_or(|(_, b)| s > *b) {
                nearest = Some((q.id.clone(), s));
            }
        }
        rec.nearest = nearest.clone();
        if let Some((id, s)) = nearest {
            if s >= o.duplicate_threshold {
                return Ok(Err((
                    Reason::DuplicateQuestion,
                    format!(
                        "cosine {s:.3} to {id} (threshold {})",
                        o.duplicate_threshold
                    ),
                )));
            }
        }
        Ok(Ok(vectors[0].clone()))
    }

    /// Whether the model picks the gold option of `q` with no passage (the reader's
    /// multiple-choice prompt, its answer parsed as the chat reader parses it).
    fn closed_book(&self, q: &Question) -> Result<bool> {
        let t = reader::PromptTemplate {
            cue_placement: reader::CuePlacement::User,
            ..reader::PromptTemplate::default()
        };
        let r = t.render::<&str>(&q.question, &q.options, &[]);
        let mut msgs = Vec::new();
        if let Some(s) = r.system {
            msgs.push(("system".to_string(), s));
        }
        msgs.push(("user".to_string(), r.user));
        let g = reply_for(self.llm, self.asked, msgs, CLOSED_BOOK_MAX_TOKENS, None)?;
        Ok(matches!(
            reader::parse_answer(&g.text, &q.options),
            reader::ParsedAnswer::Choice { index, .. } if Some(index) == q.answer
        ))
    }
}

/// The options of a multiple-choice question (the answer and the first three distractors)
/// in the order of `sha256(seed ␟ id ␟ position)`, and the answer's index.
fn option_order(seed: u64, id: &str, answer: &str, d: &reply::Draft) -> (Vec<String>, usize) {
    let mut v: Vec<(String, usize, String)> = std::iter::once(answer.to_string())
        .chain(d.distractors.iter().take(3).map(|s| s.trim().to_string()))
        .enumerate()
        .map(|(i, s)| {
            (
                fsio::sha256_hex(format!("{seed}\u{1f}{id}\u{1f}{i}").as_bytes()),
                i,
                s,
            )
        })
        .collect();
    v.sort();
    let gold = v.iter().position(|(_, i, _)| *i == 0).expect("the answer");
    (v.into_iter().map(|(_, _, s)| s).collect(), gold)
}

/// What [`explain`] prints: the prompts, the reply schema and the rules, with the options.
pub fn explain(opts: &GenerateOptions) -> String {
    let example = render_messages(
        opts,
        "TITLE",
        "PASSAGE (a span of one document: sentences packed to --passage-words words)",
    )
    .map(|m| {
        m.into_iter()
            .map(|(r, c)| format!("--- {r} ---\n{c}\n"))
            .collect::<String>()
    })
    .unwrap_or_else(|e| format!("(the template does not render: {e})"));
    format!(
        "Prompts (sha256 {}; the defaults are crates/generate/prompts/; temperature 0, max_tokens {}, \
         seed from --llm-seed):\n\n\
         {example}\n--- response_format ---\n{}\n\n\
         Rules ({RULE}):\n\
         - passages: sentences packed to at least {} words (shorter than {} words: not used); \
           documents ordered by sha256(seed, id), passages by sha256(seed, id, index), taken one \
           per document per round (seed {})\n\
         - at most {} candidates; stop at {} accepted\n\
         - checks, in order (the first failure is the reason):\n{}\n\
         - thresholds: relevance (least similar excerpt) {}, duplicate {}; words: question ≤ {}, \
           excerpt {}–{}, excerpts ≤ {}\n\
         - every reply is cached by model identity and request: a second run reads them back\n",
        opts.prompts_sha256(),
        opts.max_tokens,
        opts.response_format_value()
            .unwrap_or_else(|| "none".to_string()),
        opts.passage_words,
        opts.min_passage_words,
        opts.seed,
        opts.max_candidates,
        opts.target,
        Reason::ALL
            .iter()
            .filter(|r| opts.mcq || !matches!(r, Reason::BadDistractors | Reason::DistractorInEvidence | Reason::ClosedBook))
            .map(|r| format!("  {:<24} {}", r.as_str(), r.describe()))
            .collect::<Vec<_>>()
            .join("\n"),
        opts.relevance_threshold,
        opts.duplicate_threshold,
        opts.max_question_words,
        opts.min_excerpt_words,
        opts.max_excerpt_words,
        opts.max_excerpts,
    )
}

/// Writes the generated set as dataset `name` in `store`, all or nothing
/// ([`tables::write_into_store`]): `documents.jsonl` (the corpus, unchanged),
/// `questions.jsonl`, `generation.jsonl` (every judged candidate), `report.html` and
/// `manifest.json` (model identity, prompts, options, thresholds, counts). The manifest's
/// `sha256` — the dataset's identity — is the sha256 of the rule, the source's identity, the
/// options, the prompts, the model's and the embedder's identities.
///
/// # Errors
/// No question was accepted (nothing is written; the message gives the counts); a failed
/// write; a dataset that does not load back.
pub fn write(
    store: &Path,
    name: &str,
    corpus: &Corpus,
    opts: &GenerateOptions,
    g: &Generated,
) -> Result<DatasetManifest> {
    if g.questions.is_empty() {
        bail!(
            "no candidate was accepted ({}); nothing was written. A small model rarely quotes \
             its passage exactly: see `--explain`, {}, or point --llm at a more capable model",
            rejection_summary(&g.counts),
            more_candidates_advice(&g.counts)
        );
    }
    let options = serde_json::to_string(opts).expect("options serialise");
    let prompts_sha = opts.prompts_sha256();
    let identity = fsio::sha256_hex(
        serde_json::json!({
            "rule": RULE,
            "source": corpus.source_sha256,
            "options": opts,
            "prompts_sha256": prompts_sha,
            "llm": g.llm_identity,
            "embedder": g.embedder_identity,
        })
        .to_string()
        .as_bytes(),
    );
    let mut counts = g.counts.clone();
    counts.insert("documents".into(), corpus.documents.len() as u64);
    counts.insert("questions".into(), g.questions.len() as u64);
    let mut notes = corpus.notes.clone();
    notes.extend([
        format!("generated by {RULE} (chunkbench data generate; docs/reference.md §3c)"),
        format!("model: {}", g.llm_identity),
        format!("embedder: {}", g.embedder_identity),
        format!("options: {options}"),
        format!("prompts sha256: {prompts_sha}"),
        format!("system prompt: {}", opts.system_prompt.trim_end()),
        format!("question template: {}", opts.question_template.trim_end()),
        "questions: retrieval scope = the whole corpus; answers = [the model's answer]; \
         evidence = the excerpts' exact byte spans; generation.jsonl holds every candidate \
         with its reply and verdict; report.html shows them"
            .into(),
    ]);
    let manifest = DatasetManifest {
        name: name.to_string(),
        source: format!("chunkbench data generate from {}", corpus.source),
        version: format!("{RULE}; model {}", g.llm_identity),
        sha256: identity,
        license: corpus.license.clone(),
        counts,
        notes,
        files: BTreeMap::new(),
    };
    let mut log = tables::ImportLog::default();
    let page = report::page(name, corpus, opts, g, Some(&manifest))?;
    let m = tables::write_into_store(store, name, &mut log, |tmp| {
        datasets::import::write_dataset(tmp, &corpus.documents, &g.questions)?;
        datasets::io::write_jsonl(&tmp.join("generation.jsonl"), &g.records)?;
        datasets::io::write_atomic(&tmp.join("report.html"), page.as_bytes())?;
        let m = datasets::import::finish(tmp, manifest)?;
        datasets::Dataset::load(tmp).context("the generated dataset does not load back")?;
        Ok(m)
    })?;
    for w in log.warnings {
        eprintln!("warning: {w}");
    }
    Ok(m)
}

/// Writes the audit page of a generation that accepted nothing (no dataset is written) to
/// `path`, so the replies and their reasons can still be read.
///
/// # Errors
/// The page cannot be written.
pub fn write_rejected_report(
    path: &Path,
    name: &str,
    corpus: &Corpus,
    opts: &GenerateOptions,
    g: &Generated,
) -> Result<()> {
    let page = report::page(name, corpus, opts, g, None)?;
    datasets::io::write_atomic(path, page.as_bytes())
}

/// How to get more candidates: raise `--candidates` while passages remain, else make more
/// passages.
pub fn more_candidates_advice(counts: &BTreeMap<String, u64>) -> String {
    let c = |k: &str| counts.get(k).copied().unwrap_or(0);
    if c("candidates") < c("passages") {
        format!(
            "raise --candidates ({} of the {} passages were tried)",
            c("candidates"),
            c("passages")
        )
    } else {
        format!(
            "every one of the {} passages was tried: lower --passage-words or add documents",
            c("passages")
        )
    }
}

/// `accepted A of C candidates; rejected: reason n, …` (non-zero reasons only).
pub fn rejection_summary(counts: &BTreeMap<String, u64>) -> String {
    let c = |k: &str| counts.get(k).copied().unwrap_or(0);
    let rejected = Reason::ALL
        .iter()
        .filter_map(|r| {
            let n = c(&format!("rejected_{}", r.as_str()));
            (n > 0).then(|| format!("{} {n}", r.as_str()))
        })
        .collect::<Vec<_>>();
    format!(
        "accepted {} of {} candidates; rejected: {}",
        c("accepted"),
        c("candidates"),
        if rejected.is_empty() {
            "none".to_string()
        } else {
            rejected.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_renders_with_and_without_mcq() {
        let mut o = GenerateOptions::default();
        let m = render_messages(&o, "Rust", "Rust is iron oxide.").unwrap();
        assert_eq!(m[0].0, "system");
        assert!(m[1].1.contains("Rust is iron oxide."));
        assert!(!m[1].1.contains("distractors"));
        o.mcq = true;
        assert!(render_messages(&o, "T", "P").unwrap()[1]
            .1
            .contains("\"distractors\""));
        assert!(explain(&o).contains("distractor_in_evidence"));
    }

    #[test]
    fn reply_schema_is_json_in_writing_order() {
        let mut o = GenerateOptions {
            mcq: true,
            response_format: ResponseFormat::JsonSchema,
            ..GenerateOptions::default()
        };
        let v: serde_json::Value = serde_json::from_str(&o.reply_schema()).unwrap();
        assert_eq!(v["properties"]["distractors"]["minItems"], 3);
        let s = o.reply_schema();
        assert!(s.find("question") < s.find("excerpts") && s.find("excerpts") < s.find("answer"));
        let f: serde_json::Value =
            serde_json::from_str(&o.response_format_value().unwrap()).unwrap();
        assert_eq!(f["json_schema"]["schema"]["required"][3], "distractors");
        o.response_format = ResponseFormat::None;
        assert!(o.response_format_value().is_none());
    }

    #[test]
    fn options_are_checked() {
        let mut o = GenerateOptions {
            closed_book: ClosedBook::Flag,
            ..GenerateOptions::default()
        };
        assert!(o.check().unwrap_err().to_string().contains("--mcq"));
        o.mcq = true;
        o.check().unwrap();
        o.relevance_threshold = 1.5;
        assert!(o.check().is_err());
    }

    #[test]
    fn option_order_keeps_the_answer() {
        let d = reply::Draft {
            question: "Q?".into(),
            excerpts: vec!["x".into()],
            answer: "right".into(),
            distractors: vec!["a".into(), "b".into(), "c".into(), "d".into()],
        };
        let (opts, gold) = option_order(0, "gen-0001", "right", &d);
        assert_eq!(opts.len(), 4);
        assert_eq!(opts[gold], "right");
        assert!(!opts.contains(&"d".to_string()));
    }
}
