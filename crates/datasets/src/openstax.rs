//! The OpenStax textbook corpora: books cleaned into narrative pages (issue #10; the EAR
//! paper's "four cleaned textbook files", docs/reference.md §5), and any other OpenStax book
//! or bundle named in the books file (issue #20).
//!
//! # Sources
//! A local mirror directory (`--data-dir DIR`, `CHUNKBENCH_DATA`; the books are read from
//! `DIR/openstax/`; repositories, pinned commits and licenses in docs/reference.md §5,
//! "OpenStax textbook mirror"). Each book folder has a
//! `SOURCE_COMMIT` file whose first word is the upstream commit; it is recorded in the manifest.
//!
//! **The books file** ([`BooksFile`], `datasets/openstax-books.yaml`, compiled in; a user's own
//! with `--openstax-books`) names every book: folder, slug, title, repository, pinned commit,
//! format, license, MMLU subjects, the collections of a bundle and an optional pinned rules
//! generation, grouped into corpora. Each corpus becomes the datasets `NAME`, `NAME-mmlu` and
//! `NAME-mmlu-N`, with an identity over its own folders only ([`input_sha256`]). The mirror
//! and the file are compared first ([`mirror_report`]): a folder nobody names, a named folder
//! that is missing, a commit other than the pinned one are reported.
//!
//! | corpus | folder | book | format | page order |
//! |---|---|---|---|---|
//! | `openstax` | `osbooks-us-history` | U.S. History | CNXML 0.7 `modules/mNNNNN/index.cnxml` | `collections/*.collection.xml` via `META-INF/books.xml` |
//! | `openstax` | `osbooks-psychology` | Psychology 2e | CNXML 0.7 | idem |
//! | `openstax` | `osbooks-astronomy` | Astronomy 2e | CNXML 0.7 | idem |
//! | `openstax` | `philschatz-biology-book` | Biology (2014) | Markdown + YAML front matter, `contents/mNNNNN.md` | `SUMMARY.md` |
//! | `openstax-chemistry` | `osbooks-chemistry-bundle` | Chemistry 2e (of two collections) | CNXML 0.7 | the chosen collections |
//! | `openstax-economics` | `osbooks-principles-economics-bundle` | Macroeconomics 3e + Microeconomics 3e (of five) | CNXML 0.7 | idem |
//!
//! **Bundles**: a CNXML folder whose `META-INF/books.xml` lists several collections sharing
//! modules. A book reads the collections its entry names ([`BookSpec::collections`], default
//! all), in order; a module named by two of them is one page, where the first puts it.
//!
//! **Rules generations** ([`RULES_GENERATION`], [`rules_version`]): generation 1 is the rules
//! of the first release, generation 2 adds the bundles' class rules and three MathML rules. A
//! book is cleaned under the generation its entry pins ([`BookSpec::rules`]; the EAR books
//! pin generation 1) or the newest; the generation is in every manifest, so a rule change
//! never changes a corpus silently.
//!
//! **Unknown classes** ([`UnknownClass`]): every class token on every element the cleaner
//! visits has a rule ([`known_classes`]: removing, kept prose, book marker, page,
//! presentation) or is counted: in the block log, the manifest counts and the fetch summary.
//! With [`LoadOptions::strict`] the first one is an error naming file, line and class.

//! # Pages and blocks
//! One page per module named in the book's order file (no module is skipped; a module that is
//! named but missing is an error). A page is cut into *blocks*, its structural units in document
//! order: paragraphs, headings, lists, figures, tables, equations, media, code, exercises,
//! glossary entries, footnotes. The block structure does not depend on the cleaning decisions;
//! the rules below only decide whether each block is kept and, if not, why ([`Reason`]). A block
//! inside a dropped container (a review-questions section, a link-to-learning note, ...) is
//! removed with the container's reason; the outermost dropped container wins.
//!
//! **Kept:** narrative paragraphs: CNXML `para` (and `quote` without inner paragraphs) and
//! Markdown paragraphs, in the body and in the books' feature boxes that carry prose (U.S.
//! History "My Story", "Defining American", "Americana"; Psychology "Dig Deeper", "Everyday
//! Connection", "Connect the Concepts", "What Do You Think?"; Astronomy "Making Connections",
//! "Voyagers in Astronomy", "Astronomy Basics", "Seeing for Yourself"; Biology "Evolution",
//! "Career", "Everyday" and "Scientific Method" connections). Quoted primary sources (block
//! `quote` paragraphs, the appendix texts of the Declaration of Independence and the
//! Constitution) are kept: they are prose of the book. Text standing directly in a CNXML
//! container (a note without `para`) forms an implicit paragraph (element `text`).
//!
//! **Removed, by reason** (CNXML classes and Markdown `data-type`s as found in the mirrored
//! files):
//! - `heading`: document, section, note and figure titles and labels; Biology `#` headings and
//!   `data-type="title"` divs/spans. The page title is in the document's `title` field.
//! - `figure`: `figure` (with its caption), Markdown images and `<figure>` blocks.
//! - `table`: `table`, HTML `<table>`.
//! - `equation`: `equation`, display `math`, Biology `data-type="equation"` divs.
//! - `media`: `media` outside figures, Biology `data-type="media"` and `<iframe>`.
//! - `code`: `code`/`preformat` blocks.
//! - `list`: bulleted and enumerated lists (CNXML `list`, Markdown list items, HTML lists),
//!   including lists nested in a paragraph.
//! - `exercise`: `exercise` (problem and solution), worked `example`s, sections of class
//!   `review-questions`, `critical-thinking`, `personal-application`, `thought-questions`,
//!   `figuring-for-yourself`, `group-activities` (generation 2: `self-check-questions`,
//!   `problems`, `exercises`, and `workout` notes); Biology `data-type="exercise"` divs,
//!   `art-connection` notes (a figure and its question), and everything under the headings
//!   "Review Questions", "Free Response", "Art Connections", "Multiple Choice".
//! - `glossary`: `glossary` definitions (key terms); Biology `data-type="glossary"`.
//! - `summary`: sections of class `summary` (generation 2: `key-equations`); Biology
//!   "Section Summary".
//! - `references`: sections of class `references` and `further-exploration` (generation 2:
//!   `References`); Biology
//!   footnote lists; the appendix pages listed in [`REFERENCE_PAGES`].
//! - `learning-objectives`: the metadata abstract ("By the end of this section ..."), sections
//!   of class `learning-objectives` (generation 2: `chapter-objectives` notes), Biology
//!   `data-type="abstract"`.
//! - `link-to-learning`: notes of class `link-to-learning` / `click-and-explore`
//!   (generation 2: `linkup`); Biology
//!   `interactive`, `interactive-embedded-reading` and `interactive-embedded-homework` notes.
//! - `footnote`: inline footnotes (their markers are removed from the paragraph).
//! - `front-matter`: `preface` documents, contributor sections (`sr-contrib-auth`,
//!   `contrib-auth`) and the pages listed in [`FRONT_MATTER_PAGES`].
//! - `empty`: a paragraph with no text once markup is removed.
//!
//! # Inline markup
//! Paragraph text is the text content with markup flattened: emphasis, terms, `sup`/`sub`,
//! spans and links keep their text; a numeric superscript after a digit becomes `^N`
//! (`10^8`); cross-references without text (`<link target-id=.../>`, Biology `[\[link\]](#..)`)
//! are dropped, and parentheses left empty by them are removed; inline MathML is linearised
//! (`msup` as `^`, `msub` as `_`, `mfrac` as `/`, `msqrt` as `sqrt(..)`); Markdown escapes,
//! HTML entities, images and kramdown attribute lists (`{: ...}`) are resolved or removed.
//! Whitespace runs collapse to one space; no space is left before `.,;:!?)`.
//!
//! # Documents
//! A page is *narrative* when it keeps at least one block ([`NARRATIVE_MIN_BLOCKS`]). Each
//! narrative page is one document `openstax-BOOK-MODULE`; its `text` is the kept blocks joined
//! by `"\n\n"` (no title line: the title, "chapter — page", is in `title`), so every byte of the
//! text is narrative and each kept block's byte span is recorded in the block log.
//!
//! # Outputs
//! [`write_corpus`] writes the dataset store directory `NAME/` of a corpus (`openstax/`, ...):
//! `documents.jsonl`, an empty `questions.jsonl`, `blocks.jsonl` (one row per block of every
//! page: kept or removed, reason, source line, byte span in the document when kept, unknown
//! classes when there are any) and `manifest.json` with the counts per book and in total;
//! [`write_mmlu`] writes `NAME-mmlu/` and `NAME-mmlu-N/`.

