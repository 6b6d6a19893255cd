package scim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"sync"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// idRequests counts the id requests of the user endpoint a test server
// answers: listing pages (count above probeRange) and probes.
type idRequests struct {
	mu              sync.Mutex
	listing, probes int
}

func (r *idRequests) hook(rt string, q url.Values) {
	if rt != "User" || q.Get("attributes") != "id" || q.Get("filter") != "" || q.Get("startIndex") == "" {
		return
	}
	n, _ := strconv.Atoi(q.Get("count"))
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > probeRange {
		r.listing++
	} else if n > 1 || q.Get("startIndex") != "1" {
		r.probes++
	}
}

func (r *idRequests) take() (listing, probes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	listing, probes = r.listing, r.probes
	r.listing, r.probes = 0, 0
	return
}

// probeFixture is a test server of users users (and 5 groups) whose id
// requests are counted, and a client that has read it whole.
func probeFixture(t *testing.T, maxPage, users int, mod func(*Options)) (*scimserver.Server, *Client, *source.Directory, *idRequests) {
	t.Helper()
	srv, base := testServer(t, scimserver.Options{MaxPageSize: maxPage}, users, 5)
	reqs := &idRequests{}
	srv.SetListHook(reqs.hook)
	c := newTestClient(t, base, func(o *Options) {
		o.PageSize = maxPage
		mod(o)
	})
	dir, err := c.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reqs.take()
	return srv, c, dir, reqs
}

// A few deletions from 3,000 users, at the start, the end, side by side
// and apart, are found by probing single positions, without the whole
// id listing, in insertion order and sorted by id; the result is the
// server's directory.
func TestDeletionsFoundByProbing(t *testing.T) {
	for _, sortBy := range []string{"", "id"} {
		t.Run("sortBy="+sortBy, func(t *testing.T) {
			srv, c, dir, reqs := probeFixture(t, 500, 3000, func(o *Options) { o.SortBy = sortBy })
			ctx := context.Background()
			order := c.chg.order[c.opts.UsersEndpoint]
			for _, del := range [][]int{{0}, {len(order) - 1}, {1500, 1501, 1502}, {10, 2000}, {5, 6, 900, 2980, 2981, 2982, 2983, 2984}} {
				cur := c.chg.order[c.opts.UsersEndpoint]
				for _, p := range del {
					if err := srv.DeleteUser(cur[min(p, len(cur)-1)]); err != nil {
						t.Fatal(err)
					}
				}
				got, ch, err := c.Update(ctx, dir, true)
				if err != nil {
					t.Fatal(err)
				}
				if ch.Removed != len(del) {
					t.Fatalf("deleting %v: Update = %+v; want %d removed", del, ch, len(del))
				}
				expect(t, srv, got)
				listing, probes := reqs.take()
				if listing != 0 {
					t.Errorf("deleting positions %v: the whole id listing was read (%d pages, %d probes)", del, listing, probes)
				}
				if probes == 0 || probes > maxProbeRequests {
					t.Errorf("deleting positions %v: %d probes", del, probes)
				}
				t.Logf("deleting positions %v: %d probe requests", del, probes)
				dir = got
			}
		})
	}
}

