//! Fixed-size chunking in words with overlap.
//!
//! Windows of `size` words start every `size - overlap` words; the last window is the first
//! one that reaches the document's last word, so no text is dropped and no window is a
//! subset of its predecessor (../shared/cases/CASES.md, cases 1 and 24). Each chunk spans from
//! the first byte of its first word to the last byte of its last word: whitespace between
//! chunks (and leading/trailing whitespace of the document) is the only text not covered.
//! This is the `fixed` strategy of DESIGN.md §1 in its word unit; LlamaIndex's
//! `SentenceSplitter`/`TokenTextSplitter` use the same sliding-window rule.

use crate::{word_spans, Chunk, Document};
use serde::{Deserialize, Serialize};

/// Configuration errors of the fixed-size chunker, raised before any work is done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FixedError {
    /// `size` was 0.
    #[error("field `size` must be at least 1 word (got 0)")]
    ZeroSize,
    /// `overlap` was not smaller than `size`.
    #[error(
        "field `overlap` ({overlap}) must be smaller than field `size` ({size}); \
         a window would never advance"
    )]
    OverlapTooLarge {
        /// The configured size in words.
        size: usize,
        /// The configured overlap in words.
        overlap: usize,
    },
}

/// A validated fixed-size word chunker: windows of `size` words, `overlap` words shared by
/// consecutive windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixedConfig {
    size: usize,
    overlap: usize,
}

impl FixedConfig {
    /// Validates `size >= 1` and `overlap < size` (both in words).
    ///
    /// # Errors
    /// [`FixedError::ZeroSize`] or [`FixedError::OverlapTooLarge`], naming the field.
    pub fn new(size: usize, overlap: usize) -> Result<Self, FixedError> {
        if size == 0 {
            return Err(FixedError::ZeroSize);
        }
        if overlap >= size {
            return Err(FixedError::OverlapTooLarge { size, overlap });
        }
        Ok(FixedConfig { size, overlap })
    }

    /// Window size in words.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Words shared by consecutive windows.
    pub fn overlap(&self) -> usize {
        self.overlap
    }

    /// Chunks one document. A document without words yields no chunks.
    ///
    /// Output: chunks in document order with strictly increasing starts and ends; each has
    /// at most `size` words, and exactly `size` except possibly the last.
    pub fn chunk(&self, doc: &Document) -> Vec<Chunk> {
        let words = word_spans(&doc.text);
        let n = words.len();
        let stride = self.size - self.overlap;
        let mut chunks = Vec::with_capacity(n / stride + 1);
        let mut first = 0;
        while first < n {
            let last = (first + self.size).min(n);
            let start = words[first].start;
            let end = words[last - 1].end;
            chunks.push(Chunk {
                doc_id: doc.id.clone(),
                span: crate::Span { start, end },
                words: last - first,
            });
            if last == n {
                break;
            }
            first += stride;
        }
        chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn doc(text: &str) -> Document {
        Document {
            id: "d".into(),
            title: String::new(),
            text: text.into(),
            source: String::new(),
            license: String::new(),
        }
    }

    const TEN: &str = "alpha beta gamma delta epsilon zeta eta theta iota kappa";

    #[test]
    fn case1_rejects_bad_configs() {
        assert_eq!(
            FixedConfig::new(4, 4),
            Err(FixedError::OverlapTooLarge {
                size: 4,
                overlap: 4
            })
        );
        assert!(FixedConfig::new(4, 5).is_err());
        assert_eq!(FixedConfig::new(0, 0), Err(FixedError::ZeroSize));
        assert!(FixedConfig::new(4, 5)
            .unwrap_err()
            .to_string()
            .contains("`overlap`"));
    }

    #[test]
    fn case1_valid_control_and_degenerate() {
        let d = doc(TEN);
        let chunks = FixedConfig::new(4, 3).unwrap().chunk(&d);
        assert_eq!(chunks.len(), 7);
        assert!(chunks.last().unwrap().text(&d).ends_with("kappa"));
        let firsts: Vec<&str> = chunks
            .iter()
            .map(|c| c.text(&d).split(' ').next().unwrap())
            .collect();
        assert_eq!(
            firsts,
            ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
        );
        let ones = FixedConfig::new(1, 0).unwrap().chunk(&d);
        assert_eq!(ones.len(), 10);
        assert!(ones.iter().all(|c| c.words == 1));
    }

    #[test]
    fn case3_blank_documents_give_no_chunks() {
        let cfg = FixedConfig::new(3, 1).unwrap();
        for t in ["", "   \n\t  ", "\r\n\r\n", "\u{00A0}\u{200B}\u{FEFF}"] {
            assert!(cfg.chunk(&doc(t)).is_empty(), "{t:?}");
        }
        assert_eq!(cfg.chunk(&doc("Pumps hum. Valves click.")).len(), 2);
    }

    #[test]
    fn case22_crlf_matches_lf_word_counts() {
        let crlf = "Para one line.\r\n\r\nPara two line.\r\nsame para.\r\n\r\nPara three.";
        let lf = crlf.replace("\r\n", "\n");
        let cfg = FixedConfig::new(3, 0).unwrap();
        let a: Vec<usize> = cfg.chunk(&doc(crlf)).iter().map(|c| c.words).collect();
        let b: Vec<usize> = cfg.chunk(&doc(&lf)).iter().map(|c| c.words).collect();
        assert_eq!(a, b);
        for c in cfg.chunk(&doc(crlf)) {
            let t = &crlf[c.span.start..c.span.end];
            assert!(!t.ends_with('\r') && !t.starts_with('\n'));
        }
    }

    proptest! {
        #[test]
        fn invariants_hold_on_random_text(text in "\\PC{0,300}|[a-zé日本 \n\r\t]{0,300}", size in 1usize..20, ov in 0usize..19) {
            prop_assume!(ov < size);
            let d = doc(&text);
            let cfg = FixedConfig::new(size, ov).unwrap();
            let chunks = cfg.chunk(&d);
            let total = crate::count_words(&text);
            let mut prev: Option<crate::Span> = None;
            for c in &chunks {
                // 1. never empty; 2. exact slice with a matching word count
                prop_assert!(c.words >= 1 && c.words <= size);
                prop_assert_eq!(crate::count_words(c.text(&d)), c.words);
                // 4. strictly increasing starts and ends
                if let Some(p) = prev {
                    prop_assert!(c.span.start > p.start && c.span.end > p.end);
                }
                prev = Some(c.span);
            }
            // 3. coverage: every word is in some chunk
            let spans: Vec<crate::Span> = chunks.iter().map(|c| c.span).collect();
            prop_assert_eq!(crate::unique_words(&text, &spans), total);
            if ov == 0 {
                prop_assert_eq!(chunks.iter().map(|c| c.words).sum::<usize>(), total);
            }
        }
    }
}
