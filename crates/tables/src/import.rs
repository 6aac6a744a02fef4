//! `chunkbench data import NAME`: a user's documents and questions, mapped column by column
//! into a canonical dataset (docs/reference.md §3a for the flags and every rule).
//!
//! Data flow: the documents (a folder or a table) become [`Document`]s first, because
//! evidence is resolved against their texts; then each question row is mapped — text,
//! options (one list column or several columns), the answer (index, 1-based index, letter or
//! option text, as the user declares), free-text answers, the retrieval scope, and evidence
//! (byte or character spans, excerpt strings located in the documents, or both, checked
//! against each other). Everything is validated together, written into a temporary directory
//! beside the target, loaded back with [`Dataset::load`], and only then renamed into place:
//! an import either produces a complete dataset or leaves the store as it was.

use crate::html::html_to_text;
use crate::table::{read_table, Table, TableFormat};
use anyhow::{bail, Context, Result};
use chunker::{occurrences, Document};
use datasets::dataset::{DatasetManifest, Evidence, Question, MAX_OPTIONS};
use datasets::import::{finish, write_dataset};
use datasets::io::{sha256_file, sha256_hex};
use datasets::Dataset;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

mod documents;
mod evidence;
use documents::{folder_documents, table_documents};
pub use documents::{read_folder, sources_sha256, FolderDocuments};
#[cfg(test)]
use evidence::{char_to_byte, check_not_python_chars, python_char_to_byte, python_chars};
use evidence::{clip, Resolver};

/// How the answer column names the gold option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum AnswerFormat {
    /// 0-based index into the options.
    Index,
    /// 1-based index into the options.
    Index1,
    /// A letter, `A` for the first option (lower case accepted).
    Letter,
    /// The gold option's text, equal to exactly one option.
    Text,
}

/// What evidence offsets count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum SpanUnits {
    /// UTF-8 bytes of the document text (chunkbench's own unit).
    Bytes,
    /// Unicode scalar values (Python `str` indices, as Chroma's and most Python tools' spans)
    /// of the document text as chunkbench stores it (a file's `\r\n` kept, its BOM dropped).
    Chars,
    /// Python `str` indices into the text `open(path, encoding="utf-8").read()` returns for a
    /// document file: universal newlines (`\r\n` and a lone `\r` read as one `\n`) and a
    /// byte-order mark read as the character U+FEFF at index 0. Mapped back to exact bytes.
    #[value(name = "python-chars")]
    #[serde(rename = "python-chars")]
    #[strum(serialize = "python-chars")]
    PythonChars,
}

/// How a folder import names its documents.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, clap::ValueEnum, strum::IntoStaticStr,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum FolderIds {
    /// The path relative to the folder, extension included (`speeches/state_of_the_union.md`).
    #[default]
    Path,
    /// The relative path without the file's extension (`speeches/state_of_the_union`): the
    /// ids of Chroma's general benchmark, whose `corpus_id` column names `corpora/*.md` files
    /// by stem. Two files that differ only in extension are an error.
    Stem,
}

impl FolderIds {
    fn is_path(&self) -> bool {
        *self == FolderIds::Path
    }
}

