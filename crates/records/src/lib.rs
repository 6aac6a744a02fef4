//! Records defined once: what a run writes, per question and per cell, and how each record
//! becomes a table.
//!
//! - [`QuestionRow`]: one (cell, question) pair, the rows of `cells/ID.csv`, `per_question.csv`
//!   and `per_question.parquet`. Its columns, their types and their docs are listed once, in
//!   [`question_columns`]; the CSV writer ([`rows_csv`]) and the Arrow/Parquet writer
//!   ([`rows_parquet`]) both walk that table, and reading a CSV back goes through serde by
//!   column name (a test keeps the two equal).
//! - [`CellRecord`] and [`CellSummary`]: `cells/ID.json`, the aggregates every report reads
//!   ([`summarize`]); [`Comparison`]: a cell against its baseline cell.
//! - [`SummaryRow`]: one row of `summary.csv`, whose columns are [`summary_columns`] (the
//!   same [`Column`] table and writer as the per-question rows).
//! - [`ChunkLengths`]: words per chunk of one (dataset, strategy), `chunks/*.json`.
//!
//! Lists are lists: per-option reader scores, passage ids and passage scores are `Vec`s here
//! and List columns in Parquet; CSV keeps one text field per list (scores `;`-separated with 6
//! decimals, passage ids space-separated), as it always has.
//!
//! The pipeline's contract: the pipeline (`evaluator`) writes these records and the reports
//! (`reporting`: summaries, plots, report.html, `explain`, `compare`) read them, so both depend
//! on this crate and neither on the other. It depends only on the statistics (`stats`, for a
//! cell's Wilson interval and means), the registries of retrieval metrics and strategy records
//! (`retriever::metrics`, `retriever::records`) and the data format (`datasets`): a cell is
//! stored as data ([`CellKey`]: names and resolved entries as YAML values, in the pipeline's
//! field order), so readers need none of the pipeline's types. [`inputs`] holds the content
//! identities a cell was computed on.

pub mod inputs;
pub mod kind;
pub use kind::{Counter, ExplainNotes};
mod cell;
mod chunking;
mod columns;
mod rows;
mod store;
pub use cell::*;
pub use chunking::*;
pub use columns::*;
pub use rows::*;
pub use store::*;

#[cfg(test)]
mod tests {
    use super::*;
    use retriever::metrics::{MetricValues, METRICS};
    use retriever::records::RecordValues;

    /// Metric values by name (the rest empty).
    fn values(named: &[(&str, f64)]) -> MetricValues {
        let mut v = MetricValues::default();
        for &(name, x) in named {
            v.set(
                retriever::metrics::registry::index_of(name).expect(name),
                Some(x),
            );
        }
        v
    }

    fn row() -> QuestionRow {
        QuestionRow {
            cell_id: "c".into(),
            dataset: "d".into(),
            strategy: "s".into(),
            retriever: "r".into(),
            k: 3,
            reader: "l".into(),
            question_id: "q1".into(),
            question_doc: "doc-1".into(),
            subject: "physics".into(),
            gold: Some(1),
            choice: Some(1),
            correct: Some(1),
            tied: 1,
            invalid: 0,
            scores: vec![0.1, -0.9],
            tie_break: vec![0.25, 1.5],
            passages: vec![
                PassageSpan::parse("d:0-10").unwrap(),
                PassageSpan::parse("d:20-31").unwrap(),
            ],
            passage_scores: vec![1.0, 0.25],
            words: 2,
            unique_words: 2,
            chars: 9,
            tokens: Some(3),
            evidence_hit: None,
            metrics: values(&[
                ("recall", 0.5),
                ("mrr", 1.0 / 3.0),
                ("span_recall_chars", 0.25),
                ("precision_omega", 0.5),
                ("answer_recall", 1.0),
            ]),
            failure: Some(Failure::Correct),
            records: RecordValues::of(
                &retriever::ear::RECORD,
                &[Some(3), Some(1), Some(5), Some(2), Some(0)],
            ),
            reply: "max=[0.1, \"0.9\"]\nnext line".into(),
        }
    }

