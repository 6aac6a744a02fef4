//! Users' tables — JSON lines, CSV and Parquet — read with polars into rows of JSON values,
//! so that the column mapping ([`crate::import`]) sees one shape whatever the file format.
//!
//! - **Parquet** as the Hugging Face hub exports it: list columns become JSON arrays, struct
//!   columns JSON objects, integers stay integers.
//! - **CSV** with a header row; every cell is read as a string (no type inference: a column of
//!   ids such as `007` keeps its zeros, and the mapping parses numbers where it needs them). A
//!   cell holding a JSON array (`["a", "b"]`) can stand for a list column.
//! - **JSON lines** (`.jsonl`, `.ndjson`): one object per line; the schema is inferred from
//!   every line, not a sample, so a late row of another type is never silently nulled.
//!
//! Rows are numbered from 1 in file order (for CSV: data rows after the header), which is the
//! number every error names.

use anyhow::{bail, Context, Result};
use polars::prelude::*;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The table formats [`read_table`] understands, chosen by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum TableFormat {
    /// `.jsonl` or `.ndjson`: one JSON object per line.
    Jsonl,
    /// `.csv`: comma-separated with a header row.
    Csv,
    /// `.parquet`.
    Parquet,
}

impl TableFormat {
    /// The format of `path` by its extension (case-insensitive), `None` for anything else.
    pub fn of(path: &Path) -> Option<TableFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" | "ndjson" => Some(TableFormat::Jsonl),
            "csv" => Some(TableFormat::Csv),
            "parquet" => Some(TableFormat::Parquet),
            _ => None,
        }
    }
}

/// A table read into memory: its column names in file order and one JSON object per row
/// (a column's value is `null` where the row has none).
#[derive(Debug, Clone)]
pub struct Table {
    /// The file it was read from.
    pub path: PathBuf,
    /// How it was read.
    pub format: TableFormat,
    /// Column names in file order.
    pub columns: Vec<String>,
    /// Rows in file order.
    pub rows: Vec<Map<String, Value>>,
}

impl Table {
    /// `"FILE, row N"` for the 0-based row index `i` (rows are numbered from 1).
    pub fn at(&self, i: usize) -> String {
        format!("{}, row {}", self.path.display(), i + 1)
    }

    /// Errors unless the table has column `name`; the error lists the columns it does have.
    pub fn require(&self, name: &str, flag: &str) -> Result<()> {
        if self.columns.iter().any(|c| c == name) {
            return Ok(());
        }
        bail!(
            "{}: no column `{name}` (given by {flag}); the columns are: {}",
            self.path.display(),
            self.columns.join(", ")
        )
    }
}

/// Reads a JSON-lines, CSV or Parquet file (by extension) with polars.
///
/// # Errors
/// An unknown extension, an unreadable or malformed file (polars' message, with the path), or
/// an empty table (no rows).
pub fn read_table(path: &Path) -> Result<Table> {
    let Some(format) = TableFormat::of(path) else {
        bail!(
            "{}: not a table this importer reads; give a .jsonl/.ndjson, .csv or .parquet file",
            path.display()
        );
    };
    let df = read_frame(path, format).with_context(|| {
        format!(
            "{}: cannot read as {}",
            path.display(),
            <&str>::from(format)
        )
    })?;
    let columns: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let rows = frame_rows(df).with_context(|| {
        format!(
            "{}: cannot convert the table's rows to JSON",
            path.display()
        )
    })?;
    if rows.is_empty() {
        bail!("{}: the table has no rows", path.display());
    }
    Ok(Table {
        path: path.to_path_buf(),
        format,
        columns,
        rows,
    })
}

fn read_frame(path: &Path, format: TableFormat) -> Result<DataFrame> {
    Ok(match format {
        TableFormat::Csv => CsvReadOptions::default()
            .with_has_header(true)
            // Every column as a string: no inference, no silently reinterpreted ids.
            .with_infer_schema_length(Some(0))
            .try_into_reader_with_file_path(Some(path.to_path_buf()))?
            .finish()?,
        TableFormat::Parquet => ParquetReader::new(std::fs::File::open(path)?).finish()?,
        TableFormat::Jsonl => JsonReader::new(std::fs::File::open(path)?)
            .with_json_format(JsonFormat::JsonLines)
            // None = infer the schema from every record.
            .infer_schema_len(None)
            .finish()?,
    })
}

/// The frame's rows as JSON objects, through polars' own JSON-lines writer (which maps list,
/// struct and numeric columns to their JSON forms).
fn frame_rows(mut df: DataFrame) -> Result<Vec<Map<String, Value>>> {
    let mut buf = Vec::new();
    JsonWriter::new(&mut buf)
        .with_json_format(JsonFormat::JsonLines)
        .finish(&mut df)?;
    let text = String::from_utf8(buf).context("polars wrote JSON that is not UTF-8")?;
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| match serde_json::from_str::<Value>(l)? {
            Value::Object(m) => Ok(m),
            other => bail!("a row is not a JSON object: {other}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_stay_strings_and_jsonl_infers_over_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("q.csv");
        std::fs::write(&csv, "id,answer\n007,1\n008,\"B, really\"\n").unwrap();
        let t = read_table(&csv).unwrap();
        assert_eq!(t.columns, ["id", "answer"]);
        assert_eq!(t.rows[0]["id"], "007");
        assert_eq!(t.rows[0]["answer"], "1");
        assert_eq!(t.rows[1]["answer"], "B, really");
        assert_eq!(t.at(1), format!("{}, row 2", csv.display()));

        let jl = dir.path().join("q.jsonl");
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&format!(
                "{{\"id\": \"q{i}\", \"options\": [\"a\", \"b\"]}}\n"
            ));
        }
        text.push_str("{\"id\": \"late\", \"options\": [\"x\", \"y\"], \"extra\": 5}\n");
        std::fs::write(&jl, text).unwrap();
        let t = read_table(&jl).unwrap();
        assert_eq!(t.rows.len(), 301);
        assert_eq!(t.rows[300]["extra"], 5);
        assert_eq!(t.rows[300]["options"], serde_json::json!(["x", "y"]));
        assert!(t.rows[0]["extra"].is_null());
    }

    #[test]
    fn bad_tables_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.xlsx");
        std::fs::write(&p, "x").unwrap();
        let e = format!("{:#}", read_table(&p).unwrap_err());
        assert!(e.contains("q.xlsx") && e.contains(".parquet"), "{e}");
        let p = dir.path().join("q.parquet");
        std::fs::write(&p, "not parquet").unwrap();
        let e = format!("{:#}", read_table(&p).unwrap_err());
        assert!(e.contains("q.parquet: cannot read as parquet"), "{e}");
        let p = dir.path().join("e.csv");
        std::fs::write(&p, "id,text\n").unwrap();
        let e = format!("{:#}", read_table(&p).unwrap_err());
        assert!(e.contains("no rows"), "{e}");
    }
}
