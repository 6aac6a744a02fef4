//! Robust answer-letter extraction from free-form model output, for servers that return text
//! without log-probs (docs/reference.md, "Answer parsing").
//!
//! The reply is first stripped of surrounding whitespace and Markdown emphasis (`**B**`,
//! `__B__`, `` `B` ``). Then these rules apply, in order; only letters of existing options
//! count (A..A+n), and a lower-case letter counts only where it cannot be an English word:
//! inside brackets, with a delimiter, or when it is not `a` or `i` (`"a"` alone is the article,
//! not option A).
//! 1. **Bare letter**: the whole reply is one letter, optionally in `()`/`[]`, optionally
//!    followed by `.`, `)` or `:` — `"B"`, `"(B)"`, `"B."`, `"b"`, `"(a)"`.
//! 2. **Anchored**: every occurrence of an anchor — `answer` (optionally followed by `is`,
//!    `would be`, `should be`) or `correct/right/best option/choice` (optionally `is`), then an
//!    optional `:`/`=` — is followed either by a letter that is not the start of a word
//!    (`"Answer: (C)"`, `"the answer is B."`, `"answer: b"`, `"The correct option is (b)."`,
//!    but not the `A` of `"Answer: All of the above"` nor the `a` of `"the answer is a
//!    cell"`), or by text that equals an option's text (`"ANSWER: All of the above"` → that
//!    option). All anchored findings must agree; different options are
//!    [`ParsedAnswer::Ambiguous`]. A hedge after an anchored letter names more findings:
//!    `"The answer is A or B"`, `"Answer: A, B"`, `"answer: (A) and/or (C)"` are ambiguous.
//! 3. **Option letter**: the whole reply is `option B` / `choice (b)`.
//! 4. **Leading letter**: the reply starts with a letter followed by `.`, `)` or `:`
//!    (`"B. 4"`, `"(C) 6"`, `"b) 4"`), when no anchor was found.
//! 5. **Whole text**: the whole reply equals one option's text (case- and
//!    punctuation-insensitive), when nothing else matched.
//!
//! Anything else is [`ParsedAnswer::Unparsable`]: an unanchored letter inside prose (`"I think
//! ..."` never reads as `I`), a letter past the last option, text matching no option (`"None of
//! these"`, `"banana"`). Unparsable and ambiguous outputs are flagged invalid by the caller
//! ([`crate::ReaderOutput::invalid`]), counted, and shown with their raw text — never a silent
//! tie.

use regex::Regex;
use std::sync::OnceLock;

/// What [`parse_answer`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedAnswer {
    /// One option, identified by `rule` (`"bare"`, `"anchored-letter"`, `"anchored-text"`,
    /// `"option-letter"`, `"leading-letter"`, `"whole-text"`).
    Choice {
        /// 0-based option index.
        index: usize,
        /// Which rule identified it.
        rule: &'static str,
    },
    /// Anchored findings name different options (sorted, distinct indices).
    Ambiguous(Vec<usize>),
    /// No rule identified an existing option.
    Unparsable,
}

impl ParsedAnswer {
    /// The chosen option index, if exactly one was identified.
    pub fn index(&self) -> Option<usize> {
        match self {
            ParsedAnswer::Choice { index, .. } => Some(*index),
            _ => None,
        }
    }
}

fn anchor_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)\b(?:answer(?:\s+is|\s+would\s+be|\s+should\s+be)?|(?:correct|right|best)\s+(?:option|choice)(?:\s+is)?)\s*[:=]?[ \t]*",
        )
        .expect("anchor regex")
    })
}

/// After an anchor: optional emphasis, `option`/`choice`, then a bracketed letter (group 1)
/// or a plain letter (group 2), optional emphasis; the rest is checked by [`letter_ends`].
fn letter_after_anchor_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^[\*_`\s]*(?i:option\s+|choice\s+)?[\*_`]*(?:[\(\[]([A-Za-z])[\)\]]|([A-Za-z]))[\*_`]*")
            .expect("letter regex")
    })
}

/// After an anchored letter: a list separator or conjunction (`,`, `/`, `&`, `or`, `and`,
/// `and/or`) then another letter, bracketed (group 1) or plain (group 2; checked by
/// [`letter_ends`]).
fn hedge_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^[\*_`]*\s*(?:,|/|&|(?i:\s(?:and/or|or|and)\s))\s*(?i:(?:option|choice)\s+)?[\*_`]*(?:[\(\[]([A-Za-z])[\)\]]|([A-Za-z]))[\*_`]*")
            .expect("hedge regex")
    })
}

