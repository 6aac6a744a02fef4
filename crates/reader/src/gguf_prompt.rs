//! The scored prompt as the local reader builds it, from a GGUF's tokenizer and chat template:
//! shared by [`crate::LlmReader`] (which runs it through candle) and the completions mode of
//! [`crate::OpenAiReader`] (which sends the same token ids to a server), so both score exactly
//! the same (prompt, continuation) pairs.
//!
//! **Prompt.** [`crate::PromptTemplate::render`] (letters) or
//! [`crate::PromptTemplate::render_cloze`] (cloze), wrapped by the chat template
//! ([`ChatFormat`]) with a generation prompt, then the assistant prefix (the answer cue with
//! `cue_placement: assistant`), tokenized by the GGUF's tokenizer with a BOS when the model wants
//! one and the template did not write it.
//!
//! **Continuations** (lm-evaluation-harness `output_type: multiple_choice`): the letter
//! (`" A"` or `"A"`, [`LetterForm`]) or `" " + option text` (cloze), tokenized alone and
//! appended to the prompt's ids — the harness's `context_enc + continuation_enc`, never a joint
//! tokenization that could merge across the boundary.
//!
//! **Truncation.** When the prompt plus the longest continuation exceeds the window, passages
//! are dropped from the end (the lowest-ranked first) until the prompt fits; then the last
//! dropped passage is re-admitted cut to the largest token prefix (of the passage tokenized
//! alone, cut on a character boundary) for which the prompt still fits. The counts go to
//! [`crate::ContextUse`]. A prompt that does not fit without any passage is
//! [`ReaderError::ContextOverflow`].

use crate::chat::{ChatMessage, ChatTemplate};
use crate::gguf_tokenizer::GgufTokenizer;
use crate::prompt::PromptTemplate;
use crate::{argmax_with_ties, ContextUse, ReaderError, ReaderInput, ReaderOutput, MAX_OPTIONS};
use candle_core::quantized::gguf_file;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

/// Which chat formatting wraps the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ChatFormat {
    /// The Jinja template in the GGUF (`tokenizer.chat_template`, rendered by
    /// [`crate::chat::ChatTemplate`]); an error at load when absent, or when it cannot render a system +
    /// user conversation.
    #[default]
    Gguf,
    /// Built-in ChatML ([`crate::chat::CHATML_TEMPLATE`]).
    ChatMl,
    /// No chat markup ([`crate::chat::ChatTemplate::plain`]): lm-evaluation-harness's plain prompt.
    Plain,
}

/// How an answer letter is written as the scored continuation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LetterForm {
    /// `" A"`: a space then the letter (lm-evaluation-harness MMLU, after `"Answer:"`).
    #[default]
    Space,
    /// `"A"`: the bare letter (after a newline, e.g. at the start of the assistant turn).
    Bare,
}

/// What is scored for each option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Scoring {
    /// Lettered options in the prompt; score = log P(letter | prompt) (lm-evaluation-harness
    /// MMLU).
    #[default]
    Letters,
    /// Options not listed; score = log P(" " + option text | prompt), summed over its tokens
    /// (lm-evaluation-harness SciQ / MMLU-cloze, metric `acc`).
    Cloze,
    /// As [`Scoring::Cloze`], divided by the option text's length in characters (metric
    /// `acc_norm`).
    ClozeNorm,
}

/// A prompt ready for the model: ids, the rendered text, how passages were used, and one
/// scored continuation (token ids) per option.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Prompt token ids (BOS included when the model wants one).
    pub ids: Vec<u32>,
    /// The rendered prompt text (the response cache's material).
    pub text: String,
    /// Passage accounting (given, used, dropped, cut; prompt tokens).
    pub context: ContextUse,
    /// One continuation per option, token ids (never empty).
    pub conts: Vec<Vec<u32>>,
}

/// The prompt builder of a GGUF model (module docs).
#[derive(Debug)]
pub struct GgufPrompt {
    tok: GgufTokenizer,
    chat: ChatTemplate,
    template: PromptTemplate,
    scoring: Scoring,
    window: usize,
    letter_ids: Vec<Vec<u32>>,
}

/// Reads a GGUF file's metadata (header only, no tensor data).
///
/// # Errors
/// [`ReaderError::Model`] when the file cannot be opened or is not GGUF.
pub fn read_metadata(path: &Path) -> Result<gguf_file::Content, ReaderError> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| ReaderError::Model(format!("cannot open {}: {e}", path.display())))?;
    gguf_file::Content::read(&mut f)
        .map_err(|e| ReaderError::Model(format!("{} is not a GGUF file: {e}", path.display())))
}

/// The context length a GGUF declares (`{general.architecture}.context_length`), if any.
pub fn context_length(metadata: &HashMap<String, gguf_file::Value>) -> Option<usize> {
    let arch = metadata
        .get("general.architecture")
        .and_then(|v| v.to_string().ok())?;
    metadata
        .get(&format!("{arch}.context_length"))
        .and_then(|v| v.to_u32().ok())
        .map(|x| x as usize)
}

