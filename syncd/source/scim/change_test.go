package scim

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// The bug of the first release: the watermark was the newest
// lastModified seen. A record changed during a full read, after its page
// was read, with an older timestamp than a record read later, was never
// asked for again. Here the server changes the first user (on page 1)
// and then the last one (on the last page) while page 2 is requested:
// the read sees the last one's new timestamp, not the first one's.
func TestChangeDuringReadIsNotLost(t *testing.T) {
	srv, base := testServer(t, scimserver.Options{}, 250, 3)
	users := srv.Snapshot().Users
	first, last := users[0].ID, users[len(users)-1].ID
	var pages atomic.Int32
	srv.SetListHook(func(rt string, q url.Values) {
		if rt != "User" || q.Get("filter") != "" {
			return
		}
		if pages.Add(1) == 2 {
			srv.SetActive(first, false)
			time.Sleep(3 * time.Millisecond)
			srv.SetActive(last, false)
		}
	})
	c := newTestClient(t, base, func(o *Options) { o.SortBy = "" })
	ctx := context.Background()
	dir, err := c.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.SetListHook(nil)
	byID := map[string]bool{}
	for _, u := range dir.Users {
		byID[u.ID] = u.Active != nil && *u.Active
	}
	if !byID[first] || byID[last] {
		t.Fatalf("the read should have the first user's old state and the last one's new state: first active %v, last active %v", byID[first], byID[last])
	}
	ch, err := c.Check(ctx, false)
	if err != nil || !ch.Changed || !strings.Contains(ch.Reason, first) {
		t.Fatalf("Check after a change behind the read = %+v, %v; want a change naming %s", ch, err, first)
	}
	// The next read has it, and after it nothing is new.
	dir, err = c.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range dir.Users {
		if u.ID == first && (u.Active == nil || *u.Active) {
			t.Fatalf("second read: first user still active")
		}
	}
	if ch, err := c.Check(ctx, true); err != nil || ch.Changed {
		t.Fatalf("Check after the second read = %+v, %v; want no change", ch, err)
	}
}

// Records changed just before a read are inside the overlap window on
// every check until it moves on: the check must recognise them (same
// id, same lastModified) rather than read everything on every poll, and
// cost one small request per endpoint.
func TestChangeCheckDedupesTheOverlap(t *testing.T) {
	srv, base := testServer(t, scimserver.Options{}, 120, 4)
	for _, u := range srv.Snapshot().Users[:5] {
		srv.SetActive(u.ID, false)
	}
	srv.AddMembers(srv.Snapshot().Groups[2].ID, srv.Snapshot().Users[7].ID)
	c := newTestClient(t, base, nil)
	ctx := context.Background()
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		srv.ResetCounters()
		ch, err := c.Check(ctx, false)
		if err != nil || ch.Changed {
			t.Fatalf("check %d: %+v, %v; want no change", i, ch, err)
		}
		lists := srv.Requests().UserLists + srv.Requests().GroupLists
		// The first check also verifies once that the server evaluates
		// the filter (ge the newest value). A window holding records
		// costs a confirming empty page per endpoint.
		if lists > 5 {
			t.Errorf("check %d: %d list requests", i, lists)
		}
		for _, r := range srv.RequestLog() {
			if strings.Contains(r.Query, "count=1&") || strings.Contains(r.Query, "lastModified+ge") || strings.Contains(r.Query, "lastModified ge") {
				continue
			}
			if !strings.Contains(r.Query, "attributes=id%2Cmeta.lastModified") {
				t.Errorf("check request without attributes=id,meta.lastModified: %s", r.Query)
			}
		}
	}
	// A second change to a record already in the window is seen.
	time.Sleep(2 * time.Millisecond)
	srv.SetActive(srv.Snapshot().Users[1].ID, true)
	if ch, err := c.Check(ctx, false); err != nil || !ch.Changed {
		t.Fatalf("Check after changing a record of the window = %+v, %v", ch, err)
	}
}

