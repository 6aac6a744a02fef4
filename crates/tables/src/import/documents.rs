//! The documents of `data import`: a folder of .txt/.md/.html files (walked in name order,
//! links followed once, each file's id from its path) or a table, read into [`Document`]s
//! before the questions, whose evidence is resolved against their texts. Moved out of
//! `import.rs` unchanged.

use super::*;

/// Where documents came from, for the manifest.
pub(super) struct DocumentsRead {
    pub(super) docs: Vec<Document>,
    /// Ids of the documents whose file began with a UTF-8 byte-order mark (dropped from the
    /// text; `--evidence-units python-chars` counts it).
    pub(super) bom: std::collections::HashSet<String>,
    /// (file, sha256) of every source file read.
    pub(super) sources: Vec<(String, String)>,
    pub(super) counts: BTreeMap<String, u64>,
    pub(super) notes: Vec<String>,
}

/// The file kinds a document folder may hold.
pub(super) fn folder_kind(p: &Path) -> Option<&'static str> {
    match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
        "txt" => Some("txt"),
        "md" | "markdown" => Some("md"),
        "html" | "htm" => Some("html"),
        _ => None,
    }
}

/// What a folder walk has seen: each directory and file by (device, inode), so that a
/// symbolic link to a folder already walked (`ln -s . self`, `sub/up -> ..`: a loop) or to a
/// file already read is followed once, never again.
#[derive(Default)]
pub(super) struct Walk {
    pub(super) seen_dirs: HashMap<(u64, u64), PathBuf>,
    pub(super) seen_files: HashMap<(u64, u64), PathBuf>,
    pub(super) repeated: u64,
}

pub(super) fn file_id(p: &Path) -> Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).with_context(|| {
        format!(
            "cannot read {} (a broken symbolic link, or no permission); remove it or fix it",
            p.display()
        )
    })?;
    // A FIFO would block the read forever and a device (`ln -s /dev/zero`) never ends.
    if !m.is_file() && !m.is_dir() {
        anyhow::bail!(
            "{} is not a regular file or folder (a FIFO, socket or device, or a link to one):              a document is read whole, which this cannot be; remove it from the documents folder",
            p.display()
        );
    }
    Ok((m.dev(), m.ino()))
}

pub(super) fn walk_folder(
    root: &Path,
    dir: &Path,
    out: &mut Vec<PathBuf>,
    log: &mut ImportLog,
    walk: &mut Walk,
) -> Result<()> {
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let id = file_id(dir)?;
    if let Some(first) = walk.seen_dirs.get(&id) {
        walk.repeated += 1;
        log.warnings.push(format!(
            "{}: the folder {} again (a symbolic link), skipped",
            rel(dir),
            if first.as_os_str().is_empty() {
                "itself".to_string()
            } else {
                first.display().to_string()
            }
        ));
        return Ok(());
    }
    walk.seen_dirs.insert(id, PathBuf::from(rel(dir)));
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot list {}", dir.display()))?;
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            log.warnings.push(format!("{}: hidden, skipped", rel(&p)));
            continue;
        }
        if p.is_dir() {
            walk_folder(root, &p, out, log, walk)?;
            continue;
        }
        let id = file_id(&p)?;
        if let Some(first) = walk.seen_files.get(&id) {
            walk.repeated += 1;
            log.warnings.push(format!(
                "{}: the same file as {} (a link), skipped",
                rel(&p),
                first.display()
            ));
            continue;
        }
        walk.seen_files.insert(id, PathBuf::from(rel(&p)));
        out.push(p);
    }
    Ok(())
}

