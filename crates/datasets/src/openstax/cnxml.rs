//! CNXML 0.7 books (openstax/osbooks-*): the collection order and the page cleaner.
//!
//! The rules are documented in the parent module; this file maps CNXML elements and classes
//! onto them.

use super::{page_reason, squash, tidy, Block, BookSpec, Page, Reason};
use anyhow::{bail, Context, Result};
use roxmltree::{Document, Node};
use std::path::Path;

const MATHML: &str = "http://www.w3.org/1998/Math/MathML";

/// Section classes whose content is removed, and why.
const SECTION_CLASSES: &[(&str, Reason)] = &[
    ("summary", Reason::Summary),
    ("review-questions", Reason::Exercise),
    ("critical-thinking", Reason::Exercise),
    ("personal-application", Reason::Exercise),
    ("thought-questions", Reason::Exercise),
    ("figuring-for-yourself", Reason::Exercise),
    ("group-activities", Reason::Exercise),
    ("references", Reason::References),
    ("further-exploration", Reason::References),
    ("learning-objectives", Reason::LearningObjectives),
    ("sr-contrib-auth", Reason::FrontMatter),
    ("contrib-auth", Reason::FrontMatter),
];

/// Note classes whose content is removed, and why. Other notes (feature boxes) are prose.
const NOTE_CLASSES: &[(&str, Reason)] = &[
    ("link-to-learning", Reason::LinkToLearning),
    ("click-and-explore", Reason::LinkToLearning),
];

/// Reads the book in `dir`: `META-INF/books.xml` names the collection, whose modules in order
/// are the pages.
///
/// # Errors
/// Missing or malformed files, a module named in the collection but absent, or an element
/// without a cleaning rule; each names the file and line.
pub(super) fn read_book(
    spec: &BookSpec,
    dir: &Path,
    read: &mut dyn FnMut(&str) -> Result<String>,
) -> Result<Vec<Page>> {
    let books_rel = "META-INF/books.xml";
    let books_xml = read(books_rel)?;
    let at = dir.join(books_rel);
    let doc = parse(&books_xml, &at)?;
    let href = doc
        .descendants()
        .find(|n| n.has_tag_name("book"))
        .and_then(|n| n.attribute("href"))
        .with_context(|| format!("{}: no <book href=...> element", at.display()))?;
    let collection_rel = href
        .strip_prefix("../")
        .with_context(|| {
            format!(
                "{}: book href {href:?} should be ../collections/NAME.collection.xml",
                at.display()
            )
        })?
        .to_string();
    let collection = read(&collection_rel)?;
    let cpath = dir.join(&collection_rel);
    let cdoc = parse(&collection, &cpath)?;
    let mut order: Vec<(String, Option<String>, usize)> = Vec::new();
    collect_modules(cdoc.root_element(), None, &cdoc, &mut order);
    if order.is_empty() {
        bail!("{}: the collection names no modules", cpath.display());
    }
    let mut pages = Vec::with_capacity(order.len());
    for (module, chapter, line) in order {
        let rel = format!("modules/{module}/index.cnxml");
        let text = read(&rel).with_context(|| {
            format!(
                "{}:{line}: module {module} is in the collection but its file is missing",
                cpath.display()
            )
        })?;
        let mut page = clean_page(&text, &dir.join(&rel))?;
        page.book = spec.slug;
        page.module = module;
        page.chapter = chapter;
        page.path = rel;
        pages.push(page);
    }
    Ok(pages)
}

fn parse<'a>(text: &'a str, path: &Path) -> Result<Document<'a>> {
    Document::parse(text).with_context(|| format!("{}: not well-formed XML", path.display()))
}

fn line_of(doc: &Document, node: Node) -> usize {
    doc.text_pos_at(node.range().start).row as usize
}

/// Modules in document order with the innermost chapter (subcollection) title.
fn collect_modules(
    node: Node,
    chapter: Option<&str>,
    doc: &Document,
    out: &mut Vec<(String, Option<String>, usize)>,
) {
    for child in node.children().filter(Node::is_element) {
        match child.tag_name().name() {
            "module" => {
                if let Some(m) = child.attribute("document") {
                    out.push((
                        m.to_string(),
                        chapter.map(str::to_string),
                        line_of(doc, child),
                    ));
                }
            }
            "subcollection" => {
                let title = child
                    .children()
                    .find(|n| n.has_tag_name("title"))
                    .map(|t| squash(&plain_text(t)));
                collect_modules(child, title.as_deref().or(chapter), doc, out);
            }
            _ => collect_modules(child, chapter, doc, out),
        }
    }
}

