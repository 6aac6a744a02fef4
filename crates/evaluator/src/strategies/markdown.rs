//! `kind: markdown` — structure-aware chunking of Markdown and HTML documents, as users of
//! documentation corpora ask for (LangChain's `MarkdownHeaderTextSplitter` and
//! `HTMLHeaderTextSplitter`, LlamaIndex's `MarkdownNodeParser`, chonkie's recursive Markdown
//! rules), with byte spans kept exact:
//!
//! - **Sections.** A chunk never crosses a heading of level `max_level` or higher
//!   ([`chunker::headings`]: ATX and setext Markdown headings, HTML `<h1>`…`<h6>`). A run of
//!   sections holding nothing but headings (a title followed directly by a sub-heading) stays
//!   with the section after it, so no chunk is bare headings.
//! - **Blocks never split.** Fenced code blocks (CommonMark §4.5, [`chunker::headings::fenced_blocks`];
//!   an unclosed fence runs to the end of the document), pipe tables (GFM: a line with `|`
//!   followed by a delimiter row with `|`, up to the first blank line or line without `|`),
//!   HTML `<pre>` and `<table>` elements (nested tables counted) and comments, and YAML front
//!   matter are never cut, and headings inside them do not count. In a Markdown document an
//!   HTML block or heading counts only where it opens a line (CommonMark §4.6); an HTML page
//!   (opening with `<!DOCTYPE html` or `<html`) has its tags counted anywhere. A block longer than
//!   `size` is kept whole, as its own chunk, and counted (`blocks_over_size`).
//! - **Size cap.** A section longer than `size` (in `unit`) is cut greedily from its start, at
//!   the last boundary that keeps the piece within `size`, trying in order the boundaries
//!   between paragraphs (a blank line, or either end of a block), lines, sentences
//!   ([`chunker::segment::sentences`]) and words, never inside a heading or between a heading
//!   and its body; a piece with no boundary within `size` (one long word, a heading longer
//!   than `size`) is kept whole. Such sections are counted (`sections_split`).
//! - **Heading path kept.** The passages a question gets carry the heading path in force where
//!   each starts, in `explain/CELL.jsonl` and the report's explorer. To index each chunk under
//!   its path as well, wrap it: `{kind: headers, over: {kind: markdown, …}}`.
//!
//! Every chunk is the exact slice of its document between its span's offsets, trimmed of
//! surrounding word separators ([`chunker::is_word_separator`]); every other byte of a document
//! is in exactly one chunk.

use super::{
    check_tokenizer_field, common, one_per_hit, Chunker, Params, Passages, QuestionRecord, Ranking,
    StrategyStats,
};
use anyhow::{bail, Result};
use chunker::headings::{headings, path_at, Heading};
use chunker::{Chunk, Document, SizeLimit, Span, Unit};
use embed::Embedder;
use records::{Counter, ExplainNotes};
use retriever::{Hit, PassageIndex};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Markdown/HTML sections, capped at `size`, never split inside a code block or table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Markdown {
    /// Size unit: `words` (default), `chars` or `tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// The most a chunk holds, in units (blocks that cannot be split excepted).
    pub size: usize,
    /// tokenizer.json for `unit: tokens` (default [`super::DEFAULT_TOKENIZER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
    /// The deepest heading level that starts a new chunk, 1–6 (default 6: every heading).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_level: Option<u8>,
}

impl Markdown {
    fn unit(&self) -> Unit {
        self.unit.unwrap_or(Unit::Words)
    }
}

/// The counters this kind declares ([`Chunker::counters`]).
const COUNTERS: &[Counter] = &[
    Counter {
        name: "sections_split",
        doc: "sections longer than `size`, cut between paragraphs, lines, sentences or words",
        warn: false,
    },
    Counter {
        name: "blocks_over_size",
        doc: "code blocks and tables longer than `size`, kept whole as one chunk each",
        warn: true,
    },
];

impl Params for Markdown {
    const KIND: &'static str = "markdown";
    const SUMMARY: &'static str = "Markdown/HTML structure: one chunk per section (a heading up to `max_level`, default 6), sections over `size` cut between paragraphs, then lines, sentences, words, never inside a code fence, pipe table, `<pre>` or `<table>`; `unit` words (default), chars or tokens; heading paths in explain; counters `sections_split`, `blocks_over_size`";

    fn tokenizer_file(&self) -> Option<PathBuf> {
        common::tokenizer_file(self.unit(), &self.tokenizer)
    }

    fn check(&self) -> Result<()> {
        check_tokenizer_field(self.unit(), &self.tokenizer)?;
        if self.size == 0 {
            bail!("field `size`: must be at least 1");
        }
        if let Some(l) = self.max_level {
            if !(1..=6).contains(&l) {
                bail!("field `max_level`: {l} is not a heading level; give 1 to 6");
            }
        }
        Ok(())
    }

