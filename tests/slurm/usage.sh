# tests/slurm/usage.sh: sourced by tests/slurm/run.sh after tiers.sh (lab with
# 8 fake GPUs, 16 CPUs, preempt/qos). Team ml (SCIM group ml-team) gets its
# tiers again: project (2 guaranteed GPUs), general, spot. Short GPU jobs
# run in ml on each tier, in phys (QOS gpu) and in chem (normal); then
#   - mylimits, run as alice, shows her tiers, caps and use against them,
#     fair-share, and why her pending project job waits (with the numbers);
#   - `syncd report usage` gives, per account, the GPU-seconds and
#     CPU-seconds sreport gives (-t seconds, after a rollup) for every job
#     of the lab so far (tiers.sh's preempted and requeued spot job too);
#   - its CSV parses and sums to the JSON; its PNG decodes and is not blank.

USAGE_T0=$EPOCHREALTIME
TIERS_TOP=$ML_TIERS_TOP TIERS_TABLES=$ML_TIERS_TABLES config false  # tiers.sh's
admin POST groups '{"displayName": "ml-team", "gidNumber": 31050, "members": ["alice", "erin"]}' || bad "usage: add ml-team"
check "usage: sync after ml-team appeared" sync_once
check "usage: apply the tiers" apply

usage_cancel() { # cancel every job, wait until squeue is empty (bounded)
  local ids; ids=$(squeue -h -o %i); [ -z "$ids" ] || scancel $ids >/dev/null 2>&1
  for _ in $(seq 40); do [ "$(job_count_active)" = 0 ] && return 0; sleep 0.5; done
  bad "usage: jobs left after scancel: $(squeue -h)"
}
usage_cancel
ujob() { local u=$1; shift; as "$u" sbatch --parsable -o /dev/null "$@" 2>&1; }
# The jobs start within one clock hour (the hour sreport is asked about
# below): close to the top of an hour, wait for it (at most 40 s).
[ $(( 3600 - $(date +%s) % 3600 )) -gt 40 ] || sleep $(( 3600 - $(date +%s) % 3600 + 1 ))
UH0=$(( $(date +%s) / 3600 * 3600 ))
# 2 (project) + 1 (general) + 1 (spot) + 2 (phys) + 1 (chem) = 7 of 8 GPUs.
# They run until mylimits has looked, then end (scancel): sacct and
# sreport count a cancelled running job's time like a completed one's.
UJ1=$(ujob alice -A ml --gres=gpu:2 --wrap 'sleep 60')
UJ2=$(ujob alice -A ml --qos=general --gres=gpu:1 --wrap 'sleep 60')
UJ3=$(ujob erin -A ml --qos=spot --gres=gpu:1 -c 2 --wrap 'sleep 60')
UJ4=$(ujob alice -A phys --qos=gpu --gres=gpu:2 --wrap 'sleep 60')
UJ5=$(ujob alice -A chem --gres=gpu:1 --wrap 'sleep 3')
# The project QOS is at its 2 GPUs: this one waits (QOSGrpGRES).
UPEND=$(ujob alice -A ml --gres=gpu:1 --wrap 'sleep 1')
for j in "$UJ1" "$UJ2" "$UJ3" "$UJ4"; do
  wait_job_state "$j" RUNNING 20 || bad "usage: job $j not running: $(job_field "$j" JobState) $(job_field "$j" Reason)"
done
wait_job_state "$UJ5" COMPLETED 30 || bad "usage: chem job $UJ5: $(job_field "$UJ5" JobState)"
end=$((SECONDS + 20))
until [ "$(job_field "$UPEND" Reason)" = QOSGrpGRES ] || [ $SECONDS -ge $end ]; do sleep 0.5; done

# --- mylimits as alice: tiers, caps, use now, fair-share, pending reason ---
ML=$(as alice "$BUILD/mylimits" --json 2>&1)
if ! jq -e . >/dev/null 2>&1 <<<"$ML"; then
  bad "usage: mylimits --json as alice is not JSON"; head -20 <<<"$ML"
else
  expect_eq "mylimits as alice: ml's tiers (QOS, tier, walltime, preemptible)" \
    "general general 3-00:00:00 false
