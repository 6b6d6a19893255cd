#!/usr/bin/env bash
# tests/login/run.sh: logins of SCIM users, with real parts only.
#
#   pam     pamtester against a staged PAM service using build/pam_scim.so:
#           active+allowed, disabled, outside allow_groups, local user,
#           unknown user, a SCIM entry shadowed by a local account, a
#           missing and a corrupt cache (unavailable=open and closed),
#           a misspelt option; Debian's common-account for a SCIM user.
#   home    pam_mkhomedir in the session stack creates a SCIM user's home
#           from /etc/skel, owned by the user, mode 0700 (in a namespace
#           with a private tmpfs on /home: the host's /home is untouched).
#           pam_mkhomedir rather than our own session code: see pam/README.md.
#   sudo    a staged sudoers.d rule on the NSS group slurm-sudo: a member
#           may `sudo -n`, a non-member and a disabled member may not.
#   ssh     real sshds on 127.0.0.1 fed by syncd from the SCIM test server:
#           main   AuthorizedKeysCommand scim-keys as nobody: key login,
#                  `id`, home, key rotation, disable, group removal, a local
#                  account sharing a SCIM name, SCIM server down;
#           stale  keys from a local file (a stale authorized_keys): the
#                  disabled / not-allowed users are refused by pam_scim with
#                  its message on the ssh client's stderr;
#           live   scim-keys --refresh-config as a dedicated user: a key
#                  change or a disable applies at the next login, no sync.
#
# Everything runs in scim_ns namespaces over a stage in a temp dir; the
# host's /etc, /home and services are never changed. Outside the temp dir:
# /run/sshd (sshd's privilege separation dir, created if missing) and a
# root-owned /run/scim-login-bin.* holding scim-keys (sshd refuses a keys
# command under /tmp), removed at exit.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/login

