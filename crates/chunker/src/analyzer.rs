//! The lexical analysers shared by BM25 and the lexical reader.
//!
//! Base rule ([`Analyzer`], also the default [`TextAnalyzer`]): Unicode word boundaries
//! (UAX #29, via `unicode-segmentation`'s `unicode_words`, which drops punctuation-only
//! segments), then lower-casing with `str::to_lowercase`. "Cell's" gives `["cell's"]`,
//! "DNA-binding" gives `["dna", "binding"]`, "3.14" stays `["3.14"]`.
//!
//! [`TextAnalyzer`] adds two optional steps, applied in this order after lower-casing:
//! 1. English stop words ([`StopWords::English`]): terms in NLTK's English list (198 words,
//!    `nltk_data/corpora/stopwords/english`, shipped by the `stop-words` crate with its `nltk`
//!    feature) are dropped. The list contains negations ("not", "no", "nor"), which matter in
//!    multiple-choice questions, so the filter is off by default.
//! 2. Stemming ([`Stemming::English`]): Snowball English ("Porter2", snowballstem.org) from the
//!    `rust-stemmers` crate; "transported" and "transports" give "transport".
//!
//! A term is never empty: a stop word is dropped before stemming and no Snowball English rule
//! maps a non-empty word to the empty string.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::OnceLock;
use unicode_segmentation::UnicodeSegmentation;

/// The base analyser: Unicode words, lower-cased, no stop words, no stemming (see the module
/// documentation for the exact rule). Equivalent to `TextAnalyzer::default()`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Analyzer;

impl Analyzer {
    /// Terms of `text` in order of appearance, duplicates kept.
    pub fn terms(&self, text: &str) -> Vec<String> {
        text.unicode_words().map(|w| w.to_lowercase()).collect()
    }
}

/// Optional stop-word filter of a [`TextAnalyzer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopWords {
    /// Keep every term (default).
    #[default]
    None,
    /// Drop NLTK's English stop words (198 lower-case words) after lower-casing.
    English,
}

/// Optional stemmer of a [`TextAnalyzer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stemming {
    /// No stemming (default).
    #[default]
    None,
    /// Snowball English (Porter2) via `rust-stemmers`.
    English,
}

/// A configurable analyser: the base rule of [`Analyzer`] plus optional English stop words and
/// stemming (module documentation). `TextAnalyzer::default()` equals [`Analyzer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TextAnalyzer {
    /// Stop-word filter (default none).
    #[serde(default)]
    pub stop_words: StopWords,
    /// Stemmer (default none).
    #[serde(default)]
    pub stemming: Stemming,
}

impl From<Analyzer> for TextAnalyzer {
    fn from(_: Analyzer) -> Self {
        TextAnalyzer::default()
    }
}

fn english_stop_words() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        stop_words::lookup("en")
            .map(|words| words.iter().copied().collect())
            .unwrap_or_default()
    })
}

impl TextAnalyzer {
    /// The base analyser with English stop words and Snowball English stemming both on.
    pub fn english() -> Self {
        TextAnalyzer {
            stop_words: StopWords::English,
            stemming: Stemming::English,
        }
    }

    /// Builder: sets the stop-word filter.
    pub fn with_stop_words(mut self, stop_words: StopWords) -> Self {
        self.stop_words = stop_words;
        self
    }

    /// Builder: sets the stemmer.
    pub fn with_stemming(mut self, stemming: Stemming) -> Self {
        self.stemming = stemming;
        self
    }

    /// True when `term` (already lower-cased) is removed by this analyser's stop-word filter.
    pub fn is_stop_word(&self, term: &str) -> bool {
        match self.stop_words {
            StopWords::None => false,
            StopWords::English => english_stop_words().contains(term),
        }
    }

    /// Terms of `text` in order of appearance, duplicates kept: words, lower-cased, stop words
    /// dropped, then stemmed (module documentation). Never contains an empty string.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let stemmer = match self.stemming {
            Stemming::None => None,
            Stemming::English => Some(rust_stemmers::Stemmer::create(
                rust_stemmers::Algorithm::English,
            )),
        };
        let mut out = Vec::new();
        for word in text.unicode_words() {
            let lower = word.to_lowercase();
            if self.is_stop_word(&lower) {
                continue;
            }
            let term = match &stemmer {
                Some(s) => s.stem(&lower).into_owned(),
                None => lower,
            };
            if !term.is_empty() {
                out.push(term);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analyser_rule() {
        let a = Analyzer;
        assert_eq!(
            a.terms("DNA-binding, Cell's 3.14!"),
            ["dna", "binding", "cell's", "3.14"]
        );
        assert_eq!(a.terms("---- ####"), Vec::<String>::new());
        assert_eq!(a.terms("Grüße aus KÖLN"), ["grüße", "aus", "köln"]);
    }

    #[test]
    fn default_text_analyzer_equals_base() {
        let t = "The Cells' membranes were NOT transporting ions, 3.14 times.";
        assert_eq!(TextAnalyzer::default().terms(t), Analyzer.terms(t));
        assert_eq!(TextAnalyzer::from(Analyzer), TextAnalyzer::default());
    }

    #[test]
    fn stop_words_and_stemming() {
        let t = "The membranes were transporting the ions and not the proteins";
        let stop = TextAnalyzer::default().with_stop_words(StopWords::English);
        assert_eq!(
            stop.terms(t),
            ["membranes", "transporting", "ions", "proteins"]
        );
        let stem = TextAnalyzer::default().with_stemming(Stemming::English);
        assert_eq!(
            stem.terms("Transported transports TRANSPORTING"),
            ["transport", "transport", "transport"]
        );
        assert_eq!(
            TextAnalyzer::english().terms(t),
            ["membran", "transport", "ion", "protein"]
        );
        assert!(TextAnalyzer::english().terms("the and of").is_empty());
    }
}