/// Cleans one CNXML page (module) into blocks. `book`, `module`, `chapter` and `path` of the
/// result are left empty for the caller.
///
/// # Errors
/// Malformed XML, a missing `<content>`, or an element without a rule, naming the file, line
/// and element.
pub(crate) fn clean_page(text: &str, path: &Path) -> Result<Page> {
    let doc = parse(text, path)?;
    let root = doc.root_element();
    if root.tag_name().name() != "document" {
        bail!(
            "{}:1: root element is <{}>, expected a CNXML <document>",
            path.display(),
            root.tag_name().name()
        );
    }
    let title = root
        .children()
        .find(|n| n.has_tag_name("title"))
        .map(|t| squash(&plain_text(t)))
        .with_context(|| format!("{}: the document has no <title>", path.display()))?;
    let is_preface = root.attribute("class") == Some("preface");
    let page_ctx = page_reason(&title, is_preface).map(|r| (r, "page".to_string()));
    let mut w = Walker {
        doc: &doc,
        path,
        blocks: Vec::new(),
    };
    let mut saw_content = false;
    for child in root.children().filter(Node::is_element) {
        match child.tag_name().name() {
            "title" => {}
            "metadata" => {
                for abs in child.children().filter(|n| n.has_tag_name("abstract")) {
                    let ctx = page_ctx.clone().or(Some((
                        Reason::LearningObjectives,
                        "metadata.abstract".to_string(),
                    )));
                    let has_text = abs
                        .children()
                        .any(|n| n.is_text() && !n.text().unwrap_or("").trim().is_empty());
                    if has_text {
                        // A prose abstract (book descriptions in prefaces): one block.
                        w.push(abs, "abstract", plain_text(abs), None, &ctx);
                    } else {
                        w.children(abs, &ctx)?;
                    }
                }
            }
            "content" => {
                saw_content = true;
                w.children(child, &page_ctx)?;
            }
            "glossary" => {
                let ctx = Some((Reason::Glossary, "glossary".to_string()));
                w.children(child, &page_ctx.clone().or(ctx))?;
            }
            other => bail!(
                "{}:{}: unexpected <{other}> under <document>; expected title, metadata, content \
                 or glossary",
                path.display(),
                line_of(&doc, child)
            ),
        }
    }
    if !saw_content {
        bail!("{}: the document has no <content>", path.display());
    }
    Ok(Page {
        book: "",
        module: String::new(),
        title,
        chapter: None,
        path: String::new(),
        blocks: w.blocks,
    })
}

/// The dropped container a block sits in: its reason and its description.
type Ctx = Option<(Reason, String)>;

struct Walker<'a, 'input> {
    doc: &'a Document<'input>,
    path: &'a Path,
    blocks: Vec<Block>,
}

/// All text below `node`, markup ignored (titles, captions, removed blocks).
fn plain_text(node: Node) -> String {
    let mut s = String::new();
    for d in node.descendants().filter(Node::is_text) {
        s.push_str(d.text().unwrap_or(""));
        s.push(' ');
    }
    squash(&s)
}

fn class_reason(node: Node, table: &[(&str, Reason)]) -> Option<(Reason, String)> {
    let class = node.attribute("class")?;
    class.split_whitespace().find_map(|c| {
        table
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(k, r)| (*r, format!("{}.{k}", node.tag_name().name())))
    })
}

/// Elements that flow inside text (they never start a block of their own).
fn is_inline(node: Node) -> bool {
    (is_math(node) && node.attribute("display") != Some("block"))
        || matches!(
            node.tag_name().name(),
            "emphasis"
                | "term"
                | "span"
                | "foreign"
                | "cite"
                | "cite-title"
                | "sub"
                | "sup"
                | "link"
        )
}

fn is_math(node: Node) -> bool {
    node.tag_name().namespace() == Some(MATHML)
}

impl Walker<'_, '_> {
    fn line(&self, node: Node) -> usize {
        line_of(self.doc, node)
    }

    fn push(&mut self, node: Node, element: &str, text: String, own: Option<Reason>, ctx: &Ctx) {
        let (removed, context) = match ctx {
            Some((r, c)) => (Some(*r), Some(c.clone())),
            None => (own, None),
        };
        self.blocks.push(Block {
            element: element.to_string(),
            context,
            line: self.line(node),
            text,
            removed,
        });
    }