pub mod clone;
mod cnxml;
mod markdown;
pub mod support;

use crate::dataset::{DatasetManifest, Question};
use crate::io::{sha256_file, sha256_hex, write_json, write_jsonl};
use anyhow::{bail, Context, Result};
use chunker::{Document, Span};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Folder of the mirror under the data directory, and name of the corpus dataset.
pub const DIR: &str = "openstax";

/// The newest generation of the cleaning rules. A corpus's manifests record the generation
/// its cleaning needs ([`Corpus::rules_version`], [`rules_version`]), so a rule change shows
/// in the manifests of every corpus it changes, and only in those.
pub const RULES_GENERATION: u8 = 3;

/// A page is narrative when it keeps at least this many blocks.
pub const NARRATIVE_MIN_BLOCKS: usize = 1;

/// Appendix pages whose every block is removed as `references` (bibliographies and lists of
/// websites), by exact page title.
pub const REFERENCE_PAGES: &[&str] = &[
    "Further Reading",
    "Astronomy Websites, Images, and Apps",
    "Star Chart and Sky Event Resources",
];

/// Pages whose every block is removed as `front-matter` (advice about the course, not subject
/// matter), by exact page title. `preface` documents are front matter too.
pub const FRONT_MATTER_PAGES: &[&str] = &[
    "Preface",
    "How to Study for an Introductory Astronomy Class",
];

/// The source format of a book.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// CNXML 0.7 modules ordered by a collection file.
    Cnxml,
    /// Markdown with YAML front matter ordered by `SUMMARY.md` (philschatz/biology-book).
    Markdown,
}

/// One book of the books file ([`BooksFile`]): where it is in the mirror, where it comes
/// from, and what it supports.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BookSpec {
    /// Folder under the mirror (`DATA_DIR/openstax/FOLDER`).
    pub folder: String,
    /// Short name used in document ids (`openstax-SLUG-MODULE`) and counts.
    pub slug: String,
    /// Title of the book (in each document's `source`).
    pub title: String,
    /// Upstream repository, `github.com/OWNER/NAME`.
    pub repository: String,
    /// The pinned upstream commit (40 hex digits): what `--openstax-clone` checks out; a
    /// mirror folder whose `SOURCE_COMMIT` differs is reported by [`mirror_report`].
    pub commit: String,
    /// Source format.
    pub format: Format,
    /// License of the text at the pinned commit (SPDX id).
    pub license: String,
    /// MMLU subjects whose questions this book may support.
    pub subjects: Vec<String>,
    /// CNXML only: the `META-INF/books.xml` slugs of the collections to read, in order. Empty:
    /// every collection of `books.xml`, in its order. A module in two chosen collections is one
    /// page, at the position and under the chapter of the first collection that names it.
    #[serde(default)]
    pub collections: Vec<String>,
    /// The cleaning rules generation the book is cleaned under (1 to [`RULES_GENERATION`];
    /// default: the newest). Pinning it keeps the book's corpus, and every result on it,
    /// unchanged when later generations add rules; the EAR books pin 1.
    #[serde(default)]
    pub rules: Option<u8>,
    /// Cleaning rules for classes of this book, overriding the corpus's and the built-in
    /// table's ([`ClassRuleSpec`]; CNXML books only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassRuleSpec>,
}

/// What a class rule of the books file does with an element carrying the class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClassAction {
    /// Drop the element with everything inside it, counted under [`ClassRuleSpec::reason`].
    Remove,
    /// Keep its content as narrative prose (a feature box of the book's own text).
    Keep,
    /// No effect on the text: a book-style marker or presentation token.
    Marker,
}

/// One cleaning rule of the books file: `{element: note, class: reference, rule: remove,
/// reason: references, why: "inline endnote citations"}`. Given on a corpus (every CNXML book
/// of it) or a book (that book; it wins over the corpus's), it overrides the built-in table
/// for `element.class` and applies whatever the book's rules generation. The rules are part
/// of the corpus's identity: [`Corpus::rules_version`] names them by hash, so a changed rule
/// makes new datasets, never a silent change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClassRuleSpec {
    /// The CNXML element (`section`, `note`, `para`, `figure`, ...).
    pub element: String,
    /// One class token (`reference`, `suggested-reading`, ...).
    pub class: String,
    /// What to do with it.
    pub rule: ClassAction,
    /// For `remove`: the reason the removed blocks are counted under (`references`,
    /// `exercise`, `summary`, `link-to-learning`, ...; [`Reason`]). Not given for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why: a sentence for the reader of the books file and the manifests.
    pub why: String,
}

impl ClassRuleSpec {
    /// The removal reason of a `remove` rule.
    pub fn removal(&self) -> Option<Reason> {
        self.reason
            .as_deref()
            .and_then(|r| Reason::ALL.iter().copied().find(|x| x.as_str() == r))
    }

    /// Checks a corpus's or book's list of rules ([`ClassRuleSpec::check`] on each, and one
    /// rule per `element.class`); `at` names the corpus or book in the error.
    fn check_all(rules: &[ClassRuleSpec], at: &str) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        for (i, r) in rules.iter().enumerate() {
            r.check(&format!("{at}, classes[{i}]"))?;
            if !seen.insert((&r.element, &r.class)) {
                bail!(
                    "{at}, classes[{i}]: {}.{} has two rules; keep one",
                    r.element,
                    r.class
                );
            }
        }
        Ok(())
    }

    /// Checks the rule; `at` names it in the error.
    fn check(&self, at: &str) -> Result<()> {
        let token = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
        if !token(&self.element) || !token(&self.class) {
            bail!("{at}: element {:?}, class {:?}: give one element name and one class token (no spaces)", self.element, self.class);
        }
        if let Some((e, c)) = self.class.split_once('.') {
            bail!("{at}: class {:?} holds a '.': the warnings print ELEMENT.CLASS; write element: {e}, class: {c}", self.class);
        }
        if !cnxml::CLASS_ELEMENTS.contains(&self.element.as_str()) {
            bail!(
                "{at}: element {:?}: the cleaner looks up classes on {} only (CNXML element names, lower case)",
                self.element,
                cnxml::CLASS_ELEMENTS.join(", ")
            );
        }
        if self
            .why
            .trim()
            .chars()
            .filter(|c| c.is_alphanumeric())
            .count()
            < 3
        {
            bail!("{at}: why: say in a sentence why the class gets this rule");
        }
        let reasons = || {
            Reason::ALL
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (self.rule, &self.reason) {
            (ClassAction::Remove, None) => {
                bail!("{at}: rule remove needs a reason: one of {}", reasons())
            }
            (ClassAction::Remove, Some(r)) if self.removal().is_none() => {
                bail!("{at}: reason {r:?} is not one of {}", reasons())
            }
            (ClassAction::Keep | ClassAction::Marker, Some(_)) => {
                bail!("{at}: reason applies to rule remove only; remove it (say why in `why`)")
            }
            _ => Ok(()),
        }
    }
}

impl BookSpec {
    /// The book with the corpus's class rules added after its own (its own win for the same
    /// `element.class`); Markdown books are returned unchanged.
    pub fn with_corpus_classes(&self, corpus: &[ClassRuleSpec]) -> BookSpec {
        let mut b = self.clone();
        if b.format == Format::Cnxml {
            for r in corpus {
                if !b
                    .classes
                    .iter()
                    .any(|o| o.element == r.element && o.class == r.class)
                {
                    b.classes.push(r.clone());
                }
            }
        }
        b
    }

    /// The rules generation the book is cleaned under: [`BookSpec::rules`] or the newest; 1
    /// for Markdown books (the Markdown reader has generation-1 rules only).
    pub fn rules_generation(&self) -> u8 {
        match self.format {
            Format::Markdown => 1,
            Format::Cnxml => self.rules.unwrap_or(RULES_GENERATION),
        }
    }
}

/// One corpus of the books file: the books that become one dataset `NAME` with its question
/// sets `NAME-mmlu` and `NAME-mmlu-N`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusSpec {
    /// Dataset name (`openstax`, `openstax-chemistry`, ...).
    pub name: String,
    /// License line of the corpus's manifests.
    pub license: String,
    /// The books, in the order they are read and reported.
    pub books: Vec<BookSpec>,
    /// The support rule generation its question sets are decided under (1 to
    /// [`support::SUPPORT_RULES`]; default the newest). The EAR corpus pins 1, so its
    /// question sets, and results/ear, stay those of earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support: Option<u8>,
    /// Cleaning rules for classes, overriding the built-in table for every book of the
    /// corpus (a book's own `classes` override these in turn); see [`ClassRuleSpec`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassRuleSpec>,
}

