//! The local LLM reader on the pinned SmolLM2-135M-Instruct Q4_1 GGUF.
//!
//! These tests need the model file; when it is missing they FAIL with "run `chunkbench models
//! fetch`" (they never skip). Override the path with `CHUNKBENCH_SMOLLM2_GGUF`.

use reader::{
    CacheMode, CachedReader, ChatFormat, GgufTokenizer, LetterForm, LlmConfig, LlmReader, Reader,
    ReaderError, ReaderInput, ResponseCache, Scoring, WeightFormat,
};
use std::path::PathBuf;
use std::sync::OnceLock;

fn model_path() -> PathBuf {
    let p = std::env::var_os("CHUNKBENCH_SMOLLM2_GGUF")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    assert!(
        p.is_file(),
        "SmolLM2 GGUF not found at {}: run `chunkbench models fetch`",
        p.display()
    );
    p
}

fn tokenizer() -> &'static GgufTokenizer {
    static T: OnceLock<GgufTokenizer> = OnceLock::new();
    T.get_or_init(|| GgufTokenizer::from_gguf_file(&model_path()).unwrap())
}

fn reader() -> &'static LlmReader {
    static R: OnceLock<LlmReader> = OnceLock::new();
    R.get_or_init(|| LlmReader::load(&model_path(), LlmConfig::default()).unwrap())
}

fn opts(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Reference ids from Python `tokenizers` 0.23.3 with the byte-level BPE transformers 5.24
/// builds from this GGUF's tokens and merges (`gguf_tokenizer_mapping.byte_level_tokenizer`),
/// plus llama.cpp's `smollm` digit splitting (the vocabulary has single-digit tokens only, so
/// both agree on digits too).
#[test]
fn tokenizer_matches_reference_ids() {
    let t = tokenizer();
    assert_eq!(
        (t.model(), t.pre(), t.vocab_size()),
        ("gpt2", "smollm", 49152)
    );
    assert_eq!(
        (t.bos_id(), t.eos_id(), t.add_bos()),
        (Some(1), Some(2), false)
    );
    let table: &[(&str, &[u32])] = &[
        ("Hello world", &[19556, 905]),
        (" A", &[330]),
        ("A", &[49]),
        ("Answer:", &[21350, 42]),
        ("Answer: B", &[21350, 42, 389]),
        ("The answer is C.", &[504, 2988, 314, 340, 30]),
        (
            "<|im_start|>user\nWhat is photosynthesis?<|im_end|>\n<|im_start|>assistant\n",
            &[1, 4093, 198, 1780, 314, 19173, 47, 2, 198, 1, 520, 9531, 198],
        ),
        (
            "naïve café — “quotes” 日本語",
            &[
                3546, 46494, 37366, 1841, 619, 385, 2346, 573, 17097, 241, 115, 40993, 179, 120,
                248,
            ],
        ),
        (
            "  two  spaces\n\nnewlines\t tab",
            &[216, 827, 216, 5600, 198, 198, 2241, 5110, 197, 10147],
        ),
        ("It's we're they've", &[1589, 506, 392, 2316, 502, 3543]),
        (
            "Question: Who proposed the theory of evolution by natural selection?\nA. darwin\nB. shaw",
            &[
                17872, 42, 6244, 5433, 260, 3108, 282, 4162, 411, 1782, 5719, 47, 198, 49, 30,
                41734, 5544, 198, 50, 30, 443, 912,
            ],
        ),
        ("in 1859 and 3.14", &[254, 216, 33, 40, 37, 41, 284, 216, 35, 30, 33, 36]),
    ];
    for (text, want) in table {
        let ids = t.encode(text).unwrap();
        assert_eq!(ids.as_slice(), *want, "{text:?}");
        assert_eq!(t.decode(&ids).unwrap(), *text, "round trip of {text:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Byte-level BPE is lossless: decode(encode(s)) == s for any text without control tokens.
    #[test]
    fn tokenizer_round_trips_any_text(s in "\\PC{0,60}") {
        let t = tokenizer();
        let ids = t.encode(&s).unwrap();
        proptest::prop_assert_eq!(t.decode(&ids).unwrap(), s);
    }
}

#[test]
fn answer_letters_are_single_tokens() {
    let r = reader();
    assert_eq!(r.architecture(), "llama");
    assert_eq!(
        r.window(),
        4096,
        "min(context_length 8192, candle MAX_SEQ_LEN 4096)"
    );
    assert!(r.letter_token_ids().iter().all(|l| l.len() == 1));
    assert_eq!(r.letter_token_ids()[0], vec![330]); // " A"
    assert_eq!(
        r.file_sha256(),
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    );
}

#[test]
fn prompt_uses_the_gguf_chat_template() {
    let r = reader();
    let o = opts(&["darwin", "shaw"]);
    let text = r
        .cache_material(&ReaderInput {
            question: "Who proposed natural selection?",
            options: &o,
            passages: &["Darwin proposed it."],
        })
        .unwrap();
    assert_eq!(
        text,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging \
         Face<|im_end|>\n<|im_start|>user\nAnswer the multiple-choice question. Reply with the \
         letter of the correct option only.\n\nContext:\n[1] Darwin proposed it.\n\nQuestion: \
         Who proposed natural selection?\nA. darwin\nB. shaw<|im_end|>\n<|im_start|>assistant\n\
         Answer:"
    );
}

fn sciq() -> Vec<(String, Vec<String>, usize)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/sciq/questions.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run `chunkbench data fetch`)", path.display()));
    text.lines()
        .take(8)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["question"].as_str().unwrap().to_string(),
                v["options"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| o.as_str().unwrap().to_string())
                    .collect(),
                v["answer"].as_u64().unwrap() as usize,
            )
        })
        .collect()
}

