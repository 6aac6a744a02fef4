//! What a strategy kind declares for the records besides its per-question fields
//! ([`retriever::records::RecordKind`]): its per-corpus counters and its generic explain
//! line. Both are written and read without the pipeline or the reports knowing whose they
//! are, so a kind that adds a counter or an explanation is still one file.

use serde::{Deserialize, Serialize};

/// A per-corpus counter a strategy kind declares (`Chunker::counters` in the pipeline): its
/// name, the key under which the count is stored in [`crate::StrategyStats::counters`], a
/// column of `chunk_stats.csv` and a row of summary.md's "Strategy counters" section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// Key and column name (`snake_case`, unique within the kind), e.g. `blocks_over_size`.
    pub name: &'static str,
    /// One line on what it counts, with its unit; printed in the run log when the count is
    /// not 0.
    pub doc: &'static str,
    /// True when a count above 0 deserves the user's attention (logged as a warning).
    pub warn: bool,
}

/// One question's line of `explain/CELL.jsonl` for a strategy whose explanation is plain
/// notes (any kind but EAR, whose line is `reporting::explain::ExplainLine`): read by
/// `chunkbench explain` and the report's explorer, which render the notes as they are, so
/// the reports need not know the kind.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainNotes {
    /// Question id.
    pub question_id: String,
    /// Lines about the question as a whole (may be empty).
    #[serde(default)]
    pub notes: Vec<String>,
    /// One note per retrieved passage, in rank order (the same length as the row's
    /// passages; an empty string when a passage has nothing to say).
    pub passage_notes: Vec<String>,
}
