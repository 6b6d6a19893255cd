package receiver

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckpointer: the store's write connections never checkpoint on
// their own (wal_autocheckpoint 0); checkpointStep copies the WAL into
// the database file, and past ckRestartFrames leaves it fully copied so
// that the next write starts it again from its beginning; a reader
// holding an old snapshot keeps the WAL from restarting and still reads
// its snapshot; everything written is there after reopening.
func TestCheckpointer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.db")
	o := Options{UIDMin: 20000, UIDMax: 29999, GIDMin: 20000, GIDMax: 29999}
	s, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	s.stopCheckpointer() // the test takes the steps itself
	ctx := context.Background()
	var auto int
	if err := s.db.QueryRow("PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("wal_autocheckpoint %d (%v), want 0", auto, err)
	}
	var limit int64
	if err := s.db.QueryRow("PRAGMA journal_size_limit").Scan(&limit); err != nil || limit != 64<<20 {
		t.Fatalf("journal_size_limit %d (%v), want 64 MiB", limit, err)
	}
	big := strings.Repeat("x", 3000) // about a page per row
	rows := 0
	insert := func(n int) {
		t.Helper()
		for range n {
			err := s.write(ctx, func(tx *sql.Tx) (bool, error) {
				_, err := tx.Exec("INSERT INTO audit(at, client, remote, method, path, status, detail) VALUES('t','c','r','POST','/Users',201,?)", big)
				return false, err
			})
			if err != nil {
				t.Fatal(err)
			}
			rows++
		}
	}
	frames := func() int {
		t.Helper()
		r, err := s.checkpoint("PASSIVE")
		if err != nil {
			t.Fatal(err)
		}
		return r.log
	}
	insert(ckRestartFrames / 2)
	if r, err := s.checkpointStep(); err != nil || r.log < ckRestartFrames/2 || r.done != r.log {
		t.Fatalf("first step: %+v %v, want every frame of at least %d copied", r, err, ckRestartFrames/2)
	}
	insert(ckRestartFrames / 2)
	if f := frames(); f < ckRestartFrames {
		t.Fatalf("%d frames after %d commits without a restart: want at least %d (no automatic checkpoint restarted the WAL)", f, rows, ckRestartFrames)
	}
	r, err := s.checkpointStep()
	if err != nil || r.done != r.log || r.busy != 0 {
		t.Fatalf("step past ckRestartFrames: %+v %v, want all copied", r, err)
	}
	insert(1)
	if f := frames(); f > 10 {
		t.Fatalf("the write after a restart step left %d frames: the WAL did not start again", f)
	}

	// A reader in the middle of a read transaction keeps its snapshot:
	// the WAL cannot start again under it.
	rtx, err := s.rdb.BeginTx(ctx, &sqlReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	var before int
	if err := rtx.QueryRow("SELECT count(*) FROM audit").Scan(&before); err != nil {
		t.Fatal(err)
	}
	insert(ckRestartFrames + 10)
	if r, err := s.checkpointStep(); err != nil || r.log < ckRestartFrames {
		t.Fatalf("step with a reader: %+v %v", r, err)
	}
	insert(1)
	if f := frames(); f <= ckRestartFrames {
		t.Fatalf("%d frames: the WAL restarted under a reader", f)
	}
	var still int
	if err := rtx.QueryRow("SELECT count(*) FROM audit").Scan(&still); err != nil || still != before {
		t.Fatalf("the reader's snapshot: %d rows, then %d (%v)", before, still, err)
	}
	rtx.Rollback()
	if r, err := s.checkpointStep(); err != nil || r.done != r.log {
		t.Fatalf("step after the reader: %+v %v", r, err)
	}
	insert(1)
	if f := frames(); f > 10 {
		t.Fatalf("%d frames after the reader ended: the WAL did not start again", f)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.rdb.QueryRow("SELECT count(*) FROM audit").Scan(&n); err != nil || n != rows {
		t.Fatalf("after reopening: %d audit rows (%v), want %d", n, err, rows)
	}
}
