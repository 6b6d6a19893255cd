#!/usr/bin/env bash
# tests/c/run.sh: the C reader on its own (no NSS): answers against the
# sqlite3 CLI, ERANGE (plain, ASan, valgrind), broken files, random
# corruption, fork, swap under rename, fuzzing.
#
# Knobs: FORK_COUNT (10000), SWAP_LOOKUPS (100000 per thread),
# SWAP_RENAMES (1000), CORRUPT_VARIANTS (300), FUZZ_SECONDS (30; 0 skips).
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/lib.sh"
cd "$ROOT"

T=$BUILD/tests
mkdir -p "$T"
work=$(mktemp -d /tmp/reader-tests.XXXXXX)
trap 'rm -rf "$work"' EXIT
CF=(-std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude "${READER_CFLAGS[@]}")
LIBS=("${READER_LIBS[@]}")

# relay PREFIX CMD...: runs a test program that prints its own PASS:/FAIL:
# lines and counts them here (so summary sees them); a program that exits
# non-zero without a FAIL line (a crash) is a failure too.
relay() {
  local prefix=$1 line failed=0 rc=0; shift
  while IFS= read -r line; do
    case $line in
      "PASS: "*) ok "$prefix${line#PASS: }" ;;
      "FAIL: "*) bad "$prefix${line#FAIL: }"; failed=1 ;;
      "EXIT: "*) rc=${line#EXIT: } ;;
      *) echo "  $line" ;;
    esac
  done < <("$@" 2>&1; echo "EXIT: $?")
  if [ "$rc" -ne 0 ] && [ "$failed" = 0 ]; then bad "$prefix$(basename "$1") exited $rc"; fi
}

# --- build ------------------------------------------------------------------
built=1
buildc() { # OUT SRC EXTRA-FLAGS...
  local out=$1 src=$2; shift 2
  if ! "${CC:-gcc}" "${CF[@]}" "$@" -o "$T/$out" "$src" "${LIBS[@]}"; then
    bad "build $out"; built=0
  fi
}
make -s "$BUILD/scimlookup" >/dev/null || { bad "make scimlookup"; built=0; }
buildc scimlookup_asan tests/c/scimlookup.c -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
buildc erange_test tests/c/erange_test.c -O2 -g
buildc erange_test_asan tests/c/erange_test.c -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
buildc fork_test tests/c/fork_test.c -O2 -g
buildc swap_test tests/c/swap_test.c -O2 -g
buildc touch_test tests/c/touch_test.c -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
CC=clang buildc swap_test_tsan tests/c/swap_test.c -O1 -g -fsanitize=thread
CC=clang buildc fork_test_tsan tests/c/fork_test.c -O1 -g -fsanitize=thread
[ "$built" = 1 ] && ok "built the reader's test programs (plain, ASan+UBSan, TSan)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86
L=$BUILD/scimlookup

# --- snapshots ----------------------------------------------------------------
t0=$SECONDS
tests/c/gensnap.sh 100000 10000 "$work/big.db" 1000
tests/c/gensnap.sh 300 30 "$work/small.db" 100
check "gensnap: 100,000 users / 10,000 groups and a small snapshot ($((SECONDS - t0)) s)" \
  test -s "$work/big.db" -a -s "$work/small.db"
q() { sqlite3 "$work/big.db" "$@"; }

# --- answers against the sqlite3 CLI ---------------------------------------
# Every expected line is computed from the file by sqlite3, not written here.
PWSQL="SELECT name||':*:'||uid||':'||gid||':'||gecos||':'||home||':'||shell FROM users"
GRSQL="SELECT g.name||':*:'||g.gid||':'||coalesce((SELECT group_concat(user_name, ',') FROM
       (SELECT user_name FROM memberships m WHERE m.gid = g.gid ORDER BY user_name)), '') FROM groups g"
u_many=$(q "SELECT user_name FROM memberships GROUP BY user_name ORDER BY count(*) DESC, user_name LIMIT 1")
u_rand=$(q "SELECT name FROM users ORDER BY random() LIMIT 1")
u_off=$(q "SELECT name FROM users WHERE active = 0 ORDER BY random() LIMIT 1")
u_keys=$(q "SELECT user_name FROM ssh_keys GROUP BY user_name ORDER BY count(*) DESC LIMIT 1")
u_assoc=$(q "SELECT user_name FROM slurm_associations GROUP BY user_name ORDER BY count(*) DESC, max(blocked) DESC LIMIT 1")
g_big=$(q "SELECT g.name FROM groups g JOIN memberships m USING (gid) GROUP BY g.gid ORDER BY count(*) DESC LIMIT 1")
g_rand=$(q "SELECT name FROM groups ORDER BY random() LIMIT 1")

