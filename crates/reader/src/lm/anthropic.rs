//! `protocol: anthropic` — Anthropic's Messages API (`POST {base_url}/messages`), served by
//! Anthropic (`https://api.anthropic.com/v1`) and by llama.cpp's `llama-server`
//! (`/v1/messages`), among others.
//!
//! **Request** (Anthropic API reference, "Messages", version `2023-06-01`): headers
//! `anthropic-version: 2023-06-01` and, when a key is configured, `x-api-key: KEY` (not
//! `Authorization`); body `model`, `max_tokens`, `temperature: 0`, `system` (the request's
//! `system` messages joined by a blank line; the API has no system role inside `messages`)
//! and `messages` (the `user` and `assistant` turns as `{"role", "content"}` with string
//! content). The API has no sampling seed (the identity records `seed=none`) and no
//! `response_format`: a request with one is refused before anything is sent.
//!
//! **Reply**: the text is the concatenation of the `content` blocks of `type: "text"`;
//! `stop_reason` is mapped onto the seam's words — `end_turn` and `stop_sequence` → `stop`,
//! `max_tokens` → `length` (so a cut reply is judged as on every other protocol), anything
//! else kept as sent; usage is `input_tokens` (plus `cache_creation_input_tokens` and
//! `cache_read_input_tokens` when present: together, the prompt) and `output_tokens`.

use super::{ChatProtocol, ChatRequest, Generation, Usage};
use crate::ReaderError;

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic's Messages API (module docs).
#[derive(Debug, Clone, Copy)]
pub struct AnthropicMessages;

impl ChatProtocol for AnthropicMessages {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn summary(&self) -> &'static str {
        "Anthropic Messages (`POST /messages`, `x-api-key`, `anthropic-version: 2023-06-01`): Anthropic, llama.cpp's llama-server"
    }

    fn endpoint(&self) -> &'static str {
        "messages"
    }

    fn identity_tag(&self) -> &'static str {
        "anthropic-messages-v1"
    }

    fn key_header(&self) -> Option<&'static str> {
        Some("x-api-key")
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", ANTHROPIC_VERSION)]
    }

    fn sends_seed(&self) -> bool {
        false
    }

    fn takes_response_format(&self) -> bool {
        false
    }

    fn probes_the_model(&self) -> bool {
        true
    }

    fn payload(
        &self,
        model: &str,
        _seed: Option<u64>,
        req: &ChatRequest,
    ) -> Result<Vec<u8>, ReaderError> {
        if req.response_format.is_some() {
            return Err(ReaderError::Config(
                "protocol `anthropic` has no response_format: the prompt alone must ask for \
                 JSON (give `--response-format none`)"
                    .into(),
            ));
        }
        let mut system: Vec<&str> = Vec::new();
        let mut turns = Vec::new();
        for (role, content) in &req.messages {
            match role.as_str() {
                "system" => system.push(content),
                "user" | "assistant" => {
                    turns.push(serde_json::json!({"role": role, "content": content}))
                }
                other => {
                    return Err(ReaderError::Config(format!(
                        "protocol `anthropic`: a message of role `{other}`; the Messages API \
                         takes `system`, `user` and `assistant`"
                    )))
                }
            }
        }
        if turns.is_empty() {
            return Err(ReaderError::Config(
                "protocol `anthropic`: a request with no user message".into(),
            ));
        }
        let mut b = serde_json::json!({
            "model": model,
            "max_tokens": req.max_tokens,
            "temperature": 0,
            "messages": turns,
        });
        if !system.is_empty() {
            b["system"] = system.join("\n\n").into();
        }
        serde_json::to_vec(&b).map_err(|e| ReaderError::Protocol(e.to_string()))
    }

    fn parse(&self, v: &serde_json::Value, raw: &str) -> Result<Generation, String> {
        let blocks = v.get("content").and_then(|c| c.as_array()).ok_or_else(|| {
            format!(
                "no `content` list in the reply: {}",
                httpio::quote_body(raw, 200)
            )
        })?;
        let text: String = blocks
            .iter()
            .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect();
        let stop = v.get("stop_reason").and_then(|s| s.as_str()).unwrap_or("");
        let finish_reason = match stop {
            "end_turn" | "stop_sequence" => "stop",
            "max_tokens" => "length",
            other => other,
        };
        let usage = v.get("usage").and_then(|u| {
            let n = |k: &str| u.get(k).and_then(|x| x.as_u64());
            Some(Usage {
                prompt_tokens: n("input_tokens")?
                    + n("cache_creation_input_tokens").unwrap_or(0)
                    + n("cache_read_input_tokens").unwrap_or(0),
                completion_tokens: n("output_tokens")?,
            })
        });
        Ok(Generation {
            text,
            finish_reason: finish_reason.to_string(),
            usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(messages: &[(&str, &str)]) -> ChatRequest {
        ChatRequest::new(
            messages
                .iter()
                .map(|(r, c)| (r.to_string(), c.to_string()))
                .collect(),
            9,
        )
    }

    #[test]
    fn system_messages_go_to_the_top_level_field() {
        let body = AnthropicMessages
            .payload(
                "m",
                Some(1),
                &req(&[
                    ("system", "be brief"),
                    ("user", "q"),
                    ("assistant", "a"),
                    ("user", "again"),
                ]),
            )
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["system"], "be brief");
        assert_eq!(v["messages"].as_array().unwrap().len(), 3);
        assert_eq!(v["messages"][0]["role"], "user");
        assert_eq!(v["max_tokens"], 9);
        assert!(v.get("seed").is_none(), "the Messages API has no seed");
    }

    #[test]
    fn what_the_api_cannot_express_is_refused() {
        let mut r = req(&[("user", "q")]);
        r.response_format = Some("{}".into());
        assert!(AnthropicMessages.payload("m", None, &r).is_err());
        assert!(AnthropicMessages
            .payload("m", None, &req(&[("tool", "x")]))
            .is_err());
        assert!(AnthropicMessages
            .payload("m", None, &req(&[("system", "only")]))
            .is_err());
    }

    #[test]
    fn reply_text_stop_reason_and_usage() {
        let raw = r#"{"type":"message","content":[{"type":"text","text":"Hel"},{"type":"thinking","thinking":"x"},{"type":"text","text":"lo"}],"stop_reason":"max_tokens","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3}}"#;
        let g = AnthropicMessages
            .parse(&serde_json::from_str(raw).unwrap(), raw)
            .unwrap();
        assert_eq!(g.text, "Hello");
        assert_eq!(g.finish_reason, "length");
        assert_eq!(
            g.usage,
            Some(Usage {
                prompt_tokens: 15,
                completion_tokens: 3
            })
        );
        let raw = r#"{"choices":[{"message":{"content":"x"}}]}"#;
        let e = AnthropicMessages
            .parse(&serde_json::from_str(raw).unwrap(), raw)
            .unwrap_err();
        assert!(e.contains("no `content` list"), "{e}");
    }
}
