//! The lexical baseline reader, in the style of the information-retrieval solver for science
//! questions (Clark et al., "Combining Retrieval, Statistics, and Inference to Answer
//! Elementary Science Questions", AAAI 2016, §3.1): an option is supported when a retrieved
//! passage contains both the option's words and the question's words.
//!
//! Scoring rule (terms from [`chunker::Analyzer`], sets, idf from the corpus documents as
//! `ln(1 + (N − df + 0.5)/(df + 0.5))`):
//! - `Q` = question terms; `O_i` = option i's terms minus `Q` and minus terms that every
//!   option shares (if that leaves nothing, option i's terms minus `Q`, then all its terms).
//! - For passage p with term set P: `cov(X, p) = Σ_{t∈X∩P} idf(t) / Σ_{t∈X} idf(t)`.
//! - `s_i(p) = cov(O_i, p) · (1 + cov(Q, p))`.
//! - Option score = `max_p s_i(p)`; ties on it are broken by `Σ_p s_i(p)` (the output's
//!   `tie_break`, per_question's `tie_break` column, shown in the explorer); options still equal
//!   are a tie ([`crate::ReaderOutput::tied`] > 1), which never counts as correct. With no
//!   passages every option scores 0 and all options tie.

use crate::{argmax_with_ties, Reader, ReaderError, ReaderInput, ReaderOutput};
use chunker::Analyzer;
use std::collections::{BTreeSet, HashMap};

/// The lexical reader; holds the corpus document frequencies used for idf.
#[derive(Debug, Clone)]
pub struct LexicalReader {
    analyzer: Analyzer,
    df: HashMap<String, u32>,
    n_docs: usize,
}

impl LexicalReader {
    /// Builds the reader from the corpus documents' texts (document frequency per term).
    pub fn new<'a>(corpus: impl IntoIterator<Item = &'a str>) -> Self {
        let analyzer = Analyzer;
        let mut df: HashMap<String, u32> = HashMap::new();
        let mut n_docs = 0;
        for text in corpus {
            n_docs += 1;
            let terms: BTreeSet<String> = analyzer.terms(text).into_iter().collect();
            for t in terms {
                *df.entry(t).or_default() += 1;
            }
        }
        LexicalReader {
            analyzer,
            df,
            n_docs,
        }
    }

    fn idf(&self, term: &str) -> f64 {
        let n = self.n_docs as f64;
        let df = self.df.get(term).copied().unwrap_or(0) as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    fn set(&self, text: &str) -> BTreeSet<String> {
        self.analyzer.terms(text).into_iter().collect()
    }

    /// Idf-weighted share of `terms` found in `passage`. Terms are summed in sorted order
    /// (`BTreeSet`), so the same input gives bit-identical scores in every reader instance and
    /// run; with hash-set order, sums differed in the last bits between runs and decided ties.
    fn coverage(&self, terms: &BTreeSet<String>, passage: &BTreeSet<String>) -> f64 {
        let total: f64 = terms.iter().map(|t| self.idf(t)).sum();
        if total <= 0.0 {
            return 0.0;
        }
        let hit: f64 = terms
            .iter()
            .filter(|t| passage.contains(*t))
            .map(|t| self.idf(t))
            .sum();
        hit / total
    }
}

impl Reader for LexicalReader {
    fn identity(&self) -> String {
        "lexical-v1(cov(option)*(1+cov(question)),max-then-sum,idf=lucene)".to_string()
    }

