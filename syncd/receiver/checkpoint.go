package receiver

import (
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/sirupsen/logrus"
)

// The store's write connections run with wal_autocheckpoint=0: no commit
// copies the WAL into the database file while every waiting write waits
// behind it. A checkpointer of the Store's own (its own connection,
// checkpointer) does it in the background instead; see doc.go, "Issue
// 18, recv".

// writeDriver is go-sqlite3 with automatic checkpoints off on every
// connection it opens (the store's write pool and its checkpointer).
const writeDriver = "sqlite3-receiver-write"

var registerWriteDriver = sync.OnceFunc(func() {
	sql.Register(writeDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		// journal_size_limit: a WAL that grew past 64 MiB (a reader
		// kept it from restarting) is cut back to it when it restarts.
		_, err := c.Exec("PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=67108864", nil)
		return err
	}})
})

// Checkpoint bounds, in WAL frames (a frame is a page, 4 KiB, and a
// 24-byte header).
const (
	// ckEvery is how often the checkpointer looks at the WAL.
	ckEvery = 100 * time.Millisecond
	// ckRestartFrames: past it, the checkpointer copies the last frames
	// holding the write lock (wmu), so that the next write starts the
	// WAL again from its beginning instead of growing the file.
	ckRestartFrames = 2000
	// ckMaxFrames (256 MiB): past it (the WAL did not restart: a reader
	// held it), a RESTART checkpoint waits for the readers, holding the
	// write lock: a stuck reader cannot grow the WAL for ever. Not
	// lower: a burst's read of the store holds its snapshot for 0.7-2.3
	// s at 100,000 users, while a load adds about 12,000 frames a
	// second; 64 MiB would stall the POSTs behind every such read.
	ckMaxFrames = 65536
	// ckTail: the background copies are repeated while more than this
	// many frames were committed during the last one, so that what is
	// left for the locked copy is short.
	ckTail = 64
)

// ckResult is what PRAGMA wal_checkpoint answers: busy (the checkpoint
// could not finish: a reader or writer in the way), the frames in the
// WAL and the frames copied into the database file.
type ckResult struct{ busy, log, done int }

// checkpoint runs PRAGMA wal_checkpoint(mode) on the checkpointer's
// connection.
func (s *Store) checkpoint(mode string) (ckResult, error) {
	var r ckResult
	err := s.ckdb.QueryRow("PRAGMA wal_checkpoint("+mode+")").Scan(&r.busy, &r.log, &r.done)
	return r, err
}

// checkpointStep is one look at the WAL (the checkpointer's loop, and
// tests). The copy of the frames into the database file and its fsync
// are done without the write lock, while writes go on (PASSIVE: it
// copies what no reader still needs and never waits). Past
// ckRestartFrames, the few frames committed meanwhile are copied
// holding wmu, so the next write finds the WAL fully copied and starts
// it again from its beginning (SQLite restarts a WAL only then, and
// only when no reader holds it). Past ckMaxFrames a RESTART checkpoint
// waits for the readers (up to the busy timeout) holding wmu.
func (s *Store) checkpointStep() (ckResult, error) {
	r, err := s.checkpoint("PASSIVE")
	for i := 0; err == nil && r.log-r.done > ckTail && i < 3; i++ {
		r, err = s.checkpoint("PASSIVE")
	}
	if err != nil || r.log < ckRestartFrames {
		return r, err
	}
	mode := "PASSIVE"
	if r.log >= ckMaxFrames {
		mode = "RESTART"
	}
	if r.done == r.log && mode == "PASSIVE" {
		return r, nil // all copied: the next write restarts the WAL
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.checkpoint(mode)
}

// checkpointer runs checkpointStep every ckEvery until stop is closed.
func (s *Store) checkpointer(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(ckEvery)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		r, err := s.checkpointStep()
		switch {
		case err != nil:
			logrus.Warnf("receiver store %s: checkpoint: %v", s.path, err)
		case r.log >= ckMaxFrames && r.busy != 0 && !warned:
			warned = true
			logrus.Warnf("receiver store %s: the WAL holds %d frames and a reader keeps it from restarting", s.path, r.log)
		case r.log < ckMaxFrames:
			warned = false
		}
	}
}

// stopCheckpointer stops the checkpointer and waits for it (once).
func (s *Store) stopCheckpointer() {
	s.ckOnce.Do(func() {
		close(s.ckStop)
		<-s.ckDone
	})
}

// openCheckpointer opens the checkpointer's connection and starts it.
func (s *Store) openCheckpointer() error {
	ck, err := sql.Open(writeDriver, "file:"+s.path+"?_busy_timeout=10000")
	if err != nil {
		return fmt.Errorf("receiver store %s: %w", s.path, err)
	}
	ck.SetMaxOpenConns(1)
	ck.SetConnMaxIdleTime(0)
	s.ckdb = ck
	s.ckStop, s.ckDone = make(chan struct{}), make(chan struct{})
	go s.checkpointer(s.ckStop, s.ckDone)
	return nil
}
