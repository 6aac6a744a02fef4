//! The Markdown book (philschatz/biology-book): `SUMMARY.md` order and the page cleaner.
//!
//! The pages are kramdown-flavoured Markdown converted from CNXML: YAML front matter with the
//! title, paragraphs separated by blank lines, `#` headings, images, HTML `<div data-type=..>`
//! containers (notes, exercises, glossary, abstract, ...), HTML tables and figures, and
//! kramdown attribute lists (`{: ...}`). The cleaner reads them line by line; the rules are
//! documented in the parent module.

use super::{page_reason, squash, tidy, Block, BookSpec, Page, Reason};
use anyhow::{bail, Context, Result};
use regex::Regex;
use std::path::Path;
use std::sync::LazyLock;

/// Headings that open end-of-section material, and the reason for what follows them (until
/// the next heading of the same or a higher level, or the end of the enclosing div).
const HEADINGS: &[(&str, Reason)] = &[
    ("Section Summary", Reason::Summary),
    ("Review Questions", Reason::Exercise),
    ("Free Response", Reason::Exercise),
    ("Art Connections", Reason::Exercise),
    ("Multiple Choice", Reason::Exercise),
    ("Glossary", Reason::Glossary),
    ("Footnotes", Reason::References),
];

/// Note classes whose content is removed, and why. Other notes (evolution, career, everyday,
/// scientific method connections, untitled notes) are prose.
const NOTE_CLASSES: &[(&str, Reason)] = &[
    ("interactive", Reason::LinkToLearning),
    ("interactive-embedded-reading", Reason::LinkToLearning),
    ("interactive-embedded-homework", Reason::LinkToLearning),
    ("art-connection", Reason::Exercise),
];

static SUMMARY_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[([^\]]*)\]\(contents/(m[0-9]+)\.md\)").expect("static regex"));
static LIST_MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:[0-9]+\.|[*+-])\s+").expect("static regex"));
static LINK_DEF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\[[^\]]+\]:\s*\S").expect("static regex"));
static IAL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{:[^}]*\}").expect("static regex"));
static FOOTNOTE_MARK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"<sup[^>]*data-type="footnote-number"[^>]*>.*?</sup>"#).expect("static regex")
});
static MATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<math\b.*?</math>").expect("static regex"));
static NUMERIC_SUP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([0-9])<sup>([0-9−-]+)</sup>").expect("static regex"));
static TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"</?[a-zA-Z][^>]*>").expect("static regex"));
static TITLE_SPAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*<span data-type="title">(.*?)</span>"#).expect("static regex")
});
static ENTITY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"&(#[xX][0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);").expect("static regex"));

/// Reads the book in `dir`: `SUMMARY.md` names the pages in order.
///
/// # Errors
/// A missing `SUMMARY.md` or page, malformed front matter, unbalanced divs, or a construct
/// without a cleaning rule, naming the file and line.
pub(super) fn read_book(
    spec: &BookSpec,
    dir: &Path,
    read: &mut dyn FnMut(&str) -> Result<String>,
) -> Result<Vec<Page>> {
    let summary = read("SUMMARY.md")?;
    let spath = dir.join("SUMMARY.md");
    let mut chapter: Option<String> = None;
    let mut pages = Vec::new();
    for (i, line) in summary.lines().enumerate() {
        let Some(c) = SUMMARY_LINK.captures(line) else {
            continue;
        };
        let (text, module) = (squash(&c[1]), c[2].to_string());
        let page_chapter = if line.contains("{: .chapter}") {
            chapter = Some(text);
            chapter.clone()
        } else if line.contains("{: .preface}") || line.contains("{: .appendix}") {
            chapter = None;
            None
        } else {
            chapter.clone()
        };
        let rel = format!("contents/{module}.md");
        let body = read(&rel).with_context(|| {
            format!(
                "{}:{}: page {module} is listed but its file is missing",
                spath.display(),
                i + 1
            )
        })?;
        let mut page = clean_page(&body, &dir.join(&rel))?;
        page.book = spec.slug.clone();
        page.module = module;
        page.chapter = page_chapter;
        page.path = rel;
        pages.push(page);
    }
    if pages.is_empty() {
        bail!(
            "{}: no page links of the form [Title](contents/mNNNNN.md)",
            spath.display()
        );
    }
    Ok(pages)
}

