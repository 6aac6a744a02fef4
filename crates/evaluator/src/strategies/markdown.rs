//! `kind: markdown` — structure-aware chunking of Markdown and HTML documents, as users of
//! documentation corpora ask for (LangChain's `MarkdownHeaderTextSplitter` and
//! `HTMLHeaderTextSplitter`, LlamaIndex's `MarkdownNodeParser`, chonkie's recursive Markdown
//! rules), with byte spans kept exact:
//!
//! - **Sections.** A chunk never crosses a heading of level `max_level` or higher
//!   ([`chunker::headings`]: ATX and setext Markdown headings, HTML `<h1>`…`<h6>`). A section
//!   holding nothing but its heading (a title followed directly by a sub-heading) stays with
//!   the section after it, so no chunk is a bare heading.
//! - **Blocks never split.** Fenced code blocks (CommonMark §4.5; an unclosed fence runs to the
//!   end of the document), pipe tables (GFM: a line with `|` followed by a delimiter row with
//!   `|`, up to the first blank line or line without `|`) and HTML `<pre>` and `<table>`
//!   elements (nested tables counted; unclosed ones run to the end) are never cut, and headings
//!   inside them do not count. A block longer than `size` is kept whole, as its own chunk, and
//!   counted (`blocks_over_size`).
//! - **Size cap.** A section longer than `size` (in `unit`) is cut greedily from its start, at
//!   the last boundary that keeps the piece within `size`, trying in order the boundaries
//!   between paragraphs (a blank line, or either end of a block), lines, sentences
//!   ([`chunker::segment::sentences`]) and words; a piece with no boundary within `size` (one
//!   long word) is kept whole. Such sections are counted (`sections_split`).
//! - **Heading path kept.** The passages a question gets carry the heading path in force where
//!   each starts, in `explain/CELL.jsonl` and the report's explorer. To index each chunk under
//!   its path as well, wrap it: `{kind: headers, over: {kind: markdown, …}}`.
//!
//! Every chunk is the exact slice of its document between its span's offsets, trimmed of
//! surrounding whitespace; every non-whitespace byte of a document is in exactly one chunk.

