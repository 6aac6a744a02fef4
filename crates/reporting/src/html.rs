//! The self-contained HTML pages of a run (`report.html`) and of a comparison
//! (`compare.html`): summary tables, inline plots and a per-question explorer, in one file that
//! opens offline (inline CSS, JavaScript and SVG; no network, no CDN).
//!
//! # What the pages hold
//! - **Summary tables** per dataset × reader (report) or the regression table (compare):
//!   accuracy with its Wilson 95 % interval, Δ accuracy with its paired bootstrap interval, the
//!   questions lost and gained against the baseline (McNemar's b and c), McNemar and Holm p,
//!   words retrieved; sortable by any column, the baseline row marked.
//! - **Plots**: the run's `plots/*.svg`, inlined (report only).
//! - **The explorer**: per (cell, question) the question, options, gold and chosen option,
//!   per-option reader scores, the failure stage, the retrieved passages with their byte spans,
//!   ranks and scores, and each passage's text — the exact byte slice of its document — with
//!   the gold evidence, the answer text and, for EAR cells, the matched corpus anchor
//!   occurrences highlighted; filters by cell, by outcome and by flip against the paired cell
//!   (lost: the baseline right and this cell wrong, McNemar's b; gained: c); a second cell
//!   beside the first on the same question.
//!
//! # Texts come from the dataset store, checked by content
//! Rows name passages as `DOC:START-END` byte spans. The page carries, per document, only the
//! union of the spans it shows (retrieved passages and gold evidence), read from the store's
//! `documents.jsonl` — and only when that file's sha256 equals the one every cell of the
//! dataset recorded as its input (`dataset/documents.jsonl`, likewise `questions.jsonl`).
//! Otherwise the page shows the spans without texts and says why, naming the file and the
//! fix ([`Corpus::load`]); it never shows text from another version of the data. The
//! explorer slices texts by bytes (UTF-8 encode, slice, decode), so a passage's text is
//! exactly `text[start..end]` of its document.
//!
//! # Size
//! The data is one JSON value in a `<script type="application/json">` element: rows with
//! short keys, passages as `[document index, start, end]`, texts as merged segments per
//! document, so a passage retrieved by several cells is carried once; EAR's anchor sets and
//! passage records are shared by the cells too. The EAR textbook run (12 cells × 153
//! questions) gives a page of 3.9 MB (BENCHMARKS.md).

use crate::compare::{CompareReport, Verdict};
use crate::explain::ExplainLine;
use crate::fmt::natural_key;
use anyhow::{Context, Result};
use chunker::Document;
use datasets::io::write_atomic;
use datasets::Question;
use records::{CellRecord, Comparison, Failure, QuestionRow};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

mod compare_page;
pub use compare_page::{write_compare_html, write_compare_page, CompareSide};

/// File name of the run report, in the run directory.
pub const REPORT_HTML: &str = "report.html";
/// File name of the comparison page, beside `compare.md`.
pub const COMPARE_HTML: &str = "compare.html";

const CSS: &str = include_str!("html/page.css");
const JS: &str = include_str!("html/explorer.js");
const TEMPLATE: &str = include_str!("html/page.html");

/// One dataset as a page shows it: its questions and the documents its passages are slices
/// of, or a note saying why they are not shown.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Dataset name (as in the cells).
    pub name: String,
    /// Questions in file order (empty when not shown).
    pub questions: Vec<Question>,
    /// Documents in file order (empty when not shown).
    pub documents: Vec<Document>,
    /// Why questions or passage texts are not shown (`None` when both are).
    pub note: Option<String>,
}

impl Corpus {
    /// Loads dataset `name` from the dataset store `store` for a page of `cells` (the cells of
    /// this dataset). The store's `documents.jsonl` (passage texts) and `questions.jsonl`
    /// (question texts) are each used only when it is the file every cell recorded as its
    /// input (sha256), or, for cells that recorded no file hashes, when the store's manifest
    /// sha256 is the one the cells recorded. Never fails: a missing dataset, a load error or
    /// another version of a file becomes [`Corpus::note`], naming the file and the fix.
    pub fn load(store: &Path, name: &str, cells: &[&CellRecord]) -> Corpus {
        let empty = |note: String| Corpus {
            name: name.to_string(),
            questions: Vec::new(),
            documents: Vec::new(),
            note: Some(note),
        };
        let fix = "point --store at the dataset store the run used and write the page again \
                   (`chunkbench report RUN_DIR --store STORE`, or `chunkbench compare ... --store \
                   STORE`)";
        let dir = store.join(name);
        if !dir.join("manifest.json").exists() {
            return empty(format!(
                "question and passage texts are not shown: the dataset store has no `{name}` \
                 ({} does not exist); {fix}",
                dir.join("manifest.json").display()
            ));
        }
        let ds = match datasets::Dataset::load(&dir) {
            Ok(ds) => ds,
            Err(e) => {
                return empty(format!(
                    "question and passage texts are not shown: {e:#}; repair the dataset (or \
                     `chunkbench data fetch` for a fetched one), then {fix}"
                ))
            }
        };
        // Each file is used only when it is the one every cell read; cells recorded before
        // file hashes were inputs are checked by the manifest.
        let differs = |file: &str| -> Option<String> {
            let have = ds.files_sha256.get(file).map_or("", String::as_str);
            cells
                .iter()
                .find_map(|c| match c.inputs.get(&format!("dataset/{file}")) {
                    Some(want) if want != have => Some(format!(
                        "{} (sha256 {}…) is not the file cell {} read (sha256 {}…)",
                        dir.join(file).display(),
                        short(have),
                        c.id,
                        short(want)
                    )),
                    None if c.dataset_manifest_sha256 != ds.manifest_sha256 => Some(format!(
                        "{} (sha256 {}…) is not the dataset manifest cell {} was computed on \
                     (sha256 {}…)",
                        dir.join("manifest.json").display(),
                        short(&ds.manifest_sha256),
                        c.id,
                        short(&c.dataset_manifest_sha256)
                    )),
                    _ => None,
                })
        };
        let restore = "the page never shows text from other data; restore the version the \
                       run read (`chunkbench data fetch` for a fetched dataset) and write the \
                       page again";
        let (docs_differ, questions_differ) =
            (differs("documents.jsonl"), differs("questions.jsonl"));
        let note = match (&docs_differ, &questions_differ) {
            (None, None) => None,
            (Some(d), None) => Some(format!("passage texts are not shown: {d}; {restore}")),
            (None, Some(q)) => Some(format!("question texts are not shown: {q}; {restore}")),
            (Some(d), Some(q)) => Some(format!(
                "question and passage texts are not shown: {d}, and {q}; {restore}"
            )),
        };
        Corpus {
            name: name.to_string(),
            questions: if questions_differ.is_none() {
                ds.questions
            } else {
                Vec::new()
            },
            documents: if docs_differ.is_none() {
                ds.documents
            } else {
                Vec::new()
            },
            note,
        }
    }
}

