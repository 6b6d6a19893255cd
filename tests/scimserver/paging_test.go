package scimserver

import (
	"slices"
	"testing"
	"time"
)

var sampleUsers = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace hopper", "heidi", "ivan", "judy", "mallory"}

func TestIndexPagingWalksEveryUserOnce(t *testing.T) {
	_, base := start(t, Options{})
	all, pages := walkIndex(t, base, "/Users", 3, 10)
	if got := names(all); !slices.Equal(got, sampleUsers) {
		t.Fatalf("walk got %v, want %v", got, sampleUsers)
	}
	if len(pages) != 4 {
		t.Fatalf("%d pages of 3 for 11 users, want 4", len(pages))
	}
	for i, p := range pages {
		if p.num("totalResults") != 11 || p.num("startIndex") != 1+3*i || p.num("itemsPerPage") != len(p.resources()) {
			t.Errorf("page %d: totalResults=%d startIndex=%d itemsPerPage=%d", i+1, p.num("totalResults"), p.num("startIndex"), p.num("itemsPerPage"))
		}
		if !hasSchema(p.body, URNListResponse) {
			t.Errorf("page %d lacks the ListResponse schema", i+1)
		}
	}
}

func TestIndexPagingEdges(t *testing.T) {
	_, base := start(t, Options{MaxPageSize: 4, DefaultPageSize: 2})
	r := get(t, base+"/Users").wantStatus(t, 200)
	if len(r.resources()) != 2 || r.num("totalResults") != 11 {
		t.Errorf("no count: %d items of %d, want the default page size 2 of 11", len(r.resources()), r.num("totalResults"))
	}
	r = get(t, base+"/Users"+q("count", "50")).wantStatus(t, 200)
	if len(r.resources()) != 4 || r.num("itemsPerPage") != 4 {
		t.Errorf("count 50 with maxPageSize 4 returned %d items", len(r.resources()))
	}
	r = get(t, base+"/Users"+q("startIndex", "0", "count", "1")).wantStatus(t, 200)
	if r.num("startIndex") != 1 || names(r.resources())[0] != "alice" {
		t.Errorf("startIndex 0 is read as 1 (RFC 7644 §3.4.2.4); got startIndex %d %v", r.num("startIndex"), names(r.resources()))
	}
	r = get(t, base+"/Users"+q("count", "0")).wantStatus(t, 200)
	if len(r.resources()) != 0 || r.num("totalResults") != 11 {
		t.Errorf("count 0 should only count: %d items, total %d", len(r.resources()), r.num("totalResults"))
	}
	r = get(t, base+"/Users"+q("startIndex", "12")).wantStatus(t, 200)
	if len(r.resources()) != 0 || r.num("totalResults") != 11 {
		t.Errorf("startIndex past the end: %d items, total %d", len(r.resources()), r.num("totalResults"))
	}
	get(t, base+"/Users"+q("count", "ten")).wantError(t, 400, "invalidValue")
}

func TestCursorPagingWalksEveryUserOnce(t *testing.T) {
	_, base := start(t, Options{Cursor: true})
	all, pages := walkCursor(t, base, "/Users", 4, 10)
	if got := names(all); !slices.Equal(got, sampleUsers) {
		t.Fatalf("cursor walk got %v, want %v", got, sampleUsers)
	}
	if len(pages) != 3 {
		t.Fatalf("%d pages, want 3", len(pages))
	}
	if _, ok := pages[0].body["startIndex"]; ok {
		t.Errorf("cursor page carries startIndex")
	}
	if _, ok := pages[1].body["previousCursor"].(string); !ok {
		t.Errorf("page 2 has no previousCursor")
	}
	// previousCursor leads back to page 1.
	prev := pages[1].body["previousCursor"].(string)
	r := get(t, base+"/Users"+q("cursor", prev, "count", "4")).wantStatus(t, 200)
	if !slices.Equal(names(r.resources()), sampleUsers[:4]) {
		t.Errorf("previousCursor page is %v", names(r.resources()))
	}
}

func TestCursorSurvivesDeletionBetweenPages(t *testing.T) {
	s, base := start(t, Options{Cursor: true})
	r := get(t, base+"/Users"+q("cursor", "", "count", "4")).wantStatus(t, 200)
	// Delete two users already seen: an offset cursor would now skip two.
	for _, n := range []string{"alice", "bob"} {
		u, _ := s.User(n)
		if err := s.DeleteUser(u.ID); err != nil {
			t.Fatal(err)
		}
	}
	r = get(t, base+"/Users"+q("cursor", r.str("nextCursor"), "count", "4")).wantStatus(t, 200)
	if got := names(r.resources()); !slices.Equal(got, sampleUsers[4:8]) {
		t.Fatalf("page after deletions is %v, want %v", got, sampleUsers[4:8])
	}
}

