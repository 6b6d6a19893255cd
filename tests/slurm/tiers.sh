# tests/slurm/tiers.sh: sourced by tests/slurm/run.sh (config enabled=false,
# lab with 8 fake GPUs, 16 CPUs, PreemptType=preempt/qos). Tiers as code:
# team ml (SCIM group ml-team) is guaranteed 2 GPUs on its project QOS,
# opts into general (pool 6, team cap 3, 3 days) and spot (1 day,
# requeued on preemption after a 5 s grace time). Observed in squeue/sacct.

# ML_TIERS_*: team ml's tiers, also given again by usage.sh.
ML_TIERS_TOP='project_qos = ["Priority=100", "Preempt=spot"]'
ML_TIERS_TABLES='
[slurm.qos_settings]
general = ["GrpTRES=gres/gpu=6", "MaxTRESPerAccount=gres/gpu=3", "MaxWall=3-0", "Priority=50"]
spot = ["GrpTRES=gres/gpu=8", "MaxWall=1-0", "Priority=10", "PreemptMode=requeue", "GraceTime=5"]

[slurm.groups.ml-team]
account = "ml"
guaranteed_gpus = 2
tiers = ["general", "spot"]'
TIERS_TOP=$ML_TIERS_TOP TIERS_TABLES=$ML_TIERS_TABLES
config false
admin POST groups '{"displayName": "ml-team", "gidNumber": 31050, "members": ["alice", "erin"]}' || bad "admin: add ml-team"
check "sync after ml-team appeared" sync_once
t0=$EPOCHREALTIME
check "tiers: apply" apply
ok "tiers: first apply took $(secs "$t0")s: $(tail -1 "$T/apply.out")"
plan_empty "$(plan_out)" && ok "tiers: the next plan is empty (QOS settings converged)" || { bad "tiers: plan not empty after apply"; plan_out | head -20; }
expect_eq "tiers: QOS as code (priority, grace, preempt, mode, GPU caps, walltime)" \
  "general|50|00:00:00||cluster|gres/gpu=6|gres/gpu=3|3-00:00:00|managed by scimbridge
ml-project|100|00:00:00|spot|cluster|gres/gpu=2|||managed by scimbridge
spot|10|00:00:05||requeue|gres/gpu=8||1-00:00:00|managed by scimbridge" \
  "$(sacctmgr -nP show qos where name=general,ml-project,spot format=name,priority,gracetime,preempt,preemptmode,grptres,maxtrespa,maxwall,description | sort)"
expect_eq "tiers: account ml capped at its 2 GPUs; members get project (default), general, spot" "ml|alice|general,ml-project,normal,spot|ml-project||
ml|erin|general,ml-project,normal,spot|ml-project||
ml||normal||gres/gpu=2|" \
  "$(assocs account=ml | LC_ALL=C sort)"

# Users resolve only in the namespace: squeue/scancel by user run there.
ns() { scim_ns "$ST" "$@"; }
JS=$(as alice "$BUILD/mylimits" --json 2>&1)
expect_eq "mylimits as alice shows the tiers: general's team cap, spot preempted by ml-project (requeue after the grace time)" \
  "3|ml-project|requeue|00:00:05" \
  "$(jq -r '[(.qos[] | select(.name == "general") | .gpus_per_account), (.qos[] | select(.name == "spot") | (.preempted_by | join(",")), .preempt_mode, .grace_time)] | join("|")' <<<"$JS" 2>&1)"

reasons() { ns squeue -h -u alice -o '%q %T %r' | LC_ALL=C sort | uniq -c | sed 's/^ *//'; }
cancel_all() { # cancel every job, wait until squeue is empty (bounded)
  local ids; ids=$(squeue -h -o %i); [ -z "$ids" ] || scancel $ids >/dev/null 2>&1
  for _ in $(seq 40); do [ "$(job_count_active)" = 0 ] && return 0; sleep 0.5; done
  bad "jobs left after scancel: $(squeue -h)"
}
submit() { as alice sbatch --parsable -A ml -o /dev/null "$@" 2>&1; }
for i in 1 2 3; do submit --gres=gpu:1 --wrap 'sleep 60' >/dev/null || bad "project job $i not submitted"; done
for i in 1 2 3 4; do submit --qos=general --gres=gpu:1 --wrap 'sleep 60' >/dev/null || bad "general job $i not submitted"; done
wait_reasons() { # wait_reasons WANT SECONDS
  local end=$((SECONDS + $2))
  until [ "$(reasons)" = "$1" ]; do [ $SECONDS -lt $end ] || return 1; sleep 1; done
}
WANT="1 general PENDING MaxGRESPerAccount
3 general RUNNING None
1 ml-project PENDING QOSGrpGRES
2 ml-project RUNNING None"
if wait_reasons "$WANT" 20; then
  ok "tiers: project jobs capped at the 2 guaranteed GPUs; general bursts to the team cap of 3, the 4th waits (MaxGRESPerAccount)"