impl CorpusSpec {
    /// The support rule generation: [`CorpusSpec::support`] or the newest.
    pub fn support_generation(&self) -> u8 {
        self.support.unwrap_or(support::SUPPORT_RULES)
    }

    /// The name of its support rule ([`support::support_rule`]).
    pub fn support_rule(&self) -> String {
        support::support_rule(self.support_generation())
    }

    /// Name of the dataset of all supported questions: `NAME-mmlu`.
    pub fn mmlu_dataset(&self) -> String {
        format!("{}-mmlu", self.name)
    }

    /// Name of the sampled question dataset: `NAME-mmlu-SAMPLE`.
    pub fn sample_dataset(&self, sample: usize) -> String {
        format!("{}-mmlu-{sample}", self.name)
    }

    /// Every MMLU subject of the corpus's books, in book order.
    pub fn subjects(&self) -> impl Iterator<Item = &str> {
        self.books
            .iter()
            .flat_map(|b| b.subjects.iter().map(String::as_str))
    }
}

/// The books file: which books chunkbench imports from the mirror, grouped into corpora.
/// The repository's file is `datasets/openstax-books.yaml` ([`BooksFile::builtin`], compiled
/// into the binary); `--openstax-books FILE` reads a user's own with [`BooksFile::load`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BooksFile {
    /// The corpora, in the order they are converted and reported.
    pub corpora: Vec<CorpusSpec>,
}

/// File in a corpus's dataset directory that records the books-file entry it was made from
/// ([`entry_json`]). The entry shapes the datasets (ids, titles, subjects, collections) but not
/// the mirror's hash, so `data fetch` compares it too before calling a store up to date. It
/// is not part of the manifest (manifests made before it existed stay byte-identical).
pub const ENTRY_FILE: &str = "books-entry.json";

/// The books-file entry of a corpus as canonical JSON (what [`ENTRY_FILE`] holds).
pub fn entry_json(spec: &CorpusSpec) -> String {
    serde_json::to_string_pretty(spec).expect("a corpus spec serialises") + "\n"
}

/// Dataset names `data fetch` writes besides the textbooks: no corpus may take them.
pub const RESERVED_NAMES: &[&str] = &[
    "sciq",
    "sciq-retrieval",
    "mmlu-dev",
    "mmlu-validation",
    "mmlu-test",
    "quality",
];

/// The repository's books file, `datasets/openstax-books.yaml`.
pub const BUILTIN_BOOKS_FILE: &str = include_str!("../../../datasets/openstax-books.yaml");

impl BooksFile {
    /// The repository's books file ([`BUILTIN_BOOKS_FILE`]).
    ///
    /// # Panics
    /// Never for the file shipped with the repository (a test parses it).
    pub fn builtin() -> BooksFile {
        BooksFile::parse(BUILTIN_BOOKS_FILE, "datasets/openstax-books.yaml")
            .expect("the repository's books file is valid (tested)")
    }

    /// Reads and validates a books file.
    ///
    /// # Errors
    /// An unreadable file, or any error of [`BooksFile::parse`].
    pub fn load(path: &Path) -> Result<BooksFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the books file {}", path.display()))?;
        BooksFile::parse(&text, &path.display().to_string())
    }

    /// Parses and validates a books file; `origin` names it in errors.
    ///
    /// # Errors
    /// Invalid YAML, an unknown, missing or duplicate field (with its line and column); a
    /// corpus name that is not lowercase words of letters and digits joined by `-`, that is
    /// one of [`RESERVED_NAMES`], or that ends in `-mmlu` or holds `-mmlu-` (the question sets'
    /// names); a duplicate corpus name, book folder or slug; a commit that is not 40 lowercase
    /// hex digits; a subject claimed by two books of one corpus; `collections` on a Markdown
    /// book. Each error names `origin`, the corpus and book, and the fix.
    pub fn parse(text: &str, origin: &str) -> Result<BooksFile> {
        let file: BooksFile = serde_yaml::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!(":{}:{}", l.line(), l.column()))
                .unwrap_or_default();
            anyhow::anyhow!("{origin}{at}: {e}; the fields are described at the top of datasets/openstax-books.yaml")
        })?;
        let mut names = std::collections::HashSet::new();
        let mut folders = std::collections::HashMap::new();
        let mut slugs = std::collections::HashMap::new();
        for c in &file.corpora {
            let ok = |s: &str| {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            };
            let words_ok = |s: &str| ok(s) && s.split('-').all(|w| !w.is_empty());
            if !words_ok(&c.name) || !c.name.starts_with(|ch: char| ch.is_ascii_lowercase()) {
                bail!("{origin}: corpus name {:?}: use lowercase words of letters and digits joined by '-', starting with a letter (it names dataset directories)", c.name);
            }
            if RESERVED_NAMES.contains(&c.name.as_str())
                || c.name.ends_with("-mmlu")
                || c.name.contains("-mmlu-")
            {
                bail!("{origin}: corpus name {:?} would overwrite another dataset of the store ({} are taken, and NAME-mmlu, NAME-mmlu-N are each corpus's question sets); choose another name", c.name, RESERVED_NAMES.join(", "));
            }
            if !names.insert(c.name.as_str()) {
                bail!(
                    "{origin}: corpus {:?} is listed twice; give each corpus its own name",
                    c.name
                );
            }
            if c.books.is_empty() {
                bail!("{origin}: corpus {:?} has no books", c.name);
            }
            if let Some(g) = c.support {
                if !(1..=support::SUPPORT_RULES).contains(&g) {
                    bail!("{origin}: corpus {:?}: support: {g}: give a generation from 1 to {} (or leave it out for the newest)", c.name, support::SUPPORT_RULES);
                }
            }
            ClassRuleSpec::check_all(&c.classes, &format!("{origin}: corpus {:?}", c.name))?;
            let mut subjects: BTreeMap<&str, &str> = BTreeMap::new();
            for b in &c.books {
                let at = format!("{origin}: corpus {:?}, book {:?}", c.name, b.slug);
                if !ok(&b.slug) {
                    bail!("{at}: slug: use lowercase letters, digits and '-' (it is part of document ids)");
                }
                if b.folder.is_empty()
                    || b.folder.contains(['/', '\\'])
                    || b.folder.starts_with('.')
                {
                    bail!(
                        "{at}: folder {:?}: give the name of one folder under the mirror",
                        b.folder
                    );
                }
                if let Some(other) = folders.insert(b.folder.as_str(), &c.name) {
                    bail!("{at}: folder {:?} is already a book of corpus {other:?}; a folder is one book (name several collections of a bundle in one entry's `collections`)", b.folder);
                }
                if let Some(other) = slugs.insert(b.slug.as_str(), &c.name) {
                    bail!("{at}: slug {:?} is already used (corpus {other:?}); document ids must stay unique", b.slug);
                }
                if b.commit.len() != 40
                    || !b
                        .commit
                        .bytes()
                        .all(|x| x.is_ascii_digit() || (b'a'..=b'f').contains(&x))
                {
                    bail!("{at}: commit {:?}: give the full 40-hex-digit upstream commit, in lowercase as git prints it", b.commit);
                }
                if let Some(g) = b.rules {
                    if !(1..=RULES_GENERATION).contains(&g) {
                        bail!("{at}: rules: {g}: give a generation from 1 to {RULES_GENERATION} (or leave it out for the newest)");
                    }
                    if b.format == Format::Markdown && g != 1 {
                        bail!("{at}: rules: {g}: the Markdown reader has generation 1 only");
                    }
                }
                if b.format == Format::Markdown && !b.classes.is_empty() {
                    bail!("{at}: classes apply to CNXML books only (the Markdown reader has its own fixed rules); remove them");
                }
                ClassRuleSpec::check_all(&b.classes, &at)?;
                if b.format == Format::Markdown && !b.collections.is_empty() {
                    bail!("{at}: collections apply to CNXML books only; remove them");
                }
                for s in &b.subjects {
                    if let Some(first) = subjects.insert(s, &b.slug) {
                        bail!("{at}: subject {s:?} is already supported by book {first:?}; a subject belongs to one book of a corpus");
                    }
                }
            }
        }
        if file.corpora.is_empty() {
            bail!("{origin}: no corpora; list at least one under `corpora:`");
        }
        Ok(file)
    }

    /// The corpus named `name`.
    pub fn corpus(&self, name: &str) -> Option<&CorpusSpec> {
        self.corpora.iter().find(|c| c.name == name)
    }
}