// Deleted groups are found the same way as users.
func TestDeletedGroupsFoundByProbing(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	srv, c, dir, _ := probeFixture(t, 100, 300, func(o *Options) { o.Log = log })
	snap := srv.Snapshot()
	if len(snap.Groups) < 4 {
		t.Fatalf("%d groups", len(snap.Groups))
	}
	for _, g := range snap.Groups[1:3] {
		if err := srv.DeleteGroup(g.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, ch, err := c.Update(context.Background(), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, srv, got)
	if ch.Removed != 2 {
		t.Fatalf("Update = %+v; want 2 groups removed", ch)
	}
	for _, e := range hook.AllEntries() {
		if r, ok := e.Data["reason"]; ok {
			t.Errorf("the probes fell back: %v", r)
		}
	}
}

// Random additions, deletions and changes, in insertion order and sorted
// by id (where a new record lands mid-listing, so the remembered order
// is wrong until a listing corrects it): after every poll the held
// directory is exactly the server's, whichever way deletions were
// found. In insertion order, deletions after additions are still found
// by probing.
func TestDeletionsRandomSequences(t *testing.T) {
	for _, sortBy := range []string{"", "id"} {
		t.Run("sortBy="+sortBy, func(t *testing.T) {
			srv, c, dir, reqs := probeFixture(t, 100, 400, func(o *Options) { o.SortBy = sortBy })
			ctx := context.Background()
			rnd := rand.New(rand.NewPCG(uint64(len(sortBy)), 18))
			probed, listed := 0, 0
			made := 0
			for step := range 60 {
				snap := srv.Snapshot()
				for range rnd.IntN(3) {
					made++
					if _, err := srv.UpsertUser(scimserver.User{UserName: fmt.Sprintf("rnd%d", made), Active: scimserver.Bool(true)}); err != nil {
						t.Fatal(err)
					}
				}
				dels := rnd.IntN(4)
				for range dels {
					if err := srv.DeleteUser(snap.Users[rnd.IntN(len(snap.Users))].ID); err != nil {
						t.Logf("step %d: %v (deleted already)", step, err)
					}
				}
				if rnd.IntN(4) == 0 {
					u := snap.Users[rnd.IntN(len(snap.Users))]
					u.DisplayName = fmt.Sprintf("changed %d", step)
					srv.UpsertUser(u)
				}
				reqs.take()
				got, _, err := c.Update(ctx, dir, true)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				expect(t, srv, got)
				listing, probes := reqs.take()
				switch {
				case listing > 0:
					listed++
				case probes > 0:
					probed++
				}
				dir = got
			}
			t.Logf("deletions found by probing in %d polls, by the id listing in %d", probed, listed)
			if sortBy == "" && (probed == 0 || listed > 1) {
				t.Errorf("insertion order: %d polls probed, %d listed; want probes for all but maybe the first", probed, listed)
			}
		})
	}
}

// Servers the probes cannot read fall back to the whole id listing in
// the same poll, said once, and the result is still the server's
// directory: they order differently without sortBy, ignore startIndex,
// cap count, miscount, count startIndex from 0, wrap past the end.
func TestDeletionsProbeShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults scimserver.Faults
		sortBy string
		// probes: the probes can find the deletions.
		probes bool
	}{
		{name: "conformant", probes: true},
		{name: "caps count at 1", faults: scimserver.Faults{PageCap: 1}, probes: true},
		{name: "caps count at 3", faults: scimserver.Faults{PageCap: 3}, probes: true},
		{name: "shuffles without sortBy", faults: scimserver.Faults{UnstableOrder: true}},
		{name: "ignores startIndex", faults: scimserver.Faults{IgnoreStartIndex: true}},
		{name: "overcounts", faults: scimserver.Faults{TotalResultsDelta: 2}},
		{name: "zero-based startIndex", faults: scimserver.Faults{ZeroBasedStartIndex: true}},
		{name: "wraps past the end", faults: scimserver.Faults{WrapPastEnd: true}, probes: true},
		{name: "repeats across pages", faults: scimserver.Faults{RepeatAcrossPages: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, hook := logtest.NewNullLogger()
			srv, c, dir, reqs := probeFixture(t, 20, 300, func(o *Options) { o.SortBy = tc.sortBy; o.Log = log })
			ctx := context.Background()
			snap := srv.Snapshot()
			for _, i := range []int{17, 18, 250} {
				if err := srv.DeleteUser(snap.Users[i].ID); err != nil {
					t.Fatal(err)
				}
			}
			srv.SetFaults(tc.faults)
			reqs.take()
			got, ch, err := c.Update(ctx, dir, true)
			srv.SetFaults(scimserver.Faults{})
			if err != nil {
				t.Logf("Update refused (%v): the next poll reads everything", err)
				return
			}
			expect(t, srv, got)
			if ch.Removed != 3 {
				t.Fatalf("Update = %+v; want 3 removed", ch)
			}
			listing, probes := reqs.take()
			said := 0
			for _, e := range hook.AllEntries() {
				if e.Message == "scim: deletions not found by probing single positions; listing every id instead" {
					said++
					t.Logf("fell back: %v", e.Data["reason"])
				}
			}
			if tc.probes && (listing > 0 || said > 0) {
				t.Errorf("the probes could have found the deletions; the id listing was read (%d pages, %d probes)", listing, probes)
			}
			if !tc.probes && said != 1 {
				t.Errorf("fallback said %d times; want once", said)
			}
		})
	}
}

// A candidate the probes point at is dropped only once the server says
// it is gone: a server whose listing stops one record short (a listing
// cap) while GET still finds that record answers probes that fit its
// deletion exactly; the record is not dropped.
func TestDeletionsCandidateMustBeGone(t *testing.T) {
	srv, base := testServer(t, scimserver.Options{MaxPageSize: 20}, 200, 3)
	log, hook := logtest.NewNullLogger()
	c := newTestClient(t, base, func(o *Options) { o.SortBy = ""; o.PageSize = 20; o.Log = log })
	ctx := context.Background()
	dir, err := c.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	order := c.chg.order[c.opts.UsersEndpoint]
	srv.SetFaults(scimserver.Faults{TruncateAt: len(order) - 1})
	got, _, err := c.Update(ctx, dir, true)
	if err == nil {
		for _, u := range got.Users {
			if u.ID == order[len(order)-1] {
				err = fmt.Errorf("kept")
			}
		}
		if err == nil {
			t.Fatalf("Update dropped user %s, which GET still finds", order[len(order)-1])
		}
	}
	t.Logf("Update: %v", err)
	said := false
	for _, e := range hook.AllEntries() {
		if r, _ := e.Data["reason"].(string); r == fmt.Sprintf("candidate %q still exists", order[len(order)-1]) {
			said = true
		}
	}
	if !said {
		t.Errorf("the probes did not name the candidate that still exists: %v", hook.AllEntries())
	}
}
