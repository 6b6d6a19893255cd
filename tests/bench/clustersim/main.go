// Command clustersim simulates many mirror nodes polling one head's
// publish directory over HTTP on loopback, for tests/bench/cluster_bench.sh.
//
// Each simulated node is a goroutine with its own jittered poll: it GETs
// manifest.json with If-None-Match (the real node's HTTP transport),
// checks the ed25519 signature (publish.Open, the real code), and when the
// serial is new fetches the page delta from the snapshot it holds, or the
// full file (-full), checking the transferred bytes' size and SHA-256
// against the manifest. What a real node then does locally (apply, hash
// the result, C-reader verify, rename) costs its own CPU, not the head's,
// and is left out: 2,000 copies of a 100,000-user snapshot do not fit on
// one machine. Nodes start holding the head's current snapshot.
//
// It prints one JSON object: per change, seconds from the manifest's
// publish (its signed time) until 50/99/100% of nodes hold it, and bytes
// fetched from the head in that window.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/publish"
)

type node struct {
	sum    string
	serial int64
	etag   string
	body   []byte
}

type result struct {
	Mode        string    `json:"mode"`
	Serial      int64     `json:"serial"`
	Published   time.Time `json:"published"`
	P50         float64   `json:"p50_s"`
	P99         float64   `json:"p99_s"`
	P100        float64   `json:"p100_s"`
	HeadBytes   int64     `json:"head_bytes"`
	Fetches     int64     `json:"snapshot_fetches"`
	Deltas      int64     `json:"delta_fetches"`
	ObjectSize  int64     `json:"full_object_bytes"`
	DeltaSize   int64     `json:"delta_bytes"`
	Polls       int64     `json:"manifest_polls"`
	NotModified int64     `json:"not_modified"`
	Errors      int64     `json:"errors"`
}

