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
    /// Columns whose values have no text form (binary data such as a Hugging Face `image`
    /// column, Python objects), with what they hold: left out of `rows`, and an error only
    /// when a flag maps them ([`Table::require`]).
    pub unreadable: std::collections::BTreeMap<String, String>,
}

impl Table {
    /// `"FILE, row N"` for the 0-based row index `i` (rows are numbered from 1).
    pub fn at(&self, i: usize) -> String {
        format!("{}, row {}", self.path.display(), i + 1)
    }

    /// Errors unless the table has a readable column `name`; the error lists the columns it
    /// does have, or says what an unreadable one holds.
    pub fn require(&self, name: &str, flag: &str) -> Result<()> {
        if let Some(what) = self.unreadable.get(name) {
            // A description that carries its own fix (an integer past 64 bits) is not told
            // that it has no text form.
            let fix = if what.contains("write it as") {
                ""
            } else {
                ", which has no text form; map a text, number or list column instead"
            };
            bail!(
                "{}: column `{name}` (given by {flag}) holds {what}{fix}",
                self.path.display()
            );
        }
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

/// Reads a JSON-lines, CSV or Parquet file (by extension): JSON lines with serde_json, one
/// object per line; CSV and Parquet with polars, every column type converted to JSON by this
/// module ([`series_values`]): integers of any width, floats, booleans, text, dates, times,
/// durations and decimals (as their text), categoricals (their text), lists and fixed-size
/// lists (arrays), structs (objects); binary and object columns are [`Table::unreadable`].
///
/// # Errors
/// An unknown extension, an unreadable or malformed file (naming the line for JSON lines, and
/// polars' message otherwise, with the path), or an empty table (no rows). A failure inside
/// polars is an error naming the file, never a crash.
pub fn read_table(path: &Path) -> Result<Table> {
    let Some(format) = TableFormat::of(path) else {
        bail!(
            "{}: not a table this importer reads; give a .jsonl/.ndjson, .csv or .parquet file",
            path.display()
        );
    };
    let table = match format {
        TableFormat::Jsonl => read_jsonl(path)?,
        _ => {
            let df = guarded(path, || read_frame(path, format)).with_context(|| {
                format!(
                    "{}: cannot read as {}",
                    path.display(),
                    <&str>::from(format)
                )
            })?;
            guarded(path, || frame_table(path, format, &df)).with_context(|| {
                format!(
                    "{}: cannot convert the table's rows to JSON",
                    path.display()
                )
            })?
        }
    };
    if table.rows.is_empty() {
        bail!("{}: the table has no rows", path.display());
    }
    Ok(table)
}

/// Runs `f`, turning a panic inside it (polars asserts on inputs it does not support) into an
/// error naming `path`, with the panic message; the default panic report is silenced for it.
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    match r {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "no message".into());
            bail!(
                "{}: the table reader failed on this file ({msg}); convert it to JSON lines or \
                 CSV, or report the file",
                path.display()
            )
        }
    }
}

/// Checks what the CSV reader would refuse or misread, naming the line and the fix: bytes
/// that are not UTF-8 (a Latin-1 or Windows-1252 export), lines ended by a carriage return
/// alone (old Mac files, read as one line), and rows with more or fewer cells than the header
/// (an unquoted comma or line break).
///
/// # Errors
/// The first such problem, naming the file, the line and the fix.
fn check_csv(path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let line_of = |at: usize| bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    if let Err(e) = std::str::from_utf8(&bytes) {
        let at = e.valid_up_to();
        bail!(
            "{}: line {}: byte 0x{:02X} (offset {at}) is not UTF-8; the file is probably Latin-1 \
             or Windows-1252: save it as \"CSV UTF-8\" or convert it (`iconv -f windows-1252 -t \
             utf-8 FILE > FILE.utf8.csv`)",
            path.display(),
            line_of(at),
            bytes[at]
        );
    }
    if bytes.contains(&b'\r') && !bytes.contains(&b'\n') {
        bail!(
            "{}: its lines end with a carriage return alone (old Mac line ends), so the CSV \
             reader sees one line; convert them to line feeds (`tr '\\r' '\\n' < FILE > \
             FILE.lf.csv`)",
            path.display()
        );
    }
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(bytes.as_slice());
    let header = reader
        .headers()
        .with_context(|| format!("{}: line 1: the header cannot be read", path.display()))?
        .len();
    for (row, record) in reader.records().enumerate() {
        let record = record
            .with_context(|| format!("{}: row {}: cannot be read", path.display(), row + 1))?;
        if record.len() != header && !(record.len() == 1 && record[0].is_empty()) {
            let line = record.position().map_or(row + 2, |p| p.line() as usize);
            bail!(
                "{}: line {line} (row {}) has {} cells and the header {header}: a cell holding \
                 a comma, a quote or a line break must be in double quotes (\"a, b\"); fix the \
                 row or export the table again",
                path.display(),
                row + 1,
                record.len()
            );
        }
    }
    Ok(())
}