/// The title from YAML front matter (`---` / `title: "..."` / `---`) and the line index where
/// the body starts.
fn front_matter(lines: &[&str], path: &Path) -> Result<(String, usize)> {
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        bail!(
            "{}:1: expected YAML front matter opening with `---`",
            path.display()
        );
    }
    let end = lines
        .iter()
        .skip(1)
        .position(|l| l.trim_end() == "---")
        .map(|p| p + 1)
        .with_context(|| format!("{}: front matter has no closing `---`", path.display()))?;
    for (i, l) in lines[1..end].iter().enumerate() {
        if let Some(v) = l.strip_prefix("title:") {
            let v = v.trim();
            let title = if v.starts_with('"') {
                serde_json::from_str::<String>(v).with_context(|| {
                    format!(
                        "{}:{}: title {v:?} is not a valid double-quoted string",
                        path.display(),
                        i + 2
                    )
                })?
            } else if let Some(s) = v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
                s.replace("''", "'")
            } else {
                v.to_string()
            };
            return Ok((squash(&title), end + 1));
        }
    }
    bail!(
        "{}: front matter has no `title:` line (lines 1-{})",
        path.display(),
        end + 1
    )
}

/// An open `<div>`: its removal context, if any.
struct Div {
    ctx: Option<(Reason, String)>,
    line: usize,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = tag.find(&key)? + key.len();
    let len = tag[start..].find('"')?;
    Some(tag[start..start + len].to_string())
}

/// The removal context a `<div>` opens, from its `data-type` and `class`.
fn div_ctx(tag: &str, path: &Path, line: usize) -> Result<Option<(Reason, String)>> {
    let dt = attr(tag, "data-type").unwrap_or_default();
    let r = |r: Reason| Ok(Some((r, format!("div.{dt}"))));
    match dt.as_str() {
        "exercise" | "problem" | "solution" => r(Reason::Exercise),
        "glossary" => r(Reason::Glossary),
        "abstract" => r(Reason::LearningObjectives),
        "footnote-refs" => r(Reason::References),
        "equation" => r(Reason::Equation),
        "media" => r(Reason::Media),
        "title" => r(Reason::Heading),
        "note" => {
            // The role is in `class`, or in `data-element-type` on a few art connections.
            let class = format!(
                "{} {}",
                attr(tag, "class").unwrap_or_default(),
                attr(tag, "data-element-type").unwrap_or_default()
            );
            Ok(class.split_whitespace().find_map(|c| {
                NOTE_CLASSES
                    .iter()
                    .find(|(k, _)| *k == c)
                    .map(|(k, r)| (*r, format!("note.{k}")))
            }))
        }
        other => bail!(
            "{}:{line}: no cleaning rule for <div data-type={other:?}>; add one to \
             datasets::openstax::markdown (and document it)",
            path.display()
        ),
    }
}

/// Multi-line HTML blocks: the opening prefix, the closing tag, and the reason.
const HTML_BLOCKS: &[(&str, &str, &str, Reason)] = &[
    ("<table", "<table", "</table>", Reason::Table),
    ("<figure", "<figure", "</figure>", Reason::Figure),
    ("<ul", "<ul", "</ul>", Reason::List),
    ("<ol", "<ol", "</ol>", Reason::List),
    ("<math", "<math", "</math>", Reason::Equation),
    ("<iframe", "<iframe", "</iframe>", Reason::Media),
];

fn starts_structure(t: &str) -> bool {
    t.starts_with("<div")
        || t.starts_with("</div")
        || t.starts_with('#')
        || t.starts_with("<cnx-pi")
        || t.starts_with("{:")
        || HTML_BLOCKS.iter().any(|(p, ..)| t.starts_with(p))
}

