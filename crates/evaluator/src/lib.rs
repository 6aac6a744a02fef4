//! The chunkbench pipeline: run configuration with sweeps and `--set` ([`config`]), the
//! stage registries ([`registry`], [`strategies`], [`retrievers`]), preflight checks, and the
//! runner as named stages (load → chunk → index → retrieve → passages → read → score →
//! assemble, [`run`]) with resume, shards and merge (docs/reference.md §1).
//!
//! Datasets come from the `datasets` crate; what a run writes (records, statistics, summaries,
//! plots) and `compare` are the `reporting` crate, which the runner's assemble stage calls.

#![warn(missing_docs)]

pub mod config;
pub mod embedder;
pub mod models;
pub mod preflight;
pub mod readers;
pub mod registry;
pub mod retrievers;
pub mod run;
pub mod stop;
pub mod strategies;
pub mod version;
pub mod yaml_keys;

pub use config::RunConfig;
pub use datasets::{Dataset, Question};

#[cfg(test)]
mod tests {
    #[test]
    fn datasets_and_readers_agree_on_the_option_limit() {
        assert_eq!(datasets::dataset::MAX_OPTIONS, reader::MAX_OPTIONS);
    }
}
