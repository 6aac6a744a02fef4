#!/usr/bin/env bash
# A real single-node Slurm on this machine, for the Slurm tests and for trying
# scripts/slurm-array.sh without a cluster: munged, slurmctld and slurmd from Debian's
# `slurm-wlm` and `munge` packages, all running as root, no cgroups (proctrack/linuxproc,
# task/none), no accounting database. One node (this host) with all its CPUs, one partition.
#
#   scripts/slurm-local.sh start     # install the packages if missing (root + apt), write the
#                                    # config, start the daemons, wait until the node is idle
#   scripts/slurm-local.sh env       # print `export SLURM_CONF=...` for the client commands
#   scripts/slurm-local.sh stop
#
# State, spool, logs and slurm.conf live in $SLURM_LOCAL_DIR (default
# /tmp/chunkbench-slurm). Idempotent: `start` on a cluster running this script's configuration
# only checks it; with another configuration it restarts the daemons.
set -euo pipefail
dir=${SLURM_LOCAL_DIR:-/tmp/chunkbench-slurm}
conf="$dir/slurm.conf"
host=$(hostname -s)

die() { echo "scripts/slurm-local.sh: $*" >&2; exit 2; }

install_packages() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
    && command -v sbatch >/dev/null && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    die "Slurm is not installed: install Debian's slurm-wlm and munge (as root, with apt) first"
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends slurm-wlm munge >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends slurm-wlm munge >/dev/null; }
}

running() {
  [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null \
    && [ -f "$dir/slurmd.pid" ] && kill -0 "$(cat "$dir/slurmd.pid")" 2>/dev/null
}

write_conf() {
  local cpus mem
  cpus=$(nproc)
  # Leave 1 GiB to the system; Slurm wants MB.
  mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 - 1024 }' /proc/meminfo)
  mkdir -p "$dir/state" "$dir/spool"
  cat > "$conf.new" <<EOF
# Written by scripts/slurm-local.sh: one node, no cgroups, no accounting.
ClusterName=chunkbench
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# A requeued job may start again only after its old credential expires (default 120 s):
# short, so that the requeue test does not sit idle.
AuthInfo=cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=${SLURM_LOCAL_CTLD_PORT:-6817}
SlurmdPort=${SLURM_LOCAL_SLURMD_PORT:-6818}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobRequeue=1
# Seconds between scheduling passes and the wait before a killed task's node is reused: short,
# so that the tests do not sit idle.
SchedulerParameters=sched_interval=2
MinJobAge=600
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  install_packages
  export SLURM_CONF="$conf"
  mkdir -p "$dir"
  write_conf
  # Already running with this very configuration: nothing to do.
  if running && cmp -s "$conf.new" "$conf" && scontrol ping >/dev/null 2>&1; then
    rm -f "$conf.new"
    echo "slurm: already running ($conf)"
    return 0
  fi
  mv "$conf.new" "$conf"
  # munge: the key the package made (or a new one), the default socket the Slurm plugins use.
  if ! pgrep -x munged >/dev/null; then
    [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; }
    chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge 2>/dev/null || true
    mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
    chmod 0400 /etc/munge/munge.key
    if id munge >/dev/null 2>&1; then
      su -s /bin/sh munge -c munged 2>/dev/null || munged --force
    else
      munged --force
    fi
  fi
  munge -n | unmunge >/dev/null || die "munge does not work (see /var/log/munge/munged.log)"
  # Fresh state: a cluster from an earlier session must not replay its jobs.
  pkill -x slurmctld 2>/dev/null || true
  pkill -x slurmd 2>/dev/null || true
  sleep 1
  rm -rf "$dir/state" "$dir/spool"
  mkdir -p "$dir/state" "$dir/spool"
  slurmctld -i -f "$conf"
  slurmd -f "$conf"
  for _ in $(seq 1 60); do
    if scontrol ping >/dev/null 2>&1 && sinfo -h -o %T 2>/dev/null | grep -qx idle; then
      echo "slurm: running ($conf); node $host idle with $(nproc) CPUs"
      return 0
    fi
    sleep 1
  done
  echo "--- slurmctld.log" >&2; tail -20 "$dir/slurmctld.log" >&2 || true
  echo "--- slurmd.log" >&2; tail -20 "$dir/slurmd.log" >&2 || true
  die "the node did not come up within 60 s (logs above)"
}

stop() {
  pkill -x slurmd 2>/dev/null || true
  pkill -x slurmctld 2>/dev/null || true
  echo "slurm: stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) die "usage: scripts/slurm-local.sh start | stop | env" ;;
esac