fn short(s: &str) -> &str {
    &s[..s.len().min(12)]
}

/// One cell as a page shows it.
#[derive(Debug, Clone)]
pub struct PageCell<'a> {
    /// Unique within the page (the cell id; `baseline:ID` / `candidate:ID` in a comparison).
    pub uid: String,
    /// Which run the cell is from, in a comparison (`baseline run`, `candidate run`).
    pub side: Option<&'static str>,
    /// The cell's record.
    pub record: &'a CellRecord,
    /// Its rows, in question order.
    pub rows: &'a [QuestionRow],
    /// Explanations of its questions (`explain/ID.jsonl`: EAR's lines or another kind's
    /// notes), empty for strategies that write none.
    pub explain: crate::explain::Explained,
    /// The `uid` of the cell it is compared with (the baseline strategy's cell, or the
    /// baseline run's cell), if any.
    pub pair: Option<String>,
    /// True for a cell of the baseline strategy (or of the baseline run).
    pub is_baseline: bool,
    /// McNemar's discordant counts against `pair`: (b, c) = (lost, gained).
    pub discordant: Option<(u64, u64)>,
}

impl PageCell<'_> {
    fn label(&self) -> String {
        let c = &self.record.cell;
        let side = self.side.map_or(String::new(), |s| format!("{s}: "));
        format!(
            "{side}{} · {} · {} · k={} · {}",
            c.dataset,
            c.strategy,
            c.retriever,
            c.depth_label(),
            c.reader
        )
    }
}

// ---------------------------------------------------------------------------------------
// The explorer's data.

/// The page's data: what `explorer.js` reads.
#[derive(Serialize)]
struct Payload<'a> {
    datasets: Vec<PDataset<'a>>,
    cells: Vec<PCell>,
    /// The registered retrieval metrics ([`retriever::metrics::METRICS`]), in the order of
    /// each row's `m`: `[name, label]`.
    metrics: Vec<[&'static str; 2]>,
    /// Corpus anchor kinds EAR matches name (`phrase` for a phrase match).
    corpus_kinds: Vec<String>,
}

/// The page's form of an EAR explanation (see [`PEar`]).
fn ear_record(
    l: &ExplainLine,
    table: &DocTable<'_>,
    tables: &mut EarTables,
    corpus_kinds: &mut Interner<String>,
) -> PEar {
    let st = &l.stats;
    let anchors: Vec<[String; 4]> = l
        .anchors
        .iter()
        .map(|a| {
            [
                a.source.clone(),
                a.kind.as_str().to_string(),
                a.text.clone(),
                a.norm.clone(),
            ]
        })
        .collect();
    let anchor_of = |source: &str, span: [usize; 2]| {
        l.anchors
            .iter()
            .position(|a| a.source == source && a.span == span)
            .unwrap_or(usize::MAX)
    };
    let ps = l
        .passages
        .iter()
        .map(|p| {
            let span = [
                table
                    .index
                    .get(p.doc_id.as_str())
                    .copied()
                    .unwrap_or(usize::MAX),
                p.span[0],
                p.span[1],
            ];
            let matches = p
                .matches
                .iter()
                .map(|m| {
                    [
                        m.corpus_span[0],
                        m.corpus_span[1],
                        anchor_of(&m.source, m.query_span),
                        corpus_kinds.add(m.corpus_kind.clone()),
                    ]
                })
                .collect();
            tables.passages.add(PEarPassage(
                span,
                r4(p.score),
                [r4(p.parts.anchor), r4(p.parts.lexical), r4(p.parts.date)],
                u8::from(p.fallback),
                (p.window != p.span).then_some(p.window),
                matches,
            ))
        })
        .collect();
    PEar {
        st: [
            st.question_anchors,
            st.option_anchors,
            st.matched_forms,
            usize::from(st.exact_match),
            st.occurrences,
            st.windows_before_dedup,
            st.windows_after_dedup,
            usize::from(st.fallback),
        ],
        an: tables.anchor_sets.add(anchors),
        ps,
    }
}

/// A dataset's EAR records shared by its cells' rows.
struct EarTables {
    anchor_sets: Interner<Vec<[String; 4]>>,
    passages: Interner<PEarPassage>,
}

#[derive(Serialize)]
struct PDataset<'a> {
    name: &'a str,
    /// Why texts are not shown.
    note: Option<&'a str>,
    /// Document ids, indexed by passages and evidence.
    docs: Vec<&'a str>,
    /// Per document (same index): merged `[start, text]` segments, in order.
    segs: Vec<Vec<(usize, &'a str)>>,
    /// Questions the page's rows name (in dataset order).
    questions: Vec<PQuestion<'a>>,
    /// EAR anchors of questions, `[source, kind, text, norm]` each, shared by cells.
    anchor_sets: Vec<Vec<[String; 4]>>,
    /// EAR passage records ([`PEarPassage`]), shared by cells.
    ear_passages: Vec<PEarPassage>,
}

