#!/usr/bin/env bash
# Checks that a code change leaves every committed output byte-identical (issue 15's rule for
# refactors): the committed baselines and EAR summaries are re-run and compared with the files
# in results/, and the full quickstart sweep, the EAR lexical sweep and a `limit`ed run of every
# committed config are hashed and compared with results/identity/limited-runs.sha256.
#
# Usage: scripts/check-identical.sh check|record [LIMIT]
#   check   (default) runs everything and fails, listing the files, when an output differs.
#   record  rewrites results/identity/limited-runs.sha256 from this code's outputs (do this
#           only for a change that is meant to change results, and say so in the commit).
#   LIMIT   questions per dataset in the limited runs (default 8; the hashes are for 8).
# Env: CHUNKBENCH_BIN (default: $CARGO_TARGET_DIR/debug/chunkbench, else target/debug/...).
# Needs `chunkbench data fetch` (with the OpenStax mirror) and `chunkbench models fetch`.
# Run files hashed: per_question.csv, summary.csv, summary.md, chunk_stats.csv, cells/*.csv,
# trec/*.run, explain/*.jsonl and plots/*.svg (manifest.json holds timings and paths).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-check}"
limit="${2:-8}"
bin="${CHUNKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/debug/chunkbench}"
[ -x "$bin" ] || { echo "check-identical: no binary at $bin (cargo build -p chunkbench)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail=0
# 1. The full quickstart sweep (what scripts/update-baseline.sh commits as the gate's
#    baseline; the committed baseline itself may predate columns the rows gained, which
#    compare ignores, so its cells are hashed here rather than compared with it).
"$bin" run configs/quickstart.yaml --output "$out/runs" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 2; }
# 2. The committed EAR textbook summaries (lexical reader, the 153-question sample, margin 3).
"$bin" run configs/ear.yaml --set 'readers={lexical: {kind: lexical}}' --set name=ear-lexical \
  --set margin=3 --output "$out/runs" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 2; }
for f in summary.md summary.csv chunk_stats.csv; do
  cmp -s "results/ear/lexical-153/$f" "$out/runs/ear-lexical/$f" || { echo "differs: results/ear/lexical-153/$f" >&2; fail=1; }
done
# 3. A limited run of every committed config. bhat.yaml reads sciq-long, stitched from
# sciq-retrieval (deterministic, seconds).
"$bin" data stitch sciq-long --from sciq-retrieval --min-chars 50000 --unique-answers --force \
  >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 2; }
for cfg in configs/*.yaml; do
  # user-retrieval.yaml reads a store that scripts/equal-budget-studies.sh builds.
  [ "$cfg" = configs/user-retrieval.yaml ] && continue
  "$bin" run "$cfg" --set "limit=$limit" --set "name=limited-$(basename "$cfg" .yaml)" --output "$out/runs" >/dev/null 2>"$out/log" || { echo "$cfg failed:" >&2; cat "$out/log" >&2; exit 2; }
done
(cd "$out/runs" && find . -type f \( -name per_question.csv -o -name summary.csv -o -name summary.md \
  -o -name chunk_stats.csv -o -path '*/cells/*.csv' -o -path '*/trec/*' -o -path '*/explain/*' -o -path '*/plots/*.svg' \) \
  | LC_ALL=C sort | xargs sha256sum) > "$out/limited.sha256"
want=results/identity/limited-runs.sha256
if [ "$mode" = record ]; then
  cp "$out/limited.sha256" "$want"
  echo "check-identical: recorded $(wc -l < "$want") hashes in $want (limit $limit)" >&2
else
  if ! diff <(cat "$want") "$out/limited.sha256" >"$out/diff"; then
    echo "differs: limited runs (< committed, > this code):" >&2
    cat "$out/diff" >&2
    fail=1
  else
    echo "check-identical: $(wc -l < "$want") run files byte-identical to $want" >&2
  fi
fi
[ "$fail" = 0 ] && echo "check-identical: all outputs byte-identical" >&2
exit "$fail"
