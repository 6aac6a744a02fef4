//! Pairing the cells of two runs (module documentation of [`super`], "Matching and pairing").

use super::*;

/// A cell's coordinates, its sort key and pairing key: dataset, strategy, retriever, k (and
/// budget), reader.
pub(super) type LabelKey = (
    String,
    String,
    String,
    usize,
    Option<records::Budget>,
    String,
);

/// The coordinates of a cell ([`LabelKey`]).
pub(super) fn label_key(r: &CellRecord) -> LabelKey {
    let c = &r.cell;
    (
        c.dataset.clone(),
        c.strategy.clone(),
        c.retriever.clone(),
        c.k,
        c.budget,
        c.reader.clone(),
    )
}

pub(super) fn label(r: &CellRecord) -> String {
    let c = &r.cell;
    format!(
        "{} × {} × {} × k={} × {}",
        c.dataset,
        c.strategy,
        c.retriever,
        c.depth_label(),
        c.reader
    )
}

/// The leaves where two JSON values differ, as `path: old → new` (`path` alone when `full`
/// is false).
pub(super) fn json_diff(
    a: &serde_json::Value,
    b: &serde_json::Value,
    prefix: &str,
    full: bool,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    let show = |v: Option<&Value>| v.map_or("(absent)".to_string(), |v| v.to_string());
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => json_diff(u, v, &path, full, out),
                    (u, v) if full => out.push(format!("{path}: {} → {}", show(u), show(v))),
                    _ => out.push(path),
                }
            }
        }
        _ if a != b && full => out.push(format!("{prefix}: {a} → {b}")),
        _ if a != b => out.push(prefix.to_string()),
        _ => {}
    }
}

/// The configuration changes from cell `a` to cell `b` (`full`: with old and new values).
pub(super) fn cell_diff(a: &CellRecord, b: &CellRecord, full: bool) -> Vec<String> {
    let x = serde_json::to_value(&a.cell).unwrap_or_default();
    let y = serde_json::to_value(&b.cell).unwrap_or_default();
    let mut out = Vec::new();
    json_diff(&x, &y, "", full, &mut out);
    out
}

pub(super) fn unmatched(rec: &CellRecord, other: &LoadedRun) -> UnmatchedCell {
    let key = label_key(rec);
    let differs_in = other
        .cells
        .values()
        .find(|o| label_key(&o.record) == key)
        .map(|o| cell_diff(rec, &o.record, false))
        .unwrap_or_default();
    let c = &rec.cell;
    UnmatchedCell {
        cell_id: rec.id.clone(),
        dataset: c.dataset.clone(),
        strategy: c.strategy.clone(),
        retriever: c.retriever.clone(),
        k: c.k,
        budget: c.budget,
        reader: c.reader.clone(),
        differs_in,
    }
}

/// A pair before the statistics: the two cells and the candidate's rows in the baseline's
/// question order.
pub(super) struct Paired<'a> {
    pub(super) base: &'a RunCell,
    pub(super) cand: &'a RunCell,
    pub(super) by: PairedBy,
    pub(super) cand_rows: Vec<&'a QuestionRow>,
}