#[derive(Serialize)]
struct PQuestion<'a> {
    id: &'a str,
    q: &'a str,
    o: &'a [String],
    g: Option<usize>,
    /// Answer strings of a retrieval-only question.
    a: Vec<&'a str>,
    /// Gold evidence `[doc, start, end]`.
    ev: Vec<[usize; 3]>,
    s: Option<&'a str>,
}

#[derive(Serialize)]
struct PCell {
    uid: String,
    id: String,
    ds: usize,
    label: String,
    strategy: String,
    retriever: String,
    k: usize,
    reader: String,
    side: Option<&'static str>,
    pair: Option<String>,
    base: bool,
    /// McNemar's (b, c) against `pair`, from the statistics (the explorer recounts them).
    bc: Option<(u64, u64)>,
    rows: Vec<PRow>,
}

#[derive(Serialize)]
struct PRow {
    /// Question index in the dataset's `questions`, or the id when questions are not shown.
    q: serde_json::Value,
    g: Option<usize>,
    ch: Option<usize>,
    co: Option<u8>,
    ti: usize,
    inv: u8,
    f: String,
    sc: Vec<f64>,
    /// The reader's tie-break score per option (empty when it has none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tb: Vec<f64>,
    /// Passages `[doc, start, end]`.
    p: Vec<[usize; 3]>,
    ps: Vec<f64>,
    /// Words of each passage (absent when its text is not shown).
    pw: Vec<Option<usize>>,
    w: usize,
    uw: usize,
    /// The row's value of each registered metric, in [`Payload::metrics`] order.
    m: Vec<Option<f64>>,
    rep: String,
    ear: Option<PEar>,
    /// The plain notes of a kind other than EAR ([`records::ExplainNotes`]); absent when
    /// the strategy wrote none.
    #[serde(skip_serializing_if = "Option::is_none")]
    nt: Option<PNotes>,
}

/// A kind's plain notes on one question: `n` the question's lines, `p` one note per
/// passage in rank order.
#[derive(Serialize)]
struct PNotes {
    n: Vec<String>,
    p: Vec<String>,
}

/// EAR's record of one question in one cell, kept small: the same question's anchors are
/// shared by every EAR cell (an index into the dataset's `anchor_sets`), matches name their
/// anchor and corpus kind by index, and their corpus text is the marked slice itself.
#[derive(Serialize)]
struct PEar {
    /// `[question anchors, option anchors, matched forms, exact match (0/1), occurrences,
    /// windows before dedup, windows after dedup, fallback (0/1)]`.
    st: [usize; 8],
    /// Index of the question's anchors (`[source, kind, text, norm]` each) in the dataset's
    /// `anchor_sets`.
    an: usize,
    /// The retrieved passages, as indices into the dataset's `ear_passages` (the same
    /// window retrieved by the top-3 and top-8 cells, or by several EAR strategies, is carried
    /// once).
    ps: Vec<usize>,
}

/// One retrieved EAR passage, serialised as an array: `[[doc, start, end], score,
/// [anchor, lexical, date], fallback (0/1), window [start, end] or null when it is the
/// passage's span, matches [[corpus start, corpus end, anchor index, corpus kind index], ...]]`
/// (scores and parts to 4 decimals; the anchor index is into the row's anchor set, the kind
/// into the page's `corpus_kinds`).
#[derive(Serialize)]
struct PEarPassage(
    [usize; 3],
    f64,
    [f64; 3],
    u8,
    Option<[usize; 2]>,
    Vec<[usize; 4]>,
);

/// Values stored once and named by index.
struct Interner<T> {
    items: Vec<T>,
    index: HashMap<String, usize>,
}

impl<T: Serialize> Interner<T> {
    fn new() -> Self {
        Interner {
            items: Vec::new(),
            index: HashMap::new(),
        }
    }

    fn add(&mut self, item: T) -> usize {
        let key = serde_json::to_string(&item).unwrap_or_default();
        *self.index.entry(key).or_insert_with(|| {
            self.items.push(item);
            self.items.len() - 1
        })
    }
}

/// `x` rounded to 4 decimals (display values; keeps the page small).
fn r4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// Interns document ids of one dataset and collects the spans whose text the page carries.
struct DocTable<'a> {
    ids: Vec<&'a str>,
    index: HashMap<&'a str, usize>,
    spans: Vec<Vec<(usize, usize)>>,
}

impl<'a> DocTable<'a> {
    fn new() -> Self {
        DocTable {
            ids: Vec::new(),
            index: HashMap::new(),
            spans: Vec::new(),
        }
    }

    fn intern(&mut self, doc: &'a str, start: usize, end: usize) -> [usize; 3] {
        let i = *self.index.entry(doc).or_insert_with(|| {
            self.ids.push(doc);
            self.spans.push(Vec::new());
            self.ids.len() - 1
        });
        self.spans[i].push((start, end));
        [i, start, end]
    }

    /// Merged segments of every document, sliced from `documents` (empty when a document is
    /// unknown or a span falls outside it or off a character boundary: the explorer then
    /// shows that passage as unavailable rather than a wrong text).
    fn segments(
        &self,
        documents: &'a HashMap<&'a str, &'a Document>,
    ) -> Vec<Vec<(usize, &'a str)>> {
        self.ids
            .iter()
            .zip(&self.spans)
            .map(|(id, spans)| {
                let Some(doc) = documents.get(id) else {
                    return Vec::new();
                };
                let mut spans = spans.clone();
                spans.sort_unstable();
                let mut merged: Vec<(usize, usize)> = Vec::new();
                for (s, e) in spans {
                    match merged.last_mut() {
                        Some(last) if s <= last.1 => last.1 = last.1.max(e),
                        _ => merged.push((s, e)),
                    }
                }
                merged
                    .into_iter()
                    .filter_map(|(s, e)| doc.text.get(s..e).map(|t| (s, t)))
                    .collect()
            })
            .collect()
    }
}

