//! Long documents stitched from short ones: the construction of Bhat et al. (2025), "Rethinking
//! Chunk Size for Long-Document Retrieval: A Multi-Dataset Analysis" (arXiv 2505.21700, §3), who
//! concatenated the short passages of SQuAD and similar sets into long documents so that chunk
//! size matters, and kept only questions whose answer occurs once in its document.
//!
//! # Rule ([`stitch`], version [`STITCH_RULE`])
//! - **Documents**: the source dataset's documents, in its order, are appended to the current
//!   stitched document, separated by [`StitchOptions::separator`], until it holds at least
//!   [`StitchOptions::min_chars`] characters (Unicode scalar values); then a new one starts.
//!   A last document shorter than the minimum joins the one before it. Ids `stitched-NNNN`
//!   (from 0001); each source document's byte offset inside its stitched document is recorded
//!   in the notes' first-and-last ids and in `stitch.jsonl` (one row per source document).
//! - **Questions**: a question needs gold evidence (its source document): evidence spans are
//!   moved by their document's offset, so each still slices to the same text; a question
//!   without evidence is dropped (`dropped_no_evidence`). Its retrieval scope is the stitched
//!   document(s) holding its evidence ([`StitchScope::Document`], Bhat et al. retrieve within
//!   the question's document) or the whole corpus ([`StitchScope::Corpus`]).
//! - **Unique answers** ([`StitchOptions::unique_answers`]): a question is kept only when
//!   exactly one of its answer strings ([`crate::Question::answer_strings`]) occurs in its
//!   stitched document(s), exactly once, compared as answer recall compares (trimmed,
//!   lower-cased, overlapping occurrences counted); otherwise it is dropped and counted as
//!   `dropped_answer_absent`, `dropped_answer_repeated` or `dropped_no_answer_string`.

use crate::dataset::{DatasetManifest, Evidence, Question};
use crate::io::sha256_hex;
use crate::Dataset;
use anyhow::{bail, Context, Result};
use chunker::Document;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Version of the stitching rule, in the manifest's `version` and input key.
pub const STITCH_RULE: &str = "chunkbench-stitch-1";

/// Where a stitched question may retrieve from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StitchScope {
    /// The stitched document(s) holding its evidence (Bhat et al.'s setting).
    Document,
    /// Every stitched document.
    Corpus,
}

/// How [`stitch`] builds the long documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StitchOptions {
    /// Minimum characters (Unicode scalar values) of a stitched document (Bhat et al.: 50,000).
    pub min_chars: usize,
    /// Keep only questions whose answer occurs exactly once in their document.
    pub unique_answers: bool,
    /// Text between two source documents (default a blank line, `"\n\n"`).
    pub separator: String,
    /// The questions' retrieval scope.
    pub scope: StitchScope,
}

/// Where one source document went: a row of `stitch.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// The source document's id.
    pub source_id: String,
    /// The stitched document's id.
    pub doc_id: String,
    /// Byte offset of the source text inside the stitched text.
    pub offset: usize,
    /// Byte length of the source text.
    pub len: usize,
}

/// The stitched dataset before it is written.
#[derive(Debug, Clone)]
pub struct Stitched {
    /// The long documents.
    pub documents: Vec<Document>,
    /// The kept questions, with moved evidence and their scope.
    pub questions: Vec<Question>,
    /// Where every source document went, in source order.
    pub placements: Vec<Placement>,
    /// Counts for the manifest: `documents`, `source_documents`, `source_questions`,
    /// `questions`, `dropped_*`, `min_document_chars`, `max_document_chars`.
    pub counts: BTreeMap<String, u64>,
}

