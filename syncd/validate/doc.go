package validate

// Incremental validation (issue 18 item 2; incremental.go). The daemon's
// polls and the receiver's bursts hand the pipeline the last directory
// with a few records replaced; Incremental validates it with work
// proportional to those records, and its result is Directory's on the
// same directory and live snapshot, field for field and in the same
// order (TestIncrementalEqualsDirectory: thousands of random hostile
// changes in five option shapes, every result compared). Decisions:
//
//   - What a record decides alone (pass 1: name mapping, reserved and
//     local names, ids, the primary gid against the groups' verdicts,
//     the home's checks, shell, keys, GECOS, quota) is kept per SCIM id
//     and run again only for a record that changed, arrived, moved in or
//     out of posix_groups, or whose primary gid's group verdict changed
//     (the published name, the claiming group, its reason: all the
//     primary gid check reads).
//   - A record changed when any attribute of the source record differs
//     from the one validated last (sameUser, sameGroup), not when the
//     reader says so: the validator does not depend on how the
//     directory was patched (poll, push, full read, reordered listing).
//     Comparing 100,000 unchanged records is about 10-20 ms.
//   - The cross-record rules (pass 2: login names after user_names and
//     their collision rules, uids, homes, nested homes, private gids)
//     group records by a shared value, so a set of records closed under
//     sharing one settles exactly as within the whole directory
//     (settleUsers, the same code Directory runs). Kept between polls:
//     an index per value (one holder, or the list when contested) and,
//     per directory, how many homes lie under it. Settled again: the
//     changed records; the holders of the values they held before (a
//     rename frees a name another record was refused for, and that
//     record is now accepted as a whole validation would accept it);
//     every record in any contested value or nested home, because the
//     keeper ("the live holder keeps it") follows the live snapshot,
//     which every commit changes; and, repeatedly, whatever shares a
//     value with those. A record outside shares nothing, so pass 2 left
//     it as pass 1 did.
//   - The live snapshot is read only for the settled records' values,
//     and not at all when fewer than two are settled (nothing then to
//     keep from anyone).
//   - Groups are thousands, not a hundred thousand: each group's own
//     checks are kept, their name and gid claims settled whole every
//     time. A group's entry (members resolved to published names) is
//     made again only when the group or its verdict changed or one of
//     its members' published names appeared, went or changed.
//   - Published users are kept sorted by uid and patched; the result
//     shares that list (clipped, never written again: the next change
//     makes a new one), so the last result, now the live snapshot, is
//     never changed under the pipeline.
//   - Validated whole, logged once with the reason by the pipeline: the
//     first directory; other options (configuration, /etc/passwd or
//     /etc/group contents: fingerprint); the source starting or
//     stopping to send active (every user's default changes); a
//     repeated SCIM id (records are kept by id: Directory validates it,
//     and the state starts again). Homes nested more than eight levels
//     deep among the settled records settle every record (exact, only
//     slower).
//   - Measured (Dec 2, 100,000 users, 10,000 groups, CPU per op):
//     Directory 698 ms; Incremental after one change 58 ms (a disable),
//     77 ms (a project group's new member), 120 ms (a rename: slurm-users'
//     list patched), 143 ms (a rename onto another user's name). In
//     BenchmarkChangeToManifest validation went from 1.6 s to about 0.2 s
//     of CPU per change (README).
//   - Memory: about 84 MB at 100,000 users (the result's 13 MB
//     included; 616 bytes of state per user: the source record as
//     validated, the pass 1 verdict with its entry, a second verdict only
//     when pass 2 changed it), beside the directory the daemon holds.
//   - The pipeline checks it: a full read (startup aside, the hourly
//     reconcile) is validated incrementally and whole, and any
//     difference is logged at error level, the whole result used and
//     the state made again.
//   - Whole validation's memory (issue 18, full sync): an accepted SSH
//     key already in canonical form keeps the source's string (one copy
//     of every key, not two), and the key memo (keys.go) is dropped by
//     ForgetKeys when the process will not validate again (sync --once),
//     so it is not held while the snapshot is written and verified.
//   - Plain ed25519 key lines (issue 18, full sync, Dec 2): a line
//     written "ssh-ed25519 <68 base64 characters> [comment]" whose blob
//     is that type and 32 key bytes is read without the parser
//     (keys.go, plainEd25519): the same canonical string and
//     fingerprint, held to the parser's answers by
//     TestPlainEd25519IsTheParser; every other line (other types, odd
//     spacing, options, bad blobs) takes the parser's path and the memo.
//     100,000 such keys through checkKeys with an empty memo (sync
//     --once): 600-740 -> 77-115 ms of CPU, 150 -> 35 MB allocated,
//     2.8M -> 0.5M allocations. The memo stays for the other lines.
//   - Whole validation's allocations (issue 18, full sync, Dec 2):
//     Directory's candidates are one block, not one allocation per
//     user, and the published users' list is made once to the count
//     kept (nil when none, as before; grown by append it cost 61 MB of
//     copies at 100,000 users). BenchmarkDirectory, cac0f65 back to
//     back (load 7-11): 137.6 -> 84.8 MB and 461k -> 361k allocations
//     per validation, 504 -> 419 ms of CPU.
