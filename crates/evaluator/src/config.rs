//! YAML run configuration and its expansion into cells.
//!
//! A config names datasets, strategies, retrievers, readers and the k list; every
//! combination is a [`Cell`] whose id is a hash of its resolved configuration (docs/reference.md §1).
//! Parsing is strict: unknown keys are rejected with the key path, line and column and, where
//! a known key is close, a "did you mean" suggestion.

use anyhow::{bail, Context, Result};
use datasets::dataset::hidden_char;
use datasets::io::sha256_hex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod sweep;

pub use crate::strategies::StrategyConfig;

pub use crate::retrievers::RetrieverConfig;
pub use retriever::QueryForm;

pub use crate::embedder::{EmbedderConfig, EmbedderKind};

pub use crate::readers::llm::DEFAULT_LLM;
pub use crate::readers::ReaderConfig;

/// The whole run configuration (a YAML file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Run name; outputs go to `output/NAME/`.
    pub name: String,
    /// Dataset names, looked up in the dataset store (`data/NAME/`).
    pub datasets: Vec<String>,
    /// Use only the first N questions of each dataset (default: all).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Strategies by name.
    pub strategies: BTreeMap<String, StrategyConfig>,
    /// Retrievers by name.
    pub retrievers: BTreeMap<String, RetrieverConfig>,
    /// Top-k values (default [3, 8]).
    #[serde(default = "default_k")]
    pub k: Vec<usize>,
    /// Readers by name.
    pub readers: BTreeMap<String, ReaderConfig>,
    /// The strategy whose cells the report compares against (default: the first by name).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Seed for every random choice of the run (default 0).
    #[serde(default)]
    pub seed: u64,
    /// Paired-bootstrap resamples for the intervals of deltas (default 10,000).
    #[serde(default = "default_resamples")]
    pub bootstrap_resamples: usize,
    /// Root directory for run outputs (default `results/runs`).
    #[serde(default = "default_output")]
    pub output: PathBuf,
    /// The sentence embedder (default: all-MiniLM-L6-v2 from `models/`, cached).
    #[serde(default)]
    pub embedder: EmbedderConfig,
    /// Parameter sweep, expanded into named entry variants when the config is parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    /// The tokenizer.json that counts tokens retrieved for readers without a tokenizer of
    /// their own (lexical, server readers); `null` counts none (the column stays empty and
    /// the summary shows "–"). Default [`DEFAULT_COST_TOKENIZER`] (MiniLM word pieces).
    #[serde(default = "default_cost_tokenizer")]
    pub cost_tokenizer: Option<PathBuf>,
    /// The strategy variants a `sweep` made, by variant name: the entry each varies and its
    /// swept fields with their values, in the order of the variant's name. Written by the
    /// sweep's expansion and kept in config.json, so the plots read their sweep axes from
    /// typed values rather than from names; a config that sets it is refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub swept: BTreeMap<String, SweptVariant>,
    /// The primary metric of the verdict: `accuracy` or a retrieval metric's name (`recall`,
    /// `ndcg`, `answer_recall`, …). Default: accuracy when a reader answers, else recall@k
    /// when questions have gold evidence, else answer recall (docs/reference.md §5 "The
    /// verdict").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,
    /// Non-inferiority / equivalence margin in points of the primary metric (default 0: no
    /// margin, so a verdict is superior, inferior or inconclusive).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub margin: f64,
    /// What the verdict's intervals and tests resample: `question`, `document` or `subject`.
    /// Default: `document` when some document holds several compared questions, else
    /// `question`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resample: Option<reporting::verdicts::Resample>,
    /// Family-wise significance level of the verdict, in (0, 1) (default 0.05): the one α of
    /// the verdicts, their intervals (1 − α) and, unless `compare --alpha` overrides it, the
    /// gate that uses this run as its baseline.
    #[serde(default = "default_alpha", skip_serializing_if = "is_default_alpha")]
    pub alpha: f64,
    /// The smallest difference worth detecting, in points of the primary metric (default 0:
    /// none): what "questions needed" is computed for when there is no `margin`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub effect: f64,
    /// The confirmatory comparisons (the Holm family), e.g. `{retriever: dense, budget: 512}`;
    /// the rest are exploratory. Default: every comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<reporting::verdicts::PlannedCells>,
    /// Retrieval to a budget, in addition to the top-k cells of `k` (`k: []` for budget
    /// cells only): one cell per size (docs/reference.md §5 "Retrieval to a budget").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetConfig>,
}

/// The config's `budget:` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// What the budget counts: `words`, `tokens` (the run's `cost_tokenizer`) or `chars`.
    pub unit: records::BudgetUnit,
    /// Budget sizes, each one cell per dataset × strategy × retriever × reader.
    pub sizes: Vec<usize>,
    /// The passage that would overflow: `cut` at the last unit boundary that fits (default)
    /// or left out (`whole`).
    #[serde(default = "default_fill")]
    pub fill: records::Fill,
    /// How deep the ranking is read to fill the budget, in passages (default 100).
    #[serde(default = "default_depth")]
    pub depth: usize,
}

fn default_fill() -> records::Fill {
    records::Fill::Cut
}

/// Default ranking depth of budget cells.
pub const DEFAULT_BUDGET_DEPTH: usize = 100;

fn default_depth() -> usize {
    DEFAULT_BUDGET_DEPTH
}

impl BudgetConfig {
    /// The `(k, budget)` of each budget cell: the depth and one budget per size.
    pub fn depths(&self) -> impl Iterator<Item = (usize, Option<records::Budget>)> + '_ {
        self.sizes.iter().map(|&size| {
            (
                self.depth,
                Some(records::Budget {
                    unit: self.unit,
                    size,
                    fill: self.fill,
                }),
            )
        })
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn default_alpha() -> f64 {
    reporting::verdicts::ALPHA
}

fn is_default_alpha(x: &f64) -> bool {
    *x == reporting::verdicts::ALPHA
}

/// One strategy variant made by a `sweep`: `ENTRY[f=v,…]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweptVariant {
    /// The entry of `strategies` it varies.
    pub entry: String,
    /// The swept fields, in the order of the variant's name.
    pub fields: Vec<SweptField>,
}

