# tests/lib.sh: shared helpers for the shell test suites. Source it.
#
# Results: ok/bad print the PASS:/FAIL: lines tests/run counts.
# Isolation: scim_ns runs a command in a private mount namespace where
# /etc and the multiarch library directory are overlays: files staged in
# $STAGE/etc and $STAGE/lib shadow the host's (nsswitch.conf, reader.conf,
# pam.d, sudoers.d, libnss_scim.so.2, security/pam_scim.so). The overlays
# are read-only (no upper dir), so any number of namespaces can share one
# stage at once and the host's /etc is never changed.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
LIBDIR=/lib/$MULTIARCH
LIBDIR=$(readlink -f "$LIBDIR")

# The reader as the modules link it: its parts (the Makefile's READER_SRC)
# over the private SQLite (c/sqlite_private.c; `make modules` builds
# $BUILD/sqlite/sqlite3.o). Test programs that stand for a module compile
# with these.
READER_SRC=($(sed -n '/^READER_SRC :=/,/[^\\]$/p' "$ROOT/Makefile" | sed 's/^READER_SRC :=//; s/\\$//'))
READER_SRC=("${READER_SRC[@]/#/$ROOT/}")
READER_CFLAGS=(-I"$BUILD/sqlite")
READER_LIBS=("${READER_SRC[@]}" "$BUILD/sqlite/sqlite3.o" -lpthread)

# derive DB: fills the snapshot's derived user_groups table after a test
# added rows by hand (syncd/snapshot/derive.sql; syncd's writer fills it).
# It also rebuilds the NSS index of a file that has one (scim-nssindex).
derive() {
  sqlite3 -bail "$1" < "$ROOT/syncd/snapshot/derive.sql" || return
  if [ "$(sqlite3 "$1" 'SELECT count(*) FROM nss_index' 2>/dev/null)" = 1 ]; then
    "$BUILD/scim-nssindex" "$1"
  fi
}

_pass=0; _fail=0
ok()  { echo "PASS: $*"; _pass=$((_pass + 1)); }
bad() { echo "FAIL: $*"; _fail=$((_fail + 1)); }
# check DESCRIPTION CMD...: PASS if CMD exits 0.
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1"; printf '  expected: %q\n  actual:   %q\n' "$2" "$3"; fi
}
# waitfor SECONDS CMD...: runs CMD every 0.2 s until it succeeds.
waitfor() {
  local n=$(($1 * 5))
  shift
  while [ "$n" -gt 0 ]; do
    "$@" > /dev/null 2>&1 && return 0
    sleep 0.2
    n=$((n - 1))
  done
  return 1
}
summary() { echo "$_pass passed, $_fail failed"; [ "$_fail" -eq 0 ]; }

# stage_new DIR CACHE: a stage whose reader.conf points at CACHE, whose
# nsswitch.conf lists scim after files, and whose lib overlay holds the
# freshly built modules.
stage_new() {
  local st=$1 cache=$2
  mkdir -p "$st/etc/scimbridge" "$st/lib/security"
  printf 'cache_path = %s\n' "$cache" > "$st/etc/scimbridge/reader.conf"
  chmod 0644 "$st/etc/scimbridge/reader.conf"
  sed -E -e 's/^(passwd|group|shadow):.*/\1:         files scim/' -e '/^(shadow):/s/ scim//' \
    /etc/nsswitch.conf > "$st/etc/nsswitch.conf"
  chmod 0644 "$st/etc/nsswitch.conf"
  [ -f "$BUILD/libnss_scim.so.2" ] && install -m 0644 "$BUILD/libnss_scim.so.2" "$st/lib/"
  # The NSS module's SQLite, beside it as installed (loaded on its first SQL call).
  [ -f "$BUILD/scimbridge/libscimbridge-sqlite.so" ] &&
    install -D -m 0644 "$BUILD/scimbridge/libscimbridge-sqlite.so" "$st/lib/scimbridge/libscimbridge-sqlite.so"
  [ -f "$BUILD/pam_scim.so" ] && install -m 0644 "$BUILD/pam_scim.so" "$st/lib/security/"
  chmod 0755 "$st" "$st/etc" "$st/lib" "$st/lib/security" "$st/etc/scimbridge"
  [ ! -d "$st/lib/scimbridge" ] || chmod 0755 "$st/lib/scimbridge"
  return 0
}

# scim_ns STAGE CMD...: run CMD with the stage overlaid on /etc and $LIBDIR.
scim_ns() { (scim_ns_exec "$@"); }
# scim_ns_exec STAGE CMD...: scim_ns replacing the calling (sub)shell. For
# servers in the background: `scim_ns_exec ST CMD... &` makes $! the PID of
# CMD itself (the subshell, unshare and the inner bash all exec into it), so
# killing $! stops CMD. (`scim_ns ... &` would leave $! a bash subshell
# whose death orphans CMD.)
scim_ns_exec() {
  local st=$1; shift
  exec unshare --mount --propagation private -- /bin/bash -c '
    set -e
    st=$1; lib=$2; shift 2
    mount -t overlay scim-etc -o "lowerdir=$st/etc:/etc" /etc
    mount -t overlay scim-lib -o "lowerdir=$st/lib:$lib" "$lib"
    exec "$@"' scim_ns "$st" "$LIBDIR" "$@"
}

# Processes a suite starts are stopped by the PIDs it recorded, never by
# name: other suites and other checkouts run the same programs at once.
# kill_tree PID...: stops each PID and every descendant of it (found by
# parent PID): SIGTERM, up to 5 s, then SIGKILL. Reaps the shell's children.
kill_tree() {
  local pids=() p q all
  for p in "$@"; do [[ "$p" =~ ^[0-9]+$ ]] && pids+=("$p"); done
  [ ${#pids[@]} -gt 0 ] || return 0
  all=$(ps -eo pid=,ppid= | awk -v roots="${pids[*]}" '
    { kids[$2] = kids[$2] " " $1 }
    END { n = split(roots, q, " "); for (i = 1; i <= n; i++) { if (seen[q[i]]++) continue; print q[i];
            m = split(kids[q[i]], c, " "); for (j = 1; j <= m; j++) q[++n] = c[j] } }')
  # shellcheck disable=SC2086
  kill -TERM $all 2> /dev/null
  for _ in $(seq 25); do
    q=
    for p in $all; do kill -0 "$p" 2> /dev/null && q=1; done
    [ -n "$q" ] || break
    sleep 0.2
  done
  # shellcheck disable=SC2086
  [ -z "$q" ] || kill -KILL $all 2> /dev/null
  for p in "${pids[@]}"; do wait "$p" 2> /dev/null; done
  return 0
}
# on_exit FUNC: FUNC runs when the suite exits: normally, on failure, and on
# SIGINT/SIGTERM/SIGHUP (which become an exit, so the EXIT trap runs once).
on_exit() {
  trap "$1" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
}
# left_running DIR: a FAIL line listing any process still running whose
# command line names DIR (the suite's temp dir) after its cleanup. Reports
# only: what a suite starts, it stops by PID.
left_running() {
  local left
  [ -n "$1" ] || return 0
  left=$(ps -eo pid=,args= | awk -v d="$1" -v me=$$ 'index($0, d) && $1 != me && $2 != "awk" && $2 != "ps"')
  [ -z "$left" ] || { echo "FAIL: processes left running after the suite's cleanup (named $1):"; echo "$left" | sed 's/^/  /'; }
}
