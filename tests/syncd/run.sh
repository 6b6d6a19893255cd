#!/usr/bin/env bash
# tests/syncd/run.sh: syncd end to end, with real parts only.
#
# build/scim-testserver serves a generated directory (2,000 users, 200
# groups) on 127.0.0.1; build/syncd syncs it into a snapshot; getent reads
# the snapshot through build/libnss_scim.so.2 inside a scim_ns namespace.
# What getent must return is computed from what the server serves (its
# admin API), not written down here.
#
#   sync      sync --once: getent -s scim passwd/group return exactly the
#             expected rows; a second sync is "unchanged" (same serial)
#   dry-run   one change at the server: --dry-run prints exactly it and
#             writes nothing; then a real sync commits it
#   guard     deleting 15% of users: the deletions are held back (exit 3,
#             status "held", the users stay, disabled) while a disable made
#             at the same time is committed; --force commits the deletions
#   down      server down: sync fails, the live snapshot stays and answers,
#             status shows the error
#   config    check-config lists every problem; a world-readable config
#             or token is refused
#   status    readable by an unprivileged user
#   daemon    syncd run: picks up a change, reloads on SIGHUP, serves
#             metrics on loopback, stops on SIGTERM
#   hostile   attack records at the server (system gids, homes in /etc or
#             someone else's, reserved names in any case, a local group's
#             member, low uids, SLURM-USERS): each rejected by name, getent
#             and id show nothing of them (tests/syncd/hostile.sh)
#   http      a hostile server: redirects, echoed token, endless listings
#             (tests/syncd/http.sh)
#   scimmy    an independent SCIM server (SCIMMY, from npm) serving Okta,
#             Entra, AWS and authentik shapes, polled with the README's
#             minimal config: getent shows exactly the mapped rows
#             (tests/syncd/scimmy.sh)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || { bad "syncd tests need root (namespaces)"; summary; exit 1; }
for b in syncd scim-testserver libnss_scim.so.2; do
  [ -f "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; summary; exit 1; }
done
for c in jq curl sqlite3 setpriv; do
  command -v "$c" > /dev/null || { bad "$c not installed (make deps)"; summary; exit 1; }
done

T=$(mktemp -d /tmp/scim-syncd.XXXXXX)
[ -d "$T" ] || { bad "mktemp"; summary; exit 1; }
chmod 0755 "$T"
PIDS=()
cleanup() {
  local p
  kill_tree "${PIDS[@]}"
  left_running "$T"
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
on_exit cleanup

SYNCD=$BUILD/syncd
CACHE=$T/cache.db
STATUS=$T/status.json
(umask 077; printf 'acceptance-token-%s\n' "$RANDOM$RANDOM" > "$T/token")
TOKEN=$(cat "$T/token")

# start_server ARGS...: starts the test server; sets URL, ADMIN, SRV_PID.
start_server() {
  : > "$T/server.url"
  "$BUILD/scim-testserver" -token-file "$T/token" "$@" > "$T/server.url" 2> "$T/server.log" &
  SRV_PID=$!
  PIDS+=("$SRV_PID")
  local i
  for i in $(seq 1 100); do
    [ -s "$T/server.url" ] && break
    sleep 0.1
  done
  URL=$(head -n1 "$T/server.url")
  ADMIN=${URL%/scim/v2}
}
start_server -generate 2000,200 -seed 11
[ -n "$URL" ] || { bad "scim-testserver did not start: $(cat "$T/server.log")"; summary; exit 1; }

printf '%s\n' \
  "base_url = \"$URL\"" \
  "token_file = \"$T/token\"" \
  'preset = "posix"' \
  "cache_path = \"$CACHE\"" \
  "status_path = \"$STATUS\"" \
  'page_size = 200' \
  'max_retries = 1' \
  'request_timeout = "5s"' > "$T/syncd.toml"
chmod 0600 "$T/syncd.toml" "$T/token"

syncd() { "$SYNCD" --config "$T/syncd.toml" "$@"; }
serial() { sqlite3 "file:$CACHE?mode=ro&immutable=1" "select value from meta where key='serial'" 2> /dev/null; }
ST=$T/stage
stage_new "$ST" "$CACHE"
nss() { scim_ns "$ST" getent -s scim "$@"; }
has() { nss "$@" > /dev/null; }

# What the server serves, turned into the rows syncd must publish: users
# with a uid, gid and portable name (the generator's shells are allowed;
# inactive users stay in passwd), groups with a gid, members that are
# published users.
expected() {
  curl -fsS "$ADMIN/_admin/directory" > "$T/dir.json" || return 1
  jq -r '.users[] | select(.posix.uidNumber != null and .posix.gidNumber != null)
         | select(.userName | test("^[a-z_][a-z0-9_.-]*[$]?$"))
         | "\(.userName):*:\(.posix.uidNumber):\(.posix.gidNumber):\(.posix.gecos // ""):\(.posix.homeDirectory):\(.posix.loginShell // "/bin/bash")"' \
    "$T/dir.json" | sort > "$T/want.passwd"
  jq -r '(.users | map(select(.posix.uidNumber != null and .posix.gidNumber != null)) | map({(.id): .userName}) | add) as $n
         | .groups[] | select(.gidNumber != null)
         | "\(.displayName):*:\(.gidNumber):\([.members[]? | $n[.] // empty] | unique | join(","))"' \
    "$T/dir.json" | sort > "$T/want.group"
}

# --- sync -----------------------------------------------------------------
t0=$(date +%s%N)
syncd sync --once > "$T/sync1.out" 2> "$T/sync1.err"
rc=$?
t1=$(date +%s%N)
expect_eq "sync --once exits 0" 0 "$rc"
echo "  first sync of 2,000 users / 200 groups: $(((t1 - t0) / 1000000)) ms"
expected
nss passwd | sort > "$T/got.passwd"
nss group | sort > "$T/got.group"
expect_eq "getent -s scim passwd: $(wc -l < "$T/want.passwd") rows, exactly what the server serves" \
  "$(cat "$T/want.passwd")" "$(cat "$T/got.passwd")"
expect_eq "getent -s scim group: $(wc -l < "$T/want.group") rows with members, exactly as served" \
  "$(cat "$T/want.group")" "$(cat "$T/got.group")"
check "at least 1,950 users published" [ "$(wc -l < "$T/got.passwd")" -ge 1950 ]
u1=$(head -n1 "$T/want.passwd" | cut -d: -f1)
expect_eq "getent passwd $u1 by name" "$(head -n1 "$T/want.passwd")" "$(nss passwd "$u1")"
expect_eq "snapshot serial 1" 1 "$(serial)"
syncd sync --once > "$T/sync2.out" 2>&1
expect_eq "second sync: nothing changed, serial still 1" "1 unchanged" "$(serial) $(jq -r .last_result "$STATUS")"

# --- dry-run --------------------------------------------------------------
victim=$(jq -r '[.users[] | select(.posix.uidNumber != null and .active != false)][5].userName' "$T/dir.json")
curl -fsS -X POST "$ADMIN/_admin/users/$victim/active" -d '{"active": false}' > /dev/null
syncd sync --once --dry-run > "$T/dry.out" 2> "$T/dry.err"
expect_eq "dry-run exits 0" 0 "$?"
expect_eq "dry-run prints exactly the one change" "~ user $victim: active true -> false" \
  "$(grep -E '^[-+~] ' "$T/dry.out")"
expect_eq "dry-run summary" "users: 0 added, 1 changed, 0 removed; groups: 0 added, 0 changed, 0 removed" \
  "$(tail -n1 "$T/dry.out" | cut -d';' -f1-2)"
expect_eq "dry-run wrote nothing (serial 1)" 1 "$(serial)"
newbie='{"userName":"zz.newbie","posix":{"uidNumber":4000001,"gidNumber":200000,"homeDirectory":"/home/zz.newbie","loginShell":"/bin/zsh","gecos":"New Person"}}'
curl -fsS -X POST "$ADMIN/_admin/users" -d "$newbie" > /dev/null
syncd sync --once > "$T/sync3.out" 2>&1
expect_eq "sync commits the changes (serial 2)" 2 "$(serial)"
expect_eq "the new user resolves" "zz.newbie:*:4000001:200000:New Person:/home/zz.newbie:/bin/zsh" "$(nss passwd zz.newbie)"
expect_eq "the diff printed both changes" "+ user zz.newbie uid=4000001 gid=200000 home=/home/zz.newbie shell=/bin/zsh keys=0
~ user $victim: active true -> false" "$(grep -E '^[-+~] ' "$T/sync3.out")"

# --- guard ----------------------------------------------------------------
jq -r '.users[] | select(.posix.uidNumber != null) | .userName' "$T/dir.json" | head -n 300 > "$T/doomed"
while read -r u; do
  curl -fsS -X DELETE "$ADMIN/_admin/users/$u" > /dev/null || echo "  delete $u failed"
done < "$T/doomed"
# A disable at the same time as the deletions: the guard may hold back
# the deletions, never the disable.
held_victim=$(jq -r '[.users[] | select(.posix.uidNumber != null and .active != false) | select(.userName | test("^[a-z_][a-z0-9_.-]*$"))][400].userName' "$T/dir.json")
curl -fsS -X POST "$ADMIN/_admin/users/$held_victim/active" -d '{"active": false}' > /dev/null
active_of() { sqlite3 "file:$CACHE?mode=ro&immutable=1" "select active from users where name='$1'" 2> /dev/null; }
syncd sync --once > "$T/guard.out" 2> "$T/guard.err"
expect_eq "removing 15% of users: deletions held back (exit 3)" 3 "$?"
check "the guard says why" grep -q "max_removal_share" "$T/guard.err"
expect_eq "status says held" held "$(jq -r .last_result "$STATUS")"
expect_eq "the rest is committed (serial 3)" 3 "$(serial)"
gone=$(head -n1 "$T/doomed")
check "a deleted user still resolves while held" has passwd "$gone"
expect_eq "the held user is disabled in the snapshot" 0 "$(active_of "$gone")"
expect_eq "the disable made during the hold reached the snapshot" 0 "$(active_of "$held_victim")"
syncd sync --once --force > "$T/force.out" 2>&1
expect_eq "--force commits (serial 4)" 4 "$(serial)"
nss passwd "$gone" > /dev/null
expect_eq "the deleted user is gone after --force (getent exit 2)" 2 "$?"

# --- down -----------------------------------------------------------------
kill "$SRV_PID"
wait "$SRV_PID" 2> /dev/null
syncd sync --once > "$T/down.out" 2> "$T/down.err"
expect_eq "sync with the server down exits 1" 1 "$?"
expect_eq "live snapshot kept (serial 4)" 4 "$(serial)"
check "getent still answers from the snapshot" has passwd zz.newbie
syncd status > "$T/status.out" 2>&1
expect_eq "status exits non-zero after a failure" 1 "$?"
check "status shows the error" grep -q "last error: .*connection refused" "$T/status.out"
check "status shows the serial" grep -q "serial 4" "$T/status.out"
check "status shows the source contact and staleness" grep -q "^source contact: .*staleness" "$T/status.out"
check "status shows the last success" grep -q "last success: .*ago" "$T/status.out"
setpriv --reuid=65534 --regid=65534 --clear-groups "$SYNCD" status --status-file "$STATUS" > "$T/status.nobody" 2>&1
check "status works for an unprivileged user" grep -q "serial 4" "$T/status.nobody"
check "the status file holds no token" bash -c "! grep -qF '$TOKEN' '$STATUS'"

# explain: root sees the source record; anyone else only themself.
u1=$(head -n1 "$T/want.passwd" | cut -d: -f1)
syncd explain "$u1" > "$T/explain.root" 2>&1
check "explain as root: the source record and the passwd entry" \
  bash -c "grep -q 'source user id .*: published' '$T/explain.root' && grep -q '^passwd: $u1:x:' '$T/explain.root'"
setpriv --reuid=65534 --regid=65534 --clear-groups "$SYNCD" explain --cache "$CACHE" "$u1" > "$T/explain.nobody" 2>&1
expect_eq "explain as nobody about $u1: refused (exit 4)" 4 "$?"
check "the refusal says who may" grep -q "only root may explain" "$T/explain.nobody"
setpriv --reuid=65534 --regid=65534 --clear-groups "$SYNCD" explain --cache "$CACHE" nobody > "$T/explain.self" 2>&1
expect_eq "explain as nobody about itself: allowed (exit 0)" 0 "$?"
check "without the source record, which is root's" grep -q "readable by root only" "$T/explain.self"

# --- config ---------------------------------------------------------------
printf '%s\n' \
  'base_url = "http://idp.example.com/scim"' \
  "token_file = \"$T/token\"" \
  'preset = "nope"' \
  'paging = "sideways"' \
  'uid_min = 0' \
  'max_removal_share = 2' \
  'metrics_listen = "0.0.0.0:9000"' \
  '[attributes]' \
  'uid = "employeeNumber"' > "$T/bad.toml"
chmod 0600 "$T/bad.toml"
"$SYNCD" --config "$T/bad.toml" check-config > "$T/check.out" 2>&1
expect_eq "check-config on a broken file exits 1" 1 "$?"
for k in base_url preset paging uid_min max_removal_share metrics_listen attributes.uid; do
  check "check-config reports $k" grep -q "^error: .*: $k\b" "$T/check.out"
done
check "check-config lists every problem (at least 7 lines)" [ "$(grep -c '^error: ' "$T/check.out")" -ge 7 ]
# The [slurm] table is checked too, every problem listed.
{ cat "$T/syncd.toml"; printf '[slurm]\nenabled = true\ngroup_pattern = "(["\n'; } > "$T/badslurm.toml"
chmod 0600 "$T/badslurm.toml"
"$SYNCD" --config "$T/badslurm.toml" check-config > "$T/check-slurm.out" 2>&1
expect_eq "check-config on a broken [slurm] table exits 1" 1 "$?"
check "check-config names the missing cluster" grep -q '^error: \[slurm\]: .*cluster is required' "$T/check-slurm.out"
check "check-config names the bad group_pattern" grep -q '^error: \[slurm\]: .*group_pattern' "$T/check-slurm.out"
chmod 0644 "$T/syncd.toml"
syncd check-config > "$T/check2.out" 2>&1
check "a world-readable config is refused, naming file and mode" grep -q "syncd.toml: mode 0644" "$T/check2.out"
chmod 0600 "$T/syncd.toml"
chmod 0640 "$T/token"
syncd check-config > "$T/check3.out" 2>&1
check "a group-readable token is refused" grep -q "token: mode 0640" "$T/check3.out"
chmod 0600 "$T/token"
syncd check-config > /dev/null 2>&1
expect_eq "the good config passes check-config" 0 "$?"

# --- daemon ---------------------------------------------------------------
start_server -generate 2000,200 -seed 11
sed -i "s|^base_url = .*|base_url = \"$URL\"|" "$T/syncd.toml"
# A loopback port nothing listens on, below Linux's ephemeral range
# (32768-60999): the old 20000-39999 pick could meet a client's port.
for _ in $(seq 50); do
  MPORT=$((20000 + RANDOM % 12000))
  (exec 3<> "/dev/tcp/127.0.0.1/$MPORT") 2> /dev/null || break
done
printf '%s\n' \
  'poll_interval = "1s"' \
  'poll_jitter = "200ms"' \
  'full_reconcile_interval = "1h"' \
  "metrics_listen = \"127.0.0.1:$MPORT\"" \
  'max_removal_share = 1.0' >> "$T/syncd.toml"
"$SYNCD" --config "$T/syncd.toml" run > "$T/daemon.log" 2>&1 &
DPID=$!
PIDS+=("$DPID")
check "daemon commits the restored directory" waitfor 30 nss passwd "$gone"
curl -fsS -X POST "$ADMIN/_admin/users" \
  -d '{"userName":"zz.late","posix":{"uidNumber":4000002,"gidNumber":200000,"homeDirectory":"/home/zz.late"}}' > /dev/null
check "daemon picks up a change at the server" waitfor 20 nss passwd zz.late
check "metrics on loopback" waitfor 10 bash -c "curl -fsS http://127.0.0.1:$MPORT/metrics | grep -q '^scimbridge_syncs_total{result=\"committed\"}'"
kill -HUP "$DPID"
check "SIGHUP reloads the configuration" waitfor 10 grep -q "configuration reloaded" "$T/daemon.log"
kill -TERM "$DPID"
if waitfor 10 bash -c "! kill -0 $DPID"; then
  wait "$DPID"
  expect_eq "SIGTERM: daemon exits 0" 0 "$?"
else
  bad "daemon did not stop within 10 s of SIGTERM"
fi
if grep -q 'level=error' "$T/daemon.log"; then
  bad "daemon logged errors"
  grep 'level=error' "$T/daemon.log" | head -n5
else
  ok "daemon logged no errors"
fi
check "the daemon log holds no token" bash -c "! grep -qF '$TOKEN' '$T/daemon.log'"

# --- hostile: attack records next to good ones (syncd's data path) ---------
. "$(dirname "$0")/hostile.sh"

# --- http: a hostile server (redirects, echoed token, caps) -----------------
. "$(dirname "$0")/http.sh"

# --- scimmy: an independent SCIM server, the minimal config ---------------
. "$(dirname "$0")/scimmy.sh"

summary
