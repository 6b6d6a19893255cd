# tests/cluster/slurm.sh: sourced by tests/cluster/run.sh (uses its T,
# SYNCD, start_bg, on). A head with [slurm] and [publish] on the real Slurm
# lab (tests/slurm/up.sh); a login node that only mirrors. On the node,
# sbatch runs spank_scim.so against the node's own copy of the snapshot:
#
#   - before the node has a snapshot, spank_scim warns (missing=open);
#   - after `syncd mirror --once`, the node holds the head's associations
#     (C reader), alice's job runs, dave (disabled) is refused at submit;
#   - bob is disabled at the source: after one head sync and one mirror
#     poll the node refuses bob's job.
#
# The node is a mount namespace whose snapshot directory is its own tmpfs
# at the same path the head uses, so plugstack.conf's cache= names the
# head's file for slurmctld/slurmd and the node's file for sbatch there.
SLURM_OK=1
for c in slurmctld slurmd slurmdbd sacctmgr munged mariadbd; do
  command -v "$c" > /dev/null || [ -x "/usr/sbin/$c" ] || { bad "$c not installed (make deps)"; SLURM_OK=; }
done
for b in spank_scim.so scimlookup; do
  [ -f "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; SLURM_OK=; }
done
if [ -n "$SLURM_OK" ]; then
  SL=$T/slurm
  mkdir -p "$SL/cache" "$SL/work" "$SL/pub"
  chmod 0755 "$SL" "$SL/cache" "$SL/pub"
  chmod 1777 "$SL/work"
  export SLURM_LAB_DIR=$SL/lab SLURM_LAB_CLUSTER=scimtest SLURM_CONF=$SL/lab/etc/slurm.conf
  SCACHE=$SL/cache/cache.db
  SST=$SL/stage
  stage_new "$SST" "$SCACHE"
  LAB_UP=1
  start_bg slurmscim "$SL/scim.url" "$BUILD/scim-testserver" -fixture "$ROOT/tests/slurm/fixture.json" \
    -token-file "$T/token" -listen 127.0.0.1:0
  SURL=$(head -n1 "$SL/scim.url")
  cat > "$SL/head.toml" << EOF
base_url = "$SURL"
token_file = "$T/token"
preset = "posix"
cache_path = "$SCACHE"
status_path = "$SL/status.json"
max_retries = 0
request_timeout = "5s"

[publish]
dir = "$SL/pub"
key_file = "$T/head.key"

[slurm]
enabled = true
cluster = "scimtest"
default_account = "scim-landing"
qos = ["normal"]
default_qos = "normal"
group_pattern = "^hpc-(.+)$"
lock_file = "$SL/slurm.lock"

[slurm.groups.physics]
account = "phys"
qos = ["normal", "gpu"]
default_qos = "normal"
EOF
  printf '%s\n' "cache_path = \"$SCACHE\"" "status_path = \"$SL/cache/status.json\"" '[mirror]' \
    "path = \"$SL/pub\"" "public_key_file = \"$T/head.key.pub\"" > "$SL/node.toml"
  chmod 0600 "$SL/head.toml" "$SL/node.toml"
  head_sync() { scim_ns "$SST" "$SYNCD" --config "$SL/head.toml" sync --once >> "$SL/head.log" 2>&1; }

  t0=$EPOCHREALTIME
  check "slurm head: first sync commits the snapshot" head_sync
  if scim_ns "$SST" env SLURM_LAB_PLUGSTACK="required $BUILD/spank_scim.so cache=$SCACHE" \
    "$ROOT/tests/slurm/up.sh" --fresh > "$SL/up.log" 2>&1; then
    ok "Slurm lab up ($(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s with the first sync)"
  else
    bad "tests/slurm/up.sh failed: $(tail -5 "$SL/up.log")"
    SLURM_OK=
  fi
fi
if [ -n "$SLURM_OK" ]; then
  # The head reconciles (enabled = true) on its next sync, reads the
  # associations back into the snapshot and publishes that.
  head_force() { scim_ns "$SST" "$SYNCD" --config "$SL/head.toml" sync --once --force >> "$SL/head.log" 2>&1; }
  check "slurm head: second sync (forced) reconciles Slurm and publishes" head_force
  echo "  [slurm section at $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s]"
  pay() { jq -r .payload "$SL/pub/manifest.json" | base64 -d | jq -r ".$1"; }
  check "the published manifest carries the head's Slurm associations" [ "$(pay associations)" -gt 0 ]
  expect_eq "the published snapshot is the head's live one" "$(sha256sum < "$SCACHE" | cut -c1-64)" "$(pay sha256)"

  # cache_node NAME: a node namespace with the stage's /etc (nsswitch,
  # reader.conf) and its own tmpfs over the snapshot directory.
  cache_node() {
    unshare --mount --propagation private -- /bin/bash -c '
      set -e
      st=$1; lib=$2; cache=$3; name=$4
      mount -t overlay scim-etc -o "lowerdir=$st/etc:/etc" /etc
      mount -t overlay scim-lib -o "lowerdir=$st/lib:$lib" "$lib"
      mount -t tmpfs -o mode=0755,size=64m "$name-cache" "$cache"
      exec sleep 3600' "$1" "$SST" "$LIBDIR" "$SL/cache" "$1" > "$SL/$1.log" 2>&1 &
    NODE_PID[$1]=$!
    waitfor 10 bash -c "nsenter --mount --target ${NODE_PID[$1]} -- findmnt -n '$SL/cache' | grep -q tmpfs"
  }
  cache_node login
  # submit USER ARGS...: sbatch on the login node as USER; sets RC, OUT.
  submit() {
    local u=$1; shift
    OUT=$(on login bash -c 'cd "$0" && exec runuser -u "$1" -- env SLURM_CONF="$2" sbatch "${@:3}"' \
      "$SL/work" "$u" "$SLURM_CONF" "$@" 2>&1)
    RC=$?
  }
  check "login node: no snapshot yet" bash -c "! nsenter --mount --target ${NODE_PID[login]} -- test -e '$SCACHE'"
  # alice does not resolve there yet: sbatch as her uid, numerically.
  OUT=$(on login bash -c 'cd "$0" && exec setpriv --reuid=31001 --regid=31000 --clear-groups env SLURM_CONF="$1" sbatch --parsable -A phys -o /dev/null --wrap true' \
    "$SL/work" "$SLURM_CONF" 2>&1)
  RC=$?
  if grep -q 'spank_scim: WARNING: .*allowing the job (missing=open)' <<< "$OUT"; then
    ok "login node without a snapshot: sbatch's spank_scim reads the node's (missing) copy and warns"
  else
    bad "login node without a snapshot: no missing=open warning: rc=$RC $OUT"
  fi
  echo "  [slurm section at $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s]"
  on login "$SYNCD" --config "$SL/node.toml" mirror --once > "$SL/mirror1.out" 2>&1
  expect_eq "login node: syncd mirror --once installs the head's snapshot" 0 "$?"
  expect_eq "login node: the same snapshot byte for byte" "$(pay sha256)" "$(on login sha256sum "$SCACHE" | cut -c1-64)"
  expect_eq "login node: alice's associations through the C reader, as on the head" \
    "$("$BUILD/scimlookup" -f "$SCACHE" assoc alice 2>&1)" "$(on login "$BUILD/scimlookup" -f "$SCACHE" assoc alice 2>&1)"
  submit alice --parsable --wait -A phys --qos=gpu -o "$SL/work/alice-%j.out" --wrap id
  J=${OUT%%$'\n'*}
  expect_eq "login node: alice's sbatch -A phys --qos=gpu runs (rc)" 0 "$RC"
  check "login node: no spank_scim warning for alice" bash -c "! grep -q spank_scim <<< \"\$1\"" _ "$OUT"
  expect_eq "login node: alice's job ran as alice" "uid=31001(alice)" "$(cut -d' ' -f1 "$SL/work/alice-$J.out" 2> /dev/null)"
  echo "  [slurm section at $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s]"
  submit dave --wrap id
  if [ "$RC" -ne 0 ] && grep -qF "spank_scim: user dave is disabled in the identity provider" <<< "$OUT"; then
    ok "login node: dave (disabled) is refused at submit"
  else
    bad "login node: dave: rc=$RC $OUT"
  fi
  submit bob --parsable --wait -o /dev/null --wrap true
  expect_eq "login node: bob's job runs before he is disabled" 0 "$RC"

  echo "  [slurm section at $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s]"
  # Disable bob at the source: one head sync, one mirror poll.
  curl -fsS -m 5 -X POST "${SURL%/scim/v2}/_admin/users/bob/active" -d '{"active": false}' > /dev/null
  check "slurm head: sync after bob is disabled" head_sync
  on login "$SYNCD" --config "$SL/node.toml" mirror --once > "$SL/mirror2.out" 2>&1
  expect_eq "login node: mirror --once installs the new snapshot" 0 "$?"
  submit bob --wrap id
  if [ "$RC" -ne 0 ] && grep -qF "spank_scim: user bob is disabled in the identity provider" <<< "$OUT"; then
    ok "login node: bob, disabled at the source, is refused at submit after one head sync and one mirror poll"
  else
    bad "login node: bob after disabling: rc=$RC $OUT"
  fi
  echo "  [slurm section at $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s]"
fi
[ -z "$SLURM_OK" ] || . "$ROOT/tests/cluster/release.sh"
