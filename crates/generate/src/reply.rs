//! The model's reply read as a candidate question.
//!
//! **Rule** ([`parse_reply`]). The reply's text (the first Markdown code fence's content when
//! it has one) must hold a JSON object: the first complete JSON value starting at its first
//! `{` is parsed, and text before or after it is ignored (models often add a sentence). A
//! reply whose JSON starts as a list (`[` before any `{`) is malformed. Replies over
//! [`MAX_REPLY_BYTES`] are malformed. Fields: `question` (a non-empty string),
//! `excerpts` (a non-empty list of non-empty strings; a single string is read as a list of
//! one), `answer` (a non-empty string) and, for multiple choice, `distractors` (a list of
//! strings). Anything else — prose, a list, a missing or mistyped field, a reply cut at
//! `max_tokens` before its JSON closed — is malformed, with the reason in words. Unknown
//! fields are ignored.

use serde_json::Value;

/// A reply's fields, before any check against the text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Draft {
    /// The question.
    pub question: String,
    /// The excerpts as the model wrote them.
    pub excerpts: Vec<String>,
    /// The short answer.
    pub answer: String,
    /// Wrong options (multiple choice only; empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub distractors: Vec<String>,
}

/// Longer replies are malformed (a reply of a few hundred tokens is a few kilobytes).
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// The content of the first fenced code block, else the whole text.
fn strip_fence(t: &str) -> &str {
    let t = t.trim();
    let Some(open) = t.find("```") else {
        return t;
    };
    // Drop the info string (```json) up to the end of its line; up to the closing fence.
    let Some((_, body)) = t[open + 3..].split_once('\n') else {
        return t;
    };
    match body.find("```") {
        Some(close) => body[..close].trim(),
        None => body.trim(),
    }
}

/// Parses a reply (module docs). `cut` is true when the server stopped at `max_tokens`.
///
/// # Errors
/// Why the reply is malformed, in words (shown in the generated set's report).
pub fn parse_reply(text: &str, cut: bool, mcq: bool) -> Result<Draft, String> {
    if text.len() > MAX_REPLY_BYTES {
        return Err(format!(
            "a reply of {} bytes (at most {MAX_REPLY_BYTES})",
            text.len()
        ));
    }
    let t = strip_fence(text);
    let cut_note = if cut {
        " (the reply was cut at max_tokens)"
    } else {
        ""
    };
    let Some(a) = t.find('{') else {
        return Err(format!("no JSON object in the reply{cut_note}"));
    };
    if t.find('[').is_some_and(|l| l < a) && t.trim_start().starts_with('[') {
        return Err("the reply is a JSON list, not an object".into());
    }
    let v: Value = serde_json::Deserializer::from_str(&t[a..])
        .into_iter::<Value>()
        .next()
        .ok_or_else(|| format!("no JSON object in the reply{cut_note}"))?
        .map_err(|e| format!("the reply's JSON does not parse: {e}{cut_note}"))?;
    let Value::Object(o) = v else {
        return Err("the reply is not a JSON object".into());
    };
    let string = |k: &str| -> Result<String, String> {
        match o.get(k) {
            None | Some(Value::Null) => Err(format!("no `{k}` field")),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(Value::String(_)) => Err(format!("`{k}` is empty")),
            Some(_) => Err(format!("`{k}` is not a string")),
        }
    };
    let list = |k: &str| -> Result<Vec<String>, String> {
        match o.get(k) {
            None | Some(Value::Null) => Err(format!("no `{k}` field")),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| match x {
                    Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                    Value::String(_) => Err(format!("an empty string in `{k}`")),
                    _ => Err(format!("`{k}` holds something other than strings")),
                })
                .collect::<Result<Vec<_>, _>>()
                .and_then(|v| {
                    if v.is_empty() {
                        Err(format!("`{k}` is empty"))
                    } else {
                        Ok(v)
                    }
                }),
            Some(_) => Err(format!("`{k}` is not a list of strings")),
        }
    };
    Ok(Draft {
        question: string("question")?,
        excerpts: list("excerpts")?,
        answer: string("answer")?,
        distractors: if mcq {
            list("distractors")?
        } else {
            Vec::new()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies() {
        let ok = r#"Sure! ```json
{"question": "What is rust?", "excerpts": ["Rust is iron oxide."], "answer": "iron oxide"}
```"#;
        let d = parse_reply(ok, false, false).unwrap();
        assert_eq!(d.question, "What is rust?");
        assert_eq!(d.excerpts, vec!["Rust is iron oxide."]);
        let one = r#"{"question": "Q?", "excerpts": "E e e.", "answer": "e"}"#;
        assert_eq!(
            parse_reply(one, false, false).unwrap().excerpts,
            vec!["E e e."]
        );
        let prose = "The passage is about rust, which is iron oxide.";
        assert_eq!(
            parse_reply(prose, false, false).unwrap_err(),
            "no JSON object in the reply"
        );
        assert!(
            parse_reply(r#"{"question": "Q?", "answer": "a"}"#, false, false)
                .unwrap_err()
                .contains("no `excerpts`")
        );
        assert!(parse_reply(
            r#"{"question": "Q?", "excerpts": [], "answer": "a"}"#,
            false,
            false
        )
        .unwrap_err()
        .contains("`excerpts` is empty"));
        assert!(parse_reply(
            r#"{"question": "Q?", "excerpts": [1], "answer": "a"}"#,
            false,
            false
        )
        .unwrap_err()
        .contains("other than strings"));
        assert!(
            parse_reply(r#"{"question": "Q?", "excerpts": ["x"#, true, false)
                .unwrap_err()
                .contains("cut at max_tokens")
        );
        assert!(parse_reply("[1, 2]", false, false).is_err());
        let list = r#"[{"question": "Q?", "excerpts": ["x y z"], "answer": "x"}]"#;
        assert!(parse_reply(list, false, false)
            .unwrap_err()
            .contains("list"));
        // Prose around a fence, and a stray brace after the object.
        let around = "Here:\n```json\n{\"question\": \"Q?\", \"excerpts\": [\"x y z\"], \"answer\": \"x\"}\n```\nHope this helps {really}.";
        assert_eq!(parse_reply(around, false, false).unwrap().answer, "x");
        let trailing = r#"{"question": "Q?", "excerpts": ["x y z"], "answer": "x"} and {more}"#;
        assert_eq!(parse_reply(trailing, false, false).unwrap().question, "Q?");
        assert!(parse_reply(&"x".repeat(MAX_REPLY_BYTES + 1), false, false)
            .unwrap_err()
            .contains("bytes"));
        let mcq = r#"{"question": "Q?", "excerpts": ["x y z"], "answer": "x"}"#;
        assert!(parse_reply(mcq, false, true)
            .unwrap_err()
            .contains("no `distractors`"));
    }
}
