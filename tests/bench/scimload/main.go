// Command scimload plays an identity provider against a SCIM receiver for
// tests/bench/receiver_bench.sh: it creates users with POST, updates them
// with PATCH, and sends bursts of group member changes, over keep-alive
// connections from C concurrent workers, and prints one line per phase:
//
//	PHASE requests seconds req/s p50_ms p99_ms errors
//
// Not a test: it measures. Any non-2xx answer is counted and the first
// one printed on stderr; the exit status is 1 if any.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

var (
	base   = flag.String("url", "", "SCIM root, e.g. http://127.0.0.1:8443/scim/v2")
	token  = flag.String("token", "", "bearer token")
	users  = flag.Int("users", 1000, "users to create")
	conc   = flag.Int("c", 4, "concurrent clients")
	start  = flag.Int("start", 0, "first user number")
	phase  = flag.String("phase", "create,patch", "phases: create, patch, members (comma-separated)")
	group  = flag.String("group", "bench-group", "group for the members phase")
	idFile = flag.String("ids", "", "file of user ids: written after create, read by later runs")
)

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}
var failed atomic.Int64
var firstErr sync.Once

func do(method, path string, body any) (map[string]any, time.Duration) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, *base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+*token)
	req.Header.Set("Content-Type", "application/scim+json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		failed.Add(1)
		firstErr.Do(func() { fmt.Fprintf(os.Stderr, "scimload: %s %s: %v\n", method, path, err) })
		return nil, time.Since(t0)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if resp.StatusCode/100 != 2 {
		failed.Add(1)
		firstErr.Do(func() { fmt.Fprintf(os.Stderr, "scimload: %s %s: %d %s\n", method, path, resp.StatusCode, raw) })
		return nil, d
	}
	var m map[string]any
	json.Unmarshal(raw, &m)
	return m, d
}

// run sends n requests from *conc workers and reports their latencies.
func run(name string, n int, req func(i int) time.Duration) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	f0 := failed.Load()
	t0 := time.Now()
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				lat[i] = req(i)
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	slices.Sort(lat)
	q := func(p float64) float64 {
		if n == 0 {
			return 0
		}
		return float64(lat[min(n-1, int(p*float64(n)))].Microseconds()) / 1000
	}
	fmt.Printf("%s %d %.2f %.0f %.2f %.2f %d\n", name, n, el.Seconds(), float64(n)/el.Seconds(), q(0.5), q(0.99), failed.Load()-f0)
}

func main() {
	flag.Parse()
	ids := make([]string, *users)
	userSchema := []string{"urn:ietf:params:scim:schemas:core:2.0:User"}
	patchSchema := []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"}
	if *idFile != "" {
		if b, err := os.ReadFile(*idFile); err == nil {
			json.Unmarshal(b, &ids)
		}
	}
	for _, ph := range bytes.Split([]byte(*phase), []byte(",")) {
		switch string(ph) {
		case "create":
			run("create", *users, func(i int) time.Duration {
				n := *start + i
				m, d := do("POST", "/Users", map[string]any{"schemas": userSchema,
					"userName": fmt.Sprintf("bench%06d@example.com", n), "externalId": fmt.Sprintf("ext-%d", n),
					"displayName": fmt.Sprintf("Bench User %d", n), "active": true,
					"name":   map[string]any{"givenName": "Bench", "familyName": fmt.Sprint(n)},
					"emails": []any{map[string]any{"value": fmt.Sprintf("bench%06d@example.com", n), "type": "work", "primary": true}}})
				if m != nil {
					ids[i], _ = m["id"].(string)
				}
				return d
			})
			if *idFile != "" {
				b, _ := json.Marshal(ids)
				os.WriteFile(*idFile, b, 0o600)
			}
		case "patch":
			run("patch", *users, func(i int) time.Duration {
				_, d := do("PATCH", "/Users/"+ids[i], map[string]any{"schemas": patchSchema,
					"Operations": []any{map[string]any{"op": "Replace", "path": "displayName", "value": fmt.Sprintf("Renamed %d", i)}}})
				return d
			})
		case "members":
			g, _ := do("POST", "/Groups", map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Group"}, "displayName": *group})
			gid, _ := g["id"].(string)
			run("members", *users, func(i int) time.Duration {
				_, d := do("PATCH", "/Groups/"+gid, map[string]any{"schemas": patchSchema,
					"Operations": []any{map[string]any{"op": "add", "path": "members", "value": []any{map[string]any{"value": ids[i]}}}}})
				return d
			})
		default:
			fmt.Fprintf(os.Stderr, "scimload: unknown phase %q\n", ph)
			os.Exit(2)
		}
	}
	if failed.Load() > 0 {
		os.Exit(1)
	}
}
