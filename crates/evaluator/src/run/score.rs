//! Stages `read` and `score` of one question: the reader's answer, the retrieval metrics of
//! the registry, costs and the failure attribution, as a `QuestionRow`.

use super::*;

/// Stage `score`, retrieval side: what a question's retrieved passages are worth against
/// its gold evidence and answer strings, before (or without) a reader.
pub(super) struct RetrievalScores {
    pub(super) unique_words: usize,
    /// hit@k: some retrieved passage overlaps a gold span (`None` without evidence); the
    /// failure attribution's input.
    pub(super) evidence_hit: Option<u8>,
    /// Every registered metric ([`retriever::metrics::METRICS`]).
    pub(super) metrics: retriever::metrics::MetricValues,
}

/// What scoring a question's retrieval reads besides its passages: the documents, the word
/// and character maps, and the index (for precision_Ω, over all passages of the evidence's
/// documents).
pub(super) struct ScoreContext<'a> {
    pub(super) docs: &'a HashMap<&'a str, &'a chunker::Document>,
    pub(super) words: &'a retriever::metrics::WordMap<'a>,
    pub(super) chars: &'a retriever::metrics::CharMap,
    pub(super) index: &'a PassageIndex,
}

/// Unique words (overlapping spans once), the evidence hit (hit@k) and every registered
/// metric, from the retrieved passages (ranks with several passages and EAR summaries
/// flattened in rank order), the gold evidence, the answer strings and the index passages of
/// the evidence's documents (precision_Ω: the best retrieval this chunking allows; absent for
/// a strategy without an index).
pub(super) fn score_retrieval(
    q: &Question,
    chunks: &[&chunker::Chunk],
    passages: &[&str],
    cx: &ScoreContext<'_>,
    k: usize,
) -> RetrievalScores {
    use retriever::metrics::DocSpan;
    let mut by_doc: BTreeMap<&str, Vec<Span>> = BTreeMap::new();
    for c in chunks {
        by_doc.entry(c.doc_id.as_str()).or_default().push(c.span);
    }
    let unique_words = by_doc
        .iter()
        .map(|(d, spans)| {
            cx.docs
                .get(d)
                .map_or(0, |doc| unique_words(&doc.text, spans))
        })
        .sum();
    let retrieved: Vec<DocSpan> = chunks.iter().map(|c| DocSpan::from(*c)).collect();
    let evidence: Vec<DocSpan> = q
        .evidence
        .iter()
        .flatten()
        .map(|e| DocSpan::new(&e.doc_id, e.start, e.end))
        .collect();
    let mut ev_docs: Vec<&str> = evidence.iter().map(|e| e.doc_id).collect();
    ev_docs.sort_unstable();
    ev_docs.dedup();
    let all: Vec<DocSpan> = ev_docs
        .iter()
        .flat_map(|d| cx.index.doc_passages(d))
        .map(DocSpan::from)
        .collect();
    let answers = q.answer_strings();
    let input = retriever::metrics::ScoreInput::new(
        &retrieved,
        passages,
        &evidence,
        &answers,
        k,
        cx.words,
        cx.chars,
        // A strategy without an index (oracle, no-retrieval) has no chunking to bound.
        (!cx.index.is_empty()).then_some(all.as_slice()),
    );
    RetrievalScores {
        unique_words,
        evidence_hit: input.rank().map(|m| u8::from(m.hit > 0.0)),
        metrics: retriever::metrics::MetricValues::compute(&input),
    }
}

