package scimserver

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFailNthListRequest(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{FailListRequest: 2, FailStatus: 500})
	get(t, base+"/Users"+q("count", "3")).wantStatus(t, 200)
	get(t, base+"/ServiceProviderConfig").wantStatus(t, 200) // not a list request
	get(t, base+"/Users"+q("startIndex", "4", "count", "3")).wantError(t, 500, "")
	// One failure, then the retry succeeds.
	get(t, base+"/Users"+q("startIndex", "4", "count", "3")).wantStatus(t, 200)

	s.SetFaults(Faults{FailListRequest: 1, FailTimes: -1, FailStatus: 503})
	for range 3 {
		get(t, base+"/Groups").wantError(t, 503, "")
	}
	if c := s.Requests(); c.ByFault["status"] != 4 || c.ByStatus[503] != 3 {
		t.Errorf("counters %+v", c)
	}
}

func TestHTMLErrorPage(t *testing.T) {
	s, base := start(t, Options{})
	for _, status := range []int{200, 502} {
		s.SetFaults(Faults{FailHTML: true, FailStatus: status})
		r := get(t, base+"/Users").wantStatus(t, status)
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.raw), "<html>") {
			t.Errorf("HTML page with %d: %s %s", status, r.header.Get("Content-Type"), r.raw)
		}
	}
}

func TestTruncatedJSON(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{FailTruncatedJSON: true, FailListRequest: 1})
	r := get(t, base+"/Users").wantStatus(t, 200)
	var v any
	if err := json.Unmarshal(r.raw, &v); err == nil {
		t.Fatalf("truncated body parsed: %s", r.raw)
	}
	r = get(t, base+"/Users").wantStatus(t, 200)
	if err := json.Unmarshal(r.raw, &v); err != nil {
		t.Fatalf("second request still broken: %v", err)
	}
}

func TestRateLimitStorm(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{TooManyRequests: 2, RetryAfterSeconds: 3})
	r := get(t, base+"/Users")
	r.wantError(t, 429, "tooMany")
	if r.header.Get("Retry-After") != "3" {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	get(t, base+"/ServiceProviderConfig").wantStatus(t, 429)
	get(t, base+"/Users").wantStatus(t, 200)

	s.SetFaults(Faults{TooManyRequests: 1, RetryAfterSeconds: 5, RetryAfterHTTPDate: true, StormStatus: 503})
	r = get(t, base+"/Users").wantStatus(t, 503)
	when, err := http.ParseTime(r.header.Get("Retry-After"))
	if err != nil {
		t.Fatalf("Retry-After %q is no HTTP-date: %v", r.header.Get("Retry-After"), err)
	}
	if d := time.Until(when); d < 4*time.Second || d > 7*time.Second {
		t.Errorf("Retry-After date is %v away, want about 5s", d)
	}
}

func TestDelayRespectsClientTimeout(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{DelayMS: 5000})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/Users", nil)
	t0 := time.Now()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("request finished despite a 5s delay and a 100ms timeout")
	}
	if time.Since(t0) > 2*time.Second {
		t.Fatalf("client waited %v", time.Since(t0))
	}
	s.SetFaults(Faults{DelayMS: 150})
	t0 = time.Now()
	get(t, base+"/Users").wantStatus(t, 200)
	if d := time.Since(t0); d < 150*time.Millisecond {
		t.Fatalf("answered in %v despite a 150ms delay", d)
	}
}

func TestTotalResultsLies(t *testing.T) {
	s, base := start(t, Options{})
	for _, delta := range []int{5, -5} {
		s.SetFaults(Faults{TotalResultsDelta: delta})
		r := get(t, base+"/Users"+q("count", "100")).wantStatus(t, 200)
		if r.num("totalResults") != 11+delta || len(r.resources()) != 11 {
			t.Errorf("delta %d: totalResults %d with %d items", delta, r.num("totalResults"), len(r.resources()))
		}
	}
}

