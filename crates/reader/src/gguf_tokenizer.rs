//! A `tokenizers::Tokenizer` built from a GGUF file's tokenizer metadata.
//!
//! GGUF files carry no `tokenizer.json`; llama.cpp stores the vocabulary and rules as metadata
//! (keys from the GGUF spec, ggml-org/ggml docs/gguf.md): `tokenizer.ggml.model`, `.pre`,
//! `.tokens`, `.token_type`, `.merges`, `.scores`, `.bos_token_id`, `.eos_token_id`,
//! `.unknown_token_id`, `.add_bos_token`, `.add_space_prefix`, and `tokenizer.chat_template`.
//! This module rebuilds the equivalent Hugging Face tokenizer, following llama.cpp's
//! pre-tokenizer table (llama-vocab.cpp) and transformers' GGUF converter
//! (integrations/gguf/gguf_tokenizer_mapping.py):
//!
//! - `model = "gpt2"` (byte-level BPE: SmolLM2, Qwen2, Llama 3): BPE over the listed vocab and
//!   merges, no normalizer, a pre-tokenizer chosen by `pre`:
//!   `smollm`/`starcoder`/`refact`/`command-r`/`codeshell`/`exaone`/`minerva` → individual digits
//!   then GPT-2 byte-level splitting; `default`/`gpt-2`/`gpt2`/absent → GPT-2 byte-level
//!   splitting; `llama3`/`llama-v3`/`llama-bpe`/`smaug-bpe`/`dbrx`/`falcon3`/`pixtral` → the
//!   Llama 3 split regex (with `ignore_merges`, as llama.cpp); `qwen2`/`deepseek-r1-qwen` → the
//!   Qwen2 split regex. Decoder: byte-level. Any other `pre` is an error naming it.
//! - `model = "llama"` (SentencePiece BPE: Llama 2, Mistral): BPE with byte fallback over the
//!   vocab, merges derived from the scores as transformers' `generate_merges` does, Metaspace
//!   `▁` with a prefix space on the first segment when `add_space_prefix` (default true).
//! - Tokens of type 3 (control) become special added tokens and type 4 (user-defined) plain
//!   added tokens, so `<|im_start|>` in a rendered chat template encodes as one id.
//!
//! Encoding never adds BOS/EOS (no post-processor); [`GgufTokenizer::add_bos`] says whether
//! the model expects a BOS, and the caller adds it.

use crate::ReaderError;
use candle_core::quantized::gguf_file::Value;
use std::collections::HashMap;
use std::path::Path;
use tokenizers::Tokenizer;

const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Metadata keys of the GGUF tokenizer, read by [`GgufTokenizer::from_metadata`].
pub mod keys {
    /// Tokenizer model: `gpt2` or `llama`.
    pub const MODEL: &str = "tokenizer.ggml.model";
    /// Pre-tokenizer name (llama.cpp's table).
    pub const PRE: &str = "tokenizer.ggml.pre";
    /// Token strings, by id.
    pub const TOKENS: &str = "tokenizer.ggml.tokens";
    /// Token types, by id (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte).
    pub const TOKEN_TYPE: &str = "tokenizer.ggml.token_type";
    /// BPE merges `"a b"`, by rank.
    pub const MERGES: &str = "tokenizer.ggml.merges";
    /// SentencePiece scores, by id.
    pub const SCORES: &str = "tokenizer.ggml.scores";
    /// BOS id.
    pub const BOS: &str = "tokenizer.ggml.bos_token_id";
    /// EOS id.
    pub const EOS: &str = "tokenizer.ggml.eos_token_id";
    /// Unknown-token id.
    pub const UNK: &str = "tokenizer.ggml.unknown_token_id";
    /// Whether a BOS is prepended.
    pub const ADD_BOS: &str = "tokenizer.ggml.add_bos_token";
    /// SentencePiece prefix space.
    pub const ADD_SPACE_PREFIX: &str = "tokenizer.ggml.add_space_prefix";
    /// The Jinja chat template.
    pub const CHAT_TEMPLATE: &str = "tokenizer.chat_template";
}

/// Token ids and their byte offsets `[start, end)` into the encoded text.
pub type IdsWithOffsets = (Vec<u32>, Vec<(usize, usize)>);

/// A tokenizer rebuilt from GGUF metadata, with its special tokens and chat template.
#[derive(Clone)]
pub struct GgufTokenizer {
    tokenizer: Tokenizer,
    json: String,
    model: String,
    pre: String,
    tokens: Vec<String>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    add_bos: bool,
    chat_template: Option<String>,
}

