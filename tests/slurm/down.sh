#!/bin/bash
# tests/slurm/down.sh - stop exactly what up.sh started, by pid file (never by name).
# Order: cancel jobs; slurmd+slurmctld; slurmdbd; mariadbd+munged.
# Usage: down.sh [--purge]    --purge also deletes $LAB (all state)
set -uo pipefail
LAB=${SLURM_LAB_DIR:-/tmp/scimbridge-slurm}
export SLURM_CONF="$LAB/etc/slurm.conf"
rc=0

# stop PIDFILE EXPECTED_COMM [TIMEOUT]
stop() {
  local pf=$1 comm=$2 t=${3:-30} pid
  [ -s "$pf" ] || { echo "down: $comm: no pid file ($pf)"; return 0; }
  pid=$(cat "$pf")
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "down: $comm: pid $pid not running"; rm -f "$pf"; return 0
  fi
  # guard against a recycled pid: the process must be the daemon we expect
  if [ "$(cat /proc/"$pid"/comm 2>/dev/null)" != "$comm" ]; then
    echo "down: $comm: pid $pid is '$(cat /proc/"$pid"/comm 2>/dev/null)', not touching it"
    return 1
  fi
  local t0=$EPOCHREALTIME
  kill -TERM "$pid"
  local end=$(( $(date +%s) + t ))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$end" ]; then
      echo "down: $comm: pid $pid ignored TERM for ${t}s, sending KILL"
      kill -KILL "$pid" 2>/dev/null; sleep 0.5; break
    fi
    sleep 0.1
  done
  rm -f "$pf"
  echo "down: $comm (pid $pid) stopped in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1fs", b-a}')"
}

T0=$EPOCHREALTIME
# Cancel jobs first so slurmd can clean up its slurmstepd processes.
if [ -s "$LAB/run/slurmctld.pid" ] && kill -0 "$(cat "$LAB/run/slurmctld.pid")" 2>/dev/null; then
  if [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
    scancel --full $(squeue -h -o %i) 2>/dev/null
    end=$(( $(date +%s) + 20 ))
    while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 0.3; done
  fi
fi

# Each daemon needs ~1-2 s to exit after TERM, so independent ones stop in parallel.
# phase 1: slurmd, slurmctld   phase 2: slurmdbd   phase 3: mariadbd, munged
stop "$LAB/run/slurmd.pid"     slurmd     & p2=$!
stop "$LAB/run/slurmctld.pid"  slurmctld  & p3=$!
for p in $p2 $p3; do wait $p || rc=1; done
stop "$LAB/run/slurmdbd.pid"   slurmdbd || rc=1
stop "$LAB/run/mysqld/mariadbd.pid" mariadbd 60 & p1=$!
stop "$LAB/run/munge/munged.pid"    munged      & p2=$!
for p in $p1 $p2; do wait $p || rc=1; done

# Report (never kill) any slurmstepd still running after slurmd stopped.
for p in /proc/[0-9]*; do
  c=; read -r c < "$p/comm" 2>/dev/null; [ "$c" = slurmstepd ] || continue
  echo "down: WARNING leftover slurmstepd pid ${p#/proc/}: $(tr '\0' ' ' < "$p/cmdline")"; rc=1
done

if [ "${1:-}" = "--purge" ]; then rm -rf "$LAB"; echo "down: purged $LAB"; fi
echo "down: total $(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1fs", b-a}')"
exit $rc
