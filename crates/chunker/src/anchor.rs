//! Surface anchors for EAR retrieval (entity-aware anchors; arXiv 2609.12268, docs/reference.md
//! §5): normalised surface strings found by rules, not by a NER model.
//!
//! # Kinds
//! - [`AnchorKind::Year`]: a four-digit year 1000–2100 (`1776`), or a number with an era marker
//!   (`500 BCE` → `500 bce`, years −500; `AD 79`/`79 CE` → `79`).
//! - [`AnchorKind::YearRange`]: `1914-1918`, `1914–18`, `1914—1918` → `1914-1918`.
//! - [`AnchorKind::Decade`]: `1860s`, `1860's` → `1860s` (years 1860–1869); `1800s` covers
//!   1800–1899.
//! - [`AnchorKind::Century`]: `19th century`, `nineteenth-century`, `twenty-first century`
//!   → `19th century` / `21st century` (years 1800–1899 / 2000–2099, the colloquial reading).
//! - [`AnchorKind::Capitalized`]: a maximal run of capitalised words, joined by lower-case
//!   name connectors (`of`, `de`, `von`, `van`, `la`, …; `the` after a connector), e.g.
//!   `Thomas Jefferson`, `Bill of Rights`. A sentence-initial function word (`The`, `In`,
//!   `Most`, …) is dropped from the run, and a single capitalised word at the start of a
//!   sentence is not an anchor (its capital carries no signal) unless it is an acronym (`DNA`);
//!   a lone capital letter (`B`, `X`) is never one.
//! - [`AnchorKind::Event`]: a capitalised group whose head is an event noun (`… Act`,
//!   `… Revolution`, `… Amendment`, `… War`, `New Deal`, …) or that starts with an event
//!   lead and contains `of` (`War of 1812`, `Treaty of Paris`, `Battle of Gettysburg`).
//!   Numbers are allowed after `of` inside a group, and a digit ordinal may open one
//!   (`19th Amendment`).
//! - [`AnchorKind::ShortOption`]: the whole text of an answer option of at most
//!   [`AnchorConfig::short_option_max_words`] words (default 4) with at least one content word
//!   (a word of two or more characters with a letter, not a function word; so not `12` or
//!   `A and B only`) ([`AnchorConfig::option_anchors`]).
//!
//! # Normalisation ([`normalize_word`], applied token by token)
//! Unicode NFKC, then lower-casing (`ß` → `ss`); apostrophes unified; possessives removed
//! (`Lincoln's` → `lincoln`, `states'` → `state`); remaining punctuation dropped (`U.S.` →
//! `us`); digit grouping removed (`1,000` → `1000`); ordinal words become digit ordinals
//! (`Nineteenth` → `19th`); English plural suffixes stripped from alphabetic words longer
//! than three characters (`colonies` → `colony`, `churches` → `church`, `states` → `state`;
//! `-ss`, `-us`, `-is`, `-as`, `-ics` and invariant nouns such as `series` and `species` kept,
//! so `Thomas`, `Texas`, `Paris` and `physics` stay whole). Case does not matter: `Knees` and
//! `knees` both become `knee`. A configurable list of domain suffixes
//! ([`AnchorConfig::domain_suffixes`], default `jr sr inc corp co ltd`) is removed from the
//! end of multi-word anchors (`Martin Luther King Jr.` → `martin luther king`).
//!
//! # Boundaries
//! A capitalised run never crosses a sentence end: sentence-ending punctuation (`.`, `!`, `?`,
//! `:`, `;`, CJK full stops) or a paragraph break between two words ends it, except an
//! abbreviation's period (`U.S. Constitution`, `J. Edgar Hoover`: a period after a word with
//! a period or after a single letter). Generation 2 of the rules ([`AnchorConfig::rules`],
//! the default) narrows that exception, which generation 1 let join sentences (`10 A. The`
//! gave the anchor `a the`, `12 V. If` gave `v if`): a period or a line break followed by a
//! capitalised function word (`The`, `If`, `A`, …) ends the sentence, and so does the period
//! after a one-letter unit symbol that follows a number (`10 A.`, `5 V.`).
//!
//! Tokens are Unicode (UAX #29) words, so CJK text yields one token per ideograph and never
//! a capitalised group; years inside CJK text (`1949年`) and full-width digits (`１９４９`) are
//! found. Every anchor keeps its byte span in the text it came from.

use crate::Span;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// What rule produced an anchor.
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
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum AnchorKind {
    /// A single year (`1776`, `500 BCE`).
    Year,
    /// A year range (`1914-1918`).
    YearRange,
    /// A decade or a hundred-year `…00s` span (`1860s`, `1800s`).
    Decade,
    /// An ordinal century (`19th century`).
    Century,
    /// A capitalised multi-word group or a mid-sentence proper noun.
    Capitalized,
    /// A named event (`War of 1812`, `New Deal`, `Stamp Act`).
    Event,
    /// The whole text of a short answer option.
    ShortOption,
}

impl AnchorKind {
    /// True for the date kinds (year, year range, decade, century).
    pub fn is_date(self) -> bool {
        matches!(
            self,
            AnchorKind::Year | AnchorKind::YearRange | AnchorKind::Decade | AnchorKind::Century
        )
    }

    /// The kebab-case name used in outputs (`year-range`, `short-option`, …).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for AnchorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One anchor found in a text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// The rule that produced it.
    pub kind: AnchorKind,
    /// Normalised form, the key anchors are matched by (`treaty of paris`, `1914-1918`).
    pub norm: String,
    /// Normalised tokens of the span, in order (for phrase lookups in a token index); domain
    /// suffixes removed like in `norm`.
    pub terms: Vec<String>,
    /// Byte span in the text it was extracted from.
    pub span: Span,
    /// Date kinds: the inclusive year interval it denotes (negative = BCE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub years: Option<(i32, i32)>,
}

/// A Unicode word of a text with its normalised form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Byte span of the word.
    pub span: Span,
    /// [`normalize_word`] of the word (never empty).
    pub norm: String,
}

