#!/usr/bin/env bash
# Chunker speed benchmark (issue 4, "Speed"; peers of issue 40): in one run, chunks a 5 MB real
# text with the fixed and recursive chunkers, the `text-splitter` crate (same capacity, chars and
# MiniLM tokens), LangChain's RecursiveCharacterTextSplitter, chonkie's RecursiveChunker and
# TokenChunker and semchunk (Python, in .venv-langchain), checks
# linear time on 6.25-50 MB of text without separators, and writes the `## Chunkers` section
# of BENCHMARKS.md (other sections are left alone).
#
#   scripts/bench_chunkers.sh
#
# The text: QuALITY articles + SciQ support paragraphs (data/*/documents.jsonl; `chunkbench
# data fetch`) + OpenStax CNXML modules with tags stripped (DATASETS, default
# ../shared/datasets), repeated if shorter than BENCH_BYTES and cut to it.
#
# Environment (defaults in brackets): BENCH_BYTES [5000000], CHARS_SIZE [1000],
# TOKENS_SIZE [256], REPS_CHARS [5], REPS_TOKENS [3], REPS_LINEAR [5],
# LINEAR_MB [6.25,12.5,25,50], LINEAR_PEER_MB [0.5,1,2] (text-splitter on the no-separator
# texts, smaller sizes because it is far slower there; empty to skip), MAX_LOAD [1.5] and
# WAIT_LOAD [600]: wait up to WAIT_LOAD seconds for the 1-minute load average to fall below
# MAX_LOAD before measuring (the run goes on after that; the load is written into the
# report either way), VENV [.venv-langchain], TOKENIZER
# [models/all-MiniLM-L6-v2/tokenizer.json], BENCHMARKS [BENCHMARKS.md].
# Raw results: target/bench-chunkers/ (or $CARGO_TARGET_DIR/bench-chunkers/).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BENCH_BYTES=${BENCH_BYTES:-5000000}
CHARS_SIZE=${CHARS_SIZE:-1000}
TOKENS_SIZE=${TOKENS_SIZE:-256}
REPS_CHARS=${REPS_CHARS:-5}
REPS_TOKENS=${REPS_TOKENS:-3}
REPS_LINEAR=${REPS_LINEAR:-5}
LINEAR_MB=${LINEAR_MB:-6.25,12.5,25,50}
LINEAR_PEER_MB=${LINEAR_PEER_MB-0.5,1,2}
MAX_LOAD=${MAX_LOAD:-1.5}
WAIT_LOAD=${WAIT_LOAD:-600}
VENV=${VENV:-$ROOT/.venv-langchain}
TOKENIZER=${TOKENIZER:-$ROOT/models/all-MiniLM-L6-v2/tokenizer.json}
DATASETS=${DATASETS:-$ROOT/../shared/datasets}
BENCHMARKS=${BENCHMARKS:-$ROOT/BENCHMARKS.md}
OUT=${CARGO_TARGET_DIR:-$ROOT/target}/bench-chunkers
mkdir -p "$OUT"

if [ ! -f "$TOKENIZER" ]; then
    echo "error: $TOKENIZER not found; run \`chunkbench models fetch\` first" >&2
    exit 1
fi

# The Python peers of issue 40 beside LangChain (PyPI).
CHONKIE_VERSION=1.7.0
SEMCHUNK_VERSION=4.1.1
# The same pinned LangChain as the parity goldens (scripts/langchain_goldens.sh).
pin() { sed -n "s/^$1=\([^ #]*\).*/\1/p" "$ROOT/scripts/langchain_goldens.sh"; }
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "langchain-text-splitters==$(pin LANGCHAIN_TEXT_SPLITTERS_VERSION)" \
    "langchain-core==$(pin LANGCHAIN_CORE_VERSION)" \
    "tokenizers==$(pin TOKENIZERS_VERSION)" \
    "chonkie==$CHONKIE_VERSION" "semchunk==$SEMCHUNK_VERSION"
PY="$VENV/bin/python"
# Every tool single-threaded: the tokenizers library would otherwise encode batches (chonkie's
# TokenChunker) on a thread pool that thread CPU time does not see.
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1

echo "== corpus" >&2
"$PY" scripts/bench_chunkers.py corpus "$OUT/corpus.txt" --bytes "$BENCH_BYTES" \
    --data "$ROOT/data" --datasets "$DATASETS" >&2

echo "== build (cargo bench -p chunker --bench chunkers --no-run)" >&2
cargo bench -p chunker --bench chunkers --no-run

load1() { cut -d' ' -f1 /proc/loadavg; }
waited=0
while awk -v l="$(load1)" -v m="$MAX_LOAD" 'BEGIN { exit !(l >= m) }' && [ "$waited" -lt "$WAIT_LOAD" ]; do
    [ "$waited" -eq 0 ] && echo "== waiting up to ${WAIT_LOAD}s for load $(load1) < $MAX_LOAD" >&2
    sleep 15
    waited=$((waited + 15))
done
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== load average before: $LOAD_BEFORE" >&2

echo "== Rust: chunkbench fixed/recursive and text-splitter" >&2
cargo bench -p chunker --bench chunkers -- \
    --corpus "$OUT/corpus.txt" --tokenizer "$TOKENIZER" --json "$OUT/rust.jsonl" \
    --chars-size "$CHARS_SIZE" --tokens-size "$TOKENS_SIZE" \
    --reps-chars "$REPS_CHARS" --reps-tokens "$REPS_TOKENS" --reps-linear "$REPS_LINEAR" \
    --linear-mb "$LINEAR_MB" --linear-peer-mb "$LINEAR_PEER_MB" --skip-linear
echo "== Python: LangChain RecursiveCharacterTextSplitter" >&2
"$PY" scripts/bench_chunkers.py langchain "$OUT/corpus.txt" --tokenizer "$TOKENIZER" \
    --json "$OUT/python.jsonl" --chars-size "$CHARS_SIZE" --tokens-size "$TOKENS_SIZE" \
    --reps-chars "$REPS_CHARS" --reps-tokens "$REPS_TOKENS"
echo "== Python: chonkie and semchunk" >&2
"$PY" scripts/bench_chunkers.py peers "$OUT/corpus.txt" --tokenizer "$TOKENIZER" \
    --json "$OUT/python.jsonl" --chars-size "$CHARS_SIZE" --tokens-size "$TOKENS_SIZE" \
    --reps-chars "$REPS_CHARS" --reps-tokens "$REPS_TOKENS"
echo "== Rust: linear time on text without separators" >&2
cargo bench -p chunker --bench chunkers -- \
    --chars-size "$CHARS_SIZE" --json "$OUT/linear.jsonl" --reps-linear "$REPS_LINEAR" \
    --linear-mb "$LINEAR_MB" --linear-peer-mb "$LINEAR_PEER_MB" --skip-throughput
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== load average after: $LOAD_AFTER" >&2

cat "$OUT/rust.jsonl" "$OUT/linear.jsonl" >"$OUT/rust-all.jsonl"
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
TS_VERSION=$(awk '/^name = "text-splitter"$/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
"$PY" scripts/bench_chunkers.py report --rust "$OUT/rust-all.jsonl" \
    --python "$OUT/python.jsonl" --meta "$OUT/corpus.txt.meta.json" \
    --benchmarks "$BENCHMARKS" --machine "$(nproc) cores ($CPU), $(rustc --version)" \
    --load-before "$LOAD_BEFORE" --load-after "$LOAD_AFTER" \
    --text-splitter-version "${TS_VERSION:-?}"
echo "== wrote the ## Chunkers section of $BENCHMARKS; raw results in $OUT" >&2
