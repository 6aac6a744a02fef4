//! Tiny synthetic GGUF models (random weights, a small byte-level vocabulary) written by the
//! test with candle's GGUF writer: exercise architecture dispatch (llama, qwen2, unsupported),
//! chat-template handling, the scoring paths that the SmolLM2 tests cannot reach (qwen2's
//! non-copyable KV cache re-runs the prompt per multi-token option in candle's models), and
//! chunkbench's decoder against candle's models on the same f32 weights.

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use reader::{
    ChatFormat, LlmConfig, LlmReader, Reader, ReaderError, ReaderInput, Scoring, WeightFormat,
};
use std::path::{Path, PathBuf};

const HIDDEN: usize = 64;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const FF: usize = 128;
const LAYERS: usize = 2;

/// Byte-level vocabulary: specials, printable ASCII, `Ġ` (space), `Ċ` (newline), and `ĠA`..`ĠZ`
/// with their merges.
fn vocab() -> (Vec<String>, Vec<i32>, Vec<String>) {
    let mut tokens = vec![
        "<|endoftext|>".to_string(),
        "<|im_start|>".into(),
        "<|im_end|>".into(),
    ];
    let mut types = vec![3, 3, 3];
    for b in 33u8..=126 {
        tokens.push((b as char).to_string());
        types.push(1);
    }
    tokens.push("Ġ".into());
    tokens.push("Ċ".into());
    types.extend([1, 1]);
    let mut merges = Vec::new();
    for c in 'A'..='Z' {
        tokens.push(format!("Ġ{c}"));
        types.push(1);
        merges.push(format!("Ġ {c}"));
    }
    (tokens, types, merges)
}

/// Deterministic pseudo-random weights in [-scale, scale].
fn weights(shape: &[usize], seed: u64, scale: f32) -> QTensor {
    let n: usize = shape.iter().product();
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let data: Vec<f32> = (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect();
    let t = Tensor::from_vec(data, shape, &Device::Cpu).unwrap();
    QTensor::quantize(&t, GgmlDType::F32).unwrap()
}

/// RMSNorm weights around 1 (in [0.7, 1.3]), distinct per tensor, so a norm weight applied to
/// the wrong rows or not at all changes the scores.
fn norm_weights(n: usize, seed: u64) -> QTensor {
    let t = weights(&[n], seed, 0.3).dequantize(&Device::Cpu).unwrap();
    let t = (t + 1.0).unwrap();
    QTensor::quantize(&t, GgmlDType::F32).unwrap()
}

/// Writes a tiny model of `arch` (`llama`, `qwen2` or anything else) to `dir`.
fn write_model(dir: &Path, arch: &str, chat_template: Option<&str>) -> PathBuf {
    let (tokens, types, merges) = vocab();
    let vocab_size = tokens.len();
    let kv_dim = HIDDEN / HEADS * KV_HEADS;
    let mut md: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(arch.into())),
        (format!("{arch}.block_count"), Value::U32(LAYERS as u32)),
        (format!("{arch}.context_length"), Value::U32(256)),
        (
            format!("{arch}.embedding_length"),
            Value::U32(HIDDEN as u32),
        ),
        (format!("{arch}.feed_forward_length"), Value::U32(FF as u32)),
        (
            format!("{arch}.attention.head_count"),
            Value::U32(HEADS as u32),
        ),
        (
            format!("{arch}.attention.head_count_kv"),
            Value::U32(KV_HEADS as u32),
        ),
        (
            format!("{arch}.attention.layer_norm_rms_epsilon"),
            Value::F32(1e-5),
        ),
        (
            format!("{arch}.rope.dimension_count"),
            Value::U32((HIDDEN / HEADS) as u32),
        ),
        (format!("{arch}.rope.freq_base"), Value::F32(10000.0)),
        ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
        ("tokenizer.ggml.pre".into(), Value::String("qwen2".into())),
        (
            "tokenizer.ggml.tokens".into(),
            Value::Array(tokens.into_iter().map(Value::String).collect()),
        ),
        (
            "tokenizer.ggml.token_type".into(),
            Value::Array(types.into_iter().map(Value::I32).collect()),
        ),
        (
            "tokenizer.ggml.merges".into(),
            Value::Array(merges.into_iter().map(Value::String).collect()),
        ),
        ("tokenizer.ggml.bos_token_id".into(), Value::U32(0)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(2)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(false)),
    ];
    if let Some(t) = chat_template {
        md.push(("tokenizer.chat_template".into(), Value::String(t.into())));
    }
    let mut tensors: Vec<(String, QTensor)> = vec![
        (
            "token_embd.weight".into(),
            weights(&[vocab_size, HIDDEN], 1, 0.5),
        ),
        ("output_norm.weight".into(), norm_weights(HIDDEN, 2)),
    ];
    // llama gets its own output head; qwen2 ties it to the embedding (both occur in GGUFs).
    if arch == "llama" {
        tensors.push((
            "output.weight".into(),
            weights(&[vocab_size, HIDDEN], 3, 0.5),
        ));
    }
    for l in 0..LAYERS {
        let p = format!("blk.{l}");
        let s = 100 * (l as u64 + 1);
        tensors.push((
            format!("{p}.attn_q.weight"),
            weights(&[HIDDEN, HIDDEN], s + 1, 0.2),
        ));
        tensors.push((
            format!("{p}.attn_k.weight"),
            weights(&[kv_dim, HIDDEN], s + 2, 0.2),
        ));
        tensors.push((
            format!("{p}.attn_v.weight"),
            weights(&[kv_dim, HIDDEN], s + 3, 0.2),
        ));
        tensors.push((
            format!("{p}.attn_output.weight"),
            weights(&[HIDDEN, HIDDEN], s + 4, 0.2),
        ));
        tensors.push((
            format!("{p}.ffn_gate.weight"),
            weights(&[FF, HIDDEN], s + 5, 0.2),
        ));
        tensors.push((
            format!("{p}.ffn_up.weight"),
            weights(&[FF, HIDDEN], s + 6, 0.2),
        ));
        tensors.push((
            format!("{p}.ffn_down.weight"),
            weights(&[HIDDEN, FF], s + 7, 0.2),
        ));
        tensors.push((
            format!("{p}.attn_norm.weight"),
            norm_weights(HIDDEN, s + 11),
        ));
        tensors.push((format!("{p}.ffn_norm.weight"), norm_weights(HIDDEN, s + 12)));
        if arch == "qwen2" {
            tensors.push((format!("{p}.attn_q.bias"), weights(&[HIDDEN], s + 8, 0.1)));
            tensors.push((format!("{p}.attn_k.bias"), weights(&[kv_dim], s + 9, 0.1)));
            tensors.push((format!("{p}.attn_v.bias"), weights(&[kv_dim], s + 10, 0.1)));
        }
    }
    let path = dir.join(format!("tiny-{arch}.gguf"));
    let mut f = std::fs::File::create(&path).unwrap();
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    gguf_file::write(&mut f, &md_refs, &t_refs).unwrap();
    path
}