/// Anchor extraction settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AnchorConfig {
    /// Normalised words removed from the end of multi-word anchors (default
    /// `jr sr inc corp co ltd`). Entries are normalised with [`normalize_word`] on use.
    pub domain_suffixes: Vec<String>,
    /// Options of at most this many words become [`AnchorKind::ShortOption`] anchors
    /// (default 4, EAR's "short options"); 0 turns them off.
    pub short_option_max_words: usize,
    /// The anchor rules generation (1 to [`ANCHOR_RULES`]; default the newest). Generation 1
    /// is the rule set of the first releases; generation 2 stops a capitalised run at a
    /// sentence end that an abbreviation rule used to bridge (module documentation,
    /// "Boundaries"). It is part of every EAR cell's identity; `rules: 1` reproduces earlier
    /// results.
    pub rules: u8,
}

/// The newest anchor rules generation ([`AnchorConfig::rules`]).
pub const ANCHOR_RULES: u8 = 2;

impl Default for AnchorConfig {
    fn default() -> Self {
        AnchorConfig {
            domain_suffixes: ["jr", "sr", "inc", "corp", "co", "ltd"]
                .map(String::from)
                .to_vec(),
            short_option_max_words: 4,
            rules: ANCHOR_RULES,
        }
    }
}

/// Lower-case function words: dropped when they open a sentence-initial capitalised group,
/// never anchors on their own, and not content words of a short option.
const FUNCTION_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "also",
    "although",
    "an",
    "and",
    "another",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "during",
    "each",
    "either",
    "even",
    "every",
    "few",
    "following",
    "for",
    "from",
    "had",
    "has",
    "have",
    "he",
    "her",
    "here",
    "his",
    "how",
    "however",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "many",
    "may",
    "more",
    "most",
    "much",
    "must",
    "neither",
    "no",
    "none",
    "nor",
    "not",
    "of",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "over",
    "she",
    "should",
    "since",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "though",
    "through",
    "thus",
    "to",
    "true",
    "false",
    "under",
    "unlike",
    "until",
    "upon",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "whereas",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "without",
    "would",
    "yet",
    "you",
    "your",
];

/// Lower-case words that may join capitalised words into one name.
const CONNECTORS: &[&str] = &[
    "of", "de", "du", "des", "del", "della", "da", "di", "von", "van", "der", "den", "la", "le",
    "y", "al", "bin", "ibn", "for",
];

/// Normalised head nouns that make a capitalised group an event.
const EVENT_HEADS: &[&str] = &[
    "act",
    "revolution",
    "amendment",
    "war",
    "deal",
    "treaty",
    "movement",
    "rebellion",
    "compromise",
    "doctrine",
    "crisis",
    "depression",
    "declaration",
    "proclamation",
    "convention",
    "affair",
    "purchase",
    "massacre",
    "riot",
    "uprising",
    "boycott",
    "trial",
    "reformation",
    "renaissance",
    "enlightenment",
    "awakening",
    "reconstruction",
    "party",
    "strike",
    "raid",
    "crusade",
    "accord",
    "agreement",
    "conference",
    "election",
    "bill",
];

/// Normalised lead nouns that make `LEAD … of …` an event.
const EVENT_LEADS: &[&str] = &[
    "war",
    "treaty",
    "battle",
    "siege",
    "act",
    "compromise",
    "peace",
    "congress",
    "council",
    "edict",
    "bill",
    "declaration",
    "fall",
    "sack",
    "partition",
    "invasion",
];

const ORDINAL_WORDS: &[&str] = &[
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
];

/// The digit ordinal for `n` (`1st`, `2nd`, `11th`, `21st`).
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The number of a digit ordinal (`19th` → 19).
fn ordinal_value(norm: &str) -> Option<u32> {
    let digits = norm.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &norm[digits.len()..];
    if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    (suffix == &ordinal(n)[digits.len()..]).then_some(n)
}

/// Nouns ending in `s` that are not plurals (compared lower-case).
const INVARIANT: &[&str] = &[
    "series", "species", "means", "news", "lens", "always", "perhaps",
];

fn strip_plural(w: &str) -> String {
    let n = w.chars().count();
    if n <= 3 || !w.chars().all(char::is_alphabetic) || INVARIANT.contains(&w) {
        return w.to_string();
    }
    if n > 4 && w.ends_with("ies") {
        return format!("{}y", &w[..w.len() - 3]);
    }
    if w.ends_with("sses") {
        return w[..w.len() - 2].to_string();
    }
    // Not plurals: `-ss`, `-us`, `-is`, `-as` (`class`, `virus`, `Paris`, `Thomas`, `Texas`),
    // `-ics` (`physics`) and a few invariant nouns.
    if ["ss", "us", "is", "as", "ics"]
        .iter()
        .any(|e| w.ends_with(e))
        || INVARIANT.contains(&w)
    {
        return w.to_string();
    }
    for es in ["ches", "shes", "xes", "zes"] {
        if w.ends_with(es) {
            return w[..w.len() - 2].to_string();
        }
    }
    match w.strip_suffix('s') {
        Some(stem) => stem.to_string(),
        None => w.to_string(),
    }
}

/// Normalises one word (see the module docs for the rules). Returns an empty string for a
/// word with no letters or digits.
pub fn normalize_word(word: &str) -> String {
    let folded: String = word
        .nfkc()
        .collect::<String>()
        .to_lowercase()
        .replace('ß', "ss")
        .replace(['\u{2019}', '\u{2018}', '\u{02BC}'], "'");
    // Decades before possessives: `1860's` is a decade, not a possessive.
    let digits = folded.trim_end_matches(['s', '\'']);
    if folded.ends_with('s')
        && digits.len() == 4
        && digits.ends_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit())
        && folded.len() - digits.len() <= 2
    {
        return format!("{digits}s");
    }
    let base = if let Some(s) = folded.strip_suffix("'s") {
        s
    } else if let Some(s) = folded.strip_suffix('\'') {
        s
    } else {
        folded.as_str()
    };
    let clean: String = base.chars().filter(|c| c.is_alphanumeric()).collect();
    if let Some(i) = ORDINAL_WORDS.iter().position(|o| *o == clean) {
        return ordinal(i as u32 + 1);
    }
    strip_plural(&clean)
}