/// Cleans one Markdown page into blocks. `book`, `module`, `chapter` and `path` of the result
/// are left empty for the caller.
///
/// # Errors
/// Malformed front matter, unbalanced `<div>`s or HTML blocks, a `<div data-type>` without a
/// rule, or unparsable inline MathML, naming the file and line.
pub(crate) fn clean_page(text: &str, path: &Path) -> Result<Page> {
    let lines: Vec<&str> = text.lines().collect();
    let (title, body_start) = front_matter(&lines, path)?;
    let page_ctx = page_reason(&title, title == "Preface").map(|r| (r, "page".to_string()));
    let mut divs: Vec<Div> = Vec::new();
    // (heading level, div depth when opened, reason, description)
    let mut headings: Vec<(usize, usize, Reason, String)> = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut last_was_list = false;
    let mut i = body_start;
    let ctx_of = |divs: &[Div], headings: &[(usize, usize, Reason, String)]| {
        page_ctx
            .clone()
            .or_else(|| headings.first().map(|h| (h.2, h.3.clone())))
            .or_else(|| divs.iter().find_map(|d| d.ctx.clone()))
    };
    let push = |blocks: &mut Vec<Block>,
                ctx: Option<(Reason, String)>,
                element: &str,
                line: usize,
                text: String,
                own: Option<Reason>| {
        let (removed, context) = match ctx {
            Some((r, c)) => (Some(r), Some(c)),
            None => (own, None),
        };
        blocks.push(Block {
            element: element.to_string(),
            context,
            line,
            text,
            removed,
            unknown: Vec::new(),
        });
    };
    while i < lines.len() {
        let line_no = i + 1;
        let t = lines[i].trim();
        if t.is_empty() {
            i += 1;
            continue;
        }
        if t.starts_with("<cnx-pi") || (t.starts_with("{:") && t.ends_with('}')) || t == "^" {
            // Processing instructions, attribute lists and glossary separators: markup only.
            i += 1;
            continue;
        }
        if t.starts_with("<div") {
            let ctx = div_ctx(t, path, line_no)?;
            divs.push(Div { ctx, line: line_no });
            if t.ends_with("</div>") {
                divs.pop();
            }
            i += 1;
            continue;
        }
        if t.starts_with("</div") {
            if divs.pop().is_none() {
                bail!("{}:{line_no}: </div> without an open <div>", path.display());
            }
            headings.retain(|h| h.1 <= divs.len());
            i += 1;
            continue;
        }
        last_was_list = last_was_list && lines[i].starts_with(char::is_whitespace);
        if let Some(h) = t.strip_prefix('#') {
            let level = 1 + h.chars().take_while(|&c| c == '#').count();
            let text = squash(h.trim_start_matches('#'));
            headings.retain(|x| x.0 < level);
            if let Some((_, r)) = HEADINGS.iter().find(|(k, _)| *k == text) {
                headings.push((level, divs.len(), *r, format!("heading.{text}")));
            }
            let ctx = ctx_of(&divs, &headings);
            push(
                &mut blocks,
                ctx,
                "heading",
                line_no,
                text,
                Some(Reason::Heading),
            );
            i += 1;
            continue;
        }
        if let Some((_, open, close, reason)) = HTML_BLOCKS.iter().find(|(p, ..)| t.starts_with(p))
        {
            let mut depth = 0usize;
            let mut j = i;
            let mut raw = String::new();
            loop {
                let l = lines.get(j).with_context(|| {
                    format!(
                        "{}:{line_no}: {open}> is never closed by {close}",
                        path.display()
                    )
                })?;
                depth += l.matches(open).count();
                depth = depth.saturating_sub(l.matches(close).count());
                raw.push_str(l);
                raw.push('\n');
                j += 1;
                if depth == 0 {
                    break;
                }
            }
            let ctx = ctx_of(&divs, &headings);
            let element = open.trim_start_matches('<');
            push(
                &mut blocks,
                ctx,
                element,
                line_no,
                squash(&TAG.replace_all(&raw, " ")),
                Some(*reason),
            );
            last_was_list = *reason == Reason::List;
            i = j;
            continue;
        }
        // A run of text lines up to a blank line or a structural line; a list that follows
        // text without a blank line starts its own block.
        let starts_list = LIST_MARKER.is_match(lines[i]);
        let mut j = i;
        let mut raw_lines: Vec<&str> = Vec::new();
        while j < lines.len() {
            let l = lines[j];
            let lt = l.trim();
            if lt.is_empty() || (j > i && starts_structure(lt)) || lt == "^" {
                break;
            }
            if j > i && !starts_list && LIST_MARKER.is_match(l) {
                break;
            }
            if j > i && lt.starts_with("{:") && lt.ends_with('}') {
                break;
            }
            raw_lines.push(l);
            j += 1;
        }
        let raw = raw_lines.join("\n");
        i = j;
        if raw_lines.iter().all(|l| LINK_DEF.is_match(l)) {
            continue; // link reference definitions: markup only
        }
        let ctx = ctx_of(&divs, &headings);
        if last_was_list && raw_lines[0].starts_with(char::is_whitespace) {
            // An indented continuation of the list above (after a blank line).
            if let Some(b) = blocks.last_mut() {
                b.text = squash(&format!("{} {}", b.text, md_plain(&raw)));
            }
            continue;
        }
        if starts_list {
            push(
                &mut blocks,
                ctx,
                "list",
                line_no,
                md_plain(&raw),
                Some(Reason::List),
            );
            last_was_list = true;
            continue;
        }
        last_was_list = false;
        if raw_lines.iter().any(|l| l.trim_start().starts_with(": ")) {
            push(
                &mut blocks,
                ctx,
                "definition",
                line_no,
                md_plain(&raw),
                Some(Reason::Glossary),
            );
            continue;
        }
        let mut body = raw.as_str();
        if let Some(c) = TITLE_SPAN.captures(body) {
            let whole = c.get(0).expect("whole match");
            let heading = squash(&md_plain(&c[1]));
            push(
                &mut blocks,
                ctx.clone(),
                "span.title",
                line_no,
                heading,
                Some(Reason::Heading),
            );
            body = &body[whole.end()..];
            if body.trim().is_empty() {
                continue; // the line was only the box title
            }
        }
        let flat = md_inline(body, path, line_no)?;
        let images_only = {
            let no_img = strip_links(&IAL.replace_all(body, ""));
            tidy(&TAG.replace_all(&no_img, " ")).is_empty()
        };
        if images_only && body.contains("![") {
            push(
                &mut blocks,
                ctx,
                "image",
                line_no,
                md_plain(body),
                Some(Reason::Figure),
            );
        } else if images_only && body.contains("data-type=\"media\"") {
            push(
                &mut blocks,
                ctx,
                "media",
                line_no,
                md_plain(body),
                Some(Reason::Media),
            );
        } else {
            let own = flat.is_empty().then_some(Reason::Empty);
            push(&mut blocks, ctx, "paragraph", line_no, flat, own);
        }
    }
    if let Some(d) = divs.last() {
        bail!(
            "{}:{}: <div> is never closed (end of file reached)",
            path.display(),
            d.line
        );
    }
    Ok(Page {
        book: String::new(),
        module: String::new(),
        title,
        chapter: None,
        path: String::new(),
        blocks,
        unknown: Vec::new(),
        rules_used: Default::default(),
    })
}

