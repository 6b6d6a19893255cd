package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
)

// benchServer runs scim-testserver as a child process (so this process's
// CPU time and peak RSS are syncd's alone) serving a generated directory.
// SCIM_TESTSERVER names a built binary; otherwise it is built here.
func benchServer(b *testing.B, users, groups int, args ...string) string {
	b.Helper()
	bin := os.Getenv("SCIM_TESTSERVER")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "scim-testserver")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/scimbridge/scimbridge/tests/scimserver/cmd/scim-testserver").CombinedOutput()
		if err != nil {
			b.Fatalf("build scim-testserver: %v\n%s", err, out)
		}
	}
	args = append([]string{"-generate", fmt.Sprintf("%d,%d", users, groups)}, args...)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // kept out of the benchmark's output lines
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("scim-testserver printed no URL: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(line)
}

func benchConfig(b *testing.B, url string) *config.Config {
	b.Helper()
	dir := b.TempDir()
	p := filepath.Join(dir, "syncd.toml")
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("unused\n"), 0o600)
	os.WriteFile(p, []byte(fmt.Sprintf(`
base_url = %q
token_file = %q
preset = "posix"
page_size = 1000
cache_path = %q
status_path = %q
`, url, tok, filepath.Join(dir, "cache.db"), filepath.Join(dir, "status.json"))), 0o600)
	cfg, err := config.Load(p)
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFullSync is one full sync of 100,000 users and 10,000 groups
// from a loopback test server (cursor paging, page size 1000): fetch,
// validate, diff, write and verify a new snapshot, with the memory limit
// syncd sets for itself. Targets: 15 s wall, 300 MB peak RSS.
//
//	go test -tags=libsqlite3 -run '^$' -bench FullSync -benchtime 1x ./syncd
func BenchmarkFullSync(b *testing.B) {
	users, groups := 100000, 10000
	if testing.Short() {
		users, groups = 10000, 1000
	}
	setMemoryLimit()
	cfg := benchConfig(b, benchServer(b, users, groups, "-cursor"))
	log := quiet()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		os.Remove(cfg.CachePath)
		c, err := newClient(cfg, log)
		if err != nil {
			b.Fatal(err)
		}
		out, err := pipeline.NewSyncer(cfg, c, log, nil).Once(context.Background(), pipeline.Opts{})
		if err != nil {
			b.Fatal(err)
		}
		if out.Meta.Users < users*95/100 {
			b.Fatalf("only %d users committed", out.Meta.Users)
		}
	}
	b.StopTimer()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkNoChangePoll is one cheap poll with nothing changed (the
// meta.lastModified filter on users and groups, 100,000 users at the
// server). Target: 50 ms of syncd CPU.
func BenchmarkNoChangePoll(b *testing.B) {
	cfg := benchConfig(b, benchServer(b, 100000, 10000))
	c, err := newClient(cfg, quiet())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Fetch(ctx); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		changed, err := c.Changed(ctx)
		if err != nil || changed {
			b.Fatalf("Changed = %v, %v", changed, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