expect_eq "passwd by name ($u_rand)" "$(q "$PWSQL WHERE name = '$u_rand'")" "$($L -f "$work/big.db" passwd "$u_rand")"
uid=$(q "SELECT uid FROM users WHERE name = '$u_rand'")
expect_eq "passwd by uid ($uid)" "$(q "$PWSQL WHERE uid = $uid")" "$($L -f "$work/big.db" passwd "$uid")"
expect_eq "disabled user still resolves ($u_off)" "$(q "$PWSQL WHERE name = '$u_off'")" "$($L -f "$work/big.db" passwd "$u_off")"
expect_eq "active flag of a disabled user" "0" "$($L -f "$work/big.db" active "$u_off")"
expect_eq "group by name, largest group ($g_big)" "$(q "$GRSQL WHERE g.name = '$g_big'")" "$($L -f "$work/big.db" group "$g_big")"
gid=$(q "SELECT gid FROM groups WHERE name = '$g_rand'")
expect_eq "group by gid ($gid)" "$(q "$GRSQL WHERE g.gid = $gid")" "$($L -f "$work/big.db" group "$gid")"
expect_eq "initgroups of the user in most groups ($u_many)" \
  "$u_many $(q "SELECT group_concat(gid, ' ') FROM (SELECT gid FROM memberships WHERE user_name = '$u_many' ORDER BY gid)")" \
  "$($L -f "$work/big.db" initgroups "$u_many")"
expect_eq "ssh keys in order ($u_keys)" "$(q "SELECT key FROM ssh_keys WHERE user_name = '$u_keys' ORDER BY seq")" \
  "$($L -f "$work/big.db" keys "$u_keys")"
expect_eq "associations ($u_assoc)" \
  "$(q "SELECT account, qos, default_qos, is_default, blocked FROM slurm_associations WHERE user_name = '$u_assoc' ORDER BY account")" \
  "$($L -f "$work/big.db" assoc "$u_assoc")"
expect_eq "meta serial" "$(q "SELECT value FROM meta WHERE key = 'serial'")" "$($L -f "$work/big.db" meta serial)"
t0=$SECONDS
expect_eq "enumerate every user exactly once, in uid order" \
  "$(q "$PWSQL ORDER BY uid" | md5sum)" "$($L -f "$work/big.db" passwd | md5sum)"
expect_eq "enumerate every group with its members" \
  "$(q "$GRSQL ORDER BY g.gid" | md5sum)" "$($L -f "$work/big.db" group | md5sum)"
echo "  (enumerations of 100,000 users and 10,000 groups: $((SECONDS - t0)) s)"
$L -f "$work/big.db" passwd no-such-user >/dev/null; expect_eq "unknown user: exit 2" 2 $?
$L -f "$work/big.db" group 4294967295 >/dev/null; expect_eq "unknown gid: exit 2" 2 $?
$L -f "$work/big.db" keys no-such-user >/dev/null; expect_eq "keys of unknown user: exit 2" 2 $?
$L -f "$work/big.db" meta no-such-key >/dev/null; expect_eq "unknown meta key: exit 2" 2 $?

# Rows syncd never writes and the reader never answers from: root's ids
# and name, and (uid_t)-1. Unknown to every call (PAM and SPANK use
# active, keys and initgroups), also through a snapshot without them.
cp "$work/small.db" "$work/hostile.db"
sqlite3 "$work/hostile.db" "
  INSERT INTO users VALUES (0, 'toor', 200001, '', '/root', '/bin/sh', 1, 'h1'),
    (4294967295, 'minus1', 200001, '', '/x', '/bin/sh', 1, 'h2'),
    (99999, 'wheelie', 0, '', '/x', '/bin/sh', 1, 'h3'),
    (99998, 'root', 200001, '', '/x', '/bin/sh', 1, 'h4');
  INSERT INTO groups VALUES (0, 'wheel0', 'h5', 'u000001'), (4294967295, 'gm1', 'h6', 'u000001'),
    (4294967291, 'root', 'h7', 'u000001');
  INSERT INTO memberships VALUES (0, 'u000001'), (4294967295, 'u000001'), (4294967291, 'u000001');
  INSERT INTO ssh_keys VALUES ('toor', 1, 'ssh-ed25519 AAAA toor'), ('root', 1, 'ssh-ed25519 AAAA root');"
derive "$work/hostile.db"
codes=""
for c in "passwd toor" "passwd 0" "passwd minus1" "passwd 4294967295" "passwd wheelie" "passwd root" "passwd 99998" \
         "active toor" "active wheelie" "active root" "keys toor" "keys root" "initgroups toor" "initgroups root" \
         "group 0" "group wheel0" "group 4294967295" "group gm1" "group root" "group 4294967291"; do
  # shellcheck disable=SC2086
  $L -f "$work/hostile.db" $c >/dev/null 2>&1; codes+="$? "