    fn build(&self) -> Result<Box<dyn Chunker>> {
        let tokenizer = common::load_tokenizer(self.unit(), &self.tokenizer)?;
        let limit = SizeLimit::new(self.size, super::sizer(self.unit(), tokenizer)?)?;
        Ok(Box::new(MarkdownChunker {
            limit,
            max_level: self.max_level.unwrap_or(6),
        }))
    }
}

struct MarkdownChunker {
    limit: SizeLimit,
    max_level: u8,
}

/// What chunking one document counted.
#[derive(Default)]
struct DocCounts {
    sections_split: u64,
    blocks_over_size: u64,
}

impl Chunker for MarkdownChunker {
    fn chunk_corpus(
        &self,
        docs: &[Document],
        _: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)> {
        use rayon::prelude::*;
        let per: Vec<(Vec<Chunk>, DocCounts)> = docs
            .par_iter()
            .map(|d| {
                let mut n = DocCounts::default();
                let spans = chunk_text(&d.text, &self.limit, self.max_level, &mut n);
                let chunks = spans.iter().map(|s| Chunk::new(d, s.start, s.end));
                (chunks.collect(), n)
            })
            .collect();
        let mut stats = StrategyStats::default();
        let sums = [
            per.iter().map(|p| p.1.sections_split).sum(),
            per.iter().map(|p| p.1.blocks_over_size).sum(),
        ];
        // In COUNTERS' order, under its names (declared once).
        for (c, value) in COUNTERS.iter().zip(sums) {
            stats.counters.insert(c.name.to_string(), value);
        }
        let chunks: Vec<Chunk> = per.into_iter().flat_map(|p| p.0).collect();
        stats.over_size = common::count_over_size(docs, &chunks, &self.limit);
        Ok((chunks, stats))
    }

    fn size_limit(&self) -> Option<SizeLimit> {
        Some(self.limit.clone())
    }

    fn counters(&self) -> &'static [Counter] {
        COUNTERS
    }

    fn passages<'a>(
        &self,
        docs: &'a [Document],
        _: &'a PassageIndex,
    ) -> Result<Box<dyn Passages + 'a>> {
        use rayon::prelude::*;
        let headings = docs
            .par_iter()
            .map(|d| (d.id.as_str(), Structure::of(&d.text).headings))
            .collect();
        Ok(Box::new(HeadingPaths { headings }))
    }
}

/// Each retrieved chunk is one passage, noted with the heading path in force at its start.
struct HeadingPaths<'a> {
    headings: HashMap<&'a str, Vec<Heading>>,
}

impl Passages for HeadingPaths<'_> {
    fn rank(
        &self,
        _: &[Document],
        index: &PassageIndex,
        _: &datasets::Question,
        hits: &[Hit],
        _: usize,
    ) -> Ranking {
        let mut ranking = one_per_hit(hits, index.passages());
        let paths = ranking
            .ranked
            .iter()
            .map(|r| {
                let c = &r.chunks[0];
                let hs = self
                    .headings
                    .get(c.doc_id.as_str())
                    .map_or(&[][..], Vec::as_slice);
                let path = path_at(hs, c.span.start);
                if path.is_empty() {
                    "§ (before the first heading)".to_string()
                } else {
                    format!("§ {}", path.join(" > "))
                }
            })
            .collect();
        ranking.record = Some(Arc::new(PathRecord(paths)));
        ranking
    }
}

/// The heading path of each ranked passage of one question.
#[derive(Debug)]
struct PathRecord(Vec<String>);

impl QuestionRecord for PathRecord {
    fn values(&self) -> retriever::records::RecordValues {
        retriever::records::RecordValues::default()
    }

    fn explain(
        &self,
        question: &datasets::Question,
        row: &records::QuestionRow,
        _: usize,
        _: &[Document],
    ) -> Result<Option<serde_json::Value>> {
        let n = row.passages.len().min(self.0.len());
        let notes = ExplainNotes {
            question_id: question.id.clone(),
            notes: Vec::new(),
            passage_notes: self.0[..n].to_vec(),
        };
        Ok(Some(serde_json::to_value(notes)?))
    }
}

/// The chunks of one document's text as trimmed byte spans, in order (the module's rules).
fn chunk_text(text: &str, limit: &SizeLimit, max_level: u8, n: &mut DocCounts) -> Vec<Span> {
    let doc = Structure::of(text);
    // Section starts: the text's start and every heading up to `max_level`.
    let mut starts: Vec<usize> = vec![0];
    for h in doc
        .headings
        .iter()
        .filter(|h| h.level <= max_level && h.start > 0)
    {
        // A section that is only headings joins the next one (however many there are).
        let last = *starts.last().expect("starts is never empty");
        if !doc.headings_only(last, h.start) {
            starts.push(h.start);
        }
    }
    starts.push(text.len());
    let mut out = Vec::new();
    for w in starts.windows(2) {
        let before = out.len();
        cap_section(&doc, w[0], w[1], limit, &mut out, n);
        if out.len() > before + 1 {
            n.sections_split += 1;
        }
    }
    out
}

