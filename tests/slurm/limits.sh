# tests/slurm/limits.sh: sourced by tests/slurm/run.sh once the first
# apply is done (config enabled=false: syncs only write the snapshot).
# Account limits in every form of sacctmgr(1) converge on the real
# slurmdbd: after any apply a second plan is empty; limits dropped from the
# config are cleared; a config change is told apart from drift (a change
# made outside scimbridge); an account whose Description says "hands-off"
# keeps its hand-set limits; mapping conflicts (issue 9) are refused.

LF="fairshare,grptres,grptresmins,grptresrunmins,grpjobs,grpjobsaccrue,grpsubmit,grpwall,maxtres,maxtresmins,maxtrespernode,maxjobs,maxjobsaccrue,maxsubmit,maxwall,priority"
phys_limits() { sacctmgr -nP show assoc where cluster=$CLUSTER account=phys user= format=$LF; }
plan_out() { syncd slurm plan 2>/dev/null; }
plan_empty() { grep -q 'nothing to do' <<<"$1"; }

# limits_round NAME EXPECTED LIMITS...: apply LIMITS to physics (phys),
# check what slurmdbd holds, and that the next plan is empty.
limits_round() {
  local name=$1 expected=$2; shift 2
  local IFS=,
  PHYS_LIMITS="$(printf '"%s",' "$@")"; PHYS_LIMITS=${PHYS_LIMITS%,}
  unset IFS
  config false
  PLAN=$(plan_out)
  if grep -q 'drift' <<<"$PLAN"; then bad "$name: a config change is reported as drift"; grep drift <<<"$PLAN" | head -3; fi
  check "$name: apply" apply
  expect_eq "$name: slurmdbd holds the limits in its own spelling" "$expected" "$(phys_limits)"
  PLAN=$(plan_out)
  if plan_empty "$PLAN"; then ok "$name: the next plan is empty (converged)"; else bad "$name: the next plan is not empty:"; echo "$PLAN" | head -20; fi
}

t0=$EPOCHREALTIME
# sacctmgr(1)'s forms: TRES lists with units, every time form, counts,
# Fairshare, Priority.
limits_round "limits round 1 (every field)" \
  "50|cpu=64,gres/gpu=16,mem=2G|cpu=100000,gres/gpu=6000|cpu=5000|50|20|100|1-00:00:00|cpu=8,gres/gpu=4|cpu=600|gres/gpu=2|10|5|30|02:00:00|10" \
  "GrpTRES=gres/gpu=16,CPU=64,mem=2G" "GrpTRESMins=gres/gpu=6000,cpu=100000" "GrpTRESRunMins=cpu=5000" \
  "MaxTRES=gres/gpu=4,cpu=8" "MaxTRESMins=cpu=600" "MaxTRESPerNode=gres/gpu=2" \
  "GrpJobs=50" "GrpJobsAccrue=20" "GrpSubmitJobs=100" "GrpWall=1-0" \
  "MaxJobs=10" "MaxJobsAccrue=5" "MaxSubmitJobs=30" "MaxWall=2:00:00" "Fairshare=50" "Priority=10"
# Narrowed and respelt: cpu and mem dropped from GrpTRES (per-TRES merge
# must clear them), minutes:seconds and days-hours:minutes, Fairshare
# parent, a limit of 0; the rest dropped from the config.
PREV=$(phys_limits)
limits_round "limits round 2 (narrowed, other spellings, dropped)" \
  "parent|gres/gpu=16,mem=1.50G|gres/gpu=6000||||||cpu=8,gres/gpu=4||||||02:01:00|" \
  "GrpTRES=gres/gpu=16,mem=1536" "GrpTRESMins=gres/gpu=6000" "MaxTRES=cpu=8,gres/gpu=4" \
  "MaxWall=120:30" "Fairshare=parent" "MaxJobs=-1"
limits_round "limits round 3 (days-hours:minutes:seconds, minutes, 0)" \
  "1|gres/gpu=16||||||1-02:31:00||||0|||3-18:00:00|" \
  "GrpTRES=gres/gpu=16" "GrpWall=1-02:30:15" "MaxJobs=0" "MaxWall=5400"