/// What the mirror holds compared with the books file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirrorReport {
    /// Folders of the mirror that no book of the file names (they are not imported).
    pub not_in_file: Vec<String>,
    /// `(corpus, folder)` of books whose folder is not in the mirror (the corpus is skipped).
    pub not_in_mirror: Vec<(String, String)>,
    /// `(folder, pinned, found)`: books whose `SOURCE_COMMIT` differs from the pinned commit
    /// (the mirror's commit is what is converted and recorded).
    pub other_commit: Vec<(String, String, String)>,
}

impl MirrorReport {
    /// True when the corpus has every book folder in the mirror.
    pub fn complete(&self, corpus: &CorpusSpec) -> bool {
        !self.not_in_mirror.iter().any(|(c, _)| c == &corpus.name)
    }

    /// One line per finding, for the user.
    pub fn lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        for f in &self.not_in_file {
            v.push(format!(
                "{f}/ is in the mirror but not in the books file: not imported (to import it, add an entry to a copy of datasets/openstax-books.yaml and give the copy with --openstax-books FILE)"
            ));
        }
        for (c, f) in &self.not_in_mirror {
            v.push(format!(
                "{f}/ (corpus {c}) is in the books file but not in the mirror: corpus {c} skipped"
            ));
        }
        for (f, pinned, found) in &self.other_commit {
            v.push(format!(
                "{f}/SOURCE_COMMIT is {found}, not the pinned {pinned}: converting the mirror's commit (it is recorded in the manifest)"
            ));
        }
        v
    }
}

/// Compares the mirror `root` with the books file: folders nobody names, named folders that
/// are missing, and commits that differ from the pinned ones. Hidden entries and plain files
/// (`SOURCE.md`) of `root` are ignored.
///
/// # Errors
/// `root` cannot be listed.
pub fn mirror_report(root: &Path, file: &BooksFile) -> Result<MirrorReport> {
    let mut report = MirrorReport::default();
    let named: std::collections::HashSet<&str> = file
        .corpora
        .iter()
        .flat_map(|c| c.books.iter().map(|b| b.folder.as_str()))
        .collect();
    let rd = std::fs::read_dir(root).with_context(|| format!("cannot list {}", root.display()))?;
    for e in rd {
        let e = e.with_context(|| format!("cannot list {}", root.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() && !name.starts_with('.') && !named.contains(name.as_str()) {
            report.not_in_file.push(name);
        }
    }
    report.not_in_file.sort();
    for c in &file.corpora {
        for b in &c.books {
            let dir = root.join(&b.folder);
            if !dir.is_dir() {
                report
                    .not_in_mirror
                    .push((c.name.clone(), b.folder.clone()));
            } else if let Ok(found) = source_commit(&dir) {
                if found != b.commit {
                    report
                        .other_commit
                        .push((b.folder.clone(), b.commit.clone(), found));
                }
            }
        }
    }
    Ok(report)
}

/// Why a block was removed. Serialised in kebab case (`link-to-learning`, ...); the module
/// documentation lists what falls under each reason.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Reason {
    /// Titles and labels.
    Heading,
    /// Figures with their captions, images.
    Figure,
    /// Tables.
    Table,
    /// Display equations.
    Equation,
    /// Media outside figures (videos, iframes).
    Media,
    /// Code and preformatted blocks.
    Code,
    /// Bulleted and enumerated lists.
    List,
    /// Exercises, review and critical-thinking questions, worked examples.
    Exercise,
    /// Glossary definitions (key terms).
    Glossary,
    /// Section summaries.
    Summary,
    /// References, bibliographies, further reading, footnote lists.
    References,
    /// Learning objectives (section abstracts).
    LearningObjectives,
    /// Link-to-learning / click-and-explore boxes (pointers to outside resources).
    LinkToLearning,
    /// Inline footnotes.
    Footnote,
    /// Prefaces, contributor lists, study advice.
    FrontMatter,
    /// Paragraphs without text after flattening.
    Empty,
}

impl Reason {
    /// Every reason, in reporting order (the declaration order; strum `VariantArray`).
    pub const ALL: &'static [Reason] = <Reason as strum::VariantArray>::VARIANTS;

    /// The kebab-case name used in the block log and manifest counts.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One structural unit of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What it is in the source: the CNXML element (`para`, `figure`, ...) or the Markdown
    /// construct (`paragraph`, `image`, `div.exercise`, ...).
    pub element: String,
    /// The outermost dropped container it sits in (`section.review-questions`,
    /// `note.link-to-learning`, ...), if any.
    pub context: Option<String>,
    /// 1-based line of the block's start in its source file.
    pub line: usize,
    /// The block's text with markup flattened and whitespace collapsed (for removed blocks
    /// this is the plain text content, kept for audit and leak tests).
    pub text: String,
    /// `None` when kept; the reason otherwise.
    pub removed: Option<Reason>,
    /// Classes without a rule (`ELEMENT.CLASS`) on the block's own element or on a container
    /// it sits in; empty almost always. See [`UnknownClass`].
    pub unknown: Vec<String>,
}

/// A class token the cleaning rules do not know, met on an element the cleaner visits. The
/// element is cleaned as if it had no class (a section or note stays prose); it is counted
/// (`unknown.ELEMENT.CLASS` in the manifest counts, the block log's `unknown` field) and
/// `--openstax-strict` makes it an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClass {
    /// `ELEMENT.CLASS`, e.g. `section.endnotes`.
    pub class: String,
    /// 1-based line of the element in its source file.
    pub line: usize,
}

impl Block {
    /// True when the block is part of the document text.
    pub fn kept(&self) -> bool {
        self.removed.is_none()
    }
}

/// Share of a book's kept words that sit under classes with no cleaning rule
/// ([`Corpus::unknown_shares`]): text kept as prose only because no rule decided it.
/// `data fetch` prints it per book and warns above [`UNKNOWN_WARN_SHARE`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnknownShare {
    /// The book's slug.
    pub slug: String,
    /// Words (whitespace tokens) of its kept text.
    pub words_kept: u64,
    /// Words of kept blocks under (or carrying) an unknown class.
    pub words_unknown: u64,
    /// `(ELEMENT.CLASS, words, example)` for each unknown class over kept text, most words
    /// first (a block under two unknown classes counts for both).
    pub classes: Vec<(String, u64, UnknownExample)>,
}

impl UnknownShare {
    /// `words_unknown / words_kept` (0 for a book without kept text).
    pub fn share(&self) -> f64 {
        if self.words_kept == 0 {
            0.0
        } else {
            self.words_unknown as f64 / self.words_kept as f64
        }
    }
}

/// A kept block under an unknown class, shown as an example.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnknownExample {
    /// `FOLDER/modules/MODULE/index.cnxml`.
    pub file: String,
    /// 1-based line of the block.
    pub line: usize,
    /// The block's text.
    pub text: String,
}

/// Above this share of a book's kept words under unknown classes, `data fetch` warns
/// (0.01 = 1 %).
pub const UNKNOWN_WARN_SHARE: f64 = 0.01;

/// One module of a book, cleaned.
#[derive(Debug, Clone)]
pub struct Page {
    /// The book's slug.
    pub book: String,
    /// Module id (`m49986`).
    pub module: String,
    /// The page's own title.
    pub title: String,
    /// Chapter title from the order file, when the page is inside a chapter.
    pub chapter: Option<String>,
    /// Source file relative to the book folder.
    pub path: String,
    /// Blocks in document order.
    pub blocks: Vec<Block>,
    /// Unknown classes met on the page, in document order.
    pub unknown: Vec<UnknownClass>,
    /// The books file's class rules ([`ClassRuleSpec`]) that matched an element of the page,
    /// as `ELEMENT.CLASS` (a rule no page matches is reported by `data fetch`).
    pub rules_used: std::collections::BTreeSet<String>,
}

impl Page {
    /// Document id: `openstax-BOOK-MODULE`.
    pub fn doc_id(&self) -> String {
        format!("openstax-{}-{}", self.book, self.module)
    }

