//! Exact dense (cosine) top-k over L2-normalised `f32` vectors.
//!
//! Scores are cosine similarities in [-1, 1]: passage vectors are L2-normalised when the index
//! is built and query vectors when they are searched (unit vectors from the embedder change by
//! at most an ulp). Search computes `Q · Pᵀ` for blocks of queries (default 1,024 rows) with
//! candle's CPU matmul, which runs the `gemm` crate's kernels (AVX-512 with the workspace's
//! `x86-v4` feature, runtime-dispatched; docs/reference.md §4b), one tile of [`PASSAGE_TILE`] passages
//! at a time, and keeps the `k` best passages of each row in parallel (rayon). A query whose scope selects fewer than 1/8 of the passages is
//! scored by direct dot products over its scope instead (the matmul would be mostly wasted).
//!
//! Ranking: descending score, ties broken by ascending passage index (the same rule as
//! [`crate::top_k`]); identical for any thread count because each score is one dot product
//! computed in a fixed order.
//!
//! Degenerate vectors (docs/reference.md case 7): a vector with a non-finite component or a zero norm
//! is *degenerate*. Degenerate passages are stored as zero rows, never returned, and listed by
//! [`DenseIndex::degenerate_passages`]; a degenerate query returns no hits ([`is_degenerate`]
//! lets the caller count them). No NaN ever reaches a ranking.

use crate::Hit;
use candle_core::{Device, Storage, Tensor};
use rayon::prelude::*;
use std::ops::Range;

/// Errors of [`DenseIndex`] construction and search.
#[derive(Debug, thiserror::Error)]
pub enum DenseError {
    /// The vector dimension is 0.
    #[error("vector dimension must be at least 1")]
    ZeroDimension,
    /// A flat passage matrix's length is not a multiple of the dimension.
    #[error("flat matrix of {len} floats is not a whole number of {dim}-d rows")]
    RaggedMatrix {
        /// Number of floats given.
        len: usize,
        /// Declared dimension.
        dim: usize,
    },
    /// A passage or query vector has the wrong length.
    #[error("{what} {index} has {got} components, expected {dim}")]
    DimensionMismatch {
        /// "passage" or "query".
        what: &'static str,
        /// Position of the vector.
        index: usize,
        /// Its length.
        got: usize,
        /// The index dimension.
        dim: usize,
    },
    /// A query group refers to query rows that do not exist.
    #[error("query group {group} covers rows {start}..{end} but only {rows} queries were given")]
    GroupOutOfRange {
        /// Position of the group.
        group: usize,
        /// First row of the group.
        start: usize,
        /// One past its last row.
        end: usize,
        /// Number of query rows given.
        rows: usize,
    },
    /// `scopes` is neither empty nor one entry per query (group).
    #[error("{scopes} scopes given for {queries} queries (give none or one per query)")]
    ScopeCount {
        /// Number of scopes given.
        scopes: usize,
        /// Number of queries (groups).
        queries: usize,
    },
    /// The matrix product failed inside candle.
    #[error("dense matmul failed: {0}")]
    Candle(#[from] candle_core::Error),
}

/// True when `v` cannot be L2-normalised: a non-finite component or a zero norm.
pub fn is_degenerate(v: &[f32]) -> bool {
    norm(v).is_none()
}

/// Euclidean norm in f64, `None` for degenerate vectors.
fn norm(v: &[f32]) -> Option<f64> {
    let mut ss = 0.0f64;
    for &x in v {
        if !x.is_finite() {
            return None;
        }
        ss += f64::from(x) * f64::from(x);
    }
    let n = ss.sqrt();
    (n > 0.0 && n.is_finite()).then_some(n)
}

/// Writes `v / |v|` into `out`; returns false (and writes zeros) for degenerate vectors.
fn normalise_into(v: &[f32], out: &mut [f32]) -> bool {
    match norm(v) {
        Some(n) => {
            for (o, &x) in out.iter_mut().zip(v) {
                *o = (f64::from(x) / n) as f32;
            }
            true
        }
        None => {
            out.iter_mut().for_each(|o| *o = 0.0);
            false
        }
    }
}

/// Dot product with eight independent accumulators (vectorises; fixed summation order).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for ((a, xv), yv) in acc.iter_mut().zip(x).zip(y) {
            *a += xv * yv;
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// Keeps the `k` best `(passage, score)` candidates offered in ascending passage order:
/// descending score, ties by ascending passage (a later equal score never displaces).
struct TopK {
    k: usize,
    best: Vec<(f32, usize)>,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK {
            k,
            best: Vec::with_capacity(k.min(1024) + 1),
        }
    }

