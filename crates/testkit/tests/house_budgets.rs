//! The house's budgets (ARCHITECTURE.md, "No import circles inside a crate"; issue 57), checked
//! over every `crates/*/src` file so they cannot regress silently:
//!
//! - **no import circle** between the top-level modules of a crate (an edge is a `crate::X`
//!   path outside comments and tests);
//! - **no file over 1,000 non-test lines** (lines before the first top-level `#[cfg(test)]`),
//!   except the files in [`FILE_CEILINGS`], each held at the size it had when the budget was
//!   set: they may shrink, never grow, and leave the list once under the budget;
//! - **functions over 80 lines** (from `fn` to its closing brace, outside tests) no more than
//!   [`LONG_FUNCTIONS_CEILING`].
//!
//! Lines are counted on the text with strings, characters and comments blanked, so braces in
//! them do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Files over the 1,000-line budget and the most non-test lines each may have (the sizes on
/// 2026-12-07, when the budget was set).
const FILE_CEILINGS: &[(&str, usize)] = &[
    ("crates/datasets/src/openstax.rs", 1800),
    ("crates/reporting/src/html.rs", 1303),
    ("crates/datasets/src/openstax/cnxml.rs", 1384),
    ("crates/generate/src/lib.rs", 1169),
    ("crates/chunker/src/segment.rs", 1154),
    ("crates/embed/src/bert.rs", 1148),
    ("crates/reporting/src/plots.rs", 1135),
    ("crates/chunker/src/anchor.rs", 1072),
    ("crates/chunker/src/maxmin.rs", 1045),
];

/// The most functions over 80 lines the crates may hold (61 when the budget was set, 52 now; the
/// issue's target is 30).
const LONG_FUNCTIONS_CEILING: usize = 52;

/// Every `.rs` file under `crates/*/src`, relative to the workspace.
fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = testkit::workspace();
    let mut out = Vec::new();
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .collect();
    crates.sort_by_key(|e| e.path());
    for c in crates {
        let src = c.path().join("src");
        if src.is_dir() {
            walk(&src, &mut out);
        }
    }
    out
}

/// The text before the first top-level `#[cfg(test)]`, with string and char literals and
/// comments replaced by spaces (newlines kept).
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("\n#[cfg(test)]") {
        Some(i) => &text[..i + 1],
        None => &text[..],
    };
    blank(text)
}