func TestRepeatAcrossPages(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{RepeatAcrossPages: true})
	all, _ := walkIndex(t, base, "/Users", 4, 10)
	got := names(all)
	if len(got) <= 11 {
		t.Fatalf("no repeats: %v", got)
	}
	if got[3] != got[4] {
		t.Errorf("last of page 1 (%s) is not first of page 2 (%s)", got[3], got[4])
	}
	seen := map[string]bool{}
	for _, n := range got {
		seen[n] = true
	}
	if len(seen) != 11 {
		t.Errorf("deduplicated walk has %d users, want 11", len(seen))
	}
}

func TestUnstableOrderUnlessSorted(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{UnstableOrder: true})
	orders := map[string]bool{}
	for range 20 {
		r := get(t, base+"/Users"+q("count", "100")).wantStatus(t, 200)
		orders[strings.Join(names(r.resources()), ",")] = true
	}
	if len(orders) < 2 {
		t.Errorf("20 listings came back in one order")
	}
	all, _ := walkIndex(t, base, "/Users", 3, 10, "sortBy", "userName")
	if got := names(all); !slices.IsSorted(got) || len(got) != 11 {
		t.Errorf("sorted walk under UnstableOrder: %v", got)
	}
}

func TestWrapPastEnd(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{WrapPastEnd: true})
	r := get(t, base+"/Users"+q("startIndex", "12", "count", "2")).wantStatus(t, 200)
	if got := names(r.resources()); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("startIndex past the end gave %v, want page 1", got)
	}
}

func TestPageCapAndTruncateAt(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{PageCap: 2})
	r := get(t, base+"/Users"+q("count", "5")).wantStatus(t, 200)
	if len(r.resources()) != 2 || r.num("itemsPerPage") != 2 || r.num("totalResults") != 11 {
		t.Fatalf("PageCap 2 with count 5: %d items, itemsPerPage %d", len(r.resources()), r.num("itemsPerPage"))
	}
	all, _ := walkIndex(t, base, "/Users", 5, 20)
	if len(all) != 11 {
		t.Fatalf("careful walk under PageCap got %d users", len(all))
	}

	s.SetFaults(Faults{TruncateAt: 7})
	all, pages := walkIndex(t, base, "/Users", 3, 10)
	if len(all) != 7 || pages[0].num("totalResults") != 7 {
		t.Fatalf("TruncateAt 7: walked %d, totalResults %d", len(all), pages[0].num("totalResults"))
	}
}

func TestIgnoreStartIndexAWS(t *testing.T) {
	s, base := start(t, Options{Cursor: true})
	s.SetFaults(Faults{IgnoreStartIndex: true, IgnoreAttributes: true, GroupMembersEmpty: true})
	r := get(t, base+"/Users"+q("startIndex", "4", "count", "3", "attributes", "userName")).wantStatus(t, 200)
	if got := names(r.resources()); got[0] != "alice" {
		t.Errorf("startIndex honoured: %v", got)
	}
	if r.resources()[0]["emails"] == nil {
		t.Errorf("attributes= honoured")
	}
	cfg := get(t, base+"/ServiceProviderConfig").wantStatus(t, 200).body["pagination"].(map[string]any)
	if cfg["index"] != false || cfg["defaultPaginationMethod"] != "cursor" {
		t.Errorf("pagination %v", cfg)
	}
	all, _ := walkCursor(t, base, "/Groups", 2, 10)
	for _, g := range all {
		if m, ok := g["members"].([]any); !ok || len(m) != 0 {
			t.Errorf("group %v: members %v, want []", g["displayName"], g["members"])
		}
	}
	// Membership is still there per group and by filter.
	ml, _ := s.Group("ml-team")
	g := get(t, base+"/Groups/"+ml.ID).wantStatus(t, 200)
	if len(g.body["members"].([]any)) != 4 {
		t.Errorf("GET /Groups/{id} members: %v", g.body["members"])
	}
}

