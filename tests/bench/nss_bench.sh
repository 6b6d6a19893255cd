#!/usr/bin/env bash
# nss_bench.sh: libnss_scim against libnss-cache and glibc files, one run.
#
# Builds synthetic snapshots of the two shapes real sites have
# (tests/c/gensnap.sh: 100,000 users and 10,000 groups, one group of 1,000
# members, one user in 50 groups; "project" without private groups, and
# "private" where every user also has a private group as its primary, so
# 110,000 groups), and for each one: dumps it as
# /etc/passwd + /etc/group (host entries first) and as libnss-cache's
# files with nsscache's indexes (mk_nsscache.py), stages them with
# reader.conf -> snapshot in a private mount namespace (tests/lib.sh
# scim_ns: the host's /etc is never changed), and runs nss_bench there.
#
# Prints markdown on stdout, progress on stderr. Exit 0 ok, 1 a wrong
# answer or an unfair comparison, 77 a prerequisite is missing (reason on
# stdout). Knobs: BENCH_USERS BENCH_GROUPS BENCH_ITERS (per call and
# backend) BENCH_BUDGET (seconds per call and backend) BENCH_SEED
# BENCH_WORKDIR (kept if given) BENCH_SHAPES ("project private": which
# shapes, in order) BENCH_THREADS_RT (1: the Threads rows' lookup threads
# at real-time priority, for a machine busy with other work; nss_bench.c,
# thr_rt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(cd "$here/../.." && pwd)}
. "$ROOT/tests/lib.sh"

users=${BENCH_USERS:-100000} groups=${BENCH_GROUPS:-10000}
iters=${BENCH_ITERS:-20000} budget=${BENCH_BUDGET:-1.0} seed=${BENCH_SEED:-42}

