// Package homes makes the storage side of an account: each active user's
// home, each team's project directory and their quotas, from the live
// snapshot, on the host that owns the storage (issue 23).
//
// # A pass
//
// Pass reads the snapshot's users and groups and, in order: makes missing
// homes of active users under the roots (uid/gid, mode, /etc/skel), keeps
// or archives the homes of users removed at the identity provider, makes
// project directories (root:TEAMGID, setgid), then reads the storage's
// quotas through a Driver and sets the limits that differ. `syncd homes
// plan` is the same pass with DryRun: it inspects, reports what it would
// do (with the exact quota command lines) and changes nothing. A second
// pass over an unchanged snapshot does nothing.
//
// # Decisions
//
//   - Role: the pass runs on one host, named in the config: "head" (the
//     syncd that reads the identity source) or "storage" (a node mirroring
//     the head, on the file server). Every other host leaves storage
//     alone. pam_mkhomedir stays useful on hosts whose homes are local
//     disks (no shared /home): the README says when to keep it.
//   - Never blocks identity: `syncd run` runs the pass in a goroutine of
//     its own, started by a new live file (a commit on the head, an
//     install on a storage node; checked every 5 s) and every
//     homes.interval. A hung mount or quota CLI stalls that goroutine
//     only; each pass is bounded by homes.timeout and each quota command
//     by 30 s, run in a process group of its own that is killed whole. `sync
//     --once` runs the pass inline after its commit, bounded the same way;
//     its failure is recorded (after-commit error), the snapshot stays.
//   - Walks never follow a symlink or leave a root (fs.go): roots are
//     opened from / one component at a time with O_NOFOLLOW|O_DIRECTORY
//     and must be root's and not writable by others (a root-owned sticky
//     directory such as /tmp is allowed above a root); every directory
//     between a root and a home likewise (a directory a user can write to
//     lets them swap the next component). The home itself is made with
//     mkdirat as root:root 0700, filled from skel through descriptors
//     (O_EXCL|O_NOFOLLOW, symlinks copied as symlinks, bounded depth and
//     entries), then chowned and chmodded through its descriptor: no user
//     can enter it before it is theirs. A missing root is never created:
//     an unmounted file system must not get homes under its mount point.
//   - Hostile homes are refused with the path and the reason, logged once
//     (again only when the reason changes): outside the roots, not clean
//     (.., //), a symlink or a file, two users on one path, one home inside
//     another's, a directory on the way owned by a user or writable by
//     others, an existing directory owned by another uid. Validation
//     refuses most of these before a snapshot is written (home_roots,
//     overlapping homes); the pass checks again on the disk, where a user
//     can act.
//   - An existing home owned by the user is adopted as it is: its mode and
//     contents are the user's business. A root-owned directory at a home's
//     path is refused, unless the ledger says this pass made it and was
//     interrupted before the chown (then it is completed).
//   - Removed users (in the ledger, gone from the snapshot): "keep" (the
//     default) leaves the home in place and says so; "archive" moves it,
//     once removed_grace (30 days) has passed, into <root>/<archive_dir>
//     (root-only 0700) with renameat2(RENAME_NOREPLACE), after checking it
//     is still a directory owned by that uid. Nothing is ever deleted:
//     "delete" is refused by the config check. A user who comes back
//     before the grace ends keeps their home. Disabled users are still in
//     the snapshot: their homes and quotas are untouched.
//   - Quotas through the storage's own tools, behind Driver: GlusterFS
//     directory quotas (gluster.go; the soft limit is a whole percentage
//     of the hard one, GlusterFS keeps no grace period) and a command
//     driver with presets for setquota, xfs_quota and lfs (command.go,
//     exact lines there and in the README). Limits: user_soft/user_hard
//     and team_soft/team_hard, with per-group overrides (a user gets the
//     largest override of their groups; a team its own).
//   - A per-user limit from the identity provider ([attributes]
//     home_quota, [receiver] home_quota_attribute; per team:
//     project_quota, project_quota_attribute, capped by team_max)
//     reaches the storage
//     role through the snapshot (User.Quota, the optional quotas table:
//     syncd/snapshot/quotas.go), not through a side channel: a storage
//     node that only mirrors the head gets it signed and verified with
//     everything else. Validation on the head reads it (1M to 1P, a bare
//     number is GiB) and drops a bad value, never the user. Here it
//     replaces the configured hard limit, the soft one following at the
//     configured ratio, capped by quota.user_max; without user_max by the
//     configured hard limit, so that an identity provider can lower a
//     limit but raise it only as far as the storage's owner allows. A
//     capped value is an action (quota-capped) every pass and a warning
//     logged once per user and value (the ledger's Refused map, keyed
//     quota:user:NAME, forgets it once the cap no longer applies).
//   - Schedule: the daemon runs the pass in schedule.Watching (the loop
//     the Slurm and Kubernetes passes share), which asks every 5 s
//     whether the live file is new; the interval's passes are the ones
//     that record samples, measured from the last sampling pass (not the
//     last pass of any kind, or a busy head would never sample).
//   - Idempotent: a driver that reads limits (GlusterFS) is compared with
//     the storage; one that cannot (command) with the ledger of what was
//     applied (state_file). A limit lowered below current use is applied
//     and reported ("over-limit": writes fail until the user deletes);
//     the pass never deletes data to fit a limit.
//   - The ledger (homes-state.json beside the snapshot, root-only) keeps
//     the homes made or adopted, limits applied, refusals logged, homes
//     being made, and hourly usage samples of teams for the usage report.
//     The status file (homes-state.status.json, world-readable) holds the
//     last pass's counts, actions and each home's and project's use
//     against its limits: `syncd status`, `syncd explain` and mylimits
//     read it. It shows every user's home use to anyone on that host, as
//     sshare shows everyone's fair-share usage.
//   - The other nodes' figures (mylimits on a login or compute node):
//     the pass leaves a copy of the targets' use and limits, without
//     actions or refusals, at the top of each root it manages
//     (SharedUsageFile, WriteShared). Not through the head's mirror: the
//     storage role may itself be a mirror node, with no way to publish
//     back, while every node that has homes mounts that storage; the
//     figures then come from where the data is, refreshed by every pass
//     that read use, and a node sees their time. mylimits trusts the copy
//     only when it and its directory are root's and not writable by
//     others, so a user cannot plant figures.
//   - glusterd answers "Another transaction is in progress" just after a
//     CLI that held its lock returns: tried again after 1-4 s within the
//     pass's time. A pass that met errors runs again after 1 min,
//     doubling up to the interval (daemon.go), not only at the next
//     snapshot or interval. So does a pass that set a limit whose use the
//     storage did not report when read again (Result.UsagePending: the
//     list failed, or did not show the new limit yet): otherwise the
//     nodes' copy would lack that home until the hourly sample.
//
// # Package main wires
//
// The daemon's side of the pass is here, from the syncd config (issue
// 18, item 6): Load, Here and RoleWarning (the table and the role),
// Run (one pass, recorded in the status file, the shared figures and the
// metrics), AfterCommit (`sync --once`), Loop (`syncd run`, on
// schedule.Watching: a new live file or the interval), and what status,
// explain and report print (show.go). Package main keeps the commands'
// flags. The daemon's loop and the after-commit step share the running
// flag here, so a commit never starts a second pass beside the loop's.
package homes
