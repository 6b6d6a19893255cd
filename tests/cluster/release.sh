# tests/cluster/release.sh: sourced by tests/cluster/slurm.sh once the lab is
# up (uses its SL, SST, SCACHE, SURL, submit, on). Re-enabling a user must
# not fail their held jobs when the head's snapshot reaches the compute node
# a poll after the head released them (syncd/slurm/doc.go, "Ordering
# across the cluster").
#
# slurmd moves into a compute node: a mount namespace with its own tmpfs
# over the snapshot directory and its own `syncd run` with [mirror] at the
# default interval; the login node runs one too. The head is `syncd run`
# with [slurm] and [publish] (built-in server). For each transport (the
# head's server, then the shared directory): bob's 20 jobs wait behind
# alice's job that takes the whole node; bob is disabled at the source and
# the head holds the 20; alice's job ends, the node is idle; bob is enabled
# again, the head releases the 20 as soon as it commits, and every one of
# them must complete (none FAILED in spank_scim's task_init).
# RELEASE_WAIT=0 sets spank_scim's wait_for_snapshot=0 on the compute node:
# the behaviour before the rule, to see the test fail.
LAB=$SL/lab
if [ -n "${RELEASE_WAIT:-}" ]; then
  sed -i "s|spank_scim.so |spank_scim.so wait_for_snapshot=$RELEASE_WAIT |" "$LAB/etc/plugstack.conf"
  echo "  [release: plugstack.conf: $(grep spank_scim "$LAB/etc/plugstack.conf")]"
fi
alive_pid() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2> /dev/null; }
SLURMD0=$(cat "$LAB/run/slurmd.pid")
kill "$SLURMD0"
check "release: slurmd of the head's namespace stops" waitfor 30 bash -c "! kill -0 $SLURMD0 2>/dev/null"
cache_node compute

HPORT=$(free_port)
{ printf '%s\n' 'poll_interval = "2s"' 'poll_jitter = "200ms"'
  sed "s|^\[publish\]$|[publish]\nlisten = \"127.0.0.1:$HPORT\"|" "$SL/head.toml"; } > "$SL/head-run.toml"
chmod 0600 "$SL/head-run.toml"
scim_ns_exec "$SST" "$SYNCD" --config "$SL/head-run.toml" run > "$SL/head-run.log" 2>&1 &
RHEAD=$!
PIDS+=("$RHEAD")
check "release: the head (syncd run, [slurm] + [publish]) serves its manifest" \
  waitfor 30 curl -fsS -o /dev/null "http://127.0.0.1:$HPORT/manifest.json"

setactive() { curl -fsS -m 5 -X POST "${SURL%/scim/v2}/_admin/users/$1/active" -d "{\"active\": $2}" > /dev/null; }
# node_active NODE USER: the node's own snapshot says USER is active.
node_active() { on "$1" "$BUILD/scimlookup" -f "$SCACHE" active "$2" 2> /dev/null | grep -qx "${3:-1}"; }
# Slurm's clients resolve SCIM users on the head's stage.
hsq() { scim_ns "$SST" squeue "$@" 2> /dev/null; }
held_admin() { [ "$(hsq -h -u bob -t PD -o %r | grep -c JobHeldAdmin)" -eq "$1" ]; }

job_states() { local j; for j in "${RIDS[@]}"; do scontrol -o show job "$j" 2> /dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; done; }
all_ended() { local s; s=$(job_states) && ! grep -qE '^(PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED)$' <<< "$s"; }
NMIRROR=()
release_round() { # release_round NAME MIRROR-LINE
  local name=$1 src=$2 n ids states
  kill_tree "${NMIRROR[@]}"
  NMIRROR=()
  printf '%s\n' "cache_path = \"$SCACHE\"" "status_path = \"$SL/cache/status.json\"" '[mirror]' \
    "$src" "public_key_file = \"$T/head.key.pub\"" > "$SL/node-$name.toml"
  chmod 0600 "$SL/node-$name.toml"
  for n in compute login; do
    on "$n" "$SYNCD" --config "$SL/node-$name.toml" run > "$SL/mirror-$name-$n.log" 2>&1 &
    NMIRROR+=($!)
    PIDS+=($!)
  done
  setactive bob true
  for n in compute login; do
    check "release/$name: node $n (mirror, default interval) has bob active" waitfor 60 node_active "$n" bob
  done
  if ! alive_pid "$LAB/run/slurmd.pid"; then
    on compute env SLURM_CONF="$SLURM_CONF" /usr/sbin/slurmd
    check "release: slurmd runs in the compute node's namespace" \
      waitfor 60 bash -c "[ \"\$(sinfo -h -o %T)\" = idle ]"
  fi
  submit alice --parsable --exclusive -o /dev/null --wrap 'sleep 600'
  local blocker=${OUT%%$'\n'*}
  check "release/$name: alice's job takes the node" waitfor 30 bash -c "[ \"\$(squeue -h -j $blocker -o %T)\" = RUNNING ]"
  ids=()
  for n in $(seq 20); do
    submit bob --parsable -o /dev/null --wrap true
    [ "$RC" = 0 ] && ids+=("${OUT%%$'\n'*}")
  done
  expect_eq "release/$name: bob's 20 jobs are queued" 20 "${#ids[@]}"
  setactive bob false
  check "release/$name: the head holds bob's 20 pending jobs once he is disabled" waitfor 90 held_admin 20
  check "release/$name: the compute node refuses bob too" waitfor 60 node_active compute bob 0
  scancel "$blocker"
  check "release/$name: alice's job ends, the node is idle" \
    waitfor 60 bash -c "[ \"\$(sinfo -h -o %T)\" = idle ]"
  setactive bob true
  check "release/$name: the head releases bob's jobs once he is enabled again" waitfor 90 held_admin 0
  RIDS=("${ids[@]}")
  check "release/$name: bob's 20 jobs end" waitfor 180 all_ended
  states=$(job_states | sort | uniq -c | tr -s ' ' | paste -sd,)
  expect_eq "release/$name: 0 of bob's 20 released jobs FAILED (states:${states})" "20 COMPLETED" "$(sed 's/^ //' <<< "$states")"
  grep -h 'spank_scim' "$LAB/log/slurmd.log" 2> /dev/null | grep -c 'waiting up to' | sed "s/^/  [release\/$name: task_init waits logged so far: /; s/$/]/"
}
release_round serve "url = \"http://127.0.0.1:$HPORT/\""
release_round dir "path = \"$SL/pub\""
kill_tree "${NMIRROR[@]}"
