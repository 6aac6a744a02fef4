//! Duplicate mapping keys in YAML, found with their lines before the config is deserialised.
//!
//! YAML 1.2 requires the keys of a mapping to be unique, but serde_yaml deserialises a mapping
//! into a `BTreeMap` by letting the last duplicate win, silently: two strategies named `f`
//! become one. This pass walks the event stream of a real YAML parser (yaml-rust2, which
//! reports a line and column per event) and reports every mapping key that occurs twice in
//! the same mapping, at any depth, with the lines of both occurrences.
//!
//! Syntax errors are left to serde_yaml, whose messages carry the key path; this pass then
//! reports nothing.

use std::collections::HashMap;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// One duplicate key: its dotted path (`strategies.f`), and the 1-based lines of the first
/// and the repeated occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// Dotted path of the mapping holding the key (empty for the top level).
    pub parent: String,
    /// The key as written (scalar value).
    pub key: String,
    /// Line of the first occurrence (1-based).
    pub first_line: usize,
    /// Line of the repeated occurrence (1-based).
    pub line: usize,
}

impl std::fmt::Display for DuplicateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.parent.is_empty() {
            "at the top level".to_string()
        } else {
            format!("in `{}`", self.parent)
        };
        write!(
            f,
            "duplicate key `{}` {at} at line {} (first at line {}); keys of a mapping must be \
             unique: rename or remove one",
            self.key, self.line, self.first_line
        )
    }
}

enum Frame {
    /// A mapping: keys seen (with their lines), whether the next node is a key, the pending
    /// key (for the path of a nested value), and the mapping's own path.
    Mapping {
        keys: HashMap<String, usize>,
        expect_key: bool,
        current: String,
        path: String,
    },
    /// A sequence: the next item's index, and the sequence's own path.
    Sequence { index: usize, path: String },
}

#[derive(Default)]
struct Scan {
    stack: Vec<Frame>,
    found: Vec<DuplicateKey>,
    /// Every mapping key: its path segments and 1-based line and column.
    keys: Vec<(Vec<String>, usize, usize)>,
}

impl Scan {
    /// The position of the first key at `path`. Keys are matched on their joined form: a key
    /// containing a dot (a sweep path) splits into segments like the path does.
    fn position(&self, path: &[&str]) -> Option<(usize, usize)> {
        let want = path.join(".");
        self.keys
            .iter()
            .find(|(segments, ..)| segments.join(".") == want)
            .map(|&(_, line, col)| (line, col))
    }

    /// The path a new node at the current position gets, and records that a value (or, in
    /// key position, a key that is an alias or a collection: a complex key, not checked) was
    /// seen.
    fn child_path(&mut self) -> String {
        match self.stack.last_mut() {
            None => String::new(),
            Some(Frame::Mapping {
                expect_key,
                current,
                path,
                ..
            }) => {
                if *expect_key {
                    *expect_key = false;
                    *current = "<complex key>".into();
                    return join(path, current);
                }
                *expect_key = true;
                join(path, current)
            }
            Some(Frame::Sequence { index, path }) => {
                let p = join(path, &index.to_string());
                *index += 1;
                p
            }
        }
    }
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

impl MarkedEventReceiver for Scan {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(value, ..) => {
                if let Some(Frame::Mapping {
                    keys,
                    expect_key,
                    current,
                    path,
                }) = self.stack.last_mut()
                {
                    if *expect_key {
                        let line = mark.line();
                        let mut segments: Vec<String> = if path.is_empty() {
                            Vec::new()
                        } else {
                            path.split('.').map(str::to_string).collect()
                        };
                        segments.push(value.clone());
                        self.keys.push((segments, line, mark.col() + 1));
                        if let Some(&first_line) = keys.get(&value) {
                            self.found.push(DuplicateKey {
                                parent: path.clone(),
                                key: value.clone(),
                                first_line,
                                line,
                            });
                        } else {
                            keys.insert(value.clone(), line);
                        }
                        *current = value;
                        *expect_key = false;
                        return;
                    }
                }
                self.child_path();
            }
            Event::Alias(_) => {
                self.child_path();
            }
            Event::MappingStart(..) => {
                // A mapping used as a key (rare) is treated as a value of an unnamed key.
                let path = self.child_path();
                self.stack.push(Frame::Mapping {
                    keys: HashMap::new(),
                    expect_key: true,
                    current: String::new(),
                    path,
                });
            }
            Event::SequenceStart(..) => {
                let path = self.child_path();
                self.stack.push(Frame::Sequence { index: 0, path });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ => {}
        }
    }
}

