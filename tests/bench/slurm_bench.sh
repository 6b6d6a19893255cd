#!/usr/bin/env bash
# tests/bench/slurm_bench.sh: provisioning 5,000 SCIM users into 200 Slurm
# accounts on a real Slurm 22.05 + slurmdbd (tests/slurm/up.sh), through the
# real pipeline (scim-testserver -> syncd sync --once -> syncd slurm apply).
# Measures wall time, sacctmgr invocations and the CPU time slurmdbd and
# MariaDB, slurmctld (which gets every association change from slurmdbd)
# and syncd with its sacctmgr runs spent, of: the first apply, a no-op
# apply, one user moved to another group, a churn pass (100 users change
# group). Side by side, in the same run: the same passes with the
# previous path (syncd built from PREV_REF, default d0da116: before issue
# 21's third session) on a lab of its own, fresh like this one; the first
# apply with MariaDB at its own defaults instead of the settings the Slurm
# docs recommend; the floor (the first apply's accounts and associations
# in one `sacctmgr -i load` on a fresh lab: what slurmdbd costs whatever
# syncd does); and, for scale, the per-user way (one `sacctmgr add user`
# per user) on a sample.
#
# The labs use their own ports (SLURM_LAB_*_PORT below), so the shared lab
# at /tmp/scimbridge-slurm may run meanwhile.
# Markdown on stdout, progress on stderr; exit 77 when Slurm is missing.
# Env: USERS (5000), ACCOUNTS (200), NAIVE_SAMPLE (20), PREV_REF (d0da116;
# empty: no previous-path rows), PREV_SYNCD (a built binary instead),
# QUICK=1 (this path's passes only, on stderr: for trying changes).
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/lib.sh"
USERS=${USERS:-5000} ACCOUNTS=${ACCOUNTS:-200} NAIVE_SAMPLE=${NAIVE_SAMPLE:-20}
PREV_REF=${PREV_REF-d0da116}
export SLURM_LAB_DB_PORT=${SLURM_LAB_DB_PORT:-13417} SLURM_LAB_CTLD_PORT=${SLURM_LAB_CTLD_PORT:-16917}
export SLURM_LAB_SLURMD_PORT=${SLURM_LAB_SLURMD_PORT:-16918} SLURM_LAB_DBD_PORT=${SLURM_LAB_DBD_PORT:-16919}