done
expect_eq "root's ids and name, (uid_t)-1 and primary gid 0: not found by any call" "$(printf '2 %.0s' $(seq 20))" "$codes"
expect_eq "initgroups skips gids 0 and (gid_t)-1 and a group named root" \
  "$($L -f "$work/small.db" initgroups u000001)" "$($L -f "$work/hostile.db" initgroups u000001)"
expect_eq "enumeration skips them" "$($L -f "$work/small.db" passwd | md5sum) $($L -f "$work/small.db" group | md5sum)" \
  "$($L -f "$work/hostile.db" passwd | md5sum) $($L -f "$work/hostile.db" group | md5sum)"
for c in "passwd root" "passwd 0" "group 0" "active root" "initgroups root"; do
  # shellcheck disable=SC2086
  $L -f "$work/no-such.db" $c >/dev/null 2>&1
  expect_eq "no snapshot: '$c' is unavailable (3), not 'not found'" 3 $?
done

# The floor (min_id, default 1000): a hand-made snapshot (no syncd) with
# ids of system accounts and groups (sudo 27, shadow 42, disk 6, adm 4)
# hands out none of them: users below it or with a primary gid below it
# are absent from every call, groups below it are absent, and membership
# in them is dropped. (reader.conf's min_id: tests/nss.)
cp "$work/small.db" "$work/floor.db"
sqlite3 "$work/floor.db" "
  INSERT INTO users VALUES (999, 'lowuid', 200001, '', '/home/lowuid', '/bin/sh', 1, 'f1'),
    (100901, 'shadowgid', 42, '', '/home/shadowgid', '/bin/sh', 1, 'f2'),
    (100902, 'sudogid', 27, '', '/home/sudogid', '/bin/sh', 1, 'f3'),
    (1000, 'atfloor', 1000, '', '/home/atfloor', '/bin/sh', 1, 'f4');
  INSERT INTO groups VALUES (27, 'sudo', 'f5', 'u000001'), (42, 'shadow', 'f6', 'u000001'),
    (6, 'disk', 'f7', 'u000001'), (999, 'g999', 'f8', 'u000001'), (1000, 'g1000', 'f9', 'u000001');
  INSERT INTO memberships VALUES (27, 'u000001'), (42, 'u000001'), (6, 'u000001'), (4, 'u000001'),
    (999, 'u000001'), (1000, 'u000001');
  INSERT INTO ssh_keys VALUES ('lowuid', 1, 'ssh-ed25519 AAAA low'), ('shadowgid', 1, 'ssh-ed25519 AAAA sh');"
derive "$work/floor.db"
codes=""
for c in "passwd lowuid" "passwd 999" "passwd shadowgid" "passwd 100901" "passwd sudogid" "active lowuid" \
         "active shadowgid" "keys lowuid" "keys shadowgid" "initgroups lowuid" "initgroups shadowgid" \
         "group 27" "group sudo" "group 42" "group shadow" "group 6" "group disk" "group 999" "group g999"; do
  # shellcheck disable=SC2086
  $L -f "$work/floor.db" $c >/dev/null 2>&1; codes+="$? "
done
expect_eq "floor: uids, primary gids and groups below 1000 are not found by any call" "$(printf '2 %.0s' $(seq 19))" "$codes"
expect_eq "floor: id 1000 itself is answered" "atfloor:*:1000:1000::/home/atfloor:/bin/sh g1000:*:1000:u000001" \
  "$($L -f "$work/floor.db" passwd atfloor) $($L -f "$work/floor.db" group 1000)"
expect_eq "floor: initgroups drops gids 4, 6, 27, 42, 999 and keeps 1000" \
  "$($L -f "$work/small.db" initgroups u000001 | sed 's/^u000001/u000001 1000/')" "$($L -f "$work/floor.db" initgroups u000001)"
expect_eq "floor: enumeration lists nothing below it" "" \
  "$($L -f "$work/floor.db" passwd | awk -F: '$3 < 1000 || $4 < 1000'; $L -f "$work/floor.db" group | awk -F: '$3 < 1000')"

# Trust and identity: a touch (syncd's freshness mark) is not a new file;
# a file or directory others can write is refused, its reason named.
ft=$work/trust; mkdir -p "$ft"; chmod 0755 "$ft"
cp "$work/small.db" "$ft/live.db"; tests/c/gensnap.sh 30 5 "$ft/new.db" 5
relay "" "$T/touch_test" "$ft/live.db" "$ft/new.db" u000001

# --- ERANGE ---------------------------------------------------------------------
# Each run checks every buffer size from 1 byte up (see erange_test.c).
args=(-u "$u_many" -g "$g_big")
sargs=(-u "$(sqlite3 "$work/small.db" "SELECT user_name FROM memberships GROUP BY user_name ORDER BY count(*) DESC LIMIT 1")"
       -g "$(sqlite3 "$work/small.db" "SELECT g.name FROM groups g JOIN memberships m USING (gid) GROUP BY g.gid ORDER BY count(*) DESC LIMIT 1")")
