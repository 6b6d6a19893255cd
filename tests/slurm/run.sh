#!/usr/bin/env bash
# tests/slurm/run.sh: SCIM groups become Slurm accounts on a real Slurm 22.05
# (slurmctld, slurmd, slurmdbd, MariaDB, munge; tests/slurm/up.sh), and
# spank_scim.so refuses the jobs of users the snapshot does not provision.
#
# Pipeline, all real: scim-testserver (fixture.json) -> syncd sync --once ->
# snapshot -> syncd's after-commit Slurm step (sacctmgr) -> associations read
# back into the snapshot -> spank_scim.so in sbatch/srun/slurmstepd.
#
# The Slurm daemons, syncd and every client run in scim_ns namespaces over
# one stage, so users resolve only through libnss_scim (nothing in /etc is
# written). All state lives in a temp dir under /tmp; the lab is stopped by
# down.sh from the EXIT trap, also on failure.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/slurm

[ "$(id -u)" = 0 ] || { bad "slurm tests need root (namespaces, daemons)"; summary; exit 1; }
for b in syncd scim-testserver libnss_scim.so.2 spank_scim.so scimlookup; do
  [ -f "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; summary; exit 1; }
done
for c in slurmctld slurmd slurmdbd sacctmgr munged mariadbd sqlite3 curl; do
  command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] || { bad "$c not installed (make deps)"; summary; exit 1; }
done

