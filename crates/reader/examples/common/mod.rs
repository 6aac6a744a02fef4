//! Helpers shared by the reader examples (`#[path]`-included; not an example itself).

use serde::Deserialize;
use std::path::Path;

/// Reads a JSONL file into `T`s, skipping blank lines; panics naming the file and line on an
/// unreadable file or a malformed line (examples only).
pub fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}
