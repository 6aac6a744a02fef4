//! Chunker throughput and linearity benchmark (issue 4, "Speed"); run it through
//! `scripts/bench_chunkers.sh`, which builds the corpus, runs LangChain's splitter in the
//! same run and writes the `## Chunkers` section of BENCHMARKS.md.
//!
//! ```text
//! cargo bench -p chunker --bench chunkers -- --corpus FILE [--json OUT.jsonl] [options]
//! ```
//!
//! * Throughput: the fixed chunker (`FixedConfig`) and the recursive chunker
//!   (`RecursiveChunker`, LangChain defaults) against the `text-splitter` crate's
//!   `TextSplitter` with the same capacity, in chars (`--chars-size`, default 1000) and in
//!   MiniLM tokens (`--tokens-size`, default 256), overlap 0, on one text (`--corpus`).
//!   Every tool returns byte offsets: `chunk_spans`, `split_spans` and `chunk_indices`.
//!   Token sizes of all three come from the same `tokenizers` 0.23 tokenizer
//!   (`HfTokenizer::count`: `encode_fast` without special tokens, truncation or padding,
//!   which is what text-splitter's own `tokenizers` sizer computes when truncation and
//!   padding are off).
//! * Linearity: fixed and recursive chunkers in chars on texts without any separator (an
//!   ASCII run without spaces and a CJK run without spaces), `--linear-mb` sizes (default
//!   6.25, 12.5, 25, 50 MB; MB = 10^6 bytes); the time ratio of each doubling is reported.
//!
//! Runs are interleaved round-robin (rep 1 of every contestant, then rep 2, ...) so that
//! load from other processes spreads over all of them. Each run records the thread's CPU
//! time (which time slices given to other processes on the shared cores do not inflate)
//! and the wall-clock time; the best (minimum) CPU time of the reps is the figure. A
//! contestant that takes less than 50 ms on a text is called several times per measurement
//! (after one uncounted warm-up call that sets the count) and the time divided.
//!
//! Without `--bench` (as under `cargo test --benches`) it only runs every contestant once
//! on small texts and checks the spans, so test runs stay fast.

use chunker::{FixedConfig, HfTokenizer, RecursiveChunker, Span};
use cpu_time::ThreadTime;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use text_splitter::{ChunkConfig, ChunkSizer, TextSplitter};

/// text-splitter's `ChunkSizer` over the tokenizer the chunkbench chunkers use.
struct MiniLm(Arc<HfTokenizer>);

impl ChunkSizer for MiniLm {
    fn size(&self, chunk: &str) -> usize {
        self.0.count(chunk)
    }
}

/// A chunker under test: text in, byte spans of its chunks out.
type ChunkFn = Box<dyn Fn(&str) -> Vec<Span>>;

/// One chunker under test.
struct Contestant {
    tool: &'static str,
    unit: &'static str,
    size: usize,
    run: ChunkFn,
}

struct Args {
    bench: bool,
    corpus: Option<PathBuf>,
    tokenizer: PathBuf,
    chars_size: usize,
    tokens_size: usize,
    reps_chars: usize,
    reps_tokens: usize,
    reps_linear: usize,
    linear_mb: Vec<f64>,
    linear_peer_mb: Vec<f64>,
    reps_linear_peer: usize,
    skip_throughput: bool,
    skip_linear: bool,
    json: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: cargo bench -p chunker --bench chunkers -- --corpus FILE [--json OUT] \
         [--tokenizer tokenizer.json] [--chars-size 1000] [--tokens-size 256] \
         [--reps-chars 5] [--reps-tokens 3] [--reps-linear 5] \
         [--linear-mb 6.25,12.5,25,50] [--linear-peer-mb 0.5,1,2] [--reps-linear-peer 1] \
         [--skip-throughput] [--skip-linear]"
    );
    std::process::exit(2)
}

/// `0.5,1,2` -> sizes in MB; an empty string gives none.
fn mb_list(s: &str) -> Vec<f64> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| x.trim().parse::<f64>().unwrap_or_else(|_| usage()))
        .collect()
}

