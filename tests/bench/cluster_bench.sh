#!/usr/bin/env bash
# tests/bench/cluster_bench.sh: one head, CLUSTER_BENCH_NODES simulated
# mirror nodes (default 2,000; goroutines in tests/bench/clustersim, each
# with its own jittered 5 s poll) on loopback, CLUSTER_BENCH_USERS users
# at the identity source (default 100,000). Prints a markdown section.
#
# The head is the real `syncd run` with [publish] and its built-in web
# server. Three changes at the source: one user disabled (the nodes fetch
# the full snapshot file), another user disabled and one member added to a
# group with a GID (both as a page delta). Measured per change: the head's latency (change at the source to
# signed manifest), time from the manifest until 50/99/100% of nodes hold
# the new snapshot, bytes the head sent, the head's CPU in that window and
# its RSS; and the identity provider's request count over the whole run.
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
USERS=${CLUSTER_BENCH_USERS:-100000}
GROUPS_=${CLUSTER_BENCH_GROUPS:-$((USERS / 10))}
NODES=${CLUSTER_BENCH_NODES:-2000}
INTERVAL=${CLUSTER_BENCH_INTERVAL:-5s}

for b in syncd scim-testserver; do
  [ -x "$BUILD/$b" ] || { echo "### cluster"; echo; echo "skipped: $BUILD/$b missing (make all)"; exit 77; }
done
for c in jq curl go python3; do
  command -v "$c" > /dev/null || { echo "### cluster"; echo; echo "skipped: $c missing"; exit 77; }
done

