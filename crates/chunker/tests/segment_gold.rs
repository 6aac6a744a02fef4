//! Sentence-boundary quality of [`chunker::segment::sentences`] on a hand-checked gold set.
//!
//! `tests/data/sentences_gold.jsonl` holds one JSON object per line:
//! `{"id", "source", "text", "sentences": [exact sentence strings, in order]}`. The passages
//! are verbatim text from the three real corpora (OpenStax CNXML/Markdown, QuALITY articles,
//! SciQ support paragraphs); `source` names the file and paragraph. Gold sentences tile the
//! text: each one starts at the first non-whitespace byte after the previous one ends, and
//! only whitespace is left over.
//!
//! A *boundary* is the byte offset where a sentence other than the first starts. Gold offsets
//! come from walking the gold sentences through the text; predicted offsets are the starts of
//! the predicted spans. Precision, recall and F1 are micro-averaged over all boundaries of
//! all passages (and per corpus, printed). Run with `--nocapture` to see the table and the
//! individual misses.

use std::collections::{BTreeMap, HashSet};

use chunker::segment::sentences;
use chunker::{is_word_separator, Span};
use serde::Deserialize;

/// Minimum boundary F1 over the whole gold set.
const MIN_F1: f64 = 0.95;
/// Minimum number of gold passages, and per corpus.
const MIN_PASSAGES: usize = 60;
const MIN_PER_CORPUS: usize = 10;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Passage {
    id: String,
    source: String,
    text: String,
    sentences: Vec<String>,
}

fn load() -> Vec<Passage> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/sentences_gold.jsonl"
    );
    let raw = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    raw.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}:{}: {e}", i + 1)))
        .collect()
}

/// Byte offsets where gold sentences 2..n start; panics unless the gold sentences tile the
/// text (whitespace-only gaps, nothing left over, no empty or untrimmed sentence).
fn gold_boundaries(p: &Passage) -> Vec<usize> {
    assert!(!p.sentences.is_empty(), "{}: no sentences", p.id);
    let text = p.text.as_str();
    let mut pos = 0;
    let mut starts = Vec::with_capacity(p.sentences.len());
    for s in &p.sentences {
        assert!(!s.is_empty(), "{}: empty gold sentence", p.id);
        let first = s.chars().next().unwrap();
        let last = s.chars().next_back().unwrap();
        assert!(
            !is_word_separator(first) && !is_word_separator(last),
            "{}: gold sentence not trimmed: {s:?}",
            p.id
        );
        let start = text[pos..]
            .find(|c: char| !is_word_separator(c))
            .map(|o| pos + o)
            .unwrap_or_else(|| panic!("{}: text ends before gold sentence {s:?}", p.id));
        assert!(
            text[start..].starts_with(s.as_str()),
            "{}: gold sentence {s:?} does not follow at byte {start}: {:?}",
            p.id,
            &text[start..(start + 60).min(text.len())]
        );
        starts.push(start);
        pos = start + s.len();
    }
    assert!(
        text[pos..].chars().all(is_word_separator),
        "{}: text left after the last gold sentence: {:?}",
        p.id,
        &text[pos..]
    );
    starts.split_off(1)
}

fn predicted_boundaries(text: &str) -> Vec<usize> {
    let spans: Vec<Span> = sentences(text);
    // The output contract, on real text.
    let mut prev = 0;
    for s in &spans {
        assert!(s.start < s.end && s.start >= prev);
        assert!(text[prev..s.start].chars().all(is_word_separator));
        prev = s.end;
    }
    assert!(text[prev..].chars().all(is_word_separator));
    spans.iter().skip(1).map(|s| s.start).collect()
}

#[derive(Default, Debug, Clone, Copy)]
struct Counts {
    passages: usize,
    gold: usize,
    tp: usize,
    fp: usize,
    fn_: usize,
}

impl Counts {
    fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }
    fn recall(&self) -> f64 {
        ratio(self.tp, self.tp + self.fn_)
    }
    fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
    fn add(&mut self, o: &Counts) {
        self.passages += o.passages;
        self.gold += o.gold;
        self.tp += o.tp;
        self.fp += o.fp;
        self.fn_ += o.fn_;
    }
}