fn bare_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:[\(\[]([A-Za-z])[\)\]]|([A-Za-z]))[\.\):]?$").expect("bare regex")
    })
}

fn option_letter_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)^(?:option|choice)\s+(?:[\(\[]([A-Z])[\)\]]|([A-Z]))[\.\)]?$")
            .expect("option regex")
    })
}

fn leading_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:[\(\[]([A-Za-z])[\)\]]|([A-Za-z])([\.\):]))(?:\s|$)")
            .expect("leading regex")
    })
}

/// Lower-case letters that are English words on their own (`a`, `i`): read as a letter only
/// in brackets or with a delimiter.
fn is_word_letter(c: char) -> bool {
    matches!(c, 'a' | 'i')
}

/// Strips surrounding whitespace and Markdown emphasis (`*`, `_`, backticks).
fn strip_emphasis(s: &str) -> &str {
    s.trim()
        .trim_matches(|c: char| matches!(c, '*' | '_' | '`') || c.is_whitespace())
}

/// Whether a plain letter followed by `rest` stands alone (is not the start of a word): end
/// of text, punctuation, or whitespace — the last only for letters that are not English
/// words when lower-case (`"the answer is a cell"` is not option A).
fn letter_ends(c: char, rest: &str) -> bool {
    match rest.chars().next() {
        None => true,
        Some(n) if n.is_alphanumeric() || n == '_' => false,
        Some(n) if n.is_whitespace() => {
            c.is_ascii_uppercase() || !is_word_letter(c) || rest.trim().is_empty()
        }
        Some(_) => true,
    }
}

