//! Section headings of a document's text, for contextual chunk headers (docs/reference.md
//! §3d): where each heading starts (byte offset), its level and its text, and the heading
//! path in force at any byte of the text.
//!
//! Recognised, in the cleaned text itself:
//! - Markdown ATX headings (CommonMark §4.2): a line of up to 3 spaces, 1–6 `#`, then a space
//!   or tab and the heading; a closing run of `#` is dropped. An empty heading (`#` alone) is
//!   skipped.
//! - Markdown setext headings (CommonMark §4.3): a non-blank line directly followed by a line
//!   of `=` (level 1) or `-` (level 2) only (up to 3 spaces of indent); the text line must
//!   follow a blank line or start the text, so a `---` rule after a paragraph is not taken
//!   for a heading of the paragraph's last line.
//! - HTML headings `<h1>`…`<h6>` (any attributes, any case); tags inside are removed, and
//!   `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&#39;` and `&nbsp;` are decoded.
//!
//! Inside fenced code blocks (CommonMark §4.5: ```` ``` ```` or `~~~` lines) nothing is a
//! heading. Cleaned corpora without headings in their text (OpenStax pages keep their title,
//! "chapter — page", in the document's `title` field and drop section titles from the text)
//! give an empty list: the header is then the title alone.

use regex::Regex;
use std::sync::LazyLock;

/// One heading of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// Byte offset of the heading's first byte (its line start, or its `<h` tag).
    pub start: usize,
    /// Level 1 (top) to 6.
    pub level: u8,
    /// The heading's text, trimmed, whitespace runs collapsed to one space.
    pub text: String,
}

static ATX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$").expect("ATX regex"));
static ATX_CLOSE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[ \t]+)#+[ \t]*$").expect("ATX closing regex"));
static SETEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ {0,3}(=+|-+)[ \t]*$").expect("setext regex"));
static HTML_OPEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<h([1-6])(?:\s[^>]*)?>").expect("HTML heading regex"));
static HTML_CLOSE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)</h([1-6])\s*>").expect("HTML closing regex"));
static TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?s)<[^>]*>").expect("tag regex"));

fn clean(text: &str) -> String {
    let t = TAG
        .replace_all(text, " ")
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lines of `text` as `(start, line, end)`: the line without its ending, and the offset
/// after the ending. A line ends at `\n`, `\r\n` or a lone `\r` (CommonMark §2.2).
pub fn line_spans(text: &str) -> impl Iterator<Item = (usize, &str, usize)> + '_ {
    let b = text.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= b.len() {
            return None;
        }
        let start = pos;
        let mut i = start;
        while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
            i += 1;
        }
        let line = &text[start..i];
        let end = if i < b.len() && b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
            i + 2
        } else if i < b.len() {
            i + 1
        } else {
            i
        };
        pos = end;
        Some((start, line, end))
    })
}

/// An opening code fence (CommonMark §4.5): up to 3 spaces, then 3 or more backticks (whose
/// info string holds no backtick) or tildes; its character and length.
pub fn fence_open(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.chars().take_while(|c| *c == ch).count();
    (len >= 3 && !(ch == '`' && t[len..].contains('`'))).then_some((ch, len))
}

/// True when `line` closes a fence opened with `len` × `ch`: up to 3 spaces, at least `len`
/// of `ch`, then only spaces or tabs.
pub fn fence_close(line: &str, ch: char, len: usize) -> bool {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return false;
    }
    let n = t.chars().take_while(|c| *c == ch).count();
    n >= len && t[n * ch.len_utf8()..].trim().is_empty()
}

/// The fenced code blocks of `text` as byte ranges `[start, end)` (each from its opening
/// line to the end of its closing line; an unclosed one to the end of the text), in order.
pub fn fenced_blocks(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, char, usize)> = None;
    for (start, line, end) in line_spans(text) {
        match open {
            Some((from, ch, len)) => {
                if fence_close(line, ch, len) {
                    out.push((from, end));
                    open = None;
                }
            }
            None => {
                if let Some((ch, len)) = fence_open(line) {
                    open = Some((start, ch, len));
                }
            }
        }
    }
    if let Some((from, _, _)) = open {
        out.push((from, text.len()));
    }
    out
}