/// Plain text of a removed block (tags, attribute lists and link targets removed; images keep
/// their alt text so the log shows what they were).
fn md_plain(raw: &str) -> String {
    let s = IAL.replace_all(raw, "");
    let s = TAG.replace_all(&s, " ");
    squash(&decode_entities(&s))
}

/// Flattened text of a paragraph (see the parent module's "Inline markup").
fn md_inline(raw: &str, path: &Path, line: usize) -> Result<String> {
    let s = FOOTNOTE_MARK.replace_all(raw, "");
    let mut math_err = None;
    let s = MATH.replace_all(&s, |c: &regex::Captures| {
        let m = &c[0];
        match roxmltree::Document::parse(m) {
            // The Markdown reader (Biology, 2014) has generation-1 rules only.
            Ok(doc) => format!(" {} ", super::cnxml::linear_math(doc.root_element(), 1)),
            Err(e) => {
                math_err.get_or_insert(e.to_string());
                String::new()
            }
        }
    });
    if let Some(e) = math_err {
        bail!(
            "{}:{line}: inline MathML is not well-formed: {e}",
            path.display()
        );
    }
    let s = strip_links(&s);
    let s = IAL.replace_all(&s, "");
    let s = NUMERIC_SUP.replace_all(&s, "$1^$2");
    let s = TAG.replace_all(&s, "");
    let s = unescape(&s);
    Ok(tidy(&decode_entities(&s)))
}

