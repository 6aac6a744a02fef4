//! The declaration types of a strategy record ([`RecordKind`]: fields, cell aggregates, how
//! summary.md prints them), apart from the registry that lists the records
//! ([`crate::records::RECORDS`]), so a strategy's module can declare its record without
//! depending on the registry that names it. Re-exported from [`crate::records`].

/// The type of a record field: its CSV text and its Arrow type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A count (decimal; nullable UInt64 in Parquet).
    Count,
    /// A 0/1 flag (nullable UInt8 in Parquet).
    Flag,
}

/// One per-question field of a strategy record: one column of the per-question tables.
#[derive(Debug, Clone, Copy)]
pub struct RecordField {
    /// Column name.
    pub name: &'static str,
    /// One line on what it holds.
    pub doc: &'static str,
    /// Count or flag.
    pub kind: FieldKind,
}

/// How a cell aggregate of a record is computed over the cell's rows that carry the record
/// (its "questions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// The number of rows that carry the record.
    Rows,
    /// Rows whose flag field (by name) is 1.
    Ones(&'static str),
    /// Mean of a count field (by name) over the rows that carry the record (a row without
    /// the value counts 0).
    Mean(&'static str),
}

/// How summary.md prints an aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    /// Not printed (e.g. the row count, printed with [`Print::OfRows`]).
    Hidden,
    /// As `value/rows`.
    OfRows,
    /// A count, in decimal.
    Count,
    /// A real with this many decimals.
    Decimals(usize),
}

/// One cell aggregate of a record: its key in the cell record's JSON object, its column in
/// summary.md, and how it is computed.
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    /// Key in the record's JSON object of the cell record.
    pub key: &'static str,
    /// summary.md column header.
    pub label: &'static str,
    /// How it is computed from the rows.
    pub aggregate: Aggregate,
    /// How summary.md prints it.
    pub print: Print,
}

/// A strategy's per-question record, declared once.
#[derive(Debug, Clone, Copy)]
pub struct RecordKind {
    /// The strategy kind that records it (`ear`).
    pub strategy: &'static str,
    /// Key of its aggregates in the cell record's summary (`ear`).
    pub key: &'static str,
    /// Its name in `chunkbench ls metrics`.
    pub listed_as: &'static str,
    /// Its line in `chunkbench ls metrics`.
    pub doc: &'static str,
    /// summary.md section title.
    pub title: &'static str,
    /// summary.md section introduction (one paragraph).
    pub intro: &'static str,
    /// Per-question fields, in column order.
    pub fields: &'static [RecordField],
    /// Cell aggregates, in JSON and summary.md order.
    pub figures: &'static [Figure],
}
