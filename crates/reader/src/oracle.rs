//! Oracle inputs: the gold evidence passages of a question, sliced from its documents.
//!
//! The oracle baseline reads the question with exactly the text its gold evidence spans cover
//! (docs/reference.md §3: `evidence: [{doc_id, start, end}]`, byte offsets into the document's
//! cleaned `text`). Closed-book is the empty passage list ([`crate::ReaderInput::closed_book`]).
//! Both are ordinary passage lists, so every reader accepts them.

/// Why an evidence span cannot be sliced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OracleError {
    /// The span names a document the lookup does not know.
    #[error("evidence refers to unknown document `{0}`")]
    UnknownDocument(String),
    /// The span is reversed, past the end of the text or not on character boundaries.
    #[error("evidence span {start}..{end} is not a valid byte range of document `{doc_id}` ({len} bytes)")]
    BadSpan {
        /// Document id.
        doc_id: String,
        /// Start byte.
        start: usize,
        /// End byte (exclusive).
        end: usize,
        /// Length of the document text in bytes.
        len: usize,
    },
}

/// Slices the gold evidence passages of one question.
///
/// `evidence` yields `(doc_id, start, end)` byte spans, `[start, end)`, in the question's
/// order; `doc_text` maps a document id to its cleaned text. Returns one `&str` per distinct
/// span in first-seen order (an exact duplicate span is kept once; overlapping distinct spans
/// are kept as given). No evidence gives an empty list, which reads as closed-book.
///
/// # Errors
/// [`OracleError::UnknownDocument`] or [`OracleError::BadSpan`] for the first span that
/// cannot be sliced; nothing is silently skipped.
pub fn oracle_passages<'d, 'e>(
    evidence: impl IntoIterator<Item = (&'e str, usize, usize)>,
    doc_text: impl Fn(&str) -> Option<&'d str>,
) -> Result<Vec<&'d str>, OracleError> {
    let mut seen: Vec<(&'e str, usize, usize)> = Vec::new();
    let mut out = Vec::new();
    for (doc_id, start, end) in evidence {
        if seen.contains(&(doc_id, start, end)) {
            continue;
        }
        seen.push((doc_id, start, end));
        let text = doc_text(doc_id).ok_or_else(|| OracleError::UnknownDocument(doc_id.into()))?;
        let ok = start <= end
            && end <= text.len()
            && text.is_char_boundary(start)
            && text.is_char_boundary(end);
        if !ok {
            return Err(OracleError::BadSpan {
                doc_id: doc_id.into(),
                start,
                end,
                len: text.len(),
            });
        }
        out.push(&text[start..end]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(id: &str) -> Option<&'static str> {
        match id {
            "d1" => Some("Valve V2 was replaced in March. Pumps hum."),
            "d2" => Some("Ünïcode text"),
            _ => None,
        }
    }

    #[test]
    fn slices_spans_in_order_and_dedups() {
        let ev = [("d1", 0, 31), ("d2", 0, 9), ("d1", 0, 31)];
        let p = oracle_passages(ev, lookup).unwrap();
        assert_eq!(p, vec!["Valve V2 was replaced in March.", "Ünïcode"]);
    }

    #[test]
    fn no_evidence_is_closed_book() {
        assert!(oracle_passages([], lookup).unwrap().is_empty());
    }

    #[test]
    fn bad_spans_are_errors() {
        assert!(matches!(
            oracle_passages([("zz", 0, 1)], lookup),
            Err(OracleError::UnknownDocument(_))
        ));
        // inside the two-byte 'Ü'
        assert!(matches!(
            oracle_passages([("d2", 1, 3)], lookup),
            Err(OracleError::BadSpan { .. })
        ));
        assert!(oracle_passages([("d1", 5, 2)], lookup).is_err());
        assert!(oracle_passages([("d1", 0, 999)], lookup).is_err());
    }
}
