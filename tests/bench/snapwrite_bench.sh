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
# (TestBenchDeltaInstall, with the default history and without) and the real node, against a
# head that commits with `syncd sync --once` from `scim-testserver -generate
# SNAPWRITE_NODE_DIR` (default 100000,10000): the node's daemon (`syncd run`,
# per poll) beside the `syncd mirror --once` process, in one table.
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

# The node as an admin runs it, two ways, side by side against the same
# head's publish directory, at 100,000 users and 10,000 groups from
# `scim-testserver -generate` (the syncd bench's directory: an 85 MB file,
# twice the one-group file above). The head commits each change with
# `syncd sync --once` and publishes page deltas.
#   - The node's daemon: what the packaged unit runs on a node
#     (packaging/scimbridge-syncd.service: `syncd run`, which with a
#     [mirror] table is syncd/mirror's Daemon: poll, then wait interval
#     +- jitter). Its config sets interval = "1s", jitter = "0s" (the
#     [mirror] options; default 5s +- 1s, at least 100ms), so a change is
#     installed within a second of its manifest. A watcher (daemon_watch)
#     sees each poll end in the node's status file (rewritten by every
#     poll) and reads /proc/PID: utime+stime of stat (10 ms ticks), the
#     sum of task/*/schedstat (ns), VmRSS, VmHWM, RssAnon, RssFile; then
#     resets VmHWM (clear_refs 5). A poll's row is the difference between
#     its line and the previous one (which includes the daemon's idle
#     second before it: see the "nothing new" row); its peak RSS is the
#     peak since the previous poll ended, so it excludes the first whole
#     fetch.
#   - `syncd mirror --once` (what a timer pays: process start, one poll,
#     exit), under /usr/bin/time, against the same manifest after the
#     daemon installed it.
# Both sides keep their own cache directory; spare= comes from each one's
# log line "mirror: installed snapshot".
BUILD=${BUILD:-$PWD/build}
for b in syncd scim-testserver; do
  [ -x "$BUILD/$b" ] || { echo; echo "real node process: skipped ($BUILD/$b missing: make all)"; exit 0; }
done
for c in curl jq; do
  command -v $c > /dev/null || { echo; echo "real node process: skipped ($c missing)"; exit 0; }
done
SNAPWRITE_NODE_DIR=${SNAPWRITE_NODE_DIR:-100000,10000}
N=$(mktemp -d /tmp/snapwrite-node.XXXXXX)
SRV= DPID= WPID=
trap 'for p in $WPID $DPID $SRV; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null; rm -rf "$N"' EXIT
(umask 077; echo bench-token > "$N/token")
"$BUILD/scim-testserver" -generate "$SNAPWRITE_NODE_DIR" -cursor -token-file "$N/token" > "$N/url" 2> "$N/server.log" &
SRV=$!
for _ in $(seq 1 300); do [ -s "$N/url" ] && break; sleep 0.2; done
URL=$(head -n1 "$N/url")
[ -n "$URL" ] || { echo "scim-testserver did not start" >&2; exit 1; }
"$BUILD/syncd" keygen --out "$N/head.key" > /dev/null
mkdir -p "$N/pub" "$N/node" "$N/dnode"
printf '%s\n' "base_url = \"$URL\"" "token_file = \"$N/token\"" 'preset = "posix"' 'page_size = 1000' \
  "cache_path = \"$N/cache.db\"" "status_path = \"$N/status.json\"" \
  '[publish]' "dir = \"$N/pub\"" "key_file = \"$N/head.key\"" > "$N/head.toml"
printf '%s\n' "cache_path = \"$N/node/cache.db\"" "status_path = \"$N/node/status.json\"" \
  '[mirror]' "path = \"$N/pub\"" "public_key_file = \"$N/head.key.pub\"" > "$N/node.toml"
printf '%s\n' "cache_path = \"$N/dnode/cache.db\"" "status_path = \"$N/dnode/status.json\"" \
  '[mirror]' "path = \"$N/pub\"" "public_key_file = \"$N/head.key.pub\"" 'interval = "1s"' 'jitter = "0s"' > "$N/dnode.toml"