    #[inline]
    fn offer(&mut self, passage: usize, score: f32) {
        if self.k == 0 || !score.is_finite() {
            return;
        }
        if self.best.len() == self.k && score <= self.best[self.k - 1].0 {
            return;
        }
        // Candidates arrive in ascending passage order, so the new one goes after every
        // kept candidate with a score >= its own.
        let pos = self.best.partition_point(|&(s, _)| s >= score);
        self.best.insert(pos, (score, passage));
        self.best.truncate(self.k);
    }

    fn into_hits(self) -> Vec<Hit> {
        self.best
            .into_iter()
            .map(|(s, p)| Hit {
                passage: p,
                score: f64::from(s),
            })
            .collect()
    }
}

/// Collects one query's best passages over successive tiles of scores (ascending passage
/// order): an insertion buffer for small `k`, every finite candidate for large `k`.
enum Collector {
    Small(TopK),
    Large(Vec<Hit>),
}

impl Collector {
    fn new(k: usize) -> Self {
        if k > 64 {
            Collector::Large(Vec::new())
        } else {
            Collector::Small(TopK::new(k))
        }
    }

    /// Offers `row[j]` as passage `start + j`, for passages valid and inside `scope`.
    fn offer_row(&mut self, row: &[f32], start: usize, valid: &[bool], scope: Option<&[bool]>) {
        let keep = |j: usize| valid[j] && crate::in_scope(scope, start + j);
        match self {
            Collector::Small(t) => {
                let k = t.k;
                for (j, &s) in row.iter().enumerate() {
                    if k == 0 || (t.best.len() == k && s <= t.best[k - 1].0) {
                        continue;
                    }
                    if keep(j) {
                        t.offer(start + j, s);
                    }
                }
            }
            Collector::Large(all) => all.extend(
                row.iter()
                    .enumerate()
                    .filter(|&(j, s)| s.is_finite() && keep(j))
                    .map(|(j, &s)| Hit {
                        passage: start + j,
                        score: f64::from(s),
                    }),
            ),
        }
    }

    fn into_hits(self, k: usize) -> Vec<Hit> {
        match self {
            Collector::Small(t) => t.into_hits(),
            Collector::Large(all) => crate::top_k(all, k),
        }
    }
}

/// Top-`k` of one score row (ascending passage order) under `valid` and an optional scope.
#[cfg(test)]
fn top_k_row(row: &[f32], k: usize, valid: &[bool], scope: Option<&[bool]>) -> Vec<Hit> {
    let mut c = Collector::new(k);
    c.offer_row(row, 0, valid, scope);
    c.into_hits(k)
}

/// Passages (rows of `P`) per matrix product: 2048 × 1024 queries × 4 bytes = 8 MB of scores.
/// With [`DEFAULT_QUERY_BLOCK`], chosen on `scripts/bench_dense_peers.sh` (100k × 384,
/// 1,000 queries, 2 threads, AVX-512): 1024 × 2048 ran 7 % faster than 256 × 8192 (the passage
/// tile is packed for gemm once per query block, so bigger query blocks pack it fewer times).
pub const PASSAGE_TILE: usize = 2048;

