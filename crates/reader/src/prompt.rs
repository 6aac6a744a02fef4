//! The multiple-choice prompt: context block, question, lettered options and the answer cue.
//!
//! Layout of the user message (each part configurable in [`PromptTemplate`]; `{n}` is the
//! 1-based passage number, `{letter}` the option letter):
//!
//! ```text
//! {instruction}                       (omitted when empty)
//!
//! {context_header}                    (the context block is omitted when no passage has
//! {passage: "[{n}] {text}"}            non-whitespace text: closed-book, or [""] — case 29)
//! ...
//!
//! {question: "Question: {question}"}
//! {option: "{letter}. {text}"}        (one line per option, letters A.. by position; an empty
//! ...                                  option keeps its letter — case 33)
//! {answer_cue: "Answer:"}             (here when cue_placement = user)
//! ```
//!
//! The cloze form ([`PromptTemplate::render_cloze`]) drops the instruction and the option
//! lines; the scored continuation is then an option's text.
//!
//! With `cue_placement = assistant` (the default) the cue opens the assistant turn instead, so
//! the scored continuation follows `"Answer:"` exactly as in lm-evaluation-harness's MMLU
//! prompt (`"...\nAnswer:"` + `" A"`), while the chat template still wraps the question.

use serde::{Deserialize, Serialize};

/// Where the answer cue (`"Answer:"`) goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CuePlacement {
    /// Last line of the user message; the scored letter then opens the assistant turn.
    User,
    /// Start of the assistant turn (a prefill); the scored letter follows it.
    #[default]
    Assistant,
}

/// The configurable parts of the multiple-choice prompt (see the module docs for the layout).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PromptTemplate {
    /// System message; `None` leaves the chat template's own default (if any).
    pub system: Option<String>,
    /// First paragraph of the user message (may be empty).
    pub instruction: String,
    /// Line that opens the context block.
    pub context_header: String,
    /// One passage; placeholders `{n}` (1-based) and `{text}`.
    pub passage: String,
    /// The question line; placeholder `{question}`.
    pub question: String,
    /// One option line; placeholders `{letter}` and `{text}`.
    pub option: String,
    /// The answer cue.
    pub answer_cue: String,
    /// Where the cue goes.
    pub cue_placement: CuePlacement,
}

impl Default for PromptTemplate {
    fn default() -> Self {
        PromptTemplate {
            system: None,
            instruction: "Answer the multiple-choice question. Reply with the letter of the \
                          correct option only."
                .into(),
            context_header: "Context:".into(),
            passage: "[{n}] {text}".into(),
            question: "Question: {question}".into(),
            option: "{letter}. {text}".into(),
            answer_cue: "Answer:".into(),
            cue_placement: CuePlacement::Assistant,
        }
    }
}

/// A rendered prompt before chat formatting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPrompt {
    /// System message (from the template), if any.
    pub system: Option<String>,
    /// The user message.
    pub user: String,
    /// Text that opens the assistant turn (the cue with [`CuePlacement::Assistant`], else
    /// empty).
    pub assistant_prefix: String,
    /// Passages (non-empty ones) that made it into the context block.
    pub passages_used: usize,
}

impl PromptTemplate {
    /// A short stable hash of the template (sha256 of its JSON, first 16 hex digits), for
    /// reader identities.
    pub fn fingerprint(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        crate::sha256_hex(json.as_bytes())[..16].to_string()
    }

    /// Renders the prompt for `question`, `options` and `passages` (used as given: callers
    /// truncate first). Empty or whitespace-only passages are skipped and not numbered.
    ///
    /// Options beyond 26 have no letter; callers validate first
    /// ([`crate::ReaderInput::validate`]).
    pub fn render<S: AsRef<str>>(
        &self,
        question: &str,
        options: &[String],
        passages: &[S],
    ) -> RenderedPrompt {
        self.render_inner(question, Some(options), passages)
    }

    /// Renders the cloze form (lm-evaluation-harness's SciQ / MMLU-cloze shape): the same
    /// layout without the instruction and without the option lines, so the cue is followed
    /// directly by an option's text.
    pub fn render_cloze<S: AsRef<str>>(&self, question: &str, passages: &[S]) -> RenderedPrompt {
        self.render_inner(question, None, passages)
    }

