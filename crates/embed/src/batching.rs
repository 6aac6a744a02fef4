//! Token-budget batching with length bucketing (as text-embeddings-inference caps batches by
//! tokens, and sentence-transformers sorts inputs by length before batching).

use crate::EmbedError;

/// How inputs are grouped into forward passes.
///
/// Inputs are sorted by token count (longest first, ties in input order), then cut into
/// consecutive batches holding at most `max_batch_size` inputs and at most `max_batch_tokens`
/// word pieces in total (a single input longer than the budget gets a batch of its own).
/// Sorting puts inputs of similar length together, so the padded reference path wastes little
/// and the packed path balances its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchConfig {
    /// Maximum inputs per batch (sentence-transformers' `batch_size`; default 64).
    pub max_batch_size: usize,
    /// Maximum word pieces per batch, special tokens included (default 16384 = 64 x 256).
    pub max_batch_tokens: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        Self {
            max_batch_size: 64,
            max_batch_tokens: 16_384,
        }
    }
}

impl BatchConfig {
    /// Checks that both limits are positive.
    ///
    /// # Errors
    /// [`EmbedError::Config`] naming the zero field.
    pub fn validate(&self) -> Result<(), EmbedError> {
        if self.max_batch_size == 0 {
            return Err(EmbedError::Config(
                "batch.max_batch_size must be positive".into(),
            ));
        }
        if self.max_batch_tokens == 0 {
            return Err(EmbedError::Config(
                "batch.max_batch_tokens must be positive".into(),
            ));
        }
        Ok(())
    }
}

/// Plans batches for inputs of the given token counts.
///
/// Returns batches of indices into `lengths`; every index appears exactly once; within a batch,
/// indices are in non-increasing length order. Zero limits are treated as 1.
pub fn plan_batches(lengths: &[usize], config: BatchConfig) -> Vec<Vec<usize>> {
    let max_size = config.max_batch_size.max(1);
    let budget = config.max_batch_tokens.max(1);
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
    let mut batches = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut tokens = 0usize;
    for i in order {
        let len = lengths[i];
        if !cur.is_empty() && (cur.len() >= max_size || tokens + len > budget) {
            batches.push(std::mem::take(&mut cur));
            tokens = 0;
        }
        cur.push(i);
        tokens += len;
    }
    if !cur.is_empty() {
        batches.push(cur);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sorts_and_cuts() {
        let b = plan_batches(
            &[3, 10, 5, 10, 1],
            BatchConfig {
                max_batch_size: 2,
                max_batch_tokens: 100,
            },
        );
        assert_eq!(b, vec![vec![1, 3], vec![2, 0], vec![4]]);
        let b = plan_batches(
            &[3, 10, 5, 10, 1],
            BatchConfig {
                max_batch_size: 10,
                max_batch_tokens: 12,
            },
        );
        assert_eq!(b, vec![vec![1], vec![3], vec![2, 0, 4]]);
        assert!(plan_batches(&[], BatchConfig::default()).is_empty());
        assert!(BatchConfig {
            max_batch_size: 0,
            max_batch_tokens: 1
        }
        .validate()
        .is_err());
    }

    proptest! {
        #[test]
        fn every_input_once_and_limits_hold(lengths in proptest::collection::vec(1usize..300, 0..200),
                                            size in 1usize..70, budget in 1usize..5000) {
            let cfg = BatchConfig { max_batch_size: size, max_batch_tokens: budget };
            let batches = plan_batches(&lengths, cfg);
            let mut seen = vec![false; lengths.len()];
            for b in &batches {
                prop_assert!(!b.is_empty() && b.len() <= size);
                let tokens: usize = b.iter().map(|&i| lengths[i]).sum();
                prop_assert!(b.len() == 1 || tokens <= budget);
                for w in b.windows(2) { prop_assert!(lengths[w[0]] >= lengths[w[1]]); }
                for &i in b { prop_assert!(!seen[i]); seen[i] = true; }
            }
            prop_assert!(seen.iter().all(|s| *s));
        }
    }
}
