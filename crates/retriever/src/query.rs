//! Query forms: how a multiple-choice question becomes retrieval queries.
//!
//! - [`QueryForm::Question`]: the question text alone (one query).
//! - [`QueryForm::QuestionOptions`]: the question, then each option on its own line (one
//!   query; the form the runner used before this module, `question + "\n" + option…`).
//! - [`QueryForm::PerOption`]: one query per option, `question + "\n" + option`; the
//!   retriever max-pools per passage ([`crate::Bm25::search_pooled`],
//!   [`crate::DenseIndex::search_pooled_batch`]). A question without options falls back to
//!   the question alone.
//!
//! Config names (serde): `question`, `question+options`, `per-option`.

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// What text is sent as the retrieval query (module documentation).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
pub enum QueryForm {
    /// The question alone.
    #[serde(rename = "question")]
    #[strum(serialize = "question")]
    Question,
    /// The question followed by all option texts (default).
    #[default]
    #[serde(rename = "question+options")]
    #[strum(serialize = "question+options")]
    QuestionOptions,
    /// One query per option (question + that option), max-pooled per passage.
    #[serde(rename = "per-option")]
    #[strum(serialize = "per-option")]
    PerOption,
}

impl QueryForm {
    /// The config name (`question`, `question+options`, `per-option`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// True when the form yields several queries to max-pool.
    pub fn is_pooled(self) -> bool {
        self == QueryForm::PerOption
    }
}

/// The query texts of one question under `form`: one text, or one per option for
/// [`QueryForm::PerOption`] (at least one text in every case).
pub fn query_texts<S: AsRef<str>>(form: QueryForm, question: &str, options: &[S]) -> Vec<String> {
    match form {
        QueryForm::Question => vec![question.to_string()],
        QueryForm::QuestionOptions => {
            let mut s = question.to_string();
            for o in options {
                s.push('\n');
                s.push_str(o.as_ref());
            }
            vec![s]
        }
        QueryForm::PerOption if options.is_empty() => vec![question.to_string()],
        QueryForm::PerOption => options
            .iter()
            .map(|o| format!("{question}\n{}", o.as_ref()))
            .collect(),
    }
}

/// Flattens per-question query lists (from [`query_texts`]) into one list of texts to embed
/// in a single batch, plus the row range of each question, as
/// [`crate::DenseIndex::search_pooled_batch`] takes them.
pub fn flatten_queries(per_question: &[Vec<String>]) -> (Vec<&str>, Vec<Range<usize>>) {
    let mut texts = Vec::new();
    let mut groups = Vec::with_capacity(per_question.len());
    for qs in per_question {
        let start = texts.len();
        texts.extend(qs.iter().map(String::as_str));
        groups.push(start..texts.len());
    }
    (texts, groups)
}

#[cfg(test)]
mod tests {

    // Every variant's strum name equals its serde name, so the two derives agree.
    use testkit::names_agree;

    #[test]
    fn query_form_names_are_the_serde_names() {
        names_agree::<QueryForm>();
    }
    use super::*;

    #[test]
    fn forms() {
        let opts = ["V1", "V2"];
        assert_eq!(
            query_texts(QueryForm::Question, "Which valve?", &opts),
            ["Which valve?"]
        );
        assert_eq!(
            query_texts(QueryForm::QuestionOptions, "Which valve?", &opts),
            ["Which valve?\nV1\nV2"]
        );
        assert_eq!(
            query_texts(QueryForm::PerOption, "Which valve?", &opts),
            ["Which valve?\nV1", "Which valve?\nV2"]
        );
        let none: [&str; 0] = [];
        assert_eq!(query_texts(QueryForm::PerOption, "Q?", &none), ["Q?"]);
        let per = vec![
            vec!["a".to_string(), "b".to_string()],
            vec!["c".to_string()],
        ];
        let (t, g) = flatten_queries(&per);
        assert_eq!(t, ["a", "b", "c"]);
        assert_eq!(g, [0..2, 2..3]);
        let f: QueryForm = serde_json::from_str("\"per-option\"").unwrap();
        assert_eq!(f, QueryForm::PerOption);
        assert_eq!(QueryForm::default().as_str(), "question+options");
    }
}