T=$(mktemp -d /tmp/scimbridge-slurm.XXXXXX)
chmod 0755 "$T"
export SLURM_LAB_DIR=$T/lab SLURM_LAB_CLUSTER=scimtest
export SLURM_CONF=$SLURM_LAB_DIR/etc/slurm.conf
CLUSTER=scimtest
ST=$T/stage
CACHE=$T/cache/cache.db
WORK=$T/work
SCIM_PID= RUN_PID=
cleanup() {
  kill_tree "$RUN_PID" # syncd run (disable.sh), if a failure left it up
  scim_ns "$ST" "$HERE/down.sh" > "$T/down.log" 2>&1 || { echo "down.sh:"; cat "$T/down.log"; }
  kill_tree "$SCIM_PID"
  left_running "$T"
  if [ -n "${KEEP_TMP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
on_exit cleanup
mkdir -p "$T/cache" "$WORK"
chmod 0755 "$T/cache"
chmod 1777 "$WORK"
stage_new "$ST" "$CACHE"

secs() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}'; }

# --- SCIM server and syncd ------------------------------------------------
head -c 24 /dev/urandom | base64 > "$T/scim.token"; chmod 0600 "$T/scim.token"
"$BUILD/scim-testserver" -fixture "$HERE/fixture.json" -token-file "$T/scim.token" \
  -listen 127.0.0.1:0 > "$T/scim.url" 2> "$T/scim.log" &
SCIM_PID=$!
for _ in $(seq 100); do [ -s "$T/scim.url" ] && break; sleep 0.1; done
SCIM_URL=$(head -n1 "$T/scim.url")
[ -n "$SCIM_URL" ] || { bad "scim-testserver did not start"; cat "$T/scim.log"; summary; exit 1; }
ADMIN=${SCIM_URL%%/scim/v2*}/_admin
admin() { # admin METHOD PATH [JSON]
  curl -fsS -m 5 -X "$1" ${3:+-H 'Content-Type: application/json' --data "$3"} "$ADMIN/$2" >/dev/null
}

# config ENABLED: syncd.toml; enabled=true makes every committed sync reconcile.
config() {
  local phys_limits=${PHYS_LIMITS:-'"GrpTRES=gres/gpu=16"'}
  cat > "$T/syncd.toml" <<EOF
base_url = "$SCIM_URL"
token_file = "$T/scim.token"
preset = "posix"
cache_path = "$CACHE"
status_path = "$T/status.json"
max_retries = 0
request_timeout = "5s"

[slurm]
enabled = $1
cluster = "$CLUSTER"
default_account = "scim-landing"
qos = ["normal"]
default_qos = "normal"
group_pattern = "^hpc-(.+)$"
lock_file = "$T/slurm.lock"
${TIERS_TOP:-}

[slurm.groups.physics]
account = "phys"
qos = ["normal", "gpu"]
default_qos = "normal"
limits = [$phys_limits]
${TIERS_TABLES:-}
EOF
  chmod 0600 "$T/syncd.toml"
}
# syncd runs in the namespace too: "resolves via getpwnam on this host".
syncd() { scim_ns "$ST" "$BUILD/syncd" --config "$T/syncd.toml" "$@"; }
sync_once() { syncd sync --once >> "$T/syncd.log" 2>&1; }
sync_force() { syncd sync --once --force >> "$T/syncd.log" 2>&1; }
apply() { syncd slurm apply > "$T/apply.out" 2>> "$T/syncd.log"; }

# as USER CMD...: CMD as USER inside the namespace, from the shared work dir.
as() {
  local u=$1; shift
  scim_ns "$ST" bash -c 'cd "$0" && exec runuser -u "$1" -- env SLURM_CONF="$2" "${@:3}"' \
    "$WORK" "$u" "$SLURM_CONF" "$@"
}
# run_as USER CMD...: sets RC, OUT (stdout+stderr).
run_as() { OUT=$(as "$@" 2>&1); RC=$?; }
job_field() { scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
job_count() { scontrol -o show jobs 2>/dev/null | grep -c '^JobId='; }
job_count_active() { squeue -h | wc -l; }
node_state() { sinfo -h -o %T; }
assocs() { sacctmgr -nP show assoc where cluster=$CLUSTER "$@" format=account,user,qos,defaultqos,grptres,maxsubmit; }
snap_assoc() { "$BUILD/scimlookup" -f "$CACHE" assoc "$1" 2>/dev/null; }
wait_job_state() { # wait_job_state JOBID STATE SECONDS
  local end=$((SECONDS + $3))
  while [ "$(job_field "$1" JobState)" != "$2" ]; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.5
  done
}

config false
t0=$EPOCHREALTIME
check "syncd writes the first snapshot from the SCIM server" sync_once
[ -f "$CACHE" ] || { bad "no snapshot at $CACHE"; tail -20 "$T/syncd.log"; summary; exit 1; }
expect_eq "users resolve through libnss_scim in the namespace" \
  "alice:*:31001:31000:Alice Slurmtest:/home/alice:/bin/bash" "$(scim_ns "$ST" getent passwd alice)"

# --- the cluster -----------------------------------------------------------
t0=$EPOCHREALTIME
# 8 fake GPUs and 16 claimed CPUs (jobs side by side for the tier caps),
# preemption by QOS for the spot tier, a fast backfill so it is seen soon.
if ! scim_ns "$ST" env SLURM_LAB_PLUGSTACK="required $BUILD/spank_scim.so cache=$CACHE" \
     SLURM_LAB_GPUS=8 SLURM_LAB_CPUS=16 \
     SLURM_LAB_CONF_EXTRA=$'PreemptType=preempt/qos\nPreemptMode=REQUEUE\nSchedulerParameters=bf_interval=2\nDefMemPerGPU=1024\nDefCpuPerGPU=1' \
     "$HERE/up.sh" --fresh > "$T/up.log" 2>&1; then
  bad "up.sh failed"; tail -30 "$T/up.log"; summary; exit 1
fi
ok "Slurm 22.05 + slurmdbd up in the namespace in $(secs "$t0")s"
expect_eq "node idle" idle "$(node_state)"

# A hand-made account without the marker, with a user, made before syncd
# ever runs: it must come through every pass untouched.
sacctmgr -i add account handmade Cluster=$CLUSTER Organization=physics-dept Description="made by hand" >/dev/null
sacctmgr -i add user root Account=handmade Cluster=$CLUSTER >/dev/null
handmade() {
  sacctmgr -nP show assoc where account=handmade format=account,user,qos,defaultqos,grptres,maxsubmit
  sacctmgr -nP show account where name=handmade format=account,organization,description
}
HANDMADE=$(handmade)

# --- plan on a fresh cluster, apply, apply again ---------------------------
PLAN=$(syncd slurm plan 2>> "$T/syncd.log"); RC=$?
expect_eq "slurm plan exits 0" 0 "$RC"
for want in \
  "sacctmgr -i add qos gpu 'Description=managed by scimbridge'" \
  "sacctmgr -i add account phys Cluster=$CLUSTER Parent=root Organization=scimbridge 'Description=managed by scimbridge' GrpTRES=gres/gpu=16" \
  "sacctmgr -i add account scim-landing Cluster=$CLUSTER Parent=root Organization=scimbridge 'Description=managed by scimbridge' GrpTRES=gres/gpu=0" \
  "sacctmgr -i add account chem Cluster=$CLUSTER Parent=root Organization=scimbridge 'Description=managed by scimbridge'" \
  "sacctmgr -i add user alice,bob,dave,frank Account=scim-landing Cluster=$CLUSTER QOS=normal DefaultQOS=normal" \
  "sacctmgr -i add user alice,dave,frank Account=phys Cluster=$CLUSTER QOS=gpu,normal DefaultQOS=normal" \
  "sacctmgr -i add user alice,bob Account=chem Cluster=$CLUSTER QOS=normal DefaultQOS=normal"; do
  if grep -qxF -- "$want" <<<"$PLAN"; then ok "plan lists: $want"; else bad "plan lacks: $want"; fi
done
if grep -E '^sacctmgr' <<<"$PLAN" | grep -q handmade; then bad "plan touches the hand-made account"; else ok "plan leaves the hand-made account alone"; fi
expect_eq "plan changed nothing in slurmdbd" "" "$(assocs account=phys)"

t0=$EPOCHREALTIME
check "slurm apply" apply
APPLY1=$(secs "$t0")
ok "first apply took ${APPLY1}s: $(tail -1 "$T/apply.out")"
expect_eq "phys: alice, dave, frank with QOS gpu,normal; account capped at 16 GPUs" \
  "phys|alice|gpu,normal|normal||
phys|dave|gpu,normal|normal||
phys|frank|gpu,normal|normal||
phys||normal||gres/gpu=16|" "$(assocs account=phys | LC_ALL=C sort)"
expect_eq "landing account capped at no GPUs" "gres/gpu=0" \
  "$(sacctmgr -nP show assoc where cluster=$CLUSTER account=scim-landing user= format=grptres | head -1)"
expect_eq "managed accounts carry the marker" "chem|scimbridge
phys|scimbridge
scim-landing|scimbridge" "$(sacctmgr -nP show account where name=chem,phys,scim-landing format=account,organization | sort)"
expect_eq "every provisioned user defaults to the landing account" "alice|scim-landing
bob|scim-landing
dave|scim-landing
frank|scim-landing" "$(sacctmgr -nP show user where name=alice,bob,dave,frank format=user,defaultaccount | sort)"
expect_eq "carol (in the snapshot, no mapped group) has no association" "" "$(assocs user=carol)"
expect_eq "the snapshot records alice's associations (C reader)" "chem|normal|normal|0|0
phys|gpu,normal|normal|0|0
scim-landing|normal|normal|1|0" "$(snap_assoc alice)"

BEFORE=$(assocs)
check "slurm apply again" apply
expect_eq "second apply changes nothing" "# applied 0 command(s), 0 changed something" \
  "$(tail -1 "$T/apply.out" | sed 's/; [0-9]* sacctmgr.*//')"
expect_eq "second apply: associations identical" "$BEFORE" "$(assocs)"
grep -q 'nothing to do' <(syncd slurm plan 2>/dev/null) && ok "plan after apply: nothing to do" || bad "plan after apply is not empty"

# Limits in every form of sacctmgr(1) converge; removed ones are cleared;
# drift is told from config changes; mapping conflicts are refused.
. "$HERE/limits.sh"
# Tiers as code: project capped at the team's guaranteed GPUs, general up
# to the team cap, spot preempted by a project job and requeued.
. "$HERE/tiers.sh"
# Usage: mylimits (tiers, caps, use, pending reasons) as a researcher, and
# `syncd report usage` against sreport, with GPU jobs on every tier.
. "$HERE/usage.sh"

config true

# --- jobs of a provisioned user ------------------------------------------------
run_as alice sbatch --parsable --wait -A phys --qos=gpu -o "$WORK/alice-%j.out" --wrap id
J=${OUT%%$'\n'*}
expect_eq "alice: sbatch -A phys --qos=gpu --wait runs (rc)" 0 "$RC"
expect_eq "alice's job ran as alice" "uid=31001(alice)" "$(cut -d' ' -f1 "$WORK/alice-$J.out" 2>/dev/null)"
expect_eq "alice's job charged to phys with QOS gpu" "phys gpu" "$(job_field "$J" Account) $(job_field "$J" QOS)"
run_as alice sbatch --parsable --wait -o /dev/null --wrap true
J=${OUT%%$'\n'*}
expect_eq "alice without -A lands on the landing account, QOS normal" "scim-landing normal" "$(job_field "$J" Account) $(job_field "$J" QOS)"

OUT=$(scim_ns "$ST" bash -c 'cd "$0" && sbatch --parsable --wait -o /dev/null --wrap true' "$WORK" 2>&1); RC=$?
expect_eq "root (not in the snapshot) is exempt" 0 "$RC"

# srun inside an allocation (local context with SLURM_JOB_ID), salloc, arrays.
run_as alice salloc -A phys bash -c 'echo "account=${SLURM_JOB_ACCOUNT:-unset}"; srun id -un'
if [ "$RC" = 0 ] && grep -qx "account=phys" <<<"$OUT" && grep -qx alice <<<"$OUT"; then
  ok "alice: salloc -A phys, srun inside the allocation runs (SLURM_JOB_ACCOUNT=phys in it)"
else bad "alice: salloc + srun inside it: rc=$RC $OUT"; fi
run_as alice sbatch --parsable --wait -A phys --array=1-3 -o "$WORK/arr-%A_%a.out" --wrap 'echo "task $SLURM_ARRAY_TASK_ID $(id -un)"'
J=${OUT%%$'\n'*}
expect_eq "alice: a job array runs every task (sbatch --wait rc)" 0 "$RC"
expect_eq "alice: the array's three tasks ran as alice" "task 1 alice
task 2 alice
task 3 alice" "$(cat "$WORK/arr-${J}_1.out" "$WORK/arr-${J}_2.out" "$WORK/arr-${J}_3.out" 2>&1)"

# mylimits as a researcher sees it: accounts, QOS tiers, a running job.
. "$ROOT/tests/pkg/mylimits_slurm.sh"
mylimits_slurm_check alice phys gpu

# --- refusals at submit ---------------------------------------------------------
# deny_at_submit DESCRIPTION TEXT USER CMD...: refused with TEXT, rc != 0,
# no job created, node state unchanged (idle, unless a test job runs).
deny_at_submit() {
  local d=$1 text=$2; shift 2
  local n0 s0; n0=$(job_count); s0=$(node_state)
  run_as "$@"
  if [ "$RC" -ne 0 ] && grep -qF -- "$text" <<<"$OUT" && [ "$(job_count)" = "$n0" ] && [ "$(node_state)" = "$s0" ]; then
    ok "$d"
  else
    bad "$d"; printf '  rc=%s jobs %s->%s node %s->%s\n  want: %s\n  got: %s\n' "$RC" "$n0" "$(job_count)" "$s0" "$(node_state)" "$text" "$OUT"
  fi
}
expect_eq "node idle before the refusals" idle "$(node_state)"
deny_at_submit "carol (no association): sbatch refused at submit, no job, node idle" \
  "spank_scim: user carol has no Slurm association yet; it is created by the next Slurm pass of scimbridge once you are in a group that grants Slurm access (if you are in none, ask your admin to be added to one)" \
  carol sbatch --wrap id
deny_at_submit "carol: srun refused before allocation" "spank_scim: user carol has no Slurm association yet" carol srun id
deny_at_submit "carol: salloc refused" "spank_scim: user carol has no Slurm association yet" carol salloc true
deny_at_submit "dave (disabled, has an association): sbatch refused at submit" \
  "spank_scim: user dave is disabled in the identity provider; ask your admin to re-enable your account" \
  dave sbatch --wrap id
expect_eq "dave does have an association (slurmctld alone would run his job)" "phys
scim-landing" "$(sacctmgr -nP show assoc where user=dave format=account | sort)"

# syncd explain's spank_scim verdict and reason are what sbatch did above.
for c in "alice|allow|association" "carol|deny|user carol has no Slurm association yet" \
         "dave|deny|user dave is disabled in the identity provider"; do
  IFS='|' read -r u want why <<<"$c"
  got=$("$BUILD/syncd" --config "$T/no-config.toml" explain --json --cache "$CACHE" "$u" 2>&1 |
        jq -r '.gates.spank_scim | .verdict + "|" + .reason' 2>&1)
  if [ "${got%%|*}" = "$want" ] && grep -qF -- "$why" <<<"$got"; then
    ok "explain: spank_scim verdict for $u is what sbatch did ($want)"
  else
    bad "explain: spank_scim verdict for $u: want $want ($why), got $got"
  fi
done

# task_init: a client whose slurm.conf names no plugstack skips the local
# check; slurmstepd still runs the plugin and fails the job, not the node.
sed "s|^PlugStackConfig=.*|PlugStackConfig=$T/empty-plugstack.conf|" "$SLURM_CONF" > "$T/bypass.conf"
: > "$T/empty-plugstack.conf"; chmod 0644 "$T/bypass.conf" "$T/empty-plugstack.conf"
OUT=$(scim_ns "$ST" bash -c 'cd "$0" && exec runuser -u dave -- env SLURM_CONF="$1" sbatch --parsable --wait -o "$0/dave-%j.out" --wrap id' "$WORK" "$T/bypass.conf" 2>&1)
J=${OUT%%$'\n'*}
if [[ "$J" =~ ^[0-9]+$ ]]; then
  expect_eq "dave's job past a client without the plugin: FAILED in task_init" "FAILED" "$(job_field "$J" JobState)"
  if grep -qF "spank_scim: user dave is disabled" "$WORK/dave-$J.out" 2>/dev/null && ! grep -q '^uid=' "$WORK/dave-$J.out"; then
    ok "dave's job output has the refusal and never ran id"
  else bad "dave's job output: $(cat "$WORK/dave-$J.out" 2>&1)"; fi
else
  bad "dave's bypassing sbatch was not accepted by slurmctld: $OUT"
fi
expect_eq "node still idle after the task_init refusal (not drained)" idle "$(node_state)"

# sbatch --uid (root only): root passes the submit check, the job runs as
# the user, and task_init checks the job's uid (S_JOB_UID), not root.
OUT=$(scim_ns "$ST" bash -c 'cd "$0" && sbatch --uid=dave --parsable --wait -o "$0/uid-dave-%j.out" --wrap id' "$WORK" 2>&1)
J=${OUT%%$'\n'*}
if [[ "$J" =~ ^[0-9]+$ ]]; then
  expect_eq "root's sbatch --uid=dave: dave's job FAILED in task_init (the job's uid is checked, not root's)" \
    "FAILED 31004" "$(job_field "$J" JobState) $(job_field "$J" UserId | sed 's/.*(\(.*\))/\1/')"
  grep -qF "spank_scim: user dave is disabled" "$WORK/uid-dave-$J.out" 2>/dev/null && ! grep -q '^uid=' "$WORK/uid-dave-$J.out" \
    && ok "root's sbatch --uid=dave: the refusal is in the output and id never ran" \
    || bad "root's sbatch --uid=dave output: $(cat "$WORK/uid-dave-$J.out" 2>&1)"
else
  bad "root's sbatch --uid=dave was not accepted: $OUT"
fi
OUT=$(scim_ns "$ST" bash -c 'cd "$0" && sbatch --uid=alice --parsable --wait -o "$0/uid-alice-%j.out" --wrap id' "$WORK" 2>&1); RC=$?
J=${OUT%%$'\n'*}
expect_eq "root's sbatch --uid=alice runs as alice" "0 uid=31001(alice)" "$RC $(cut -d' ' -f1 "$WORK/uid-alice-$J.out" 2>/dev/null)"
expect_eq "node still idle after the --uid jobs" idle "$(node_state)"

# --- plugstack.conf options (re-read by every client: no restart) ---------------
PLUGSTACK=$SLURM_LAB_DIR/etc/plugstack.conf
cp "$PLUGSTACK" "$T/plugstack.orig"
plug() { echo "required $BUILD/spank_scim.so $*" > "$PLUGSTACK"; }
plug cache=$CACHE message=See https://hpc.example.org/access or mail hpc@example.org
deny_at_submit "message= is appended to the refusal" \
  "ask your admin to be added to one) See https://hpc.example.org/access or mail hpc@example.org" carol sbatch --wrap id
plug cache=$CACHE mode=warn
run_as carol sbatch --wrap id
if grep -qF "warning (mode=warn): user carol has no Slurm association yet" <<<"$OUT" && grep -q "Invalid account" <<<"$OUT"; then
  ok "mode=warn: the plugin warns and lets slurmctld decide (it refuses carol)"
else bad "mode=warn: $OUT"; fi
# exempt_users names count by their uid in /etc/passwd: carol is only a
# SCIM name, so listing her exempts nobody (exempt_uids does, below).
plug cache=$CACHE exempt_users=nobody,carol
deny_at_submit "exempt_users=carol (a SCIM name, not a local account) exempts nobody" \
  "spank_scim: user carol has no Slurm association yet" carol sbatch --wrap id
plug cache=$CACHE exempt_uids=31003
run_as carol sbatch --wrap id
if ! grep -q spank_scim <<<"$OUT"; then ok "exempt_uids: uid 31003 not checked"; else bad "exempt_uids: $OUT"; fi
plug cache=$T/nosuch.db
run_as alice sbatch --parsable --wait -o /dev/null --wrap true
if [ "$RC" = 0 ] && grep -qF "spank_scim: WARNING: the SCIM snapshot is unusable: $T/nosuch.db" <<<"$OUT"; then
  ok "missing=open (default): no snapshot, the job runs with a loud warning"
else bad "missing=open: rc=$RC $OUT"; fi
plug cache=$T/nosuch.db missing=closed
deny_at_submit "missing=closed: no snapshot, refused" "jobs are refused until it is repaired (missing=closed)" alice sbatch --wrap id
plug cache=$CACHE max_age=1 missing=closed
sleep 2
deny_at_submit "max_age: a snapshot older than max_age is stale; refused under missing=closed" \
  "spank_scim: the SCIM snapshot is stale" alice sbatch --wrap id
plug cache=$CACHE mode=enforc
deny_at_submit "a misspelt option refuses jobs and names the option" \
  'spank_scim: bad value in plugstack.conf option "mode=enforc"' alice sbatch --wrap id
# optional: Slurm ignores a failing callback of an optional plugin
# (spank(8): "optional plugins only cause a warning"). The refusal is still
# printed, but only required enforces it: the documented line is required.
echo "optional $BUILD/spank_scim.so cache=$CACHE" > "$PLUGSTACK"
run_as carol sbatch --wrap id
if grep -qF "spank_scim: user carol has no Slurm association yet" <<<"$OUT" && grep -q "Invalid account" <<<"$OUT"; then
  ok "optional: the refusal is printed, Slurm goes on (slurmctld then refuses carol: no association)"
else bad "optional: $OUT"; fi
cp "$T/plugstack.orig" "$PLUGSTACK"

. "$HERE/hostile.sh"

# --- joining a group: one sync + apply --------------------------------------------
deny_at_submit "erin before joining a group: refused" "spank_scim: user erin has no Slurm association yet" erin sbatch --wrap id
admin POST groups/physics/members '{"add": ["erin"]}' || bad "admin: add erin to physics"
t0=$EPOCHREALTIME
check "sync --once after erin joined physics (reconciles in the after-commit step)" sync_once
ok "one sync+apply for a new member took $(secs "$t0")s"
run_as erin sbatch --parsable --wait -A phys --qos=gpu -o "$WORK/erin-%j.out" --wrap id
J=${OUT%%$'\n'*}
expect_eq "erin: sbatch --wait -A phys --qos=gpu runs right after the sync" 0 "$RC"
expect_eq "erin's job ran as erin" "uid=31005(erin)" "$(cut -d' ' -f1 "$WORK/erin-$J.out" 2>/dev/null)"
expect_eq "erin's job charged to phys with QOS gpu" "phys gpu" "$(job_field "$J" Account) $(job_field "$J" QOS)"
run_as erin sbatch --parsable --wait -o /dev/null --wrap true
J=${OUT%%$'\n'*}
expect_eq "erin without -A lands on the landing account" "scim-landing" "$(job_field "$J" Account)"
# Disable workflow, and the Slurm pass on its own schedule.
. "$HERE/disable.sh"

# --- leaving a group, with and without a running job --------------------------------
# The job starts a step after its association is blocked: a running job's
# steps (srun inside it, slurmstepd's task_init) still pass.
run_as frank sbatch --parsable -A phys -o "$WORK/frank-%j.out" --wrap 'sleep 12; srun echo step-ok; echo finished'
FJ=${OUT%%$'\n'*}
wait_job_state "$FJ" RUNNING 30 && ok "frank's job is running" || bad "frank's job not running: $OUT $(job_field "$FJ" JobState)"
admin POST groups/physics/members '{"remove": ["frank"]}' || bad "admin: remove frank"
admin POST groups/hpc-chem/members '{"remove": ["bob"]}' || bad "admin: remove bob"
check "sync --once after frank and bob left their groups" sync_once
expect_eq "frank@phys blocked (MaxSubmitJobs=0) while his job runs; landing gone" "phys|frank|gpu,normal|normal||0" "$(assocs user=frank)"
expect_eq "bob (no jobs) removed at once" "" "$(assocs user=bob)"
expect_eq "the snapshot marks frank@phys blocked" "phys|gpu,normal|normal|1|1" "$(snap_assoc frank)"
deny_at_submit "frank: new submission refused while his removal waits" \
  "spank_scim: user frank's Slurm associations are being removed" frank sbatch -A phys --wrap id
deny_at_submit "bob: refused after leaving his group" "spank_scim: user bob has no Slurm association" bob sbatch --wrap id
wait_job_state "$FJ" COMPLETED 60 && ok "frank's running job finished (COMPLETED)" || bad "frank's job: $(job_field "$FJ" JobState)"
expect_eq "frank's job output: its step ran while blocked" "step-ok
finished" "$(cat "$WORK/frank-$FJ.out" 2>&1)"
check "a later pass (slurm apply)" apply
expect_eq "the later pass removed frank's association once idle" "" "$(assocs user=frank)"
expect_eq "the snapshot has no association of frank" "" "$(snap_assoc frank)"

# Several users leave several groups at once: batched deletes across
# accounts leave exactly the associations meant to stay (issue 21).
. "$HERE/batchdelete.sh"

# --- the hand-made account and an admin's block, after 10 passes ----------------
sacctmgr -i add user alice Account=handmade Cluster=$CLUSTER >/dev/null
HANDMADE=$(handmade)
# An admin suspends alice in phys (scimbridge did not set this block).
sacctmgr -i modify user where name=alice account=phys cluster=$CLUSTER set MaxSubmitJobs=0 >/dev/null
for i in $(seq 10); do sync_once; apply || bad "apply pass $i"; done
expect_eq "hand-made account without the marker untouched after 10 sync+apply passes" "$HANDMADE" "$(handmade)"
expect_eq "an admin's block (MaxSubmitJobs=0 on alice@phys) survives 10 passes" "phys|alice|gpu,normal|normal||0" "$(assocs account=phys user=alice)"
grep -q "alice@phys is blocked (MaxSubmitJobs=0) and scimbridge did not set that block" <(syncd slurm plan 2>/dev/null) \
  && ok "the plan tells the admin's block apart and leaves it" || bad "plan does not mention the admin's block"
expect_eq "last pass changed nothing" "# applied 0 command(s), 0 changed something" \
  "$(tail -1 "$T/apply.out" | sed 's/; [0-9]* sacctmgr.*//')"
expect_eq "node idle at the end" idle "$(node_state)"
if grep -qE 'level=error|still differs' "$T/syncd.log"; then
  bad "syncd logged errors or an unfinished apply:"; grep -E 'level=error|still differs' "$T/syncd.log" | head -5
else
  ok "syncd logged no error and no unfinished apply"
fi
. "$HERE/lint.sh"
summary
