#!/usr/bin/env bash
# snapwrite_bench.sh: the snapshot writer, in place (snapshot.Update) next
# to a whole write (snapshot.Write), for each kind of change a source
# makes, on generated directories (tests/scimserver.Generate, as
# `scim-testserver -generate N,N/10`). Columns: pages (4 KiB) that differ
# between the live file and the new one, i.e. what syncd/publish ships to
# each node; time from the Update call to the renamed file, p50 and p95
# over SNAPWRITE_BENCH_REPS changes; the CPU of the same change with the NSS
# index laid out whole in memory (UpdateOptions.WholeIndex, the path before
# the index was patched bucket by bucket); a whole Write of the same directory.
# SNAPWRITE_BENCH_USERS (default 2000,20000,100000). Then the node row
# (TestBenchDeltaInstall, with the default history and without) and the real node process: `syncd mirror --once`
# against a head that commits with `syncd sync --once` from
# `scim-testserver -generate SNAPWRITE_NODE_DIR` (default 100000,10000).
set -euo pipefail
cd "${ROOT:-$(dirname "$0")/../..}"
users=${SNAPWRITE_BENCH_USERS:-2000,20000,100000}
echo "### Snapshot writer: in place (Update) vs whole (Write)"
echo
echo "Generated directories of N users and N/10 groups; one change of each kind; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg) at start."
echo
SNAPSHOT_BENCH=$users SNAPSHOT_BENCH_REPS=${SNAPWRITE_BENCH_REPS:-5} \
  go test -tags=libsqlite3 -count=1 -timeout 60m -run '^TestBenchUpdate$' ./syncd/snapshot/ -v 2>&1 |
  grep -E '^\||^- ' || { echo "snapwrite bench failed" >&2; exit 1; }
echo
echo "Node install of a one-change page delta (syncd/mirror, a node process polling a publish directory), at ${SNAPWRITE_NODE_USERS:=100000} users in one group; load $(cut -d' ' -f1 /proc/loadavg)."
echo "Process columns: the whole node process (start, one poll, exit: what a \`syncd mirror --once\` timer pays). Poll columns: Node.Poll alone inside it"
echo "(RUSAGE_SELF before/after; peak RSS reset just before the poll, so it includes the runtime already there; growth = peak - RSS before): what a \`syncd run\` daemon pays per poll."
echo
for hist in default 0; do
  echo
  [ $hist = default ] && echo "With the default history (history_keep 10, history_max_mb 256: the previous snapshot's entry becomes a reverse delta, so the spare is free):" ||
    echo "With no history (MIRROR_BENCH_HISTORY=0):"
  echo
  MIRROR_BENCH_HISTORY=$hist MIRROR_BENCH_USERS=$SNAPWRITE_NODE_USERS go test -tags=libsqlite3 -count=1 -timeout 30m -run '^TestBenchDeltaInstall$' ./syncd/mirror/ -v 2>&1 |
    grep -E '^\||users, snapshot' || { echo "node install bench failed" >&2; exit 1; }
done

# The node as an admin runs it: the real syncd binary's `syncd mirror
# --once` (what a timer pays: process start, one poll, exit) against a
# head's publish directory, at 100,000 users and 10,000 groups from
# `scim-testserver -generate` (the syncd bench's directory: a larger file
# than the one-group directory above). The head commits each change with
# `syncd sync --once` and publishes page deltas.
BUILD=${BUILD:-$PWD/build}
for b in syncd scim-testserver; do
  [ -x "$BUILD/$b" ] || { echo; echo "real node process: skipped ($BUILD/$b missing: make all)"; exit 0; }
done
for c in curl jq; do
  command -v $c > /dev/null || { echo; echo "real node process: skipped ($c missing)"; exit 0; }