/// The explorer's data for `cells` over `corpora`, as JSON safe inside a `<script>` element.
fn payload<'a>(cells: &[PageCell<'a>], corpora: &'a [Corpus]) -> Result<String> {
    let mut names: Vec<&str> = cells
        .iter()
        .map(|c| c.record.cell.dataset.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let corpus_of = |name: &str| corpora.iter().find(|c| c.name == name);
    let doc_maps: Vec<HashMap<&str, &Document>> = names
        .iter()
        .map(|n| {
            corpus_of(n).map_or_else(HashMap::new, |c| {
                c.documents.iter().map(|d| (d.id.as_str(), d)).collect()
            })
        })
        .collect();
    let mut tables: Vec<DatasetTables> = names
        .iter()
        .map(|n| DatasetTables::new(corpus_of(n)))
        .collect();
    let mut corpus_kinds: Interner<String> = Interner::new();
    let mut out_cells = Vec::with_capacity(cells.len());
    for c in cells {
        let ds = names
            .iter()
            .position(|n| *n == c.record.cell.dataset)
            .expect("every cell's dataset is listed");
        let at = (ds, &doc_maps[ds]);
        out_cells.push(payload_cell(c, at, &mut tables[ds], &mut corpus_kinds));
    }
    let mut out_ds = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let corpus = corpus_of(name);
        let mut d = payload_dataset(i, name, corpus, &mut tables[i], &mut out_cells);
        d.note = corpus.map_or(Some("the dataset was not loaded"), |c| c.note.as_deref());
        out_ds.push(d);
    }
    for (i, d) in out_ds.iter_mut().enumerate() {
        d.segs = tables[i].docs.segments(&doc_maps[i]);
    }
    let json = serde_json::to_string(&Payload {
        datasets: out_ds,
        cells: out_cells,
        metrics: retriever::metrics::METRICS
            .iter()
            .map(|m| [m.name, m.label])
            .collect(),
        corpus_kinds: corpus_kinds.items,
    })?;
    Ok(script_safe(&json))
}

/// One dataset's tables while the payload is built: its passages' documents, its questions
/// by id and which of them the rows name, and EAR's shared records.
struct DatasetTables<'a> {
    docs: DocTable<'a>,
    questions: HashMap<&'a str, usize>,
    used: Vec<bool>,
    ear: EarTables,
}

impl<'a> DatasetTables<'a> {
    fn new(corpus: Option<&'a Corpus>) -> Self {
        let qs: &[Question] = corpus.map_or(&[], |c| &c.questions);
        DatasetTables {
            docs: DocTable::new(),
            questions: qs
                .iter()
                .enumerate()
                .map(|(i, q)| (q.id.as_str(), i))
                .collect(),
            used: vec![false; qs.len()],
            ear: EarTables {
                anchor_sets: Interner::new(),
                passages: Interner::new(),
            },
        }
    }
}

/// One cell of the explorer's payload: its coordinates and its rows; `at` is its dataset's
/// index in the payload and documents.
fn payload_cell<'a>(
    c: &PageCell<'a>,
    at: (usize, &HashMap<&str, &Document>),
    t: &mut DatasetTables<'a>,
    corpus_kinds: &mut Interner<String>,
) -> PCell {
    let notes: HashMap<&str, &records::ExplainNotes> = c
        .explain
        .notes
        .iter()
        .map(|l| (l.question_id.as_str(), l))
        .collect();
    let explain: HashMap<&str, &ExplainLine> = c
        .explain
        .ear
        .iter()
        .map(|l| (l.question_id.as_str(), l))
        .collect();
    // The lexical reader's reply restates its scores: the page leaves it out.
    let reply_adds = c
        .record
        .cell
        .reader_config
        .get("kind")
        .and_then(|k| k.as_str())
        != Some("lexical");
    let mut rows = Vec::with_capacity(c.rows.len());
    for r in c.rows {
        // The row interns its passages first: EAR's record names them by index.
        let mut row = payload_row(r, at.1, t, reply_adds || r.invalid == 1);
        row.ear = explain
            .get(r.question_id.as_str())
            .map(|l| ear_record(l, &t.docs, &mut t.ear, corpus_kinds));
        row.nt = notes.get(r.question_id.as_str()).map(|n| PNotes {
            n: n.notes.clone(),
            p: n.passage_notes.clone(),
        });
        rows.push(row);
    }
    let k = &c.record.cell;
    PCell {
        uid: c.uid.clone(),
        id: c.record.id.clone(),
        ds: at.0,
        label: c.label(),
        strategy: k.strategy.clone(),
        retriever: k.retriever.clone(),
        k: k.k,
        reader: k.reader.clone(),
        side: c.side,
        pair: c.pair.clone(),
        base: c.is_baseline,
        bc: c.discordant,
        rows,
    }
}

