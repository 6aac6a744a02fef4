//! Counting the tokens of retrieved passages: with the reader's own tokenizer when it has
//! one, else the run's `cost_tokenizer`, memoised per passage.

use super::*;

/// What counts the `tokens` column of a cell, with a memo per passage span.
pub(super) struct TokenCounter<'a> {
    pub(super) by: TokensBy<'a>,
    pub(super) memo: &'a std::sync::Mutex<HashMap<(String, String), usize>>,
}

pub(super) enum TokensBy<'a> {
    Reader(&'a dyn Reader, String),
    Tokenizer(std::sync::Arc<chunker::HfTokenizer>, String),
    None,
}

impl TokenCounter<'_> {
    /// `reader:NAME`, `tokenizer.json:PATH` or `none`.
    pub(super) fn name(&self) -> String {
        match &self.by {
            TokensBy::Reader(_, n) => format!("reader:{n}"),
            TokensBy::Tokenizer(t, p) if t.is_named() => format!("bpe:{p}"),
            TokensBy::Tokenizer(_, p) => format!("tokenizer.json:{p}"),
            TokensBy::None => "none".into(),
        }
    }

    /// Tokens of `text` (the passage `id`), or `None` when nothing counts tokens.
    pub(super) fn count(&self, id: &str, text: &str) -> Option<usize> {
        let (who, f): (&str, Box<dyn Fn() -> Option<usize> + '_>) = match &self.by {
            TokensBy::Reader(r, n) => (n, Box::new(|| r.count_tokens(text))),
            TokensBy::Tokenizer(t, p) => (p, Box::new(|| Some(t.count(text)))),
            TokensBy::None => return None,
        };
        let key = (who.to_string(), id.to_string());
        if let Some(&n) = self.memo.lock().expect("token memo").get(&key) {
            return Some(n);
        }
        let n = f()?;
        self.memo.lock().expect("token memo").insert(key, n);
        Some(n)
    }
}

/// The run's token counters: the cost tokenizer (loaded once) and the shared memo.
#[derive(Default)]
pub(super) struct TokenCounters {
    pub(super) cost: std::sync::OnceLock<std::sync::Arc<chunker::HfTokenizer>>,
    pub(super) memo: std::sync::Mutex<HashMap<(String, String), usize>>,
}

impl TokenCounters {
    /// The counter for a cell read by `reader`: the reader's own tokenizer, else the run's
    /// `cost_tokenizer`, else none.
    pub(super) fn counter<'a>(
        &'a self,
        cfg: &RunConfig,
        reader: Option<&'a dyn Reader>,
    ) -> Result<TokenCounter<'a>> {
        let by = if let Some((reader, name)) =
            reader.and_then(|r| r.tokenizer_name().map(|n| (r, n)))
        {
            TokensBy::Reader(reader, name)
        } else if let Some(path) = &cfg.cost_tokenizer {
            let t = match self.cost.get() {
                Some(t) => t.clone(),
                None => {
                    let file = crate::models::resolve(path);
                    let t = chunker::HfTokenizer::from_file(&file)
                        .with_context(|| format!("field `cost_tokenizer`: {}", file.display()))?;
                    self.cost.get_or_init(|| std::sync::Arc::new(t)).clone()
                }
            };
            TokensBy::Tokenizer(t, path.display().to_string())
        } else {
            TokensBy::None
        };
        Ok(TokenCounter {
            by,
            memo: &self.memo,
        })
    }
}
