#!/usr/bin/env bash
# tests/bench/homes_bench.sh: the homes pass (issue 23) over N users in a
# temp dir: a first pass making every home (mkdir, skel of 3 entries,
# chown) and 100 project directories, then a pass that finds everything
# in place (what every commit and every hour costs). No quota driver: the
# storage's own tools are the cost there (GlusterFS: one `gluster volume
# quota VOL list` per volume and pass, one limit-usage per change).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "### Homes pass"; echo; echo "skipped: needs root (chown)"; exit 77; }
echo "homes bench: BenchmarkPass" >&2
out=$(nice go test -tags=libsqlite3 -count=1 -run '^$' -bench BenchmarkPass -benchtime 1x -timeout 30m ./syncd/homes 2>&1)
rows=$(echo "$out" | awk '/^BenchmarkPass\// {name=$1; sub(/^BenchmarkPass\/users=/, "", name); sub(/-[0-9]+$/, "", name)
  delete v; for (i = 3; i < NF; i += 2) v[$(i+1)] = $i
  printf "| %s | %.2f | %.2f |\n", name, v["s/first-pass"], v["s/second-pass"] }')
[ -n "$rows" ] || { echo "BenchmarkPass failed:" >&2; echo "$out" >&2; exit 1; }
echo "### Homes pass"
echo
echo "| users | first pass s (make every home) | pass with everything in place s |"
echo "|---:|---:|---:|"
echo "$rows"
echo
echo "Temp dir on the test machine's disk; load average $(cut -d' ' -f1 /proc/loadavg) at the end."
