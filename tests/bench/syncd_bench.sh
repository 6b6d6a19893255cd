#!/usr/bin/env bash
# tests/bench/syncd_bench.sh: syncd against the SCIM test server, each in
# its own process on 127.0.0.1, so that /usr/bin/time measures syncd
# alone. Prints a markdown section (see tests/bench/run).
#
#   full sync     100,000 users / 10,000 groups into an empty cache: the
#                 test server's first listing, then again (cache removed)
#                 against the warm server
#                 (issue 18's targets: 10 s wall, 200 MB peak RSS; with
#                 the collector's share of the CPU, GODEBUG=gctrace=1)
#   unchanged     the same full fetch again: nothing to commit
#   no-change poll  the cheap meta.lastModified check the daemon makes
#                 between full reconciles (target: 50 ms of syncd CPU),
#                 from BenchmarkNoChangePoll
#   change to manifest  issue 18: from the poll that sees one change to the
#                 signed manifest, per kind of change, beside a full read
#                 (BenchmarkChangeToManifest; SYNCD_BENCH_CHANGES changes each)
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
USERS=${SYNCD_BENCH_USERS:-100000}
GROUPS_=${SYNCD_BENCH_GROUPS:-10000}

for b in syncd scim-testserver; do
  [ -x "$BUILD/$b" ] || { echo "### syncd"; echo; echo "skipped: $BUILD/$b missing (make all)"; exit 77; }
done
[ -x /usr/bin/time ] || { echo "### syncd"; echo; echo "skipped: /usr/bin/time missing"; exit 77; }

T=$(mktemp -d /tmp/syncd-bench.XXXXXX)
SRV=
cleanup() {
  [ -n "$SRV" ] && kill "$SRV" 2> /dev/null && wait "$SRV" 2> /dev/null
  rm -rf "$T"
}
trap cleanup EXIT
(umask 077; echo bench-token > "$T/token")

"$BUILD/scim-testserver" -generate "$USERS,$GROUPS_" -cursor -token-file "$T/token" > "$T/url" 2> "$T/server.log" &
SRV=$!
for _ in $(seq 1 300); do [ -s "$T/url" ] && break; sleep 0.2; done
URL=$(head -n1 "$T/url")
[ -n "$URL" ] || { echo "scim-testserver did not start" >&2; cat "$T/server.log" >&2; exit 1; }
printf '%s\n' "base_url = \"$URL\"" "token_file = \"$T/token\"" 'preset = "posix"' 'page_size = 1000' \
  "cache_path = \"$T/cache.db\"" "status_path = \"$T/status.json\"" > "$T/syncd.toml"
chmod 0600 "$T/syncd.toml"

# run NAME ARGS...: one timed syncd run; prints a table row. GC % is the
# runtime's own estimate (GODEBUG=gctrace=1, its last line: the
# percentage of time spent in the collector since the process started), with
# the number of collections; the load average is the 1-minute one
# before the run (wall time is only comparable on a quiet machine).
run() {
  local name=$1; shift
  echo "syncd bench: $name" >&2
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  if ! GODEBUG=gctrace=1 /usr/bin/time -f '%e %U %S %M' -o "$T/time" "$BUILD/syncd" --config "${CONF:-$T/syncd.toml}" "$@" > "$T/out" 2> "$T/err"; then
    echo "syncd $* failed:" >&2
    grep -v '^gc ' "$T/err" | tail -n5 >&2
    return 1
  fi
  read -r wall usr sys rss < "$T/time"
  local gcp ngc
  gcp=$(grep '^gc ' "$T/err" | tail -n1 | awk '{print $4}' | tr -d '%:')
  ngc=$(grep -c '^gc ' "$T/err")
  printf '| %s | %s | %.2f | %d | %s | %s | %s |\n' "$name" "$wall" "$(echo "$usr + $sys" | bc)" $((rss / 1024)) "${gcp:-?}" "$ngc" "$load"
}

