//! The chunking stage: one registry of strategy kinds, their typed entries, and the traits a
//! kind implements.
//!
//! A strategy kind is one file in this directory with
//! - a **params** type (the YAML entry `strategies.NAME` without `kind`, strictly parsed,
//!   serde-derived) that implements [`Params`]: its registry name, a one-line summary, checks,
//!   defaults, and `build`;
//! - a **chunker** that implements [`Chunker`]: corpus → byte-span chunks (what the retriever
//!   indexes) and, optionally, the [`Passages`] that turn the retriever's ranking of those chunks
//!   into the passages a question gets (query-time windows: sentence windows, EAR).
//!
//! and one line in [`registry!`] below. The config parser, `chunkbench ls strategies`, the
//! `chunk` command and the kinds table in README.md all read [`KINDS`].
//!
//! Identity: an entry serialises as `{"kind": NAME, ...its fields in declaration order}`; the
//! cell id hashes that JSON, so a kind's field order is part of its results' identity.

use anyhow::{bail, Context, Result};
use chunker::SizeLimit;
use chunker::{Chunk, Document, HfTokenizer, Sizer, Unit};
use embed::Embedder;
use retriever::{Hit, PassageIndex};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

mod common;
pub mod llm;
pub use common::{count_over_size, load_tokenizer, overlap_units, NoOverlap};

/// Declares the strategy kinds: `module::Params` per line. Each line is the whole registration
/// of a kind: it declares the module (the kind's file) and lists its params type in [`KINDS`].
macro_rules! registry {
    ($($module:ident :: $params:ident),* $(,)?) => {
        $(pub mod $module; pub use $module::$params;)*
        /// Every strategy kind, in the order `ls` and README list them.
        pub static KINDS: &[Kind] = &[$(kind_of::<$params>()),*];
    };
}

registry![
    fixed::Fixed,
    recursive::Recursive,
    max_min::MaxMin,
    kamradt::Kamradt,
    ear::Ear,
    sentence_window::SentenceWindow,
    cluster_semantic::ClusterSemantic,
    markdown::Markdown,
    headers::Headers,
    late::Late,
    contextual::Contextual,
    llm_boundaries::LlmBoundaries,
    no_retrieval::NoRetrieval,
    oracle::Oracle,
    command::Command,
    python::Python,
    spans::Spans,
];

/// Default tokenizer for `unit: tokens` (the all-MiniLM-L6-v2 directory that
/// `chunkbench models fetch` unpacks).
pub const DEFAULT_TOKENIZER: &str = "models/all-MiniLM-L6-v2/tokenizer.json";

/// A strategy kind's entry type: what `strategies.NAME` holds besides `kind`.
///
/// Implementations derive `Serialize`/`Deserialize` with `deny_unknown_fields`, so unknown
/// keys are errors with a "did you mean" suggestion.
pub trait Params:
    Serialize + DeserializeOwned + Clone + PartialEq + Debug + Send + Sync + 'static
{
    /// The registry name (`kind: NAME` in YAML).
    const KIND: &'static str;
    /// One line for `chunkbench ls strategies` and README: what it does, its fields and their
    /// defaults.
    const SUMMARY: &'static str;
    /// True when chunking embeds text (the run's embedder is loaded and is part of the cell).
    fn needs_embedder(&self) -> bool {
        false
    }
    /// False for a kind whose questions read passages that are not retrieved (the closed-book
    /// and oracle baselines): there is nothing for an indexing wrapper to index. Default true.
    fn retrieves(&self) -> bool {
        true
    }
    /// True for a kind that sets what its chunks are indexed under (a wrapper such as
    /// `headers`, `late` or `contextual`); such kinds do not stack. Default false.
    fn indexes_other_text(&self) -> bool {
        false
    }
    /// The tokenizer file chunking reads (`unit: tokens`), hashed into the cell's inputs.
    fn tokenizer_file(&self) -> Option<PathBuf> {
        None
    }
    /// Other files chunking reads, as `(input name, path)`: their sha256 are cell inputs (an
    /// external chunker's script, a spans file).
    fn input_files(&self) -> Vec<(String, PathBuf)> {
        Vec::new()
    }
    /// Writes defaults that change what is computed into the entry, so equal computations get
    /// equal cell ids and `config.json` shows what ran.
    fn resolve_defaults(&mut self) {}
    /// Checks the entry without loading anything (default: nothing to check).
    ///
    /// # Errors
    /// The first problem, naming the field.
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// Builds the chunker (loading a tokenizer when the entry needs one).
    ///
    /// # Errors
    /// [`Params::check`] errors and files that cannot be loaded, naming the field and the fix.
    fn build(&self) -> Result<Box<dyn Chunker>>;
    /// What a model server the strategy asks (an LLM strategy's `llm:`) reports serving, for
    /// the cells' inputs: a reply from another model is another result. `None` for
    /// strategies without a server (default).
    ///
    /// # Errors
    /// The server cannot be reached or reports no model, naming the field.
    fn server_identity(&self) -> Result<Option<String>> {
        Ok(None)
    }
}

