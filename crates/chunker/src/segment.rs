//! Sentence segmentation: sentences as byte spans of the cleaned text.
//!
//! [`sentences`] (and [`SentenceSplitter::split`]) return the sentences of a text as
//! [`Span`]s, byte offsets `[start, end)` into that text; a sentence's text is exactly
//! `text[span.start..span.end]`, never recomputed by searching.
//!
//! # Output contract
//! * Sentence spans exclude leading and trailing whitespace: a span never starts or ends
//!   with a separator character ([`is_word_separator`]: Python's `str.isspace` plus U+200B,
//!   U+2060, U+FEFF), so no sentence starts with `"\n"` or ends with `"\r"`.
//! * Pieces that are whitespace only are dropped: no sentence is empty, and a blank or
//!   whitespace-only text has no sentences.
//! * Spans are strictly increasing and disjoint, on UTF-8 character boundaries, and the text
//!   between two consecutive spans (and before the first / after the last) is whitespace
//!   only. Concatenating the sentences and those gaps reproduces the input exactly: nothing
//!   is dropped or rewritten.
//! * Never panics on any `&str` (control characters, emoji ZWJ sequences, lone combining
//!   marks, CJK without spaces) and runs in time linear in the text length.
//!
//! # Method
//! Candidate boundaries come from Unicode Standard Annex #29, "Unicode Text Segmentation",
//! Default Sentence Boundaries (via `unicode-segmentation`'s
//! `split_sentence_bound_indices`, run on overlapping windows to stay linear), plus one
//! candidate after every run of whitespace that follows a recognized sentence terminal (so
//! that `"…"` and spots UAX #29 glues together, such as `". ----"`, are also considered).
//! Every candidate is a whitespace gap (possibly empty) and is accepted or rejected by the
//! rules below, in this order. *Terminal* means the last character before the gap after
//! skipping closing quotes and brackets (which may be detached by spaces, as in SciQ's
//! `"sample. )"`): `.` `?` `!` `‽` `…` and the strong terminals `。` `！` `？` `｡` `।` `॥`
//! `؟` `۔` `።` `፧` `။`.
//!
//! 1. **Paragraph breaks.** A gap holding two or more line breaks (a blank line; `"\r\n"`,
//!    a lone `"\r"`, `"\n"`, U+0085 and U+2028 each count as one) or a U+2029 always ends
//!    the sentence.
//! 2. **No whitespace.** A candidate without whitespace is kept only after a strong
//!    (CJK-style) terminal not followed by a digit: `"猫。犬"` splits; `"x.com/a?b=1"`,
//!    `"3.14"`, `"1.2.3"`, `"01.02.2024"`, e-mail addresses and other token-internal
//!    punctuation never do.
//! 3. **Single line break.** Before a line that starts with a list or heading marker
//!    (`- `, `* `, `+ `, `• `, `1. `, `2) `, `a) `, `#`, `>`, `|`) it ends the sentence.
//!    Otherwise, without a terminal (a hard-wrapped line), it does not (a single line
//!    break counts as a space), unless the line before is a heading: the current sentence
//!    so far is one line that opens the text or a paragraph (follows a blank line), is not
//!    a list item, and starts with `#`, or is at most 8 words and 60 bytes, does not end
//!    with `,;:-–—/&(` or a function word (`the`, `of`, `and` ...), and the next line starts
//!    with an uppercase letter or digit (`"Check Your Learning\nThe Moon moves ..."`). A UAX #29 boundary after a terminal of a script not
//!    listed above is kept.
//! 4. **Detached closers.** A gap followed by a closing bracket or quote (a straight quote
//!    only when whitespace follows it) continues the sentence: SciQ's `"catalysts. \" For"`
//!    keeps the quote with `catalysts.`; the boundary comes after it.
//! 5. **Lowercase continuation** (UAX #29 rule SB8, extended to `?` `!` `…`): if the first
//!    letter ahead (skipping digits, spaces and punctuation, stopping at a terminal or line
//!    break) is lowercase, the sentence continues: `"e.g. lipases"`, `"U.S. in 2019"`,
//!    `"\"Why?\" he asked"`, `"Wait... what?"`, SciQ's `"http://www. youtube. com"`. A
//!    URL (`http://`, `https://`, `www.`) is not a lowercase continuation.
//! 6. After `?` `!` `‽` and after a strong terminal, the sentence ends.
//! 7. **Ellipses.** A `.` directly followed (after spaces) by another `.` continues (spaced
//!    ellipsis `". . ."`). An ellipsis of exactly three dots or one `…`, with whitespace
//!    before it and no closer after it, is a pause and continues (`"Then ... God help
//!    me"`); any other ellipsis (`"Fine.... Next"`, `"Wait... What"`) ends the sentence.
//! 8. After a terminal followed by closing quotes/brackets the sentence ends.
//! 9. **Abbreviations** (after `.`), looking at the token before the period and the next
//!    word:
//!    * [`AbbreviationKind::Prefix`] (titles and Latin connectives: `Dr` `Mr` `Mrs` `Prof`
//!      `Gen` `Mt` `e.g` `i.e` `cf` `vs` `v` `viz` `approx` ...): never ends a sentence.
//!    * [`AbbreviationKind::BeforeNumber`] (`No` `fig` `vol` `p` `pp` `eq` `ch` `sec`,
//!      months `Jan`..`Dec`): continues before a number-like word (a word with a digit,
//!      `"no. 7"`, `"p. B15"`, or a roman numeral of two or more letters, `"vol. II"`);
//!      otherwise it is an ordinary word (`"No. Currie stayed."` splits).
//!    * A **single capital letter** (an initial: `"John F. Kennedy"`, `"A. L. HALEY"`,
//!      SciQ's `"U. S."`) continues when the next word is another initial; or when the next
//!      word is a capitalized non-starter (see below) or `(` (`"Jones, J. M. (2013)"`),
//!      *and* the initial begins the sentence or follows a capitalized word, an initial, an
//!      abbreviation, or one of `by` `and` `&` `of` `with` `from`. So `"Ship it in size M.
//!      Returns are free."` splits: `size` is not part of a name.
//!    * A list label (one to three digits or one ASCII letter) that opens the sentence
//!      does not end it: `"2. Measure the spectrum."` is one sentence.
//!    * If the next word starts with a digit, the sentence ends (`"in 2019. 2020 was"`
//!      only when no lowercase letter follows, see rule 5).
//!    * [`AbbreviationKind::Ambiguous`] abbreviations (`St` `Inc` `Ltd` `Co` `Corp` `Jr`
//!      `Sr` `al` ...) and **dotted acronyms** (two or more dot-separated parts of one or
//!      two letters: `U.S` `U.S.A` `Ph.D` `D.C` `a.m`) can end a sentence. Before a
//!      capitalized word they continue it (a proper-noun continuation: `"U.S. Army"`,
//!      `"St. Brendan's"`) unless that word is a *sentence starter* — a closed list of
//!      words that begin sentences but rarely continue a name (pronouns, determiners,
//!      conjunctions, prepositions, sentence adverbs, auxiliaries: `The` `It` `Its` `She`
//!      `But` `In` `However` ...) or a title abbreviation (`Dr.`) — or it starts with an
//!      opening quote or bracket. So `"moved to the U.S.A. Its board"` splits and
//!      `"the U.S. Supreme Court"` does not.
//!    * Any other token ends the sentence (`"mg. Version"`, `"0°C. Below"`).
//!
//! Known limits (measured by `tests/segment_gold.rs`): a dotted acronym or initial that
//! really ends a sentence before a name is merged (`"... above 50% in U.S. Gallup
//! Politics."`, `"his father, Charles I. Charles I ascended"`); a dialogue tag starting
//! with a capital after `?"`/`!"` is split (`"Insurance?\" I put to him."`); a sentence
//! whose first letter is lowercase continues the previous one (`"... (19.3 g/cm3). [link]
//! gives"`); an initial after a common noun is split (`"the letter P. Smith"`); `"St."`
//! meaning "Street" before a non-starter is merged; a sentence starting with a digit and
//! followed later by a lowercase word (`"It ended. 2019 was"`) is merged (as in UAX #29).

