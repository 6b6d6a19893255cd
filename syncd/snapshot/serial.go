package snapshot

// Serials.
//
// A snapshot's serial (meta serial) tells snapshots apart and orders
// them: `syncd status` shows it, the history is keyed by it, and a mirror
// node refuses a manifest whose serial is lower than the one it follows
// (a replay). The writer assigns
//
//	serial = max(live serial + 1, largest kept serial + 1[, commit time])
//
// where "commit time" (the commit's unix time in seconds, the snapshot's
// created_at) counts only on a head that publishes ([publish], which sets
// ClockSerials). Why:
//
//   - Monotonic across a head rebuilt from scratch. A head whose cache
//     and history are gone would start at 1 again, and every node would
//     refuse it as a replay until someone removed the node's floor by
//     hand. With the clock in the rule, the rebuilt head's first serial is
//     "now", above every serial it published before (those were at most
//     their own commit times, plus one per commit made within the same
//     second, which a head polling every few seconds never piles up).
//   - Comparable across two heads with the same key. Two heads committing
//     the same source get serials close to their commit times, so "the
//     highest serial" is "the latest commit" to a node that follows both.
//   - Still an integer, still strictly growing: "live + 1" keeps two
//     commits within one second (or a clock set back) apart, and
//     "largest kept + 1" keeps `syncd rollback` (which re-commits an old
//     snapshot under a NEW serial) above everything in the history.
//   - Deterministic for unchanged data. The serial is one row of the
//     meta table, next to created_at, which changes on every commit
//     anyway: a serial of ten digits instead of one changes the same one
//     meta page and no other (TestSerialTouchesOnlyMeta), so page deltas
//     stay as small as before. A head only commits when the data changed
//     (or --force); a quiet poll re-signs the manifest, it writes no
//     snapshot.
//   - Not on a head without [publish]: nothing outside the machine reads
//     its serials, and 1, 2, 3 is what an admin expects to read there.
//     Adding [publish] later only makes serials jump forward, never back.
//
// A clock set far into the future and then corrected leaves serials ahead
// of the clock; they keep growing by one per commit (live + 1), so nothing
// breaks; they just stay large.
//
// What a node makes of serials and times (replays, a head that failed
// over) is decided in syncd/mirror.

import "time"

// assignSerial is the serial of a snapshot committed at created next to
// the live snapshot at path.
func assignSerial(path string, created time.Time) int64 {
	s := max(nextSerial(path), MaxHistorySerial(path)+1)
	if ClockSerials {
		s = max(s, created.Unix())
	}
	return s
}
