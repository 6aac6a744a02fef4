//! `chunkbench explain RUN QUESTION_ID`: why each cell of a run retrieved what it did for one
//! question, and where its answer went wrong.
//!
//! Reads the run directory only: `cells/ID.json` (the cell), `cells/ID.csv` (the question's
//! row: answer, passages, scores, metrics, failure attribution) and, for cells whose strategy
//! explains its questions, `explain/ID.jsonl` (written by the runner): EAR's anchors, matches
//! with byte offsets and texts, score parts and window counts, or another kind's plain notes
//! ([`records::ExplainNotes`], printed as they are: the question's lines, then one note beside
//! each passage).

use anyhow::{bail, Context, Result};
use chunker::anchor::AnchorKind;
use records::{read_rows_csv, CellRecord, ExplainNotes, Failure};
use retriever::ear::{EarStats, ScoreParts};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// One line of `explain/ID.jsonl`: an EAR cell's record of one question, written by the
/// runner and read by [`explain`]. On disk the keys of every object are sorted (the line is
/// written through a `serde_json::Value`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainLine {
    /// Question id.
    pub question_id: String,
    /// Question text.
    pub question: String,
    /// Option texts.
    pub options: Vec<String>,
    /// Gold option index (0-based); absent for a retrieval-only question.
    pub gold: Option<usize>,
    /// Chosen option index; absent when the cell has no reader.
    pub choice: Option<usize>,
    /// Whether the answer was correct; absent when the cell has no reader.
    pub correct: Option<bool>,
    /// Failure attribution (per_question.csv's `failure`).
    pub failure: String,
    /// EAR's bookkeeping for the question.
    pub stats: EarStats,
    /// The question's and options' anchors.
    pub anchors: Vec<ExplainAnchor>,
    /// The top-k passages, best first.
    pub passages: Vec<ExplainPassage>,
}

/// One anchor of the question or an option.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainAnchor {
    /// `question` or `option A`, `option B`, ...
    pub source: String,
    /// Anchor kind.
    pub kind: AnchorKind,
    /// Normalised form.
    pub norm: String,
    /// Byte span `[start, end)` in its source text.
    pub span: [usize; 2],
    /// The anchor's text (that slice).
    pub text: String,
}

/// One retrieved EAR passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainPassage {
    /// `DOC:START-END`.
    pub id: String,
    /// Document id.
    pub doc_id: String,
    /// Byte span of the passage.
    pub span: [usize; 2],
    /// Byte span of the window before expansion.
    pub window: [usize; 2],
    /// Words of the passage.
    pub words: usize,
    /// EAR score.
    pub score: f64,
    /// The score's parts (anchor, lexical, date).
    pub parts: ScoreParts,
    /// True for a fallback parent (no anchor matched).
    pub fallback: bool,
    /// Summary sentences (`expand: summary`), as `DOC:START-END`.
    pub summary: Vec<String>,
    /// Query anchor ↔ corpus occurrence matches inside the passage.
    pub matches: Vec<ExplainMatch>,
}

/// One query anchor matched to one corpus occurrence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainMatch {
    /// `question` or `option A`, ...
    pub source: String,
    /// The query anchor's kind.
    pub query_kind: AnchorKind,
    /// Normalised form both share.
    pub norm: String,
    /// Byte span in the question or option text.
    pub query_span: [usize; 2],
    /// That slice.
    pub query_text: String,
    /// The corpus anchor's kind, or `phrase` for a phrase match.
    pub corpus_kind: String,
    /// Byte span in the document.
    pub corpus_span: [usize; 2],
    /// That slice.
    pub corpus_text: String,
}

impl ExplainLine {
    /// The explanation of one question of an EAR cell: its anchors (with their text in the
    /// question or option), the top `k` passages with their matches (query and corpus spans
    /// and texts), the answer from its row. `docs` are the corpus the record's document
    /// numbers index.
    pub fn of(
        q: &datasets::Question,
        r: &retriever::ear::EarResult,
        row: &records::QuestionRow,
        k: usize,
        docs: &[chunker::Document],
    ) -> ExplainLine {
        let anchors = r
            .query_anchors
            .iter()
            .map(|a| ExplainAnchor {
                source: source_name(a.source),
                kind: a.anchor.kind,
                norm: a.anchor.norm.clone(),
                span: [a.anchor.span.start, a.anchor.span.end],
                text: source_text(q, a.source)[a.anchor.span.start..a.anchor.span.end].to_string(),
            })
            .collect();
        let passages = r
            .passages
            .iter()
            .take(k)
            .map(|p| ExplainPassage::of(q, p, &docs[p.doc]))
            .collect();
        ExplainLine {
            question_id: q.id.clone(),
            question: q.question.clone(),
            options: q.options.clone(),
            gold: q.gold(),
            choice: row.choice,
            correct: row.correct.map(|c| c == 1),
            failure: row.failure.map_or("", Failure::as_str).to_string(),
            stats: r.stats.clone(),
            anchors,
            passages,
        }
    }
}