ml-project project  false
normal normal  false
spot spot 1-00:00:00 true" \
    "$(jq -r '.tiers[] | select(.account == "ml") | "\(.qos) \(.tier) \(.max_wall // "") \(.preemptible)"' <<<"$ML" | LC_ALL=C sort)"
  expect_eq "mylimits as alice: ml's project tier is her default QOS there, capped at the team's 2 GPUs, 2 in use" \
    "true 2 2" "$(jq -r '.tiers[] | select(.qos == "ml-project") | "\(.default) \(.team_gpu_cap) \(.team_gpus_in_use)"' <<<"$ML")"
  expect_eq "mylimits as alice: general: team cap 3 (1 in use), pool 6 (1 in use)" "3 1 6 1" \
    "$(jq -r '.tiers[] | select(.account == "ml" and .qos == "general") | "\(.team_gpu_cap) \(.team_gpus_in_use) \(.pool_gpu_cap) \(.pool_gpus_in_use)"' <<<"$ML")"
  expect_eq "mylimits as alice: spot is preempted by ml-project (requeue after 5 s); erin's spot GPU is the team's, not hers" \
    "ml-project REQUEUE 00:00:05 1 0" \
    "$(jq -r '.tiers[] | select(.account == "ml" and .qos == "spot") | "\(.preempted_by | join(",")) \(.preempt_mode | ascii_upcase) \(.grace_time) \(.team_gpus_in_use) \(.your_gpus_in_use)"' <<<"$ML")"
  expect_eq "mylimits as alice: account caps and GPUs in use now (ml all tiers, phys, landing)" \
    "chem  0 0
ml gres/gpu=2 4 3
phys gres/gpu=16 2 2
scim-landing gres/gpu=0 0 0" \
    "$(jq -r '.accounts[] | "\(.name) \(.account_limits.GrpTRES // "") \(.team_gpus_in_use) \(.your_gpus_in_use)"' <<<"$ML" | LC_ALL=C sort)"
  expect_eq "mylimits as alice: the pending project job waits on QOSGrpGRES, explained with the numbers" \
    "PENDING QOSGrpGRES true" \
    "$(jq -r --arg j "$UPEND" '.jobs[] | select(.id == $j) | "\(.state) \(.reason) \(.why | test("project tier is using all its guaranteed GPUs.*GPUs in use: 2 of 2"))"' <<<"$ML")"
  FSW=$(scontrol show config | sed -n 's/^PriorityType *= *//p')
  if [ "$FSW" = priority/basic ]; then
    expect_eq "mylimits as alice: fair-share says it is not used under priority/basic" true \
      "$(jq '.fair_share_note | test("not used on this cluster \\(PriorityType=priority/basic\\)")' <<<"$ML")"
  else
    expect_eq "mylimits as alice: fair-share per account as sshare has it" \
      "$(as alice sshare -n -P -U -u alice -o Account,FairShare | LC_ALL=C sort | paste -sd' ')" \
      "$(jq -r '.fair_share[] | "\(.account)|\(.fair_share)"' <<<"$ML" | LC_ALL=C sort | paste -sd' ')"
  fi
fi
MLT=$(as alice "$BUILD/mylimits" 2>&1)
if grep -q '^Tiers: caps and GPUs in use now' <<<"$MLT" && grep -qE '^  ml +ml-project\* +project +- +2 of 2 ' <<<"$MLT" &&
   grep -qE '^  ml +spot +spot +1-00:00:00 .*preemptible by ml-project \(requeue after 00:00:05\)' <<<"$MLT" &&
   grep -qE "^  $UPEND .*QOSGrpGRES: your team's project tier is using all its guaranteed GPUs" <<<"$MLT" &&
   grep -q '^Fair-share' <<<"$MLT"; then
  ok "mylimits table as alice: tiers with caps and use, spot's preemption, the pending reason, fair-share"
else
  bad "mylimits table as alice"; sed 's/^/  /' <<<"$MLT" | head -60
fi
usage_cancel

# --- syncd report usage against sreport ----------------------------------
# The clock hour in which this file's jobs started (earlier jobs of the
# lab, tiers.sh's preempted spot job among them, are in it if they ran in
# it too; both sides cut jobs at its bounds). sreport reads slurmdbd's
# hourly rollups: roll this hour up now. sreport clamps an end past now to
# the last whole hour and widens a window shorter than an hour to one hour,
# so a one-hour window is the only one it reports on while it is running.
H0=$UH0; H1=$(( H0 + 3600 ))
HS=$(date -d "@$H0" +%Y-%m-%dT%H:%M:%S); HE=$(date -d "@$H1" +%Y-%m-%dT%H:%M:%S)
sacctmgr -i rollup "$HS" "$HE" >/dev/null 2>&1 || bad "usage: sacctmgr rollup $HS $HE"
SREP=$(sreport -nP -t seconds cluster AccountUtilizationByUser cluster=$CLUSTER start="$HS" end="$HE" \
  -T cpu,gres/gpu format=Account,Login,TresName,Used 2>&1 | awk -F'|' '$2 == "" && $1 != "root" {print $1, $3, $4}' | LC_ALL=C sort)
