//! Passages to generate from: seeded, stratified by document.
//!
//! **Passages.** Each document's sentences ([`chunker::segment::sentences`]) are packed in
//! order into passages: a passage ends after the sentence that brings it to at least
//! `passage_words` words (whitespace-separated); the document's last, shorter passage is kept
//! when it has at least `min_passage_words` words, and joins the passage before otherwise.
//! A passage is a byte span of its document (from its first sentence's start to its last
//! sentence's end), so its text is exactly that slice.
//!
//! A passage of more than [`MAX_PASSAGE_FACTOR`] × `passage_words` words (a document whose
//! "sentence" is a table, a list or code without sentence ends) is not used: it could exceed
//! the model's context, and no excerpt of it would be a sentence. They are counted
//! ([`candidate_order`]'s second value).
//!
//! **Order** (the candidates, in the order they are tried). Documents are ordered by
//! `sha256(seed ␟ doc_id)`, each document's passages by `sha256(seed ␟ doc_id ␟ index)`;
//! round `r` then takes the `r`-th passage of every document that has one, in document
//! order. The first candidates therefore cover as many documents as possible (stratified),
//! and the order depends only on the seed and the corpus, never on the thread count.

use chunker::{Document, Span};

/// One passage of a document: the text the model is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passage {
    /// Index of the document in the corpus (file order).
    pub doc: usize,
    /// Byte span of the passage in its document.
    pub span: Span,
    /// Its whitespace-separated words.
    pub words: usize,
}

/// Passages longer than this many times `passage_words` are not used (module docs).
pub const MAX_PASSAGE_FACTOR: usize = 4;

/// Words of `text` as the sampler counts them: whitespace-separated tokens.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// The passages of one document (module docs), in document order.
pub fn document_passages(
    doc_index: usize,
    text: &str,
    passage_words: usize,
    min_passage_words: usize,
) -> Vec<Passage> {
    let mut out: Vec<Passage> = Vec::new();
    let mut cur: Option<(usize, usize, usize)> = None; // (start, end, words)
    for s in chunker::segment::sentences(text) {
        let w = word_count(&text[s.start..s.end]);
        let (start, _, words) = cur.unwrap_or((s.start, s.end, 0));
        let next = (start, s.end, words + w);
        if next.2 >= passage_words.max(1) {
            out.push(Passage {
                doc: doc_index,
                span: Span {
                    start: next.0,
                    end: next.1,
                },
                words: next.2,
            });
            cur = None;
        } else {
            cur = Some(next);
        }
    }
    if let Some((start, end, words)) = cur {
        if words >= min_passage_words {
            out.push(Passage {
                doc: doc_index,
                span: Span { start, end },
                words,
            });
        } else if let Some(last) = out.last_mut() {
            last.span.end = end;
            last.words += words;
        }
    }
    out.retain(|p| p.words >= min_passage_words);
    out
}

fn order_key(seed: u64, parts: &[&str]) -> String {
    let mut s = seed.to_string();
    for p in parts {
        s.push('\u{1f}');
        s.push_str(p);
    }
    fsio::sha256_hex(s.as_bytes())
}

/// Every passage of the corpus in candidate order (module docs), and how many passages were
/// left out for their length.
pub fn candidate_order(
    docs: &[Document],
    seed: u64,
    passage_words: usize,
    min_passage_words: usize,
) -> (Vec<Passage>, usize) {
    let max_words = passage_words.saturating_mul(MAX_PASSAGE_FACTOR);
    let mut too_long = 0;
    let mut per_doc: Vec<(String, Vec<Passage>)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let all = document_passages(i, &d.text, passage_words, min_passage_words);
            let before = all.len();
            let kept: Vec<Passage> = all.into_iter().filter(|p| p.words <= max_words).collect();
            too_long += before - kept.len();
            let mut ps: Vec<(String, Passage)> = kept
                .into_iter()
                .enumerate()
                .map(|(k, p)| (order_key(seed, &[&d.id, &k.to_string()]), p))
                .collect();
            ps.sort_by(|a, b| a.0.cmp(&b.0));
            (
                order_key(seed, &[&d.id]),
                ps.into_iter().map(|(_, p)| p).collect(),
            )
        })
        .collect();
    per_doc.sort_by(|a, b| a.0.cmp(&b.0));
    let rounds = per_doc.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for r in 0..rounds {
        for (_, ps) in &per_doc {
            if let Some(p) = ps.get(r) {
                out.push(*p);
            }
        }
    }
    (out, too_long)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, text: &str) -> Document {
        Document::new(id, text)
    }

    #[test]
    fn passages_are_sentence_aligned_slices() {
        let text = "One two three four. Five six seven. Eight nine ten eleven twelve. Thirteen.";
        let ps = document_passages(0, text, 6, 2);
        let texts: Vec<&str> = ps.iter().map(|p| &text[p.span.start..p.span.end]).collect();
        // "Thirteen." (1 word < 2) joins the passage before.
        assert_eq!(
            texts,
            vec![
                "One two three four. Five six seven.",
                "Eight nine ten eleven twelve. Thirteen."
            ]
        );
        assert_eq!(ps[1].words, 6);
        // Too short a document gives no passage.
        assert!(document_passages(0, "Tiny.", 6, 3).is_empty());
    }

    #[test]
    fn order_is_stratified_seeded_and_stable() {
        let long = "Alpha beta gamma delta. ".repeat(20);
        let docs = vec![doc("a", &long), doc("b", &long), doc("c", "Short text.")];
        let (o, skipped) = candidate_order(&docs, 7, 8, 3);
        assert_eq!(skipped, 0);
        // Every document with passages appears in the first round.
        let first: Vec<usize> = o.iter().take(2).map(|p| p.doc).collect();
        assert!(first.contains(&0) && first.contains(&1), "{first:?}");
        assert!(o.iter().all(|p| p.doc != 2));
        assert_eq!(o, candidate_order(&docs, 7, 8, 3).0);
        assert_ne!(o, candidate_order(&docs, 8, 8, 3).0);
        // A "sentence" of 40 words is over 4 × 8: left out, counted.
        let list = format!("{} end.", "item ".repeat(40));
        let (o2, skipped) = candidate_order(&[doc("l", &list)], 7, 8, 3);
        assert!(o2.is_empty());
        assert_eq!(skipped, 1);
        assert_eq!(o.len(), 2 * document_passages(0, &long, 8, 3).len());
    }
}