impl ExplainPassage {
    /// One retrieved EAR passage `p` of question `q`, in document `d`.
    fn of(q: &datasets::Question, p: &retriever::ear::EarPassage, d: &chunker::Document) -> Self {
        let matches = p
            .matches
            .iter()
            .map(|m| ExplainMatch {
                source: source_name(m.source),
                query_kind: m.query_kind,
                norm: m.norm.clone(),
                query_span: [m.query_span.start, m.query_span.end],
                query_text: source_text(q, m.source)[m.query_span.start..m.query_span.end]
                    .to_string(),
                corpus_kind: m
                    .corpus_kind
                    .map_or("phrase".to_string(), |k| k.to_string()),
                corpus_span: [m.corpus_span.start, m.corpus_span.end],
                corpus_text: d.text[m.corpus_span.start..m.corpus_span.end].to_string(),
            })
            .collect();
        ExplainPassage {
            id: format!("{}:{}-{}", d.id, p.span.start, p.span.end),
            doc_id: d.id.clone(),
            span: [p.span.start, p.span.end],
            window: [p.window.start, p.window.end],
            words: chunker::count_words(&d.text[p.span.start..p.span.end]),
            score: p.score,
            parts: p.parts,
            fallback: p.fallback,
            summary: p
                .summary
                .iter()
                .map(|s| format!("{}:{}-{}", d.id, s.start, s.end))
                .collect(),
            matches,
        }
    }
}

/// The text an anchor came from: the question or one option.
fn source_text(q: &datasets::Question, s: retriever::ear::AnchorSource) -> &str {
    match s {
        retriever::ear::AnchorSource::Question => q.question.as_str(),
        retriever::ear::AnchorSource::Option(i) => q.options[i].as_str(),
    }
}

/// `question` or `option A`, `option B`, ...
fn source_name(s: retriever::ear::AnchorSource) -> String {
    match s {
        retriever::ear::AnchorSource::Question => "question".to_string(),
        retriever::ear::AnchorSource::Option(i) => format!("option {}", (b'A' + i as u8) as char),
    }
}

fn fmt_span(s: [usize; 2]) -> String {
    format!("[{},{}]", s[0], s[1])
}