/// `text` with comments, strings (also raw) and char literals blanked.
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let wipe = |out: &mut Vec<u8>, from: usize, to: usize| {
        for x in &mut out[from..to] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        let prev_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            wipe(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let end = find(b, i + 2, b"*/").map_or(b.len(), |p| p + 2);
            wipe(&mut out, i, end);
            i = end;
        } else if !prev_ident && (rest.starts_with(b"r#") || rest.starts_with(b"r\"")) {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) == Some(&b'"') {
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let end = find(b, i + 2 + hashes, &close).map_or(b.len(), |p| p + close.len());
                wipe(&mut out, i, end);
                i = end;
            } else {
                i += 1;
            }
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            wipe(&mut out, i, end);
            i = end;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{..}', '\''); a lifetime ('a) is left alone.
            let len = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                // `i` is on a char boundary (at an ASCII quote), so the next char decodes.
                let ch = text.get(i + 1..).and_then(|s| s.chars().next());
                ch.and_then(|c| {
                    (rest.get(1 + c.len_utf8()) == Some(&b'\'')).then(|| 2 + c.len_utf8())
                })
            };
            match len {
                Some(n) => {
                    wipe(&mut out, i, i + n);
                    i += n;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// The crate and top-level module a source file belongs to (`lib`/`main` is the root, `-`).
fn module_of(path: &Path) -> (String, String) {
    let root = testkit::workspace().join("crates");
    let rel = path.strip_prefix(&root).unwrap();
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let krate = parts[0].clone();
    let inner = &parts[2..];
    let first = inner[0].trim_end_matches(".rs").to_string();
    let module = if inner.len() == 1 && (first == "lib" || first == "main") {
        "-".to_string()
    } else {
        first
    };
    (krate, module)
}

#[test]
fn no_import_circle_between_top_level_modules() {
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for p in sources() {
        let (krate, module) = module_of(&p);
        let code = code_of(&p);
        let g = graphs.entry(krate).or_default();
        let edges = g.entry(module.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            if i > 0
                && (code.as_bytes()[i - 1].is_ascii_alphanumeric()
                    || code.as_bytes()[i - 1] == b'_'
                    || code.as_bytes()[i - 1] == b'$')
            {
                continue;
            }
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != module {
                edges.insert(name);
            }
        }
    }
    let mut circles = Vec::new();
    for (krate, g) in &graphs {
        // A module is on a circle when it reaches itself through the modules of its crate.
        for start in g.keys() {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<&String> = g[start].iter().filter(|m| g.contains_key(*m)).collect();
            while let Some(m) = stack.pop() {
                if !seen.insert(m) {
                    continue;
                }
                if m == start {
                    circles.push(format!("{krate}::{start}"));
                    break;
                }
                stack.extend(g[m].iter().filter(|x| g.contains_key(*x)));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "top-level modules on an import circle (move what they share into the lower one or a \
         module of its own): {circles:?}"
    );
}

#[test]
fn no_file_grows_past_its_line_budget() {
    let root = testkit::workspace();
    let mut over = Vec::new();
    for p in sources() {
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let lines = code_of(&p).lines().count();
        let ceiling = FILE_CEILINGS
            .iter()
            .find(|(f, _)| *f == rel)
            .map_or(1000, |(_, n)| *n);
        if lines > ceiling {
            over.push(format!("{rel}: {lines} non-test lines (budget {ceiling})"));
        }
        if ceiling > 1000 && lines <= 1000 {
            over.push(format!(
                "{rel}: {lines} lines, under the budget now: remove it from FILE_CEILINGS"
            ));
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

/// Every function's length in lines (from its `fn` line to its closing brace), outside tests.
fn function_lengths() -> Vec<(usize, String)> {
    let root = testkit::workspace();
    let mut out = Vec::new();
    for p in sources() {
        let code = code_of(&p);
        let bytes = code.as_bytes();
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut line_starts = vec![0];
        line_starts.extend(code.match_indices('\n').map(|(i, _)| i + 1));
        for (ln, &start) in line_starts.iter().enumerate() {
            let line = &code[start..];
            let line = &line[..line.find('\n').unwrap_or(line.len())];
            let t = line.trim_start();
            let t = t
                .strip_prefix("pub(crate) ")
                .or_else(|| t.strip_prefix("pub(super) "))
                .or_else(|| t.strip_prefix("pub "))
                .unwrap_or(t);
            let t = t.strip_prefix("const ").unwrap_or(t);
            let t = t.strip_prefix("async ").unwrap_or(t);
            let Some(rest) = t.strip_prefix("fn ") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // The body: the first `{` at paren depth 0 after the name; a `;` first means none.
            let mut i = start + (line.len() - rest.len());
            let mut depth = 0i32;
            let body = loop {
                match bytes.get(i) {
                    None => break None,
                    Some(b'(') | Some(b'[') => depth += 1,
                    Some(b')') | Some(b']') => depth -= 1,
                    Some(b';') if depth == 0 => break None,
                    Some(b'{') if depth == 0 => break Some(i),
                    _ => {}
                }
                i += 1;
            };
            let Some(open) = body else { continue };
            let mut d = 0;
            let mut end = open;
            for (k, &c) in bytes.iter().enumerate().skip(open) {
                if c == b'{' {
                    d += 1;
                } else if c == b'}' {
                    d -= 1;
                    if d == 0 {
                        end = k;
                        break;
                    }
                }
            }
            let last = code[..end].matches('\n').count();
            out.push((last - ln + 1, format!("{rel}:{} {name}", ln + 1)));
        }
    }
    out.sort();
    out
}

#[test]
fn long_functions_stay_within_the_budget() {
    let long: Vec<String> = function_lengths()
        .into_iter()
        .rev()
        .filter(|(n, _)| *n > 80)
        .map(|(n, f)| format!("{n} {f}"))
        .collect();
    assert!(
        long.len() <= LONG_FUNCTIONS_CEILING,
        "{} functions over 80 lines (budget {LONG_FUNCTIONS_CEILING}); split the new ones:\n{}",
        long.len(),
        long.join("\n")
    );
}