/// What a strategy's preflight may look at without computing anything ([`Chunker::preflight`]):
/// where the run's finished cells are, the ids of this strategy's cells, the code version a
/// reusable cell must carry, and the local embedder's position limit when it has one.
pub struct Preflight {
    /// The run's `cells/` directory (`OUTPUT/NAME/cells`).
    pub cells_dir: std::path::PathBuf,
    /// The ids of the cells of this strategy.
    pub cell_ids: Vec<String>,
    /// [`crate::version::code_version`]: a finished cell of another version is recomputed.
    pub code: String,
    /// The local BERT embedder's `max_position_embeddings`, read from its config.json (`None`
    /// for a server, or a model that does not say).
    pub embedder_positions: Option<usize>,
}

/// A built chunking strategy.
pub trait Chunker: Send + Sync {
    /// Problems the run would meet with this strategy that need no computation to find
    /// (`validate` and the run's preflight report them before any cell is computed): a Python
    /// object this process does not host and whose cells are not finished, a late-chunking
    /// window past the model's positions. Default none; wrappers add their inner strategy's.
    fn preflight(&self, _ctx: &Preflight) -> Vec<String> {
        Vec::new()
    }

    /// Chunks a corpus: exact byte spans of their documents, in document order. Strategies that
    /// embed receive the run's embedder and embed all units of the corpus in one call (so the
    /// embedder batches by length across documents).
    ///
    /// # Errors
    /// A missing embedder, embedding failures and chunker errors, naming the document.
    fn chunk_corpus(
        &self,
        docs: &[Document],
        embedder: Option<&dyn Embedder>,
    ) -> Result<(Vec<Chunk>, StrategyStats)>;

    /// The size no chunk may exceed, in the strategy's unit (for the logs and `over_size`);
    /// default none (strategies without a size: sentences, external chunks, baselines).
    fn size_limit(&self) -> Option<SizeLimit> {
        None
    }