/// The headings of `text`, in text order (module docs for what counts).
pub fn headings(text: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let fences = fenced_blocks(text);
    let in_fence = |at: usize| {
        let i = fences.partition_point(|f| f.1 <= at);
        fences.get(i).is_some_and(|f| f.0 <= at && at < f.1)
    };
    // The previous line when it may be a setext heading's text: (start, line, whether the
    // line before it was blank or the text's start).
    let mut prev: Option<(usize, &str, bool)> = None;
    let mut last_blank = true;
    for (start, line, _) in line_spans(text) {
        if in_fence(start) {
            prev = None;
            last_blank = true;
            continue;
        }
        if let Some(c) = ATX.captures(line) {
            let body = c.get(2).map_or("", |m| m.as_str());
            let t = clean(&ATX_CLOSE.replace(body, ""));
            if !t.is_empty() {
                out.push(Heading {
                    start,
                    level: c[1].len() as u8,
                    text: t,
                });
            }
            prev = None;
            last_blank = false;
            continue;
        }
        if let (Some((pstart, ptext, after_blank)), Some(c)) = (prev, SETEXT.captures(line)) {
            if after_blank {
                let t = clean(ptext);
                if !t.is_empty() {
                    out.push(Heading {
                        start: pstart,
                        level: if c[1].starts_with('=') { 1 } else { 2 },
                        text: t,
                    });
                }
                prev = None;
                last_blank = false;
                continue;
            }
        }
        if line.trim().is_empty() {
            prev = None;
            last_blank = true;
        } else {
            prev = Some((start, line, last_blank));
            last_blank = false;
        }
    }
    // An HTML heading is an opening `<hN>` and the first `</hN>` after it, before the next
    // opening heading tag (an unclosed heading is skipped without hiding the next one).
    let opens: Vec<(usize, usize, u8)> = HTML_OPEN
        .captures_iter(text)
        .map(|c| {
            let m = c.get(0).expect("whole match");
            (m.start(), m.end(), c[1].parse().unwrap_or(1))
        })
        .collect();
    for (i, &(start, body, level)) in opens.iter().enumerate() {
        let limit = opens.get(i + 1).map_or(text.len(), |o| o.0);
        let close = HTML_CLOSE
            .captures_iter(&text[body..limit])
            .find(|c| c[1].parse::<u8>().ok() == Some(level));
        let Some(close) = close else { continue };
        let inner = &text[body..body + close.get(0).expect("whole match").start()];
        let t = clean(inner);
        if !t.is_empty() && !in_fence(start) {
            out.push(Heading {
                start,
                level,
                text: t,
            });
        }
    }
    out.sort_by_key(|h| h.start);
    out
}

/// The heading path in force at byte `at`: for each level, the last heading starting at or
/// before `at`, dropping deeper levels whenever a heading of a higher (or equal) level comes;
/// outermost first. A chunk that starts with a heading is under that heading.
pub fn path_at(headings: &[Heading], at: usize) -> Vec<&str> {
    let mut stack: Vec<&Heading> = Vec::new();
    for h in headings.iter().take_while(|h| h.start <= at) {
        while stack.last().is_some_and(|t| t.level >= h.level) {
            stack.pop();
        }
        stack.push(h);
    }
    stack.iter().map(|h| h.text.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(t: &str) -> Vec<(u8, String)> {
        headings(t).into_iter().map(|h| (h.level, h.text)).collect()
    }

    #[test]
    fn markdown_atx_setext_and_html() {
        let t = "# Cells\n\nIntro.\n\n## The membrane ##\nText.\n\nTransport\n---------\n\nMore.\n\n<h3 class=\"x\">Active <em>transport</em> &amp; pumps</h3>\n";
        assert_eq!(
            texts(t),
            [
                (1, "Cells".to_string()),
                (2, "The membrane".to_string()),
                (2, "Transport".to_string()),
                (3, "Active transport & pumps".to_string()),
            ]
        );
        let hs = headings(t);
        assert_eq!(&t[hs[1].start..hs[1].start + 2], "##");
        // Path at the start, inside the second section, after the third heading.
        assert_eq!(path_at(&hs, 0), ["Cells"]);
        assert_eq!(
            path_at(&hs, t.find("Text.").unwrap()),
            ["Cells", "The membrane"]
        );
        assert_eq!(
            path_at(&hs, t.len()),
            ["Cells", "Transport", "Active transport & pumps"]
        );
    }

    #[test]
    fn an_unclosed_html_heading_does_not_hide_the_next() {
        let t = "<h2>Unclosed heading\n<p>x</p>\n<h4>Zebrafish</h4>\n<p>echo</p>";
        assert_eq!(texts(t), [(4, "Zebrafish".to_string())]);
    }

    /// Fences as CommonMark §4.5 has them: a backtick line with backticks after it opens
    /// nothing, a closing line indented 4 spaces closes nothing; lines also end at a lone CR.
    #[test]
    fn fences_and_line_endings_follow_commonmark() {
        let t = "```let x = 1``` is code.\n\n# B\n";
        assert_eq!(texts(t), [(1, "B".to_string())]);
        let t = "```\n    ```\n# inside\n```\n# C\n";
        assert_eq!(texts(t), [(1, "C".to_string())]);
        let t = "# A\rx\r~~~\r# code\r~~~\r## B\r";
        assert_eq!(texts(t), [(1, "A".to_string()), (2, "B".to_string())]);
        assert_eq!(fenced_blocks("```\nx\n"), [(0, 6)]);
    }

    #[test]
    fn not_headings() {
        // A rule after a paragraph line, `#hashtag`, code fences, an empty `#`, 4-space indent.
        let t = "Some text.\nPara line\n---\n\n#hashtag\n\n```\n# not a heading\n<h1>nor this</h1>\n```\n\n#\n\n    # indented code\n";
        assert!(headings(t).is_empty(), "{:?}", headings(t));
        assert!(path_at(&[], 10).is_empty());
    }
}
