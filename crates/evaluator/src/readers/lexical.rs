//! `kind: lexical` — the lexical evidence reader ([`reader::LexicalReader`]), built per
//! dataset.

use super::Params;
use anyhow::{bail, Result};
use reader::Reader;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The lexical reader's entry (no fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lexical {}

impl Params for Lexical {
    const KIND: &'static str = "lexical";
    const SUMMARY: &'static str = "lexical evidence reader (Clark et al. 2016 IR solver): an option scores by the idf-weighted coverage of its words and the question's in its best passage; ties count as wrong; no fields";

    fn per_dataset(&self) -> bool {
        true
    }

    fn build(&self, name: &str) -> Result<Arc<dyn Reader>> {
        bail!("reader `{name}`: the lexical reader is built per dataset by the runner")
    }
}
