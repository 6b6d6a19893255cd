package receiver

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCreate is POST /Users through the gate, the library and the
// store (a file in a temp dir, WAL, synchronous=FULL) from 4 concurrent
// clients, in process (no sockets): the request path the receiver bench
// (tests/bench/receiver_bench.sh) measures over loopback. Not a test.
func BenchmarkCreate(b *testing.B) {
	s := benchStore(b)
	var c Client
	c.Name, c.SHA256 = "bench", hashBytes(testToken)
	h, err := NewHandler(s, ServerOptions{Clients: []Client{c}, RateLimit: 1e9, RateBurst: 1e9, MaxBody: 64 << 10})
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(2) // 2 x GOMAXPROCS(2) = 4 clients
	cpu0, flt0 := processCPU(), minorFaults()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			body := fmt.Sprintf(`{"schemas":["%s"],"userName":"user%07d@example.com","name":{"givenName":"U","familyName":"N%d"},"displayName":"User %d","emails":[{"value":"user%07d@example.com","primary":true}],"active":true}`, CoreUserURN, i, i, i, i)
			req := httptest.NewRequest("POST", "/Users", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/scim+json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusCreated {
				b.Errorf("POST: %d %s", w.Code, w.Body)
				return
			}
		}
	})
	b.StopTimer()
	// CPU time is steadier than wall time on a shared machine.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(minorFaults()-flt0)/float64(b.N), "faults/op")
	b.ReportMetric(float64(s.batched.Load())/float64(max(1, s.commits.Load())), "writes/commit")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// minorFaults counts the process's page faults served without I/O
// (memory the kernel had to map again: malloc arenas given back and
// taken again, keepArenaTops).
func minorFaults() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}

// BenchmarkUpdate is a burst's hand-off at 100,000 users: the store
// holds them (and the source has read them once), then each op adds
// 1,000 users and runs Source.Update, which returns the whole directory
// having read only what changed. Not a test.
func BenchmarkUpdate(b *testing.B) {
	s := benchStore(b)
	n := 0
	add := func(k int) {
		err := s.write(context.Background(), func(tx *sql.Tx) (bool, error) {
			for range k {
				n++
				doc := map[string]any{"userName": fmt.Sprintf("user%07d@example.com", n), "displayName": fmt.Sprintf("User %d", n), "active": true,
					"emails": []any{map[string]any{"value": fmt.Sprintf("user%07d@example.com", n), "primary": true}}}
				xid := fmt.Sprintf("ext-%d", n)
				if _, err := s.putUser(context.Background(), tx, nil, doc, &xid); err != nil {
					return false, err
				}
			}
			return true, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for range 20 {
		add(5000)
	}
	src := NewSource(s, "bench")
	if _, _, err := src.Update(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		add(1000)
		b.StartTimer()
		dir, _, err := src.Update(context.Background())
		if err != nil || len(dir.Users) != n {
			b.Fatalf("Update: %d users, want %d (%v)", len(dir.Users), n, err)
		}
	}
}

// benchStore is an empty store in a temp dir, closed with the benchmark,
// with the receiver bench's ranges and no quota to speak of.
func benchStore(b *testing.B) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "receiver.db"), Options{UIDMin: 100000, UIDMax: 999999, GIDMin: 100000, GIDMax: 999999,
		UserNameDomains: []string{"example.com"}, MaxNewIDsPerHour: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
