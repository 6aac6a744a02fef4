//! CNXML 0.7 books (openstax/osbooks-*): the collection order and the page cleaner.
//!
//! The rules are documented in the parent module; this file maps CNXML elements and classes
//! onto them.

use super::{
    page_reason, squash, tidy, Block, BookSpec, ClassAction, ClassRuleSpec, Page, Reason,
    UnknownClass,
};
use anyhow::{bail, Context, Result};
use roxmltree::{Document, Node};
use std::path::{Path, PathBuf};

const MATHML: &str = "http://www.w3.org/1998/Math/MathML";

/// What a class token on an element means to the cleaner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// The element (a section or note) is a dropped container: its blocks are removed for
    /// this reason. The number is the rules generation that added it ([`super::rules_version`]).
    Remove(Reason, u8),
    /// A feature box (note) whose content is narrative: kept as prose.
    Prose,
    /// The first class token of a note names the book's style (`history`, `chemistry`, ...):
    /// no effect.
    Marker,
    /// Presentation only (numbering, layout, emphasis style): no effect on the text.
    Presentation,
    /// Handled by a page rule (`document.preface` drops the page as front matter).
    Page,
}

/// Every class the cleaner knows, per element: `(element, class, rule)`. A class token on a
/// visited element that is not here is an [`super::UnknownClass`]. Section and note classes
/// decide what is removed; the others are listed so that nothing is met without a decision.
/// Generation-2 rules were added for the chemistry and economics bundles (issue #20),
/// generation-3 rules for the rest of the OpenStax catalogue (issue #39).
const CLASS_RULES: &[(&str, &str, Rule)] = &[
    // Sections dropped with their content (generation 1: the four EAR books).
    ("section", "summary", Rule::Remove(Reason::Summary, 1)),
    (
        "section",
        "review-questions",
        Rule::Remove(Reason::Exercise, 1),
    ),
    (
        "section",
        "critical-thinking",
        Rule::Remove(Reason::Exercise, 1),
    ),
    (
        "section",
        "personal-application",
        Rule::Remove(Reason::Exercise, 1),
    ),
    (
        "section",
        "thought-questions",
        Rule::Remove(Reason::Exercise, 1),
    ),
    (
        "section",
        "figuring-for-yourself",
        Rule::Remove(Reason::Exercise, 1),
    ),
    (
        "section",
        "group-activities",
        Rule::Remove(Reason::Exercise, 1),
    ),
    ("section", "references", Rule::Remove(Reason::References, 1)),
    (
        "section",
        "further-exploration",
        Rule::Remove(Reason::References, 1),
    ),
    (
        "section",
        "learning-objectives",
        Rule::Remove(Reason::LearningObjectives, 1),
    ),
    (
        "section",
        "sr-contrib-auth",
        Rule::Remove(Reason::FrontMatter, 1),
    ),
    (
        "section",
        "contrib-auth",
        Rule::Remove(Reason::FrontMatter, 1),
    ),
    // Generation 2 (economics, chemistry): end-of-chapter problem sets, key equations and a
    // capitalised references section.
    (
        "section",
        "self-check-questions",
        Rule::Remove(Reason::Exercise, 2),
    ),
    ("section", "problems", Rule::Remove(Reason::Exercise, 2)),
    ("section", "exercises", Rule::Remove(Reason::Exercise, 2)),
    ("section", "key-equations", Rule::Remove(Reason::Summary, 2)),
    ("section", "References", Rule::Remove(Reason::References, 2)),
    // Notes dropped with their content: pointers to outside resources.
    (
        "note",
        "link-to-learning",
        Rule::Remove(Reason::LinkToLearning, 1),
    ),
    (
        "note",
        "click-and-explore",
        Rule::Remove(Reason::LinkToLearning, 1),
    ),
    // Generation 2 (economics): "Link It Up" boxes, worked "Work It Out" examples (as the
    // `example` rule), chapter objectives.
    ("note", "linkup", Rule::Remove(Reason::LinkToLearning, 2)),
    ("note", "workout", Rule::Remove(Reason::Exercise, 2)),
    (
        "note",
        "chapter-objectives",
        Rule::Remove(Reason::LearningObjectives, 2),
    ),
    // Generation 3 (issue 39): the class vocabulary of the OpenStax catalogue beyond the
    // configured books (American Government, Sociology, College Physics, Anatomy and
    // Physiology, Biology 2e, Microbiology, World History, Philosophy, Business, Statistics,
    // University Physics, Calculus, Political Science, ...: modules read and the bakery
    // recipes that select each book's end-of-chapter sections and feature boxes by class;
    // datasets/README.md gives every class with its reason). Sections dropped:
    (
        "section",
        "section-summary",
        Rule::Remove(Reason::Summary, 3),
    ),
    ("section", "key-concepts", Rule::Remove(Reason::Summary, 3)),
    (
        "section",
        "formula-review",
        Rule::Remove(Reason::Summary, 3),
    ),
    ("section", "key-terms", Rule::Remove(Reason::Glossary, 3)),
    (
        "section",
        "suggested-reading",
        Rule::Remove(Reason::References, 3),
    ),
    (
        "section",
        "suggested-readings",
        Rule::Remove(Reason::References, 3),
    ),
    (
        "section",
        "further-reading",
        Rule::Remove(Reason::References, 3),
    ),
    (
        "section",
        "suggested-resources",
        Rule::Remove(Reason::References, 3),
    ),
    (
        "section",
        "further-research",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "section",
        "hot-links",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "section",
        "multiple-choice",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "free-response",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "interactive-exercise",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "visual-exercise",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "fill-in-the-blank",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("section", "true-false", Rule::Remove(Reason::Exercise, 3)),
    ("section", "matching", Rule::Remove(Reason::Exercise, 3)),
    ("section", "short-answer", Rule::Remove(Reason::Exercise, 3)),
    ("section", "section-quiz", Rule::Remove(Reason::Exercise, 3)),
    (
        "section",
        "conceptual-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "problems-exercises",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("section", "ap-test-prep", Rule::Remove(Reason::Exercise, 3)),
    (
        "section",
        "authentic-assessment",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "review-conceptual-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "review-problems",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "review-additional-problems",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "review-challenge",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "section-exercises",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "review-exercises",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "practice-test",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("section", "practice", Rule::Remove(Reason::Exercise, 3)),
    (
        "section",
        "bring-together-exercises",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "bring-together-homework",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "check-understanding",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "reflection-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "visual-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "making-connections",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "thought-provokers",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "source-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "media-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("section", "case-study", Rule::Remove(Reason::Exercise, 3)),
    (
        "section",
        "prep-workplace",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "ethics-activity",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("section", "working-net", Rule::Remove(Reason::Exercise, 3)),
    (
        "section",
        "chapter-review",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "manage-skills",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "manage-exercises",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "discussion-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "case-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "section",
        "assessment-questions",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("section", "review", Rule::Remove(Reason::Exercise, 3)),
    (
        "section",
        "science-practice",
        Rule::Remove(Reason::Exercise, 3),
    ),
    // Notes dropped: inline endnote citations (`<cite><note class="reference">`), video,
    // simulation and web pointers, in-text quizzes and activities, teacher notes.
    ("note", "reference", Rule::Remove(Reason::References, 3)),
    (
        "note",
        "interactive",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "note",
        "interactive-long",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    ("note", "media-2", Rule::Remove(Reason::LinkToLearning, 3)),
    (
        "note",
        "media-notitle",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "note",
        "media-video",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "note",
        "media-podcast",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "note",
        "philo-connections",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "note",
        "get-connected",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "note",
        "where-engage",
        Rule::Remove(Reason::LinkToLearning, 3),
    ),
    (
        "note",
        "visual-connection",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "note",
        "check-your-understanding",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "note",
        "think-philosopher",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "note",
        "write-philosopher",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("note", "concept-check", Rule::Remove(Reason::Exercise, 3)),
    ("note", "try", Rule::Remove(Reason::Exercise, 3)),
    ("note", "lab", Rule::Remove(Reason::Exercise, 3)),
    ("note", "collab", Rule::Remove(Reason::Exercise, 3)),
    (
        "note",
        "check-understanding",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("note", "checkpoint", Rule::Remove(Reason::Exercise, 3)),
    ("note", "project", Rule::Remove(Reason::Exercise, 3)),
    ("note", "are-you-ready", Rule::Remove(Reason::Exercise, 3)),
    ("note", "what-can-do", Rule::Remove(Reason::Exercise, 3)),
    ("note", "work-it-out", Rule::Remove(Reason::Exercise, 3)),
    ("note", "what-would", Rule::Remove(Reason::Exercise, 3)),
    ("note", "what-do", Rule::Remove(Reason::Exercise, 3)),
    (
        "note",
        "ap-science-practices",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "note",
        "ost-sciprac-scithink",
        Rule::Remove(Reason::Exercise, 3),
    ),
    (
        "note",
        "ost-sciprac-activity",
        Rule::Remove(Reason::Exercise, 3),
    ),
    ("note", "os-teacher", Rule::Remove(Reason::FrontMatter, 3)),
    // Feature boxes of narrative prose (generation 3's books), kept.
    ("note", "insider-perspective", Rule::Prose),
    ("note", "milestone", Rule::Prose),
    ("note", "middle-ground", Rule::Prose),
    ("note", "sociology-big-picture", Rule::Prose),
    ("note", "sociology-real-world", Rule::Prose),
    ("note", "sociological-research", Rule::Prose),
    ("note", "sociology-policy-debate", Rule::Prose),
    ("note", "everyday", Rule::Prose),
    ("note", "homeostatic", Rule::Prose),
    ("note", "disorders", Rule::Prose),
    ("note", "career", Rule::Prose),
    ("note", "aging", Rule::Prose),
    ("note", "diseases", Rule::Prose),
    ("note", "evolution", Rule::Prose),
    ("note", "scientific", Rule::Prose),
    ("note", "clinical-focus", Rule::Prose),
    ("note", "micro-connection", Rule::Prose),
    ("note", "eye-on-ethics", Rule::Prose),
    ("note", "case-in-point", Rule::Prose),
    ("note", "disease-profile", Rule::Prose),
    ("note", "own-words", Rule::Prose),
    ("note", "dueling-voices", Rule::Prose),
    ("note", "beyond-book", Rule::Prose),
    ("note", "past-present", Rule::Prose),
    ("note", "read-philosopher", Rule::Prose),
    ("note", "time-line", Rule::Prose),
    ("note", "show-data", Rule::Prose),
    ("note", "connecting-courses", Rule::Prose),
    ("note", "meet-professional", Rule::Prose),
    ("note", "changing-political", Rule::Prose),
    ("note", "exploring-business-careers", Rule::Prose),
    ("note", "catching-spirit", Rule::Prose),
    ("note", "managing-change", Rule::Prose),
    ("note", "customer-satisfaction", Rule::Prose),
    ("note", "ethics-in-practice", Rule::Prose),
    ("note", "expanding-around-globe", Rule::Prose),
    ("note", "exploring-manager-careers", Rule::Prose),
    ("note", "sustainability-responsible", Rule::Prose),
    ("note", "managerial-leadership", Rule::Prose),
    ("note", "calculator", Rule::Prose),
    ("note", "problem-solving", Rule::Prose),
    ("note", "theorem", Rule::Prose),
    ("note", "how-to-notitle", Rule::Prose),
    ("note", "qa", Rule::Prose),
    ("note", "entrepreneur-in-action", Rule::Prose),
    ("note", "ethics-across", Rule::Prose),
    ("note", "real-world", Rule::Prose),
    ("note", "what-heard", Rule::Prose),
    ("note", "it-depends", Rule::Prose),
    ("note", "intersections-contexts", Rule::Prose),
    ("note", "life-hacks", Rule::Prose),
    ("note", "ap-everyday", Rule::Prose),
    ("note", "experiment", Rule::Prose),
    // Book-style markers of generation 3's books (American Government has two tokens).
    ("note", "american", Rule::Marker),
    ("note", "government", Rule::Marker),
    ("note", "anatomy", Rule::Marker),
    ("note", "microbiology", Rule::Marker),
    ("note", "statistics", Rule::Marker),
    ("note", "sociology", Rule::Marker),
    ("note", "physics", Rule::Marker),
    ("note", "biology", Rule::Marker),
    ("note", "philosophy", Rule::Marker),
    ("note", "business", Rule::Marker),
    ("link", "os-embed", Rule::Presentation),
    ("exercise", "unnumbered", Rule::Presentation),
    ("section", "coreq-skills", Rule::Prose),
    // Feature boxes whose content is narrative prose, kept.
    ("note", "defining-american", Rule::Prose),
    ("note", "my-story", Rule::Prose),
    ("note", "americana", Rule::Prose),
    ("note", "dig-deeper", Rule::Prose),
    ("note", "everyday-connection", Rule::Prose),
    ("note", "connect-the-concepts", Rule::Prose),
    ("note", "what-do-you-think", Rule::Prose),
    ("note", "making-connections", Rule::Prose),
    ("note", "voyagers-in-astronomy", Rule::Prose),
    ("note", "astronomy-basics", Rule::Prose),
    ("note", "seeing-for-yourself", Rule::Prose),
    ("note", "everyday-life", Rule::Prose),
    ("note", "sciences-interconnect", Rule::Prose),
    ("note", "chemist-portrait", Rule::Prose),
    ("note", "clearup", Rule::Prose),
    ("note", "bringhome", Rule::Prose),
    // Book-style markers (the first class token of a book's notes).
    ("note", "history", Rule::Marker),
    ("note", "psychology", Rule::Marker),
    ("note", "astronomy", Rule::Marker),
    ("note", "chemistry", Rule::Marker),
    ("note", "economics", Rule::Marker),
    // Pages.
    ("document", "preface", Rule::Page),
    ("document", "introduction", Rule::Presentation),
    ("document", "appendix", Rule::Presentation),
    ("content", "appendix", Rule::Presentation),
    ("content", "preface", Rule::Presentation),
    // Presentation only.
    ("figure", "splash", Rule::Presentation),
    ("figure", "timeline", Rule::Presentation),
    ("figure", "scaled-down", Rule::Presentation),
    ("figure", "unnumbered", Rule::Presentation),
    ("table", "top-titled", Rule::Presentation),
    ("table", "unnumbered", Rule::Presentation),
    ("table", "unstyled", Rule::Presentation),
    ("table", "column-header", Rule::Presentation),
    ("list", "stepwise", Rule::Presentation),
    ("list", "lower-alpha", Rule::Presentation),
    ("list", "numeric", Rule::Presentation),
    ("equation", "unnumbered", Rule::Presentation),
    ("term", "no-emphasis", Rule::Presentation),
    ("term", "no", Rule::Presentation),
    ("term", "emphasis", Rule::Presentation),
    ("term", "index", Rule::Presentation),
    ("emphasis", "emphasis-one", Rule::Presentation),
    ("media", "scaled-down", Rule::Presentation),
    ("media", "scaled-down-30", Rule::Presentation),
    // Paragraph classes. `para.contrib-auth` occurs only in prefaces, which are dropped whole.
    ("para", "history", Rule::Marker),
    ("para", "contrib-auth", Rule::Presentation),
    // The one "Click and Explore" paragraph of U.S. History (m50101, in a note without a
    // class) is kept as generation 1 kept it: removing it would change the EAR corpus and
    // results/ear. A known leak (datasets/README.md), left for a deliberate rules change.
    ("para", "click-and-explore", Rule::Prose),
];

/// Generation 2: sections *without a removing class* whose title says what they are (the
/// economics appendices have unclassed "Key Concepts and Summary" and "References" sections).
const SECTION_TITLES: &[(&str, Reason)] = &[
    ("Key Concepts and Summary", Reason::Summary),
    ("References", Reason::References),
];

/// The rule for class token `class` on element `element`, if any.
fn class_rule(element: &str, class: &str) -> Option<Rule> {
    CLASS_RULES
        .iter()
        .find(|(e, c, _)| *e == element && *c == class)
        .map(|(_, _, r)| *r)
}

/// The elements whose class tokens the cleaner looks up (the document and its content,
/// containers, block elements and the inline elements of kept text): a books-file rule must
/// name one of them.
pub(crate) const CLASS_ELEMENTS: &[&str] = &[
    "document",
    "content",
    "section",
    "note",
    "example",
    "para",
    "quote",
    "title",
    "label",
    "list",
    "figure",
    "table",
    "equation",
    "media",
    "code",
    "preformat",
    "exercise",
    "footnote",
    "definition",
    "newline",
    "space",
    "emphasis",
    "term",
    "span",
    "foreign",
    "cite",
    "cite-title",
    "sub",
    "sup",
    "link",
];

/// Every `(element, class)` with a rule, for documentation and tests.
pub(crate) fn known_classes() -> impl Iterator<Item = (&'static str, &'static str)> {
    CLASS_RULES.iter().map(|(e, c, _)| (*e, *c))
}

/// The `META-INF/books.xml` collections of a CNXML book folder: `(slug, relative path)`.
fn collections(
    dir: &Path,
    read: &mut dyn FnMut(&str) -> Result<String>,
) -> Result<Vec<(String, String)>> {
    let books_rel = "META-INF/books.xml";
    let books_xml = read(books_rel)?;
    let at = dir.join(books_rel);
    let doc = parse(&books_xml, &at)?;
    let mut out = Vec::new();
    for n in doc.descendants().filter(|n| n.has_tag_name("book")) {
        let line = line_of(&doc, n);
        let href = n
            .attribute("href")
            .with_context(|| format!("{}:{line}: <book> without href", at.display()))?;
        let rel = href
            .strip_prefix("../")
            .with_context(|| {
                format!(
                    "{}:{line}: book href {href:?} should be ../collections/NAME.collection.xml",
                    at.display()
                )
            })?
            .to_string();
        out.push((n.attribute("slug").unwrap_or(&rel).to_string(), rel));
    }
    if out.is_empty() {
        bail!("{}: no <book href=...> element", at.display());
    }
    Ok(out)
}

/// Reads the book in `dir`: `META-INF/books.xml` names the collections; the chosen ones
/// ([`BookSpec::collections`], default all) give the pages in order. A module named by two
/// chosen collections is one page, where the first one puts it.
///
/// # Errors
/// Missing or malformed files, a chosen collection that `books.xml` does not list, a module
/// named in a collection but absent, or an element without a cleaning rule; each names the
/// file and line.
pub(super) fn read_book(
    spec: &BookSpec,
    dir: &Path,
    read: &mut dyn FnMut(&str) -> Result<String>,
) -> Result<Vec<Page>> {
    let all = collections(dir, read)?;
    let chosen: Vec<&(String, String)> = if spec.collections.is_empty() {
        all.iter().collect()
    } else {
        spec.collections
            .iter()
            .map(|want| {
                all.iter().find(|(slug, _)| slug == want).with_context(|| {
                    format!(
                        "{}: book {}: collection {want:?} is not in META-INF/books.xml, which lists {}; \
                         fix `collections` in the books file",
                        dir.join("META-INF/books.xml").display(),
                        spec.slug,
                        all.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>().join(", ")
                    )
                })
            })
            .collect::<Result<_>>()?
    };
    let mut order: Vec<(String, Option<String>, usize, PathBuf)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (_, collection_rel) in chosen {
        let collection = read(collection_rel)?;
        let cpath = dir.join(collection_rel);
        let cdoc = parse(&collection, &cpath)?;
        let mut modules = Vec::new();
        collect_modules(cdoc.root_element(), None, &cdoc, &mut modules);
        if modules.is_empty() {
            bail!("{}: the collection names no modules", cpath.display());
        }
        for (module, chapter, line) in modules {
            if seen.insert(module.clone()) {
                order.push((module, chapter, line, cpath.clone()));
            }
        }
    }
    let mut pages = Vec::with_capacity(order.len());
    for (module, chapter, line, cpath) in order {
        let rel = format!("modules/{module}/index.cnxml");
        if !dir.join(&rel).is_file() {
            bail!(
                "{}:{line}: module {module} is in the collection but its file {} is missing",
                cpath.display(),
                dir.join(&rel).display()
            );
        }
        let text = read(&rel)?;
        let mut page = clean_page(
            &text,
            &dir.join(&rel),
            spec.rules_generation(),
            &spec.classes,
        )?;
        page.book = spec.slug.clone();
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
pub(crate) fn clean_page(
    text: &str,
    path: &Path,
    rules: u8,
    overrides: &[ClassRuleSpec],
) -> Result<Page> {
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
        unknown: Vec::new(),
        open: Vec::new(),
        pending: Vec::new(),
        rules,
        overrides,
        rules_used: Default::default(),
    };
    let (_, unknown) = w.classes(root);
    w.open.extend(unknown);
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
                let depth = w.open.len();
                let (_, unknown) = w.classes(child);
                w.open.extend(unknown);
                w.children(child, &page_ctx)?;
                w.open.truncate(depth);
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
        book: String::new(),
        module: String::new(),
        title,
        chapter: None,
        path: String::new(),
        blocks: w.blocks,
        unknown: w.unknown,
        rules_used: w.rules_used,
    })
}

/// The dropped container a block sits in: its reason and its description.
type Ctx = Option<(Reason, String)>;

struct Walker<'a, 'input> {
    doc: &'a Document<'input>,
    path: &'a Path,
    blocks: Vec<Block>,
    /// Unknown classes met, in document order.
    unknown: Vec<UnknownClass>,
    /// Unknown classes of the containers being walked (they go into every block inside).
    open: Vec<String>,
    /// Unknown classes of the element being turned into a block (and its inline elements).
    pending: Vec<String>,
    /// The rules generation the page is cleaned under (rules of later generations do not
    /// apply; their classes count as unknown).
    rules: u8,
    /// The books file's class rules for this book: they win over [`CLASS_RULES`] and apply
    /// whatever the generation.
    overrides: &'a [ClassRuleSpec],
    /// The overrides that matched, as `ELEMENT.CLASS`.
    rules_used: std::collections::BTreeSet<String>,
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

    /// Looks up every class token of `n`: returns the first removing rule (reason and
    /// `ELEMENT.CLASS`) and the unknown tokens as `ELEMENT.CLASS`, which are also recorded for
    /// the page.
    /// A removing rule of a generation newer than the page's counts as unknown.
    fn classes(&mut self, n: Node) -> (Option<(Reason, String)>, Vec<String>) {
        let Some(class) = n.attribute("class") else {
            return (None, Vec::new());
        };
        let element = n.tag_name().name();
        let mut remove = None;
        let mut unknown = Vec::new();
        for c in class.split_whitespace() {
            let overrides = self.overrides;
            let own = overrides
                .iter()
                .find(|o| o.element == element && o.class == c)
                .inspect(|o| {
                    self.rules_used.insert(format!("{}.{}", o.element, o.class));
                })
                .map(|o| match (o.rule, o.removal()) {
                    (ClassAction::Remove, Some(r)) => Rule::Remove(r, 0),
                    (ClassAction::Keep, _) => Rule::Prose,
                    _ => Rule::Marker,
                });
            match own.or_else(|| class_rule(element, c)) {
                Some(Rule::Remove(r, g)) if g <= self.rules => {
                    if remove.is_none() {
                        remove = Some((r, format!("{element}.{c}")));
                    }
                }
                Some(Rule::Prose | Rule::Marker | Rule::Presentation | Rule::Page) => {}
                Some(Rule::Remove(..)) | None => {
                    let key = format!("{element}.{c}");
                    self.unknown.push(UnknownClass {
                        class: key.clone(),
                        line: self.line(n),
                    });
                    unknown.push(key);
                }
            }
        }
        (remove, unknown)
    }

    /// Walks a container's children with its unknown classes open (see [`Walker::open`]).
    fn container(&mut self, n: Node, unknown: Vec<String>, ctx: &Ctx) -> Result<()> {
        let depth = self.open.len();
        self.open.extend(unknown);
        let res = self.children(n, ctx);
        self.open.truncate(depth);
        res
    }

    fn push(&mut self, node: Node, element: &str, text: String, own: Option<Reason>, ctx: &Ctx) {
        let (removed, context) = match ctx {
            Some((r, c)) => (Some(*r), Some(c.clone())),
            None => (own, None),
        };
        let mut unknown = self.open.clone();
        unknown.append(&mut self.pending);
        self.blocks.push(Block {
            element: element.to_string(),
            context,
            line: self.line(node),
            text,
            removed,
            unknown,
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
        let (remove, unknown) = self.classes(n);
        match name {
            "section" | "note" => {
                let inner = match (ctx, remove) {
                    (Some(c), _) => Some(c.clone()),
                    (None, Some(removal)) => Some(removal),
                    (None, None) if name == "section" && self.rules >= 2 => {
                        let title = n
                            .children()
                            .find(|c| c.has_tag_name("title"))
                            .map(plain_text)
                            .unwrap_or_default();
                        SECTION_TITLES
                            .iter()
                            .find(|(t, _)| *t == title)
                            .map(|(t, r)| (*r, format!("section[title={t}]")))
                    }
                    (None, None) => None,
                };
                self.container(n, unknown, &inner)
            }
            "example" => {
                let inner = ctx
                    .clone()
                    .or_else(|| Some((Reason::Exercise, "example".to_string())));
                self.container(n, unknown, &inner)
            }
            "quote" if n.children().any(|c| c.has_tag_name("para")) => {
                self.container(n, unknown, ctx)
            }
            _ => {
                self.pending.extend(unknown);
                self.leaf_or_para(n, name, ctx)
            }
        }
    }

    /// A block element that is not a container.
    fn leaf_or_para(&mut self, n: Node, name: &str, ctx: &Ctx) -> Result<()> {
        match name {
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
            "newline" | "space" => {
                self.pending.clear();
                Ok(())
            }
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
        let own_unknown = std::mem::take(&mut self.pending);
        for c in before {
            self.block(c, ctx)?;
        }
        self.pending = own_unknown;
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
        &mut self,
        n: Node<'a, 'i>,
        out: &mut String,
        nested: &mut Vec<Node<'a, 'i>>,
    ) -> Result<()> {
        self.inline_nodes(n.children(), out, nested)
    }

    /// [`Walker::inline`] over a sequence of sibling nodes.
    fn inline_nodes<'a, 'i>(
        &mut self,
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
                    let text = linear_math(c, self.rules);
                    out.push(' ');
                    out.push_str(&text);
                    out.push(' ');
                }
                continue;
            }
            let name = c.tag_name().name();
            if matches!(
                name,
                "emphasis"
                    | "term"
                    | "span"
                    | "foreign"
                    | "cite"
                    | "cite-title"
                    | "sub"
                    | "sup"
                    | "link"
                    | "newline"
                    | "space"
            ) || (matches!(name, "quote" | "code") && c.attribute("display") != Some("block"))
            {
                let (_, unknown) = self.classes(c);
                self.pending.extend(unknown);
            }
            match name {
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

/// Linear text of a MathML expression, under the rules of generations up to `allowed` (the
/// book's [`BookSpec::rules_generation`]).
///
/// Generation 1: token text in order, `msup` as `base^exp`, `msub` as `base_sub`, `msubsup`
/// as `base_sub^sup`, `mfrac` as `num/den`, `msqrt` as `sqrt(x)`, `mspace` as a space; any
/// other element (`mrow`, `mi`, `mo`, `mn`, `mtext`, `mstyle`, `menclose`, `mover`, `munder`,
/// `mtable`, ...) is its children's text in order; annotations are dropped.
///
/// Generation 2 (chemistry's MathML): a script with an empty base is a *prescript* (isotope
/// notation `₆¹⁴C`) and is written `^14_6` without the alignment spaces, so the element follows
/// it (`^14_6C`, not `_ 6^14C`); `mtable` rows are separated by `"; "` and their cells by a
/// space (rows no longer run together); `mroot` is `root(x, n)`.
pub(crate) fn linear_math(n: Node, allowed: u8) -> String {
    fn text_of(n: Node) -> String {
        n.descendants()
            .filter(Node::is_text)
            .map(|t| t.text().unwrap_or("").trim())
            .collect()
    }
    fn go(n: Node, out: &mut String, allowed: u8) {
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
            go(*k, &mut s, allowed);
            s
        };
        let name = n.tag_name().name();
        let prescript = allowed >= 2
            && matches!((name, kids.len()), ("msup" | "msub", 2) | ("msubsup", 3))
            && text_of(kids[0]).is_empty();
        if prescript {
            let script = |k: &Node| {
                let mut s = String::new();
                go(*k, &mut s, allowed);
                s.split_whitespace().collect::<String>()
            };
            match name {
                "msup" => {
                    out.push('^');
                    out.push_str(&script(&kids[1]));
                }
                "msub" => {
                    out.push('_');
                    out.push_str(&script(&kids[1]));
                }
                _ => {
                    out.push('^');
                    out.push_str(&script(&kids[2]));
                    out.push('_');
                    out.push_str(&script(&kids[1]));
                }
            }
            return;
        }
        match (name, kids.len()) {
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
                    go(*k, out, allowed);
                }
                out.push(')');
            }
            ("mroot", 2) if allowed >= 2 => {
                out.push_str("root(");
                out.push_str(&part(&kids[0]));
                out.push_str(", ");
                out.push_str(&part(&kids[1]));
                out.push(')');
            }
            ("mtable", _) if allowed >= 2 && kids.len() > 1 => {
                let rows: Vec<String> = kids
                    .iter()
                    .map(|row| {
                        let cells: Vec<String> = row
                            .children()
                            .filter(Node::is_element)
                            .map(|cell| squash(&part(&cell)))
                            .collect();
                        cells.join(" ")
                    })
                    .collect();
                out.push(' ');
                out.push_str(&rows.join("; "));
                out.push(' ');
            }
            ("mspace", _) => out.push(' '),
            ("annotation" | "annotation-xml", _) => {}
            _ => {
                for k in n.children() {
                    go(k, out, allowed);
                }
            }
        }
    }
    let mut s = String::new();
    go(n, &mut s, allowed);
    squash(&s)
}
