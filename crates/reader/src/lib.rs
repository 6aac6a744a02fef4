//! Readers: answer a multiple-choice question from retrieved passages.
//!
//! A [`Reader`] maps (question, options, passages) to a chosen option with one score per
//! option and a short record of its raw output ([`ReaderOutput`]); [`Reader::identity`] names
//! the reader, its model, template and parameters for caches and manifests.
//!
//! Readers in this crate:
//! - [`LexicalReader`]: the information-retrieval baseline (evidence overlap per option).
//! - [`LlmReader`]: a local GGUF model (llama / mistral / SmolLM2 / qwen2 families) run by
//!   candle; scores each answer letter by its log-likelihood after the prompt, as
//!   lm-evaluation-harness scores multiple choice.
//! - [`OpenAiReader`]: any OpenAI-compatible chat-completions server (vLLM, llama.cpp server,
//!   Ollama, OpenAI); letter log-probs when offered, otherwise anchored answer parsing
//!   ([`parse_answer`]).
//! - [`CachedReader`]: wraps any reader with an on-disk [`ResponseCache`].
//!
//! Models that write text (the LLM strategies, `data generate`) go through one seam,
//! [`lm::ChatModel`]: a server protocol ([`lm::ChatProtocol`], one file per protocol) behind
//! the shared transport ([`transport::Transport`]: key, retries, concurrency, which the
//! OpenAI-compatible reader uses too), the generation cache, the reply bound and the usage
//! count.
//!
//! Ties are explicit: [`ReaderOutput::tied`] says how many options share the best score, and a
//! tied answer never counts as correct ([`ReaderOutput::is_correct`]; docs/reference.md
//! case 31). An unusable output (e.g. an unparsable server reply) is flagged
//! [`ReaderOutput::invalid`], is a full tie, and never counts as correct (case 32).
//!
//! Closed-book and oracle baselines are just other passage lists: [`ReaderInput::closed_book`]
//! and [`oracle_passages`].

#![warn(missing_docs)]

pub mod cache;
pub mod chat;
mod decoder;
pub mod gguf_prompt;
pub mod gguf_tokenizer;
pub mod lexical;
pub mod llm;
pub mod lm;
/// The generation cache, at its historical path ([`lm::cache`]).
pub use lm::cache as generation_cache;
pub mod openai;
pub mod oracle;
pub mod parse;
pub mod prompt;
pub mod transport;

pub use cache::{verify_entry, CacheMode, CacheStats, CachedReader, ResponseCache};
/// The response cache's database file name and kind.
pub use cache::{DB_FILE as RESPONSE_DB_FILE, DB_KIND as RESPONSE_DB_KIND};
pub use chat::{ChatMessage, ChatTemplate};
pub use gguf_prompt::GgufPrompt;
pub use gguf_tokenizer::GgufTokenizer;
pub use lexical::LexicalReader;
pub use llm::{ChatFormat, LetterForm, LlmConfig, LlmReader, Scoring, WeightFormat};
pub use openai::{LogprobsMode, OpenAiApi, OpenAiConfig, OpenAiReader, OpenAiStats};
pub use oracle::{oracle_passages, OracleError};
pub use parse::{parse_answer, ParsedAnswer};
pub use prompt::{CuePlacement, PromptTemplate};

use serde::{Deserialize, Serialize};

/// The largest number of options a reader accepts: one per letter A..Z.
pub const MAX_OPTIONS: usize = 26;

/// The answer letter of option `index` (0 → 'A', 1 → 'B', ...).
///
/// # Panics
/// When `index >= MAX_OPTIONS` (26); [`ReaderInput::validate`] rejects such inputs first.
pub fn letter(index: usize) -> char {
    assert!(
        index < MAX_OPTIONS,
        "option index {index} has no letter (max 26 options)"
    );
    (b'A' + index as u8) as char
}

/// What a reader sees for one question.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ReaderInput<'a> {
    /// The question text.
    pub question: &'a str,
    /// Option texts, in the dataset's order (letters A, B, ... by position; an empty option
    /// keeps its letter, so later letters never shift — case 33).
    pub options: &'a [String],
    /// Retrieved passage texts, best first (may be empty: closed-book; empty or
    /// whitespace-only passages are ignored by the prompt-based readers — case 29).
    pub passages: &'a [&'a str],
}

impl<'a> ReaderInput<'a> {
    /// A closed-book input: the question and options with no passages.
    pub fn closed_book(question: &'a str, options: &'a [String]) -> Self {
        ReaderInput {
            question,
            options,
            passages: &[],
        }
    }

