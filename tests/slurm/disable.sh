# tests/slurm/disable.sh: sourced by tests/slurm/run.sh once erin is
# provisioned (config enabled=true: every committed sync reconciles).
# Disable: erin's pending job is held with the reason in squeue; enabled
# again, exactly that job is released. Then the Slurm pass keeps its own
# schedule while the source hangs, and the failed poll is logged at error.

jobinfo() { squeue -h -j "$1" -o '%T|%r|%k' 2>&1; }
J=$(as erin sbatch --parsable -A phys --begin=now+3600 -o /dev/null --wrap true 2>&1)
expect_eq "erin's job waits for its begin time" "PENDING|BeginTime|(null)" "$(jobinfo "$J")"
admin POST users/erin/active '{"active": false}' || bad "admin: disable erin"
check "sync after erin was disabled" sync_once
expect_eq "disabled erin's pending job is held, the reason in squeue (%r %k)" \
  "PENDING|JobHeldAdmin|scimbridge: held, user erin is disabled in the identity provider; released when re-enabled" "$(jobinfo "$J")"
grep -q "hold $J" "$T/syncd.log" && ok "the log names the hold (scontrol hold $J)" || bad "no hold in the log"
admin POST users/erin/active '{"active": true}' || bad "admin: enable erin"
check "sync after erin was enabled again" sync_once
# Released, the job's reason is None until slurmctld's next scheduling
# pass sets BeginTime again (seen under load): wait for that pass, bounded.
for _ in $(seq 30); do [ "$(jobinfo "$J")" = "PENDING|BeginTime|" ] && break; sleep 0.5; done
expect_eq "erin enabled again: her job is released, the comment cleared" "PENDING|BeginTime|" "$(jobinfo "$J")"
scancel "$J"

# The Slurm pass on its own schedule: the source hangs (every SCIM answer
# delayed past request_timeout), a limit is changed by hand, and the
# daemon's Slurm pass resets it within seconds while the poll fails.
curl -fsS -m 5 -X PUT -H 'Content-Type: application/json' --data '{"delayMs": 60000}' "$ADMIN/faults" >/dev/null || bad "admin: faults"
sed -e 's/^request_timeout = .*/request_timeout = "6s"\npoll_interval = "60s"/' -e 's/^\[slurm\]$/[slurm]\ninterval = "2s"/' "$T/syncd.toml" > "$T/syncd-run.toml"
chmod 0600 "$T/syncd-run.toml"
sacctmgr -i modify account where name=phys cluster=$CLUSTER set GrpJobs=3 >/dev/null
t0=$EPOCHREALTIME
scim_ns_exec "$ST" "$BUILD/syncd" --config "$T/syncd-run.toml" run > "$T/run.log" 2>&1 &
RUN_PID=$!
end=$((SECONDS + 20))
until [ -z "$(sacctmgr -nP show assoc where cluster=$CLUSTER account=phys user= format=grpjobs)" ]; do
  [ $SECONDS -lt $end ] || break; sleep 0.5
done
if [ -z "$(sacctmgr -nP show assoc where cluster=$CLUSTER account=phys user= format=grpjobs)" ]; then
  ok "source hanging: the daemon's Slurm pass reset a hand-set limit after $(secs "$t0")s"
else bad "source hanging: no Slurm pass within 20s"; tail -5 "$T/run.log"; fi
end=$((SECONDS + 20))
until grep -q 'level=error.*poll failed' "$T/run.log"; do [ $SECONDS -lt $end ] || break; sleep 0.5; done
grep -q 'level=error.*poll failed' "$T/run.log" && ok "the failed poll is logged at error with its reason: $(grep -m1 'poll failed' "$T/run.log" | grep -o 'error="[^"]*' | cut -c1-80)" \
  || { bad "no error-level log of the failed poll"; tail -5 "$T/run.log"; }
kill_tree "$RUN_PID"; RUN_PID=
curl -fsS -m 5 -X DELETE "$ADMIN/faults" >/dev/null || bad "admin: clear faults"
