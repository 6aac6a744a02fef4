#!/usr/bin/env bash
# Spread a sweep over a Slurm job array: one shard per array task, then merge.
#   sbatch --array=1-8 scripts/slurm-array.sh configs/chunk-size.yaml
#   (after all tasks finish)  chunkbench merge results/runs/chunk-size results/shards/*/chunk-size
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
set -euo pipefail
config=${1:?usage: sbatch --array=1-N scripts/slurm-array.sh CONFIG}
n=${SLURM_ARRAY_TASK_COUNT:?run as a Slurm array job}
i=${SLURM_ARRAY_TASK_ID:?run as a Slurm array job}
exec target/release/chunkbench run "$config" --shard "$i/$n" --output "results/shards/$i"