    /// Checks what every reader requires: 1..=26 options (one letter each).
    ///
    /// # Errors
    /// [`ReaderError::Invalid`] naming `reader` when there are no options or more than 26.
    pub fn validate(&self, reader: &str) -> Result<(), ReaderError> {
        let n = self.options.len();
        if n == 0 {
            return Err(ReaderError::Invalid {
                reader: reader.to_string(),
                message: "the question has no options".into(),
            });
        }
        if n > MAX_OPTIONS {
            return Err(ReaderError::Invalid {
                reader: reader.to_string(),
                message: format!("the question has {n} options; at most {MAX_OPTIONS} (A..Z)"),
            });
        }
        Ok(())
    }

    /// Canonical JSON of the input (question, options, passages), the default material a
    /// [`ResponseCache`] key hashes.
    pub fn canonical_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// How a prompt-based reader used the passages it was given (context-window accounting).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUse {
    /// Passages in the input.
    pub passages_given: usize,
    /// Passages that appear in the prompt (whole or cut); empty passages are not used.
    pub passages_used: usize,
    /// Non-empty passages dropped entirely because the prompt exceeded the model window.
    pub passages_dropped: usize,
    /// Whether the last used passage was cut to fit the window.
    pub passage_cut: bool,
    /// Model tokens removed from the cut passage (0 when none was cut; whole dropped
    /// passages are counted in `passages_dropped`, not here).
    pub tokens_cut: usize,
    /// Prompt length in model tokens (0 for readers without a tokenizer).
    pub prompt_tokens: usize,
}

impl ContextUse {
    /// Whether the passages were truncated in any way (dropped or cut).
    pub fn truncated(&self) -> bool {
        self.passages_dropped > 0 || self.passage_cut
    }
}

/// A reader's answer to one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReaderOutput {
    /// Index of the chosen option (the lowest index among the best-scored options).
    pub choice: usize,
    /// One score per option, same order as the options (reader-specific units: idf
    /// coverage for the lexical reader, natural-log probabilities for the LLM readers,
    /// 1/0 indicators for a parsed server answer). Always finite.
    pub scores: Vec<f64>,
    /// Number of options sharing the best score; 1 means a clear answer.
    pub tied: usize,
    /// A short record of the raw output (lexical: the scoring summary; LLM: the letter
    /// log-probs and the greedy next token; server: the reply text, cut to 300 chars).
    pub raw: String,
    /// The reader produced no usable answer (e.g. an unparsable or ambiguous server reply).
    /// Such an output is a full tie and never counts as correct.
    #[serde(default)]
    pub invalid: bool,
    /// Context-window accounting for prompt-based readers (all zero for the lexical reader).
    #[serde(default)]
    pub context: ContextUse,
    /// The reader's second score per option, which breaks ties on `scores` (the lexical
    /// reader: the option's coverage summed over the passages); empty for readers without
    /// one. Options equal in both are a tie.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tie_break: Vec<f64>,
}

impl ReaderOutput {
    /// Correct only when the choice is the gold option, no other option tied with it and the
    /// output is valid.
    pub fn is_correct(&self, gold: usize) -> bool {
        !self.invalid && self.tied == 1 && self.choice == gold
    }

    /// Grades against a gold answer that may be missing or out of range (case 33).
    ///
    /// # Errors
    /// [`ReaderError::Invalid`] when `gold` is `None` or not an index of `self.scores`;
    /// such a question must be excluded (and counted) by the caller, never scored as wrong.
    pub fn grade(&self, gold: Option<usize>) -> Result<bool, ReaderError> {
        match gold {
            Some(g) if g < self.scores.len() => Ok(self.is_correct(g)),
            Some(g) => Err(ReaderError::Invalid {
                reader: "grade".into(),
                message: format!(
                    "gold option {g} is out of range for {} options",
                    self.scores.len()
                ),
            }),
            None => Err(ReaderError::Invalid {
                reader: "grade".into(),
                message: "the question has no gold answer".into(),
            }),
        }
    }