    /// How the retriever's ranking of the indexed chunks becomes each question's passages.
    /// The default: each retrieved chunk is one passage.
    ///
    /// # Errors
    /// Building a query-time index (EAR's anchor index) failed, naming the field.
    fn passages<'a>(
        &self,
        _docs: &'a [Document],
        _index: &'a PassageIndex,
    ) -> Result<Box<dyn Passages + 'a>> {
        Ok(Box::new(ChunkPassages))
    }

    /// True when the passages a question reads are made at query time and differ from the
    /// indexed chunks (EAR windows, sentence windows, the oracle's evidence spans): the
    /// chunk-length plot then shows the retrieved passages' lengths. Default false.
    fn passages_at_query_time(&self) -> bool {
        false
    }

    /// The kind's own per-corpus counters ([`records::Counter`]), declared once here: the
    /// values go into [`StrategyStats::counters`] under these names, the runner refuses a
    /// name the kind did not declare and logs every count above 0 with its line, and
    /// `chunk_stats.csv` and summary.md show them without knowing the kind. Default none.
    fn counters(&self) -> &'static [records::Counter] {
        &[]
    }

    /// What the retrievers index for each chunk when it is not the chunk's own text
    /// (docs/reference.md §3d): a contextual header or an LLM-written context before the text,
    /// or late-chunked vectors. The chunks — the passages readers get and metrics score —
    /// are not changed. Default `None`: each chunk is indexed under its own text. Counters
    /// (model use, windows) go into `stats`.
    ///
    /// # Errors
    /// A model or embedder that fails, naming the document.
    fn indexed(
        &self,
        docs: &[Document],
        chunks: &[Chunk],
        embedder: Option<&dyn Embedder>,
        stats: &mut StrategyStats,
    ) -> Result<Option<retriever::IndexedForm>> {
        let _ = (docs, chunks, embedder, stats);
        Ok(None)
    }
}

/// One rank of a question's retrieval: the passages it contributes (one for chunk retrieval;
/// a window and its summary sentences for EAR with `expand: summary`), all byte spans of their
/// documents, and its score.
#[derive(Debug, Clone)]
pub struct Ranked {
    /// Passages of this rank, in reading order.
    pub chunks: Vec<Chunk>,
    /// Retriever score.
    pub score: f64,
}

/// The passages of one question, and what the query-time step recorded about them.
#[derive(Debug, Clone)]
pub struct Ranking {
    /// Ranked passages, best first, at most `kmax`.
    pub ranked: Vec<Ranked>,
    /// The strategy's own record of the question ([`QuestionRecord`]: EAR's anchors,
    /// matches, score parts), for its per-question columns and `explain/ID.jsonl`; `None` for
    /// strategies that record nothing.
    pub record: Option<Arc<dyn QuestionRecord>>,
}

/// What a strategy's query-time step recorded about one question, handed through the
/// pipeline without the pipeline knowing whose it is: its values of the strategy's record
/// fields ([`retriever::records`]), what failure attribution needs, and its explain line.
pub trait QuestionRecord: Send + Sync + std::fmt::Debug {
    /// The question's values of the strategy's record fields ([`RecordValues::of`]
    /// (retriever::records::RecordValues::of)).
    fn values(&self) -> retriever::records::RecordValues;
    /// For a strategy with a matching stage (EAR): (query terms found, forms matched in the
    /// corpus), which lets a wrong answer be attributed to `extraction` or `matching`.
    fn matching(&self) -> Option<(usize, usize)> {
        None
    }
    /// The question's line of `explain/CELL.jsonl` (read by `chunkbench explain` and the
    /// report's explorer), given its row and the cell's `k`; `None` when the strategy writes
    /// no explanations.
    ///
    /// # Errors
    /// Only serialisation errors.
    fn explain(
        &self,
        question: &datasets::Question,
        row: &records::QuestionRow,
        k: usize,
        docs: &[Document],
    ) -> Result<Option<serde_json::Value>> {
        let _ = (question, row, k, docs);
        Ok(None)
    }
}

/// The query-time step of a strategy: the retriever's top hits over the indexed chunks →
/// the question's ranked passages.
pub trait Passages: Send + Sync {
    /// A line for the run log, when building took work worth reporting.
    fn describe(&self) -> Option<String> {
        None
    }
    /// False when the passages do not depend on the retriever's hits (the closed-book and
    /// oracle baselines): the runner then does not retrieve and passes no hits.
    fn uses_hits(&self) -> bool {
        true
    }
    /// The passages for `question` (with its options and document scope), given `hits` (the
    /// retriever's top `kmax` over `index`, built from `docs`, best first).
    fn rank(
        &self,
        docs: &[Document],
        index: &PassageIndex,
        question: &datasets::Question,
        hits: &[Hit],
        kmax: usize,
    ) -> Ranking;
}