/// The column mapping and provenance of one import; every field is a command-line flag of
/// `chunkbench data import`, and the whole struct is recorded in the manifest's notes.
#[derive(Debug, Clone, Serialize, clap::Args)]
pub struct ImportArgs {
    /// Documents: a folder (.txt, .md, .html/.htm, searched recursively) or a table
    /// (.jsonl, .csv, .parquet).
    #[arg(long)]
    pub documents: PathBuf,
    /// Document table: the id column.
    #[arg(long, default_value = "id")]
    pub doc_id: String,
    /// Document folder: the id of each file: `path` (its relative path, the default) or
    /// `stem` (the relative path without its extension, as Chroma's `corpus_id`).
    #[arg(long, value_enum, default_value_t = FolderIds::Path)]
    #[serde(skip_serializing_if = "FolderIds::is_path")]
    pub folder_ids: FolderIds,
    /// Document table: the text column.
    #[arg(long, default_value = "text")]
    pub doc_text: String,
    /// Document table: the title column (optional).
    #[arg(long)]
    pub doc_title: Option<String>,
    /// Questions: a table (.jsonl, .csv, .parquet).
    #[arg(long)]
    pub questions: PathBuf,
    /// Question id column; `#row` numbers the rows instead (`row-1`, `row-2`, ...).
    #[arg(long, default_value = "id")]
    pub id: String,
    /// Question text column.
    #[arg(long, default_value = "question")]
    pub question: String,
    /// Options as one list column (a Parquet/JSON list, or a JSON array string in CSV).
    #[arg(long, conflicts_with = "option_columns")]
    pub options: Option<String>,
    /// Options as several columns, in letter order (comma-separated names); empty trailing
    /// cells are dropped (a question with fewer options).
    #[arg(long, value_delimiter = ',')]
    pub option_columns: Vec<String>,
    /// Gold answer column (needs --answer-format).
    #[arg(long, requires = "answer_format")]
    pub answer: Option<String>,
    /// How --answer names the gold option.
    #[arg(long, value_enum)]
    pub answer_format: Option<AnswerFormat>,
    /// Free-text answer strings for answer recall (a string or a list of strings).
    #[arg(long)]
    pub answers: Option<String>,
    /// Subject or category column.
    #[arg(long)]
    pub subject: Option<String>,
    /// Retrieval scope column: the document id(s) a question may retrieve from.
    #[arg(long)]
    pub scope: Option<String>,
    /// Evidence document id column (a string, or a list parallel to the span columns).
    #[arg(long)]
    pub evidence_doc: Option<String>,
    /// Evidence start offset column (an integer or a list), with --evidence-end.
    #[arg(long, requires = "evidence_end")]
    pub evidence_start: Option<String>,
    /// Evidence end offset column (exclusive), with --evidence-start.
    #[arg(long, requires = "evidence_start")]
    pub evidence_end: Option<String>,
    /// Evidence excerpt column: located in the document when no offsets are given, checked
    /// against the offsets' slice when they are.
    #[arg(long)]
    pub evidence_text: Option<String>,
    /// Evidence as one column of objects (or a JSON array string) with keys `doc_id`,
    /// `start`/`start_index`, `end`/`end_index`, `text`/`content` (Chroma's references).
    #[arg(long, conflicts_with_all = ["evidence_start", "evidence_text"])]
    pub evidence: Option<String>,
    /// What evidence offsets count; required when the evidence has offsets.
    #[arg(long, value_enum)]
    pub evidence_units: Option<SpanUnits>,
    /// License of the documents and questions (SPDX id or a short description).
    #[arg(long, default_value = "unspecified")]
    pub license: String,
    /// Version of the source data, recorded in the manifest.
    #[arg(long, default_value = "unversioned")]
    pub source_version: String,
}

/// What an import did, for the log (the same counts are in the manifest).
#[derive(Debug, Clone, Default)]
pub struct ImportLog {
    /// Warnings: skipped files and empty documents, each naming the file.
    pub warnings: Vec<String>,
}

/// One evidence item before resolution: the raw cells of one row.
#[derive(Debug, Clone, Default)]
struct RawEvidence {
    doc: Option<String>,
    start: Option<i64>,
    end: Option<i64>,
    text: Option<String>,
}

/// `at` plus the column, for error messages.
fn at_col(t: &Table, i: usize, col: &str) -> String {
    format!("{}, column `{col}`", t.at(i))
}

/// The cell of row `i` in `col` (`null` when the row lacks it).
fn cell<'a>(t: &'a Table, i: usize, col: &str) -> &'a Value {
    t.rows[i].get(col).unwrap_or(&Value::Null)
}

/// A short rendering of a value for error messages.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

/// A string (or integer, written in decimal) cell; `None` for null or an empty string.
fn opt_string(t: &Table, i: usize, col: &str) -> Result<Option<String>> {
    scalar_string(cell(t, i, col), &at_col(t, i, col))
}