[ "$(id -u)" = 0 ] || { bad "login tests need root (namespaces, sshd)"; summary; exit 1; }
for b in pam_scim.so libnss_scim.so.2; do
  [ -f "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; summary; exit 1; }
done
command -v pamtester >/dev/null || { bad "pamtester not installed (make deps)"; summary; exit 1; }

T=$(mktemp -d /tmp/scim-login.XXXXXX)
chmod 0755 "$T"
PIDS=()
KB=
cleanup() {
  local p f
  for f in "$T"/*.pid; do # sshd daemons (their pid files)
    [ -f "$f" ] && p=$(cat "$f") && [ -n "$p" ] && kill "$p" 2>/dev/null
  done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  [ -z "$KB" ] || rm -rf "$KB"
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- a snapshot from the fixture -----------------------------------------
FIX=$T/fixture.db
{ cat "$ROOT/syncd/snapshot/schema.sql" "$HERE/fixture.sql" "$ROOT/syncd/snapshot/derive.sql"; } | sqlite3 "$FIX" || {
  bad "build fixture snapshot"; summary; exit 1; }
chmod 0644 "$FIX"

ST=$T/stage
stage_new "$ST" "$FIX"
mkdir -p "$ST/etc/pam.d"
ALLOW=allow_groups=slurm-users,slurm-sudo
# pam_echo marks a PAM_IGNORE from pam_scim, so that "ignored" and
# "allowed" are told apart (both end in success through pam_permit).
svc() { # svc NAME ARGS...: a PAM service whose account stack is pam_scim ARGS
  local name=$1; shift
  cat > "$ST/etc/pam.d/$name" <<EOF
auth     required pam_permit.so
account  [success=1 ignore=ignore default=die] pam_scim.so $*
account  optional pam_echo.so pam_scim-ignored
account  required pam_permit.so
session  required pam_permit.so
EOF
}
svc scimtest "$ALLOW"
svc scimany ""
svc scimmissing "$ALLOW cache=$T/no-such-cache.db"
svc scimmissingclosed "$ALLOW cache=$T/no-such-cache.db unavailable=closed"
printf 'this is not a sqlite database\n' > "$T/corrupt.db"; chmod 0644 "$T/corrupt.db"
svc scimcorruptclosed "$ALLOW cache=$T/corrupt.db unavailable=closed"
svc scimbadopt "allow_group=slurm-users"
# The distribution's own account stack, as sudo, su and cron include it:
# pam_unix must accept a SCIM user. The reader answers "*" as the password
# field; with "x" ("see shadow") pam_unix looked for a shadow entry, found
# none and failed with AUTHINFO_UNAVAIL.
printf 'account include common-account\n' > "$ST/etc/pam.d/scimcommon"
chmod 0644 "$ST"/etc/pam.d/*

# pt SERVICE USER: pamtester acct_mgmt in the stage; sets RC and OUT
# (stdout+stderr: PAM_ERROR_MSG goes to stderr, pam_echo to stdout).
pt() {
  OUT=$(scim_ns "$ST" pamtester -v "$1" "$2" acct_mgmt 2>&1); RC=$?
}
# expect_pam DESC SERVICE USER allowed|ignored|refused [MESSAGE [PAMERR]]
expect_pam() {
  local d=$1 s=$2 u=$3 want=$4 msg=${5:-} perr=${6:-} got
  pt "$s" "$u"
  if [ $RC -ne 0 ]; then got=refused
  elif grep -q pam_scim-ignored <<<"$OUT"; then got=ignored
  else got=allowed; fi
  if [ "$got" != "$want" ]; then
    bad "$d (want $want, got $got)"; sed 's/^/    /' <<<"$OUT"; return
  fi
  if [ -n "$msg" ] && ! grep -qF -- "$msg" <<<"$OUT"; then
    bad "$d: message missing: $msg"; sed 's/^/    /' <<<"$OUT"; return
  fi
  if [ -n "$perr" ] && ! grep -qF -- "pamtester: $perr" <<<"$OUT"; then
    bad "$d: PAM error is not '$perr'"; sed 's/^/    /' <<<"$OUT"; return
  fi
  ok "$d"
}

echo "--- pam_scim account management (pamtester)"
expect_pam "pam: active user in slurm-users is allowed" scimtest alice allowed
expect_pam "pam: active user in slurm-sudo only is allowed" scimtest dave allowed
expect_pam "pam: disabled user is refused as expired, with the reason" scimtest bob refused \
  "Access denied: account bob is disabled in the identity provider" "User account has expired"
expect_pam "pam: user outside allow_groups is refused, with the groups" scimtest carol refused \
  "Access denied: account carol is not in an allowed group (slurm-users, slurm-sudo)" "Permission denied"
expect_pam "pam: local root is not policed" scimtest root ignored
expect_pam "pam: a user in neither the snapshot nor /etc/passwd is not policed" scimtest nosuchuser ignored
expect_pam "pam: a disabled SCIM entry named like local 'games' (other uid) leaves local games alone" \
  scimtest games ignored
expect_pam "pam: without allow_groups any active user is allowed" scimany carol allowed
expect_pam "pam: without allow_groups a disabled user is still refused" scimany bob refused \
  "is disabled in the identity provider"
# A stale line of this node's own /etc/group naming a SCIM user (here the
# local group scimlocal lists alice) would hand her that gid at login
# (files' initgroups): pam_scim refuses her on that node, with the line in
# the log; everyone else is unaffected.
ST_LG=$T/stage-localgroup
cp -a "$ST" "$ST_LG"
{ cat /etc/group; echo "scimlocal:x:4242:root,ALICE"; } > "$ST_LG/etc/group"
chmod 0644 "$ST_LG/etc/group"
OUT=$(scim_ns "$ST_LG" pamtester -v scimtest alice acct_mgmt 2>&1); RC=$?
if [ $RC -ne 0 ] && grep -qF "Access denied: account alice clashes with a local group on this host" <<<"$OUT"; then
  ok "pam: a SCIM user named on a local /etc/group line of this node is refused"
else
  bad "pam: alice named in a local group line: rc=$RC $OUT"
fi
OUT=$(scim_ns "$ST_LG" pamtester -v scimtest dave acct_mgmt 2>&1)
expect_eq "pam: ... and another SCIM user on that node is still allowed" 0 "$?"
# syncd explain computes pam_scim's verdict from the snapshot and the
# options in the PAM stack; it must be what pam_scim itself answers.
for c in "scimtest alice" "scimtest dave" "scimtest bob" "scimtest carol" "scimtest root" \
         "scimtest nosuchuser" "scimtest games" "scimany carol" "scimany bob"; do
  set -- $c
  pt "$1" "$2"
  if [ $RC -ne 0 ]; then want=refused
  elif grep -q pam_scim-ignored <<<"$OUT"; then want=ignored
  else want=allowed; fi
  got=$(scim_ns "$ST" "$BUILD/syncd" --config "$T/no-config.toml" explain --json --cache "$FIX" \
        --pam-service "$1" "$2" 2>&1 | jq -r '.gates.pam_scim.verdict' 2>&1)
  case $got in allow) got=allowed ;; deny) got=refused ;; ignore) got=ignored ;; esac
  expect_eq "explain: pam_scim verdict for $2 ($1) is what pamtester saw" "$want" "$got"
done
expect_pam "pam: cache missing, unavailable=open: SCIM name is left to other modules" scimmissing alice ignored
expect_pam "pam: cache missing, unavailable=open: root unaffected" scimmissing root ignored
expect_pam "pam: cache missing, unavailable=closed: non-local user refused" scimmissingclosed alice refused \
  "Access denied: the account cache is unavailable" "Authentication service cannot retrieve authentication info"
expect_pam "pam: cache missing, unavailable=closed: local root still not policed" scimmissingclosed root ignored
expect_pam "pam: corrupt cache, unavailable=closed: non-local user refused" scimcorruptclosed dave refused \
  "the account cache is unavailable"
pt scimcommon alice
if [ $RC -eq 0 ]; then ok "pam: Debian's common-account (pam_unix) accepts an active SCIM user"
else bad "pam: Debian's common-account (pam_unix) accepts an active SCIM user"; sed 's/^/    /' <<<"$OUT"; fi
expect_pam "pam: a misspelt option fails closed (service error)" scimbadopt alice refused "" \
  "Error in service module"
expect_pam "pam: a name in another case (ALICE) is not the SCIM user: not policed" scimtest ALICE ignored
expect_pam "pam: a capitalised name (Bob) is not the disabled SCIM user bob: not policed" scimtest Bob ignored
expect_pam "pam: an empty user name is refused as unknown" scimtest "" refused "" \
  "User not known to the underlying authentication module"
OUT=$(scim_ns "$ST" pamtester -v scimtest bob 'acct_mgmt(PAM_SILENT)' 2>&1); RC=$?
if [ $RC -ne 0 ] && grep -qF "User account has expired" <<<"$OUT" && ! grep -q "Access denied" <<<"$OUT"; then
  ok "pam: PAM_SILENT: disabled bob still refused, and no message is sent"
else bad "pam: PAM_SILENT: disabled bob still refused, and no message is sent"; sed 's/^/    /' <<<"$OUT"; fi

# pam_scim is an account module. Listed in another stack by mistake it
# must neither fail every login ("Module is unknown": root locked out of
# su and sshd) nor succeed: it answers PAM_IGNORE (and logs why). In
# scimstacks only PAM_IGNORE reaches pam_permit; any other answer,
# success included, dies.
printf '%s\n' \
  'auth     [ignore=ignore default=die] pam_scim.so allow_groups=slurm-users' \
  'auth     required pam_permit.so' \
  'account  required pam_permit.so' \
  'session  [ignore=ignore default=die] pam_scim.so' \
  'session  required pam_permit.so' \
  'password [ignore=ignore default=die] pam_scim.so' \
  'password required pam_permit.so' > "$ST/etc/pam.d/scimstacks"
printf '%s\n' 'auth sufficient pam_scim.so' 'auth required pam_deny.so' > "$ST/etc/pam.d/scimauthsufficient"
printf '%s\n' 'auth required pam_scim.so' > "$ST/etc/pam.d/scimauthonly"
chmod 0644 "$ST/etc/pam.d/scimstacks" "$ST/etc/pam.d/scimauthsufficient" "$ST/etc/pam.d/scimauthonly"
for op in authenticate 'authenticate(PAM_ESTABLISH_CRED)' open_session close_session chauthtok; do
  for u in alice bob nosuchuser; do
    OUT=$(scim_ns "$ST" pamtester -v scimstacks "$u" "$op" 2>&1); RC=$?
    if [ $RC -eq 0 ]; then ok "pam: in a non-account stack, $op for $u is PAM_IGNORE"
    else bad "pam: in a non-account stack, $op for $u is PAM_IGNORE (rc=$RC)"; sed 's/^/    /' <<<"$OUT"; fi
  done
done
for svc in scimauthsufficient scimauthonly; do
  OUT=$(scim_ns "$ST" pamtester -v "$svc" alice authenticate 2>&1); RC=$?
  if [ $RC -ne 0 ] && ! grep -q "Module is unknown" <<<"$OUT"; then ok "pam: $svc: pam_scim never authenticates anyone"
  else bad "pam: $svc: pam_scim never authenticates anyone (rc=$RC)"; sed 's/^/    /' <<<"$OUT"; fi
done

echo "--- home directories (pam_mkhomedir in the session stack)"
# pam_mkhomedir rather than a session part of pam_scim: see the comment at
# the top of pam/pam_scim.c.
cat > "$ST/etc/pam.d/scimhome" <<'EOF'
auth     required pam_permit.so
account  required pam_scim.so allow_groups=slurm-users,slurm-sudo
account  required pam_permit.so
session  required pam_mkhomedir.so umask=0077 skel=/etc/skel
EOF
chmod 0644 "$ST/etc/pam.d/scimhome"
mkdir -p "$ST/etc/skel"; chmod 0755 "$ST/etc/skel"
echo "welcome from skel" > "$ST/etc/skel/.scim-welcome"; chmod 0644 "$ST/etc/skel/.scim-welcome"
out=$(scim_ns "$ST" bash -c '
  mount -t tmpfs -o mode=0755 scim-home /home || exit 9
  [ ! -e /home/alice ] || { echo "home exists before"; exit 8; }
  pamtester scimhome alice open_session close_session >/dev/null 2>&1 || { echo "session failed"; exit 7; }
  stat -c "%U:%G:%a" /home/alice
  stat -c "%U:%a" /home/alice/.scim-welcome
  cat /home/alice/.scim-welcome
  echo second > /home/alice/.keep; chown alice /home/alice/.keep
  pamtester scimhome alice open_session >/dev/null 2>&1 || { echo "second session failed"; exit 6; }
  cat /home/alice/.keep' 2>&1)
expect_eq "home: created from skel, owned by the SCIM user and group, mode 0700 (skel copies 0600 under umask 0077), kept on the next session" \
  "alice:alice:700
alice:600
welcome from skel
second" "$out"

echo "--- sudo through the NSS group slurm-sudo"
# A sudoers rule on the SCIM group, plus pam_scim in sudo's account stack
# so a member disabled at the source loses sudo even in an open session.
mkdir -p "$ST/etc/sudoers.d"
echo '%slurm-sudo ALL=(ALL) NOPASSWD: ALL' > "$ST/etc/sudoers.d/scim-sudo"
chmod 0440 "$ST/etc/sudoers.d/scim-sudo"
chmod 0755 "$ST/etc/sudoers.d"
cat > "$ST/etc/pam.d/sudo" <<'EOF'
auth     required pam_deny.so
account  required pam_scim.so
account  include common-account
session  required pam_permit.so
EOF
chmod 0644 "$ST/etc/pam.d/sudo"
if ! grep -qE '^[@#]includedir[[:space:]]+/etc/sudoers.d' /etc/sudoers; then
  bad "sudo: /etc/sudoers has no includedir /etc/sudoers.d (the rule cannot apply)"
fi
# as USER CMD...: CMD as USER with USER's groups from NSS (initgroups).
as() { local u=$1; shift; scim_ns "$ST" setpriv --reuid="$u" --regid="$u" --init-groups -- "$@"; }
expect_eq "sudo: dave runs as his SCIM uid with slurm-sudo from NSS" "20004 slurm-sudo" \
  "$(as dave bash -c 'echo "$(id -u) $(id -Gn | tr " " "\n" | grep -x slurm-sudo)"' 2>&1)"
expect_eq "sudo: member of slurm-sudo gets root with sudo -n" "0" "$(as dave sudo -n id -u 2>&1)"
out=$(as alice sudo -n id -u 2>&1); rc=$?
if [ $rc -ne 0 ] && [ "$out" != 0 ]; then ok "sudo: non-member (alice) is refused"
else bad "sudo: non-member (alice) is refused (rc=$rc out=$out)"; fi
out=$(as bob sudo -n id -u 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "Account expired" <<<"$out"; then ok "sudo: disabled member of slurm-sudo (bob) is refused by pam_scim"
else bad "sudo: disabled member of slurm-sudo (bob) is refused by pam_scim (rc=$rc out=$out)"; fi

# --- ssh ---------------------------------------------------------------------
echo "--- ssh: SCIM server -> syncd -> snapshot -> sshd (scim-keys, pam_scim)"
for b in scim-keys syncd scim-testserver; do
  [ -x "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; summary; exit 1; }
done
KEYS=$ROOT/tests/scimserver/testdata/keys
SS=$T/sshstage
SNAPDIR=$T/snap
mkdir -p "$SNAPDIR"; chmod 0755 "$SNAPDIR"
SNAP=$SNAPDIR/cache.db
stage_new "$SS" "$SNAP"
mkdir -p "$SS/etc/pam.d" "$SS/etc/skel" "$SS/etc/ssh/local_keys"
chmod 0755 "$SS/etc/pam.d" "$SS/etc/skel" "$SS/etc/ssh" "$SS/etc/ssh/local_keys"
# sshd's PAM stack, as the README gives it: pam_scim required (never
# success=done, which would skip every later account module for SCIM
# users); local users get PAM_IGNORE from it; both go on to pam_unix
# (SCIM entries carry "*", which it accepts). pam_mkhomedir makes the
# home. Public key only: the auth stack is never consulted.
cat > "$SS/etc/pam.d/sshd" <<'EOF'
auth     required pam_deny.so
account  required pam_scim.so allow_groups=slurm-users,slurm-sudo
account  required pam_unix.so
session  required pam_mkhomedir.so umask=0077 skel=/etc/skel
session  required pam_unix.so
password required pam_deny.so
EOF
chmod 0644 "$SS/etc/pam.d/sshd"

# The fixture users' private keys (ssh wants them 0600 and ours).
mkdir -p "$T/id"; chmod 0700 "$T/id"
for k in "$KEYS"/*; do
  case $k in *.pub) ;; *) install -m 0600 "$k" "$T/id/" ;; esac
done

# sshd wants the AuthorizedKeysCommand and every directory above it owned
# by root and not group or world writable: so not under /tmp.
KB=$(mktemp -d /run/scim-login-bin.XXXXXX)
chmod 0755 "$KB"
install -m 0755 "$BUILD/scim-keys" "$KB/scim-keys"
mkdir -p /run/sshd && chmod 0755 /run/sshd # sshd's privsep dir (Debian's)

ssh-keygen -q -t ed25519 -N '' -C scim-login-test -f "$T/ssh_host_ed25519_key"
free_port() {
  local p i
  for i in $(seq 50); do
    # Below Linux's ephemeral range (32768-60999): a port in it can be the
    # local end of any connection (CI once lost 43200 that way: "Address
    # already in use", 24 ssh checks failed); no socket in any state.
    p=$((20000 + RANDOM % 12000))
    ss -Htan "sport = :$p" | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}

# sshd_conf NAME PORT LINE...: $T/NAME.conf, common settings plus LINEs.
sshd_conf() {
  local name=$1 port=$2; shift 2
  {
    printf '%s\n' "ListenAddress 127.0.0.1" "Port $port" "HostKey $T/ssh_host_ed25519_key" \
      "PidFile $T/$name.pid" "UsePAM yes" "KbdInteractiveAuthentication no" \
      "PasswordAuthentication no" "PubkeyAuthentication yes" "PermitRootLogin no" \
      "StrictModes yes" "UseDNS no" "PrintMotd no" "PrintLastLog no" "LogLevel VERBOSE"
    printf '%s\n' "$@"
  } > "$T/$name.conf"
  echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$T/ssh_host_ed25519_key.pub")" >> "$T/known_hosts"
}

# start_sshd NAME: sshd -D in the stage with a private tmpfs on /home;
# waits (bounded) until it listens.
start_sshd() {
  local name=$1 i
  : > "$T/$name.log"
  scim_ns "$SS" bash -c 'mount -t tmpfs -o mode=0755 scim-home /home && exec /usr/sbin/sshd -D -f "$1" -E "$2"' \
    _ "$T/$name.conf" "$T/$name.log" 2>>"$T/$name.stderr" &
  PIDS+=($!)
  for i in $(seq 100); do
    grep -q 'Server listening on 127.0.0.1' "$T/$name.log" && return 0
    sleep 0.1
  done
  cat "$T/$name.log" >&2
  return 1
}

# login PORT USER KEY CMD...: ssh in; sets RC, OUT (stdout), ERR (stderr).
login() {
  local port=$1 user=$2 key=$3; shift 3
  OUT=$(timeout 30 ssh -F /dev/null -p "$port" -i "$key" -o IdentitiesOnly=yes -o IdentityAgent=none \
    -o BatchMode=yes -o PreferredAuthentications=publickey -o ConnectTimeout=10 \
    -o UserKnownHostsFile="$T/known_hosts" -o StrictHostKeyChecking=yes -o LogLevel=INFO \
    "$user@127.0.0.1" "$@" 2>"$T/ssh.err" </dev/null); RC=$?
  ERR=$(cat "$T/ssh.err")
}
# expect_login DESC PORT USER KEY EXPECTED_STDOUT CMD...
expect_login() {
  local d=$1 port=$2 user=$3 key=$4 want=$5; shift 5
  login "$port" "$user" "$key" "$@"
  if [ $RC -eq 0 ] && [ "$OUT" = "$want" ]; then ok "$d"
  else bad "$d"; printf '  rc=%s\n  expected: %q\n  actual:   %q\n  stderr: %s\n' "$RC" "$want" "$OUT" "$ERR"; fi
}
# expect_refused DESC PORT USER KEY STDERR_TEXT
expect_refused() {
  local d=$1 port=$2 user=$3 key=$4 text=$5
  login "$port" "$user" "$key" true
  if [ $RC -eq 255 ] && grep -qF -- "$text" <<<"$ERR"; then ok "$d"
  else bad "$d"; printf '  rc=%s stdout=%q\n  want on stderr: %s\n  stderr: %s\n' "$RC" "$OUT" "$text" "$ERR"; fi
}

# The SCIM test server with the bundled fixture, behind a bearer token.
head -c 24 /dev/urandom | base64 > "$T/scim.token"; chmod 0600 "$T/scim.token"
"$BUILD/scim-testserver" -fixture "$ROOT/tests/scimserver/testdata/sample.json" \
  -token-file "$T/scim.token" -listen 127.0.0.1:0 > "$T/scim.url" 2> "$T/scim.log" &
SCIM_PID=$!
PIDS+=($SCIM_PID)
for i in $(seq 100); do [ -s "$T/scim.url" ] && break; sleep 0.1; done
SCIM_URL=$(head -n1 "$T/scim.url")
ADMIN=${SCIM_URL%%/scim/v2*}/_admin
[ -n "$SCIM_URL" ] || { bad "scim-testserver did not start"; cat "$T/scim.log"; summary; exit 1; }
admin() { # admin METHOD PATH [JSON]
  curl -fsS -m 5 -X "$1" ${3:+-H 'Content-Type: application/json' --data "$3"} "$ADMIN/$2" >/dev/null
}

cat > "$T/syncd.toml" <<EOF
base_url = "$SCIM_URL"
token_file = "$T/scim.token"
preset = "posix"
cache_path = "$SNAP"
status_path = "$T/status.json"
max_retries = 0
request_timeout = "5s"
EOF
chmod 0600 "$T/syncd.toml"
sync_once() { "$BUILD/syncd" sync --once --config "$T/syncd.toml" >>"$T/syncd.log" 2>&1; }

check "ssh: syncd writes the snapshot from the SCIM server" sync_once
[ -f "$SNAP" ] || { bad "no snapshot at $SNAP"; tail -20 "$T/syncd.log"; summary; exit 1; }
chmod 0644 "$SNAP"

# main: the README's snippet. AuthorizedKeysFile keeps the default files
# (plus a root-owned directory standing in for a local user's own file, as
# homes are a fresh tmpfs): local users' keys keep working next to scim-keys.
P1=$(free_port); sshd_conf main "$P1" \
  "AuthorizedKeysFile .ssh/authorized_keys .ssh/authorized_keys2 /etc/ssh/main_keys/%u" \
  "AuthorizedKeysCommand $KB/scim-keys --allow-groups slurm-users,slurm-sudo %u" \
  "AuthorizedKeysCommandUser nobody"
# A second sshd that takes keys from a local file, as a stale
# ~/.ssh/authorized_keys would: only pam_scim stands between a disabled
# user and a shell there.
P2=$(free_port); while [ "$P2" = "$P1" ]; do P2=$(free_port); done
sshd_conf stale "$P2" "AuthorizedKeysFile /etc/ssh/local_keys/%u"
for u in carol heidi; do
  cp "$KEYS/${u}_ed25519.pub" "$SS/etc/ssh/local_keys/$u"; chmod 0644 "$SS/etc/ssh/local_keys/$u"
done
# A third sshd whose scim-keys reads keys live from SCIM (--refresh-config).
# syncd's config and token must be readable by their owner only, so the
# command runs as a dedicated user owning its own copies (in the stage's
# passwd, a copy of the host's plus that user).
# The stage's passwd also has a local "judy", a name the SCIM fixture
# uses too: judy's SCIM key must not open the local account.
KU= KJ= KL=
for u in $(seq 64900 64999); do
  getent passwd "$u" >/dev/null || getent group "$u" >/dev/null || {
    if [ -z "$KU" ]; then KU=$u; elif [ -z "$KJ" ]; then KJ=$u; else KL=$u; break; fi; }
done
{ cat /etc/passwd
  echo "scimkeys:x:$KU:$KU:scim-keys live refresh:/nonexistent:/usr/sbin/nologin"
  echo "judy:*:$KJ:$KJ:a local judy:/nonexistent:/bin/bash"
  echo "keyed:*:$KL:$KL:a local user with a key file:/home/keyed:/bin/bash"; } > "$SS/etc/passwd"
{ cat /etc/group; echo "scimkeys:x:$KU:"; echo "judy:x:$KJ:"; echo "keyed:x:$KL:"; } > "$SS/etc/group"
mkdir -p "$SS/etc/ssh/main_keys"; chmod 0755 "$SS/etc/ssh/main_keys"
ssh-keygen -q -t ed25519 -N '' -C keyed-local -f "$T/id/keyed"
cp "$T/id/keyed.pub" "$SS/etc/ssh/main_keys/keyed"; chmod 0644 "$SS/etc/ssh/main_keys/keyed"
chmod 0644 "$SS/etc/passwd" "$SS/etc/group"
mkdir -p "$T/live"; chmod 0755 "$T/live"
cp "$T/scim.token" "$T/live/token"
sed "s|^token_file = .*|token_file = \"$T/live/token\"|" "$T/syncd.toml" > "$T/live/syncd.toml"
chown "$KU:$KU" "$T/live/token" "$T/live/syncd.toml"; chmod 0600 "$T/live/token" "$T/live/syncd.toml"
P3=$(free_port); while [ "$P3" = "$P1" ] || [ "$P3" = "$P2" ]; do P3=$(free_port); done
sshd_conf live "$P3" \
  "AuthorizedKeysFile none" \
  "AuthorizedKeysCommand $KB/scim-keys --allow-groups slurm-users,slurm-sudo --refresh-config $T/live/syncd.toml %u" \
  "AuthorizedKeysCommandUser scimkeys"
start_sshd main || bad "sshd (main) did not start"
start_sshd stale || bad "sshd (stale keys) did not start"
start_sshd live || bad "sshd (live refresh) did not start"

ID=$T/id
expect_login "ssh: alice logs in with her SCIM key; id shows uid and groups from SCIM" "$P1" alice "$ID/alice_ed25519" \
  "uid=20001(alice) gid=20000(slurm-users) groups=20000(slurm-users),20050(slurm-sudo),20100(ml-team)" id
expect_login "ssh: her home was made by pam_mkhomedir: hers, mode 0700" "$P1" alice "$ID/alice_ed25519" \
  "/home/alice alice:slurm-users:700" 'echo "$HOME $(stat -c %U:%G:%a "$HOME")"'
expect_login "ssh: alice's second SCIM key works too" "$P1" alice "$ID/alice_laptop_ed25519" "alice" 'id -un'
expect_refused "ssh: alice with another user's key is refused" "$P1" alice "$ID/erin_ed25519" "Permission denied (publickey)"
expect_login "ssh: a local user's own key file still works next to scim-keys (no AuthorizedKeysFile none)" \
  "$P1" keyed "$ID/keyed" keyed 'id -un'

# scim-keys as sshd runs it: as nobody, reading the world-readable cache.
nobody_keys() { scim_ns "$SS" setpriv --reuid=nobody --regid=nogroup --clear-groups "$KB/scim-keys" "$@"; }
want=$(cut -d' ' -f1,2 "$KEYS/alice_ed25519.pub" "$KEYS/alice_laptop_ed25519.pub")
expect_eq "scim-keys as nobody: alice's two keys, canonical" "$want" "$(nobody_keys --allow-groups slurm-users alice 2>&1)"
expect_eq "scim-keys: nothing for a disabled user (carol)" "" "$(nobody_keys carol 2>&1)"
# syncd explain says which users scim-keys gives keys to.
for u in alice carol dave erin nosuchuser; do
  if [ -n "$(nobody_keys --allow-groups slurm-users "$u" 2>/dev/null)" ]; then want=keys; else want="no keys"; fi
  got=$(scim_ns "$SS" "$BUILD/syncd" --config "$T/no-config.toml" explain --json --cache "$SNAP" \
        --allow-groups slurm-users "$u" 2>&1 | jq -r '.gates.scim_keys.verdict' 2>&1)
  expect_eq "explain: scim-keys --allow-groups slurm-users for $u: $want" "$want" "$got"
done
expect_eq "scim-keys: nothing for an unknown user" "" "$(nobody_keys nosuchuser 2>&1)"
expect_eq "scim-keys: nothing for a name differing in case (ALICE)" "" "$(nobody_keys ALICE 2>&1)"

echo "--- ssh: refusals"
expect_refused "ssh: judy's SCIM key does not open the local account named judy" "$P1" judy "$ID/judy_ed25519" \
  "Permission denied (publickey)"
expect_eq "scim-keys: nothing for a name that resolves to a local account, and why" \
  'scim-keys: "judy": the name resolves to another account: no keys' "$(nobody_keys -v judy 2>&1)"
expect_refused "ssh: disabled carol gets no keys from scim-keys" "$P1" carol "$ID/carol_ed25519" "Permission denied (publickey)"
expect_refused "ssh: disabled carol with a local key file is refused by pam_scim, and told why" "$P2" carol "$ID/carol_ed25519" \
  "Access denied: account carol is disabled in the identity provider"
if grep -q "Access denied for user carol by PAM account configuration" "$T/stale.log"; then
  ok "ssh: sshd logs the PAM account refusal of carol"
else bad "ssh: sshd logs the PAM account refusal of carol"; tail -5 "$T/stale.log"; fi

expect_login "ssh: heidi logs in while in slurm-users" "$P1" heidi "$ID/heidi_ed25519" heidi 'id -un'
admin POST groups/slurm-users/members '{"remove":["heidi"]}' || bad "admin: remove heidi from slurm-users"
check "ssh: sync after heidi left slurm-users" sync_once
expect_refused "ssh: heidi outside the allowed groups gets no keys" "$P1" heidi "$ID/heidi_ed25519" "Permission denied (publickey)"
expect_refused "ssh: heidi with a local key file is refused by pam_scim, and told why" "$P2" heidi "$ID/heidi_ed25519" \
  "Access denied: account heidi is not in an allowed group (slurm-users, slurm-sudo)"

expect_login "ssh: erin logs in while active" "$P1" erin "$ID/erin_ed25519" erin 'id -un'
admin POST users/erin/active '{"active":false}' || bad "admin: disable erin"
check "ssh: sync after erin was disabled" sync_once
expect_refused "ssh: erin is refused after being disabled at the source and one sync" "$P1" erin "$ID/erin_ed25519" \
  "Permission denied (publickey)"

echo "--- ssh: key rotation"
ssh-keygen -q -t ed25519 -N '' -C alice-new -f "$ID/alice_new"
admin POST users/alice/keys "{\"keys\":[\"$(cat "$ID/alice_new.pub")\"]}" || bad "admin: set alice's keys"
check "ssh: sync after alice's key changed" sync_once
expect_refused "ssh: alice's old key fails after the rotation" "$P1" alice "$ID/alice_ed25519" "Permission denied (publickey)"
expect_login "ssh: alice's new key works after the rotation" "$P1" alice "$ID/alice_new" alice 'id -un'

echo "--- scim-keys --refresh-config: live keys for one user"
admin POST users/alice/keys "{\"keys\":[\"$(cat "$KEYS/alice_laptop_ed25519.pub")\"]}" || bad "admin: set alice's keys"
expect_login "ssh (live): alice's key changed at the server applies at the next login, before any sync" \
  "$P3" alice "$ID/alice_laptop_ed25519" alice 'id -un'
expect_refused "ssh (live): alice's key removed at the server fails at the next login" "$P3" alice "$ID/alice_new" \
  "Permission denied (publickey)"
expect_login "ssh (snapshot only): until the next sync the snapshot's key still works" "$P1" alice "$ID/alice_new" alice 'id -un'
admin POST users/alice/active '{"active":false}' || bad "admin: disable alice"
expect_refused "ssh (live): alice disabled at the server is refused at the next login" "$P3" alice "$ID/alice_laptop_ed25519" \
  "Permission denied (publickey)"
admin POST users/alice/active '{"active":true}' || bad "admin: enable alice"
expect_eq "scim-keys without refresh: the snapshot's key" "$(cut -d' ' -f1,2 "$ID/alice_new.pub")" \
  "$(scim_ns "$SS" "$KB/scim-keys" alice 2>&1)"
expect_eq "scim-keys with refresh: the key at the SCIM server now, before any sync" \
  "$(cut -d' ' -f1,2 "$KEYS/alice_laptop_ed25519.pub")" \
  "$(scim_ns "$SS" "$KB/scim-keys" --refresh-config "$T/syncd.toml" alice 2>/dev/null)"
out=$(scim_ns "$SS" setpriv --reuid=nobody --regid=nogroup --clear-groups "$KB/scim-keys" --refresh-config "$T/syncd.toml" alice 2>&1)
if [ "$(grep -v '^scim-keys: ' <<<"$out")" = "$(cut -d' ' -f1,2 "$ID/alice_new.pub")" ] && grep -q "using the snapshot" <<<"$out"; then
  ok "scim-keys refresh as nobody cannot read syncd's config: falls back to the snapshot"
else bad "scim-keys refresh as nobody cannot read syncd's config: falls back to the snapshot"; echo "$out"; fi
if grep -q "$(cat "$T/scim.token")" <<<"$out"; then bad "scim-keys printed the token"; fi
admin POST users/alice/keys "{\"keys\":[\"$(cat "$ID/alice_new.pub")\"]}" || bad "admin: restore alice's key"

echo "--- ssh: the SCIM server is down"
kill "$SCIM_PID"; wait "$SCIM_PID" 2>/dev/null
serial_before=$(sqlite3 "file:$SNAP?immutable=1" "SELECT value FROM meta WHERE key='serial'")
if sync_once; then bad "ssh: sync with the SCIM server down fails"; else ok "ssh: sync with the SCIM server down fails"; fi
expect_eq "ssh: the snapshot is kept when the server is down" "$serial_before" \
  "$(sqlite3 "file:$SNAP?immutable=1" "SELECT value FROM meta WHERE key='serial'")"
expect_login "ssh: alice still logs in from the cache, with SCIM's uid and groups" "$P1" alice "$ID/alice_new" \
  "uid=20001(alice) gid=20000(slurm-users) groups=20000(slurm-users),20050(slurm-sudo),20100(ml-team)" id
expect_login "ssh (live): with the server down, scim-keys falls back to the snapshot" "$P3" alice "$ID/alice_new" alice 'id -un'
t0=$SECONDS
expect_eq "scim-keys refresh with the server down falls back to the snapshot" "$(cut -d' ' -f1,2 "$ID/alice_new.pub")" \
  "$(scim_ns "$SS" "$KB/scim-keys" --refresh-config "$T/syncd.toml" alice 2>/dev/null)"
[ $((SECONDS - t0)) -le 5 ] && ok "scim-keys fallback is quick ($((SECONDS - t0))s)" || bad "scim-keys fallback took $((SECONDS - t0))s"

. "$HERE/hostile_ssh.sh"
. "$HERE/hostile.sh"
. "$HERE/docs.sh"

summary
