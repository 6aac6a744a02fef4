//! What a cell's identity and reuse depend on besides its config: the code version (the
//! build's git commit) and the stored record's status against this run's inputs.

use super::*;

/// Whether a stored cell can be reused.
pub(super) enum Reuse {
    /// Stored with this configuration, code, dataset manifest and inputs.
    Yes,
    /// Not stored (empty list), or stored but stale: why.
    No(Vec<String>),
}

/// Checks `cells/` for a finished cell with this configuration, computed by the same code
/// (`code`) on the dataset whose manifest hashes to `data_sha` and on the same `inputs`.
pub(super) fn cell_status(
    dir: &Path,
    cell: &Cell,
    data_sha: &str,
    code: &str,
    inputs: &CellInputs,
) -> Reuse {
    let id = cell.id();
    let r = match records::read_cell(dir, &id) {
        Ok(stored) => stored.record,
        Err(records::CellProblem::Missing) => return Reuse::No(Vec::new()),
        Err(damaged) => return Reuse::No(vec![damaged.to_string()]),
    };
    let mut why = Vec::new();
    if r.cell != cell.key() {
        why.push("its stored configuration differs".to_string());
    }
    if r.code != code {
        why.push(format!("the code changed ({} → {code})", r.code));
    }
    if r.dataset_manifest_sha256 != data_sha {
        why.push("the dataset manifest changed".to_string());
    }
    why.extend(records::inputs::changed(&r.inputs, inputs));
    if why.is_empty() {
        Reuse::Yes
    } else {
        Reuse::No(why)
    }
}
