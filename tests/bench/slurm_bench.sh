#!/usr/bin/env bash
# tests/bench/slurm_bench.sh: provisioning 5,000 SCIM users into 200 Slurm
# accounts on a real Slurm 22.05 + slurmdbd (tests/slurm/up.sh), through the
# real pipeline (scim-testserver -> syncd sync --once -> syncd slurm apply).
# Measures wall time, sacctmgr invocations and the CPU time slurmdbd and
# MariaDB spent (their own share of the wall time) of: the first apply
# (associations in one `sacctmgr load`), a no-op apply, one user moved to
# another group, a churn pass (100 users change group); side by side, the
# old way (load_min_accounts = -1: one `add user` per account) on a second
# cluster of the same slurmdbd; and, for scale, the per-user way (one
# `sacctmgr add user` per user) on a sample.
#
# Markdown on stdout, progress on stderr; exit 77 when Slurm is missing.
# Env: USERS (5000), ACCOUNTS (200), NAIVE_SAMPLE (20).
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/lib.sh"
USERS=${USERS:-5000} ACCOUNTS=${ACCOUNTS:-200} NAIVE_SAMPLE=${NAIVE_SAMPLE:-20}

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
ST=$T/stage CACHE=$T/cache/cache.db
SCIM_PID=
cleanup() {
  scim_ns "$ST" "$ROOT/tests/slurm/down.sh" > "$T/down.log" 2>&1 || cat "$T/down.log" >&2
  [ -z "$SCIM_PID" ] || { kill "$SCIM_PID" 2>/dev/null; wait "$SCIM_PID" 2>/dev/null; }
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/cache"; chmod 0755 "$T/cache"
stage_new "$ST" "$CACHE"
log() { echo "slurm bench: $*" >&2; }
die() { log "$*"; exit 1; }
now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }

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

head -c 24 /dev/urandom | base64 > "$T/token"; chmod 0600 "$T/token"
"$BUILD/scim-testserver" -fixture "$T/fixture.json" -token-file "$T/token" -listen 127.0.0.1:0 > "$T/url" 2> "$T/scim.log" &
SCIM_PID=$!
for _ in $(seq 100); do [ -s "$T/url" ] && break; sleep 0.1; done
URL=$(head -n1 "$T/url"); [ -n "$URL" ] || die "scim-testserver did not start"
ADMIN=${URL%%/scim/v2*}/_admin
cat > "$T/syncd.toml" <<EOF
base_url = "$URL"
token_file = "$T/token"
preset = "posix"
cache_path = "$CACHE"
status_path = "$T/status.json"
max_removal_share = 1.0
[slurm]
cluster = "bench"
default_account = "scim-landing"
group_pattern = "^hpc-(.+)$"
lock_file = "$T/slurm.lock"
EOF
chmod 0600 "$T/syncd.toml"
syncd() { scim_ns "$ST" "$BUILD/syncd" --config "$T/syncd.toml" "$@"; }

t=$(now)
scim_ns "$ST" "$ROOT/tests/slurm/up.sh" --fresh > "$T/up.log" 2>&1 || { tail -20 "$T/up.log" >&2; die "up.sh failed"; }
UP=$(secs "$t" "$(now)")
log "cluster up in ${UP}s"
t=$(now); syncd sync --once > "$T/sync.log" 2>&1 || { tail "$T/sync.log" >&2; die "sync failed"; }
SYNC=$(secs "$t" "$(now)")
PLAN_CMDS=$(syncd slurm plan 2>/dev/null | grep -c '^sacctmgr')

# dbcpu: CPU seconds slurmdbd and mariadbd have used so far.
dbcpu() {
  awk '{s += $14 + $15} END {printf "%.2f", s / 100}' \
    "/proc/$(cat "$SLURM_LAB_DIR/run/slurmdbd.pid")/stat" "/proc/$(cat "$SLURM_LAB_DIR/run/mysqld/mariadbd.pid")/stat"
}
# apply NAME [CONFIG]: one `syncd slurm apply`; sets WALL, DB (slurmdbd +
# MariaDB CPU seconds in it), STEPS, WRITES and CALLS.
apply() {
  local t c0 cfg=${2:-$T/syncd.toml}; t=$(now); c0=$(dbcpu)
  scim_ns "$ST" "$BUILD/syncd" --config "$cfg" slurm apply > "$T/$1.out" 2> "$T/$1.log" || { tail -5 "$T/$1.log" >&2; die "$1: apply failed"; }
  WALL=$(secs "$t" "$(now)") DB=$(awk -v a="$c0" -v b="$(dbcpu)" 'BEGIN{printf "%.1f", b-a}')
  CALLS=$(sed -n 's/.*; \([0-9]*\) sacctmgr run(s).*/\1/p' "$T/$1.out")
  STEPS=$(sed -n 's/^# applied \([0-9]*\) command.*/\1/p' "$T/$1.out")
  WRITES=$(sed -n 's/^# applied [0-9]* command(s), \([0-9]*\) changed.*/\1/p' "$T/$1.out")
  log "$1: ${WALL}s (slurmdbd+MariaDB CPU ${DB}s), $STEPS commands ($WRITES changed something), $CALLS sacctmgr runs"
}
apply first; W1=$WALL C1=$CALLS S1=$STEPS X1=$WRITES D1=$DB
N=$(sacctmgr -nP show assoc where cluster=bench format=account,user | awk -F'|' '$2 != "" && $1 != "root"' | wc -l)
[ "$N" = $((USERS * 2)) ] || die "expected $((USERS * 2)) user associations after the first apply, found $N"
apply noop; W2=$WALL C2=$CALLS S2=$STEPS X2=$WRITES D2=$DB
PLAN2=$(syncd slurm plan 2>/dev/null | grep -c '^sacctmgr')