fn parse_args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut a = Args {
        bench: false,
        corpus: None,
        tokenizer: root.join("models/all-MiniLM-L6-v2/tokenizer.json"),
        chars_size: 1000,
        tokens_size: 256,
        reps_chars: 5,
        reps_tokens: 3,
        reps_linear: 5,
        linear_mb: vec![6.25, 12.5, 25.0, 50.0],
        linear_peer_mb: vec![0.5, 1.0, 2.0],
        reps_linear_peer: 1,
        skip_throughput: false,
        skip_linear: false,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage());
        let num = |s: String| s.parse::<usize>().unwrap_or_else(|_| usage());
        match arg.as_str() {
            "--bench" => a.bench = true,
            "--corpus" => a.corpus = Some(val().into()),
            "--tokenizer" => a.tokenizer = val().into(),
            "--json" => a.json = Some(val().into()),
            "--chars-size" => a.chars_size = num(val()),
            "--tokens-size" => a.tokens_size = num(val()),
            "--reps-chars" => a.reps_chars = num(val()).max(1),
            "--reps-tokens" => a.reps_tokens = num(val()).max(1),
            "--reps-linear" => a.reps_linear = num(val()).max(1),
            "--linear-mb" => a.linear_mb = mb_list(&val()),
            "--linear-peer-mb" => a.linear_peer_mb = mb_list(&val()),
            "--reps-linear-peer" => a.reps_linear_peer = num(val()).max(1),
            "--skip-throughput" => a.skip_throughput = true,
            "--skip-linear" => a.skip_linear = true,
            "-h" | "--help" => usage(),
            // A name filter that cargo passes through, or libtest flags: not used.
            _ => {}
        }
    }
    a
}

fn fixed(cfg: FixedConfig) -> ChunkFn {
    Box::new(move |t| cfg.chunk_spans(t))
}

fn recursive(rc: RecursiveChunker) -> ChunkFn {
    Box::new(move |t| rc.split_spans(t))
}

fn text_splitter<S: ChunkSizer + 'static>(cfg: ChunkConfig<S>) -> ChunkFn {
    let ts = TextSplitter::new(cfg);
    Box::new(move |t| {
        ts.chunk_indices(t)
            .map(|(start, c)| Span {
                start,
                end: start + c.len(),
            })
            .collect()
    })
}

fn chars_contestants(size: usize, peer: bool) -> Vec<Contestant> {
    let mut v = vec![
        Contestant {
            tool: "chunkbench fixed",
            unit: "chars",
            size,
            run: fixed(FixedConfig::chars(size, 0).expect("valid size")),
        },
        Contestant {
            tool: "chunkbench recursive",
            unit: "chars",
            size,
            run: recursive(RecursiveChunker::new(size, 0).expect("valid size")),
        },
    ];
    if peer {
        v.push(Contestant {
            tool: "text-splitter",
            unit: "chars",
            size,
            run: text_splitter(ChunkConfig::new(size)),
        });
    }
    v
}

fn tokens_contestants(size: usize, tok: &Arc<HfTokenizer>) -> Vec<Contestant> {
    vec![
        Contestant {
            tool: "chunkbench fixed",
            unit: "tokens",
            size,
            run: fixed(FixedConfig::tokens(size, 0, Arc::clone(tok)).expect("valid size")),
        },
        Contestant {
            tool: "chunkbench recursive",
            unit: "tokens",
            size,
            run: recursive(
                RecursiveChunker::new(size, 0)
                    .expect("valid size")
                    .with_tokenizer(Arc::clone(tok)),
            ),
        },
        Contestant {
            tool: "text-splitter",
            unit: "tokens",
            size,
            run: text_splitter(ChunkConfig::new(size).with_sizer(MiniLm(Arc::clone(tok)))),
        },
    ]
}