const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

fn opts(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn llama_and_qwen2_load_score_and_repeat() {
    let dir = tempfile::tempdir().unwrap();
    for arch in ["llama", "qwen2"] {
        let path = write_model(dir.path(), arch, Some(CHATML));
        for weights in [WeightFormat::F32, WeightFormat::Quantized] {
            let r = LlmReader::load(
                &path,
                LlmConfig {
                    weights,
                    ..Default::default()
                },
            )
            .unwrap();
            assert_eq!(r.architecture(), arch);
            assert_eq!(r.window(), 256);
            let o = opts(&["red", "blue", "green"]);
            let input = ReaderInput {
                question: "Which colour?",
                options: &o,
                passages: &["The sky is blue."],
            };
            let a = r.read(&input).unwrap();
            let b = r.read(&input).unwrap();
            assert_eq!(a, b, "{arch}");
            assert_eq!(a.scores.len(), 3);
            assert!(a.scores.iter().all(|s| s.is_finite() && *s < 0.0), "{a:?}");
            assert!(r
                .cache_material(&input)
                .unwrap()
                .starts_with("<|im_start|>user\n"));
        }
    }
}

/// chunkbench's decoder (f32 weights: all options' tokens in one batched pass after the
/// prompt) against candle-transformers' `quantized_llama` / `quantized_qwen2` run on the same
/// f32 tensors (`weights: quantized` with an all-F32 GGUF: no quantization anywhere, so the
/// two differ only by floating-point order). Letters and multi-token cloze options, with a
/// passage, a prompt split into prefill chunks, interleaved (llama) and half-split (qwen2)
/// rotary pairs, q/k/v biases (qwen2), a separate (llama) and a tied (qwen2) output head.
#[test]
fn decoder_matches_candle_reference_models() {
    let dir = tempfile::tempdir().unwrap();
    for arch in ["llama", "qwen2"] {
        let path = write_model(dir.path(), arch, Some(CHATML));
        for scoring in [Scoring::Letters, Scoring::Cloze] {
            let load = |weights, prefill_chunk| {
                LlmReader::load(
                    &path,
                    LlmConfig {
                        scoring,
                        weights,
                        prefill_chunk,
                        ..Default::default()
                    },
                )
                .unwrap()
            };
            let reference = load(WeightFormat::Quantized, None);
            let o = opts(&["red paint", "blue sky at noon", "green grass!", "Q"]);
            let input = ReaderInput {
                question: "Which colour is the sky on a clear day?",
                options: &o,
                passages: &["The sky is blue because air scatters short wavelengths."],
            };
            let want = reference.read(&input).unwrap();
            for chunk in [None, Some(5)] {
                let got = load(WeightFormat::F32, chunk).read(&input).unwrap();
                assert_eq!(got.choice, want.choice, "{arch} {scoring:?} {chunk:?}");
                for (g, w) in got.scores.iter().zip(&want.scores) {
                    assert!(
                        (g - w).abs() < 1e-4,
                        "{arch} {scoring:?} {chunk:?}: {:?} vs {:?}",
                        got.scores,
                        want.scores
                    );
                }
            }
        }
    }
}

/// Multi-token cloze options, with both engines (the decoder's batched options; candle's
/// KV-cache copy for llama and prompt re-run for qwen2): an option's score does not depend
/// on the other options.
#[test]
fn cloze_multi_token_options_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    for (arch, weights) in [
        ("llama", WeightFormat::F32),
        ("qwen2", WeightFormat::F32),
        ("llama", WeightFormat::Quantized),
        ("qwen2", WeightFormat::Quantized),
    ] {
        let path = write_model(dir.path(), arch, Some(CHATML));
        let r = LlmReader::load(
            &path,
            LlmConfig {
                scoring: Scoring::Cloze,
                weights,
                ..Default::default()
            },
        )
        .unwrap();
        let o = opts(&["red paint", "blue sky", "green grass!"]);
        let all = r.read(&ReaderInput::closed_book("Which?", &o)).unwrap();
        for (i, opt) in o.iter().enumerate() {
            let one = vec![opt.clone()];
            let alone = r.read(&ReaderInput::closed_book("Which?", &one)).unwrap();
            assert!(
                (alone.scores[0] - all.scores[i]).abs() < 1e-5,
                "{arch} {opt}: {} vs {}",
                alone.scores[0],
                all.scores[i]
            );
        }
    }
}