/// An exact dense index: `n` passage vectors of dimension `dim`, L2-normalised, in passage
/// order (row `i` = passage `i` of the [`crate::PassageIndex`] it was embedded from).
///
/// Memory: `4 · n · dim` bytes (one copy of the matrix, a tensor the matmul and the direct
/// path both read; 154 MB for 100k × 384, 1.5 GB for 1M) plus, during a search,
/// `4 · block · PASSAGE_TILE` bytes of scores (8 MB for 1,024 queries).
#[derive(Debug, Clone)]
pub struct DenseIndex {
    dim: usize,
    n: usize,
    /// `(n, dim)` row-major, normalised; degenerate rows are zero. `None` when `n == 0`.
    /// The only copy of the vectors: the direct path reads its storage ([`Self::with_flat`]).
    matrix: Option<Tensor>,
    valid: Vec<bool>,
    degenerate: Vec<usize>,
    block: usize,
    tile: usize,
}

/// Default number of query rows per matrix product (see [`PASSAGE_TILE`]).
pub const DEFAULT_QUERY_BLOCK: usize = 1024;

impl DenseIndex {
    /// Builds the index from a flat row-major matrix `[n_passages × dim]` (`vectors.len() ==
    /// n · dim`). Rows are L2-normalised; degenerate rows (non-finite or zero) are zeroed,
    /// listed in [`DenseIndex::degenerate_passages`] and never returned.
    ///
    /// # Errors
    /// [`DenseError::ZeroDimension`], [`DenseError::RaggedMatrix`], or
    /// [`DenseError::Candle`] if the tensor cannot be created.
    pub fn new(vectors: Vec<f32>, dim: usize) -> Result<Self, DenseError> {
        if dim == 0 {
            return Err(DenseError::ZeroDimension);
        }
        if vectors.len() % dim != 0 {
            return Err(DenseError::RaggedMatrix {
                len: vectors.len(),
                dim,
            });
        }
        let n = vectors.len() / dim;
        let mut flat = vectors;
        let mut valid = vec![true; n];
        let mut degenerate = Vec::new();
        let mut tmp = vec![0.0f32; dim];
        for (i, row) in flat.chunks_exact_mut(dim).enumerate() {
            if !normalise_into(row, &mut tmp) {
                valid[i] = false;
                degenerate.push(i);
            }
            row.copy_from_slice(&tmp);
        }
        let matrix = if n == 0 {
            None
        } else {
            Some(Tensor::from_vec(flat, (n, dim), &Device::Cpu)?)
        };
        Ok(DenseIndex {
            dim,
            n,
            matrix,
            valid,
            degenerate,
            block: DEFAULT_QUERY_BLOCK,
            tile: PASSAGE_TILE,
        })
    }

    /// Builds the index from one vector per passage (e.g. the embedder's `Vec<Vec<f32>>`).
    /// Pass the rows by value (`Vec<Vec<f32>>`) to free each as it is copied, so the peak
    /// holds one copy of the vectors, not two (1.5 GB at 1M × 384); `&rows` works too.
    ///
    /// # Errors
    /// As [`DenseIndex::new`], plus [`DenseError::DimensionMismatch`] for a row whose length
    /// is not `dim`.
    pub fn from_rows<V: AsRef<[f32]>>(
        rows: impl IntoIterator<Item = V>,
        dim: usize,
    ) -> Result<Self, DenseError> {
        if dim == 0 {
            return Err(DenseError::ZeroDimension);
        }
        let rows = rows.into_iter();
        let mut flat = Vec::with_capacity(rows.size_hint().0 * dim);
        for (i, r) in rows.enumerate() {
            let r = r.as_ref();
            if r.len() != dim {
                return Err(DenseError::DimensionMismatch {
                    what: "passage",
                    index: i,
                    got: r.len(),
                    dim,
                });
            }
            flat.extend_from_slice(r);
        }
        Self::new(flat, dim)
    }

    /// Builder: query rows per matrix product (at least 1; default
    /// [`DEFAULT_QUERY_BLOCK`]). Larger blocks use `4 · block · PASSAGE_TILE` bytes of scores.
    pub fn with_query_block(mut self, block: usize) -> Self {
        self.block = block.max(1);
        self
    }

