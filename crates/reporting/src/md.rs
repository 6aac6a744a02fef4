//! Names in Markdown: every user-derived name (run, dataset, strategy, retriever and reader
//! names, tokenizer paths) that summary.md or compare.md (the pull-request comment) prints
//! goes through [`Text`] or [`Code`], so that no name can add a table column, end a row, open
//! a link, emphasis or HTML, or close a code span.
//!
//! The rules follow the GitHub Flavored Markdown spec (0.29-gfm): any ASCII punctuation may be
//! backslash-escaped (§2.4); in a table, `\|` is a literal pipe also inside code spans (§4.10,
//! "tables extension"); a code span is closed only by a backtick run of its opening length
//! (§6.1). Line breaks end a table row whatever precedes them, so they become spaces.

use std::fmt;

/// Characters that change how a table cell renders: the pipe splits cells, the others open
/// emphasis, links, images, HTML, entities, strikethrough or code. Other ASCII punctuation
/// (`-`, `.`, `=`, `,`, `(`, `)`, `:`) stays as is, so that names like `fixed-100` read the same
/// in a terminal; a sweep variant `fixed[size=100]` prints as `fixed\[size=100\]`.
const SPECIAL: &[char] = &[
    '\\', '|', '`', '*', '_', '[', ']', '<', '>', '&', '~', '!', '#',
];

/// A name as Markdown text: [`SPECIAL`] characters backslash-escaped, line breaks and other
/// control characters as spaces.
#[derive(Debug, Clone, Copy)]
pub struct Text<'a>(pub &'a str);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if SPECIAL.contains(&c) {
                write!(f, "\\{c}")?;
            } else if c.is_control() {
                f.write_str(" ")?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// A name as an inline code span: fenced by one more backtick than the longest backtick run
/// inside it (padded with spaces when it starts or ends with a backtick), pipes as `\|` (a
/// table cell's escape, which GFM applies inside code spans too), line breaks and other control
/// characters as spaces.
#[derive(Debug, Clone, Copy)]
pub struct Code<'a>(pub &'a str);

impl fmt::Display for Code<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clean: String = self
            .0
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let longest = clean.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat(longest + 1);
        let pad = if clean.starts_with('`') || clean.ends_with('`') || clean.is_empty() {
            " "
        } else {
            ""
        };
        write!(f, "{fence}{pad}{}{pad}{fence}", clean.replace('|', "\\|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells of a GFM table row: split at pipes not preceded by a backslash.
    fn cells(row: &str) -> usize {
        let mut n = 0;
        let mut prev = ' ';
        for c in row.chars() {
            if c == '|' && prev != '\\' {
                n += 1;
            }
            prev = c;
        }
        n
    }

    #[test]
    fn names_cannot_add_columns_rows_links_or_close_code() {
        let hostile = "a|b\nc `x` [l](http://e) <img src=x> **b** \\| ~~s~~ &lt;";
        let row = format!("| {} | {} |", Text(hostile), Code(hostile));
        assert_eq!(cells(&row), 3, "{row}");
        assert!(!row.contains('\n'));
        let t = Text(hostile).to_string();
        // Every special character is escaped: preceded by an odd run of backslashes.
        let chars: Vec<char> = t.chars().collect();
        for (i, c) in chars.iter().enumerate() {
            if SPECIAL.contains(c) && *c != '\\' {
                let run = chars[..i].iter().rev().take_while(|&&b| b == '\\').count();
                assert!(run % 2 == 1, "{c:?} at {i} unescaped in {t}");
            }
        }
        assert_eq!(Text("fixed-100").to_string(), "fixed-100");
        assert_eq!(Text("fixed[size=100]").to_string(), "fixed\\[size=100\\]");
        assert_eq!(Code("bm25").to_string(), "`bm25`");
        assert_eq!(Code("a`b").to_string(), "``a`b``");
        assert_eq!(Code("`x").to_string(), "`` `x ``");
        assert_eq!(Code("a|b").to_string(), "`a\\|b`");
    }
}
