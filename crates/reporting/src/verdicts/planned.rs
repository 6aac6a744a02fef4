//! The config's `planned:`: which comparisons are confirmatory (the Holm family), the rest
//! exploratory (docs/reference.md §5 "The verdict", "A family the user plans").

use records::CellKey;
use serde::{Deserialize, Serialize};

/// One value or a list of them (`retriever: dense` or `retriever: [dense, bm25]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a name or a list of names (k and budget: a whole number or a list of them)"
)]
pub enum OneOrMany<T> {
    /// A single value.
    One(T),
    /// A list.
    Many(Vec<T>),
}

impl<T: PartialEq> OneOrMany<T> {
    /// True when `x` is the value or in the list.
    pub fn holds(&self, x: &T) -> bool {
        match self {
            OneOrMany::One(v) => v == x,
            OneOrMany::Many(vs) => vs.contains(x),
        }
    }
}

impl<T> OneOrMany<T> {
    /// True for an empty list.
    pub fn is_empty(&self) -> bool {
        matches!(self, OneOrMany::Many(v) if v.is_empty())
    }

    /// The values.
    pub fn values(&self) -> Vec<&T> {
        match self {
            OneOrMany::One(v) => vec![v],
            OneOrMany::Many(vs) => vs.iter().collect(),
        }
    }
}

/// The confirmatory cells of a run (config `planned:`): a comparison is in the Holm family
/// when its cell matches every field given; fields left out match anything. `k` matches top-k
/// cells with that k, `budget` budget cells of that size (in the budget's unit), so
/// `planned: {retriever: dense, budget: 512}` plans exactly the dense cells at 512.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedCells {
    /// Datasets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<OneOrMany<String>>,
    /// Strategies (the candidates; the baseline is never a comparison).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<OneOrMany<String>>,
    /// Retrievers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriever: Option<OneOrMany<String>>,
    /// Top-k values (top-k cells only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<OneOrMany<usize>>,
    /// Budget sizes (budget cells only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<OneOrMany<usize>>,
    /// Readers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<OneOrMany<String>>,
}

impl PlannedCells {
    /// True when it names nothing: every field absent or an empty list (which would plan
    /// either nothing or everything — refused by the config's check).
    pub fn is_empty(&self) -> bool {
        fn none<T>(f: &Option<OneOrMany<T>>) -> bool {
            f.as_ref().is_none_or(OneOrMany::is_empty)
        }
        none(&self.dataset)
            && none(&self.strategy)
            && none(&self.retriever)
            && none(&self.k)
            && none(&self.budget)
            && none(&self.reader)
    }

    /// True when `cell` matches every field given.
    pub fn matches(&self, cell: &CellKey) -> bool {
        let text =
            |f: &Option<OneOrMany<String>>, v: &String| f.as_ref().is_none_or(|f| f.holds(v));
        let depth = match (&self.k, &self.budget, &cell.budget) {
            (None, None, _) => true,
            (k, _, None) => k.as_ref().is_some_and(|k| k.holds(&cell.k)),
            (_, b, Some(budget)) => b.as_ref().is_some_and(|b| b.holds(&budget.size)),
        };
        depth
            && text(&self.dataset, &cell.dataset)
            && text(&self.strategy, &cell.strategy)
            && text(&self.retriever, &cell.retriever)
            && text(&self.reader, &cell.reader)
    }

    /// The filter in words: `retriever dense, budget 512` (`every comparison` when empty).
    pub fn describe(&self) -> String {
        fn part<T: std::fmt::Display>(name: &str, f: &Option<OneOrMany<T>>) -> Option<String> {
            f.as_ref().map(|f| {
                let vs: Vec<String> = f.values().iter().map(|v| v.to_string()).collect();
                format!("{name} {}", vs.join(" or "))
            })
        }
        let parts: Vec<String> = [
            part("dataset", &self.dataset),
            part("strategy", &self.strategy),
            part("retriever", &self.retriever),
            part("k", &self.k),
            part("budget", &self.budget),
            part("reader", &self.reader),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            "every comparison".into()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(retriever: &str, k: usize, budget: Option<usize>) -> CellKey {
        CellKey {
            dataset: "d".into(),
            strategy: "s".into(),
            strategy_config: serde_yaml::Value::Null,
            retriever: retriever.into(),
            retriever_config: serde_yaml::Value::Null,
            k,
            reader: "r".into(),
            reader_config: serde_yaml::Value::Null,
            limit: None,
            seed: 0,
            embedder: None,
            budget: budget.map(|size| records::Budget {
                unit: records::BudgetUnit::Words,
                size,
                fill: records::Fill::Cut,
            }),
        }
    }

    #[test]
    fn a_planned_filter_names_one_retriever_at_one_budget() {
        let p: PlannedCells = serde_yaml::from_str("{retriever: dense, budget: 512}").unwrap();
        assert!(p.matches(&cell("dense", 100, Some(512))));
        assert!(!p.matches(&cell("dense", 100, Some(256))));
        assert!(!p.matches(&cell("bm25", 100, Some(512))));
        assert!(
            !p.matches(&cell("dense", 3, None)),
            "a top-k cell has no budget"
        );
        let k: PlannedCells = serde_yaml::from_str("{k: [3, 8]}").unwrap();
        assert!(k.matches(&cell("bm25", 3, None)));
        assert!(!k.matches(&cell("bm25", 100, Some(512))));
        assert!(PlannedCells::default().matches(&cell("x", 1, Some(9))));
        assert_eq!(p.describe(), "retriever dense, budget 512");
        assert!(serde_yaml::from_str::<PlannedCells>("{retreiver: dense}").is_err());
    }
}
