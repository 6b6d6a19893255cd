#!/bin/bash
# tests/slurm/up.sh - bring up a single-node Slurm 22.05 cluster WITH accounting
# (munged + MariaDB + slurmdbd + slurmctld + slurmd) from Debian 12 packages,
# without systemd, for the scimbridge Slurm tests. All state, config, logs,
# sockets and pid files live under $LAB (SLURM_LAB_DIR, default
# /tmp/scimbridge-slurm); nothing under /etc is written. Ports differ from
# Slurm's defaults so a real cluster on the host cannot clash.
#
# The tests run this under scim_ns (tests/lib.sh) so that slurmctld, slurmd
# and every slurmstepd resolve users only through libnss_scim.
# Adapted from the measured lab recipe in shared/notes/slurm.
#
# Needs (Debian 12): apt-get install -y --no-install-recommends \
#     slurmctld slurmd slurm-client slurmdbd munge mariadb-server
#
# Usage: up.sh [--fresh]     --fresh wipes $LAB first (must be down)
# Clients need:  export SLURM_CONF=$LAB/etc/slurm.conf   (or: . $LAB/env.sh)
set -euo pipefail

LAB=${SLURM_LAB_DIR:-/tmp/scimbridge-slurm}
CLUSTER=${SLURM_LAB_CLUSTER:-scimlab}
DB_PORT=${SLURM_LAB_DB_PORT:-13307}          # MariaDB, loopback only
CTLD_PORT=${SLURM_LAB_CTLD_PORT:-16817}
SLURMD_PORT=${SLURM_LAB_SLURMD_PORT:-16818}
DBD_PORT=${SLURM_LAB_DBD_PORT:-16819}
DB_PASS=${SLURM_LAB_DB_PASS:-slurmlabpw}
PLUGSTACK_EXTRA=${SLURM_LAB_PLUGSTACK:-}    # optional lines for plugstack.conf
GPUS=${SLURM_LAB_GPUS:-0}                   # fake GPUs (gres.conf Count=, no device files)
CPUS=${SLURM_LAB_CPUS:-}                    # CPUs the node claims (config_overrides), for jobs side by side
CONF_EXTRA=${SLURM_LAB_CONF_EXTRA:-}        # more slurm.conf lines (tiers: PreemptType=...)
CONF_DROP=${SLURM_LAB_CONF_DROP:-}          # regex of slurm.conf lines to leave out (lint tests)
# MariaDB gets the settings https://slurm.schedmd.com/accounting.html
# recommends for slurmdbd; SLURM_LAB_MARIADB_DEFAULTS=1 leaves MariaDB at
# its own defaults (the bench compares the two).
MARIADB_TUNING=(--innodb-buffer-pool-size=1G --innodb-log-file-size=64M --innodb-lock-wait-timeout=900)
[ "${SLURM_LAB_MARIADB_DEFAULTS:-}" != 1 ] || MARIADB_TUNING=()
NODE=$(hostname -s)

T0=$EPOCHREALTIME
log() { awk -v a="$T0" -v b="$EPOCHREALTIME" -v m="$*" 'BEGIN{printf "[up %6.2fs] %s\n", b-a, m}'; }
die() { echo "up.sh: $*" >&2; exit 1; }

# [WAIT_PID=PID] [WAIT_LOG=FILE] wait_for SECONDS DESCRIPTION CMD...: runs
# CMD until it succeeds, for at most SECONDS (generous: a 2-core machine
# running other suites starts daemons slowly). Gives up early if WAIT_PID
# (the daemon waited for) has exited; prints the end of WAIT_LOG on failure.
wait_for() {
  local t=$1 what=$2; shift 2
  local end=$(( $(date +%s) + t )) why
  until "$@" >/dev/null 2>&1; do
    why=
    [ "$(date +%s)" -lt "$end" ] || why="timeout (${t}s) waiting for $what"
    [ -z "${WAIT_PID:-}" ] || kill -0 "$WAIT_PID" 2>/dev/null || why="$what exited while starting"
    if [ -n "$why" ]; then
      [ -z "${WAIT_LOG:-}" ] || { echo "--- last lines of $WAIT_LOG:" >&2; tail -n 40 "$WAIT_LOG" >&2 2>/dev/null; }
      die "$why"
    fi
    sleep 0.2
  done
}
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

if [ "${1:-}" = "--fresh" ]; then
  for p in "$LAB"/run/*.pid "$LAB"/run/*/*.pid; do
    [ -e "$p" ] && alive "$p" && die "$p is alive; run down.sh first"
  done
  rm -rf "$LAB"
fi