use std::collections::HashSet;
use std::sync::OnceLock;

use unicode_segmentation::{GraphemeCursor, UnicodeSegmentation};

use crate::{count_words, is_word_separator, Span};

/// How an abbreviation (a token before a period) affects sentence boundaries.
///
/// See the module documentation, rule 9, for the exact behaviour of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AbbreviationKind {
    /// Never ends a sentence: titles before names (`Dr`, `Mr`, `Prof`, `Gen`, `Mt`) and
    /// Latin connectives (`e.g`, `i.e`, `cf`, `vs`, `viz`, `approx`).
    Prefix,
    /// Continues the sentence only before a number (`No. 7`, `fig. 3`, `Jan. 5`, `p. 12`);
    /// before anything else it is treated as an ordinary word (`"No. Currie may ..."`).
    BeforeNumber,
    /// May end a sentence (`Inc`, `Jr`, `St`, `Co`): continues before a capitalized word
    /// unless that word is a common sentence starter (`The`, `It`, `She`, ...).
    Ambiguous,
}

/// Error from configuring a [`SentenceSplitter`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// The abbreviation is empty (after removing one trailing `.`) or contains whitespace.
    #[error("invalid abbreviation {0:?}: must be non-empty and contain no whitespace")]
    InvalidAbbreviation(String),
}

/// A rule-based sentence segmenter on top of UAX #29 sentence boundaries.
///
/// Holds the abbreviation lists used by rule 9 of the module documentation.
/// [`SentenceSplitter::new`] (also [`Default`]) gives the built-in lists; add entries with
/// [`SentenceSplitter::with_abbreviation`]. Abbreviations are written without their final
/// period (`"Dr"`, `"e.g"`, `"U.S"`). Matching is case-sensitive, except that an entry in
/// lowercase also matches its capitalized form (`"fig"` matches `"Fig"`), and an all-caps
/// token matches the title-case entry (`"MR"` matches `"Mr"`); so `"ms"` (milliseconds)
/// does not match the title `"Ms"`.
#[derive(Debug, Clone)]
pub struct SentenceSplitter {
    prefix: HashSet<String>,
    before_number: HashSet<String>,
    ambiguous: HashSet<String>,
}

/// Built-in [`AbbreviationKind::Prefix`] entries.
const PREFIX: &[&str] = &[
    "Mr", "Mrs", "Ms", "Messrs", "Mme", "Mlle", "Dr", "Prof", "Rev", "Hon", "Gen", "Gov", "Sen",
    "Rep", "Pres", "Capt", "Cpt", "Lt", "Col", "Maj", "Sgt", "Cpl", "Pvt", "Adm", "Cmdr", "Supt",
    "Fr", "Mt", "Ft", "Mssrs", "e.g", "i.e", "cf", "vs", "v", "viz", "approx", "ca", "esp", "resp",
];

/// Built-in [`AbbreviationKind::BeforeNumber`] entries.
const BEFORE_NUMBER: &[&str] = &[
    "no", "nos", "fig", "figs", "vol", "vols", "p", "pp", "ch", "chap", "sec", "eq", "eqs", "art",
    "ref", "refs", "pt", "para", "op", "ed", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug",
    "Sep", "Sept", "Oct", "Nov", "Dec",
];

/// Built-in [`AbbreviationKind::Ambiguous`] entries (dotted acronyms are recognized by
/// shape and need no entry).
const AMBIGUOUS: &[&str] = &[
    "St", "Ste", "Inc", "Ltd", "Co", "Corp", "Bros", "Jr", "Sr", "Esq", "al", "Ave", "Blvd",
];

/// Capitalized words that usually begin a sentence rather than continue a proper noun.
const STARTERS: &[&str] = &[
    "A",
    "About",
    "Above",
    "According",
    "Accordingly",
    "Additionally",
    "After",
    "Again",
    "All",
    "Almost",
    "Already",
    "Also",
    "Although",
    "Always",
    "Among",
    "An",
    "And",
    "Another",
    "Any",
    "Are",
    "As",
    "At",
    "Be",
    "Because",
    "Before",
    "Below",
    "Between",
    "Both",
    "But",
    "By",
    "Can",
    "Certainly",
    "Clearly",
    "Consequently",
    "Consider",
    "Could",
    "Despite",
    "Did",
    "Do",
    "Does",
    "During",
    "Each",
    "Either",
    "Even",
    "Eventually",
    "Every",
    "Few",
    "Finally",
    "First",
    "For",
    "Fortunately",
    "From",
    "Furthermore",
    "Generally",
    "Had",
    "Has",
    "Have",
    "He",
    "Hence",
    "Her",
    "Here",
    "His",
    "How",
    "However",
    "I",
    "If",
    "In",
    "Indeed",
    "Instead",
    "Into",
    "Is",
    "It",
    "Its",
    "Just",
    "Later",
    "Let",
    "Like",
    "Likewise",
    "Many",
    "Maybe",
    "Meanwhile",
    "Moreover",
    "Most",
    "Much",
    "Must",
    "My",
    "Neither",
    "Never",
    "Nevertheless",
    "Next",
    "No",
    "None",
    "Nonetheless",
    "Nor",
    "Not",
    "Note",
    "Nothing",
    "Now",
    "Of",
    "Often",
    "Oh",
    "On",
    "Once",
    "One",
    "Only",
    "Or",
    "Other",
    "Otherwise",
    "Our",
    "Over",
    "Overall",
    "Perhaps",
    "Please",
    "Recently",
    "See",
    "Several",
    "She",
    "Should",
    "Similarly",
    "Since",
    "So",
    "Some",
    "Sometimes",
    "Still",
    "Such",
    "That",
    "The",
    "Their",
    "Then",
    "There",
    "Therefore",
    "These",
    "They",
    "This",
    "Those",
    "Though",
    "Through",
    "Throughout",
    "Thus",
    "To",
    "Today",
    "Two",
    "Under",
    "Unfortunately",
    "Unless",
    "Unlike",
    "Until",
    "Usually",
    "Was",
    "We",
    "Well",
    "Were",
    "What",
    "When",
    "Where",
    "Whereas",
    "Which",
    "While",
    "Who",
    "Whom",
    "Whose",
    "Why",
    "With",
    "Within",
    "Without",
    "Would",
    "Yes",
    "Yet",
    "You",
    "Your",
];

/// Lowercase words before an initial that make a name likely (`"by J. Smith"`).
const NAME_INTRODUCERS: &[&str] = &["by", "and", "&", "of", "with", "from"];

/// Size of the windows UAX #29 runs on; see [`uax29_candidates`].
const WINDOW: usize = 256;
/// Context added on each side of a window; see [`uax29_candidates`].
const CONTEXT: usize = 64;
/// Longest token (in bytes) inspected as a possible abbreviation or initial.
const MAX_TOKEN: usize = 48;
/// Longest look-ahead (in chars) for the lowercase-continuation rule.
const MAX_LOOKAHEAD: usize = 64;

impl Default for SentenceSplitter {
    fn default() -> Self {
        Self::new()
    }
}

impl SentenceSplitter {
    /// A splitter with the built-in abbreviation lists (see the module documentation).
    pub fn new() -> Self {
        fn set(xs: &[&str]) -> HashSet<String> {
            xs.iter().map(|s| s.to_string()).collect()
        }
        SentenceSplitter {
            prefix: set(PREFIX),
            before_number: set(BEFORE_NUMBER),
            ambiguous: set(AMBIGUOUS),
        }
    }

    /// A splitter with empty abbreviation lists (dotted acronyms and initials are still
    /// recognized by shape).
    pub fn without_abbreviations() -> Self {
        SentenceSplitter {
            prefix: HashSet::new(),
            before_number: HashSet::new(),
            ambiguous: HashSet::new(),
        }
    }

