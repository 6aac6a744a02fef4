//! Retrieval to a budget (docs/reference.md §5 "Retrieval to a budget"): a question's ranked
//! passages are taken by rank until the budget is full; the passage that would overflow is cut
//! at the last unit boundary that fits (`fill: cut`, still an exact byte span of its document)
//! or left out (`fill: whole`), and retrieval stops there.
//!
//! Passages are counted with multiplicity, as `words`, `tokens` and `chars` retrieved are: two
//! overlapping passages (sentence windows, overlapping chunks) each spend their full length.

use super::*;
use records::{Budget, BudgetUnit, Fill};

/// The passages of one question under `budget`, from its ranking `ranked` (best first): every
/// rank's passages in order while they fit; then the overflowing passage cut or left out.
///
/// # Errors
/// A tokens budget when nothing counts tokens (no `cost_tokenizer` and a reader without a
/// tokenizer), naming the fix.
pub(super) fn fill_budget(
    ranked: &[Ranked],
    budget: &Budget,
    docs: &HashMap<&str, &chunker::Document>,
    tokens: &TokenCounter<'_>,
) -> Result<Vec<Ranked>> {
    let mut left = budget.size;
    let mut out = Vec::new();
    for r in ranked {
        let mut taken = Vec::new();
        let mut full = false;
        for c in &r.chunks {
            let Some(doc) = docs.get(c.doc_id.as_str()) else {
                continue;
            };
            let n = units(c, doc, budget.unit, tokens)?;
            if n <= left {
                left -= n;
                taken.push(c.clone());
                continue;
            }
            if budget.fill == Fill::Cut && left > 0 {
                if let Some(cut) = cut(c, doc, left, budget.unit, tokens)? {
                    taken.push(cut);
                }
            }
            full = true;
            break;
        }
        if !taken.is_empty() {
            out.push(Ranked {
                chunks: taken,
                score: r.score,
            });
        }
        if full || left == 0 {
            break;
        }
    }
    Ok(out)
}

/// The units of a passage.
fn units(
    c: &chunker::Chunk,
    doc: &chunker::Document,
    unit: BudgetUnit,
    tokens: &TokenCounter<'_>,
) -> Result<usize> {
    let text = &doc.text[c.span.start..c.span.end];
    Ok(match unit {
        BudgetUnit::Words => c.words,
        BudgetUnit::Chars => text.chars().count(),
        BudgetUnit::Tokens => count_tokens(&c.id(), text, tokens)?,
    })
}

fn count_tokens(id: &str, text: &str, tokens: &TokenCounter<'_>) -> Result<usize> {
    tokens.count(id, text).with_context(|| {
        "a tokens budget needs a token counter: set `cost_tokenizer` (or use a reader with a \
         tokenizer), or count the budget in words or chars"
            .to_string()
    })
}

