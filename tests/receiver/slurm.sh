#!/usr/bin/env bash
# tests/receiver/slurm.sh: an identity-provider migration on a real Slurm
# 22.05 with accounting (tests/slurm/up.sh), fed by the push receiver.
# Run from tests/receiver/run.sh; exits 0 without output lines when Slurm
# is not installed.
#
# IdP A pushes alice and bob and the group hpc-ml; syncd receive (in a
# scim_ns namespace, so users resolve only through libnss_scim) commits
# the snapshot and its Slurm step creates account ml with both users.
# alice starts a job. IdP B takes over the way Entra and Okta do (lookup
# by userName, then PUT/PATCH with B's externalIds; the group POST is a
# 409 so B finds it by displayName and PATCHes it) and adds carol. After
# that: alice's and bob's passwd lines and associations are unchanged,
# carol has hers, alice's running job is untouched and she can submit.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/slurm

for c in slurmctld slurmd slurmdbd sacctmgr munged mariadbd; do
  command -v "$c" > /dev/null || [ -x "/usr/sbin/$c" ] || { echo "  (receiver slurm migration skipped: $c not installed)"; exit 0; }
done
[ -f "$BUILD/spank_scim.so" ] || { echo "  (receiver slurm migration skipped: no spank_scim.so)"; exit 0; }