    /// Adds (or re-classifies) one abbreviation, written with or without its final period
    /// (`"Dr"` and `"Dr."` are the same entry).
    ///
    /// # Errors
    /// [`SegmentError::InvalidAbbreviation`] when the abbreviation is empty after removing
    /// one trailing period, or contains whitespace.
    pub fn with_abbreviation(
        mut self,
        abbreviation: &str,
        kind: AbbreviationKind,
    ) -> Result<Self, SegmentError> {
        let a = abbreviation.strip_suffix('.').unwrap_or(abbreviation);
        if a.is_empty() || a.chars().any(is_word_separator) {
            return Err(SegmentError::InvalidAbbreviation(abbreviation.to_string()));
        }
        self.prefix.remove(a);
        self.before_number.remove(a);
        self.ambiguous.remove(a);
        let set = match kind {
            AbbreviationKind::Prefix => &mut self.prefix,
            AbbreviationKind::BeforeNumber => &mut self.before_number,
            AbbreviationKind::Ambiguous => &mut self.ambiguous,
        };
        set.insert(a.to_string());
        Ok(self)
    }

    /// The kind of `tok` (a token without its final period), if it is a listed abbreviation.
    pub fn abbreviation_kind(&self, tok: &str) -> Option<AbbreviationKind> {
        let mut variants: Vec<std::borrow::Cow<'_, str>> = vec![tok.into()];
        let mut chars = tok.chars();
        if let Some(first) = chars.next() {
            if first.is_uppercase() {
                // "Fig" -> "fig", "E.g" -> "e.g"
                let lower_first: String = first.to_lowercase().chain(chars.clone()).collect();
                variants.push(lower_first.into());
                // "MR" -> "Mr", "PROF" -> "Prof"
                if tok.chars().count() > 1 && !tok.chars().any(char::is_lowercase) {
                    let title: String = std::iter::once(first)
                        .chain(chars.flat_map(char::to_lowercase))
                        .collect();
                    variants.push(title.into());
                }
            }
        }
        for v in &variants {
            let v: &str = v;
            if self.prefix.contains(v) {
                return Some(AbbreviationKind::Prefix);
            }
            if self.before_number.contains(v) {
                return Some(AbbreviationKind::BeforeNumber);
            }
            if self.ambiguous.contains(v) {
                return Some(AbbreviationKind::Ambiguous);
            }
        }
        None
    }

    /// Sentences of `text` as byte spans, following UAX #29 plus the rules in the module
    /// documentation.
    ///
    /// Returns spans `[start, end)` in bytes, strictly increasing, non-empty, trimmed of
    /// whitespace ([`is_word_separator`]), on character boundaries, with whitespace-only gaps
    /// between them. An empty or whitespace-only text gives an empty vector. Never fails.
    pub fn split(&self, text: &str) -> Vec<Span> {
        self.split_windowed(text, WINDOW)
    }

    /// [`SentenceSplitter::split`] with UAX #29 run on windows of about `window` bytes
    /// (see [`uax29_candidates`]); the result does not depend on `window` for text in the
    /// scripts whose terminals this module knows.
    fn split_windowed(&self, text: &str, window: usize) -> Vec<Span> {
        let Some(first) = text.find(|c: char| !is_word_separator(c)) else {
            return Vec::new();
        };
        let flags = candidate_flags(text, window.max(1));
        let bytes_len = text.len();
        let mut out = Vec::new();
        let mut cur_start = first;
        let mut i = first + 1;
        while i < bytes_len {
            if !flags[i] {
                i += 1;
                continue;
            }
            // One gap [pe, ns) of whitespace around the candidate; all candidates in it are
            // the same decision.
            let ns = next_non_sep(text, i);
            let pe = prev_non_sep_end(text, i);
            if ns >= bytes_len {
                break;
            }
            if pe > cur_start && self.keep(text, pe, ns, cur_start) {
                out.push(Span {
                    start: cur_start,
                    end: pe,
                });
                cur_start = ns;
            }
            i = ns + 1;
        }
        let end = prev_non_sep_end(text, bytes_len);
        if end > cur_start {
            out.push(Span {
                start: cur_start,
                end,
            });
        }
        out
    }

    /// Decides one candidate gap `text[pe..ns]` (whitespace only, possibly empty) inside the
    /// sentence that started at `cur_start`.
    fn keep(&self, text: &str, pe: usize, ns: usize, cur_start: usize) -> bool {
        let gap = &text[pe..ns];
        let (lines, para) = line_breaks(gap);
        // Rule 1: blank line or paragraph separator.
        if para || lines >= 2 {
            return true;
        }
        let term = terminal_before(text, cur_start, pe);
        // Rule 2: no whitespace at all.
        if gap.is_empty() {
            return match term {
                Some(t) if t.class == TermClass::Strong => {
                    let next_is_digit = text[ns..].chars().next().is_some_and(char::is_numeric);
                    !next_is_digit && is_grapheme_boundary(text, pe)
                }
                _ => false,
            };
        }
        // Rule 3: a single line break before a list item ends the sentence; without a
        // terminal, one ends it only after a heading (otherwise it is a hard wrap).
        if lines == 1 && starts_with_list_marker(&text[ns..]) {
            return true;
        }
        let Some(t) = term else {
            if lines == 1 {
                return is_heading_line(text, cur_start, pe, ns);
            }
            // A UAX #29 boundary after a terminal of a script we do not list.
            return true;
        };
        // Rule 4: closing punctuation detached by a space stays with its sentence.
        if starts_with_detached_closer(&text[ns..]) {
            return false;
        }
        // Rule 5: lowercase continuation.
        if t.class != TermClass::Strong && lower_follows(&text[ns..]) {
            return false;
        }
        // Rule 6.
        match t.class {
            TermClass::Strong | TermClass::Question => return true,
            TermClass::Period | TermClass::Ellipsis => {}
        }
        // Rule 7: ellipses.
        if !t.closers && text[ns..].starts_with('.') {
            // A spaced ellipsis ". . ." continues.
            return false;
        }
        if let Some(mid_sentence) = ellipsis_before(text, cur_start, t.pos) {
            return !mid_sentence;
        }
        // Rule 8.
        if t.closers {
            return true;
        }
        // Rule 9: the token before the period.
        let Some((tok_start, tok)) = token_before(text, cur_start, t.pos) else {
            return true;
        };
        if tok.is_empty() {
            return true;
        }
        if tok_start == cur_start && is_list_label(tok) {
            // "2. Measure the spectrum." is one sentence, not "2." plus one.
            return false;
        }
        let next = NextWord::at(&text[ns..]);
        let kind = self.abbreviation_kind(tok);
        match kind {
            Some(AbbreviationKind::Prefix) => return false,
            Some(AbbreviationKind::BeforeNumber) if next.is_number_like() => return false,
            _ => {}
        }
        if is_initial(tok) {
            if next.is_initial() {
                return false;
            }
            let next_ok = next.opener == Some('(')
                || (next.opener.is_none() && next.starts_upper() && !self.is_starter(&next));
            return !(next_ok && self.initial_follows_name(text, cur_start, tok_start));
        }
        if next.starts_with_digit() {
            return true;
        }
        if kind == Some(AbbreviationKind::Ambiguous) || is_dotted_acronym(tok) {
            if !next.starts_upper() || next.opener.is_some() {
                return true;
            }
            return self.is_starter(&next);
        }
        true
    }

    /// True when the next word begins a new sentence in the sense of rule 9: a listed
    /// sentence starter or a title abbreviation.
    fn is_starter(&self, next: &NextWord<'_>) -> bool {
        let w = next.word;
        if w.is_empty() {
            return false;
        }
        if starter_set().contains(w) {
            return true;
        }
        // "THE" -> "The"
        if w.chars().count() > 1 && !w.chars().any(char::is_lowercase) {
            let mut cs = w.chars();
            let title: String = cs
                .next()
                .into_iter()
                .chain(cs.flat_map(char::to_lowercase))
                .collect();
            if starter_set().contains(title.as_str()) {
                return true;
            }
        }
        next.followed_by_dot && self.abbreviation_kind(w) == Some(AbbreviationKind::Prefix)
    }