use super::{
    check_tokenizer_field, common, one_per_hit, Chunker, Params, Passages, QuestionRecord,
    Ranking, StrategyStats,
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
        for (name, value) in [
            ("sections_split", per.iter().map(|p| p.1.sections_split).sum()),
            ("blocks_over_size", per.iter().map(|p| p.1.blocks_over_size).sum()),
        ] {
            stats.counters.insert(name.to_string(), value);
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
            .map(|d| (d.id.as_str(), visible_headings(&d.text, &protected_blocks(&d.text))))
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
                let hs = self.headings.get(c.doc_id.as_str()).map_or(&[][..], Vec::as_slice);
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
    let protected = protected_blocks(text);
    let hs = visible_headings(text, &protected);
    // Section starts, each with whether it starts at a heading (the preamble does not).
    let mut starts: Vec<(usize, bool)> = vec![(0, hs.first().is_some_and(|h| h.start == 0))];
    for h in hs.iter().filter(|h| h.level <= max_level && h.start > 0) {
        // A section that is only its heading joins the next one.
        let (last, at_heading) = *starts.last().expect("starts is never empty");
        if !(at_heading && heading_only(&text[last..h.start])) {
            starts.push((h.start, true));
        }
    }
    starts.push((text.len(), false));
    let mut out = Vec::new();
    for w in starts.windows(2) {
        let before = out.len();
        let section = Section {
            start: w[0].0,
            end: w[1].0,
            at_heading: w[0].1,
        };
        cap_section(text, section, limit, &protected, &mut out, n);
        if out.len() > before + 1 {
            n.sections_split += 1;
        }
    }
    out
}

/// A section `[start, end)` of a text, and whether it starts at a heading (whose line is
/// never a chunk of its own when the section is cut).
#[derive(Clone, Copy)]
struct Section {
    start: usize,
    end: usize,
    at_heading: bool,
}

/// True when `section` holds no more than one line of text (its heading; a setext heading's
/// underline and an HTML heading's closing tag on that line included).
fn heading_only(section: &str) -> bool {
    let rest = match section.trim_start().find('\n') {
        Some(i) => &section.trim_start()[i + 1..],
        None => "",
    };
    let rest = rest.trim();
    rest.is_empty() || rest.chars().all(|c| c == '=' || c == '-')
}

/// The headings that are not inside a protected block.
fn visible_headings(text: &str, protected: &[Span]) -> Vec<Heading> {
    headings(text)
        .into_iter()
        .filter(|h| !inside(protected, h.start))
        .collect()
}

/// True when byte `b` is strictly inside a block of `protected` (sorted, disjoint).
fn inside(protected: &[Span], b: usize) -> bool {
    let i = protected.partition_point(|p| p.end <= b);
    protected.get(i).is_some_and(|p| p.start < b && b < p.end)
}

/// Cuts `section` of `text` into trimmed spans within `limit` (the module's rules),
/// appending them to `out`.
fn cap_section(
    text: &str,
    section: Section,
    limit: &SizeLimit,
    protected: &[Span],
    out: &mut Vec<Span>,
    n: &mut DocCounts,
) {
    let end = section.end;
    let fits = |a: usize, b: usize| {
        let piece = trimmed(text, a, b).map_or("", |s| &text[s.start..s.end]);
        limit.measure(piece) <= limit.size()
    };
    let Some(whole) = trimmed(text, section.start, end) else {
        return;
    };
    if fits(whole.start, whole.end) {
        out.push(whole);
        return;
    }
    // Boundaries by preference (computed once per section), each sorted, none inside a block.
    let levels: Vec<Vec<usize>> = boundaries(text, section.start, end, protected);
    let mut at = whole.start;
    while let Some(rest) = trimmed(text, at, end) {
        let first = at == whole.start;
        at = rest.start;
        if fits(at, end) {
            out.push(rest);
            break;
        }
        // The cut points past `at`; the first piece of a section that starts at a heading
        // holds more than the heading's line.
        let bare = first && section.at_heading;
        let past = |cands| cut_points_past(text, cands, at, bare);
        let mut cut = None;
        for cands in levels.iter().map(|c| past(c)) {
            // The last boundary whose piece fits (sizes grow with the piece).
            let k = cands.partition_point(|&b| fits(at, b));
            if k > 0 {
                cut = Some(cands[k - 1]);
                break;
            }
        }
        let cut = cut.unwrap_or_else(|| {
            // Nothing fits: the first indivisible piece (a block, a long word) is kept whole.
            let next = levels
                .iter()
                .filter_map(|c| past(c).first().copied())
                .min()
                .unwrap_or(end);
            if protected.iter().any(|p| p.start < next && at < p.end) {
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

/// The cut points of `cands` (sorted) past `at`; with `bare_heading`, without those that
/// would leave the piece from `at` one line (a heading alone), which are a prefix.
fn cut_points_past<'c>(text: &str, cands: &'c [usize], at: usize, bare_heading: bool) -> &'c [usize] {
    let from = cands.partition_point(|&b| b <= at);
    let bare = if bare_heading {
        cands[from..]
            .iter()
            .take_while(|&&b| heading_only(&text[at..b]))
            .count()
    } else {
        0
    };
    &cands[from + bare..]
}

/// `[a, b)` of `text` without leading and trailing whitespace; `None` when nothing is left.
fn trimmed(text: &str, a: usize, b: usize) -> Option<Span> {
    let s = &text[a..b];
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
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
    let mut pos = start;
    for line in s.split_inclusive('\n') {
        if pos > start {
            lines.push(pos);
            if blank_before && !line.trim().is_empty() {
                paragraphs.push(pos);
            }
        }
        blank_before = line.trim().is_empty();
        pos += line.len();
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
/// and `<table>` elements; sorted and disjoint (overlapping ones merged).
fn protected_blocks(text: &str) -> Vec<Span> {
    let mut blocks = markdown_blocks(text);
    blocks.extend(html_blocks(text, "pre"));
    blocks.extend(html_blocks(text, "table"));
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

/// Fenced code blocks and pipe tables, line by line.
fn markdown_blocks(text: &str) -> Vec<Span> {
    let mut lines = Vec::new();
    let mut pos = 0;
    for l in text.split_inclusive('\n') {
        lines.push((pos, l.trim_end_matches(['\n', '\r'])));
        pos += l.len();
    }
    let line_end = |j: usize| lines.get(j + 1).map_or(text.len(), |l| l.0);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (ls, l) = lines[i];
        if let Some((ch, len)) = fence_open(l) {
            let close = (i + 1..lines.len()).find(|&j| fence_close(lines[j].1, ch, len));
            let last = close.unwrap_or(lines.len() - 1);
            out.push(Span {
                start: ls,
                end: line_end(last),
            });
            i = last + 1;
        } else if l.contains('|') && lines.get(i + 1).is_some_and(|n| delimiter_row(n.1)) {
            let mut last = i + 1;
            while lines
                .get(last + 1)
                .is_some_and(|n| n.1.contains('|') && !n.1.trim().is_empty())
            {
                last += 1;
            }
            out.push(Span {
                start: ls,
                end: line_end(last),
            });
            i = last + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// An opening code fence (CommonMark §4.5): up to 3 spaces, then 3 or more backticks (with no
/// backtick in the info string) or tildes; its character and length.
fn fence_open(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.chars().take_while(|c| *c == ch).count();
    (len >= 3 && !(ch == '`' && t[len..].contains('`'))).then_some((ch, len))
}

/// A closing fence for an opening one of `ch` × `len`: up to 3 spaces, at least `len` of
/// `ch`, then only whitespace.
fn fence_close(line: &str, ch: char, len: usize) -> bool {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return false;
    }
    let n = t.chars().take_while(|c| *c == ch).count();
    n >= len && t[n * ch.len_utf8()..].trim().is_empty()
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

/// `<TAG …>…</TAG>` elements (ASCII case-insensitive, nested ones counted), outermost only;
/// an unclosed one runs to the end of the text.
fn html_blocks(text: &str, tag: &str) -> Vec<Span> {
    let lower = text.to_ascii_lowercase();
    let (open, close) = (format!("<{tag}"), format!("</{tag}"));
    let is_tag = |at: usize, name: &str| {
        lower[at..].starts_with(name)
            && lower[at + name.len()..]
                .chars()
                .next()
                .is_none_or(|c| c == '>' || c == '/' || c.is_ascii_whitespace())
    };
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (at, _) in lower.match_indices('<') {
        if is_tag(at, &open) {
            if depth == 0 {
                start = at;
            }
            depth += 1;
        } else if depth > 0 && is_tag(at, &close) {
            depth -= 1;
            if depth == 0 {
                let end = lower[at..].find('>').map_or(text.len(), |i| at + i + 1);
                out.push(Span { start, end });
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
            ["# T\n\nAlpha beta", "gamma. Delta epsilon.", "Zeta eta theta iota."]
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
        assert!(c.iter().any(|x| x.starts_with("<TABLE>") && x.ends_with("</TABLE>")), "{c:#?}");
        assert!(over >= 1);
        let hs = visible_headings(t, &protected_blocks(t));
        assert_eq!(hs.len(), 2);
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
            c.last().unwrap().ends_with("echo \"this fence is never closed\""),
            "{c:#?}"
        );
        assert!(c.iter().any(|x| x.starts_with("## Usage")), "{c:#?}");
        assert_eq!(over, 1);
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
                prop_assert!(ch.is_whitespace() || covered[i], "byte {} of {:?}", i, text);
            }
        }
    }
}
