# tests/login/hostile_ssh.sh: sourced by tests/login/run.sh at the end of
# the ssh part, with the main sshd (scim-keys, pam_scim) still running on
# $P1 and reading $SNAP. Hostile versions of $SNAP are renamed over it.

echo "--- ssh: hostile snapshots through the running sshd"
cp -p "$SNAP" "$T/snap.good"
hostile_snap() { # SQL: a copy of the good snapshot changed by SQL, renamed over $SNAP
  cp "$T/snap.good" "$SNAPDIR/.hostile"; sqlite3 "$SNAPDIR/.hostile" "$1"; derive "$SNAPDIR/.hostile"
  chmod 0644 "$SNAPDIR/.hostile"
  mv -f "$SNAPDIR/.hostile" "$SNAP"
}
ek=$(cut -d' ' -f1,2 "$KEYS/erin_ed25519.pub") hk=$(cut -d' ' -f1,2 "$KEYS/heidi_ed25519.pub")
hostile_snap "
  INSERT INTO users VALUES (20099, 'mallory', 42, 'primary gid 42', '/home/mallory', '/bin/bash', 1, 'h1'),
    (999, 'lowbie', 20000, 'uid 999', '/home/lowbie', '/bin/bash', 1, 'h2');
  INSERT INTO ssh_keys VALUES ('mallory', 1, '$ek'), ('lowbie', 1, '$hk');
  INSERT INTO groups (gid, name, scim_id, members) VALUES (27, 'sudo', 'h3', 'alice'), (42, 'shadow', 'h4', 'alice');
  INSERT INTO memberships VALUES (27, 'alice'), (42, 'alice'), (20000, 'mallory'), (20000, 'lowbie');"
expect_refused "ssh (hostile): a user with primary gid 42 gets no keys, no login" "$P1" mallory "$ID/erin_ed25519" \
  "Permission denied (publickey)"
expect_refused "ssh (hostile): a user with uid 999 gets no keys, no login" "$P1" lowbie "$ID/heidi_ed25519" \
  "Permission denied (publickey)"
login "$P1" alice "$ID/alice_new" id -G
if [ $RC -eq 0 ] && [ -n "$OUT" ] && [ -z "$(tr ' ' '\n' <<<"$OUT" | awk '$1 < 1000')" ]; then
  ok "ssh (hostile): alice, listed in gids 27 and 42, logs in without any gid below 1000 ($OUT)"
else bad "ssh (hostile): alice's session gids: rc=$RC $OUT $ERR"; fi
# Entries past every fixed buffer (a 4,090-byte home, a 60,000-byte gecos,
# 100 keys with long comments): a disabled alice is refused by scim-keys
# and pam_scim alike, never waved through as "unreadable"; an active alice
# with the same gecos and keys still logs in (control).
big="UPDATE users SET gecos = substr(replace(hex(zeroblob(30000)), '00', 'gg'), 1, 60000) WHERE name = 'alice';
  INSERT INTO ssh_keys SELECT 'alice', 100 + value, (SELECT key FROM ssh_keys WHERE user_name = 'alice' LIMIT 1) || ' ' ||
    substr(replace(hex(zeroblob(100)), '00', 'cc'), 1, 199) || value FROM generate_series(1, 99);"
if sqlite3 "$T/snap.good" "SELECT value FROM generate_series(1, 1)" >/dev/null 2>&1; then
  hostile_snap "$big UPDATE users SET active = 0 WHERE name = 'alice';"
  expect_refused "ssh (hostile): disabled alice with a 60,000-byte gecos and 100 long keys: no login" \
    "$P1" alice "$ID/alice_new" "Permission denied"
  hostile_snap "$big UPDATE users SET active = 0, home = '/home/' || substr(replace(hex(zeroblob(2100)), '00', 'ab'), 1, 4084)
    WHERE name = 'alice';"
  login "$P1" alice "$ID/alice_new" true # sshd itself may give up on the home: any refusal
  expect_eq "ssh (hostile): disabled alice with a 4,090-byte home as well: no login" 255 "$RC"
  OUT=$(nobody_keys alice 2>&1); RC=$?
  if ! grep -q 'ssh-' <<<"$OUT"; then ok "scim-keys (hostile): disabled alice with a 4,090-byte home: no keys (rc=$RC)"
  else bad "scim-keys (hostile): disabled alice with a 4,090-byte home: rc=$RC $(head -c 300 <<<"$OUT")"; fi
  hostile_snap "$big"
  expect_login "ssh (hostile): active alice with a 60,000-byte gecos and 100 long keys logs in (control)" "$P1" alice \
    "$ID/alice_new" alice 'id -un'
else bad "ssh (hostile): sqlite3 has no generate_series"; fi
cp -p "$T/snap.good" "$SNAPDIR/.good"; mv -f "$SNAPDIR/.good" "$SNAP"
chown nobody "$SNAP"
expect_refused "ssh: a snapshot owned by a user is refused: alice cannot log in" "$P1" alice "$ID/alice_new" "Permission denied"
chown root "$SNAP"
chmod 0777 "$SNAPDIR"
expect_refused "ssh: a snapshot in a world-writable directory is refused: alice cannot log in" "$P1" alice "$ID/alice_new" \
  "Permission denied"
chmod 0755 "$SNAPDIR"
expect_login "ssh: the same snapshot back in a root-only directory: alice logs in" "$P1" alice "$ID/alice_new" alice 'id -un'