/// Pairs the questions of two cells by question id (in the baseline's row order).
pub(super) fn pair<'a>(
    base: &'a RunCell,
    cand: &'a RunCell,
    by: PairedBy,
    bdir: &Path,
    cdir: &Path,
) -> Result<Paired<'a>> {
    let (bid, cid) = (&base.record.id, &cand.record.id);
    let changed = if by == PairedBy::Id {
        String::new()
    } else {
        format!(
            " (paired by {}; changed: {})",
            if by == PairedBy::Rename {
                "--pair"
            } else {
                "dataset, strategy, retriever, k and reader"
            },
            cell_diff(&base.record, &cand.record, true).join(", ")
        )
    };
    if base.record.dataset_manifest_sha256 != cand.record.dataset_manifest_sha256 {
        bail!(
            "cell {cid} ({}){changed} was computed on different datasets: dataset manifest \
             sha256 {} in {} but {} in {}; compare runs made on the same converted data \
             (`chunkbench data fetch` with the same pinned sources and seed), or regenerate \
             the baseline with scripts/update-baseline.sh",
            label(&base.record),
            base.record.dataset_manifest_sha256,
            bdir.join("cells").join(format!("{bid}.json")).display(),
            cand.record.dataset_manifest_sha256,
            cdir.join("cells").join(format!("{cid}.json")).display()
        );
    }
    let by_q: HashMap<&str, &QuestionRow> = cand
        .rows
        .iter()
        .map(|r| (r.question_id.as_str(), r))
        .collect();
    let base_ids: HashSet<&str> = base.rows.iter().map(|r| r.question_id.as_str()).collect();
    let missing: Vec<&str> = base
        .rows
        .iter()
        .map(|r| r.question_id.as_str())
        .filter(|q| !by_q.contains_key(q))
        .collect();
    let extra: Vec<&str> = cand
        .rows
        .iter()
        .map(|r| r.question_id.as_str())
        .filter(|q| !base_ids.contains(q))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        let few = |v: &[&str]| {
            let mut s = v.iter().take(3).copied().collect::<Vec<_>>().join(", ");
            if v.len() > 3 {
                s.push_str(", …");
            }
            s
        };
        bail!(
            "cell {cid} ({}){changed} holds different questions in the two runs: {} only in {} \
             [{}], {} only in {} [{}]; both runs must answer the same questions (same dataset \
             and `limit`)",
            label(&base.record),
            missing.len(),
            bdir.join("cells").join(format!("{bid}.csv")).display(),
            few(&missing),
            extra.len(),
            cdir.join("cells").join(format!("{cid}.csv")).display(),
            few(&extra)
        );
    }
    let cand_rows = base
        .rows
        .iter()
        .map(|b| by_q[b.question_id.as_str()])
        .collect();
    Ok(Paired {
        base,
        cand,
        by,
        cand_rows,
    })
}

/// The pairs of two runs (baseline cell, candidate cell, how), then the baseline's and the
/// candidate's cells without a partner.
pub(super) type CellPairs<'a> = (
    Vec<(&'a RunCell, &'a RunCell, PairedBy)>,
    Vec<&'a RunCell>,
    Vec<&'a RunCell>,
);