impl GgufPrompt {
    /// Builds the tokenizer and chat template from `metadata` for a model window of `window`
    /// tokens (prompt plus scored continuation).
    ///
    /// # Errors
    /// [`ReaderError::Tokenizer`] when the tokenizer cannot be built or a letter encodes to no
    /// tokens; [`ReaderError::Template`] when `chat: gguf` finds no template, or the template
    /// cannot render a system + user conversation (the message suggests `chat: plain`).
    pub fn from_metadata(
        metadata: &HashMap<String, gguf_file::Value>,
        template: PromptTemplate,
        chat: ChatFormat,
        scoring: Scoring,
        letters: LetterForm,
        window: usize,
    ) -> Result<Self, ReaderError> {
        let tok = GgufTokenizer::from_metadata(metadata)?;
        let chat = match chat {
            ChatFormat::Gguf => {
                let src = tok.chat_template().ok_or_else(|| {
                    ReaderError::Template(
                        "the GGUF has no tokenizer.chat_template; use `chat: chat-ml` or \
                         `chat: plain`"
                            .into(),
                    )
                })?;
                let t = ChatTemplate::from_jinja(src).map_err(|e| {
                    ReaderError::Template(format!("{e}; use `chat: chat-ml` or `chat: plain`"))
                })?;
                // Fail at load, not mid-run, when the template cannot render our shape.
                let probe = [
                    ChatMessage::new("system", "s"),
                    ChatMessage::new("user", "u"),
                ];
                t.render(&probe, true, tok.bos_token(), tok.eos_token())
                    .and_then(|_| t.render(&probe[1..], true, tok.bos_token(), tok.eos_token()))
                    .map_err(|e| {
                        ReaderError::Template(format!("{e}; use `chat: chat-ml` or `chat: plain`"))
                    })?;
                t
            }
            ChatFormat::ChatMl => ChatTemplate::chatml(),
            ChatFormat::Plain => ChatTemplate::plain(),
        };
        let letter_ids = (0..MAX_OPTIONS)
            .map(|i| {
                let l = crate::letter(i);
                let s = match letters {
                    LetterForm::Space => format!(" {l}"),
                    LetterForm::Bare => l.to_string(),
                };
                tok.encode(&s)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if letter_ids.iter().any(|l| l.is_empty()) {
            return Err(ReaderError::Tokenizer(
                "an answer letter encodes to no tokens".into(),
            ));
        }
        Ok(GgufPrompt {
            tok,
            chat,
            template,
            scoring,
            window,
            letter_ids,
        })
    }

    /// The tokenizer built from the GGUF.
    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.tok
    }

    /// The chat template in force.
    pub fn chat(&self) -> &ChatTemplate {
        &self.chat
    }

    /// The window in tokens (prompt plus scored continuation).
    pub fn window(&self) -> usize {
        self.window
    }

    /// What is scored per option.
    pub fn scoring(&self) -> Scoring {
        self.scoring
    }

    /// The token ids of each answer letter's continuation (A..Z, per [`LetterForm`]).
    pub fn letter_ids(&self) -> &[Vec<u32>] {
        &self.letter_ids
    }

    /// Renders the full prompt text (chat template + assistant cue) for `passages`; returns
    /// it with the number of passages used.
    fn render_text<S: AsRef<str>>(
        &self,
        input: &ReaderInput<'_>,
        passages: &[S],
    ) -> Result<(String, usize), ReaderError> {
        let r = match self.scoring {
            Scoring::Letters => self
                .template
                .render(input.question, input.options, passages),
            Scoring::Cloze | Scoring::ClozeNorm => {
                self.template.render_cloze(input.question, passages)
            }
        };
        let mut msgs = Vec::with_capacity(2);
        if let Some(s) = &r.system {
            msgs.push(ChatMessage::new("system", s.clone()));
        }
        msgs.push(ChatMessage::new("user", r.user));
        let mut text = self
            .chat
            .render(&msgs, true, self.tok.bos_token(), self.tok.eos_token())?;
        text.push_str(&r.assistant_prefix);
        Ok((text, r.passages_used))
    }

    /// Token ids of a rendered prompt, with a BOS when the model wants one and the template
    /// did not write it.
    fn ids(&self, text: &str) -> Result<Vec<u32>, ReaderError> {
        let mut ids = Vec::new();
        if self.tok.add_bos() && !(text.starts_with(self.tok.bos_token())) {
            ids.extend(self.tok.bos_id());
        }
        ids.extend(self.tok.encode(text)?);
        Ok(ids)
    }

    /// The scored continuation of each option: its letter, or `" " + text` for cloze.
    fn continuations(&self, input: &ReaderInput<'_>) -> Result<Vec<Vec<u32>>, ReaderError> {
        let n = input.options.len();
        match self.scoring {
            Scoring::Letters => Ok(self.letter_ids[..n].to_vec()),
            Scoring::Cloze | Scoring::ClozeNorm => input
                .options
                .iter()
                .map(|o| {
                    let ids = self.tok.encode(&format!(" {}", o.trim()))?;
                    if ids.is_empty() {
                        return Err(ReaderError::Tokenizer(format!(
                            "option {o:?} encodes to no tokens"
                        )));
                    }
                    Ok(ids)
                })
                .collect(),
        }
    }

    /// Renders and tokenizes the prompt, truncating passages by the module docs' rule.
    ///
    /// # Errors
    /// [`ReaderError::ContextOverflow`] when even the prompt without passages does not fit;
    /// tokenizer and template errors.
    pub fn prepare(&self, input: &ReaderInput<'_>) -> Result<Prepared, ReaderError> {
        let conts = self.continuations(input)?;
        let max_cont = conts.iter().map(Vec::len).max().unwrap_or(1);
        let budget = self.window.saturating_sub(max_cont);
        let passages: Vec<&str> = input
            .passages
            .iter()
            .copied()
            .filter(|p| !p.trim().is_empty())
            .collect();
        let mut context = ContextUse {
            passages_given: input.passages.len(),
            ..Default::default()
        };
        let attempt = |ps: &[Cow<'_, str>]| -> Result<(Vec<u32>, String, usize), ReaderError> {
            let (text, used) = self.render_text(input, ps)?;
            Ok((self.ids(&text)?, text, used))
        };
        let all: Vec<Cow<'_, str>> = passages.iter().map(|p| Cow::Borrowed(*p)).collect();
        let (ids, text, used) = attempt(&all)?;
        if ids.len() <= budget {
            context.passages_used = used;
            context.prompt_tokens = ids.len();
            return Ok(Prepared {
                ids,
                text,
                context,
                conts,
            });
        }
        let (ids0, _, _) = attempt(&[])?;
        if ids0.len() > budget {
            return Err(ReaderError::ContextOverflow {
                tokens: ids0.len() + max_cont,
                window: self.window,
            });
        }
        // Largest k with passages[..k] fitting (k = 0 fits, k = len does not).
        let (mut lo, mut hi) = (0usize, passages.len());
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if attempt(&all[..mid])?.0.len() <= budget {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let k = lo;
        // Cut passage k to the largest token prefix that still fits.
        let cut_src = passages[k];
        let (ptoks, offsets) = self.tok.encode_with_offsets(cut_src)?;
        let prefix = |t: usize| -> &str {
            let mut end = offsets[t - 1].1.min(cut_src.len());
            while !cut_src.is_char_boundary(end) {
                end -= 1;
            }
            &cut_src[..end]
        };
        let (mut lo_t, mut hi_t) = (0usize, ptoks.len());
        let mut best: Option<(Vec<u32>, String, usize)> = None;
        while hi_t > lo_t {
            let mid = (lo_t + hi_t).div_ceil(2);
            let mut ps: Vec<Cow<'_, str>> = all[..k].to_vec();
            ps.push(Cow::Borrowed(prefix(mid)));
            let r = attempt(&ps)?;
            if r.0.len() <= budget {
                lo_t = mid;
                best = Some(r);
            } else {
                hi_t = mid - 1;
            }
        }
        let (ids, text, used) = match best {
            Some(r) if lo_t > 0 && r.2 > k => {
                context.passage_cut = true;
                context.tokens_cut = ptoks.len() - lo_t;
                context.passages_dropped = passages.len() - k - 1;
                r
            }
            _ => {
                context.passages_dropped = passages.len() - k;
                attempt(&all[..k])?
            }
        };
        context.passages_used = used;
        context.prompt_tokens = ids.len();
        Ok(Prepared {
            ids,
            text,
            context,
            conts,
        })
    }

    /// The reader's output from per-option continuation log-likelihoods (natural log, summed
    /// over each continuation's tokens): scores divided by the option's length in characters
    /// for [`Scoring::ClozeNorm`], non-finite values mapped to `-1e30`, the choice by
    /// [`argmax_with_ties`], and `raw` = `"{label}[A=.. B=..] {extra}"` with the label `logp`,
    /// `cloze-logp` or `cloze-logp/char`.
    pub fn output(
        &self,
        options: &[String],
        mut loglik: Vec<f64>,
        context: ContextUse,
        extra: &str,
    ) -> ReaderOutput {
        if self.scoring == Scoring::ClozeNorm {
            for (s, o) in loglik.iter_mut().zip(options) {
                *s /= o.trim().chars().count().max(1) as f64;
            }
        }
        let scores: Vec<f64> = loglik
            .into_iter()
            .map(|s| if s.is_finite() { s } else { -1e30 })
            .collect();
        let keys: Vec<(f64, f64)> = scores.iter().map(|s| (*s, 0.0)).collect();
        let (choice, tied) = argmax_with_ties(&keys);
        let letters = scores
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}={:.4}", crate::letter(i), s))
            .collect::<Vec<_>>()
            .join(" ");
        let label = match self.scoring {
            Scoring::Letters => "logp",
            Scoring::Cloze => "cloze-logp",
            Scoring::ClozeNorm => "cloze-logp/char",
        };
        ReaderOutput {
            choice,
            scores,
            tied,
            raw: format!("{label}[{letters}] {extra}"),
            invalid: false,
            context,
            tie_break: Vec::new(),
        }
    }
}
