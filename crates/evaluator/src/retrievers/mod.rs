//! The retrieval stage: one registry of retriever kinds, their typed entries, and the trait a
//! kind implements.
//!
//! A retriever kind is one file in this directory with
//! - a **params** type (the YAML entry `retrievers.NAME` without `kind`, strictly parsed,
//!   serde-derived) that implements [`Params`]: registry name, one-line summary, query form,
//!   whether it embeds, defaults, checks and `build`;
//! - a **retriever** that implements [`Retriever`]: the questions' query texts → each
//!   question's top hits over the passage index (passage number and score, best first).
//!
//! and one line in [`registry!`] below. The config parser, `chunkbench ls retrievers` and the
//! retriever kinds table in README.md read [`KINDS`]. What a strategy does with the hits at
//! query time (windows, EAR) is the strategy's [`crate::strategies::Passages`].
//!
//! Identity: an entry serialises as `{"kind": NAME, "query": ..., ...its fields in declaration
//! order}` ([`crate::registry::tagged_yaml`]); the cell id hashes that JSON.

use anyhow::Result;
use embed::Embedder;
use retriever::{Hit, PassageIndex, QueryForm};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

/// Declares the retriever kinds: `module::Params` per line (the whole registration of a
/// kind: its file and its place in [`KINDS`]).
macro_rules! registry {
    ($($module:ident :: $params:ident),* $(,)?) => {
        $(pub mod $module; pub use $module::$params;)*
        /// Every retriever kind, in the order `ls` and README list them.
        pub static KINDS: &[Kind] = &[$(kind_of::<$params>()),*];
    };
}

registry![bm25::Bm25, dense::Dense, hybrid::Hybrid];

/// What a retriever ranks over, per question (all slices in question order).
pub struct Input<'a> {
    /// The passages (the strategy's chunks, exact slices of their documents).
    pub index: &'a PassageIndex,
    /// Each question's query texts under the entry's [`QueryForm`] (several for
    /// `per-option`, max-pooled per passage).
    pub queries: &'a [Vec<String>],
    /// Each question's document scope: `Some(mask)` over passages when the question names its
    /// documents, `None` for the whole corpus.
    pub scopes: &'a [Option<Vec<bool>>],
    /// The run's embedder, loaded when [`Params::needs_embedder`].
    pub embedder: Option<&'a dyn Embedder>,
    /// A progress bar over `n` questions for a named step (hidden off a terminal).
    pub stage: &'a (dyn Fn(&str, usize) -> indicatif::ProgressBar + Sync),
}

/// What a retriever returns: each question's hits, and the vectors it could not use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retrieval {
    /// Each question's hits, best first.
    pub hits: Vec<Vec<Hit>>,
    /// Vectors the embedder returned that cannot rank anything (zero norm; non-finite values
    /// are refused earlier): counted per cell and shown, never silent.
    pub degenerate: Degenerate,
}

/// Counts of degenerate vectors in one retrieval (docs/reference.md case 7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Degenerate {
    /// Passages whose vector is degenerate: never returned by dense search.
    pub passages: usize,
    /// Questions all of whose query vectors are degenerate: dense search returned them
    /// nothing.
    pub queries: usize,
}