/// Documents from a folder: one document per .txt/.md/.html file, id = the path relative to
/// the folder with `/` separators (whitespace as `_`), files in sorted path order.
pub(super) fn folder_documents(
    root: &Path,
    license: &str,
    ids_from: FolderIds,
    log: &mut ImportLog,
) -> Result<DocumentsRead> {
    let mut files = Vec::new();
    let mut walk = Walk::default();
    walk_folder(root, root, &mut files, log, &mut walk)?;
    let mut out = DocumentsRead {
        docs: Vec::new(),
        bom: Default::default(),
        sources: Vec::new(),
        counts: BTreeMap::new(),
        notes: vec![match ids_from {
            FolderIds::Path => "documents: one per .txt/.md/.html file of the folder (searched recursively, sorted by \
             path); id = the relative path with `/` separators and whitespace as `_`; .txt and .md \
             text verbatim (a UTF-8 byte-order mark dropped), .html through an HTML parser \
             (visible text, paragraphs separated by a blank line); title = the first `# ` heading \
             (.md), <title> or the first <h1> (.html), else the file name",
            FolderIds::Stem => "documents: one per .txt/.md/.html file of the folder (searched recursively, sorted by \
             path); id = the relative path without the file's extension (--folder-ids stem), with \
             `/` separators and whitespace as `_`; .txt and .md text verbatim (a UTF-8 byte-order \
             mark dropped), .html through an HTML parser (visible text, paragraphs separated by a \
             blank line); title = the first `# ` heading (.md), <title> or the first <h1> (.html), \
             else the file name",
        }
        .into()],
    };
    if walk.repeated > 0 {
        out.counts
            .insert("skipped_repeated_by_links".into(), walk.repeated);
    }
    let mut ids: HashMap<String, PathBuf> = HashMap::new();
    for p in files {
        let rel = p.strip_prefix(root).unwrap_or(&p);
        let rel_s = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let Some(kind) = folder_kind(&p) else {
            *out.counts.entry("skipped_other_files".into()).or_default() += 1;
            log.warnings
                .push(format!("{rel_s}: not .txt, .md or .html, skipped"));
            continue;
        };
        let bytes = std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?;
        out.sources.push((rel_s.clone(), sha256_hex(&bytes)));
        let raw = String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{}: not UTF-8 (invalid byte at offset {}); convert the file to UTF-8",
                p.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        let had_bom = raw.starts_with('\u{feff}');
        let raw = raw.strip_prefix('\u{feff}').unwrap_or(&raw);
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (title, text) = match kind {
            "html" => {
                let h = html_to_text(raw);
                (if h.title.is_empty() { stem } else { h.title }, h.text)
            }
            "md" => {
                let title = raw
                    .lines()
                    .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_string()))
                    .filter(|t| !t.is_empty())
                    .unwrap_or(stem);
                (title, raw.to_string())
            }
            _ => (stem, raw.to_string()),
        };
        if text.trim().is_empty() {
            *out.counts
                .entry("skipped_empty_documents".into())
                .or_default() += 1;
            log.warnings.push(format!("{rel_s}: no text, skipped"));
            continue;
        }
        let id = match ids_from {
            FolderIds::Path => clean_id(&rel_s),
            FolderIds::Stem => clean_id(
                &rel.with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            ),
        };
        if let Some(prev) = ids.insert(id.clone(), p.clone()) {
            bail!(
                "{} and {}: both become document id `{id}` (whitespace is written as `_`{}); rename one",
                prev.display(),
                p.display(),
                if ids_from == FolderIds::Stem {
                    ", and --folder-ids stem drops the extension"
                } else {
                    ""
                }
            );
        }
        *out.counts.entry(format!("{kind}_documents")).or_default() += 1;
        if had_bom {
            out.bom.insert(id.clone());
        }
        out.docs.push(Document {
            id,
            title,
            text,
            source: rel_s,
            license: license.to_string(),
        });
    }
    Ok(out)
}

