# tests/syncd/scimmy.sh, sourced by tests/syncd/run.sh: syncd against an
# independent SCIM server (issue 20). SCIMMY and scimmy-routers (npm; the
# protocol side is theirs, not this project's) serve a directory shaped as
# Okta, Entra ID, AWS IAM Identity Center and authentik publish it
# (tests/scimmy/server.mjs): userNames as emails and UPNs in mixed case,
# accents and apostrophes, an Entra guest, two people with one local part
# at two domains, each user's gid equal to their uid with no group for it,
# groups named "Sales Team EU" and "équipe recherche". syncd polls it with
# the README's minimal config (base_url, token_file, preset, cache_path)
# and getent must show exactly the rows tests/scimmy/expect.mjs computes
# from what the server serves (the default name rules written again,
# independently of syncd/names).
#
# The packages are installed with npm ci from tests/scimmy/package-lock.json
# into $BUILD/scimmy-lab (kept between runs while the lock file is the same).

scimmy_lab() {
  local lab=$BUILD/scimmy-lab src=$ROOT/tests/scimmy
  command -v node > /dev/null && command -v npm > /dev/null || { echo "node and npm are not installed (make deps)"; return 1; }
  if ! cmp -s "$src/package-lock.json" "$lab/package-lock.json" || [ ! -d "$lab/node_modules/scimmy-routers" ]; then
    rm -rf "$lab" && mkdir -p "$lab" && cp "$src/package.json" "$src/package-lock.json" "$lab/" || return 1
    (cd "$lab" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) > "$T/npm.log" 2>&1 || { echo "npm ci failed: $(tail -3 "$T/npm.log")"; return 1; }
  fi
  cp "$src/server.mjs" "$src/expect.mjs" "$lab/"
}

if ! why=$(scimmy_lab); then
  bad "independent server: SCIMMY could not be installed: $why"
else
  S=$T/scimmy
  mkdir -p "$S" && chmod 0700 "$S"
  (umask 077; printf 'scimmy-token-%s\n' "$RANDOM$RANDOM" > "$S/token")
  node "$BUILD/scimmy-lab/server.mjs" --token-file "$S/token" --addr-file "$S/addr" --users 300 > "$S/dir.jsonl" 2> "$S/server.log" &
  PIDS+=("$!")
  for i in $(seq 1 100); do [ -s "$S/addr" ] && break; sleep 0.1; done
  if [ ! -s "$S/addr" ]; then
    bad "independent server: SCIMMY did not start: $(head -5 "$S/server.log")"
  else
    # The README's smallest config: base_url, token_file, preset, cache_path.
    printf '%s\n' "base_url = \"http://$(cat "$S/addr")/scim/v2\"" "token_file = \"$S/token\"" \
      'preset = "posix"' "cache_path = \"$S/cache.db\"" > "$S/syncd.toml"
    chmod 0600 "$S/syncd.toml"
    node "$BUILD/scimmy-lab/expect.mjs" "$S" < "$S/dir.jsonl"
    "$SYNCD" --config "$S/syncd.toml" check-config --online > "$S/check.out" 2>&1
    expect_eq "independent server: check-config --online with the minimal config exits 0" 0 "$?"
    check "independent server: check-config publishes every user of the first page" \
      grep -Eq "^first page: ([0-9]+) users, 4 groups: \1 users published, 0 not in posix_groups, 0 records rejected" "$S/check.out"
    # SCIMMY answers attributes=...meta.lastModified with 400 (it wants
    # meta.resourceType as well): syncd reads without attributes= and says so.
    check "independent server: check-config warns that the server refuses attributes=, naming send_attributes" \
      grep -q "^warning: send_attributes: the server rejects the attributes= parameter" "$S/check.out"
    "$SYNCD" --config "$S/syncd.toml" sync --once > "$S/sync.out" 2>&1
    expect_eq "independent server: sync --once with the minimal config exits 0" 0 "$?"
    SST=$T/scimmy-stage
    stage_new "$SST" "$S/cache.db"
    expect_eq "independent server: getent passwd shows exactly the $(wc -l < "$S/want.passwd") users expect.mjs derives (emails, UPNs, accents mapped)" \
      "$(cat "$S/want.passwd")" "$(scim_ns "$SST" getent -s scim passwd | sort)"
    expect_eq "independent server: getent group shows the private groups and the 4 mapped IdP groups with their members" \
      "$(cat "$S/want.group")" "$(scim_ns "$SST" getent -s scim group | sort)"
    expect_eq "independent server: an Entra UPN resolves by its login name (id bob.smith)" \
      "uid=20001(bob.smith) gid=20001(bob.smith) groups=20001(bob.smith),30001(hpc_users)" "$(scim_ns "$SST" id bob.smith)"
    check "independent server: the colliding quinn@a.example and quinn@b.example are refused, both named" \
      bash -c "[ \$(grep -c 'duplicate-name: users \"quinn@a.example\" (id \"u-twin-a\"), \"quinn@b.example\" (id \"u-twin-b\")' '$S/sync.out') = 2 ]"
    check "independent server: no other record is rejected" bash -c "[ \$(grep -c '^! rejected' '$S/sync.out') = 2 ]"
    s1=$(sqlite3 "file:$S/cache.db?mode=ro&immutable=1" "select value from meta where key='serial'")
    "$SYNCD" --config "$S/syncd.toml" sync --once > "$S/sync2.out" 2>&1
    expect_eq "independent server: a second sync exits 0 and commits nothing new (serial $s1)" \
      "0 $s1" "$? $(sqlite3 "file:$S/cache.db?mode=ro&immutable=1" "select value from meta where key='serial'")"
  fi
fi