chmod 0600 "$N/head.toml" "$N/node.toml" "$N/dnode.toml"
"$BUILD/syncd" --config "$N/dnode.toml" check-config > "$N/check.log" 2>&1 || { echo "node daemon config refused" >&2; cat "$N/check.log" >&2; exit 1; }
"$BUILD/syncd" --config "$N/head.toml" sync --once > "$N/head.log" 2>&1 || { echo "head sync failed" >&2; tail "$N/head.log" >&2; exit 1; }
rows=()
verdict() { # CPU_MS PEAK_KB: whether a delta install meets 50 ms CPU and 40 MB peak RSS
  awk -v c="$1" -v k="$2" 'BEGIN { printf "%s / %s", (c <= 50 ? "yes" : "**no**"), (k <= 40 * 1024 ? "yes" : "**no**") }'
}
# node LABEL: one timed `syncd mirror --once`; adds a table row. At
# least 6 s after the previous one (a node's daemon polls every 5 s):
# the spare is rewritten only 5 s after it left the path.
last=0
node() {
  local wait=$(( last + 6 - $(date +%s) ))
  [ $wait -gt 0 ] && sleep $wait
  last=$(date +%s)
  /usr/bin/time -f '%e %U %S %M' -o "$N/time" "$BUILD/syncd" --config "$N/node.toml" mirror --once > "$N/node.log" 2>&1 ||
    { echo "syncd mirror --once failed ($1)" >&2; cat "$N/node.log" >&2; exit 1; }
  local wall usr sys rss bytes spare cpu v=–
  read -r wall usr sys rss < "$N/time"
  bytes=$(grep -o 'bytes=[0-9]*' "$N/node.log" | tail -n1 | cut -d= -f2 || true)
  spare=$(grep -o 'spare=[a-z]*' "$N/node.log" | tail -n1 | cut -d= -f2 || true)
  cpu=$(awk -v u="$usr" -v s="$sys" 'BEGIN { printf "%.0f", (u + s) * 1000 }')
  [ "${2:-}" = delta ] && v=$(verdict "$cpu" "$rss")
  rows+=("$(printf '| %s | `mirror --once` process | %s | %.0f | – | %.0f | %.1f | – | – | %s | %s | %s |' "$1" "$cpu" \
    "$(awk -v s="$sys" 'BEGIN { print s * 1000 }')" "$(awk -v w="$wall" 'BEGIN { print w * 1000 }')" \
    "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "${bytes:-–}" "${spare:-–}" "$v")")
}
# daemon_watch PID STATUS OUT: appends a line to OUT each time the
# daemon's status file shows a new poll (its last_attempt): last_attempt
# result serial utime stime (ticks) schedstat_ns VmRSS VmHWM RssAnon
# RssFile (kB) fetch_seconds; then resets VmHWM. Builtins only between
# polls (no process started every 10 ms beside the one measured).
daemon_watch() {
  local pid=$1 st=$2 out=$3 prev= line la res ser fs f t a ns k v rss hwm anon file sl
  exec {sl}<> <(:)
  while [ -d "/proc/$pid" ]; do
    la= res= ser= fs=
    if [ -r "$st" ]; then
      while IFS= read -r line; do
        case $line in
          *'"last_attempt": '*) la=${line#*: \"}; la=${la%\"*} ;;
          *'"last_result": '*) res=${line#*: \"}; res=${res%\"*} ;;
          '  "serial": '*) ser=${line#*: }; ser=${ser%,} ;;
          *'"fetch_seconds": '*) fs=${line#*: }; fs=${fs%,} ;;
        esac
      done < "$st"
    fi
    if [ -n "$la" ] && [ -n "$fs" ] && [ "$la" != "$prev" ]; then
      prev=$la
      read -r -a f < "/proc/$pid/stat" || break
      ns=0
      for t in /proc/"$pid"/task/*/schedstat; do read -r a _ < "$t" && ns=$((ns + a)); done
      while read -r k v _; do
        case $k in VmRSS:) rss=$v ;; VmHWM:) hwm=$v ;; RssAnon:) anon=$v ;; RssFile:) file=$v ;; esac
      done < "/proc/$pid/status"
      echo 5 > "/proc/$pid/clear_refs"
      echo "$la $res $ser ${f[13]} ${f[14]} $ns $rss $hwm $anon $file $fs" >> "$out"
    fi
    read -r -t 0.01 -u "$sl" _ || true
  done
}
# daemon_wait SERIAL: the line of the daemon's poll that installed SERIAL
# (waits up to 2 minutes).
daemon_wait() {
  local i l
  for i in $(seq 1 1200); do
    l=$(grep -n " committed $1 " "$N/polls" 2> /dev/null | head -n1 | cut -d: -f1 || true)
    [ -n "$l" ] && { echo "$l"; return; }
    [ -d "/proc/$DPID" ] || break
    sleep 0.1
  done
  echo "the node daemon did not install serial $1" >&2; tail "$N/daemon.log" >&2; exit 1
}
# daemon LABEL LINE [delta]: the row of the daemon's poll at LINE of polls
# (against the line before it; the first poll against the process start).
daemon() {
  local cur prev u1 s1 ns1 rss1 hwm1 fs1 u0=0 s0=0 ns0=0 rss0=0 k log bytes spare v=–
  cur=$(sed -n "$2p" "$N/polls")
  read -r _ _ _ u1 s1 ns1 rss1 hwm1 _ _ fs1 <<< "$cur"
  if [ "$2" -gt 1 ]; then
    prev=$(sed -n "$(( $2 - 1 ))p" "$N/polls")
    read -r _ _ _ u0 s0 ns0 rss0 _ <<< "$prev"
  fi
  k=$(head -n "$2" "$N/polls" | grep -c ' committed ')
  log=$(grep 'mirror: installed snapshot' "$N/daemon.log" | sed -n "${k}p")
  bytes=$(grep -o 'bytes=[0-9]*' <<< "$log" | cut -d= -f2 || true)
  spare=$(grep -o 'spare=[a-z]*' <<< "$log" | cut -d= -f2 || true)
  [ "${3:-}" = delta ] && v=$(verdict "$(awk -v d=$(( ns1 - ns0 )) 'BEGIN { print d / 1e6 }')" "$hwm1")
  rows+=("$(awk -v l="$1" -v t=$(( (u1 + s1 - u0 - s0) * 10 )) -v s=$(( (s1 - s0) * 10 )) -v ns=$(( ns1 - ns0 )) -v fs="$fs1" \
    -v hwm="$hwm1" -v rss="$rss1" -v rss0="$rss0" -v b="${bytes:-–}" -v sp="${spare:-–}" -v v="$v" -v first=$(( $2 == 1 )) \
    'BEGIN { printf "| %s | daemon poll (`syncd run`)%s | %d | %d | %.1f | %.0f | %.1f | %.1f | %s | %s | %s | %s |", l, (first ? ", from its start" : ""),
      t, s, ns / 1e6, fs * 1000, hwm / 1024, rss / 1024, (first ? "–" : sprintf("%+.1f", (hwm - rss0) / 1024)), b, sp, v }')")
}
# The daemon starts on an empty node: its first poll fetches the whole file.
load0=$(cut -d' ' -f1 /proc/loadavg)
"$BUILD/syncd" --config "$N/dnode.toml" run > "$N/daemon.log" 2>&1 &
DPID=$!
daemon_watch "$DPID" "$N/dnode/status.json" "$N/polls" &
WPID=$!
serial=$(jq -r .serial "$N/status.json")
line=$(daemon_wait "$serial")
daemon "first poll (the whole file)" "$line"
node "first poll (the whole file)"
dlast=$(date +%s)
for i in 1 2 3 4; do
  wait=$(( dlast + 6 - $(date +%s) ))
  [ $wait -gt 0 ] && sleep $wait
  id=$(curl -sf -H 'Authorization: Bearer bench-token' "$URL/Users?count=1&startIndex=$((i * 100))" | jq -r '.Resources[0].id')
  curl -sf -X POST -H 'Authorization: Bearer bench-token' -d '{"active": false}' "${URL%/scim/v2}/_admin/users/$id/active" > /dev/null ||
    { echo "could not disable $id at the test server" >&2; exit 1; }
  "$BUILD/syncd" --config "$N/head.toml" sync --once > "$N/head.log" 2>&1 || { echo "head sync failed" >&2; tail "$N/head.log" >&2; exit 1; }
  serial=$(jq -r .serial "$N/status.json")
  line=$(daemon_wait "$serial")
  daemon "one user disabled, page delta ($i)" "$line" delta
  dlast=$(date +%s)
  node "one user disabled, page delta ($i)" delta
done
node "nothing new"
# The daemon's polls that found nothing new (every second between the
# changes, while the head synced too): the median and largest.
sleep 2
kill "$DPID"
wait "$DPID" 2> /dev/null || true
grep -q 'syncd: stopping' "$N/daemon.log" || { echo "the node daemon did not stop on SIGTERM" >&2; tail "$N/daemon.log" >&2; exit 1; }
sleep 0.2
kill "$WPID" 2> /dev/null || true
# noop COLUMN: the median and largest of a column over those polls (CPU
# against the line before).
noop() {
  awk -v c="$1" 'NR > 1 && $2 == "unchanged" { v["cpu"] = ($6 - ns) / 1e6; v["wall"] = $11 * 1000; v["peak"] = $8 / 1024; print v[c] }
    { ns = $6 }' "$N/polls" | sort -n | awk '{ x[NR] = $1 } END { if (NR) printf "%d %.1f %.1f\n", NR, x[int((NR + 1) / 2)], x[NR] }'
}
read -r nn ncpu ncpumax < <(noop cpu)
read -r _ nwall _ < <(noop wall)
read -r _ npeak npeakmax < <(noop peak)
rows+=("| nothing new ($nn polls, median; largest) | daemon poll (\`syncd run\`), with its idle second before it | – | – | $ncpu ($ncpumax) | $nwall | $npeak ($npeakmax) | – | – | – | – | – |")
read -r _ _ _ _ _ _ rssL _ anonL fileL _ < <(tail -n1 "$N/polls")
echo
echo "The real node, two ways, against one head's publish directory (${SNAPWRITE_NODE_DIR} users,groups from \`scim-testserver -generate\`; the head commits each change with \`syncd sync --once\`; load $load0 at the daemon's start):" \
  "the node's daemon, \`syncd run\` with \`[mirror]\` as the packaged unit runs it (interval 1s, jitter 0s), per poll from /proc/PID (stat's utime+stime in 10 ms ticks, schedstat in ns; peak RSS = VmHWM since the previous poll ended, reset by clear_refs, so a delta's peak excludes the first whole fetch; growth = peak - RSS before the poll; wall = the poll's own time);" \
  "beside it, each change's \`syncd mirror --once\` process (start, one poll, exit; /usr/bin/time). The targets (issue 18): a delta install <= 50 ms of CPU (judged on schedstat for the daemon) and <= 40 MB peak RSS."
echo
echo "| change | node | CPU ms (stat) | of it system ms | CPU ms (schedstat) | wall ms | peak RSS MB | RSS after MB | growth MB | bytes fetched | through the spare | within 50 ms / 40 MB |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "The daemon's RSS after its last poll: $(( rssL / 1024 )) MB, of it $(( anonL / 1024 )) MB anonymous (its heap) and $(( fileL / 1024 )) MB file pages (mostly the syncd binary's own, mapped at start and by the first whole install)."
echo "Live snapshot on the \`mirror --once\` node: $(( $(stat -c %s "$N/node/cache.db") / 1000000 )) MB; its history (default history_keep, history_max_mb):" \
  "$(ls "$N/node/cache.db.history" | grep -c '\.rdelta$' || true) reverse deltas, $(ls "$N/node/cache.db.history" | grep -c '\.db$' || true) whole or linked," \
  "$(du -sk --exclude='*.db' "$N/node/cache.db.history" | cut -f1) KB beside the live file's link."