/// Stitches `source` into long documents (module documentation for the rule).
///
/// # Errors
/// `min_chars` of 0, or a source whose documents hold fewer characters in total than
/// `min_chars` (one stitched document could not reach the minimum).
pub fn stitch(source: &Dataset, o: &StitchOptions) -> Result<Stitched> {
    if o.min_chars == 0 {
        bail!("--min-chars must be at least 1");
    }
    // Every document stitched into one, separators included.
    let total: usize = source
        .documents
        .iter()
        .map(|d| d.text.chars().count())
        .sum::<usize>()
        + o.separator.chars().count() * source.documents.len().saturating_sub(1);
    if total < o.min_chars {
        bail!(
            "dataset {}: its {} documents, stitched into one, hold {total} characters, fewer \
             than --min-chars {}; give a smaller --min-chars",
            source.name,
            source.documents.len(),
            o.min_chars
        );
    }
    // Group the documents.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut chars = 0usize;
    for (i, d) in source.documents.iter().enumerate() {
        if groups.is_empty() || chars >= o.min_chars {
            groups.push(Vec::new());
            chars = 0;
        } else {
            chars += o.separator.chars().count();
        }
        groups.last_mut().expect("pushed").push(i);
        chars += d.text.chars().count();
    }
    if chars < o.min_chars && groups.len() > 1 {
        let last = groups.pop().expect("two groups");
        groups.last_mut().expect("one left").extend(last);
    }
    let mut documents = Vec::with_capacity(groups.len());
    let mut placements = Vec::with_capacity(source.documents.len());
    let mut at: HashMap<&str, (usize, usize)> = HashMap::new();
    for (g, members) in groups.iter().enumerate() {
        let id = format!("stitched-{:04}", g + 1);
        let mut text = String::new();
        for (j, &i) in members.iter().enumerate() {
            if j > 0 {
                text.push_str(&o.separator);
            }
            let d = &source.documents[i];
            at.insert(d.id.as_str(), (g, text.len()));
            placements.push(Placement {
                source_id: d.id.clone(),
                doc_id: id.clone(),
                offset: text.len(),
                len: d.text.len(),
            });
            text.push_str(&d.text);
        }
        let first = &source.documents[members[0]].id;
        let last = &source.documents[*members.last().expect("non-empty")].id;
        let licenses: BTreeSet<&str> = members
            .iter()
            .map(|&i| source.documents[i].license.as_str())
            .collect();
        documents.push(Document {
            id,
            title: format!(
                "{} documents of {} stitched ({first} … {last})",
                members.len(),
                source.name
            ),
            text,
            source: format!("{} documents {first} … {last} ({STITCH_RULE})", source.name),
            license: licenses.into_iter().collect::<Vec<_>>().join("; "),
        });
    }
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut count = |k: &str| *counts.entry(k.to_string()).or_default() += 1;
    let mut questions = Vec::new();
    for q in &source.questions {
        let Some(ev) = q.evidence.as_ref().filter(|e| !e.is_empty()) else {
            count("dropped_no_evidence");
            continue;
        };
        let mut moved = Vec::with_capacity(ev.len());
        let mut docs: BTreeSet<usize> = BTreeSet::new();
        for e in ev {
            let (g, off) = at[e.doc_id.as_str()];
            docs.insert(g);
            moved.push(Evidence {
                doc_id: documents[g].id.clone(),
                start: e.start + off,
                end: e.end + off,
            });
        }
        if o.unique_answers {
            let answers: Vec<String> = q
                .answer_strings()
                .iter()
                .map(|a| a.trim().to_lowercase())
                .filter(|a| !a.is_empty())
                .collect();
            if answers.is_empty() {
                count("dropped_no_answer_string");
                continue;
            }
            let texts: Vec<String> = docs
                .iter()
                .map(|&g| documents[g].text.to_lowercase())
                .collect();
            let per: Vec<u64> = answers
                .iter()
                .map(|a| {
                    texts
                        .iter()
                        .map(|t| chunker::occurrences(t, a).len() as u64)
                        .sum()
                })
                .collect();
            let present: Vec<u64> = per.into_iter().filter(|n| *n > 0).collect();
            match present.as_slice() {
                [] => {
                    count("dropped_answer_absent");
                    continue;
                }
                [1] => {}
                _ => {
                    count("dropped_answer_repeated");
                    continue;
                }
            }
        }
        let mut q = q.clone();
        q.evidence = Some(moved);
        q.doc_ids = match o.scope {
            StitchScope::Document => Some(docs.iter().map(|&g| documents[g].id.clone()).collect()),
            StitchScope::Corpus => None,
        };
        questions.push(q);
    }
    let lens: Vec<u64> = documents
        .iter()
        .map(|d| d.text.chars().count() as u64)
        .collect();
    counts.insert("documents".into(), documents.len() as u64);
    counts.insert("source_documents".into(), source.documents.len() as u64);
    counts.insert("source_questions".into(), source.questions.len() as u64);
    counts.insert("questions".into(), questions.len() as u64);
    counts.insert(
        "min_document_chars".into(),
        lens.iter().copied().min().unwrap_or(0),
    );
    counts.insert(
        "max_document_chars".into(),
        lens.iter().copied().max().unwrap_or(0),
    );
    Ok(Stitched {
        documents,
        questions,
        placements,
        counts,
    })
}

