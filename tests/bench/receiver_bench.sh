#!/usr/bin/env bash
# tests/bench/receiver_bench.sh: the SCIM push receiver (syncd receive)
# under a loopback identity provider (tests/bench/scimload, 4 concurrent
# keep-alive clients). Prints a markdown section (see tests/bench/run).
#
#   create / patch   1,000 users by POST, then one PATCH each: req/s, p50, p99
#   members burst    1,000 member-add PATCHes to one group: req/s, p99, and
#                    how many snapshots they became (target: one) and how
#                    long after the last PATCH it was committed
#   initial load     RECEIVER_BENCH_LOAD users (default 100,000) by POST
#                    into an empty store, then the first snapshot of them
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
N=${RECEIVER_BENCH_USERS:-1000}
LOAD=${RECEIVER_BENCH_LOAD:-100000}
C=${RECEIVER_BENCH_CONC:-4}

[ -x "$BUILD/syncd" ] || { echo "### receiver"; echo; echo "skipped: $BUILD/syncd missing (make all)"; exit 77; }
command -v sqlite3 > /dev/null || { echo "### receiver"; echo; echo "skipped: sqlite3 missing"; exit 77; }
T=$(mktemp -d /tmp/receiver-bench.XXXXXX)
RCV=
cleanup() {
  [ -n "$RCV" ] && kill "$RCV" 2> /dev/null && wait "$RCV" 2> /dev/null
  rm -rf "$T"
}
trap cleanup EXIT
(cd "$ROOT" && go build -o "$T/scimload" ./tests/bench/scimload) || exit 1
TOKEN=bench-$RANDOM$RANDOM

# start NAME: a receiver on a fresh store and cache.
start() {
  mkdir -p "$T/$1"
  printf '%s\n' "cache_path = \"$T/$1/cache.db\"" "status_path = \"$T/$1/status.json\"" \
    'uid_min = 100000' 'uid_max = 999999' 'gid_min = 100000' 'gid_max = 999999' \
    'user_name_domains = ["example.com"]' 'max_removal_share = 1.0' 'log_level = "info"' 'poll_interval = "1h"' \
    '[receiver]' 'listen = "127.0.0.1:0"' "store_path = \"$T/$1/receiver.db\"" \
    'debounce = "2s"' 'max_delay = "30s"' 'rate_limit = 100000' 'rate_burst = 100000' \
    '[[receiver.clients]]' 'name = "bench"' "token_sha256 = \"$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)\"" > "$T/$1/syncd.toml"
  chmod 0600 "$T/$1/syncd.toml"
  "$BUILD/syncd" --config "$T/$1/syncd.toml" receive --addr-file "$T/$1/addr" > "$T/$1/log" 2>&1 &
  RCV=$!
  for _ in $(seq 1 100); do [ -s "$T/$1/addr" ] && break; sleep 0.1; done
  URL="http://$(cat "$T/$1/addr")/scim/v2"
  CACHE=$T/$1/cache.db
}
stop() { kill "$RCV"; wait "$RCV" 2> /dev/null; RCV=; }
serial() { sqlite3 "file:$CACHE?mode=ro&immutable=1" "select value from meta where key='serial'" 2> /dev/null || echo 0; }
users_in() { sqlite3 "file:$CACHE?mode=ro&immutable=1" "select count(*) from users" 2> /dev/null || echo 0; }
# quiet: wait until the serial has not moved for 3 s (bounded: 10 min).
quiet() {
  local s0 s1 i
  s0=$(serial)
  for i in $(seq 1 200); do
    sleep 3; s1=$(serial)
    [ "$s1" = "$s0" ] && return 0
    s0=$s1
  done
  return 1
}
row() { # phase n secs rps p50 p99 errors
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$4" "$5" "$6" "$7"
}

start small
echo "receiver bench: $N users, $C clients" >&2
"$T/scimload" -url "$URL" -token "$TOKEN" -users "$N" -c "$C" -ids "$T/ids.json" -phase create,patch > "$T/cp.out" || { cat "$T/cp.out"; exit 1; }
quiet
s0=$(serial)
"$T/scimload" -url "$URL" -token "$TOKEN" -users "$N" -c "$C" -ids "$T/ids.json" -phase members > "$T/m.out" || { cat "$T/m.out"; exit 1; }
tlast=$(date +%s%N)
# the snapshot of the burst: wait for the serial to move, bounded.
for _ in $(seq 1 600); do [ "$(serial)" != "$s0" ] && break; sleep 0.05; done
tsnap=$(date +%s%N)
quiet
snaps=$(($(serial) - s0))
members=$(sqlite3 "file:$CACHE?mode=ro&immutable=1" "select count(*) from memberships" 2> /dev/null || echo "?")
stop

echo "receiver bench: initial load of $LOAD users" >&2
start load
t0=$(date +%s%N)
"$T/scimload" -url "$URL" -token "$TOKEN" -users "$LOAD" -c "$C" -phase create > "$T/load.out" || { cat "$T/load.out"; exit 1; }
t1=$(date +%s%N)
for _ in $(seq 1 1200); do [ "$(users_in)" -ge "$LOAD" ] && break; sleep 0.5; done
t2=$(date +%s%N)
loaded=$(users_in)
rss=$(awk '/VmHWM/ {print $2}' "/proc/$RCV/status" 2> /dev/null)
stop

echo "### receiver (syncd receive)"
echo
echo "Loopback identity provider: $C concurrent keep-alive clients; every write is an fsynced SQLite transaction (WAL, synchronous=FULL)."
echo
echo "| phase | requests | req/s | p50 ms | p99 ms | errors |"
echo "|---|---:|---:|---:|---:|---:|"
while read -r l; do row $l; done < "$T/cp.out"
while read -r l; do row $l; done < "$T/m.out"
echo
echo "- burst of $N member PATCHes: $snaps snapshot(s); committed $(((tsnap - tlast) / 1000000)) ms after the last PATCH (debounce 2 s); group rows in the snapshot: $members"
echo "- initial load: $loaded of $LOAD users POSTed in $(((t1 - t0) / 1000000)) ms ($(awk '{print $4}' "$T/load.out") req/s, p99 $(awk '{print $6}' "$T/load.out") ms); snapshot with all of them $(((t2 - t1) / 1000000)) ms after the last POST; receiver peak RSS ${rss:-?} kB"
