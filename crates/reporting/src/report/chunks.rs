//! summary.md's notes on how each strategy chunked and indexed its corpus ("Indexed text",
//! "Uncovered words", "Strategy counters") and `chunk_stats.csv`, from the run's
//! [`ChunkLengths`].

use crate::md::Text;
use anyhow::Result;
use datasets::io::write_atomic;
use records::ChunkLengths;
use std::fmt::Write as _;
use std::path::Path;

/// summary.md's "Indexed text" section: for each (dataset, strategy) that indexed its chunks
/// under something other than their text ([`records::StrategyStats::indexed`]) or asked a
/// model ([`records::StrategyStats::llm`]), what was indexed, the model's requests, the
/// tokens it reported per document, malformed replies and fallbacks, and late chunking's
/// windows; `None` when every strategy indexed its chunks' own text without a model.
pub fn indexed_note(lengths: &[ChunkLengths]) -> Option<String> {
    let rows: Vec<&ChunkLengths> = lengths
        .iter()
        .filter(|l| l.stats.indexed.is_some() || l.stats.llm.is_some())
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut md = String::from(
        "\n## Indexed text\n\nThese strategies indexed their chunks under something other than the chunk's own text, or asked a model for their chunks. The passages readers get, the words counted and every span metric are still the chunks' exact byte spans. Tokens are as the model server reports them.\n\n| dataset | strategy | indexed | model requests (cached) | prompt tokens / document | reply tokens / document | malformed replies | fallbacks | late windows | chunks without tokens |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for l in rows {
        let s = &l.stats;
        let per_doc = |t: u64, d: usize| {
            if d == 0 {
                "—".to_string()
            } else {
                format!("{:.0}", t as f64 / d as f64)
            }
        };
        let (req, pt, ct, bad, fb) = match &s.llm {
            Some(u) => (
                format!("{} ({})", u.requests, u.cached),
                if u.without_usage == u.requests && u.requests > 0 {
                    "not reported".to_string()
                } else {
                    per_doc(u.prompt_tokens, u.documents)
                },
                if u.without_usage == u.requests && u.requests > 0 {
                    "not reported".to_string()
                } else {
                    per_doc(u.completion_tokens, u.documents)
                },
                u.malformed.to_string(),
                u.fallbacks.to_string(),
            ),
            None => ("—".into(), "—".into(), "—".into(), "—".into(), "—".into()),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {req} | {pt} | {ct} | {bad} | {fb} | {} | {} |",
            Text(&l.dataset),
            Text(&l.strategy),
            Text(s.indexed.as_deref().unwrap_or("chunk text")),
            s.late_windows,
            s.chunks_without_tokens
        );
    }
    for l in lengths
        .iter()
        .filter(|l| l.stats.llm.is_some_and(|u| u.oversized > 0))
    {
        let _ = writeln!(
            md,
            "\n⚠ {} / {}: {} model replies were longer than `max_tokens` tokens can be (32 bytes \
             a token, at least 4 KiB) and were cut there before they were cached or used.",
            Text(&l.dataset),
            Text(&l.strategy),
            l.stats.llm.map_or(0, |u| u.oversized)
        );
    }
    Some(md)
}

/// summary.md's note on strategies that left words of the corpus in no chunk
/// ([`records::StrategyStats::uncovered_words`]); `None` when every strategy covered
/// its corpus.
pub fn uncovered_note(lengths: &[ChunkLengths]) -> Option<String> {
    let bad: Vec<&ChunkLengths> = lengths
        .iter()
        .filter(|l| l.stats.uncovered_words > 0)
        .collect();
    if bad.is_empty() {
        return None;
    }
    let mut md = String::from(
        "\n## ⚠ Uncovered words\n\nThese strategies left words of the corpus in no chunk, so no retriever could return them (a program that skips a document or the end of one, say).\n\n| dataset | strategy | words in no chunk |\n|---|---|---:|\n",
    );
    for l in bad {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            Text(&l.dataset),
            Text(&l.strategy),
            l.stats.uncovered_words
        );
    }
    Some(md)
}

