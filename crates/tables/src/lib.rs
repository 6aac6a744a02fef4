//! chunkbench's door for users' own data: `chunkbench data import NAME` turns a folder of
//! documents or a table of them, and a table of questions, into a canonical dataset
//! (`documents.jsonl`, `questions.jsonl`, `manifest.json`; docs/reference.md §3 and §3a).
//!
//! - [`table`]: JSON lines, CSV and Parquet read with polars (the only crate that links it:
//!   it costs a clean build about 15 minutes, see BENCHMARKS.md) into rows of JSON values;
//! - [`html`]: HTML documents to clean text through a real HTML parser;
//! - [`import`]: the column mapping, evidence resolution (byte or character spans, excerpts
//!   located in the documents) and the all-or-nothing write.

#![warn(missing_docs)]

pub mod html;
pub mod import;
pub mod table;

pub use import::{
    base_name, import, read_folder, sources_sha256, write_into_store, FolderDocuments, FolderIds,
    ImportArgs, ImportLog,
};