for c in slurmctld slurmd slurmdbd sacctmgr mariadbd munged; do
  command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] || { echo "slurm bench skipped: $c not installed (make deps)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "slurm bench skipped: needs root"; exit 77; }
for b in syncd scim-testserver libnss_scim.so.2; do
  [ -f "$BUILD/$b" ] || { echo "slurm bench: missing $BUILD/$b (make all)" >&2; exit 1; }
done

T=$(mktemp -d /tmp/scimbridge-slurm-bench.XXXXXX)
chmod 0755 "$T"
export SLURM_LAB_DIR=$T/lab SLURM_LAB_CLUSTER=bench SLURM_CONF=$T/lab/etc/slurm.conf
ST=$T/stage
SCIM_PID= LAB_UP=
lab_down() {
  [ -n "$LAB_UP" ] || return 0
  scim_ns "$ST" "$ROOT/tests/slurm/down.sh" --purge > "$T/down.log" 2>&1 || cat "$T/down.log" >&2
  LAB_UP=
}
scim_down() { [ -z "$SCIM_PID" ] || { kill "$SCIM_PID" 2>/dev/null; wait "$SCIM_PID" 2>/dev/null; }; SCIM_PID=; }
cleanup() {
  lab_down; scim_down
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
log() { echo "slurm bench: $*" >&2; }
die() { log "$*"; exit 1; }
now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }

# The previous path's syncd, built from PREV_REF.
PREV=${PREV_SYNCD:-}
if [ -z "$PREV" ] && [ -n "$PREV_REF" ]; then
  log "building syncd at $PREV_REF (the previous path)"
  mkdir -p "$T/prev-src"
  if git -C "$ROOT" archive "$PREV_REF" | tar -x -C "$T/prev-src" &&
     (cd "$T/prev-src" && nice go build -tags=libsqlite3 -o "$T/prev-syncd" ./syncd) > "$T/prev-build.log" 2>&1; then
    PREV=$T/prev-syncd
  else
    tail -5 "$T/prev-build.log" >&2; die "could not build syncd at $PREV_REF (PREV_REF= leaves the previous path out)"
  fi
fi

# The directory: USERS users, ACCOUNTS groups hpc-pNN, users dealt round-robin.
python3 - "$USERS" "$ACCOUNTS" > "$T/fixture.json" <<'EOF'
import json, sys
n, g = int(sys.argv[1]), int(sys.argv[2])
users = [{"id": "b%07d" % i, "userName": "bu%05d" % i, "active": True,
          "posix": {"uidNumber": 50000 + i, "gidNumber": 49999, "homeDirectory": "/home/bu%05d" % i,
                    "loginShell": "/bin/bash", "gecos": ""}} for i in range(1, n + 1)]
groups = [{"id": "g0", "displayName": "bench-users", "gidNumber": 49999, "members": [u["userName"] for u in users]}]
for j in range(1, g + 1):
    groups.append({"id": "g%d" % j, "displayName": "hpc-p%02d" % j, "gidNumber": 49999 - j,
                   "members": [u["userName"] for k, u in enumerate(users) if k % g == j - 1]})
json.dump({"users": users, "groups": groups}, sys.stdout)
EOF
# Churn: 100 users move from their group to the next one.
python3 - "$USERS" "$ACCOUNTS" > "$T/churn.sh" <<'EOF'
import sys
n, g = int(sys.argv[1]), int(sys.argv[2])
for i in range(101, min(n, 200) + 1):  # bu00001 moved already
    j = (i - 1) % g + 1
    k = j % g + 1
    print('admin POST groups/hpc-p%02d/members \'{"remove":["bu%05d"]}\'' % (j, i))
    print('admin POST groups/hpc-p%02d/members \'{"add":["bu%05d"]}\'' % (k, i))
EOF
head -c 24 /dev/urandom | base64 > "$T/token"; chmod 0600 "$T/token"

# dbcpu: CPU seconds slurmdbd and mariadbd have used so far; ctldcpu:
# slurmctld's (slurmdbd sends it every association change, and it
# rebuilds its association tree).
cpu_of() { awk '{s += $14 + $15} END {printf "%.2f", s / 100}' "$@"; }
dbcpu() { cpu_of "/proc/$(cat "$SLURM_LAB_DIR/run/slurmdbd.pid")/stat" "/proc/$(cat "$SLURM_LAB_DIR/run/mysqld/mariadbd.pid")/stat"; }
ctldcpu() { cpu_of "/proc/$(cat "$SLURM_LAB_DIR/run/slurmctld.pid")/stat"; }
delta() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
admin() { curl -fsS -m 5 -X "$1" -H 'Content-Type: application/json' --data "$3" "$ADMIN/$2" >/dev/null; }
assocs() { sacctmgr -nP show assoc where cluster=bench format=account,user | awk -F'|' '$2 != "" && $1 != "root"' | wc -l; }
accounts_of() { sacctmgr -nP show assoc where cluster=bench user="$1" format=account | grep '^p' | paste -sd,; }

# fresh NAME [lab-only]: a fresh lab, SCIM server and snapshot for one path.
fresh() {
  local d=$T/$1 t
  lab_down; scim_down
  mkdir -p "$d/cache"; chmod 0755 "$d" "$d/cache"
  CACHE=$d/cache/cache.db
  rm -rf "$ST"; stage_new "$ST" "$CACHE"
  if [ "${2:-}" != lab-only ]; then
  "$BUILD/scim-testserver" -fixture "$T/fixture.json" -token-file "$T/token" -listen 127.0.0.1:0 > "$d/url" 2> "$d/scim.log" &
  SCIM_PID=$!
  for _ in $(seq 600); do [ -s "$d/url" ] && break; sleep 0.1; done
  URL=$(head -n1 "$d/url"); [ -n "$URL" ] || { cat "$d/scim.log" >&2; die "scim-testserver did not start in 60 s"; }
  ADMIN=${URL%%/scim/v2*}/_admin
  CONF=$d/syncd.toml
  cat > "$CONF" <<EOF
base_url = "$URL"
token_file = "$T/token"
preset = "posix"
cache_path = "$CACHE"
status_path = "$d/status.json"
max_removal_share = 1.0
[slurm]
cluster = "bench"
default_account = "scim-landing"
group_pattern = "^hpc-(.+)$"
lock_file = "$d/slurm.lock"
EOF
  chmod 0600 "$CONF"
  fi
  t=$(now)
  LAB_UP=1
  scim_ns "$ST" "$ROOT/tests/slurm/up.sh" --fresh > "$d/up.log" 2>&1 || { tail -20 "$d/up.log" >&2; die "up.sh failed"; }
  UP=$(secs "$t" "$(now)")
  log "$1: lab up in ${UP}s"
}
sync_once() { scim_ns "$ST" "$BUILD/syncd" --config "$CONF" sync --once > "$T/$1.sync.log" 2>&1 || { tail "$T/$1.sync.log" >&2; die "$1: sync failed"; }; }
plan_cmds() { scim_ns "$ST" "$1" --config "$CONF" slurm plan 2>/dev/null | grep -c '^sacctmgr'; }

# apply BIN NAME: one `syncd slurm apply`; sets WALL, DB (slurmdbd +
# MariaDB CPU seconds in it), CTLD (slurmctld's), CLI (syncd's and its
# sacctmgr runs'), STEPS, WRITES, CALLS and ROW (table cells).
apply() {
  local t c0 k0; t=$(now); c0=$(dbcpu) k0=$(ctldcpu)
  scim_ns "$ST" /usr/bin/time -o "$T/$2.time" -f '%U %S' "$1" --config "$CONF" slurm apply > "$T/$2.out" 2> "$T/$2.log" \
    || { tail -5 "$T/$2.log" >&2; die "$2: apply failed"; }
  WALL=$(secs "$t" "$(now)") DB=$(delta "$c0" "$(dbcpu)") CTLD=$(delta "$k0" "$(ctldcpu)")
  CLI=$(awk '{printf "%.1f", $1 + $2}' "$T/$2.time")
  CALLS=$(sed -n 's/.*; \([0-9]*\) sacctmgr run(s).*/\1/p' "$T/$2.out")
  STEPS=$(sed -n 's/^# applied \([0-9]*\) command.*/\1/p' "$T/$2.out")
  WRITES=$(sed -n 's/^# applied [0-9]* command(s), \([0-9]*\) changed.*/\1/p' "$T/$2.out")
  ROW="${WALL} s | ${DB} s | ${CTLD} s | ${CLI} s | ${STEPS} | ${WRITES} | ${CALLS}"
  log "$2: ${WALL}s (CPU: slurmdbd+MariaDB ${DB}s, slurmctld ${CTLD}s, syncd+sacctmgr ${CLI}s), $STEPS commands ($WRITES changed something), $CALLS sacctmgr runs"
}

# passes BIN NAME: first apply, no-op, one move, churn on a fresh lab;
# sets R_first R_noop R_move R_churn (table cells) and PLAN_CMDS.
passes() {
  local bin=$1 n=$2
  fresh "$n"
  sync_once "$n-0"
  scim_ns "$ST" "$bin" --config "$CONF" slurm plan > "$T/$n.plan" 2>/dev/null
  PLAN_CMDS=$(grep -c '^sacctmgr' "$T/$n.plan")
  apply "$bin" "$n-first"; R_first=$ROW
  [ "$(assocs)" = $((USERS * 2)) ] || die "$n: expected $((USERS * 2)) user associations after the first apply, found $(assocs)"
  apply "$bin" "$n-noop"; R_noop=$ROW
  [ "$WRITES" = 0 ] && [ "$(plan_cmds "$bin")" = 0 ] || die "$n: the no-op pass wrote $WRITES or left a plan"
  # One user moves from hpc-p01 to hpc-p02.
  admin POST groups/hpc-p01/members '{"remove":["bu00001"]}' && admin POST groups/hpc-p02/members '{"add":["bu00001"]}' \
    || die "move via the admin API failed"
  sync_once "$n-1"
  apply "$bin" "$n-move"; R_move=$ROW
  [ "$(accounts_of bu00001)" = p02 ] || die "$n: move: bu00001 is not (only) in p02: $(accounts_of bu00001)"
  . "$T/churn.sh" || die "churn via the admin API failed"
  sync_once "$n-2"
  apply "$bin" "$n-churn"; R_churn=$ROW
  [ "$(accounts_of bu00101)" = p102 ] && [ "$(accounts_of bu00200)" = p01 ] && [ "$(assocs)" = $((USERS * 2)) ] \
    || die "$n: churn: bu00101 in $(accounts_of bu00101), bu00200 in $(accounts_of bu00200), $(assocs) associations"
  [ "$(plan_cmds "$bin")" = 0 ] || die "$n: plan not empty after churn"
}

if [ -n "$PREV" ]; then
  passes "$PREV" prev
  P_first=$R_first P_noop=$R_noop P_move=$R_move P_churn=$R_churn
fi
passes "$BUILD/syncd" new
NEW_UP=$UP
# QUICK=1: only the passes above (progress on stderr), no table.
[ -z "${QUICK:-}" ] || exit 0

# The first apply again with MariaDB at its own defaults instead of the
# settings the Slurm docs recommend (tests/slurm/up.sh), on a fresh lab.
innodb() {
  mariadb --no-defaults --socket="$SLURM_LAB_DIR/run/mysqld/mysqld.sock" -uroot -N -e \
    "select concat(round(@@innodb_buffer_pool_size/1048576), ' MB buffer pool, ', round(@@innodb_log_file_size/1048576), ' MB log file, lock wait ', @@innodb_lock_wait_timeout, ' s')"
}
TUNED=$(innodb)
SLURM_LAB_MARIADB_DEFAULTS=1 fresh maria
UNTUNED=$(innodb)
sync_once maria-0
apply "$BUILD/syncd" maria-first; R_maria=$ROW
[ "$(assocs)" = $((USERS * 2)) ] || die "maria: expected $((USERS * 2)) user associations after the first apply, found $(assocs)"

# For scale: the per-user way, one sacctmgr call per association.
sacctmgr -i add account naive Cluster=bench Organization=bench-naive > /dev/null
t=$(now)
for i in $(seq 1 "$NAIVE_SAMPLE"); do
  sacctmgr -i add user "$(printf 'bu%05d' "$i")" Account=naive Cluster=bench > /dev/null || die "naive add $i"
done
NAIVE=$(secs "$t" "$(now)")
NAIVE_EACH=$(awk -v a="$NAIVE" -v n="$NAIVE_SAMPLE" 'BEGIN{printf "%.2f", a/n}')
NAIVE_ALL=$(awk -v e="$NAIVE_EACH" -v u="$USERS" 'BEGIN{printf "%.0f", e*u*2}')

# The floor: the first apply's whole tree (its add account commands as
# Account lines, then its load file) in one load on a fresh lab.
python3 - "$T/new.plan" > "$T/floor.cfg" <<'EOF'
import re, shlex, sys
plan = open(sys.argv[1]).read()
accounts, load, on = [], [], False
for line in plan.splitlines():
    if line.startswith("sacctmgr -i add account "):
        w = shlex.split(line)[4:]
        opts = dict(x.split("=", 1) for x in w[1:])
        extra = "".join(":%s='%s'" % (k, v) for k, v in opts.items() if k not in ("Cluster", "Parent", "Organization", "Description"))
        for a in w[0].split(","):
            accounts.append("Account - '%s':Description='%s':Organization='%s'%s" % (a, opts["Description"], opts["Organization"], extra))
    elif re.search(r"<<'SACCTMGR_LOAD'$", line):
        on = True
    elif line == "SACCTMGR_LOAD":
        on = False
    elif on:
        load.append(line)
if not accounts or not load:
    sys.exit("the first plan has no add account or no load step")
cl = [i for i, l in enumerate(load) if l.startswith("Cluster - ")][0]
print("\n".join(load[:cl + 1] + ["Parent - 'root'"] + accounts + load[cl + 1:]))
EOF
[ -s "$T/floor.cfg" ] || die "no floor file from the first plan"
fresh floor lab-only
t=$(now); c0=$(dbcpu) k0=$(ctldcpu)
/usr/bin/time -o "$T/floor.time" -f '%U %S' sacctmgr -i load file="$T/floor.cfg" > "$T/floor.out" 2>&1 || { tail -5 "$T/floor.out" >&2; die "floor: load failed"; }
FLOOR=$(secs "$t" "$(now)") FLOOR_DB=$(delta "$c0" "$(dbcpu)") FLOOR_CTLD=$(delta "$k0" "$(ctldcpu)")
FLOOR_CLI=$(awk '{printf "%.1f", $1 + $2}' "$T/floor.time")
[ "$(assocs)" = $((USERS * 2)) ] || die "floor: expected $((USERS * 2)) user associations, found $(assocs)"
log "floor: ${FLOOR}s (slurmdbd+MariaDB CPU ${FLOOR_DB}s)"
lab_down

ROWS="| first apply (empty cluster; plan printed ${PLAN_CMDS} commands) | ${R_first} |"
[ -z "$PREV" ] || ROWS+=$'\n'"| previous path: first apply | ${P_first} |"
ROWS+=$'\n'"| floor: the first apply's tree (accounts and associations) in one \`sacctmgr -i load\` on a fresh lab | ${FLOOR} s | ${FLOOR_DB} s | ${FLOOR_CTLD} s | ${FLOOR_CLI} s | 1 | 1 | 1 |"
ROWS+=$'\n'"| first apply, MariaDB at its defaults ($UNTUNED) instead of the Slurm docs' settings ($TUNED) | ${R_maria} |"
ROWS+=$'\n'"| second apply (nothing to do) | ${R_noop} |"
[ -z "$PREV" ] || ROWS+=$'\n'"| previous path: nothing to do | ${P_noop} |"
ROWS+=$'\n'"| one user moved to another group | ${R_move} |"
[ -z "$PREV" ] || ROWS+=$'\n'"| previous path: one user moved | ${P_move} |"
ROWS+=$'\n'"| churn: 100 users change group | ${R_churn} |"
[ -z "$PREV" ] || ROWS+=$'\n'"| previous path: churn | ${P_churn} |"
cat <<EOF
### Slurm provisioning ($USERS users, $ACCOUNTS accounts)

Real Slurm $(slurmctld -V | awk '{print $2}') + slurmdbd + MariaDB on this machine (tests/slurm/up.sh, up in ${NEW_UP}s), a fresh lab for each path;
\`syncd slurm apply\` against a snapshot synced from scim-testserver.
Every user is in one hpc-pNN group and in the landing account: $((USERS * 2)) associations.
"slurmdbd CPU" is the CPU time slurmdbd and MariaDB used during the pass; "slurmctld
CPU" slurmctld's (slurmdbd sends it every association change and it rebuilds its
association tree); "syncd CPU" that of syncd and the sacctmgr it ran. The rest of
the wall time is round trips and waiting for the machine's $(nproc) cores, shared with
other work (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)).
"previous path": syncd built from ${PREV_REF:-a given binary}, the same passes on a fresh lab of its own in this run.
sacctmgr runs count the reads (before and after) and the writes.

| pass | wall | slurmdbd CPU | slurmctld CPU | syncd CPU | commands | writes (changed something) | sacctmgr runs |
|---|---|---|---|---|---|---|---|
$ROWS
| per-user sacctmgr, for scale | ${NAIVE_EACH} s per user (measured on ${NAIVE_SAMPLE}) | | | | | | ≈ ${NAIVE_ALL} s for $((USERS * 2)) associations |

EOF