/// One swept field of a variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweptField {
    /// The field (`size`, `overlap`, `ear.radius`, …).
    pub field: String,
    /// Its value as the variant's name prints it (YAML text).
    pub label: String,
    /// Its value as a number, when it is one (a finite YAML number).
    pub value: Option<f64>,
}

impl SweptVariant {
    /// The variant of `entry` with the swept `fields` (field, YAML value).
    fn new(entry: &str, fields: &[(String, serde_yaml::Value)]) -> Self {
        SweptVariant {
            entry: entry.to_string(),
            fields: fields
                .iter()
                .map(|(f, v)| SweptField {
                    field: f.clone(),
                    label: yaml_label(v),
                    value: v.as_f64().filter(|x| x.is_finite()),
                })
                .collect(),
        }
    }
}

/// A sweep value as a variant's name prints it.
fn yaml_label(v: &serde_yaml::Value) -> String {
    serde_yaml::to_string(v)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The most cells one config may make (and the most combinations one sweep may list): far
/// beyond any evaluation run on one machine, and a bound on what parsing a config costs.
pub const MAX_CELLS: usize = 100_000;

/// Default tokenizer that counts tokens retrieved: all-MiniLM-L6-v2's WordPiece
/// `tokenizer.json` (unpacked by `chunkbench models fetch`).
pub const DEFAULT_COST_TOKENIZER: &str = "models/all-MiniLM-L6-v2/tokenizer.json";

fn default_cost_tokenizer() -> Option<PathBuf> {
    Some(PathBuf::from(DEFAULT_COST_TOKENIZER))
}

/// A `sweep:` block: parameter lists over `SECTION.ENTRY.FIELD` paths, where SECTION is
/// `strategies`, `retrievers` or `readers`.
///
/// `grid` takes every combination (cartesian product); `zip` takes the lists position by
/// position (all of one length, all paths of one entry). Each distinct assignment of an entry
/// becomes a variant named `ENTRY[field=value,...]` that replaces the entry, so
/// `grid: {strategies.fixed.size: [64, 128], strategies.fixed.overlap: [0, 0.2]}` yields four
/// strategies. A `baseline` naming a swept entry refers to its first variant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Cartesian product of these lists.
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<serde_yaml::Value>>,
    /// Lists of equal length, taken position by position.
    #[serde(default)]
    pub zip: BTreeMap<String, Vec<serde_yaml::Value>>,
}

fn default_resamples() -> usize {
    stats::DEFAULT_RESAMPLES
}
fn default_k() -> Vec<usize> {
    vec![3, 8]
}
fn default_output() -> PathBuf {
    PathBuf::from("results/runs")
}

/// A swept entry: (section, entry name).
type EntryKey = (String, String);
/// One assignment of a sweep combination: entry, field, value.
type Assignment = (EntryKey, String, serde_yaml::Value);

/// One fully resolved combination of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Dataset name.
    pub dataset: String,
    /// Strategy name and its resolved parameters.
    pub strategy: String,
    /// Resolved strategy parameters.
    pub strategy_config: StrategyConfig,
    /// Retriever name.
    pub retriever: String,
    /// Resolved retriever parameters.
    pub retriever_config: RetrieverConfig,
    /// Passages retrieved per question.
    pub k: usize,
    /// Reader name.
    pub reader: String,
    /// Resolved reader parameters.
    pub reader_config: ReaderConfig,
    /// Question limit applied to the dataset.
    pub limit: Option<usize>,
    /// Run seed.
    pub seed: u64,
    /// The embedder (model directory or server), for cells whose strategy or retriever
    /// embeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<records::CellEmbedder>,
    /// For a cell that retrieves to a budget: the budget (`k` is then the ranking depth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<records::Budget>,
}

impl Cell {
    /// How much the cell retrieves, in a label: `k=3` or `≤512 words`.
    pub fn depth_tag(&self) -> String {
        match &self.budget {
            None => format!("k={}", self.k),
            Some(b) => b.to_string(),
        }
    }

    /// Stable id: the first 16 hex digits of the sha256 of the cell's canonical JSON.
    pub fn id(&self) -> String {
        let json = serde_json::to_string(self).expect("cell serialises");
        sha256_hex(json.as_bytes())[..16].to_string()
    }

    /// The cell as stored data in its record ([`records::CellKey`]): the same JSON,
    /// so `key().id() == id()`.
    ///
    /// # Panics
    /// Never: a resolved cell is plain data.
    pub fn key(&self) -> records::CellKey {
        // Through YAML values, whose mappings keep the field order (serde_json's would not).
        serde_yaml::from_value(serde_yaml::to_value(self).expect("cell serialises"))
            .expect("a cell is a CellKey")
    }
}

/// A run's `config.json` as `compare` reads it ([`reporting::compare::ResolvedRun`]): parsed
/// through [`RunConfig`], the type the runner wrote it with, and its verdict rules checked as
/// `run` checks them — never as untyped JSON with silent defaults.
///
/// # Errors
/// Bytes that are not a resolved config of this version; a verdict rule out of range.
pub fn resolved_run(bytes: &[u8]) -> Result<reporting::compare::ResolvedRun> {
    let cfg: RunConfig = serde_json::from_slice(bytes)?;
    cfg.check_verdict()?;
    cfg.check_planned()?;
    Ok(reporting::compare::ResolvedRun {
        name: cfg.name.clone(),
        cells: cfg.cells().iter().map(Cell::id).collect(),
        bootstrap_resamples: cfg.bootstrap_resamples,
        seed: cfg.seed,
        verdict: cfg.verdict_settings(),
    })
}

/// Rejects two entries of one section with the same resolved configuration: they would give
/// duplicate cells under different names (and a larger Holm family).
fn same_entries<T: Serialize>(section: &str, entries: &BTreeMap<String, T>) -> Result<()> {
    let mut seen: Vec<(&String, serde_json::Value)> = Vec::new();
    for (name, e) in entries {
        let v = serde_json::to_value(e)?;
        if let Some((other, _)) = seen.iter().find(|(_, w)| *w == v) {
            bail!(
                "field `{section}`: `{other}` and `{name}` are the same configuration (they \
                 would give the same cells twice); remove one"
            );
        }
        seen.push((name, v));
    }
    Ok(())
}

