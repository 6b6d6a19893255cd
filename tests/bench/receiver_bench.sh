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
#                    into an empty store, until a signed manifest
#                    ([publish]) names a snapshot holding all of them
#                    (target: 60 s). With RECEIVER_BENCH_OLD=/path/to/syncd
#                    (a build of the old path) the load runs with it too,
#                    first, in the same run: one row each.
#                    RECEIVER_BENCH_LOGS=DIR keeps each receiver's log
#                    there (DIR/NAME.log: the commits of the load).
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
N=${RECEIVER_BENCH_USERS:-1000}
LOAD=${RECEIVER_BENCH_LOAD:-100000}
C=${RECEIVER_BENCH_CONC:-4}
OLD=${RECEIVER_BENCH_OLD:-}
LOGS=${RECEIVER_BENCH_LOGS:-}

[ -x "$BUILD/syncd" ] || { echo "### receiver"; echo; echo "skipped: $BUILD/syncd missing (make all)"; exit 77; }
for c in sqlite3 jq bc; do
  command -v $c > /dev/null || { echo "### receiver"; echo; echo "skipped: $c missing"; exit 77; }
done
T=$(mktemp -d /tmp/receiver-bench.XXXXXX)
RCV=
cleanup() {
  [ -n "$RCV" ] && kill "$RCV" 2> /dev/null && wait "$RCV" 2> /dev/null
  rm -rf "$T"
}
trap cleanup EXIT
(cd "$ROOT" && go build -o "$T/scimload" ./tests/bench/scimload) || exit 1
TOKEN=bench-$RANDOM$RANDOM

# start NAME [SYNCD]: a receiver on a fresh store and cache, publishing
# (signed manifest) into $T/NAME/pub.
start() {
  local bin=${2:-$BUILD/syncd}
  NAME=$1
  mkdir -p "$T/$1"
  "$bin" keygen --out "$T/$1/head.key" > /dev/null
  printf '%s\n' "cache_path = \"$T/$1/cache.db\"" "status_path = \"$T/$1/status.json\"" \
    'uid_min = 100000' 'uid_max = 999999' 'gid_min = 100000' 'gid_max = 999999' \
    'user_name_domains = ["example.com"]' 'max_removal_share = 1.0' 'log_level = "info"' 'poll_interval = "1h"' \
    '[receiver]' 'listen = "127.0.0.1:0"' "store_path = \"$T/$1/receiver.db\"" \
    'debounce = "2s"' 'max_delay = "30s"' 'rate_limit = 100000' 'rate_burst = 100000' \
    '[[receiver.clients]]' 'name = "bench"' "token_sha256 = \"$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)\"" \
    '[publish]' "dir = \"$T/$1/pub\"" "key_file = \"$T/$1/head.key\"" > "$T/$1/syncd.toml"
  chmod 0600 "$T/$1/syncd.toml"
  "$bin" --config "$T/$1/syncd.toml" receive --addr-file "$T/$1/addr" > "$T/$1/log" 2>&1 &
  RCV=$!
  for _ in $(seq 1 100); do [ -s "$T/$1/addr" ] && break; sleep 0.1; done
  URL="http://$(cat "$T/$1/addr")/scim/v2"
  CACHE=$T/$1/cache.db
  PUB=$T/$1/pub
}
stop() {
  kill "$RCV"; wait "$RCV" 2> /dev/null; RCV=
  [ -n "$LOGS" ] && mkdir -p "$LOGS" && cp "$T/$NAME/log" "$LOGS/$(echo "$NAME" | tr -c 'A-Za-z0-9.\n-' _).log"
  return 0
}
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
# Serials are not consecutive (they follow the clock): commits are
# counted in the receiver's log.
c0=$(grep -c 'syncd: committed snapshot' "$T/small/log")
"$T/scimload" -url "$URL" -token "$TOKEN" -users "$N" -c "$C" -ids "$T/ids.json" -phase members > "$T/m.out" || { cat "$T/m.out"; exit 1; }
tlast=$(date +%s%N)
# the snapshot of the burst: wait for the serial to move, bounded.
for _ in $(seq 1 600); do [ "$(serial)" != "$s0" ] && break; sleep 0.05; done
tsnap=$(date +%s%N)
quiet
snaps=$(($(grep -c 'syncd: committed snapshot' "$T/small/log") - c0))
members=$(sqlite3 "file:$CACHE?mode=ro&immutable=1" "select count(*) from memberships" 2> /dev/null || echo "?")
stop

# published: the serial the signed manifest names (0: none yet).
published() { [ -s "$PUB/manifest.json" ] && jq -r .payload "$PUB/manifest.json" | base64 -d | jq -r .serial || echo 0; }
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / t}' "/proc/$RCV/stat"; }
# load LABEL [SYNCD]: LOAD users POSTed into an empty store, until the
# signed manifest names a snapshot holding all of them; one table row.
load() {
  echo "receiver bench: initial load of $LOAD users ($1)" >&2
  start "load-$1" "${2:-}"
  local t0 t1 t2 t3 loaded rss cpu
  t0=$(date +%s%N)
  "$T/scimload" -url "$URL" -token "$TOKEN" -users "$LOAD" -c "$C" -phase create > "$T/load.out" || { cat "$T/load.out"; exit 1; }
  t1=$(date +%s%N)
  for _ in $(seq 1 2400); do [ "$(users_in)" -ge "$LOAD" ] && break; sleep 0.25; done
  t2=$(date +%s%N)
  for _ in $(seq 1 2400); do [ "$(published)" -ge "$(serial)" ] && break; sleep 0.25; done
  t3=$(date +%s%N)
  loaded=$(users_in)
  rss=$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$RCV/status" 2> /dev/null)
  cpu=$(cpu_s)
  stop
  LOADROWS+=("$(printf '| %s | %s of %s | %.1f | %s | %s | %.1f | %.1f | **%.1f** | %s | %s |' "$1" "$loaded" "$LOAD" \
    "$(echo "($t1 - $t0) / 1000000000" | bc -l)" "$(awk '{print $4}' "$T/load.out")" "$(awk '{print $6}' "$T/load.out")" \
    "$(echo "($t2 - $t1) / 1000000000" | bc -l)" "$(echo "($t3 - $t2) / 1000000000" | bc -l)" "$(echo "($t3 - $t0) / 1000000000" | bc -l)" "$cpu" "${rss:-?}")")
}
LOADROWS=()
[ -n "$OLD" ] && load "old ($(basename "$OLD"))" "$OLD"
load "this build"

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
echo
echo "Initial load into an empty store (debounce 2 s, max_delay 30 s: the receiver commits and publishes every 30 s while the load runs), until the signed manifest names a snapshot with every user (target: 60 s):"
echo
echo "| receiver | users | POST s | req/s | p99 ms | committed s after the last POST | then signed s | total s | receiver CPU s | peak RSS MB |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${LOADROWS[@]}"
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