/// What the chunker reads of a document's structure: its blocks that are never cut, its
/// headings (outside those blocks) and each heading's span.
struct Structure<'t> {
    text: &'t str,
    /// Fences, tables, `<pre>`, `<table>`, HTML comments, front matter: sorted, disjoint.
    protected: Vec<Span>,
    /// Headings outside protected blocks, in order.
    headings: Vec<Heading>,
    /// Each heading's span (its line, a setext underline, or an HTML heading's element).
    heading_spans: Vec<Span>,
}

impl<'t> Structure<'t> {
    fn of(text: &'t str) -> Self {
        let protected = protected_blocks(text);
        let html = html_mode(text);
        let line_starts: Vec<usize> = chunker::headings::line_spans(text).map(|l| l.0).collect();
        let headings: Vec<Heading> = headings(text)
            .into_iter()
            .filter(|h| !inside_any(&protected, h.start))
            .filter(|h| {
                html || !text[h.start..].starts_with('<')
                    || at_line_start(text, &line_starts, h.start)
            })
            .collect();
        let heading_spans = headings.iter().map(|h| heading_span(text, h)).collect();
        Structure {
            text,
            protected,
            headings,
            heading_spans,
        }
    }

    /// True when `[a, b)` holds nothing but headings and word separators.
    fn headings_only(&self, a: usize, b: usize) -> bool {
        let mut at = a;
        // Spans are sorted and disjoint: start at the first one ending after `a`.
        let first = self.heading_spans.partition_point(|h| h.end <= a);
        for h in &self.heading_spans[first..] {
            if h.start >= b {
                break;
            }
            if !blank(&self.text[at..h.start.max(at)]) {
                return false;
            }
            at = at.max(h.end.min(b));
        }
        blank(&self.text[at..b])
    }

    /// True when a cut at `b` would fall inside a heading (`strict`), or also directly after
    /// one, before its body (`!strict`).
    fn bad_cut(&self, b: usize, strict: bool) -> bool {
        let i = self.heading_spans.partition_point(|h| h.end < b);
        self.heading_spans[i.saturating_sub(1)..]
            .iter()
            .take(2)
            .any(|h| {
                let body = h.end + separator_run(&self.text[h.end..]);
                (h.start < b && b < h.end) || (!strict && h.end <= b && b <= body)
            })
    }
}

/// True when `s` holds only word separators ([`chunker::is_word_separator`]).
fn blank(s: &str) -> bool {
    s.chars().all(chunker::is_word_separator)
}

/// Bytes of word separators at the start of `s`.
fn separator_run(s: &str) -> usize {
    s.len() - s.trim_start_matches(chunker::is_word_separator).len()
}