fn read_frame(path: &Path, format: TableFormat) -> Result<DataFrame> {
    match format {
        TableFormat::Csv => check_csv(path)?,
        TableFormat::Parquet => check_parquet_counts(path)?,
        TableFormat::Jsonl => {}
    }
    Ok(match format {
        TableFormat::Csv => CsvReadOptions::default()
            .with_has_header(true)
            // Every column as a string: no inference, no silently reinterpreted ids.
            .with_infer_schema_length(Some(0))
            .try_into_reader_with_file_path(Some(path.to_path_buf()))?
            .finish()?,
        TableFormat::Parquet => match ParquetReader::new(std::fs::File::open(path)?).finish() {
            Ok(df) => df,
            Err(whole) => parquet_by_column(path, &whole)?,
        },
        TableFormat::Jsonl => unreachable!("JSON lines are read by read_jsonl"),
    })
}

/// Refuses a Parquet file whose declared counts polars-parquet 0.55 would allocate by: it
/// casts a page's `num_values` (a signed 32-bit field) to `usize` and reserves a validity
/// bitmap of that many bits, so a damaged page declaring −1 values made it reserve 2^61 bytes
/// and abort the process, which no error handling can catch (fuzz seed
/// `import_table/damaged_page_count`). Every
/// column chunk's and data page's value count must be non-negative, within the chunk's, and
/// at most [`MAX_VALUES_PER_BYTE`] per byte of the file (or 10^6); rows likewise. A file
/// whose metadata or pages polars cannot read at all is left to polars' own error.
///
/// # Errors
/// The file, row group, column and the declared count, with the fix.
fn check_parquet_counts(path: &Path) -> Result<()> {
    use polars_parquet::parquet::page::CompressedPage;
    use polars_parquet::parquet::read::{get_page_iterator, read_metadata};
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let len = bytes.len();
    let Ok(meta) = read_metadata(&mut std::io::Cursor::new(&bytes)) else {
        return Ok(());
    };
    let cap = len.saturating_mul(MAX_VALUES_PER_BYTE).max(1_000_000);
    let damaged = |what: String| {
        anyhow::anyhow!(
            "{what}: the file is damaged or was written by a broken writer; export it again"
        )
    };
    let too_many = |what: String, n: i64| {
        if n < 0 {
            damaged(format!("{what} declares {n} values (a negative count)"))
        } else {
            damaged(format!(
                "{what} declares {n} values, more than this {len}-byte file can hold \
                 ({MAX_VALUES_PER_BYTE} a byte at most)"
            ))
        }
    };
    if meta.num_rows > cap {
        return Err(damaged(format!(
            "the footer declares {} rows, more than this {len}-byte file can hold \
             ({MAX_VALUES_PER_BYTE} a byte at most)",
            meta.num_rows
        )));
    }
    let buffer = polars_buffer::Buffer::from(bytes);
    for (g, rg) in meta.row_groups.iter().enumerate() {
        for c in rg.parquet_columns() {
            let column: Vec<&str> = c
                .descriptor()
                .path_in_schema
                .iter()
                .map(|s| s.as_str())
                .collect();
            let column = column.join(".");
            let declared = c.num_values();
            let what = format!("row group {g}, column `{column}`");
            if declared < 0 || declared as usize > cap {
                return Err(too_many(what, declared));
            }
            let cursor = std::io::Cursor::new(buffer.clone());
            let Ok(pages) = get_page_iterator(c, cursor, Vec::new(), len) else {
                continue;
            };
            for page in pages {
                let page = match page {
                    Ok(CompressedPage::Data(page)) => page,
                    Ok(CompressedPage::Dict(_)) => continue,
                    // polars reports an unreadable page itself.
                    Err(_) => break,
                };
                let n = page.num_values();
                if n > i32::MAX as usize {
                    return Err(too_many(format!("{what}: a page"), i64::from(n as i32)));
                }
                if n > declared as usize {
                    return Err(damaged(format!(
                        "{what}: a page declares {n} values, more than its column chunk's \
                         {declared}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Values (or rows) a Parquet file may declare per byte it holds, before
/// [`check_parquet_counts`] calls it damaged: run-length encoding stores a run of equal values
/// in a few bytes, but a table of questions or documents holds text in every row.
const MAX_VALUES_PER_BYTE: usize = 1000;

/// A Parquet file polars refuses as a whole (a column type it cannot read, such as a
/// decimal of more than 38 digits): read column by column, so that only the columns it cannot
/// read are left out. Each of those becomes an empty (all-null) text column named as it was,
/// and [`frame_table`] records why as unreadable — an error only when the import maps it.
///
/// # Errors
/// A file whose schema cannot be read, or one where no column can be read (`whole`'s error).
fn parquet_by_column(path: &Path, whole: &PolarsError) -> Result<DataFrame> {
    let open =
        || std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()));
    let schema = ParquetReader::new(open()?)
        .schema()
        .map_err(|e| anyhow::anyhow!("{whole} (and its schema: {e})"))?;
    // The height is the read columns' (never the file's metadata, which a damaged file may
    // set to anything: a null column of that height would be allocated whole).
    let mut read: Vec<Option<Column>> = Vec::new();
    let mut n_rows: Option<usize> = None;
    for name in schema.iter_names() {
        let one = ParquetReader::new(open()?)
            .with_columns(Some(vec![name.to_string()]))
            .finish();
        match one {
            Ok(df) if df.width() == 1 && n_rows.is_none_or(|n| n == df.height()) => {
                n_rows = Some(df.height());
                read.push(Some(df.columns()[0].clone()));
            }
            _ => read.push(None),
        }
    }
    let Some(n_rows) = n_rows else {
        bail!("{whole}");
    };
    let columns = schema
        .iter_names()
        .zip(read)
        .map(|(name, c)| {
            c.unwrap_or_else(|| {
                Column::full_null(
                    format!("{UNREADABLE_PREFIX}{name}").into(),
                    n_rows,
                    &DataType::String,
                )
            })
        })
        .collect();
    Ok(DataFrame::new(n_rows, columns)?)
}

/// The name prefix [`parquet_by_column`] gives a column polars could not read, which
/// [`frame_table`] turns back into the column's name, recorded as unreadable.
const UNREADABLE_PREFIX: &str = "\u{1}unreadable\u{1}";

/// JSON lines: one object per non-blank line, numbered from 1; columns in name order. A
/// top-level integer too large for 64 bits cannot be read exactly (serde_json reads it as the
/// nearest float): its column is [`Table::unreadable`], naming the first line, never rounded
/// silently.
fn read_jsonl(path: &Path) -> Result<Table> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "{}: cannot read as UTF-8 text (JSON lines must be UTF-8)",
            path.display()
        )
    })?;
    let mut columns = std::collections::BTreeSet::new();
    let mut unreadable = std::collections::BTreeMap::new();
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}: line {}", path.display(), n + 1);
        let row = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => m,
            Ok(other) => bail!(
                "{at}: not a JSON object but {}; each line holds one object",
                match other {
                    Value::Array(_) => "an array",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    Value::Bool(_) => "a boolean",
                    _ => "null",
                }
            ),
            Err(e) => bail!("{at}: not JSON ({e})"),
        };
        for (k, v) in &row {
            columns.insert(k.clone());
            let huge = v
                .as_number()
                .filter(|x| x.is_f64())
                .and_then(serde_json::Number::as_f64)
                .is_some_and(|x| x.fract() == 0.0 && x.abs() >= 9.2e18);
            if huge {
                unreadable.entry(k.clone()).or_insert_with(|| {
                    format!(
                        "an integer beyond 64 bits (line {}), which cannot be read exactly: \
                         write it as a string",
                        n + 1
                    )
                });
            }
        }
        rows.push(row);
    }
    for r in &mut rows {
        for k in &columns {
            if unreadable.contains_key(k) {
                r.remove(k);
            } else if !r.contains_key(k) {
                r.insert(k.clone(), Value::Null);
            }
        }
    }
    Ok(Table {
        path: path.to_path_buf(),
        format: TableFormat::Jsonl,
        columns: columns.into_iter().collect(),
        rows,
        unreadable,
    })
}