done
SNAPWRITE_NODE_DIR=${SNAPWRITE_NODE_DIR:-100000,10000}
N=$(mktemp -d /tmp/snapwrite-node.XXXXXX)
SRV=
trap '[ -n "$SRV" ] && kill "$SRV" 2> /dev/null; wait 2> /dev/null; rm -rf "$N"' EXIT
(umask 077; echo bench-token > "$N/token")
"$BUILD/scim-testserver" -generate "$SNAPWRITE_NODE_DIR" -cursor -token-file "$N/token" > "$N/url" 2> "$N/server.log" &
SRV=$!
for _ in $(seq 1 300); do [ -s "$N/url" ] && break; sleep 0.2; done
URL=$(head -n1 "$N/url")
[ -n "$URL" ] || { echo "scim-testserver did not start" >&2; exit 1; }
"$BUILD/syncd" keygen --out "$N/head.key" > /dev/null
mkdir -p "$N/pub" "$N/node"
printf '%s\n' "base_url = \"$URL\"" "token_file = \"$N/token\"" 'preset = "posix"' 'page_size = 1000' \
  "cache_path = \"$N/cache.db\"" "status_path = \"$N/status.json\"" \
  '[publish]' "dir = \"$N/pub\"" "key_file = \"$N/head.key\"" > "$N/head.toml"
printf '%s\n' "cache_path = \"$N/node/cache.db\"" "status_path = \"$N/node/status.json\"" \
  '[mirror]' "path = \"$N/pub\"" "public_key_file = \"$N/head.key.pub\"" > "$N/node.toml"
chmod 0600 "$N/head.toml" "$N/node.toml"
"$BUILD/syncd" --config "$N/head.toml" sync --once > "$N/head.log" 2>&1 || { echo "head sync failed" >&2; tail "$N/head.log" >&2; exit 1; }
# node NAME: one timed `syncd mirror --once`; prints a table row. At
# least 6 s after the previous one (a node's daemon polls every minute):
# the spare is rewritten only 5 s after it left the path.
last=0
node() {
  local wait=$(( last + 6 - $(date +%s) ))
  [ $wait -gt 0 ] && sleep $wait
  last=$(date +%s)
  /usr/bin/time -f '%e %U %S %M' -o "$N/time" "$BUILD/syncd" --config "$N/node.toml" mirror --once > "$N/node.log" 2>&1 ||
    { echo "syncd mirror --once failed ($1)" >&2; cat "$N/node.log" >&2; exit 1; }
  local wall usr sys rss bytes
  read -r wall usr sys rss < "$N/time"
  bytes=$(grep -o 'bytes=[0-9]*' "$N/node.log" | tail -n1 | cut -d= -f2 || true)
  spare=$(grep -o 'spare=[a-z]*' "$N/node.log" | tail -n1 | cut -d= -f2 || true)
  printf '| %s | %.0f | %.0f | %.0f | %d | %s | %s |\n' "$1" "$(echo "($usr + $sys) * 1000" | bc)" "$(echo "$sys * 1000" | bc)" \
    "$(echo "$wall * 1000" | bc)" $((rss / 1024)) "${bytes:--}" "${spare:--}"
}
echo
echo "The real node process: \`syncd mirror --once\` (the syncd binary, process start to exit) against a head's publish directory, ${SNAPWRITE_NODE_DIR} users,groups from \`scim-testserver -generate\`; load $(cut -d' ' -f1 /proc/loadavg)."
echo
echo "| node run | CPU ms | of it system ms | wall ms | peak RSS MB | bytes fetched | through the spare |"
echo "|---|---:|---:|---:|---:|---:|---|"
node "first poll (the whole file)"
for i in 1 2 3 4; do
  id=$(curl -sf -H 'Authorization: Bearer bench-token' "$URL/Users?count=1&startIndex=$((i * 100))" | jq -r '.Resources[0].id')
  curl -sf -X POST -H 'Authorization: Bearer bench-token' -d '{"active": false}' "${URL%/scim/v2}/_admin/users/$id/active" > /dev/null ||
    { echo "could not disable $id at the test server" >&2; exit 1; }
  "$BUILD/syncd" --config "$N/head.toml" sync --once > "$N/head.log" 2>&1 || { echo "head sync failed" >&2; tail "$N/head.log" >&2; exit 1; }
  node "one user disabled, page delta ($i)"
done
node "nothing new"
echo
echo "Live snapshot on the node: $(( $(stat -c %s "$N/node/cache.db") / 1000000 )) MB; its history (default history_keep, history_max_mb):" \
  "$(ls "$N/node/cache.db.history" | grep -c '\.rdelta$' || true) reverse deltas, $(ls "$N/node/cache.db.history" | grep -c '\.db$' || true) whole or linked," \
  "$(du -sk --exclude='*.db' "$N/node/cache.db.history" | cut -f1) KB beside the live file's link."
