#!/usr/bin/env bash
# tests/receiver/run.sh: the SCIM push receiver end to end, real parts only.
#
# build/syncd receive serves SCIM on 127.0.0.1 (ephemeral port); curl plays
# the identity providers with request sequences shaped like Okta's, Entra
# ID's and authentik's provisioning traffic. The receiver publishes each
# snapshot ([publish], signed); a mirror node (syncd mirror --once, shared
# directory transport) installs it, and after each step the node's copy
# is read with getent through build/libnss_scim.so.2 (scim_ns namespace),
# with scimlookup (the C reader pam_scim uses) and with spank_host +
# spank_scim.so.
#
#   okta       create, update (PUT), deactivate, group push, member add/remove
#   entra      string booleans, capitalised ops, remove with a value list,
#              soft delete then DELETE
#   authentik  PUT updates, groups POSTed with members
#   poller     syncd's own SCIM client reads the receiver back: same rows
#   migration  IdP B re-pushes the same userNames with new ids: same uids,
#              gids and homes
#   local      syncd users add / groups add-member / keys set without an IdP
#   burst      301 member PATCHes in one burst become one snapshot
#   kill       kill -9 during a burst of creates: every 2xx is in the store
#   hostile    bad records are refused (400) or left out by validation
#   rotation   a client's token replaced by SIGHUP, no restart
#   slurm      the migration on a real Slurm: associations and a running
#              job untouched (tests/receiver/slurm.sh)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || { bad "receiver tests need root (namespaces)"; summary; exit 1; }
for b in syncd libnss_scim.so.2 scimlookup; do
  [ -f "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; summary; exit 1; }
done
for c in jq curl sqlite3; do
  command -v "$c" > /dev/null || { bad "$c not installed (make deps)"; summary; exit 1; }
done

T=$(mktemp -d /tmp/scim-receiver.XXXXXX)
[ -d "$T" ] || { bad "mktemp"; summary; exit 1; }
chmod 0755 "$T"
RCV_PID= LOOP=
cleanup() {
  kill_tree "$RCV_PID" "$LOOP"
  left_running "$T"
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
on_exit cleanup

SYNCD=$BUILD/syncd
CACHE=$T/cache.db
NCACHE=$T/node/cache.db
mkdir -p "$T/pub" "$T/node"
chmod 0755 "$T/pub" "$T/node"
"$SYNCD" keygen --out "$T/head.key" > /dev/null 2>&1 || { bad "syncd keygen"; summary; exit 1; }
STORE=$T/receiver.db
OKTA=okta-$RANDOM$RANDOM$RANDOM
ENTRA=entra-$RANDOM$RANDOM$RANDOM
# The two IdPs of this suite share users (the migration below moves them
# from one to the other): shared_scope = true, as the README says for that
# case. Scopes themselves are tested over HTTP in syncd/receiver.
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }

printf '%s\n' \
  "cache_path = \"$CACHE\"" \
  "status_path = \"$T/status.json\"" \
  'uid_min = 20000' 'uid_max = 29999' 'gid_min = 20000' 'gid_max = 29999' \
  'user_name_domains = ["okta.local", "contoso.com"]' \
  'max_removal_share = 1.0' \
  'log_level = "info"' \
  '[receiver]' \
  'listen = "127.0.0.1:0"' \
  "store_path = \"$STORE\"" \
  'debounce = "1s"' \
  'max_delay = "10s"' \
  'shared_scope = true' \
  '[[receiver.clients]]' 'name = "okta"' "token_sha256 = \"$(sha "$OKTA")\"" \
  '[[receiver.clients]]' 'name = "entra"' "token_sha256 = \"$(sha "$ENTRA")\"" \
  '[publish]' "dir = \"$T/pub\"" "key_file = \"$T/head.key\"" > "$T/syncd.toml"
chmod 0600 "$T/syncd.toml"
# The mirror node: its own snapshot, filled only from the signed publish
# directory.
printf '%s\n' "cache_path = \"$NCACHE\"" "status_path = \"$T/node/status.json\"" \
  '[mirror]' "path = \"$T/pub\"" "public_key_file = \"$T/head.key.pub\"" > "$T/node.toml"
chmod 0600 "$T/node.toml"
syncd() { "$SYNCD" --config "$T/syncd.toml" "$@"; }

start_receiver() {
  rm -f "$T/addr"
  "$SYNCD" --config "$T/syncd.toml" receive --addr-file "$T/addr" >> "$T/receiver.log" 2>&1 &
  RCV_PID=$!
  local i
  for i in $(seq 1 100); do [ -s "$T/addr" ] && break; sleep 0.1; done
  URL="http://$(cat "$T/addr" 2> /dev/null)/scim/v2"
}
start_receiver
[ -s "$T/addr" ] || { bad "syncd receive did not start: $(cat "$T/receiver.log")"; summary; exit 1; }
ok "syncd receive listens on $(cat "$T/addr")"

TOKEN=$OKTA
# req METHOD PATH [BODY]: prints the body, then the status on the last line.
req() {
  curl -sS -o "$T/resp" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/scim+json' ${3:+--data-binary "$3"} "$URL$2"
}
# call WANT METHOD PATH [BODY]: req, checking the status; sets R (the body).
call() {
  local want=$1; shift
  local st
  st=$(req "$@")
  R=$(cat "$T/resp")
  [ "$st" = "$want" ] || { echo "  $1 $2: status $st, want $want: $R"; return 1; }
}
serial() { sqlite3 "file:$CACHE?mode=ro&immutable=1" "select value from meta where key='serial'" 2> /dev/null || echo 0; }
# settle: wait until the receiver has processed (committed and published)
# the store's current generation, then let the mirror node take it.
processed() { sed -n 's/.*store generation processed.* generation=\([0-9]*\).*/\1/p' "$T/receiver.log" | sort -n | tail -1; }
settle() {
  local gen i
  gen=$(sqlite3 "$STORE" "select value from meta where key='generation'")
  for i in $(seq 1 150); do
    [ "$(processed)" -ge "$gen" ] 2> /dev/null && break
    sleep 0.2
  done
  [ "$(processed)" -ge "$gen" ] 2> /dev/null || { echo "  settle: generation $gen not processed"; return 1; }
  "$SYNCD" --config "$T/node.toml" mirror --once >> "$T/mirror.log" 2>&1 || { echo "  settle: mirror --once failed: $(tail -2 "$T/mirror.log")"; return 1; }
}
ST=$T/stage
stage_new "$ST" "$NCACHE"
nss() { scim_ns "$ST" getent -s scim "$@"; }
look() { "$BUILD/scimlookup" -f "$NCACHE" "$@"; }
SP='"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"]'
GP='"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"]'
PO='"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"]'
# spank USER: what sbatch would be told by spank_scim.so (no Slurm lab
# here, so active users are refused for having no association yet; the
# decision checked is "disabled" or not).
spank() {
  scim_ns "$ST" "$BUILD/spank_host" "$BUILD/spank_scim.so" "$1" "cache=$NCACHE" 2>&1
}

# --- okta -----------------------------------------------------------------
call 200 GET "/Users?filter=$(jq -rn '"userName eq \"test.user@okta.local\""|@uri')&startIndex=1&count=100"
expect_eq "okta: lookup before create finds nobody" 0 "$(jq .totalResults <<< "$R")"
call 201 POST /Users "{$SP,\"userName\":\"test.user@okta.local\",\"name\":{\"givenName\":\"Test\",\"familyName\":\"User\"},
  \"emails\":[{\"primary\":true,\"value\":\"test.user@okta.local\",\"type\":\"work\"}],\"displayName\":\"Test User\",
  \"locale\":\"en-US\",\"externalId\":\"00ujl29u0le5T6Aj10h7\",\"groups\":[],\"password\":\"1mz050nq\",\"active\":true}"
OKTA_ID=$(jq -r .id <<< "$R")
call 201 POST /Users "{$SP,\"userName\":\"second@okta.local\",\"displayName\":\"Second\",\"externalId\":\"00u2\",\"active\":true}"
OKTA_ID2=$(jq -r .id <<< "$R")
settle
check "mirror: the node installed the head's signed snapshot, byte for byte" cmp -s "$CACHE" "$NCACHE"
expect_eq "okta: created user resolves with an allocated uid, private gid, default home and shell" \
  "test.user:*:20000:20000:Test User:/home/test.user:/bin/bash" "$(nss passwd test.user)"
expect_eq "okta: the user's private group resolves" "test.user:*:20000:" "$(nss group 20000)"
call 200 PUT "/Users/$OKTA_ID" "{$SP,\"id\":\"$OKTA_ID\",\"userName\":\"test.user@okta.local\",\"name\":{\"givenName\":\"Another\",\"familyName\":\"User\"},
  \"emails\":[{\"primary\":true,\"value\":\"test.user@okta.local\",\"type\":\"work\"}],\"displayName\":\"Another User\",
  \"externalId\":\"00ujl29u0le5T6Aj10h7\",\"groups\":[],\"active\":true,\"meta\":{\"resourceType\":\"User\"}}"
call 201 POST /Groups "{$GP,\"displayName\":\"Test SCIMv2\",\"members\":[]}"
OKTA_G=$(jq -r .id <<< "$R")
call 200 PATCH "/Groups/$OKTA_G" "{$PO,\"Operations\":[{\"op\":\"replace\",\"value\":{\"id\":\"$OKTA_G\",\"displayName\":\"hpc-ml\"}}]}"
call 204 PATCH "/Groups/$OKTA_G" "{$PO,\"Operations\":[{\"op\":\"add\",\"path\":\"members\",\"value\":[{\"value\":\"$OKTA_ID\",\"display\":\"test.user@okta.local\"},{\"value\":\"$OKTA_ID2\",\"display\":\"second@okta.local\"}]}]}"
settle
expect_eq "okta: PUT update keeps the uid, changes the GECOS" \
  "test.user:*:20000:20000:Another User:/home/test.user:/bin/bash" "$(nss passwd test.user)"
expect_eq "okta: pushed, renamed group with both members" "hpc-ml:*:20002:second,test.user" "$(nss group hpc-ml)"
expect_eq "okta: initgroups (the C reader)" "test.user 20002" "$(look initgroups test.user)"
call 204 PATCH "/Groups/$OKTA_G" "{$PO,\"Operations\":[{\"op\":\"remove\",\"path\":\"members[value eq \\\"$OKTA_ID2\\\"]\"}]}"
call 200 PATCH "/Users/$OKTA_ID" "{$PO,\"Operations\":[{\"op\":\"replace\",\"value\":{\"active\":false}}]}"
settle
expect_eq "okta: member removed" "hpc-ml:*:20002:test.user" "$(nss group hpc-ml)"
expect_eq "okta: deactivated user still resolves (files keep their owner)" \
  "test.user:*:20000:20000:Another User:/home/test.user:/bin/bash" "$(nss passwd test.user)"
expect_eq "okta: deactivated user is inactive for pam_scim's reader" 0 "$(look active test.user)"
if [ -f "$BUILD/spank_host" ] && [ -f "$BUILD/spank_scim.so" ]; then
  check "okta: spank_scim refuses the deactivated user's job as disabled" bash -c "grep -q 'test.user is disabled in the identity provider' <<< '$(spank test.user)'"
  check "okta: spank_scim does not call the active user disabled" bash -c "! grep -q 'disabled' <<< '$(spank second)'"
fi
call 200 PATCH "/Users/$OKTA_ID" "{$PO,\"Operations\":[{\"op\":\"replace\",\"value\":{\"active\":true}}]}"
settle
expect_eq "okta: reactivated" 1 "$(look active test.user)"

# --- entra ----------------------------------------------------------------
TOKEN=$ENTRA
call 201 POST /Users '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
  "externalId":"0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef","userName":"Test_User_dfeef4c5@contoso.com","active":true,
  "emails":[{"primary":true,"type":"work","value":"Test_User_dfeef4c5@contoso.com"}],"meta":{"resourceType":"User"},
  "name":{"formatted":"givenName familyName","familyName":"familyName","givenName":"givenName"},"roles":[],
  "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"Research"}}'
E1=$(jq -r .id <<< "$R")
call 201 POST /Users '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"externalId":"e2","userName":"jdoe@contoso.com","active":"True","displayName":"J Doe"}'
E2=$(jq -r .id <<< "$R")
call 201 POST /Groups '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"externalId":"8aa1a0c0","displayName":"slurm-users","meta":{"resourceType":"Group"}}'
EG=$(jq -r .id <<< "$R")
call 200 GET "/Groups?excludedAttributes=members&filter=$(jq -rn '"displayName eq \"slurm-users\""|@uri')"
expect_eq "entra: group found by displayName, members excluded" "1 null" "$(jq -r '"\(.totalResults) \(.Resources[0].members)"' <<< "$R")"
call 204 PATCH "/Groups/$EG" "{$PO,\"Operations\":[{\"op\":\"Add\",\"path\":\"members\",\"value\":[{\"\$ref\":null,\"value\":\"$E1\"},{\"\$ref\":null,\"value\":\"$E2\"}]}]}"
call 200 PATCH "/Users/$E1" "{$PO,\"Operations\":[{\"op\":\"Replace\",\"path\":\"emails[type eq \\\"work\\\"].value\",\"value\":\"new@contoso.com\"},{\"op\":\"Replace\",\"path\":\"name.familyName\",\"value\":\"updatedFamilyName\"}]}"
settle
expect_eq "entra: user with an uppercase email-style userName resolves by its folded local part" \
  "test_user_dfeef4c5:*:20002:20003::/home/test_user_dfeef4c5:/bin/bash" "$(nss passwd test_user_dfeef4c5)"
expect_eq "entra: \"active\": \"True\" is active" 1 "$(look active jdoe)"
expect_eq "entra: members added with capitalised Add" "slurm-users:*:20005:jdoe,test_user_dfeef4c5" "$(nss group slurm-users)"
call 200 PATCH "/Users/$E2" "{$PO,\"Operations\":[{\"op\":\"Replace\",\"path\":\"active\",\"value\":\"False\"}]}"
call 204 PATCH "/Groups/$EG" "{$PO,\"Operations\":[{\"op\":\"Remove\",\"path\":\"members\",\"value\":[{\"\$ref\":null,\"value\":\"$E1\"}]}]}"
settle
expect_eq "entra: \"active\": \"False\" disables (soft delete)" 0 "$(look active jdoe)"
expect_eq "entra: Remove with path members and a value list" "slurm-users:*:20005:jdoe" "$(nss group slurm-users)"
call 409 POST /Users '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"JDOE@contoso.com"}'
expect_eq "entra: a userName differing only in case is a 409 uniqueness" uniqueness "$(jq -r .scimType <<< "$R")"
call 204 DELETE "/Users/$E2"
settle
nss passwd jdoe > /dev/null
expect_eq "entra: hard-deleted user is gone (getent exit 2)" 2 "$?"
expect_eq "entra: and gone from the group" "slurm-users:*:20005:" "$(nss group slurm-users)"

# --- authentik ------------------------------------------------------------
TOKEN=$OKTA
call 201 POST /Users "{$SP,\"userName\":\"alice\",\"name\":{\"formatted\":\"alice X\"},\"displayName\":\"alice X\",\"active\":true,
  \"emails\":[{\"value\":\"alice@example.org\",\"type\":\"other\",\"primary\":true}],\"externalId\":\"ak-1\",\"photos\":[]}"
AK1=$(jq -r .id <<< "$R")
call 200 PUT "/Users/$AK1" "{$SP,\"userName\":\"alice\",\"name\":{\"formatted\":\"Alice Liddell\"},\"displayName\":\"Alice Liddell\",\"active\":true,\"externalId\":\"ak-1\"}"
call 201 POST /Groups "{$GP,\"displayName\":\"hpc-wonder\",\"externalId\":\"ak-g\",\"members\":[{\"value\":\"$AK1\"},{\"value\":\"$OKTA_ID\"}]}"
AKG=$(jq -r .id <<< "$R")
call 204 PATCH "/Groups/$AKG" "{$PO,\"Operations\":[{\"op\":\"remove\",\"path\":\"members\",\"value\":[{\"value\":\"$OKTA_ID\"}]}]}"
settle
expect_eq "authentik: PUT user" "alice:*:20004:20006:Alice Liddell:/home/alice:/bin/bash" "$(nss passwd alice)"
expect_eq "authentik: group POSTed with members, one removed" "hpc-wonder:*:20007:alice" "$(nss group hpc-wonder)"

# --- hostile --------------------------------------------------------------
# What the IdP pushes goes through the poller's validation before any node
# sees it: a bad record is left out, the rest is published.
KEY=$(ssh-keygen -q -t ed25519 -N '' -f "$T/hk" > /dev/null 2>&1 && cat "$T/hk.pub")
call 201 POST /Users "{$SP,\"userName\":\"mallory\",\"active\":true,
  \"urn:ietf:params:scim:schemas:extension:posix:2.0:User\":{\"loginShell\":\"/tmp/evil\"}}"
call 201 POST /Users "{$SP,\"userName\":\"trudy\",\"active\":true,
  \"urn:ietf:params:scim:schemas:extension:posix:2.0:User\":{\"sshPublicKeys\":[\"command=\\\"/bin/sh\\\" $KEY\", \"$KEY\"]}}"
call 400 POST /Users "{$SP,\"userName\":\"\u0441erg\"}"
expect_eq "hostile: a userName with a Cyrillic look-alike is refused with a reason" 1 "$(grep -c 'not ASCII and has no ASCII spelling' <<< "$R")"
call 400 POST /Users "{$SP,\"userName\":\"eve@evil.example\"}"
check "hostile: a domain outside user_name_domains is refused naming user_names.domains" grep -q user_names.domains <<< "$R"
settle
nss passwd mallory > /dev/null
expect_eq "hostile: a user with a shell outside allowed_shells is not published" 2 "$?"
expect_eq "hostile: a key with options is dropped, the plain one kept" "$(cut -d' ' -f1,2 <<< "$KEY")" "$(look keys trudy | cut -d' ' -f1,2)"

# --- poller ---------------------------------------------------------------
# syncd's own SCIM client, a second independent client, reads the receiver
# into a second snapshot: the same rows.
printf '%s' "$OKTA" > "$T/okta.token"; chmod 0600 "$T/okta.token"
printf '%s\n' "base_url = \"$URL\"" "token_file = \"$T/okta.token\"" 'preset = "posix"' \
  "cache_path = \"$T/poll.db\"" "status_path = \"$T/poll.json\"" 'private_groups = true' \
  'uid_min = 20000' 'uid_max = 29999' 'gid_min = 20000' 'gid_max = 29999' 'max_retries = 0' \
  'user_name_domains = ["okta.local", "contoso.com"]' > "$T/poll.toml"
chmod 0600 "$T/poll.toml"
"$SYNCD" --config "$T/poll.toml" sync --once > "$T/poll.out" 2>&1
expect_eq "poller: syncd sync --once against the receiver exits 0" 0 "$?"
p1=$("$BUILD/scimlookup" -f "$CACHE" passwd | sort); p2=$("$BUILD/scimlookup" -f "$T/poll.db" passwd | sort)
g1=$("$BUILD/scimlookup" -f "$CACHE" group | sort); g2=$("$BUILD/scimlookup" -f "$T/poll.db" group | sort)
expect_eq "poller: the polled snapshot has the receiver's passwd rows ($(wc -l <<< "$p1"))" "$p1" "$p2"
expect_eq "poller: and its group rows" "$g1" "$g2"

# --- migration ------------------------------------------------------------
before=$(nss passwd | sort)
# IdP A's users are deleted; IdP B (authentik) pushes the same userNames
# with its own externalIds and gets new SCIM ids.
TOKEN=$OKTA
call 204 DELETE "/Users/$OKTA_ID"; call 204 DELETE "/Users/$OKTA_ID2"; call 204 DELETE "/Groups/$OKTA_G"
settle
TOKEN=$ENTRA
call 201 POST /Users "{$SP,\"userName\":\"newcomer@okta.local\",\"active\":true}"
call 201 POST /Users "{$SP,\"userName\":\"TEST.USER@okta.local\",\"displayName\":\"Another User\",\"externalId\":\"B-1\",\"active\":true}"
N1=$(jq -r .id <<< "$R")
call 201 POST /Users "{$SP,\"userName\":\"second@okta.local\",\"displayName\":\"Second\",\"externalId\":\"B-2\",\"active\":true}"
N2=$(jq -r .id <<< "$R")
call 201 POST /Groups "{$GP,\"displayName\":\"hpc-ml\",\"externalId\":\"B-g\",\"members\":[{\"value\":\"$N1\"}]}"
settle
check "migration: new SCIM ids" [ "$N1" != "$OKTA_ID" ]
after=$(nss passwd | grep -v '^newcomer:' | sort)
expect_eq "migration: every user has the same uid, gid and home as under IdP A" "$before" "$after"
expect_eq "migration: the group has its old gid" "hpc-ml:*:20002:test.user" "$(nss group hpc-ml)"
expect_eq "migration: the newcomer gets the next uid (20007: mallory and trudy took 20005-6), not a deleted user's" 20007 "$(nss passwd newcomer | cut -d: -f3)"

# --- local ----------------------------------------------------------------
syncd users add carol --name "Carol Local" > "$T/local.out" 2>&1
expect_eq "local: syncd users add" 0 "$?"
syncd groups add-member lab carol >> "$T/local.out" 2>&1
expect_eq "local: syncd groups add-member (creates the group)" 0 "$?"
ssh-keygen -q -t ed25519 -N '' -C carol@lab -f "$T/carol" > /dev/null 2>&1 || true
syncd keys set carol < "$T/carol.pub" >> "$T/local.out" 2>&1
expect_eq "local: syncd keys set" 0 "$?"
settle
check "local: carol resolves" [ -n "$(nss passwd carol)" ]
expect_eq "local: lab group" "carol" "$(nss group lab | cut -d: -f4)"
expect_eq "local: the uploaded key is published" "$(cut -d' ' -f1,2 "$T/carol.pub")" "$(look keys carol | cut -d' ' -f1,2)"
syncd users disable carol > /dev/null 2>&1
settle
expect_eq "local: syncd users disable" 0 "$(look active carol)"
echo garbage | syncd keys set carol > "$T/badkey.out" 2>&1
expect_eq "local: a malformed key is refused" 1 "$?"
cuid=$(nss passwd carol | cut -d: -f3)
syncd users remove carol > /dev/null 2>&1
syncd users add carol > /dev/null 2>&1
settle
expect_eq "local: a removed and re-added user gets its uid back but not the old uploaded key" "$cuid 0" \
  "$(nss passwd carol | cut -d: -f3) $(look keys carol | grep -c .)"
syncd groups remove-member lab nobody-here > "$T/badmember.out" 2>&1
check "local: removing an unknown user says so" grep -q 'no user "nobody-here"' "$T/badmember.out"

# --- burst ----------------------------------------------------------------
# 301 member changes (150 add/remove pairs, then an add) sent back to back (one keep-alive connection) become
# one snapshot.
TOKEN=$OKTA
# The burst adds a member okta created itself.
call 201 POST /Users "{$SP,\"userName\":\"burst.member@okta.local\",\"active\":true}"
N3=$(jq -r .id <<< "$R")
settle
s0=$(serial)
: > "$T/burst.curl"
for i in $(seq 1 151); do
  for o in add remove; do
    [ "$i$o" = 151remove ] && break
    [ -s "$T/burst.curl" ] && echo next >> "$T/burst.curl"
    printf 'url = "%s/Groups/%s"\nrequest = "PATCH"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/scim+json"\ndata = "{\\"schemas\\":[\\"urn:ietf:params:scim:api:messages:2.0:PatchOp\\"],\\"Operations\\":[{\\"op\\":\\"%s\\",\\"path\\":\\"members\\",\\"value\\":[{\\"value\\":\\"%s\\"}]}]}"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
      "$URL" "$AKG" "$OKTA" "$o" "$N3" >> "$T/burst.curl"
  done
done
t0=$(date +%s%N)
curl -sS -K "$T/burst.curl" > "$T/burst.codes" 2>&1
t1=$(date +%s%N)
expect_eq "burst: 301 PATCHes all 204" "301 204" "$(sort "$T/burst.codes" | uniq -c | awk '{print $1, $2}')"
echo "  burst of 301 member PATCHes: $(((t1 - t0) / 1000000)) ms"
settle
# A head with [publish] takes clock-based serials (syncd/snapshot/serial.go):
# count the snapshots committed since, in the history, not serial steps.
expect_eq "burst: one snapshot for the whole burst" 1 \
  "$(find "$CACHE.history" -name '*.db' -printf '%f\n' | sed 's/\.db$//' | awk -v s="$s0" '$1 + 0 > s + 0' | wc -l)"
check "burst: the live snapshot is that one" [ "$(serial)" -gt "$s0" ]
expect_eq "burst: the net change is in it" "hpc-wonder:*:20007:alice,burst.member" "$(nss group hpc-wonder)"

# --- kill -----------------------------------------------------------------
# Creates in a loop record each userName only after a 2xx; kill -9 lands
# mid-burst; every acknowledged user must be in the store.
: > "$T/acked"
(
  for i in $(seq 1 400); do
    st=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $OKTA" -H 'Content-Type: application/scim+json' \
      --data-binary "{$SP,\"userName\":\"k$i\"}" "$URL/Users" 2> /dev/null)
    [ "$st" = 201 ] && echo "k$i" >> "$T/acked"
    [ "$st" = 000 ] && break
  done
) &
LOOP=$!
sleep 1.5
kill -9 "$RCV_PID"; wait "$RCV_PID" 2> /dev/null; RCV_PID=
wait "$LOOP"; LOOP=
acked=$(wc -l < "$T/acked")
check "kill: the receiver acknowledged writes before the kill ($acked)" [ "$acked" -gt 5 ]
stored=$(sqlite3 "$STORE" "select user_name from users where user_name like 'k%'" | sort)
expect_eq "kill: every acknowledged create is in the store after kill -9" "" "$(comm -23 <(sort "$T/acked") <(printf '%s\n' "$stored"))"
start_receiver
check "kill: the receiver restarts on the same store" [ -s "$T/addr" ]
settle
# A create committed just before the kill may never have been answered:
# the store may hold more than was acknowledged, never less.
expect_eq "kill: the restarted receiver publishes every stored create" "$(printf '%s\n' "$stored" | grep -c .)" "$(look passwd | grep -c '^k[0-9]*:')"
check "audit: the log names clients and never a token" bash -c "syncd() { :; }; '$SYNCD' --config '$T/syncd.toml' receive --audit 1000 > '$T/audit.out' 2>&1 && grep -q ' okta ' '$T/audit.out' && grep -q ' entra ' '$T/audit.out' && ! grep -q -e '$OKTA' -e '$ENTRA' '$T/audit.out'"

# --- rotation -------------------------------------------------------------
# okta's token is replaced in the config; SIGHUP makes it take effect.
NEWTOK=rotated-$RANDOM$RANDOM$RANDOM
sed -i "s/$(sha "$OKTA")/$(sha "$NEWTOK")/" "$T/syncd.toml"
kill -HUP "$RCV_PID"
sleep 1
TOKEN=$NEWTOK
expect_eq "rotation: after SIGHUP the new token is accepted" 200 "$(req GET '/Users?count=1')"
TOKEN=$OKTA
expect_eq "rotation: the old token is refused" 401 "$(req GET '/Users?count=1')"
TOKEN=$ENTRA
expect_eq "rotation: the other client's token still works" 200 "$(req GET '/Users?count=1')"
check "rotation: the receiver is still running" kill -0 "$RCV_PID"
# shared_scope follows the config on SIGHUP too (no restart): off, entra
# no longer sees a user okta created; on again, it does.
OKTA_UID=$(sqlite3 "$STORE" "select id from users where scope = 'okta' limit 1")
check "scope reload: okta created a user ($OKTA_UID)" [ -n "$OKTA_UID" ]
TOKEN=$ENTRA
expect_eq "scope reload: with shared_scope = true entra reads okta's user" 200 "$(req GET "/Users/$OKTA_UID")"
sed -i 's/^shared_scope = true$/shared_scope = false/' "$T/syncd.toml"
kill -HUP "$RCV_PID"; sleep 1
expect_eq "scope reload: after SIGHUP with shared_scope = false entra gets 404 for okta's user" 404 "$(req GET "/Users/$OKTA_UID")"
check "scope reload: the receiver logged the reload" grep -q 'shared_scope=false' "$T/receiver.log"
sed -i 's/^shared_scope = false$/shared_scope = true/' "$T/syncd.toml"
kill -HUP "$RCV_PID"; sleep 1
expect_eq "scope reload: shared again after SIGHUP" 200 "$(req GET "/Users/$OKTA_UID")"
syncd sync --once --dry-run > "$T/dry.out" 2>&1
expect_eq "sync --once --dry-run reads the receiver's store" 0 "$?"
check "dry run: nothing to change" grep -q "users: 0 added, 0 changed, 0 removed" "$T/dry.out"

# The migration again, on a real Slurm with accounting (tests/slurm/up.sh,
# the SLURM_LAB_* ports from the environment); skipped without Slurm.
"$(dirname "$0")/slurm.sh"
slurm_rc=$?

summary && [ "$slurm_rc" -eq 0 ]
