package filelock

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWaitTimesOutWhileHeldAndTakesItAfterRelease(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	a, _ := os.Create(p)
	defer a.Close()
	b, _ := os.Open(p) // a second open file: flock locks it apart from a
	defer b.Close()
	release, err := Wait(context.Background(), a, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Wait(context.Background(), b, 300*time.Millisecond); err == nil {
		t.Fatal("took a lock another open file holds")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Wait(ctx, b, time.Minute); err == nil {
		t.Fatal("a cancelled wait took a held lock")
	}
	release()
	if _, err := Wait(context.Background(), b, time.Second); err != nil {
		t.Fatalf("lock not free after release: %v", err)
	}
}
