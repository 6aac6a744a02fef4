//! The reading stage's registry: reader kinds, their typed entries, and what the pipeline asks
//! of a kind. The reader itself is [`reader::Reader`] (crate `reader`).
//!
//! A reader kind is one file in this directory with a **params** type (the YAML entry
//! `readers.NAME` without `kind`, strictly parsed, serde-derived) implementing [`Params`]:
//! registry name, one-line summary, the files it reads (hashed into each cell's inputs),
//! whether its identity is an input (a server), its preflight checks, and `build`; plus one
//! line in [`registry!`] below. The config parser, `chunkbench ls readers` and README's reader
//! kinds table read [`KINDS`].
//!
//! Identity: an entry serialises as `{"kind": NAME, ...its fields in declaration order}`; the
//! cell id hashes that JSON.

use anyhow::Result;
use reader::Reader;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

/// Declares the reader kinds: `module::Params` per line.
macro_rules! registry {
    ($($module:ident :: $params:ident),* $(,)?) => {
        $(pub mod $module; pub use $module::$params;)*
        /// Every reader kind, in the order `ls` and README list them.
        pub static KINDS: &[Kind] = &[$(kind_of::<$params>()),*];
    };
}

registry![lexical::Lexical, llm::Llm, openai::Openai, none::NoReader];

/// Where response caches live (content-addressed by reader identity and prompt).
pub const RESPONSE_CACHE: &str = ".cache/responses";

/// A reader kind's entry type: what `readers.NAME` holds besides `kind`.
pub trait Params:
    Serialize + DeserializeOwned + Clone + PartialEq + Debug + Send + Sync + 'static
{
    /// The registry name (`kind: NAME`).
    const KIND: &'static str;
    /// One line for `chunkbench ls readers` and README.
    const SUMMARY: &'static str;
    /// False for `kind: none`: the cell scores retrieval only and reads nothing.
    fn reads(&self) -> bool {
        true
    }
    /// True when the runner builds the reader per dataset from its documents (the lexical
    /// reader) rather than once per run through [`Params::build`].
    fn per_dataset(&self) -> bool {
        false
    }
    /// True when the reader counts the tokens of its passages itself (so the run's
    /// `cost_tokenizer` is not used).
    fn counts_own_tokens(&self) -> bool {
        false
    }
    /// Files the reader reads, as `(input name, path)`; their sha256 are cell inputs.
    fn input_files(&self) -> Vec<(&'static str, PathBuf)> {
        Vec::new()
    }
    /// True when the built reader's identity (what a server reports serving) is a cell input
    /// (`reader/server`).
    fn identity_is_input(&self) -> bool {
        false
    }
    /// Checks the entry without loading anything.
    ///
    /// # Errors
    /// The first problem, naming the field.
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// Everything that would make [`Params::build`] fail, without building (model files'
    /// headers, the server answering): messages for `validate`, each starting with the field
    /// (`field `readers.NAME.model`: …`) or the reader (`reader `NAME`: …`).
    fn preflight(&self, _name: &str) -> Vec<String> {
        Vec::new()
    }
    /// Builds the reader behind its response cache.
    ///
    /// # Errors
    /// Model files that do not load, a server that does not answer, naming the field.
    fn build(&self, name: &str) -> Result<Arc<dyn Reader>>;
}

crate::registry::stage_entry! {
    /// One reader entry (`readers.NAME`): a registered kind and its typed params.
    /// YAML/JSON form: `{kind: NAME, ...fields}`.
    pub struct ReaderConfig: Params, "reader";
    public {
        /// Reads the passages at all ([`Params::reads`]; false for `kind: none`).
        fn reads(&self) -> bool;
        /// Built per dataset by the runner ([`Params::per_dataset`]).
        fn per_dataset(&self) -> bool;
        /// Counts its passages' tokens itself ([`Params::counts_own_tokens`]).
        fn counts_own_tokens(&self) -> bool;
        /// `(input name, path)` of the files it reads ([`Params::input_files`]).
        fn input_files(&self) -> Vec<(&'static str, PathBuf)>;
        /// Its built identity is a cell input ([`Params::identity_is_input`]).
        fn identity_is_input(&self) -> bool;
        /// Checks the entry ([`Params::check`]).
        ///
        /// # Errors
        /// The first problem, naming the field.
        fn check(&self) -> Result<()>;
        /// What would make building fail, as messages ([`Params::preflight`]).
        fn preflight(&self, name: &str) -> Vec<String>;
    }
    public_mut {}
    private {
        fn build(&self, name: &str) -> Result<Arc<dyn Reader>>;
    }
}

/// The response cache of a model reader entry (`cache:`, default `read-write`), under
/// [`RESPONSE_CACHE`].
///
/// # Errors
/// The cache directory cannot be created, naming the field.
pub fn response_cache(
    name: &str,
    mode: Option<reader::CacheMode>,
) -> Result<reader::ResponseCache> {
    use anyhow::Context;
    let cache = reader::ResponseCache::new(
        std::path::Path::new(RESPONSE_CACHE),
        mode.unwrap_or(reader::CacheMode::ReadWrite),
    )
    .with_context(|| format!("field `readers.{name}.cache`"))?;
    if let Some((entries, invalid)) = cache.imported() {
        eprintln!(
            "response cache {RESPONSE_CACHE}: imported {entries} entries from the \
             file-per-entry layout into {} ({invalid} invalid files dropped)",
            reader::RESPONSE_DB_FILE
        );
    }
    Ok(cache)
}

impl ReaderConfig {
    /// [`Params::build`] (after [`Params::check`]).
    ///
    /// # Errors
    /// As [`Params::build`].
    pub fn build(&self, name: &str) -> Result<Arc<dyn Reader>> {
        self.0.check()?;
        self.0.build(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(y: &str) -> Result<ReaderConfig, String> {
        ReaderConfig::from_yaml(serde_yaml::from_str(y).unwrap())
    }

    /// The serialised forms are the cell identities of stored results.
    #[test]
    fn entries_serialise_as_before() {
        let j = |y: &str| serde_json::to_string(&parse(y).unwrap()).unwrap();
        assert_eq!(j("{kind: lexical}"), r#"{"kind":"lexical"}"#);
        assert_eq!(
            j("{kind: llm, cache: never, model: m.gguf}"),
            r#"{"kind":"llm","model":"m.gguf","cache":"never"}"#
        );
        let o = j("{kind: openai, openai: {base_url: 'http://x/v1', model: m}}");
        assert!(
            o.starts_with(r#"{"kind":"openai","openai":{"base_url":"http://x/v1","model":"m""#),
            "{o}"
        );
        let back: ReaderConfig = serde_json::from_str(&o).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), o);
    }

    #[test]
    fn errors_name_the_field_and_the_kinds() {
        let e = parse("{kind: lexical, model: m.gguf}").unwrap_err();
        assert!(
            e.contains("field `model` does not apply to kind `lexical`") && e.contains("`llm`"),
            "{e}"
        );
        let e = parse("{kind: lexical, cache: never}").unwrap_err();
        assert!(e.contains("`llm`, `openai`"), "{e}");
        let e = parse("{kind: openai}").unwrap_err();
        assert!(e.contains("missing field `openai`"), "{e}");
        let e = parse("{kind: lexcal}").unwrap_err();
        assert!(e.contains("did you mean `lexical`"), "{e}");
    }

    /// README's reader kinds table is the registry's (`CHUNKBENCH_BLESS=1` rewrites it).
    #[test]
    fn readme_kinds_table_is_the_registry() {
        crate::registry::assert_readme_table("reader kinds", &kinds_markdown());
    }
}
