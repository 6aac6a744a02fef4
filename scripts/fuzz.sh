#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ (issue 36): the config loader, `data import` tables, the
# reply parser, the command-chunker output parser and every chunker's offset invariants; and
# (issue 56) the model replies of `data generate`, Chroma's and LumberChunker's protocols.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET ...]     (default 600 s, every target)
#
# Each target starts from the committed seeds (fuzz/seeds/TARGET, inputs taken from the tests)
# and grows its own corpus in fuzz/corpus/TARGET (git-ignored); a crash is written to
# fuzz/artifacts/TARGET/ and stops that target. The summary (executions, corpus, crashes per
# target) is printed at the end and written to fuzz/summary.txt (or $FUZZ_SUMMARY, so two
# invocations with different targets can run side by side on two cores). Not part of CI.
#
# The stable toolchain builds libFuzzer's instrumentation with RUSTC_BOOTSTRAP=1; no sanitizer
# (the crates forbid unsafe code: a panic is the failure looked for). cargo-fuzz is installed
# from crates.io when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config import_table reply_parser chunk_lines chunkers model_replies)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
# The chunkers target uses MiniLM's tokenizer from models/ (`chunkbench models fetch`) for
# max-min, and skips max-min without it; the import target writes into temporary directories
# only.
(cd fuzz && cargo fuzz build -s none -O)
summary="${FUZZ_SUMMARY:-fuzz/summary.txt}"
: > "$summary"
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log="fuzz/corpus/$t.log"
  set +e
  (cd fuzz && cargo fuzz run -s none -O "$t" "corpus/$t" "seeds/$t" -- \
      -max_total_time="$secs" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 \
      -artifact_prefix="artifacts/$t/") >"$log" 2>&1
  status=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  crashes=$(find "fuzz/artifacts/$t" -type f | wc -l)
  corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
  line="$t: ${secs} s, ${execs:-?} executions, corpus ${corpus} inputs, ${crashes} crash files, exit ${status}"
  echo "$line" | tee -a "$summary"
  if [ "$status" -ne 0 ]; then
    echo "  see $log and fuzz/artifacts/$t/" | tee -a "$summary"
  fi
done