/// One question's row of a cell in the payload (its EAR record and notes left empty);
/// `reply` keeps the reader's reply.
fn payload_row<'a>(
    r: &'a QuestionRow,
    docs: &HashMap<&str, &Document>,
    t: &mut DatasetTables<'a>,
    reply: bool,
) -> PRow {
    let q = match t.questions.get(r.question_id.as_str()) {
        Some(&i) => {
            t.used[i] = true;
            serde_json::json!(i)
        }
        None => serde_json::json!(r.question_id),
    };
    let p = r
        .passages
        .iter()
        .map(|p| t.docs.intern(&p.doc_id, p.span.start, p.span.end))
        .collect::<Vec<_>>();
    let pw = r
        .passages
        .iter()
        .map(|p| {
            let text = docs
                .get(p.doc_id.as_str())?
                .text
                .get(p.span.start..p.span.end)?;
            Some(chunker::count_words(text))
        })
        .collect();
    PRow {
        q,
        g: r.gold,
        ch: r.choice,
        co: r.correct,
        ti: r.tied,
        inv: r.invalid,
        f: r.failure.map_or("", Failure::as_str).to_string(),
        sc: r.scores.clone(),
        tb: r.tie_break.clone(),
        p,
        ps: r.passage_scores.clone(),
        pw,
        w: r.words,
        uw: r.unique_words,
        m: r.metrics.as_slice().to_vec(),
        rep: if reply {
            r.reply.clone()
        } else {
            String::new()
        },
        ear: None,
        nt: None,
    }
}

/// One dataset of the payload: the questions the rows name (with their evidence spans), the
/// rows re-pointed at them, and its document and EAR tables (`note` and `segs` are filled by
/// the caller).
fn payload_dataset<'a>(
    i: usize,
    name: &'a str,
    corpus: Option<&'a Corpus>,
    t: &mut DatasetTables<'a>,
    out_cells: &mut [PCell],
) -> PDataset<'a> {
    let qs: &[Question] = corpus.map_or(&[], |c| &c.questions);
    // Evidence spans of the questions shown are carried too.
    let mut questions = Vec::new();
    let mut remap = vec![usize::MAX; qs.len()];
    for (j, q) in qs.iter().enumerate() {
        if !t.used[j] {
            continue;
        }
        remap[j] = questions.len();
        let ev = q
            .evidence
            .iter()
            .flatten()
            .map(|e| t.docs.intern(&e.doc_id, e.start, e.end))
            .collect();
        questions.push(PQuestion {
            id: &q.id,
            q: &q.question,
            o: &q.options,
            g: q.gold(),
            a: q.answer_strings(),
            ev,
            s: q.subject.as_deref(),
        });
    }
    // Rows index the questions shown, not the whole file.
    for c in out_cells.iter_mut().filter(|c| c.ds == i) {
        for r in &mut c.rows {
            if let Some(j) = r.q.as_u64() {
                r.q = serde_json::json!(remap[j as usize]);
            }
        }
    }
    PDataset {
        anchor_sets: std::mem::take(&mut t.ear.anchor_sets.items),
        ear_passages: std::mem::take(&mut t.ear.passages.items),
        name,
        note: None,
        docs: t.docs.ids.clone(),
        segs: Vec::new(),
        questions,
    }
}

/// JSON text that cannot end a `<script>` element or open a comment inside it: `<` becomes
/// `\u003c` (the same string to a JSON parser).
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}

// ---------------------------------------------------------------------------------------
// Tables.

/// A sortable table of a page.
#[derive(Serialize)]
struct Table {
    title: String,
    note: String,
    head: Vec<Head>,
    rows: Vec<Row>,
}

#[derive(Serialize)]
struct Head {
    label: std::borrow::Cow<'static, str>,
    /// Numeric column (sorted by value, right-aligned).
    num: bool,
    tip: std::borrow::Cow<'static, str>,
}

#[derive(Serialize)]
struct Row {
    /// The explorer cell this row opens.
    uid: String,
    class: &'static str,
    cells: Vec<TCell>,
}

#[derive(Serialize)]
struct TCell {
    text: String,
    /// Sort key of a numeric column (absent sorts last).
    v: Option<f64>,
    /// Marked text (the baseline badge, a verdict).
    badge: Option<&'static str>,
}

fn text(s: impl Into<String>) -> TCell {
    TCell {
        text: s.into(),
        v: None,
        badge: None,
    }
}

fn num(s: impl Into<String>, v: Option<f64>) -> TCell {
    TCell {
        text: s.into(),
        v,
        badge: None,
    }
}

fn head(
    label: impl Into<std::borrow::Cow<'static, str>>,
    num: bool,
    tip: impl Into<std::borrow::Cow<'static, str>>,
) -> Head {
    Head {
        label: label.into(),
        num,
        tip: tip.into(),
    }
}

fn pct_ci(a: Option<f64>, lo: Option<f64>, hi: Option<f64>) -> String {
    match (a, lo, hi) {
        (Some(a), Some(lo), Some(hi)) => {
            format!("{:.1} % [{:.1}, {:.1}]", 100.0 * a, 100.0 * lo, 100.0 * hi)
        }
        (Some(a), _, _) => format!("{:.1} %", 100.0 * a),
        _ => "–".into(),
    }
}

fn opt3(x: Option<f64>) -> TCell {
    num(x.map_or("–".into(), |v| format!("{v:.3}")), x)
}

