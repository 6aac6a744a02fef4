//! `protocol: openai` — OpenAI's Chat Completions API (`POST {base_url}/chat/completions`),
//! which vLLM, llama.cpp's servers, Ollama (`/v1`), TGI and OpenAI serve.
//!
//! **Request** (OpenAI API reference, "Create chat completion"): `model`, `messages` (the
//! request's (role, content) pairs as `{"role", "content"}` objects), `temperature: 0`,
//! `max_tokens`, `seed`, and `response_format` when given — its JSON *text* appended byte
//! for byte, so that a schema's property order (which llama.cpp's grammar follows) is kept
//! (`{"type": "json_object", "schema": …}` for llama.cpp's Python server,
//! `{"type": "json_schema", …}` for OpenAI and vLLM). Log-probs are never asked for.
//!
//! **Reply**: `choices[0].message.content` (empty when `null`), `choices[0].finish_reason`
//! (`stop`, `length`, …), `usage.prompt_tokens` / `usage.completion_tokens` when reported.

use super::{ChatProtocol, ChatRequest, Generation, Usage};
use crate::ReaderError;

/// OpenAI's Chat Completions API (module docs).
#[derive(Debug, Clone, Copy)]
pub struct OpenAiChat;

impl ChatProtocol for OpenAiChat {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn summary(&self) -> &'static str {
        "OpenAI Chat Completions (`POST /chat/completions`): vLLM, llama.cpp, Ollama's /v1, TGI, OpenAI"
    }

    fn endpoint(&self) -> &'static str {
        "chat/completions"
    }

    fn identity_tag(&self) -> &'static str {
        "openai-generate-v1"
    }

    fn payload(
        &self,
        model: &str,
        seed: Option<u64>,
        req: &ChatRequest,
    ) -> Result<Vec<u8>, ReaderError> {
        let msgs: Vec<serde_json::Value> = req
            .messages
            .iter()
            .map(|(role, content)| serde_json::json!({"role": role, "content": content}))
            .collect();
        let mut b = serde_json::json!({
            "model": model,
            "messages": msgs,
            "temperature": 0,
            "max_tokens": req.max_tokens,
        });
        if let Some(seed) = seed {
            b["seed"] = seed.into();
        }
        let mut bytes = serde_json::to_vec(&b).map_err(|e| ReaderError::Protocol(e.to_string()))?;
        if let Some(f) = &req.response_format {
            serde_json::from_str::<serde_json::Value>(f).map_err(|e| {
                ReaderError::Config(format!("response_format is not JSON ({e}): {f}"))
            })?;
            bytes.pop(); // the object's closing brace
            bytes.extend_from_slice(b",\"response_format\":");
            bytes.extend_from_slice(f.as_bytes());
            bytes.push(b'}');
        }
        Ok(bytes)
    }

    fn parse(&self, v: &serde_json::Value, raw: &str) -> Result<Generation, String> {
        let choice = v.get("choices").and_then(|c| c.get(0)).ok_or_else(|| {
            format!(
                "no `choices[0]` in the reply: {}",
                httpio::quote_body(raw, 200)
            )
        })?;
        let message = choice.get("message").ok_or_else(|| {
            format!(
                "no `choices[0].message` in the reply: {}",
                httpio::quote_body(raw, 200)
            )
        })?;
        let text =
            |x: Option<&serde_json::Value>| x.and_then(|c| c.as_str()).unwrap_or("").to_string();
        Ok(Generation {
            text: text(message.get("content")),
            finish_reason: text(choice.get("finish_reason")),
            usage: v.get("usage").and_then(|u| {
                Some(Usage {
                    prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
                    completion_tokens: u.get("completion_tokens")?.as_u64()?,
                })
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_appends_the_response_format_as_given() {
        let req = ChatRequest {
            messages: vec![("user".into(), "q".into())],
            max_tokens: 5,
            response_format: Some(r#"{"type":"json_object","schema":{"b":1,"a":2}}"#.into()),
        };
        let body = String::from_utf8(OpenAiChat.payload("m", Some(3), &req).unwrap()).unwrap();
        assert!(
            body.ends_with(r#","response_format":{"type":"json_object","schema":{"b":1,"a":2}}}"#),
            "{body}"
        );
        assert!(body.contains(r#""seed":3"#) && body.contains(r#""temperature":0"#));
        let bad = ChatRequest {
            response_format: Some("{".into()),
            ..req
        };
        assert!(OpenAiChat.payload("m", None, &bad).is_err());
    }

    #[test]
    fn parse_reads_content_finish_and_usage() {
        let raw = r#"{"choices":[{"message":{"content":null},"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}"#;
        let g = OpenAiChat
            .parse(&serde_json::from_str(raw).unwrap(), raw)
            .unwrap();
        assert_eq!(g.text, "");
        assert_eq!(g.finish_reason, "length");
        assert_eq!(g.usage.unwrap().completion_tokens, 2);
        let raw = r#"{"choices":[]}"#;
        let e = OpenAiChat
            .parse(&serde_json::from_str(raw).unwrap(), raw)
            .unwrap_err();
        assert!(e.contains("choices[0]"), "{e}");
    }
}