/// Renders the explanation of `question_id` in every cell of the run at `run_dir` (or only
/// in cells whose id starts with `cell` or whose strategy is named `cell`), as plain text.
///
/// # Errors
/// A missing or unreadable run directory or cell file (naming the path), an unknown question
/// id, or a `cell` prefix matching no cell.
pub fn explain(run_dir: &Path, question_id: &str, cell: Option<&str>) -> Result<String> {
    let cells_dir = run_dir.join("cells");
    let entries = std::fs::read_dir(&cells_dir).with_context(|| {
        format!(
            "{} is not a chunkbench run directory (no cells/); give the directory `chunkbench run` printed",
            run_dir.display()
        )
    })?;
    let mut records: Vec<CellRecord> = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") {
            let rec: CellRecord = serde_json::from_slice(
                &std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?,
            )
            .with_context(|| format!("{} is not a cell record", p.display()))?;
            records.push(rec);
        }
    }
    records.sort_by(|a, b| {
        (
            &a.cell.dataset,
            &a.cell.strategy,
            &a.cell.retriever,
            a.cell.k,
            &a.cell.reader,
        )
            .cmp(&(
                &b.cell.dataset,
                &b.cell.strategy,
                &b.cell.retriever,
                b.cell.k,
                &b.cell.reader,
            ))
    });
    if let Some(prefix) = cell {
        records.retain(|r| r.id.starts_with(prefix) || r.cell.strategy == prefix);
        if records.is_empty() {
            bail!(
                "no cell id starts with `{prefix}` and no strategy is named so in {}",
                cells_dir.display()
            );
        }
    }
    let mut out = String::new();
    let mut found = false;
    for rec in &records {
        let csv_path = cells_dir.join(format!("{}.csv", rec.id));
        let bytes = match records::read_cell(&cells_dir, &rec.id) {
            Ok(stored) => stored.csv,
            Err(e) => {
                let _ = writeln!(
                    out,
                    "== cell {} skipped: {e}; run the config again to recompute it\n",
                    rec.id
                );
                continue;
            }
        };
        let rows = read_rows_csv(&bytes, &csv_path.display().to_string())?;
        let Some(row) = rows.into_iter().find(|r| r.question_id == question_id) else {
            continue;
        };
        found = true;
        let c = &rec.cell;
        let _ = writeln!(
            out,
            "== cell {} · {} · {} × {} × k={} × {}",
            rec.id, c.dataset, c.strategy, c.retriever, c.k, c.reader
        );
        let letter = |i: Option<usize>| i.map_or('–', |i| (b'A' + i as u8) as char);
        let _ = writeln!(
            out,
            "answer {} (gold {}) · {}{} · failure: {} · {} words retrieved ({} unique)",
            letter(row.choice),
            letter(row.gold),
            match row.correct {
                Some(1) => "correct",
                Some(_) => "wrong",
                None => "not read (retrieval only)",
            },
            if row.tied > 1 {
                format!(" (a tie of {} options: counted wrong)", row.tied)
            } else {
                String::new()
            },
            row.failure.map_or("–", Failure::as_str),
            row.words,
            row.unique_words
        );
        if !row.scores.is_empty() {
            let scores: Vec<String> = row
                .scores
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{} {v:.6}", letter(Some(i))))
                .collect();
            let _ = writeln!(out, "reader scores: {}", scores.join(" · "));
        }
        if let Some(r) = row.metrics.get("recall") {
            let _ = writeln!(
                out,
                "evidence: recall@k {r:.3}, span recall {:.3}",
                row.metrics.get("span_recall").unwrap_or(0.0)
            );
        } else {
            let _ = writeln!(out, "evidence: none in the dataset (ranking is not judged)");
        }
        match read_explain(run_dir, &rec.id, question_id)? {
            Some(OneExplained::Ear(v)) => render_ear(&mut out, &v),
            other => {
                let notes = match other {
                    Some(OneExplained::Notes(n)) => n,
                    _ => ExplainNotes::default(),
                };
                for n in &notes.notes {
                    let _ = writeln!(out, "{n}");
                }
                for (i, p) in row.passages.iter().enumerate() {
                    let score = row
                        .passage_scores
                        .get(i)
                        .map_or(String::new(), |s| format!("{s:.6}"));
                    let note = match notes.passage_notes.get(i) {
                        Some(n) if !n.is_empty() => format!("  {n}"),
                        _ => String::new(),
                    };
                    let _ = writeln!(out, "  #{} {p}  score {score}{note}", i + 1);
                }
            }
        }
        out.push('\n');
    }
    if !found {
        bail!(
            "question `{question_id}` is not in {}{} ({} cells); ids are in the `question_id` column of per_question.csv",
            run_dir.display(),
            if cell.is_some() { " within the cells selected by --cell" } else { "" },
            records.len()
        );
    }
    Ok(out)
}

/// A cell's `explain/ID.jsonl`, read: EAR's lines ([`ExplainLine`]) or the plain notes any
/// other kind writes ([`records::ExplainNotes`], told apart by their `passage_notes` key);
/// both empty when the cell has no explain file.
#[derive(Debug, Clone, Default)]
pub struct Explained {
    /// EAR's lines, in question order.
    pub ear: Vec<ExplainLine>,
    /// Other kinds' notes, in question order.
    pub notes: Vec<ExplainNotes>,
}

/// Reads `explain/ID.jsonl` of a cell (empty when the cell has none).
///
/// # Errors
/// A line that is not an explain record (naming file and line).
pub fn read_explain_lines(run_dir: &Path, cell_id: &str) -> Result<Explained> {
    let p = run_dir.join("explain").join(format!("{cell_id}.jsonl"));
    let mut out = Explained::default();
    let Ok(text) = std::fs::read_to_string(&p) else {
        return Ok(out);
    };
    for (i, l) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(l)
            .with_context(|| format!("{}:{}: not an explain record", p.display(), i + 1))?;
        if v.get("passage_notes").is_some() {
            out.notes
                .push(serde_json::from_value(v).with_context(|| {
                    format!("{}:{}: not an explain record", p.display(), i + 1)
                })?);
        } else {
            out.ear
                .push(serde_json::from_value(v).with_context(|| {
                    format!("{}:{}: not an explain record", p.display(), i + 1)
                })?);
        }
    }
    Ok(out)
}