/// The first entry of `strategies`, `retrievers` or `readers`, in document order, that does
/// not parse on its own, as `SECTION.NAME: problem at line L column C`, where L:C is the
/// field the problem names (`unknown field `x``, `field `x.y`: …`) or else the entry's key.
/// serde_yaml locates an error inside a map of typed entries at the map's first key, which
/// named the wrong entry; parsing entry by entry finds the right one. `None` when every
/// entry parses (the error is elsewhere) or the text is not YAML.
fn entry_error(text: &str) -> Option<String> {
    let root: serde_yaml::Value = serde_yaml::from_str(text).ok()?;
    for section in ["strategies", "retrievers", "readers"] {
        let Some(entries) = root.get(section).and_then(serde_yaml::Value::as_mapping) else {
            continue;
        };
        for (key, value) in entries {
            let Some(name) = key.as_str() else { continue };
            let v = value.clone();
            let err = match section {
                "strategies" => serde_yaml::from_value::<StrategyConfig>(v).err(),
                "retrievers" => serde_yaml::from_value::<RetrieverConfig>(v).err(),
                _ => serde_yaml::from_value::<ReaderConfig>(v).err(),
            };
            let Some(err) = err else { continue };
            let msg = err.to_string();
            let body = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            let field = body
                .strip_prefix("unknown field `")
                .or_else(|| body.strip_prefix("field `"))
                .and_then(|f| f.split('`').next());
            let mut path = vec![section, name];
            path.extend(field.into_iter().flat_map(|f| f.split('.')));
            let (line, col) = crate::yaml_keys::key_position(text, &path)
                .or_else(|| crate::yaml_keys::key_position(text, &[section, name]))?;
            return Some(format!(
                "{section}.{name}: {body} at line {line} column {col}"
            ));
        }
    }
    None
}

/// Suggests the closest candidate for a misspelt key (edit distance ≤ 3).
fn did_you_mean(message: &str) -> Option<String> {
    let unknown = message.split("unknown field `").nth(1)?.split('`').next()?;
    let expected = message.split("expected ").nth(1)?;
    let best = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|c| (strsim::levenshtein(unknown, c), c))
        .min()?;
    (best.0 <= 3).then(|| format!("did you mean `{}`?", best.1))
}

impl RunConfig {
    /// Parses and validates a config file.
    ///
    /// # Errors
    /// `FILE: KEY.PATH: problem at line L column C (did you mean ...)` for syntax errors,
    /// unknown keys and wrong types; `FILE: field KEY.PATH: problem` for invalid values
    /// (e.g. `strategies.fixed-100.overlap` not smaller than `size`).
    pub fn load(path: &Path) -> Result<RunConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and validates config text; `origin` names it in errors.
    ///
    /// # Errors
    /// As [`RunConfig::load`].
    pub fn parse(text: &str, origin: &str) -> Result<RunConfig> {
        Self::parse_with(text, origin, &[])
    }

    /// Parses config text, applies `--set PATH=VALUE` overrides (VALUE is YAML), expands the
    /// sweep and validates the result; `origin` names the text in errors.
    ///
    /// # Errors
    /// As [`RunConfig::load`]; an override naming a missing key or giving a value of the
    /// wrong type is reported with the override itself.
    pub fn parse_with(text: &str, origin: &str, sets: &[String]) -> Result<RunConfig> {
        if let Some(line) = crate::yaml_keys::merge_key_line(text) {
            bail!(
                "{origin}: line {line}: YAML merge keys (`<<: *anchor`) are not supported: \
                 chunkbench reads each entry as written, so a merged field would be ignored or \
                 misread. Write the entry's fields out (an alias of a whole value, `size: *n` or \
                 `over: *base`, does work), or sweep the field with `sweep:`"
            );
        }
        let dups = crate::yaml_keys::duplicate_keys(text);
        if !dups.is_empty() {
            let list: Vec<String> = dups.iter().map(|d| format!("{origin}: {d}")).collect();
            bail!("{}", list.join("\n"));
        }
        let mut cfg: RunConfig = serde_yaml::from_str(text).map_err(|e| {
            let msg = entry_error(text)
                .unwrap_or_else(|| crate::yaml_keys::relocate(text, &e.to_string()));
            let msg = crate::yaml_keys::explain_big_integer(&msg);
            let msg = crate::yaml_keys::explain_internal(text, &msg, |v| {
                serde_yaml::from_value::<RunConfig>(v)
                    .err()
                    .map(|e| e.to_string())
            });
            match did_you_mean(&msg) {
                Some(hint) => anyhow::anyhow!("{origin}: {msg} ({hint})"),
                None => anyhow::anyhow!("{origin}: {msg}"),
            }
        })?;
        cfg.resolve_defaults(false);
        for set in sets {
            cfg = cfg
                .with_override(set)
                .map_err(|e| anyhow::anyhow!("--set {set}: {e:#}"))?;
        }
        // Only the sweep's expansion below writes `swept` (in the file or through --set, a
        // hand-written one would draw sweep plots of entries that were never swept).
        if !cfg.swept.is_empty() {
            bail!(
                "{origin}: field `swept` is written by chunkbench when it expands `sweep`; \
                 list the values to sweep under `sweep` instead"
            );
        }
        if let Some(sweep) = cfg.sweep.take() {
            cfg.expand_sweep(&sweep)
                .map_err(|e| anyhow::anyhow!("{origin}: {e:#}"))?;
        }
        cfg.resolve_defaults(true);
        for d in &mut cfg.datasets {
            *d = datasets::dataset::canonical_name(d)
                .map_err(|e| anyhow::anyhow!("{origin}: field `datasets`: {e}"))?;
        }
        cfg.validate()
            .map_err(|e| anyhow::anyhow!("{origin}: {e:#}"))?;
        Ok(cfg)
    }

    /// Writes defaults that change what a strategy computes into its entry, so that equal
    /// computations get equal cell ids and `config.json` shows what ran: EAR entries get their
    /// parent `size`/`overlap` (260/60) and their full `ear` block (so `--set
    /// strategies.NAME.ear.radius=…` has a key to override).
    ///
    /// Retriever defaults (BM25's k1, b, analyser) are written only in the final pass
    /// (`retrievers`), after `--set` and the sweep, so that changing a retriever's kind there
    /// does not leave BM25 fields on a dense entry.
    fn resolve_defaults(&mut self, retrievers: bool) {
        self.embedder.resolve_defaults();
        for s in self.strategies.values_mut() {
            s.resolve_defaults();
        }
        if retrievers {
            for r in self.retrievers.values_mut() {
                r.resolve_defaults();
            }
        }
    }

