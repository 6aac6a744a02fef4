//! Chat templates: the Jinja template stored in a GGUF (`tokenizer.chat_template`), rendered
//! with `minijinja` (plus `minijinja-contrib`'s Python-compatible string, list and dict
//! methods), and the built-in ChatML and plain formats.
//!
//! Rendering follows Hugging Face `apply_chat_template` (transformers): the environment has
//! `trim_blocks` and `lstrip_blocks` on and loop controls (`break`, `continue`) enabled; the
//! variables are `messages` (a list of `{role, content}` maps), `tools` and `documents` (both
//! none), `add_generation_prompt`, `bos_token` and `eos_token`; the functions are
//! `raise_exception(msg)` (the template's own error, returned as
//! [`crate::ReaderError::Template`] with that message) and `strftime_now(format)`.
//!
//! **`strftime_now` is pinned to [`STRFTIME_DATE`]** (2026-01-15), not the wall clock:
//! templates such as Llama 3.2's print "Today Date: …" into the system header, and a prompt
//! that changed with the day a run happens would change the reader's answers and its cache
//! keys. The supported directives are `%d %e %m %y %Y %b %B %a %A %j %H %M %S %%`.
//!
//! Tested against Python `jinja2` 3.1.6 renderings of the Llama 3.1/3.2, Qwen2.5, Mistral
//! Nemo, Gemma 2 and SmolLM2 templates (`tests/chat_templates.rs`, goldens made by
//! `scripts/chat_template_goldens.sh`).

use crate::ReaderError;
use minijinja::{Environment, Error, ErrorKind, Value};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Message text.
    pub content: String,
}

impl ChatMessage {
    /// A message with `role` and `content`.
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.to_string(),
            content: content.into(),
        }
    }
}

/// The ChatML template (`<|im_start|>role\ncontent<|im_end|>\n`), as used by SmolLM2 and
/// Qwen2 without their default system prompts.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/// The date `strftime_now` formats: (year, month, day, weekday with Monday = 0, day of year).
/// 2026-01-15 is a Thursday, day 15 of its year; the time is 00:00:00.
pub const STRFTIME_DATE: (i32, u32, u32, u32, u32) = (2026, 1, 15, 3, 15);

/// A chat template.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    kind: Kind,
    source: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Jinja,
    Plain,
}

/// The environment every template renders in (see the module docs).
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    minijinja_contrib::add_to_environment(&mut env);
    env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_function("strftime_now", |format: String| -> Result<String, Error> {
        strftime_fixed(&format).map_err(|d| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("strftime_now: unsupported directive `%{d}`"),
            )
        })
    });
    env
}

/// Formats [`STRFTIME_DATE`] with `format` (Python `strftime` directives, C locale); the
/// unsupported directive's character is the error.
fn strftime_fixed(format: &str) -> Result<String, char> {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let (y, m, d, wd, yd) = STRFTIME_DATE;
    let (month, day) = (MONTHS[m as usize - 1], DAYS[wd as usize]);
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('e') => out.push_str(&format!("{d:>2}")),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('y') => out.push_str(&format!("{:02}", y % 100)),
            Some('Y') => out.push_str(&y.to_string()),
            Some('b') => out.push_str(&month[..3]),
            Some('B') => out.push_str(month),
            Some('a') => out.push_str(&day[..3]),
            Some('A') => out.push_str(day),
            Some('j') => out.push_str(&format!("{yd:03}")),
            Some('H' | 'M' | 'S') => out.push_str("00"),
            Some('%') => out.push('%'),
            Some(other) => return Err(other),
            None => return Err('\0'),
        }
    }
    Ok(out)
}

/// The message of a minijinja error with its template line: the template's own
/// `raise_exception` message as it is, anything else prefixed by minijinja's error kind
/// (e.g. "syntax error: unexpected end of input, expected end of block (template line 1)").
fn template_error(e: &Error) -> ReaderError {
    let at = e
        .line()
        .map_or(String::new(), |l| format!(" (template line {l})"));
    let msg = match (e.kind(), e.detail()) {
        (ErrorKind::InvalidOperation, Some(detail)) => detail.to_string(),
        (kind, Some(detail)) => format!("{kind}: {detail}"),
        (kind, None) => kind.to_string(),
    };
    ReaderError::Template(format!("{msg}{at}"))
}

impl ChatTemplate {
    /// Parses a Jinja chat template (the whole template is compiled, so a syntax error is
    /// reported here, with its line).
    ///
    /// # Errors
    /// [`ReaderError::Template`] for syntax errors (unbalanced blocks, unterminated tags).
    pub fn from_jinja(source: &str) -> Result<Self, ReaderError> {
        let env = environment();
        env.template_from_str(source)
            .map_err(|e| template_error(&e))?;
        Ok(ChatTemplate {
            kind: Kind::Jinja,
            source: source.to_string(),
        })
    }

