//! `report.html` of a generated set: the model, the options, the counts by reason, every
//! accepted question with its passage and the evidence highlighted, and every rejected
//! candidate with its reason and the model's reply — so a person can audit the set before
//! trusting it. One self-contained page (inline CSS, no script); every text is
//! HTML-escaped by minijinja's auto-escaping; no time stamp, so a regenerated set's page is
//! byte-identical.

use crate::{Corpus, GenerateOptions, Generated, Reason};
use anyhow::{Context, Result};
use datasets::dataset::DatasetManifest;
use serde::Serialize;

const TEMPLATE: &str = include_str!("../templates/report.html");

/// A piece of a passage: plain text or evidence.
#[derive(Serialize)]
struct Piece<'a> {
    text: &'a str,
    mark: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    candidate: usize,
    id: &'a str,
    doc_id: &'a str,
    question: &'a str,
    answer: &'a str,
    options: Vec<(String, bool)>,
    pieces: Vec<Piece<'a>>,
    relevance: String,
    nearest: String,
    closed_book: Option<bool>,
    normalised: usize,
}

#[derive(Serialize)]
struct Rejected<'a> {
    candidate: usize,
    doc_id: &'a str,
    reason: &'static str,
    detail: String,
    question: String,
    reply: String,
    passage: &'a str,
}

/// The page (module docs). Without a manifest (no candidate was accepted, nothing written)
/// it still shows every candidate.
///
/// # Errors
/// The committed template does not render.
pub fn page(
    name: &str,
    corpus: &Corpus,
    opts: &GenerateOptions,
    g: &Generated,
    manifest: Option<&DatasetManifest>,
) -> Result<String> {
    let doc = |id: &str| corpus.documents.iter().find(|d| d.id == id);
    let mut accepted = Vec::new();
    let mut rejected = Vec::new();
    for r in &g.records {
        let Some(d) = doc(&r.doc_id) else { continue };
        let draft = r.draft.as_ref();
        if r.status == "accepted" {
            let q = g
                .questions
                .iter()
                .find(|q| Some(&q.id) == r.question_id.as_ref())
                .expect("an accepted record names its question");
            let mut pieces = Vec::new();
            let mut at = r.passage.start;
            for e in &r.evidence {
                let s = e.start.max(at);
                if s > at {
                    pieces.push(Piece {
                        text: &d.text[at..s],
                        mark: false,
                    });
                }
                if e.end > s {
                    pieces.push(Piece {
                        text: &d.text[s..e.end],
                        mark: true,
                    });
                }
                at = at.max(e.end);
            }
            if at < r.passage.end {
                pieces.push(Piece {
                    text: &d.text[at..r.passage.end],
                    mark: false,
                });
            }
            accepted.push(Row {
                candidate: r.candidate,
                id: &q.id,
                doc_id: &r.doc_id,
                question: &q.question,
                answer: r.answer.as_deref().unwrap_or(""),
                options: q
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| (o.clone(), Some(i) == q.answer))
                    .collect(),
                pieces,
                relevance: r.relevance.map_or(String::new(), |v| format!("{v:.3}")),
                nearest: r
                    .nearest
                    .as_ref()
                    .map_or(String::new(), |(id, s)| format!("{s:.3} ({id})")),
                closed_book: r.closed_book,
                normalised: r.normalised_excerpts,
            });
        } else {
            rejected.push(Rejected {
                candidate: r.candidate,
                doc_id: &r.doc_id,
                reason: r.reason.map_or("", Reason::as_str),
                detail: reader::clip(&r.detail, 300),
                question: reader::clip(draft.map_or("", |d| d.question.as_str()), 300),
                reply: reader::clip(&r.reply, 600),
                passage: &d.text[r.passage.start..r.passage.end],
            });
        }
    }
    let c = |k: &str| g.counts.get(k).copied().unwrap_or(0);
    let reasons: Vec<(&str, u64, &str)> = Reason::ALL
        .iter()
        .filter(|r| {
            opts.mcq
                || !matches!(
                    r,
                    Reason::BadDistractors | Reason::DistractorInEvidence | Reason::ClosedBook
                )
        })
        .map(|r| {
            (
                r.as_str(),
                c(&format!("rejected_{}", r.as_str())),
                r.describe(),
            )
        })
        .collect();
    let candidates = c("candidates");
    let rate = if candidates == 0 {
        String::new()
    } else {
        format!("{:.1} %", 100.0 * c("accepted") as f64 / candidates as f64)
    };
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.render_str(
        TEMPLATE,
        minijinja::context! {
            name => name,
            source => manifest.map_or_else(|| format!("from {} (nothing was written: no candidate was accepted)", corpus.source), |m| m.source.clone()),
            model => &g.llm_identity,
            embedder => &g.embedder_identity,
            identity => manifest.map_or("(none)", |m| m.sha256.as_str()),
            options => serde_json::to_string_pretty(opts).unwrap_or_default(),
            documents => corpus.documents.len(),
            passages => c("passages"),
            passages_too_long => c("passages_too_long"),
            candidates => candidates,
            accepted_n => c("accepted"),
            rate => rate,
            normalised => c("excerpts_normalised"),
            cut => c("replies_cut"),
            closed_book_flagged => g.counts.get("closed_book_flagged").copied(),
            reasons => reasons,
            accepted => accepted,
            rejected => rejected,
            mcq => opts.mcq,
        },
    )
    .context("the report template does not render")
}