/// Lower-cases, trims surrounding quotes/asterisks/punctuation and collapses whitespace.
fn norm(s: &str) -> String {
    let t = s.trim().trim_matches(|c: char| {
        c.is_whitespace() || matches!(c, '"' | '\'' | '*' | '`' | '.' | '!' | ',' | ';')
    });
    t.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The unique option whose normalized text equals `text`.
fn match_option_text(text: &str, options: &[String]) -> Option<usize> {
    let t = norm(text);
    if t.is_empty() {
        return None;
    }
    let hits: Vec<usize> = options
        .iter()
        .enumerate()
        .filter(|(_, o)| {
            let o = norm(o);
            !o.is_empty() && o == t
        })
        .map(|(i, _)| i)
        .collect();
    match hits.as_slice() {
        [i] => Some(*i),
        _ => None,
    }
}

/// Parses a model's reply to a lettered multiple-choice prompt (rules in the module docs).
///
/// `options` are the option texts in letter order (A = index 0); only letters
/// `A..A+options.len()` are accepted.
pub fn parse_answer(output: &str, options: &[String]) -> ParsedAnswer {
    let n = options.len().min(crate::MAX_OPTIONS);
    let idx = |c: char| -> Option<usize> {
        let i = (c.to_ascii_uppercase() as u32).checked_sub('A' as u32)? as usize;
        (i < n).then_some(i)
    };
    let first = |m: Option<regex::Match<'_>>| m.and_then(|m| m.as_str().chars().next());
    let t = strip_emphasis(output);
    // 1. Bare letter.
    if let Some(c) = bare_re().captures(t) {
        let bracketed = first(c.get(1));
        let ch = bracketed.or_else(|| first(c.get(2))).unwrap_or('?');
        if bracketed.is_none() && ch.is_ascii_lowercase() {
            // A plain lower-case letter may also be an option's text ("e" among b, e, k).
            let delimited = t.len() > 1;
            let as_letter = (!is_word_letter(ch) || delimited)
                .then(|| idx(ch))
                .flatten();
            return match (as_letter, match_option_text(t, options)) {
                (Some(i), Some(j)) if i != j => ParsedAnswer::Ambiguous(vec![i.min(j), i.max(j)]),
                (Some(index), _) => ParsedAnswer::Choice {
                    index,
                    rule: "bare",
                },
                (None, Some(index)) => ParsedAnswer::Choice {
                    index,
                    rule: "whole-text",
                },
                (None, None) => ParsedAnswer::Unparsable,
            };
        }
        return match idx(ch) {
            Some(index) => ParsedAnswer::Choice {
                index,
                rule: "bare",
            },
            None => ParsedAnswer::Unparsable,
        };
    }
    // 2. Anchored findings.
    let mut found: Vec<(usize, &'static str)> = Vec::new();
    for m in anchor_re().find_iter(t) {
        let rest = &t[m.end()..];
        if let Some(c) = letter_after_anchor_re().captures(rest) {
            let after = &rest[c.get(0).map_or(0, |m| m.end())..];
            let letter = match (first(c.get(1)), first(c.get(2))) {
                (Some(b), _) => Some(b),
                (None, Some(p)) if letter_ends(p, after) => Some(p),
                _ => None,
            };
            if let Some(l) = letter {
                if let Some(i) = idx(l) {
                    found.push((i, "anchored-letter"));
                }
                // A hedge names more letters as the answer ("A or B", "A, B", "A and/or C"):
                // each is a finding, so two options make the reply ambiguous.
                let mut tail = after;
                while let Some(c) = hedge_re().captures(tail) {
                    let end = c.get(0).map_or(0, |m| m.end());
                    let more = match (first(c.get(1)), first(c.get(2))) {
                        (Some(b), _) => Some(b),
                        (None, Some(p)) if letter_ends(p, &tail[end..]) => Some(p),
                        _ => None,
                    };
                    match more.and_then(idx) {
                        Some(i) => found.push((i, "anchored-letter")),
                        None => break,
                    }
                    tail = &tail[end..];
                }
                continue;
            }
        }
        let line = rest.lines().next().unwrap_or("");
        if let Some(i) = match_option_text(line, options) {
            found.push((i, "anchored-text"));
        }
    }
    let mut distinct: Vec<usize> = found.iter().map(|f| f.0).collect();
    distinct.sort_unstable();
    distinct.dedup();
    match distinct.len() {
        1 => {
            return ParsedAnswer::Choice {
                index: distinct[0],
                rule: found[0].1,
            }
        }
        0 => {}
        _ => return ParsedAnswer::Ambiguous(distinct),
    }
    // 3. "option B".
    if let Some(c) = option_letter_re().captures(t) {
        if let Some(index) = first(c.get(1)).or_else(|| first(c.get(2))).and_then(idx) {
            return ParsedAnswer::Choice {
                index,
                rule: "option-letter",
            };
        }
    }
    // 4. Leading letter with a delimiter.
    if let Some(c) = leading_re().captures(t) {
        let ch = match (
            first(c.get(1)),
            first(c.get(2)),
            c.get(3).map(|m| m.as_str()),
        ) {
            (Some(b), ..) => Some(b),
            // "a. ..." and "i: ..." are prose; "a) 2" is a list item.
            (None, Some(p), Some(d))
                if p.is_ascii_uppercase() || !is_word_letter(p) || d == ")" =>
            {
                Some(p)
            }
            _ => None,
        };
        if let Some(index) = ch.and_then(idx) {
            return ParsedAnswer::Choice {
                index,
                rule: "leading-letter",
            };
        }
    }
    // 5. Whole text equals an option.
    if let Some(index) = match_option_text(t, options) {
        return ParsedAnswer::Choice {
            index,
            rule: "whole-text",
        };
    }
    ParsedAnswer::Unparsable
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Issue 56 case 5: a reply naming two options as the answer was credited as the first.
    #[test]
    fn hedged_answers_naming_two_options_are_ambiguous() {
        let o = opts(&["1", "2", "3", "4"]);
        for reply in [
            "The answer is A or B",
            "Answer: A, B",
            "Answer: A,B",
            "answer: (A) and/or (B)",
            "The correct option is A / B.",
            "Answer: **A** or **B**",
            "The answer is A and B.",
        ] {
            assert_eq!(
                parse_answer(reply, &o),
                ParsedAnswer::Ambiguous(vec![0, 1]),
                "{reply}"
            );
        }
        // Not hedges: prose after the letter, a negated option, a repeated letter.
        for (reply, want) in [
            ("The answer is A, because 1 < 2", 0),
            ("Answer: B, not C", 1),
            ("Answer: A, a small number", 0),
            ("Answer: A or A", 0),
        ] {
            assert_eq!(parse_answer(reply, &o).index(), Some(want), "{reply}");
        }
    }

    /// The CASES 32 table, for the 4-option and the 10-option (A..J) variants.
    #[test]
    fn case32_parsing_table() {
        let four = opts(&["2", "4", "6", "All of the above"]);
        let ten = opts(&[
            "2",
            "4",
            "6",
            "All of the above",
            "8",
            "10",
            "12",
            "14",
            "16",
            "18",
        ]);
        let table: &[(&str, Option<usize>)] = &[
            ("ANSWER: D", Some(3)),
            ("ANSWER: All of the above", Some(3)),
            ("The answer is B. A is a tempting distractor.", Some(1)),
            ("I think the answer is C.", Some(2)),
            ("Answer: (C)\nAnswer: C", Some(2)),
            ("a", None),
            ("None of these", None),
        ];
        for options in [&four, &ten] {
            for (output, want) in table {
                let got = parse_answer(output, options);
                assert_eq!(
                    got.index(),
                    *want,
                    "{output:?} with {} options",
                    options.len()
                );
            }
        }
    }

    #[test]
    fn more_shapes() {
        let four = opts(&["2", "4", "6", "None of the above"]);
        let p = |s: &str| parse_answer(s, &four);
        assert_eq!(p("B").index(), Some(1));
        assert_eq!(p(" (B) ").index(), Some(1));
        assert_eq!(p("B.").index(), Some(1));
        assert_eq!(p("**Answer:** C").index(), Some(2));
        assert_eq!(p("The correct option is (A)").index(), Some(0));
        assert_eq!(p("B. 4").index(), Some(1));
        assert_eq!(p("(D) None of the above").index(), Some(3));
        // An option whose text is "None of the above" is an option, not the letter N.
        assert_eq!(p("None of the above").index(), Some(3));
        assert_eq!(p("Answer: None of the above").index(), Some(3));
        // Letters that do not exist.
        assert_eq!(p("E"), ParsedAnswer::Unparsable);
        assert_eq!(p("Answer: E"), ParsedAnswer::Unparsable);
        // Conflicting anchors.
        assert_eq!(
            p("Answer: A\nAnswer: B"),
            ParsedAnswer::Ambiguous(vec![0, 1])
        );
        // Letters inside prose are not answers.
        assert_eq!(p("A cell is the unit of life."), ParsedAnswer::Unparsable);
        assert_eq!(p(""), ParsedAnswer::Unparsable);
    }

    #[test]
    fn chat_model_shapes() {
        let four = opts(&["2", "4", "6", "8"]);
        let p = |s: &str| parse_answer(s, &four).index();
        for (reply, want) in [
            ("**B**", Some(1)),
            ("__C__", Some(2)),
            ("`D`", Some(3)),
            ("b", Some(1)),
            ("(a)", Some(0)),
            ("a)", Some(0)),
            ("answer: b", Some(1)),
            ("Answer: a", Some(0)),
            ("The correct option is (b).", Some(1)),
            ("**Answer:** **C**", Some(2)),
            ("the answer is d because 8 is even", Some(3)),
            ("option c", Some(2)),
            ("Choice (B)", Some(1)),
            ("b) 4", Some(1)),
            // Not letters: the article "a", a word starting with a letter, prose.
            ("a", None),
            ("i", None),
            ("banana", None),
            ("The answer is a cell.", None),
            ("a. first of all", None),
        ] {
            assert_eq!(p(reply), want, "{reply:?}");
        }
        // "i" is not option I even with ten options; "I" is.
        let ten: Vec<String> = (0..10).map(|i| format!("o{i}")).collect();
        assert_eq!(parse_answer("i", &ten), ParsedAnswer::Unparsable);
        assert_eq!(parse_answer("I", &ten).index(), Some(8));
        // A lower-case letter that is also another option's text is ambiguous.
        let o = opts(&["c", "x", "y", "z"]);
        assert_eq!(parse_answer("c", &o), ParsedAnswer::Ambiguous(vec![0, 2]));
    }

    #[test]
    fn empty_option_keeps_later_letters() {
        let o = opts(&["b", "", "e", "k"]);
        assert_eq!(parse_answer("Answer: C", &o).index(), Some(2));
        assert_eq!(parse_answer("e", &o).index(), Some(2));
        // The empty option never matches empty text.
        assert_eq!(parse_answer("Answer: ", &o), ParsedAnswer::Unparsable);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_stays_in_range(s in ".{0,80}", n in 1usize..12) {
            let o: Vec<String> = (0..n).map(|i| format!("opt{i}")).collect();
            match parse_answer(&s, &o) {
                ParsedAnswer::Choice { index, .. } => proptest::prop_assert!(index < n),
                ParsedAnswer::Ambiguous(v) => proptest::prop_assert!(v.iter().all(|i| *i < n)),
                ParsedAnswer::Unparsable => {}
            }
        }
    }
}