/// The report's verdict table: one row per planned comparison of the primary metric
/// (summary.md's verdict section), each opening its cell in the explorer.
fn verdict_table(f: &crate::verdicts::Family) -> Table {
    let rows = f
        .planned
        .iter()
        .map(|pc| {
            let (p, c) = (&pc.planned, &pc.planned.comparison);
            let pts = |x: f64| num(format!("{:.1}", 100.0 * x), Some(100.0 * x));
            Row {
                uid: pc.cell_id.clone(),
                class: "",
                cells: vec![
                    if c.exploratory {
                        TCell {
                            text: "exploratory".into(),
                            v: None,
                            badge: None,
                        }
                    } else {
                        TCell {
                            text: c.verdict.to_string(),
                            v: None,
                            badge: Some(verdict_badge(c.verdict)),
                        }
                    },
                    text(pc.cell.dataset.clone()),
                    text(pc.cell.strategy.clone()),
                    text(pc.cell.retriever.clone()),
                    num(pc.cell.depth_label(), Some(pc.cell.k as f64)),
                    text(if p.metric == "accuracy" {
                        pc.cell.reader.clone()
                    } else {
                        "–".into()
                    }),
                    num(c.n.to_string(), Some(c.n as f64)),
                    pts(p.baseline_mean),
                    pts(p.mean),
                    num(crate::verdicts::delta_points(c), Some(100.0 * c.estimate)),
                    num(crate::fmt::p_value(c.p), Some(c.p)),
                    num(crate::fmt::p_value(c.holm_p), Some(c.holm_p)),
                    num(
                        crate::verdicts::needed_cell(c),
                        c.questions_needed.and_then(|q| q.n).map(|n| n as f64),
                    ),
                    num(
                        c.design_effect.map_or("–".into(), |d| format!("{d:.2}")),
                        c.design_effect,
                    ),
                ],
            }
        })
        .collect();
    Table {
        title: format!(
            "Verdict: {} against the baseline ({} planned comparisons, Holm family of {}, resampled by {}, margin {} points, α = {})",
            f.primary.label(),
            f.size(),
            f.confirmatory().next().map_or(0, |p| p.planned.comparison.holm_family),
            f.resample.as_str(),
            crate::fmt::tolerance(f.settings.margin_points),
            f.settings.alpha
        ),
        note: format!("Primary metric in points; Δ with its {} % interval (Tango's score interval for right/wrong values, Rao–Scott-adjusted when questions are clustered; else its union with the cluster-robust t interval); p two-sided, Holm p over the confirmatory family; verdicts from the interval at 1 − α/m against the margin (summary.md and docs/reference.md §5 say how). Rows outside `planned:` are exploratory. Every other table is exploratory.", crate::fmt::level(f.settings.alpha)),
        head: vec![
            head("verdict", false, "superior, equivalent, non-inferior, inferior or inconclusive"),
            head("dataset", false, ""),
            head("strategy", false, ""),
            head("retriever", false, ""),
            head("k", true, "top-k, or the budget"),
            head("reader", false, ""),
            head("n", true, "paired questions"),
            head("baseline", true, "the primary metric, points"),
            head("cell", true, "the primary metric, points"),
            head(format!("Δ pts [{}% CI]", crate::fmt::level(f.settings.alpha)), true, ""),
            head("p", true, "sign-flip by resampling unit (McNemar exact for right/wrong, independent questions)"),
            head("Holm p", true, "over the family"),
            head("questions needed", true, "for an inconclusive verdict: for the margin (non-inferiority if the true difference were 0) or the stated effect, at power 0.8"),
            head("design effect", true, "variance inflation from clustered questions"),
        ],
        rows,
    }
}

/// The report's summary tables: one per dataset × reader, rows in natural order of strategy,
/// then retriever, k.
fn summary_tables(
    cells: &[&CellRecord],
    comparisons: &HashMap<String, Comparison>,
    baseline: &str,
    alpha: f64,
) -> Vec<Table> {
    let groups = records::by_dataset_reader(cells.iter().copied());
    let mut tables = Vec::new();
    for ((ds, rd), mut group) in groups {
        group.sort_by_cached_key(|c| {
            (
                natural_key(&c.cell.strategy),
                natural_key(&c.cell.retriever),
                c.cell.k,
                c.cell.budget,
            )
        });
        let read = group.iter().any(|c| c.summary.accuracy.is_some());
        let rows = group
            .into_iter()
            .map(|c| summary_row(c, comparisons.get(&c.id), c.cell.strategy == baseline, read))
            .collect();
        tables.push(Table {
            title: format!(
                "{ds} · reader {rd}{}",
                if read { "" } else { " (retrieval only)" }
            ),
            note: String::new(),
            head: summary_head_row(read, alpha),
            rows,
        });
    }
    tables
}

/// One cell's row of its summary table (`read`: the group has accuracy columns).
fn summary_row(c: &CellRecord, m: Option<&Comparison>, is_base: bool, read: bool) -> Row {
    let s = &c.summary;
    let mut cells = vec![
        TCell {
            text: c.cell.strategy.clone(),
            v: None,
            badge: is_base.then_some("baseline"),
        },
        text(c.cell.retriever.clone()),
        num(c.cell.depth_label(), Some(c.cell.k as f64)),
        num(s.n.to_string(), Some(s.n as f64)),
    ];
    if read {
        cells.extend([
            num(
                pct_ci(s.accuracy, s.accuracy_ci_low, s.accuracy_ci_high),
                s.accuracy,
            ),
            num(s.ties.to_string(), Some(s.ties as f64)),
            num(s.invalid.to_string(), Some(s.invalid as f64)),
        ]);
    }
    cells.extend([
        num(format!("{:.1}", s.words_mean), Some(s.words_mean)),
        num(
            format!("{:.1}", s.unique_words_mean),
            Some(s.unique_words_mean),
        ),
    ]);
    if read {
        let delta = m.map(|m| m.paired.delta_points);
        cells.extend([
            num(
                match m {
                    _ if is_base => "baseline".into(),
                    None => "–".into(),
                    Some(m) => format!(
                        "{:+.1} {}",
                        m.paired.delta_points,
                        crate::fmt::signed_interval(m.paired.delta_ci)
                    ),
                },
                delta,
            ),
            num(
                m.map_or("–".into(), |m| {
                    format!("{} / {}", m.paired.mcnemar.b, m.paired.mcnemar.c)
                }),
                m.map(|m| m.paired.mcnemar.b as f64),
            ),
            num(
                m.map_or("–".into(), |m| {
                    crate::fmt::p_value(m.paired.mcnemar.exact_p)
                }),
                m.map(|m| m.paired.mcnemar.exact_p),
            ),
            num(
                m.and_then(|m| m.holm_p)
                    .map_or("–".into(), crate::fmt::p_value),
                m.and_then(|m| m.holm_p),
            ),
            num(
                m.and_then(|m| m.words_reduction_pct)
                    .map_or("–".into(), |r| {
                        format!(
                            "{r:+.1} {}",
                            crate::fmt::signed_interval(m.and_then(|m| m.words_reduction_ci))
                        )
                    }),
                m.and_then(|m| m.words_reduction_pct),
            ),
        ]);
    }
    cells.extend([opt3(s.metrics.get("recall")), opt3(s.metrics.get("ndcg"))]);
    Row {
        uid: c.id.clone(),
        class: if is_base { "baseline" } else { "" },
        cells,
    }
}

