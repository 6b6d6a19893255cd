// Package publish is the head's side of a cluster: after each committed
// snapshot (with its Slurm associations read back) the head publishes it
// for its nodes (syncd/mirror), and re-signs the manifest on quiet polls.
//
// Decisions:
//
//   - Plain files, existing engines. The publish directory holds only
//     manifest.json and content-addressed snapshot files, so any static web
//     server, an S3 bucket or a shared file system can carry it; `syncd
//     serve` exists for clusters without one. There is no protocol of our
//     own to secure: integrity comes from the signature, not the channel.
//   - One mutable file. Snapshot files are named by the SHA-256 of the
//     snapshot and never change; only manifest.json is replaced (temp file,
//     fsync, rename). A snapshot file is written and synced before the
//     manifest naming it, and kept for `keep` more publishes, so a node
//     that read the previous manifest still finds its file.
//   - The signature covers the manifest's exact bytes. manifest.json
//     carries the payload as base64 next to an ed25519 signature over a
//     context string plus those bytes; a node parses nothing from the
//     payload before it verifies. No canonical JSON is needed.
//   - Replay protection is the serial (the snapshot's own meta serial): a
//     node refuses a lower serial than its live snapshot's, and a different
//     snapshot under the same serial. For the same snapshot, source_contact
//     never goes backwards. A manifest carries no expiry: staleness is the
//     gates' decision (now - mtime), and the node sets its live file's
//     mtime to source_contact, so a head that lost the source, or a node
//     that lost the head, both show as stale.
//   - Keys are PEM files that openssl reads and writes (PKCS#8 private,
//     PKIX public), so a site can make them without syncd.
//   - Compression: zstd (klauspost/compress) when it saves at least 10%
//     ("auto"). The manifest has both the transferred file's hash and
//     size (checked before unpacking) and the snapshot's (checked after
//     unpacking, which is bounded to the announced size).
//   - page_root (deltas.go, PageRoot): the SHA-256 over the snapshot's
//     page hashes, signed with the rest. A node that applies a delta
//     checks the result page by page with the page hashes it keeps of its
//     live file (syncd/mirror/pages.go), instead of hashing the whole new
//     file: a one-change install at 100,000 users no longer reads 80 MB.
//     Older nodes ignore the field; nodes reading a manifest without it
//     check the whole file as before.
//   - The path from a commit to the signed manifest (issue 18). The full
//     object is compressed at zstd's fastest level (0.81 s of CPU for an
//     83 MB snapshot of 100,000 users against 1.36 s, 4% larger), beside
//     the page hashes and deltas rather than after them. Not done:
//     signing a first manifest that names the uncompressed copy and
//     re-signing it once the .zst is ready. It would take the compression
//     off the path, but a node that began fetching the .db could find it
//     pruned under it, and the bytes a joining node fetches would be
//     three times larger for that window; with the manifest still naming
//     only verified, complete files the saving is the compression's
//     ~0.8 s of CPU at 100,000 users.
//     Since then the object is a series of zstd frames (256 KiB ranges
//     since issue 18's fifth session) and a commit written in place
//     recompresses only the ranges it changed,
//     copying the other frames from the last object this publisher
//     wrote (frames.go).
//   - Deltas are written as they are read (issue 18, push8, 2026-12-02):
//     the changed pages go straight into the zstd encoder, in runs of up
//     to 64 consecutive pages per read, instead of into one buffer of the
//     whole raw delta first. At the end of a 100,000-user bulk load the
//     deltas from its early snapshots hold most of an 80 MB file; growing
//     that buffer (new memory cleared and faulted in at each doubling)
//     was 3.1 s of the receiver's 102 s of CPU (pprof of the receiver
//     bench). BenchmarkWriteDelta (every page of a 40 MB file of
//     snapshot-like pages; old and new alternately, load 10): 403-441 ms
//     -> 228-279 ms of CPU, 9.5-10k -> 3.4k page faults, 131 -> 47 MB
//     allocated per delta. A delta stops as soon as its compressed bytes
//     pass its bound: half the uncompressed file (as before, checked on
//     the finished delta) or, once the compression running beside it
//     has finished, half the compressed object, the bound Publish drops
//     deltas at; one stopped there still counts toward deltas, as the
//     dropped one did: the manifest keeps the deltas the same rule kept.
//     Publishing a growing directory (25,000, then 50,000, 75,000 and
//     100,000 users written whole, deltas = 4; an ad-hoc test, main's
//     and this build's alternately, two rounds, load 12-14): CPU per
//     Publish 1.05-1.18 s -> 0.59-0.77 s at 50,000-75,000 and 1.89-1.93 s
//     -> 0.81-0.95 s at 100,000 users; no delta kept by either (each one
//     was over half the object), objects the same size within 0.01%.
//   - One verification per commit. The writer verifies each snapshot
//     through the C reader before it renames it into place; the publisher
//     then enumerated all users and groups of its copy again (VerifyFile).
//     When the live file is the very inode this process's writer verified
//     and installed (snapshot.VerifiedHere: device, inode and size; a
//     published file is never changed in place) the copy's meta is
//     checked through the C reader instead (VerifyMeta). Any other file
//     (`syncd publish` on its own, another process's commit) is verified
//     whole as before.
//   - That verified file is not copied either (issue 18): the publisher
//     hard-links it into Dir under its temp name, checks the link names
//     the inode it opened (a commit may rename another file over the
//     live path in between), hashes it through that descriptor and
//     compresses and diffs it as it did the copy. Snapshot writers never
//     change a file once renamed into place, so the link holds the
//     verified bytes; copying and fsyncing 80 MB cost 0.5-1.5 s of wall
//     time per commit at 100,000 users. Served uncompressed, the object
//     still gets an inode of its own (the live file's mtime moves with
//     every contact with the source); across file systems, or for any
//     file not verified here, the copy stays.
//   - Only the changed pages are hashed again (pages.go, issue 18): when
//     the live file is the one this process's in-place writer installed
//     over the file the last object was made from, the writer's page
//     comparison names the pages that differ; the page hashes are the
//     last object's with those hashed again, and the frames whose range
//     holds none are copied from the last object by position, without
//     reading or hashing the range. The file's SHA-256 still reads every
//     byte. Anything else hashes everything as before.
//   - One publisher at a time per directory, and no temp file left
//     behind (lock.go). Publish takes a flock on the publish directory
//     itself (no lock file among the served ones: S3 and web servers
//     see only what a publisher writes), so the daemon and a `syncd sync
//     --once` of the same head do not write there together. Holding it,
//     Publish removes the temp files a killed publisher left (the live
//     snapshot's copy .snapshot-*.tmp and its .zst, the manifest's and
//     deltas' .NAME.new-* temps, owned by this user), as the snapshot
//     writers do beside the live file (snapshot.RemoveStaleTemps). A
//     publisher that cannot take the lock in two minutes, or before its
//     context ends, fails with an error naming the directory; the last
//     manifest stays.
package publish