t0=$EPOCHREALTIME
syncd report usage --since "$HS" --until "$HE" --json --csv "$T/usage.csv" --png "$T/usage.png" > "$T/usage.json" 2> "$T/usage.err"
expect_eq "syncd report usage exits 0" 0 "$?"
ok "syncd report usage (sacct, table+CSV+PNG) took $(secs "$t0")s"
# Teams whose jobs all took 0 s are listed (jobs, 0 hours) but sreport has
# no use to show for them.
MINE=$(jq -r '.teams[] | select(.jobs > 0 and .cpu_seconds > 0) | "\(.account) cpu \(.cpu_seconds)\n\(.account) gres/gpu \(.gpu_seconds)"' "$T/usage.json" | LC_ALL=C sort)
expect_eq "report usage: GPU- and CPU-seconds per account equal sreport's (-t seconds)" "$SREP" "$MINE"
# JOBS is what sacct lists for the window: every allocation that started
# by its end, jobs of 0 s included.
SACCT_JOBS=$(sacct -X -D -P -n -a -S "$HS" -E "$HE" -o Account,Start 2>/dev/null |
  awk -F'|' -v he="$HE" '$2 ~ /^[0-9]/ && $2 <= he {n[$1]++} END {for (a in n) print a, n[a]}' | LC_ALL=C sort)
expect_eq "report usage: jobs per account equal sacct's for the window" "$SACCT_JOBS" \
  "$(jq -r '.teams[] | select(.jobs > 0) | "\(.account) \(.jobs)"' "$T/usage.json" | LC_ALL=C sort)"
grep -q '^ml gres/gpu [1-9]' <<<"$SREP" && grep -q '^phys gres/gpu [1-9]' <<<"$SREP" && grep -q '^chem gres/gpu [1-9]' <<<"$SREP" \
  && ok "report usage: the comparison covers GPU use in ml, phys and chem" || bad "report usage: sreport has no GPU use for ml/phys/chem: $SREP"
expect_eq "report usage: ml's rows per tier (general, project, spot) and its guarantee from the config" \
  "general project spot | 2 config" \
  "$(jq -r '[.rows[] | select(.account == "ml" and .gpu_seconds > 0) | .tier] | sort | join(" ")' "$T/usage.json") | $(jq -r '.teams[] | select(.account == "ml") | "\(.guaranteed_gpus) \(.guarantee_from)"' "$T/usage.json")"
expect_eq "report usage: cluster capacity is the lab's 8 GPUs × 1 h" "8 8" \
  "$(jq -r '"\(.cluster_gpus) \(.gpu_hours_capacity)"' "$T/usage.json")"
expect_eq "report usage: the CSV header" "account,tier,qos,gpu_hours,cpu_hours,jobs,gpu_seconds,cpu_seconds,guaranteed_gpus,guaranteed_gpu_hours,cluster_gpus,cluster_gpu_hours,since,until" \
  "$(head -1 "$T/usage.csv")"
expect_eq "report usage: the CSV's GPU-seconds per account sum to the JSON's" \
  "$(jq -r '.teams[] | select(.jobs > 0) | "\(.account) \(.gpu_seconds)"' "$T/usage.json" | LC_ALL=C sort)" \
  "$(awk -F, 'NR > 1 && NF == 14 {s[$1] += $7} END {for (a in s) print a, s[a]}' "$T/usage.csv" | LC_ALL=C sort)"
expect_eq "report usage: every CSV line has 14 fields and one line per JSON row" \
  "$(( $(jq '.rows | length' "$T/usage.json") + 1 )) 14" \
  "$(awk -F, 'NF != 14 {bad++} END {print NR, (bad ? "bad" : 14)}' "$T/usage.csv")"
PNGSZ=$(stat -c %s "$T/usage.png" 2>/dev/null || echo 0)
PNGINFO=$(/usr/bin/python3 "$HERE/pngcheck.py" "$T/usage.png" 2>&1)
if [ "$PNGSZ" -gt 10000 ] && [[ "$PNGINFO" =~ ^([0-9]+)x([0-9]+)\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[3]}" -ge 8 ]; then
  ok "report usage: the PNG chart decodes ($PNGINFO: size and distinct colours) and is $PNGSZ bytes"
else bad "report usage: PNG $PNGSZ bytes, decode: $PNGINFO"; fi
TBL=$(syncd report usage --since "$HS" --until "$HE" 2>&1)
grep -qE '^  ml +ml-project +project ' <<<"$TBL" && grep -q '^By team against its guarantee' <<<"$TBL" \
  && ok "report usage: the table lists ml's project tier and the teams against their guarantee" || { bad "report usage table"; head -30 <<<"$TBL"; }
OUT=$(syncd report usage --since yesterday 2>&1); RC=$?
expect_eq "report usage --since yesterday: refused (exit 2), naming the forms it takes" "2 true" \
  "$RC $(grep -q 'neither a span back from now (7d' <<<"$OUT" && echo true)"

admin DELETE groups/ml-team || bad "usage: delete ml-team"
config false
check "usage: sync after ml-team went (--force)" sync_force
check "usage: apply after ml-team went" apply
ok "usage: this part of the suite took $(secs "$USAGE_T0")s"