/// True when the document is an HTML page (it opens with `<!DOCTYPE html` or `<html`, ASCII
/// case-insensitive, after word separators): its tags count wherever they are. Otherwise
/// (Markdown, also one that opens with an HTML fragment such as a README's `<p align=…>` or
/// `<!-- toc -->`) an HTML block or heading counts only at the start of a line (up to 3 spaces
/// of indent), as CommonMark's HTML blocks (§4.6).
fn html_mode(text: &str) -> bool {
    let head = text.trim_start_matches(chunker::is_word_separator);
    let head = head
        .get(..head.len().min(14))
        .unwrap_or("")
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// True when byte `at` is on a line start after at most 3 spaces.
fn at_line_start(text: &str, line_starts: &[usize], at: usize) -> bool {
    let i = line_starts.partition_point(|&s| s <= at);
    let start = line_starts[i.saturating_sub(1)];
    let lead = &text[start..at];
    lead.len() <= 3 && lead.bytes().all(|c| c == b' ')
}

/// A heading's span: an HTML heading's element up to its closing tag; a Markdown heading's
/// line, with a setext heading's underline.
fn heading_span(text: &str, h: &Heading) -> Span {
    let rest = &text[h.start..];
    if rest.starts_with('<') {
        // The closing tag, found without copying the rest of the document.
        let close = format!("</h{}", h.level);
        let end = rest
            .as_bytes()
            .windows(close.len())
            .position(|w| w.eq_ignore_ascii_case(close.as_bytes()))
            .and_then(|i| rest[i..].find('>').map(|j| h.start + i + j + 1))
            .unwrap_or(text.len());
        return Span {
            start: h.start,
            end,
        };
    }
    let mut lines = chunker::headings::line_spans(rest);
    let first = lines.next().map_or(0, |l| l.1.len());
    let mut end = h.start + first;
    if !rest.trim_start_matches(' ').starts_with('#') {
        // A setext heading: its text line, then the underline (at its own offset; the
        // underline's text may also occur in the heading's line).
        if let Some((off, under, _)) = lines.next() {
            end = h.start + off + under.len();
        }
    }
    Span {
        start: h.start,
        end: end.max(h.start),
    }
}

/// True when byte `b` is strictly inside a block of `protected` (sorted, disjoint).
fn inside(protected: &[Span], b: usize) -> bool {
    let i = protected.partition_point(|p| p.end <= b);
    protected.get(i).is_some_and(|p| p.start < b && b < p.end)
}

/// True when byte `b` is in a block of `protected`, its first byte included.
fn inside_any(protected: &[Span], b: usize) -> bool {
    let i = protected.partition_point(|p| p.end <= b);
    protected.get(i).is_some_and(|p| p.start <= b && b < p.end)
}

/// Cuts the section `[start, end)` of the document into trimmed spans within `limit` (the
/// module's rules), appending them to `out`.
fn cap_section(
    doc: &Structure,
    start: usize,
    end: usize,
    limit: &SizeLimit,
    out: &mut Vec<Span>,
    n: &mut DocCounts,
) {
    let text = doc.text;
    // A long piece is first measured on a prefix ending with a whole word: its count is at
    // most the piece's, so a prefix over the size settles it without measuring the rest.
    let probe = limit.size().saturating_mul(16).max(64);
    let fits = |a: usize, b: usize| {
        let piece = trimmed(text, a, b).map_or("", |s| &text[s.start..s.end]);
        if piece.len() > probe {
            if let Some(cut) = embed::whitespace_run_at_or_after(piece, probe) {
                if limit.measure(&piece[..cut]) > limit.size() {
                    return false;
                }
            }
        }
        limit.measure(piece) <= limit.size()
    };
    let Some(whole) = trimmed(text, start, end) else {
        return;
    };
    if fits(whole.start, whole.end) {
        out.push(whole);
        return;
    }
    let (strict, greedy) = cut_points(doc, start, end);
    let mut at = whole.start;
    while let Some(rest) = trimmed(text, at, end) {
        at = rest.start;
        let cut = greedy
            .iter()
            .find_map(|cands| {
                last_fitting(&cands[cands.partition_point(|&b| b <= at)..], |b| {
                    fits(at, b)
                })
            })
            .unwrap_or_else(|| {
                // Nothing fits: the first indivisible piece (a block, a heading, a long word)
                // is kept whole.
                let next = strict
                    .iter()
                    .filter_map(|c| c.get(c.partition_point(|&b| b <= at)).copied())
                    .min()
                    .unwrap_or(end);
                if doc.protected.iter().any(|p| p.start < next && at < p.end) {
                    n.blocks_over_size += 1;
                }
                next
            });
        if let Some(piece) = trimmed(text, at, cut) {
            out.push(piece);
        }
        at = cut;
    }
}

/// The cut points of the section `[start, end)` by level of preference, none inside a block
/// or a heading (`strict`, for an indivisible piece) and, for the greedy cut, none directly
/// after a heading either, with the section's end last in every level (`greedy`).
fn cut_points(doc: &Structure, start: usize, end: usize) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
    // Cut points by preference, none inside a block or a heading: for the greedy cut, none
    // directly after a heading either (a heading stays with its body).
    let all = boundaries(doc.text, start, end, &doc.protected);
    let strict: Vec<Vec<usize>> = all
        .iter()
        .map(|v| {
            v.iter()
                .copied()
                .filter(|&b| !doc.bad_cut(b, true))
                .collect()
        })
        .collect();
    let greedy: Vec<Vec<usize>> = strict
        .iter()
        .map(|v| {
            v.iter()
                .copied()
                .filter(|&b| !doc.bad_cut(b, false))
                .collect()
        })
        .collect();
    // The section's end is the last cut point of every level, so the galloping search
    // finds it when the rest fits (no measuring of the whole rest for each piece).
    let greedy: Vec<Vec<usize>> = greedy
        .into_iter()
        .map(|mut v| {
            v.push(end);
            v
        })
        .collect();
    (strict, greedy)
}

