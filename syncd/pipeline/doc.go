// Package pipeline is syncd's one path from an identity source to a
// committed snapshot: read -> validate -> policy -> write -> verify
// (Syncer.Once), and the polling loop that drives it (Daemon). The
// push receiver (syncd receive) drives the same Syncer; package main
// only wires commands, the config and the publishing head to it.
//
// Decisions:
//
//   - One Syncer for poll and push: a directory from a SCIM server and
//     one from the receiver's store pass the same validation, policy,
//     writer and verification, so neither path can publish what the
//     other would refuse.
//   - Steps after a commit (the Slurm reconciler) register in
//     AfterCommit from package main, so this package does not import
//     what it does not need; publishing after a poll is the Daemon's
//     AfterPoll, set by main to publish.AfterPoll (syncd/publish/head.go).
//   - A rollback's pin (pin.go) is honoured here: a pinned snapshot is
//     never replaced by a poll, and `syncd resume` removes the pin.
//   - Incremental polls (issue 18). The Daemon keeps the source's
//     directory as the last read left it and hands scim.Client.Update's
//     patched copy to Once (Opts.Dir); the receiver does the same with
//     receiver.Source.Update. The rest of the pipeline is the full read's:
//     one validation, one policy, one writer (snapshot.Update, given the
//     live contents and the next), one verification.
//   - Validation is incremental and exact (issue 18 item 2; decisions in
//     syncd/validate/doc.go): LiveKeep holds a validate.Incremental, which
//     checks again only the records that changed and settles again the
//     records sharing a value (name, uid, home, private gid) with them or
//     with anyone (their keeper follows the live snapshot); its result is
//     validate.Directory's. A whole validation (other options, a repeated
//     SCIM id, the source starting or stopping to send active) is logged
//     once with its reason. A full read that it validated incrementally
//     (the hourly reconcile) is also validated whole: a difference is
//     logged at error level, the whole result used, the state made again.
//     The removal guard is not validation's: it reads the diff
//     (commit.Policy.Hold), which names only what changed. sync --once
//     (no LiveKeep) validates whole, as before.
//   - What a poll that sees one change costs at 100,000 users (issue 18,
//     measured with BenchmarkChangeToManifest and pprof). The daemon keeps
//     the live snapshot's contents (live.go: used while the file stores
//     their digest, so any other writer's file is read back), instead of
//     loading 100,000 users from SQLite on every poll. The explain record
//     (the whole directory's verdicts as gzipped JSON, the largest single
//     cost of a one-change poll at 10,000 users) is written in the
//     background while the publisher works, and awaited before the next
//     poll. The removal guard's membership check compares only the groups
//     the diff names. Validation stays whole, with accepted SSH key lines
//     remembered between validations (validate/keys.go).
//   - Issue 18, second session: the writer patches the NSS index bucket
//     by bucket (snapshot/patch.go) instead of laying it out again, long
//     member lists are stored as rows and index pieces (schema version 3)
//     so a new, deleted or renamed member of slurm-users costs a few
//     pages, the publisher does not enumerate again a file this process
//     verified (publish/doc.go), and the poll's context reaches the
//     in-place writer (SIGTERM stops it between steps). Still whole on a
//     one-change poll: validation, commit.Compute's diff and the
//     writer's own diff (each walks both directories by name), and the
//     explain record (the whole directory's verdicts, in the background).
//   - Issue 18, third session (measured with pprof over
//     BenchmarkChangeToManifest at 100,000 users, CPU per change): the
//     explain record (3.4 s, in the background) is written in gzip pieces
//     and only the piece of a change is encoded again
//     (explain/encode.go); the full object's zstd (1 s) is 1 MiB frames,
//     the unchanged ones copied from the last object (publish/frames.go);
//     commit.Compute (0.9 s) skips equal records before rendering fields;
//     the digest the writer stores follows from the change set
//     (snapshot.rowDiff.nextHash, 0.35 s); validation sizes its maps
//     and dedupes member lists by sorting. Validation is still whole (its
//     live index too: every commit makes new live contents, so a memo of
//     it never hit), and so are the writer's row diff and its read of the
//     live index blob, and the explain record's Build: the next steps.
//   - Issue 18, fourth session (after validation): commit.Compute and the
//     writer's row diff read only the records snapshot.TouchedOf finds
//     (one merge of the live and next lists in uid and gid order; no map
//     of every name), the writer reads and writes the NSS index as file
//     pages (only the pages that differ), the publisher hard-links the
//     file this process verified instead of copying and fsyncing it, and
//     the explain record finds its id order from the last one. Numbers in
//     the README (Benchmarks, "The head: one change at the source to a
//     signed manifest").
//   - Issue 18, fifth session (pprof over BenchmarkChangeToManifest at
//     100,000 users, CPU per change 2.0-2.5 s before): the explain record
//     is patched from the last one (explain.Builder, kept in Background
//     between polls; 0.73 s -> about 0.1 s) and encoded once for the
//     record and its history copy; the in-place writer keeps the NSS
//     index blob it installed (snapshot/liveindex.go) and gathers gids in
//     one pass; the publisher hashes only the pages the writer changed
//     (publish/pages.go). The Background's Builder holds the last record
//     (about 25 MB at 100,000 users) between polls, instead of building
//     100,000 records anew each time.
//   - A full read after an incremental deletion (issue 18, checked):
//     BenchmarkChangeToManifest once reported "unchanged" for a full read
//     after its delete-user case. The benchmark's own change was a no-op
//     (it enabled a user its enable case had enabled; the server moved
//     lastModified only), reproduced at -short -benchtime 2x (serial 26,
//     its second full-read change). No state kept between polls was out
//     of step: TestFullReadAfterDeletionSeesTheChange and the deletion /
//     full-read rounds of TestIncrementalEqualsFullRead check both orders.
//   - The soft memory limit follows what the daemon holds (memlimit.go):
//     after each poll 2.5 times the live heap, never below syncd's
//     200 MB default. With the fixed 200 MB the held directory (about
//     160 MB at 100,000 users) plus a poll's second copy left the
//     collector running back to back: 72.7 s of CPU for one change.
//     GOMEMLIMIT, when set, is the admin's and is left alone.
//     Checked again in issue 18's fifth session (BenchmarkChangeToManifest
//     at 100,000 users, which now reports gc-cycles/op, heap-live-MB and
//     limit-MB): after a one-change poll the head holds 290-420 MB (the
//     source's directory, the live contents, validation's state, the
//     explain Builder's record, the kept NSS index blob) under a limit of
//     785-966 MB, and the collector runs about once every two changes
//     (7-24% of a change's CPU, about 1 s). The limit is not what starts
//     those cycles: GOGC's default starts one at twice the held heap,
//     below 2.5 times; they follow the allocation of a change (about
//     100 MB: the SCIM client's patched copy of the directory, 22 MB;
//     validation's new published list, 31 MB; the writer, 17 MB, down
//     from 127 MB; the explain file's buffer and the publisher's frames),
//     not a heap sitting at the limit. The limit stays as it is; the
//     directory-sized copies left are the SCIM client's and validation's.
//     A directory that grew since the last fit is the exception
//     (2026-12-02, tail12): the receiver's 100,000-user load commits
//     every max_delay while it grows (34,000, then 65-75,000 users), and
//     the burst that outgrew the NSS index (a whole write with room for
//     growth, its kept blob about 110 MB at 100,000 users) built twice
//     the directory under a limit fitted to half of it: gctrace showed
//     the live heap at the goal (254 MB live, 252-256 MB goal) and 22-23
//     collections in that burst's 7 s. FitGrowth (memlimit.go) scales
//     the limit, less its slack, by the users' growth when the attempt
//     starts; FitMemoryLimit after it fits it again. Receiver bench, old
//     (main 42e2eea) then new in one run, load 5-5.7: that burst 23 -> 3
//     collections, its write 7.4 -> 3.5 s, its CPU 13.3 -> 7.9 s (the
//     POSTs still arriving included); the first burst and the in-place
//     ones alike (2-4 collections).
//   - The reconcile proves the incremental state: a scheduled full read
//     first applies pending changes, then (Opts.Reconcile) reports every
//     difference between its result and the live snapshot at error level
//     and in scimbridge_reconcile_differences_total, and commits the fix.
//     A change made at the source in the seconds between the two reads
//     counts too: one count is not an alarm, a steady rate is a bug.
//   - While a rollback pins the snapshot each poll validates and diffs
//     the held directory against it and logs what would change once per
//     distinct diff (a digest of it); `syncd resume` (the pin gone) makes
//     the next poll a full read, not the next change or the hourly read.
//   - The full path's order (issue 18, full sync of 100,000 users; the
//     stages' peaks measured with a GC and VmHWM after each): the live
//     snapshot is loaded after the source is read, not before (the
//     read's transient peak and the live contents no longer add); sync
//     --once, which reads and validates once, drops what the source
//     (source.Forgetter: the change check's ids and times) and the
//     validator (the SSH key memo) keep for a next poll before writing;
//     after the after-commit hooks it reads the meta table alone
//     (snapshot.ReadMeta), where it loaded the whole file back (2.2 s of
//     CPU, 176 MB of garbage) for a serial and counts. The daemon's
//     order is unchanged but for the live load.
//   - Issue 18, full path (sixth session; `syncd sync --once` of 100,000
//     users into an empty cache under SYNCD_PPROF, perf and a GC with the
//     live heap after each stage): the collector was a third of the
//     process's CPU (perf: runtime.tryDeferToSpanScan alone 25%), because
//     the write ran with the directory as fetched still live (75 MB) only
//     for the explain record written after it, and the record's encoding
//     made 240 MB of garbage. sync --once (no Opts.Records) now builds
//     and encodes the record before the write (prepareRecord; all of it
//     but the first gzip member, which holds the serial and is finished
//     after the write, explain.Rest), and drops the directory: the write
//     runs with the validated contents and the 15 MB compressed record.
//     The record is byte for byte what it was (TestEncodeRestThenFinish
//     against json.Encoder); its written_at is when it is finished. The
//     daemon keeps its order (the record in the background, patched by
//     the Builder) since it holds the directory between polls anyway.
//     commit.Compute against no snapshot copies the lists once (no merge,
//     no maps of every name).
//   - Issue 18, full path (Dec 2, `syncd sync --once` of 100,000 users
//     / 10,000 groups from scim-testserver, the old and the new binary
//     side by side, twice, load 5.5-7.6): CPU into an empty cache
//     20.7 and 22.1 s -> 15.7 and 15.5 s, peak RSS 274 and 269 MB ->
//     255 and 257 MB, 47-49 -> 34-36 collections (GC 7-8% -> 7%); the
//     unchanged full read 11.7 s -> 8.3-8.9 s, 261-266 -> 240-243 MB,
//     GC 17-18% -> 14%. From: the whole write's 8 MiB page cache
//     (snapshot, buildCacheKiB: 365,000 page syscalls -> 35,000), plain
//     ed25519 key lines read without the parser (validate/keys.go), the
//     explain record held at its size through the write (explain,
//     EncodeRest). Still over 200 MB: the peak is before the write (the
//     directory as fetched, the validated contents and the explain
//     record's build, under the 200 MB soft limit).
//   - Issue 18, where the full sync's VmHWM is set (Dec 2, SYNCD_PPROF
//     stages of `syncd sync --once`, 100,000 users / 10,000 groups, a new
//     stage "recorded" after prepareRecord): read 183-185 MB, validated
//     197-200, recorded 228-235, rows 244, index-planned 241-244, the
//     verification below. The RSS sits at the 200 MB soft limit (plus
//     26 MB of mapped binary and SQLite's own memory) from the record's
//     build to the NSS index: the live heap after a collection reaches
//     173 MB while the record is built beside the directory, 81-114 MB
//     in the write. Measured and not kept: the diff's sorted copy of
//     every user (12 MB, commit.allAdded) dropped before the record, and
//     the heap's pages returned after it (debug.FreeOSMemory): 237/237
//     -> 238/237 and 238/238 -> 237/235 MB, old and new back to back; a
//     soft limit of 160 MiB: 238/238 -> 227/228 MB for 22 -> 41-45
//     collections and 1-1.5 s more CPU. Below 200 MB needs the live
//     heap lower at the record's build and through the write, not one
//     holder fewer.
//   - Issue 18, the full sync under 200 MB (Dec 2, peak10; `syncd sync
//     --once` of 100,000 users / 10,000 groups into an empty cache,
//     SYNCD_PPROF stages and gctrace): the live heap after a collection
//     peaked at 126-145 MB while the explain record was built (its
//     Record of every user, 22 MB, and its 18 MB of compressed bytes
//     beside the directory and the contents) and while the NSS index was
//     laid out (its 200,000 user records, 29 MB). Now the record is
//     encoded as each user and group is made (explain.EncodeRestOf) into
//     an unnamed O_TMPFILE file beside the cache that Finish reads back,
//     and the index makes each user record as it writes it
//     (snapshot.userRef): live after a collection at "recorded" 81 -> 63
//     MB, at "index-planned" 121 -> 86-91 MB, the highest during the
//     record 126 -> 112 MB. With that, sync --once into an empty cache
//     lowers the soft limit from 200 to 150 MiB once the directory is
//     read (WriteMemoryLimit; never below 2.5 times the heap live then,
//     so a larger directory keeps the limit it had), and the C heap is
//     trimmed (malloc_trim) with the Go heap's pages before the
//     verification, whose mapping of the file (64 MB beside the binary's
//     24) then set the peak (RSS sampled every 50 ms: 208 MB there, the
//     heap 115 MB of it); so the diff of an empty cache (every record
//     sorted by name, 12 MB), which nothing reads after the report, is
//     let go before the write (Outcome.Diff is nil then; it was made
//     again at the return until 2026-12-02, for no reader): the
//     verification 208 -> 184 MB. Measured
//     back to back, old binary then new, twice (/usr/bin/time max RSS,
//     CPU, gctrace collections; load 7-10, other helpers' work):
//     238/244 -> 187/196 MB, 12.7/13.7 -> 12.9/12.3 s of CPU, 20/20 ->
//     25/23 collections. The same snapshot (every row, the NSS index
//     blob) and the same explain record but for created_at, the
//     source's URL and written_at. Dropped: 140 MiB (198 MB against
//     150's 197 when the verification set the peak, 3 more
//     collections). Left: the read's own peak (181-195 MB while pages
//     are decoded, under the 200 MiB limit; source/scim), and sync
//     --once into a live cache, which holds the live contents too and
//     keeps 200 MiB (not measured here).
//   - Issue 18, the full sync's wall time (Dec 2, wall11): after the read
//     the server is idle, yet sync --once encoded the explain record
//     (1.5-1.9 s of CPU) and then wrote the snapshot, one after the
//     other. Now prepareRecord encodes it on its own goroutine while the
//     snapshot is written, joined (a deferred join in attempt, whatever
//     the write did) before Once finishes or closes it. The encoder reads
//     the directory, the rejections and the published names and ids of
//     the contents, which the write does not change (associations are
//     carried before it starts; -race clean); the directory is held
//     through the first seconds of the write. Measured back to back, old
//     (main 13da291) and new binaries alternating against one
//     scim-testserver, 8 runs each (load 1.7-2.5, this helper alone):
//     wall after the read (wall minus fetch_seconds, the read varies
//     2.5-7.7 s) 5.98-7.44, mean 6.38 s -> 5.23-6.65, mean 5.84 s; the
//     write alone 3.5-4.4 -> 3.6-4.9 s (it shares the two cores with the
//     encoder); CPU 9.8-11.9, mean 10.7 s -> 10.0-12.6, mean 11.2 s
//     (two goroutines on 2 shared cores, not the collector: 24-27
//     collections in both, gctrace CPU 1.1-1.65 -> 0.8-1.6 s); VmHWM
//     183-188 -> 190-191 MB (under the 150 MiB soft limit, under 200 MB
//     in every run).
//   - Issue 18, the nothing-changed full sync under 200 MB (2026-12-02,
//     recmem12; `syncd sync --once` into an existing cache of 100,000
//     users / 10,000 groups from scim-testserver, SYNCD_PPROF stages and
//     gctrace). Where the peak was: VmHWM 180-184 MB after the read,
//     230-235 MB after validation; the heap live after a collection at
//     "validated" 129 MB: the live contents as snapshot.Load made them
//     (47.5 MB, 25 of it the SQLite driver's strings), the directory as
//     fetched (43), validation's result (21); during validation 151-156
//     MB live under a heap goal of 161-165 MB (the 200 MiB limit), the
//     pages then held (RssAnon 200-205 MB, 24 MB of mapped binary).
//     Validation reads of the live snapshot only who holds each name,
//     uid, home and gid (validate.LiveIDs), and an unchanged directory
//     needs no diff: sync --once into a live cache (not --force) now
//     makes validation's live index from the file's rows
//     (snapshot.EachID, no Contents), validates, then compares the
//     validated contents with the file row by row (snapshot.Matches:
//     every column Load reads, keys, members and quotas in Load's order,
//     the rows and not the stored digest, so a file edited behind
//     syncd's back still differs). Only when they differ is the file
//     loaded whole and the diff computed, as before (the reconcile's
//     report and fix unchanged). The write's soft limit (150 MiB,
//     lowerForWrite) is set after the read for this case too, and put
//     back before a whole load. Steps measured: the ids as a Contents
//     and the comparison, limit unchanged: live at "validated" 129 -> 89
//     MB but VmHWM 226-231 (the heap still grew to the 200 MiB limit);
//     with the 150 MiB limit: 185-188 MB, but 33-46 collections against
//     20 (122 MB live against a goal of 124 MB) and 1.2 s more CPU; the
//     ids as LiveIDs' maps (no 21 MB Contents), the limit set before
//     they are read: validation peaks at 107-128 MB live, 21-22
//     collections. Back to back, old (42e2eea, main when this began)
//     and new binaries alternating against one server, 6 runs each
//     (load 1.9-2.9; 3 more at load 7-9: 224-226 -> 179-192 MB): peak
//     RSS 222-227 -> 175-180 MB, CPU 4.50-5.35 (mean 4.96) -> 4.40-5.44
//     (mean 4.99) s, 15-18 -> 16-18 collections, wall after the read
//     1.23-1.51 (mean 1.37) -> 1.35-1.46 (mean 1.41) s (the ids and the
//     comparison 0.70 s against the load and diff's 0.58-0.81). make
//     bench's syncd script, old then new binary (load 2.1-2.4): 226 ->
//     178 MB, 4.70 -> 4.51 s CPU. Into an empty cache unchanged
//     (10.85/9.46 -> 10.94/9.56 s CPU, 190/189 -> 189/189 MB). The peak
//     is now the read's own (175-190 MB while pages are decoded, under
//     the 200 MiB limit; source/scim). Not changed: the daemon's hourly
//     reconcile, which keeps the live contents for its incremental polls
//     (LiveKeep) and so loads nothing; its memory is what it holds
//     between polls (above).
//   - Issue 18, the full sync's wall time by phase (Dec 3, fullsync;
//     `syncd sync --once` of 100,000 users / 10,000 groups from
//     scim-testserver into an empty cache, SYNCD_STAGES=FILE: the wall
//     and CPU time at each stage, no collection taken). Before (main
//     eb22b29, two runs, load 2.2-2.4; 6.8-7.1 s wall): the read
//     2.65-2.86 s (syncd 2.9-3.2 s of CPU with its start, the server
//     1.7-1.9 s: the two cores about 90% busy; on the server's first
//     listing the server takes 4.8-6.0 s of CPU and the read 4-5 s),
//     validation 0.44-0.57 (one core), the diff and the report
//     0.23-0.27 (one core), the rows beside the explain record's
//     encoding 2.08-2.35 (the encoding 1.5-1.7 of it, on the other
//     core), the NSS index 0.34-0.38, fsync 0.05, the verification
//     0.69-0.76 (one core), the record stored 0.04-0.1. Changed: the
//     record's gzip members are klauspost/compress's (explain/encode.go;
//     the encoding 1.5-1.7 -> 0.84-1.15 s beside the rows), its encoding
//     begins right after validation into an empty cache (beside the
//     report and the diff; nothing after validation changes what it
//     reads when there is no live snapshot: no removal guard, no
//     associations carried; a refused directory closes it in Once), the
//     diff of an empty cache sorts positions, not the 136-byte users
//     (commit.byName; 0.22 s of CPU), and the report (a line per
//     record) is written through one buffer, not 110,000 writes to
//     stdout. After (quiet moment, load 2.4; 5.78 s wall): read 2.34,
//     validation 0.40, diff and report 0.08, rows beside the encoding
//     1.71, index 0.28, fsync 0.07, verification 0.78, record 0.10.
//     Old (eb22b29) and new alternated under the bench lock against one
//     warm server, 5 runs each (load 1.6-3.0): wall 7.27-8.97 (median
//     7.79) -> 5.85-12.03 (median 6.89; the 12.03 with the read at 4.2
//     s: other helpers' load) s, CPU 8.51-10.28 (median 10.21) ->
//     7.41-10.28 (median 9.32) s, peak RSS 186-190 -> 189-192 MB, 25-27
//     -> 25-26 collections. The server's first listing (a fresh server
//     per run, 3 pairs, load 2.3-2.4): 9.70/8.16/11.19 ->
//     7.91/8.56/10.00 s. Nothing changed (unchanged path, not touched):
//     3.50-5.99 and 3.99-7.81 s, the same within the noise. An earlier
//     set at load 3.5-5 (other helpers building): 8.87-14.50 (mean 11.8)
//     -> 7.54-14.11 (mean 10.4) s, CPU mean 11.3 -> 10.0 s. `make
//     bench`'s syncd script on this version alone under the lock
//     (SYNCD_BENCH_CHANGES=2, load 2.05-2.07, 11:24 UTC): the server's
//     first listing 8.42 s wall, 8.22 s CPU, 189 MB; into an empty
//     cache 6.38 s, 7.96 s, 188 MB (25 collections, GC 2%); nothing
//     changed 3.95 s, 4.66 s, 184 MB; BenchmarkFullRead 4.75 s wall,
//     2.98 cpu-s, 184 MB (Dec 3 09:00, alone: 13.3 / 10.2 / 5.4 s).
//     Tried and dropped: the verification's enumerations (users, every
//     user's groups, groups) on a second C reader handle beside the
//     index lookups: its own mapping of the file doubled the pages both
//     touch, peak RSS 187 -> 212-214 MB, and its wall did not drop on
//     two shared cores (0.61-0.72 s against 0.69). syncd asking for gzip
//     itself and reading it with klauspost/compress (the transport's
//     compress/gzip was 0.48 s of the read's CPU): 6 runs each beside the
//     commit before it, peak RSS 185-188 -> 189-194 MB and no read or CPU
//     gain the noise let one see; reverted (its test of
//     max_response_bytes after gunzip, TestGzippedBodyLimits, kept).
//     Left: the rows (about 2 s of CPU: SQLite's inserts into the name
//     indexes in uid order, and a cgo bind per value) and the read
//     (json.Valid 0.45 s, the interner's map 0.47 s, the server's gzip).
//   - Errors that ask for an exit status (a refused commit: 3) are
//     ExitError; main turns them into the process's exit status.
package pipeline
