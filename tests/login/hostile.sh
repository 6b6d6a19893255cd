# tests/login/hostile.sh: sourced by tests/login/run.sh after the ssh part.
# Hand-made hostile snapshots (bypassing syncd, whose validation would
# refuse them) test the reader's own defence: a floor under every uid and
# gid (min_id, default 1000) and trust in the file and its directory. Real
# getent, id, initgroups (setpriv), sudo, pamtester and the running sshd.

echo "--- hostile snapshots (hand-made, no syncd): getent, id, sudo, pam grant nothing"
HD=$T/hostile; mkdir -p "$HD"; chmod 0755 "$HD"
H=$HD/cache.db
cp "$FIX" "$H"
sqlite3 "$H" "
  INSERT INTO users VALUES (999, 'lowuid', 20001, 'uid below the floor', '/home/lowuid', '/bin/bash', 1, 'h1'),
    (20010, 'shadowy', 42, 'primary gid 42 (shadow)', '/home/shadowy', '/bin/bash', 1, 'h2'),
    (20011, 'sudoer', 27, 'primary gid 27 (sudo)', '/home/sudoer', '/bin/bash', 1, 'h3'),
    (20012, 'bigdis', 20001, substr(replace(hex(zeroblob(30000)), '00', 'gg'), 1, 60000),
     '/home/' || substr(replace(hex(zeroblob(2100)), '00', 'ab'), 1, 4084), '/bin/bash', 0, 'h9');
  INSERT INTO groups (gid, name, scim_id) VALUES (27, 'sudo', 'h4'), (42, 'shadow', 'h5'), (6, 'disk', 'h6'),
    (4, 'adm', 'h7'), (999, 'sysgrp', 'h8');
  INSERT INTO memberships VALUES (27, 'alice'), (42, 'alice'), (6, 'alice'), (4, 'alice'), (999, 'alice'),
    (27, 'dave'), (42, 'dave'), (27, 'carol');
  UPDATE groups SET members = coalesce((SELECT group_concat(user_name, ',') FROM
    (SELECT user_name FROM memberships m WHERE m.gid = groups.gid ORDER BY user_name)), '');"
derive "$H"
chmod 0644 "$H"
HS=$T/hstage; stage_new "$HS" "$H"
mkdir -p "$HS/etc/pam.d" "$HS/etc/sudoers.d"; chmod 0755 "$HS/etc/pam.d" "$HS/etc/sudoers.d"
# A rule that would make membership in gid 27 root, as Debian's %sudo does.
printf '%%sudo ALL=(ALL) NOPASSWD: ALL\n%%shadow ALL=(ALL) NOPASSWD: ALL\n%%slurm-sudo ALL=(ALL) NOPASSWD: ALL\n' \
  > "$HS/etc/sudoers.d/hostile"
chmod 0440 "$HS/etc/sudoers.d/hostile"
printf '%s\n' 'auth required pam_deny.so' 'account required pam_scim.so' 'account include common-account' \
  'session required pam_permit.so' > "$HS/etc/pam.d/sudo"
# The README's account stack: pam_scim required, then the distribution's.
printf '%s\n' 'auth required pam_permit.so' 'account required pam_scim.so' 'account include common-account' \
  > "$HS/etc/pam.d/scimreal"