# Back to the suite's config: everything else is cleared.
limits_round "limits back to GrpTRES=gres/gpu=16 only" "1|gres/gpu=16||||||||||||||" "GrpTRES=gres/gpu=16"
ok "four limit rounds (apply + plan each) took $(secs "$t0")s"

# Drift: an admin sets limits on a managed account by hand.
sacctmgr -i modify account where name=phys cluster=$CLUSTER set MaxWall=1-0 GrpJobs=3 >/dev/null
PLAN=$(plan_out)
for want in "# note: drift: account phys GrpJobs is 3, changed outside scimbridge (it set unset); reset to the config's unset" \
            "sacctmgr -i modify account where name=phys cluster=$CLUSTER set GrpJobs=-1 MaxWall=-1"; do
  grep -qxF -- "$want" <<<"$PLAN" && ok "drift plan lists: $want" || { bad "drift plan lacks: $want"; echo "$PLAN" | head -20; }
done
# Hands-off: the same limits, on an account whose Description says so.
sacctmgr -i modify account where name=phys set "Description=managed by scimbridge; hands-off (ticket 42)" >/dev/null
PLAN=$(plan_out)
if grep -q 'account phys is hands-off' <<<"$PLAN" && ! grep -q '^sacctmgr.*account where name=phys' <<<"$PLAN"; then
  ok "hands-off account: its hand-set limits are reported, not reset"
else bad "hands-off account:"; echo "$PLAN" | head; fi
check "apply with phys hands-off" apply
expect_eq "hands-off account keeps its hand-set limits (GrpJobs=3, MaxWall=1-0)" "1|gres/gpu=16|||3||||||||||1-00:00:00|" "$(phys_limits)"
sacctmgr -i modify account where name=phys set "Description=managed by scimbridge" >/dev/null
check "apply after hands-off is lifted" apply
expect_eq "drift reset once hands-off is lifted" "1|gres/gpu=16||||||||||||||" "$(phys_limits)"

# Mapping conflicts (issue 9): hpc-phys matches the pattern but phys is
# mapped explicitly from physics; hpc-bio.x and hpc-bio_x both normalise
# to bio_x.
admin POST groups '{"displayName": "hpc-phys", "gidNumber": 31040, "members": ["carol"]}' || bad "admin: add hpc-phys"
admin POST groups '{"displayName": "hpc-bio.x", "gidNumber": 31041, "members": ["carol"]}' || bad "admin: add hpc-bio.x"
admin POST groups '{"displayName": "hpc-bio_x", "gidNumber": 31042, "members": ["bob"]}' || bad "admin: add hpc-bio_x"
check "sync after the conflicting groups appeared" sync_once
PLAN=$(plan_out)
grep -q '^# CONFLICT: group "hpc-phys" matches group_pattern and would map to account "phys", which the config maps explicitly from "physics"' <<<"$PLAN" \
  && ok "plan: explicit mapping wins over the pattern (CONFLICT reported)" || { bad "no pattern/explicit conflict in the plan"; echo "$PLAN" | head; }
grep -q '^# CONFLICT: groups "hpc-bio.x", "hpc-bio_x" all map to account "bio_x"' <<<"$PLAN" \
  && ok "plan: two pattern groups on one account reported as a CONFLICT" || { bad "no pattern/pattern conflict in the plan"; echo "$PLAN" | head; }
syncd slurm apply > "$T/apply-conflict.out" 2> "$T/conflict.log"
grep -q 'level=error.*conflict' "$T/conflict.log" && ok "apply logs the conflicts at error level" || bad "conflicts not logged at error"
expect_eq "conflict refused: carol not added to phys, no bio_x account" "|" \
  "$(assocs account=phys user=carol)|$(sacctmgr -nP show account where name=bio_x format=account)"
expect_eq "phys keeps the explicit mapping's limits" "gres/gpu=16" \
  "$(sacctmgr -nP show assoc where cluster=$CLUSTER account=phys user= format=grptres)"
for g in hpc-phys hpc-bio.x hpc-bio_x; do admin DELETE "groups/$g" || bad "admin: delete $g"; done
check "sync after the conflicting groups went (--force: past the removal guard's share)" sync_force
check "apply after the conflicts went" apply
plan_empty "$(plan_out)" && ok "plan empty again after the conflicts went" || bad "plan not empty after the conflicts went"
PHYS_LIMITS=
config false