/// Normalises a phrase: [`normalize_word`] of each Unicode word, joined by single spaces
/// (empty words dropped).
pub fn normalize(text: &str) -> String {
    tokenize(text)
        .into_iter()
        .map(|t| t.norm)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The Unicode (UAX #29) words of `text` with their normalised forms, in order; words that
/// normalise to nothing are skipped.
pub fn tokenize(text: &str) -> Vec<Token> {
    text.unicode_word_indices()
        .filter_map(|(i, w)| {
            let norm = normalize_word(w);
            (!norm.is_empty()).then(|| Token {
                span: Span {
                    start: i,
                    end: i + w.len(),
                },
                norm,
            })
        })
        .collect()
}

fn is_capitalized(raw: &str) -> bool {
    raw.chars().next().is_some_and(|c| c.is_uppercase())
}

fn is_acronym(raw: &str) -> bool {
    raw.chars().filter(|c| c.is_alphabetic()).count() >= 2
        && raw.chars().all(|c| !c.is_lowercase() && c != '\'')
}

fn four_digit_year(norm: &str) -> Option<i32> {
    (norm.len() == 4 && norm.bytes().all(|b| b.is_ascii_digit()))
        .then(|| norm.parse::<i32>().ok())
        .flatten()
        .filter(|y| (1000..=2100).contains(y))
}

fn small_number(norm: &str) -> Option<i32> {
    (!norm.is_empty() && norm.len() <= 4 && norm.bytes().all(|b| b.is_ascii_digit()))
        .then(|| norm.parse().ok())
        .flatten()
}

/// Gap between two tokens: what separates them in the text.
enum Gap {
    /// Only whitespace (or an abbreviation's period followed by whitespace).
    Adjacent,
    /// A hyphen or dash, possibly with spaces (`1914-1918`, `nineteenth-century`).
    Dash,
    /// Sentence-ending punctuation or a paragraph break.
    Sentence,
    /// Anything else (commas, quotes, brackets).
    Other,
}

fn gap(text: &str, prev: Option<&Token>, next: &Token, rules: u8) -> Gap {
    let Some(prev) = prev else {
        return Gap::Sentence;
    };
    let g = &text[prev.span.end..next.span.start];
    let t = g.trim();
    if rules >= 2 && sentence_end_in_gen2(text, prev, next, g, t) {
        return Gap::Sentence;
    }
    if t.is_empty() {
        return if g.contains("\n\n") || g.contains("\r\n\r\n") {
            Gap::Sentence
        } else {
            Gap::Adjacent
        };
    }
    if matches!(
        t,
        "-" | "\u{2010}" | "\u{2011}" | "\u{2012}" | "\u{2013}" | "\u{2014}"
    ) {
        return Gap::Dash;
    }
    let prev_raw = &text[prev.span.start..prev.span.end];
    // `U.S. Constitution`, `J. Edgar Hoover`: an abbreviation's period keeps words together.
    if t == "." && (prev_raw.contains('.') || prev_raw.chars().count() == 1) {
        return Gap::Adjacent;
    }
    if t.contains(['.', '!', '?', ':', ';', '\u{3002}', '\u{FF01}', '\u{FF1F}']) {
        Gap::Sentence
    } else {
        Gap::Other
    }
}

/// Generation 2's boundaries (module documentation, "Boundaries"): true when the gap `g`
/// (trimmed `t`) between `prev` and `next` ends a sentence although generation 1 read it as
/// joining: an abbreviation-like period or a line break followed by a capitalised function
/// word (`10 A. The`, `U.S. The`, `Title\nThe`), or a period after a one-letter unit symbol
/// that follows a number (`12 V. Current`).
fn sentence_end_in_gen2(text: &str, prev: &Token, next: &Token, g: &str, t: &str) -> bool {
    let next_raw = &text[next.span.start..next.span.end];
    let next_function_word =
        is_capitalized(next_raw) && FUNCTION_WORDS.contains(&next_raw.to_lowercase().as_str());
    if next_function_word && (t == "." || (t.is_empty() && g.contains('\n'))) {
        return true;
    }
    let prev_raw = &text[prev.span.start..prev.span.end];
    if t == "." && prev_raw.chars().count() == 1 {
        let before = &text[..prev.span.start];
        let unit_after_number = before.len() - before.trim_end().len() <= 1
            && before.trim_end().ends_with(|c: char| c.is_ascii_digit());
        return unit_after_number;
    }
    false
}

impl AnchorConfig {
    /// The domain suffixes, normalised (once per extraction, not per anchor).
    fn suffixes(&self) -> Vec<String> {
        self.domain_suffixes
            .iter()
            .map(|s| normalize_word(s))
            .collect()
    }

    fn strip_suffixes(suffixes: &[String], terms: &mut Vec<String>) {
        while terms.len() > 1 && terms.last().is_some_and(|t| suffixes.contains(t)) {
            terms.pop();
        }
    }

    /// All anchors of `text` (question, option or corpus text), ordered by span start, then
    /// kind. Overlapping anchors of different kinds are all kept (`War of 1812` is an event
    /// and `1812` a year).
    pub fn extract(&self, text: &str) -> Vec<Anchor> {
        let toks = tokenize(text);
        let mut out = Vec::new();
        self.dates(text, &toks, &mut out);
        self.groups(text, &toks, &self.suffixes(), &mut out);
        out.sort_by(|a, b| {
            (a.span.start, a.kind, a.span.end).cmp(&(b.span.start, b.kind, b.span.end))
        });
        out.dedup();
        out
    }

    /// Anchors of one answer option: [`Self::extract`] plus, for an option of at most
    /// [`Self::short_option_max_words`] words with a content word, one
    /// [`AnchorKind::ShortOption`] anchor over the whole (trimmed) option — unless an
    /// extracted anchor already has the same normalised form.
    pub fn option_anchors(&self, option: &str) -> Vec<Anchor> {
        let mut out = self.extract(option);
        let toks = tokenize(option);
        let words = crate::count_words(option);
        // A content word has a letter and is not a function word: bare numbers (`12`) and
        // letter lists (`A and B only`) are not short-option anchors.
        let has_content = toks.iter().any(|t| {
            !FUNCTION_WORDS.contains(&t.norm.as_str())
                && t.norm.chars().any(char::is_alphabetic)
                && t.norm.chars().count() > 1
        });
        if words == 0 || words > self.short_option_max_words || !has_content {
            return out;
        }
        let mut terms: Vec<String> = toks.iter().map(|t| t.norm.clone()).collect();
        Self::strip_suffixes(&self.suffixes(), &mut terms);
        let norm = terms.join(" ");
        if out.iter().any(|a| a.norm == norm) {
            return out;
        }
        let start = option.len() - option.trim_start().len();
        let end = option.trim_end().len();
        out.push(Anchor {
            kind: AnchorKind::ShortOption,
            norm,
            terms,
            span: Span { start, end },
            years: None,
        });
        out
    }

    fn dates(&self, text: &str, toks: &[Token], out: &mut Vec<Anchor>) {
        let span = |a: &Token, b: &Token| Span {
            start: a.span.start,
            end: b.span.end,
        };
        let terms = |ts: &[Token]| ts.iter().map(|t| t.norm.clone()).collect::<Vec<_>>();
        for i in 0..toks.len() {
            let t = &toks[i];
            let next = toks.get(i + 1);
            let next_gap = next.map(|n| gap(text, Some(t), n, self.rules));
            // Era markers: `500 BCE`, `79 CE` (and `AD 79` below).
            if let (Some(n), Some(nx), Some(Gap::Adjacent)) =
                (small_number(&t.norm), next, next_gap.as_ref())
            {
                let (norm, years) = match nx.norm.as_str() {
                    "bc" | "bce" => (format!("{n} bce"), (-n, -n)),
                    "ce" => (n.to_string(), (n, n)),
                    _ => (String::new(), (0, 0)),
                };
                if !norm.is_empty() {
                    out.push(Anchor {
                        kind: AnchorKind::Year,
                        norm,
                        terms: terms(&toks[i..i + 2]),
                        span: span(t, nx),
                        years: Some(years),
                    });
                    continue;
                }
            }
            if t.norm == "ad" {
                if let (Some(nx), Some(Gap::Adjacent)) = (next, next_gap.as_ref()) {
                    if let Some(n) = small_number(&nx.norm) {
                        out.push(Anchor {
                            kind: AnchorKind::Year,
                            norm: n.to_string(),
                            terms: vec![nx.norm.clone()],
                            span: span(t, nx),
                            years: Some((n, n)),
                        });
                    }
                }
                continue;
            }
            let plain = text[t.span.start..t.span.end]
                .nfkc()
                .all(|c| c.is_ascii_digit());
            // `1920's`: UAX #29 splits the digits from the `s`.
            if let (true, Some(nx), Some(y)) = (plain, next, four_digit_year(&t.norm)) {
                let g = &text[t.span.end..nx.span.start];
                if y % 10 == 0 && nx.norm == "s" && matches!(g, "'" | "\u{2019}") {
                    let last = if y % 100 == 0 { y + 99 } else { y + 9 };
                    out.push(Anchor {
                        kind: AnchorKind::Decade,
                        norm: format!("{y}s"),
                        terms: vec![format!("{y}s")],
                        span: span(t, nx),
                        years: Some((y, last)),
                    });
                    continue;
                }
            }
            if let Some(y) = four_digit_year(&t.norm).filter(|_| plain) {
                out.push(Anchor {
                    kind: AnchorKind::Year,
                    norm: y.to_string(),
                    terms: vec![t.norm.clone()],
                    span: t.span,
                    years: Some((y, y)),
                });
                if let (Some(nx), Some(Gap::Dash)) = (next, next_gap.as_ref()) {
                    let end = four_digit_year(&nx.norm).or_else(|| {
                        (nx.norm.len() == 2 && nx.norm.bytes().all(|b| b.is_ascii_digit()))
                            .then(|| y / 100 * 100 + nx.norm.parse::<i32>().unwrap_or(0))
                    });
                    if let Some(e) = end.filter(|e| *e > y) {
                        out.push(Anchor {
                            kind: AnchorKind::YearRange,
                            norm: format!("{y}-{e}"),
                            terms: vec![t.norm.clone(), nx.norm.clone()],
                            span: span(t, nx),
                            years: Some((y, e)),
                        });
                    }
                }
                continue;
            }
            if t.norm.len() == 5 && t.norm.ends_with("0s") {
                if let Some(y) = four_digit_year(&t.norm[..4]) {
                    let last = if y % 100 == 0 { y + 99 } else { y + 9 };
                    out.push(Anchor {
                        kind: AnchorKind::Decade,
                        norm: t.norm.clone(),
                        terms: vec![t.norm.clone()],
                        span: t.span,
                        years: Some((y, last)),
                    });
                    continue;
                }
            }
            // Centuries: `19th century`, `nineteenth-century`, `twenty-first century`.
            let (n, at) = match (ordinal_value(&t.norm), t.norm.as_str(), next, &next_gap) {
                (Some(n), ..) => (Some(n), i),
                (None, "twenty", Some(nx), Some(Gap::Dash)) => (
                    ordinal_value(&nx.norm).filter(|v| *v < 10).map(|v| 20 + v),
                    i + 1,
                ),
                _ => (None, i),
            };
            if let (Some(n), Some(c)) = (n.filter(|n| *n >= 1), toks.get(at + 1)) {
                let g = gap(text, Some(&toks[at]), c, self.rules);
                if c.norm == "century" && matches!(g, Gap::Adjacent | Gap::Dash) {
                    let first = (n as i32 - 1) * 100;
                    out.push(Anchor {
                        kind: AnchorKind::Century,
                        norm: format!("{} century", ordinal(n)),
                        terms: vec![ordinal(n), "century".into()],
                        span: span(t, c),
                        years: Some((first, first + 99)),
                    });
                }
            }
        }
    }

    fn groups(&self, text: &str, toks: &[Token], suffixes: &[String], out: &mut Vec<Anchor>) {
        let raw = |t: &Token| &text[t.span.start..t.span.end];
        let mut i = 0;
        while i < toks.len() {
            let prev = i.checked_sub(1).map(|p| &toks[p]);
            let sentence_initial = matches!(gap(text, prev, &toks[i], self.rules), Gap::Sentence);
            let opens = is_capitalized(raw(&toks[i]))
                || (ordinal_value(&toks[i].norm).is_some()
                    && toks.get(i + 1).is_some_and(|n| {
                        is_capitalized(raw(n))
                            && matches!(gap(text, Some(&toks[i]), n, self.rules), Gap::Adjacent)
                    }));
            if !opens {
                i += 1;
                continue;
            }
            // Extend over capitalised words, connectors between them and numbers after `of`.
            let mut j = i + 1;
            while j < toks.len()
                && matches!(
                    gap(text, Some(&toks[j - 1]), &toks[j], self.rules),
                    Gap::Adjacent
                )
            {
                let r = raw(&toks[j]);
                let lower = r.to_lowercase();
                let prev_raw = raw(&toks[j - 1]);
                if prev_raw.ends_with("'s") || prev_raw.ends_with("\u{2019}s") {
                    break; // `Roosevelt's New Deal`: a possessive ends the name.
                }
                let after_of = toks[j - 1].norm == "of";
                let after_connector = CONNECTORS.contains(&toks[j - 1].norm.as_str());
                if is_capitalized(r)
                    || CONNECTORS.contains(&lower.as_str())
                    || (lower == "the" && after_connector)
                    || (after_of && small_number(&toks[j].norm).is_some())
                {
                    j += 1;
                } else {
                    break;
                }
            }
            let mut start = i;
            let mut end = j;
            // Trim trailing connectors.
            while end > start && {
                let r = raw(&toks[end - 1]);
                !is_capitalized(r) && small_number(&toks[end - 1].norm).is_none()
            } {
                end -= 1;
            }
            // Drop sentence-initial function words and the connectors after them.
            let mut dropped = false;
            while start < end
                && (FUNCTION_WORDS.contains(&raw(&toks[start]).to_lowercase().as_str())
                    && (sentence_initial || dropped || start > i))
            {
                start += 1;
                dropped = true;
                while start < end && !is_capitalized(raw(&toks[start])) {
                    start += 1;
                }
            }
            i = j.max(i + 1);
            if start >= end {
                continue;
            }
            let single = end - start == 1;
            let r0 = raw(&toks[start]);
            // A lone capital letter (`B` in "A and B only", `X` in "Planet X" alone, element
            // symbols) is a label, not a name.
            if single
                && (FUNCTION_WORDS.contains(&r0.to_lowercase().as_str())
                    || r0.chars().count() == 1
                    || (sentence_initial && !dropped && !is_acronym(r0)))
            {
                continue;
            }
            let mut terms: Vec<String> = toks[start..end].iter().map(|t| t.norm.clone()).collect();
            Self::strip_suffixes(suffixes, &mut terms);
            let head = terms.last().map(String::as_str).unwrap_or("");
            let event = EVENT_HEADS.contains(&head)
                || (EVENT_LEADS.contains(&terms[0].as_str()) && terms.iter().any(|t| t == "of"));
            out.push(Anchor {
                kind: if event {
                    AnchorKind::Event
                } else {
                    AnchorKind::Capitalized
                },
                norm: terms.join(" "),
                terms,
                span: Span {
                    start: toks[start].span.start,
                    end: toks[end - 1].span.end,
                },
                years: None,
            });
        }
    }
}

/// Texts analysed in parallel per step of [`AnchorIndex::new`] (bounds the words and anchors
/// held before they enter the index).
pub const ANALYSE_BLOCK: usize = 4096;

/// One indexed text of an [`AnchorIndex`]: its normalised words and its anchors.
#[derive(Debug, Clone, Default)]
pub struct IndexedText {
    /// Term id ([`AnchorIndex::term`]) of each Unicode word ([`tokenize`]), in order.
    pub token_ids: Vec<u32>,
    /// Byte span of each of those words ([`CompactSpan`]: 8 bytes a word, not 16).
    pub token_spans: Vec<crate::CompactSpan>,
    /// The text's anchors ([`AnchorConfig::extract`]), by start.
    pub anchors: Vec<Anchor>,
}

/// Surface anchors and normalised words of a set of texts, indexed for the two lookups EAR
/// needs (arXiv 2609.12268; docs/reference.md §5): *exact* (a normalised anchor form →
/// the corpus anchors with that form) and *phrase* (normalised terms → the places they occur
/// as consecutive words). Used by EAR retrieval (`retriever::ear`) and by the textbook
/// support rule (`datasets::openstax::support`). Texts are numbered in the order given;
/// every list below is in text order, then position order.
#[derive(Debug, Clone, Default)]
pub struct AnchorIndex {
    vocab: std::collections::HashMap<String, u32>,
    /// Term id → (text, word position).
    postings: Vec<Vec<(u32, u32)>>,
    /// Term id → texts containing it.
    term_df: Vec<u32>,
    texts: Vec<IndexedText>,
    /// Normalised anchor form → (text, anchor position).
    anchors: std::collections::HashMap<String, Vec<(u32, u32)>>,
}

impl AnchorIndex {
    /// Indexes `texts` with the anchors of `config`.
    ///
    /// Texts are tokenised and their anchors extracted on the rayon pool, a block of
    /// [`ANALYSE_BLOCK`] texts at a time; the vocabulary and lists are filled in text order
    /// afterwards, so term ids and every list are the same whatever the thread count.
    ///
    /// # Panics
    /// When a text is longer than [`crate::MAX_DOCUMENT_BYTES`] (4 GiB; dataset loading
    /// rejects such documents first).
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>, config: &AnchorConfig) -> Self {
        use rayon::prelude::*;
        let texts: Vec<&str> = texts.into_iter().collect();
        let mut ix = AnchorIndex {
            texts: Vec::with_capacity(texts.len()),
            ..AnchorIndex::default()
        };
        for (b, block) in texts.chunks(ANALYSE_BLOCK).enumerate() {
            let analysed: Vec<(Vec<Token>, Vec<Anchor>)> = block
                .par_iter()
                .map(|t| (tokenize(t), config.extract(t)))
                .collect();
            for (i, (toks, anchors)) in analysed.into_iter().enumerate() {
                ix.push(b * ANALYSE_BLOCK + i, toks, anchors);
            }
        }
        // The lists grew by doubling: give back the slack (a third of the postings' bytes
        // on average, ~0.4 KB a 100-word text).
        for list in &mut ix.postings {
            list.shrink_to_fit();
        }
        for list in ix.anchors.values_mut() {
            list.shrink_to_fit();
        }
        ix
    }

    /// Adds text `d` (the next one) from its words and anchors.
    fn push(&mut self, d: usize, toks: Vec<Token>, anchors: Vec<Anchor>) {
        let mut ids = Vec::with_capacity(toks.len());
        for (p, t) in toks.iter().enumerate() {
            let id = match self.vocab.get(t.norm.as_str()) {
                Some(&id) => id,
                None => {
                    let id = self.vocab.len() as u32;
                    self.vocab.insert(t.norm.clone(), id);
                    self.postings.push(Vec::new());
                    self.term_df.push(0);
                    id
                }
            };
            let list = &mut self.postings[id as usize];
            if list.last().is_none_or(|&(last, _)| last != d as u32) {
                self.term_df[id as usize] += 1;
            }
            list.push((d as u32, p as u32));
            ids.push(id);
        }
        for (i, a) in anchors.iter().enumerate() {
            match self.anchors.get_mut(a.norm.as_str()) {
                Some(list) => list.push((d as u32, i as u32)),
                None => {
                    self.anchors
                        .insert(a.norm.clone(), vec![(d as u32, i as u32)]);
                }
            }
        }
        self.texts.push(IndexedText {
            token_ids: ids,
            token_spans: toks
                .iter()
                .map(|t| crate::CompactSpan::new(t.span))
                .collect(),
            anchors,
        });
    }

    /// Number of indexed texts.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// True when no text was indexed.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Text `d` (its words and anchors).
    ///
    /// # Panics
    /// When `d >= self.len()`.
    pub fn text(&self, d: usize) -> &IndexedText {
        &self.texts[d]
    }

    /// The id of a normalised word, if it occurs in some text.
    pub fn term(&self, norm: &str) -> Option<u32> {
        self.vocab.get(norm).copied()
    }

    /// Number of texts containing term `id`.
    pub fn term_df(&self, id: u32) -> u32 {
        self.term_df[id as usize]
    }

    /// Distinct normalised anchor forms.
    pub fn anchor_forms(&self) -> usize {
        self.anchors.len()
    }

    /// The anchors with normalised form `norm`, as (text, position in
    /// [`IndexedText::anchors`]).
    pub fn exact(&self, norm: &str) -> &[(u32, u32)] {
        self.anchors.get(norm).map_or(&[], Vec::as_slice)
    }

    /// Number of texts holding an anchor of form `norm`.
    pub fn anchor_df(&self, norm: &str) -> u32 {
        let occ = self.exact(norm);
        occ.iter()
            .enumerate()
            .filter(|(i, (d, _))| *i == 0 || occ[i - 1].0 != *d)
            .count() as u32
    }

    /// Where `terms` occur as consecutive normalised words: (text, byte span from the first
    /// word's start to the last word's end). Empty for no terms or an unknown term.
    pub fn phrase(&self, terms: &[String]) -> impl Iterator<Item = (usize, Span)> + '_ {
        let ids: Vec<u32> = terms
            .iter()
            .map(|t| self.term(t))
            .collect::<Option<Vec<u32>>>()
            .unwrap_or_default();
        let first: &[(u32, u32)] = ids.first().map_or(&[], |f| &self.postings[*f as usize]);
        first.iter().filter_map(move |&(d, p)| {
            let (d, p) = (d as usize, p as usize);
            let t = &self.texts[d];
            (t.token_ids.get(p..p + ids.len()) == Some(&ids[..])).then(|| {
                (
                    d,
                    Span {
                        start: t.token_spans[p].start(),
                        end: t.token_spans[p + ids.len() - 1].end(),
                    },
                )
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors(text: &str) -> Vec<(AnchorKind, String, String)> {
        AnchorConfig::default()
            .extract(text)
            .into_iter()
            .map(|a| (a.kind, a.norm, text[a.span.start..a.span.end].to_string()))
            .collect()
    }

    fn has(text: &str, kind: AnchorKind, norm: &str) -> bool {
        anchors(text)
            .iter()
            .any(|(k, n, _)| *k == kind && n == norm)
    }

    #[test]
    fn years_and_ranges() {
        let a = anchors("In 1776 the colonies declared; the war of 1914-1918 and 1914–18 ended.");
        assert!(a.contains(&(AnchorKind::Year, "1776".into(), "1776".into())));
        assert!(a.contains(&(
            AnchorKind::YearRange,
            "1914-1918".into(),
            "1914-1918".into()
        )));
        assert!(a.contains(&(AnchorKind::YearRange, "1914-1918".into(), "1914–18".into())));
        // Not years: counts, out of range, a grouped number.
        assert!(!has(
            "It cost 1,776 dollars and 3000 more, page 999.",
            AnchorKind::Year,
            "1776"
        ));
        assert!(!has("3000 soldiers", AnchorKind::Year, "3000"));
        assert!(has(
            "Rome fell in 476 CE; Troy in 1200 BCE.",
            AnchorKind::Year,
            "476"
        ));
        assert!(has("Troy in 1200 BCE.", AnchorKind::Year, "1200 bce"));
        assert!(has("Vesuvius erupted in AD 79.", AnchorKind::Year, "79"));
        let range = AnchorConfig::default().extract("from 1914-1918.");
        assert_eq!(
            range
                .iter()
                .find(|a| a.kind == AnchorKind::YearRange)
                .unwrap()
                .years,
            Some((1914, 1918))
        );
    }

    #[test]
    fn decades_and_centuries() {
        assert!(has(
            "During the 1860s, and the 1920's boom",
            AnchorKind::Decade,
            "1860s"
        ));
        assert!(has("the 1920's boom", AnchorKind::Decade, "1920s"));
        let c = AnchorConfig::default().extract("the 1800s saw it");
        assert_eq!(c[0].years, Some((1800, 1899)));
        assert!(has(
            "in the 19th century",
            AnchorKind::Century,
            "19th century"
        ));
        assert!(has(
            "a nineteenth-century novel",
            AnchorKind::Century,
            "19th century"
        ));
        assert!(has(
            "in the Nineteenth Century",
            AnchorKind::Century,
            "19th century"
        ));
        assert!(has(
            "the twenty-first century",
            AnchorKind::Century,
            "21st century"
        ));
        assert!(has(
            "in the 21st centuries",
            AnchorKind::Century,
            "21st century"
        ));
        let c = AnchorConfig::default().extract("the 19th century");
        assert_eq!(
            c.iter()
                .find(|a| a.kind == AnchorKind::Century)
                .unwrap()
                .years,
            Some((1800, 1899))
        );
    }

    /// Issue 39: college-physics text gave the anchors `a the`, `v if`, `q the` under
    /// generation 1; generation 2 ends the run at the sentence end and keeps the names an
    /// abbreviation's period joins.
    #[test]
    fn generation_2_runs_stop_at_sentence_ends() {
        let norms = |rules: u8, text: &str| -> Vec<String> {
            AnchorConfig {
                rules,
                ..AnchorConfig::default()
            }
            .extract(text)
            .into_iter()
            .map(|a| a.norm)
            .collect()
        };
        let text = "The current is 10 A. The voltage is 12 V. If the charge is 3 Q. The end. \
                    We live in the U.S. The Congress met. A resistor of 5 Ω. Ohm's law holds.";
        let g1 = norms(1, text);
        let bad = ["a the", "v if", "q the", "us the congress", "ω ohm"];
        for b in bad {
            assert!(g1.iter().any(|n| n == b), "generation 1 gave {b:?}: {g1:?}");
        }
        let g2 = norms(2, text);
        for n in &g2 {
            assert!(!bad.contains(&n.as_str()), "{n:?} in {g2:?}");
        }
        assert!(g2.iter().any(|n| n == "congress"), "{g2:?}");
        // Names joined by an abbreviation's period stay whole.
        for (text, want) in [
            ("under the U.S. Constitution today", "us constitution"),
            ("agent J. Edgar Hoover said", "j edgar hoover"),
            ("by John F. Kennedy in", "john f kennedy"),
        ] {
            assert!(norms(2, text).iter().any(|n| n == want), "{text}");
        }
        // A line break before a capitalised function word ends the run (a heading line).
        assert!(!norms(2, "Newton Laws\nThe first law")
            .iter()
            .any(|n| n.contains("the")));
        assert!(norms(1, "Newton Laws\nThe first law")
            .iter()
            .any(|n| n == "newton law the"));
        // A wrapped name stays one anchor.
        assert!(norms(2, "the United\nStates of America")
            .iter()
            .any(|n| n == "united state of america"));
        assert_eq!(AnchorConfig::default().rules, ANCHOR_RULES);
    }

    #[test]
    fn capitalized_groups_skip_sentence_initial_function_words() {
        let a = anchors(
            "The Treaty was signed by Thomas Jefferson. Most Americans agreed. Cells divide.",
        );
        let norms: Vec<&str> = a.iter().map(|(_, n, _)| n.as_str()).collect();
        assert!(norms.contains(&"thomas jefferson"), "{a:?}");
        // `The` dropped; the single word `Treaty` after it is a mid-group word, kept.
        assert!(norms.contains(&"treaty"), "{a:?}");
        // `Most` dropped, `Americans` kept and normalised; `Cells` opens a sentence alone.
        assert!(norms.contains(&"american"), "{a:?}");
        assert!(!norms.contains(&"cell"), "{a:?}");
        assert!(
            !norms
                .iter()
                .any(|n| n.starts_with("the ") || n.starts_with("most")),
            "{a:?}"
        );
        assert!(has(
            "He read the Bill of Rights today.",
            AnchorKind::Event,
            "bill of right"
        ));
        assert!(has(
            "They met in the United States of America.",
            AnchorKind::Capitalized,
            "united state of america"
        ));
        // Acronyms at the start of a sentence are anchors.
        assert!(has("DNA carries genes.", AnchorKind::Capitalized, "dna"));
        // Abbreviation periods keep a name together.
        assert!(has(
            "under the U.S. Constitution today",
            AnchorKind::Capitalized,
            "us constitution"
        ));
        // Commas separate names.
        let a = anchors("They visited France, Spain and Italy.");
        let norms: Vec<&str> = a.iter().map(|(_, n, _)| n.as_str()).collect();
        assert_eq!(norms, ["france", "spain", "italy"]);
        // Lone capital letters are labels: `Planet X` is a name, `X` and `B` alone are not.
        let a = anchors("Both A and B only; the orbit of Planet X and of X.");
        let norms: Vec<&str> = a.iter().map(|(_, n, _)| n.as_str()).collect();
        assert_eq!(norms, ["planet x"]);
    }

    #[test]
    fn events() {
        assert!(has(
            "the War of 1812 began",
            AnchorKind::Event,
            "war of 1812"
        ));
        assert!(has("the War of 1812 began", AnchorKind::Year, "1812"));
        assert!(has(
            "after the Treaty of Paris was signed",
            AnchorKind::Event,
            "treaty of paris"
        ));
        assert!(has(
            "Roosevelt's New Deal programs",
            AnchorKind::Event,
            "new deal"
        ));
        assert!(has("the Stamp Act angered", AnchorKind::Event, "stamp act"));
        assert!(has(
            "during the French Revolution",
            AnchorKind::Event,
            "french revolution"
        ));
        assert!(has(
            "the Nineteenth Amendment and the 19th Amendment",
            AnchorKind::Event,
            "19th amendment"
        ));
        assert_eq!(
            anchors("the Nineteenth Amendment and the 19th Amendment")
                .iter()
                .filter(|(k, n, _)| *k == AnchorKind::Event && n == "19th amendment")
                .count(),
            2
        );
    }

    #[test]
    fn normalisation_rules() {
        assert_eq!(normalize_word("Lincoln's"), "lincoln");
        assert_eq!(normalize_word("Lincoln’s"), "lincoln");
        assert_eq!(normalize_word("states'"), "state");
        assert_eq!(normalize_word("colonies"), "colony");
        assert_eq!(normalize_word("churches"), "church");
        assert_eq!(normalize_word("Congress"), "congress");
        assert_eq!(normalize_word("Paris"), "paris");
        assert_eq!(normalize_word("virus"), "virus");
        assert_eq!(normalize_word("Knees"), normalize_word("knees"));
        assert_eq!(normalize_word("Waves"), "wave");
        assert_eq!(normalize_word("Thomas"), "thomas");
        assert_eq!(normalize_word("series"), "series");
        assert_eq!(normalize_word("physics"), "physics");
        assert_eq!(normalize_word("gas"), "gas");
        assert_eq!(normalize_word("1,000"), "1000");
        assert_eq!(normalize_word("Nineteenth"), "19th");
        assert_eq!(normalize_word("second"), "2nd");
        assert_eq!(normalize_word("U.S"), "us");
        assert_eq!(normalize_word("Straße"), "strasse");
        assert_eq!(normalize("Punctuation: dropped!"), "punctuation dropped");
        // NFKC: full-width digits and letters, ligatures, composed and decomposed accents.
        assert_eq!(normalize_word("１９４９"), "1949");
        assert_eq!(normalize_word("ＡＢＣ"), "abc");
        assert_eq!(normalize_word("ﬁnal"), "final");
        assert_eq!(normalize_word("cafe\u{301}"), normalize_word("caf\u{e9}"));
        // Domain suffixes.
        assert!(has(
            "Martin Luther King Jr. spoke",
            AnchorKind::Capitalized,
            "martin luther king"
        ));
        let cfg = AnchorConfig {
            domain_suffixes: vec!["Empire".into()],
            ..AnchorConfig::default()
        };
        assert!(cfg
            .extract("the Roman Empire fell")
            .iter()
            .any(|a| a.norm == "roman"));
    }

    #[test]
    fn accented_and_cjk_text() {
        assert!(has(
            "a study by Émile Durkheim shows",
            AnchorKind::Capitalized,
            "émile durkheim"
        ));
        assert!(has(
            "She moved to São Paulo in 1990.",
            AnchorKind::Capitalized,
            "são paulo"
        ));
        assert!(has(
            "the work of Alexis de Tocqueville was",
            AnchorKind::Capitalized,
            "alexis de tocqueville"
        ));
        let text = "毛泽东在1949年宣布成立中华人民共和国。";
        let a = AnchorConfig::default().extract(text);
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(a[0].kind, AnchorKind::Year);
        assert_eq!(&text[a[0].span.start..a[0].span.end], "1949");
        let text = "１９４９年";
        let a = AnchorConfig::default().extract(text);
        assert_eq!(a[0].norm, "1949");
        assert_eq!(&text[a[0].span.start..a[0].span.end], "１９４９");
    }

    #[test]
    fn short_options() {
        let cfg = AnchorConfig::default();
        let a = cfg.option_anchors(" red blood cells ");
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].kind, AnchorKind::ShortOption);
        assert_eq!(a[0].norm, "red blood cell");
        assert_eq!(a[0].span, Span { start: 1, end: 16 });
        assert!(cfg.option_anchors("All of the above").is_empty());
        assert!(cfg.option_anchors("A and B only").is_empty());
        assert!(cfg.option_anchors("12").is_empty());
        assert!(cfg
            .option_anchors("3.26 km")
            .iter()
            .any(|a| a.norm == "326 km"));
        assert!(cfg
            .option_anchors("a long option with more than four words")
            .iter()
            .all(|a| a.kind != AnchorKind::ShortOption));
        // A year option is a year, not also a short option with the same form.
        let a = cfg.option_anchors("1865");
        assert_eq!(
            a.iter().map(|a| a.kind).collect::<Vec<_>>(),
            [AnchorKind::Year]
        );
        // Option starts count as sentence starts, so single names come back as short options.
        let a = cfg.option_anchors("Jupiter");
        assert_eq!(
            a.iter()
                .map(|a| (a.kind, a.norm.as_str()))
                .collect::<Vec<_>>(),
            [(AnchorKind::ShortOption, "jupiter")]
        );
        let off = AnchorConfig {
            short_option_max_words: 0,
            ..AnchorConfig::default()
        };
        assert!(off.option_anchors("Jupiter").is_empty());
    }

    #[test]
    fn index_finds_exact_anchors_and_phrases() {
        let texts = [
            "The Treaty of Paris ended it.",
            "A treaty of paris? Paris again.",
        ];
        let ix = AnchorIndex::new(texts, &AnchorConfig::default());
        assert_eq!(ix.len(), 2);
        // Exact: only the capitalised event is a corpus anchor.
        assert_eq!(ix.exact("treaty of paris"), &[(0, 0)]);
        assert_eq!(ix.anchor_df("treaty of paris"), 1);
        assert_eq!(ix.anchor_df("paris"), 0); // sentence-initial or lower case only
                                              // Phrase: both texts, lower case included, with exact byte spans.
        let terms: Vec<String> = ["treaty", "of", "paris"].map(String::from).to_vec();
        let hits: Vec<(usize, Span)> = ix.phrase(&terms).collect();
        assert_eq!(hits.len(), 2);
        for (d, s) in hits {
            assert_eq!(normalize(&texts[d][s.start..s.end]), "treaty of paris");
        }
        assert_eq!(ix.phrase(&["nowhere".to_string()]).count(), 0);
        assert_eq!(ix.phrase(&[]).count(), 0);
        assert_eq!(ix.term_df(ix.term("paris").unwrap()), 2);
    }

    #[test]
    fn repeated_anchors_keep_their_own_offsets() {
        // docs/reference.md case 18: three occurrences, three positions.
        let text = "Bolt A failed. Bolt A passed. Bolt A failed.";
        let starts: Vec<usize> = AnchorConfig::default()
            .extract(text)
            .iter()
            .filter(|a| a.norm == "bolt a")
            .map(|a| a.span.start)
            .collect();
        assert_eq!(starts, [0, 15, 30]);
    }

    #[test]
    fn spans_are_exact_slices_and_never_panic() {
        for text in [
            "",
            " ",
            "\u{200B}",
            "é",
            "1914-",
            "-1918",
            "the",
            "The 19th",
            "AD",
            "twenty-",
            "Ünïcödé Wörds ünd 1492.",
        ] {
            for a in AnchorConfig::default().extract(text) {
                assert!(text.is_char_boundary(a.span.start) && text.is_char_boundary(a.span.end));
                assert!(a.span.start < a.span.end);
                assert!(!a.terms.is_empty(), "{text:?}");
            }
        }
    }
}