    /// Builder: passages per matrix product (at least 1; default [`PASSAGE_TILE`]).
    pub fn with_passage_tile(mut self, tile: usize) -> Self {
        self.tile = tile.max(1);
        self
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of passages (rows), degenerate ones included.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when the index has no passages.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Indices of the degenerate passages (non-finite or zero vectors), ascending. They are
    /// never returned by a search.
    pub fn degenerate_passages(&self) -> &[usize] {
        &self.degenerate
    }

    /// The stored (normalised) vector of passage `i`, copied; all zeros for a degenerate
    /// passage.
    ///
    /// # Panics
    /// When `i >= len()`.
    pub fn vector(&self, i: usize) -> Vec<f32> {
        self.with_flat(|flat| flat[i * self.dim..(i + 1) * self.dim].to_vec())
    }

    /// Runs `f` on the row-major `[n × dim]` matrix (empty when `n == 0`), read in place from
    /// the tensor's CPU storage.
    fn with_flat<R>(&self, f: impl FnOnce(&[f32]) -> R) -> R {
        let Some(matrix) = &self.matrix else {
            return f(&[]);
        };
        let (storage, layout) = matrix.storage_and_layout();
        let Storage::Cpu(cpu) = &*storage else {
            unreachable!("tensors are created on the CPU device")
        };
        let all = cpu
            .as_slice::<f32>()
            .expect("the matrix is created from f32 values");
        let from = layout.start_offset();
        f(&all[from..from + self.n * self.dim])
    }

    /// Top-`k` passages for one query vector (length `dim`) inside `scope` (a mask from
    /// [`crate::PassageIndex::scope_mask`]; `None` = all; positions past the mask's end are
    /// out of scope). Scores are cosines; see the module documentation for ties and
    /// degenerate vectors.
    ///
    /// # Errors
    /// [`DenseError::DimensionMismatch`] or [`DenseError::Candle`].
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        scope: Option<&[bool]>,
    ) -> Result<Vec<Hit>, DenseError> {
        let mut out = self.search_batch(&[query], k, &[scope])?;
        Ok(out.pop().unwrap_or_default())
    }

    /// Top-`k` for each of `queries` (each of length `dim`), computed by blocked matrix
    /// products. `scopes` is empty (whole corpus for every query) or has one entry per query.
    /// Returns one hit list per query, in query order.
    ///
    /// # Errors
    /// [`DenseError::DimensionMismatch`], [`DenseError::ScopeCount`] or
    /// [`DenseError::Candle`].
    pub fn search_batch<Q: AsRef<[f32]> + Sync>(
        &self,
        queries: &[Q],
        k: usize,
        scopes: &[Option<&[bool]>],
    ) -> Result<Vec<Vec<Hit>>, DenseError> {
        let groups: Vec<Range<usize>> = (0..queries.len()).map(|i| i..i + 1).collect();
        self.search_pooled_batch(queries, &groups, k, scopes)
    }

