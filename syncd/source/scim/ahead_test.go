package scim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// pagedServer lists users u1..uN, size a page, by startIndex or by
// cursor ("p2" is page 2). It notes every page asked for, in order,
// the most requests it had in flight at once, and answers the pages in
// status (page number -> HTTP status, once each) with that status.
type pagedServer struct {
	n, size int
	cursor  bool
	// page overrides a page's body (page number -> body).
	page map[int]string

	mu       sync.Mutex
	status   map[int]int
	asked    []int
	inFlight int
	maxIn    int
	arrived  chan int // each page number as its request arrives
}

func (s *pagedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pageNo, start := 1, 1
	if s.cursor {
		if c := q.Get("cursor"); c != "" {
			pageNo, _ = strconv.Atoi(strings.TrimPrefix(c, "p"))
			start = (pageNo-1)*s.size + 1
		}
	} else if si, err := strconv.Atoi(q.Get("startIndex")); err == nil && si > 1 {
		// The page past the end (startIndex n+1) is page n/size+2.
		start, pageNo = si, (si+s.size-2)/s.size+1
	}
	s.mu.Lock()
	s.asked = append(s.asked, pageNo)
	s.inFlight++
	s.maxIn = max(s.maxIn, s.inFlight)
	st := s.status[pageNo]
	delete(s.status, pageNo)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	select {
	case s.arrived <- pageNo:
	default:
	}
	w.Header().Set("Content-Type", "application/scim+json")
	if st != 0 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(st)
		fmt.Fprintf(w, `{"status":"%d","detail":"page %d refused"}`, st, pageNo)
		return
	}
	if b, ok := s.page[pageNo]; ok {
		w.Write([]byte(b))
		return
	}
	var res []string
	for i := start; i <= min(start+s.size-1, s.n); i++ {
		res = append(res, fmt.Sprintf(`{"id":"u%d","userName":"user%d"}`, i, i))
	}
	next := ""
	if s.cursor && pageNo*s.size < s.n {
		next = fmt.Sprintf(`,"nextCursor":"p%d"`, pageNo+1)
	}
	fmt.Fprintf(w, `{"totalResults":%d,"Resources":[%s]%s}`, s.n, strings.Join(res, ","), next)
}

