//! Reading a run directory as the gate reads it: its resolved config and its finished cells.

use super::*;

/// One per-question row as the gate reads it from `cells/ID.csv` (other columns are ignored,
/// so a baseline stays readable when rows gain columns; metric columns are read by name).
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct GateRow {
    cell_id: String,
    question_id: String,
    /// Absent in rows written before the column existed.
    #[serde(default)]
    question_doc: String,
    #[serde(default)]
    subject: String,
    /// Empty for a cell without a reader.
    correct: Option<u8>,
    words: u64,
    /// Absent in rows written before readers flagged invalid answers.
    #[serde(default)]
    invalid: u8,
}

impl GateRow {
    /// The row as the verdict code reads rows.
    fn into_row(self, metrics: retriever::metrics::MetricValues) -> QuestionRow {
        QuestionRow {
            cell_id: self.cell_id,
            question_id: self.question_id,
            question_doc: self.question_doc,
            subject: self.subject,
            correct: self.correct,
            words: self.words as usize,
            invalid: self.invalid,
            metrics,
            ..QuestionRow::default()
        }
    }
}

/// One finished cell of a run: its record and its rows.
#[derive(Debug, Clone)]
pub(super) struct RunCell {
    pub(super) record: CellRecord,
    pub(super) rows: Vec<QuestionRow>,
    /// False when `cells/ID.csv` has no `question_doc` column (written before it existed):
    /// its questions' documents are unknown, so it cannot be resampled by document.
    pub(super) has_question_doc: bool,
    /// False when `cells/ID.csv` has no `subject` column.
    pub(super) has_subject: bool,
}

/// A run directory as the gate reads it.
#[derive(Debug, Clone)]
pub(super) struct LoadedRun {
    /// The run's config.json as the runner's own types read it.
    pub(super) run: ResolvedRun,
    /// Cells by id: exactly the cells of the run's config.
    pub(super) cells: BTreeMap<String, RunCell>,
    /// Finished cells in `cells/` that are not cells of the run's config.
    pub(super) ignored: usize,
}

/// What the gate needs of a run's `config.json`, read through the types the runner wrote it
/// with (`evaluator::config::resolved_run`): never as untyped JSON with silent defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedRun {
    /// The run's `name`.
    pub name: String,
    /// The ids of the cells of the resolved configuration.
    pub cells: std::collections::BTreeSet<String>,
    /// `bootstrap_resamples`.
    pub bootstrap_resamples: usize,
    /// `seed`.
    pub seed: u64,
    /// The verdict rules the config declares (`primary`, `margin`, `resample`, `alpha`,
    /// `effect`, `planned`).
    pub verdict: crate::verdicts::VerdictSettings,
}

/// Reads a run's `config.json` bytes as [`ResolvedRun`] (the pipeline's
/// `evaluator::config::resolved_run`). An error means the file is not a resolved config of
/// this version.
pub type ResolveRun = dyn Fn(&[u8]) -> Result<ResolvedRun>;

/// Reads `dir/config.json` and every `dir/cells/ID.{json,csv}`.
pub(super) fn load_run(dir: &Path, role: &str, resolve: &ResolveRun) -> Result<LoadedRun> {
    let fix = "give the directory `chunkbench run` wrote (OUTPUT/NAME, holding config.json and \
               cells/)";
    if !dir.is_dir() {
        bail!(
            "{role} run {} does not exist or is not a directory; {fix}",
            dir.display()
        );
    }
    let cfg_path = dir.join("config.json");
    let cfg_bytes = std::fs::read(&cfg_path).with_context(|| {
        format!(
            "{role} run {}: cannot read {}; {fix}",
            dir.display(),
            cfg_path.display()
        )
    })?;
    let cells_dir = dir.join("cells");
    if !cells_dir.is_dir() {
        bail!(
            "{role} run {}: cannot read {}; {fix}",
            dir.display(),
            cells_dir.display()
        );
    }
    let run = resolve(&cfg_bytes).with_context(|| {
        format!(
            "{}: not the resolved config `chunkbench run` writes (perhaps from an older \
             version); re-run its config (`chunkbench run CONFIG`) to rewrite the run",
            cfg_path.display()
        )
    })?;
    let ids = run.cells.clone();
    let ignored = records::foreign_cells(&cells_dir, &ids).len();
    let mut cells = BTreeMap::new();
    for id in ids {
        // A cell of the config that is not finished is reported as unmatched (the other run
        // has it, this one does not), not fatal.
        if !cells_dir.join(format!("{id}.json")).exists() {
            continue;
        }
        let cell = load_cell(&cells_dir, &id)?;
        cells.insert(id, cell);
    }
    let located: Vec<records::Located<'_>> = cells
        .values()
        .map(|c: &RunCell| (&c.record, cells_dir.as_path()))
        .collect();
    records::check_consistent(&located).with_context(|| format!("{role} run {}", dir.display()))?;
    if cells.is_empty() {
        bail!(
            "{role} run {}: {} holds no finished cell (no ID.json); run it to completion, or \
             {fix}",
            dir.display(),
            cells_dir.display()
        );
    }
    Ok(LoadedRun {
        run,
        cells,
        ignored,
    })
}