/// Two independently loaded readers give identical choices and scores, twice over, and with
/// one inference thread instead of all.
#[test]
fn two_runs_give_identical_choices() {
    let qs = sciq();
    let run = |r: &LlmReader| -> Vec<(usize, Vec<f64>)> {
        qs.iter()
            .map(|(q, o, _)| {
                let out = r.read(&ReaderInput::closed_book(q, o)).unwrap();
                (out.choice, out.scores)
            })
            .collect()
    };
    let a = run(reader());
    let second = LlmReader::load(&model_path(), LlmConfig::default()).unwrap();
    let b = run(&second);
    let c = run(reader());
    assert_eq!(a, b);
    assert_eq!(a, c);
    // And with a different inference thread count (CASES 31: identical across threads).
    let one_thread = LlmReader::load(
        &model_path(),
        LlmConfig {
            threads: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(one_thread.identity(), reader().identity());
    assert_eq!(run(&one_thread), a);
}

/// Reading from inside a rayon pool (as the runner's `par_iter` does), with more questions
/// than threads, neither deadlocks nor changes answers.
#[test]
fn reads_inside_rayon_par_iter() {
    use rayon::prelude::*;
    let qs = sciq();
    let serial: Vec<usize> = qs
        .iter()
        .map(|(q, o, _)| {
            reader()
                .read(&ReaderInput::closed_book(q, o))
                .unwrap()
                .choice
        })
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let parallel: Vec<usize> = pool.install(|| {
        qs.par_iter()
            .map(|(q, o, _)| {
                reader()
                    .read(&ReaderInput::closed_book(q, o))
                    .unwrap()
                    .choice
            })
            .collect()
    });
    assert_eq!(serial, parallel);
}

/// Chunked prefill through the KV cache gives the same letter scores as one pass (the
/// decoder's default), up to floating-point order.
#[test]
fn chunked_prefill_matches_single_pass() {
    let chunked = LlmReader::load(
        &model_path(),
        LlmConfig {
            prefill_chunk: Some(7),
            ..Default::default()
        },
    )
    .unwrap();
    let o = opts(&["lactic", "amino", "fatty", "hydrochloric"]);
    let input = ReaderInput {
        question: "Each specific polypeptide has a unique linear sequence of which acids?",
        options: &o,
        passages: &["Proteins are chains of amino acids joined by peptide bonds."],
    };
    let a = reader().read(&input).unwrap();
    let b = chunked.read(&input).unwrap();
    assert_eq!(a.choice, b.choice);
    for (x, y) in a.scores.iter().zip(&b.scores) {
        assert!((x - y).abs() < 1e-3, "{:?} vs {:?}", a.scores, b.scores);
    }
}

/// Determinism whatever the thread count: the decoder's scores with 1, 2 and 3 inference
/// threads are bit-identical (no reduction is split across threads), for cloze options of
/// several tokens after a passage.
#[test]
fn scores_do_not_depend_on_the_thread_count() {
    let o = opts(&[
        "lactic acids",
        "amino acids",
        "fatty acids",
        "hydrochloric acid",
    ]);
    let input = ReaderInput {
        question: "Each specific polypeptide has a unique linear sequence of which acids?",
        options: &o,
        passages: &[
            "Proteins are chains of amino acids joined by peptide bonds. \
                     The sequence of amino acids in a polypeptide is set by the gene.",
        ],
    };
    let scores: Vec<Vec<f64>> = [1, 2, 3]
        .into_iter()
        .map(|threads| {
            LlmReader::load(
                &model_path(),
                LlmConfig {
                    scoring: Scoring::Cloze,
                    threads: Some(threads),
                    ..Default::default()
                },
            )
            .unwrap()
            .read(&input)
            .unwrap()
            .scores
        })
        .collect();
    assert_eq!(scores[0], scores[1]);
    assert_eq!(scores[0], scores[2]);
}

/// Over-long context: passages dropped from the end, the last kept one cut, all counted.
#[test]
fn context_truncation_is_documented_and_counted() {
    let r = LlmReader::load(
        &model_path(),
        LlmConfig {
            max_context_tokens: Some(300),
            ..Default::default()
        },
    )
    .unwrap();
    let long: Vec<String> = (0..6)
        .map(|i| {
            format!("Passage {i}: ") + &"the mitochondria is the powerhouse of the cell. ".repeat(8)
        })
        .collect();
    let ps: Vec<&str> = long.iter().map(String::as_str).collect();
    let o = opts(&["nucleus", "mitochondria", "ribosome", "wall"]);
    let input = ReaderInput {
        question: "What is the powerhouse of the cell?",
        options: &o,
        passages: &ps,
    };
    let out = r.read(&input).unwrap();
    let c = &out.context;
    assert_eq!(c.passages_given, 6);
    assert!(c.truncated());
    assert!(c.passage_cut && c.tokens_cut > 0, "{c:?}");
    assert_eq!(c.passages_used + c.passages_dropped, 6, "{c:?}");
    assert!(c.prompt_tokens < 300, "{c:?}");
    let prompt = r.cache_material(&input).unwrap();
    assert!(prompt.contains("[1] Passage 0:"));
    assert!(
        !prompt.contains("Passage 5:"),
        "lowest-ranked passages go first"
    );
    // Nothing fits without passages: an error, not a silent answer.
    let tiny = LlmReader::load(
        &model_path(),
        LlmConfig {
            max_context_tokens: Some(20),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(matches!(
        tiny.read(&input),
        Err(ReaderError::ContextOverflow { window: 20, .. })
    ));
}

/// CASES 29: no passages and one empty passage are the same closed-book prompt.
#[test]
fn case29_empty_context_reads_closed_book() {
    let r = reader();
    let o = opts(&["V1", "V2", "V3", "V4"]);
    let q = "Which valve was replaced?";
    let a = r.read(&ReaderInput::closed_book(q, &o)).unwrap();
    let b = r
        .read(&ReaderInput {
            question: q,
            options: &o,
            passages: &[""],
        })
        .unwrap();
    assert_eq!(a.choice, b.choice);
    assert_eq!(a.scores, b.scores);
    assert_eq!((b.context.passages_given, b.context.passages_used), (1, 0));
    assert!(a.scores.iter().all(|s| s.is_finite()));
}

/// CASES 33: six options are scored; an empty option keeps its letter.
#[test]
fn case33_six_options_and_an_empty_option() {
    let r = reader();
    let six = opts(&["4", "6", "7", "8", "9", "10"]);
    let out = r
        .read(&ReaderInput::closed_book("Pick the prime.", &six))
        .unwrap();
    assert_eq!(out.scores.len(), 6);
    let vowels = opts(&["b", "", "e", "k"]);
    let input = ReaderInput::closed_book("Pick the vowel.", &vowels);
    let out = r.read(&input).unwrap();
    assert_eq!(out.scores.len(), 4);
    assert!(r
        .cache_material(&input)
        .unwrap()
        .contains("A. b\nB.\nC. e\nD. k"));
    assert!(r.read(&ReaderInput::closed_book("q", &[])).is_err());
}

/// Cloze scoring: an option's score does not depend on the other options (the prompt omits
/// them), whether it is scored from a copy of the prompt's KV cache (several multi-token
/// options) or from the model state directly (a single option).
#[test]
fn cloze_scores_continue_from_the_prompt_state() {
    let r = LlmReader::load(
        &model_path(),
        LlmConfig {
            scoring: Scoring::Cloze,
            ..Default::default()
        },
    )
    .unwrap();
    let q = "Each specific polypeptide has a unique linear sequence of which acids?";
    let four = opts(&["lactic acids", "amino acids", "fatty acids", "hydrochloric"]);
    let all = r.read(&ReaderInput::closed_book(q, &four)).unwrap();
    for (i, o) in four.iter().enumerate() {
        let one = vec![o.clone()];
        let alone = r.read(&ReaderInput::closed_book(q, &one)).unwrap();
        assert!(
            (alone.scores[0] - all.scores[i]).abs() < 1e-4,
            "{o}: {} vs {}",
            alone.scores[0],
            all.scores[i]
        );
    }
    assert!(all.scores.iter().all(|s| s.is_finite() && *s < 0.0));
    assert!(r
        .cache_material(&ReaderInput::closed_book(q, &four))
        .unwrap()
        .ends_with(
            "Question: Each specific polypeptide has a unique linear sequence of which \
         acids?<|im_end|>\n<|im_start|>assistant\nAnswer:"
        ));
}

/// The quantized-weights path (llama.cpp-style kernels) agrees with the default f32 path
/// on the choice and within quantization noise on the scores.
#[test]
fn quantized_weights_agree_with_f32() {
    let q = LlmReader::load(
        &model_path(),
        LlmConfig {
            weights: WeightFormat::Quantized,
            ..Default::default()
        },
    )
    .unwrap();
    assert_ne!(q.identity(), reader().identity());
    let o = opts(&["darwin", "shaw", "Scopes", "Linnaeus"]);
    let input = ReaderInput::closed_book(
        "Who proposed the theory of evolution by natural selection?",
        &o,
    );
    let a = reader().read(&input).unwrap();
    let b = q.read(&input).unwrap();
    assert_eq!(a.choice, b.choice);
    for (x, y) in a.scores.iter().zip(&b.scores) {
        assert!((x - y).abs() < 0.3, "{:?} vs {:?}", a.scores, b.scores);
    }
}

#[test]
fn other_chat_formats_and_letter_forms_load() {
    for (chat, letters) in [
        (ChatFormat::Plain, LetterForm::Space),
        (ChatFormat::ChatMl, LetterForm::Bare),
    ] {
        let r = LlmReader::load(
            &model_path(),
            LlmConfig {
                chat,
                letters,
                ..Default::default()
            },
        )
        .unwrap();
        assert_ne!(r.identity(), reader().identity());
        let o = opts(&["darwin", "shaw"]);
        let out = r.read(&ReaderInput::closed_book("Who?", &o)).unwrap();
        assert_eq!(out.scores.len(), 2);
    }
}

#[test]
fn cached_llm_reader_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let load = || LlmReader::load(&model_path(), LlmConfig::default()).unwrap();
    let cached = CachedReader::new(
        load(),
        ResponseCache::new(dir.path(), CacheMode::ReadWrite).unwrap(),
    );
    let o = opts(&["darwin", "shaw", "Scopes", "Linnaeus"]);
    let input = ReaderInput::closed_book(
        "Who proposed the theory of evolution by natural selection?",
        &o,
    );
    let a = cached.read(&input).unwrap();
    let b = cached.read(&input).unwrap();
    assert_eq!(a, b);
    assert_eq!(cached.cache().stats().hits, 1);
    assert!(cached
        .identity()
        .contains("sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"));
}
