#!/usr/bin/env bash
# tests/login/run.sh: logins of SCIM users, with real parts only.
#
#   pam     pamtester against a staged PAM service using build/pam_scim.so:
#           active+allowed, disabled, outside allow_groups, local user,
#           unknown user, a SCIM entry shadowed by a local account, a
#           missing and a corrupt cache (unavailable=open and closed),
#           a misspelt option.
#   home    pam_mkhomedir in the session stack creates a SCIM user's home
#           from /etc/skel, owned by the user, mode 0700 (in a namespace
#           with a private tmpfs on /home: the host's /home is untouched).
#   sudo    a staged sudoers.d rule on the NSS group slurm-sudo: a member
#           may `sudo -n`, a non-member and a disabled member may not.
#   ssh     a real sshd on 127.0.0.1 with AuthorizedKeysCommand scim-keys,
#           fed by syncd from the SCIM test server: key login, `id`, key
#           rotation, refusals with the PAM message, SCIM server down.
#
# Everything runs in scim_ns namespaces over a stage in a temp dir; the
# host's /etc, /home and services are never changed (only /run/sshd, the
# privilege separation directory sshd insists on, is created if missing).
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
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# --- a snapshot from the fixture -----------------------------------------
FIX=$T/fixture.db
{ cat "$ROOT/syncd/snapshot/schema.sql" "$HERE/fixture.sql"; } | sqlite3 "$FIX" || {
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
expect_pam "pam: cache missing, unavailable=open: SCIM name is left to other modules" scimmissing alice ignored
expect_pam "pam: cache missing, unavailable=open: root unaffected" scimmissing root ignored
expect_pam "pam: cache missing, unavailable=closed: non-local user refused" scimmissingclosed alice refused \
  "Access denied: the account cache is unavailable" "Authentication service cannot retrieve authentication info"
expect_pam "pam: cache missing, unavailable=closed: local root still not policed" scimmissingclosed root ignored
expect_pam "pam: corrupt cache, unavailable=closed: non-local user refused" scimcorruptclosed dave refused \
  "the account cache is unavailable"
expect_pam "pam: a misspelt option fails closed (service error)" scimbadopt alice refused "" \
  "Error in service module"

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
account  required pam_scim.so allow_groups=slurm-users,slurm-sudo
account  required pam_permit.so
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

summary