/// Removes images, keeps link texts, drops cross-references (`[\[link\]](#...)`).
/// Backslash escapes are left for [`unescape`].
fn strip_links(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            '\\' if i + 1 < b.len() => {
                out.push(b[i]);
                out.push(b[i + 1]);
                i += 2;
            }
            '!' if b.get(i + 1) == Some(&'[') => match link_end(&b, i + 1) {
                Some((_, end)) => i = end,
                None => {
                    out.push('!');
                    i += 1;
                }
            },
            '[' => match link_end(&b, i) {
                Some((inner, end)) => {
                    let text = strip_links(&inner);
                    let shown = unescape(&text);
                    if shown.trim() != "[link]" && shown.trim() != "link" {
                        out.push_str(&text);
                    }
                    i = end;
                }
                None => {
                    out.push('[');
                    i += 1;
                }
            },
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// For `[` at `open`: the bracketed text and the index after the link target (`(...)` or
/// `[...]`); `None` when the brackets are not a link.
fn link_end(b: &[char], open: usize) -> Option<(String, usize)> {
    let close = matching(b, open, '[', ']')?;
    let inner: String = b[open + 1..close].iter().collect();
    match b.get(close + 1) {
        Some('(') => Some((inner, matching(b, close + 1, '(', ')')? + 1)),
        Some('[') => Some((inner, matching(b, close + 1, '[', ']')? + 1)),
        _ => None,
    }
}

/// Index of the bracket closing the one at `open`, skipping escapes and quoted titles.
fn matching(b: &[char], open: usize, o: char, c: char) -> Option<usize> {
    let mut depth = 0usize;
    let mut quoted = false;
    let mut i = open;
    while i < b.len() {
        let ch = b[i];
        if ch == '\\' {
            i += 2;
            continue;
        }
        if o == '(' && ch == '"' {
            quoted = !quoted;
        } else if !quoted && ch == o {
            depth += 1;
        } else if !quoted && ch == c {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// Resolves Markdown backslash escapes and drops emphasis asterisks.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' => match it.peek() {
                Some(&n) if n.is_ascii_punctuation() => {
                    out.push(n);
                    it.next();
                }
                _ => out.push('\\'),
            },
            '*' => {}
            _ => out.push(c),
        }
    }
    out
}

/// Decodes numeric and the common named HTML entities; unknown names are left as they are.
fn decode_entities(s: &str) -> String {
    ENTITY
        .replace_all(s, |c: &regex::Captures| {
            let e = &c[1];
            let ch = if let Some(hex) = e.strip_prefix("#x").or_else(|| e.strip_prefix("#X")) {
                u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
            } else if let Some(dec) = e.strip_prefix('#') {
                dec.parse().ok().and_then(char::from_u32)
            } else {
                match e {
                    "quot" => Some('"'),
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "apos" => Some('\''),
                    "nbsp" => Some(' '),
                    _ => None,
                }
            };
            ch.map_or_else(|| c[0].to_string(), |ch| ch.to_string())
        })
        .into_owned()
}
