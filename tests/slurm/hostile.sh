# tests/slurm/hostile.sh: sourced by tests/slurm/run.sh after the
# plugstack.conf options, on the running lab. Hand-made snapshots
# (bypassing syncd) given to spank_scim through plugstack.conf's cache=,
# which every client and slurmstepd re-read: real sbatch/salloc/srun.

echo "--- spank_scim on hostile and quiet snapshots"
HC=$T/cache # root-owned, 0755: a directory the reader trusts
# dave (disabled) and alice (active) with homes of 4,090 bytes: past a
# fixed 4 KiB buffer, which used to read as "unusable" (missing=open then
# ran the disabled user's job).
cp "$CACHE" "$HC/bighome.db"
sqlite3 "$HC/bighome.db" "UPDATE users SET home = '/home/' || substr(replace(hex(zeroblob(2100)), '00', 'ab'), 1, 4084)
  WHERE name IN ('dave', 'alice')"
derive "$HC/bighome.db" # the NSS index too, as syncd's writer would
chmod 0644 "$HC/bighome.db"
expect_eq "bighome: dave's home is 4,090 bytes" 4090 "$(sqlite3 "$HC/bighome.db" "SELECT length(home) FROM users WHERE name = 'dave'")"
plug cache=$HC/bighome.db
deny_at_submit "bighome: disabled dave with a 4,090-byte home is refused at submit" \
  "spank_scim: user dave is disabled in the identity provider" dave sbatch --wrap id
OUT=$(scim_ns "$ST" bash -c 'cd "$0" && exec runuser -u dave -- env SLURM_CONF="$1" sbatch --parsable --wait -o "$0/bh-dave-%j.out" --wrap id' "$WORK" "$T/bypass.conf" 2>&1)
J=${OUT%%$'\n'*}
if [[ "$J" =~ ^[0-9]+$ ]]; then
  expect_eq "bighome: dave's job past a client without the plugin FAILED in task_init, id never ran" "FAILED no-id" \
    "$(job_field "$J" JobState) $(grep -q '^uid=' "$WORK/bh-dave-$J.out" 2>/dev/null && echo ran-id || echo no-id)"
else bad "bighome: dave's bypassing sbatch was not accepted: $OUT"; fi
run_as alice sbatch --parsable --wait -A phys -o /dev/null --wrap true
expect_eq "bighome: active alice with a 4,090-byte home runs" 0 "$RC"

# A quiet directory: the content is old (created_at 2000) but syncd's last
# contact is fresh (the file's mtime): not stale.
cp "$CACHE" "$HC/quiet.db"
sqlite3 "$HC/quiet.db" "UPDATE meta SET value = '2000-01-01T00:00:00Z' WHERE key = 'created_at'"
chmod 0644 "$HC/quiet.db"
plug cache=$HC/quiet.db max_age=60 missing=closed
run_as alice sbatch --parsable --wait -A phys -o /dev/null --wrap true
expect_eq "quiet directory (old content, fresh mtime), max_age=60 missing=closed: alice's job runs" 0 "$RC"
deny_at_submit "quiet directory: disabled dave is refused" "spank_scim: user dave is disabled" dave sbatch --wrap id
touch -d '2000-01-01 00:00:00 UTC' "$HC/quiet.db"
deny_at_submit "the same file with an mtime of 2000 (no contact with the source): stale, refused under missing=closed" \
  "spank_scim: the SCIM snapshot is stale: last contact with the identity source" alice sbatch --wrap id
plug cache=$HC/quiet.db max_age=60
run_as alice sbatch --parsable --wait -A phys -o /dev/null --wrap true
if [ "$RC" = 0 ] && grep -qF "spank_scim: WARNING: the SCIM snapshot is stale" <<<"$OUT"; then
  ok "stale under missing=open: alice's job runs, with a loud warning"