    /// Whether the initial starting at `tok_start` reads as part of a name, judged by what
    /// precedes it: sentence start, a capitalized word, an initial, an abbreviation, or a
    /// name-introducing function word.
    fn initial_follows_name(&self, text: &str, cur_start: usize, tok_start: usize) -> bool {
        if tok_start <= cur_start {
            return true;
        }
        let before = &text[cur_start..tok_start];
        let trimmed = before.trim_end_matches(is_word_separator);
        if trimmed.is_empty() {
            return true;
        }
        let mut start = trimmed.len();
        for (idx, c) in trimmed.char_indices().rev() {
            if is_word_separator(c) || trimmed.len() - idx > MAX_TOKEN {
                break;
            }
            start = idx;
        }
        let prev = &trimmed[start..];
        let prev = prev.strip_suffix(',').unwrap_or(prev);
        if prev.is_empty() {
            return false;
        }
        if NAME_INTRODUCERS.contains(&prev) {
            return true;
        }
        if let Some(p) = prev.strip_suffix('.') {
            return is_initial(p) || is_dotted_acronym(p) || self.abbreviation_kind(p).is_some();
        }
        let mut cs = prev.chars();
        cs.next().is_some_and(char::is_uppercase)
            && cs.all(|c| c.is_alphabetic() || matches!(c, '\'' | '’' | '-'))
    }
}

/// Sentences of `text` as byte spans, with the built-in abbreviation lists.
///
/// Shorthand for `SentenceSplitter::new().split(text)` using a shared splitter. Follows
/// UAX #29 Default Sentence Boundaries plus the documented rules of this module. Spans are
/// `[start, end)` byte offsets: strictly increasing, non-empty, trimmed of whitespace, on
/// character boundaries; the gaps between them are whitespace only. Never fails or panics.
pub fn sentences(text: &str) -> Vec<Span> {
    static SPLITTER: OnceLock<SentenceSplitter> = OnceLock::new();
    SPLITTER.get_or_init(SentenceSplitter::new).split(text)
}

fn starter_set() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STARTERS.iter().copied().collect())
}

/// Per-byte candidate flags (index = byte offset where a new sentence could start).
fn candidate_flags(text: &str, window: usize) -> Vec<bool> {
    let mut flags = vec![false; text.len() + 1];
    uax29_candidates(text, &mut flags, window);
    // One candidate after each whitespace run that follows a recognized terminal
    // (closing quotes/brackets skipped).
    let mut in_ws = false;
    let mut run_after_terminal = false;
    for (i, c) in text.char_indices() {
        if is_word_separator(c) {
            if !in_ws {
                in_ws = true;
                run_after_terminal = terminal_before(text, 0, i).is_some();
            }
        } else {
            if in_ws && run_after_terminal {
                flags[i] = true;
            }
            in_ws = false;
        }
    }
    flags
}

/// Marks UAX #29 sentence boundaries in `flags`.
///
/// `unicode-segmentation`'s sentence iterator re-scans the rest of a run of spaces or
/// closing punctuation after a period at every character of that run (rule SB8), which is
/// quadratic on adversarial input. To stay linear, the text is cut into windows of about
/// `window` bytes; UAX #29 runs on each window extended by [`CONTEXT`] bytes on both sides,
/// and only the boundaries inside the window itself are kept. That equals running it on the
/// whole text unless a run of spaces, closing punctuation or combining marks longer than
/// the context sits next to a boundary, where the rules of this module decide anyway.
fn uax29_candidates(text: &str, flags: &mut [bool], window: usize) {
    let len = text.len();
    let mut s = 0;
    while s < len {
        let e = ceil_char_boundary(text, s + window);
        let lo = floor_char_boundary(text, s.saturating_sub(CONTEXT));
        let hi = ceil_char_boundary(text, e + CONTEXT);
        for (idx, _) in text[lo..hi].split_sentence_bound_indices() {
            let pos = lo + idx;
            if pos > 0 && pos >= s && pos < e {
                flags[pos] = true;
            }
        }
        s = e;
    }
}

/// Smallest char boundary `>= i` (or `text.len()`).
fn ceil_char_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Largest char boundary `<= i`.
fn floor_char_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn is_grapheme_boundary(text: &str, pos: usize) -> bool {
    let mut cursor = GraphemeCursor::new(pos, text.len(), true);
    cursor.is_boundary(text, 0).unwrap_or(true)
}

/// First byte at or after `i` that is not a separator (or `text.len()`).
fn next_non_sep(text: &str, i: usize) -> usize {
    text[i..]
        .char_indices()
        .find(|&(_, c)| !is_word_separator(c))
        .map_or(text.len(), |(o, _)| i + o)
}

/// End of the last non-separator char before `i` (or 0).
fn prev_non_sep_end(text: &str, i: usize) -> usize {
    text[..i]
        .char_indices()
        .rev()
        .find(|&(_, c)| !is_word_separator(c))
        .map_or(0, |(o, c)| o + c.len_utf8())
}

/// Line breaks in a whitespace gap (`"\r\n"` counts once; `\r`, `\n`, U+0085, U+2028 once
/// each) and whether it holds a paragraph separator (U+2029).
fn line_breaks(gap: &str) -> (usize, bool) {
    let mut n = 0;
    let mut para = false;
    let mut prev_cr = false;
    for c in gap.chars() {
        match c {
            '\n' if prev_cr => {}
            '\n' | '\r' | '\u{85}' | '\u{2028}' => n += 1,
            '\u{2029}' => para = true,
            _ => {}
        }
        prev_cr = c == '\r';
    }
    (n, para)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TermClass {
    /// `.` (and U+FE52 small full stop, U+FF0E fullwidth full stop).
    Period,
    /// `?` `!` and friends.
    Question,
    /// `…`
    Ellipsis,
    /// CJK and other script terminals that end a sentence even without a following space.
    Strong,
}

fn term_class(c: char) -> Option<TermClass> {
    Some(match c {
        '.' | '\u{FE52}' | '\u{FF0E}' => TermClass::Period,
        '?' | '!' | '‽' | '⁇' | '⁈' | '⁉' | '‼' | '\u{FE56}' | '\u{FE57}' => {
            TermClass::Question
        }
        '…' => TermClass::Ellipsis,
        '。' | '！' | '？' | '｡' | '।' | '॥' | '؟' | '۔' | '።' | '፧' | '။' => {
            TermClass::Strong
        }
        _ => return None,
    })
}

fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | '’'
            | '”'
            | '»'
            | '›'
            | ')'
            | ']'
            | '}'
            | '」'
            | '』'
            | '】'
            | '〉'
            | '》'
            | '）'
            | '］'
            | '｝'
            | '〕'
            | '〗'
    )
}

fn is_opener(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | '‘'
            | '“'
            | '«'
            | '‹'
            | '('
            | '['
            | '{'
            | '¿'
            | '¡'
            | '「'
            | '『'
            | '【'
            | '〈'
            | '《'
            | '（'
            | '［'
            | '｛'
            | '〔'
            | '〖'
    )
}

#[derive(Debug, Clone, Copy)]
struct Terminal {
    class: TermClass,
    /// Byte offset of the terminal character.
    pos: usize,
    /// Closing quotes or brackets follow the terminal.
    closers: bool,
}

/// The terminal ending `text[lo..pe]`, skipping up to 8 closing quotes/brackets, which may
/// be detached from it by spaces (`"sample. )"`, `"catalysts. \""`, as in SciQ).
fn terminal_before(text: &str, lo: usize, pe: usize) -> Option<Terminal> {
    let mut closers = 0;
    let mut skipped = 0;
    for (i, c) in text[lo..pe].char_indices().rev() {
        if let Some(class) = term_class(c) {
            return Some(Terminal {
                class,
                pos: lo + i,
                closers: closers > 0,
            });
        }
        skipped += 1;
        if skipped > 16 {
            return None;
        }
        if is_closer(c) {
            closers += 1;
            continue;
        }
        if closers > 0 && is_horizontal_space(c) {
            continue;
        }
        return None;
    }
    None
}