    /// True when the page keeps at least [`NARRATIVE_MIN_BLOCKS`] blocks.
    pub fn is_narrative(&self) -> bool {
        self.blocks.iter().filter(|b| b.kept()).count() >= NARRATIVE_MIN_BLOCKS
    }

    /// The document title: "chapter — page title", or the page title outside chapters.
    pub fn display_title(&self) -> String {
        match &self.chapter {
            Some(c) if c != &self.title => format!("{c} — {}", self.title),
            _ => self.title.clone(),
        }
    }

    /// The cleaned text (kept blocks joined by `"\n\n"`) and, per block, its byte span in
    /// that text (`None` for removed blocks).
    pub fn text_and_spans(&self) -> (String, Vec<Option<Span>>) {
        let mut text = String::new();
        let mut spans = Vec::with_capacity(self.blocks.len());
        for b in &self.blocks {
            if b.kept() {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                let start = text.len();
                text.push_str(&b.text);
                spans.push(Some(Span {
                    start,
                    end: text.len(),
                }));
            } else {
                spans.push(None);
            }
        }
        (text, spans)
    }
}

/// One book as read from the mirror.
#[derive(Debug, Clone)]
pub struct Book {
    /// Which book.
    pub spec: BookSpec,
    /// Upstream commit (first word of `SOURCE_COMMIT`).
    pub commit: String,
    /// Pages in book order.
    pub pages: Vec<Page>,
}

/// Page and block counts of one book or of the whole corpus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pages (modules in the order file).
    pub pages: u64,
    /// Pages that keep at least one block.
    pub narrative_pages: u64,
    /// Blocks kept.
    pub blocks_kept: u64,
    /// Blocks removed.
    pub blocks_removed: u64,
    /// Blocks removed, per reason (every reason present, zero included).
    pub removed_by_reason: BTreeMap<Reason, u64>,
    /// Words (whitespace tokens) of the kept text.
    pub words_kept: u64,
    /// Occurrences of unknown classes, per `ELEMENT.CLASS` ([`UnknownClass`]).
    pub unknown: BTreeMap<String, u64>,
    /// Words of the kept blocks that sit under (or carry) a class with no rule: text kept as
    /// prose only because nobody decided ([`UnknownShare`]).
    pub words_unknown: u64,
}

impl Counts {
    fn add_page(&mut self, page: &Page) {
        self.pages += 1;
        self.narrative_pages += u64::from(page.is_narrative());
        for b in &page.blocks {
            match b.removed {
                None => {
                    self.blocks_kept += 1;
                    let w = chunker::count_words(&b.text) as u64;
                    self.words_kept += w;
                    if !b.unknown.is_empty() {
                        self.words_unknown += w;
                    }
                }
                Some(r) => {
                    self.blocks_removed += 1;
                    *self.removed_by_reason.entry(r).or_default() += 1;
                }
            }
        }
        for u in &page.unknown {
            *self.unknown.entry(u.class.clone()).or_default() += 1;
        }
    }

    /// Occurrences of unknown classes in total.
    pub fn unknown_total(&self) -> u64 {
        self.unknown.values().sum()
    }

    fn add(&mut self, other: &Counts) {
        self.pages += other.pages;
        self.narrative_pages += other.narrative_pages;
        self.blocks_kept += other.blocks_kept;
        self.blocks_removed += other.blocks_removed;
        self.words_kept += other.words_kept;
        self.words_unknown += other.words_unknown;
        for (r, n) in &other.removed_by_reason {
            *self.removed_by_reason.entry(*r).or_default() += n;
        }
        for (k, n) in &other.unknown {
            *self.unknown.entry(k.clone()).or_default() += n;
        }
    }

    fn new() -> Counts {
        Counts {
            removed_by_reason: Reason::ALL.iter().map(|r| (*r, 0)).collect(),
            ..Counts::default()
        }
    }

    /// Flat `key -> count` entries with `prefix` (e.g. `us-history.`), as stored in manifests.
    /// `unknown_classes` and `unknown.ELEMENT.CLASS` appear only when some class is unknown
    /// (absent means zero; manifests written before the counter existed stay as they were), and
    /// with them `words_kept_unknown` ([`Counts::words_unknown`]).
    pub fn entries(&self, prefix: &str) -> Vec<(String, u64)> {
        let mut v = vec![
            (format!("{prefix}pages"), self.pages),
            (format!("{prefix}narrative_pages"), self.narrative_pages),
            (format!("{prefix}blocks_kept"), self.blocks_kept),
            (format!("{prefix}blocks_removed"), self.blocks_removed),
            (format!("{prefix}words_kept"), self.words_kept),
        ];
        for (r, n) in &self.removed_by_reason {
            v.push((format!("{prefix}removed.{r}"), *n));
        }
        if self.unknown_total() > 0 {
            v.push((format!("{prefix}unknown_classes"), self.unknown_total()));
            v.push((format!("{prefix}words_kept_unknown"), self.words_unknown));
            for (k, n) in &self.unknown {
                v.push((format!("{prefix}unknown.{k}"), *n));
            }
        }
        v
    }
}

/// The books of one corpus of the books file, cleaned.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The corpus as the books file describes it.
    pub spec: CorpusSpec,
    /// The mirror directory read (`DATA_DIR/openstax`).
    pub root: PathBuf,
    /// The books in the books file's order.
    pub books: Vec<Book>,
    /// [`input_sha256`] of the mirror: the identity of the input.
    pub input_sha256: String,
}

impl Corpus {
    /// Counts per book (keyed by slug) and in total.
    pub fn counts(&self) -> (Vec<(&str, Counts)>, Counts) {
        let mut total = Counts::new();
        let per: Vec<(&str, Counts)> = self
            .books
            .iter()
            .map(|b| {
                let mut c = Counts::new();
                for p in &b.pages {
                    c.add_page(p);
                }
                total.add(&c);
                (b.spec.slug.as_str(), c)
            })
            .collect();
        (per, total)
    }

    /// The narrative pages as canonical documents, in book order.
    pub fn documents(&self) -> Vec<Document> {
        let mut docs = Vec::new();
        for book in &self.books {
            for page in book.pages.iter().filter(|p| p.is_narrative()) {
                let (text, _) = page.text_and_spans();
                docs.push(Document {
                    id: page.doc_id(),
                    title: page.display_title(),
                    text,
                    source: format!(
                        "OpenStax {} ({}@{}) {}",
                        book.spec.title,
                        book.spec.repository,
                        short(&book.commit),
                        page.path
                    ),
                    license: book.spec.license.clone(),
                });
            }
        }
        docs
    }

    /// The upstream commits, `folder -> commit`.
    pub fn commits(&self) -> BTreeMap<String, String> {
        self.books
            .iter()
            .map(|b| (b.spec.folder.to_string(), b.commit.clone()))
            .collect()
    }