/// The explanation of `question_id` in one cell, if its strategy wrote one.
enum OneExplained {
    Ear(ExplainLine),
    Notes(ExplainNotes),
}

fn read_explain(run_dir: &Path, cell_id: &str, question_id: &str) -> Result<Option<OneExplained>> {
    let all = read_explain_lines(run_dir, cell_id)?;
    if let Some(l) = all.ear.into_iter().find(|l| l.question_id == question_id) {
        return Ok(Some(OneExplained::Ear(l)));
    }
    Ok(all
        .notes
        .into_iter()
        .find(|l| l.question_id == question_id)
        .map(OneExplained::Notes))
}

fn render_ear(out: &mut String, v: &ExplainLine) {
    let st = &v.stats;
    let _ = writeln!(
        out,
        "EAR: {} question anchors, {} option anchors; {} forms matched ({}), {} occurrences; windows {} before dedup, {} after{}",
        st.question_anchors,
        st.option_anchors,
        st.matched_forms,
        if st.exact_match { "exact anchor match" } else { "no exact anchor match" },
        st.occurrences,
        st.windows_before_dedup,
        st.windows_after_dedup,
        if st.fallback { "; FALLBACK to lexical ranking of parents" } else { "" }
    );
    for a in &v.anchors {
        let _ = writeln!(
            out,
            "  anchor  {:<9} {:<12} {:?} -> `{}` at bytes {}",
            a.source,
            a.kind.as_str(),
            a.text,
            a.norm,
            fmt_span(a.span)
        );
    }
    for (i, p) in v.passages.iter().enumerate() {
        if p.fallback {
            let _ = writeln!(
                out,
                "  #{} {}  {} words  fallback parent, retriever score {:.4}",
                i + 1,
                p.id,
                p.words,
                p.score,
            );
            continue;
        }
        let _ = writeln!(
            out,
            "  #{} {}  {} words  score {:.4}; parts: anchor {:.3} · lexical {:.3} · date {:.3} (weighted sum)",
            i + 1,
            p.id,
            p.words,
            p.score,
            p.parts.anchor,
            p.parts.lexical,
            p.parts.date,
        );
        // One line per corpus occurrence, listing every question/option anchor it matched.
        let mut lines: Vec<(String, Vec<String>)> = Vec::new();
        for m in &p.matches {
            let key = format!(
                "{} {:?} ↔ corpus {} {:?} at bytes {}",
                m.query_kind.as_str(),
                m.query_text,
                m.corpus_kind,
                m.corpus_text,
                fmt_span(m.corpus_span)
            );
            match lines.iter_mut().find(|(k, _)| *k == key) {
                Some((_, srcs)) => srcs.push(m.source.clone()),
                None => lines.push((key, vec![m.source.clone()])),
            }
        }
        for (key, srcs) in lines {
            let _ = writeln!(out, "      {}: {key}", srcs.join(", "));
        }
        if !p.summary.is_empty() {
            let _ = writeln!(out, "      summary sentences: {}", p.summary.join(" "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell's explain file may hold another kind's plain notes: they are read as notes,
    /// not refused as broken EAR lines, and a damaged line is named with its file and line.
    #[test]
    fn notes_lines_are_told_from_ear_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("explain")).unwrap();
        let line = serde_json::to_string(&ExplainNotes {
            question_id: "q1".into(),
            notes: vec!["one".into()],
            passage_notes: vec!["§ A > B".into(), String::new()],
        })
        .unwrap();
        std::fs::write(dir.path().join("explain/c.jsonl"), format!("{line}\n")).unwrap();
        let got = read_explain_lines(dir.path(), "c").unwrap();
        assert!(got.ear.is_empty());
        assert_eq!(got.notes[0].passage_notes, ["§ A > B", ""]);
        assert!(read_explain_lines(dir.path(), "missing")
            .unwrap()
            .notes
            .is_empty());
        std::fs::write(
            dir.path().join("explain/c.jsonl"),
            format!("{line}\n{{\"passage_notes\": 3}}\n"),
        )
        .unwrap();
        let e = format!("{:#}", read_explain_lines(dir.path(), "c").unwrap_err());
        assert!(e.contains("c.jsonl:2: not an explain record"), "{e}");
    }
}