    /// Visits the children of a container. Text directly inside a container (CNXML allows
    /// mixed content in notes, for instance) and the inline elements around it form an
    /// implicit paragraph (element `text`).
    fn children(&mut self, node: Node, ctx: &Ctx) -> Result<()> {
        let mut run: Vec<Node> = Vec::new();
        for child in node.children() {
            if child.is_text() || (child.is_element() && is_inline(child)) {
                run.push(child);
            } else if child.is_element() {
                self.flush_run(&mut run, ctx)?;
                self.block(child, ctx)?;
            }
        }
        self.flush_run(&mut run, ctx)
    }

    fn flush_run<'a, 'i>(&mut self, run: &mut Vec<Node<'a, 'i>>, ctx: &Ctx) -> Result<()> {
        let nodes = std::mem::take(run);
        let has_text = nodes
            .iter()
            .any(|n| n.is_element() || !n.text().unwrap_or("").trim().is_empty());
        if !has_text {
            return Ok(());
        }
        let mut raw = String::new();
        let mut nested = Vec::new();
        self.inline_nodes(nodes.iter().copied(), &mut raw, &mut nested)?;
        debug_assert!(nested.is_empty(), "inline elements never nest blocks here");
        let first = nodes
            .iter()
            .find(|n| n.is_element() || !n.text().unwrap_or("").trim().is_empty())
            .copied()
            .unwrap_or(nodes[0]);
        let text = tidy(&raw);
        let own = text.is_empty().then_some(Reason::Empty);
        self.push(first, "text", text, own, ctx);
        for c in nested {
            self.block(c, ctx)?;
        }
        Ok(())
    }

    /// One block-level element.
    fn block(&mut self, n: Node, ctx: &Ctx) -> Result<()> {
        let name = n.tag_name().name();
        if is_math(n) {
            self.push(n, "math", plain_text(n), Some(Reason::Equation), ctx);
            return Ok(());
        }
        match name {
            "section" => {
                let inner = ctx.clone().or_else(|| class_reason(n, SECTION_CLASSES));
                self.children(n, &inner)
            }
            "note" => {
                let inner = ctx.clone().or_else(|| class_reason(n, NOTE_CLASSES));
                self.children(n, &inner)
            }
            "example" => {
                let inner = ctx
                    .clone()
                    .or_else(|| Some((Reason::Exercise, "example".to_string())));
                self.children(n, &inner)
            }
            "quote" if n.children().any(|c| c.has_tag_name("para")) => self.children(n, ctx),
            "para" | "quote" => self.para(n, name, ctx),
            "title" | "label" => {
                self.push(n, name, plain_text(n), Some(Reason::Heading), ctx);
                Ok(())
            }
            "list" => {
                self.push(n, name, plain_text(n), Some(Reason::List), ctx);
                Ok(())
            }
            "figure" => self.leaf(n, Reason::Figure, ctx),
            "table" => self.leaf(n, Reason::Table, ctx),
            "equation" => self.leaf(n, Reason::Equation, ctx),
            "media" => self.leaf(n, Reason::Media, ctx),
            "code" | "preformat" => self.leaf(n, Reason::Code, ctx),
            "exercise" => self.leaf(n, Reason::Exercise, ctx),
            "footnote" => self.leaf(n, Reason::Footnote, ctx),
            "definition" => {
                let term = n
                    .children()
                    .find(|c| c.has_tag_name("term"))
                    .map(plain_text)
                    .unwrap_or_default();
                let meaning = n
                    .children()
                    .filter(|c| c.has_tag_name("meaning"))
                    .map(plain_text)
                    .collect::<Vec<_>>()
                    .join(" ");
                self.push(
                    n,
                    name,
                    format!("{term}: {meaning}"),
                    Some(Reason::Glossary),
                    ctx,
                );
                Ok(())
            }
            "newline" | "space" => Ok(()),
            other => bail!(
                "{}:{}: no cleaning rule for block element <{other}>; add one to \
                 datasets::openstax::cnxml (and document it)",
                self.path.display(),
                self.line(n)
            ),
        }
    }

    fn leaf(&mut self, n: Node, own: Reason, ctx: &Ctx) -> Result<()> {
        self.push(n, n.tag_name().name(), plain_text(n), Some(own), ctx);
        Ok(())
    }

    /// A paragraph: its inline text is one block; block elements nested in it (lists,
    /// figures, footnotes, titles, ...) become their own blocks (titles before, the rest
    /// after the paragraph).
    fn para(&mut self, n: Node, name: &str, ctx: &Ctx) -> Result<()> {
        let mut raw = String::new();
        let mut nested: Vec<Node> = Vec::new();
        self.inline(n, &mut raw, &mut nested)?;
        let (before, after): (Vec<Node>, Vec<Node>) = nested
            .into_iter()
            .partition(|c| c.has_tag_name("title") || c.has_tag_name("label"));
        for c in before {
            self.block(c, ctx)?;
        }
        let text = tidy(&raw);
        let own = text.is_empty().then_some(Reason::Empty);
        self.push(n, name, text, own, ctx);
        for c in after {
            self.block(c, ctx)?;
        }
        Ok(())
    }