fn is_horizontal_space(c: char) -> bool {
    is_word_separator(c) && !matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Does the next sentence candidate start with closing punctuation that belongs to the
/// previous sentence: a closing-only quote or bracket, or a straight quote followed by
/// whitespace (`"theory. \" In other words"`)?
fn starts_with_detached_closer(rest: &str) -> bool {
    let mut cs = rest.chars();
    match cs.next() {
        Some('"' | '\'') => !matches!(cs.next(), Some(c) if !is_word_separator(c)),
        Some(c) => is_closer(c),
        None => false,
    }
}

/// The token that ends just before the terminal at `term_pos` (back to whitespace or the
/// sentence start, at most [`MAX_TOKEN`] bytes), without leading opening punctuation.
/// `None` when it is longer than that.
fn token_before(text: &str, cur_start: usize, term_pos: usize) -> Option<(usize, &str)> {
    let mut start = term_pos;
    for (i, c) in text[cur_start..term_pos].char_indices().rev() {
        if is_word_separator(c) {
            break;
        }
        if term_pos - (cur_start + i) > MAX_TOKEN {
            return None;
        }
        start = cur_start + i;
    }
    let mut tok = &text[start..term_pos];
    while let Some(c) = tok.chars().next() {
        if is_opener(c) {
            tok = &tok[c.len_utf8()..];
            start += c.len_utf8();
        } else {
            break;
        }
    }
    Some((start, tok))
}

/// If the terminal at `term_pos` ends an ellipsis (two or more dots, or `…`), whether it is
/// a mid-sentence pause: exactly three dots or one `…` with whitespace before and no
/// closing quote/bracket after (`"Then ... God help me"`). `None` when it is no ellipsis.
fn ellipsis_before(text: &str, cur_start: usize, term_pos: usize) -> Option<bool> {
    let term_end = term_pos + text[term_pos..].chars().next().map_or(0, char::len_utf8);
    let mut dots = 0;
    let mut has_ellipsis_char = false;
    let mut run_start = term_end;
    for (i, c) in text[cur_start..term_end].char_indices().rev() {
        match c {
            '.' => dots += 1,
            '…' => {
                dots += 3;
                has_ellipsis_char = true;
            }
            _ => break,
        }
        run_start = cur_start + i;
        if dots > 8 {
            break;
        }
    }
    if dots < 2 && !has_ellipsis_char {
        return None;
    }
    let spaced_before = text[..run_start]
        .chars()
        .next_back()
        .is_some_and(is_word_separator);
    let closer_after = text[term_end..].chars().next().is_some_and(is_closer);
    Some(dots == 3 && spaced_before && !closer_after)
}

/// UAX #29 SB8, generalised: is the first letter ahead (skipping non-letters, stopping at a
/// terminal or line break) lowercase?
fn lower_follows(rest: &str) -> bool {
    let head = rest.get(..8).unwrap_or(rest);
    if head.starts_with("http://") || head.starts_with("https://") || head.starts_with("www.") {
        // A URL is not a lowercase continuation ("Gallup Politics. http://...").
        return false;
    }
    for c in rest.chars().take(MAX_LOOKAHEAD) {
        if c.is_lowercase() {
            return true;
        }
        if c.is_alphabetic() || term_class(c).is_some() {
            return false;
        }
        if matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}') {
            return false;
        }
    }
    false
}

/// A list label: one to three ASCII digits or a single ASCII letter (`"2"` of `"2."`).
fn is_list_label(tok: &str) -> bool {
    let digits = (1..=3).contains(&tok.len()) && tok.bytes().all(|b| b.is_ascii_digit());
    let letter = tok.len() == 1 && tok.bytes().all(|b| b.is_ascii_alphabetic());
    digits || letter
}

/// A single uppercase letter: an initial (`"F"` of `"F."`).
fn is_initial(tok: &str) -> bool {
    let mut cs = tok.chars();
    matches!((cs.next(), cs.next()), (Some(c), None) if c.is_uppercase())
}