// Deletions leave no lastModified: the removal check compares totals.
func TestRemovalCheck(t *testing.T) {
	srv, base := testServer(t, scimserver.Options{}, 59, 4)
	// A user in no group: deleting it modifies nothing else (deleting
	// a member modifies its groups, which the lastModified check sees).
	loner, err := srv.UpsertUser(scimserver.User{UserName: "loner", Active: scimserver.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, base, nil)
	ctx := context.Background()
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Check(ctx, true); err != nil || ch.Changed || !ch.RemovalsChecked {
		t.Fatalf("Check = %+v, %v", ch, err)
	}
	if err := srv.DeleteUser(loner.ID); err != nil {
		t.Fatal(err)
	}
	srv.ResetCounters()
	if ch, err := c.Check(ctx, false); err != nil || ch.Changed {
		t.Fatalf("Check without removals after a deletion = %+v, %v (lastModified cannot see it)", ch, err)
	}
	ch, err := c.Check(ctx, true)
	if err != nil || !ch.Changed || !strings.Contains(ch.Reason, "59 records, 60") {
		t.Fatalf("Check with removals after a deletion = %+v, %v", ch, err)
	}
	// The next read confirms the deletion (GET /Users/{id}: 404).
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, err = c.Check(ctx, true); err != nil || ch.Changed {
		t.Fatalf("Check with removals after a deletion = %+v, %v", ch, err)
	}
	// A deleted group too.
	if err := srv.DeleteGroup(srv.Snapshot().Groups[3].ID); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Check(ctx, true); err != nil || !ch.Changed || !strings.Contains(ch.Reason, "Groups") {
		t.Fatalf("Check after a group deletion = %+v, %v", ch, err)
	}
}

// A server that miscounts by a constant does not trigger reads. A read
// during which a record already read is deleted and another added skips
// a record (index paging shifts) while the totals agree: the read asks
// for the records the previous read had and this one lacks, finds one
// that exists, and fails rather than publish its removal.
func TestRemovalCheckMiscountAndUnsettled(t *testing.T) {
	srv, base := testServer(t, scimserver.Options{Faults: scimserver.Faults{TotalResultsDelta: 1}}, 60, 4)
	c := newTestClient(t, base, nil)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := c.Fetch(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ch, err := c.Check(ctx, true); err != nil || ch.Changed {
		t.Fatalf("Check on a server overcounting by one = %+v, %v", ch, err)
	}
	srv.SetFaults(scimserver.Faults{})
	for i := 0; i < 2; i++ {
		if _, err := c.Fetch(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Delete a user already read and add one read later, mid-read.
	users := srv.Snapshot().Users
	c2 := newTestClient(t, base, func(o *Options) { o.PageSize = 20; o.SortBy = "" })
	if _, err := c2.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	var pages atomic.Int32
	srv.SetListHook(func(rt string, q url.Values) {
		if rt == "User" && q.Get("filter") == "" && pages.Add(1) == 2 {
			srv.DeleteUser(users[0].ID)
			srv.UpsertUser(scimserver.User{UserName: "newcomer", Active: scimserver.Bool(true)})
		}
	})
	_, err := c2.Fetch(ctx)
	if err == nil || !strings.Contains(err.Error(), "no page listed it") {
		t.Fatalf("Fetch while records are deleted and added = %v; want a refusal of the shifted listing", err)
	}
	srv.SetListHook(nil)
	dir, err := c2.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, srv, dir)
	if ch, err := c2.Check(ctx, true); err != nil || ch.Changed {
		t.Fatalf("Check after a clean read = %+v, %v", ch, err)
	}
}

func TestFormatLike(t *testing.T) {
	at := time.Date(2026, 11, 30, 17, 0, 1, 987654321, time.UTC)
	for sample, want := range map[string]string{
		"2024-01-01T00:00:00Z":          "2026-11-30T17:00:01Z",
		"2024-01-01T00:00:00.123Z":      "2026-11-30T17:00:01.987Z",
		"2024-01-01T01:00:00+01:00":     "2026-11-30T18:00:01+01:00",
		"2024-01-01T00:00:00.000+00:00": "2026-11-30T17:00:01.987+00:00",
		"garbage":                       "2026-11-30T17:00:01Z",
	} {
		if got := formatLike(at, sample); got != want {
			t.Errorf("formatLike(%q) = %q, want %q", sample, got, want)
		}
	}
}

// Forget (sync --once, after its one read) drops what the change check
// kept: the next check finds no base and asks for a full read, as after
// a start, never a "no change" from nothing.
func TestForgetAsksForAFullRead(t *testing.T) {
	_, base := testServer(t, scimserver.Options{}, 50, 3)
	c := newTestClient(t, base, nil)
	ctx := context.Background()
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Check(ctx, false); err != nil || ch.Changed {
		t.Fatalf("check after a read: %+v, %v; want no change", ch, err)
	}
	c.Forget()
	if c.chg.seen != nil || c.chg.ids != nil {
		t.Error("Forget kept the last read's ids")
	}
	if _, err := c.Check(ctx, false); !errors.Is(err, ErrNoChangeCheck) {
		t.Fatalf("check after Forget: %v; want ErrNoChangeCheck (a full read)", err)
	}
}
