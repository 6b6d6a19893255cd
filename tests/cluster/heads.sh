# tests/cluster/heads.sh: sourced by tests/cluster/run.sh after "stop" (the
# head is down; uses its T, SYNCD, head_config, start_node, on, holds,
# mirror_once, node_sum). Heads that start over, and two heads:
#
#   rebuild   the head's cache, history and publish directory are removed
#             and it starts again: its first serial is clock-based, above
#             every serial it published before; node dir-b (path = the
#             publish directory) installs it with nobody touching the node;
#             the manifest from before the wipe, played back, is refused
#   twoheads  a second head with the same key reads the same source and
#             publishes on its own port; a node lists the head with the
#             higher serial as url and the other in fallback_urls: it
#             follows the first, and when that head goes down, the second
#             (status names it, its snapshot byte for byte, fresh mtime)

pmf() { jq -r .payload "$1/manifest.json" | base64 -d | jq -r ".$2"; }
head_port() { sed -n 's/.*serving the publish directory.*listen="\{0,1\}127.0.0.1:\([0-9]*\).*/\1/p' "$1" | head -1; }

# --- rebuild --------------------------------------------------------------------
OLD_SERIAL=$(pmf "$T/pub" serial)
cp -p "$T/pub/manifest.json" "$T/pre-wipe-manifest.json"
check "the head's serials are clock-based (within a minute of now)" \
  [ $(( $(date +%s) - OLD_SERIAL )) -lt 60 ] && [ $(( OLD_SERIAL - $(date +%s) )) -lt 60 ]
rm -rf "$T/head" "$T/pub"
mkdir -p "$T/head" "$T/pub"
chmod 0755 "$T/head" "$T/pub"
# The clock passes the old serial (a serial may run a few commits ahead of
# the clock within one second).
waitfor 10 bash -c "[ \$(date +%s) -gt $OLD_SERIAL ]"
"$SYNCD" --config "$T/head.toml" run > "$T/head-rebuilt.log" 2>&1 &
HEAD_PID=$!
PIDS+=("$HEAD_PID")
check "the rebuilt head publishes a manifest" waitfor 30 test -s "$T/pub/manifest.json"
NEW_SERIAL=$(pmf "$T/pub" serial)
check "the rebuilt head's first serial ($NEW_SERIAL) is above its last before the wipe ($OLD_SERIAL)" [ "$NEW_SERIAL" -gt "$OLD_SERIAL" ]
check "node dir-b installs the rebuilt head's snapshot without manual action" \
  waitfor 30 holds dir-b "$(pmf "$T/pub" sha256)"
check "node dir-b: zz.tamper (created before the wipe, at the source) still resolves" on dir-b getent passwd zz.tamper
mkdir -p "$T/evil2"
cp -p "$T/pub"/* "$T/evil2/"
start_node replay idle "path = \"$T/evil2\""
waitfor 10 on replay test -f /etc/scimbridge/syncd.toml
check "replay node: installs the rebuilt head's snapshot" on replay "$SYNCD" mirror --once
RLIVE=$(node_sum replay)
cp -p "$T/pre-wipe-manifest.json" "$T/evil2/manifest.json"
on replay "$SYNCD" mirror --once > "$T/replay.out" 2>&1
expect_eq "the manifest from before the wipe, played back: refused (exit 3)" 3 "$?"
expect_eq "the manifest from before the wipe: live snapshot unchanged" "$RLIVE" "$(node_sum replay)"
on replay "$SYNCD" status > "$T/replay-status.out" 2>&1
check "the manifest from before the wipe: the reason in syncd status" \
  grep -q '^last error: .*refused: manifest serial .* is lower than' "$T/replay-status.out"

# --- twoheads -------------------------------------------------------------------
mkdir -p "$T/head2" "$T/pub2"
chmod 0755 "$T/head2" "$T/pub2"
head_config "$T/head.key" "$T/pub2" | sed "s#$T/head/#$T/head2/#" | grep -v '^s3_' > "$T/head2.toml"
chmod 0600 "$T/head2.toml"
"$SYNCD" --config "$T/head2.toml" run > "$T/head2.log" 2>&1 &
HEAD2_PID=$!
PIDS+=("$HEAD2_PID")
check "the second head publishes a manifest" waitfor 30 test -s "$T/pub2/manifest.json"
waitfor 10 grep -q 'serving the publish directory' "$T/head-rebuilt.log"
waitfor 10 grep -q 'serving the publish directory' "$T/head2.log"
P1=$(head_port "$T/head-rebuilt.log")
P2=$(head_port "$T/head2.log")
expect_eq "both heads publish the same users" "$(pmf "$T/pub" users)" "$(pmf "$T/pub2" users)"
# The node lists first the head with the higher serial: the one it follows.
if [ "$(pmf "$T/pub2" serial)" -gt "$(pmf "$T/pub" serial)" ]; then
  FIRST=(pub2 "$P2" "$HEAD2_PID") SECOND=(pub "$P1" "$HEAD_PID")
else
  FIRST=(pub "$P1" "$HEAD_PID") SECOND=(pub2 "$P2" "$HEAD2_PID")
fi
start_node twoheads run "url = \"http://127.0.0.1:${FIRST[1]}/\"" "fallback_urls = [\"http://127.0.0.1:${SECOND[1]}/\"]"
check "node twoheads follows the first head (its snapshot byte for byte)" \
  waitfor 30 holds twoheads "$(pmf "$T/${FIRST[0]}" sha256)"
expect_eq "node twoheads: syncd status names the first head" "mirror http://127.0.0.1:${FIRST[1]}/" \
  "$(on twoheads "$SYNCD" status --json | jq -r .status.source)"
kill -TERM "${FIRST[2]}"
check "the first head stops" waitfor 10 bash -c "! kill -0 ${FIRST[2]}"
t0=$EPOCHREALTIME
check "node twoheads follows the second head when the first is down (byte for byte)" \
  waitfor 30 holds twoheads "$(pmf "$T/${SECOND[0]}" sha256)"
echo "  failover to the second head: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s"
check "node twoheads: syncd status names the second head" waitfor 5 bash -c \
  "nsenter --mount --target ${NODE_PID[twoheads]} -- '$SYNCD' status --json | jq -e '.status.source == \"mirror http://127.0.0.1:${SECOND[1]}/\" and .status.last_result != \"failed\" and .status.last_result != \"refused\"'"
check "node twoheads: live file mtime follows the second head's source_contact (within 3 s of now)" \
  waitfor 10 bash -c "[ \$((\$(date +%s) - \$(nsenter --mount --target ${NODE_PID[twoheads]} stat -c %Y /var/lib/scimbridge/cache.db))) -le 3 ]"
check "node twoheads: getent passwd zz.cluster after the failover" on twoheads getent passwd zz.cluster
on twoheads "$SYNCD" check-config --online > "$T/twoheads-online.out" 2>&1
expect_eq "check-config --online with one head down: passes, names the head down" "0 1" \
  "$? $(grep -c "^warning: fetch manifest.json from http://127.0.0.1:${FIRST[1]}/" "$T/twoheads-online.out")"
