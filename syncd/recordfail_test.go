package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/pipeline"
)

// sync --once encodes the explain record on its own goroutine while the
// snapshot is written (pipeline.prepareRecord). A write that fails must
// still end that goroutine and close the record's unnamed file beside
// the cache, and store no record.
func TestSyncOnceFailedWriteEndsTheRecord(t *testing.T) {
	e := newEnv(t, 300, 20, "")
	// A directory where the snapshot goes: the live snapshot reads as
	// absent (unreadable), the write cannot rename its file over it.
	if err := os.MkdirAll(filepath.Join(e.cache, "in-the-way"), 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := e.syncer(t).Once(context.Background(), pipeline.Opts{})
	if err == nil {
		t.Fatalf("the write over a directory succeeded: %+v", out)
	}
	if out != nil && out.Wrote {
		t.Fatal("a failed write says it wrote")
	}
	if _, err := os.Stat(e.cache + ".explain"); err == nil {
		t.Error("a failed write stored an explain record")
	}
	// Once has returned: the encoder has ended (bounded wait: the
	// runtime may still be unwinding a goroutine that just finished).
	var stacks string
	for i := 0; i < 50; i++ {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "explain.EncodeRestOf") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(stacks, "explain.EncodeRestOf") {
		t.Errorf("the record's encoder outlived a failed write:\n%s", stacks)
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, e.dir+"/") && strings.HasSuffix(target, "(deleted)") {
			t.Errorf("the record's unnamed file is still open after a failed write: fd %s -> %s", fd.Name(), target)
		}
	}
}