// await reports whether the request for page arrives (within 10 s).
func (s *pagedServer) await(page int) bool {
	deadline := time.After(10 * time.Second)
	for {
		select {
		case p := <-s.arrived:
			if p == page {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func (s *pagedServer) pagesAsked() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.asked...)
}

func aheadClient(t *testing.T, s *pagedServer) (*Client, *Discovery) {
	t.Helper()
	if s.arrived == nil {
		s.arrived = make(chan int, 64)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL+"/scim/v2", func(o *Options) { o.PageSize = s.size; o.SortBy = "" })
	paging := "index"
	if s.cursor {
		paging = "cursor"
	}
	return c, &Discovery{Paging: paging}
}

// A walk asks for the next page while it applies this one: page 2's
// request reaches the server while page 1's records are still being
// applied, and never more than one request is in flight.
func TestWalkAsksNextPageWhileReading(t *testing.T) {
	for _, cursor := range []bool{false, true} {
		t.Run(map[bool]string{false: "index", true: "cursor"}[cursor], func(t *testing.T) {
			s := &pagedServer{n: 10, size: 3, cursor: cursor}
			c, d := aheadClient(t, s)
			var got []string
			overlapped := false
			_, err := c.walk(context.Background(), "Users", nil, d, func(r *resource) error {
				id, _ := r.id()
				got = append(got, id)
				if id != "u1" {
					return nil
				}
				// Applying page 1: page 2 should be on its way.
				overlapped = s.await(2)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !overlapped {
				t.Errorf("page 2 was not asked for while page 1 was applied (pages asked %v)", s.pagesAsked())
			}
			if want := "u1 u2 u3 u4 u5 u6 u7 u8 u9 u10"; strings.Join(got, " ") != want {
				t.Errorf("records %v; want %s", got, want)
			}
			// Index paging confirms the end with an empty page, as before.
			want := []int{1, 2, 3, 4}
			if !cursor {
				want = append(want, 5)
			}
			if fmt.Sprint(s.pagesAsked()) != fmt.Sprint(want) {
				t.Errorf("pages asked %v; want %v", s.pagesAsked(), want)
			}
			if s.maxIn != 1 {
				t.Errorf("%d requests in flight at once; want 1", s.maxIn)
			}
		})
	}
}

// A page asked ahead behaves as the page asked in turn did: a 429 on it
// is retried after Retry-After, a failure on it fails the walk after the
// pages before it were applied, and a page asked ahead past an error or
// a stop is never applied.
func TestWalkAheadErrorsAndStops(t *testing.T) {
	ids := func(got []string) string { return strings.Join(got, " ") }
	// walk lists s; applying stopAt fails, once page 3 was asked for
	// (at most 10 s of waiting for it).
	walk := func(t *testing.T, s *pagedServer, stopAt string) ([]string, error, *Client) {
		c, d := aheadClient(t, s)
		var got []string
		_, err := c.walk(context.Background(), "Users", nil, d, func(r *resource) error {
			id, _ := r.id()
			got = append(got, id)
			if id != stopAt {
				return nil
			}
			s.await(3)
			return errors.New("applying " + id + " failed")
		})
		return got, err, c
	}
	for _, cursor := range []bool{false, true} {
		name := map[bool]string{false: "index", true: "cursor"}[cursor]
		t.Run(name+"/429 on the page asked ahead", func(t *testing.T) {
			s := &pagedServer{n: 6, size: 2, cursor: cursor, status: map[int]int{2: 429}}
			got, err, c := walk(t, s, "")
			if err != nil {
				t.Fatal(err)
			}
			if ids(got) != "u1 u2 u3 u4 u5 u6" || c.Stats().Retries != 1 {
				t.Errorf("records %v, retries %d; want u1..u6 and 1", got, c.Stats().Retries)
			}
		})
		bad := `{"totalResults":10,"Resources":[1,2]}`
		if cursor {
			bad = `{"Resources":[1,2],"nextCursor":"p3"}`
		}
		for _, tc := range []struct {
			name    string
			s       *pagedServer
			stopAt  string // the record whose apply fails
			wantErr string
			records string
			asked   string // the pages asked for, "" when not checked
		}{
			{name: "500 on the page asked ahead", s: &pagedServer{status: map[int]int{3: 500}},
				wantErr: "HTTP 500", records: "u1 u2 u3 u4"},
			// Page 3 is asked ahead while page 2 is applied, and dropped.
			{name: "page after a failed apply", s: &pagedServer{}, stopAt: "u3",
				wantErr: "applying u3 failed", records: "u1 u2 u3", asked: "[1 2 3]"},
			{name: "page after one that does not decode", s: &pagedServer{page: map[int]string{2: bad}},
				wantErr: "body is not SCIM JSON: Resources: element 0 is not an object", records: "u1 u2"},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				s := tc.s
				s.n, s.size, s.cursor = 10, 2, cursor
				got, err, _ := walk(t, s, tc.stopAt)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want %q", err, tc.wantErr)
				}
				if ids(got) != tc.records {
					t.Errorf("records %v; want %s (no page after it applied)", got, tc.records)
				}
				if tc.asked != "" && fmt.Sprint(s.pagesAsked()) != tc.asked {
					t.Errorf("pages asked %v; want %s", s.pagesAsked(), tc.asked)
				}
			})
		}
		t.Run(name+"/page cap", func(t *testing.T) {
			s := &pagedServer{n: 10, size: 2, cursor: cursor}
			c, d := aheadClient(t, s)
			c.opts.PageCap = 2
			_, err := c.walk(context.Background(), "Users", nil, d, func(*resource) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "more than 2 pages") {
				t.Fatalf("err = %v; want the page cap", err)
			}
			// No page past the cap is asked for, ahead or not.
			if fmt.Sprint(s.pagesAsked()) != "[1 2]" {
				t.Errorf("pages asked %v; want [1 2]", s.pagesAsked())
			}
		})
	}
}

// The scan that places the page asked ahead never fails on any input,
// and on every page that decodes it says what the decode says: the page
// asked ahead is the one the walk then takes.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"totalResults": 2, "Resources": [{"id": "u1"}, null], "nextCursor": "c2"}`,
		`{"resources": [{}], "Resources": [{"id": "a"}, {"id": "b"}], "NEXTCURSOR": "x\u0041"}`,
		`{"Resources": null, "nextCursor": null}`, `{"Resources": [1, "]", {"a": "[{"}]}`,
		`{"Resources": [`, `[]`, `null`, `{"a":`, `"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, next, _ := envelope(data, true)
		_, next2, _ := envelope(data, false)
		if next != next2 {
			t.Fatalf("nextCursor %q counting, %q not", next, next2)
		}
		mem := pageMem{buf: data}
		raw := &rawPage{body: data, mem: &mem}
		var p listPage
		if raw.decodeInto(&p) != nil {
			return
		}
		want := ""
		if p.NextCursor != nil {
			want = *p.NextCursor
		}
		if n != len(p.Resources) || next != want {
			t.Fatalf("scan: %d resources, nextCursor %q; decode: %d, %q (%q)", n, next, len(p.Resources), want, data)
		}
	})
}
