#!/usr/bin/env bash
# Spread a sweep over a Slurm job array: one shard per array task, then a merge job that
# starts when every task has succeeded (--dependency=afterok). Tasks are requeueable: a task
# killed mid-way and requeued (`scontrol requeue JOB_TASK`, preemption, a node failure) starts
# again and resumes from the cells it had finished, so the merged run is the same bytes.
#
#   scripts/slurm-array.sh submit CONFIG N OUTDIR [RUN ARGS...]
#       submits the array (tasks 1..N) and the merge job; prints `array JOBID` and
#       `merge JOBID`. Shard I writes OUTDIR/shards/I/NAME; the merge writes OUTDIR/merged
#       (summary.csv, per_question.csv, report.html, ... as `chunkbench run` would).
#       RUN ARGS go to every `chunkbench run` (e.g. --set embedder.cache=DIR --store DIR).
#   SBATCH_ARGS="--partition=cpu --time=2:00:00" scripts/slurm-array.sh submit ...
#
# The tasks run $CHUNKBENCH_BIN (default: target/release/chunkbench) in the submit
# directory; sbatch passes the environment on (CHUNKBENCH_STORE, CHUNKBENCH_BIN, ...).
# Logs: OUTDIR/logs/task-JOB_I.log (appended across restarts) and OUTDIR/logs/merge-JOB.log.
# Every task writes the same embedding and response caches (one SQLite database each, safe
# for concurrent writers on one host; on a network file system the databases switch to
# SQLite's rollback journal, see README "Caches").
set -euo pipefail

bin=${CHUNKBENCH_BIN:-target/release/chunkbench}

case "${1:-}" in
  submit)
    config=${2:?usage: scripts/slurm-array.sh submit CONFIG N OUTDIR [RUN ARGS...]}
    n=${3:?usage: scripts/slurm-array.sh submit CONFIG N OUTDIR [RUN ARGS...]}
    out=${4:?usage: scripts/slurm-array.sh submit CONFIG N OUTDIR [RUN ARGS...]}
    shift 4
    [ -f "$config" ] || { echo "scripts/slurm-array.sh: no config $config" >&2; exit 2; }
    [ -x "$bin" ] || { echo "scripts/slurm-array.sh: no chunkbench binary at $bin (cargo build --release, or set CHUNKBENCH_BIN)" >&2; exit 2; }
    mkdir -p "$out/logs"
    self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    # shellcheck disable=SC2086
    array=$(sbatch --parsable --array="1-$n" --requeue --cpus-per-task="${CPUS_PER_TASK:-1}" \
      --open-mode=append --output="$out/logs/task-%A_%a.log" --job-name=chunkbench-shard \
      ${SBATCH_ARGS:-} "$self" task "$config" "$out" "$@")
    array=${array%%;*}
    # shellcheck disable=SC2086
    merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
      --cpus-per-task=1 --output="$out/logs/merge-%j.log" --job-name=chunkbench-merge \
      ${SBATCH_ARGS:-} "$self" merge "$config" "$out" "$n" "$@")
    merge=${merge%%;*}
    echo "array $array"
    echo "merge $merge"
    ;;
  task)
    config=$2 out=$3
    shift 3
    i=${SLURM_ARRAY_TASK_ID:?run as a Slurm array task}
    n=${SLURM_ARRAY_TASK_COUNT:?run as a Slurm array task}
    echo "task $i/$n of job ${SLURM_ARRAY_JOB_ID:-?} on $(hostname -s), restart ${SLURM_RESTART_COUNT:-0}, $(date -u +%FT%TZ)"
    exec "$bin" run "$config" --shard "$i/$n" --output "$out/shards/$i" "$@"
    ;;
  merge)
    config=$2 out=$3 n=$4
    shift 4
    name=$(sed -n 's/^name:[[:space:]]*\([^#[:space:]]*\).*/\1/p' "$config" | head -1)
    [ -n "$name" ] || { echo "scripts/slurm-array.sh: no top-level name: in $config" >&2; exit 2; }
    store=()
    # The merge reads question and passage texts from the store the tasks used.
    while [ $# -gt 0 ]; do
      case "$1" in
        --store) store=(--store "$2"); shift 2 ;;
        --store=*) store=("$1"); shift ;;
        *) shift ;;
      esac
    done
    shards=()
    for i in $(seq 1 "$n"); do shards+=("$out/shards/$i/$name"); done
    echo "merge of $n shards of $name, $(date -u +%FT%TZ)"
    exec "$bin" merge "$out/merged" "${shards[@]}" "${store[@]}"
    ;;
  *)
    echo "usage: scripts/slurm-array.sh submit CONFIG N OUTDIR [RUN ARGS...]" >&2
    exit 2
    ;;
esac
