//! Evidence resolution for `data import`: raw evidence cells (byte or character spans,
//! excerpts, or both) turned into exact byte spans of their documents, with the checks that
//! catch offsets counted on another reading of the file (Python's newline-translated text,
//! docs/reference.md §3a `--evidence-units`). Moved out of `import.rs` unchanged.

use super::*;

/// What an error says when offsets fit Python's reading of the file, not the stored text.
pub(super) const PYTHON_CHARS_FIX: &str =
    " (they were counted on the text Python's `open(path).read()` \
     returns, which reads each \\r\\n as one \\n and keeps a byte-order mark as a character: \
     give --evidence-units python-chars, which maps such offsets back to exact bytes)";

/// The length in characters of the text Python's `open(path, encoding="utf-8").read()` returns
/// for the file of `text` (stored with its `\r\n` and without its BOM; `bom` whether it had one).
pub(super) fn python_chars(text: &str, bom: bool) -> usize {
    text.chars().count() - text.matches("\r\n").count() + usize::from(bom)
}

/// The byte offset in `text` of Python character offset `p` of the file's text as
/// `open(path, encoding="utf-8").read()` returns it (module docs of [`SpanUnits::PythonChars`]):
/// universal newlines read `\r\n` as one character, and a BOM (`bom`) is character 0 (an
/// offset 0 maps to byte 0). `None` past the end.
pub(super) fn python_char_to_byte(text: &str, bom: bool, p: usize) -> Option<usize> {
    let mut py = usize::from(bom);
    if p < py {
        return Some(0);
    }
    let mut chars = text.char_indices().peekable();
    while let Some((b, c)) = chars.next() {
        if py == p {
            return Some(b);
        }
        if c == '\r' && chars.peek().is_some_and(|&(_, n)| n == '\n') {
            chars.next();
        }
        py += 1;
    }
    (py == p).then_some(text.len())
}

/// Refuses character offsets (`chars`, no excerpt to check them by) that cut a `\r\n` of a
/// file in two, the mark of offsets counted on Python's newline-translated text; `s..e` are
/// the offsets, `bs..be` the bytes they map to.
///
/// # Errors
/// The span, the cause and the fix ([`PYTHON_CHARS_FIX`]).
pub(super) fn check_not_python_chars(
    text: &str,
    (s, e): (usize, usize),
    (bs, be): (usize, usize),
    at: &str,
) -> Result<()> {
    let splits = |b: usize| {
        b > 0 && text.as_bytes()[b - 1] == b'\r' && text.as_bytes().get(b) == Some(&b'\n')
    };
    if splits(bs) || splits(be) {
        bail!(
            "{at}: evidence span {s}..{e} (characters) starts or ends between the \\r and the \\n \
             of a line end{PYTHON_CHARS_FIX}"
        );
    }
    Ok(())
}

/// The byte offset of character index `c` of `text`, or `None` past its end.
pub(super) fn char_to_byte(text: &str, c: usize) -> Option<usize> {
    if c == 0 {
        return Some(0);
    }
    text.char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(text.len()))
        .nth(c)
}

/// Byte spans of `hay` that equal `needle` once all whitespace is removed from both (for the
/// hint on an excerpt that differs from its document only in whitespace; never used to
/// locate evidence). At most a few, in order.
pub(super) fn whitespace_blind(hay: &str, needle: &str) -> Vec<(usize, usize)> {
    let squeeze = |s: &str| -> (String, Vec<(usize, usize)>) {
        let mut out = String::new();
        let mut at = Vec::new();
        for (i, c) in s.char_indices().filter(|(_, c)| !c.is_whitespace()) {
            out.push(c);
            at.push((i, i + c.len_utf8()));
        }
        (out, at)
    };
    let (n, _) = squeeze(needle);
    if n.is_empty() {
        return Vec::new();
    }
    let (h, at) = squeeze(hay);
    // Char positions of `h` by byte offset in `h`.
    let starts: HashMap<usize, usize> = h
        .char_indices()
        .enumerate()
        .map(|(k, (b, _))| (b, k))
        .collect();
    let chars = n.chars().count();
    occurrences(&h, &n)
        .into_iter()
        .take(5)
        .filter_map(|b| {
            let k = *starts.get(&b)?;
            Some((at[k].0, at[k + chars - 1].1))
        })
        .collect()
}

