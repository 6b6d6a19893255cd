// Package slurm reconciles Slurm accounts and associations with the SCIM
// groups in the live snapshot, through sacctmgr.
//
// # A pass
//
// Read the snapshot and slurmdbd (4 sacctmgr queries, one squeue and
// scontrol for the lint, all at once, while the snapshot loads and its
// users are resolved), compute a Plan (MakePlan, a pure function of
// config, snapshot and state), run its sacctmgr commands one after
// another, take the state they left and record every SCIM user's
// associations in the snapshot, where spank_scim.so finds them. That
// state is read back only when the commands' own output does not prove
// it: after user-only commands (add, delete, modify user) whose output
// lists exactly the associations they were meant to touch, nothing is
// read (proof.go: a move is its two writes); after other user-only
// commands only the users they named (ReadUsers: two rows, not 10,000);
// after an account, QOS or load command, everything. Every sacctmgr
// request costs ~90 ms of round trips however little it carries (proof.go
// has the measurement), so the passes count requests, not processes. In `syncd run` the pass after a
// commit is skipped, without a sacctmgr run, when what the config and the
// snapshot ask of Slurm (a digest of the wish) is what the last clean pass
// of the process had; the pass on its own schedule never skips, so drift
// made in slurmdbd is still found within an interval. `syncd slurm plan` prints the plan;
// `syncd slurm apply` and the after-commit step of `syncd run` run it.
//
// # Ownership: what syncd owns, and what it never touches
//
// Only accounts whose Organization is the marker (default "scimbridge"),
// or, with own_by_prefix, whose name starts with account_prefix, are ever
// changed or removed. A group mapped to an existing account without the
// marker gets no association there (noted in the plan).
//
// syncd owns, on those accounts:
//   - membership: an association that no mapped group asks for is removed,
//     and the plan gives the reason as it stands now ("not a SCIM user",
//     "in none of the groups mapped to bio (hpc-bio)", "no SCIM group maps
//     to bio any more"), never a guessed history;
//   - the account's limits, every field of limitFields: what the config
//     does not set is unset, so a limit dropped from the config, or set by
//     hand, is cleared (-1). Limits are compared in one canonical form
//     (limits.go), so an apply converges: the next plan is empty;
//   - the QOS and DefaultQOS of the associations it creates;
//   - the DefaultAccount of provisioned users, unless an admin set it to an
//     account syncd does not manage (kept, noted);
//   - the MaxSubmitJobs=0 blocks it sets itself while a removal waits for
//     jobs (recorded in the ledger, state_file).
//
// syncd never touches:
//   - accounts without the marker, and everything in them;
//   - the limits of a managed account whose Description contains
//     "hands-off" (differences are reported in the plan; membership is
//     still managed): `sacctmgr modify account X set
//     Description="managed by scimbridge; hands-off"`;
//   - the users in hands_off_users: their associations, default account
//     and jobs;
//   - per-user limits on associations (MaxJobs, MaxWall, GrpTRES... of a
//     user), and a block (MaxSubmitJobs=0) it did not set: an admin's
//     suspension survives every pass and the plan names it;
//   - an account frozen by a mapping conflict (below), and what the members
//     of the conflicting groups have.
//
// The ledger (ledger.go, slurm-state.json beside the snapshot) tells who
// caused a change, and the plan labels it: "config:" for what the config
// caused (a limit, a tier's QOS, the default account it gives), "source:"
// for what the identity provider did (a provisioned user no longer a SCIM
// user, a user who left their default account's groups), "drift:" only
// for an edit made outside scimbridge (a limit, an association's QOS, a
// DefaultAccount moved to another managed account, a user added by hand).
// With no record (first pass, ledger lost) the note says so instead of
// guessing. All are applied; the plan says which.
//
// An account blocked as a whole (MaxSubmitJobs=0 on the account, which
// every member's association shows as its own) is one note per account,
// with the modify-account command that lifts it. `syncd run` logs lint
// and notes on the pass they appear, not every pass (conflicts: every
// pass); `syncd slurm plan` always prints them all.
//
// # Group mapping
//
// An explicit mapping ([slurm.groups.NAME]) wins over group_pattern: a
// pattern group that would land on an explicitly mapped account is
// ignored, reported as a CONFLICT in the plan and at error level in the
// log. Two pattern groups landing on one account (hpc-bio.x and hpc-bio_x
// both normalise to bio_x) are a CONFLICT too: neither is mapped, the
// account is left as it is, and nothing their members have is removed,
// until one is renamed or mapped explicitly. Two explicit groups may share
// an account only with the same settings (else the config is refused).
//
// # Tiers, lint, disabled users, schedule
//
//   - Tiers as code (tiers.go): qos_settings defines QOS (owned through
//     "managed by MARKER" in their Description, converged and drift-checked
//     like account limits); guaranteed_gpus gives a team its own project
//     QOS (ACCOUNT-project, GrpTRES=gres/gpu=N, the default QOS) and caps
//     the account at N for QOS without a GPU limit; tiers lists the shared
//     QOS a group opts into. The landing account stays at 0 GPUs.
//   - Lint (lint.go): `slurm plan` reads `scontrol show config` and names
//     each setting the caps need and lack, with the slurm.conf line.
//   - Disabled users (disable.go): their pending jobs are held with the
//     reason in squeue and released when re-enabled (or cancelled);
//     running jobs finish unless disabled_running_jobs = "cancel".
//   - `syncd run` runs the Slurm pass on its own schedule ([slurm]
//     interval, default poll_interval) besides after each commit, so a
//     slow or down source never stalls it.
//
// # Ordering across the cluster
//
// The head acts in Slurm for a snapshot as soon as it has committed it:
// it releases the jobs it held for a user who is enabled again, lifts its
// own blocks and creates the associations a new user's jobs need. The
// compute nodes that mirror the head get that snapshot a poll later
// (mirror interval, 5 s ± 1 s by default, plus the download), so a job
// can reach a node's slurmstepd while the node's copy still says
// "disabled" or "no association". The rule: the node's gate, not the
// head, absorbs the gap. spank_scim.so's task_init on a mirror node (a
// <cache_path>.mirror.json beside its snapshot) does not fail such a job
// at once: it waits up to wait_for_snapshot seconds (default 30) for the
// live snapshot to be replaced, decides again on every new file, and runs
// the job at the first allowing answer. It refuses as before when the
// time is up, or as soon as the node has heard from the head since the
// job arrived (the live file's mtime, the head's signed source_contact,
// moves past the start of the wait) with the same answer. Waiting grants
// nothing a snapshot does not: a disabled user's job is still refused,
// up to wait_for_snapshot seconds later, and running jobs are untouched.
//
// Why not the head waiting for its nodes: nodes never talk back to the
// head (they hold no secret, any number of them poll a static directory),
// so the head cannot know when every node holds a snapshot; a fixed delay
// before each release would still fail a job on the one node whose poll
// is late, and would delay every re-enable on a healthy cluster. The gate
// on the node sees exactly its own copy's age. Submit checks (sbatch,
// salloc, srun on a login node) never wait: a refusal there costs no job,
// and the user submits again a poll later. Measured with real Slurm
// (tests/cluster/release.sh, one compute node with 2 CPUs): 20 of 20
// released jobs completed over the head's web server and over a shared
// directory, mirror interval at its default; the 2 jobs of each round that
// reached the node first waited 6 s and 3 s for the snapshot. With
// wait_for_snapshot=0 (the old behaviour) 2 of 20 FAILED in the first
// round and at least 2 in the second.
//
// # Decisions
//
//   - Users are provisioned only once they resolve through getpwnam on this
//     host with the snapshot's uid: slurmctld caches a user it cannot
//     resolve for up to an hour. Until then they are "held": nothing is
//     added, nothing they have is removed.
//   - Disabled users (active=false) keep their associations: re-enabling is
//     then instant, and spank_scim.so and pam_scim refuse them meanwhile.
//   - QOS named in the config that do not exist are created, with
//     Description "managed by scimbridge" (create_qos = false to refuse);
//     existing QOS are never changed or removed.
//   - With default_account (the landing account, capped by
//     default_account_limits, GrpTRES=gres/gpu=0 unless set) every
//     provisioned user has an association there and it is their
//     DefaultAccount: a job without -A costs no group's GPUs. Without it, a
//     user's default is their first mapped account by name.
//   - A removal whose user has pending or running jobs on that account
//     (squeue) blocks the association (MaxSubmitJobs=0) instead; a later
//     pass removes it once idle. Jobs squeue cannot name (the user is gone
//     from NSS) block the removals of every user on that account who is not
//     in the snapshot.
//   - One pass may delete at most half of the managed associations (when
//     there are at least 10) unless forced: a snapshot that lost a group by
//     mistake must not empty the accounting.
//
// # sacctmgr facts the plan is shaped by (Slurm 22.05, measured)
//
//   - "Nothing new added." / "Nothing deleted" / "Nothing modified" exit 1:
//     success for an idempotent reconciler.
//   - The first association added for a new user becomes its default, so
//     the landing account's batch runs first.
//   - Deleting a user's default association while others remain leaves the
//     user without a default, and slurmdbd refuses a delete that lists a
//     default association after any non-default one in the same command
//     (its check does not reset between users). So defaults are switched
//     first, non-default associations go per account, and users' last
//     associations go in a command of their own.
//   - `delete account` with users in it deletes their associations too: an
//     account is deleted only when nothing is left in it.
//   - Names in one command are a cross product (name=a,b account=x,y), so
//     adds are per account: one `add user a,b,c Account=X` per account;
//     from load_min_accounts (10) accounts on, all of them go in one
//     `sacctmgr -i load file=/dev/stdin` instead (load.go has what a load
//     does and the measurements: every sacctmgr write costs ~0.8 s of
//     round trips besides slurmdbd's work). Deletes on several accounts share one
//     command when every pair of its names x accounts is removed or has no
//     association (removals.go): 100 users moving to the next account are
//     2 deletes, not 100.
//   - Defaults are read with `show assoc where cluster=X onlydefaults`, not
//     `show user withassoc` (slurmdbd matches every user against every
//     association for the latter: 3.6 s against 0.55 s at 10,000).
//   - Concurrent sacctmgr writers deadlock inside slurmdbd, which retries
//     and can silently drop associations: commands run strictly one after
//     another (flock on lock_file across processes), and apply re-plans
//     from the read-back state and warns if anything is left.
//
// # Package main wires
//
// The daemon's side of the pass lives here (daemon.go): AfterCommit
// (registered in pipeline.AfterCommit), Loop (its own schedule,
// syncd/schedule) and LoadConfig; both share the one clock of the last
// pass, so a commit's pass holds the loop's back. Package main keeps the
// `syncd slurm` command's flags and output only (issue 18, item 6).
package slurm