/// Documents from a table: one per row, with the id, text and optional title columns.
pub(super) fn table_documents(args: &ImportArgs) -> Result<DocumentsRead> {
    let t = read_table(&args.documents)?;
    t.require(&args.doc_id, "--doc-id")?;
    t.require(&args.doc_text, "--doc-text")?;
    if let Some(c) = &args.doc_title {
        t.require(c, "--doc-title")?;
    }
    let table_name = args
        .documents
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut docs = Vec::with_capacity(t.rows.len());
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut errors = Vec::new();
    for i in 0..t.rows.len() {
        let mut one = || -> Result<Document> {
            let id = req_string(&t, i, &args.doc_id)?;
            if let Some(prev) = ids.insert(id.clone(), i) {
                bail!(
                    "{}: document id `{id}` repeats row {}; ids must be unique",
                    at_col(&t, i, &args.doc_id),
                    prev + 1
                );
            }
            let text = match cell(&t, i, &args.doc_text) {
                Value::String(s) if !s.trim().is_empty() => s.clone(),
                Value::String(_) | Value::Null => bail!(
                    "{}: empty text; drop the row or give the document its text",
                    at_col(&t, i, &args.doc_text)
                ),
                other => bail!(
                    "{}: expected a string, found {}",
                    at_col(&t, i, &args.doc_text),
                    show(other)
                ),
            };
            let title = match &args.doc_title {
                Some(c) => opt_string(&t, i, c)?.unwrap_or_default(),
                None => String::new(),
            };
            Ok(Document {
                id,
                title,
                text,
                // The file name, not its path: the documents' content (and so every cell's
                // identity) must not depend on where the table was when it was imported.
                source: format!("{table_name}, row {}", i + 1),
                license: args.license.clone(),
            })
        };
        match one() {
            Ok(d) => docs.push(d),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if !errors.is_empty() {
        bail!("{}", row_errors(&t, &errors));
    }
    let mut counts = BTreeMap::new();
    counts.insert("table_documents".into(), docs.len() as u64);
    Ok(DocumentsRead {
        docs,
        bom: Default::default(),
        sources: vec![(base_name(&args.documents), sha256_file(&args.documents)?)],
        counts,
        notes: vec![format!(
            "documents: one per row of {} ({}); id = `{}`, text = `{}` verbatim, title = {}",
            base_name(&args.documents),
            <&str>::from(t.format),
            args.doc_id,
            args.doc_text,
            args.doc_title
                .as_ref()
                .map(|c| format!("`{c}`"))
                .unwrap_or_else(|| "none".into())
        )],
    })
}

/// The documents of a folder as `data import` reads them (one per .txt/.md/.html file; ids,
/// titles and text by the rules in the returned notes), for commands that need documents
/// without questions (`data generate --from FOLDER`).
#[derive(Debug, Clone)]
pub struct FolderDocuments {
    /// The documents, in sorted path order.
    pub docs: Vec<Document>,
    /// Ids of the documents whose file began with a UTF-8 byte-order mark (dropped from the
    /// text).
    pub bom: std::collections::HashSet<String>,
    /// `(relative path, sha256 of the file)` of every file read, in the same order.
    pub sources: Vec<(String, String)>,
    /// Counts of skipped files by reason (`skipped_other_files`, `skipped_empty_documents`, …).
    pub counts: BTreeMap<String, u64>,
    /// How ids, titles and texts were made (for a manifest).
    pub notes: Vec<String>,
}

/// The content identity of documents read from files: sha256 of the lines
/// `relative path<TAB>sha256 of the file`, one per file in reading order (what a manifest
/// records of a documents folder).
pub fn sources_sha256(sources: &[(String, String)]) -> String {
    sha256_hex(
        sources
            .iter()
            .map(|(f, h)| format!("{f}\t{h}\n"))
            .collect::<String>()
            .as_bytes(),
    )
}

/// Reads the documents of folder `root` as `data import` does ([`FolderDocuments`]).
///
/// # Errors
/// An unreadable folder or file, a file that is not UTF-8, or two files that make one id,
/// naming the file.
pub fn read_folder(
    root: &Path,
    license: &str,
    ids_from: FolderIds,
    log: &mut ImportLog,
) -> Result<FolderDocuments> {
    let r = folder_documents(root, license, ids_from, log)?;
    Ok(FolderDocuments {
        docs: r.docs,
        bom: r.bom,
        sources: r.sources,
        counts: r.counts,
        notes: r.notes,
    })
}