    /// The column table without the metric columns is serde's field list, with serde's CSV
    /// text; the metric columns are the registry's names; a row reads back equal.
    #[test]
    fn columns_equal_serde_fields_and_text() {
        let r = QuestionRow {
            scores: vec![round6(0.1), round6(-0.9)],
            ..row()
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(&r).unwrap();
        let serde_csv = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let ours = String::from_utf8(rows_csv(std::slice::from_ref(&r)).unwrap()).unwrap();
        let cols = question_columns();
        let metric_cols: Vec<usize> = (0..cols.len())
            .filter(|&i| matches!(cols[i].get, Getter::Metric { .. }))
            .collect();
        assert_eq!(
            metric_cols
                .iter()
                .map(|&i| cols[i].name)
                .collect::<Vec<_>>(),
            METRICS.iter().map(|m| m.name).collect::<Vec<_>>()
        );
        let record_cols: Vec<usize> = (0..cols.len())
            .filter(|&i| matches!(cols[i].get, Getter::Record { .. }))
            .collect();
        assert_eq!(
            record_cols
                .iter()
                .map(|&i| cols[i].name)
                .collect::<Vec<_>>(),
            [
                "anchors",
                "anchor_match",
                "windows_before",
                "windows_after",
                "fallback"
            ]
        );
        let metric_cols: Vec<usize> = metric_cols.into_iter().chain(record_cols).collect();
        let without = |text: &str| -> Vec<Vec<String>> {
            csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(text.as_bytes())
                .records()
                .map(|rec| {
                    let rec = rec.unwrap();
                    (0..rec.len())
                        .filter(|i| !metric_cols.contains(i))
                        .map(|i| rec[i].to_string())
                        .collect()
                })
                .collect()
        };
        let serde_rows: Vec<Vec<String>> = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(serde_csv.as_bytes())
            .records()
            .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(without(&ours), serde_rows);
        let back = read_rows_csv(ours.as_bytes(), "x").unwrap();
        assert_eq!(back, vec![r]);
    }

    /// A metric value that is not a number names the file, line and column; a file without
    /// a metric's column (an older version's) reads it as empty.
    #[test]
    fn metric_columns_read_by_name() {
        let text = String::from_utf8(rows_csv(&[row()]).unwrap()).unwrap();
        let bad = text.replacen(",0.5,", ",half,", 1);
        let e = format!(
            "{:#}",
            read_rows_csv(bad.as_bytes(), "cells/x.csv").unwrap_err()
        );
        assert!(
            e.contains("cells/x.csv") && e.contains("line 2") && e.contains("`recall`"),
            "{e}"
        );
        let mut rdr = csv::Reader::from_reader(text.as_bytes());
        let headers = rdr.headers().unwrap().clone();
        let keep: Vec<usize> = (0..headers.len())
            .filter(|&i| &headers[i] != "answer_recall")
            .collect();
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(keep.iter().map(|&i| &headers[i])).unwrap();
        for rec in rdr.records() {
            let rec = rec.unwrap();
            w.write_record(keep.iter().map(|&i| &rec[i])).unwrap();
        }
        let old = w.into_inner().unwrap();
        let back = read_rows_csv(&old, "old.csv").unwrap();
        assert_eq!(back[0].metrics.get("answer_recall"), None);
        assert_eq!(back[0].metrics.get("recall"), Some(0.5));
    }

    /// A cell record's metric means are one JSON key per metric, in registry order, and read
    /// back equal; unknown keys are ignored.
    #[test]
    fn metric_means_round_trip_in_registry_order() {
        let s = summarize(&[row()]);
        let json = serde_json::to_string(&s).unwrap();
        let at: Vec<usize> = METRICS
            .iter()
            .map(|m| json.find(&format!("\"{}\":", m.name)).expect(m.name))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{json}");
        let back: CellSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let extra = json.replacen('{', "{\"retired_metric\": 0.5, ", 1);
        let back: CellSummary = serde_json::from_str(&extra).unwrap();
        assert_eq!(back, s);
    }

    /// A passage id splits from the right (a document id may hold `:`), prints back as it
    /// was read, and anything else is refused when a CSV is read, naming the file and line.
    #[test]
    fn passage_spans_round_trip_their_ids() {
        let p = PassageSpan::parse("a:b:10-20").unwrap();
        assert_eq!(
            (p.doc_id.as_str(), p.span.start, p.span.end),
            ("a:b", 10, 20)
        );
        assert_eq!(p.to_string(), "a:b:10-20");
        for bad in ["doc", "doc:5", "doc:x-3", "doc:9-3"] {
            assert_eq!(PassageSpan::parse(bad), None, "{bad}");
        }
        let text = String::from_utf8(rows_csv(&[row()]).unwrap()).unwrap();
        let bad = text.replacen("d:20-31", "d:20", 1);
        let e = format!(
            "{:#}",
            read_rows_csv(bad.as_bytes(), "cells/x.csv").unwrap_err()
        );
        assert!(e.contains("cells/x.csv") && e.contains("\"d:20\""), "{e}");
    }

    /// A strategy record's aggregates are one JSON object under its key, figures in
    /// declaration order (the cell records' bytes before the registry), and read back equal;
    /// a cell whose rows carry no record has no key.
    #[test]
    fn strategy_record_summaries_keep_their_json_form() {
        let other = QuestionRow {
            records: RecordValues::default(),
            ..row()
        };
        let s = summarize(&[row(), other.clone()]);
        let json = serde_json::to_string(&s).unwrap();
        assert!(
            json.contains(
                "\"ear\":{\"exact_match\":1,\"questions\":1,\"anchors_mean\":3.0,\
                 \"windows_before_mean\":5.0,\"windows_after_mean\":2.0,\"fallbacks\":0}"
            ),
            "{json}"
        );
        assert!(json.find("\"failures\"").unwrap() < json.find("\"ear\"").unwrap());
        let back: CellSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let none = serde_json::to_string(&summarize(&[other])).unwrap();
        assert!(!none.contains("\"ear\""), "{none}");
        let text = rows_csv(&[row()]).unwrap();
        let bad = String::from_utf8(text)
            .unwrap()
            .replacen(",5,2,0,", ",5,two,0,", 1);
        let e = format!("{:#}", read_rows_csv(bad.as_bytes(), "x.csv").unwrap_err());
        assert!(e.contains("`windows_after`") && e.contains("line 2"), "{e}");
    }

    /// A row of a cell without a reader: gold, choice and correct are empty in the CSV and
    /// read back as absent; its cell has no accuracy (never a 0).
    #[test]
    fn unread_rows_have_no_accuracy() {
        let r = QuestionRow {
            gold: None,
            choice: None,
            correct: None,
            scores: vec![],
            failure: None,
            ..row()
        };
        let text = rows_csv(std::slice::from_ref(&r)).unwrap();
        let back = read_rows_csv(&text, "x").unwrap();
        assert_eq!(back, vec![r.clone()]);
        let s = summarize(&[r.clone(), r]);
        assert_eq!(
            (s.n, s.correct, s.accuracy, s.accuracy_ci_low),
            (2, 0, None, None)
        );
        assert_eq!(s.metrics.get("recall"), Some(0.5));
        assert!(s.failures.is_empty());
    }

    #[test]
    fn empty_lists_round_trip() {
        let r = QuestionRow {
            scores: vec![],
            passages: vec![],
            passage_scores: vec![],
            ..row()
        };
        let back = read_rows_csv(&rows_csv(std::slice::from_ref(&r)).unwrap(), "x").unwrap();
        assert_eq!(back, vec![r]);
    }

    #[test]
    fn bad_score_names_the_file() {
        let mut csv = String::from_utf8(rows_csv(&[row()]).unwrap()).unwrap();
        csv = csv.replace("0.100000;", "zero;");
        let e = format!(
            "{:#}",
            read_rows_csv(csv.as_bytes(), "cells/x.csv").unwrap_err()
        );
        assert!(
            e.contains("cells/x.csv") && e.contains("`zero` is not a number"),
            "{e}"
        );
    }

    #[test]
    fn parquet_has_list_columns() {
        use polars::prelude::*;
        let rows = [
            row(),
            QuestionRow {
                evidence_hit: Some(1),
                scores: vec![0.5, 0.25, 0.125],
                ..row()
            },
        ];
        let bytes = table_parquet(&question_columns(), &rows).unwrap();
        let df = ParquetReader::new(std::io::Cursor::new(bytes))
            .finish()
            .unwrap();
        assert_eq!(df.height(), 2);
        assert_eq!(df.width(), question_columns().len());
        let names: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(
            names,
            question_columns()
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
        );
        let ev = df.column("evidence_hit").unwrap();
        assert_eq!(ev.null_count(), 1);
        assert_eq!(ev.dtype(), &DataType::UInt8);
        let scores = df
            .column("scores")
            .unwrap()
            .list()
            .expect("scores is a list column");
        assert_eq!(scores.get_as_series(0).unwrap().len(), 2);
        let third = scores.get_as_series(1).unwrap();
        assert_eq!(third.dtype(), &DataType::Float64);
        assert_eq!(third.f64().unwrap().get(2), Some(0.125));
        let passages = df
            .column("passages")
            .unwrap()
            .list()
            .expect("passages is a list column");
        let first = passages.get_as_series(0).unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(first.dtype(), &DataType::String);
    }

    #[test]
    fn parquet_of_no_rows_keeps_the_list_types() {
        use polars::prelude::*;
        let bytes = table_parquet(&question_columns(), &[]).unwrap();
        let df = ParquetReader::new(std::io::Cursor::new(bytes))
            .finish()
            .unwrap();
        assert_eq!((df.height(), df.width()), (0, question_columns().len()));
        let list = |c: &str| df.column(c).unwrap().dtype().clone();
        assert_eq!(list("scores"), DataType::List(Box::new(DataType::Float64)));
        assert_eq!(list("passages"), DataType::List(Box::new(DataType::String)));
    }

    #[test]
    fn empty_cell_has_no_nan() {
        let s = summarize(&[]);
        assert_eq!(s.n, 0);
        assert!(s.accuracy.is_none() && s.words_mean == 0.0 && s.evidence_hit_rate.is_none());
    }
}
