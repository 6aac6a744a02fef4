//! Issue 56 case 10: the passage index's memory follows the documents and the spans, never
//! the passage texts repeated. The process's peak resident set (this binary holds one test) is measured while
//! 2,000 overlapping near-whole-document spans of one 840 kB document are indexed (before:
//! one copy of every passage's text, 1.7 GB).

use chunker::{Chunk, Document};
use retriever::PassageIndex;

/// The process's peak resident set (`VmHWM` of /proc/self/status), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[test]
fn overlapping_spans_cost_spans_not_copies() {
    let text = "the pump failed in may and the valve stayed in service ".repeat(15_300);
    let doc = Document {
        id: "d1".into(),
        title: String::new(),
        text,
        source: String::new(),
        license: String::new(),
    };
    let n = doc.text.len();
    let chunks: Vec<Chunk> = (0..2000)
        .map(|i| Chunk::new(&doc, i * 8, n - i * 8))
        .collect();
    let before = peak_rss();
    let index = PassageIndex::new(std::slice::from_ref(&doc), chunks).unwrap();
    let grown = peak_rss().saturating_sub(before);
    let expected: u64 = (0..2000).map(|i| (n - 16 * i) as u64).sum();
    assert_eq!(index.passage_bytes(), expected);
    assert!(index.passage_bytes() > 1_000_000_000);
    assert_eq!(index.text(1999), &doc.text[1999 * 8..n - 1999 * 8]);
    // One copy of the document plus the spans' bookkeeping, with room for the allocator.
    assert!(
        grown < 64 << 20,
        "indexing grew the peak resident set by {grown} bytes for a {n}-byte document"
    );
}