/// The header of a summary table (`read`: with the accuracy columns).
fn summary_head_row(read: bool, alpha: f64) -> Vec<Head> {
    let mut head_row = vec![
        head("strategy", false, "chunking strategy"),
        head("retriever", false, ""),
        head("k", true, "passages retrieved (top-k)"),
        head("n", true, "questions"),
    ];
    if read {
        head_row.extend([
            head("accuracy [95% CI]", true, "Wilson 95 % interval"),
            head(
                "ties",
                true,
                "questions whose best options tie (counted wrong)",
            ),
            head(
                "invalid",
                true,
                "replies the reader could not read as an answer (counted wrong)",
            ),
        ]);
    }
    head_row.extend([
        head(
            "words",
            true,
            "mean words retrieved per question, with multiplicity",
        ),
        head(
            "unique words",
            true,
            "mean words retrieved, overlapping spans once",
        ),
    ]);
    if read {
        head_row.extend([
            head(format!("Δ acc pts [{}% CI]", crate::fmt::level(alpha)), true, "against the baseline strategy's cell; the verdict's interval (Tango score, Rao–Scott when clustered)"),
            head("lost / gained", true, "McNemar's discordant pairs: baseline right and this cell wrong (b) / the reverse (c); sorts by lost"),
            head("McNemar p", true, "exact"),
            head("Holm p", true, "Holm-adjusted over the run's comparisons"),
            head("words reduction % [95% CI]", true, "fewer words than the baseline; paired bootstrap 95 % interval"),
        ]);
    }
    head_row.extend([
        head(
            "recall@k",
            true,
            "gold evidence spans retrieved (datasets with evidence)",
        ),
        head("nDCG@k", true, ""),
    ]);
    head_row
}

// ---------------------------------------------------------------------------------------
// Pages.

#[derive(Serialize)]
struct Plot {
    name: String,
    svg: String,
}

#[derive(Serialize)]
struct Page<'a> {
    title: String,
    kind: &'static str,
    subtitle: String,
    verdict: Option<&'static str>,
    facts: Vec<(String, String)>,
    notes: Vec<String>,
    tables: Vec<Table>,
    lists: Vec<(String, Vec<String>)>,
    plots: Vec<Plot>,
    css: &'a str,
    js: &'a str,
    data: String,
}

fn render(page: &Page<'_>) -> Result<String> {
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("page.html", TEMPLATE)?;
    Ok(env.get_template("page.html")?.render(page)?)
}

/// An SVG plot as markup to inline: without the XML declaration, with a `viewBox` so CSS can
/// scale it.
fn inline_svg(svg: &str) -> String {
    let body = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    };
    if body.contains("viewBox") {
        return body.to_string();
    }
    let attr = |name: &str| -> Option<String> {
        let open = &body[..body.find('>')?];
        let i = open.find(&format!("{name}=\""))? + name.len() + 2;
        Some(open[i..].split('"').next()?.to_string())
    };
    match (attr("width"), attr("height")) {
        (Some(w), Some(h)) => body.replacen("<svg", &format!("<svg viewBox=\"0 0 {w} {h}\""), 1),
        _ => body.to_string(),
    }
}

/// What the report page of a run is built from.
pub struct RunReport<'a> {
    /// The run directory (plots are read from `plots/`, the page written here).
    pub dir: &'a Path,
    /// The config's settings (name, baseline strategy, seed).
    pub settings: &'a crate::report::ReportSettings,
    /// The config's cells, in config order.
    pub cells: &'a [CellRecord],
    /// Rows by cell id.
    pub rows: &'a HashMap<String, Vec<QuestionRow>>,
    /// Each non-baseline cell's comparison with its baseline cell (by cell id).
    pub comparisons: &'a HashMap<String, Comparison>,
    /// The planned family of the primary metric (summary.md's verdict), when the run has one.
    pub family: Option<&'a crate::verdicts::Family>,
    /// The datasets' questions and documents ([`Corpus::load`]).
    pub corpora: &'a [Corpus],
    /// The run's plots (PNG paths as `write_plots` returns them; the SVG beside each is
    /// inlined).
    pub plots: &'a [String],
    /// Finished cells of other configs in `cells/`, ignored.
    pub ignored_cells: usize,
}

