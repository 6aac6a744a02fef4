//! Okapi BM25 over a [`PassageIndex`].
//!
//! Score of passage `p` for query terms `q_1..q_n` (duplicates kept, as rank_bm25's
//! `BM25Okapi.get_scores` sums over the query list):
//! `Σ_i idf(q_i) · tf(q_i,p)·(k1+1) / (tf(q_i,p) + k1·(1 − b + b·|p|/avgdl))` with the
//! Lucene idf `ln(1 + (N − df + 0.5)/(df + 0.5))` (never negative). `|p|` and `avgdl` are in
//! analyser terms ([`TextAnalyzer`]; the base [`Analyzer`](crate::Analyzer) unless
//! [`Bm25::with_analyzer`] says otherwise). Defaults k1 = 1.2, b = 0.75 (Robertson & Zaragoza 2009;
//! Lucene's `BM25Similarity`). Passages sharing no term with the query are not returned.
//!
//! Lucene 8+ and bm25s (`method="lucene"`) drop the constant factor `(k1 + 1)`; scores here
//! are theirs times `k1 + 1` (2.2 by default) and rank identically. The golden test
//! (`tests/bm25_golden.rs`, `scripts/bm25_goldens.sh`) checks every score against bm25s
//! 0.3.16 times `(k1 + 1)` within 1e-6. rank_bm25's `BM25Okapi` differs in its idf
//! (`ln((N − df + 0.5)/(df + 0.5))`, negative values floored to `ε · mean idf`).

use crate::{in_scope, BestHits, Hit, PassageIndex, TextAnalyzer};
use std::collections::HashMap;
use std::ops::Range;

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation (default 1.2).
    pub k1: f64,
    /// Length normalisation in [0, 1] (default 0.75).
    pub b: f64,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75 }
    }
}

/// A query goes dense — accumulates into every passage's slot without tracking which it
/// touched, then scans all slots — when its terms' postings number at least
/// `passages / DENSE_SHARE`; below that it tracks the touched passages and visits only them.
/// Both give bit-identical scores (each passage's sum runs in query-term order either way);
/// only the cost differs (measured: `scripts/bench_bm25_peers.sh`).
const DENSE_SHARE: usize = 8;

/// An inverted BM25 index over a list of passages (usually the passages of one
/// [`PassageIndex`]; passage `i` here is passage `i` there).
///
/// Impact-scored: every posting stores its term's whole contribution to its passage's score,
/// `idf · tf·(k1+1) / (tf + k1·(1 − b + b·|p|/avgdl))` in f64, computed once at build time (as
/// bm25s's eager sparse matrix does, but in f64), so a query only adds stored numbers. Memory:
/// 12 bytes per posting (passage u32 + impact f64) plus the term table.
#[derive(Debug, Clone)]
pub struct Bm25 {
    params: Bm25Params,
    analyzer: TextAnalyzer,
    /// term -> its postings: a range of `passages`/`impacts` (passages ascending).
    terms: HashMap<String, Range<usize>>,
    /// Posting passages, term after term.
    passages: Vec<u32>,
    /// Posting impacts (BM25 points), aligned with `passages`.
    impacts: Vec<f64>,
    /// Number of indexed passages.
    len: usize,
    avgdl: f64,
}

impl Bm25 {
    /// Indexes every passage of `index` with the base [`Analyzer`](crate::Analyzer). Cost: one
    /// pass over the passage texts.
    pub fn new(index: &PassageIndex, params: Bm25Params) -> Self {
        Self::with_analyzer(index, params, TextAnalyzer::default())
    }

    /// Indexes every passage of `index` with `analyzer` (stop words and stemming optional);
    /// queries are analysed the same way. A passage is indexed under
    /// [`PassageIndex::index_text`]: its own text, or the text its strategy indexes it under
    /// (a contextual header before it).
    pub fn with_analyzer(index: &PassageIndex, params: Bm25Params, analyzer: TextAnalyzer) -> Self {
        Self::from_texts(
            (0..index.len()).map(|i| index.index_text(i)),
            params,
            analyzer,
        )
    }