/// The frame as a [`Table`]: every column converted by [`series_values`].
fn frame_table(path: &Path, format: TableFormat, df: &DataFrame) -> Result<Table> {
    let n = df.height();
    let mut rows: Vec<Map<String, Value>> = vec![Map::new(); n];
    let mut columns = Vec::new();
    let mut unreadable = std::collections::BTreeMap::new();
    for col in df.columns() {
        let s = col.as_materialized_series();
        let name = s.name().to_string();
        if let Some(original) = name.strip_prefix(UNREADABLE_PREFIX) {
            columns.push(original.to_string());
            unreadable.insert(
                original.to_string(),
                "values of a type polars cannot read (the file's other columns were read \
                 without it)"
                    .to_string(),
            );
            continue;
        }
        columns.push(name.clone());
        // A column polars cannot convert (a panic inside it, e.g. a time zone it was built
        // without) is unreadable, an error only if mapped: it never refuses the import.
        let values = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| series_values(s)))
            .unwrap_or_else(|p| {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|m| m.to_string()))
                    .unwrap_or_else(|| "no message".into());
                Err(Unreadable(format!(
                    "values of type {} polars cannot convert ({msg})",
                    s.dtype()
                )))
            });
        match values {
            Ok(values) => {
                for (row, v) in rows.iter_mut().zip(values) {
                    row.insert(name.clone(), v);
                }
            }
            Err(Unreadable(what)) => {
                unreadable.insert(name, what);
            }
        }
    }
    Ok(Table {
        path: path.to_path_buf(),
        format,
        columns,
        rows,
        unreadable,
    })
}