echo "### syncd: full sync from the SCIM test server"
echo
echo "$USERS users, $GROUPS_ groups, cursor paging, page size 1000; server and syncd in separate processes on 2 shared cores."
echo
echo "| run | wall s | syncd CPU s | syncd peak RSS MB | GC % | GCs | load |"
echo "|---|---|---|---|---|---|---|"
# The test server is a fresh process: its first listing of 100,000 users
# is slower than any later one (its heap grows, its pages are built for
# the first time), while an identity provider syncd polls has long been
# running. The first row is that first listing (into a cache of its own,
# removed after); the same sync then runs into an empty cache again,
# against the warm server.
mkdir "$T/first"
sed -e "s|$T/cache.db|$T/first/cache.db|" -e "s|$T/status.json|$T/first/status.json|" "$T/syncd.toml" > "$T/first.toml"
chmod 0600 "$T/first.toml"
CONF=$T/first.toml run "full sync into an empty cache, the server's first listing" sync --once || exit 1
rm -rf "$T/first"
run "full sync into an empty cache" sync --once || exit 1
users=$(jq -r .users "$T/status.json" 2> /dev/null)
run "full fetch, nothing changed" sync --once || exit 1
[ "$(jq -r .last_result "$T/status.json" 2> /dev/null)" = unchanged ] || { echo "second sync was not 'unchanged'" >&2; exit 1; }
echo
echo "Committed users: $users (the generator leaves about 1% without a POSIX extension; they are rejected)."
kill "$SRV"; wait "$SRV" 2> /dev/null; SRV=

echo "syncd bench: no-change poll" >&2
poll=$(cd "$ROOT" && SCIM_TESTSERVER=$BUILD/scim-testserver go test -tags=libsqlite3 -run '^$' \
  -bench NoChangePoll -benchtime 20x ./syncd 2>&1 | awk '/^BenchmarkNoChangePoll/ {print $3/1e6, $5}')
[ -n "$poll" ] || { echo "BenchmarkNoChangePoll failed" >&2; exit 1; }
read -r pollwall pollcpu <<< "$poll"
echo
echo "No-change poll (two meta.lastModified filter requests, $USERS users at the server): $pollwall ms wall, $pollcpu ms syncd CPU per poll."

# Issue 18: the read alone (GC share), and a poll that sees one change
# (incremental read + validation + diff, then the writer), side by side
# with the full sync above, which is what the same change cost before.
echo "syncd bench: full read, one-change poll" >&2
inc=$(cd "$ROOT" && SCIM_TESTSERVER=$BUILD/scim-testserver go test -tags=libsqlite3 -run '^$' \
  -bench 'FullRead|^BenchmarkChangePoll$' -benchtime 1x -timeout 60m ./syncd 2>&1)
echo
echo "| benchmark | figures (per op) |"
echo "|---|---|"
echo "$inc" | awk '/^Benchmark(FullRead|ChangePoll)/ {name=$1; sub(/-[0-9]+$/, "", name); $1=""; $2=""; print "| " name " |" $0 " |"}'
echo
echo "FullRead: Fetch alone (every page decoded) with syncd's memory limit; gc-% is the runtime's estimate of CPU in the collector."
echo "ChangePoll: one user disabled/enabled at the server, then the daemon's poll: read-s (the incremental read), load-live-s, validate-s, diff-s, before-write-s (their sum: this pipeline's share of the 2 s target), write-s (snapshot.Update), poll-s (all)."

# Issue 18's headline: from the poll that sees one change to the signed
# manifest (poll + publish with page deltas and zstd), per kind of change,
# side by side with the same disable read in full.
echo "syncd bench: change to signed manifest" >&2
c2m=$(cd "$ROOT" && SCIM_TESTSERVER=$BUILD/scim-testserver go test -tags=libsqlite3 -run '^$' \
  -bench 'ChangeToManifest' -benchtime "${SYNCD_BENCH_CHANGES:-10}x" -timeout 90m ./syncd 2>&1)
echo
echo "#### From the poll that sees one change to the signed manifest ($USERS users, $GROUPS_ groups)"
echo
echo "| change | p50 s | p95 s | max s | poll s | publish s | CPU s | GC % |"
echo "|---|---|---|---|---|---|---|---|"
echo "$c2m" | awk '/^BenchmarkChangeToManifest\// {
  name=$1; sub(/^BenchmarkChangeToManifest\//, "", name); sub(/-[0-9]+$/, "", name)
  delete v; for (i = 5; i < NF; i += 2) v[$(i+1)] = $i
  printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, v["p50-s"], v["p95-s"], v["max-s"], v["poll-s"], v["publish-s"], v["cpu-s/op"], v["gc-%"] }'
echo
echo "Issue 18's eight kinds, each its own row: disable and enable (a user, then the same user again), add-member and remove-member (a user to a mid-sized group and back), new-user (uid, slurm-users as primary group, home), rename (that new user's userName, same SCIM id), new-key (one user's SSH key replaced), delete-user (a new user deleted; the poll is one that also checks for deletions, as every removal_check_interval): the daemon's incremental read. full-read: a disable or enable read in full, the path every change took before issue 18. CPU and GC are syncd's (the server is another process), including the explain record written in the background after each change."
