//! The candidate checks of [`crate::generate`] that need no model: the reply itself, the
//! draft's sizes, the excerpts located as exact spans, and the distractors (docs/reference.md
//! §3c, "Checks"; the embedding checks are the judge's, which holds the embedder).

use crate::{locate, reply, sample, CandidateRecord, GenerateOptions, Reason};
use chunker::{Document, Span};
use datasets::dataset::Evidence;
use reader::lm::Generation;

/// A failed check: the reason and its detail.
pub(crate) type Failed = (Reason, String);

/// The reply's own checks: no echoed API key, not cut at the model seam's bound, and parsed
/// as a draft ([`reply::parse_reply`]).
pub(crate) fn checked_draft(
    o: &GenerateOptions,
    g: &Generation,
) -> std::result::Result<reply::Draft, Failed> {
    if httpio::holds_secret(&g.text) {
        // Nothing of a reply that quotes the API key may reach the dataset's files.
        return Err((
            Reason::MalformedReply,
            "the reply echoes the API key (redacted in generation.jsonl); not used".into(),
        ));
    }
    if g.finish_reason == reader::lm::OVERSIZED {
        return Err((
            Reason::MalformedReply,
            format!(
                "the reply ran past what {} tokens can make (more than {} bytes): cut there \
                 and not used",
                o.max_tokens,
                reader::lm::reply_bound(o.max_tokens)
            ),
        ));
    }
    reply::parse_reply(&g.text, g.finish_reason == "length", o.mcq)
        .map_err(|m| (Reason::MalformedReply, m))
}

/// The draft's sizes: the question's words, the number of excerpts and each one's words.
pub(crate) fn size_checks(
    o: &GenerateOptions,
    draft: &reply::Draft,
) -> std::result::Result<(), Failed> {
    let qw = sample::word_count(&draft.question);
    if qw > o.max_question_words {
        return Err((
            Reason::TooLong,
            format!(
                "the question has {qw} words (at most {})",
                o.max_question_words
            ),
        ));
    }
    if draft.excerpts.len() > o.max_excerpts {
        return Err((
            Reason::TooLong,
            format!(
                "{} excerpts (at most {})",
                draft.excerpts.len(),
                o.max_excerpts
            ),
        ));
    }
    for (k, e) in draft.excerpts.iter().enumerate() {
        let w = sample::word_count(e);
        if w > o.max_excerpt_words {
            return Err((
                Reason::TooLong,
                format!(
                    "excerpt {} has {w} words (at most {})",
                    k + 1,
                    o.max_excerpt_words
                ),
            ));
        }
        if w < o.min_excerpt_words {
            return Err((
                Reason::TooShort,
                format!(
                    "excerpt {} has {w} words (at least {})",
                    k + 1,
                    o.min_excerpt_words
                ),
            ));
        }
    }
    Ok(())
}

/// Each excerpt located as an exact span of `doc` (within `passage`, [`locate::locate`]); the
/// distinct spans in document order. On a failure the spans found so far are in `rec`.
pub(crate) fn located_evidence(
    doc: &Document,
    passage: Span,
    draft: &reply::Draft,
    rec: &mut CandidateRecord,
) -> std::result::Result<Vec<Evidence>, Failed> {
    let mut evidence: Vec<Evidence> = Vec::new();
    for (k, e) in draft.excerpts.iter().enumerate() {
        match locate::locate(&doc.text, passage, e) {
            locate::Located::Found { span, normalised } => {
                rec.normalised_excerpts += usize::from(normalised);
                let ev = Evidence {
                    doc_id: doc.id.clone(),
                    start: span.start,
                    end: span.end,
                };
                if !evidence.contains(&ev) {
                    evidence.push(ev);
                }
            }
            locate::Located::NotFound => {
                rec.evidence = evidence;
                return Err((
                    Reason::ExcerptNotFound,
                    format!("excerpt {} is not in the passage", k + 1),
                ));
            }
            locate::Located::Ambiguous(times) => {
                rec.evidence = evidence;
                return Err((
                    Reason::ExcerptAmbiguous,
                    format!("excerpt {} occurs {times} times in the document", k + 1),
                ));
            }
        }
    }
    evidence.sort_by_key(|e| (e.start, e.end));
    Ok(evidence)
}

/// Multiple choice: three distractors, none empty, repeated, the answer, or in the evidence.
pub(crate) fn distractor_checks(
    draft: &reply::Draft,
    answer: &str,
    texts: &[&str],
) -> std::result::Result<(), Failed> {
    let mut seen = vec![locate::normalise_text(&answer.to_lowercase())];
    for d in draft.distractors.iter().take(3) {
        let n = locate::normalise_text(&d.to_lowercase());
        if n.is_empty() || seen.contains(&n) {
            return Err((
                Reason::BadDistractors,
                format!("distractor {d:?} is empty, repeated or the answer"),
            ));
        }
        seen.push(n);
    }
    if draft.distractors.len() < 3 {
        return Err((
            Reason::BadDistractors,
            format!("{} distractors (3 needed)", draft.distractors.len()),
        ));
    }
    if let Some(d) = draft
        .distractors
        .iter()
        .take(3)
        .find(|d| texts.iter().any(|t| locate::contains_loose(t, d)))
    {
        return Err((
            Reason::DistractorInEvidence,
            format!("distractor {d:?} occurs in the evidence"),
        ));
    }
    Ok(())
}