fn scalar_string(v: &Value, at: &str) -> Result<Option<String>> {
    match v {
        Value::Null => Ok(None),
        // A blank cell (only whitespace) is an empty one: a question "   " or an option " "
        // is nothing to ask or to choose.
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(Some(n.to_string())),
        other => bail!("{at}: expected a string, found {}", show(other)),
    }
}

/// A required non-empty string cell.
fn req_string(t: &Table, i: usize, col: &str) -> Result<String> {
    opt_string(t, i, col)?
        .with_context(|| format!("{}: empty, blank or missing", at_col(t, i, col)))
}

/// An integer cell (a JSON integer, or a string of one in CSV).
fn scalar_int(v: &Value, at: &str) -> Result<Option<i64>> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_i64()
            .map(Some)
            .with_context(|| format!("{at}: expected an integer, found {n}")),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .with_context(|| format!("{at}: expected an integer, found {}", show(v))),
        other => bail!("{at}: expected an integer, found {}", show(other)),
    }
}

/// A list cell: a JSON array, or a string holding one (CSV). With `scalar_ok`, any other
/// non-null value is a one-element list; `None` for null.
fn list(v: &Value, at: &str, scalar_ok: bool) -> Result<Option<Vec<Value>>> {
    match v {
        Value::Null => Ok(None),
        Value::Array(a) => Ok(Some(a.clone())),
        Value::String(s) if s.trim_start().starts_with('[') => {
            match serde_json::from_str::<Value>(s) {
                Ok(Value::Array(a)) => Ok(Some(a)),
                _ if scalar_ok => Ok(Some(vec![v.clone()])),
                _ => bail!("{at}: expected a list, found a string that is not a JSON array: {}", show(v)),
            }
        }
        _ if scalar_ok => Ok(Some(vec![v.clone()])),
        other => bail!(
            "{at}: expected a list, found {}; give the options as several columns with --option-columns",
            show(other)
        ),
    }
}