    /// The rules version of the corpus: [`rules_version`] of its books' generations.
    pub fn rules_version(&self) -> String {
        let mut g: Vec<u8> = self
            .books
            .iter()
            .map(|b| b.spec.rules_generation())
            .collect();
        g.sort_unstable();
        g.dedup();
        let mut v = rules_version(&g);
        // The books file's own class rules, by content: `+classes-SHA12`.
        // What the rules do, not why (`why` is documentation: rewording it changes nothing).
        type Effect<'a> = (&'a str, &'a str, ClassAction, Option<&'a str>);
        let own: Vec<(&str, Vec<Effect>)> = self
            .books
            .iter()
            .filter(|b| !b.spec.classes.is_empty())
            .map(|b| {
                let effects = b
                    .spec
                    .classes
                    .iter()
                    .map(|r| {
                        (
                            r.element.as_str(),
                            r.class.as_str(),
                            r.rule,
                            r.reason.as_deref(),
                        )
                    })
                    .collect();
                (b.spec.slug.as_str(), effects)
            })
            .collect();
        if !own.is_empty() {
            let json = serde_json::to_string(&own).expect("class rules serialise");
            v.push_str("+classes-");
            v.push_str(&sha256_hex(json.as_bytes())[..12]);
        }
        v
    }

    /// Per book, the share of kept words under classes with no rule, with the classes that
    /// hold most of them (words, and the first kept block under each as an example).
    pub fn unknown_shares(&self) -> Vec<UnknownShare> {
        self.books
            .iter()
            .map(|b| {
                let mut share = UnknownShare {
                    slug: b.spec.slug.clone(),
                    ..UnknownShare::default()
                };
                let mut by_class: BTreeMap<&str, (u64, Option<UnknownExample>)> = BTreeMap::new();
                for p in &b.pages {
                    for blk in p.blocks.iter().filter(|x| x.kept()) {
                        let w = chunker::count_words(&blk.text) as u64;
                        share.words_kept += w;
                        if blk.unknown.is_empty() {
                            continue;
                        }
                        share.words_unknown += w;
                        let mut classes: Vec<&str> =
                            blk.unknown.iter().map(String::as_str).collect();
                        classes.sort_unstable();
                        classes.dedup();
                        for c in classes {
                            let e = by_class.entry(c).or_default();
                            e.0 += w;
                            e.1.get_or_insert_with(|| UnknownExample {
                                file: format!("{}/{}", b.spec.folder, p.path),
                                line: blk.line,
                                text: blk.text.clone(),
                            });
                        }
                    }
                }
                let mut top: Vec<(String, u64, UnknownExample)> = by_class
                    .into_iter()
                    .filter_map(|(c, (w, e))| e.map(|e| (c.to_string(), w, e)))
                    .collect();
                top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                share.classes = top;
                share
            })
            .collect()
    }

    /// The books file's class rules that matched no element of their book: `(book slug,
    /// ELEMENT.CLASS)`, in book and rule order (a misspelt element or class, or a class the
    /// book does not use).
    pub fn unused_rules(&self) -> Vec<(&str, String)> {
        let mut out = Vec::new();
        for b in &self.books {
            for r in &b.spec.classes {
                let key = format!("{}.{}", r.element, r.class);
                if !b.pages.iter().any(|p| p.rules_used.contains(&key)) {
                    out.push((b.spec.slug.as_str(), key));
                }
            }
        }
        out
    }

    /// The corpus's unknown classes with their book and page, in book and page order.
    pub fn unknown(&self) -> impl Iterator<Item = (&Book, &Page, &UnknownClass)> {
        self.books.iter().flat_map(|b| {
            b.pages
                .iter()
                .flat_map(move |p| p.unknown.iter().map(move |u| (b, p, u)))
        })
    }
}

/// The name of the rules generations a corpus is cleaned under: `openstax-clean-N`, or
/// `openstax-clean-1+2` when its books pin different ones. Generation 1 is the rules of the
/// first release (the four EAR books pin it); generation 2 adds the class rules and MathML
/// rules of the chemistry and economics bundles (module documentation). The version is part
/// of every manifest and of the question sets' input key.
pub fn rules_version(generations: &[u8]) -> String {
    let g: Vec<String> = generations.iter().map(u8::to_string).collect();
    format!("openstax-clean-{}", g.join("+"))
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// How [`load_corpus`] treats markup without a rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Fail on the first unknown class ([`UnknownClass`]) instead of counting it.
    pub strict: bool,
}

/// Reads and cleans the books of corpus `spec` from `root` (the `openstax/` folder of a data
/// directory).
///
/// # Errors
/// A missing book folder, `SOURCE_COMMIT` or order file; a collection named in the books file
/// but not in `META-INF/books.xml`; a module named in the order file but missing; malformed
/// XML or front matter; an element the cleaning rules do not know; with `strict`, an unknown
/// class. Each error names the file (and line where there is one) and what to fix.
pub fn load_corpus(root: &Path, spec: &CorpusSpec, options: LoadOptions) -> Result<Corpus> {
    if !root.is_dir() {
        bail!(
            "{} is not a directory; point --data-dir (or CHUNKBENCH_DATA) at the directory that \
             holds {DIR}/ (e.g. ../shared/datasets)",
            root.display()
        );
    }
    let input_sha256 = input_sha256(root, spec)?;
    use rayon::prelude::*;
    // The books are independent: clean them in parallel (rayon keeps the order).
    let books = spec
        .books
        .par_iter()
        .map(|book| -> Result<Book> {
            let book = &book.with_corpus_classes(&spec.classes);
            let dir = root.join(&book.folder);
            let commit = source_commit(&dir)?;
            let mut read = |rel: &str| -> Result<String> {
                let p = dir.join(rel);
                std::fs::read_to_string(&p)
                    .with_context(|| format!("cannot read {} as UTF-8", p.display()))
            };
            let pages = match book.format {
                Format::Cnxml => cnxml::read_book(book, &dir, &mut read)?,
                Format::Markdown => markdown::read_book(book, &dir, &mut read)?,
            };
            if options.strict {
                if let Some((p, u)) = pages
                    .iter()
                    .find_map(|p| p.unknown.first().map(|u| (p, u)))
                {
                    bail!(
                        "{}:{}: class {:?} on <{}> has no cleaning rule (book {}, --openstax-strict); \
                         decide whether its content is narrative and give it a rule under \
                         `classes:` of the corpus or book in your books file (rule remove with a \
                         reason, keep or marker, and why; datasets/README.md), or run without \
                         --openstax-strict to count it and clean the element as if it had no \
                         class (a section or note stays prose)",
                        dir.join(&p.path).display(),
                        u.line,
                        u.class.split_once('.').map_or("", |x| x.1),
                        u.class.split_once('.').map_or("", |x| x.0),
                        book.slug
                    );
                }
            }
            Ok(Book {
                spec: book.clone(),
                commit,
                pages,
            })
        })
        .collect::<Result<Vec<Book>>>()?;
    Ok(Corpus {
        spec: spec.clone(),
        root: root.to_path_buf(),
        books,
        input_sha256,
    })
}

/// Every `(element, class)` pair the CNXML cleaning rules know, in rule order: the classes
/// that remove a section or note, the feature boxes kept as prose, the book-style markers and
/// the presentation-only classes. Any other class met is an [`UnknownClass`].
pub fn known_classes() -> Vec<(&'static str, &'static str)> {
    cnxml::known_classes().collect()
}

/// Cleans one CNXML module (the text of an `index.cnxml`) into a [`Page`] with its blocks;
/// `path` is used in error messages only. The page's `book`, `module`, `chapter` and `path`
/// are left empty.
///
/// # Errors
/// Malformed XML, a missing `<title>` or `<content>`, or an element without a cleaning rule,
/// naming `path`, the line and the element.
pub fn clean_cnxml(text: &str, path: &Path) -> Result<Page> {
    cnxml::clean_page(text, path, RULES_GENERATION, &[])
}

/// Cleans one Markdown page of the Biology book (YAML front matter and kramdown body) into a
/// [`Page`]; `path` is used in error messages only.
///
/// # Errors
/// Malformed front matter, unbalanced `<div>`s or HTML blocks, a `<div data-type>` without a
/// rule, or unparsable inline MathML, naming `path` and the line.
pub fn clean_markdown(text: &str, path: &Path) -> Result<Page> {
    markdown::clean_page(text, path)
}

/// The upstream commit of a mirrored book: the first word of `DIR/SOURCE_COMMIT`.
///
/// # Errors
/// A missing book folder or file, or a first word that is not a 40-hex-digit commit.
pub fn source_commit(dir: &Path) -> Result<String> {
    if !dir.is_dir() {
        bail!(
            "{}: book folder missing; the mirror must hold every folder of the books file \
             (datasets/openstax-books.yaml; docs/reference.md §5 lists the upstreams)",
            dir.display()
        );
    }
    let commit_path = dir.join("SOURCE_COMMIT");
    let commit_text = std::fs::read_to_string(&commit_path).with_context(|| {
        format!(
            "cannot read {}; each mirrored book records its upstream commit there",
            commit_path.display()
        )
    })?;
    Ok(commit_text
        .split_whitespace()
        .next()
        .filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
        .with_context(|| {
            format!(
                "{}:1: expected a 40-hex-digit commit as the first word, found {:?}",
                commit_path.display(),
                commit_text.lines().next().unwrap_or("")
            )
        })?
        .to_string())
}