/// A built retriever.
pub trait Retriever: Send + Sync {
    /// Each question's top `depth` hits over `input.index` (fewer when its scope holds fewer
    /// passages), best first; ties broken by ascending passage number, so a smaller k takes a
    /// prefix; with the counts of vectors that could not be used.
    ///
    /// # Errors
    /// A missing embedder, embedding failures, degenerate dimensions.
    fn retrieve(&self, input: &Input<'_>, depth: usize) -> Result<Retrieval>;
}

/// A retriever kind's entry type: what `retrievers.NAME` holds besides `kind`.
///
/// Implementations derive `Serialize`/`Deserialize` with `deny_unknown_fields`.
pub trait Params:
    Serialize + DeserializeOwned + Clone + PartialEq + Debug + Send + Sync + 'static
{
    /// The registry name (`kind: NAME`).
    const KIND: &'static str;
    /// One line for `chunkbench ls retrievers` and README.
    const SUMMARY: &'static str;
    /// The query form (`query:`).
    fn query(&self) -> QueryForm;
    /// True when the retriever embeds passages and queries with the run's embedder.
    fn needs_embedder(&self) -> bool {
        false
    }
    /// Writes defaults into the entry (run in the config's final pass, after `--set` and the
    /// sweep, so that changing a kind there leaves no foreign defaults behind).
    fn resolve_defaults(&mut self) {}
    /// Checks values without loading anything.
    ///
    /// # Errors
    /// The first problem, naming the field.
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// Builds the retriever.
    fn build(&self) -> Box<dyn Retriever>;
}

crate::registry::stage_entry! {
    /// One retriever entry (`retrievers.NAME`): a registered kind and its typed params.
    /// YAML/JSON form: `{kind: NAME, query: ..., ...fields}`.
    pub struct RetrieverConfig: Params, "retriever";
    public {
        /// The query form ([`Params::query`]).
        fn query(&self) -> QueryForm;
        /// True when the retriever embeds passages and queries ([`Params::needs_embedder`]).
        fn needs_embedder(&self) -> bool;
        /// Checks the entry ([`Params::check`]).
        ///
        /// # Errors
        /// The first problem, naming the field.
        fn check(&self) -> Result<()>;
    }
    public_mut {
        /// Writes the kind's defaults into the entry ([`Params::resolve_defaults`]).
        fn resolve_defaults(&mut self);
    }
    private {
        fn build(&self) -> Box<dyn Retriever>;
    }
}

impl RetrieverConfig {
    /// Builds the retriever ([`Params::build`], after [`Params::check`]).
    ///
    /// # Errors
    /// [`Params::check`]'s.
    pub fn build(&self) -> Result<Box<dyn Retriever>> {
        self.0.check()?;
        Ok(self.0.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chunker::{Chunk, Document};

    fn parse(y: &str) -> Result<RetrieverConfig, String> {
        RetrieverConfig::from_yaml(serde_yaml::from_str(y).unwrap())
    }

    /// The serialised forms are the cell identities of stored results: kind, query, then the
    /// BM25 fields once resolved; dense has none.
    #[test]
    fn entries_serialise_as_before() {
        let mut b = parse("{kind: bm25}").unwrap();
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"kind":"bm25","query":"question+options"}"#
        );
        b.resolve_defaults();
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"kind":"bm25","query":"question+options","k1":1.2,"b":0.75,"stop_words":false,"stemming":false}"#
        );
        let mut h = parse("{kind: hybrid, query: per-option, k1: 0.9}").unwrap();
        h.resolve_defaults();
        assert_eq!(
            serde_json::to_string(&h).unwrap(),
            r#"{"kind":"hybrid","query":"per-option","k1":0.9,"b":0.75,"stop_words":false,"stemming":false}"#
        );
        let mut d = parse("{kind: dense, query: question}").unwrap();
        d.resolve_defaults();
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, r#"{"kind":"dense","query":"question"}"#);
        assert_eq!(serde_json::from_str::<RetrieverConfig>(&json).unwrap(), d);
        assert!(d.needs_embedder() && h.needs_embedder() && !b.needs_embedder());
    }

    /// README's retriever kinds table is the registry's (`CHUNKBENCH_BLESS=1` rewrites it).
    #[test]
    fn readme_kinds_table_is_the_registry() {
        crate::registry::assert_readme_table("retriever kinds", &kinds_markdown());
    }

    #[test]
    fn errors_name_the_field_and_the_kinds() {
        let e = parse("{kind: dense, k1: 1.5}").unwrap_err();
        assert!(
            e.contains("field `k1` does not apply to kind `dense`")
                && e.contains("`bm25`, `hybrid`"),
            "{e}"
        );
        let e = parse("{kind: bm26}").unwrap_err();
        assert!(e.contains("did you mean `bm25`"), "{e}");
        let e = parse("{kind: bm25, kk: 1}").unwrap_err();
        assert!(e.starts_with("unknown field `kk`"), "{e}");
        let e = parse("{kind: bm25, b: high}").unwrap_err();
        assert!(e.contains("field `b`") && e.contains("invalid type"), "{e}");
        let c = parse("{kind: hybrid, b: 2}").unwrap();
        assert!(c.check().unwrap_err().to_string().contains("field `b`"));
    }

    /// The three kinds on a real index: BM25 ranks the passage with the query words first;
    /// hybrid without an embedder is an error naming the need.
    #[test]
    fn bm25_ranks_and_dense_needs_the_embedder() {
        let docs = [Document::new(
            "d",
            "Apples are red fruit. Bananas are yellow. The sky is blue.",
        )];
        let chunks = vec![
            Chunk::new(&docs[0], 0, 21),
            Chunk::new(&docs[0], 22, 41),
            Chunk::new(&docs[0], 42, 58),
        ];
        assert_eq!(chunks[2].text(&docs[0]), "The sky is blue.");
        let index = PassageIndex::new(&docs, chunks).unwrap();
        let queries = vec![vec!["what colour are bananas".to_string()]];
        let scopes = vec![None];
        let stage = |_: &str, _: usize| indicatif::ProgressBar::hidden();
        let input = Input {
            index: &index,
            queries: &queries,
            scopes: &scopes,
            embedder: None,
            stage: &stage,
        };
        let mut b = parse("{kind: bm25}").unwrap();
        b.resolve_defaults();
        let hits = b.build().unwrap().retrieve(&input, 2).unwrap().hits;
        assert_eq!(hits[0].len(), 2);
        assert_eq!(hits[0][0].passage, 1);
        let h = parse("{kind: hybrid}").unwrap();
        let e = h.build().unwrap().retrieve(&input, 2).unwrap_err();
        assert!(e.to_string().contains("embedder"), "{e}");
    }
}
