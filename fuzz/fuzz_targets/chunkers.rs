//! Every chunker's offset invariants on any text: each strategy kind that chunks a corpus
//! (fixed, recursive, max-min, kamradt, cluster-semantic, sentence-window, EAR's parents), at a
//! size and overlap drawn from the input, in words or characters, with a deterministic stand-in
//! embedder (vectors from a hash of the text; some zero, as a broken server gives; MiniLM's
//! tokenizer from `models/` for max-min's window, which is skipped when it is not fetched). Every chunk
//! is an exact byte span of its document on character boundaries, holds a word, and its word
//! count is its slice's; fixed and recursive chunks leave no non-separator character out.
#![no_main]
use chunker::Document;
use libfuzzer_sys::fuzz_target;

/// A stand-in embedder: 8 dimensions from an FNV hash of the text; every seventh text (by
/// hash) gets a zero vector. Its tokenizer is MiniLM's (`models/all-MiniLM-L6-v2`, or
/// `$CHUNKBENCH_MODELS`) with a 256-token window, as max-min requires.
struct Hashed;

/// MiniLM's tokenizer, loaded once; `None` when the models are not fetched.
fn minilm() -> Option<tokenizers::Tokenizer> {
    static T: std::sync::OnceLock<Option<tokenizers::Tokenizer>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let dir = std::env::var_os("CHUNKBENCH_MODELS")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models"));
        tokenizers::Tokenizer::from_file(dir.join("all-MiniLM-L6-v2/tokenizer.json")).ok()
    })
    .clone()
}

impl embed::Embedder for Hashed {
    fn dim(&self) -> usize {
        8
    }
    fn identity(&self) -> String {
        "fuzz-hash".into()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, embed::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut h: u64 = 0xcbf29ce484222325;
                for b in t.bytes() {
                    h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
                }
                if h % 7 == 0 {
                    return vec![0.0; 8];
                }
                let mut v: Vec<f32> = (0..8)
                    .map(|i| (((h >> (i * 8)) & 0xff) as f32 - 127.5) / 128.0)
                    .collect();
                embed::l2_normalize(&mut v);
                v
            })
            .collect())
    }
    fn tokenizer(&self) -> Option<tokenizers::Tokenizer> {
        minilm()
    }
    fn max_input_tokens(&self) -> Option<usize> {
        Some(256)
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (kind, size, overlap) = (
        data[0],
        1 + usize::from(data[1] % 40),
        usize::from(data[2] % 40),
    );
    if kind % 7 == 2 && minilm().is_none() {
        return;
    }
    let text = String::from_utf8_lossy(&data[3..]).into_owned();
    let unit = if kind & 0x80 == 0 { "words" } else { "chars" };
    let ov = overlap % size;
    let yaml = match kind % 7 {
        0 => format!("{{kind: fixed, unit: {unit}, size: {size}, overlap: {ov}}}"),
        1 => format!("{{kind: recursive, unit: {unit}, size: {size}, overlap: {ov}}}"),
        2 => format!("{{kind: max-min, unit: {unit}, size: {}}}", size + 1),
        3 => format!("{{kind: kamradt, unit: {unit}, size: {size}}}"),
        4 => format!(
            "{{kind: cluster-semantic, unit: {unit}, min_size: {}, max_size: {}}}",
            1 + size / 4,
            size + 1
        ),
        5 => format!("{{kind: sentence-window, window_size: {}}}", ov % 3),
        _ => format!(
            "{{kind: ear, size: {}, overlap: {}}}",
            size + 1,
            ov % (size + 1)
        ),
    };
    let cfg =
        evaluator::strategies::StrategyConfig::from_yaml(serde_yaml::from_str(&yaml).unwrap())
            .unwrap_or_else(|e| panic!("{yaml}: {e}"));
    let Ok(chunker) = cfg.build() else {
        return;
    };
    let docs = vec![
        Document::new("d", &text),
        Document::new("e", "Second document. It is short."),
    ];
    let (chunks, _) = match chunker.chunk_corpus(&docs, Some(&Hashed)) {
        Ok(c) => c,
        Err(e) => panic!("{yaml} failed on {text:?}: {e:#}"),
    };
    for c in &chunks {
        let d = docs
            .iter()
            .find(|d| d.id == c.doc_id)
            .expect("a known document");
        let slice = d
            .text
            .get(c.span.start..c.span.end)
            .unwrap_or_else(|| panic!("{yaml}: {:?} is not a slice of {:?}", c.span, d.text));
        assert!(
            !slice.chars().all(chunker::is_word_separator),
            "{yaml}: blank chunk {slice:?}"
        );
        assert_eq!(chunker::count_words(slice), c.words, "{yaml}: {slice:?}");
    }
    if kind % 7 < 2 {
        for d in &docs {
            for (i, ch) in d.text.char_indices() {
                if !chunker::is_word_separator(ch) {
                    assert!(
                        chunks
                            .iter()
                            .any(|c| c.doc_id == d.id && c.span.start <= i && i < c.span.end),
                        "{yaml}: {ch:?} at {i} of {:?} in no chunk",
                        d.text
                    );
                }
            }
        }
    }
});