/// `message` with serde_yaml's wording of an integer past 64 bits (`invalid type: integer
/// \`N\` as u128, expected usize`, or `expected any YAML value` when read as a YAML value)
/// replaced by what is wrong and the largest value the field takes.
pub fn explain_big_integer(message: &str) -> String {
    let Some(at) = message.find("invalid type: integer `") else {
        return message.to_string();
    };
    let rest = &message[at + "invalid type: integer `".len()..];
    let Some((digits, tail)) = rest.split_once("` as u128, expected ") else {
        return message.to_string();
    };
    let (expected, after) = tail
        .split_once(" at line")
        .map_or((tail, ""), |(e, a)| (e, a));
    let max = match expected {
        "u8" => u64::from(u8::MAX).to_string(),
        "u16" => u64::from(u16::MAX).to_string(),
        "u32" => u64::from(u32::MAX).to_string(),
        "i64" => i64::MAX.to_string(),
        _ => u64::MAX.to_string(),
    };
    format!(
        "{}the number {digits} is too large: this field takes at most {max}{}",
        &message[..at],
        if after.is_empty() {
            String::new()
        } else {
            format!(" at line{after}")
        }
    )
}

/// `message` (a config error) with serde_yaml's internal wording of a wrong-type value for a
/// field of fixed words (`expected a Value::Tagged enum`, `expected a YAML tag starting with
/// '!'`) replaced by the field's accepted values, found by asking `probe` to read `text` with
/// that field set to a string no field accepts (its error lists the values). The message's
/// field path is read from its `ENTRY: field \`F\`:` or `KEY:` prefix; without one, or when the
/// probe names no values, the wording still says what was expected.
pub fn explain_internal(
    text: &str,
    message: &str,
    probe: impl Fn(serde_yaml::Value) -> Option<String>,
) -> String {
    const INTERNAL: [&str; 2] = [
        "expected a Value::Tagged enum",
        "expected a YAML tag starting with '!'",
    ];
    let Some(internal) = INTERNAL.iter().find(|i| message.contains(**i)) else {
        return message.to_string();
    };
    let values = (|| {
        let head = &message[..message.find(": invalid type")?];
        let parts: Vec<&str> = head.split(": ").collect();
        let last = parts.last()?;
        let mut path: Vec<String> = Vec::new();
        if let Some(f) = last
            .strip_prefix("field `")
            .and_then(|f| f.strip_suffix('`'))
        {
            let entry = parts.get(parts.len().checked_sub(2)?)?;
            path.extend(entry.split('.').map(str::to_string));
            path.extend(f.split('.').map(str::to_string));
        } else {
            path.extend(last.split('.').map(str::to_string));
        }
        let mut root: serde_yaml::Value = serde_yaml::from_str(text).ok()?;
        let mut node = &mut root;
        for k in &path {
            node = node.get_mut(k.as_str())?;
        }
        *node = serde_yaml::Value::String("\u{1}".into());
        let err = probe(root)?;
        let at = err.find("expected one of ")?;
        let list = &err[at + "expected one of ".len()..];
        Some(
            list.split(" at line")
                .next()
                .unwrap_or(list)
                .trim_end_matches('.')
                .to_string(),
        )
    })();
    let with = match values {
        Some(v) => format!("expected one of {v}, written as a plain word"),
        None => "expected one of the field's words, written as a plain word (not a list, \
                 mapping, number or boolean)"
            .to_string(),
    };
    message.replace(internal, &with)
}

/// The 1-based line of the first YAML merge key (`<<: *anchor`, block or flow style) in
/// `text`, outside comments and quoted strings' starts; `None` when there is none.
/// chunkbench does not apply merge keys (the YAML 1.1 convention): an entry is read as
/// written, so [`crate::RunConfig::parse_with`] refuses them with this line and the fix.
pub fn merge_key_line(text: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let code = l.split(" #").next().unwrap_or(l);
            let t = code.trim_start().trim_start_matches("- ").trim_start();
            t.starts_with("<<:")
                || t.starts_with("<< :")
                || code.contains("{<<:")
                || code.contains("{ <<:")
                || code.contains(", <<:")
                || code.contains(",<<:")
        })
        .map(|k| k + 1)
}

/// Every duplicate mapping key of `text`, in document order; empty when there is none or when
/// the text is not valid YAML (serde_yaml reports syntax errors).
pub fn duplicate_keys(text: &str) -> Vec<DuplicateKey> {
    let mut scan = Scan::default();
    match Parser::new_from_str(text).load(&mut scan, true) {
        Ok(()) => scan.found,
        Err(_) => Vec::new(),
    }
}

