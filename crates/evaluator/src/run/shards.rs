//! Splitting a run into shards (`--shard I/N`) and merging their run directories, checked to
//! be one version of every input before anything is copied.

use super::*;

/// A deterministic slice of a run's cells: shard `index` of `count` (1-based) takes the
/// cells at positions `p` (config order) with `p % count == index - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based shard number.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("--shard {s:?}: expected I/N with 1 <= I <= N, e.g. 2/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// Joins shard run directories into `out`: copies every cell of the shards' config (checking
/// that all shards ran the same resolved config), then assembles the run-level files from
/// exactly that config's cells. The result equals the unsharded run's per_question.csv,
/// summary.csv and summary.md byte for byte. An `out` that already holds another run (a
/// config.json that differs) is refused unless `force`; with it, the other run's cells stay in
/// `cells/` but are ignored and counted (the last value).
///
/// # Errors
/// Shards with different configs, an `out` holding another run without `force`, missing
/// cells, and I/O errors naming the path.
pub fn merge(
    shard_dirs: &[PathBuf],
    out: &Path,
    store: &Path,
    force: bool,
) -> Result<(RunConfig, Vec<CellRecord>, String, usize)> {
    let first = shard_dirs
        .first()
        .context("name at least one shard directory")?;
    if let Some(clash) = crate::preflight::output_clash(out, store) {
        bail!("merge OUT: {clash}");
    }
    let cfg = read_shard_config(first)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let _lock = super::lock_run_dir(out)?;
    if out.join("config.json").exists() && !shard_dirs.iter().any(|d| d == out) {
        let other = read_shard_config(out).ok();
        if other.as_ref() != Some(&cfg) && !force {
            bail!(
                "{} already holds {}; merging into it would mix two runs. Merge into a new \
                 directory, or pass --force to make it describe the shards' run (its other \
                 cells stay in cells/ for reuse but are ignored)",
                out.display(),
                match &other {
                    Some(c) => format!("another run (`{}`, a different config)", c.name),
                    None => "a config.json that is not a chunkbench run config".to_string(),
                }
            );
        }
    }
    let config_cells = cfg.cells();
    let ids: std::collections::BTreeSet<String> = config_cells.iter().map(Cell::id).collect();
    check_shards(shard_dirs, out, &cfg, &ids)?;
    let cells_out = out.join("cells");
    std::fs::create_dir_all(&cells_out)
        .with_context(|| format!("cannot create {}", cells_out.display()))?;
    let datasets = copy_shard_files(shard_dirs, out, &ids)?;
    write_json(&out.join("config.json"), &cfg)?;
    let extra = serde_json::json!({
        "datasets": datasets,
        "merged_from": shard_dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
    });
    let (cells, md, ignored) = assemble(&cfg, &config_cells, out, store, extra)?;
    Ok((cfg, cells, md, ignored))
}

/// A shard's resolved config, with `output` cleared (shards differ only in where they wrote).
fn read_shard_config(d: &Path) -> Result<RunConfig> {
    let p = d.join("config.json");
    let bytes = std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?;
    let mut cfg: RunConfig = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a chunkbench run config", p.display()))?;
    cfg.output = PathBuf::new();
    Ok(cfg)
}

/// Checks, before anything is copied, that every shard ran `cfg`, that every finished cell of
/// the config (`ids`) in the shards and in `out` (merging into an existing run) is intact, and
/// that together they come from one version of the data, inputs and code.
///
/// # Errors
/// A shard of another config, a damaged cell, or cells of two versions.
fn check_shards(
    shard_dirs: &[PathBuf],
    out: &Path,
    cfg: &RunConfig,
    ids: &std::collections::BTreeSet<String>,
) -> Result<()> {
    let first = &shard_dirs[0];
    let mut stored: Vec<(records::CellRecord, PathBuf)> = Vec::new();
    for d in shard_dirs {
        if read_shard_config(d)? != *cfg {
            bail!(
                "{} ran a different config than {}; only shards of one run can be merged",
                d.display(),
                first.display()
            );
        }
        let shard_cells = d.join("cells");
        for id in ids {
            match records::read_cell(&shard_cells, id) {
                Ok(s) => stored.push((s.record, shard_cells.clone())),
                Err(records::CellProblem::Missing) => {}
                Err(damaged) => bail!(
                    "shard {}: {damaged}; run that shard again, then merge",
                    d.display()
                ),
            }
        }
    }
    // OUT's own cells of the config are assembled with the shards' ones, so they are checked
    // too, before anything in OUT is overwritten.
    if !shard_dirs.iter().any(|d| d == out) {
        let out_cells = out.join("cells");
        for id in ids {
            if let Ok(s) = records::read_cell(&out_cells, id) {
                stored.push((s.record, out_cells.clone()));
            }
        }
    }
    let located: Vec<records::Located<'_>> = stored.iter().map(|(r, p)| (r, p.as_path())).collect();
    records::check_consistent(&located)
}

/// Copies the shards' files of the config's cells (`ids`: cells, explain, TREC; all chunk
/// lengths) into `out`, and returns the datasets entry of the first shard's metadata.
///
/// # Errors
/// I/O errors naming the path.
fn copy_shard_files(
    shard_dirs: &[PathBuf],
    out: &Path,
    ids: &std::collections::BTreeSet<String>,
) -> Result<serde_json::Value> {
    let mut datasets = serde_json::Value::Null;
    for d in shard_dirs {
        for sub in ["cells", "chunks", "explain", "trec"] {
            let Ok(entries) = std::fs::read_dir(d.join(sub)) else {
                continue;
            };
            for entry in entries {
                let p = entry?.path();
                let of_cfg = sub == "chunks"
                    || p.file_stem()
                        .and_then(|s| s.to_str())
                        .is_some_and(|s| ids.contains(s));
                if let Some(name) = p.file_name().filter(|_| p.is_file() && of_cfg) {
                    let dest = out.join(sub).join(name);
                    if p != dest {
                        write_atomic(&dest, &std::fs::read(&p)?)?;
                    }
                }
            }
        }
        for entry in std::fs::read_dir(d)?.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("shard-") && datasets.is_null() {
                let v: serde_json::Value = serde_json::from_slice(&std::fs::read(entry.path())?)?;
                datasets = v["datasets"].clone();
            }
        }
    }
    Ok(datasets)
}
