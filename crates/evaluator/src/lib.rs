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
pub mod registry;
pub mod report;
pub mod retrievers;
pub mod run;
pub mod stats;
pub mod strategies;
pub mod yaml_keys;

pub use config::RunConfig;
pub use dataset::{Dataset, Question};

#[cfg(test)]
mod tests {
    /// Every variant's `as_str` (strum) equals its serde name, so the two derives agree.
    fn names_agree<T>()
    where
        T: serde::Serialize + strum::VariantArray + Copy + Into<&'static str>,
    {
        for v in T::VARIANTS {
            let serde_name = serde_json::to_value(v).unwrap();
            let name: &'static str = (*v).into();
            assert_eq!(serde_name, name, "{}", std::any::type_name::<T>());
        }
    }

    #[test]
    fn enum_names_are_the_serde_names() {
        names_agree::<crate::records::Failure>();
        names_agree::<crate::openstax::Reason>();
        names_agree::<crate::openstax::support::GoldSupport>();
        names_agree::<crate::compare::Verdict>();
    }
}
