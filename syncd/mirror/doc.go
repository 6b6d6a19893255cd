package mirror

// Decisions about where the node's daemon lives (the package comment is
// in mirror.go):
//
//   - A node's `syncd run` is Daemon (daemon.go), not package main's
//     (issue 18, item 6): the loop (poll, jitter, SIGHUP reload), its
//     metrics (the signature's age is computed at each scrape, so a node
//     whose polls hang or whose loop stopped ages all the same) and
//     `check-config --online` (CheckOnline) sit beside the Node they
//     drive. Package main keeps flags, the logger and the exit codes
//     (mirror --once exits 3 on a Refusal).
//   - What else runs on a node (a storage node's homes pass) is handed in
//     as Daemon.Beside (schedule.Task), so this package does not import
//     syncd/homes.
//   - A SIGHUP builds a new Node from the new file before it replaces the
//     old one: a broken config is logged and the old Node keeps polling.
//   - A poll that finds the manifest naming the live snapshot costs no
//     pass over the live file (issue 18): its SHA-256, serial and counts
//     are kept with its identity (device, inode, size, ctime), in memory
//     for the daemon and in <cache_path>.mirror.json for the next process
//     (`syncd mirror --once` from a timer, a restart). The ctime moves
//     with any write, link or chmod of the inode and cannot be set back
//     from user space, so the same identity is the same bytes; on a file
//     system with whole-second ctimes, or under another syncd version,
//     the file is hashed and opened through the C reader as before. At
//     100,000 users that pass was an 80 MB SHA-256 plus the C reader's
//     walk of the NSS index on every poll of a new process, and the index
//     walk on every poll of the daemon.
//   - Installing a one-change delta (issue 18: <= 50 ms CPU, <= 40 MB
//     peak RSS at 100,000 users) was 41 MB at its peak, about 24 MB of it
//     the snapshot's pages mapped by the C reader's whole check
//     (ix_check_all, c/nssindex.c), run on every cache.Open: the install's
//     VerifyMeta, and again by LocalConflicts on the installed file (and
//     by a new process's no-op poll). Mapped file pages count in VmHWM.
//     Decided Dec 2 (tests/bench snapwrite's node row, TestBenchDeltaInstall,
//     main and node9 side by side, 6 runs each, load 7.9-9.2; medians):
//       . the check reads the index's links with pread, 128 KiB at a
//         time, into a buffer of its own: the same links of the same
//         file, none of it mapped (31 MB of index: pread 6-9 ms of CPU
//         against 22-28 ms through the mapping, whose faults cost more
//         than the copy; a 1 MiB mapped window bounds the RSS but keeps
//         the faults). Serves syncd's verification too (the same
//         cache.Open), though its every-user lookups map the index anyway;
//       . LocalConflicts opens the live file with cache.OpenLookups (no
//         whole check): it makes a few lookups, each of which checks the
//         links it crosses, in the file whose whole check the install
//         just passed. Skipping the check for a delta whose page hashes
//         prove the untouched pages equal was not needed: the check no
//         longer costs memory, and its CPU is about a tenth of the
//         poll's (perf: its pread and copy);
//       . the page-hash sidecar is built in one buffer of its size (it
//         grew a hash at a time: 15% of the install's CPU samples).
//     Result: delta poll 82.7 -> 38.8 ms CPU (whole process 120 -> 77.5),
//     peak RSS 42 -> 20 MB (growth during the poll 24.5 -> 2.5 MB); a
//     no-op poll of a new process 21 -> 6 ms, 39 -> 18 MB. Left: the copy
//     of the live file into the candidate (copy_file_range; this ext4 has
//     no reflink), half of the poll's CPU: read/write in 128 KiB-1 MiB
//     chunks, sendfile and a preallocated copy measured 15-23 ms for
//     40 MB against copy_file_range's 15-17.
//   - The real node process (2026-12-02, sync12: the snapwrite bench's
//     last table, the syncd binary's `mirror --once` against a head that
//     commits with `sync --once`, from scim-testserver -generate
//     100000,10000: an 85 MB snapshot, twice the one-group file above;
//     load 6.4 from other work): a one-disable delta 90-170 ms of CPU,
//     70-120 ms of it system (the copy of the 85 MB file into the
//     candidate and its fsync), 29-30 MB peak RSS, 6.7-7.3 KB fetched;
//     a process finding nothing new 40 ms (its start). Over the 50 ms
//     target at this size: the copy is proportional to the file, not to
//     the change.
//   - The spare (spare.go, Dec 3): the previous live file is kept as
//     <live>.spare with a sidecar naming it and the pages that differ
//     from the live file; the next delta copies those pages into it and
//     is applied to it instead of a fresh copy. Safety, in order: the C
//     reader's identity of a file is now device, inode, size and ctime
//     (c/common.c same_file: a handle that held the inode and comes back
//     to it at the path reopens; syncd/cache TestRewrittenInodeBackAtThePath
//     fails with the old identity); the spare is rewritten only
//     spareGrace (5 s) after it left the path (readers use a file up to
//     1 s after their last check); the sidecar is removed and the
//     directory fsynced before the spare is written; the spare must
//     have the identity the sidecar recorded. Cost of the identity: a
//     touch (every poll that moves source_contact) or chmod of the live
//     file makes each open handle reopen the same file once at its next
//     check (tests/c/touch_test.c now says so; the fork proofs there use
//     a world-writable directory instead of a chown).
//     What limited it (until the reverse deltas below): every install
//     linked the new live file into the history (<live>.history,
//     syncd/snapshot/history.go) and .prev, so the spare's inode was
//     also a kept snapshot; rewriting it would change what `syncd
//     history/diff/rollback` read. The spare is used only when its inode
//     has no other name (.prev is moved to the live file first).
//     Measured Dec 3 (TestBenchDeltaInstall, MIRROR_BENCH_HISTORY=0 and
//     default, 100,000 users in one group: a 40 MB snapshot; flock'd,
//     load 6.4-11.4 with the C and Go tests running beside it; two runs
//     each, the rows of one run side by side): poll CPU of a one-change
//     delta, copy 38.1 / 32.6 ms -> spare 28.9 / 19.8 ms (whole process
//     71 / 74 -> 66 / 55 ms), peak RSS unchanged (19 MB); with the
//     default history the same row falls back to the copy (45.6 -> 35.0,
//     32.0 -> 33.3 ms: the spread between rows at this load). Not
//     measured: the 85 MB file (10,000 groups) of the real node process
//     above, where the copy and its fsync were 70-120 ms
//     of system time. There was no kill test for mirror installs (only
//     syncd/snapshot's, for the head's in-place update): spare_test.go's
//     TestMirrorKillDuringSpareInstall kills a node process at random
//     moments of 40 delta polls and checks the live file is a head's
//     snapshot that the C reader verifies and the next poll installs
//     the head's file (about half of those through the spare).
//   - Reverse deltas in the node's history (Dec 3, syncd/snapshot/
//     reverse.go), so that the spare is used with the default history:
//     a delta install (snapshot.Install with Reverse) turns the live
//     file's history entry, its link <serial>.db, into <serial>.rdelta
//     (that snapshot's size and SHA-256, the serial and SHA-256 of the
//     one installed, and the old bytes of the pages the delta writes,
//     plus those a change of size moves; a SHA-256 of the whole file at
//     its end). It is written, fsynced, renamed and the directory
//     fsynced before the candidate is renamed over the live file; the
//     link is removed once the new live file's own entry is linked. So
//     the previous live file keeps only .spare (and .prev, moved at the
//     next take) and the next delta rewrites it. Older entries stay
//     reverse deltas against their successor: a chain that ends at a
//     whole file (the live link, or an entry kept whole: a full
//     download's predecessor, a rollback, entries written before this).
//     A crash leaves the link (both kept: the link is listed and the
//     reverse delta dropped at the next install) or a complete reverse
//     delta whose base is kept; TestMirrorKillDuringSpareInstall now
//     runs with the default history too and rebuilds every entry after
//     each of 40 kills. Readers (snapshot.HistoryFile, EachHistory:
//     `syncd history`, `diff`, `rollback`) rebuild an entry in a temp
//     file beside the history (a copy of the base, then each step
//     applied and hashed); a damaged entry is reported naming it, and
//     the entries that need it name it too, the others listed as
//     before (TestHistoryOnMirrorReverseDeltas: the node's history, diff
//     and rollback print what the head's whole files print). The node
//     applies history_keep and history_max_mb now (it ignored both and
//     always kept 10 within 256 MB), and history_keep = 0 means none
//     (it meant the default, on a head too). The head's history is
//     unchanged (whole files: its in-place update needs no spare).
//     Cost of the history at 100,000 users (85 MB): about 29 KB per
//     one-change entry (4 entries 116 KB), so 10 entries about 0.3 MB
//     beside the live file's link; before, each kept entry was an 85 MB
//     file and history_max_mb 256 kept 3 of them (4 entries with the
//     live one). Measured Dec 3 (flock'd, load 1.2-2.6, main and rdelta
//     built side by side, alternating, two to four rounds each):
//       . the node daemon's poll (`syncd run`, the packaged unit; 85 MB
//         from scim-testserver -generate 100000,10000, interval 5 s; CPU
//         of the poll from /proc/<pid>/task/*/schedstat, peak RSS by
//         clear_refs before the head's change): a one-disable delta
//         through the spare 19-44 ms (median 28; 8 polls) against the
//         copy on main 43-84 ms (median 52; 10 polls); the first delta
//         after a full download (no spare yet) 57-63 ms against 51-71.
//         Peak RSS 34-38 MB in both (33-38 MB before the poll: the
//         daemon's heap after the first, full install; the poll adds
//         1-2 MB);
//       . the real node process (snapwrite bench's last table, `syncd
//         mirror --once`, /usr/bin/time's 10 ms steps; four rounds):
//         deltas through the spare 60-90 ms of CPU (one of 12 at 120),
//         20-60 of it system, against 80-160 (40-120 system) on main;
//         the first delta (the copy in both) 90-200 against 80-130
//         (nothing in it differs but the reverse delta's few pages and
//         two small fsyncs: the spread of the load); nothing new 40-50 ms in
//         both (the process's start); peak RSS 29-31 MB in both;
//       . TestBenchDeltaInstall (one group, 40 MB), default history: the
//         "spare when usable" row's poll 18.2 / 15.2 ms (spare used)
//         against main's 34.9 / 28.0 (the copy); whole process 51 / 44
//         against 68 / 59 ms; with MIRROR_BENCH_HISTORY=0 both use the
//         spare (22.7 / 15.3 against 19.3 / 15.2). Peak RSS 19 MB in all.
//     The snapwrite bench now runs TestBenchDeltaInstall with the
//     default history and with none, spaces the real node's polls 6 s
//     apart (the spare's grace; a daemon polls every 5 s, a head
//     commits at most every poll_interval), and shows which went
//     through the spare and the node's history size.
//     Reading them (the same node, after those four deltas): `syncd
//     history` 5 entries (4 reverse deltas, rebuilt newest first in one
//     temp file: one copy of the base, one SHA-256 of 85 MB per entry)
//     6.1 s of CPU, 225 MB peak, against main's 4 whole entries 5.0 s,
//     221 MB: about the same per entry, the load of each snapshot's
//     contents dominates; `syncd diff <oldest> live` through a chain of
//     four 2.3 s, 190 MB against 2.2 s, 197 MB. A node daemon polls every
//     5 s +- 1 s: two delta installs less than 5 s apart (a head
//     committing faster than that) take the copy, not the spare.
//   - The node's daemon as a make bench figure (Dec 3, brief "nodedaemon"):
//     tests/bench/snapwrite_bench.sh now runs, in the same run, on the
//     same head and publish directory as the `mirror --once` rows, the
//     syncd binary's `syncd run` with a [mirror] table (what
//     packaging/scimbridge-syncd.service runs on a node: Daemon above),
//     interval "1s" and jitter "0s" in its config (the supported options:
//     default 5s +- 1s, at least 100ms; no test-only switch). A watcher in
//     the script reads /proc/PID each time the node's status file shows a
//     new poll (every poll rewrites it): utime+stime of stat (10 ms
//     ticks), the sum of task/*/schedstat (ns), VmRSS, VmHWM, RssAnon,
//     RssFile, then resets VmHWM (clear_refs 5). A poll's CPU is its line
//     against the previous one, so it includes the idle second before it
//     (the "nothing new" row: median 2-3 ms); its peak RSS is the peak
//     since the previous poll ended, so a delta's excludes the first whole
//     fetch (80 MB). The rows say whether each delta meets 50 ms / 40 MB.
//     spare= is read from each side's "mirror: installed snapshot" line.
//     What it showed first (main's code, flock'd, load 3.2): deltas
//     through the spare 13-16 ms of CPU, 36-37 MB peak (growth 0.5-0.9
//     MB); the first delta after the full download 60.7 ms (the copy of
//     the 85 MB file: no spare yet), over the target. The daemon's RSS is
//     35-37 MB between polls: 11-13 MB anonymous (its heap) and 23-24 MB
//     of file pages, the syncd binary's own (39 MB, everything linked in;
//     its text and rodata pages stay mapped after the first, whole install
//     touched them; a `mirror --once` process that finds nothing new peaks
//     at 26 MB for the same reason).
//   - So the node keeps a spare after a full download too (spareCopy,
//     spare.go): a copy of the live file just installed, made in the poll
//     that wrote the whole file, synced before its sidecar names it
//     (applyProven trusts the pages a delta does not write to be the live
//     file's), marked copy: it never was at the path, so no reader has it
//     and the grace does not apply. Same identity checks as the other
//     spare; the live file must keep its identity during the copy. The
//     first delta after a full download then costs its pages. Old (main,
//     eb22b29) and new built side by side, the bench's node section
//     alternated old, new, old, new (flock'd; load at the daemon's start
//     2.2, 2.5, 5.1, 6.5): that first delta, daemon poll 49.4, 45.0 ms
//     (the copy) -> 16.6, 18.9 ms (the spare), `mirror --once` process
//     60, 70 -> 30, 40 ms; the later deltas unchanged (13-29 ms old,
//     13-19 new, all through the spare); peak RSS unchanged (34-37 MB).
//     Cost: the copy and its fsync in the full download's poll, not
//     visible in the spread of that poll (old 730, 658 ms, new 729, 934
//     at load 6.5), and the spare's disk (85 MB) from the first install
//     instead of from the first delta (a node with deltas holds it
//     anyway).
//     TestMirrorDeltaThroughSpare now asserts the copy after a full
//     download, and that it is used at once under a grace of an hour.
//   - Profile of the daemon's delta poll (perf record -g -p on the
//     daemon after its first install, 6 deltas at 100,000 users, 19 ms
//     each): the download 5.8 ms (applying and proving the delta with the
//     page hashes 1.5 (PageRoot over 21,000 hashes), reading them 0.8,
//     writing them back and fsync 0.9, the spare's pages and rename 0.5,
//     the install's reverse delta, links and fsyncs); the C reader's
//     whole index check in the install (cache.Open: pread of the index,
//     ~4 ms, in _copy_to_iter); Go's runtime (sysmon 1.6, GC 1.5, the
//     scavenger 0.5); manifests and signature 0.4; the status file 0.5.
//     Nothing left to cut that is not a check or an fsync: the C reader's
//     check stays (verification), the fsyncs stay (durability); keeping
//     the page hashes in memory would save under 1 ms. `make bench`
//     (tests/bench/run snapwrite, flock'd) at 864e9ae, load 1.6 at the
//     daemon's start: daemon deltas 14.0, 18.0, 38.7, 51.7 ms (the last
//     over 50 ms, while the `mirror --once` process that found nothing new
//     took 40 ms against its usual 0-10: the machine), all through the
//     spare, peak 37.3-37.8 MB; at f2d9549 (the final code), load 1.1:
//     16.5, 13.9, 23.5, 16.8 ms, peak 34.8-35.9 MB, all through the spare,
//     all four within both targets; `mirror --once` 30 ms and 29-30 MB
//     for each; no-op daemon polls median 2.0 ms (largest 4.4).
