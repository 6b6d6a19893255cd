package main

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/scimbridge/scimbridge/syncd/explain"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// Each rejection is logged once when it first appears and again when it
// changes, not at every read; every read logs one summary.
func TestRejectionsLoggedOnce(t *testing.T) {
	e := newEnv(t, 20, 2, "")
	u := e.srv.Snapshot().Users[2]
	e.srv.UpdateUser(u.ID, func(x *scimserver.User) { x.POSIX.UIDNumber = scimserver.Int(7) })
	count := func() (rejected, summaries int) {
		l := logrus.New()
		l.SetOutput(io.Discard)
		h := test.NewLocal(l)
		s := e.syncerLogging(t, l)
		if _, err := s.Once(context.Background(), pipeline.Opts{}); err != nil {
			t.Fatal(err)
		}
		for _, en := range h.AllEntries() {
			switch en.Message {
			case "syncd: rejected":
				rejected++
			case "syncd: validation":
				summaries++
			}
		}
		return
	}
	r1, s1 := count()
	if st := e.statusFile(t); st.RejectedRecords < 1 || st.RejectedRecords > st.Rejected {
		t.Errorf("status: %d records rejected of %d rejections", st.RejectedRecords, st.Rejected)
	}
	ino := func() uint64 {
		fi, err := os.Stat(explain.Path(e.cache))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	i1 := ino()
	r2, s2 := count()
	if ino() != i1 {
		t.Error("an unchanged read with unchanged rejections rewrote the explain record")
	}
	e.srv.UpdateUser(u.ID, func(x *scimserver.User) { x.POSIX.UIDNumber = scimserver.Int(8) })
	r3, _ := count()
	if ino() == i1 {
		t.Error("a changed rejection did not rewrite the explain record")
	}
	if r1 < 1 || r2 != 0 || r3 != 1 || s1 != 1 || s2 != 1 {
		t.Errorf("rejections logged: first read %d, unchanged read %d, changed read %d; summaries %d %d", r1, r2, r3, s1, s2)
	}
}