admin() { curl -fsS -m 5 -X "$1" -H 'Content-Type: application/json' --data "$3" "$ADMIN/$2" >/dev/null; }
# One user moves from hpc-p01 to hpc-p02.
admin POST groups/hpc-p01/members '{"remove":["bu00001"]}' && admin POST groups/hpc-p02/members '{"add":["bu00001"]}' \
  || die "move via the admin API failed"
syncd sync --once > "$T/sync1.log" 2>&1 || die "sync after the move failed"
apply move; W4=$WALL C4=$CALLS S4=$STEPS X4=$WRITES D4=$DB
[ "$(sacctmgr -nP show assoc where cluster=bench user=bu00001 format=account | grep '^p' | paste -sd,)" = p02 ] \
  || die "move: bu00001 is not (only) in p02: $(sacctmgr -nP show assoc where cluster=bench user=bu00001 format=account | paste -sd,)"

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
. "$T/churn.sh" || die "churn via the admin API failed"
syncd sync --once > "$T/sync2.log" 2>&1 || die "sync after churn failed"
apply churn; W3=$WALL C3=$CALLS S3=$STEPS X3=$WRITES D3=$DB

# The old way, side by side: the same snapshot into a second cluster of the
# same slurmdbd, one `add user` per account (load_min_accounts = -1).
sacctmgr -i add cluster bench2 > /dev/null || die "add cluster bench2"
sed -e 's/^cluster = "bench"/cluster = "bench2"/' -e "s|^lock_file = .*|&\nstate_file = \"$T/old-state.json\"\nload_min_accounts = -1|" \
  "$T/syncd.toml" > "$T/old.toml"
chmod 0600 "$T/old.toml"
apply old "$T/old.toml"; W5=$WALL C5=$CALLS S5=$STEPS X5=$WRITES D5=$DB
N2=$(sacctmgr -nP show assoc where cluster=bench2 format=account,user | awk -F'|' '$2 != "" && $1 != "root"' | wc -l)
[ "$N2" = $((USERS * 2)) ] || die "old way: expected $((USERS * 2)) user associations, found $N2"

# For scale: the per-user way, one sacctmgr call per association.
sacctmgr -i add account naive Cluster=bench Organization=bench-naive > /dev/null
t=$(now)
for i in $(seq 1 "$NAIVE_SAMPLE"); do
  sacctmgr -i add user "$(printf 'bu%05d' "$i")" Account=naive Cluster=bench > /dev/null || die "naive add $i"
done
NAIVE=$(secs "$t" "$(now)")
NAIVE_EACH=$(awk -v a="$NAIVE" -v n="$NAIVE_SAMPLE" 'BEGIN{printf "%.2f", a/n}')
NAIVE_ALL=$(awk -v e="$NAIVE_EACH" -v u="$USERS" 'BEGIN{printf "%.0f", e*u*2}')

cat <<EOF
### Slurm provisioning ($USERS users, $ACCOUNTS accounts)

Real Slurm $(slurmctld -V | awk '{print $2}') + slurmdbd + MariaDB on this machine (tests/slurm/up.sh, up in ${UP}s);
\`syncd slurm apply\` against a snapshot synced from scim-testserver (sync: ${SYNC}s).
Every user is in one hpc-pNN group and in the landing account: $((USERS * 2)) associations.
sacctmgr runs include the 4 state reads before and the 4 read-backs after (each 4 at once).
"slurmdbd CPU" is the CPU time slurmdbd and MariaDB used during the pass: their own
work, which no choice of commands removes; the rest of the wall time is sacctmgr
round trips, syncd, and waiting for the machine's $(nproc) cores (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)).

| pass | wall | slurmdbd CPU | plan commands | writes (changed something) | sacctmgr runs |
|---|---|---|---|---|---|
| first apply (empty cluster; one sacctmgr load) | ${W1} s | ${D1} s | ${S1} (plan printed ${PLAN_CMDS}) | ${X1} | ${C1} |
| second apply (nothing to do) | ${W2} s | ${D2} s | ${S2} (plan after it: ${PLAN2}) | ${X2} | ${C2} |
| one user moved to another group | ${W4} s | ${D4} s | ${S4} | ${X4} | ${C4} |
| churn: 100 users change group | ${W3} s | ${D3} s | ${S3} | ${X3} | ${C3} |
| old way: first apply, one add user per account (load_min_accounts = -1) | ${W5} s | ${D5} s | ${S5} | ${X5} | ${C5} |
| per-user sacctmgr, for scale | ${NAIVE_EACH} s per user (measured on ${NAIVE_SAMPLE}) | | | | ≈ ${NAIVE_ALL} s for $((USERS * 2)) associations |

EOF
