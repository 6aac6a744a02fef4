//! Chat templates rendered by `reader::ChatTemplate` (minijinja) against Python jinja2 3.1.6's
//! renderings, made the way transformers' `apply_chat_template` renders
//! (`scripts/chat_template_goldens.sh`; sources of the templates in
//! `tests/data/chat_templates/SOURCES.md`): Llama 3.1 and 3.2, Qwen2.5, Mistral Nemo, Gemma 2,
//! SmolLM2 and ChatML, over nine conversations with and without the generation prompt,
//! including the templates' own errors (Gemma's "System role not supported", role
//! alternation).

use reader::{ChatMessage, ChatTemplate};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Deserialize)]
struct Goldens {
    generator: BTreeMap<String, serde_json::Value>,
    templates: BTreeMap<String, TemplateInfo>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct TemplateInfo {
    file: String,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct Case {
    template: String,
    conversation: String,
    messages: Vec<Message>,
    add_generation_prompt: bool,
    expected: Option<String>,
    error: Option<String>,
}

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/chat_templates")
}

#[test]
fn templates_render_as_jinja2() {
    let g: Goldens =
        serde_json::from_slice(&std::fs::read(data().join("cases.json")).unwrap()).unwrap();
    assert_eq!(
        g.generator["strftime_date"], "2026-01-15",
        "pinned date of strftime_now"
    );
    let mut templates = BTreeMap::new();
    for (name, t) in &g.templates {
        let src = std::fs::read_to_string(data().join(&t.file)).unwrap();
        let parsed = ChatTemplate::from_jinja(&src)
            .unwrap_or_else(|e| panic!("{name}: does not parse: {e}"));
        templates.insert(name.clone(), (parsed, t));
    }
    for required in [
        "llama-3.1-8b-instruct",
        "llama-3.2-3b-instruct",
        "qwen2.5-7b-instruct",
        "mistral-nemo-instruct-2407",
        "gemma-2-2b-it",
        "smollm2-135m-instruct",
    ] {
        assert!(
            templates.contains_key(required),
            "{required} missing from the goldens"
        );
    }
    let (mut rendered, mut errors, mut failures) = (0, 0, Vec::new());
    for c in &g.cases {
        let (t, info) = &templates[&c.template];
        let msgs: Vec<ChatMessage> = c
            .messages
            .iter()
            .map(|m| ChatMessage::new(&m.role, m.content.clone()))
            .collect();
        let got = t.render(
            &msgs,
            c.add_generation_prompt,
            info.bos_token.as_deref().unwrap_or(""),
            info.eos_token.as_deref().unwrap_or(""),
        );
        let label = format!(
            "{} / {} / add_generation_prompt={}",
            c.template, c.conversation, c.add_generation_prompt
        );
        match (&c.expected, &c.error, got) {
            (Some(want), _, Ok(out)) if &out == want => rendered += 1,
            (Some(want), _, Ok(out)) => {
                failures.push(format!("{label}: differs\n  want {want:?}\n  got  {out:?}"))
            }
            (Some(_), _, Err(e)) => failures.push(format!("{label}: error {e}")),
            (None, Some(want), Err(e)) if e.to_string().contains(want.as_str()) => errors += 1,
            (None, Some(want), Err(e)) => {
                failures.push(format!("{label}: error {e}, want one containing {want:?}"))
            }
            (None, Some(want), Ok(out)) => {
                failures.push(format!("{label}: rendered {out:?}, want error {want:?}"))
            }
            (None, None, _) => failures.push(format!("{label}: case has no expectation")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        g.cases.len(),
        failures.join("\n")
    );
    assert_eq!(rendered + errors, g.cases.len());
    assert!(
        rendered >= 150 && errors >= 20,
        "rendered {rendered}, errors {errors}"
    );
}