T=$(mktemp -d /tmp/cluster-bench.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2> /dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
say() { echo "cluster bench: $*" >&2; }
waitfile() { local i; for i in $(seq $(($1 * 10))); do [ -s "$2" ] && return 0; sleep 0.1; done; return 1; }

(umask 077; echo bench-token > "$T/token")
"$BUILD/scim-testserver" -generate "$USERS,$GROUPS_" -cursor -token-file "$T/token" > "$T/url" 2> "$T/server.log" &
PIDS+=($!)
waitfile 120 "$T/url" || { say "scim-testserver did not start"; exit 1; }
URL=$(head -n1 "$T/url")
ADMIN=${URL%/scim/v2}
"$BUILD/syncd" keygen --out "$T/head.key" > /dev/null
# A free loopback port for the head's web server, chosen here: the log line
# naming the port is at info level, which the head's config need not set.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
go build -o "$T/clustersim" "$ROOT/tests/bench/clustersim" || exit 1
printf '%s\n' "base_url = \"$URL\"" "token_file = \"$T/token\"" 'preset = "posix"' 'page_size = 1000' \
  "cache_path = \"$T/head/cache.db\"" "status_path = \"$T/head/status.json\"" \
  'poll_interval = "2s"' 'poll_jitter = "0s"' 'full_reconcile_interval = "1h"' \
  '[publish]' "dir = \"$T/pub\"" "key_file = \"$T/head.key\"" "listen = \"127.0.0.1:$PORT\"" 'max_connections = 256' > "$T/head.toml"
chmod 0600 "$T/head.toml"
mkdir -p "$T/head"
say "head: first full sync of $USERS users"
"$BUILD/syncd" --config "$T/head.toml" run > "$T/head.log" 2>&1 &
HEAD=$!
PIDS+=("$HEAD")
waitfile 600 "$T/pub/manifest.json" || { say "the head published nothing"; tail "$T/head.log" >&2; exit 1; }
cpu() { awk '{print $14 + $15}' "/proc/$HEAD/stat"; } # clock ticks
TCK=$(getconf CLK_TCK)
rss() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$HEAD/status"; }
hwm() { awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$HEAD/status"; }
pay() { jq -r .payload "$T/pub/manifest.json" | base64 -d | jq -r "$1"; }
SIZE=$(pay .size)
curl -fsS -X DELETE "$ADMIN/_admin/counters" > /dev/null

say "$NODES simulated nodes polling every $INTERVAL"
"$T/clustersim" -url "http://127.0.0.1:$PORT/" -pub "$T/head.key.pub" -nodes "$NODES" -interval "$INTERVAL" \
  -jitter 1s -modes full,delta,delta -ready "$T/ready" -next "$T/next" -timeout 20m > "$T/sim.out" 2> "$T/sim.err" &
SIM=$!
PIDS+=("$SIM")
waitfile 60 "$T/ready" || { say "clustersim did not start"; cat "$T/sim.err" >&2; exit 1; }
sleep 6 # every node has polled once

rows=()
curl -fsS "$ADMIN/_admin/directory" > "$T/dir.json"
victims=$(jq -r '[.users[] | select(.active != false and .posix.uidNumber != null)][10,20].userName' "$T/dir.json")
# The membership change: a user joins a group (with a GID) it is not in.
group=$(jq -r '[.groups[] | select(.gidNumber != null)] | .[length / 2 | floor].displayName' "$T/dir.json")
joiner=$(jq -r --arg g "$group" '(.groups[] | select(.displayName == $g) | .members // []) as $m
  | [.users[] | select(.active != false and .posix.uidNumber != null) | select(.id as $i | $m | index($i) | not)][30].userName' "$T/dir.json")
n=0
for kind in disable disable add-member; do
  n=$((n + 1))
  mode=delta
  [ $n -eq 1 ] && mode=full
  victim=$(sed -n "${n}p" <<< "$victims")
  serial=$(pay .serial)
  c0=$(cpu)
  touch "$T/next"
  t0=$(date +%s.%N)
  if [ "$kind" = disable ]; then
    curl -fsS -X POST "$ADMIN/_admin/users/$victim/active" -d '{"active": false}' > /dev/null
    say "change $n ($mode): $victim disabled"
  else
    curl -fsS -X POST "$ADMIN/_admin/groups/$group/members" -d "{\"add\": [\"$joiner\"]}" > /dev/null
    say "change $n ($mode): $joiner added to $group"
  fi
  for _ in $(seq 6000); do [ "$(pay .serial)" -gt "$serial" ] && break; sleep 0.1; done
  cp=$(cpu) # the head has read the source, committed and published
  for _ in $(seq 1200); do [ "$(wc -l < "$T/sim.out")" -ge "$n" ] && break; sleep 0.5; done
  [ "$(wc -l < "$T/sim.out")" -ge "$n" ] || { say "nodes did not converge"; cat "$T/sim.err" >&2; exit 1; }
  c1=$(cpu)
  line=$(sed -n "${n}p" "$T/sim.out")
  signed=$(date -d "$(jq -r .published <<< "$line")" +%s.%N)
  headlat=$(echo "$signed - $t0" | bc)
  rows+=("$(jq -r --arg mode "$mode: $kind" --arg lat "$headlat" --arg cpu "$(echo "scale=1; ($cp - $c0) / $TCK" | bc) + $(echo "scale=1; ($c1 - $cp) / $TCK" | bc)" --arg rss "$(rss)" \
    '"| \($mode) | \($lat | tonumber | . * 10 | round / 10) | \(.p50_s * 10 | round / 10) | \(.p99_s * 10 | round / 10) | \(.p100_s * 10 | round / 10) | \(.snapshot_fetches) | \(if ($mode | startswith("full")) then .full_object_bytes else .delta_bytes end) | \(.head_bytes / 1048576 * 10 | round / 10) | \($cpu) | \($rss) |"' <<< "$line")")
  sleep 3
done
wait "$SIM"
idp=$(curl -fsS "$ADMIN/_admin/counters")

echo "### cluster: one head, $NODES mirror nodes"
echo
echo "$USERS users, $GROUPS_ groups at the SCIM test server; the head is \`syncd run\` (poll 2 s; the change check's changed records applied to the directory it holds, the snapshot written in place: the incremental head of issue 18) publishing with its built-in server (max_connections 256); $NODES simulated nodes (tests/bench/clustersim: goroutines in one process, each polling manifest.json every $INTERVAL ± 1 s with If-None-Match, checking the signature, fetching and hashing the full file or the page delta). Snapshot: $((SIZE / 1048576)) MiB. All on loopback, 2 shared cores."
echo
echo "| nodes fetch: change | head latency s (change at the source to signed manifest) | 50% hold it s | 99% s | 100% s | snapshot fetches | bytes per node | head sent MiB | head CPU s: read + serve | head RSS MB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Node times are from the signed manifest. A simulated node stops at the checked bytes: it does not apply the delta to its copy, verify the result through the C reader or rename it into place, as a real node does on its own CPU (the install is measured on its own: README, node install). Head CPU: reading the source, committing and publishing + serving the nodes until all hold the change. Head peak RSS over the run (including its first full sync): $(hwm) MB. Identity provider requests while the nodes ran (the head's 2 s change checks and the changed records they fetched): $(jq -r .total <<< "$idp") ($(jq -r .userLists <<< "$idp") user-list, $(jq -r .groupLists <<< "$idp") group-list pages), as for one poller; the $NODES nodes made none (they hold no token). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