else bad "stale under missing=open: alice: rc=$RC $OUT"; fi
deny_at_submit "stale under missing=open: disabled dave is still refused (decided from the snapshot)" \
  "spank_scim: user dave is disabled" dave sbatch --wrap id

# A SCIM user named slurm on a node without a local slurm account: a
# client namespace whose /etc/passwd has no slurm, whose snapshot has a
# disabled SCIM "slurm" without associations. Not exempt as SlurmUser.
cp "$CACHE" "$HC/slurmname.db"
sqlite3 "$HC/slurmname.db" "INSERT INTO users VALUES (31099, 'slurm', 31000, 'not the SlurmUser', '/home/slurm', '/bin/bash', 0, 'hs1')"
derive "$HC/slurmname.db"
chmod 0644 "$HC/slurmname.db"
CS=$T/cstage; stage_new "$CS" "$HC/slurmname.db"
grep -v '^slurm:' /etc/passwd > "$CS/etc/passwd"; chmod 0644 "$CS/etc/passwd"
expect_eq "client namespace: slurm resolves to the SCIM user (uid 31099)" 31099 "$(scim_ns "$CS" id -u slurm 2>&1)"
plug cache=$HC/slurmname.db
OUT=$(scim_ns "$CS" bash -c 'cd "$0" && exec runuser -u slurm -- env SLURM_CONF="$1" sbatch --wrap id' "$WORK" "$SLURM_CONF" 2>&1); RC=$?
if [ "$RC" -ne 0 ] && grep -qF "spank_scim: user slurm is disabled in the identity provider" <<<"$OUT"; then
  ok "a SCIM user named slurm is not exempt: refused at submit as disabled"
else bad "a SCIM user named slurm is not exempt: rc=$RC $OUT"; fi

# SLURM_JOB_ACCOUNT in the job's environment is the caller's: it decides
# nothing. alice holds associations in slurmdbd, but none in this
# snapshot: inside a real allocation (a client without the plugin), a step
# with SLURM_JOB_ACCOUNT=chem (an account she has in slurmdbd) is refused
# by slurmstepd's task_init all the same.
cp "$CACHE" "$HC/noassoc.db"
sqlite3 "$HC/noassoc.db" "DELETE FROM slurm_associations WHERE user_name = 'alice'"
chmod 0644 "$HC/noassoc.db"
plug cache=$HC/noassoc.db
OUT=$(scim_ns "$ST" bash -c 'cd "$0" && exec runuser -u alice -- env SLURM_CONF="$1" salloc -A phys bash -c "SLURM_JOB_ACCOUNT=chem srun id -un; echo srun-rc=\$?"' \
  "$WORK" "$T/bypass.conf" 2>&1)
if grep -q "srun-rc=[1-9]" <<<"$OUT" && grep -qF "spank_scim: user alice has no Slurm association" <<<"$OUT" && ! grep -qx alice <<<"$OUT"; then
  ok "SLURM_JOB_ACCOUNT=chem srun inside alice's allocation: the step fails in task_init (the variable decides nothing)"
else bad "SLURM_JOB_ACCOUNT=chem srun: $OUT"; fi
plug cache=$CACHE
OUT=$(scim_ns "$ST" bash -c 'cd "$0" && exec runuser -u alice -- env SLURM_CONF="$1" salloc -A phys bash -c "SLURM_JOB_ACCOUNT=nosuch srun id -un"' \
  "$WORK" "$SLURM_CONF" 2>&1); RC=$?
if [ "$RC" = 0 ] && grep -qx alice <<<"$OUT"; then
  ok "control: with her associations in the snapshot, alice's step runs whatever SLURM_JOB_ACCOUNT says"
else bad "control: alice's step: rc=$RC $OUT"; fi
for _ in $(seq 40); do [ "$(node_state)" = idle ] && break; sleep 0.5; done # the last steps completing
expect_eq "node idle after the hostile snapshots (task_init refusals fail jobs, never drain the node)" idle "$(node_state)"
cp "$T/plugstack.orig" "$PLUGSTACK"