/// Reads one cell's record and rows ([`records::read_cell`]: the rows must be the file
/// the record was written with) and checks that they agree with each other.
fn load_cell(cells_dir: &Path, id: &str) -> Result<RunCell> {
    let json = cells_dir.join(format!("{id}.json"));
    let csv_path = cells_dir.join(format!("{id}.csv"));
    let rerun = "delete the cell's two files and run the config again to recompute it";
    let stored = records::read_cell(cells_dir, id).map_err(|e| anyhow::anyhow!("{e}; {rerun}"))?;
    let (record, bytes) = (stored.record, stored.csv);
    let read = record.summary.accuracy.is_some();
    let mut reader = csv::Reader::from_reader(&bytes[..]);
    let headers = reader
        .headers()
        .with_context(|| format!("{}: not CSV; {rerun}", csv_path.display()))?
        .clone();
    let has_question_doc = headers.iter().any(|h| h == "question_doc");
    let has_subject = headers.iter().any(|h| h == "subject");
    let metric_at: Vec<(usize, usize)> = retriever::metrics::METRICS
        .iter()
        .enumerate()
        .filter_map(|(i, m)| headers.iter().position(|h| h == m.name).map(|p| (i, p)))
        .collect();
    let mut rows = Vec::new();
    for (i, r) in reader.records().enumerate() {
        let bad = || {
            format!(
                "{}: row {}: needs columns cell_id, question_id, correct (0 or 1, empty for a \
                 cell without a reader), words and numeric metric columns; {rerun}",
                csv_path.display(),
                i + 1
            )
        };
        let fields = r.with_context(bad)?;
        let row: GateRow = fields.deserialize(Some(&headers)).with_context(bad)?;
        let mut metrics = retriever::metrics::MetricValues::default();
        for &(m, p) in &metric_at {
            let text = fields.get(p).unwrap_or("");
            if !text.is_empty() {
                let v = text
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .with_context(bad)?;
                metrics.set(m, Some(v));
            }
        }
        if row.cell_id != id || row.correct.is_some_and(|c| c > 1) || row.correct.is_some() != read
        {
            bail!(
                "{}: row {} (question {}): cell_id {:?}, correct {:?}; expected cell_id {id:?} \
                 and correct {}; {rerun}",
                csv_path.display(),
                i + 1,
                row.question_id,
                row.cell_id,
                row.correct,
                if read {
                    "0 or 1"
                } else {
                    "empty (the cell has no reader)"
                }
            );
        }
        rows.push(row.into_row(metrics));
    }
    if rows.is_empty() {
        bail!("{}: the cell has no questions; {rerun}", csv_path.display());
    }
    let mut seen = HashSet::new();
    if let Some(dup) = rows.iter().find(|r| !seen.insert(r.question_id.as_str())) {
        bail!(
            "{}: question {} appears twice; {rerun}",
            csv_path.display(),
            dup.question_id
        );
    }
    // The record's summary was computed from exactly these rows when the cell finished.
    let s = &record.summary;
    let correct = rows.iter().filter(|r| r.correct == Some(1)).count();
    let words_mean = rows.iter().map(|r| r.words as f64).sum::<f64>() / rows.len() as f64;
    if s.n != rows.len()
        || s.correct != correct
        || (s.words_mean - words_mean).abs() > 1e-9 * words_mean.abs().max(1.0)
    {
        bail!(
            "{} and {} disagree: the record says n = {}, correct = {}, mean words {:.3}; the \
             rows give n = {}, correct = {correct}, mean words {words_mean:.3} (one of them was \
             edited or torn); {rerun}",
            json.display(),
            csv_path.display(),
            s.n,
            s.correct,
            s.words_mean,
            rows.len()
        );
    }
    Ok(RunCell {
        record,
        rows,
        has_question_doc,
        has_subject,
    })
}
