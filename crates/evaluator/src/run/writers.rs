//! A cell's side files: its TREC run file and, when its strategy explains its questions, its explain lines.

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

/// Writes `explain/CELL.jsonl` when the cell's strategy explains its questions
/// ([`QuestionRecord::explain`]; EAR: per question its anchors, their matching, its failure
/// attribution and, per retrieved passage, the matched anchors and the score parts), one line
/// per question that has one, in question order. Read by `chunkbench explain` and the report.
pub(super) fn write_explain(
    dir: &Path,
    cell_id: &str,
    questions: &[Question],
    records: &[Option<Arc<dyn QuestionRecord>>],
    rows: &[QuestionRow],
    k: usize,
    docs: &[chunker::Document],
) -> Result<()> {
    let mut out = Vec::new();
    let mut any = false;
    for ((q, record), row) in questions.iter().zip(records).zip(rows) {
        let Some(line) = record
            .as_ref()
            .map(|r| r.explain(q, row, k, docs))
            .transpose()?
            .flatten()
        else {
            continue;
        };
        any = true;
        serde_json::to_writer(&mut out, &line)?;
        out.push(b'\n');
    }
    if !any {
        return Ok(());
    }
    write_atomic(&dir.join("explain").join(format!("{cell_id}.jsonl")), &out)
}