    /// Applies one `PATH=VALUE` override (dotted path of mapping keys; VALUE parsed as YAML).
    fn with_override(&self, set: &str) -> Result<RunConfig> {
        let (path, raw) = set
            .split_once('=')
            .context("expected PATH=VALUE, e.g. strategies.fixed-100.size=300")?;
        if raw.trim().is_empty() {
            bail!(
                "`{path}=` gives no value (YAML would read it as null, and a name as \"null\"); \
                 write the value after `=`, or `{path}=null` to unset an optional field"
            );
        }
        let value: serde_yaml::Value = serde_yaml::from_str(raw).map_err(|e| {
            let msg = crate::yaml_keys::explain_big_integer(&e.to_string());
            if msg == e.to_string() {
                anyhow::anyhow!("value {raw:?} is not YAML: {e}")
            } else {
                anyhow::anyhow!("value {raw:?}: {msg}")
            }
        })?;
        let mut root = serde_yaml::to_value(self)?;
        let mut node = &mut root;
        let keys: Vec<&str> = path.split('.').collect();
        for (i, key) in keys.iter().enumerate() {
            let map = node
                .as_mapping_mut()
                .with_context(|| format!("`{}` is not a mapping", keys[..i].join(".")))?;
            let k = serde_yaml::Value::String(key.to_string());
            if i + 1 == keys.len() {
                map.insert(k, value.clone());
                break;
            }
            if !map.contains_key(&k) {
                let have: Vec<String> = map
                    .keys()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect();
                bail!(
                    "no key `{}` (have: {})",
                    keys[..=i].join("."),
                    have.join(", ")
                );
            }
            node = map.get_mut(&k).expect("checked");
        }
        // Deserialise from text so that the error carries the path of the field.
        let text = serde_yaml::to_string(&root)?;
        serde_yaml::from_str(&text).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            if msg.contains(path) {
                anyhow::anyhow!("{msg}")
            } else {
                anyhow::anyhow!("field `{path}`: {msg}")
            }
        })
    }

    fn validate(&self) -> Result<()> {
        if self.name.trim().is_empty()
            || self.name.contains(['/', '\\'])
            || self.name.starts_with('.')
            || self.name.chars().any(hidden_char)
        {
            bail!(
                "field `name`: {:?} must be a plain directory name: not blank, no `/` or `\\`, \
                 no leading dot, no control, line-separator or bidirectional-override \
                 characters",
                self.name
            );
        }
        for (section, names) in [
            ("strategies", self.strategies.keys().collect::<Vec<_>>()),
            ("retrievers", self.retrievers.keys().collect()),
            ("readers", self.readers.keys().collect()),
        ] {
            if let Some(bad) = names
                .iter()
                .find(|n| n.trim().is_empty() || n.chars().any(hidden_char))
            {
                bail!(
                    "field `{section}`: the name {:?} is blank or holds a control, line-separator or bidirectional character \
                     (a line break, a tab, an escape); names are printed in tables and logs: \
                     rename the entry",
                    bad
                );
            }
        }
        for (field, empty) in [
            ("datasets", self.datasets.is_empty()),
            ("strategies", self.strategies.is_empty()),
            ("retrievers", self.retrievers.is_empty()),
            ("readers", self.readers.is_empty()),
            ("k", self.k.is_empty() && self.budget.is_none()),
        ] {
            if empty {
                bail!("field `{field}`: list at least one entry");
            }
        }
        for (field, items) in [
            ("datasets", self.datasets.clone()),
            ("k", self.k.iter().map(|k| k.to_string()).collect()),
        ] {
            for (i, d) in items.iter().enumerate() {
                if items[..i].contains(d) {
                    bail!(
                        "field `{field}`: `{d}` is listed twice (every row would count twice and \
                         the Holm family would double); list it once"
                    );
                }
            }
        }
        let cells = [
            self.datasets.len(),
            self.strategies.len(),
            self.retrievers.len(),
            self.depths().len(),
            self.readers.len(),
        ]
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n));
        if cells.is_none_or(|n| n > MAX_CELLS) {
            bail!(
                "the config makes more than {MAX_CELLS} cells (datasets × strategies × \
                 retrievers × k × readers); split it into several configs"
            );
        }
        if let Some(&bad) = self.k.iter().find(|&&k| k == 0) {
            bail!("field `k`: top-k must be at least 1 (got {bad})");
        }
        if let Some(b) = &self.budget {
            if b.sizes.is_empty() {
                bail!("field `budget.sizes`: list at least one budget size");
            }
            if let Some(&bad) = b.sizes.iter().find(|&&n| n == 0) {
                bail!(
                    "field `budget.sizes`: a budget must be at least 1 {} (got {bad})",
                    b.unit.as_str()
                );
            }
            for (i, n) in b.sizes.iter().enumerate() {
                if b.sizes[..i].contains(n) {
                    bail!("field `budget.sizes`: `{n}` is listed twice; list it once");
                }
            }
            if b.depth == 0 {
                bail!("field `budget.depth`: read at least 1 passage of the ranking (default 100)");
            }
            if b.unit == records::BudgetUnit::Tokens && self.cost_tokenizer.is_none() {
                bail!(
                    "field `budget.unit`: tokens are counted with `cost_tokenizer`, which is \
                     null; set it (default {DEFAULT_COST_TOKENIZER}) or use words or chars"
                );
            }
        }
        if self.bootstrap_resamples == 0 {
            bail!("field `bootstrap_resamples`: must be at least 1 (default 10000)");
        }
        self.check_verdict()?;
        self.check_planned()?;
        if self.limit == Some(0) {
            bail!("field `limit`: must be at least 1 question, or left out for all");
        }
        self.embedder.check()?;
        for (name, s) in &self.strategies {
            s.check()
                .map_err(|e| anyhow::anyhow!("field `strategies.{name}`: {e:#}"))?;
        }
        for (name, r) in &self.retrievers {
            r.check()
                .map_err(|e| anyhow::anyhow!("field `retrievers.{name}`: {e:#}"))?;
        }
        for (name, r) in &self.readers {
            r.check()
                .map_err(|e| anyhow::anyhow!("field `readers.{name}`: {e:#}"))?;
        }
        same_entries("strategies", &self.strategies)?;
        same_entries("retrievers", &self.retrievers)?;
        same_entries("readers", &self.readers)?;
        if let Some(b) = &self.baseline {
            if !self.strategies.contains_key(b) {
                bail!(
                    "field `baseline`: {b:?} is not a strategy of this config (have: {})",
                    self.strategies
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        Ok(())
    }

    /// Checks the verdict rules that need nothing but their own values: `primary`, `margin`,
    /// `alpha`, `effect`.
    ///
    /// # Errors
    /// The field, its value, the accepted range and an example.
    pub fn check_verdict(&self) -> Result<()> {
        if let Some(p) = &self.primary {
            reporting::verdicts::Primary::parse(p)?;
        }
        if !(self.margin.is_finite() && (0.0..100.0).contains(&self.margin)) {
            bail!(
                "field `margin`: {} is not a margin in points (a number from 0 up to 100; 3 \
                 means 3 points of accuracy or recall)",
                self.margin
            );
        }
        if !reporting::verdicts::valid_alpha(self.alpha) {
            bail!(
                "field `alpha`: {} is not a significance level chunkbench uses (a number from \
                 0.0001 up to, not including, 0.5; e.g. 0.05 or 0.01)",
                self.alpha
            );
        }
        if !(self.effect.is_finite() && (0.0..100.0).contains(&self.effect)) {
            bail!(
                "field `effect`: {} is not an effect in points (a number from 0 up to 100; 2 \
                 means the smallest difference worth detecting is 2 points)",
                self.effect
            );
        }
        Ok(())
    }

    /// Checks that every value `planned:` names is one of this config's (a dataset, strategy
    /// other than the baseline, retriever, reader, k or budget size).
    ///
    /// # Errors
    /// The field, the unknown value and the values the config has.
    fn check_planned(&self) -> Result<()> {
        let Some(p) = &self.planned else {
            return Ok(());
        };
        if p.is_empty() {
            bail!(
                "field `planned`: names nothing (an empty map or only empty lists); name the \
                 confirmatory cells, e.g. `planned: {{retriever: dense, k: 3}}`, or leave \
                 `planned:` out to plan every comparison"
            );
        }
        fn names<T: std::fmt::Display + PartialEq>(
            field: &str,
            given: &Option<reporting::verdicts::OneOrMany<T>>,
            have: &[T],
        ) -> Result<()> {
            for v in given.iter().flat_map(|g| g.values()) {
                if !have.contains(v) {
                    let have = if have.is_empty() {
                        "this config has none".to_string()
                    } else {
                        format!(
                            "have: {}",
                            have.iter()
                                .map(|h| h.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    bail!(
                        "field `planned.{field}`: {v} is not one of this config's ({have}); name \
                         a value the run compares"
                    );
                }
            }
            Ok(())
        }
        let base = self.baseline_strategy().to_string();
        let others: Vec<String> = self
            .strategies
            .keys()
            .filter(|k| **k != base)
            .cloned()
            .collect();
        names("dataset", &p.dataset, &self.datasets)?;
        names("strategy", &p.strategy, &others)?;
        names(
            "retriever",
            &p.retriever,
            &self.retrievers.keys().cloned().collect::<Vec<_>>(),
        )?;
        names(
            "reader",
            &p.reader,
            &self.readers.keys().cloned().collect::<Vec<_>>(),
        )?;
        names("k", &p.k, &self.k)?;
        let sizes = self.budget.as_ref().map_or(Vec::new(), |b| b.sizes.clone());
        names("budget", &p.budget, &sizes)?;
        Ok(())
    }

    /// The baseline strategy name: `baseline`, or the first strategy by name.
    pub fn baseline_strategy(&self) -> &str {
        self.baseline
            .as_deref()
            .or_else(|| self.strategies.keys().next().map(String::as_str))
            .unwrap_or("")
    }

    /// The verdict rules this config declares (`primary`, `margin`, `resample`, `alpha`,
    /// `effect`, `planned`): what summary.md's verdict and, for a baseline, the gate read.
    pub fn verdict_settings(&self) -> reporting::verdicts::VerdictSettings {
        reporting::verdicts::VerdictSettings {
            primary: self.primary.clone(),
            margin_points: self.margin,
            resample: self.resample,
            alpha: self.alpha,
            effect_points: self.effect,
            planned: self.planned.clone(),
        }
    }

    /// What the reports need from this config: name, baseline strategy, seed, resamples.
    pub fn report_settings(&self) -> reporting::report::ReportSettings {
        reporting::report::ReportSettings {
            name: self.name.clone(),
            baseline: self.baseline_strategy().to_string(),
            seed: self.seed,
            bootstrap_resamples: self.bootstrap_resamples,
            verdict: self.verdict_settings(),
        }
    }

    /// The swept numeric fields of each strategy variant a sweep made, for the sweep plots:
    /// per variant name, per numeric field its value and the variant's family (its name with
    /// that field left out: the curve the point belongs to when the field is on the x axis).
    pub fn sweep_points(&self) -> BTreeMap<String, Vec<reporting::plots::SweptValue>> {
        self.swept
            .iter()
            .map(|(name, v)| {
                let points = v
                    .fields
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| {
                        let others: Vec<String> = v
                            .fields
                            .iter()
                            .enumerate()
                            .filter(|&(j, _)| j != i)
                            .map(|(_, o)| format!("{}={}", o.field, o.label))
                            .collect();
                        let family = if others.is_empty() {
                            v.entry.clone()
                        } else {
                            format!("{}[{}]", v.entry, others.join(","))
                        };
                        Some(reporting::plots::SweptValue {
                            param: f.field.clone(),
                            value: f.value?,
                            family,
                        })
                    })
                    .collect();
                (name.clone(), points)
            })
            .collect()
    }

    /// How much each cell retrieves: every `k` (top-k), then every budget size (`k` = the
    /// budget's ranking depth).
    pub fn depths(&self) -> Vec<(usize, Option<records::Budget>)> {
        self.k
            .iter()
            .map(|&k| (k, None))
            .chain(self.budget.iter().flat_map(BudgetConfig::depths))
            .collect()
    }

    /// All cells in a stable order: dataset, strategy, retriever, k (as listed, then the
    /// budgets), reader.
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells = Vec::new();
        for d in &self.datasets {
            for (s, sc) in &self.strategies {
                for (r, rc) in &self.retrievers {
                    for (k, budget) in self.depths() {
                        for (rd, rdc) in &self.readers {
                            cells.push(Cell {
                                dataset: d.clone(),
                                strategy: s.clone(),
                                strategy_config: sc.clone(),
                                retriever: r.clone(),
                                retriever_config: rc.clone(),
                                k,
                                reader: rd.clone(),
                                reader_config: rdc.clone(),
                                limit: self.limit,
                                seed: self.seed,
                                embedder: (rc.needs_embedder() || sc.needs_embedder())
                                    .then(|| self.embedder.cell_embedder()),
                                budget,
                            });
                        }
                    }
                }
            }
        }
        cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "name: t
datasets: [sciq]
strategies:
  fixed-100: {kind: fixed, size: 100}
retrievers:
  bm25: {kind: bm25}
readers:
  lexical: {kind: lexical}
";

    /// Issue 55: the verdict rules refuse what they cannot mean, naming the field and the fix.
    #[test]
    fn verdict_rules_are_checked_with_the_fix() {
        let err = |extra: &str| {
            let cfg = format!("{GOOD}strategies:\n  a: {{kind: fixed, size: 50}}\n  b: {{kind: fixed, size: 80}}\n{extra}")
                .replace("strategies:\n  fixed-100: {kind: fixed, size: 100}\n", "");
            format!("{:#}", RunConfig::parse(&cfg, "t.yaml").unwrap_err())
        };
        assert!(err("alpha: 0.5\n").contains("field `alpha`"));
        assert!(err("alpha: 1e-300\n").contains("0.0001"));
        assert!(err("planned: {}\n").contains("names nothing"));
        assert!(err("planned: {strategy: []}\n").contains("names nothing"));
        let e = err("planned: {budget: 512}\n");
        assert!(
            e.contains("planned.budget") && e.contains("this config has none"),
            "{e}"
        );
        let e = err("planned: {strategy: zz}\n");
        assert!(
            e.contains("planned.strategy") && e.contains("have: b"),
            "{e}"
        );
        let e = err("planned: {k: [x]}\n");
        assert!(e.contains("a name or a list of names"), "{e}");
        let ok = GOOD.to_string() + "alpha: 0.01\neffect: 2\nplanned: {k: 3}\n";
        let c = RunConfig::parse(&ok, "t.yaml").unwrap();
        assert_eq!((c.alpha, c.effect), (0.01, 2.0));
        // A config that sets no new rule serialises as before (config.json unchanged).
        let plain = RunConfig::parse(GOOD, "t.yaml").unwrap();
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("alpha") && !json.contains("planned") && !json.contains("effect"));
    }

    #[test]
    fn parses_and_expands() {
        let c = RunConfig::parse(GOOD, "t.yaml").unwrap();
        assert_eq!(c.k, [3, 8]);
        let cells = c.cells();
        assert_eq!(cells.len(), 2);
        assert_ne!(cells[0].id(), cells[1].id());
        assert_eq!(cells[0].id(), c.cells()[0].id());
    }

    /// A record's cell ([`Cell::key`]) serialises exactly as the cell, so reports and
    /// `compare` (which read keys) and the runner (which hashes cells) agree on every id.
    #[test]
    fn cell_keys_are_the_cells_as_data() {
        let y = "name: t
datasets: [sciq]
strategies:
  f: {kind: fixed, size: 100, overlap: 0.25}
  e: {kind: ear}
  m: {kind: max-min, size: 200}
retrievers:
  bm25: {kind: bm25, k1: 0.9}
  hy: {kind: hybrid, query: per-option}
  de: {kind: dense}
readers:
  lexical: {kind: lexical}
  llm: {kind: llm, llm: {scoring: cloze}}
limit: 20
";
        let c = RunConfig::parse(y, "t.yaml").unwrap();
        let cells = c.cells();
        assert_eq!(cells.len(), 3 * 3 * 2 * 2);
        for cell in &cells {
            let key = cell.key();
            assert_eq!(
                serde_json::to_string(&key).unwrap(),
                serde_json::to_string(cell).unwrap()
            );
            assert_eq!(key.id(), cell.id());
        }
    }

    /// An entry serialises straight from its typed params; for every registered kind that
    /// JSON (what a cell id hashes) equals the JSON of its YAML value (what a cell record
    /// stores as its `CellKey`), so ids did not change when the YAML round trip went.
    #[test]
    fn every_kind_serialises_as_its_stored_yaml_form() {
        let strategies = [
            "{kind: fixed, size: 100, overlap: 0.25, unit: words}",
            "{kind: recursive, size: 300, separators: ['\\n\\n', ' '], keep_separator: end}",
            "{kind: max-min, size: 200, comparison: strict}",
            "{kind: kamradt, breakpoint_type: percentile, breakpoint_amount: 95.5}",
            "{kind: ear, ear: {radius: 40, dedup: merge, expand: summary}}",
            "{kind: sentence-window, window_size: 2}",
            "{kind: cluster-semantic, max_size: 200, unit: words}",
            "{kind: markdown, size: 150, max_level: 2}",
            "{kind: no-retrieval}",
            "{kind: oracle}",
            "{kind: command, command: [python3, chunk.py], version: '1', timeout_secs: 5}",
            "{kind: spans, file: spans.jsonl}",
            "{kind: python, object: mine.split, version: '1', fingerprint: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef}",
            "{kind: headers, over: {kind: fixed, size: 50}, format: '{title}: {text}'}",
            "{kind: late, over: {kind: recursive, size: 300}, window: 256, overlap: 64}",
            "{kind: contextual, over: {kind: fixed, size: 50}, llm: {base_url: 'http://127.0.0.1:1/v1', model: m}, document_words: 500}",
            "{kind: llm-boundaries, protocol: lumber, llm: {base_url: 'http://127.0.0.1:1/v1', model: m, seed: 3}, window_tokens: 300}",
        ];
        let retrievers = [
            "{kind: bm25, k1: 0.9, stemming: true, query: per-option}",
            "{kind: dense, query: question}",
            "{kind: hybrid, b: 0.5}",
        ];
        let readers = [
            "{kind: lexical}",
            "{kind: llm, llm: {scoring: cloze-norm}}",
            "{kind: openai, openai: {base_url: 'http://127.0.0.1:1/v1', model: m, api: completions}}",
            "{kind: none}",
        ];
        fn same<T: Serialize>(entry: &T, yaml: &str) {
            let straight = serde_json::to_string(entry).unwrap();
            let via_yaml = serde_json::to_string(&serde_yaml::to_value(entry).unwrap()).unwrap();
            assert_eq!(straight, via_yaml, "{yaml}");
        }
        let kind_of = |y: &str| -> String {
            let v: serde_yaml::Value = serde_yaml::from_str(y).unwrap();
            v["kind"].as_str().unwrap().to_string()
        };
        for y in strategies {
            same(
                &StrategyConfig::from_yaml(serde_yaml::from_str(y).unwrap()).unwrap(),
                y,
            );
        }
        for y in retrievers {
            same(
                &RetrieverConfig::from_yaml(serde_yaml::from_str(y).unwrap()).unwrap(),
                y,
            );
        }
        for y in readers {
            same(
                &ReaderConfig::from_yaml(serde_yaml::from_str(y).unwrap()).unwrap(),
                y,
            );
        }
        let covered = |ys: &[&str], kinds: Vec<&str>| {
            let got: Vec<String> = ys.iter().map(|y| kind_of(y)).collect();
            for k in kinds {
                assert!(
                    got.iter().any(|g| g == k),
                    "kind `{k}` has no entry in this test"
                );
            }
        };
        covered(
            &strategies,
            crate::strategies::KINDS.iter().map(|k| k.name).collect(),
        );
        covered(
            &retrievers,
            crate::retrievers::KINDS.iter().map(|k| k.name).collect(),
        );
        covered(
            &readers,
            crate::readers::KINDS.iter().map(|k| k.name).collect(),
        );
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let bad = GOOD.replace(
            "{kind: fixed, size: 100}",
            "\n    kind: fixed\n    sise: 100",
        );
        let e = RunConfig::parse(&bad, "t.yaml").unwrap_err().to_string();
        assert!(e.contains("t.yaml"), "{e}");
        assert!(
            e.contains("strategies.fixed-100") && e.contains("unknown field `sise`"),
            "{e}"
        );
        assert!(e.contains("line 6"), "{e}");
        assert!(e.contains("did you mean `size`"), "{e}");
        let bad = format!("{GOOD}topk: [3]\n");
        let e = RunConfig::parse(&bad, "t.yaml").unwrap_err().to_string();
        assert!(
            e.contains("unknown field `topk`") && e.contains("line 9"),
            "{e}"
        );
    }

    /// Issue 36 case 18: a typo in the third strategy (or the second retriever) was reported at
    /// the first entry's line.
    #[test]
    fn errors_name_the_entry_they_are_in() {
        let text = "name: t
datasets: [sciq]
strategies:
  a: {kind: fixed, size: 100}
  b: {kind: fixed, size: 200}
  c:
    kind: fixed
    sise: 300
retrievers:
  bm25: {kind: bm25}
  dense: {kind: dense, k1: 1.2}
readers:
  lexical: {kind: lexical}
";
        let e = RunConfig::parse(text, "t.yaml").unwrap_err().to_string();
        assert!(
            e.contains("strategies.c: unknown field `sise`") && e.contains("line 8 column 5"),
            "{e}"
        );
        assert!(e.contains("did you mean `size`"), "{e}");
        let text = text.replace("    sise: 300", "    size: 300");
        let e = RunConfig::parse(&text, "t.yaml").unwrap_err().to_string();
        assert!(
            e.contains("retrievers.dense") && e.contains("line 11"),
            "{e}"
        );
        let text = text.replace(
            "lexical: {kind: lexical}",
            "lexical: {kind: lexical}\n  x: {kind: lexicl}",
        );
        let text = text.replace(", k1: 1.2", "");
        let e = RunConfig::parse(&text, "t.yaml").unwrap_err().to_string();
        assert!(e.contains("readers.x") && e.contains("line 14"), "{e}");
    }

    #[test]
    fn invalid_values_name_the_field() {
        let bad = GOOD.replace("size: 100}", "size: 100, overlap: 100}");
        let e = RunConfig::parse(&bad, "t.yaml").unwrap_err().to_string();
        assert!(
            e.contains("strategies.fixed-100") && e.contains("`overlap`"),
            "{e}"
        );
        let bad = format!("{GOOD}k: [0]\n");
        assert!(RunConfig::parse(&bad, "t")
            .unwrap_err()
            .to_string()
            .contains("field `k`"));
        let bad = format!("{GOOD}baseline: nope\n");
        assert!(RunConfig::parse(&bad, "t")
            .unwrap_err()
            .to_string()
            .contains("`baseline`"));
        let bad = GOOD.replace("kind: fixed", "kind: fixd");
        let e = RunConfig::parse(&bad, "t").unwrap_err().to_string();
        assert!(
            e.contains("unknown variant `fixd`") && e.contains("line 4"),
            "{e}"
        );
    }

    #[test]
    fn grid_sweep_expands_into_named_variants() {
        let text = format!(
            "{GOOD}baseline: fixed-100\nsweep:\n  grid:\n    strategies.fixed-100.size: [64, 128]\n    strategies.fixed-100.overlap: [0, 0.2]\n  zip:\n    retrievers.bm25.k1: [0.9, 1.2]\n    retrievers.bm25.b: [0.4, 0.75]\n"
        );
        let c = RunConfig::parse(&text, "t").unwrap();
        let names: Vec<&String> = c.strategies.keys().collect();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(c.strategies.contains_key("fixed-100[overlap=0.2,size=128]"));
        let f = c.strategies["fixed-100[overlap=0.2,size=128]"]
            .params::<crate::strategies::Fixed>()
            .unwrap();
        assert_eq!(
            crate::strategies::overlap_units(f.overlap, f.size).unwrap(),
            25
        );
        assert_eq!(c.retrievers.len(), 2);
        assert_eq!(
            c.retrievers["bm25[b=0.4,k1=0.9]"]
                .params::<crate::retrievers::Bm25>()
                .unwrap()
                .k1(),
            0.9
        );
        assert_eq!(c.baseline.as_deref(), Some("fixed-100[overlap=0,size=64]"));
        assert_eq!(c.cells().len(), 4 * 2 * 2);
        assert!(c.sweep.is_none());
        // The sweep plots' axes come from the typed variants: per numeric field its value
        // and the variant's name without it; retriever variants are not plotted.
        let points = c.sweep_points();
        assert_eq!(points.len(), 4);
        let p = &points["fixed-100[overlap=0.2,size=128]"];
        let got: Vec<(&str, f64, &str)> = p
            .iter()
            .map(|v| (v.param.as_str(), v.value, v.family.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("overlap", 0.2, "fixed-100[size=128]"),
                ("size", 128.0, "fixed-100[overlap=0.2]")
            ]
        );
        // Kept through config.json; a config cannot set it by hand.
        let json = serde_json::to_string(&c).unwrap();
        let back: RunConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back.sweep_points(), points);
        let by_hand = format!("{GOOD}swept: {{}}\n");
        assert!(RunConfig::parse(&by_hand, "t").is_ok());
        let by_hand = format!(
            "{GOOD}swept:\n  x: {{entry: fixed-100, fields: [{{field: size, label: '1', value: 1}}]}}\n"
        );
        let e = RunConfig::parse(&by_hand, "t").unwrap_err().to_string();
        assert!(e.contains("`swept`") && e.contains("`sweep`"), "{e}");
        let set = "swept={x: {entry: fixed-100, fields: [{field: size, label: '1', value: 1}]}}";
        let e = RunConfig::parse_with(GOOD, "t", &[set.to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`swept`"), "{e}");
    }

    /// A strategy named like a sweep variant but written by hand is not a sweep point.
    #[test]
    fn only_sweep_variants_are_sweep_points() {
        let text = GOOD.replace("fixed-100:", "\"fixed[size=64]\":");
        let c = RunConfig::parse(&text, "t").unwrap();
        assert!(c.strategies.contains_key("fixed[size=64]"), "{text}");
        assert!(c.sweep_points().is_empty());
    }

    #[test]
    fn sweep_errors_name_the_path() {
        let bad = format!("{GOOD}sweep:\n  grid:\n    strategies.nope.size: [1]\n");
        let e = RunConfig::parse(&bad, "t").unwrap_err().to_string();
        assert!(
            e.contains("sweep.grid.strategies.nope.size") && e.contains("no strategies entry"),
            "{e}"
        );
        let bad = format!("{GOOD}sweep:\n  grid:\n    strategies.fixed-100.sise: [1]\n");
        let e = RunConfig::parse(&bad, "t").unwrap_err().to_string();
        assert!(e.contains("unknown field `sise`"), "{e}");
        let bad = format!("{GOOD}sweep:\n  zip:\n    strategies.fixed-100.size: [1, 2]\n    retrievers.bm25.k1: [1]\n");
        assert!(RunConfig::parse(&bad, "t")
            .unwrap_err()
            .to_string()
            .contains("same, non-zero length"));
        let bad = format!("{GOOD}sweep:\n  grid:\n    strategies.fixed-100.overlap: [1.5]\n");
        let e = RunConfig::parse(&bad, "t").unwrap_err().to_string();
        assert!(e.contains("`overlap`"), "{e}");
    }

    #[test]
    fn set_overrides_values() {
        let sets = vec![
            "strategies.fixed-100.size=300".to_string(),
            "k=[5]".to_string(),
        ];
        let c = RunConfig::parse_with(GOOD, "t", &sets).unwrap();
        let f = c.strategies["fixed-100"].params::<crate::strategies::Fixed>();
        assert_eq!(f.unwrap().size, 300);
        assert_eq!(c.k, [5]);
        let e = RunConfig::parse_with(GOOD, "t", &["strategies.nope.size=3".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--set strategies.nope.size=3") && e.contains("fixed-100"),
            "{e}"
        );
        let e = RunConfig::parse_with(GOOD, "t", &["strategies.fixed-100.size=big".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--set") && e.contains("size"), "{e}");
    }

    #[test]
    fn fields_of_other_kinds_and_duplicates_are_rejected() {
        let e = |text: &str| RunConfig::parse(text, "t.yaml").unwrap_err().to_string();
        let msg = e(&GOOD.replace("bm25: {kind: bm25}", "dense: {kind: dense, k1: 1.5}"));
        assert!(
            msg.contains("retrievers.dense") && msg.contains("`k1`"),
            "{msg}"
        );
        let msg = e(&GOOD.replace(
            "lexical: {kind: lexical}",
            "lexical: {kind: lexical, cache: never}",
        ));
        assert!(
            msg.contains("readers.lexical") && msg.contains("`cache`"),
            "{msg}"
        );
        let msg = e(&GOOD.replace("lexical: {kind: lexical}", "srv: {kind: openai}"));
        assert!(
            msg.contains("missing field `openai`") && msg.contains("required by kind `openai`"),
            "{msg}"
        );
        let msg = e(&GOOD.replace(
            "fixed-100: {kind: fixed, size: 100}",
            "fixed-100: {kind: fixed, size: 100}\n  again: {kind: fixed, size: 100}",
        ));
        assert!(
            msg.contains("`again` and `fixed-100`") || msg.contains("`fixed-100` and `again`"),
            "{msg}"
        );
        let msg = e(&format!("{GOOD}k: [3, 3]\n"));
        assert!(msg.contains("field `k`") && msg.contains("twice"), "{msg}");
        let msg = e(&format!(
            "{GOOD}sweep:\n  grid:\n    strategies.fixed-100.size: [10, 10]\n"
        ));
        assert!(msg.contains("listed twice"), "{msg}");
        // The BM25 defaults are written into bm25 entries, not into dense ones.
        let c = RunConfig::parse(
            &GOOD.replace(
                "bm25: {kind: bm25}",
                "bm25: {kind: bm25}\n  dense: {kind: dense}",
            ),
            "t",
        )
        .unwrap();
        let bm25 = c.retrievers["bm25"]
            .params::<crate::retrievers::Bm25>()
            .unwrap();
        assert_eq!((bm25.k1, bm25.b), (Some(1.2), Some(0.75)));
        assert_eq!(
            serde_json::to_string(&c.retrievers["dense"]).unwrap(),
            r#"{"kind":"dense","query":"question+options"}"#
        );
    }

    #[test]
    fn set_errors_name_the_field() {
        let e = RunConfig::parse_with(GOOD, "t", &["retrievers.bm25.b=high".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("retrievers.bm25.b") && e.contains("invalid type"),
            "{e}"
        );
        assert!(
            !e.contains("at line"),
            "no line of a synthetic document: {e}"
        );
    }
}