/// Two or more dot-separated parts of one or two letters: `U.S`, `U.S.A`, `Ph.D`, `a.m`.
fn is_dotted_acronym(tok: &str) -> bool {
    let mut parts = 0;
    for part in tok.split('.') {
        let n = part.chars().count();
        if n == 0 || n > 2 || !part.chars().all(char::is_alphabetic) {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// The word at the start of a candidate sentence.
#[derive(Debug)]
struct NextWord<'a> {
    /// The leading opening quote/bracket, if any (only the first is recorded).
    opener: Option<char>,
    /// The alphanumeric run after the openers (may be empty).
    word: &'a str,
    /// The run is immediately followed by `.`.
    followed_by_dot: bool,
}

impl<'a> NextWord<'a> {
    fn at(rest: &'a str) -> Self {
        let mut opener = None;
        let mut start = 0;
        for (i, c) in rest.char_indices().take(8) {
            if is_opener(c) {
                opener.get_or_insert(c);
                start = i + c.len_utf8();
            } else {
                break;
            }
        }
        let tail = &rest[start..];
        let end = tail
            .char_indices()
            .take(MAX_TOKEN)
            .find(|&(_, c)| !c.is_alphanumeric())
            .map_or_else(|| tail.len().min(word_limit(tail)), |(i, _)| i);
        let word = &tail[..end];
        NextWord {
            opener,
            word,
            followed_by_dot: tail[end..].starts_with('.'),
        }
    }

    fn first(&self) -> Option<char> {
        self.word.chars().next()
    }

    fn starts_with_digit(&self) -> bool {
        self.first().is_some_and(char::is_numeric)
    }

    /// A number, a token with a digit (`"B15"`), or a roman numeral of two or more letters.
    fn is_number_like(&self) -> bool {
        self.opener.is_none()
            && (self.word.chars().any(|c| c.is_ascii_digit())
                || (self.word.len() >= 2 && self.word.chars().all(|c| "IVXLCDM".contains(c))))
    }

    fn starts_upper(&self) -> bool {
        self.first().is_some_and(is_capital)
    }

    fn is_initial(&self) -> bool {
        self.followed_by_dot && is_initial(self.word)
    }
}

/// Byte length of the first [`MAX_TOKEN`] chars of `s`.
fn word_limit(s: &str) -> usize {
    s.char_indices().nth(MAX_TOKEN).map_or(s.len(), |(i, _)| i)
}

/// Uppercase letters and the titlecase digraphs (U+01C5, U+01C8, U+01CB, U+01F2).
fn is_capital(c: char) -> bool {
    c.is_uppercase() || matches!(c, '\u{01C5}' | '\u{01C8}' | '\u{01CB}' | '\u{01F2}')
}

/// Does `rest` (the start of the next line) begin with a list or heading marker?
fn starts_with_list_marker(rest: &str) -> bool {
    let mut cs = rest.chars();
    let Some(c0) = cs.next() else { return false };
    let c1 = cs.next();
    match c0 {
        '#' | '>' | '|' => true,
        '-' | '*' | '+' | '•' | '◦' | '‣' | '▪' => c1.is_some_and(char::is_whitespace),
        '0'..='9' => {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            let mut after = rest[digits..].chars();
            digits <= 3
                && matches!(after.next(), Some('.' | ')'))
                && after.next().is_some_and(char::is_whitespace)
        }
        c if c.is_ascii_alphabetic() => {
            c1 == Some(')') && cs.next().is_some_and(char::is_whitespace)
        }
        _ => false,
    }
}

/// Rule 3 heading test for the current sentence `text[cur_start..pe]` before a single
/// line break, with the next line starting at `ns`.
fn is_heading_line(text: &str, cur_start: usize, pe: usize, ns: usize) -> bool {
    if pe - cur_start > 200 {
        return false;
    }
    let line = &text[cur_start..pe];
    if line.contains(['\n', '\r', '\u{85}', '\u{2028}']) {
        return false;
    }
    // The line must open the text or a paragraph (follow a blank line), and must not be a
    // list item.
    let before = &text[..cur_start];
    let lead = before.trim_end_matches(is_word_separator);
    let (breaks, para) = line_breaks(&before[lead.len()..]);
    if !(lead.is_empty() || para || breaks >= 2) {
        return false;
    }
    if line.starts_with('#') {
        return true;
    }
    if starts_with_list_marker(line) {
        return false;
    }
    let next_ok = text[ns..]
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
    let last = line.chars().next_back();
    let last_word = line
        .rsplit(is_word_separator)
        .next()
        .unwrap_or("")
        .to_lowercase();
    next_ok
        && line.len() <= 60
        && count_words(line) <= 8
        && !last.is_some_and(|c| ",;:-‐–—/&(".contains(c))
        && !HEADING_NEVER_ENDS_WITH.contains(&last_word.as_str())
}

/// Function words a heading does not end with (`"The\nCurrie case ..."` is a wrapped
/// sentence, not a heading).
const HEADING_NEVER_ENDS_WITH: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "from", "with", "and", "or",
    "but", "as", "his", "her", "its", "their", "my", "our", "your", "this", "that", "these",
    "those",
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(t: &str) -> Vec<&str> {
        sentences(t).iter().map(|s| &t[s.start..s.end]).collect()
    }

    /// The output contract of the module documentation.
    fn check_contract(text: &str, spans: &[Span]) {
        let mut prev_end = 0;
        let mut prev_start: Option<usize> = None;
        for s in spans {
            assert!(s.start < s.end, "empty span {s:?} in {text:?}");
            assert!(s.end <= text.len());
            assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
            assert!(s.start >= prev_end, "overlap at {s:?} in {text:?}");
            if let Some(p) = prev_start {
                assert!(s.start > p);
            }
            let gap = &text[prev_end..s.start];
            assert!(
                gap.chars().all(is_word_separator),
                "gap {gap:?} in {text:?}"
            );
            let sent = &text[s.start..s.end];
            let first = sent.chars().next().unwrap();
            let last = sent.chars().next_back().unwrap();
            assert!(
                !is_word_separator(first) && !is_word_separator(last),
                "{sent:?}"
            );
            prev_end = s.end;
            prev_start = Some(s.start);
        }
        assert!(text[prev_end..].chars().all(is_word_separator));
        if spans.is_empty() {
            assert!(text.chars().all(is_word_separator));
        }
    }

    fn checked(t: &str) -> Vec<&str> {
        let spans = sentences(t);
        check_contract(t, &spans);
        spans.iter().map(|s| &t[s.start..s.end]).collect()
    }

    #[test]
    fn abbreviation_kind_variants() {
        let s = SentenceSplitter::new();
        assert_eq!(s.abbreviation_kind("Dr"), Some(AbbreviationKind::Prefix));
        assert_eq!(s.abbreviation_kind("DR"), Some(AbbreviationKind::Prefix));
        assert_eq!(
            s.abbreviation_kind("Fig"),
            Some(AbbreviationKind::BeforeNumber)
        );
        assert_eq!(s.abbreviation_kind("E.g"), Some(AbbreviationKind::Prefix));
        assert_eq!(s.abbreviation_kind("ms"), None);
        assert_eq!(s.abbreviation_kind("St"), Some(AbbreviationKind::Ambiguous));
    }

    #[test]
    fn custom_abbreviation() {
        let t = "We met Insp. Lestrade there.";
        assert_eq!(texts(t).len(), 2);
        let s = SentenceSplitter::new()
            .with_abbreviation("Insp.", AbbreviationKind::Prefix)
            .unwrap();
        assert_eq!(s.split(t).len(), 1);
        assert_eq!(
            SentenceSplitter::new()
                .with_abbreviation(".", AbbreviationKind::Prefix)
                .unwrap_err(),
            SegmentError::InvalidAbbreviation(".".into())
        );
        assert!(SentenceSplitter::new()
            .with_abbreviation("a b", AbbreviationKind::Prefix)
            .is_err());
        let plain = SentenceSplitter::without_abbreviations();
        assert_eq!(plain.split("Dr. Who came.").len(), 2);
    }

    #[test]
    fn helpers() {
        assert!(is_dotted_acronym("U.S"));
        assert!(is_dotted_acronym("Ph.D"));
        assert!(!is_dotted_acronym("01.02"));
        assert!(!is_dotted_acronym("example.com"));
        assert!(is_initial("F"));
        assert!(!is_initial("Fe"));
        assert_eq!(line_breaks("\r\n\r\n"), (2, false));
        assert_eq!(line_breaks(" \r "), (1, false));
        assert_eq!(line_breaks("\u{2029}"), (0, true));
        assert!(starts_with_list_marker("- item"));
        assert!(starts_with_list_marker("12. item"));
        assert!(!starts_with_list_marker("1984. The"));
    }

    // docs/reference.md, case 3.
    #[test]
    fn case3_blank_documents_have_no_sentences() {
        for t in ["", "   \n\t  ", "\r\n\r\n", "\u{00A0}\u{200B}\u{FEFF}"] {
            assert!(checked(t).is_empty(), "{t:?}");
        }
        assert_eq!(
            checked("Pumps hum. Valves click."),
            ["Pumps hum.", "Valves click."]
        );
    }

    // Case 4: a single sentence is one sentence, equal to the trimmed input.
    #[test]
    fn case4_single_sentence_documents() {
        for t in [
            "The cooling loop was inspected on Tuesday.",
            "no terminal punctuation at all in this line",
            "Wait!",
        ] {
            assert_eq!(checked(t), [t]);
            assert_eq!(checked(&format!("  {t}\n")), [t]);
        }
    }

    // Case 7: the degenerate middle "sentence" is kept as its own sentence, nothing lost.
    #[test]
    fn case7_degenerate_middle_sentence() {
        assert_eq!(
            checked("Intro sentence here. ---- #### ----. Closing sentence here."),
            [
                "Intro sentence here.",
                "---- #### ----.",
                "Closing sentence here."
            ]
        );
    }

    // Case 8: a 700-item sentence is never cut inside; a URL with 400 dots is not split.
    // (s1 starts lowercase, so by the lowercase-continuation rule it continues the intro.)
    #[test]
    fn case8_long_sentence_and_dotted_url() {
        let s1 = (1..=700)
            .map(|i| format!("item {i}"))
            .collect::<Vec<_>>()
            .join(", ")
            + ".";
        let doc = format!("Short intro. {s1} Short outro.");
        let first = format!("Short intro. {s1}");
        assert_eq!(checked(&doc), [first.as_str(), "Short outro."]);
        let capital = format!("I{}", &s1[1..]);
        let doc = format!("Short intro. {capital} Short outro.");
        assert_eq!(
            checked(&doc),
            ["Short intro.", capital.as_str(), "Short outro."]
        );
        let s2 = "http://".to_string()
            + &(1..=400)
                .map(|i| format!("seg{i}"))
                .collect::<Vec<_>>()
                .join(".");
        let doc = format!("See {s2} now. Then stop.");
        let want = format!("See {s2} now.");
        assert_eq!(checked(&doc), [want.as_str(), "Then stop."]);
    }

    // Case 11: multi-byte text without break points: no panic, valid spans.
    #[test]
    fn case11_multibyte_no_panic() {
        let inputs = [
            "…".repeat(2000),
            "é".repeat(1000),
            "日本語のテキスト".repeat(300),
            "👩‍👩‍👧‍👦".repeat(100),
            "aé😀".repeat(500),
            "x".repeat(9) + "😀" + &"y".repeat(20),
        ];
        for t in &inputs {
            assert_eq!(checked(t), [t.as_str()]);
        }
    }

    // Case 12: CJK full stops split even without a following space.
    #[test]
    fn case12_cjk_full_stops() {
        let t = "猫と犬。".repeat(100);
        let got = checked(&t);
        assert_eq!(got.len(), 100);
        assert!(got.iter().all(|s| *s == "猫と犬。"));
        assert_eq!(
            checked("本当？はい！そうです。"),
            ["本当？", "はい！", "そうです。"]
        );
        assert_eq!(
            checked("「行く。」彼は言った。"),
            ["「行く。」", "彼は言った。"]
        );
        assert_eq!(checked("가방".repeat(50).as_str()).len(), 1);
        assert_eq!(checked("🚀"), ["🚀"]);
        // A fullwidth full stop between digits is a decimal point.
        assert_eq!(checked("３．１４です。"), ["３．１４です。"]);
    }

    // Case 14: abbreviations.
    #[test]
    fn case14_abbreviations() {
        let t = "Dr. Okafor moved to the U.S. in 2019. She studies enzymes, e.g. lipases, at \
                 St. Brendan's lab. Her Ph.D. thesis was on folding.";
        assert_eq!(
            checked(t),
            [
                "Dr. Okafor moved to the U.S. in 2019.",
                "She studies enzymes, e.g. lipases, at St. Brendan's lab.",
                "Her Ph.D. thesis was on folding."
            ]
        );
        assert_eq!(
            checked("The firm relocated to the U.S.A. Its board resigned a week later."),
            [
                "The firm relocated to the U.S.A.",
                "Its board resigned a week later."
            ]
        );
        assert_eq!(
            checked("Ship it in size M. Returns are free."),
            ["Ship it in size M.", "Returns are free."]
        );
        let t = "See fig. 3 and no. 7 in the appendix, i.e. the last page.";
        assert_eq!(checked(t), [t]);
    }

    #[test]
    fn case14_abbreviation_rules_generalise() {
        // Titles never end a sentence; "No." only before a number.
        assert_eq!(checked("Ask Mr. Smith and Mrs. Jones. They know.").len(), 2);
        assert_eq!(
            checked("Did she quit? No. Currie stayed."),
            ["Did she quit?", "No.", "Currie stayed."]
        );
        assert_eq!(checked("It is listed as No. 7 in the table.").len(), 1);
        // Dotted acronyms before a proper noun continue, before a starter they end.
        assert_eq!(
            checked("The U.S. Supreme Court ruled. It was final.").len(),
            2
        );
        assert_eq!(checked("He left the U.S. The war had ended.").len(), 2);
        assert_eq!(checked("Apple Inc. It makes phones.").len(), 2);
        // Initials.
        assert_eq!(
            checked("John F. Kennedy spoke. B. F. Skinner listened.").len(),
            2
        );
        assert_eq!(checked("By A. L. HALEY").len(), 1);
        assert_eq!(checked("The native P. T. Barnum ran a museum.").len(), 1);
        assert_eq!(checked("Vitamin C. It is essential.").len(), 2);
        assert_eq!(checked("Jones, J. M. (2013). A study.").len(), 2);
        // Spaced initials (SciQ style) and units.
        assert_eq!(checked("It is common in the U. S. As shown here.").len(), 2);
        assert_eq!(checked("The U. S. Geological Survey uses gauges.").len(), 1);
        assert_eq!(
            checked("Water melts at 0°C. Below this, it is ice.").len(),
            2
        );
        // Case-sensitive: milliseconds are not "Ms.".
        assert_eq!(checked("It took 5 ms. Then it failed.").len(), 2);
        // Latin and legal abbreviations.
        assert_eq!(
            checked("Compare cf. Smith. Atkins v. Virginia was decided.").len(),
            2
        );
    }

    // Case 15: decimals, versions, dates, numbered lists, ellipses, control characters.
    #[test]
    fn case15_decimals_versions_lists() {
        let t = "The dose rose from 2.5 mg to 3.75 mg. Version 1.2.3 shipped on 01.02.2024. \
                 Steps: 1. drain 2. flush 3. refill. Costs were $4.99 each..";
        assert_eq!(
            checked(t),
            [
                "The dose rose from 2.5 mg to 3.75 mg.",
                "Version 1.2.3 shipped on 01.02.2024.",
                "Steps: 1. drain 2. flush 3. refill.",
                "Costs were $4.99 each.."
            ]
        );
        assert_eq!(checked("Pi is 3.14159 and v1.2.3 is out.").len(), 1);
        // A list label opening a sentence stays with it.
        assert_eq!(
            checked("2. Measure the spectrum. 3. Get the type."),
            ["2. Measure the spectrum.", "3. Get the type."]
        );
        assert_eq!(checked("The answer is 2. Then stop.").len(), 2);
    }

    #[test]
    fn case15_ellipses() {
        assert_eq!(
            checked("Wait... what? Fine.... Next."),
            ["Wait... what?", "Fine....", "Next."]
        );
        // A spaced three-dot ellipsis is a pause; four dots end the sentence.
        assert_eq!(
            checked("\"Then ... God help me ... an old woman!\" He left.").len(),
            2
        );
        assert_eq!(checked("So very normal    .... Her lips moved.").len(), 2);
        assert_eq!(
            checked("The format “If . . . then . . . .” For example, this.").len(),
            2
        );
        assert_eq!(checked("I thought… Maybe not.").len(), 2);
    }

    #[test]
    fn case15_control_chars() {
        // U+001C..U+001F separate words (Python's `str.isspace`), so a run of them between
        // sentences is a gap like a space; every other character is in a sentence.
        let t = "1.\u{1F}\u{1F}Apfel\u{1D}2.\u{1F}\u{1F}Birne";
        let got = checked(t);
        let visible = |s: &str| s.replace(is_word_separator, "");
        assert_eq!(visible(&got.concat()), visible(t));
        for t in [
            "\u{0}",
            ".\u{0}.",
            "a.\u{7}B",
            "\u{1B}[0m. X.",
            "\u{85}a.\u{85}b.",
        ] {
            checked(t);
        }
    }

    // Case 17: punctuation stays at the end of its sentence.
    #[test]
    fn case17_punctuation_stays_with_sentence() {
        let got = checked("Apples are red. Bananas are yellow. Cherries are dark.");
        assert_eq!(
            got,
            [
                "Apples are red.",
                "Bananas are yellow.",
                "Cherries are dark."
            ]
        );
        // Closing quotes and brackets, even detached by a space, stay with their sentence.
        assert_eq!(
            checked("They are \"catalysts. \" For example, this. (As noted. ) Then."),
            [
                "They are \"catalysts. \"",
                "For example, this.",
                "(As noted. )",
                "Then."
            ]
        );
    }

    // Case 18: offsets come from positions, not from searching repeated text.
    #[test]
    fn case18_repetitive_text_offsets() {
        let t = "The valve is closed. ".repeat(8);
        let spans = sentences(&t);
        check_contract(&t, &spans);
        assert_eq!(spans.len(), 8);
        for (i, s) in spans.iter().enumerate() {
            assert_eq!(s.start, 21 * i);
            assert_eq!(&t[s.start..s.end], "The valve is closed.");
        }
        let starts: Vec<usize> = spans.iter().step_by(2).map(|s| s.start).collect();
        assert_eq!(starts, [0, 42, 84, 126]);
        assert_eq!(checked("a".repeat(2000).as_str()).len(), 1);
    }

    // Case 19: offsets describe the trimmed span and round-trip exactly.
    #[test]
    fn case19_trimmed_offsets_round_trip() {
        let t = "Para one, line one.\n\n\n   Para two,  with   double  spaces.\tTabbed item.\n  \
                 Trailing line.   ";
        let spans = sentences(t);
        check_contract(t, &spans);
        let got: Vec<&str> = spans.iter().map(|s| &t[s.start..s.end]).collect();
        assert_eq!(
            got,
            [
                "Para one, line one.",
                "Para two,  with   double  spaces.",
                "Tabbed item.",
                "Trailing line."
            ]
        );
        assert_eq!(spans[1].start, t.find("Para two").unwrap());
        let words: usize = got.iter().map(|s| count_words(s)).sum();
        assert_eq!(words, count_words(t));
    }

    // Case 22: CRLF, LF and lone CR give the same boundaries.
    #[test]
    fn case22_crlf_lf_cr() {
        let crlf = "Para one line.\r\n\r\nPara two line.\r\nsame para.\r\n\r\nPara three.";
        let lf = crlf.replace("\r\n", "\n");
        let cr = crlf.replace("\r\n", "\r");
        let norm = |t: &str| -> Vec<String> {
            checked(t)
                .iter()
                .map(|s| s.replace("\r\n", " ").replace(['\r', '\n'], " "))
                .collect()
        };
        assert_eq!(norm(crlf), norm(&lf));
        assert_eq!(norm(crlf), norm(&cr));
        assert_eq!(
            norm(&lf),
            ["Para one line.", "Para two line. same para.", "Para three."]
        );
        for t in [crlf, lf.as_str(), cr.as_str()] {
            for s in checked(t) {
                assert!(!s.starts_with(['\n', '\r']) && !s.ends_with(['\n', '\r']));
            }
            let words: usize = checked(t).iter().map(|s| count_words(s)).sum();
            assert_eq!(words, count_words(&lf));
        }
        assert_eq!(
            checked("A first.\rB second.\rC third."),
            ["A first.", "B second.", "C third."]
        );
        // A blank line always ends a sentence, even without punctuation.
        assert_eq!(
            checked("Heading\r\n\r\nbody text"),
            ["Heading", "body text"]
        );
        assert_eq!(checked("Heading\r\rbody text"), ["Heading", "body text"]);
        assert_eq!(checked("one\u{2029}two"), ["one", "two"]);
    }

    // Case 25 and 27: every sentence is kept, including the last.
    #[test]
    fn case25_case27_all_sentences_kept() {
        let t = "Ana ate an apple. Ben ate a banana. Cai ate a cherry. Dee ate a date.";
        assert_eq!(checked(t).len(), 4);
        let t = "S0 is first. S1 is next. S2 is middle. S3 is centre. S4 follows. S5 is late. \
                 S6 is last.";
        let got = checked(t);
        assert_eq!(got.len(), 7);
        assert_eq!(got[6], "S6 is last.");
    }

    #[test]
    fn urls_and_emails_are_not_split() {
        let t = "Visit https://x.com/a?b=1&c=2!x or mail ann.lee@example.org. Then go.";
        assert_eq!(
            checked(t),
            [
                "Visit https://x.com/a?b=1&c=2!x or mail ann.lee@example.org.",
                "Then go."
            ]
        );
        // SciQ writes URLs with spaces after dots; the lowercase rule keeps them whole.
        let t = "Go to this URL: http://www. youtube. com/watch?v=cfXzwh3KadE. Next.";
        assert_eq!(checked(t).len(), 2);
        // A URL after a period starts a new unit (reference lists).
        assert_eq!(
            checked("Gallup Politics. http://www.gallup.com/poll").len(),
            2
        );
    }

    #[test]
    fn quotes_brackets_and_dialogue() {
        assert_eq!(
            checked("\"Why?\" he asked. \"Stop!\" she cried. (See below.) Then it ended."),
            [
                "\"Why?\" he asked.",
                "\"Stop!\" she cried.",
                "(See below.)",
                "Then it ended."
            ]
        );
        assert_eq!(
            checked("He said, “It is done.” Yerkes agreed."),
            ["He said, “It is done.”", "Yerkes agreed."]
        );
    }

    #[test]
    fn line_breaks_headings_and_lists() {
        // Hard-wrapped prose: a single newline is a space.
        assert_eq!(
            checked("The cell had been put\n together well. It was.").len(),
            2
        );
        assert_eq!(
            checked("said Miss Eagen, \"lie down, Mrs.\n Foster. Does it hurt?\"").len(),
            2
        );
        // Headings and list items end at the newline.
        assert_eq!(
            checked("Scientific Notation\nIn 2015, the sum was large."),
            ["Scientific Notation", "In 2015, the sum was large."]
        );
        assert_eq!(
            checked("Steps:\n- drain\n- flush"),
            ["Steps:", "- drain", "- flush"]
        );
        assert_eq!(
            checked("# Title\nBody text here."),
            ["# Title", "Body text here."]
        );
        // A wrapped line ending in a function word is not a heading.
        assert_eq!(checked("It ended.\nThe\nCurrie case is open.").len(), 2);
        // A short line followed by a lowercase line is a wrap.
        assert_eq!(checked("The Washington Times\ncould hardly wait.").len(), 1);
        // List items split even after a terminal and before a lowercase word; a short
        // wrapped list item is not a heading.
        assert_eq!(
            checked("Minuses:\na) Seduced a man.\nb) Lied about it to\neveryone .\nc) Betrayed by Linda\nTripp."),
            [
                "Minuses:",
                "a) Seduced a man.",
                "b) Lied about it to\neveryone .",
                "c) Betrayed by Linda\nTripp."
            ]
        );
        // A short line in the middle of a paragraph is not a heading.
        assert_eq!(
            checked("It ended.\nHe turned to\nMa Kirk and left.").len(),
            2
        );
        assert_eq!(
            checked("Intro text.\n\nBy A. L. HALEY\n There's a place for every man."),
            [
                "Intro text.",
                "By A. L. HALEY",
                "There's a place for every man."
            ]
        );
    }

    #[test]
    fn linear_time_on_adversarial_input() {
        let n = 1 << 20;
        let inputs = [
            format!("a.{}b", " ".repeat(n)),
            format!("a.{}b", ")".repeat(n / 2)),
            "?a".repeat(n / 2),
            "。".repeat(n / 3),
            "\n".repeat(n),
            "U.S. ".repeat(n / 5),
            "a. ".repeat(n / 3),
            "x".repeat(n),
            "\u{301}".repeat(n / 2),
        ];
        for t in &inputs {
            let start = std::time::Instant::now();
            let spans = sentences(t);
            let took = start.elapsed();
            check_contract(t, &spans);
            assert!(took.as_secs() < 20, "took {took:?} on {:?}...", &t[..8]);
        }
    }

    /// Characters that exercise every rule (terminals, closers, openers, whitespace kinds,
    /// line breaks, CJK, combining marks, ZWJ emoji, invisible separators, controls).
    const ALPHABET: &[char] = &[
        'a', 'b', 'Z', 'M', 'I', 'S', 'U', 'e', 'g', '1', '9', '.', '.', '.', '?', '!', ',', ' ',
        ' ', ' ', '\n', '\r', '\t', '"', '\'', '”', '“', '(', ')', '[', '#', '-', '…', '。', '！',
        '？', '」', '「', '日', '本', 'é', '\u{301}', '\u{200D}', '👩', '\u{200B}', '\u{FEFF}',
        '\u{A0}', '\u{2029}', '\u{85}', '\u{1F}', '\u{0}', '．', '•', '/', ':', '@',
    ];
    /// Tokens that trigger abbreviation, URL and number rules.
    const TOKENS: &[&str] = &[
        "Dr.",
        "U.S.",
        "e.g.",
        "No.",
        "fig.",
        "St.",
        "Inc.",
        "F.",
        "Ph.D.",
        "3.14",
        "v1.2.3",
        "http://x.y/a?b=1",
        "...",
        ". . .",
        "The",
        "It",
        "Returns",
        "a.m.",
        "\r\n",
        "\n\n",
    ];

    fn arb_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            3 => any::<char>().prop_map(String::from),
            6 => prop::sample::select(ALPHABET).prop_map(String::from),
            2 => prop::sample::select(TOKENS).prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..200).prop_map(|v| v.concat())
    }

    fn arb_known_script_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            6 => prop::sample::select(ALPHABET).prop_map(String::from),
            2 => prop::sample::select(TOKENS).prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..200).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Invariants 1, 2, 4 of docs/reference.md (cases) on random UTF-8 (multi-byte, CJK, controls).
        #[test]
        fn prop_contract_holds_on_random_utf8(text in arb_text()) {
            let spans = sentences(&text);
            check_contract(&text, &spans);
            prop_assert_eq!(&spans, &sentences(&text));
            for s in &spans {
                let sent = &text[s.start..s.end];
                prop_assert!(!sent.starts_with('\n') && !sent.ends_with('\r'));
            }
        }

        /// The UAX #29 windowing (linear-time guard) does not change the result.
        #[test]
        fn prop_windowing_does_not_change_result(
            text in arb_known_script_text(),
            window in 1usize..64,
        ) {
            let s = SentenceSplitter::new();
            let reference = s.split_windowed(&text, usize::MAX / 4);
            let windowed = s.split_windowed(&text, window);
            check_contract(&text, &windowed);
            prop_assert_eq!(reference, windowed);
        }
    }
}
