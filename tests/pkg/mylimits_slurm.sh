# tests/pkg/mylimits_slurm.sh: mylimits against the real Slurm lab. Source
# it from tests/slurm/run.sh once the SCIM users have associations, then
#
#     mylimits_slurm_check USER ACCOUNT QOS
#
# e.g. `mylimits_slurm_check alice phys gpu`. USER must be provisioned with
# an association to ACCOUNT that allows QOS, and the node must be idle.
# It uses the Slurm suite's helpers and variables: as, run_as (sets OUT,
# RC), job_field, wait_job_state, $ST, $SLURM_CONF, $CLUSTER, $BUILD, and
# scim_ns, ok, bad, check, expect_eq from tests/lib.sh. mylimits finds the
# snapshot through the stage's reader.conf, as on a node.
#
# What a researcher would check: with one job running and one pending
# behind it, `mylimits` run as USER shows the cluster, every account of
# the snapshot with the default marked, the account's GrpTRES cap, the QOS
# tiers of the account, both jobs (the pending one with its reason and what
# it means); `--json` gives the same facts; root can ask for USER with
# --user. The jobs are cancelled and the node is idle again at the end.

mylimits_slurm_check() {
  local user=$1 acct=$2 qos=$3 ml="$BUILD/mylimits" js tbl run pend def end ncpu
  ncpu=$(sinfo -h -o %c | head -1)
  [ -x "$ml" ] || { bad "mylimits: $ml missing (make all)"; return 1; }

  # Two jobs that each want every CPU of the one node: the first runs,
  # the second waits for it (reason Resources or Priority).
  run_as "$user" sbatch --parsable -A "$acct" --qos="$qos" -c "$ncpu" -o /dev/null --wrap 'sleep 60'
  run=${OUT%%$'\n'*}
  run_as "$user" sbatch --parsable -A "$acct" --qos="$qos" -c "$ncpu" -o /dev/null --wrap 'sleep 60'
  pend=${OUT%%$'\n'*}
  if ! [[ "$run" =~ ^[0-9]+$ && "$pend" =~ ^[0-9]+$ ]] || ! wait_job_state "$run" RUNNING 30; then
    bad "mylimits: could not start a running and a pending job for $user ($run, $pend)"
    as "$user" scancel -u "$user" 2>/dev/null
    return 1
  fi

  # The pending job's reason is set by a scheduler pass and may change
  # between passes (None, then Priority or Resources: both mean "waits for
  # the running job" here). Wait, bounded, for the scheduler to have looked
  # at it (Resources: the running job holds every CPU), then read mylimits
  # between two equal reads of Slurm's reason, so both see the same pass.
  local r1 r2 i
  end=$((SECONDS + 30))
  until [ "$(job_field "$pend" Reason)" = Resources ] || [ $SECONDS -ge $end ]; do sleep 0.5; done
  for i in 1 2 3; do
    r1=$(job_field "$pend" Reason)
    js=$(as "$user" "$ml" --json 2>&1)
    r2=$(job_field "$pend" Reason)
    [ "$r1" != "$r2" ] || break
  done
  case $r1 in
    Resources | Priority) ok "mylimits: $user's second job waits for the first (Slurm's reason: $r1)" ;;
    *) bad "mylimits: $user's second job pends for an unexpected reason: '$r1' (then '$r2')" ;;
  esac
  if ! jq -e . >/dev/null 2>&1 <<<"$js"; then
    bad "mylimits --json as $user: not JSON"; sed 's/^/  /' <<<"$js" | head -20
  else
    expect_eq "mylimits as $user: user and cluster" "$user $CLUSTER" "$(jq -r '"\(.user) \(.cluster)"' <<<"$js")"
    def=$(sacctmgr -nP show user "$user" format=defaultaccount)
    expect_eq "mylimits as $user: the default account is Slurm's ($def)" "$def" \
      "$(jq -r '[.accounts[] | select(.default) | .name] | join(",")' <<<"$js")"
    expect_eq "mylimits as $user: every account, in the snapshot and in Slurm" \
      "$(sacctmgr -nP show assoc where user="$user" cluster="$CLUSTER" format=account | LC_ALL=C sort | paste -sd,)" \
      "$(jq -r '[.accounts[] | select(.from == "snapshot+slurm") | .name] | sort | join(",")' <<<"$js")"
    expect_eq "mylimits as $user: $acct's account cap (GrpTRES) as sacctmgr has it" \
      "$(sacctmgr -nP show assoc where account="$acct" cluster="$CLUSTER" user= format=grptres | head -1)" \
      "$(jq -r --arg a "$acct" '.accounts[] | select(.name == $a) | .account_limits.GrpTRES // ""' <<<"$js")"
    expect_eq "mylimits as $user: $acct's QOS tiers" \
      "$(sacctmgr -nP show assoc where user="$user" account="$acct" cluster="$CLUSTER" format=qos | tr , '\n' | LC_ALL=C sort | paste -sd,)" \
      "$(jq -r --arg a "$acct" '.accounts[] | select(.name == $a) | .qos | sort | join(",")' <<<"$js")"
    expect_eq "mylimits as $user: QOS $qos is described (limits from sacctmgr show qos)" true \
      "$(jq --arg q "$qos" 'any(.qos[]; .name == $q)' <<<"$js")"
    expect_eq "mylimits as $user: the running job" "RUNNING $acct $qos" \
      "$(jq -r --arg j "$run" '.jobs[] | select(.id == $j) | "\(.state) \(.account) \(.qos)"' <<<"$js")"
    expect_eq "mylimits as $user: the pending job and Slurm's reason" \
      "PENDING $r1" \
      "$(jq -r --arg j "$pend" '.jobs[] | select(.id == $j) | "\(.state) \(.reason)"' <<<"$js")"
    expect_eq "mylimits as $user: the pending reason is explained in words" true \
      "$(jq --arg j "$pend" '.jobs[] | select(.id == $j) | (.why // "") | length > 0' <<<"$js")"
  fi

  tbl=$(as "$user" "$ml" 2>&1)
  if grep -q "^  $acct " <<<"$tbl" && grep -q "^  $qos " <<<"$tbl" &&
     grep -q "^  $run .*RUNNING" <<<"$tbl" && grep -q "^  $pend .*PENDING" <<<"$tbl"; then
    ok "mylimits table as $user: account, QOS tier, running and pending job"
  else
    bad "mylimits table as $user: account, QOS tier, running and pending job"; sed 's/^/  /' <<<"$tbl"
  fi
  expect_eq "mylimits --user $user (as root) shows the same accounts" \
    "$(jq -c '[.accounts[].name]' <<<"$js" 2>&1)" \
    "$(scim_ns "$ST" env SLURM_CONF="$SLURM_CONF" "$ml" --user "$user" --json 2>&1 | jq -c '[.accounts[].name]' 2>&1)"

  as "$user" scancel "$run" "$pend" 2>/dev/null
  end=$((SECONDS + 30))
  while [ "$(sinfo -h -o %T)" != idle ] && [ $SECONDS -lt $end ]; do sleep 0.5; done
  expect_eq "mylimits: node idle again after its jobs were cancelled" idle "$(sinfo -h -o %T)"
}