#[test]
fn unsupported_architecture_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_model(dir.path(), "gpt2", Some(CHATML));
    let e = LlmReader::load(&path, LlmConfig::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("unsupported architecture `gpt2`"), "{e}");
}

#[test]
fn missing_or_unsupported_chat_template_fails_at_load_with_a_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_model(dir.path(), "llama", None);
    let e = LlmReader::load(&path, LlmConfig::default()).unwrap_err();
    assert!(matches!(e, ReaderError::Template(_)), "{e}");
    assert!(e.to_string().contains("chat: plain"), "{e}");
    let plain = LlmReader::load(
        &path,
        LlmConfig {
            chat: ChatFormat::Plain,
            ..Default::default()
        },
    )
    .unwrap();
    let o = opts(&["x", "y"]);
    let text = plain
        .cache_material(&ReaderInput::closed_book("Q?", &o))
        .unwrap();
    assert!(
        text.ends_with("Question: Q?\nA. x\nB. y\nAnswer:"),
        "{text:?}"
    );

    // Macros render (minijinja); a template that refuses our system + user shape (as Gemma's
    // does) fails at load with its own message and the fallback.
    let macro_tpl = "{% macro m(x) %}{{ x }}{% endmacro %}{% for message in messages %}{{ m(message['content']) }}{% endfor %}";
    let path = write_model(dir.path(), "qwen2", Some(macro_tpl));
    LlmReader::load(&path, LlmConfig::default()).unwrap();
    let refuses = "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}";
    let path = write_model(dir.path(), "qwen2", Some(refuses));
    let e = LlmReader::load(&path, LlmConfig::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("System role not supported") && e.contains("chat: plain"),
        "{e}"
    );
}

#[test]
fn not_a_gguf_file_is_a_model_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.gguf");
    std::fs::write(&path, b"definitely not gguf").unwrap();
    assert!(matches!(
        LlmReader::load(&path, LlmConfig::default()),
        Err(ReaderError::Model(_))
    ));
}