func TestGroupMembersOmittedAndCapped(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{GroupMembersOmitted: true})
	for _, g := range get(t, base+"/Groups").wantStatus(t, 200).resources() {
		if _, ok := g["members"]; ok {
			t.Errorf("group %v has members", g["displayName"])
		}
	}
	s.SetFaults(Faults{GroupMembersCap: 3})
	su, _ := s.Group("slurm-users")
	if n := len(get(t, base+"/Groups/"+su.ID).wantStatus(t, 200).body["members"].([]any)); n != 3 {
		t.Errorf("capped members: %d", n)
	}
}

func TestHugeField(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{HugeFieldBytes: 1 << 20})
	r := get(t, base+"/Users"+q("count", "2")).wantStatus(t, 200)
	if len(r.raw) < 2<<20 || len(r.resources()[0]["displayName"].(string)) != 1<<20 {
		t.Fatalf("huge field: body %d bytes", len(r.raw))
	}
}

func TestOmitTotalResultsWithCursor(t *testing.T) {
	s, base := start(t, Options{Cursor: true})
	s.SetFaults(Faults{OmitTotalResults: true})
	r := get(t, base+"/Users"+q("cursor", "")).wantStatus(t, 200)
	if _, ok := r.body["totalResults"]; ok {
		t.Fatalf("totalResults present")
	}
	// Index paging requires totalResults: it stays.
	if r := get(t, base+"/Users"); r.num("totalResults") != 11 {
		t.Fatalf("index page totalResults %d", r.num("totalResults"))
	}
}

func TestExtensionRequestOnlyAtRuntime(t *testing.T) {
	s, base := start(t, Options{})
	if firstUser(t, base, "")[posixURN] == nil {
		t.Fatal("extension missing before the fault")
	}
	s.SetFaults(Faults{ExtensionRequestOnly: true})
	if firstUser(t, base, "")[posixURN] != nil {
		t.Fatal("extension sent by default under ExtensionRequestOnly")
	}
}

func TestFaultsJSONNames(t *testing.T) {
	var f Faults
	if err := json.Unmarshal([]byte(`{"failListRequest":3,"failStatus":500,"tooManyRequests":2,"retryAfterHTTPDate":true,"groupMembersEmpty":true,"delayMs":10}`), &f); err != nil {
		t.Fatal(err)
	}
	if f.FailListRequest != 3 || f.FailStatus != 500 || f.TooManyRequests != 2 || !f.RetryAfterHTTPDate || !f.GroupMembersEmpty || f.DelayMS != 10 {
		t.Fatalf("%+v", f)
	}
}

func TestZeroBasedStartIndex(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{ZeroBasedStartIndex: true})
	all, _ := walkIndex(t, base, "/Users", 4, 10)
	if got := names(all); len(got) != 10 || got[0] != "bob" {
		t.Fatalf("walk from 1 under the off-by-one: %v", got)
	}
	if r := get(t, base+"/Users"+q("startIndex", "0", "count", "2")); strings.Join(names(r.resources()), ",") != "alice,bob" {
		t.Errorf("startIndex=0 under the off-by-one: %s", r.raw)
	}
	if r := get(t, base+"/Users"+q("count", "2")); strings.Join(names(r.resources()), ",") != "alice,bob" {
		t.Errorf("no startIndex under the off-by-one: %s", r.raw)
	}
}

func TestEmptyUnlessPaged(t *testing.T) {
	s, base := start(t, Options{})
	s.SetFaults(Faults{EmptyUnlessPaged: true})
	for _, query := range []string{"", q("count", "5"), q("startIndex", "1")} {
		if r := get(t, base+"/Users"+query).wantStatus(t, 200); r.num("totalResults") != 0 || len(r.resources()) != 0 {
			t.Errorf("%q: %s", query, r.raw)
		}
	}
	if r := get(t, base+"/Users"+q("startIndex", "1", "count", "5")); len(r.resources()) != 5 || r.num("totalResults") != 11 {
		t.Errorf("paged: %s", r.raw)
	}
}