    /// The built-in ChatML template ([`CHATML_TEMPLATE`]).
    pub fn chatml() -> Self {
        Self::from_jinja(CHATML_TEMPLATE).expect("built-in ChatML template parses")
    }

    /// A plain template without chat markup: each message's content followed by a blank line
    /// (`"{system}\n\n{user}\n"`; the assistant text follows directly). With
    /// [`crate::CuePlacement::Assistant`] this yields lm-evaluation-harness's plain MMLU shape,
    /// `"...\nD. text\nAnswer:"`.
    pub fn plain() -> Self {
        ChatTemplate {
            kind: Kind::Plain,
            source: "plain".into(),
        }
    }

    /// The template source (`"plain"` for [`ChatTemplate::plain`]).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders `messages` (with the generation prompt when `add_generation_prompt`).
    ///
    /// # Errors
    /// [`ReaderError::Template`]: the message of the template's `raise_exception` (e.g.
    /// Gemma's "System role not supported"), or minijinja's error naming the failing
    /// construct and its line.
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
        bos_token: &str,
        eos_token: &str,
    ) -> Result<String, ReaderError> {
        if self.kind == Kind::Plain {
            let mut out = String::new();
            for (i, m) in messages.iter().enumerate() {
                out.push_str(&m.content);
                out.push_str(if i + 1 < messages.len() { "\n\n" } else { "\n" });
            }
            return Ok(out);
        }
        let env = environment();
        let ctx = minijinja::context! {
            messages => messages,
            tools => Value::from(()),
            documents => Value::from(()),
            add_generation_prompt => add_generation_prompt,
            bos_token => bos_token,
            eos_token => eos_token,
        };
        env.render_str(&self.source, ctx)
            .map_err(|e| template_error(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(s: &str) -> Vec<ChatMessage> {
        vec![ChatMessage::new("user", s)]
    }

    #[test]
    fn chatml_and_plain() {
        let out = ChatTemplate::chatml()
            .render(&user("Q?"), true, "", "")
            .unwrap();
        assert_eq!(
            out,
            "<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n"
        );
        let msgs = vec![
            ChatMessage::new("system", "S"),
            ChatMessage::new("user", "U"),
        ];
        assert_eq!(
            ChatTemplate::plain().render(&msgs, true, "", "").unwrap(),
            "S\n\nU\n"
        );
    }

    #[test]
    fn whitespace_control_and_trim_blocks() {
        let t = ChatTemplate::from_jinja("a\n  {% if true %}\nb\n  {%- endif %}  \n{# c #}\nd")
            .unwrap();
        assert_eq!(t.render(&[], false, "", "").unwrap(), "a\nb  \nd");
    }

    #[test]
    fn raise_exception_is_the_error_message() {
        let t = ChatTemplate::from_jinja(
            "{% if messages[0].role == 'system' %}{{ raise_exception('No system role') }}{% endif %}",
        )
        .unwrap();
        let msgs = [ChatMessage::new("system", "S")];
        let e = t.render(&msgs, false, "", "").unwrap_err().to_string();
        assert!(e.contains("No system role"), "{e}");
    }

    #[test]
    fn syntax_errors_fail_at_parse_with_a_line() {
        for bad in ["{% if x %}no end", "{{ unterminated", "{% endfor %}"] {
            let e = ChatTemplate::from_jinja(bad).unwrap_err().to_string();
            assert!(e.contains("line"), "{bad}: {e}");
        }
    }

    #[test]
    fn strftime_now_is_pinned() {
        assert_eq!(strftime_fixed("%d %b %Y").unwrap(), "15 Jan 2026");
        assert_eq!(
            strftime_fixed("%A %B %e, %y (%j) %%").unwrap(),
            "Thursday January 15, 26 (015) %"
        );
        assert_eq!(strftime_fixed("%Q"), Err('Q'));
        let t = ChatTemplate::from_jinja("{{ strftime_now('%Q') }}").unwrap();
        let e = t.render(&[], false, "", "").unwrap_err().to_string();
        assert!(e.contains("unsupported directive `%Q`"), "{e}");
    }

    #[test]
    /// Booleans print as Python prints them (`True`), as jinja2 does.
    fn python_methods_and_expressions() {
        let t = ChatTemplate::from_jinja(
            "{{ messages|length }} {{ messages[-1].content[1:3] }} {{ 'x' in 'axb' }} \
             {{ 7 // 2 }} {{ none is none }} {{ foo is defined }} {{ [1, 2]|join('-') }} \
             {{ 'a' if false else 'b' }} {{ ' s '.strip() ~ 1 }} {{ {'k': 'v'}['k'] }} \
             {{ 'abc'.startswith('a') }} {% for k, v in {'a': 1}.items() %}{{ k }}{{ v }}{% endfor %}",
        )
        .unwrap();
        assert_eq!(
            t.render(&user("hello"), false, "", "").unwrap(),
            "1 el True 3 True False 1-2 b s1 v True a1"
        );
    }
}