/// Stitches `source` and writes dataset `name` into `store` (`documents.jsonl`,
/// `questions.jsonl`, `stitch.jsonl`, then `manifest.json` last, in a work directory renamed
/// into place by [`crate::io::write_into_store`]; its warnings go to `warnings`): its input key
/// (`sha256`) covers the source manifest's sha256, [`STITCH_RULE`] and the options.
///
/// # Errors
/// Any error of [`stitch`]; an existing dataset `name` without `force`; `name` equal to the
/// source; another process writing `name`; a failed write.
pub fn write_stitched(
    source: &Dataset,
    name: &str,
    store: &std::path::Path,
    o: &StitchOptions,
    force: bool,
    warnings: &mut Vec<String>,
) -> Result<DatasetManifest> {
    if name == source.name {
        bail!("data stitch: give the stitched dataset a name other than its source {name:?}");
    }
    let dir = store.join(name);
    if dir.exists() && !force {
        bail!(
            "{}: a dataset of this name exists; give --force to replace it",
            dir.display()
        );
    }
    let s = stitch(source, o)?;
    if s.questions.is_empty() {
        bail!(
            "dataset {}: no question is left after stitching (counts: {:?}); the questions need \
             evidence spans, and with --unique-answers an answer that occurs once",
            source.name,
            s.counts
        );
    }
    let options = serde_json::to_string(o).expect("options serialise");
    let manifest = DatasetManifest {
        name: name.to_string(),
        source: format!(
            "{} stitched into documents of at least {} characters",
            source.name, o.min_chars
        ),
        version: format!(
            "{STITCH_RULE}; {options}; from {} (manifest sha256 {})",
            source.manifest.version, source.manifest_sha256
        ),
        sha256: sha256_hex(
            format!(
                "{}\u{1f}{STITCH_RULE}\u{1f}{options}",
                source.manifest_sha256
            )
            .as_bytes(),
        ),
        license: source.manifest.license.clone(),
        counts: s.counts,
        notes: vec![
            "Bhat et al. 2025 (arXiv 2505.21700) §3: short documents concatenated in source order \
             into documents of at least min_chars characters (the last short one joins the one \
             before); evidence moved by its document's offset; rule in datasets::stitch"
                .into(),
            "stitch.jsonl: where each source document went (stitched id, byte offset, length)"
                .into(),
        ],
        files: BTreeMap::new(),
    };
    // All or nothing (a work directory renamed into place, under the dataset's lock): a kill
    // or a full disk leaves the old dataset as it was.
    crate::io::write_into_store(store, name, warnings, |tmp| {
        crate::import::write_dataset(tmp, &s.documents, &s.questions)?;
        crate::io::write_jsonl(&tmp.join("stitch.jsonl"), &s.placements)?;
        let m = crate::import::finish(tmp, manifest)?;
        crate::Dataset::load(tmp).context("the stitched dataset does not load back")?;
        Ok(m)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(texts: &[&str], questions: Vec<Question>) -> Dataset {
        Dataset {
            name: "src".into(),
            dir: std::path::PathBuf::new(),
            documents: texts
                .iter()
                .enumerate()
                .map(|(i, t)| Document {
                    id: format!("d{i}"),
                    title: String::new(),
                    text: t.to_string(),
                    source: String::new(),
                    license: "L".into(),
                })
                .collect(),
            questions,
            manifest: DatasetManifest {
                name: "src".into(),
                source: String::new(),
                version: String::new(),
                sha256: String::new(),
                license: String::new(),
                counts: BTreeMap::new(),
                notes: Vec::new(),
                files: BTreeMap::new(),
            },
            manifest_sha256: "m".into(),
            files_sha256: BTreeMap::new(),
        }
    }

    fn q(id: &str, doc: &str, start: usize, end: usize, answer: &str) -> Question {
        Question {
            id: id.into(),
            question: "?".into(),
            options: Vec::new(),
            answer: None,
            answers: Some(vec![answer.into()]),
            subject: None,
            doc_ids: None,
            evidence: Some(vec![Evidence {
                doc_id: doc.into(),
                start,
                end,
            }]),
        }
    }

    #[test]
    fn groups_move_evidence_and_keep_unique_answers() {
        // Five documents of 10 characters ("é" is one character, two bytes). Minimum 25:
        // d0+d1+d2 (10+2+10+2+10 = 34), then d3+d4 (22 < 25): the short last group joins the
        // one before, so all five make one document.
        let texts = [
            "aaaa café!",
            "bbbbbbbbbb",
            "cccccccccc",
            "dddddddddd",
            "eeeeeeeeee",
        ];
        let questions = vec![
            q("q1", "d0", 5, 11, "café"), // once in its document
            q("q2", "d2", 0, 10, "cccc"), // overlapping occurrences: 7
            q("q3", "d3", 0, 4, "zzz"),   // absent
            Question {
                evidence: None,
                ..q("q4", "d0", 0, 1, "a")
            },
        ];
        let src = ds(&texts, questions);
        let o = StitchOptions {
            min_chars: 25,
            unique_answers: true,
            separator: "\n\n".into(),
            scope: StitchScope::Document,
        };
        let s = stitch(&src, &o).unwrap();
        assert_eq!(
            s.documents.len(),
            1,
            "the short last group joins the one before"
        );
        let o = StitchOptions { min_chars: 20, ..o };
        let s = stitch(&src, &o).unwrap();
        // d0+d1 = 22 ≥ 20; d2+d3 = 22; d4 alone (10) joins d2+d3.
        let ids: Vec<&str> = s.placements.iter().map(|p| p.doc_id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "stitched-0001",
                "stitched-0001",
                "stitched-0002",
                "stitched-0002",
                "stitched-0002"
            ]
        );
        assert_eq!(
            s.documents[1].text,
            "cccccccccc\n\ndddddddddd\n\neeeeeeeeee"
        );
        // Every placement slices back to its source text.
        for p in &s.placements {
            let d = s.documents.iter().find(|d| d.id == p.doc_id).unwrap();
            let src_doc = src.documents.iter().find(|d| d.id == p.source_id).unwrap();
            assert_eq!(&d.text[p.offset..p.offset + p.len], src_doc.text);
        }
        assert_eq!(s.questions.len(), 1);
        let kept = &s.questions[0];
        let e = &kept.evidence.as_ref().unwrap()[0];
        assert_eq!(&s.documents[0].text[e.start..e.end], "café!");
        assert_eq!(kept.doc_ids.as_deref().unwrap(), ["stitched-0001"]);
        assert_eq!(s.counts["dropped_answer_repeated"], 1);
        assert_eq!(s.counts["dropped_answer_absent"], 1);
        assert_eq!(s.counts["dropped_no_evidence"], 1);
        // Without the answer filter every question with evidence stays; corpus scope.
        let o = StitchOptions {
            unique_answers: false,
            scope: StitchScope::Corpus,
            ..o
        };
        let s = stitch(&src, &o).unwrap();
        assert_eq!(s.questions.len(), 3);
        assert!(s.questions.iter().all(|q| q.doc_ids.is_none()));
        // Too little text for one document.
        let o = StitchOptions {
            min_chars: 1000,
            ..o
        };
        assert!(
            format!("{:#}", stitch(&src, &o).unwrap_err()).contains("fewer than --min-chars 1000")
        );
    }

    #[test]
    fn overlapping_occurrences() {
        assert_eq!(chunker::occurrences("aaaa", "aa").len(), 3);
        assert_eq!(chunker::occurrences("é é", "é").len(), 2);
        assert_eq!(chunker::occurrences("abc", "d").len(), 0);
    }
}