/// What a column without a text form holds.
struct Unreadable(String);

/// One JSON value per row of `s` (`null` where the row has none), whatever its type; nested
/// lists, fixed-size lists and structs recursively.
fn series_values(s: &Series) -> std::result::Result<Vec<Value>, Unreadable> {
    let bad = |e: PolarsError| Unreadable(format!("values polars cannot read ({e})"));
    match s.dtype() {
        DataType::Binary | DataType::BinaryOffset => {
            Err(Unreadable("binary data (bytes, such as an image)".into()))
        }
        DataType::Struct(_) => {
            let ca = s.struct_().map_err(bad)?;
            let fields: Vec<(String, Vec<Value>)> = ca
                .fields_as_series()
                .iter()
                .map(|f| Ok((f.name().to_string(), series_values(f)?)))
                .collect::<std::result::Result<_, Unreadable>>()?;
            let nulls = s.is_null();
            Ok((0..s.len())
                .map(|i| {
                    if nulls.get(i).unwrap_or(false) {
                        return Value::Null;
                    }
                    Value::Object(
                        fields
                            .iter()
                            .map(|(k, vs)| (k.clone(), vs[i].clone()))
                            .collect(),
                    )
                })
                .collect())
        }
        DataType::List(_) => {
            let ca = s.list().map_err(bad)?;
            (0..s.len())
                .map(|i| match ca.get_as_series(i) {
                    None => Ok(Value::Null),
                    Some(inner) => Ok(Value::Array(series_values(&inner)?)),
                })
                .collect()
        }
        DataType::Array(..) => {
            let ca = s.array().map_err(bad)?;
            (0..s.len())
                .map(|i| match ca.get_as_series(i) {
                    None => Ok(Value::Null),
                    Some(inner) => Ok(Value::Array(series_values(&inner)?)),
                })
                .collect()
        }
        _ => (0..s.len())
            .map(|i| s.get(i).map_err(bad).and_then(|av| scalar(&av)))
            .collect(),
    }
}

