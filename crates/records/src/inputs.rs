//! Content identities of what a cell reads besides its configuration.
//!
//! A cell's id ([`crate::config::Cell::id`]) hashes its resolved configuration: what the user
//! asked for. What it was computed *on* is recorded beside it as [`CellInputs`], a map from an
//! input's name to a digest of its content:
//!
//! | name | digest |
//! |---|---|
//! | `dataset/documents.jsonl`, `dataset/questions.jsonl` | sha256 of the file (checked against the dataset manifest at load) |
//! | `embedder/FILE` (config.json, tokenizer.json, model.safetensors, the sentence-transformers files) | sha256 of each file the embedder reads, for cells whose strategy or retriever embeds |
//! | `embedder/server` | an embedding server's identity: wire format, endpoint, model name, dimension and the fingerprint of its answer to a fixed probe text (`embed::HttpEmbedder::connect`), for cells whose strategy or retriever embeds through a server |
//! | `strategy/tokenizer` | sha256 of the tokenizer.json a `unit: tokens` strategy counts with |
//! | `reader/model` | sha256 of a local reader's GGUF file |
//! | `reader/server` | a server reader's identity: base URL, model, prompt and parameters, and the model ids the server reports (`GET /models`) |
//! | `cost/tokenizer` | sha256 of the tokenizer.json that counts tokens retrieved (readers without a tokenizer of their own) |
//!
//! A finished cell is reused only when its stored inputs equal the current ones (and its code
//! version and configuration do); otherwise it is recomputed and the run names the inputs that
//! changed ([`changed`]). Large files are hashed once per content ([`datasets::filehash`]).

use std::collections::BTreeMap;

/// Input name → content digest (see the module documentation for the names).
pub type CellInputs = BTreeMap<String, String>;

/// Human-readable differences between the inputs a cell was computed on (`old`) and the
/// current ones (`new`): `"embedder/tokenizer.json changed (sha256 1a2b3c4d… → 5e6f7a8b…)"`,
/// `"… is a new input"`, `"… is no longer an input"`; empty when equal.
pub fn changed(old: &CellInputs, new: &CellInputs) -> Vec<String> {
    let short = |s: &str| {
        if s.len() > 12 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            format!("sha256 {}…", &s[..12])
        } else {
            format!("{s:?}")
        }
    };
    let mut out = Vec::new();
    for (k, v) in new {
        match old.get(k) {
            None => out.push(format!("{k} is a new input")),
            Some(o) if o != v => out.push(format!("{k} changed ({} → {})", short(o), short(v))),
            _ => {}
        }
    }
    for k in old.keys().filter(|k| !new.contains_key(*k)) {
        out.push(format!("{k} is no longer an input"));
    }
    out
}