skip() { echo "### NSS lookups"; echo; echo "Skipped: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (a private mount namespace with overlays on /etc)."
command -v python3 >/dev/null || skip "python3 missing."
command -v sqlite3 >/dev/null || skip "sqlite3 missing (make deps)."
[ -x "$ROOT/tests/c/gensnap.sh" ] || skip "tests/c/gensnap.sh missing."

backends=scim,cache,files notes=()
if [ ! -f "$BUILD/libnss_scim.so.2" ]; then
  backends=${backends/scim,/}; notes+=("libnss_scim.so.2 not built (make all): scim not measured.")
fi
if [ ! -e "$LIBDIR/libnss_cache.so.2" ]; then
  backends=${backends/cache,/}; notes+=("libnss-cache not installed (make deps): not measured.")
fi

if [ -n "${BENCH_WORKDIR:-}" ]; then
  work=$BENCH_WORKDIR; mkdir -p "$work"
else
  work=$(mktemp -d /tmp/scimbridge-nssbench.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
chmod 0755 "$work"

mkdir -p "$BUILD/bench"
# fopen/fseek exported so that they interpose on libnss-cache's calls
# (nss_bench.c counts them to prove the indexes are used); pread and
# __pread_chk on libnss_scim's (counted per call in a fresh program).
${CC:-gcc} -O2 -g -std=gnu11 -Wall -Wextra -D_GNU_SOURCE \
  -Wl,--export-dynamic-symbol=fopen -Wl,--export-dynamic-symbol=fseek \
  -Wl,--export-dynamic-symbol=pread -Wl,--export-dynamic-symbol=__pread_chk \
  -o "$BUILD/bench/nss_bench" "$here/nss_bench.c" -ldl -lpthread
# The module that answers at once (the Threads table's "glibc's dispatch
# alone" rows), staged beside libnss_scim.so.2 in each stage; never installed.
${CC:-gcc} -O2 -g -std=gnu11 -Wall -Wextra -shared -fPIC -Wl,-soname,libnss_scimnull.so.2 \
  -o "$BUILD/bench/libnss_scimnull.so.2" "$here/nss_null.c"

# shape NAME PRIVATE: one data shape, its own snapshot, stage and SSSD.
shape() {
  local name=$1 private=$2 w=$work/$1 be=$backends run=()
  mkdir -p "$w"
  echo "nss_bench: $name shape: snapshot of $users users, $groups groups in $w" >&2
  PRIVATE=$private "$ROOT/tests/c/gensnap.sh" "$users" "$groups" "$w/cache.db"
  stage_new "$w/stage" "$w/cache.db"
  install -m 0644 "$BUILD/bench/libnss_scimnull.so.2" "$w/stage/lib/"
  # libnss-cache's files next to the snapshot, not on the /etc overlay (see
  # nss_bench.c: the overlay would add ~1.3 µs to each of its opens).
  mkdir -p "$w/nsscache"
  python3 "$here/mk_nsscache.py" "$w/cache.db" "$w/stage/etc" "$w/nsscache"
  if [ -n "$sr" ]; then
    cp -a "$sr/usr/lib/$MULTIARCH/." "$w/stage/lib/"
    mkdir -p "$w/stage/etc/sssd"
    printf '%s\n' "$sssd_conf" > "$w/stage/etc/sssd/sssd.conf"
    chmod 0600 "$w/stage/etc/sssd/sssd.conf"; chmod 0711 "$w/stage/etc/sssd"
    run=("$here/sssd_ns.sh" "$sr" "$w/sssd")
    be=$be,sss
  fi
  if [ "$private" = 1 ]; then
    printf '\n## Shape "private": %s users, each with a private group as its primary, and %s project groups\n\n' "$users" "$groups"
  else
    printf '\n## Shape "project": %s users, %s groups, no private groups\n\n' "$users" "$groups"
  fi
  # reader.conf bind-mounted from the stage, not read through the /etc
  # overlay, as libnss-cache's files sit next to the snapshot: an open
  # through the overlay costs more than a plain one (each new program's
  # first scim lookup opens reader.conf; no other backend reads a file of
  # its own under /etc).
  scim_ns "$w/stage" /bin/bash -c 'mount --bind "$1" /etc/scimbridge && shift && exec "$@"' conf \
    "$w/stage/etc/scimbridge" ${run[@]+"${run[@]}"} "$BUILD/bench/nss_bench" -n "$iters" -t "$budget" -s "$seed" \
    -b "$be" -c "$w/nsscache" || return
  # The same threads as a plain program runs them: glibc reads
  # nsswitch.conf ("passwd: scim" alone, bind-mounted in the namespace),
  # no __nss_configure_lookup (nss_bench.c, plain_threads).
  printf '\n### Threads in a plain program: random getpwuid_r, glibc reading nsswitch.conf (median of 5 rounds of 0.4 s)\n\n'
  printf '| backend | 1 thread, lookups/s | 2 threads | 4 threads | CPU ns per lookup, 1 / 2 / 4 threads | waits per million lookups, 1 / 2 / 4 threads |\n|---|---:|---:|---:|---:|---:|\n'
  local svc
  for svc in scim scimnull; do
    sed -E "s/^passwd:.*/passwd:         $svc/" "$w/stage/etc/nsswitch.conf" > "$w/nsswitch-$svc.conf"
    chmod 0644 "$w/nsswitch-$svc.conf"
    scim_ns "$w/stage" /bin/bash -c 'mount --bind "$1" /etc/scimbridge && mount --bind "$2" /etc/nsswitch.conf &&
      shift 2 && exec "$@"' conf "$w/stage/etc/scimbridge" "$w/nsswitch-$svc.conf" \
      "$BUILD/bench/nss_bench" -n "$iters" -s "$seed" -c "$w/nsscache" -P "$svc" || return
  done
  printf '\nload average %s after these rows. The Threads table'"'"'s keys and checks, in a program that never calls __nss_configure_lookup: before each call glibc (2.36) stats /etc/nsswitch.conf and takes its NSS lock to see whether the file changed, stores the action list into its process-wide __nss_passwd_database, and (no nscd running) adds one to a process-wide call count, trying nscd'"'"'s socket every 100th call (strace of 1,000 calls: 1,021 stats, 11 socket + connect).\n' \
    "$(cut -d' ' -f1 /proc/loadavg)"
}

# SSSD as a peer (BENCH_SSSD=0 skips it): Debian's sssd-proxy unpacked, not
# installed (sssd_setup.sh), running only inside the namespace
# (sssd_ns.sh). Its proxy provider reads the snapshot through
# libnss_scim: a warm memory-cache answer never reaches the provider, and
# the warm-up of 20,000 keys per row through the files provider (a scan
# of /etc/passwd per key) would take minutes.
sr=
sssd_conf='[sssd]
services = nss
domains = bench

[nss]
memcache_timeout = 3600
memcache_size_passwd = 64
memcache_size_group = 64
memcache_size_initgroups = 64

[domain/bench]
id_provider = proxy
proxy_lib_name = scim
auth_provider = none
enumerate = false
entry_cache_timeout = 3600'
if [ "${BENCH_SSSD:-1}" != 0 ]; then
  if "$here/sssd_setup.sh" "$BUILD/bench/sssd" >&2; then
    sr=$BUILD/bench/sssd/root
    sssd_version=$(dpkg-deb -f "$(ls "$BUILD"/bench/sssd/debs/sssd-common_*.deb | head -1)" Version 2>/dev/null || echo "?")
  else
    notes+=("SSSD not measured: its packages could not be fetched with apt-get download.")
  fi
fi

rc=0
for s in ${BENCH_SHAPES:-project private}; do
  case $s in
    project) shape project 0 || rc=$? ;;
    private) shape private 1 || rc=$? ;;
    *) echo "nss_bench: unknown shape $s (BENCH_SHAPES: project private)" >&2; rc=1 ;;
  esac