chmod 0644 "$HS"/etc/pam.d/*
hns() { scim_ns "$HS" "$@"; }

for u in lowuid 999 shadowy 20010 sudoer 20011; do
  hns getent passwd "$u" >/dev/null; expect_eq "hostile: getent passwd $u (uid or primary gid below 1000) is not found" 2 $?
done
for g in 27 42 6 4 999 sysgrp; do
  hns getent -s scim group "$g" >/dev/null; expect_eq "hostile: getent -s scim group $g is not found" 2 $?
done
expect_eq "hostile: getent group sudo is the local one, without alice, dave or carol" "$(getent -s files group sudo)" \
  "$(hns getent group sudo)"
expect_eq "hostile: getent group shadow is the local one" "$(getent -s files group shadow)" "$(hns getent group shadow)"
expect_eq "hostile: id alice is what it is without the hostile rows" "$(scim_ns "$ST" id alice)" "$(hns id alice)"
low=""
for u in $(hns getent -s scim passwd | cut -d: -f3); do # by uid: "games" by name is the local one
  for g in $(hns id -G "$u"); do [ "$g" -ge 1000 ] || low+="$u:$g "; done
done
expect_eq "hostile: id -G of every SCIM user shows no gid below 1000 ($(hns getent -s scim passwd | wc -l) users)" "" "$low"
expect_eq "hostile: alice's real credentials (setpriv --init-groups) hold no gid below 1000" "" \
  "$(hns setpriv --reuid=alice --regid=alice --init-groups id -G | tr ' ' '\n' | awk '$1 < 1000')"
out=$(hns setpriv --reuid=alice --regid=alice --init-groups sudo -n id -u 2>&1); rc=$?
if [ $rc -ne 0 ] && [ "$out" != 0 ]; then ok "hostile: sudo -n for alice (listed in gid 27 and 42 of the snapshot; %sudo NOPASSWD) gives nothing"
else bad "hostile: sudo -n for alice gives nothing (rc=$rc out=$out)"; fi
expect_eq "hostile: control: dave (slurm-sudo) does get root with the same sudo setup" 0 \
  "$(hns setpriv --reuid=dave --regid=dave --init-groups sudo -n id -u 2>&1)"
out=$(hns setpriv --reuid=20011 --regid=20011 --clear-groups sudo -n id -u 2>&1); rc=$?
if [ $rc -ne 0 ] && [ "$out" != 0 ]; then ok "hostile: sudo -n for uid 20011 (primary gid 27 in the snapshot) gives nothing"
else bad "hostile: sudo -n for uid 20011 gives nothing (rc=$rc out=$out)"; fi
for u in shadowy lowuid; do
  OUT=$(hns pamtester -v scimreal "$u" acct_mgmt 2>&1); RC=$?
  if [ $RC -ne 0 ]; then ok "hostile: pamtester (pam_scim required + common-account): $u is refused"
  else bad "hostile: pamtester: $u is refused"; sed 's/^/    /' <<<"$OUT"; fi
done
# Past every fixed buffer (a 4,090-byte home, a 60,000-byte gecos): a
# disabled user is refused as disabled, not waved through as unreadable.
expect_eq "hostile: bigdis (disabled) resolves with its 4,090-byte home" 4090 "$(hns getent passwd bigdis | cut -d: -f6 | tr -d '\n' | wc -c)"
OUT=$(hns pamtester -v scimreal bigdis acct_mgmt 2>&1); RC=$?
if [ $RC -ne 0 ] && grep -qF "is disabled in the identity provider" <<<"$OUT"; then
  ok "hostile: pamtester: bigdis (disabled, 4,090-byte home, 60,000-byte gecos) is refused as disabled"
else bad "hostile: pamtester: bigdis refused as disabled (rc=$RC)"; sed 's/^/    /' <<<"$OUT" | cut -c1-200; fi
OUT=$(hns pamtester -v scimreal alice acct_mgmt 2>&1); RC=$?
expect_eq "hostile: pamtester: alice (a sound entry) still passes the README's account stack" 0 "$RC"

# Untrusted files: owned by a user, or in a directory others can write.
# The reader refuses them (UNAVAIL, reason named): nothing resolves, PAM and
# sudo grant nothing, local accounts keep working.
mkdir -p "$HD/owned" "$HD/ww"; chmod 0755 "$HD/owned"; chmod 0777 "$HD/ww"
cp "$H" "$HD/owned/cache.db"; chown 20001:20001 "$HD/owned/cache.db"; chmod 0644 "$HD/owned/cache.db"
cp "$H" "$HD/ww/cache.db"; chmod 0644 "$HD/ww/cache.db"
cp "$H" "$HD/gw.db"; chmod 0664 "$HD/gw.db"
for c in "owned:$HD/owned/cache.db:owned by uid 20001" "ww:$HD/ww/cache.db:is not owned by root or is group or world writable" \
         "gw:$HD/gw.db:with mode 0664"; do
  n=${c%%:*}; rest=${c#*:}; f=${rest%%:*}; why=${rest#*:}
  s=$T/ustage-$n; stage_new "$s" "$f"; mkdir -p "$s/etc/pam.d" "$s/etc/sudoers.d"
  cp "$HS/etc/pam.d/"* "$s/etc/pam.d/"; cp -p "$HS/etc/sudoers.d/hostile" "$s/etc/sudoers.d/"
  echo '%slurm-sudo ALL=(ALL) NOPASSWD: ALL' > "$s/etc/sudoers.d/scim"; chmod 0440 "$s/etc/sudoers.d/scim"
  chmod 0755 "$s/etc/pam.d" "$s/etc/sudoers.d"
  scim_ns "$s" getent passwd alice >/dev/null; expect_eq "untrusted ($n): getent passwd alice is not found" 2 $?
  scim_ns "$s" getent group slurm-sudo >/dev/null; expect_eq "untrusted ($n): getent group slurm-sudo is not found" 2 $?
  scim_ns "$s" id dave >/dev/null 2>&1; expect_eq "untrusted ($n): id dave fails" 1 $?
  expect_eq "untrusted ($n): getent passwd root still answers from files" "$(getent -s files passwd root)" \
    "$(scim_ns "$s" getent passwd root)"
  msg=$(scim_ns "$s" "$BUILD/scimlookup" check 2>&1)
  if grep -qF -- "$why" <<<"$msg"; then ok "untrusted ($n): the reader names why: $msg"
  else bad "untrusted ($n): reason: $msg"; fi
  out=$(scim_ns "$s" setpriv --reuid=20004 --regid=20004 --clear-groups sudo -n id -u 2>&1); rc=$?
  if [ $rc -ne 0 ] && [ "$out" != 0 ]; then ok "untrusted ($n): sudo -n for dave's uid (slurm-sudo in the file) gives nothing"
  else bad "untrusted ($n): sudo -n for dave's uid gives nothing (rc=$rc out=$out)"; fi
  OUT=$(scim_ns "$s" pamtester -v scimreal dave acct_mgmt 2>&1); RC=$?
  if [ $RC -ne 0 ]; then ok "untrusted ($n): pamtester (the README's account stack) refuses dave"
  else bad "untrusted ($n): pamtester refuses dave"; sed 's/^/    /' <<<"$OUT"; fi
done

# The snapshot's path as a symlink or a FIFO. A first open opens the path
# with O_NOFOLLOW and checks the file it opened; a symlink has both ends
# checked; a FIFO must not hang the open.
mkdir -p "$HD/link" "$HD/fifo"; chmod 0755 "$HD/link" "$HD/fifo"
ln -s "$H" "$HD/link/good.db"; ln -s "$HD/ww/cache.db" "$HD/link/to-ww.db"; mkfifo -m 0644 "$HD/fifo/cache.db"
s=$T/ustage-linkgood; stage_new "$s" "$HD/link/good.db"
stage_new "$T/ustage-direct" "$H"; want=$(scim_ns "$T/ustage-direct" getent passwd alice)
got=$(scim_ns "$s" getent passwd alice)
if [ "${want%%:*}" = alice ] && [ "$got" = "$want" ]; then ok "snapshot path a symlink to a trusted file: getent passwd alice answers from it"
else bad "snapshot path a symlink to a trusted file: got '$got', want '$want'"; fi
for c in "to-ww:$HD/link/to-ww.db:is not owned by root or is group or world writable" "fifo:$HD/fifo/cache.db:not a regular file"; do
  n=${c%%:*}; rest=${c#*:}; f=${rest%%:*}; why=${rest#*:}
  s=$T/ustage-$n; stage_new "$s" "$f"
  scim_ns "$s" timeout 20 getent passwd alice >/dev/null; expect_eq "untrusted ($n): getent passwd alice is not found (and does not hang)" 2 $?
  msg=$(scim_ns "$s" timeout 20 "$BUILD/scimlookup" check 2>&1)
  if grep -qF -- "$why" <<<"$msg"; then ok "untrusted ($n): the reader names why: $msg"
  else bad "untrusted ($n): reason: $msg"; fi
done

echo "--- pam_scim max_age: staleness is the file's mtime (syncd's last contact), not the content's age"
mkdir -p "$HD/age"; chmod 0755 "$HD/age"
cp "$FIX" "$HD/age/quiet.db"; chmod 0644 "$HD/age/quiet.db"   # created_at 2025, mtime now
cp -p "$HD/age/quiet.db" "$HD/age/stale.db"; touch -d '2000-01-01 00:00:00 UTC' "$HD/age/stale.db"
svc scimquiet "$ALLOW cache=$HD/age/quiet.db max_age=60 unavailable=closed"
svc scimstaleclosed "$ALLOW cache=$HD/age/stale.db max_age=60 unavailable=closed"
svc scimstaleopen "$ALLOW cache=$HD/age/stale.db max_age=60"
svc scimbadage "$ALLOW max_age=soon"
chmod 0644 "$ST"/etc/pam.d/*
expect_pam "pam: old content with a fresh mtime (quiet directory, healthy syncd): alice allowed" scimquiet alice allowed
expect_pam "pam: quiet directory: disabled bob refused" scimquiet bob refused "is disabled in the identity provider"
expect_pam "pam: stale (mtime 2000), unavailable=closed: alice refused, told why" scimstaleclosed alice refused \
  "Access denied: the account cache is stale"
expect_pam "pam: stale, unavailable=closed: local root not policed" scimstaleclosed root ignored
expect_pam "pam: stale, unavailable=open: decided from the snapshot, alice allowed" scimstaleopen alice allowed
expect_pam "pam: stale, unavailable=open: disabled bob still refused" scimstaleopen bob refused "is disabled"
expect_pam "pam: a malformed max_age is a service error" scimbadage alice refused "" "Error in service module"