/// Refuses a `--pair OLD=NEW` whose OLD is no strategy of the baseline's cells or whose NEW is
/// none of the candidate's: it would pair nothing, silently.
///
/// # Errors
/// The rename, the side and the strategies that side has.
pub(super) fn check_renames(base: &LoadedRun, cand: &LoadedRun, pairing: &Pairing) -> Result<()> {
    let names = |r: &LoadedRun| -> std::collections::BTreeSet<String> {
        r.cells
            .values()
            .map(|c| c.record.cell.strategy.clone())
            .collect()
    };
    let (b, c) = (names(base), names(cand));
    for (old, new) in &pairing.renames {
        for (name, side, have) in [(old, "baseline", &b), (new, "candidate", &c)] {
            if !have.contains(name) {
                bail!(
                    "--pair {old}={new}: the {side} run has no cells of strategy `{name}` \
                     (its strategies: {})",
                    have.iter().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
    }
    Ok(())
}

/// Pairs the cells of two runs (module documentation): by id, then by coordinates (with
/// `renames` applied to the baseline's strategy). Returns the pairs in label order and the
/// baseline's and the candidate's cells left without a partner.
pub(super) fn pair_cells<'a>(
    base: &'a LoadedRun,
    cand: &'a LoadedRun,
    pairing: &Pairing,
) -> CellPairs<'a> {
    let mut pairs = Vec::new();
    let mut free_cand: Vec<&RunCell> = cand
        .cells
        .values()
        .filter(|c| !base.cells.contains_key(&c.record.id))
        .collect();
    let mut lonely = Vec::new();
    for b in base.cells.values() {
        if let Some(c) = cand.cells.get(&b.record.id) {
            pairs.push((b, c, PairedBy::Id));
            continue;
        }
        let renamed = pairing
            .renames
            .iter()
            .find(|(old, _)| *old == b.record.cell.strategy)
            .map(|(_, new)| new.as_str());
        let mut key = label_key(&b.record);
        if let Some(new) = renamed {
            key.1 = new.to_string();
        }
        let hits: Vec<usize> = free_cand
            .iter()
            .enumerate()
            .filter(|(_, c)| label_key(&c.record) == key)
            .map(|(i, _)| i)
            .collect();
        if let [i] = hits[..] {
            let c = free_cand.remove(i);
            let by = if renamed.is_some() {
                PairedBy::Rename
            } else {
                PairedBy::Coordinates
            };
            pairs.push((b, c, by));
        } else {
            lonely.push(b);
        }
    }
    pairs.sort_by_key(|(_, c, _)| (label_key(&c.record), c.record.id.clone()));
    lonely.sort_by_key(|b| (label_key(&b.record), b.record.id.clone()));
    free_cand.sort_by_key(|c| (label_key(&c.record), c.record.id.clone()));
    (pairs, lonely, free_cand)
}

/// The error for two runs without a single pair, listing what differs.
pub(super) fn no_pair_error(
    base: &LoadedRun,
    cand: &LoadedRun,
    only_in_candidate: &[UnmatchedCell],
    baseline: &Path,
    candidate: &Path,
) -> Result<()> {
    let mut why = String::new();
    for u in only_in_candidate
        .iter()
        .filter(|u| !u.differs_in.is_empty())
    {
        let _ = write!(
            why,
            "\n  {} × {} × {} × k={} × {}: configuration differs in {}",
            u.dataset,
            u.strategy,
            u.retriever,
            depth(u.k, u.budget),
            u.reader,
            u.differs_in.join(", ")
        );
    }
    if why.is_empty() {
        let names = |run: &LoadedRun, f: fn(&records::CellKey) -> &str| {
            let set: std::collections::BTreeSet<&str> =
                run.cells.values().map(|c| f(&c.record.cell)).collect();
            set.into_iter().collect::<Vec<_>>().join(", ")
        };
        why = format!(
            "\n  no cell of the same dataset, strategy, retriever, k and reader either (baseline: \
             datasets {}, strategies {}; candidate: datasets {}, strategies {})",
            names(base, |c| &c.dataset),
            names(base, |c| &c.strategy),
            names(cand, |c| &c.dataset),
            names(cand, |c| &c.strategy)
        );
    }
    bail!(
        "the runs have no cell in common ({} cells in {}, {} in {}); cells pair by the hash of \
         their resolved configuration, else by dataset, strategy, retriever, k and reader \
         (--pair OLD=NEW for a renamed strategy):{why}\nrun the candidate with the baseline's \
         config (including `limit` and `seed`), or regenerate the baseline with \
         scripts/update-baseline.sh",
        base.cells.len(),
        baseline.display(),
        cand.cells.len(),
        candidate.display()
    )
}

/// Strategy renames the unmatched cells suggest: `(OLD, NEW)` when a baseline-only cell of
/// strategy OLD and a candidate-only cell of strategy NEW share dataset, retriever, k (or
/// budget) and reader, each pair once, in order.
pub(super) fn renames_suggested(
    only_in_baseline: &[UnmatchedCell],
    only_in_candidate: &[UnmatchedCell],
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for b in only_in_baseline {
        for c in only_in_candidate {
            let same = b.dataset == c.dataset
                && b.retriever == c.retriever
                && b.k == c.k
                && b.budget == c.budget
                && b.reader == c.reader
                && b.strategy != c.strategy;
            let pair = (b.strategy.clone(), c.strategy.clone());
            if same && !out.contains(&pair) {
                out.push(pair);
            }
        }
    }
    out
}