# ---------------------------------------------------------------- dirs
install -d -m 0755 "$LAB" "$LAB/etc" "$LAB/run" "$LAB/log" "$LAB/spool" "$LAB/lib"
install -d -m 0700 "$LAB/spool/ctld"
# slurmd's spool is 0755, as slurmd makes it: a job of an ordinary user reads
# its batch script under it. install -d also chmods an existing directory, so
# a re-run (to restart one daemon) must set the same mode or every non-root
# batch job fails with "Permission denied".
install -d -m 0755 "$LAB/spool/d"
install -d -m 0755 -o munge -g munge "$LAB/run/munge"
install -d -m 0700 -o munge -g munge "$LAB/munge"
install -d -m 0755 -o mysql -g mysql "$LAB/run/mysqld"

# munged runs as user munge and jobs run as ordinary users: every parent of $LAB
# must be traversable by them (a checkout under /root, mode 0700, is not).
runuser -u nobody -- test -x "$LAB/etc" \
  || die "$LAB is not reachable by other users; use a path under /tmp or /var/tmp"

export SLURM_CONF="$LAB/etc/slurm.conf"
cat > "$LAB/env.sh" <<EOF
export SLURM_CONF=$LAB/etc/slurm.conf
EOF

# ---------------------------------------------------------------- munge
if [ ! -s "$LAB/munge/munge.key" ]; then
  mungekey --create --keyfile="$LAB/munge/munge.key"
  chown munge:munge "$LAB/munge/munge.key"; chmod 0600 "$LAB/munge/munge.key"
fi
MUNGE_SOCK="$LAB/run/munge/munge.socket.2"
if ! alive "$LAB/run/munge/munged.pid"; then
  runuser -u munge -- /usr/sbin/munged \
    --socket="$MUNGE_SOCK" --key-file="$LAB/munge/munge.key" \
    --pid-file="$LAB/run/munge/munged.pid" --log-file="$LAB/munge/munged.log" \
    --seed-file="$LAB/munge/munged.seed" --num-threads=10
fi
wait_for 10 munged sh -c "munge -n -S '$MUNGE_SOCK' | unmunge -S '$MUNGE_SOCK'"
log "munged up (pid $(cat "$LAB/run/munge/munged.pid"))"

# ---------------------------------------------------------------- MariaDB
MYSQL_SOCK="$LAB/run/mysqld/mysqld.sock"
if [ ! -d "$LAB/mysql/mysql" ]; then
  install -d -m 0750 -o mysql -g mysql "$LAB/mysql"
  mariadb-install-db --no-defaults --user=mysql --datadir="$LAB/mysql" \
    --auth-root-authentication-method=socket --skip-test-db \
    > "$LAB/log/mariadb-install-db.log" 2>&1 || { cat "$LAB/log/mariadb-install-db.log"; die "mariadb-install-db failed"; }
  log "MariaDB datadir initialized"
fi
MARIADB_PID=
if ! alive "$LAB/run/mysqld/mariadbd.pid"; then
  setsid /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$LAB/mysql" \
    --socket="$MYSQL_SOCK" --pid-file="$LAB/run/mysqld/mariadbd.pid" \
    --bind-address=127.0.0.1 --port="$DB_PORT" --skip-name-resolve \
    --log-error="$LAB/mysql/mariadbd.err" \
    ${MARIADB_TUNING[@]+"${MARIADB_TUNING[@]}"} \
    </dev/null >/dev/null 2>&1 &
  MARIADB_PID=$! # setsid execs mariadbd (a background job is no group leader)
  # down.sh stops mariadbd by its pid file; if up.sh fails or is
  # interrupted before mariadbd wrote it, stop it here by its PID.
  trap '[ -s "$LAB/run/mysqld/mariadbd.pid" ] || kill "$MARIADB_PID" 2>/dev/null || true' EXIT
fi
MYSQL=(mariadb --no-defaults --socket="$MYSQL_SOCK" -uroot)
# Creating InnoDB's files under load has taken over 60 s.
WAIT_PID=$MARIADB_PID WAIT_LOG=$LAB/mysql/mariadbd.err wait_for 120 MariaDB "${MYSQL[@]}" -e 'select 1'
wait_for 10 "MariaDB pid file" test -s "$LAB/run/mysqld/mariadbd.pid"
"${MYSQL[@]}" <<EOF
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
log "MariaDB up (pid $(cat "$LAB/run/mysqld/mariadbd.pid"), 127.0.0.1:$DB_PORT)"

