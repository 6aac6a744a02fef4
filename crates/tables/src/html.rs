//! HTML documents to clean text, through a real HTML parser (html5ever via `scraper`), so
//! that entities, unclosed tags, comments and scripts are handled as a browser would.
//!
//! The cleaned text is the document's text: every span chunkbench records is a byte offset
//! into it, never into the HTML. Rules (the same for every file, recorded in the manifest):
//! - `head`, `script`, `style`, `noscript` and `template` contribute nothing (the `<title>`
//!   becomes the document title; without one, the first `<h1>`);
//! - block elements (`p`, `div`, headings, list items, table rows, `section`, …) end a
//!   paragraph: paragraphs are separated by one blank line;
//! - `<br>` is a line break; table cells are separated by a space;
//! - elsewhere runs of whitespace collapse to one space, as a browser renders them; inside
//!   `<pre>` the text is kept exactly.

use scraper::{Html, Node};

/// A cleaned HTML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlText {
    /// `<title>` (or the first `<h1>`) with whitespace collapsed; empty when neither exists.
    pub title: String,
    /// The visible text, paragraphs separated by `\n\n`, without leading or trailing space.
    pub text: String,
}

/// Elements whose content is never text of the document.
const SKIPPED: &[&str] = &["head", "script", "style", "noscript", "template"];

/// Elements that start and end a paragraph.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tr",
    "ul",
];

/// Pending separator before the next text, strongest wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Break {
    None,
    Space,
    Line,
    Paragraph,
}

struct Writer {
    out: String,
    pending: Break,
}

impl Writer {
    fn brk(&mut self, b: Break) {
        self.pending = self.pending.max(b);
    }

    fn push(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if !self.out.is_empty() {
            self.out.push_str(match self.pending {
                Break::None => "",
                Break::Space => " ",
                Break::Line => "\n",
                Break::Paragraph => "\n\n",
            });
        }
        self.pending = Break::None;
        self.out.push_str(s);
    }

    /// Text outside `<pre>`: whitespace runs collapse to one space (kept as a pending break
    /// so that it never doubles a paragraph break or trails the document).
    fn push_collapsed(&mut self, s: &str) {
        if s.starts_with(char::is_whitespace) {
            self.brk(Break::Space);
        }
        let mut first = true;
        for word in s.split_whitespace() {
            if !first {
                self.brk(Break::Space);
            }
            self.push(word);
            first = false;
        }
        if s.ends_with(char::is_whitespace) && !s.trim().is_empty() {
            self.brk(Break::Space);
        }
    }
}

fn walk(node: ego_tree::NodeRef<'_, Node>, w: &mut Writer, in_pre: bool) {
    match node.value() {
        Node::Text(t) => {
            if in_pre {
                w.push(t);
            } else {
                w.push_collapsed(t);
            }
        }
        Node::Element(e) => {
            let name = e.name();
            if SKIPPED.contains(&name) {
                return;
            }
            match name {
                "br" => return w.brk(Break::Line),
                "td" | "th" => w.brk(Break::Space),
                _ => {}
            }
            let block = BLOCKS.contains(&name);
            if block {
                w.brk(Break::Paragraph);
            }
            let pre = in_pre || name == "pre";
            for c in node.children() {
                walk(c, w, pre);
            }
            if block {
                w.brk(Break::Paragraph);
            }
        }
        Node::Document | Node::Fragment => {
            for c in node.children() {
                walk(c, w, in_pre);
            }
        }
        _ => {}
    }
}

/// The text of the first element named `name`, whitespace collapsed.
fn first_text(doc: &Html, name: &str) -> Option<String> {
    doc.tree
        .root()
        .descendants()
        .find(|n| matches!(n.value(), Node::Element(e) if e.name() == name))
        .map(|n| {
            let mut w = Writer {
                out: String::new(),
                pending: Break::None,
            };
            for d in n.descendants() {
                if let Node::Text(t) = d.value() {
                    w.push_collapsed(t);
                }
            }
            w.out
        })
        .filter(|t| !t.is_empty())
}

/// Parses an HTML document and returns its title and cleaned text (module docs for the rules).
pub fn html_to_text(html: &str) -> HtmlText {
    let doc = Html::parse_document(html);
    let mut w = Writer {
        out: String::new(),
        pending: Break::None,
    };
    walk(doc.tree.root(), &mut w, false);
    let title = first_text(&doc, "title")
        .or_else(|| first_text(&doc, "h1"))
        .unwrap_or_default();
    HtmlText { title, text: w.out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_text_with_paragraphs_entities_and_pre() {
        let html = "<!doctype html><html><head><title> Café  guide </title>\
            <style>p{color:red}</style><script>var x = '<p>no</p>';</script></head>\
            <body><h1>Über  uns</h1><p>Fish &amp; chips,\n   served <b>hot</b>.</p>\
            <!-- a comment --><ul><li>one</li><li>two<br>lines</li></ul>\
            <pre>  a\n   b</pre><table><tr><td>x</td><td>y</td></tr></table><p>unclosed";
        let t = html_to_text(html);
        assert_eq!(t.title, "Café guide");
        assert_eq!(
            t.text,
            "Über uns\n\nFish & chips, served hot.\n\none\n\ntwo\nlines\n\n  a\n   b\n\nx y\n\nunclosed"
        );
        let t = html_to_text("<body><h1>Only  heading</h1>text</body>");
        assert_eq!(t.title, "Only heading");
        assert_eq!(t.text, "Only heading\n\ntext");
    }
}