/// Stages `read` and `score` for one question of one cell: the reader's answer on the
/// passages (none for a cell without a reader), then the row with its retrieval scores,
/// costs and failure attribution.
#[allow(clippy::too_many_arguments)]
pub(super) fn answer(
    cell: &Cell,
    cell_id: &str,
    q: &Question,
    ranked: &[Ranked],
    record: Option<&dyn QuestionRecord>,
    cx: &ScoreContext<'_>,
    reader: Option<&dyn Reader>,
    tokens: &TokenCounter<'_>,
) -> Result<QuestionRow> {
    let chunks: Vec<&chunker::Chunk> = ranked.iter().flat_map(|r| &r.chunks).collect();
    let passages: Vec<&str> = chunks
        .iter()
        .map(|c| {
            cx.docs
                .get(c.doc_id.as_str())
                .map_or("", |d| &d.text[c.span.start..c.span.end])
        })
        .collect();
    let out = reader
        .map(|reader| {
            reader
                .read(&ReaderInput {
                    question: &q.question,
                    options: &q.options,
                    passages: &passages,
                })
                .with_context(|| format!("question {}", q.id))
        })
        .transpose()?;
    // A budget cell's rank metrics are at the ranks it filled (at least 1).
    let k = match cell.budget {
        None => cell.k,
        Some(_) => ranked.len().max(1),
    };
    let m = score_retrieval(q, &chunks, &passages, cx, k);
    let gold = q.gold();
    let correct = out.as_ref().map(|o| gold.is_some_and(|g| o.is_correct(g)));
    let token_count: Option<usize> = chunks
        .iter()
        .zip(&passages)
        .map(|(c, t)| tokens.count(&c.id(), t))
        .sum();
    // Attribution judges an answer: a cell without a reader has none to attribute.
    let failure = match (&out, correct) {
        (Some(o), Some(c)) => Some(Failure::attribute(
            c,
            o.invalid,
            record.and_then(|r| r.matching()),
            m.evidence_hit,
        )),
        _ => None,
    };
    let read = ReadFields::of(out.as_ref());
    Ok(QuestionRow {
        cell_id: cell_id.to_string(),
        dataset: cell.dataset.clone(),
        strategy: cell.strategy.clone(),
        retriever: cell.retriever.clone(),
        k: cell.k,
        reader: cell.reader.clone(),
        question_id: q.id.clone(),
        question_doc: question_doc(q),
        subject: q.subject.clone().unwrap_or_default(),
        gold,
        choice: read.choice,
        correct: correct.map(u8::from),
        tied: read.tied,
        invalid: read.invalid,
        scores: read.scores,
        tie_break: read.tie_break,
        passages: chunks.iter().map(|c| records::PassageSpan::of(c)).collect(),
        passage_scores: ranked
            .iter()
            .flat_map(|r| r.chunks.iter().map(move |_| round6(r.score)))
            .collect(),
        words: chunks.iter().map(|c| c.words).sum(),
        unique_words: m.unique_words,
        chars: passages.iter().map(|p| p.chars().count()).sum(),
        tokens: token_count,
        evidence_hit: m.evidence_hit,
        metrics: m.metrics,
        failure,
        records: record.map(|r| r.values()).unwrap_or_default(),
        reply: read.reply,
    })
}

/// The document a question is about ([`QuestionRow::question_doc`]): its first evidence
/// span's document, else its one scope document, else empty.
fn question_doc(q: &datasets::Question) -> String {
    if let Some(e) = q.evidence.as_ref().and_then(|e| e.first()) {
        return e.doc_id.clone();
    }
    match q.doc_ids.as_deref() {
        Some([one]) => one.clone(),
        _ => String::new(),
    }
}

/// The fields of a row that come from the reader's output (empty or 0 without one).
struct ReadFields {
    choice: Option<usize>,
    tied: usize,
    invalid: u8,
    scores: Vec<f64>,
    tie_break: Vec<f64>,
    reply: String,
}

impl ReadFields {
    fn of(out: Option<&reader::ReaderOutput>) -> Self {
        ReadFields {
            // Only a single, valid choice is a choice: an invalid reply or a tie between the
            // best options names none, so `choice == gold` never counts either as correct.
            choice: out.filter(|o| !o.invalid && o.tied <= 1).map(|o| o.choice),
            tied: out.map_or(0, |o| o.tied),
            invalid: out.map_or(0, |o| u8::from(o.invalid)),
            scores: out
                .map(|o| o.scores.iter().map(|&x| round6(x)).collect())
                .unwrap_or_default(),
            tie_break: out
                .map(|o| o.tie_break.iter().map(|&x| round6(x)).collect())
                .unwrap_or_default(),
            reply: out
                .map(|o| reader::clip(&o.raw, REPLY_BYTES))
                .unwrap_or_default(),
        }
    }
}
