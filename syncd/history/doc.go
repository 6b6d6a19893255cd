// Package history is what an admin does with the kept snapshots
// (history_keep, history_max_mb): list them with what each changed,
// compare two, roll back to one and pin it, resume.
//
// Decisions:
//
//   - A rollback re-commits a kept snapshot's contents under a new serial
//     (snapshot.Write, so the nodes see a newer serial and never refuse it
//     as a replay), only after the kept file still verifies through the C
//     reader; a corrupt one is refused and the live snapshot stays.
//   - It pins the live snapshot (pipeline.Pin): syncd run and sync --once
//     keep reading the source and say what they would change, but commit
//     nothing until Resume. So the next poll never silently undoes a
//     rollback. The pin lives in syncd/pipeline, which honours it.
//   - The rollback holds the cache lock of every other writer
//     (pipeline.LockCache), and carries the kept snapshot's explain record
//     over under the new serial, so `syncd explain` matches what is live.
//   - Package main keeps the flags, the parsing of serials ("live" or a
//     number, a usage error otherwise) and the wording on standard output
//     (issue 18, item 6).
package history