    /// Indexes arbitrary texts (passage `i` = the `i`-th text), e.g. a test corpus.
    pub fn from_texts<'a>(
        texts: impl IntoIterator<Item = &'a str>,
        params: Bm25Params,
        analyzer: TextAnalyzer,
    ) -> Self {
        Self::from_terms(
            texts.into_iter().map(|t| analyzer.terms(t)),
            params,
            analyzer,
        )
    }

    /// Indexes pre-analysed passages (one term list per passage). `analyzer` is only used
    /// later, for queries given as text.
    pub fn from_terms(
        passages: impl IntoIterator<Item = Vec<String>>,
        params: Bm25Params,
        analyzer: TextAnalyzer,
    ) -> Self {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        let mut tf: HashMap<String, u32> = HashMap::new();
        for (i, terms) in passages.into_iter().enumerate() {
            lengths.push(terms.len() as f64);
            for t in terms {
                *tf.entry(t).or_default() += 1;
            }
            for (t, f) in tf.drain() {
                postings.entry(t).or_default().push((i as u32, f));
            }
        }
        let avgdl = if lengths.is_empty() {
            0.0
        } else {
            lengths.iter().sum::<f64>() / lengths.len() as f64
        };
        let n = lengths.len();
        let total = postings.values().map(Vec::len).sum();
        let mut index = Bm25 {
            params,
            analyzer,
            terms: HashMap::with_capacity(postings.len()),
            passages: Vec::with_capacity(total),
            impacts: Vec::with_capacity(total),
            len: n,
            avgdl,
        };
        let Bm25Params { k1, b } = params;
        for (term, list) in postings {
            let idf = idf(n, list.len());
            let start = index.passages.len();
            for (p, tf) in list {
                let tf = tf as f64;
                let norm = k1 * (1.0 - b + b * lengths[p as usize] / avgdl);
                index.passages.push(p);
                index.impacts.push(idf * tf * (k1 + 1.0) / (tf + norm));
            }
            index.terms.insert(term, start..index.passages.len());
        }
        index
    }

    /// The analyser applied to passages and queries.
    pub fn analyzer(&self) -> &TextAnalyzer {
        &self.analyzer
    }

    /// The parameters.
    pub fn params(&self) -> Bm25Params {
        self.params
    }

    /// Number of indexed passages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no passage is indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Average passage length in analyser terms (0 for an empty index).
    pub fn avgdl(&self) -> f64 {
        self.avgdl
    }

    /// The posting ranges of the query terms found in the index, in query-term order
    /// (duplicates kept), and their total number of postings.
    fn lists(&self, terms: &[String]) -> (Vec<Range<usize>>, usize) {
        let lists: Vec<Range<usize>> = terms
            .iter()
            .filter_map(|t| self.terms.get(t).cloned())
            .collect();
        let total = lists.iter().map(ExactSizeIterator::len).sum();
        (lists, total)
    }

    /// The postings of one term's range: (passage, impact) pairs, passages ascending.
    fn postings(&self, r: Range<usize>) -> impl Iterator<Item = (u32, f64)> + '_ {
        self.passages[r.clone()]
            .iter()
            .copied()
            .zip(self.impacts[r].iter().copied())
    }

    /// Adds every posting of `lists` into `acc` (length [`Bm25::len`]), in list order.
    fn add_all(&self, lists: Vec<Range<usize>>, acc: &mut [f64]) {
        for r in lists {
            for (p, impact) in self.postings(r) {
                acc[p as usize] += impact;
            }
        }
    }

    /// Adds the query's impacts into `acc` (length [`Bm25::len`], all 0.0 on entry) and
    /// returns how to find the scored passages. Dense (many postings, see [`DENSE_SHARE`]):
    /// every posting added, scope not checked (the scan applies it). Sparse: postings outside
    /// `scope` skipped, each scored passage listed once in `touched`. Each passage's sum runs
    /// in query-term order, so scores are bit-identical across runs and modes; every scored
    /// passage scores > 0 (the idf is positive), so 0.0 marks an unscored one.
    fn accumulate(
        &self,
        terms: &[String],
        scope: Option<&[bool]>,
        acc: &mut [f64],
        touched: &mut Vec<u32>,
    ) -> Mode {
        let (lists, total) = self.lists(terms);
        if total >= self.len / DENSE_SHARE {
            self.add_all(lists, acc);
            return Mode::Dense;
        }
        for r in lists {
            for (p, impact) in self.postings(r) {
                if !in_scope(scope, p as usize) {
                    continue;
                }
                let slot = &mut acc[p as usize];
                if *slot == 0.0 {
                    touched.push(p);
                }
                *slot += impact;
            }
        }
        Mode::Sparse
    }

    /// Hands every passage scored by the last [`Bm25::accumulate`] (inside `scope`) to `f`
    /// with its score, and returns its slot in `acc` to 0.0.
    fn drain(
        &self,
        mode: Mode,
        scope: Option<&[bool]>,
        acc: &mut [f64],
        touched: &[u32],
        mut f: impl FnMut(u32, f64),
    ) {
        match mode {
            Mode::Dense => {
                for (p, slot) in acc.iter_mut().enumerate() {
                    if *slot != 0.0 {
                        let s = std::mem::take(slot);
                        if in_scope(scope, p) {
                            f(p as u32, s);
                        }
                    }
                }
            }
            Mode::Sparse => {
                for &p in touched {
                    f(p, std::mem::take(&mut acc[p as usize]));
                }
            }
        }
    }

    /// BM25 score of every passage for the pre-analysed query `terms` (length [`Bm25::len`];
    /// 0.0 for passages sharing no term). Used by the golden test.
    pub fn scores_for_terms(&self, terms: &[String]) -> Vec<f64> {
        let mut out = vec![0.0; self.len];
        self.add_all(self.lists(terms).0, &mut out);
        out
    }

    /// BM25 score of every passage for `query` (analysed with [`Bm25::analyzer`]).
    pub fn scores(&self, query: &str) -> Vec<f64> {
        self.scores_for_terms(&self.analyzer.terms(query))
    }

    /// The `k` best passages for `query`, restricted to `scope` (a mask from
    /// [`PassageIndex::scope_mask`]; `None` = all passages; positions past the mask's end are
    /// out of scope). Ties are broken by passage order. Passages sharing no term with the
    /// query are not returned, so an empty corpus or a query without terms gives an empty list.
    pub fn search(&self, query: &str, k: usize, scope: Option<&[bool]>) -> Vec<Hit> {
        self.search_pooled(&[query], k, scope)
    }

    /// Max-pooled search for one question asked as several queries (e.g. one per option,
    /// [`crate::QueryForm::PerOption`]): a passage's score is the maximum of its BM25 scores
    /// over the queries that share a term with it; then as [`Bm25::search`].
    pub fn search_pooled<S: AsRef<str>>(
        &self,
        queries: &[S],
        k: usize,
        scope: Option<&[bool]>,
    ) -> Vec<Hit> {
        self.search_pooled_with(&mut Bm25Scratch::default(), queries, k, scope)
    }

    /// [`Bm25::search_pooled`] with the per-query buffers in `scratch`, reused across calls
    /// (one scratch per thread: a question then costs the postings it reads plus its matches,
    /// or one scan of [`Bm25::len`] slots when its postings are many, not a fresh buffer).
    /// Results are identical to [`Bm25::search_pooled`]'s.
    pub fn search_pooled_with<S: AsRef<str>>(
        &self,
        scratch: &mut Bm25Scratch,
        queries: &[S],
        k: usize,
        scope: Option<&[bool]>,
    ) -> Vec<Hit> {
        let n = self.len;
        let Bm25Scratch {
            acc,
            pooled,
            touched,
            matched,
        } = scratch;
        // Between calls every slot is at rest (acc 0, pooled -inf): a query takes back the
        // slots it scored and the pooled slots are reset below, so a call costs the postings
        // it reads, not a refill (only a new size refills the buffers).
        if acc.len() != n || pooled.len() != n {
            acc.clear();
            acc.resize(n, 0.0);
            pooled.clear();
            pooled.resize(n, f64::NEG_INFINITY);
        }
        let mut best = BestHits::new(k);
        if let [query] = queries {
            // One query: its scores go straight to the top-k, no pooling pass.
            touched.clear();
            let terms = self.analyzer.terms(query.as_ref());
            let mode = self.accumulate(&terms, scope, acc, touched);
            self.drain(mode, scope, acc, touched, |p, score| {
                best.offer(Hit {
                    passage: p as usize,
                    score,
                })
            });
            return best.into_sorted();
        }
        matched.clear();
        for q in queries {
            let terms = self.analyzer.terms(q.as_ref());
            touched.clear();
            let mode = self.accumulate(&terms, scope, acc, touched);
            self.drain(mode, scope, acc, touched, |p, s| {
                let e = &mut pooled[p as usize];
                if *e == f64::NEG_INFINITY {
                    matched.push(p);
                    *e = s;
                } else if s > *e {
                    *e = s;
                }
            });
        }
        for &p in matched.iter() {
            best.offer(Hit {
                passage: p as usize,
                score: std::mem::replace(&mut pooled[p as usize], f64::NEG_INFINITY),
            });
        }
        best.into_sorted()
    }
}