/// Each retrieved chunk is one passage.
pub struct ChunkPassages;

impl Passages for ChunkPassages {
    fn rank(
        &self,
        _: &[Document],
        index: &PassageIndex,
        _: &datasets::Question,
        hits: &[Hit],
        _: usize,
    ) -> Ranking {
        one_per_hit(hits, index.passages())
    }
}

/// One passage per hit: `passages[hit.passage]` with the hit's score, in hit order.
pub fn one_per_hit(hits: &[Hit], passages: &[Chunk]) -> Ranking {
    Ranking {
        ranked: hits
            .iter()
            .map(|h| Ranked {
                chunks: vec![passages[h.passage].clone()],
                score: h.score,
            })
            .collect(),
        record: None,
    }
}

pub use records::StrategyStats;

/// An embedder's input window: the longest text it reads without truncation, measured with
/// its own tokenizer.
pub struct EmbedderWindow {
    /// Tokens of the window left for text (`max_seq_length` minus the special tokens), with
    /// the embedder's tokenizer as the sizer.
    pub limit: SizeLimit,
    /// The window in tokens, special tokens included.
    pub max_tokens: usize,
}

impl EmbedderWindow {
    /// The window of `embedder`; `None` when it has no local tokenizer or window (HTTP).
    pub fn of(embedder: &dyn Embedder) -> Option<Self> {
        let max_tokens = embedder.max_input_tokens()?;
        let tok = embedder.tokenizer()?;
        let specials = tok.encode("", true).map(|e| e.len()).unwrap_or(2);
        let tok = HfTokenizer::from_tokenizer(tok, embedder.identity()).ok()?;
        let limit = SizeLimit::new(
            max_tokens.saturating_sub(specials).max(1),
            Sizer::Tokens(Arc::new(tok)),
        )
        .ok()?;
        Some(EmbedderWindow { limit, max_tokens })
    }

    /// True when `text` is longer than the window (the embedder would truncate it). A long
    /// text is first measured on a prefix cut after a whole word
    /// ([`embed::whitespace_run_at_or_after`]) at [`embed::HEAD_BYTES_PER_TOKEN`] bytes per
    /// window token, as the embedder cuts it: the prefix's
    /// tokens are a prefix of the text's, so a prefix over the window decides it without
    /// tokenizing the rest (2,000 near-whole-document passages of an 840 kB document took
    /// 290 s here before).
    pub fn exceeds(&self, text: &str) -> bool {
        let size = self.limit.size();
        let head = size.saturating_mul(embed::HEAD_BYTES_PER_TOKEN);
        if text.len() > head {
            if let Some(cut) = embed::whitespace_run_at_or_after(text, head) {
                if self.limit.measure(&text[..cut]) > size {
                    return true;
                }
            }
        }
        self.limit.measure(text) > size
    }
}

crate::registry::stage_entry! {
    /// One strategy entry (`strategies.NAME`): a registered kind and its typed params.
    ///
    /// YAML/JSON form: `{kind: NAME, ...fields}`. Parsing looks the kind up in [`KINDS`] (an
    /// unknown kind names the known ones and the closest) and deserialises the rest strictly as
    /// that kind's params.
    pub struct StrategyConfig: Params, "strategy";
    public {
        /// True when chunking embeds text ([`Params::needs_embedder`]).
        fn needs_embedder(&self) -> bool;
        /// False when the kind retrieves nothing ([`Params::retrieves`]).
        fn retrieves(&self) -> bool;
        /// True when the kind sets what chunks are indexed under ([`Params::indexes_other_text`]).
        fn indexes_other_text(&self) -> bool;
        /// The tokenizer file chunking reads ([`Params::tokenizer_file`]).
        fn tokenizer_file(&self) -> Option<PathBuf>;
        /// Other files chunking reads ([`Params::input_files`]).
        fn input_files(&self) -> Vec<(String, PathBuf)>;
        /// Checks the entry without loading anything ([`Params::check`]).
        ///
        /// # Errors
        /// The first problem, naming the field.
        fn check(&self) -> Result<()>;
        /// What the strategy's model server serves ([`Params::server_identity`]).
        ///
        /// # Errors
        /// As [`Params::server_identity`].
        fn server_identity(&self) -> Result<Option<String>>;
    }
    public_mut {
        /// Writes the kind's defaults into the entry ([`Params::resolve_defaults`]).
        fn resolve_defaults(&mut self);
    }
    private {
        fn build(&self) -> Result<Box<dyn Chunker>>;
    }
}

