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
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
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

var failed atomic.Int64
var firstErr sync.Once

// conn is one client's keep-alive HTTP/1.1 connection, as an identity
// provider's worker holds it: a request written whole, the answer read
// with net/http's own response parser. Lighter than http.Client (no
// reader and writer goroutines per connection, no per-request header
// maps to build): the load generator shares the machine's two cores with
// the receiver it measures.
type conn struct {
	c         net.Conn
	br        *bufio.Reader
	req, body []byte // buffers reused for each request
}

var target *url.URL

func (c *conn) roundTrip(method, path string, body []byte) (int, []byte, error) {
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", target.Host, 10*time.Second)
		if err != nil {
			return 0, nil, err
		}
		c.c, c.br = nc, bufio.NewReaderSize(nc, 16<<10)
	}
	c.c.SetDeadline(time.Now().Add(60 * time.Second))
	r := c.req[:0]
	r = append(r, method...)
	r = append(r, ' ')
	r = append(r, target.Path...)
	r = append(r, path...)
	r = append(r, " HTTP/1.1\r\nHost: "...)
	r = append(r, target.Host...)
	r = append(r, "\r\nAuthorization: Bearer "...)
	r = append(r, *token...)
	r = append(r, "\r\nContent-Type: application/scim+json\r\nAccept: application/scim+json\r\nContent-Length: "...)
	r = strconv.AppendInt(r, int64(len(body)), 10)
	r = append(r, "\r\n\r\n"...)
	r = append(r, body...)
	c.req = r
	if _, err := c.c.Write(r); err != nil {
		c.close()
		return 0, nil, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.close()
		return 0, nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.Close {
		c.close()
	}
	return resp.StatusCode, raw, err
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// do sends one request; the answer's body when it is a 2xx.
func (c *conn) do(method, path string, body []byte) ([]byte, time.Duration) {
	t0 := time.Now()
	status, raw, err := c.roundTrip(method, path, body)
	d := time.Since(t0)
	if err != nil {
		failed.Add(1)
		firstErr.Do(func() { fmt.Fprintf(os.Stderr, "scimload: %s %s: %v\n", method, path, err) })
		return nil, d
	}
	if status/100 != 2 {
		failed.Add(1)
		firstErr.Do(func() { fmt.Fprintf(os.Stderr, "scimload: %s %s: %d %s\n", method, path, status, raw) })
		return nil, d
	}
	return raw, d
}

// idOf is the "id" of a SCIM resource in an answer.
func idOf(raw []byte) string {
	var r struct {
		ID string `json:"id"`
	}
	json.Unmarshal(raw, &r)
	return r.ID
}

// userBody is the POST /Users body of user n, the attributes Okta and
// Entra ID send for a new user, written without reflection.
func userBody(b []byte, n int) []byte {
	num := strconv.AppendInt(nil, int64(n), 10)
	name := fmt.Appendf(nil, "bench%06d@example.com", n)
	b = append(b[:0], `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"`...)
	b = append(b, name...)
	b = append(b, `","externalId":"ext-`...)
	b = append(b, num...)
	b = append(b, `","displayName":"Bench User `...)
	b = append(b, num...)
	b = append(b, `","active":true,"name":{"givenName":"Bench","familyName":"`...)
	b = append(b, num...)
	b = append(b, `"},"emails":[{"value":"`...)
	b = append(b, name...)
	b = append(b, `","type":"work","primary":true}]}`...)
	return b
}

// run sends n requests from *conc workers and reports their latencies.
func run(name string, n int, req func(c *conn, i int) time.Duration) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	f0 := failed.Load()
	t0 := time.Now()
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &conn{}
			defer c.close()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				lat[i] = req(c, i)
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
	var err error
	if target, err = url.Parse(*base); err != nil || target.Scheme != "http" {
		fmt.Fprintf(os.Stderr, "scimload: -url %q: want http://host:port/path (%v)\n", *base, err)
		os.Exit(2)
	}
	ids := make([]string, *users)
	patchSchema := []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"}
	if *idFile != "" {
		if b, err := os.ReadFile(*idFile); err == nil {
			json.Unmarshal(b, &ids)
		}
	}
	for _, ph := range bytes.Split([]byte(*phase), []byte(",")) {
		switch string(ph) {
		case "create":
			run("create", *users, func(c *conn, i int) time.Duration {
				c.body = userBody(c.body, *start+i)
				raw, d := c.do("POST", "/Users", c.body)
				if raw != nil {
					ids[i] = idOf(raw)
				}
				return d
			})
			if *idFile != "" {
				b, _ := json.Marshal(ids)
				os.WriteFile(*idFile, b, 0o600)
			}
		case "patch":
			run("patch", *users, func(c *conn, i int) time.Duration {
				b, _ := json.Marshal(map[string]any{"schemas": patchSchema,
					"Operations": []any{map[string]any{"op": "Replace", "path": "displayName", "value": fmt.Sprintf("Renamed %d", i)}}})
				_, d := c.do("PATCH", "/Users/"+ids[i], b)
				return d
			})
		case "members":
			c := &conn{}
			b, _ := json.Marshal(map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Group"}, "displayName": *group})
			g, _ := c.do("POST", "/Groups", b)
			c.close()
			gid := idOf(g)
			run("members", *users, func(c *conn, i int) time.Duration {
				b, _ := json.Marshal(map[string]any{"schemas": patchSchema,
					"Operations": []any{map[string]any{"op": "add", "path": "members", "value": []any{map[string]any{"value": ids[i]}}}}})
				_, d := c.do("PATCH", "/Groups/"+gid, b)
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