/// Panics unless `spans` are non-empty slices of `text` on char boundaries with strictly
/// increasing starts (what every tool here promises).
fn check_spans(name: &str, text: &str, spans: &[Span]) {
    assert_eq!(
        text.trim().is_empty(),
        spans.is_empty(),
        "{name}: chunks of a blank text, or none of a non-blank one"
    );
    let mut prev: Option<Span> = None;
    for s in spans {
        assert!(
            s.start < s.end
                && s.end <= text.len()
                && text.is_char_boundary(s.start)
                && text.is_char_boundary(s.end),
            "{name}: bad span {s:?}"
        );
        if let Some(p) = prev {
            assert!(s.start > p.start, "{name}: {p:?} then {s:?}");
        }
        prev = Some(*s);
    }
}

/// Runs `f` once; returns its result, wall-clock seconds and the thread's CPU seconds.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let wall = Instant::now();
    let cpu = ThreadTime::now();
    let r = f();
    let c = cpu.elapsed().as_secs_f64();
    let w = wall.elapsed().as_secs_f64();
    (r, w, c)
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

/// The reps of one contestant on one text.
#[derive(Debug, Clone, Default)]
struct Timing {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    chunks: usize,
    mean_chunk_bytes: f64,
}

/// Shortest measurement: a contestant faster than this on a text is run several times in a
/// row per rep and the time divided, so that timer and scheduler granularity stay small.
const MIN_MEASURE_S: f64 = 0.05;

/// How many calls make one measurement of `c` on `text`: one warm-up call (not counted)
/// decides.
fn calibrate(c: &Contestant, text: &str) -> usize {
    let (spans, _, cpu) = timed(|| (c.run)(black_box(text)));
    drop(black_box(spans));
    ((MIN_MEASURE_S / cpu.max(1e-9)).ceil() as usize).clamp(1, 1000)
}

/// `iters` calls of `c` on `text`: the last call's spans, and wall and CPU seconds per call.
fn measure(c: &Contestant, text: &str, iters: usize) -> (Vec<Span>, f64, f64) {
    let (spans, wall, cpu) = timed(|| {
        let mut last = Vec::new();
        for _ in 0..iters {
            last = black_box((c.run)(black_box(text)));
        }
        last
    });
    (spans, wall / iters as f64, cpu / iters as f64)
}

/// Times every contestant on `text` `reps` times, round-robin.
fn time_round_robin(contestants: &[Contestant], text: &str, reps: usize) -> Vec<Timing> {
    let iters: Vec<usize> = contestants.iter().map(|c| calibrate(c, text)).collect();
    let mut timings = vec![Timing::default(); contestants.len()];
    for rep in 0..reps {
        for ((c, t), &n) in contestants.iter().zip(&mut timings).zip(&iters) {
            let (spans, wall, cpu) = measure(c, text, n);
            t.wall.push(wall);
            t.cpu.push(cpu);
            if rep == 0 {
                check_spans(c.tool, text, &spans);
                let bytes: usize = spans.iter().map(Span::len).sum();
                t.chunks = spans.len();
                t.mean_chunk_bytes = bytes as f64 / spans.len().max(1) as f64;
            }
            eprintln!(
                "  rep {}/{reps} {:<22} {:<6} x{n:<4} cpu {:>9.4} s, wall {:>9.4} s",
                rep + 1,
                c.tool,
                c.unit,
                cpu,
                wall
            );
            drop(spans);
        }
    }
    timings
}