/// The last of `cands` (sorted) for which `fits` holds, given that it holds for a prefix of
/// them: a galloping search from the first, so a piece costs measurements of pieces at most
/// twice its size (a binary search over the whole section would measure half the section
/// each time: quadratic in long sections).
fn last_fitting(cands: &[usize], fits: impl Fn(usize) -> bool) -> Option<usize> {
    if cands.is_empty() || !fits(cands[0]) {
        return None;
    }
    let (mut lo, mut step) = (0, 1);
    while lo + step < cands.len() && fits(cands[lo + step]) {
        lo += step;
        step *= 2;
    }
    // fits(cands[lo]); not fits(cands[hi]) or hi is past the end.
    let mut hi = (lo + step).min(cands.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(cands[mid]) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(cands[lo])
}

/// `[a, b)` of `text` without leading and trailing word separators (whitespace, zero-width
/// spaces, BOM); `None` when nothing is left.
fn trimmed(text: &str, a: usize, b: usize) -> Option<Span> {
    let s = &text[a..b];
    let lead = separator_run(s);
    let t = s[lead..].trim_end_matches(chunker::is_word_separator);
    (!t.is_empty()).then(|| Span {
        start: a + lead,
        end: a + lead + t.len(),
    })
}

/// The section's cut points, one list per level of preference: paragraphs (after a blank
/// line; either end of a block), lines, sentences, words. Each list is sorted, strictly
/// inside `(start, end)` and never strictly inside a protected block.
fn boundaries(text: &str, start: usize, end: usize, protected: &[Span]) -> Vec<Vec<usize>> {
    let s = &text[start..end];
    let mut paragraphs = Vec::new();
    let mut lines = Vec::new();
    let mut blank_before = false;
    for (ls, line, _) in chunker::headings::line_spans(s) {
        if ls > 0 {
            lines.push(start + ls);
            if blank_before && !blank(line) {
                paragraphs.push(start + ls);
            }
        }
        blank_before = blank(line);
    }
    for p in protected {
        paragraphs.extend([p.start, p.end]);
    }
    let sentences = chunker::segment::sentences(s)
        .iter()
        .map(|x| start + x.start)
        .collect();
    let words = chunker::word_spans(s)
        .iter()
        .map(|x| start + x.start)
        .collect();
    [paragraphs, lines, sentences, words]
        .into_iter()
        .map(|mut v: Vec<usize>| {
            v.retain(|&b| b > start && b < end && !inside(protected, b));
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect()
}

/// Byte ranges of `text` that are never split: fenced code blocks, pipe tables, HTML `<pre>`
/// and `<table>` elements and comments, YAML front matter; sorted and disjoint (overlapping
/// ones merged).
fn protected_blocks(text: &str) -> Vec<Span> {
    let fences: Vec<Span> = chunker::headings::fenced_blocks(text)
        .into_iter()
        .map(|(start, end)| Span { start, end })
        .collect();
    let mut blocks = fences.clone();
    blocks.extend(front_matter(text));
    blocks.extend(pipe_tables(text, &fences));
    let html = html_mode(text);
    for (open, close) in [("<pre", "</pre"), ("<table", "</table"), ("<!--", "-->")] {
        blocks.extend(
            html_blocks(text, open, close, html)
                .into_iter()
                .filter(|b| !inside_any(&fences, b.start))
                .map(|b| {
                    // In Markdown a `<table>` block (CommonMark §4.6, type 6) also ends at a
                    // blank line, so an unclosed one does not run to the end.
                    if html || open != "<table" {
                        return b;
                    }
                    let end = chunker::headings::line_spans(&text[b.start..b.end])
                        .find(|l| blank(l.1))
                        .map_or(b.end, |l| b.start + l.0);
                    Span {
                        start: b.start,
                        end,
                    }
                }),
        );
    }
    blocks.sort_by_key(|b| (b.start, b.end));
    let mut merged: Vec<Span> = Vec::new();
    for b in blocks {
        match merged.last_mut() {
            Some(m) if b.start < m.end => m.end = m.end.max(b.end),
            _ => merged.push(b),
        }
    }
    merged
}

/// YAML front matter: a first line `---` and the next line `---` or `...` (or none: to the end).
fn front_matter(text: &str) -> Option<Span> {
    let mut lines = chunker::headings::line_spans(text);
    let (start, first, _) = lines.next()?;
    if first.trim_start_matches('\u{FEFF}').trim_end() != "---" {
        return None;
    }
    let end = lines
        .find(|l| matches!(l.1.trim_end(), "---" | "..."))
        .map_or(text.len(), |l| l.2);
    Some(Span { start, end })
}

/// GFM pipe tables outside fenced blocks: a line with `|` followed by a delimiter row, up to
/// the first blank line or line without `|`.
fn pipe_tables(text: &str, fences: &[Span]) -> Vec<Span> {
    let lines: Vec<(usize, &str, usize)> = chunker::headings::line_spans(text).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (ls, l, _) = lines[i];
        if !inside_any(fences, ls)
            && l.contains('|')
            && lines.get(i + 1).is_some_and(|n| delimiter_row(n.1))
        {
            let mut last = i + 1;
            while lines
                .get(last + 1)
                .is_some_and(|n| n.1.contains('|') && !blank(n.1) && !inside_any(fences, n.0))
            {
                last += 1;
            }
            out.push(Span {
                start: ls,
                end: lines[last].2,
            });
            i = last + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// A GFM table delimiter row with at least one `|`: cells of `-` with optional `:` at
/// either end.
fn delimiter_row(line: &str) -> bool {
    let t = line.trim();
    if !t.contains('|') {
        return false;
    }
    let inner = t.strip_prefix('|').unwrap_or(t);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').all(|c| {
        let c = c.trim();
        let c = c.strip_prefix(':').unwrap_or(c);
        let c = c.strip_suffix(':').unwrap_or(c);
        !c.is_empty() && c.chars().all(|x| x == '-')
    })
}

/// HTML elements from `open` (`<pre`, `<table`, `<!--`; ASCII case-insensitive, nested ones
/// counted for tags) to the end of the matching `close`, outermost only; an unclosed one runs
/// to the end. In Markdown documents (`anywhere` false) an element counts only when it opens
/// a line (CommonMark §4.6), so a tag named in prose or in a code span starts nothing.
fn html_blocks(text: &str, open: &str, close: &str, anywhere: bool) -> Vec<Span> {
    let lower = text.to_ascii_lowercase();
    let line_starts: Vec<usize> = chunker::headings::line_spans(text).map(|l| l.0).collect();
    let comment = open == "<!--";
    let is_tag = |at: usize, name: &str| {
        lower[at..].starts_with(name)
            && (comment
                || lower[at + name.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| c == '>' || c == '/' || c.is_ascii_whitespace()))
    };
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut at = 0;
    while let Some(i) = lower[at..].find(if depth == 0 {
        open
    } else if comment {
        close
    } else {
        "<"
    }) {
        let pos = at + i;
        at = pos + 1;
        if depth == 0 {
            if is_tag(pos, open) && (anywhere || at_line_start(text, &line_starts, pos)) {
                start = pos;
                depth = 1;
            }
        } else if !comment && is_tag(pos, open) {
            depth += 1;
        } else if comment || is_tag(pos, close) {
            depth -= 1;
            if depth == 0 {
                let end = if comment {
                    pos + close.len()
                } else {
                    lower[pos..].find('>').map_or(text.len(), |j| pos + j + 1)
                };
                out.push(Span { start, end });
                at = end;
            }
        }
    }
    if depth > 0 {
        out.push(Span {
            start,
            end: text.len(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chunks(text: &str, size: usize, max_level: u8) -> (Vec<&str>, u64, u64) {
        let mut n = DocCounts::default();
        let limit = SizeLimit::words(size).unwrap();
        let spans = chunk_text(text, &limit, max_level, &mut n);
        let texts = spans.iter().map(|s| &text[s.start..s.end]).collect();
        (texts, n.sections_split, n.blocks_over_size)
    }

    #[test]
    fn sections_at_headings_with_bare_headings_joined() {
        let t = "Preamble line.\n\n# Guide\n\n## Install\n\nRun the installer.\n\n## Use\n\nCall it.\n### Deep\nMore.\n";
        let (c, split, over) = chunks(t, 100, 6);
        assert_eq!(
            c,
            [
                "Preamble line.",
                "# Guide\n\n## Install\n\nRun the installer.",
                "## Use\n\nCall it.",
                "### Deep\nMore."
            ]
        );
        assert_eq!((split, over), (0, 0));
        // Headings deeper than max_level do not start a chunk.
        let (c, _, _) = chunks(t, 100, 2);
        assert_eq!(c[2], "## Use\n\nCall it.\n### Deep\nMore.");
    }

    #[test]
    fn code_fences_and_tables_are_never_cut() {
        let code = "```python\n# not a heading\nx = 1\n\ny = 2\nz = 3\n```";
        let table = "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |";
        let t = format!("# A\n\nOne two three.\n\n{code}\n\nFour five.\n\n{table}\n\nSix.\n");
        let (c, split, over) = chunks(&t, 4, 6);
        assert!(c.contains(&code), "{c:#?}");
        assert!(c.contains(&table), "{c:#?}");
        assert_eq!((split, over), (1, 2), "{c:#?}");
        // Within the cap, a block shares a chunk with its neighbours.
        let (c, _, over) = chunks(&t, 40, 6);
        assert_eq!((c.len(), over), (1, 0));
    }

    #[test]
    fn long_sections_cut_at_paragraphs_then_sentences_then_words() {
        let t = "# T\n\nAlpha beta gamma. Delta epsilon.\n\nZeta eta theta iota.\n";
        let (c, split, _) = chunks(t, 7, 6);
        assert_eq!(
            c,
            [
                "# T\n\nAlpha beta gamma. Delta epsilon.",
                "Zeta eta theta iota."
            ]
        );
        assert_eq!(split, 1);
        let (c, _, _) = chunks(t, 4, 6);
        assert_eq!(
            c,
            [
                "# T\n\nAlpha beta",
                "gamma. Delta epsilon.",
                "Zeta eta theta iota."
            ]
        );
        let (c, _, _) = chunks("one two three four five", 2, 6);
        assert_eq!(c, ["one two", "three four", "five"]);
    }

    #[test]
    fn html_headings_pre_and_tables() {
        let t = "<h1>Doc</h1>\n<p>Intro text here.</p>\n<h2 id=x>Part</h2>\n<pre>\n<h2>not a heading</h2>\ncode code code code\n</pre>\n<TABLE><tr><td><table><tr><td>in</td></tr></table></td></tr></TABLE>\n";
        let (c, _, over) = chunks(t, 4, 6);
        assert_eq!(c[0], "<h1>Doc</h1>\n<p>Intro text here.</p>");
        let pre = &t[t.find("<pre>").unwrap()..t.find("</pre>").unwrap() + 6];
        assert!(c.iter().any(|x| x.contains(pre)), "{c:#?}");
        assert!(
            c.iter()
                .any(|x| x.starts_with("<TABLE>") && x.ends_with("</TABLE>")),
            "{c:#?}"
        );
        assert!(over >= 1);
        assert_eq!(Structure::of(t).headings.len(), 2);
    }

    #[test]
    fn unclosed_fences_run_to_the_end() {
        let t = "# A\n\n~~~\ncode\n# still code\n";
        let (c, _, _) = chunks(t, 100, 6);
        assert_eq!(c, ["# A\n\n~~~\ncode\n# still code"]);
    }

    /// docs/reference.md case 20: a `#` comment in code is no heading, a fence line with
    /// text after it does not close the block, an unclosed block is kept, and no chunk is a
    /// bare opening fence, at a size (8 words) the code block exceeds.
    #[test]
    fn reference_case_20_code_fences() {
        let t = "# Setup\nInstall the package.\n\n```python\n# configure the client\nclient = make_client(retries=3)\n``` not a closing fence\nprint(client)\n```\n\n## Usage\nRun it twice.\n\n```bash\necho \"this fence is never closed\"\n";
        let (c, _, over) = chunks(t, 8, 6);
        let block = &t[t.find("```python").unwrap()..t.find("print(client)\n```").unwrap() + 17];
        assert!(c.iter().any(|x| x.contains(block)), "{c:#?}");
        assert!(c.iter().all(|x| *x != "```python"), "{c:#?}");
        assert!(
            c.last()
                .unwrap()
                .ends_with("echo \"this fence is never closed\""),
            "{c:#?}"
        );
        assert!(c.iter().any(|x| x.starts_with("## Usage")), "{c:#?}");
        assert_eq!(over, 1);
    }

    /// A tag named in prose, a code span, a fence, an indented code block or an HTML comment
    /// of a Markdown document opens no block and no heading (the hostile review's cases).
    #[test]
    fn tags_count_only_where_they_open_a_line() {
        for middle in [
            "`<pre>` is a tag",
            "Text mentioning <pre> inline.",
            "```html\n<pre>\n```",
            "```html\n<table>\n```",
            "    <pre>",
            "<!-- <table> -->",
            "Some text <h2>mid</h2> more text.",
            "    <h2>indented</h2>",
        ] {
            let t = format!("# A\n\n{middle}\n\n# B\n\nb\n");
            let (c, _, _) = chunks(&t, 50, 6);
            assert_eq!(c.last(), Some(&"# B\n\nb"), "{middle:?}: {c:#?}");
        }
        // An HTML page's tags count anywhere.
        let t =
            "<html><body><h1>One</h1><p>a b c</p><h2>Two</h2><pre>x y z w v</pre></body></html>";
        assert_eq!(Structure::of(t).headings.len(), 2);
        // A README that opens with an HTML fragment is still Markdown.
        for head in [
            "<p align=\"center\"><img src=\"logo.png\"></p>",
            "<!-- toc -->",
        ] {
            let t = format!("{head}\n\n# Project\n\nUse a <table> here.\n\n## Install\n\nrun it\n");
            let (c, _, _) = chunks(&t, 50, 6);
            assert_eq!(c.last(), Some(&"## Install\n\nrun it"), "{c:#?}");
        }
        // An unclosed `<table>` at a line start ends at a blank line.
        let (c, _, _) = chunks("# A\n\n<table><tr><td>x\n\n# B\n\nb\n", 50, 6);
        assert_eq!(c.last(), Some(&"# B\n\nb"), "{c:#?}");
    }

    #[test]
    fn fences_follow_commonmark() {
        // Backticks in a backtick fence's info string: not a fence.
        let t = "# A\n\n```let x = 1``` is inline code.\n\n# B\n\nb\n\n# C\n\nc\n";
        assert_eq!(chunks(t, 50, 6).0.len(), 3);
        // A closing fence indented 4 spaces does not close; the next one does.
        let t = "# A\n\n```markdown\n- item\n\n    ```\n    code\n    ```\n```\n\n# Next\n\nnext body\n";
        let (c, _, _) = chunks(t, 50, 6);
        assert_eq!(c.last(), Some(&"# Next\n\nnext body"), "{c:#?}");
    }

    #[test]
    fn lone_cr_ends_lines() {
        let t = "# A\rx y\r# B\ry z\r";
        assert_eq!(chunks(t, 50, 6).0, ["# A\rx y", "# B\ry z"]);
    }

    #[test]
    fn headings_stay_with_their_body() {
        // A run of bare headings joins the section that has a body.
        let (c, _, _) = chunks("# A\n## B\n### C\ntext bison.\n", 50, 6);
        assert_eq!(c, ["# A\n## B\n### C\ntext bison."]);
        // A setext heading whose line holds its own underline's text is still bare.
        let t = "Rules ----- here\n-----\n\n## Sub\n\nbody\n";
        assert_eq!(chunks(t, 50, 6).0, [t.trim_end()]);
        let t = "<H2 class=x>Bare</H2>\n<h3>Sub</h3>\nbody\n";
        assert_eq!(chunks(t, 50, 6).0, [t.trim_end()]);
        // Cut: never between a heading and its body.
        let body: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
        let t = format!("# A\n\n## B\n\n{}\n", body.join(" "));
        let (c, _, _) = chunks(&t, 50, 6);
        assert!(c[0].starts_with("# A\n\n## B\n\nw0 "), "{c:#?}");
        let t = format!(
            "# A\n\n{}\n\n## B\n\nshort body here.\n",
            body[..30].join(" ")
        );
        let (c, _, _) = chunks(&t, 35, 1);
        assert!(c.iter().all(|x| !x.ends_with("## B")), "{c:#?}");
        assert_eq!(c.last(), Some(&"## B\n\nshort body here."), "{c:#?}");
        // A heading longer than the size is a chunk of its own, cut after its line.
        let t = format!("# {}\n\nbody alpaca llama kiwi.\n", body[..44].join(" "));
        let (c, _, _) = chunks(&t, 40, 6);
        assert_eq!(c.len(), 2, "{c:#?}");
        assert_eq!(c[1], "body alpaca llama kiwi.");
    }

    #[test]
    fn invisible_text_and_front_matter() {
        assert!(chunks("\u{FEFF}", 5, 6).0.is_empty());
        assert!(chunks("\u{200B}\n\n", 5, 6).0.is_empty());
        let t = "---\ntitle: x\n# comment\n---\n# Real\n\nbody\n";
        assert_eq!(Structure::of(t).headings.len(), 1);
        assert_eq!(
            chunks(t, 50, 6).0,
            ["---\ntitle: x\n# comment\n---", "# Real\n\nbody"]
        );
    }

    proptest! {
        /// Offsets are exact, chunks are in order and disjoint, and every non-whitespace byte
        /// is in exactly one chunk, for any mix of headings, fences, tables and HTML.
        #[test]
        fn every_byte_once_in_order(
            parts in proptest::collection::vec(prop_oneof![
                Just("# H1\n"), Just("## H2\n"), Just("Title\n=====\n"), Just("\n"),
                Just("Some words here. And more.\n"), Just("```\ncode # x\n"), Just("```\n"),
                Just("| a | b |\n|---|---|\n"), Just("| 1 | 2 |\n"), Just("<pre>"), Just("</pre>"),
                Just("<h3>é ü</h3>"), Just("<table>"), Just("</table>"), Just("ünïcödé wörds "),
                Just("~~~~\n"), Just("  \t\n"),
            ], 0..40),
            size in 1usize..12,
            level in 1u8..7,
        ) {
            let text: String = parts.concat();
            let mut n = DocCounts::default();
            let spans = chunk_text(&text, &SizeLimit::words(size).unwrap(), level, &mut n);
            let mut covered = vec![false; text.len()];
            let mut last = 0;
            for s in &spans {
                prop_assert!(s.start >= last && s.start < s.end && s.end <= text.len());
                prop_assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
                prop_assert_eq!(text[s.start..s.end].trim(), &text[s.start..s.end]);
                for c in covered.iter_mut().take(s.end).skip(s.start) {
                    *c = true;
                }
                last = s.end;
            }
            for (i, ch) in text.char_indices() {
                prop_assert!(chunker::is_word_separator(ch) || covered[i], "byte {} of {:?}", i, text);
            }
        }
    }
}