/// Resolves raw evidence cells into byte spans (module docs for the rules).
pub(super) struct Resolver<'a> {
    pub(super) docs: HashMap<&'a str, &'a Document>,
    pub(super) order: Vec<&'a Document>,
    pub(super) units: Option<SpanUnits>,
    /// Documents whose file began with a byte-order mark ([`DocumentsRead::bom`]).
    pub(super) bom: &'a std::collections::HashSet<String>,
    pub(super) located: u64,
    pub(super) converted: u64,
}

impl<'a> Resolver<'a> {
    pub(super) fn resolve(
        &mut self,
        raw: &RawEvidence,
        scope: Option<&[String]>,
        at: &str,
    ) -> Result<Evidence> {
        let doc = match &raw.doc {
            Some(d) => Some(*self.docs.get(d.as_str()).with_context(|| {
                let with_ext = ["md", "txt", "html", "htm"]
                    .iter()
                    .map(|e| format!("{d}.{e}"))
                    .find(|id| self.docs.contains_key(id.as_str()));
                match with_ext {
                    Some(id) => format!(
                        "{at}: evidence names document `{d}`, which the documents do not have \
                         (there is `{id}`); to name a folder's files by their stem, as Chroma's \
                         corpus_id does, give --folder-ids stem"
                    ),
                    None => format!(
                        "{at}: evidence names document `{d}`, which the documents do not have"
                    ),
                }
            })?),
            None => None,
        };
        match (raw.start, raw.end) {
            (Some(s), Some(e)) => {
                let units = self.units.with_context(|| {
                    format!(
                        "{at}: the evidence has offsets; say what they count with --evidence-units \
                         bytes|chars (chars = Python string indices)"
                    )
                })?;
                let d = match doc {
                    Some(d) => d,
                    None => match scope {
                        Some([one]) => self.docs[one.as_str()],
                        _ => bail!(
                            "{at}: an evidence span needs its document: map --evidence-doc (or the \
                             `doc_id` key), or give the question a one-document --scope"
                        ),
                    },
                };
                if s < 0 || e < s {
                    bail!("{at}: evidence span {s}..{e} is not a span (need 0 <= start <= end)");
                }
                let (s, e) = (s as usize, e as usize);
                let (bs, be) = match units {
                    SpanUnits::Bytes => {
                        if e > d.text.len() {
                            bail!(
                                "{at}: evidence span {s}..{e} (bytes) ends past document `{}` ({} bytes)",
                                d.id,
                                d.text.len()
                            );
                        }
                        if !d.text.is_char_boundary(s) || !d.text.is_char_boundary(e) {
                            bail!(
                                "{at}: evidence span {s}..{e} (bytes) cuts a UTF-8 character of `{}`; \
                                 if the offsets count characters, use --evidence-units chars",
                                d.id
                            );
                        }
                        (s, e)
                    }
                    SpanUnits::Chars | SpanUnits::PythonChars => {
                        let bom = self.bom.contains(&d.id);
                        let map = |c: usize| match units {
                            SpanUnits::PythonChars => python_char_to_byte(&d.text, bom, c),
                            _ => char_to_byte(&d.text, c),
                        };
                        let (Some(bs), Some(be)) = (map(s), map(e)) else {
                            bail!(
                                "{at}: evidence span {s}..{e} ({}) ends past document `{}` ({} \
                                 characters)",
                                <&str>::from(units),
                                d.id,
                                match units {
                                    SpanUnits::PythonChars => python_chars(&d.text, bom),
                                    _ => d.text.chars().count(),
                                }
                            );
                        };
                        if units == SpanUnits::Chars && raw.text.is_none() {
                            check_not_python_chars(&d.text, (s, e), (bs, be), at)?;
                        }
                        self.converted += 1;
                        (bs, be)
                    }
                };
                if let Some(x) = &raw.text {
                    let got = &d.text[bs..be];
                    if got != x {
                        let other = match units {
                            SpanUnits::Bytes => char_to_byte(&d.text, s)
                                .zip(char_to_byte(&d.text, e))
                                .filter(|&(a, b)| &d.text[a..b] == x)
                                .map(|_| {
                                    " (read as characters they would match: --evidence-units chars)"
                                }),
                            SpanUnits::Chars => {
                                let bom = self.bom.contains(&d.id);
                                let py = python_char_to_byte(&d.text, bom, s)
                                    .zip(python_char_to_byte(&d.text, bom, e))
                                    .filter(|&(a, b)| &d.text[a..b] == x);
                                if py.is_some() {
                                    Some(PYTHON_CHARS_FIX)
                                } else {
                                    (e <= d.text.len() && d.text.get(s..e) == Some(x.as_str()))
                                        .then_some(
                                            " (read as bytes they would match: --evidence-units \
                                             bytes)",
                                        )
                                }
                            }
                            SpanUnits::PythonChars => None,
                        };
                        bail!(
                            "{at}: evidence span {s}..{e} ({}) of `{}` holds {:?}, not the excerpt {:?}{}",
                            <&str>::from(units),
                            d.id,
                            clip(got),
                            clip(x),
                            other.unwrap_or("")
                        );
                    }
                }
                Ok(Evidence {
                    doc_id: d.id.clone(),
                    start: bs,
                    end: be,
                })
            }
            (None, None) => {
                let Some(x) = &raw.text else {
                    bail!("{at}: an evidence item needs offsets or an excerpt text");
                };
                let candidates: Vec<&Document> = match (doc, scope) {
                    (Some(d), _) => vec![d],
                    (None, Some(sc)) => sc.iter().map(|id| self.docs[id.as_str()]).collect(),
                    (None, None) => self.order.clone(),
                };
                let mut found = Vec::new();
                for d in &candidates {
                    for p in occurrences(&d.text, x) {
                        found.push((*d, p));
                    }
                }
                let where_ = if candidates.len() == 1 {
                    format!("document `{}`", candidates[0].id)
                } else {
                    format!("{} documents", candidates.len())
                };
                match found.as_slice() {
                    [] => {
                        // Exact matching only; but say so when only whitespace differs.
                        let near: Vec<(&Document, usize, usize)> = candidates
                            .iter()
                            .flat_map(|d| {
                                whitespace_blind(&d.text, x)
                                    .into_iter()
                                    .map(move |(s, e)| (*d, s, e))
                            })
                            .take(3)
                            .collect();
                        let hint =
                            match near.first() {
                                None => String::new(),
                                Some((d, s, e)) => format!(
                                "; it occurs in `{}` at bytes {s}..{e} when whitespace is ignored \
                                 ({}the document reads {:?}): copy the excerpt exactly as the \
                                 document has it, or give offsets",
                                d.id,
                                if near.len() > 1 { "one of several places; " } else { "" },
                                clip(&d.text[*s..*e])
                            ),
                            };
                        bail!(
                            "{at}: excerpt {:?} not found in {where_} (matching is exact, byte for \
                             byte; give offsets instead if the text was normalised){hint}",
                            clip(x)
                        )
                    }
                    [(d, p)] => {
                        self.located += 1;
                        Ok(Evidence {
                            doc_id: d.id.clone(),
                            start: *p,
                            end: p + x.len(),
                        })
                    }
                    many => bail!(
                        "{at}: excerpt {:?} is ambiguous: found {} times {} ({}); give offsets, \
                         --evidence-doc or a longer excerpt",
                        clip(x),
                        many.len(),
                        {
                            let docs: std::collections::BTreeSet<&str> =
                                many.iter().map(|(d, _)| d.id.as_str()).collect();
                            match (candidates.len(), docs.len()) {
                                (1, _) => format!("in {where_}"),
                                (n, 1) => format!("in 1 of the {n} documents searched"),
                                (n, k) => format!("in {k} of the {n} documents searched"),
                            }
                        },
                        many.iter()
                            .take(5)
                            .map(|(d, p)| format!("`{}` byte {p}", d.id))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            }
            _ => bail!("{at}: an evidence span needs both a start and an end"),
        }
    }
}

pub(super) fn clip(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}
