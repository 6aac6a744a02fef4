//! Robust answer-letter extraction from free-form model output (../shared/cases/CASES.md
//! case 32), for servers that return text without log-probs.
//!
//! Rules, in order (letters are upper-case A..Z and only those that exist count):
//! 1. **Bare letter**: the whole trimmed output is one letter, optionally in `()`/`[]`,
//!    optionally followed by `.`, `)` or `:` — `"B"`, `"(B)"`, `"B."`. A lower-case `"a"` is
//!    not a letter.
//! 2. **Anchored**: every occurrence of an anchor — `answer` (optionally followed by `is`,
//!    `would be`, `should be`) or `correct/right/best option/choice`, then an optional `:`/`=`
//!    — is followed either by a letter that is not the start of a word (`"Answer: (C)"`,
//!    `"the answer is B."`, but not the `A` of `"Answer: All of the above"`), or by text that
//!    equals an option's text (`"ANSWER: All of the above"` → that option). All anchored
//!    findings must agree; different options are [`ParsedAnswer::Ambiguous`].
//! 3. **Leading letter**: the output starts with a letter followed by `.`, `)` or `:`
//!    (`"B. 4"`, `"(C) 6"`), when no anchor was found.
//! 4. **Whole text**: the whole output equals one option's text (case- and
//!    punctuation-insensitive), when nothing else matched.
//!
//! Anything else is [`ParsedAnswer::Unparsable`]: an unanchored letter inside prose (`"I think
//! ..."` never reads as `I`), a letter past the last option, text matching no option (`"None of
//! these"`). Unparsable and ambiguous outputs are counted as wrong by the caller
//! ([`crate::ReaderOutput::invalid`]) and counted separately ([`crate::OpenAiStats`]).

use regex::Regex;
use std::sync::OnceLock;

/// What [`parse_answer`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedAnswer {
    /// One option, identified by `rule` (`"bare"`, `"anchored-letter"`, `"anchored-text"`,
    /// `"leading-letter"`, `"whole-text"`).
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

fn letter_after_anchor_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\**\s*(?:option\s+|choice\s+)?[\(\[]?([A-Z])(?:[\)\]])?\**(?:[^\w]|$)")
            .expect("letter regex")
    })
}

fn bare_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[\(\[]?([A-Z])[\)\]]?[\.\):]?$").expect("bare regex"))
}

fn leading_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:\(([A-Z])\)|\[([A-Z])\]|([A-Z])[\.\):])(?:\s|$)").expect("leading regex")
    })
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

/// The unique option whose normalized text equals `text` (also accepting a leading
/// `"D) "`/`"D. "` letter prefix naming that same option).
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
        let i = (c as u32).checked_sub('A' as u32)? as usize;
        (i < n).then_some(i)
    };
    let t = output.trim();
    // 1. Bare letter.
    if let Some(c) = bare_re().captures(t) {
        let ch = c[1].chars().next().unwrap_or('?');
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
            if let Some(i) = c[1].chars().next().and_then(idx) {
                found.push((i, "anchored-letter"));
            }
            continue;
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
    // 3. Leading letter with a delimiter.
    if let Some(c) = leading_re().captures(t) {
        let ch = c
            .iter()
            .skip(1)
            .flatten()
            .next()
            .and_then(|m| m.as_str().chars().next());
        if let Some(index) = ch.and_then(idx) {
            return ParsedAnswer::Choice {
                index,
                rule: "leading-letter",
            };
        }
    }
    // 4. Whole text equals an option.
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