/// The identity of a corpus's input: sha256 over the sorted lines
/// `FOLDER/RELATIVE/PATH NUL sha256` of every file under the corpus's book folders (symlinks
/// followed, hidden files included). Other folders of the mirror do not enter it.
///
/// # Errors
/// A missing book folder or an unreadable file, naming it.
pub fn input_sha256(root: &Path, spec: &CorpusSpec) -> Result<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) -> Result<()> {
        let rd =
            std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for e in rd {
            let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let r = format!("{rel}/{name}");
            if path.is_dir() {
                walk(&path, &r, out)?;
            } else {
                out.push((r, sha256_file(&path)?));
            }
        }
        Ok(())
    }
    let mut listing = Vec::new();
    for book in &spec.books {
        let dir = root.join(&book.folder);
        if !dir.is_dir() {
            bail!(
                "{}: book folder missing; point --openstax-mirror (or --data-dir) at a mirror \
                 holding {} (corpus {} of the books file)",
                dir.display(),
                spec.books
                    .iter()
                    .map(|b| b.folder.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                spec.name
            );
        }
        walk(&dir, &book.folder, &mut listing)?;
    }
    listing.sort();
    let mut h = String::new();
    for (p, sha) in &listing {
        h.push_str(p);
        h.push('\0');
        h.push_str(sha);
        h.push('\n');
    }
    Ok(sha256_hex(h.as_bytes()))
}

/// The reason a whole page is removed for, by its title or document class.
fn page_reason(title: &str, is_preface: bool) -> Option<Reason> {
    if is_preface || FRONT_MATTER_PAGES.contains(&title) {
        Some(Reason::FrontMatter)
    } else if REFERENCE_PAGES.contains(&title) {
        Some(Reason::References)
    } else {
        None
    }
}

static EMPTY_PARENS: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"\s*\((?:\s|see|See|and|,|;)*\)").expect("static regex"));
static SPACE_BEFORE_PUNCT: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r" +([.,;:!?)])").expect("static regex"));
static SPACE_AFTER_OPEN: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"\( +").expect("static regex"));

/// Final text of a block: whitespace runs collapsed to one space, parentheses left empty by
/// dropped cross-references removed ("(see )", "( )"), no space before `.,;:!?)` or after
/// `(`, trimmed.
pub(crate) fn tidy(raw: &str) -> String {
    let s = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    let s = EMPTY_PARENS.replace_all(&s, "");
    let s = SPACE_BEFORE_PUNCT.replace_all(&s, "$1");
    let s = SPACE_AFTER_OPEN.replace_all(&s, "(");
    s.trim().to_string()
}

/// Collapses whitespace only (text of removed blocks, headings).
pub(crate) fn squash(raw: &str) -> String {
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One row of `blocks.jsonl`.
#[derive(Serialize)]
struct BlockRow<'a> {
    doc_id: String,
    book: &'a str,
    module: &'a str,
    file: String,
    line: usize,
    block: usize,
    element: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<&'a str>,
    kept: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<Reason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<usize>,
    words: usize,
    excerpt: String,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    unknown: &'a [String],
}