func TestCursorErrors(t *testing.T) {
	s, base := start(t, Options{Cursor: true, MaxPageSize: 5})
	get(t, base+"/Users"+q("cursor", "no-such-cursor")).wantError(t, 400, "invalidCursor")
	get(t, base+"/Users"+q("cursor", "", "startIndex", "1")).wantError(t, 400, "invalidValue")
	get(t, base+"/Users"+q("cursor", "", "count", "-1")).wantError(t, 400, "invalidCount")

	r := get(t, base+"/Users"+q("cursor", "", "count", "2")).wantStatus(t, 200)
	next := r.str("nextCursor")
	// A cursor belongs to its query.
	get(t, base+"/Users"+q("cursor", next, "count", "2", "filter", `userName sw "a"`)).wantError(t, 400, "invalidCursor")
	get(t, base+"/Groups"+q("cursor", next)).wantError(t, 400, "invalidCursor")
	s.ExpireCursors()
	get(t, base+"/Users"+q("cursor", next, "count", "2")).wantError(t, 400, "expiredCursor")

	// Over maxPageSize is capped unless the AWS-style fault says reject.
	r = get(t, base+"/Users"+q("cursor", "", "count", "50")).wantStatus(t, 200)
	if len(r.resources()) != 5 {
		t.Errorf("count 50 with maxPageSize 5 gave %d", len(r.resources()))
	}
	s.SetFaults(Faults{RejectCountOverMax: true})
	get(t, base+"/Users"+q("cursor", "", "count", "50")).wantError(t, 400, "invalidCount")
}

func TestCursorIgnoredWithoutSupport(t *testing.T) {
	// A pre-RFC 9865 server does not know the parameter: index paging.
	_, base := start(t, Options{})
	r := get(t, base+"/Users"+q("cursor", "", "count", "3")).wantStatus(t, 200)
	if _, ok := r.body["nextCursor"]; ok || r.num("startIndex") != 1 {
		t.Fatalf("cursor answered by a server without cursor support: %s", r.raw)
	}
}

func TestCursorDefaultMethod(t *testing.T) {
	_, base := start(t, Options{Cursor: true, CursorDefault: true, DefaultPageSize: 5})
	r := get(t, base+"/Users").wantStatus(t, 200)
	if r.str("nextCursor") == "" || len(r.resources()) != 5 {
		t.Fatalf("default cursor paging: %s", r.raw)
	}
	cfg := get(t, base+"/ServiceProviderConfig").wantStatus(t, 200)
	p := cfg.body["pagination"].(map[string]any)
	if p["defaultPaginationMethod"] != "cursor" || p["cursor"] != true || p["defaultPageSize"] != 5.0 {
		t.Fatalf("pagination = %v", p)
	}
}

func TestSortBy(t *testing.T) {
	_, base := start(t, Options{Cursor: true})
	r := get(t, base+"/Users"+q("sortBy", "userName", "sortOrder", "descending", "count", "3")).wantStatus(t, 200)
	if got := names(r.resources()); !slices.Equal(got, []string{"mallory", "judy", "ivan"}) {
		t.Errorf("descending by userName: %v", got)
	}
	uid := FlavorPOSIX.UserURN + ":uidNumber"
	r = get(t, base+"/Users"+q("sortBy", uid, "count", "3", "attributes", "userName")).wantStatus(t, 200)
	// dave has no uid: missing values sort last.
	if got := names(r.resources()); !slices.Equal(got, []string{"mallory", "alice", "bob"}) {
		t.Errorf("ascending by uidNumber: %v", got)
	}
	all, _ := walkCursor(t, base, "/Users", 4, 10, "sortBy", uid, "sortOrder", "descending")
	if got := names(all); got[0] != "dave" || got[1] != "judy" || len(got) != 11 {
		t.Errorf("cursor walk descending by uidNumber: %v", got)
	}
	get(t, base+"/Users"+q("sortBy", "shoeSize")).wantError(t, 400, "invalidValue")
}

func TestSearchEndpoint(t *testing.T) {
	_, base := start(t, Options{})
	req := newReq(t, "POST", base+"/Users/.search", `{"schemas":["`+URNSearchRequest+`"],"filter":"userName eq \"bob\"","attributes":["userName"],"startIndex":1,"count":10}`)
	r := do(t, req).wantStatus(t, 200)
	if got := names(r.resources()); !slices.Equal(got, []string{"bob"}) || r.resources()[0]["active"] != nil {
		t.Fatalf(".search: %s", r.raw)
	}
}

func TestCursorTimeout(t *testing.T) {
	_, base := start(t, Options{Cursor: true, CursorTimeout: 50 * time.Millisecond})
	r := get(t, base+"/Users"+q("cursor", "", "count", "2")).wantStatus(t, 200)
	time.Sleep(120 * time.Millisecond)
	get(t, base+"/Users"+q("cursor", r.str("nextCursor"), "count", "2")).wantError(t, 400, "expiredCursor")
	cfg := get(t, base+"/ServiceProviderConfig").wantStatus(t, 200)
	if cfg.body["pagination"].(map[string]any)["cursorTimeout"] != 0.0 {
		t.Errorf("cursorTimeout of 50ms advertised as %v seconds", cfg.body["pagination"].(map[string]any)["cursorTimeout"])
	}
}