/// The longest prefix of passage `c` holding at most `left` units, ending at a unit boundary
/// (a word's end for words and tokens, a character's end for chars); `None` when not even one
/// unit fits.
fn cut(
    c: &chunker::Chunk,
    doc: &chunker::Document,
    left: usize,
    unit: BudgetUnit,
    tokens: &TokenCounter<'_>,
) -> Result<Option<chunker::Chunk>> {
    let start = c.span.start;
    let text = &doc.text[start..c.span.end];
    let end = match unit {
        BudgetUnit::Chars => text.char_indices().nth(left).map_or(text.len(), |(i, _)| i),
        BudgetUnit::Words => {
            let words = chunker::word_spans(text);
            words.get(left.wrapping_sub(1)).map_or(0, |w| w.end)
        }
        BudgetUnit::Tokens => {
            // The most whole words whose prefix fits: tokens of a prefix grow with it, so
            // bisect on the number of words.
            let words = chunker::word_spans(text);
            let (mut lo, mut hi) = (0usize, words.len());
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                let end = words[mid - 1].end;
                let id = format!("{}:{}-{}", c.doc_id, start, start + end);
                if count_tokens(&id, &text[..end], tokens)? <= left {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            if lo == 0 {
                0
            } else {
                words[lo - 1].end
            }
        }
    };
    Ok((end > 0).then(|| chunker::Chunk::new(doc, start, start + end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> chunker::Document {
        chunker::Document::new(
            "d",
            "Ünïcode words here. Then more words follow — and more.",
        )
    }

    fn ranked(doc: &chunker::Document, spans: &[(usize, usize)]) -> Vec<Ranked> {
        spans
            .iter()
            .enumerate()
            .map(|(i, &(s, e))| Ranked {
                chunks: vec![chunker::Chunk::new(doc, s, e)],
                score: 10.0 - i as f64,
            })
            .collect()
    }

    fn run(budget: Budget, spans: &[(usize, usize)]) -> Vec<chunker::Chunk> {
        let d = doc();
        let docs: HashMap<&str, &chunker::Document> = [("d", &d)].into_iter().collect();
        let memo = std::sync::Mutex::new(HashMap::new());
        let counter = TokenCounter {
            by: TokensBy::None,
            memo: &memo,
        };
        fill_budget(&ranked(&d, spans), &budget, &docs, &counter)
            .unwrap()
            .into_iter()
            .flat_map(|r| r.chunks)
            .collect()
    }

    #[test]
    fn words_are_taken_by_rank_and_the_last_passage_is_cut_at_a_word_end() {
        let d = doc();
        let first = (0, d.text.find(" Then").unwrap()); // 3 words
        let second = (first.1 + 1, d.text.len()); // 6 words
        let b = Budget {
            unit: BudgetUnit::Words,
            size: 5,
            fill: Fill::Cut,
        };
        let got = run(b, &[first, second]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].span.end, first.1);
        assert_eq!(got[1].words, 2);
        assert_eq!(&d.text[got[1].span.start..got[1].span.end], "Then more");
        assert_eq!(got.iter().map(|c| c.words).sum::<usize>(), 5);
        // Whole passages: the second does not fit and is left out.
        let whole = run(
            Budget {
                fill: Fill::Whole,
                ..b
            },
            &[first, second],
        );
        assert_eq!(whole.len(), 1);
        // A budget smaller than the first passage cuts it.
        let one = run(Budget { size: 1, ..b }, &[first, second]);
        assert_eq!(&d.text[one[0].span.start..one[0].span.end], "Ünïcode");
    }

    #[test]
    fn chars_are_cut_at_a_character_boundary_of_multibyte_text() {
        let d = doc();
        let b = Budget {
            unit: BudgetUnit::Chars,
            size: 3,
            fill: Fill::Cut,
        };
        let got = run(b, &[(0, d.text.len())]);
        assert_eq!(&d.text[got[0].span.start..got[0].span.end], "Ünï");
        // Overlapping passages count with multiplicity.
        let b = Budget { size: 10, ..b };
        let word = d.text.find(' ').unwrap();
        let got = run(b, &[(0, word), (0, word)]);
        let texts: Vec<&str> = got
            .iter()
            .map(|c| &d.text[c.span.start..c.span.end])
            .collect();
        assert_eq!(texts, ["Ünïcode", "Ünï"]);
    }

    #[test]
    fn a_tokens_budget_without_a_counter_is_an_error_naming_the_fix() {
        let d = doc();
        let docs: HashMap<&str, &chunker::Document> = [("d", &d)].into_iter().collect();
        let memo = std::sync::Mutex::new(HashMap::new());
        let counter = TokenCounter {
            by: TokensBy::None,
            memo: &memo,
        };
        let b = Budget {
            unit: BudgetUnit::Tokens,
            size: 5,
            fill: Fill::Cut,
        };
        let e = fill_budget(&ranked(&d, &[(0, 7)]), &b, &docs, &counter).unwrap_err();
        assert!(format!("{e:#}").contains("cost_tokenizer"), "{e:#}");
    }
}