func main() {
	base := flag.String("url", "", "the head's publish URL (http://127.0.0.1:PORT/)")
	pubFile := flag.String("pub", "", "the head's public key")
	nodes := flag.Int("nodes", 2000, "simulated nodes")
	interval := flag.Duration("interval", 5*time.Second, "poll interval")
	jitter := flag.Duration("jitter", time.Second, "± jitter")
	changes := flag.String("modes", "full,delta", "one change per mode, in order: full or delta")
	ready := flag.String("ready", "", "file to create once every node holds the current snapshot")
	next := flag.String("next", "", "file the bench creates to say a change is on its way (waited for before each mode)")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after")
	flag.Parse()
	key, err := config.LoadPublicKey(*pubFile)
	if err != nil {
		log.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConns: *nodes, MaxIdleConnsPerHost: *nodes, IdleConnTimeout: time.Minute, Proxy: nil}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	get := func(name string, n *node, w io.Writer) (int, int64, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", *base+name, nil)
		if n != nil && n.etag != "" {
			req.Header.Set("If-None-Match", n.etag)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		if n != nil && resp.StatusCode == 200 {
			n.etag = resp.Header.Get("ETag")
		}
		c, err := io.Copy(w, resp.Body)
		return resp.StatusCode, c, err
	}
	// The starting point: every node holds the current snapshot.
	var first node
	var buf bytesBuf
	if _, _, err := get(publish.ManifestName, nil, &buf); err != nil {
		log.Fatal(err)
	}
	m0, err := publish.Open(buf.b, key)
	if err != nil {
		log.Fatal(err)
	}
	first.sum, first.serial = m0.SHA256, m0.Serial

	var (
		mu       sync.Mutex
		modeFull atomic.Bool
		polls    atomic.Int64
		notMod   atomic.Int64
		bytes    atomic.Int64
		fetches  atomic.Int64
		deltas   atomic.Int64
		errs     atomic.Int64
		holdAt   = map[int64][]time.Time{} // serial -> when each node got it
		manifest = map[int64]*publish.Manifest{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < *nodes; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := &node{sum: first.sum, serial: first.serial}
			t := time.NewTimer(time.Duration(rand.Int64N(int64(*interval))))
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				case <-t.C:
				}
				var b bytesBuf
				status, c, err := get(publish.ManifestName, n, &b)
				polls.Add(1)
				bytes.Add(c)
				switch {
				case err != nil:
					errs.Add(1)
				case status == http.StatusNotModified:
					notMod.Add(1)
					b.b = n.body
				case status != 200:
					errs.Add(1)
				default:
					n.body = b.b
				}
				if m, err := publish.Open(b.b, key); err == nil && m.Serial > n.serial {
					name, size, sum := m.Object, m.ObjectSize, m.ObjectSHA256
					d := m.DeltaFrom(n.sum)
					if d != nil && !modeFull.Load() {
						name, size, sum = d.Object, d.Size, d.SHA256
					}
					h := sha256.New()
					_, c, err := get(name, nil, h)
					bytes.Add(c)
					fetches.Add(1)
					if name != m.Object {
						deltas.Add(1)
					}
					if err != nil || c != size || hex.EncodeToString(h.Sum(nil)) != sum {
						errs.Add(1)
					} else {
						n.sum, n.serial = m.SHA256, m.Serial
						mu.Lock()
						holdAt[m.Serial] = append(holdAt[m.Serial], time.Now())
						if manifest[m.Serial] == nil {
							manifest[m.Serial] = m
						}
						mu.Unlock()
					}
				}
				t.Reset(*interval - *jitter + time.Duration(rand.Int64N(int64(2**jitter)+1)))
			}
		}()
	}
	if *ready != "" {
		os.WriteFile(*ready, []byte("ready\n"), 0o644)
	}
	var results []result
	serial := first.serial
	for _, mode := range splitComma(*changes) {
		if *next != "" {
			for {
				if _, err := os.Stat(*next); err == nil {
					os.Remove(*next)
					break
				}
				if ctx.Err() != nil {
					log.Fatal("timed out waiting for ", *next)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		modeFull.Store(mode == "full")
		b0, f0, d0, p0, nm0, e0 := bytes.Load(), fetches.Load(), deltas.Load(), polls.Load(), notMod.Load(), errs.Load()
		// Wait for a higher serial to reach every node.
		for {
			mu.Lock()
			var got int64
			var times []time.Time
			for s, ts := range holdAt {
				if s > serial && len(ts) == *nodes {
					got, times = s, ts
				}
			}
			mu.Unlock()
			if got > 0 {
				mu.Lock()
				m := manifest[got]
				mu.Unlock()
				sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
				at := func(q float64) float64 {
					i := int(q*float64(len(times))+0.5) - 1
					i = max(0, min(i, len(times)-1))
					return times[i].Sub(m.Signed).Seconds()
				}
				r := result{Mode: mode, Serial: got, Published: m.Signed, P50: at(0.50), P99: at(0.99), P100: at(1.0),
					HeadBytes: bytes.Load() - b0, Fetches: fetches.Load() - f0, Deltas: deltas.Load() - d0,
					ObjectSize: m.ObjectSize, Polls: polls.Load() - p0, NotModified: notMod.Load() - nm0, Errors: errs.Load() - e0}
				if d := m.DeltaFrom(manifestSum(manifest, serial, first.sum)); d != nil {
					r.DeltaSize = d.Size
				}
				results = append(results, r)
				json.NewEncoder(os.Stdout).Encode(r) // one line per change, as it completes
				serial = got
				break
			}
			if ctx.Err() != nil {
				log.Fatalf("timed out: mode %s", mode)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
}

func manifestSum(ms map[int64]*publish.Manifest, serial int64, def string) string {
	if m := ms[serial]; m != nil {
		return m.SHA256
	}
	return def
}

type bytesBuf struct{ b []byte }

func (b *bytesBuf) Write(p []byte) (int, error) { b.b = append(b.b, p...); return len(p), nil }

func splitComma(s string) []string {
	var out []string
	cur := ""
	for _, r := range s + "," {
		if r == ',' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			continue
		}
		cur += string(r)
	}
	return out
}