# ---------------------------------------------------------------- configs
# Real CPU/memory of this host, as slurmd sees them.
NODE_HW=$(slurmd -C | head -1 | sed -e 's/^NodeName=[^ ]* //')
NODE_EXTRA=
if [ -n "$CPUS" ]; then
  # slurmd takes the node line's word over the hardware (config_overrides).
  NODE_HW=$(sed -E "s/CPUs=[0-9]+/CPUs=$CPUS/; s/Boards=[0-9]+ //; s/SocketsPerBoard=[0-9]+/SocketsPerBoard=1/; s/CoresPerSocket=[0-9]+/CoresPerSocket=$CPUS/; s/ThreadsPerCore=[0-9]+/ThreadsPerCore=1/" <<<"$NODE_HW")
  CONF_EXTRA="SlurmdParameters=config_overrides
$CONF_EXTRA"
fi
if [ "$GPUS" -gt 0 ]; then
  NODE_EXTRA="Gres=gpu:$GPUS"
  # slurmd drops a GPU without File= ("Removing file-less GPU") and wants a
  # character device there: nodes like /dev/null's stand in (task/none
  # binds nothing).
  install -d -m 0755 "$LAB/dev"
  for i in $(seq 0 $((GPUS - 1))); do
    [ -c "$LAB/dev/gpu$i" ] || mknod -m 0666 "$LAB/dev/gpu$i" c 1 3
  done
  echo "NodeName=$NODE Name=gpu File=$LAB/dev/gpu[0-$((GPUS - 1))]" > "$LAB/etc/gres.conf"
else
  : > "$LAB/etc/gres.conf"
fi
chmod 0644 "$LAB/etc/gres.conf"

cat > "$LAB/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$LAB/log/slurmdbd.log
PidFile=$LAB/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
chmod 0600 "$LAB/etc/slurmdbd.conf"

cat > "$LAB/etc/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
StateSaveLocation=$LAB/spool/ctld
SlurmdSpoolDir=$LAB/spool/d
SlurmctldPidFile=$LAB/run/slurmctld.pid
SlurmdPidFile=$LAB/run/slurmd.pid
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmdLogFile=$LAB/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=300
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# For the slurmdbd connection the munge socket is taken from here, not AuthInfo
AccountingStoragePass=$MUNGE_SOCK
AccountingStorageEnforce=associations,limits,qos
# gres/gpu is tracked so account limits such as GrpTRES=gres/gpu=16 are valid.
AccountingStorageTRES=gres/gpu
GresTypes=gpu
JobCompType=jobcomp/none
MailProg=/bin/true
PlugStackConfig=$LAB/etc/plugstack.conf
$CONF_EXTRA
NodeName=$NODE NodeAddr=127.0.0.1 $NODE_HW $NODE_EXTRA State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
if [ -n "$CONF_DROP" ]; then
  grep -vE "$CONF_DROP" "$LAB/etc/slurm.conf" > "$LAB/etc/slurm.conf.new" || true
  mv "$LAB/etc/slurm.conf.new" "$LAB/etc/slurm.conf"
fi
chmod 0644 "$LAB/etc/slurm.conf"

{ echo "# SPANK plugins: required|optional /path/plugin.so [args]"
  [ -n "$PLUGSTACK_EXTRA" ] && printf '%s\n' "$PLUGSTACK_EXTRA"
  [ -f "$LAB/etc/plugstack.local" ] && cat "$LAB/etc/plugstack.local"
  true; } > "$LAB/etc/plugstack.conf"
chmod 0644 "$LAB/etc/plugstack.conf"

# ---------------------------------------------------------------- slurmdbd
if ! alive "$LAB/run/slurmdbd.pid"; then
  /usr/sbin/slurmdbd
fi
WAIT_LOG=$LAB/log/slurmdbd.log wait_for 120 slurmdbd sacctmgr -n show cluster
log "slurmdbd up (pid $(cat "$LAB/run/slurmdbd.pid"))"

# Cluster must exist in the DB before slurmctld registers (enforce=associations).
if [ -z "$(sacctmgr -nP show cluster where name="$CLUSTER" format=cluster)" ]; then
  sacctmgr -i add cluster "$CLUSTER" >/dev/null
  log "cluster $CLUSTER added to slurmdbd"
fi

# ---------------------------------------------------------------- slurmctld / slurmd
if ! alive "$LAB/run/slurmctld.pid"; then
  /usr/sbin/slurmctld
fi
WAIT_LOG=$LAB/log/slurmctld.log wait_for 90 slurmctld scontrol ping
log "slurmctld up (pid $(cat "$LAB/run/slurmctld.pid"))"

if ! alive "$LAB/run/slurmd.pid"; then
  /usr/sbin/slurmd
fi
node_idle() { [ "$(sinfo -h -n "$NODE" -o %T 2>/dev/null)" = idle ]; }
WAIT_LOG=$LAB/log/slurmd.log wait_for 90 "node $NODE idle" node_idle
log "slurmd up (pid $(cat "$LAB/run/slurmd.pid")); sinfo:"
sinfo
log "ready. export SLURM_CONF=$SLURM_CONF"
