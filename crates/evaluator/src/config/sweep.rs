//! The expansion of a config's `sweep:` into entry variants ([`RunConfig::expand_sweep`]):
//! `grid` (every combination) and `zip` (values taken together), each variant a named entry
//! recorded in `swept`.

use super::*;

impl RunConfig {
    /// Replaces swept entries by their variants (see [`Sweep`]).
    pub(super) fn expand_sweep(&mut self, sweep: &Sweep) -> Result<()> {
        if let Some(both) = sweep.grid.keys().find(|k| sweep.zip.contains_key(*k)) {
            bail!(
                "field `sweep`: `{both}` is listed under both `grid` and `zip`; a key is swept \
                 one way (the two would give the same cells under different names)"
            );
        }
        for (block, lists) in [("grid", &sweep.grid), ("zip", &sweep.zip)] {
            for (p, values) in lists.iter() {
                for (i, v) in values.iter().enumerate() {
                    if block == "grid" && values[..i].contains(v) {
                        bail!(
                            "field `sweep.{block}.{p}`: the value {} is listed twice",
                            serde_yaml::to_string(v).unwrap_or_default().trim()
                        );
                    }
                }
            }
        }
        let combinations = sweep
            .grid
            .values()
            .map(Vec::len)
            .chain(std::iter::once(
                sweep.zip.values().map(Vec::len).max().unwrap_or(1).max(1),
            ))
            .try_fold(1usize, |a, n| a.checked_mul(n.max(1)))
            .filter(|&n| n <= MAX_CELLS);
        if combinations.is_none() {
            bail!(
                "field `sweep`: the lists make more than {MAX_CELLS} combinations; sweep fewer \
                 values, or split the sweep into several configs"
            );
        }
        let zip_len = sweep.zip.values().map(Vec::len).max().unwrap_or(0);
        let tuple = |i: usize| -> Vec<Option<&serde_yaml::Value>> {
            sweep.zip.values().map(|v| v.get(i)).collect()
        };
        for i in 0..zip_len {
            if (0..i).any(|j| tuple(j) == tuple(i)) {
                bail!(
                    "field `sweep.zip`: position {} repeats the values of an earlier position; \
                     list each combination once",
                    i + 1
                );
            }
        }
        let mut combos: Vec<Vec<Assignment>> = vec![vec![]];
        for (p, values) in &sweep.grid {
            let (key, field) = self.sweep_path(p, "grid")?;
            if values.is_empty() {
                bail!("field `sweep.grid.{p}`: give at least one value");
            }
            let (key, field) = (&key, &field);
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((key.clone(), field.clone(), v.clone()));
                        c
                    })
                })
                .collect();
        }
        if !sweep.zip.is_empty() {
            let lens: Vec<usize> = sweep.zip.values().map(Vec::len).collect();
            if lens.iter().any(|&l| l != lens[0]) || lens[0] == 0 {
                bail!(
                    "field `sweep.zip`: all lists must have the same, non-zero length (got {lens:?})"
                );
            }
            let parsed: Vec<(EntryKey, String)> = sweep
                .zip
                .keys()
                .map(|p| self.sweep_path(p, "zip"))
                .collect::<Result<_>>()?;
            if parsed.iter().any(|(k, _)| *k != parsed[0].0) {
                bail!("field `sweep.zip`: all zipped paths must belong to one entry");
            }
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    let parsed = &parsed;
                    (0..lens[0]).map(move |i| {
                        let mut c = c.clone();
                        for ((key, field), values) in parsed.iter().zip(sweep.zip.values()) {
                            c.push((key.clone(), field.clone(), values[i].clone()));
                        }
                        c
                    })
                })
                .collect();
        }
        if combos == vec![vec![]] {
            bail!("field `sweep`: give `grid` or `zip` lists");
        }
        // Distinct assignments per entry, in first-seen order.
        type Fields = Vec<(String, serde_yaml::Value)>;
        let mut variants: BTreeMap<EntryKey, Vec<Fields>> = BTreeMap::new();
        for combo in &combos {
            let mut per: BTreeMap<EntryKey, Fields> = BTreeMap::new();
            for (key, field, v) in combo {
                per.entry(key.clone())
                    .or_default()
                    .push((field.clone(), v.clone()));
            }
            for (key, fields) in per {
                let list = variants.entry(key.clone()).or_default();
                if !list.contains(&fields) {
                    list.push(fields);
                }
            }
        }
        for ((section, entry), assignments) in variants {
            let mut names = Vec::new();
            for fields in assignments {
                let label = fields
                    .iter()
                    .map(|(f, v)| format!("{f}={}", yaml_label(v)))
                    .collect::<Vec<_>>()
                    .join(",");
                let name = format!("{entry}[{label}]");
                let taken = match section.as_str() {
                    "strategies" => self.strategies.contains_key(&name),
                    "retrievers" => self.retrievers.contains_key(&name),
                    _ => self.readers.contains_key(&name),
                };
                if names.contains(&name) {
                    bail!(
                        "field `sweep`: two assignments of {section} entry `{entry}` are both \
                         labelled `{name}`; give values that print differently"
                    );
                }
                if taken {
                    bail!(
                        "field `sweep`: the variant `{name}` of {section} entry `{entry}` has the \
                         name of an entry already in `{section}`; rename that entry"
                    );
                }
                let patch = |mut value: serde_yaml::Value| -> Result<serde_yaml::Value> {
                    let map = value.as_mapping_mut().context("entry is not a mapping")?;
                    for (f, v) in &fields {
                        map.insert(serde_yaml::Value::String(f.clone()), v.clone());
                    }
                    Ok(value)
                };
                let bad = |e: serde_yaml::Error| {
                    anyhow::anyhow!("field `sweep`: variant `{name}` of {section}: {e:#}")
                };
                match section.as_str() {
                    "strategies" => {
                        let v = patch(serde_yaml::to_value(&self.strategies[&entry])?)?;
                        let c = serde_yaml::from_value(v).map_err(bad)?;
                        self.strategies.insert(name.clone(), c);
                        self.swept
                            .insert(name.clone(), SweptVariant::new(&entry, &fields));
                    }
                    "retrievers" => {
                        let v = patch(serde_yaml::to_value(&self.retrievers[&entry])?)?;
                        let c = serde_yaml::from_value(v).map_err(bad)?;
                        self.retrievers.insert(name.clone(), c);
                    }
                    _ => {
                        let v = patch(serde_yaml::to_value(&self.readers[&entry])?)?;
                        let c = serde_yaml::from_value(v).map_err(bad)?;
                        self.readers.insert(name.clone(), c);
                    }
                }
                names.push(name);
            }
            match section.as_str() {
                "strategies" => {
                    self.strategies.remove(&entry);
                    if self.baseline.as_deref() == Some(entry.as_str()) {
                        self.baseline = names.first().cloned();
                    }
                }
                "retrievers" => {
                    self.retrievers.remove(&entry);
                }
                _ => {
                    self.readers.remove(&entry);
                }
            }
        }
        Ok(())
    }

    /// Splits a sweep path `SECTION.ENTRY.FIELD` and checks that the entry exists.
    pub(super) fn sweep_path(&self, p: &str, block: &str) -> Result<(EntryKey, String)> {
        let parts: Vec<&str> = p.splitn(3, '.').collect();
        let exists = match parts.as_slice() {
            ["strategies", e, _] => self.strategies.contains_key(*e),
            ["retrievers", e, _] => self.retrievers.contains_key(*e),
            ["readers", e, _] => self.readers.contains_key(*e),
            _ => bail!(
                "field `sweep.{block}.{p}`: paths are SECTION.ENTRY.FIELD with SECTION one of \
                 strategies, retrievers, readers"
            ),
        };
        if !exists {
            bail!(
                "field `sweep.{block}.{p}`: there is no {} entry `{}`",
                parts[0],
                parts[1]
            );
        }
        Ok(((parts[0].into(), parts[1].into()), parts[2].into()))
    }
}
