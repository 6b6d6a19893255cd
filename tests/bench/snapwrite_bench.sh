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
# SNAPWRITE_BENCH_USERS (default 2000,20000,100000).
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
MIRROR_BENCH_USERS=$SNAPWRITE_NODE_USERS go test -tags=libsqlite3 -count=1 -timeout 30m -run '^TestBenchDeltaInstall$' ./syncd/mirror/ -v 2>&1 |
  grep -E '^\||users, snapshot' || { echo "node install bench failed" >&2; exit 1; }