impl std::fmt::Debug for GgufTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufTokenizer")
            .field("model", &self.model)
            .field("pre", &self.pre)
            .field("vocab", &self.tokens.len())
            .field("bos_id", &self.bos_id)
            .field("eos_id", &self.eos_id)
            .field("add_bos", &self.add_bos)
            .finish()
    }
}

fn tok_err(msg: impl Into<String>) -> ReaderError {
    ReaderError::Tokenizer(msg.into())
}

fn get_str<'a>(md: &'a HashMap<String, Value>, key: &str) -> Option<&'a str> {
    md.get(key)
        .and_then(|v| v.to_string().ok())
        .map(|s| s.as_str())
}

fn get_u32(md: &HashMap<String, Value>, key: &str) -> Option<u32> {
    md.get(key).and_then(|v| match v {
        Value::U32(x) => Some(*x),
        Value::I32(x) => u32::try_from(*x).ok(),
        Value::U64(x) => u32::try_from(*x).ok(),
        Value::I64(x) => u32::try_from(*x).ok(),
        Value::U16(x) => Some(u32::from(*x)),
        Value::U8(x) => Some(u32::from(*x)),
        _ => None,
    })
}

fn get_bool(md: &HashMap<String, Value>, key: &str) -> Option<bool> {
    md.get(key).and_then(|v| v.to_bool().ok())
}