/// Writes `chunk_stats.csv`: per (dataset, strategy) the chunk count, words per chunk (min,
/// median, p95, max, mean) and the size-limit counters of [`records::StrategyStats`]
/// (units split at `size`, chunks over `size`, embedded units truncated, chunks over the
/// embedder's window — empty when no cell of the strategy embeds passages).
///
/// # Errors
/// I/O errors naming the file.
pub fn write_chunk_stats(dir: &Path, lengths: &[ChunkLengths]) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "dataset",
        "strategy",
        "chunks",
        "words_min",
        "words_median",
        "words_p95",
        "words_max",
        "words_mean",
        "forced_splits",
        "merges",
        "embedded_units",
        "units_split_before_embedding",
        "degenerate_vectors",
        "units_split_at_size",
        "over_size",
        "embedded_units_truncated",
        "over_embedder_window",
    ];
    // The kinds' own counters: one column per name any strategy of the run counted, in name
    // order, empty for the strategies that do not declare it (none: no column).
    let counters = counter_names(lengths);
    header.extend(counters.iter().map(String::as_str));
    w.write_record(&header)?;
    for l in lengths {
        let xs: Vec<f64> = l.words.iter().map(|&w| w as f64).collect();
        let f = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.1}"));
        let mut row = vec![
            l.dataset.clone(),
            l.strategy.clone(),
            l.words.len().to_string(),
            f(xs.iter().copied().reduce(f64::min)),
            f(stats::median(&xs)),
            f(stats::p95(&xs)),
            f(xs.iter().copied().reduce(f64::max)),
            f(stats::mean(&xs)),
            l.stats.forced_splits.to_string(),
            l.stats.merges.to_string(),
            l.stats.embedded_units.to_string(),
            l.stats.units_split_before_embedding.to_string(),
            l.stats.degenerate_vectors.to_string(),
            l.stats.units_split_at_size.to_string(),
            l.stats.over_size.to_string(),
            l.stats.embedded_units_truncated.to_string(),
            l.stats
                .over_embedder_window
                .map_or(String::new(), |n| n.to_string()),
        ];
        row.extend(counters.iter().map(|name| {
            l.stats
                .counters
                .get(name)
                .map_or(String::new(), u64::to_string)
        }));
        w.write_record(&row)?;
    }
    write_atomic(&dir.join("chunk_stats.csv"), &w.into_inner()?)
}

/// Every counter name ([`records::StrategyStats::counters`]) any strategy counted, in name
/// order.
fn counter_names(lengths: &[ChunkLengths]) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = lengths
        .iter()
        .flat_map(|l| l.stats.counters.keys())
        .collect();
    names.into_iter().cloned().collect()
}

/// summary.md's "Strategy counters" section: the counters strategy kinds declare for
/// themselves ([`records::Counter`], [`records::StrategyStats::counters`]), one row per
/// (dataset, strategy) and counter; `None` when no strategy of the run counted any.
pub fn counters_note(lengths: &[ChunkLengths]) -> Option<String> {
    if lengths.iter().all(|l| l.stats.counters.is_empty()) {
        return None;
    }
    let mut md = String::from(
        "\n## Strategy counters\n\nWhat these strategies counted about their own chunking, as their kinds declare it (the run log and docs/reference.md say what each counts; chunk_stats.csv has one column per counter).\n\n| dataset | strategy | counter | count |\n|---|---|---|---:|\n",
    );
    for l in lengths {
        for (name, n) in &l.stats.counters {
            let _ = writeln!(
                md,
                "| {} | {} | `{name}` | {n} |",
                Text(&l.dataset),
                Text(&l.strategy)
            );
        }
    }
    Some(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(strategy: &str, counters: &[(&str, u64)]) -> ChunkLengths {
        let mut l = ChunkLengths {
            dataset: "d".into(),
            strategy: strategy.into(),
            words: vec![3, 5],
            stats: Default::default(),
            passages_at_query_time: false,
            retrieved_words: None,
        };
        for (k, v) in counters {
            l.stats.counters.insert((*k).to_string(), *v);
        }
        l
    }

    /// A kind's own counters become chunk_stats.csv columns (empty for other strategies) and
    /// summary.md rows; a run without any keeps both as they were.
    #[test]
    fn kind_counters_are_columns_and_rows_only_when_counted() {
        let dir = tempfile::tempdir().unwrap();
        let plain = [lengths("fixed", &[])];
        write_chunk_stats(dir.path(), &plain).unwrap();
        let csv = std::fs::read_to_string(dir.path().join("chunk_stats.csv")).unwrap();
        assert!(csv.starts_with("dataset,strategy,chunks,"), "{csv}");
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .ends_with(",over_embedder_window"));
        assert!(counters_note(&plain).is_none());

        let mixed = [
            lengths("fixed", &[]),
            lengths("md", &[("sections_split", 4), ("blocks_over_size", 1)]),
        ];
        write_chunk_stats(dir.path(), &mixed).unwrap();
        let csv = std::fs::read_to_string(dir.path().join("chunk_stats.csv")).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert!(
            lines[0].ends_with(",over_embedder_window,blocks_over_size,sections_split"),
            "{csv}"
        );
        assert!(lines[1].ends_with(",,"), "{csv}");
        assert!(lines[2].ends_with(",1,4"), "{csv}");
        let md = counters_note(&mixed).unwrap();
        assert!(md.contains("| d | md | `sections_split` | 4 |"), "{md}");
        assert!(md.contains("| d | md | `blocks_over_size` | 1 |"), "{md}");
        assert!(!md.contains("| fixed |"), "{md}");
    }
}
