package scim

import (
	"context"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// The removal check's id listing (ids.go) against servers that misbehave
// in the ways listed in /work/shared/notes/scim.md: after a full read,
// users are deleted at the server, the server turns faulty, and Update
// must give exactly the server's directory (or refuse), never one that
// lost a user who is still there.
func TestIDListingDeletionsAcrossServerFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   scimserver.Options
		faults scimserver.Faults
		mod    func(*Options)
		// sideBySide: the listing must be read with pages in parallel.
		sideBySide bool
	}{
		{name: "index", sideBySide: true},
		{name: "cursor server with index too", opts: scimserver.Options{Cursor: true}, sideBySide: true},
		{name: "paging=cursor configured", opts: scimserver.Options{Cursor: true}, mod: func(o *Options) { o.Paging = "cursor" }},
		{name: "cursor only (ignores startIndex, says so)", opts: scimserver.Options{Cursor: true, Faults: scimserver.Faults{IgnoreStartIndex: true}}},
		{name: "ignores startIndex without saying so", opts: scimserver.Options{Cursor: true}, faults: scimserver.Faults{IgnoreStartIndex: true}},
		{name: "caps count below maxPageSize", faults: scimserver.Faults{PageCap: 7}},
		{name: "ignores attributes", faults: scimserver.Faults{IgnoreAttributes: true}, sideBySide: true},
		{name: "overcounts", faults: scimserver.Faults{TotalResultsDelta: 2}},
		{name: "undercounts", faults: scimserver.Faults{TotalResultsDelta: -2}},
		{name: "wraps past the end", faults: scimserver.Faults{WrapPastEnd: true}, sideBySide: true},
		{name: "repeats across pages", faults: scimserver.Faults{RepeatAcrossPages: true}},
		{name: "unordered without sortBy", faults: scimserver.Faults{UnstableOrder: true}, mod: func(o *Options) { o.SortBy = "" }},
		{name: "odd maxPageSize", opts: scimserver.Options{MaxPageSize: 9}, sideBySide: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.MaxPageSize == 0 {
				tc.opts.MaxPageSize = 10
			}
			srv, base := testServer(t, tc.opts, 83, 4)
			// Users in no group: deleting them modifies nothing else,
			// so only the id listing can see it.
			var loners []string
			for i := range 5 {
				u, err := srv.UpsertUser(scimserver.User{UserName: "loner" + string(rune('a'+i)), Active: scimserver.Bool(true)})
				if err != nil {
					t.Fatal(err)
				}
				loners = append(loners, u.ID)
			}
			c := newTestClient(t, base, func(o *Options) {
				o.PageSize = 10
				if tc.mod != nil {
					tc.mod(o)
				}
			})
			c.listDeletions = true // this test is the listing's; removed_test.go the probes'
			ctx := context.Background()
			dir, err := c.Fetch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range loners[1:4] {
				if err := srv.DeleteUser(id); err != nil {
					t.Fatal(err)
				}
			}
			var inFlight, most, idPages atomic.Int32
			srv.SetListHook(func(rt string, q url.Values) {
				if rt != "User" || q.Get("attributes") != "id" || q.Get("filter") != "" {
					return
				}
				idPages.Add(1)
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				inFlight.Add(-1)
			})
			srv.SetFaults(tc.faults)
			got, ch, err := c.Update(ctx, dir, true)
			srv.SetListHook(nil)
			srv.SetFaults(scimserver.Faults{})
			if err != nil {
				t.Logf("Update refused (%v): the next poll reads everything", err)
				if _, err := c.Fetch(ctx); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !ch.Changed || ch.Removed != 3 {
				t.Fatalf("Update = %+v; want 3 users removed", ch)
			}
			expect(t, srv, got)
			if tc.sideBySide && most.Load() < 2 {
				t.Errorf("the id listing was read one page at a time (%d pages)", idPages.Load())
			}
			if most.Load() > idWorkers {
				t.Errorf("%d id pages were asked at once; at most %d may be", most.Load(), idWorkers)
			}
		})
	}
}

// A server that states a maxPageSize gets it as count in the id listing
// (fewer pages), whatever page_size says; the full read keeps page_size.
func TestIDListingAsksTheLargestPage(t *testing.T) {
	srv, base := testServer(t, scimserver.Options{MaxPageSize: 40}, 120, 3)
	c := newTestClient(t, base, func(o *Options) { o.PageSize = 10 })
	ctx := context.Background()
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	var counts []string
	srv.SetListHook(func(rt string, q url.Values) {
		if rt == "User" && q.Get("attributes") == "id" && q.Get("filter") == "" {
			counts = append(counts, q.Get("count"))
		}
	})
	d, _ := c.discovery(ctx)
	st, err := c.listIDs(ctx, d, c.opts.UsersEndpoint)
	srv.SetListHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.seen) != 120 || st.first != 120 {
		t.Fatalf("listed %d ids, total %d; want 120", len(st.seen), st.first)
	}
	// 120 records in pages of 40: three pages and the one past the end.
	if strings.Join(counts, ",") != "40,40,40,40" {
		t.Fatalf("id pages asked with count %v; want 4 pages of 40", counts)
	}
}

// A server that says it holds a billion records is refused by the cap
// before any page past the first is asked.
func TestIDListingHugeTotalIsCapped(t *testing.T) {
	srv, base := testServer(t, scimserver.Options{}, 30, 2)
	c := newTestClient(t, base, func(o *Options) { o.MaxUsers = 1000 })
	ctx := context.Background()
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	srv.SetFaults(scimserver.Faults{TotalResultsDelta: 1_000_000_000})
	var pages atomic.Int32
	srv.SetListHook(func(rt string, q url.Values) {
		if q.Get("attributes") == "id" && q.Get("filter") == "" {
			pages.Add(1)
		}
	})
	d, _ := c.discovery(ctx)
	_, err := c.listIDs(ctx, d, c.opts.UsersEndpoint)
	if err == nil || !strings.Contains(err.Error(), "max_users") {
		t.Fatalf("listIDs against a server counting a billion users = %v; want the max_users cap", err)
	}
	if pages.Load() != 1 {
		t.Fatalf("%d pages asked; want only the first", pages.Load())
	}
}