else bad "tiers: caps"; printf '  want:\n%s\n  got:\n%s\n' "$WANT" "$(reasons)"; fi
J=$(as alice sbatch --parsable -o /dev/null --gres=gpu:1 --wrap true 2>&1)
sleep 2
expect_eq "tiers: the landing account stays at 0 GPUs (job waits on AssocGrpGRES)" "scim-landing PENDING AssocGrpGRES" \
  "$(squeue -h -j "$J" -o '%a %T %r' 2>&1)"
cancel_all

# Spot: alice takes all 8 GPUs on spot; erin's project job preempts it,
# the spot job is requeued after the grace time.
SJ=$(submit --qos=spot --requeue --gres=gpu:8 --wrap 'sleep 120')
wait_job_state "$SJ" RUNNING 20 && ok "tiers: a spot job takes all 8 GPUs" || bad "tiers: spot job not running: $(job_field "$SJ" JobState) $(job_field "$SJ" Reason)"
t0=$EPOCHREALTIME
PJ=$(as erin sbatch --parsable -A ml -o /dev/null --gres=gpu:1 --wrap 'sleep 30' 2>&1)
if wait_job_state "$PJ" RUNNING 60; then
  ok "tiers: erin's project job runs after $(secs "$t0")s by preempting the spot job"
else bad "tiers: project job did not start: $(job_field "$PJ" JobState) $(job_field "$PJ" Reason)"; fi
expect_eq "tiers: the spot job was requeued (pending again, restarted once)" "PENDING 1" \
  "$(job_field "$SJ" JobState) $(job_field "$SJ" Restarts)"
grep -q "preempted JobId=$SJ has been requeued" "$SLURM_LAB_DIR/log/slurmctld.log" \
  && ok "tiers: slurmctld logged the preemption and requeue of the spot job" || bad "tiers: no preemption in slurmctld.log"
sleep 3
SACCT=$(sacct -n -X -D -j "$SJ" -o state%20 2>/dev/null | awk '{print $1}' | sort -u | tr '\n' ' ')
grep -qE 'PREEMPTED|REQUEUED' <<<"$SACCT" && ok "tiers: sacct records the spot job as $SACCT" || bad "tiers: sacct states of the spot job: $SACCT"
cancel_all

# Usage report: GPU-hours per team and tier from sacct; the totals are
# checked against sacct's own ElapsedRaw × GPUs of the same jobs, every run
# of each (-D: the preempted spot job used its 8 GPUs before its requeue).
end=$((SECONDS + 15))
until syncd report usage --since 1h --csv "$T/usage.csv" --png "$T/usage.png" > "$T/usage.txt" 2>&1 &&
      grep -q '^ml,spot,' "$T/usage.csv"; do
  [ $SECONDS -lt $end ] || break; sleep 1
done
if grep -q '^ml,project,' "$T/usage.csv" && grep -q '^ml,general,' "$T/usage.csv" && grep -q '^ml,spot,' "$T/usage.csv"; then
  ok "usage report: ml's GPU-hours by tier (project, general, spot): $(grep '^ml,' "$T/usage.csv" | cut -d, -f2,4 | tr '\n' ' ')"
else bad "usage report:"; cat "$T/usage.txt" "$T/usage.csv" 2>&1 | head; fi
WANT_H=$(sacct -a -X -D -n -P -A ml --starttime=now-1hour -o AllocTRES,ElapsedRaw 2>/dev/null |
  awk -F'|' '{ g = 0; n = split($1, t, ","); for (i = 1; i <= n; i++) if (t[i] ~ /^gres\/gpu=/) { sub(/.*=/, "", t[i]); g = t[i] } s += g * $2 } END { printf "%.2f", s / 3600 }')
GOT_H=$(awk -F, '$1 == "ml" { s += $4 } END { printf "%.2f", s }' "$T/usage.csv")
expect_eq "usage report: ml's total GPU-hours equal sacct's GPUs × ElapsedRaw" "$WANT_H" "$GOT_H"
[ "$(head -c 8 "$T/usage.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] && [ "$(stat -c %s "$T/usage.png")" -gt 300 ] \
  && ok "usage report: the PNG chart exists ($(stat -c %s "$T/usage.png") bytes)" || bad "usage report: no PNG"

admin DELETE groups/ml-team || bad "admin: delete ml-team"
TIERS_TOP= TIERS_TABLES=
config false
check "sync after ml-team went (--force: one group of few is past the removal guard's share)" sync_force
check "apply after ml-team went" apply
