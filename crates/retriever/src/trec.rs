//! TREC run and qrels files (trec_eval / pytrec_eval / BEIR format).
//!
//! Run line: `qid Q0 docid rank score tag` — rank 1-based, score the retriever's (written
//! with Rust's shortest round-trip formatting), `docid` the passage id `DOC_ID:START-END`
//! ([`crate::PassageIndex::passage_id`]), `tag` the cell id. One file per cell.
//! Qrels line: `qid 0 docid relevance`.
//!
//! trec_eval re-sorts each query's lines by score and breaks score ties by docid (descending),
//! not by the rank column; with tied scores its ordering can therefore differ from this
//! crate's (ascending passage index).
//!
//! Qrels from evidence ([`evidence_qrels`]) are passage-level: every passage of the index that
//! overlaps a gold evidence span is relevant (1). trec_eval on a run and these qrels gives
//! passage-level metrics, where two chunks of one evidence are two relevant items; the
//! metrics of [`crate::metrics`] instead count each evidence span once.

use crate::metrics::DocSpan;
use crate::{Hit, PassageIndex};
use std::io::Write;

/// Errors of the TREC writers.
#[derive(Debug, thiserror::Error)]
pub enum TrecError {
    /// A field is empty or contains whitespace, which would break the column format.
    #[error("TREC {field} {value:?} is empty or contains whitespace")]
    InvalidField {
        /// "qid", "docid" or "tag".
        field: &'static str,
        /// The offending value.
        value: String,
    },
    /// A score is NaN or infinite.
    #[error("non-finite score {score} for {qid}/{docid}")]
    NonFiniteScore {
        /// Query id.
        qid: String,
        /// Document id.
        docid: String,
        /// The score.
        score: f64,
    },
    /// Writing failed.
    #[error("writing TREC file: {0}")]
    Io(#[from] std::io::Error),
}

fn check(field: &'static str, value: &str) -> Result<(), TrecError> {
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return Err(TrecError::InvalidField {
            field,
            value: value.to_string(),
        });
    }
    Ok(())
}

/// Writes TREC run lines for one cell (`tag`) to any writer.
#[derive(Debug)]
pub struct RunWriter<W: Write> {
    out: W,
    tag: String,
}

impl<W: Write> RunWriter<W> {
    /// A writer tagging every line with `tag` (the cell id).
    ///
    /// # Errors
    /// [`TrecError::InvalidField`] when `tag` is empty or contains whitespace.
    pub fn new(out: W, tag: &str) -> Result<Self, TrecError> {
        check("tag", tag)?;
        Ok(RunWriter {
            out,
            tag: tag.to_string(),
        })
    }

    /// Writes one query's ranking: `(docid, score)` pairs best first; ranks 1, 2, ….
    ///
    /// # Errors
    /// [`TrecError::InvalidField`], [`TrecError::NonFiniteScore`] or [`TrecError::Io`].
    pub fn write_ranking<D: AsRef<str>>(
        &mut self,
        qid: &str,
        ranking: &[(D, f64)],
    ) -> Result<(), TrecError> {
        check("qid", qid)?;
        for (r, (docid, score)) in ranking.iter().enumerate() {
            let docid = docid.as_ref();
            check("docid", docid)?;
            if !score.is_finite() {
                return Err(TrecError::NonFiniteScore {
                    qid: qid.to_string(),
                    docid: docid.to_string(),
                    score: *score,
                });
            }
            writeln!(self.out, "{qid} Q0 {docid} {} {score} {}", r + 1, self.tag)?;
        }
        Ok(())
    }

    /// Writes one query's hits, with passage ids from `index`.
    ///
    /// # Errors
    /// As [`RunWriter::write_ranking`].
    ///
    /// # Panics
    /// When a hit's passage is not in `index`.
    pub fn write_hits(
        &mut self,
        qid: &str,
        hits: &[Hit],
        index: &PassageIndex,
    ) -> Result<(), TrecError> {
        let ranking: Vec<(String, f64)> = hits
            .iter()
            .map(|h| (index.passage_id(h.passage), h.score))
            .collect();
        self.write_ranking(qid, &ranking)
    }

    /// Flushes and returns the inner writer.
    ///
    /// # Errors
    /// [`TrecError::Io`] when flushing fails.
    pub fn finish(mut self) -> Result<W, TrecError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Passage-level qrels from gold evidence: the indices of all passages of `index` that share
/// at least one byte with an evidence span, ascending.
pub fn evidence_qrels(index: &PassageIndex, evidence: &[DocSpan<'_>]) -> Vec<usize> {
    index
        .passages()
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let p = DocSpan::from(*c);
            evidence.iter().any(|e| p.overlap(e) > 0)
        })
        .map(|(i, _)| i)
        .collect()
}

/// Writes qrels lines `qid 0 docid 1` for the relevant passages `relevant` of `index`.
///
/// # Errors
/// [`TrecError::InvalidField`] or [`TrecError::Io`].
///
/// # Panics
/// When a passage index is out of range.
pub fn write_qrels<W: Write>(
    out: &mut W,
    qid: &str,
    relevant: &[usize],
    index: &PassageIndex,
) -> Result<(), TrecError> {
    check("qid", qid)?;
    for &p in relevant {
        let docid = index.passage_id(p);
        check("docid", &docid)?;
        writeln!(out, "{qid} 0 {docid} 1")?;
    }
    Ok(())
}
