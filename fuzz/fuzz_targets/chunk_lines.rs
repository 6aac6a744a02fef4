//! The command-chunker output parser (also `kind: spans` files): any text as chunk lines over
//! any documents gives exact, non-empty, non-blank byte spans of the documents, or an error
//! naming the line; never a panic.
#![no_main]
use chunker::Document;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Documents before a line `---`, one per line; the chunk lines after it.
    let (docs_part, lines) = text
        .split_once("\n---\n")
        .unwrap_or(("alpha beta gamma\nÜnï code", &text));
    let docs: Vec<Document> = docs_part
        .lines()
        .enumerate()
        .map(|(i, t)| Document::new(&format!("d{i}"), t))
        .collect();
    if let Ok((chunks, _blank)) = evaluator::strategies::spans::read_chunks(lines, &docs, "fuzz") {
        for c in &chunks {
            let d = docs
                .iter()
                .find(|d| d.id == c.doc_id)
                .expect("a known document");
            let slice = d
                .text
                .get(c.span.start..c.span.end)
                .expect("a span of the text");
            assert!(!slice.is_empty());
            assert!(!slice.chars().all(chunker::is_word_separator), "{slice:?}");
            assert_eq!(chunker::count_words(slice), c.words);
        }
    }
});