relay "" "$T/erange_test" -f "$work/big.db" "${args[@]}"
relay "asan: " "$T/erange_test_asan" -f "$work/small.db" "${sargs[@]}"
t0=$SECONDS
relay "valgrind: " valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
  "$T/erange_test" -f "$work/small.db" "${sargs[@]}"
echo "  (valgrind run: $((SECONDS - t0)) s)"

# --- broken files -------------------------------------------------------------
b=$work/broken; mkdir -p "$b/dir.db"
size=$(stat -c %s "$work/small.db"); page=$(sqlite3 "$work/small.db" "PRAGMA page_size")
: > "$b/empty.db"
printf 'cache_path = /nowhere\n' > "$b/text.db"
head -c 65536 /dev/urandom > "$b/garbage.db"
head -c 100 "$work/small.db" > "$b/header-only.db"
head -c $((size / 2 + 17)) "$work/small.db" > "$b/truncated-half.db"
head -c $((size - page)) "$work/small.db" > "$b/truncated-page.db"
{ cat "$work/small.db"; head -c "$page" /dev/zero; } > "$b/extended.db"
{ head -c "$page" /dev/zero; tail -c +$((page + 1)) "$work/small.db"; } > "$b/zeroed-first-page.db"
SCHEMA_VERSION=99 tests/c/gensnap.sh 300 30 "$b/schema-v99.db" 100
cp "$work/small.db" "$b/other-app.db"; sqlite3 "$b/other-app.db" "PRAGMA application_id = 7"
# view, no-meta and no-table test what opening through SQL checks: without
# the NSS index, which answers passwd/group/initgroups before any table is
# read (a file syncd wrote always has them all; no-meta's index, rebuilt,
# would say version 0 and be refused as well).
cp "$work/small.db" "$b/no-table.db"; sqlite3 "$b/no-table.db" "DROP TABLE ssh_keys; DELETE FROM nss_index"
cp "$work/small.db" "$b/view.db"
sqlite3 "$b/view.db" "ALTER TABLE users RENAME TO u2; CREATE VIEW users AS SELECT * FROM u2; DELETE FROM nss_index"
cp "$work/small.db" "$b/no-meta.db"; sqlite3 "$b/no-meta.db" "DELETE FROM meta WHERE key = 'schema_version'; DELETE FROM nss_index"
sqlite3 "$b/plain.db" "CREATE TABLE t (x); INSERT INTO t VALUES (1)"
u1=$(sqlite3 "$work/small.db" "SELECT name FROM users LIMIT 1")
cmds=("passwd $u1" "passwd 100001" "passwd" "group g00001" "group" "initgroups $u1" "keys $u1" "assoc $u1" "active $u1" "meta" "check")
for f in "$b/missing.db" "$b"/*.db; do
  n=$(basename "$f" .db); codes=""
  for c in "${cmds[@]}"; do
    # shellcheck disable=SC2086
    timeout 20 "$T/scimlookup_asan" -f "$f" $c >/dev/null 2>"$work/err"
    codes+="$? "
  done
  expect_eq "broken file '$n': every lookup unavailable (exit 3), no crash, ASan clean" \
    "$(printf '3 %.0s' "${cmds[@]}")" "$codes"
  [ "$codes" = "$(printf '3 %.0s' "${cmds[@]}")" ] || cat "$work/err"
done
# A real find of the corruption loop below: a B-tree whose keys are out of
# order made every enumeration return the same user forever.
# (Converted to schema version 2 with the sqlite3 CLI: the version, an
# empty user_groups; the damaged users B-tree is as the fuzzer left it.)
timeout 20 "$T/scimlookup_asan" -f tests/c/regress/keys-out-of-order.db passwd >/dev/null 2>"$work/err"
expect_eq "regression: B-tree with keys out of order ends the walk as unavailable" "3 corrupt: keys out of order" \
  "$? $(grep -o 'corrupt: keys out of order' "$work/err" | head -1)"
msg=$($L -f "$b/schema-v99.db" check 2>&1)
case $msg in *"schema_version 99"*) ok "wrong schema version is named in the error: $msg" ;;
  *) bad "wrong schema version message: $msg" ;; esac
for f in "$b/truncated-half.db" "$b/schema-v99.db" "$b/garbage.db"; do
  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    "$L" -f "$f" passwd "$u1" >/dev/null 2>"$work/vg"
  rc=$?
  expect_eq "valgrind: $(basename "$f") is unavailable with no memory errors" 3 "$rc"
  grep -v '^scimlookup:' "$work/vg" | head -5
done

# Random damage past the header: SQLite may still answer lookups that miss
# the damaged pages, so the check is: no crash, no hang, no sanitizer report.
variants=${CORRUPT_VARIANTS:-300}
crashes=0 hangs=0 answered=0 unavail=0
for ((v = 0; v < variants; v++)); do
  f=$work/corrupt.db; cp "$work/small.db" "$f"
  for ((k = 0; k < 1 + v % 16; k++)); do
    off=$((100 + (RANDOM * 32768 + RANDOM) % (size - 100)))
    printf "\\x$(printf %02x $((RANDOM % 256)))" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
  done
  for c in "passwd $u1" "group" "initgroups $u1" "passwd"; do
    # shellcheck disable=SC2086
    timeout 20 "$T/scimlookup_asan" -f "$f" $c >/dev/null 2>"$work/err"; rc=$?
    case $rc in
      0|2) answered=$((answered + 1)) ;;
      3) unavail=$((unavail + 1)) ;;
      124) hangs=$((hangs + 1)); cp "$f" "/tmp/scim-hang.$v.db" ;;
      *) crashes=$((crashes + 1)); cp "$f" "/tmp/scim-crash.$v.db"; head -20 "$work/err" ;;
    esac
  done
done
expect_eq "random corruption: $variants damaged files x 4 lookups, no crash or hang ($answered answered, $unavail unavailable)" \
  "0 0" "$crashes $hangs"

# --- spank_scim.so without Slurm (tests/c/spank_host.c) -----------------------
# Each context's callbacks in Slurm's order. The rule that matters most:
# in slurmd and job_script context (slurmd itself, its prolog/epilog) no
# callback may fail whatever the configuration or the user, since that
# drains the node; in remote context only task_init may refuse.
if make -s "$BUILD/spank_scim.so" "$BUILD/spank_host" >/dev/null; then
  SH=$BUILD/spank_host SP=$BUILD/spank_scim.so
  sp=$work/spank; mkdir -p "$sp"; chmod 0711 "$work"; chmod 0755 "$sp"
  cp "$work/small.db" "$sp/cache.db"; chmod 0644 "$sp/cache.db"
  cp "$work/small.db" "$sp/old.db"; chmod 0644 "$sp/old.db"
  # Stale = the file's mtime (last contact with the source), not created_at.
  sqlite3 "$sp/old.db" "UPDATE meta SET value = '2000-01-01T00:00:00Z' WHERE key = 'created_at'"
  cp -p "$sp/old.db" "$sp/quiet.db"; touch -d '2000-01-01 00:00:00 UTC' "$sp/old.db"
  # u000097 (disabled) and u000001 (active) with 4,090-byte homes: past a
  # fixed 4 KiB buffer, which used to read as "unusable" (missing=open ran
  # the disabled user's job).
  cp "$work/small.db" "$sp/bighome.db"; chmod 0644 "$sp/bighome.db"
  sqlite3 "$sp/bighome.db" "UPDATE users SET home = '/home/' || substr(replace(hex(zeroblob(2100)), '00', 'ab'), 1, 4084)
    WHERE name IN ('u000097', 'u000001')"
  derive "$sp/bighome.db"
  C="cache=$sp/cache.db" OLD="cache=$sp/old.db max_age=3600 missing=closed"
  spank() { # spank EXPECTED-RC DESCRIPTION TEXT-ON-STDERR|"" ARGS...
    local want=$1 d=$2 text=$3 out rc; shift 3
    out=$($SH "$@" 2>&1); rc=$?
    if [ "$rc" = "$want" ] && { [ -z "$text" ] || grep -qF -- "$text" <<<"$out"; }; then ok "spank: $d"
    else bad "spank: $d (rc=$rc, want $want)"; sed 's/^/    /' <<<"$out"; fi
  }
  expect_eq "spank: plugin symbols as SPANK_PLUGIN sets them, for this Slurm" \
    "plugin_name=scim plugin_type=spank plugin_version=SLURM_VERSION_NUMBER spank_plugin_version=1" "$("$SH" -s "$SP")"
  expect_eq "spank: exports only the plugin symbols and its callbacks" \
    "plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init slurm_spank_init_post_opt slurm_spank_task_init spank_plugin_version" \
    "$(nm -D --defined-only "$SP" | awk '{print $3}' | sort | tr '\n' ' ' | sed 's/ $//')"
  spank 0 "allocator: u000001 (active, associations) allowed" "" "$SP" 100001 "$C"
  spank 1 "allocator: u000011 (no association) refused, told why" "has no Slurm association yet" "$SP" 100011 "$C"
  spank 1 "allocator: u000097 (disabled) refused, told why" "is disabled in the identity provider" "$SP" 100097 "$C"
  spank 0 "allocator: u000002 (acct1 open, acct2 blocked) allowed" "" "$SP" 100002 "$C"
  spank 1 "local (srun): u000011 refused" "has no Slurm association yet" -c local "$SP" 100011 "$C"
  spank 0 "local (srun): u000001 allowed" "" -c local "$SP" 100001 "$C"
  spank 0 "allocator: root is exempt" "" "$SP" 0 "$C" missing=closed
  SLURM_JOB_ACCOUNT=acct1 spank 0 "remote: u000001's job on acct1 runs" "" -c remote "$SP" 100001 "$C"
  # The job's environment is the user's: SLURM_JOB_ACCOUNT decides nothing
  # (accounts are slurmctld's, AccountingStorageEnforce=associations).
  SLURM_JOB_ACCOUNT=nosuch spank 0 "remote: SLURM_JOB_ACCOUNT in the environment is not trusted: u000001 runs whatever it says" \
    "" -c remote "$SP" 100001 "$C"
  SLURM_JOB_ACCOUNT=acct1 spank 1 "remote: SLURM_JOB_ACCOUNT=acct1 (another user's account) does not pass u000011 (no association)" \
    "spank_scim: user u000011 has no Slurm association" -c remote "$SP" 100011 "$C"
  SLURM_JOB_ID=1 SLURM_JOB_ACCOUNT=acct1 spank 1 "local (srun in an allocation): SLURM_JOB_ACCOUNT=acct1 does not pass u000011" \
    "spank_scim: user u000011 has no Slurm association" -c local "$SP" 100011 "$C"
  SLURM_JOB_ACCOUNT=acct2 spank 0 "remote: a job on a blocked association still runs (it was accepted before the block)" \
    "" -c remote "$SP" 100002 "$C"
  SLURM_JOB_ACCOUNT=acct1 spank 1 "remote: a disabled user's job fails in task_init, and only there" \
    "task_init() failed" -c remote "$SP" 100097 "$C"
  spank 1 "allocator: a stale snapshot (mtime older than max_age) under missing=closed refuses, told why" \
    "the SCIM snapshot is stale: last contact with the identity source" "$SP" 100001 $OLD
  spank 0 "allocator: old content (created_at 2000) with a fresh mtime is not stale: a quiet directory runs" \
    "" "$SP" 100001 "cache=$sp/quiet.db" max_age=3600 missing=closed
  spank 1 "allocator: a quiet directory still refuses a disabled user" "is disabled" "$SP" 100097 "cache=$sp/quiet.db" max_age=3600 missing=closed
  spank 1 "allocator: stale under missing=open: decided from it all the same, the disabled user refused" \
    "is disabled" "$SP" 100097 "cache=$sp/old.db" max_age=3600
  spank 0 "allocator: stale under missing=open: an active user runs, with a warning" \
    "WARNING: the SCIM snapshot is stale" "$SP" 100001 "cache=$sp/old.db" max_age=3600
  for ctx in allocator local remote; do
    SLURM_JOB_ACCOUNT=acct1 spank 1 "$ctx: a disabled user with a 4,090-byte home is refused (buffer grows; not 'unusable')" \
      "user u000097 is disabled" -c $ctx "$SP" 100097 "cache=$sp/bighome.db"
    SLURM_JOB_ACCOUNT=acct1 spank 0 "$ctx: an active user with a 4,090-byte home runs" "" -c $ctx "$SP" 100001 "cache=$sp/bighome.db"
  done
  # Ordering across the cluster (syncd/slurm/doc.go): on a mirror node (a
  # cache.db.mirror.json beside the snapshot) task_init waits up to
  # wait_for_snapshot for a newer snapshot before it refuses; the submit
  # checks and a node without the state file never wait.
  mr=$sp/mirror; mkdir -p "$mr"; chmod 0755 "$mr"
  cp "$work/small.db" "$mr/cache.db"; chmod 0644 "$mr/cache.db"; echo '{}' > "$mr/cache.db.mirror.json"
  cp "$work/small.db" "$mr/enabled.db"; chmod 0644 "$mr/enabled.db"
  sqlite3 "$mr/enabled.db" "UPDATE users SET active = 1 WHERE uid = 100097;
    INSERT INTO slurm_associations VALUES ('u000097', 'acct1', 'normal', 'normal', 1, 0)"; derive "$mr/enabled.db"
  MC="cache=$mr/cache.db"
  ( sleep 1.5; cp -p "$mr/enabled.db" "$mr/.next.db"; mv "$mr/.next.db" "$mr/cache.db" ) &
  t0=$EPOCHREALTIME
  SLURM_JOB_ACCOUNT=acct1 spank 0 "remote on a mirror node: a job refused by the node's copy waits, and runs when the head's newer snapshot (user enabled) arrives" \
    "a newer snapshot arrived after" -c remote "$SP" 100097 "$MC" wait_for_snapshot=20
  wait
  check "spank: ... it waited for the new file, not for the whole wait_for_snapshot (20 s)" \
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{ exit !(b - a >= 1.4 && b - a < 10) }'
  cp -p "$work/small.db" "$mr/cache.db"
  SLURM_JOB_ACCOUNT=acct1 spank 1 "remote on a mirror node: no newer snapshot within wait_for_snapshot=2: refused, saying it waited" \
    "(waited 2s for a newer snapshot: wait_for_snapshot)" -c remote "$SP" 100097 "$MC" wait_for_snapshot=2
  out=$(SLURM_JOB_ACCOUNT=acct1 "$SH" -c remote "$SP" 100097 "$MC" wait_for_snapshot=0 2>&1); rc=$?
  check "spank: wait_for_snapshot=0: refused at once (rc=$rc)" bash -c '[ "$1" = 1 ] && ! grep -q "waiting up to" <<< "$2"' _ "$rc" "$out"
  out=$("$SH" "$SP" 100097 "$MC" 2>&1); rc=$?
  check "spank: the submit check (allocator) never waits (rc=$rc)" bash -c '[ "$1" = 1 ] && ! grep -q "waiting up to" <<< "$2"' _ "$rc" "$out"
  out=$(SLURM_JOB_ACCOUNT=acct1 "$SH" -c remote "$SP" 100097 "$C" 2>&1); rc=$?
  check "spank: a node without cache.db.mirror.json (the head's own snapshot) refuses at once (rc=$rc)" \
    bash -c '[ "$1" = 1 ] && ! grep -q "waiting up to" <<< "$2"' _ "$rc" "$out"
  spank 1 "wait_for_snapshot above a day is a bad value" 'bad value in plugstack.conf option "wait_for_snapshot=86401"' \
    "$SP" 100001 "$C" wait_for_snapshot=86401
  # SlurmUser and exempt_users count by their uid in /etc/passwd, never by
  # a snapshot name: on a node without a local slurm account (the stage's
  # passwd has none) a SCIM user named slurm (disabled here) resolves
  # through NSS as "slurm", and is checked like anyone else.
  cp "$work/small.db" "$sp/slurmname.db"; chmod 0644 "$sp/slurmname.db"
  sqlite3 "$sp/slurmname.db" "UPDATE users SET name = 'slurm' WHERE uid = 100097"
  derive "$sp/slurmname.db"
  sst=$work/spank-stage; stage_new "$sst" "$sp/slurmname.db"
  grep -v '^slurm:' /etc/passwd > "$sst/etc/passwd"; chmod 0644 "$sst/etc/passwd"
  expect_eq "spank stage: 'slurm' resolves to the SCIM user (no local slurm account)" "slurm:*:100097" \
    "$(scim_ns "$sst" getent passwd slurm | cut -d: -f1-3)"
  sspank() { local want=$1 d=$2 text=$3; shift 3; SH="scim_ns $sst $BUILD/spank_host" spank "$want" "$d" "$text" "$@"; }
  sspank 1 "a SCIM user named slurm is not exempt as SlurmUser (disabled: refused)" "user slurm is disabled" \
    "$SP" 100097 "cache=$sp/slurmname.db"
  sspank 1 "remote: nor in task_init" "user slurm is disabled" -c remote "$SP" 100097 "cache=$sp/slurmname.db"
  # This node's own /etc/group lists a SCIM user (a stale local line):
  # that user's jobs are refused, at submit and in task_init.
  lgst=$work/spank-localgroup; stage_new "$lgst" "$sp/cache.db"
  { cat /etc/group; echo "scimlocal:x:4242:U000001"; } > "$lgst/etc/group"; chmod 0644 "$lgst/etc/group"
  for ctx in allocator remote; do
    SLURM_JOB_ACCOUNT=acct1 SH="scim_ns $lgst $BUILD/spank_host" spank 1 "$ctx: a SCIM user listed on a local /etc/group line of this node is refused, told why" \
      "user u000001 is listed as a member of local group scimlocal in /etc/group" -c $ctx "$SP" 100001 "$C" wait_for_snapshot=0
  done
  SH="scim_ns $lgst $BUILD/spank_host" spank 0 "... another SCIM user there still runs" "" "$SP" 100002 "$C"
  sspank 1 "exempt_users=u000098 (a name only the snapshot has) exempts nobody" "has no Slurm association" \
    "$SP" 100098 "$C" exempt_users=u000098
  sspank 0 "exempt_users=nobody (a local name) still exempts its uid" "" "$SP" 65534 "$C" exempt_users=nobody
  for cfg in "mode=enforc" "bogus=1" "cache=$sp/none.db missing=closed" "$OLD"; do
    # shellcheck disable=SC2086
    out=$(SLURM_JOB_ACCOUNT=acct1 "$SH" -c remote "$SP" 100001 $cfg 2>&1)
    if grep -q "task_init() failed" <<<"$out" && ! grep -qE "[^_]init\(\) failed|init_post_opt\(\) failed|user_init\(\) failed|exit\(\) failed" <<<"$out"; then
      ok "spank: remote with '$cfg': only task_init fails (the job, not the node)"
    else bad "spank: remote with '$cfg': only task_init fails"; sed 's/^/    /' <<<"$out"; fi
  done
  for c in slurmd job_script; do
    for cfg in "$C" "mode=enforc" "bogus" "cache=$sp/none.db missing=closed" "$OLD"; do
      for u in 100001 100011 100097; do
        # shellcheck disable=SC2086
        spank 0 "$c context, '$cfg', uid $u: no callback fails (that would drain the node)" "" -c "$c" "$SP" "$u" $cfg
      done
    done
  done
  # slurmd context: a slurm.conf that does not enforce associations is
  # named in slurmd's log (spank_scim leaves the job's account to it), and
  # nothing fails either way.
  printf 'ClusterName=x\n' > "$sp/noenforce.conf"
  printf 'ClusterName=x\naccountingstorageenforce = Associations,QOS\n' > "$sp/enforce.conf"
  SLURM_CONF=$sp/noenforce.conf spank 0 "slurmd: slurm.conf without AccountingStorageEnforce is named in slurmd's log" \
    "has no AccountingStorageEnforce: jobs may be charged to any account" -c slurmd "$SP" 100001 "$C"
  out=$(SLURM_CONF=$sp/enforce.conf "$SH" -c slurmd "$SP" 100001 "$C" 2>&1); rc=$?
  if [ "$rc" = 0 ] && ! grep -q AccountingStorageEnforce <<<"$out"; then ok "spank: slurmd: AccountingStorageEnforce=associations: no warning"
  else bad "spank: slurmd with associations enforced: rc=$rc $out"; fi
  # Configuration errors are named, so that a typo never silently
  # disables or widens the check.
  spank 1 "an unknown option is named" 'unknown option "bogus=1" in plugstack.conf' "$SP" 100001 "$C" bogus=1
  spank 1 "a known option without a value is named as such" 'plugstack.conf option "mode" needs a value (mode=...)' "$SP" 100001 "$C" mode
  spank 1 "a bad value is named" 'bad value in plugstack.conf option "max_age=-5"' "$SP" 100001 "$C" max_age=-5
  spank 1 "a relative cache path is a bad value" 'bad value in plugstack.conf option "cache=cache.db"' "$SP" 100001 cache=cache.db
else
  bad "make spank_scim.so spank_host (libslurm-dev installed?)"
fi

# --- fork --------------------------------------------------------------------
t0=$SECONDS
relay "" "$T/fork_test" -f "$work/big.db" -c "${FORK_COUNT:-10000}" -t 4 -k 4 -j 4
# No enumeration: the parent's handle never opens SQLite, so every child
# keeps the parent's snapshot and mapping (fork_child) and reads it from
# four threads at once.
relay "" "$T/fork_test" -E -f "$work/big.db" -c "$(( ${FORK_COUNT:-10000} / 2 ))" -t 4 -k 4 -j 4
echo "  (fork test: $((SECONDS - t0)) s)"

# --- swap under rename --------------------------------------------------------
SERIAL=1 VARIANT=A tests/c/gensnap.sh 20000 2000 "$work/a.db" 1000
SERIAL=2 VARIANT=B tests/c/gensnap.sh 19000 2000 "$work/b.db" 1000
relay "" "$T/swap_test" -a "$work/a.db" -b "$work/b.db" -l "$work/live.db" -t 8 \
  -n "${SWAP_LOOKUPS:-100000}" -s "${SWAP_RENAMES:-1000}"
relay "per-thread handles: " "$T/swap_test" -a "$work/a.db" -b "$work/b.db" -l "$work/live.db" -t 8 -p \
  -n "$(( ${SWAP_LOOKUPS:-100000} / 10 ))" -s "$(( ${SWAP_RENAMES:-1000} / 4 ))"

# The same two under ThreadSanitizer, smaller: any data race in the
# handle's locking, the reopen or the fork handlers is a report (exit 66).
export TSAN_OPTIONS=exitcode=66:halt_on_error=0
SERIAL=1 VARIANT=A tests/c/gensnap.sh 2000 200 "$work/ta.db" 100
SERIAL=2 VARIANT=B tests/c/gensnap.sh 1900 200 "$work/tb.db" 100
relay "tsan: " "$T/swap_test_tsan" -a "$work/ta.db" -b "$work/tb.db" -l "$work/tlive.db" -t 4 -n 5000 -s 200
# (One thread per child here: TSan refuses threads started after a
# multi-threaded fork; the plain fork test above runs four.)
relay "tsan: " "$T/fork_test_tsan" -f "$work/ta.db" -c 300 -t 4 -j 2
relay "tsan: " "$T/fork_test_tsan" -E -f "$work/ta.db" -c 300 -t 4 -j 2

# --- fuzz --------------------------------------------------------------------
if [ "${FUZZ_SECONDS:-30}" -gt 0 ]; then
  FUZZ_SECONDS=${FUZZ_SECONDS:-30} relay "" tests/c/fuzz.sh
fi

summary
