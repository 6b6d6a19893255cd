package schedule

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
)

// A pass on its own schedule: it runs at the first turn when enabled and
// the snapshot exists, again between intervals as soon as its input
// changed (asked every watchEvery), never while disabled; a config file
// broken between turns is logged and the last good one kept.
func TestWatchingRunsOnChangeAndKeepsTheLastConfig(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.db")
	os.WriteFile(cache, []byte("x"), 0o644)
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("unused\n"), 0o600)
	p := filepath.Join(dir, "syncd.toml")
	good := fmt.Sprintf("base_url = \"http://127.0.0.1:1/scim/v2\"\ntoken_file = %q\npreset = \"posix\"\ncache_path = %q\nstatus_path = %q\n",
		tok, cache, filepath.Join(dir, "status.json"))
	if err := os.WriteFile(p, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	watchEvery = 200 * time.Millisecond
	defer func() { watchEvery = 5 * time.Second }()
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	log := logrus.New()
	log.SetOutput(writerFunc(func(b []byte) (int, error) { logMu.Lock(); defer logMu.Unlock(); return logBuf.Write(b) }))

	var enabled, changed atomic.Bool
	var runs atomic.Int32
	var last atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watching(ctx, "test", p, cfg, log, &last,
			func(*config.Config) (bool, string) { return enabled.Load(), "1h" },
			func(*config.Config) { runs.Add(1); last.Store(time.Now().UnixNano()); changed.Store(false) },
			func(*config.Config) bool { return changed.Load() })
	}()
	defer func() { cancel(); <-done }()

	// Disabled: the first turn does not run it, nor does a change.
	changed.Store(true)
	time.Sleep(watchEvery + time.Second)
	if n := runs.Load(); n != 0 {
		t.Fatalf("a disabled pass ran %d time(s)", n)
	}
	// Enabled, with a change pending: it runs at the next watch, once.
	enabled.Store(true)
	waitFor(t, func() bool { return runs.Load() == 1 }, 2*watchEvery+time.Second)
	time.Sleep(watchEvery + time.Second)
	if n := runs.Load(); n != 1 {
		t.Fatalf("without a change, within the interval: %d runs, want 1", n)
	}
	// A broken file is logged; the pass still runs on the last good config.
	os.WriteFile(p, []byte("this is not toml ["), 0o600)
	changed.Store(true)
	waitFor(t, func() bool { return runs.Load() == 2 }, 2*watchEvery+time.Second)
	logMu.Lock()
	out := logBuf.String()
	logMu.Unlock()
	if !strings.Contains(out, "test: own schedule: cannot read the configuration; keeping the last one") {
		t.Errorf("a broken config was not logged:\n%s", out)
	}
}

// Every returns when its context ends, even mid-wait.
func TestEveryStopsWithItsContext(t *testing.T) {
	cfg := &config.Config{PollInterval: time.Hour, CachePath: filepath.Join(t.TempDir(), "none.db")}
	var last atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		log := logrus.New()
		log.SetOutput(writerFunc(func(b []byte) (int, error) { return len(b), nil }))
		Every(ctx, "test", "/nonexistent/syncd.toml", cfg, log, &last,
			func(*config.Config) (bool, string) { return true, "1h" },
			func(*config.Config) { t.Error("the pass ran without a snapshot") })
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func waitFor(t *testing.T, ok func() bool, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("not within %s", within)
}
