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

# The reader as the modules link it: c/scimcache.c over the private SQLite
# (c/sqlite_private.c; `make modules` builds $BUILD/sqlite/sqlite3.o).
# Test programs that stand for a module compile with these.
READER_CFLAGS=(-I"$BUILD/sqlite")
READER_LIBS=(c/scimcache.c "$BUILD/sqlite/sqlite3.o" -lpthread)

# derive DB: fills the snapshot's derived user_groups table after a test
# added rows by hand (syncd/snapshot/derive.sql; syncd's writer fills it).
derive() { sqlite3 -bail "$1" < "$ROOT/syncd/snapshot/derive.sql"; }

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
  [ -f "$BUILD/pam_scim.so" ] && install -m 0644 "$BUILD/pam_scim.so" "$st/lib/security/"
  chmod 0755 "$st" "$st/etc" "$st/lib" "$st/lib/security" "$st/etc/scimbridge"
  return 0
}

# scim_ns STAGE CMD...: run CMD with the stage overlaid on /etc and $LIBDIR.
scim_ns() {
  local st=$1; shift
  unshare --mount --propagation private -- /bin/bash -c '
    set -e
    st=$1; lib=$2; shift 2
    mount -t overlay scim-etc -o "lowerdir=$st/etc:/etc" /etc
    mount -t overlay scim-lib -o "lowerdir=$st/lib:$lib" "$lib"
    exec "$@"' scim_ns "$st" "$LIBDIR" "$@"
}