/// A scalar polars value as JSON: numbers as numbers (128-bit integers beyond 64 bits as their
/// digits, non-finite floats as `null`), text as text, temporal and decimal values as the text
/// polars prints them in (ISO 8601 dates and times, exact decimals), categoricals as their text.
fn scalar(av: &AnyValue<'_>) -> std::result::Result<Value, Unreadable> {
    let num = |x: f64| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number);
    Ok(match av {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::String(t) => Value::String(t.to_string()),
        AnyValue::StringOwned(t) => Value::String(t.to_string()),
        AnyValue::UInt8(v) => Value::from(*v),
        AnyValue::UInt16(v) => Value::from(*v),
        AnyValue::UInt32(v) => Value::from(*v),
        AnyValue::UInt64(v) => Value::from(*v),
        AnyValue::Int8(v) => Value::from(*v),
        AnyValue::Int16(v) => Value::from(*v),
        AnyValue::Int32(v) => Value::from(*v),
        AnyValue::Int64(v) => Value::from(*v),
        AnyValue::UInt128(v) => {
            u64::try_from(*v).map_or_else(|_| Value::String(v.to_string()), Value::from)
        }
        AnyValue::Int128(v) => {
            i64::try_from(*v).map_or_else(|_| Value::String(v.to_string()), Value::from)
        }
        AnyValue::Float16(v) => num(f64::from(f32::from(*v))),
        AnyValue::Float32(v) => num(f64::from(*v)),
        AnyValue::Float64(v) => num(*v),
        AnyValue::Binary(_) | AnyValue::BinaryOwned(_) => {
            return Err(Unreadable("binary data (bytes, such as an image)".into()))
        }
        AnyValue::Categorical(..)
        | AnyValue::CategoricalOwned(..)
        | AnyValue::Enum(..)
        | AnyValue::EnumOwned(..) => av
            .get_str()
            .map_or(Value::Null, |t| Value::String(t.to_string())),
        AnyValue::Date(_)
        | AnyValue::Datetime(..)
        | AnyValue::DatetimeOwned(..)
        | AnyValue::Duration(..)
        | AnyValue::Time(_)
        | AnyValue::Decimal(..) => Value::String(av.to_string()),
        other => return Err(Unreadable(format!("values of type {}", other.dtype()))),
    })
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
        // Issue 56 case 15: Latin-1, CR-only line ends and ragged rows, each named with its
        // line and the fix.
        let p = dir.path().join("l.csv");
        std::fs::write(&p, b"id,question\nq1,Caf\xe9?\n").unwrap();
        let e = format!("{:#}", read_table(&p).unwrap_err());
        assert!(
            e.contains("l.csv: line 2: byte 0xE9") && e.contains("iconv"),
            "{e}"
        );
        let p = dir.path().join("cr.csv");
        std::fs::write(&p, "id,question\rq1,A?\rq2,B?\r").unwrap();
        let e = format!("{:#}", read_table(&p).unwrap_err());
        assert!(
            e.contains("carriage return alone") && e.contains("tr "),
            "{e}"
        );
        let p = dir.path().join("r.csv");
        std::fs::write(&p, "id,question\nq1,A?\nq2,B, or C?\n").unwrap();
        let e = format!("{:#}", read_table(&p).unwrap_err());
        assert!(
            e.contains("r.csv: line 3 (row 2) has 3 cells and the header 2"),
            "{e}"
        );
        let p = dir.path().join("q.jsonl");
        std::fs::write(&p, "{\"id\": 1}\n\n[1, 2]\n").unwrap();
        let e = format!("{:#}", read_table(&p).unwrap_err());
        assert!(
            e.contains("q.jsonl: line 3: not a JSON object but an array"),
            "{e}"
        );
    }

    /// Issue 36 case 12: Parquet columns of common types panicked (binary, decimal) or
    /// refused the whole table naming no column (int8, int16, date, timestamp, fixed-size
    /// list). Every one is read now; binary ones, such as a Hugging Face image (a struct of
    /// bytes and path), are unreadable and an error only when mapped.
    #[test]
    fn parquet_columns_of_every_common_type_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.parquet");
        let id = Series::new("id".into(), &["q1", "q2"]);
        let i8s = Series::new("i8".into(), &[1i8, -2]);
        let i16s = Series::new("i16".into(), &[300i16, -300]);
        let u8s = Series::new("u8".into(), &[7u8, 8]);
        let date = Series::new("date".into(), &[19000i32, 19001])
            .cast(&DataType::Date)
            .unwrap();
        let ts = Series::new("ts".into(), &[1_700_000_000_000i64, 0])
            .cast(&DataType::Datetime(TimeUnit::Milliseconds, None))
            .unwrap();
        let dec = Series::new("dec".into(), &[1.25f64, -3.5])
            .cast(&DataType::Decimal(10, 2))
            .unwrap();
        let list = Series::new(
            "opts".into(),
            &[
                Series::new("".into(), &["a", "b"]),
                Series::new("".into(), &["c", "d"]),
            ],
        );
        let fixed = Series::new(
            "vec".into(),
            &[
                Series::new("".into(), &[1i64, 2]),
                Series::new("".into(), &[3i64, 4]),
            ],
        )
        .cast(&DataType::Array(Box::new(DataType::Int64), 2))
        .unwrap();
        let bytes = Series::new("bytes".into(), &[&b"\x89PNG"[..], &b"\x00\x01"[..]]);
        let path = Series::new("path".into(), &["a.png", "b.png"]);
        let image = StructChunked::from_series("image".into(), 2, [bytes, path].iter())
            .unwrap()
            .into_series();
        let mut df = DataFrame::new_infer_height(
            [id, i8s, i16s, u8s, date, ts, dec, list, fixed, image]
                .into_iter()
                .map(Column::from)
                .collect(),
        )
        .unwrap();
        ParquetWriter::new(std::fs::File::create(&p).unwrap())
            .finish(&mut df)
            .unwrap();
        let t = read_table(&p).unwrap();
        let r = &t.rows[0];
        assert_eq!(r["id"], "q1");
        assert_eq!(
            (r["i8"].clone(), r["i16"].clone(), r["u8"].clone()),
            (1.into(), 300.into(), 7.into())
        );
        assert_eq!(t.rows[1]["i8"], -2);
        assert_eq!(r["date"], "2022-01-08");
        assert!(
            r["ts"].as_str().unwrap().starts_with("2023-11-14"),
            "{}",
            r["ts"]
        );
        assert_eq!(r["dec"], "1.25");
        assert_eq!(t.rows[1]["dec"], "-3.50");
        assert_eq!(r["opts"], serde_json::json!(["a", "b"]));
        assert_eq!(t.rows[1]["vec"], serde_json::json!([3, 4]));
        assert!(!r.contains_key("image"));
        let e = t.require("image", "--doc-text").unwrap_err().to_string();
        assert!(e.contains("`image`") && e.contains("binary"), "{e}");
        assert!(t.columns.contains(&"image".to_string()));
    }

    /// Issue 36 case 12: a JSONL integer ≥ 2^63 panicked inside polars (exit 101); now it is
    /// read exactly up to 2^64 − 1, and beyond that its column is unreadable (an error only
    /// when mapped, naming the line).
    #[test]
    fn large_jsonl_integers_never_panic_or_round() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.jsonl");
        std::fs::write(
            &p,
            "{\"id\": \"a\", \"n\": 9223372036854775808, \"big\": 1}\n{\"id\": \"b\", \"n\": 18446744073709551615, \"big\": 123456789012345678901234567890}\n",
        )
        .unwrap();
        let t = read_table(&p).unwrap();
        assert_eq!(t.rows[0]["n"], serde_json::json!(9223372036854775808u64));
        assert_eq!(t.rows[1]["n"], serde_json::json!(u64::MAX));
        assert!(t.require("id", "--question-id").is_ok());
        let e = t.require("big", "--answer").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("--answer"), "{e}");
    }
}
