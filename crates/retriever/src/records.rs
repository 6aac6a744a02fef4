//! Strategy records: per-question fields a strategy records about its own query-time step,
//! each strategy's declared once.
//!
//! A strategy whose query-time step has bookkeeping worth keeping per question (EAR: anchors
//! found, exact anchor match, windows before and after deduplication, fallback) declares it as
//! a [`RecordKind`]: its fields (one column each of `per_question.csv`/`.parquet`, empty on
//! other strategies' rows), its cell aggregates (one JSON object in the cell record, under
//! [`RecordKind::key`]) and how summary.md prints them (one section, one row per cell that
//! recorded it). The records writers, the summary and `ls metrics` iterate [`RECORDS`]; the
//! runner copies a question's [`RecordValues`] into its row without knowing whose they are.
//!
//! **Adding a strategy record** is one `pub const RECORD: RecordKind` beside the strategy's
//! algorithm, one line in [`RECORDS`], and the values its query-time step returns
//! ([`RecordValues::of`]). Its columns come after the existing ones, so earlier columns keep
//! their positions.

pub use crate::record_kind::{Aggregate, FieldKind, Figure, Print, RecordField, RecordKind};

/// Every strategy record, in column order.
pub static RECORDS: &[&RecordKind] = &[&crate::ear::RECORD];

/// Every record field of [`RECORDS`] in column order, with the position of its kind.
pub fn fields() -> impl Iterator<Item = (usize, &'static RecordField)> {
    RECORDS
        .iter()
        .enumerate()
        .flat_map(|(k, kind)| kind.fields.iter().map(move |f| (k, f)))
}

/// The number of record fields of [`RECORDS`] (the length of a [`RecordValues`]).
pub fn field_count() -> usize {
    RECORDS.iter().map(|k| k.fields.len()).sum()
}

/// Position in [`fields`] of the first field of the kind at `kind`.
fn offset(kind: usize) -> usize {
    RECORDS[..kind].iter().map(|k| k.fields.len()).sum()
}

/// One question's values of every record field of [`RECORDS`], by position in [`fields`];
/// `None` where the question's strategy does not record the field. The default holds no
/// value (a strategy without a record). Two are equal when every field's value is, however
/// they were made (a row read back from CSV equals the row the runner wrote).
#[derive(Debug, Clone, Default)]
pub struct RecordValues(Vec<Option<u64>>);

impl PartialEq for RecordValues {
    fn eq(&self, other: &Self) -> bool {
        let n = self.0.len().max(other.0.len());
        (0..n).all(|i| self.at(i) == other.at(i))
    }
}

impl Eq for RecordValues {}

impl RecordValues {
    /// The values of one record: `values` in the order of `kind`'s fields, every other
    /// field empty.
    ///
    /// # Panics
    /// When `kind` is not in [`RECORDS`] or `values` does not have one value per field (a
    /// declaration error, caught by the kind's tests).
    pub fn of(kind: &RecordKind, values: &[Option<u64>]) -> Self {
        let k = RECORDS
            .iter()
            .position(|r| r.key == kind.key)
            .expect("a strategy record is registered in RECORDS");
        assert_eq!(values.len(), kind.fields.len(), "one value per field");
        let mut out = RecordValues(vec![None; field_count()]);
        out.0[offset(k)..offset(k) + values.len()].copy_from_slice(values);
        out
    }

    /// The value at position `i` of [`fields`] (`None` past the end: a default value).
    pub fn at(&self, i: usize) -> Option<u64> {
        self.0.get(i).copied().flatten()
    }

    /// Sets the value at position `i` of [`fields`].
    pub fn set(&mut self, i: usize, value: Option<u64>) {
        if self.0.len() < field_count() {
            self.0.resize(field_count(), None);
        }
        self.0[i] = value;
    }

    /// Whether any field of the kind at `kind` (position in [`RECORDS`]) has a value.
    pub fn has(&self, kind: usize) -> bool {
        let o = offset(kind);
        (o..o + RECORDS[kind].fields.len()).any(|i| self.at(i).is_some())
    }

    /// The value of `kind`'s field named `name`.
    pub fn get(&self, kind: usize, name: &str) -> Option<u64> {
        let i = RECORDS[kind].fields.iter().position(|f| f.name == name)?;
        self.at(offset(kind) + i)
    }
}

