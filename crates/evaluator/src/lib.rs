//! The chunkbench evaluator: datasets and their importers, run configuration, the runner,
//! aggregates and reports, and the regression gate between two runs (docs/reference.md §1, stages
//! "aggregate" and "report", and "compare -> CI gate").

#![warn(missing_docs)]

pub mod compare;
pub mod config;
pub mod dataset;
pub mod explain;
pub mod fetch;
pub mod filehash;
pub mod import;
pub mod inputs;
pub mod io;
pub mod openstax;
pub mod plots;
pub mod preflight;
pub mod records;
pub mod report;
pub mod run;
pub mod stats;
pub mod strategies;
pub mod yaml_keys;

pub use config::RunConfig;
pub use dataset::{Dataset, Question};
