#!/usr/bin/env bash
# Real-data A/A check of the verdict and the gate (issue 55; docs/reference.md §5 "The verdict",
# "Calibration"): SciQ validation (1000 questions, 887 support paragraphs), chunked by
# scripts/aa/random_offset.py — fixed 80-word chunks after a random offset seeded per document —
# with five seeds per family: a baseline and four candidates that differ from it only by chance.
# Each family is run twice, retrieval-only (`kind: none`: primary recall@k) and with the lexical
# reader (primary accuracy), BM25 top-1 and top-3: a Holm family of 8 comparisons each time.
# Any significant verdict (Holm p < α) is a false one; so is any "inferior". The gate is checked
# on consecutive families: `chunkbench compare` of family f (baseline) against family f + 1
# (candidate; the same strategy names, other seeds) must pass.
#
#   scripts/aa-verdicts.sh            # 100 families (≈ 25 min with a release build on 2 cores)
#   FAMILIES=20 scripts/aa-verdicts.sh
# Env: CHUNKBENCH_BIN (default target/release/chunkbench, built when missing); the SciQ data must
#   be fetched (`chunkbench data fetch`). Writes results/calibration/aa.md.
set -euo pipefail
cd "$(dirname "$0")/.."
FAMILIES="${FAMILIES:-100}"
bin="${CHUNKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/release/chunkbench}"
if [ ! -x "$bin" ]; then
  cargo build --release --workspace
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
out=results/calibration/aa.md
mkdir -p "$(dirname "$out")"

config() { # family reader_name reader_kind
  local f="$1" name="$2" kind="$3"
  echo "name: aa-$name-$f"
  echo "datasets: [sciq]"
  echo "strategies:"
  for j in 0 1 2 3 4; do
    local s=$((f * 5 + j))
    # The same names in every family, so `compare` pairs family f with f + 1 by coordinates.
    echo "  offset-$j: {kind: command, command: [python3, scripts/aa/random_offset.py, --seed, \"$s\"], version: \"1\", files: [scripts/aa/random_offset.py]}"
  done
  echo "retrievers:"
  echo "  bm25: {kind: bm25, query: question+options}"
  echo "k: [1, 3]"
  echo "readers:"
  echo "  $name: {kind: $kind}"
  echo "baseline: offset-0"
  echo "cost_tokenizer: null"
  echo "output: $work/runs"
}

tally="$work/tally.tsv"
: > "$tally"
start=$(date +%s)
for f in $(seq 1 "$FAMILIES"); do
  for mode in retrieval lexical; do
    kind=none
    [ "$mode" = lexical ] && kind=lexical
    config "$f" "$mode" "$kind" > "$work/aa-$mode-$f.yaml"
    "$bin" run "$work/aa-$mode-$f.yaml" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 2; }
    csv="$work/runs/aa-$mode-$f/summary.csv"
    python3 - "$csv" "$mode" "$f" >> "$tally" <<'PY'
import csv, sys
path, mode, fam = sys.argv[1:]
rows = [r for r in csv.DictReader(open(path)) if r["verdict"]]
sig = any(float(r["primary_holm_p"]) < 0.05 for r in rows)
inferior = any(r["verdict"] == "inferior" for r in rows)
covered = all(float(r["primary_sim_ci_low_pts"]) <= 0.0 <= float(r["primary_sim_ci_high_pts"]) for r in rows)
unsettled = sum(r["p_settled"] == "0" for r in rows)
print(f"{mode}\t{fam}\t{int(sig)}\t{int(inferior)}\t{int(covered)}\t{len(rows)}\t{unsettled}\t{rows[0]['resample']}")
PY
    if [ "$f" -gt 1 ]; then
      set +e
      "$bin" compare "$work/runs/aa-$mode-$((f - 1))" "$work/runs/aa-$mode-$f" \
        --output "$work" >/dev/null 2>"$work/err"
      status=$?
      set -e
      [ "$status" -le 1 ] || { cat "$work/err" >&2; exit 2; }
      # Which criterion failed the gate: the primary metric's (a significant drop beyond the
      # tolerance) or the words retrieved (a cost tolerance, no test).
      why=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); j=[c["judgement"] for c in r["cells"]]; print(int(any(x["accuracy"] for x in j)), int(any(x["words"] for x in j)))' "$work/compare.json")
      printf 'gate-%s\t%d\t%d\t%s\n' "$mode" "$f" "$status" "${why// /$'\t'}" >> "$tally"
    fi
  done
  echo "family $f of $FAMILIES done ($(( $(date +%s) - start )) s)" >&2
done

python3 - "$tally" "$FAMILIES" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(( $(date +%s) - start ))" > "$work/aa.md" <<'PY'
import math, sys
path, families, commit, secs = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(path)]
def wilson(k, n, z=1.959964):
    if n == 0:
        return "–"
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z / d * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return f"{100 * k / n:.1f} % [{100 * max(0, c - h):.1f}, {100 * min(1, c + h):.1f}]"
print("# A/A check of the verdict on real data")
print()
print(f"Written by `scripts/aa-verdicts.sh` ({commit}; {families} families, {secs} s). SciQ validation, "
      "1000 questions; five chunkers per family that differ only by the seed of a random offset "
      "(scripts/aa/random_offset.py: fixed 80-word chunks after an offset drawn per document); BM25 "
      "top-1 and top-3; a Holm family of 8 comparisons per run, α = 0.05. Rates with Wilson 95 % "
      "intervals.")
print()
print("| run | families | any Holm p < α (family-wise error) | any \"inferior\" | all 8 simultaneous intervals hold 0 | resampled by | unsettled p |")
print("|---|---:|---:|---:|---:|---|---:|")
for mode, label in [("retrieval", "retrieval-only (recall@k primary)"), ("lexical", "lexical reader (accuracy primary)")]:
    rs = [r for r in rows if r[0] == mode]
    n = len(rs)
    print(f"| {label} | {n} | {wilson(sum(int(r[2]) for r in rs), n)} | {wilson(sum(int(r[3]) for r in rs), n)} | "
          f"{wilson(sum(int(r[4]) for r in rs), n)} | {', '.join(sorted(set(r[7] for r in rs)))} | {sum(int(r[6]) for r in rs)} |")
print()
print("The gate, `chunkbench compare` of family f (baseline) against family f + 1 (candidate: the same "
      "strategy names with other seeds), default tolerances (a drop of more than 1 point with Holm p < α, "
      "or 5 % more words):")
print()
print("| run | comparisons | false alarms (exit 1) | by the primary metric (a significant drop) | by words retrieved (+5 %, a cost tolerance) |")
print("|---|---:|---:|---:|---:|")
for mode in ["retrieval", "lexical"]:
    rs = [r for r in rows if r[0] == f"gate-{mode}"]
    n = len(rs)
    print(f"| {mode} | {n} | {wilson(sum(r[2] == '1' for r in rs), n)} | "
          f"{wilson(sum(r[3] == '1' for r in rs), n)} | {wilson(sum(r[4] == '1' for r in rs), n)} |")
PY
mv "$work/aa.md" "$out"
cat "$out"