/// Lucene idf of a term with document frequency `df` among `n` passages.
fn idf(n: usize, df: usize) -> f64 {
    let n = n as f64;
    let df = df as f64;
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// How [`Bm25::accumulate`] scored a query: into every slot, or into the listed ones.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Dense,
    Sparse,
}

/// Reusable buffers of [`Bm25::search_pooled_with`]: one score slot per passage for the
/// current query and for the pooled maximum, and the passages each has touched.
#[derive(Debug, Default)]
pub struct Bm25Scratch {
    acc: Vec<f64>,
    pooled: Vec<f64>,
    touched: Vec<u32>,
    matched: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top_k;
    use chunker::{Document, FixedConfig};

    fn corpus(texts: &[&str]) -> PassageIndex {
        let docs: Vec<Document> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Document {
                id: format!("d{i}"),
                title: String::new(),
                text: t.to_string(),
                source: String::new(),
                license: String::new(),
            })
            .collect();
        let cfg = FixedConfig::new(1000, 0).unwrap();
        let chunks = docs.iter().flat_map(|d| cfg.chunk(d)).collect();
        PassageIndex::new(&docs, chunks).unwrap()
    }

    #[test]
    fn hand_computed_score() {
        let idx = corpus(&["cat sat", "dog dog barked loudly", "bird"]);
        let bm = Bm25::new(&idx, Bm25Params::default());
        let hits = bm.search("dog", 3, None);
        assert_eq!(hits.len(), 1);
        // N=3, df=1: idf = ln(1 + 2.5/1.5); avgdl = 7/3; |p| = 4, tf = 2.
        let idf = (1.0f64 + 2.5 / 1.5).ln();
        let norm = 1.2 * (1.0 - 0.75 + 0.75 * 4.0 / (7.0 / 3.0));
        let expect = idf * 2.0 * 2.2 / (2.0 + norm);
        assert!((hits[0].score - expect).abs() < 1e-12);
    }

    #[test]
    fn empty_corpus_and_empty_query() {
        let idx = corpus(&["", "  "]);
        let bm = Bm25::new(&idx, Bm25Params::default());
        assert!(bm.search("anything", 3, None).is_empty());
        let idx = corpus(&["some text"]);
        let bm = Bm25::new(&idx, Bm25Params::default());
        assert!(bm.search("?!", 3, None).is_empty());
    }

    #[test]
    fn scope_is_respected() {
        let idx = corpus(&["valve one", "valve two"]);
        let bm = Bm25::new(&idx, Bm25Params::default());
        let mask = idx.scope_mask(Some(&["d1".to_string()])).unwrap();
        let hits = bm.search("valve", 5, Some(&mask));
        assert_eq!(hits.len(), 1);
        assert_eq!(idx.passages()[hits[0].passage].doc_id, "d1");
    }

    /// One scratch reused across questions (as each rayon thread does) gives exactly the
    /// results of fresh buffers, and equals a brute-force max over every passage's score,
    /// on the sparse path and the dense scan, with and without a scope.
    #[test]
    fn reused_scratch_equals_fresh_buffers_and_brute_force() {
        let texts: Vec<String> = (0..60)
            .map(|i| {
                format!(
                    "valve {} pump {} seal {}{}",
                    i % 7,
                    i % 3,
                    "flow ".repeat(i % 5),
                    if i % 25 == 0 { " rare" } else { "" }
                )
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let idx = corpus(&refs);
        let bm = Bm25::new(&idx, Bm25Params::default());
        let mask = idx
            .scope_mask(Some(&[
                "d3".to_string(),
                "d10".to_string(),
                "d11".to_string(),
                "d25".to_string(),
            ]))
            .unwrap();
        let questions: Vec<(Vec<&str>, Option<&[bool]>)> = vec![
            (vec!["valve 3 flow", "pump 1"], None),
            (vec!["seal"], Some(&mask)),
            (vec!["nothing matches"], None),
            (vec!["flow flow 2", "valve 6", "pump"], None),
            (vec!["pump 0", "seal flow"], Some(&mask)),
            // "rare" is in 3 of the 60 passages (under 60 / DENSE_SHARE postings: the sparse
            // path); the other terms are in 8 or more (the dense scan).
            (vec!["rare"], None),
            (vec!["rare"], Some(&mask)),
            (vec!["rare rare", "pump 2"], Some(&mask)),
            (vec!["rare", "valve 4"], None),
        ];
        let mut scratch = Bm25Scratch::default();
        for (qs, scope) in &questions {
            let reused = bm.search_pooled_with(&mut scratch, qs, 7, *scope);
            assert_eq!(reused, bm.search_pooled(qs, 7, *scope));
            let brute: Vec<Hit> = (0..idx.len())
                .filter(|&p| scope.is_none_or(|m| m[p]))
                .filter_map(|p| {
                    qs.iter()
                        .map(|q| bm.scores(q)[p])
                        .filter(|&s| s > 0.0)
                        .reduce(f64::max)
                        .map(|score| Hit { passage: p, score })
                })
                .collect();
            assert_eq!(reused, top_k(brute, 7), "{qs:?}");
        }
    }
}