/// Writes `report.html` into the run directory (atomically) and returns its path.
///
/// # Errors
/// A passage id that is not `DOC:START-END`, an unreadable plot or explain file, a template
/// error, or an I/O error naming the file.
pub fn write_run_report(r: &RunReport<'_>) -> Result<PathBuf> {
    let family = r.family;
    let cells: Vec<PageCell> = r
        .cells
        .iter()
        .map(|c| {
            let m = r.comparisons.get(&c.id);
            Ok(PageCell {
                uid: c.id.clone(),
                side: None,
                record: c,
                rows: r.rows.get(&c.id).map_or(&[], Vec::as_slice),
                explain: crate::explain::read_explain_lines(r.dir, &c.id)?,
                pair: m.map(|m| m.baseline_cell_id.clone()),
                is_baseline: c.cell.strategy == r.settings.baseline,
                discordant: m.map(|m| (m.paired.mcnemar.b, m.paired.mcnemar.c)),
            })
        })
        .collect::<Result<_>>()?;
    let mut pngs: Vec<&String> = r.plots.iter().collect();
    pngs.sort();
    let mut plots = Vec::new();
    for png in pngs {
        let svg_path = Path::new(png).with_extension("svg");
        let svg = std::fs::read_to_string(&svg_path)
            .with_context(|| format!("cannot read plot {}", svg_path.display()))?;
        plots.push(Plot {
            name: svg_path
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
            svg: inline_svg(&svg),
        });
    }
    let records: Vec<&CellRecord> = r.cells.iter().collect();
    let mut datasets: Vec<&str> = r.cells.iter().map(|c| c.cell.dataset.as_str()).collect();
    datasets.sort_unstable();
    datasets.dedup();
    let mut notes: Vec<String> = r
        .corpora
        .iter()
        .filter_map(|c| c.note.as_ref().map(|n| format!("{}: {n}", c.name)))
        .collect();
    if r.ignored_cells > 0 {
        notes.push(format!(
            "{} finished cell(s) of another configuration in cells/ are not part of this report",
            r.ignored_cells
        ));
    }
    let page = Page {
        title: format!("chunkbench run: {}", r.settings.name),
        kind: "report",
        subtitle: format!(
            "{} cells · datasets {} · baseline strategy {}",
            r.cells.len(),
            datasets.join(", "),
            r.settings.baseline
        ),
        verdict: None,
        facts: vec![
            ("cells computed by".into(), {
                let mut codes: Vec<&str> = r.cells.iter().map(|c| c.code.as_str()).collect();
                codes.sort_unstable();
                codes.dedup();
                codes.join(", ")
            }),
            ("seed".into(), r.settings.seed.to_string()),
            (
                "bootstrap resamples".into(),
                r.settings.bootstrap_resamples.to_string(),
            ),
            (
                "primary metric".into(),
                family
                    .as_ref()
                    .map_or("–".into(), |f| f.primary.label().to_string()),
            ),
            (
                "planned comparisons · Holm family".into(),
                family.as_ref().map_or("0".into(), |f| {
                    format!(
                        "{} · {}",
                        f.size(),
                        f.confirmatory()
                            .next()
                            .map_or(0, |p| p.planned.comparison.holm_family)
                    )
                }),
            ),
        ],
        notes,
        tables: family
            .map(verdict_table)
            .into_iter()
            .chain(summary_tables(
                &records,
                r.comparisons,
                &r.settings.baseline,
                r.settings.verdict.alpha,
            ))
            .collect(),
        lists: Vec::new(),
        plots,
        css: CSS,
        js: JS,
        data: payload(&cells, r.corpora)?,
    };
    let path = r.dir.join(REPORT_HTML);
    write_atomic(&path, render(&page)?.as_bytes())?;
    Ok(path)
}

/// The badge class of a verdict: good (superior, equivalent, non-inferior), bad (inferior),
/// none (inconclusive).
fn verdict_badge(v: stats::Verdict) -> &'static str {
    match v {
        stats::Verdict::Inferior => "bad",
        stats::Verdict::Inconclusive => "",
        _ => "good",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_compares_numbers_as_numbers() {
        let mut v = vec![
            "fixed[size=1024]",
            "fixed[size=128]",
            "fixed[size=64]",
            "ear",
        ];
        v.sort_by_key(|s| natural_key(s));
        assert_eq!(
            v,
            [
                "ear",
                "fixed[size=64]",
                "fixed[size=128]",
                "fixed[size=1024]"
            ]
        );
        let mut v = vec![
            "m[c=0.9,t=0.6]",
            "m[c=0.8,t=0.45]",
            "m[c=0.8,t=0.3]",
            "m[c=0.8,t=0.6]",
        ];
        v.sort_by_key(|s| natural_key(s));
        assert_eq!(
            v,
            [
                "m[c=0.8,t=0.3]",
                "m[c=0.8,t=0.45]",
                "m[c=0.8,t=0.6]",
                "m[c=0.9,t=0.6]"
            ]
        );
        // A trailing dot stays text.
        assert!(natural_key("k=3.") < natural_key("k=8"));
    }

    #[test]
    fn script_data_cannot_close_its_element() {
        let s = script_safe(r#"{"t":"</script><!--"}"#);
        assert!(!s.contains("</"), "{s}");
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["t"], "</script><!--");
    }

    #[test]
    fn segments_merge_and_slice_exactly() {
        let doc = Document {
            id: "d".into(),
            title: String::new(),
            text: "Zürich — « névés » 富士山 end".into(),
            source: String::new(),
            license: String::new(),
        };
        let docs: HashMap<&str, &Document> = [("d", &doc)].into_iter().collect();
        let (a, b) = (
            doc.text.find("névés").unwrap(),
            doc.text.find("富士山").unwrap(),
        );
        let mut t = DocTable::new();
        t.intern("d", 0, 7);
        t.intern("d", 3, 12);
        t.intern("d", b, b + "富士山".len());
        t.intern("d", a, a + "névés".len());
        t.intern("unknown", 0, 3);
        let segs = t.segments(&docs);
        assert_eq!(
            segs[0],
            vec![(0, &doc.text[0..12]), (a, "névés"), (b, "富士山")]
        );
        assert!(segs[1].is_empty());
        // A span off a character boundary is dropped, never shown wrong.
        let mut t = DocTable::new();
        t.intern("d", 0, 2);
        assert!(t.segments(&docs)[0].is_empty());
    }

    #[test]
    fn svg_gets_a_view_box() {
        let s = inline_svg(
            "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"20\" xmlns=\"x\"></svg>",
        );
        assert!(s.starts_with("<svg viewBox=\"0 0 10 20\""), "{s}");
    }
}