impl StrategyConfig {
    /// A fixed-size word entry (`kind: fixed, unit: words`).
    pub fn fixed_words(size: usize, overlap: usize) -> Self {
        Self::new(Fixed {
            unit: Some(Unit::Words),
            size,
            overlap: overlap as f64,
            tokenizer: None,
        })
    }

    /// Builds the chunker ([`Params::build`]).
    ///
    /// # Errors
    /// As [`Params::build`].
    pub fn build(&self) -> Result<Box<dyn Chunker>> {
        self.0.check()?;
        self.0.build()
    }
}

/// The sizer for `unit`, loading the tokenizer for `unit: tokens`.
///
/// # Errors
/// A tokenizer that cannot be loaded, naming the field and the fix.
pub fn sizer(unit: Unit, tokenizer: Option<Arc<HfTokenizer>>) -> Result<Sizer> {
    Sizer::for_unit(unit, tokenizer).context("field `tokenizer`: `unit: tokens` needs a tokenizer")
}

/// Rejects `tokenizer` without `unit: tokens`.
///
/// # Errors
/// When `tokenizer` is set and the unit is not tokens.
pub fn check_tokenizer_field(unit: Unit, tokenizer: &Option<PathBuf>) -> Result<()> {
    if tokenizer.is_some() && unit != Unit::Tokens {
        bail!("field `tokenizer` applies only with `unit: tokens`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(y: &str) -> Result<StrategyConfig, String> {
        StrategyConfig::from_yaml(serde_yaml::from_str(y).unwrap())
    }

    #[test]
    fn registry_names_are_unique_and_listed() {
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        let md = kinds_markdown();
        for k in KINDS {
            assert!(md.contains(&format!("| `{}` |", k.name)));
            assert!(!k.summary.contains('\n'), "{}", k.name);
        }
    }

    #[test]
    fn entries_round_trip_with_kind_first() {
        let c = parse("{kind: fixed, size: 100, unit: words}").unwrap();
        assert_eq!(c.kind(), "fixed");
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"fixed","unit":"words","size":100,"overlap":0.0}"#
        );
        let back: StrategyConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn unknown_kinds_and_fields_are_named() {
        let e = parse("{kind: fixd, size: 3}").unwrap_err();
        assert!(
            e.contains("unknown variant `fixd`") && e.contains("`fixed`"),
            "{e}"
        );
        let e = parse("{kind: fixed, sise: 3}").unwrap_err();
        assert!(e.contains("unknown field `sise`"), "{e}");
        let e = parse("{kind: fixed, size: many}").unwrap_err();
        assert!(e.contains("field `size`"), "{e}");
        let e = parse("{size: 3}").unwrap_err();
        assert!(e.contains("missing field `kind`"), "{e}");
    }

    #[test]
    fn builds_fixed_and_recursive() {
        let d = Document::new(
            "d",
            "Apples are red. Bananas are yellow. Cherries are dark.",
        );
        let docs = [d.clone()];
        let chunk = |s: &StrategyConfig| s.build().unwrap().chunk_corpus(&docs, None).unwrap().0;
        assert_eq!(chunk(&StrategyConfig::fixed_words(3, 0)).len(), 3);
        let r =
            parse("{kind: recursive, size: 20, separators: ['. '], keep_separator: end}").unwrap();
        let chunks = chunk(&r);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text(&d)).collect();
        assert_eq!(
            texts,
            [
                "Apples are red.",
                "Bananas are yellow.",
                "Cherries are dark."
            ]
        );
    }

    #[test]
    fn misplaced_fields_are_named() {
        let check = |y: &str| match parse(y) {
            Err(e) => e,
            Ok(c) => c.check().unwrap_err().to_string(),
        };
        assert!(check("{kind: fixed, size: 10, separators: []}").contains("`separators`"));
        assert!(check("{kind: fixed, size: 10, tokenizer: x}").contains("`tokenizer`"));
        assert!(check("{kind: max-min, c: 0.5, comparison: loose}").contains("`comparison`"));
        assert!(
            check("{kind: fixed, size: 10, fixed_threshold: 0.5}").contains("`fixed_threshold`")
        );
        assert!(check("{kind: recursive, size: 10, keep_separator: middle}")
            .contains("`keep_separator`"));
        assert!(check("{kind: fixed, size: 10, overlap: 10}").contains("`overlap`"));
        assert!(check("{kind: max-min, overlap: 5}").contains("no overlap"));
        assert!(check("{kind: ear, unit: chars}").contains("`unit`"));
        // Kinds without overlap keep `overlap: 0.0` in their identity (stored cell ids).
        let m = parse("{kind: max-min, size: 260, unit: words}").unwrap();
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"kind":"max-min","unit":"words","size":260,"overlap":0.0}"#
        );
    }

    #[test]
    fn missing_tokenizer_names_the_fix() {
        let c =
            parse("{kind: fixed, size: 10, unit: tokens, tokenizer: /nonexistent/tokenizer.json}")
                .unwrap();
        let e = format!("{:#}", c.build().err().unwrap());
        assert!(
            e.contains("`tokenizer`") && e.contains("models fetch"),
            "{e}"
        );
    }

    /// Every strategy record names a registered kind (its columns are empty on every other
    /// strategy's rows).
    #[test]
    fn every_strategy_record_belongs_to_a_registered_kind() {
        for r in retriever::records::RECORDS {
            assert!(KINDS.iter().any(|k| k.name == r.strategy), "{}", r.strategy);
        }
    }

    /// Capabilities are the kinds' own methods: a wrapper refuses a kind that retrieves
    /// nothing and another indexing wrapper, naming the field.
    #[test]
    fn wrappers_read_the_kinds_capabilities() {
        let check = |y: &str| parse(y).unwrap().check().unwrap_err().to_string();
        for base in ["oracle", "no-retrieval"] {
            let e = check(&format!("{{kind: headers, over: {{kind: {base}}}}}"));
            assert!(e.contains("retrieves nothing") && e.contains(base), "{e}");
        }
        let e = check("{kind: headers, over: {kind: late, over: {kind: fixed, size: 50}}}");
        assert!(
            e.contains("`late` also sets what chunks are indexed under"),
            "{e}"
        );
        let e = check("{kind: contextual, over: {kind: headers, over: {kind: fixed, size: 9}}, llm: {base_url: 'http://127.0.0.1:9', model: m}}");
        assert!(e.contains("do not stack"), "{e}");
        let ok = parse("{kind: headers, over: {kind: markdown, size: 50}}").unwrap();
        ok.check().unwrap();
        assert!(ok.indexes_other_text() && ok.retrieves());
    }

    #[test]
    fn ear_defaults_are_written_into_the_entry() {
        let mut e = parse("{kind: ear}").unwrap();
        e.resolve_defaults();
        let p = e.params::<Ear>().unwrap();
        assert_eq!((p.size, p.overlap), (Some(260), 60.0));
        assert!(p.ear.is_some());
    }

    /// README's kinds table is the registry's (`CHUNKBENCH_BLESS=1` rewrites it).
    #[test]
    fn readme_kinds_table_is_the_registry() {
        crate::registry::assert_readme_table("strategy kinds", &kinds_markdown());
    }
}