fn get_strings(md: &HashMap<String, Value>, key: &str) -> Result<Option<Vec<String>>, ReaderError> {
    let Some(v) = md.get(key) else {
        return Ok(None);
    };
    let arr = v
        .to_vec()
        .map_err(|_| tok_err(format!("`{key}` is not an array")))?;
    arr.iter()
        .map(|x| {
            x.to_string()
                .cloned()
                .map_err(|_| tok_err(format!("`{key}` holds a non-string")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn get_ints(md: &HashMap<String, Value>, key: &str) -> Result<Option<Vec<i64>>, ReaderError> {
    let Some(v) = md.get(key) else {
        return Ok(None);
    };
    let arr = v
        .to_vec()
        .map_err(|_| tok_err(format!("`{key}` is not an array")))?;
    arr.iter()
        .map(|x| match x {
            Value::I32(i) => Ok(i64::from(*i)),
            Value::U32(i) => Ok(i64::from(*i)),
            Value::I8(i) => Ok(i64::from(*i)),
            Value::U8(i) => Ok(i64::from(*i)),
            Value::I16(i) => Ok(i64::from(*i)),
            Value::U16(i) => Ok(i64::from(*i)),
            Value::I64(i) => Ok(*i),
            _ => Err(tok_err(format!("`{key}` holds a non-integer"))),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn get_floats(md: &HashMap<String, Value>, key: &str) -> Result<Option<Vec<f32>>, ReaderError> {
    let Some(v) = md.get(key) else {
        return Ok(None);
    };
    let arr = v
        .to_vec()
        .map_err(|_| tok_err(format!("`{key}` is not an array")))?;
    arr.iter()
        .map(|x| {
            x.to_f32()
                .map_err(|_| tok_err(format!("`{key}` holds a non-float")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn byte_level_pre(pre: &str) -> Result<(serde_json::Value, bool), ReaderError> {
    use serde_json::json;
    let byte_level = |use_regex: bool| json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": use_regex});
    let split = |re: &str| {
        json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": re}, "behavior": "Isolated", "invert": false},
            byte_level(false)
        ]})
    };
    Ok(match pre {
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva" => (
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": true},
                byte_level(true)
            ]}),
            false,
        ),
        "default" | "gpt-2" | "gpt2" | "" => (byte_level(true), false),
        "llama3" | "llama-v3" | "llama-bpe" | "smaug-bpe" | "dbrx" | "falcon3" | "pixtral" => {
            (split(LLAMA3_SPLIT), true)
        }
        "qwen2" | "deepseek-r1-qwen" => (split(QWEN2_SPLIT), false),
        other => {
            return Err(tok_err(format!(
                "unsupported pre-tokenizer `{other}` (tokenizer.ggml.pre); supported: smollm, \
                 starcoder, refact, command-r, codeshell, exaone, minerva, default, gpt-2, \
                 llama3, llama-v3, llama-bpe, smaug-bpe, dbrx, falcon3, pixtral, qwen2, \
                 deepseek-r1-qwen"
            )))
        }
    })
}

/// SentencePiece merges recovered from the vocabulary and scores, as transformers'
/// `generate_merges(vocab, vocab_scores)`: every split of a token into two vocabulary tokens is
/// a merge; merges are ordered by the merged token's score (descending), then by the lengths of
/// the left and right parts (descending), then by the parts' ids.
fn spm_merges(tokens: &[String], scores: &[f32]) -> Vec<(String, String)> {
    let mut vocab: HashMap<&str, usize> = HashMap::new();
    for (i, t) in tokens.iter().enumerate() {
        vocab.entry(t.as_str()).or_insert(i);
    }
    // Last score wins for duplicate tokens, at the first position (Python dict semantics).
    let mut score_of: HashMap<&str, f32> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (t, s) in tokens.iter().zip(scores) {
        if score_of.insert(t.as_str(), *s).is_none() {
            order.push(t.as_str());
        }
    }
    let mut merges: Vec<(&str, &str, f32)> = Vec::new();
    for t in order {
        let score = score_of[t];
        let mut local = Vec::new();
        for (idx, _) in t.char_indices().skip(1) {
            let (l, r) = t.split_at(idx);
            if vocab.contains_key(l) && vocab.contains_key(r) {
                local.push((l, r, score));
            }
        }
        local.sort_by_key(|(l, r, _)| (vocab[l], vocab[r]));
        merges.extend(local);
    }
    // Python's sorted(..., reverse=True) is stable: equal keys keep their order.
    merges.sort_by(|a, b| {
        b.2.total_cmp(&a.2)
            .then(b.0.chars().count().cmp(&a.0.chars().count()))
            .then(b.1.chars().count().cmp(&a.1.chars().count()))
    });
    merges
        .into_iter()
        .map(|(l, r, _)| (l.to_string(), r.to_string()))
        .collect()
}

impl GgufTokenizer {
    /// Reads only the metadata of a GGUF file and builds its tokenizer.
    ///
    /// # Errors
    /// [`ReaderError::Model`] when the file cannot be opened or is not GGUF; see
    /// [`GgufTokenizer::from_metadata`].
    pub fn from_gguf_file(path: &Path) -> Result<Self, ReaderError> {
        let mut f = std::fs::File::open(path)
            .map_err(|e| ReaderError::Model(format!("cannot open {}: {e}", path.display())))?;
        let content = candle_core::quantized::gguf_file::Content::read(&mut f).map_err(|e| {
            ReaderError::Model(format!("{} is not a GGUF file: {e}", path.display()))
        })?;
        Self::from_metadata(&content.metadata)
    }

    /// Builds the tokenizer from GGUF metadata (rules in the module docs).
    ///
    /// # Errors
    /// [`ReaderError::Tokenizer`] when `tokenizer.ggml.tokens` is missing, the model or
    /// pre-tokenizer is unsupported, merges (gpt2) or scores (llama) are missing, or the
    /// assembled tokenizer is rejected by `tokenizers`.
    pub fn from_metadata(md: &HashMap<String, Value>) -> Result<Self, ReaderError> {
        use serde_json::json;
        let model = get_str(md, keys::MODEL)
            .ok_or_else(|| tok_err(format!("missing `{}`", keys::MODEL)))?
            .to_string();
        let pre = get_str(md, keys::PRE).unwrap_or("default").to_string();
        let tokens = get_strings(md, keys::TOKENS)?
            .ok_or_else(|| tok_err(format!("missing `{}`", keys::TOKENS)))?;
        let types = get_ints(md, keys::TOKEN_TYPE)?.unwrap_or_default();
        if !types.is_empty() && types.len() != tokens.len() {
            return Err(tok_err(format!(
                "{} token types for {} tokens",
                types.len(),
                tokens.len()
            )));
        }
        let mut vocab = serde_json::Map::new();
        for (i, t) in tokens.iter().enumerate() {
            // Duplicate strings keep their first id (later ones cannot be produced anyway).
            vocab.entry(t.clone()).or_insert(json!(i));
        }
        let added: Vec<serde_json::Value> = types
            .iter()
            .enumerate()
            .filter(|(_, ty)| **ty == 3 || **ty == 4)
            .map(|(i, ty)| {
                json!({"id": i, "content": tokens[i], "single_word": false, "lstrip": false,
                       "rstrip": false, "normalized": false, "special": *ty == 3})
            })
            .collect();
        let bos_id = get_u32(md, keys::BOS);
        let eos_id = get_u32(md, keys::EOS);
        let unk_id = get_u32(md, keys::UNK);
        let (json, add_bos_default) = match model.as_str() {
            "gpt2" => {
                let merges = get_strings(md, keys::MERGES)?
                    .ok_or_else(|| tok_err(format!("byte-level BPE without `{}`", keys::MERGES)))?;
                let (pre_tok, ignore_merges) = byte_level_pre(&pre)?;
                let j = json!({
                    "version": "1.0",
                    "truncation": null,
                    "padding": null,
                    "added_tokens": added,
                    "normalizer": null,
                    "pre_tokenizer": pre_tok,
                    "post_processor": null,
                    "decoder": {"type": "ByteLevel", "add_prefix_space": true,
                                "trim_offsets": true, "use_regex": true},
                    "model": {"type": "BPE", "dropout": null, "unk_token": null,
                              "continuing_subword_prefix": null, "end_of_word_suffix": null,
                              "fuse_unk": false, "byte_fallback": false,
                              "ignore_merges": ignore_merges,
                              "vocab": vocab, "merges": merges}
                });
                (j, false)
            }
            "llama" => {
                let scores = get_floats(md, keys::SCORES)?.ok_or_else(|| {
                    tok_err(format!(
                        "SentencePiece vocabulary without `{}`",
                        keys::SCORES
                    ))
                })?;
                if scores.len() != tokens.len() {
                    return Err(tok_err(format!(
                        "{} scores for {} tokens",
                        scores.len(),
                        tokens.len()
                    )));
                }
                let merges: Vec<String> = spm_merges(&tokens, &scores)
                    .into_iter()
                    .map(|(l, r)| format!("{l} {r}"))
                    .collect();
                let prefix = get_bool(md, keys::ADD_SPACE_PREFIX).unwrap_or(true);
                let unk = unk_id
                    .and_then(|i| tokens.get(i as usize))
                    .cloned()
                    .unwrap_or_else(|| "<unk>".into());
                let mut decoders = vec![
                    json!({"type": "Replace", "pattern": {"String": "▁"}, "content": " "}),
                    json!({"type": "ByteFallback"}),
                    json!({"type": "Fuse"}),
                ];
                if prefix {
                    decoders.push(json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}));
                }
                let j = json!({
                    "version": "1.0",
                    "truncation": null,
                    "padding": null,
                    "added_tokens": added,
                    "normalizer": null,
                    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁",
                                      "prepend_scheme": if prefix { "first" } else { "never" },
                                      "split": false},
                    "post_processor": null,
                    "decoder": {"type": "Sequence", "decoders": decoders},
                    "model": {"type": "BPE", "dropout": null, "unk_token": unk,
                              "continuing_subword_prefix": null, "end_of_word_suffix": null,
                              "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
                              "vocab": vocab, "merges": merges}
                });
                (j, true)
            }
            other => {
                return Err(tok_err(format!(
                    "unsupported tokenizer model `{other}` ({}); supported: gpt2 (byte-level \
                     BPE), llama (SentencePiece BPE)",
                    keys::MODEL
                )))
            }
        };
        let json = json.to_string();
        let tokenizer: Tokenizer = json
            .parse()
            .map_err(|e| tok_err(format!("tokenizers rejected the rebuilt tokenizer: {e}")))?;
        for (name, id) in [("bos", bos_id), ("eos", eos_id)] {
            if let Some(id) = id {
                if id as usize >= tokens.len() {
                    return Err(tok_err(format!(
                        "{name} id {id} outside the vocabulary of {}",
                        tokens.len()
                    )));
                }
            }
        }
        Ok(GgufTokenizer {
            tokenizer,
            json,
            model,
            pre,
            tokens,
            bos_id,
            eos_id,
            add_bos: get_bool(md, keys::ADD_BOS).unwrap_or(add_bos_default),
            chat_template: get_str(md, keys::CHAT_TEMPLATE).map(str::to_string),
        })
    }

    /// The `tokenizers` tokenizer (no post-processor: encoding adds no BOS/EOS).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The rebuilt tokenizer as `tokenizer.json` text (loadable by Python `tokenizers`).
    pub fn to_json(&self) -> &str {
        &self.json
    }

    /// `tokenizer.ggml.model` (`gpt2` or `llama`).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// `tokenizer.ggml.pre` (`default` when absent).
    pub fn pre(&self) -> &str {
        &self.pre
    }

    /// Vocabulary size (number of token strings).
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The token string of `id`, as stored in the GGUF (byte-level or `▁` spelling).
    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// BOS id, if the file names one.
    pub fn bos_id(&self) -> Option<u32> {
        self.bos_id
    }

    /// EOS id, if the file names one.
    pub fn eos_id(&self) -> Option<u32> {
        self.eos_id
    }

    /// The BOS token string (empty when none).
    pub fn bos_token(&self) -> &str {
        self.bos_id.and_then(|i| self.token(i)).unwrap_or("")
    }

    /// The EOS token string (empty when none).
    pub fn eos_token(&self) -> &str {
        self.eos_id.and_then(|i| self.token(i)).unwrap_or("")
    }

    /// Whether the model expects a BOS before the prompt (`tokenizer.ggml.add_bos_token`;
    /// default false for gpt2, true for llama vocabularies, as llama.cpp).
    pub fn add_bos(&self) -> bool {
        self.add_bos && self.bos_id.is_some()
    }

    /// The Jinja chat template stored in the file, if any.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// Encodes `text` to ids without adding BOS/EOS; control tokens written in the text
    /// (e.g. `<|im_start|>`) encode as their single ids.
    ///
    /// # Errors
    /// [`ReaderError::Tokenizer`] when `tokenizers` fails.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ReaderError> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| tok_err(format!("encode: {e}")))
    }

    /// Encodes `text` and returns ids with their byte offsets `[start, end)` into `text`.
    ///
    /// # Errors
    /// [`ReaderError::Tokenizer`] when `tokenizers` fails.
    pub fn encode_with_offsets(&self, text: &str) -> Result<IdsWithOffsets, ReaderError> {
        let e = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| tok_err(format!("encode: {e}")))?;
        Ok((e.get_ids().to_vec(), e.get_offsets().to_vec()))
    }

    /// Decodes ids to text (special tokens kept).
    ///
    /// # Errors
    /// [`ReaderError::Tokenizer`] when `tokenizers` fails.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ReaderError> {
        self.tokenizer
            .decode(ids, false)
            .map_err(|e| tok_err(format!("decode: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Value {
        Value::Array(v.iter().map(|s| Value::String(s.to_string())).collect())
    }

    /// A toy SentencePiece vocabulary: merges come from the scores; ids checked against
    /// transformers' GGUF converter.
    #[test]
    fn sentencepiece_from_scores() {
        let tokens = [
            "<unk>", "<s>", "</s>", "▁", "h", "e", "l", "o", "▁h", "he", "ll", "▁he", "llo",
            "▁hello", "<0x21>",
        ];
        let scores: Vec<f32> = (0..tokens.len()).map(|i| -(i as f32)).collect();
        let mut types = vec![2i32, 3, 3];
        types.extend(vec![1i32; tokens.len() - 4]);
        types.push(6);
        let mut md = HashMap::new();
        md.insert(keys::MODEL.into(), Value::String("llama".into()));
        md.insert(keys::TOKENS.into(), strs(&tokens));
        md.insert(
            keys::SCORES.into(),
            Value::Array(scores.iter().map(|s| Value::F32(*s)).collect()),
        );
        md.insert(
            keys::TOKEN_TYPE.into(),
            Value::Array(types.iter().map(|t| Value::I32(*t)).collect()),
        );
        md.insert(keys::BOS.into(), Value::U32(1));
        md.insert(keys::EOS.into(), Value::U32(2));
        md.insert(keys::UNK.into(), Value::U32(0));
        let t = GgufTokenizer::from_metadata(&md).unwrap();
        assert!(t.add_bos());
        let ids = t.encode("hello!").unwrap();
        // "▁hello" then '!' through byte fallback (<0x21>).
        assert_eq!(ids, vec![13, 14]);
        assert_eq!(t.decode(&ids).unwrap(), "hello!");
        // Same ids as transformers 5.24's GGUF converter (`sentencepiece_tokenizer`) on this
        // toy vocabulary.
        assert_eq!(t.encode("hello hello").unwrap(), vec![13, 13]);
        assert_eq!(t.encode("<s>hello").unwrap(), vec![1, 9, 12]);
        assert_eq!(t.encode(" hell").unwrap(), vec![11, 10]);
    }

    #[test]
    fn unsupported_model_and_pre_are_named() {
        let mut md = HashMap::new();
        md.insert(keys::MODEL.into(), Value::String("rwkv".into()));
        md.insert(keys::TOKENS.into(), strs(&["a"]));
        let e = GgufTokenizer::from_metadata(&md).unwrap_err().to_string();
        assert!(e.contains("rwkv"), "{e}");
        md.insert(keys::MODEL.into(), Value::String("gpt2".into()));
        md.insert(keys::MERGES.into(), strs(&[]));
        md.insert(keys::PRE.into(), Value::String("chameleon".into()));
        let e = GgufTokenizer::from_metadata(&md).unwrap_err().to_string();
        assert!(e.contains("chameleon"), "{e}");
    }
}
