//! chunkbench's datasets: the canonical format (`documents.jsonl`, `questions.jsonl`,
//! `manifest.json`) with its loader and line-by-line validator ([`dataset`]), the pinned
//! artifacts and how they are fetched and verified ([`fetch`]), the importers of the
//! question sets ([`import`]: SciQ, MMLU, the QuALITY subset), the OpenStax textbook corpus
//! ([`openstax`]), long documents stitched from short ones ([`stitch`], Bhat et al. 2025),
//! content hashes of input files ([`filehash`]) and atomic writes ([`io`]).
//!
//! The pipeline (`evaluator`) reads datasets through [`Dataset::load`]; nothing here knows
//! about chunking strategies, retrievers or readers (docs/reference.md §1, stage "load";
//! §3 for the canonical formats).

#![warn(missing_docs)]

pub mod dataset;
pub mod fetch;
pub mod filehash;
pub mod import;
pub mod io;
pub mod openstax;
pub mod stitch;

pub use dataset::{Dataset, Question};

#[cfg(test)]
mod tests {
    // Every variant's strum name equals its serde name, so the two derives agree.
    use testkit::names_agree;

    #[test]
    fn enum_names_are_the_serde_names() {
        names_agree::<crate::openstax::Reason>();
        names_agree::<crate::openstax::support::GoldSupport>();
    }
}