    fn render_inner<S: AsRef<str>>(
        &self,
        question: &str,
        options: Option<&[String]>,
        passages: &[S],
    ) -> RenderedPrompt {
        let mut user = String::new();
        if !self.instruction.is_empty() && options.is_some() {
            user.push_str(&self.instruction);
            user.push_str("\n\n");
        }
        let used: Vec<&str> = passages
            .iter()
            .map(|p| p.as_ref())
            .filter(|p| !p.trim().is_empty())
            .collect();
        if !used.is_empty() {
            user.push_str(&self.context_header);
            user.push('\n');
            for (i, p) in used.iter().enumerate() {
                let line = self
                    .passage
                    .replace("{n}", &(i + 1).to_string())
                    .replace("{text}", p.trim());
                user.push_str(&line);
                user.push('\n');
            }
            user.push('\n');
        }
        user.push_str(&self.question.replace("{question}", question.trim()));
        for (i, o) in options
            .unwrap_or_default()
            .iter()
            .enumerate()
            .take(crate::MAX_OPTIONS)
        {
            user.push('\n');
            let line = self
                .option
                .replace("{letter}", &crate::letter(i).to_string())
                .replace("{text}", o.trim());
            user.push_str(line.trim_end());
        }
        let assistant_prefix = match self.cue_placement {
            CuePlacement::User => {
                if !self.answer_cue.is_empty() {
                    user.push('\n');
                    user.push_str(&self.answer_cue);
                }
                String::new()
            }
            CuePlacement::Assistant => self.answer_cue.clone(),
        };
        RenderedPrompt {
            system: self.system.clone(),
            user,
            assistant_prefix,
            passages_used: used.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn layout_with_context() {
        let t = PromptTemplate::default();
        let r = t.render(
            "Which valve was replaced?",
            &opts(&["V1", "V2", "V3", "V4"]),
            &["Valve V2 was replaced in March.", "  ", "Pumps hum."],
        );
        assert_eq!(
            r.user,
            "Answer the multiple-choice question. Reply with the letter of the correct option \
             only.\n\nContext:\n[1] Valve V2 was replaced in March.\n[2] Pumps hum.\n\n\
             Question: Which valve was replaced?\nA. V1\nB. V2\nC. V3\nD. V4"
        );
        assert_eq!(r.assistant_prefix, "Answer:");
        assert_eq!(r.passages_used, 2);
    }

    #[test]
    fn cloze_form_has_no_options_or_instruction() {
        let t = PromptTemplate::default();
        let r = t.render_cloze("Which valve was replaced?", &["Valve V2 was replaced."]);
        assert_eq!(
            r.user,
            "Context:\n[1] Valve V2 was replaced.\n\nQuestion: Which valve was replaced?"
        );
        assert_eq!(r.assistant_prefix, "Answer:");
    }

    #[test]
    fn case29_empty_context_is_closed_book() {
        let t = PromptTemplate::default();
        let o = opts(&["V1", "V2", "V3", "V4"]);
        let none: [&str; 0] = [];
        let a = t.render("Which valve was replaced?", &o, &none);
        let b = t.render("Which valve was replaced?", &o, &[""]);
        assert_eq!(a, b);
        assert!(!a.user.contains("Context:"));
        assert_eq!(a.passages_used, 0);
    }

    #[test]
    fn case33_six_options_and_empty_option() {
        let t = PromptTemplate {
            cue_placement: CuePlacement::User,
            instruction: String::new(),
            ..Default::default()
        };
        let none: [&str; 0] = [];
        let r = t.render(
            "Pick the prime.",
            &opts(&["4", "6", "7", "8", "9", "10"]),
            &none,
        );
        assert!(r.user.ends_with("E. 9\nF. 10\nAnswer:"));
        let r = t.render("Pick the vowel.", &opts(&["b", "", "e", "k"]), &none);
        assert_eq!(
            r.user,
            "Question: Pick the vowel.\nA. b\nB.\nC. e\nD. k\nAnswer:"
        );
        assert_eq!(r.assistant_prefix, "");
    }
}
