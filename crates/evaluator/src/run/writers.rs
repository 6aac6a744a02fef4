//! A cell's side files: its TREC run file and, for EAR cells, its explain lines.

use super::*;

/// Writes the cell's TREC run file `trec/CELL.run` (`qid Q0 docid rank score tag`); every
/// passage of a rank gets its own line, with the rank's score.
pub(super) fn write_trec(
    dir: &Path,
    cell_id: &str,
    questions: &[Question],
    ranked: &[Vec<Ranked>],
    k: usize,
) -> Result<()> {
    let mut buf = Vec::new();
    {
        let mut w = retriever::trec::RunWriter::new(&mut buf, cell_id)?;
        for (q, r) in questions.iter().zip(ranked) {
            let lines: Vec<(String, f64)> = r
                .iter()
                .take(k)
                .flat_map(|g| g.chunks.iter().map(move |c| (c.id(), g.score)))
                .collect();
            w.write_ranking(&q.id, &lines)?;
        }
    }
    write_atomic(&dir.join("trec").join(format!("{cell_id}.run")), &buf)
}

/// An EAR result as ranks: each passage (window, parent or fallback parent), followed by its
/// summary sentences.
/// Writes `explain/CELL.jsonl` for an EAR cell: per question (in order) its anchors, the
/// bookkeeping of [`retriever::ear::EarStats`], its failure attribution and, per retrieved
/// passage, the matched anchors (query side and corpus side, kinds, normalised forms, byte
/// offsets and texts) and the score parts. Read by `chunkbench explain`.
pub(super) fn write_explain(
    dir: &Path,
    cell_id: &str,
    questions: &[Question],
    results: &[retriever::ear::EarResult],
    rows: &[QuestionRow],
    k: usize,
    docs: &[chunker::Document],
) -> Result<()> {
    let mut out = Vec::new();
    for ((q, r), row) in questions.iter().zip(results).zip(rows) {
        let record = reporting::explain::ExplainLine::of(q, r, row, k, docs);
        // Through a Value: keys sorted, as the files have always been written.
        let line = serde_json::to_value(&record)?;
        serde_json::to_writer(&mut out, &line)?;
        out.push(b'\n');
    }
    write_atomic(&dir.join("explain").join(format!("{cell_id}.jsonl")), &out)
}