/// A list of strings (a single string counts as one when `scalar_ok`).
fn string_list(v: &Value, at: &str, scalar_ok: bool) -> Result<Option<Vec<String>>> {
    let Some(items) = list(v, at, scalar_ok)? else {
        return Ok(None);
    };
    items
        .iter()
        .enumerate()
        .map(|(k, x)| {
            scalar_string(x, &format!("{at}, item {}", k + 1))?
                .with_context(|| format!("{at}, item {}: empty, blank or null", k + 1))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// The first two options (indices) whose texts are equal after folding case and whitespace
/// (what the lexical reader compares), if any.
fn duplicate_options(options: &[String]) -> Option<(usize, usize)> {
    let fold = |o: &str| {
        o.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let folded: Vec<String> = options.iter().map(|o| fold(o)).collect();
    (0..folded.len()).find_map(|b| (0..b).find(|&a| folded[a] == folded[b]).map(|a| (a, b)))
}

/// Collapses whitespace/control characters of an id into `_`, so that file names with
/// spaces remain valid ids (a TREC run file or a `DOC:START-END` passage id cannot hold them).
fn clean_id(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The name of a file or folder (its last component, after resolving `.`, `..` and links):
/// what the manifest records of where the data came from. Not the path: the same bytes
/// imported from a relative or an absolute path, or from another directory, make the same
/// manifest (and so the same identity for every cell computed on them).
pub fn base_name(p: &Path) -> String {
    let c = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    c.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| c.display().to_string())
}

/// At most this many row problems are listed; the rest are counted.
const ROW_ERRORS: usize = 50;

/// The problems of a table's rows, one per line (the first [`ROW_ERRORS`]), and how many
/// there are: nothing is imported until every row is right.
fn row_errors(t: &Table, errors: &[String]) -> String {
    let mut out = format!(
        "{}: {} of {} rows have problems; nothing was imported:",
        t.path.display(),
        errors.len(),
        t.rows.len()
    );
    for e in errors.iter().take(ROW_ERRORS) {
        out.push_str("\n  - ");
        out.push_str(e);
    }
    if errors.len() > ROW_ERRORS {
        out.push_str(&format!("\n  … and {} more", errors.len() - ROW_ERRORS));
    }
    out
}

/// The raw evidence items of row `i` from the span/text columns (lists parallel, scalars
/// broadcast) or from the object column.
fn raw_evidence(args: &ImportArgs, t: &Table, i: usize) -> Result<Vec<RawEvidence>> {
    if let Some(col) = &args.evidence {
        let at = at_col(t, i, col);
        let Some(items) = list(cell(t, i, col), &at, false)? else {
            return Ok(Vec::new());
        };
        let doc_default = match &args.evidence_doc {
            Some(c) => opt_string(t, i, c)?,
            None => None,
        };
        return items
            .iter()
            .enumerate()
            .map(|(k, item)| {
                let at = format!("{at}, item {}", k + 1);
                let Value::Object(m) = item else {
                    bail!(
                        "{at}: expected an object with start/end/text keys, found {}",
                        show(item)
                    );
                };
                let mut raw = RawEvidence {
                    doc: doc_default.clone(),
                    ..RawEvidence::default()
                };
                for (key, v) in m {
                    match key.as_str() {
                        "doc_id" => raw.doc = scalar_string(v, &at)?.or(raw.doc.take()),
                        "start" | "start_index" => raw.start = scalar_int(v, &at)?,
                        "end" | "end_index" => raw.end = scalar_int(v, &at)?,
                        "text" | "content" => raw.text = scalar_string(v, &at)?,
                        other => bail!(
                            "{at}: unknown key `{other}`; an evidence object has doc_id, start (or \
                             start_index), end (or end_index) and text (or content)"
                        ),
                    }
                }
                Ok(raw)
            })
            .collect();
    }
    let mut cols: Vec<(&str, Vec<Value>)> = Vec::new();
    for c in [
        &args.evidence_doc,
        &args.evidence_start,
        &args.evidence_end,
        &args.evidence_text,
    ]
    .into_iter()
    .flatten()
    {
        let at = at_col(t, i, c);
        cols.push((c, list(cell(t, i, c), &at, true)?.unwrap_or_default()));
    }
    let lens: HashSet<usize> = cols
        .iter()
        .map(|(_, v)| v.len())
        .filter(|&n| n > 1)
        .collect();
    if lens.len() > 1 {
        bail!(
            "{}: the evidence columns hold lists of different lengths ({}); they must be parallel",
            t.at(i),
            cols.iter()
                .map(|(c, v)| format!("`{c}`: {}", v.len()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let spans_or_text = [&args.evidence_start, &args.evidence_text]
        .into_iter()
        .flatten()
        .filter_map(|c| cols.iter().find(|(n, _)| n == c))
        .any(|(_, v)| !v.is_empty());
    if !spans_or_text {
        return Ok(Vec::new());
    }
    let n = lens.into_iter().next().unwrap_or(1);
    let get = |c: &Option<String>, k: usize| -> Option<&Value> {
        let c = c.as_ref()?;
        let v = &cols.iter().find(|(n, _)| n == c)?.1;
        if v.len() == 1 {
            v.first()
        } else {
            v.get(k)
        }
    };
    // `FILE, row N, column `C`, item K` of evidence column `c`.
    let at = |c: &Option<String>, k: usize| {
        format!(
            "{}, item {}",
            at_col(t, i, c.as_deref().unwrap_or_default()),
            k + 1
        )
    };
    (0..n)
        .map(|k| {
            let s = |c: &Option<String>| -> Result<Option<String>> {
                Ok(get(c, k)
                    .map(|v| scalar_string(v, &at(c, k)))
                    .transpose()?
                    .flatten())
            };
            let int = |c: &Option<String>| -> Result<Option<i64>> {
                Ok(get(c, k)
                    .map(|v| scalar_int(v, &at(c, k)))
                    .transpose()?
                    .flatten())
            };
            Ok(RawEvidence {
                doc: s(&args.evidence_doc)?,
                start: int(&args.evidence_start)?,
                end: int(&args.evidence_end)?,
                text: s(&args.evidence_text)?,
            })
        })
        .collect()
}

/// The gold index of row `i`'s answer cell under `format`.
fn gold_index(v: &Value, format: AnswerFormat, options: &[String], at: &str) -> Result<usize> {
    let n = options.len();
    let idx = match format {
        AnswerFormat::Index | AnswerFormat::Index1 => {
            let k = scalar_int(v, at)?.with_context(|| format!("{at}: empty or missing"))?;
            let k = if format == AnswerFormat::Index1 {
                k - 1
            } else {
                k
            };
            if k < 0 || k as usize >= n {
                bail!(
                    "{at}: answer {} is out of range for {n} options (--answer-format {})",
                    show(v),
                    <&str>::from(format)
                );
            }
            k as usize
        }
        AnswerFormat::Letter => {
            let s = scalar_string(v, at)?.with_context(|| format!("{at}: empty or missing"))?;
            let s = s.trim();
            let mut cs = s.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) if c.is_ascii_alphabetic() => {
                    let k = (c.to_ascii_uppercase() as u8 - b'A') as usize;
                    if k >= n {
                        bail!("{at}: answer letter {c} is out of range for {n} options");
                    }
                    k
                }
                _ => bail!(
                    "{at}: expected one letter A..Z, found {}; is the answer an index or the \
                     option text (--answer-format index|index1|text)?",
                    show(v)
                ),
            }
        }
        AnswerFormat::Text => {
            let s = scalar_string(v, at)?.with_context(|| format!("{at}: empty or missing"))?;
            let hits: Vec<usize> = (0..n).filter(|&k| options[k] == s).collect();
            match hits.as_slice() {
                [k] => *k,
                [] => bail!(
                    "{at}: answer {:?} equals none of the options {:?} (exact comparison)",
                    clip(&s),
                    options
                ),
                _ => bail!(
                    "{at}: answer {:?} equals {} options; options must differ",
                    clip(&s),
                    hits.len()
                ),
            }
        }
    };
    Ok(idx)
}

/// Questions mapped from the table, with the counts the manifest records.
fn map_questions(
    args: &ImportArgs,
    docs: &[Document],
    bom: &std::collections::HashSet<String>,
    log: &mut ImportLog,
) -> Result<(Vec<Question>, BTreeMap<String, u64>)> {
    let t = read_table(&args.questions)?;
    let row_ids = args.id == "#row";
    if !row_ids {
        t.require(&args.id, "--id (or --id '#row' to number the rows)")?;
    }
    t.require(&args.question, "--question")?;
    let named: [(&Option<String>, &str); 10] = [
        (&args.options, "--options"),
        (&args.answer, "--answer"),
        (&args.answers, "--answers"),
        (&args.subject, "--subject"),
        (&args.scope, "--scope"),
        (&args.evidence_doc, "--evidence-doc"),
        (&args.evidence_start, "--evidence-start"),
        (&args.evidence_end, "--evidence-end"),
        (&args.evidence_text, "--evidence-text"),
        (&args.evidence, "--evidence"),
    ];
    for (c, flag) in named {
        if let Some(c) = c {
            t.require(c, flag)?;
        }
    }
    for c in &args.option_columns {
        t.require(c, "--option-columns")?;
    }
    let mcq = args.options.is_some() || !args.option_columns.is_empty();
    if mcq && args.answer.is_none() {
        bail!("options are mapped but no answer: give --answer COL --answer-format index|index1|letter|text");
    }
    if !mcq && args.answer.is_some() {
        bail!("--answer needs options (--options COL or --option-columns A,B,...); for free-text answers use --answers");
    }
    let doc_map: HashMap<&str, &Document> = docs.iter().map(|d| (d.id.as_str(), d)).collect();
    let mut resolver = Resolver {
        docs: doc_map.clone(),
        order: docs.iter().collect(),
        units: args.evidence_units,
        bom,
        located: 0,
        converted: 0,
    };
    let mut questions = Vec::with_capacity(t.rows.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut spans = 0u64;
    // Every row is checked, and every problem reported (up to ROW_ERRORS of them), so one
    // import run shows all there is to fix.
    let mut errors: Vec<String> = Vec::new();
    // Rows (1-based) whose options repeat a text other than the gold answer's: kept, counted.
    let mut duplicate_rows: Vec<usize> = Vec::new();
    for i in 0..t.rows.len() {
        let mut one = || -> Result<Question> {
            let id = if row_ids {
                format!("row-{}", i + 1)
            } else {
                let id = req_string(&t, i, &args.id)?;
                let clean = clean_id(&id);
                if clean != id {
                    bail!(
                        "{}: question id {:?} holds whitespace; ids cannot (use --id '#row' or clean the column)",
                        at_col(&t, i, &args.id),
                        id
                    );
                }
                id
            };
            if let Some(prev) = seen.insert(id.clone(), i) {
                bail!(
                    "{}: question id `{id}` repeats row {}; ids must be unique",
                    at_col(&t, i, &args.id),
                    prev + 1
                );
            }
            let question = req_string(&t, i, &args.question)?;
            let options: Vec<String> = if let Some(c) = &args.options {
                string_list(cell(&t, i, c), &at_col(&t, i, c), false)?
                    .with_context(|| format!("{}: no options", at_col(&t, i, c)))?
            } else {
                let mut opts = Vec::new();
                let mut gap: Option<&str> = None;
                for c in &args.option_columns {
                    match opt_string(&t, i, c)? {
                        Some(o) => {
                            if let Some(g) = gap {
                                bail!(
                                    "{}: option column `{c}` follows the empty `{g}`; only trailing \
                                     options may be empty",
                                    t.at(i)
                                );
                            }
                            opts.push(o)
                        }
                        None => gap = gap.or(Some(c)),
                    }
                }
                opts
            };
            if mcq && !(2..=MAX_OPTIONS).contains(&options.len()) {
                bail!(
                    "{}: {} options; a multiple-choice question needs 2 to {MAX_OPTIONS}",
                    t.at(i),
                    options.len()
                );
            }
            let answer = match (&args.answer, args.answer_format) {
                (Some(c), Some(f)) => {
                    Some(gold_index(cell(&t, i, c), f, &options, &at_col(&t, i, c))?)
                }
                _ => None,
            };
            if let Some((a, b)) = duplicate_options(&options) {
                let letter = |k: usize| char::from(b'A' + k as u8);
                if answer.is_some_and(|g| g == a || g == b) {
                    bail!(
                        "{}: options {} and {} are the same text {:?} and one of them is the gold \
                         answer: no reader can tell them apart, so the question could never be \
                         answered right; make the options differ or drop the row",
                        t.at(i),
                        letter(a),
                        letter(b),
                        options[a]
                    );
                }
                duplicate_rows.push(i + 1);
            }
            let answers = match &args.answers {
                Some(c) => string_list(cell(&t, i, c), &at_col(&t, i, c), true)?,
                None => None,
            };
            let subject = match &args.subject {
                Some(c) => opt_string(&t, i, c)?,
                None => None,
            };
            let scope = match &args.scope {
                Some(c) => {
                    let at = at_col(&t, i, c);
                    let ids = string_list(cell(&t, i, c), &at, true)?;
                    for d in ids.iter().flatten() {
                        if !doc_map.contains_key(d.as_str()) {
                            bail!(
                                "{at}: scope names document `{d}`, which the documents do not have"
                            );
                        }
                    }
                    ids
                }
                None => None,
            };
            let mut evidence = Vec::new();
            for (k, raw) in raw_evidence(args, &t, i)?.iter().enumerate() {
                let at = format!("{}, evidence item {}", t.at(i), k + 1);
                evidence.push(resolver.resolve(raw, scope.as_deref(), &at)?);
            }
            spans += evidence.len() as u64;
            if !mcq && evidence.is_empty() && answers.is_none() {
                bail!(
                    "{}: a question without options needs evidence or --answers; nothing could score it",
                    t.at(i)
                );
            }
            Ok(Question {
                id,
                question,
                options,
                answer,
                answers,
                subject,
                doc_ids: scope,
                evidence: (!evidence.is_empty()).then_some(evidence),
            })
        };
        match one() {
            Ok(q) => questions.push(q),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if !errors.is_empty() {
        bail!("{}", row_errors(&t, &errors));
    }
    let mut counts = BTreeMap::new();
    counts.insert("questions".into(), questions.len() as u64);
    counts.insert(
        if mcq {
            "multiple_choice"
        } else {
            "retrieval_only"
        }
        .into(),
        questions.len() as u64,
    );
    // Only when there are any: the manifests of clean imports stay byte-identical.
    if !duplicate_rows.is_empty() {
        counts.insert(
            "questions_with_duplicate_options".into(),
            duplicate_rows.len() as u64,
        );
        let shown: Vec<String> = duplicate_rows
            .iter()
            .take(10)
            .map(usize::to_string)
            .collect();
        log.warnings.push(format!(
            "{}: {} question{} repeat an option text (not the gold answer's; the lexical reader \
             ties such options), rows {}{}; counted as questions_with_duplicate_options",
            args.questions.display(),
            duplicate_rows.len(),
            if duplicate_rows.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if duplicate_rows.len() > 10 {
                ", …"
            } else {
                ""
            }
        ));
    }
    counts.insert("evidence_spans".into(), spans);
    counts.insert("evidence_located_excerpts".into(), resolver.located);
    counts.insert("evidence_converted_from_chars".into(), resolver.converted);
    Ok((questions, counts))
}

/// Imports `args`' documents and questions as dataset `name` under `store` (module docs).
/// An existing dataset of that name is replaced only with `force`.
///
/// # Errors
/// Every problem names the file, the row (1-based) and the column, with the fix: a missing
/// column (the table's columns are listed), a cell of the wrong type, an answer that does not
/// name an option, an excerpt absent from or ambiguous in the documents, a span outside its
/// document or disagreeing with its excerpt, duplicate ids; also an unreadable table or
/// folder and a name that is taken. Nothing is written unless the whole dataset is valid.
pub fn import(
    name: &str,
    args: &ImportArgs,
    store: &Path,
    force: bool,
) -> Result<(DatasetManifest, ImportLog)> {
    let name = &datasets::dataset::canonical_name(name)
        .map_err(|e| anyhow::anyhow!("dataset name {e}"))?;
    let target = store.join(name);
    if target.exists() && !force {
        bail!(
            "{}: a dataset of this name exists; give --force to replace it",
            target.display()
        );
    }
    let mut log = ImportLog::default();
    let read = if args.documents.is_dir() {
        folder_documents(&args.documents, &args.license, args.folder_ids, &mut log)?
    } else if TableFormat::of(&args.documents).is_some() {
        if args.folder_ids != FolderIds::Path {
            bail!(
                "{}: --folder-ids applies to a folder of documents; for a table, name the id \
                 column with --doc-id",
                args.documents.display()
            );
        }
        table_documents(args)?
    } else {
        bail!(
            "{}: --documents must be a folder or a .jsonl/.csv/.parquet table",
            args.documents.display()
        );
    };
    if read.docs.is_empty() {
        bail!(
            "{}: no documents (a folder needs .txt, .md or .html files)",
            args.documents.display()
        );
    }
    let (questions, qcounts) = map_questions(args, &read.docs, &read.bom, &mut log)?;

    let mut counts = read.counts;
    counts.insert("documents".into(), read.docs.len() as u64);
    counts.extend(qcounts);
    let questions_sha = sha256_file(&args.questions)?;
    let documents_sha = sources_sha256(&read.sources);
    let mut notes = read.notes;
    notes.push(format!(
        "questions: one per row of {} ({}), in file order",
        base_name(&args.questions),
        <&str>::from(TableFormat::of(&args.questions).expect("read_table checked the extension"))
    ));
    notes.push(format!("column mapping: {}", {
        // The mapping, with the files by name: where they were is not their content.
        let mut v = serde_json::to_value(args).context("cannot record the column mapping")?;
        v["documents"] = base_name(&args.documents).into();
        v["questions"] = base_name(&args.questions).into();
        v
    }));
    notes.push(format!(
        "sha256 of {}: {questions_sha}",
        base_name(&args.questions)
    ));
    notes.push(if read.sources.len() == 1 && !args.documents.is_dir() {
        format!("sha256 of {}: {}", read.sources[0].0, read.sources[0].1)
    } else {
        format!(
            "sha256 of the documents folder {} (lines `relative path<TAB>sha256 of the file`): {documents_sha}",
            base_name(&args.documents)
        )
    });
    notes.push(
        "manifest sha256 = sha256 of the two lines `documents<TAB>HASH` and `questions<TAB>HASH`"
            .into(),
    );
    let manifest_sha =
        sha256_hex(format!("documents\t{documents_sha}\nquestions\t{questions_sha}\n").as_bytes());

    // Write everything into a temporary sibling, load it back, then rename into place.
    let manifest = write_into_store(store, name, &mut log, |tmp| {
        write_dataset(tmp, &read.docs, &questions)?;
        let manifest = finish(
            tmp,
            DatasetManifest {
                name: name.to_string(),
                source: format!(
                    "chunkbench data import: documents {}, questions {}",
                    base_name(&args.documents),
                    base_name(&args.questions)
                ),
                version: args.source_version.clone(),
                sha256: manifest_sha,
                license: args.license.clone(),
                counts,
                notes,
                files: BTreeMap::new(),
            },
        )?;
        Dataset::load(tmp).context("the imported dataset does not load back")?;
        Ok(manifest)
    })?;
    Ok((manifest, log))
}

/// [`datasets::io::write_into_store`] with an import log: its warnings (work directories a
/// killed writer left) go to `log`. Shared by `data import` and `data generate`.
///
/// # Errors
/// Those of [`datasets::io::write_into_store`]: another process writing `name`, `build`'s
/// error, or a directory that cannot be created or renamed (naming it).
pub fn write_into_store<T>(
    store: &Path,
    name: &str,
    log: &mut ImportLog,
    build: impl FnOnce(&Path) -> Result<T>,
) -> Result<T> {
    datasets::io::write_into_store(store, name, &mut log.warnings, build)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 56 case 4: offsets Python counts on `open(f).read()` of a CRLF file with a BOM.
    #[test]
    fn python_char_offsets_map_back_to_exact_bytes() {
        // The file: BOM, "ab\r\ncd\r\n\r\néf"; stored without the BOM.
        let text = "ab\r\ncd\r\n\r\néf";
        let py = "\u{feff}ab\ncd\n\néf"; // what Python reads
        assert_eq!(python_chars(text, true), py.chars().count());
        for (i, c) in py.chars().enumerate().skip(1) {
            let b = python_char_to_byte(text, true, i).unwrap();
            let want = if c == '\n' { '\r' } else { c };
            assert_eq!(text[b..].chars().next(), Some(want), "offset {i}");
        }
        assert_eq!(python_char_to_byte(text, true, 0), Some(0));
        assert_eq!(
            python_char_to_byte(text, true, py.chars().count()),
            Some(text.len())
        );
        assert_eq!(
            python_char_to_byte(text, true, py.chars().count() + 1),
            None
        );
        // "cd" is Python's 4..6; plain chars 4..6 of the stored text is "\ncd"[..2]: "\nc".
        let (a, b) = (
            python_char_to_byte(text, true, 4).unwrap(),
            python_char_to_byte(text, true, 6).unwrap(),
        );
        assert_eq!(&text[a..b], "cd");
        let err = check_not_python_chars(text, (3, 5), (3, 5), "q.jsonl: line 1").unwrap_err();
        assert!(
            format!("{err}").contains("--evidence-units python-chars"),
            "{err}"
        );
    }

    #[test]
    fn char_offsets_and_occurrences() {
        let t = "né ü x";
        assert_eq!(char_to_byte(t, 0), Some(0));
        assert_eq!(char_to_byte(t, 2), Some(3));
        assert_eq!(char_to_byte(t, 6), Some(t.len()));
        assert_eq!(char_to_byte(t, 7), None);
        assert_eq!(occurrences("aaa", "aa"), vec![0, 1]);
        assert_eq!(occurrences("ü ü", "ü"), vec![0, 3]);
        assert!(occurrences("abc", "d").is_empty());
    }
}
