//! `kind: none` — no reader: a retrieval-only cell. Its rows carry the retrieval scores
//! (recall@k, MRR, nDCG, span metrics, precision_Ω, answer recall) and no answer; its cell has
//! no accuracy. The only reader a retrieval-only question (one without options) accepts.

use super::Params;
use anyhow::{bail, Result};
use reader::Reader;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The no-reader entry (no fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoReader {}

impl Params for NoReader {
    const KIND: &'static str = "none";
    const SUMMARY: &'static str = "no reader: retrieval-only cells, scored by recall@k, MRR, nDCG, span metrics, precision_Ω and answer recall; no accuracy; the reader for questions without options; no fields";

    fn reads(&self) -> bool {
        false
    }

    fn build(&self, name: &str) -> Result<Arc<dyn Reader>> {
        bail!("reader `{name}`: `kind: none` reads nothing; the runner scores retrieval only")
    }
}