    /// Max-pooled batch search: logical query `g` consists of the query rows `groups[g]`
    /// (e.g. one row per answer option, [`crate::QueryForm::PerOption`]); a passage's score is
    /// the maximum of its cosines over the group's non-degenerate rows, then top-`k` as in
    /// [`DenseIndex::search`]. `scopes` is empty or has one entry per group. A group with no
    /// non-degenerate row gets no hits.
    ///
    /// # Errors
    /// [`DenseError::DimensionMismatch`], [`DenseError::GroupOutOfRange`],
    /// [`DenseError::ScopeCount`] or [`DenseError::Candle`].
    pub fn search_pooled_batch<Q: AsRef<[f32]> + Sync>(
        &self,
        queries: &[Q],
        groups: &[Range<usize>],
        k: usize,
        scopes: &[Option<&[bool]>],
    ) -> Result<Vec<Vec<Hit>>, DenseError> {
        let dim = self.dim;
        for (i, q) in queries.iter().enumerate() {
            if q.as_ref().len() != dim {
                return Err(DenseError::DimensionMismatch {
                    what: "query",
                    index: i,
                    got: q.as_ref().len(),
                    dim,
                });
            }
        }
        for (g, r) in groups.iter().enumerate() {
            if r.start > r.end || r.end > queries.len() {
                return Err(DenseError::GroupOutOfRange {
                    group: g,
                    start: r.start,
                    end: r.end,
                    rows: queries.len(),
                });
            }
        }
        if !scopes.is_empty() && scopes.len() != groups.len() {
            return Err(DenseError::ScopeCount {
                scopes: scopes.len(),
                queries: groups.len(),
            });
        }
        let scope_of = |g: usize| scopes.get(g).copied().flatten();
        let mut results: Vec<Vec<Hit>> = vec![Vec::new(); groups.len()];
        if self.n == 0 || k == 0 {
            return Ok(results);
        }
        // Normalised query rows; degenerate rows are skipped.
        let mut qflat = vec![0.0f32; queries.len() * dim];
        let qvalid: Vec<bool> = qflat
            .par_chunks_exact_mut(dim)
            .zip(queries.par_iter())
            .map(|(out, q)| normalise_into(q.as_ref(), out))
            .collect();
        // Split groups: small scopes -> direct dot products; the rest -> blocked matmul.
        let mut via_matmul = Vec::new();
        let mut direct = Vec::new();
        for (g, r) in groups.iter().enumerate() {
            if !r.clone().any(|i| qvalid[i]) {
                continue;
            }
            match scope_of(g) {
                Some(m) if 8 * m.iter().take(self.n).filter(|&&b| b).count() < self.n => {
                    direct.push(g)
                }
                _ => via_matmul.push(g),
            }
        }
        let direct_hits: Vec<(usize, Vec<Hit>)> = direct
            .par_iter()
            .map(|&g| {
                let rows: Vec<&[f32]> = groups[g]
                    .clone()
                    .filter(|&i| qvalid[i])
                    .map(|i| &qflat[i * dim..(i + 1) * dim])
                    .collect();
                (g, self.direct_top_k(&rows, k, scope_of(g)))
            })
            .collect();
        for (g, h) in direct_hits {
            results[g] = h;
        }
        // Blocks of whole groups of at most `block` rows (a larger group is one block).
        let mut start = 0;
        while start < via_matmul.len() {
            let mut end = start;
            let mut rows = 0;
            while end < via_matmul.len() {
                let len = groups[via_matmul[end]].len();
                if end > start && rows + len > self.block {
                    break;
                }
                rows += len;
                end += 1;
            }
            let block_groups = &via_matmul[start..end];
            let row_ids: Vec<usize> = block_groups
                .iter()
                .flat_map(|&g| groups[g].clone())
                .collect();
            let mut qblock = Vec::with_capacity(row_ids.len() * dim);
            for &i in &row_ids {
                qblock.extend_from_slice(&qflat[i * dim..(i + 1) * dim]);
            }
            let hits = self.matmul_block(
                &qblock,
                row_ids.len(),
                block_groups,
                groups,
                &qvalid,
                k,
                &scope_of,
            )?;
            for (g, h) in block_groups.iter().zip(hits) {
                results[*g] = h;
            }
            start = end;
        }
        Ok(results)
    }