/// A computed aggregate: a count or a real.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FigureValue {
    /// A count ([`Aggregate::Rows`], [`Aggregate::Ones`]).
    Count(usize),
    /// A mean ([`Aggregate::Mean`]).
    Real(f64),
}

impl FigureValue {
    /// The value as a real.
    pub fn as_f64(self) -> f64 {
        match self {
            FigureValue::Count(n) => n as f64,
            FigureValue::Real(x) => x,
        }
    }
}

/// One cell's aggregates of one record kind, in the order of its [`RecordKind::figures`].
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSummary {
    /// Rows that carry the record.
    pub rows: usize,
    /// One value per figure.
    pub values: Vec<FigureValue>,
}

impl RecordSummary {
    /// The aggregates of the kind at `kind` over `rows` (each row's record values); `None`
    /// when no row carries it.
    pub fn of(kind: usize, rows: &[&RecordValues]) -> Option<Self> {
        let carrying: Vec<&&RecordValues> = rows.iter().filter(|r| r.has(kind)).collect();
        if carrying.is_empty() {
            return None;
        }
        let n = carrying.len();
        let values = RECORDS[kind]
            .figures
            .iter()
            .map(|f| match f.aggregate {
                Aggregate::Rows => FigureValue::Count(n),
                Aggregate::Ones(field) => FigureValue::Count(
                    carrying
                        .iter()
                        .filter(|r| r.get(kind, field) == Some(1))
                        .count(),
                ),
                Aggregate::Mean(field) => FigureValue::Real(
                    carrying
                        .iter()
                        .filter_map(|r| r.get(kind, field))
                        .sum::<u64>() as f64
                        / n as f64,
                ),
            })
            .collect();
        Some(RecordSummary { rows: n, values })
    }

    /// summary.md's text of figure `i` of `kind` (empty for a hidden one).
    pub fn print(&self, kind: &RecordKind, i: usize) -> String {
        let v = self.values[i];
        let text = match v {
            FigureValue::Count(n) => n.to_string(),
            FigureValue::Real(x) => x.to_string(),
        };
        match kind.figures[i].print {
            Print::Hidden => String::new(),
            Print::OfRows => format!("{text}/{}", self.rows),
            Print::Count => text,
            Print::Decimals(p) => format!("{:.p$}", v.as_f64()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_names_a_field_of_its_kind_with_the_right_type() {
        for kind in RECORDS {
            for f in kind.figures {
                let (name, want) = match f.aggregate {
                    Aggregate::Rows => continue,
                    Aggregate::Ones(n) => (n, FieldKind::Flag),
                    Aggregate::Mean(n) => (n, FieldKind::Count),
                };
                let field = kind.fields.iter().find(|x| x.name == name);
                assert_eq!(field.map(|x| x.kind), Some(want), "{}.{}", kind.key, f.key);
            }
        }
    }

    #[test]
    fn a_figure_printed_over_rows_has_the_row_count_beside_it() {
        for kind in RECORDS {
            let of_rows = kind.figures.iter().any(|f| f.print == Print::OfRows);
            let rows = kind.figures.iter().any(|f| f.aggregate == Aggregate::Rows);
            assert!(!of_rows || rows, "{}", kind.key);
        }
    }

    #[test]
    fn names_are_unique_across_records() {
        let names: Vec<&str> = fields().map(|(_, f)| f.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }

    #[test]
    fn a_summary_counts_only_rows_that_carry_the_record() {
        let ear = &crate::ear::RECORD;
        let a = RecordValues::of(ear, &[Some(3), Some(1), Some(6), Some(4), Some(0)]);
        let b = RecordValues::of(ear, &[Some(1), Some(0), Some(0), Some(0), Some(1)]);
        let none = RecordValues::default();
        let s = RecordSummary::of(0, &[&a, &b, &none]).unwrap();
        assert_eq!(s.rows, 2);
        let printed: Vec<String> = (0..ear.figures.len()).map(|i| s.print(ear, i)).collect();
        assert_eq!(printed, ["1/2", "", "2.00", "3.0", "2.0", "1"]);
        assert_eq!(RecordSummary::of(0, &[&none]), None);
        // Equality is by value: no record equals every field set empty.
        let mut empty = RecordValues::default();
        empty.set(2, None);
        assert_eq!(empty, none);
        assert_ne!(a, none);
    }
}