/// The 1-based line and column of the mapping key at `path` (`["strategies", "f", "size"]`),
/// the first occurrence; `None` when it is absent or the text is not valid YAML.
pub fn key_position(text: &str, path: &[&str]) -> Option<(usize, usize)> {
    let mut scan = Scan::default();
    Parser::new_from_str(text).load(&mut scan, true).ok()?;
    scan.position(path)
}

/// Points a serde_yaml error inside a mapping entry at the key it is about. Typed strategy
/// entries are parsed from a value after serde_yaml read them, so serde_yaml reports the
/// mapping holding the entry (`strategies`) at the entry's key. Given `HEAD: BODY at line L
/// column C` where a key under `HEAD` sits at L:C, the message names that entry
/// (`strategies.fixed-100: …`), and when BODY is `unknown field `X`…` or `field `X.Y`: …`, the
/// line and column become those of `X` (`X.Y`) inside the entry. Other messages are returned
/// unchanged.
pub fn relocate(text: &str, message: &str) -> String {
    let Some((head, rest)) = message.split_once(": ") else {
        return message.to_string();
    };
    let Some(at) = rest.rfind(" at line ") else {
        return message.to_string();
    };
    let body = &rest[..at];
    let pos: Vec<usize> = rest[at + " at line ".len()..]
        .split(" column ")
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let [line, col] = pos[..] else {
        return message.to_string();
    };
    let mut scan = Scan::default();
    if Parser::new_from_str(text).load(&mut scan, true).is_err() {
        return message.to_string();
    }
    let entry = scan.keys.iter().find(|(segments, l, c)| {
        (*l, *c) == (line, col) && segments[..segments.len() - 1].join(".") == head
    });
    let Some((entry, ..)) = entry else {
        return message.to_string();
    };
    let field = body
        .strip_prefix("unknown field `")
        .or_else(|| body.strip_prefix("field `"))
        .and_then(|f| f.split('`').next());
    let mut path: Vec<&str> = entry.iter().map(String::as_str).collect();
    let (mut line, mut col) = (line, col);
    if let Some(field) = field {
        path.extend(field.split('.'));
        if let Some(p) = scan.position(&path) {
            (line, col) = p;
        }
    }
    format!("{}: {body} at line {line} column {col}", entry.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_relocation() {
        let text = "s:\n  f:\n    kind: fixed\n    sise: 10\n";
        assert_eq!(key_position(text, &["s", "f", "sise"]), Some((4, 5)));
        assert_eq!(key_position(text, &["s", "g"]), None);
        let m = relocate(
            text,
            "s: unknown field `sise`, expected `size` at line 2 column 3",
        );
        assert_eq!(
            m,
            "s.f: unknown field `sise`, expected `size` at line 4 column 5"
        );
        let m = relocate(text, "s: something else at line 2 column 3");
        assert_eq!(m, "s.f: something else at line 2 column 3");
        let m = relocate(text, "s: no key here at line 9 column 1");
        assert_eq!(m, "s: no key here at line 9 column 1");
    }

    #[test]
    fn finds_duplicates_at_any_depth_with_both_lines() {
        let text = "name: t\nstrategies:\n  f: {kind: fixed, size: 10}\n  f: {kind: fixed, size: 20}\n  g:\n    kind: ear\n    ear: {radius: 40, radius: 60}\nname: u\n";
        let d = duplicate_keys(text);
        assert_eq!(d.len(), 3, "{d:?}");
        assert_eq!(
            (
                d[0].parent.as_str(),
                d[0].key.as_str(),
                d[0].first_line,
                d[0].line
            ),
            ("strategies", "f", 3, 4)
        );
        assert_eq!(
            (d[1].parent.as_str(), d[1].key.as_str(), d[1].line),
            ("strategies.g.ear", "radius", 7)
        );
        assert_eq!((d[2].parent.as_str(), d[2].key.as_str()), ("", "name"));
        let msg = d[0].to_string();
        assert!(msg.contains("line 4") && msg.contains("line 3"), "{msg}");
    }

    #[test]
    fn unique_keys_sequences_and_bad_yaml_give_nothing() {
        assert!(duplicate_keys("a: [1, 1]\nb:\n  - {x: 1}\n  - {x: 2}\n").is_empty());
        assert!(duplicate_keys("a: [1,\n").is_empty());
        assert!(duplicate_keys("").is_empty());
        // An alias or a collection as a key is not mistaken for a key-value shift.
        assert!(duplicate_keys("a: &x 1\n*x : 2\ny: 1\n? [1, 2]\n: 3\nz: 1\n").is_empty());
    }
}