/// FNV-1a 64 over every chunk's UTF-8 bytes, each followed by 0xFF (never in UTF-8); the
/// same digest `scripts/bench_chunkers.py` computes over LangChain's chunks.
fn digest<S: AsRef<str>>(chunks: &[S]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for c in chunks {
        for &b in c.as_ref().as_bytes().iter().chain(&[0xFF]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn throughput(a: &Args, tok: &Arc<HfTokenizer>, out: &mut Vec<Value>) {
    let path = a.corpus.as_ref().unwrap_or_else(|| {
        eprintln!("--corpus FILE is required (scripts/bench_chunkers.sh builds it)");
        usage()
    });
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read corpus {}: {e}", path.display()));
    let mb = text.len() as f64 / 1e6;
    eprintln!(
        "corpus {}: {} bytes, {} chars",
        path.display(),
        text.len(),
        text.chars().count()
    );
    // LangChain-parity digests of the recursive chunker on the whole corpus (untimed).
    for (unit, rc) in [
        (
            "chars",
            RecursiveChunker::new(a.chars_size, 0).expect("size"),
        ),
        (
            "tokens",
            RecursiveChunker::new(a.tokens_size, 0)
                .expect("size")
                .with_tokenizer(Arc::clone(tok)),
        ),
    ] {
        let lc = rc.langchain_texts(&text);
        let (spans, stats) = rc.split_spans_with_stats(&text);
        let ours: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
        out.push(json!({
            "kind": "parity",
            "tool": "chunkbench recursive",
            "unit": unit,
            "size": rc.chunk_size(),
            "langchain_texts": lc.len(),
            "langchain_digest": digest(&lc),
            "spans": ours.len(),
            "spans_digest": digest(&ours),
            "trimmed_unsplit": stats.trimmed_unsplit,
            "dropped_contained": stats.dropped_contained,
        }));
    }
    let groups = [
        (chars_contestants(a.chars_size, true), a.reps_chars),
        (tokens_contestants(a.tokens_size, tok), a.reps_tokens),
    ];
    for (contestants, reps) in &groups {
        eprintln!("throughput, {} ({reps} reps)", contestants[0].unit);
        let timings = time_round_robin(contestants, &text, *reps);
        for (c, t) in contestants.iter().zip(&timings) {
            let (cpu, wall) = (best(&t.cpu), best(&t.wall));
            eprintln!(
                "{:<22} {:<6} size {:>4}: cpu {:>8.4} s = {:>8.2} MB/s, wall {:>8.4} s = \
                 {:>8.2} MB/s, {} chunks of {:.0} bytes",
                c.tool,
                c.unit,
                c.size,
                cpu,
                mb / cpu,
                wall,
                mb / wall,
                t.chunks,
                t.mean_chunk_bytes
            );
            out.push(json!({
                "kind": "throughput",
                "tool": c.tool,
                "unit": c.unit,
                "size": c.size,
                "overlap": 0,
                "bytes": text.len(),
                "best_cpu_s": cpu,
                "median_cpu_s": median(&t.cpu),
                "best_wall_s": wall,
                "median_wall_s": median(&t.wall),
                "cpu_secs": t.cpu,
                "wall_secs": t.wall,
                "mb_per_s": mb / cpu,
                "mb_per_s_wall": mb / wall,
                "chunks": t.chunks,
                "mean_chunk_bytes": t.mean_chunk_bytes,
            }));
        }
    }
}

/// `bytes` bytes (rounded down to a char boundary) of `pattern` repeated.
fn no_separator_text(pattern: &str, bytes: usize) -> String {
    let mut s = pattern.repeat(bytes / pattern.len() + 1);
    let mut cut = bytes;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s
}

/// Texts without any of LangChain's separators ("\n\n", "\n", " "): one long ASCII "word"
/// and CJK without spaces.
const NO_SEPARATOR_PATTERNS: [(&str, &str); 2] = [
    ("ascii", "abcdefghijklmnopqrstuvwxyz0123456789"),
    (
        "cjk",
        "日本語のテキストは空白なしで書かれる。句読点だけが区切りになる",
    ),
];

fn linearity(a: &Args, out: &mut Vec<Value>) {
    for (kind, pattern) in NO_SEPARATOR_PATTERNS {
        let ours = chars_contestants(a.chars_size, false);
        linear_series(kind, pattern, &a.linear_mb, &ours, a.reps_linear, out);
    }
    // text-splitter on smaller inputs only: it is far from linear on one long word.
    if !a.linear_peer_mb.is_empty() {
        for (kind, pattern) in NO_SEPARATOR_PATTERNS {
            let peer: Vec<Contestant> = chars_contestants(a.chars_size, true)
                .into_iter()
                .filter(|c| c.tool == "text-splitter")
                .collect();
            linear_series(
                kind,
                pattern,
                &a.linear_peer_mb,
                &peer,
                a.reps_linear_peer,
                out,
            );
        }
    }
}

/// Times `contestants` on `pattern` repeated to each of `sizes_mb`, `reps` times
/// round-robin, and records the best times and the ratio of each size to the previous one.
fn linear_series(
    kind: &str,
    pattern: &str,
    sizes_mb: &[f64],
    contestants: &[Contestant],
    reps: usize,
    out: &mut Vec<Value>,
) {
    let texts: Vec<String> = sizes_mb
        .iter()
        .map(|&mb| no_separator_text(pattern, (mb * 1e6) as usize))
        .collect();
    // Calls per measurement: calibrated on the smallest text, the same for every size.
    let iters: Vec<usize> = contestants
        .iter()
        .map(|c| calibrate(c, &texts[0]))
        .collect();
    // timings[size][contestant]
    let mut timings = vec![vec![Timing::default(); contestants.len()]; texts.len()];
    eprintln!("linearity, {kind} text without separators ({reps} reps)");
    for _ in 0..reps {
        for (text, row) in texts.iter().zip(&mut timings) {
            for ((c, t), &n) in contestants.iter().zip(row.iter_mut()).zip(&iters) {
                let (spans, wall, cpu) = measure(c, text, n);
                drop(spans);
                t.wall.push(wall);
                t.cpu.push(cpu);
                eprintln!(
                    "  {:>6.2} MB {:<22} x{n:<4} cpu {:>9.4} s, wall {:>9.4} s",
                    text.len() as f64 / 1e6,
                    c.tool,
                    cpu,
                    wall
                );
            }
        }
    }
    for (ci, c) in contestants.iter().enumerate() {
        let mut line = format!("{:<22} {kind:<5} cpu", c.tool);
        for (si, text) in texts.iter().enumerate() {
            let cpu = best(&timings[si][ci].cpu);
            let wall = best(&timings[si][ci].wall);
            let prev = si.checked_sub(1).map(|p| &timings[p][ci]);
            let ratio = prev.map(|p| cpu / best(&p.cpu));
            let ratio_wall = prev.map(|p| wall / best(&p.wall));
            let _ = write!(
                line,
                "  {:.2} MB {:.4} s{}",
                text.len() as f64 / 1e6,
                cpu,
                ratio.map(|r| format!(" (x{r:.2})")).unwrap_or_default()
            );
            out.push(json!({
                "kind": "linearity",
                "text": kind,
                "tool": c.tool,
                "unit": "chars",
                "size": c.size,
                "bytes": text.len(),
                "reps": reps,
                "best_cpu_s": cpu,
                "best_wall_s": wall,
                "ratio_to_previous": ratio,
                "ratio_to_previous_wall": ratio_wall,
            }));
        }
        eprintln!("{line}");
    }
}

/// Quick check when run as a test (`cargo test --benches`): every contestant once on
/// small texts.
fn smoke(tok: &Arc<HfTokenizer>) {
    let text = "Pumps hum. Valves click.\n\nThe second paragraph is a little longer, \
                with a few more words in it.\nAnd a second line. 日本語のテキスト。"
        .repeat(40);
    let mut all = chars_contestants(100, true);
    all.extend(tokens_contestants(24, tok));
    for c in &all {
        check_spans(c.tool, &text, &(c.run)(&text));
        let flat = no_separator_text(NO_SEPARATOR_PATTERNS[1].1, 5000);
        check_spans(c.tool, &flat, &(c.run)(&flat));
    }
    println!("chunkers bench: smoke run of {} contestants ok", all.len());
}

fn main() {
    let a = parse_args();
    let tok = match HfTokenizer::from_file(&a.tokenizer) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    };
    if !a.bench {
        smoke(&tok);
        return;
    }
    let mut out = Vec::new();
    if !a.skip_throughput {
        throughput(&a, &tok, &mut out);
    }
    if !a.skip_linear {
        linearity(&a, &mut out);
    }
    if let Some(path) = &a.json {
        let mut f = std::fs::File::create(path)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        for line in &out {
            writeln!(f, "{line}").expect("write json");
        }
        eprintln!("wrote {}", path.display());
    }
}
