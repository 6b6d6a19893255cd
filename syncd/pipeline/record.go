package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/atomicfile"
	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/explain"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// logRejections logs each rejection once: when it first appears and when
// its detail changes (compared with the record of the previous read),
// then one summary line per read. sync --once prints them all in its
// report instead.
func (s *Syncer) logRejections(res *validate.Result, o Opts) {
	fresh, gone, first := explain.Fresh(explain.Path(s.cfg.CachePath), res)
	s.rejectionsChanged = len(fresh)+gone > 0 || first
	if o.Out == nil {
		for _, r := range fresh {
			s.log.WithFields(logrus.Fields{"kind": r.Kind, "id": r.ID, "name": r.Name, "reason": r.Reason,
				"detail": r.Detail, "option": r.Option}).Warn("syncd: rejected")
		}
	}
	records := rejectedRecords(res)
	values := len(res.Rejections) - records
	s.log.WithFields(logrus.Fields{"rejected_records": records, "rejected_values": values, "new": len(fresh),
		"no_longer": gone, "dropped_members": res.DroppedMembers, "not_in_posix_groups": res.Filtered}).
		Info("syncd: validation")
}

// writeRecord stores what this read decided beside the live snapshot,
// tagged with its serial, for `syncd explain` (never a fresh fetch).
// b, when not nil, patches the last record it built (explain.Builder).
func (s *Syncer) writeRecord(out *Outcome, b *explain.Builder) {
	if out != nil && out.rest != nil {
		rest := out.rest
		out.rest = nil
		defer rest.Close() // not written: the attempt failed after encoding it
		if out.Wrote {
			z, err := rest.Finish(out.Meta.Serial, time.Now().UTC().Truncate(time.Second))
			s.storeRecord(out, z, err)
			snapshot.MarkStage("record-stored")
			return
		}
	}
	if out == nil || out.Dir == nil || out.Valid == nil || out.Meta.Serial == 0 || out.Result == ResultPinned {
		return
	}
	if out.Result == commit.Unchanged && !s.rejectionsChanged {
		// Same snapshot, same verdicts: the record on disk says it all
		// (at 100,000 users rewriting it costs a second or two).
		if n, err := explain.ReadSerial(explain.Path(s.cfg.CachePath)); err == nil && n == out.Meta.Serial {
			return
		}
	}
	var rec *explain.Record
	if b != nil {
		rec = b.Build(out.Meta.Serial, s.src.Name(), out.Dir, out.Valid)
	} else {
		rec = explain.Build(out.Meta.Serial, s.src.Name(), out.Dir, out.Valid)
	}
	z, err := explain.Encode(rec)
	s.storeRecord(out, z, err)
}

// prepareRecord, for an attempt that writes its record before Once
// returns (no Opts.Records: sync --once), begins encoding the record on
// its own goroutine, which runs while the snapshot is written, and drops
// the directory as fetched from the outcome (the goroutine holds it until
// the record is encoded). The returned join waits for the encoding and
// puts the encoded record in out.rest; attempt calls it before it
// returns, whatever the write did, and Once finishes the record with the
// serial written (or closes it when the write failed). Nothing the
// encoder reads (the directory, out.Valid: its rejections and the
// published names and ids of res.Contents, associations carried before
// this) is changed by the write.
func (s *Syncer) prepareRecord(out *Outcome, o Opts) (join func()) {
	if o.Records != nil || o.DryRun || out.Dir == nil || out.Valid == nil {
		return func() {}
	}
	dir, res, spill := out.Dir, out.Valid, filepath.Dir(s.cfg.CachePath)
	out.Dir = nil
	var rest *explain.Rest
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		rest, err = explain.EncodeRestOf(s.src.Name(), dir, res, spill)
		fullStage(o, "encoded")
	}()
	return func() {
		<-done
		if err != nil {
			s.log.WithError(err).Warn("syncd: cannot encode the explain record")
			return
		}
		if !rest.Spilled() {
			s.log.Debug("syncd: no unnamed file beside the cache (O_TMPFILE): the explain record stayed in memory through the write")
		}
		out.rest = rest
	}
}

// storeRecord writes the encoded record z beside the live snapshot and
// its copy in the history.
func (s *Syncer) storeRecord(out *Outcome, z []byte, err error) {
	if err == nil {
		err = atomicfile.Write(explain.Path(s.cfg.CachePath), z, 0o600)
	}
	if err != nil {
		s.log.WithError(err).Warn("syncd: cannot write the explain record")
		return
	}
	// The history keeps each snapshot's record beside it (the same
	// bytes: encoded once).
	h := snapshot.HistoryPath(s.cfg.CachePath, out.Meta.Serial)
	if _, err := os.Stat(h); err == nil {
		atomicfile.Write(strings.TrimSuffix(h, ".db")+".explain", z, 0o600)
	}
}

// Background runs the explain record's write after Once returns. The
// record is the whole directory's verdicts (at 100,000 users a second or
// two of JSON and gzip, as much as the rest of a one-change poll), and
// nothing between the commit and the signed manifest needs it: the
// daemon writes it while the publisher works, and waits for it before
// the next poll (whose rejection log compares with it) and before it
// stops. `syncd explain` names the serial of the record it reads; for
// that second it is the previous snapshot's.
// It also keeps the last record built (explain.Builder): a poll that
// changed one record patches it instead of building 100,000 again.
type Background struct {
	wg    sync.WaitGroup
	build explain.Builder
}

// builder is b's record builder (nil for nil: built whole).
func (b *Background) builder() *explain.Builder {
	if b == nil {
		return nil
	}
	return &b.build
}

// run runs f in the background, or now when b is nil.
func (b *Background) run(f func()) {
	if b == nil {
		f()
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// Wait returns when every write begun has ended.
func (b *Background) Wait() {
	if b != nil {
		b.wg.Wait()
	}
}

// ResultPinned: a rollback pins the live snapshot; nothing is committed.
const ResultPinned = "pinned"

// rejectedRecords counts the rejections that left out a whole user or
// group (the others drop one value of a published record).
func rejectedRecords(res *validate.Result) int {
	n := 0
	for _, r := range res.Rejections {
		if r.Kind == validate.KindUser || r.Kind == validate.KindGroup {
			n++
		}
	}
	return n
}