T=$(mktemp -d /tmp/scim-receiver-slurm.XXXXXX)
chmod 0755 "$T"
export SLURM_LAB_DIR=$T/lab SLURM_LAB_CLUSTER=rcvtest
export SLURM_CONF=$SLURM_LAB_DIR/etc/slurm.conf
CLUSTER=rcvtest
ST=$T/stage
CACHE=$T/cache/cache.db
WORK=$T/work
RCV_PID=
cleanup() {
  kill_tree "$RCV_PID"
  scim_ns "$ST" "$HERE/down.sh" > "$T/down.log" 2>&1 || { echo "down.sh:"; cat "$T/down.log"; }
  left_running "$T"
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
on_exit cleanup
mkdir -p "$T/cache" "$WORK"
chmod 0755 "$T/cache"
chmod 1777 "$WORK"
stage_new "$ST" "$CACHE"

A=idp-a-$RANDOM$RANDOM
B=idp-b-$RANDOM$RANDOM
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
cat > "$T/syncd.toml" << EOF
cache_path = "$CACHE"
status_path = "$T/status.json"
uid_min = 41000
uid_max = 41999
gid_min = 41000
gid_max = 41999
[slurm]
enabled = true
cluster = "$CLUSTER"
default_account = "scim-landing"
qos = ["normal"]
default_qos = "normal"
group_pattern = "^hpc-(.+)$"
lock_file = "$T/slurm.lock"
[receiver]
listen = "127.0.0.1:0"
store_path = "$T/receiver.db"
debounce = "300ms"
# IdP B takes over IdP A's users and group (a migration): shared users.
shared_scope = true
[[receiver.clients]]
name = "idp-a"
token_sha256 = "$(sha "$A")"
[[receiver.clients]]
name = "idp-b"
token_sha256 = "$(sha "$B")"
EOF
chmod 0600 "$T/syncd.toml"

t0=$SECONDS
if ! scim_ns "$ST" env SLURM_LAB_PLUGSTACK="required $BUILD/spank_scim.so cache=$CACHE" \
  "$HERE/up.sh" --fresh > "$T/up.log" 2>&1; then
  bad "receiver+slurm: up.sh failed"; tail -20 "$T/up.log"; exit 1
fi
echo "  Slurm lab up in $((SECONDS - t0)) s"
scim_ns_exec "$ST" "$BUILD/syncd" --config "$T/syncd.toml" receive --addr-file "$T/addr" > "$T/receiver.log" 2>&1 &
RCV_PID=$!
for _ in $(seq 1 100); do [ -s "$T/addr" ] && break; sleep 0.1; done
[ -s "$T/addr" ] || { bad "receiver+slurm: syncd receive did not start"; tail "$T/receiver.log"; exit 1; }
URL="http://$(cat "$T/addr")/scim/v2"

TOKEN=$A
call() { # call WANT METHOD PATH [BODY]; sets R
  local want=$1 st
  st=$(curl -sS -o "$T/resp" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/scim+json' ${4:+--data-binary "$4"} "$URL$3")
  R=$(cat "$T/resp")
  [ "$st" = "$want" ] || { echo "  $2 $3: status $st, want $want: $R"; return 1; }
}
serial() { sqlite3 "file:$CACHE?mode=ro&immutable=1" "select value from meta where key='serial'" 2> /dev/null || echo 0; }
settle() {
  local s0 s1
  sleep 1
  s0=$(serial)
  for _ in $(seq 1 60); do
    sleep 1; s1=$(serial)
    [ "$s1" = "$s0" ] && return 0
    s0=$s1
  done
  return 1
}
# until SECONDS CMD...: CMD every 0.5 s until it succeeds.
until_ok() {
  local n=$(($1 * 2)); shift
  while [ "$n" -gt 0 ]; do "$@" > /dev/null 2>&1 && return 0; sleep 0.5; n=$((n - 1)); done
  return 1
}
# snap_has USER ACCOUNT: the snapshot (C reader) records the association,
# i.e. the Slurm step ran and read it back.
snap_has() { "$BUILD/scimlookup" -f "$CACHE" assoc "$1" 2> /dev/null | grep -q "^$2|"; }
assocs() { sacctmgr -nP show assoc where cluster=$CLUSTER account=ml format=account,user,qos,defaultqos | LC_ALL=C sort; }
as() {
  local u=$1; shift
  scim_ns "$ST" bash -c 'cd "$0" && exec runuser -u "$1" -- env SLURM_CONF="$2" "${@:3}"' "$WORK" "$u" "$SLURM_CONF" "$@"
}
job_state() { scontrol -o show job "$1" 2> /dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p'; }
SP='"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"]'
GP='"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"]'
PO='"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"]'

# IdP A provisions.
call 201 POST /Users "{$SP,\"userName\":\"alice\",\"displayName\":\"Alice A\",\"externalId\":\"A-1\",\"active\":true}"; AL=$(jq -r .id <<< "$R")
call 201 POST /Users "{$SP,\"userName\":\"bob\",\"displayName\":\"Bob B\",\"externalId\":\"A-2\",\"active\":true}"; BO=$(jq -r .id <<< "$R")
call 201 POST /Groups "{$GP,\"displayName\":\"hpc-ml\",\"externalId\":\"A-g\",\"members\":[{\"value\":\"$AL\"},{\"value\":\"$BO\"}]}"
until_ok 60 snap_has bob ml
settle
BEFORE_PW=$(scim_ns "$ST" getent passwd alice bob)
BEFORE=$(assocs)
expect_eq "receiver+slurm: IdP A's group hpc-ml became account ml with alice and bob" "ml|alice|normal|normal
ml|bob|normal|normal
ml|||" "$(assocs | sed 's/^ml||[^|]*|[^|]*$/ml|||/')"
J=$(as alice sbatch --parsable -A ml -o /dev/null --wrap 'sleep 300' 2> "$T/sbatch.err")
for _ in $(seq 1 60); do [ "$(job_state "$J")" = RUNNING ] && break; sleep 0.5; done
expect_eq "receiver+slurm: alice's job runs under account ml" RUNNING "$(job_state "$J")"

# IdP B takes over: new externalIds, found by userName, group by displayName.
TOKEN=$B
for u in alice bob; do
  call 200 GET "/Users?filter=$(jq -rn --arg u "$u" '"userName eq \"\($u)\""|@uri')"
  id=$(jq -r '.Resources[0].id' <<< "$R")
  call 200 PUT "/Users/$id" "{$SP,\"userName\":\"$u\",\"displayName\":\"$(jq -r '.Resources[0].displayName' <<< "$R")\",\"externalId\":\"B-$u\",\"active\":true}"
done
call 201 POST /Users "{$SP,\"userName\":\"carol\",\"displayName\":\"Carol C\",\"externalId\":\"B-carol\",\"active\":true}"; CA=$(jq -r .id <<< "$R")
call 409 POST /Groups "{$GP,\"displayName\":\"hpc-ml\",\"externalId\":\"B-g\"}"
call 200 GET "/Groups?excludedAttributes=members&filter=$(jq -rn '"displayName eq \"hpc-ml\""|@uri')"
G=$(jq -r '.Resources[0].id' <<< "$R")
call 204 PATCH "/Groups/$G" "{$PO,\"Operations\":[{\"op\":\"Add\",\"path\":\"members\",\"value\":[{\"value\":\"$AL\"},{\"value\":\"$BO\"},{\"value\":\"$CA\"}]}]}"
call 200 PATCH "/Groups/$G" "{$PO,\"Operations\":[{\"op\":\"Replace\",\"path\":\"externalId\",\"value\":\"B-g\"}]}"
until_ok 60 snap_has carol ml
settle
expect_eq "receiver+slurm: after the migration alice and bob have the same passwd lines" "$BEFORE_PW" "$(scim_ns "$ST" getent passwd alice bob)"
expect_eq "receiver+slurm: their associations are unchanged; carol was added" \
  "$(printf '%s\nml|carol|normal|normal\n' "$BEFORE" | LC_ALL=C sort)" "$(assocs)"
expect_eq "receiver+slurm: alice's running job is untouched" "RUNNING" "$(job_state "$J")"
as alice sbatch --wait -A ml -o /dev/null --wrap true > /dev/null 2>&1
expect_eq "receiver+slurm: alice can still submit to ml" 0 "$?"
as carol sbatch --wait -A ml -o /dev/null --wrap true > /dev/null 2>&1
expect_eq "receiver+slurm: carol, pushed by IdP B, can submit to ml" 0 "$?"
scancel "$J" 2> /dev/null
summary