    /// An invalid output for `n` options: all scores 0, a full tie, `invalid = true`.
    pub fn invalid(n: usize, raw: String) -> Self {
        ReaderOutput {
            choice: 0,
            scores: vec![0.0; n],
            tied: n,
            raw,
            invalid: true,
            context: ContextUse::default(),
            tie_break: Vec::new(),
        }
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
    /// A model file is missing, unreadable or of an unsupported kind.
    #[error("model: {0}")]
    Model(String),
    /// The tokenizer could not be built or failed on an input.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The chat template is unsupported or failed to render.
    #[error("chat template: {0}")]
    Template(String),
    /// The prompt does not fit the model window even with no passages.
    #[error(
        "prompt of {tokens} tokens (without passages) exceeds the model window of {window} tokens"
    )]
    ContextOverflow {
        /// Prompt tokens without passages, plus the longest answer continuation.
        tokens: usize,
        /// The window in tokens.
        window: usize,
    },
    /// Inference failed inside candle.
    #[error("inference: {0}")]
    Inference(String),
    /// An HTTP request failed (after retries where the failure was transient).
    #[error("http: {0}")]
    Http(String),
    /// A request did not finish within the configured timeout (after retries).
    #[error("timeout: {0}")]
    Timeout(String),
    /// The server replied with something that is not a chat completion (malformed JSON,
    /// missing fields).
    #[error("protocol: {0}")]
    Protocol(String),
    /// A configuration value is unusable (missing API key variable, bad URL, ...).
    #[error("config: {0}")]
    Config(String),
    /// The response cache failed to read or write.
    #[error("cache: {0}")]
    Cache(String),
}

/// A multiple-choice reader.
pub trait Reader: Send + Sync {
    /// Identity for caches and manifests (name, version of the scoring rule, model identity,
    /// template, parameters). Never contains secrets.
    fn identity(&self) -> String;

    /// Answers one question.
    ///
    /// # Errors
    /// [`ReaderError::Invalid`] when the input has no options (or more than 26); model,
    /// HTTP and protocol errors for the LLM readers.
    fn read(&self, input: &ReaderInput<'_>) -> Result<ReaderOutput, ReaderError>;

    /// The text a [`ResponseCache`] key hashes together with [`Reader::identity`]: by default
    /// the canonical JSON of the input; prompt-based readers return the rendered prompt.
    ///
    /// # Errors
    /// Whatever rendering the prompt can fail with.
    fn cache_material(&self, input: &ReaderInput<'_>) -> Result<String, ReaderError> {
        Ok(input.canonical_json())
    }

    /// Tokens of `text` in the reader's own tokenizer (no special tokens), for the context
    /// cost of retrieved passages; `None` for readers without a tokenizer (lexical, a chat-mode
    /// server), whose cost the runner counts with a named tokenizer instead. Wrappers must
    /// forward it.
    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    /// What [`Reader::count_tokens`] counts with (e.g. `gguf:SmolLM2…`); `None` when it
    /// returns `None`.
    fn tokenizer_name(&self) -> Option<String> {
        None
    }
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

/// SHA-256 of `bytes` as lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    fsio::sha256_hex(bytes)
}

/// SHA-256 of `bytes`.
pub(crate) fn sha256_bytes(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// Cuts a string to at most `max` bytes on a character boundary, marking the cut with "…".
pub use httpio::clip;

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
            invalid: false,
            context: ContextUse::default(),
            tie_break: Vec::new(),
        };
        assert!(!out.is_correct(1));
        assert!(!out.is_correct(0));
        // Run the tie-break many times and from several threads: always the same.
        let results: Vec<(usize, usize)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| argmax_with_ties(&keys)))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results.iter().all(|r| *r == (0, 2)));
    }

    #[test]
    fn secondary_key_breaks_primary_ties() {
        let (choice, tied) = argmax_with_ties(&[(0.4, 1.0), (0.4, 2.0), (f64::NAN, 9.0)]);
        assert_eq!((choice, tied), (1, 1));
    }

    #[test]
    fn case33_gold_missing_or_out_of_range_is_an_error_not_wrong() {
        let out = ReaderOutput {
            choice: 2,
            scores: vec![0.0, 0.0, 1.0, 0.0],
            tied: 1,
            raw: String::new(),
            invalid: false,
            context: ContextUse::default(),
            tie_break: Vec::new(),
        };
        assert!(out.grade(Some(2)).unwrap());
        assert!(!out.grade(Some(1)).unwrap());
        assert!(out.grade(Some(4)).is_err()); // "E" with four options
        assert!(out.grade(None).is_err());
    }

    #[test]
    fn invalid_output_is_never_correct() {
        let out = ReaderOutput::invalid(4, "None of these".into());
        for g in 0..4 {
            assert!(!out.is_correct(g));
        }
        assert_eq!(out.tied, 4);
    }

    #[test]
    fn validate_option_counts() {
        let six: Vec<String> = ["4", "6", "7", "8", "9", "10"].map(String::from).to_vec();
        assert!(ReaderInput::closed_book("Pick the prime.", &six)
            .validate("t")
            .is_ok());
        assert!(ReaderInput::closed_book("q", &[]).validate("t").is_err());
        let many: Vec<String> = (0..27).map(|i| i.to_string()).collect();
        assert!(ReaderInput::closed_book("q", &many).validate("t").is_err());
        assert_eq!(letter(5), 'F');
        assert_eq!(letter(25), 'Z');
    }
}