done
# A user in 70,000 groups (issue 10: the quadratic de-duplication took
# 3.5 s): getgrouplist through glibc, checked count. glibc passes
# NGROUPS_MAX (65,536) as the limit, the primary included.
if [ "$rc" = 0 ]; then
  ${CC:-gcc} -O2 -std=gnu11 -Wall -o "$BUILD/bench/initgroups_time" "$here/initgroups_time.c"
  "$ROOT/tests/c/gensnap.sh" 20 70000 "$work/huge.db" 5
  sqlite3 "$work/huge.db" "INSERT OR IGNORE INTO memberships SELECT gid, 'u000004' FROM groups"
  derive "$work/huge.db"; chmod 0644 "$work/huge.db"
  stage_new "$work/stage-huge" "$work/huge.db"
  hp=$(sqlite3 "$work/huge.db" "SELECT gid FROM users WHERE name = 'u000004'")
  if t=$(scim_ns "$work/stage-huge" "$BUILD/bench/initgroups_time" u000004 "$hp" 65536 21); then
    read -r first warm <<<"$t"
    printf '\n### A user in 70,000 groups\n\n'
    printf 'getgrouplist through glibc and libnss_scim, 65,536 gids returned (glibc'"'"'s NGROUPS_MAX, the primary included), every answer counted: first call in a new process %s ms (module load, open, one buffer growth), then %s ms (median of 21).\n' "$first" "$warm"
  else
    echo "initgroups_time: $t" >&2; rc=1
  fi
fi

cat <<EOF

How to read it:
- scim: the snapshot's NSS index (syncd/snapshot/index.go), read from the reader's
  own mapping of the immutable file, without SQL: a key's hash bucket (one 4 KiB
  chunk listing its entries' tags), then the record. A 64 KiB stretch of the file
  is read with pread the first three times a process needs it and mapped the
  fourth (a page fault costs more than a pread), and a forked child keeps its
  parent's open snapshot. The snapshot's path is
  stat()ed at most once a second per process (to notice a replaced file), not per
  call; SQLite is loaded (the module's own copy, beside it) and opened only by
  calls that need SQL (none here but enumeration).
  "random" keys miss the CPU caches: the backends take turns, so each evicts the
  others' data.
  Its "RSS growth" is mostly snapshot pages mapped from the page cache: shared with
  every other process, counted in each one's RSS; "anon growth" is its private memory.
  Its reader.conf is bind-mounted from the stage onto /etc/scimbridge, not read
  through the namespace's /etc overlay (as libnss-cache's files below).
- libnss-cache: every call opens, stats and mmaps the index, bsearches it, then opens
  the data file, seeks and parses one line (the index check above proves this path).
  Its files sit next to the snapshot, not on the namespace's /etc overlay.
- files: glibc scans /etc/passwd or /etc/group from the top on every call. The
  1,000-member group is the first snapshot line in /etc/group, so that row measures
  parsing it, not scanning.
- SSSD memcache: SSSD ${sssd_version:-(not run)} (sssd-proxy, proxy provider over libnss_scim,
  memory caches of 64 MB each, unpacked from Debian's packages and started inside the
  namespace; the host has no SSSD). Every key of a row is looked up once through sssd
  before the row is timed, so its timed calls are answered from the mmap'ed memory
  cache, never over the socket (a miss there would be). It filters root, as configured
  by default; its "missing name" row is a socket round trip (misses are not cached).
- getgrouplist: libnss-cache has no initgroups, so glibc walks every group through it;
  files walks /etc/group; scim reads the user's gid list from its index record.
EOF
for n in ${notes[@]+"${notes[@]}"}; do echo; echo "Note: $n"; done
exit "$rc"