    fn read(&self, input: &ReaderInput<'_>) -> Result<ReaderOutput, ReaderError> {
        input.validate(&self.identity())?;
        let q = self.set(input.question);
        let raw_opts: Vec<BTreeSet<String>> = input.options.iter().map(|o| self.set(o)).collect();
        let shared: BTreeSet<String> = raw_opts
            .iter()
            .skip(1)
            .fold(raw_opts[0].clone(), |acc, s| &acc & s);
        let opts: Vec<BTreeSet<String>> = raw_opts
            .iter()
            .map(|o| {
                let distinct: BTreeSet<String> = o
                    .iter()
                    .filter(|t| !q.contains(*t) && !shared.contains(*t))
                    .cloned()
                    .collect();
                if !distinct.is_empty() {
                    return distinct;
                }
                let not_q: BTreeSet<String> = o.difference(&q).cloned().collect();
                if not_q.is_empty() {
                    o.clone()
                } else {
                    not_q
                }
            })
            .collect();
        let passages: Vec<BTreeSet<String>> = input.passages.iter().map(|p| self.set(p)).collect();
        let q_cov: Vec<f64> = passages.iter().map(|p| self.coverage(&q, p)).collect();
        let keys: Vec<(f64, f64)> = opts
            .iter()
            .map(|o| {
                let per: Vec<f64> = passages
                    .iter()
                    .zip(&q_cov)
                    .map(|(p, qc)| self.coverage(o, p) * (1.0 + qc))
                    .collect();
                let max = per.iter().copied().fold(0.0, f64::max);
                (max, per.iter().sum())
            })
            .collect();
        let (choice, tied) = argmax_with_ties(&keys);
        let raw = format!(
            "max={:?} sum={:?}",
            keys.iter().map(|k| round6(k.0)).collect::<Vec<_>>(),
            keys.iter().map(|k| round6(k.1)).collect::<Vec<_>>()
        );
        Ok(ReaderOutput {
            choice,
            scores: keys.iter().map(|k| k.0).collect(),
            tie_break: keys.iter().map(|k| k.1).collect(),
            tied,
            raw,
            invalid: false,
            context: crate::ContextUse {
                passages_given: input.passages.len(),
                passages_used: input.passages.len(),
                ..Default::default()
            },
        })
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scores_are_bit_identical_across_instances() {
        // Terms with many different idfs (term tJ is in J+1 of 60 documents): a change of
        // summation order shows in the last bits of the scores.
        let corpus: Vec<String> = (0..60)
            .map(|d| {
                (0..60)
                    .filter(|j| d <= *j)
                    .map(|j| format!("t{j}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let passages: Vec<&str> = corpus
            .iter()
            .map(String::as_str)
            .skip(7)
            .step_by(11)
            .take(3)
            .collect();
        let words =
            |r: std::ops::Range<usize>| r.map(|j| format!("t{j}")).collect::<Vec<_>>().join(" ");
        let options = opts(&[
            &words(0..13),
            &words(13..29),
            &words(29..41),
            &words(41..60),
        ]);
        let question = "which of these".to_string();
        let input = ReaderInput {
            question: &question,
            options: &options,
            passages: &passages,
        };
        let first = LexicalReader::new(corpus.iter().map(String::as_str))
            .read(&input)
            .unwrap();
        for _ in 0..30 {
            let again = LexicalReader::new(corpus.iter().map(String::as_str))
                .read(&input)
                .unwrap();
            let bits = |o: &ReaderOutput| o.scores.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&first), bits(&again));
            assert_eq!((first.choice, first.tied), (again.choice, again.tied));
        }
    }

    #[test]
    fn picks_supported_option() {
        let corpus = [
            "Valve V2 was replaced in March.",
            "Pumps hum loudly.",
            "Valves click.",
        ];
        let r = LexicalReader::new(corpus);
        let o = opts(&["V1", "V2", "V3", "V4"]);
        let passages = ["Valve V2 was replaced in March."];
        let out = r
            .read(&ReaderInput {
                question: "Which valve was replaced?",
                options: &o,
                passages: &passages,
            })
            .unwrap();
        assert_eq!((out.choice, out.tied), (1, 1));
        assert!(out.is_correct(1));
    }

    #[test]
    fn case29_no_passages_is_a_full_tie_not_dropped() {
        let r = LexicalReader::new(["a b c"]);
        let o = opts(&["V1", "V2", "V3", "V4"]);
        for passages in [&[][..], &[""][..]] {
            let out = r
                .read(&ReaderInput {
                    question: "Which valve was replaced?",
                    options: &o,
                    passages,
                })
                .unwrap();
            assert_eq!(out.tied, 4);
            assert!(!out.is_correct(out.choice));
            assert!(out.scores.iter().all(|s| *s == 0.0));
        }
    }

    #[test]
    fn six_options_and_empty_option() {
        let r = LexicalReader::new(["seven is prime", "e is a vowel"]);
        let o = opts(&["4", "6", "7", "8", "9", "10"]);
        let out = r
            .read(&ReaderInput {
                question: "Pick the prime.",
                options: &o,
                passages: &["the number 7 is prime"],
            })
            .unwrap();
        assert_eq!((out.choice, out.tied), (2, 1));
        let o = opts(&["b", "", "e", "k"]);
        let out = r
            .read(&ReaderInput {
                question: "Pick the vowel.",
                options: &o,
                passages: &["e is a vowel"],
            })
            .unwrap();
        assert_eq!((out.choice, out.tied), (2, 1));
    }

    /// A tie on the best passage's coverage is broken by the coverage summed over the
    /// passages, and the output carries those sums (`tie_break`) for per_question and the
    /// explorer.
    #[test]
    fn the_tie_break_is_reported_with_the_scores() {
        let r = LexicalReader::new(["apple pie", "banana bread", "apple tart"]);
        let o = opts(&["apple", "banana"]);
        let out = r
            .read(&ReaderInput {
                question: "Which fruit?",
                options: &o,
                passages: &["apple pie", "banana bread", "apple tart"],
            })
            .unwrap();
        assert_eq!(out.tie_break.len(), 2);
        assert_eq!(
            out.scores[0], out.scores[1],
            "equal on the best passage: {out:?}"
        );
        assert!(
            out.tie_break[0] > out.tie_break[1],
            "apple covers two passages: {out:?}"
        );
        assert_eq!((out.choice, out.tied), (0, 1));
    }

    #[test]
    fn no_options_is_an_error() {
        let r = LexicalReader::new(["x"]);
        assert!(r
            .read(&ReaderInput {
                question: "q",
                options: &[],
                passages: &[]
            })
            .is_err());
    }
}