    /// The per-group top-k of `block (m × dim) · Pᵀ`, computed one passage tile at a time
    /// ([`PASSAGE_TILE`] rows of `P` per product) so the score buffer stays small (8 MB for
    /// 1,024 queries) and is reused by the allocator instead of page-faulting in every block.
    #[allow(clippy::too_many_arguments)]
    fn matmul_block<'s>(
        &self,
        qblock: &[f32],
        m: usize,
        block_groups: &[usize],
        groups: &[Range<usize>],
        qvalid: &[bool],
        k: usize,
        scope_of: &(dyn Fn(usize) -> Option<&'s [bool]> + Sync),
    ) -> Result<Vec<Vec<Hit>>, DenseError> {
        let matrix = self.matrix.as_ref().expect("n > 0 checked by the caller");
        let q = Tensor::from_slice(qblock, (m, self.dim), &Device::Cpu)?;
        // Row offsets of each group inside the block.
        let mut offsets = Vec::with_capacity(block_groups.len());
        let mut off = 0;
        for &g in block_groups {
            offsets.push(off);
            off += groups[g].len();
        }
        let mut collectors: Vec<Collector> =
            block_groups.iter().map(|_| Collector::new(k)).collect();
        let mut start = 0;
        while start < self.n {
            let len = self.tile.min(self.n - start);
            let tile = matrix.narrow(0, start, len)?;
            let scores = q.matmul(&tile.t()?)?.contiguous()?;
            let (storage, layout) = scores.storage_and_layout();
            let Storage::Cpu(cpu) = &*storage else {
                unreachable!("tensors are created on the CPU device")
            };
            let all = cpu.as_slice::<f32>()?;
            let all = &all[layout.start_offset()..layout.start_offset() + m * len];
            let valid = &self.valid[start..start + len];
            collectors
                .par_iter_mut()
                .zip(block_groups.par_iter().zip(offsets.par_iter()))
                .for_each(|(c, (&g, &off))| {
                    let rows: Vec<&[f32]> = groups[g]
                        .clone()
                        .enumerate()
                        .filter(|&(_, i)| qvalid[i])
                        .map(|(j, _)| &all[(off + j) * len..(off + j + 1) * len])
                        .collect();
                    let scope = scope_of(g);
                    match rows.as_slice() {
                        [] => {}
                        [row] => c.offer_row(row, start, valid, scope),
                        [first, rest @ ..] => {
                            let mut pooled = first.to_vec();
                            for row in rest {
                                for (p, &s) in pooled.iter_mut().zip(row.iter()) {
                                    if s > *p {
                                        *p = s;
                                    }
                                }
                            }
                            c.offer_row(&pooled, start, valid, scope);
                        }
                    }
                });
            start += len;
        }
        Ok(collectors.into_iter().map(|c| c.into_hits(k)).collect())
    }

    /// Direct path: max over `rows` of dot products with each in-scope passage.
    fn direct_top_k(&self, rows: &[&[f32]], k: usize, scope: Option<&[bool]>) -> Vec<Hit> {
        let mut t = TopK::new(k);
        if rows.is_empty() {
            return Vec::new();
        }
        let mut best = Vec::new();
        self.with_flat(|flat| {
            for i in 0..self.n {
                if !self.valid[i] || !crate::in_scope(scope, i) {
                    continue;
                }
                let v = &flat[i * self.dim..(i + 1) * self.dim];
                let s = rows
                    .iter()
                    .map(|q| dot(q, v))
                    .fold(f32::NEG_INFINITY, f32::max);
                if k > 64 {
                    best.push(Hit {
                        passage: i,
                        score: f64::from(s),
                    });
                } else {
                    t.offer(i, s);
                }
            }
        });
        if k > 64 {
            crate::top_k(best, k)
        } else {
            t.into_hits()
        }
    }

    /// Reference implementation: a plain per-query loop of dot products over every passage
    /// (no matrix product, one thread), with the same normalisation, degenerate handling,
    /// scope and tie rules as [`DenseIndex::search`]. Used by tests and as the benchmark
    /// baseline; scores may differ from the matmul path in the last bits (summation order).
    ///
    /// # Errors
    /// [`DenseError::DimensionMismatch`] for a query of the wrong length.
    pub fn search_loop(
        &self,
        query: &[f32],
        k: usize,
        scope: Option<&[bool]>,
    ) -> Result<Vec<Hit>, DenseError> {
        if query.len() != self.dim {
            return Err(DenseError::DimensionMismatch {
                what: "query",
                index: 0,
                got: query.len(),
                dim: self.dim,
            });
        }
        let mut q = vec![0.0f32; self.dim];
        if !normalise_into(query, &mut q) {
            return Ok(Vec::new());
        }
        Ok(self.direct_top_k(&[&q], k, scope))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_buffer_orders_and_breaks_ties() {
        let row = [0.5f32, 0.9, 0.5, 0.9, f32::NAN, 0.7];
        let valid = [true; 6];
        let hits = top_k_row(&row, 3, &valid, None);
        let ids: Vec<usize> = hits.iter().map(|h| h.passage).collect();
        assert_eq!(ids, [1, 3, 5]);
        let hits = top_k_row(&row, 100, &valid, None);
        let ids: Vec<usize> = hits.iter().map(|h| h.passage).collect();
        assert_eq!(ids, [1, 3, 5, 0, 2]);
    }

    #[test]
    fn dot_matches_naive() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.25).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.125).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
    }
}
