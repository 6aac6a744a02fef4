//! Excerpts of a model's reply as exact byte spans of their document.
//!
//! **Rule** ([`locate`]). The excerpt is trimmed. It is looked for in the passage the model
//! was shown: first verbatim; when absent, with whitespace normalised (every run of
//! Unicode whitespace, in the excerpt and in the text, read as one space) — normalisation
//! only *finds* it: the stored span is the document's own bytes from the first to the last
//! matched character, so its text is exactly that slice (which may differ from the excerpt in
//! whitespace). Not in the passage → [`Located::NotFound`] (also when it happens to occur
//! elsewhere in the document: the model did not see that text). In the passage but occurring
//! more than once in the whole document (whitespace-normalised, overlapping occurrences
//! counted) → [`Located::Ambiguous`]: a span could not say which occurrence is the evidence,
//! and a retriever finding the other one would be scored wrong.

use chunker::Span;

/// Where an excerpt is, or why it has no span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Located {
    /// Its unique span in the document; `normalised` when only whitespace-normalised
    /// matching found it.
    Found {
        /// Byte span in the document.
        span: Span,
        /// Found by whitespace-normalised matching, not verbatim.
        normalised: bool,
    },
    /// Not in the passage.
    NotFound,
    /// In the passage, and `n` times in the document.
    Ambiguous(usize),
}

/// A whitespace-normalised view of a text: `text` with each run of whitespace as one space,
/// and `map[i]` = the original byte offset of the character starting at byte `i` of `text`.
struct Normalised {
    text: String,
    map: Vec<usize>,
}

fn normalise(s: &str, base: usize) -> Normalised {
    let mut text = String::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len());
    let mut in_space = false;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            if !in_space {
                text.push(' ');
                map.push(base + i);
            }
            in_space = true;
        } else {
            let before = text.len();
            text.push(c);
            map.extend(std::iter::repeat_n(base + i, text.len() - before));
            in_space = false;
        }
    }
    Normalised { text, map }
}

/// `needle` with whitespace runs as one space, trimmed.
pub fn normalise_text(needle: &str) -> String {
    needle.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Start offsets of every (overlapping) occurrence of `needle` in `hay`.
fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    if needle.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        out.push(from + i);
        let step = hay[from + i..].chars().next().map_or(1, char::len_utf8);
        from += i + step;
    }
    out
}

/// Locates `excerpt` in `passage` of document `text` (module docs).
pub fn locate(text: &str, passage: Span, excerpt: &str) -> Located {
    let e = excerpt.trim();
    let ne = normalise_text(e);
    if ne.is_empty() {
        return Located::NotFound;
    }
    let in_doc = occurrences(&normalise(text, 0).text, &ne).len();
    let slice = &text[passage.start..passage.end];
    if let Some(&i) = occurrences(slice, e).first() {
        if in_doc > 1 {
            return Located::Ambiguous(in_doc);
        }
        let start = passage.start + i;
        return Located::Found {
            span: Span {
                start,
                end: start + e.len(),
            },
            normalised: false,
        };
    }
    let n = normalise(slice, passage.start);
    let Some(&i) = occurrences(&n.text, &ne).first() else {
        return Located::NotFound;
    };
    if in_doc > 1 {
        return Located::Ambiguous(in_doc);
    }
    let last = i + ne.len() - ne.chars().last().map_or(1, char::len_utf8);
    let last_char = text[n.map[last]..].chars().next().map_or(1, char::len_utf8);
    Located::Found {
        span: Span {
            start: n.map[i],
            end: n.map[last] + last_char,
        },
        normalised: true,
    }
}

/// True when `needle` occurs in `hay`, both lower-cased and whitespace-normalised (the
/// answer-in-excerpt and distractor checks).
pub fn contains_loose(hay: &str, needle: &str) -> bool {
    find_loose(hay, needle).is_some()
}

/// The first occurrence of `needle` in `hay` compared lower-cased and whitespace-normalised,
/// as the byte range of `hay`'s own text (from the first to the last matched character): the
/// answer as the document writes it (`100\u{a0}euros`, `electrical\nconductivity`), which
/// answer recall (lower-cased, exact) then finds wherever the evidence is retrieved.
pub fn find_loose(hay: &str, needle: &str) -> Option<(usize, usize)> {
    let n = normalise_text(&needle.to_lowercase());
    if n.is_empty() {
        return None;
    }
    // Lower-case character by character, keeping each output byte's source character.
    let mut text = String::with_capacity(hay.len());
    let mut map: Vec<(usize, usize)> = Vec::with_capacity(hay.len());
    let mut in_space = false;
    for (i, c) in hay.char_indices() {
        if c.is_whitespace() {
            if !in_space {
                text.push(' ');
                map.push((i, c.len_utf8()));
            }
            in_space = true;
            continue;
        }
        in_space = false;
        let before = text.len();
        text.extend(c.to_lowercase());
        map.extend(std::iter::repeat_n((i, c.len_utf8()), text.len() - before));
    }
    let at = text.find(&n)?;
    let last = at + n.len() - 1;
    Some((map[at].0, map[last].0 + map[last].1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(t: &str) -> Span {
        Span {
            start: 0,
            end: t.len(),
        }
    }

    #[test]
    fn verbatim_normalised_missing_and_ambiguous() {
        let t = "Rust is iron oxide.\n\nIt  forms   when iron meets water. Iron is a métal.";
        match locate(t, whole(t), " Rust is iron oxide. ") {
            Located::Found { span, normalised } => {
                assert_eq!(&t[span.start..span.end], "Rust is iron oxide.");
                assert!(!normalised);
            }
            o => panic!("{o:?}"),
        }
        // Whitespace differs: found, and the span is the document's own bytes.
        match locate(t, whole(t), "It forms when\niron meets water.") {
            Located::Found { span, normalised } => {
                assert_eq!(
                    &t[span.start..span.end],
                    "It  forms   when iron meets water."
                );
                assert!(normalised);
            }
            o => panic!("{o:?}"),
        }
        // Ends in a multi-byte character.
        match locate(t, whole(t), "a  métal.") {
            Located::Found { span, .. } => assert_eq!(&t[span.start..span.end], "a métal."),
            o => panic!("{o:?}"),
        }
        assert_eq!(locate(t, whole(t), "Rust is copper."), Located::NotFound);
        assert_eq!(locate(t, whole(t), "   "), Located::NotFound);
        assert_eq!(locate(t, whole(t), "iron"), Located::Ambiguous(2));
        // In the document but outside the passage: not found.
        let p = Span { start: 0, end: 19 };
        assert_eq!(locate(t, p, "Iron is a métal."), Located::NotFound);
    }

    #[test]
    fn loose_matches_map_back_to_the_text() {
        let t = "costs 100\u{a0}Euros, or electrical \nconductivity.";
        let (a, b) = find_loose(t, "100 euros").unwrap();
        assert_eq!(&t[a..b], "100\u{a0}Euros");
        let (a, b) = find_loose(t, "Electrical Conductivity").unwrap();
        assert_eq!(&t[a..b], "electrical \nconductivity");
        // What answer recall compares (lower-cased, exact) now finds it in the text.
        assert!(t.to_lowercase().contains(&t[a..b].to_lowercase()));
        assert_eq!(find_loose(t, "  "), None);
        assert_eq!(find_loose(t, "copper"), None);
    }

    #[test]
    fn loose_containment() {
        assert!(contains_loose("Rust is Iron\n oxide.", "iron oxide"));
        assert!(!contains_loose("Rust is iron oxide.", "copper"));
        assert!(!contains_loose("Rust", "  "));
    }
}