fn excerpt(text: &str) -> String {
    const MAX: usize = 80;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Adds the corpus counts (per book and total) and commits to `counts`/`notes`.
fn corpus_counts(corpus: &Corpus, counts: &mut BTreeMap<String, u64>) {
    let (per, total) = corpus.counts();
    for (slug, c) in &per {
        counts.extend(c.entries(&format!("{slug}.")));
    }
    counts.extend(total.entries(""));
}

/// Writes the cleaned corpus to `store/NAME/` (`NAME` from the books file): `documents.jsonl`
/// (narrative pages), an empty `questions.jsonl`, `blocks.jsonl` (the block log) and
/// `manifest.json` (last).
///
/// # Errors
/// I/O errors naming the file; an invalid document set (duplicate ids).
pub fn write_corpus(corpus: &Corpus, store: &Path) -> Result<DatasetManifest> {
    let staged = crate::io::StagedDataset::begin(store, &corpus.spec.name, &mut Vec::new())?;
    let dir = staged.dir().to_path_buf();
    let docs = corpus.documents();
    crate::import::write_dataset(&dir, &docs, &[])?;
    let mut rows = Vec::new();
    for book in &corpus.books {
        for page in &book.pages {
            let (_, spans) = page.text_and_spans();
            let doc_id = page.doc_id();
            for (i, (b, span)) in page.blocks.iter().zip(&spans).enumerate() {
                rows.push(BlockRow {
                    doc_id: doc_id.clone(),
                    book: &book.spec.slug,
                    module: &page.module,
                    file: format!("{}/{}", book.spec.folder, page.path),
                    line: b.line,
                    block: i,
                    element: &b.element,
                    context: b.context.as_deref(),
                    kept: b.kept(),
                    reason: b.removed,
                    start: span.map(|s| s.start),
                    end: span.map(|s| s.end),
                    words: chunker::count_words(&b.text),
                    excerpt: excerpt(&b.text),
                    unknown: &b.unknown,
                });
            }
        }
    }
    write_jsonl(&dir.join("blocks.jsonl"), &rows)?;
    let mut counts = BTreeMap::from([
        ("documents".into(), docs.len() as u64),
        ("questions".into(), 0),
    ]);
    corpus_counts(corpus, &mut counts);
    let manifest = DatasetManifest {
        name: corpus.spec.name.clone(),
        source: source_line(corpus),
        version: corpus_version(corpus),
        sha256: corpus.input_sha256.clone(),
        license: corpus.spec.license.clone(),
        counts,
        notes: corpus_notes(corpus),
        files: BTreeMap::new(),
    };
    let manifest = finish_with(
        &dir,
        manifest,
        &["documents.jsonl", "questions.jsonl", "blocks.jsonl"],
    )?;
    staged.publish()?;
    Ok(manifest)
}

fn source_line(corpus: &Corpus) -> String {
    format!(
        "local mirror {} of {}",
        corpus.root.display(),
        corpus
            .books
            .iter()
            .map(|b| b.spec.repository.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The `version` of a corpus manifest: the rules version and the commits.
pub fn corpus_version(corpus: &Corpus) -> String {
    format!("{}; {}", corpus.rules_version(), commits_line(corpus))
}

/// "the four books", "the book": how manifests name a corpus's books (the words of the
/// first release for the four EAR books).
fn books_phrase(n: usize, noun: &str) -> String {
    const WORDS: [&str; 10] = [
        "no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    match n {
        1 => format!("the {noun}"),
        n if n < WORDS.len() => format!("the {} {noun}s", WORDS[n]),
        n => format!("the {n} {noun}s"),
    }
}

fn commits_line(corpus: &Corpus) -> String {
    corpus
        .commits()
        .iter()
        .map(|(f, c)| format!("{f}@{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn corpus_notes(corpus: &Corpus) -> Vec<String> {
    let folders = books_phrase(corpus.books.len(), "book folder");
    vec![
        "one page per module of the book's order file (collection XML, or SUMMARY.md for Biology)".into(),
        format!("a page is narrative when it keeps >= {NARRATIVE_MIN_BLOCKS} block; documents are the narrative pages, id openstax-BOOK-MODULE"),
        "document text: kept blocks joined by \"\\n\\n\"; no title line (title = \"chapter — page\")".into(),
        // The manifest text names the module by its path when these datasets were made
        // (evaluator::openstax, now datasets::openstax); it is kept so that existing
        // manifests and their hashes do not change.
        "kept: narrative paragraphs (para, quote text, Markdown paragraphs) outside dropped containers; removed blocks by reason in counts removed.REASON; rules in evaluator::openstax and datasets/README.md".into(),
        format!("sha256: of the sorted listing of every file of {folders} with its sha256"),
        "blocks.jsonl: every block of every page with kept/reason, source line and byte span".into(),
    ]
}

/// Default size of the sampled question set: the EAR paper's 153 supported questions.
pub const DEFAULT_SAMPLE: usize = 153;

/// The input identity of the question datasets: sha256 of the corpus identity, both rule
/// versions (the corpus's cleaning rules version, [`Corpus::rules_version`], and
/// [`CorpusSpec::support_rule`]), the MMLU test manifest's sha256, the sample size and the
/// seed. Stored as the `sha256` of their manifests, so a change of any of them triggers a new
/// conversion.
pub fn mmlu_input_key(
    corpus_sha256: &str,
    rules_version: &str,
    support_rule: &str,
    mmlu_manifest_sha256: &str,
    sample: usize,
    seed: u64,
) -> String {
    sha256_hex(
        format!(
            "{corpus_sha256}\u{1f}{rules_version}\u{1f}{support_rule}\u{1f}{mmlu_manifest_sha256}\u{1f}{sample}\u{1f}{seed}",
        )
        .as_bytes(),
    )
}

/// A seeded sample of at most `size` questions, stratified by subject, returned as indexes
/// into `questions` in increasing order.
///
/// Allocation: subject `s` with `n_s` of the `N` questions gets `floor(size·n_s/N)`; the
/// remaining places go to the largest remainders (ties: subject name). Within a subject the
/// questions with the smallest `sha256("SEED\x1fID")` are taken. `size >= N` keeps all.
pub fn stratified_sample(questions: &[Question], size: usize, seed: u64) -> Vec<usize> {
    let n = questions.len();
    if size >= n {
        return (0..n).collect();
    }
    let mut by_subject: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, q) in questions.iter().enumerate() {
        by_subject
            .entry(q.subject.as_deref().unwrap_or(""))
            .or_default()
            .push(i);
    }
    let mut quota: Vec<(&str, usize, usize)> = by_subject
        .iter()
        .map(|(s, v)| (*s, size * v.len() / n, size * v.len() % n))
        .collect();
    let mut left = size - quota.iter().map(|q| q.1).sum::<usize>();
    let mut order: Vec<usize> = (0..quota.len()).collect();
    order.sort_by(|&a, &b| quota[b].2.cmp(&quota[a].2).then(quota[a].0.cmp(quota[b].0)));
    for i in order {
        if left == 0 {
            break;
        }
        quota[i].1 += 1;
        left -= 1;
    }
    let mut picked = Vec::with_capacity(size);
    for (subject, take, _) in quota {
        let mut v = by_subject[subject].clone();
        v.sort_by_cached_key(|&i| {
            sha256_hex(format!("{seed}\u{1f}{}", questions[i].id).as_bytes())
        });
        picked.extend(v.into_iter().take(take));
    }
    picked.sort_unstable();
    picked
}

/// Writes `store/NAME-mmlu/` (every supported question, the support audit `support.jsonl`)
/// and `store/NAME-mmlu-SAMPLE/` (the [`stratified_sample`]), `NAME` the corpus's, both with
/// the corpus's narrative pages as documents, from the MMLU test questions in `mmlu`.
/// Questions keep their MMLU ids and `subject`, have no retrieval scope (the whole corpus) and
/// no evidence spans.
///
/// # Errors
/// A considered question without a gold answer, an invalid result, or I/O errors.
pub fn write_mmlu(
    corpus: &Corpus,
    mmlu: &crate::dataset::Dataset,
    store: &Path,
    sample: usize,
    seed: u64,
) -> Result<Vec<DatasetManifest>> {
    for book in &corpus.books {
        for subject in &book.spec.subjects {
            if !mmlu
                .questions
                .iter()
                .any(|q| q.subject.as_deref() == Some(subject.as_str()))
            {
                bail!(
                    "corpus {}, book {}: subject {subject:?} has no question in {} ({}); fix \
                     `subjects` in the books file (MMLU subjects are lowercase with '_', e.g. \
                     high_school_chemistry)",
                    corpus.spec.name,
                    book.spec.slug,
                    mmlu.name,
                    mmlu.dir.display()
                );
            }
        }
    }
    let decisions = support::decide_all(corpus, &mmlu.questions)?;
    let supported_ids: std::collections::HashSet<&str> = decisions
        .iter()
        .filter(|d| d.supported)
        .map(|d| d.id.as_str())
        .collect();
    let questions: Vec<Question> = mmlu
        .questions
        .iter()
        .filter(|q| supported_ids.contains(q.id.as_str()))
        .cloned()
        .collect();
    let docs = corpus.documents();
    let rules = corpus.rules_version();
    let key = mmlu_input_key(
        &corpus.input_sha256,
        &rules,
        &corpus.spec.support_rule(),
        &mmlu.manifest_sha256,
        sample,
        seed,
    );
    let version = format!(
        "{rules}; {}; MMLU {} ({}); {}",
        corpus.spec.support_rule(),
        mmlu.manifest.version,
        mmlu.name,
        commits_line(corpus)
    );
    let source = format!(
        "{} x {} test questions of {}",
        source_line(corpus),
        mmlu.manifest.source,
        corpus.spec.subjects().collect::<Vec<_>>().join(", ")
    );
    let license = format!(
        "{}; questions: {}",
        corpus.spec.license, mmlu.manifest.license
    );
    let mmlu_name = corpus.spec.mmlu_dataset();

    // All supported questions, with the audit file.
    let staged = crate::io::StagedDataset::begin(store, &mmlu_name, &mut Vec::new())?;
    let dir = staged.dir().to_path_buf();
    crate::import::write_dataset(&dir, &docs, &questions)?;
    write_jsonl(&dir.join("support.jsonl"), &decisions)?;
    let mut counts = BTreeMap::from([
        ("documents".into(), docs.len() as u64),
        ("questions".into(), questions.len() as u64),
        ("considered".into(), decisions.len() as u64),
    ]);
    for d in &decisions {
        *counts
            .entry(format!("considered.{}", d.subject))
            .or_default() += 1;
        let e = counts
            .entry(format!("supported.{}", d.subject))
            .or_default();
        *e += u64::from(d.supported);
        if d.supported {
            *counts
                .entry(format!("supported_by.gold-{}", d.gold_support.as_str()))
                .or_default() += 1;
        } else if d.gold_support == support::GoldSupport::None {
            *counts
                .entry("unsupported.gold-not-found".into())
                .or_default() += 1;
        } else {
            *counts.entry("unsupported.not-anchored".into()).or_default() += 1;
        }
    }
    let mut notes = vec![
        format!("considered: every {} question of the subjects the books cover; each is checked against its subject's book", mmlu.name),
        // Module path as when the datasets were made (kept: manifests and hashes must not move).
        "supported (rule in evaluator::openstax::support): (a) a gold-option anchor occurs in the book exactly or as a phrase, or, for a gold option without anchors, all its content words occur in one kept paragraph; and (b) an anchor of the question or an option equals a corpus anchor of the book".into(),
        "support.jsonl: one row per considered question: decision, reason, gold anchors with the first corpus occurrence (doc_id, byte span), content-word evidence, exact question/option anchor matches".into(),
        format!("documents: the narrative pages of {} (same as the {} dataset); questions keep their MMLU ids and subject, no doc_ids (whole corpus), no evidence", books_phrase(corpus.books.len(), "book"), corpus.spec.name),
        format!("sha256: mmlu_input_key(corpus, rules, {} manifest, sample={sample}, seed={seed})", mmlu.name),
    ];
    let manifest = finish_with(
        &dir,
        DatasetManifest {
            name: mmlu_name.clone(),
            source: source.clone(),
            version: version.clone(),
            sha256: key.clone(),
            license: license.clone(),
            counts,
            notes: notes.clone(),
            files: BTreeMap::new(),
        },
        &["documents.jsonl", "questions.jsonl", "support.jsonl"],
    )?;
    staged.publish()?;

    // The seeded, stratified sample.
    let name = corpus.spec.sample_dataset(sample);
    let picked: Vec<Question> = stratified_sample(&questions, sample, seed)
        .into_iter()
        .map(|i| questions[i].clone())
        .collect();
    let staged = crate::io::StagedDataset::begin(store, &name, &mut Vec::new())?;
    let sdir = staged.dir().to_path_buf();
    crate::import::write_dataset(&sdir, &docs, &picked)?;
    let mut scounts = BTreeMap::from([
        ("documents".into(), docs.len() as u64),
        ("questions".into(), picked.len() as u64),
        ("supported".into(), questions.len() as u64),
    ]);
    for q in &picked {
        *scounts
            .entry(format!("questions.{}", q.subject.as_deref().unwrap_or("")))
            .or_default() += 1;
    }
    notes.insert(
        0,
        format!(
            "a seeded sample of {mmlu_name}: at most {sample} questions, stratified by subject (largest remainder), within a subject the smallest sha256(\"{seed}\\x1fID\"); source order kept"
        ),
    );
    let smanifest = finish_with(
        &sdir,
        DatasetManifest {
            name: name.clone(),
            source,
            version,
            sha256: key,
            license,
            counts: scounts,
            notes,
            files: BTreeMap::new(),
        },
        &["documents.jsonl", "questions.jsonl"],
    )?;
    staged.publish()?;
    Ok(vec![manifest, smanifest])
}

/// Records the sha256 of `files` in `manifest` and writes it last.
fn finish_with(
    dir: &Path,
    mut manifest: DatasetManifest,
    files: &[&str],
) -> Result<DatasetManifest> {
    for f in files {
        manifest
            .files
            .insert((*f).into(), sha256_file(&dir.join(f))?);
    }
    write_json(&dir.join("manifest.json"), &manifest)?;
    Ok(manifest)
}
