//! Readers: answer a multiple-choice question from retrieved passages.
//!
//! A [`Reader`] maps (question, options, passages) to a chosen option with one score per
//! option. Ties are explicit: [`ReaderOutput::tied`] says how many options share the best
//! score, and a tied answer never counts as correct ([`ReaderOutput::is_correct`];
//! ../shared/cases/CASES.md case 31).

#![warn(missing_docs)]

pub mod lexical;

pub use lexical::LexicalReader;

use serde::{Deserialize, Serialize};

/// What a reader sees for one question.
#[derive(Debug, Clone, Copy)]
pub struct ReaderInput<'a> {
    /// The question text.
    pub question: &'a str,
    /// Option texts, in the dataset's order (letters A, B, ... by position).
    pub options: &'a [String],
    /// Retrieved passage texts, best first (may be empty: closed-book).
    pub passages: &'a [&'a str],
}

/// A reader's answer to one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReaderOutput {
    /// Index of the chosen option (the lowest index among the best-scored options).
    pub choice: usize,
    /// One score per option, same order as the options (reader-specific units).
    pub scores: Vec<f64>,
    /// Number of options sharing the best score; 1 means a clear answer.
    pub tied: usize,
    /// A short record of the raw output (for the lexical reader: the scoring summary).
    pub raw: String,
}

impl ReaderOutput {
    /// Correct only when the choice is the gold option and no other option tied with it.
    pub fn is_correct(&self, gold: usize) -> bool {
        self.tied == 1 && self.choice == gold
    }
}

/// Errors a reader reports.
#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    /// The question cannot be read (e.g. it has no options).
    #[error("reader `{reader}` cannot answer: {message}")]
    Invalid {
        /// Identity of the reader.
        reader: String,
        /// What is wrong with the input.
        message: String,
    },
}

/// A multiple-choice reader.
pub trait Reader: Send + Sync {
    /// Identity for caches and manifests (name, version of the scoring rule, parameters).
    fn identity(&self) -> String;

    /// Answers one question.
    ///
    /// # Errors
    /// [`ReaderError::Invalid`] when the input has no options.
    fn read(&self, input: &ReaderInput<'_>) -> Result<ReaderOutput, ReaderError>;
}

/// Picks the best option from per-option score keys compared lexicographically.
///
/// Returns `(choice, tied)`: the lowest index with the maximal key and how many options
/// share that key. Keys are compared with `f64::total_cmp` after mapping NaN to -inf, so the
/// result is deterministic for any input.
pub fn argmax_with_ties(keys: &[(f64, f64)]) -> (usize, usize) {
    let clean = |x: f64| if x.is_nan() { f64::NEG_INFINITY } else { x };
    let cmp = |a: &(f64, f64), b: &(f64, f64)| {
        clean(a.0)
            .total_cmp(&clean(b.0))
            .then(clean(a.1).total_cmp(&clean(b.1)))
    };
    let mut best = 0;
    for i in 1..keys.len() {
        if cmp(&keys[i], &keys[best]).is_gt() {
            best = i;
        }
    }
    let tied = keys.iter().filter(|k| cmp(k, &keys[best]).is_eq()).count();
    (best, tied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case31_ties_are_not_correct() {
        // scores [0.40, 0.40, 0.10, 0.10], gold = B
        let keys = [(0.40, 0.0), (0.40, 0.0), (0.10, 0.0), (0.10, 0.0)];
        let (choice, tied) = argmax_with_ties(&keys);
        assert_eq!((choice, tied), (0, 2));
        let out = ReaderOutput {
            choice,
            scores: vec![0.4, 0.4, 0.1, 0.1],
            tied,
            raw: String::new(),
        };
        assert!(!out.is_correct(1));
        assert!(!out.is_correct(0));
    }

    #[test]
    fn secondary_key_breaks_primary_ties() {
        let (choice, tied) = argmax_with_ties(&[(0.4, 1.0), (0.4, 2.0), (f64::NAN, 9.0)]);
        assert_eq!((choice, tied), (1, 1));
    }
}