    /// Appends the inline text of `n`'s children to `out`; block-level children go to
    /// `nested`.
    fn inline<'a, 'i>(
        &self,
        n: Node<'a, 'i>,
        out: &mut String,
        nested: &mut Vec<Node<'a, 'i>>,
    ) -> Result<()> {
        self.inline_nodes(n.children(), out, nested)
    }

    /// [`Walker::inline`] over a sequence of sibling nodes.
    fn inline_nodes<'a, 'i>(
        &self,
        nodes: impl Iterator<Item = Node<'a, 'i>>,
        out: &mut String,
        nested: &mut Vec<Node<'a, 'i>>,
    ) -> Result<()> {
        for c in nodes {
            if c.is_text() {
                out.push_str(c.text().unwrap_or(""));
                continue;
            }
            if !c.is_element() {
                continue;
            }
            if is_math(c) {
                if c.attribute("display") == Some("block") {
                    nested.push(c);
                } else {
                    out.push(' ');
                    out.push_str(&linear_math(c));
                    out.push(' ');
                }
                continue;
            }
            match c.tag_name().name() {
                "emphasis" | "term" | "span" | "foreign" | "cite" | "cite-title" | "sub" => {
                    self.inline(c, out, nested)?
                }
                "quote" | "code" if c.attribute("display") != Some("block") => {
                    self.inline(c, out, nested)?
                }
                "sup" => {
                    let t = plain_text(c);
                    let after_digit = out.chars().last().is_some_and(|ch| ch.is_ascii_digit());
                    if after_digit
                        && !t.is_empty()
                        && t.chars()
                            .all(|ch| ch.is_ascii_digit() || ch == '-' || ch == '−')
                    {
                        out.push('^');
                        out.push_str(&t);
                    } else {
                        self.inline(c, out, nested)?;
                    }
                }
                "link" => {
                    // A link without content is a cross-reference rendered as "Figure N".
                    self.inline(c, out, nested)?
                }
                "newline" | "space" => out.push(' '),
                "footnote" | "list" | "figure" | "equation" | "media" | "table" | "note"
                | "exercise" | "preformat" | "code" | "quote" | "title" | "label" => nested.push(c),
                other => bail!(
                    "{}:{}: no inline rule for <{other}> inside a paragraph; add one to \
                     datasets::openstax::cnxml (and document it)",
                    self.path.display(),
                    self.line(c)
                ),
            }
        }
        Ok(())
    }
}

/// Linear text of a MathML expression: token text in order, `msup` as `base^exp`, `msub` as
/// `base_sub`, `msubsup` as `base_sub^sup`, `mfrac` as `num/den`, `msqrt` as `sqrt(x)`,
/// `mspace` as a space.
pub(crate) fn linear_math(n: Node) -> String {
    fn go(n: Node, out: &mut String) {
        if n.is_text() {
            out.push_str(n.text().unwrap_or("").trim());
            return;
        }
        if !n.is_element() {
            return;
        }
        let kids: Vec<Node> = n.children().filter(Node::is_element).collect();
        let part = |k: &Node| {
            let mut s = String::new();
            go(*k, &mut s);
            s
        };
        match (n.tag_name().name(), kids.len()) {
            ("msup", 2) => {
                out.push_str(&part(&kids[0]));
                out.push('^');
                out.push_str(&part(&kids[1]));
            }
            ("msub", 2) => {
                out.push_str(&part(&kids[0]));
                out.push('_');
                out.push_str(&part(&kids[1]));
            }
            ("msubsup", 3) => {
                out.push_str(&part(&kids[0]));
                out.push('_');
                out.push_str(&part(&kids[1]));
                out.push('^');
                out.push_str(&part(&kids[2]));
            }
            ("mfrac", 2) => {
                out.push_str(&part(&kids[0]));
                out.push('/');
                out.push_str(&part(&kids[1]));
            }
            ("msqrt", _) => {
                out.push_str("sqrt(");
                for k in &kids {
                    go(*k, out);
                }
                out.push(')');
            }
            ("mspace", _) => out.push(' '),
            ("annotation" | "annotation-xml", _) => {}
            _ => {
                for k in n.children() {
                    go(k, out);
                }
            }
        }
    }
    let mut s = String::new();
    go(n, &mut s);
    squash(&s)
}
