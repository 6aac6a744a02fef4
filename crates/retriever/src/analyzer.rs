//! The lexical analyser shared by BM25 and the lexical reader.
//!
//! Rule: Unicode word boundaries (UAX #29, via `unicode-segmentation`'s `unicode_words`, which
//! drops punctuation-only segments), then lower-casing with `str::to_lowercase`. No stop
//! words and no stemming: rare terms are weighted up by idf instead. "Cell's" gives
//! `["cell's"]`, "DNA-binding" gives `["dna", "binding"]`, "3.14" stays `["3.14"]`.

use unicode_segmentation::UnicodeSegmentation;

/// Turns text into index terms (see the module documentation for the exact rule).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Analyzer;

impl Analyzer {
    /// Terms of `text` in order of appearance, duplicates kept.
    pub fn terms(&self, text: &str) -> Vec<String> {
        text.unicode_words().map(|w| w.to_lowercase()).collect()
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
}