/// `num / den`, with 0/0 = 1 (nothing to find, nothing wrongly found).
fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        1.0
    } else {
        num as f64 / den as f64
    }
}

/// Corpus of a passage: the id prefix (`openstax`, `quality`, `sciq`).
fn corpus(id: &str) -> &str {
    id.split('-').next().unwrap_or(id)
}

fn context(text: &str, at: usize) -> String {
    let mut lo = at.saturating_sub(30);
    while !text.is_char_boundary(lo) {
        lo -= 1;
    }
    let mut hi = (at + 25).min(text.len());
    while !text.is_char_boundary(hi) {
        hi += 1;
    }
    format!("{:?} | {:?}", &text[lo..at], &text[at..hi])
}

#[test]
fn gold_set_is_well_formed() {
    let gold = load();
    assert!(gold.len() >= MIN_PASSAGES, "only {} passages", gold.len());
    let mut ids = HashSet::new();
    let mut per_corpus: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &gold {
        assert!(ids.insert(p.id.as_str()), "duplicate id {}", p.id);
        assert!(!p.source.trim().is_empty(), "{}: no source", p.id);
        gold_boundaries(p);
        *per_corpus.entry(corpus(&p.id)).or_default() += 1;
    }
    for name in ["openstax", "quality", "sciq"] {
        let n = per_corpus.get(name).copied().unwrap_or(0);
        assert!(n >= MIN_PER_CORPUS, "{name}: only {n} passages");
    }
}

#[test]
fn boundary_f1_on_gold_set() {
    let gold = load();
    assert!(gold.len() >= MIN_PASSAGES, "only {} passages", gold.len());
    let mut per_corpus: BTreeMap<String, Counts> = BTreeMap::new();
    let mut misses = Vec::new();
    for p in &gold {
        let g: HashSet<usize> = gold_boundaries(p).into_iter().collect();
        let pr: HashSet<usize> = predicted_boundaries(&p.text).into_iter().collect();
        let c = Counts {
            passages: 1,
            gold: g.len(),
            tp: g.intersection(&pr).count(),
            fp: pr.difference(&g).count(),
            fn_: g.difference(&pr).count(),
        };
        let mut fps: Vec<usize> = pr.difference(&g).copied().collect();
        let mut fns: Vec<usize> = g.difference(&pr).copied().collect();
        fps.sort_unstable();
        fns.sort_unstable();
        for at in fps {
            misses.push(format!("FP {}: {}", p.id, context(&p.text, at)));
        }
        for at in fns {
            misses.push(format!("FN {}: {}", p.id, context(&p.text, at)));
        }
        per_corpus
            .entry(corpus(&p.id).to_string())
            .or_default()
            .add(&c);
    }
    let mut total = Counts::default();
    for c in per_corpus.values() {
        total.add(c);
    }
    println!(
        "{:<9} {:>8} {:>10} {:>5} {:>4} {:>4} {:>9} {:>7} {:>7}",
        "corpus", "passages", "boundaries", "tp", "fp", "fn", "precision", "recall", "F1"
    );
    let all = ("all".to_string(), total);
    for (name, c) in per_corpus.iter().chain(std::iter::once((&all.0, &all.1))) {
        println!(
            "{:<9} {:>8} {:>10} {:>5} {:>4} {:>4} {:>9.4} {:>7.4} {:>7.4}",
            name,
            c.passages,
            c.gold,
            c.tp,
            c.fp,
            c.fn_,
            c.precision(),
            c.recall(),
            c.f1()
        );
    }
    for m in &misses {
        println!("{m}");
    }
    let f1 = total.f1();
    assert!(f1.is_finite());
    assert!(
        f1 >= MIN_F1,
        "boundary F1 {f1:.4} < {MIN_F1} (precision {:.4}, recall {:.4}); misses:\n{}",
        total.precision(),
        total.recall(),
        misses.join("\n")
    );
}
