package scim

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// testServer serves a generated directory on 127.0.0.1.
func testServer(t *testing.T, opts scimserver.Options, users, groups int) (*scimserver.Server, string) {
	t.Helper()
	srv := scimserver.New(opts)
	if err := srv.Load(scimserver.Generate(users, groups, 7)); err != nil {
		t.Fatal(err)
	}
	url, stop := srv.Start()
	t.Cleanup(stop)
	return srv, url
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func posixAttrs(f scimserver.Flavor) Attrs {
	return Attrs{
		UID: f.UserURN + ":" + f.UID, GID: f.UserURN + ":" + f.GID, Home: f.UserURN + ":" + f.Home,
		Shell: f.UserURN + ":" + f.Shell, GECOS: f.UserURN + ":" + f.GECOS, SSHKeys: f.UserURN + ":" + f.SSHKeys,
		Active: "active", GroupGID: f.GroupURN + ":" + f.GroupGID,
	}
}

func newTestClient(t *testing.T, url string, mod func(*Options)) *Client {
	t.Helper()
	o := Options{
		BaseURL: url, PageSize: 100, MaxRetries: 3, BackoffBase: 10 * time.Millisecond, MaxWait: 5 * time.Second,
		SortBy: "id", Attrs: posixAttrs(scimserver.FlavorPOSIX), Log: quietLog(), RequestTimeout: 10 * time.Second,
	}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// expect checks the fetched directory against what the server holds:
// every user once, with the server's uid, and every group's user members.
func expect(t *testing.T, srv *scimserver.Server, dir *source.Directory) {
	t.Helper()
	want := srv.Snapshot()
	if len(dir.Users) != len(want.Users) || len(dir.Groups) != len(want.Groups) {
		t.Fatalf("fetched %d users, %d groups; server has %d, %d", len(dir.Users), len(dir.Groups), len(want.Users), len(want.Groups))
	}
	got := make(map[string]source.User)
	for _, u := range dir.Users {
		if _, dup := got[u.ID]; dup {
			t.Fatalf("user %s fetched twice", u.ID)
		}
		got[u.ID] = u
	}
	isUser := make(map[string]bool)
	for _, w := range want.Users {
		isUser[w.ID] = true
		g, ok := got[w.ID]
		if !ok {
			t.Fatalf("user %s (%s) missing", w.ID, w.UserName)
		}
		if g.UserName != w.UserName {
			t.Fatalf("user %s: name %q, want %q", w.ID, g.UserName, w.UserName)
		}
		var wantUID *int64
		if w.POSIX != nil {
			wantUID = w.POSIX.UIDNumber
		}
		if (g.UID == nil) != (wantUID == nil) || (g.UID != nil && *g.UID != *wantUID) {
			t.Fatalf("user %s: uid %v, want %v", w.UserName, ptr(g.UID), ptr(wantUID))
		}
	}
	gm := make(map[string][]string)
	for _, g := range dir.Groups {
		gm[g.ID] = append([]string(nil), g.MemberIDs...)
	}
	for _, w := range want.Groups {
		var wm []string
		for _, m := range w.Members {
			if isUser[m] {
				wm = append(wm, m)
			}
		}
		g := gm[w.ID]
		sort.Strings(g)
		sort.Strings(wm)
		if strings.Join(g, ",") != strings.Join(wm, ",") {
			t.Fatalf("group %s: %d members, want %d", w.DisplayName, len(g), len(wm))
		}
	}
}

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestFetchIndexAndCursor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   scimserver.Options
		paging string
		want   string
	}{
		{"index", scimserver.Options{}, "auto", "index"},
		{"cursor auto", scimserver.Options{Cursor: true}, "auto", "cursor"},
		{"cursor forced index", scimserver.Options{Cursor: true}, "index", "index"},
		{"coreweave flavour", scimserver.Options{Flavor: scimserver.FlavorCoreWeave}, "auto", "index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := testServer(t, tc.opts, 1000, 40)
			c := newTestClient(t, url, func(o *Options) {
				o.Paging = tc.paging
				o.Attrs = posixAttrs(srv.Flavor())
			})
			dir, err := c.Fetch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if c.disc.Paging != tc.want {
				t.Errorf("paging %s, want %s", c.disc.Paging, tc.want)
			}
			expect(t, srv, dir)
			// gzip is accepted on every request.
			for _, r := range srv.RequestLog() {
				if !r.Gzip || r.Authorization != "" {
					t.Fatalf("request %s?%s: gzip %v auth %q", r.Path, r.Query, r.Gzip, r.Authorization)
				}
			}
		})
	}
}

// Each fault real servers have shown: the fetch either returns the whole
// directory or fails, naming what failed.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    scimserver.Options
		faults  scimserver.Faults
		mod     func(*Options)
		wantErr string // "" = the whole directory
	}{
		{name: "500 mid-paging", faults: scimserver.Faults{FailListRequest: 3, FailStatus: 500}, wantErr: "HTTP 500"},
		{name: "500 late in paging", faults: scimserver.Faults{FailListRequest: 10, FailStatus: 500}, wantErr: "HTTP 500"},
		{name: "503 once is retried", faults: scimserver.Faults{FailListRequest: 2, FailStatus: 503}},
		{name: "503 forever gives up", faults: scimserver.Faults{FailListRequest: 2, FailStatus: 503, FailTimes: -1}, wantErr: "gave up after 3 retries"},
		{name: "truncated JSON", faults: scimserver.Faults{FailListRequest: 2, FailTruncatedJSON: true}, wantErr: "not SCIM JSON"},
		{name: "HTML 200", faults: scimserver.Faults{FailListRequest: 2, FailHTML: true, FailStatus: 200}, wantErr: "text/html"},
		{name: "HTML 502", faults: scimserver.Faults{FailListRequest: 2, FailHTML: true, FailTimes: -1}, wantErr: "HTTP 502"},
		{name: "totalResults too low", faults: scimserver.Faults{TotalResultsDelta: -250}},
		{name: "totalResults too high", faults: scimserver.Faults{TotalResultsDelta: 250}},
		{name: "repeated ids across pages", faults: scimserver.Faults{RepeatAcrossPages: true}},
		{name: "startIndex past end wraps to page 1", faults: scimserver.Faults{WrapPastEnd: true}},
		{name: "wrap and low total", faults: scimserver.Faults{WrapPastEnd: true, TotalResultsDelta: -150}},
		{name: "unstable order without sortBy", faults: scimserver.Faults{UnstableOrder: true}, mod: func(o *Options) { o.SortBy = "" }, wantErr: "shifted during paging"},
		{name: "unstable order with sortBy", faults: scimserver.Faults{UnstableOrder: true}},
		{name: "server caps page size", faults: scimserver.Faults{PageCap: 7}},
		{name: "count over max rejected", opts: scimserver.Options{MaxPageSize: 50}, faults: scimserver.Faults{RejectCountOverMax: true}},
		{name: "ignores startIndex", faults: scimserver.Faults{IgnoreStartIndex: true}, mod: func(o *Options) { o.Paging = "index" }, wantErr: "ignores startIndex"},
		{name: "ignores startIndex, cursor offered", opts: scimserver.Options{Cursor: true}, faults: scimserver.Faults{IgnoreStartIndex: true}},
		{name: "cursor without totalResults", opts: scimserver.Options{Cursor: true}, faults: scimserver.Faults{OmitTotalResults: true}},
		{name: "members omitted from group list", faults: scimserver.Faults{GroupMembersOmitted: true}},
		{name: "members empty in group list (AWS)", opts: scimserver.Options{Cursor: true, CursorDefault: true}, faults: scimserver.Faults{GroupMembersEmpty: true, IgnoreStartIndex: true, IgnoreAttributes: true, FilterEqAndOnly: true}},
		{name: "member lists capped, read per user", faults: scimserver.Faults{GroupMembersCap: 5}, mod: func(o *Options) { o.GroupMembers = "per-user" }},
		// elimity-com/scim: members.value eq matches nothing, silently.
		{name: "per-user on a server whose members filter matches nothing", faults: scimserver.Faults{FilterNoMatch: "members"},
			mod: func(o *Options) { o.GroupMembers = "per-user" }, wantErr: "members.value eq"},
		{name: "extension returned on request", opts: scimserver.Options{ReturnedRequest: true}},
		{name: "attributes ignored", faults: scimserver.Faults{IgnoreAttributes: true}},
		{name: "page cap", mod: func(o *Options) { o.PageCap = 3 }, wantErr: "more than 3 pages"},
		{name: "wrong token", opts: scimserver.Options{Token: "right"}, mod: func(o *Options) { o.Token = "wrong" }, wantErr: "HTTP 401"},
		// RFC 9865: a server may page by cursor only, answering requests
		// without a cursor with a nextCursor, and need not describe its
		// paging in ServiceProviderConfig (the pagination object is
		// optional, and older servers do not have it).
		{name: "cursor only, not in ServiceProviderConfig", opts: scimserver.Options{Cursor: true, CursorDefault: true},
			faults: scimserver.Faults{IgnoreStartIndex: true, OmitPaginationConfig: true}},
		{name: "cursor only, not in ServiceProviderConfig, no totalResults", opts: scimserver.Options{Cursor: true, CursorDefault: true},
			faults: scimserver.Faults{IgnoreStartIndex: true, OmitPaginationConfig: true, OmitTotalResults: true}},
		{name: "cursor only, no totalResults, paging = index", opts: scimserver.Options{Cursor: true, CursorDefault: true},
			faults: scimserver.Faults{IgnoreStartIndex: true, OmitPaginationConfig: true, OmitTotalResults: true},
			mod:    func(o *Options) { o.Paging = "index" }, wantErr: "ignores startIndex"},
		// RFC 7643 section 4.2: value and type are not required of a member.
		{name: "members as $ref only", faults: scimserver.Faults{MembersRefOnly: true}},
		{name: "members as $ref only, read per group", faults: scimserver.Faults{MembersRefOnly: true, GroupMembersOmitted: true}},
		// Memberships only in the users' read-only groups attribute
		// (RFC 7643 section 4.1.2).
		{name: "members only on users", opts: scimserver.Options{UserGroups: true}, faults: scimserver.Faults{GroupMembersNever: true}},
		{name: "members only on users, user-groups", opts: scimserver.Options{UserGroups: true},
			faults: scimserver.Faults{GroupMembersNever: true}, mod: func(o *Options) { o.GroupMembers = "user-groups" }},
		{name: "user-groups on a server that also lists members", opts: scimserver.Options{UserGroups: true},
			mod: func(o *Options) { o.GroupMembers = "user-groups" }},
		// WSO2 IS: startIndex read as 0-based, so the first record is
		// never on any page while totalResults counts it.
		{name: "zero-based startIndex", faults: scimserver.Faults{ZeroBasedStartIndex: true}},
		{name: "zero-based startIndex, cursor offered but index forced", opts: scimserver.Options{Cursor: true},
			faults: scimserver.Faults{ZeroBasedStartIndex: true}, mod: func(o *Options) { o.Paging = "index" }},
		// Bitwarden: empty lists unless both startIndex and count are sent.
		{name: "empty unless paged", faults: scimserver.Faults{EmptyUnlessPaged: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Faults = tc.faults
			srv, url := testServer(t, opts, 1000, 40)
			c := newTestClient(t, url, tc.mod)
			dir, err := c.Fetch(context.Background())
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("fetch succeeded with %d users; want an error containing %q", len(dir.Users), tc.wantErr)
				}
				if dir != nil {
					t.Errorf("a failed fetch returned a directory")
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			expect(t, srv, dir)
		})
	}
}

func TestErrorsNameURLAndStatus(t *testing.T) {
	_, url := testServer(t, scimserver.Options{Faults: scimserver.Faults{FailListRequest: 1, FailHTML: true, FailStatus: 200}}, 10, 2)
	c := newTestClient(t, url, nil)
	_, err := c.Fetch(context.Background())
	if err == nil || !(strings.Contains(err.Error(), url+"/Users?") || strings.Contains(err.Error(), url+"/Groups?")) || !strings.Contains(err.Error(), "HTTP 200") || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Fatalf("err = %v; want the URL, HTTP 200 and the page's start", err)
	}
}

func TestRetryAfter(t *testing.T) {
	for _, date := range []bool{false, true} {
		name := "seconds"
		if date {
			name = "http-date"
		}
		t.Run(name, func(t *testing.T) {
			srv, url := testServer(t, scimserver.Options{Faults: scimserver.Faults{
				TooManyRequests: 2, RetryAfterSeconds: 1, RetryAfterHTTPDate: date,
			}}, 200, 5)
			c := newTestClient(t, url, nil)
			t0 := time.Now()
			dir, err := c.Fetch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// Two 429s with Retry-After 1s: at least 2s of waiting (the
			// backoff base alone is 10ms).
			if el := time.Since(t0); el < 2*time.Second {
				t.Errorf("fetch took %v; Retry-After was not honoured", el)
			}
			if srv.Requests().ByStatus[429] != 2 || c.Stats().Retries != 2 {
				t.Errorf("429s %d, retries %d; want 2 and 2", srv.Requests().ByStatus[429], c.Stats().Retries)
			}
			expect(t, srv, dir)
		})
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, "-1": 0, "junk": 0, "999999": 86400 * time.Second,
		"Wed, 01 Jan 2025 00:00:10 GMT": 10 * time.Second, "Tue, 31 Dec 2024 23:00:00 GMT": time.Millisecond,
	} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}

// The extension is returned only on request: naming it in attributes=
// brings the UIDs; not sending attributes= loses them, and Discover says so.
func TestReturnedRequest(t *testing.T) {
	_, url := testServer(t, scimserver.Options{ReturnedRequest: true}, 50, 3)
	c := newTestClient(t, url, func(o *Options) { o.NoAttributesParam = true })
	d, err := c.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(d.Warnings, "\n"), "returned only on request") {
		t.Errorf("no warning about returned:request: %q", d.Warnings)
	}
	dir, err := c.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range dir.Users {
		if u.UID != nil {
			t.Fatalf("user %s has a uid although the extension was not requested", u.UserName)
		}
	}
}

func TestDiscoverWarnsAboutMissingPaths(t *testing.T) {
	_, url := testServer(t, scimserver.Options{}, 5, 1)
	c := newTestClient(t, url, func(o *Options) {
		o.Attrs.UID = scimserver.FlavorPOSIX.UserURN + ":uidNumbr"
		o.Attrs.Shell = "urn:example:nosuch:2.0:User:shell"
	})
	d, err := c.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(d.Warnings, "\n")
	if !strings.Contains(w, `no attribute "uidNumbr"`) || !strings.Contains(w, "no schema urn:example:nosuch:2.0:User") {
		t.Errorf("warnings = %s", w)
	}
}

// Numbers that look like UIDs are never used as UIDs.
func TestNoUIDFromIDs(t *testing.T) {
	srv := scimserver.New(scimserver.Options{})
	emp := map[string]any{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": map[string]any{"employeeNumber": "30001"}}
	if err := srv.Load(&scimserver.Directory{Users: []scimserver.User{
		{ID: "30000", ExternalID: "30002", UserName: "numeric", Extra: emp},
	}}); err != nil {
		t.Fatal(err)
	}
	url, stop := srv.Start()
	defer stop()
	c := newTestClient(t, url, nil)
	dir, err := c.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dir.Users) != 1 || dir.Users[0].UID != nil || dir.Users[0].GID != nil {
		t.Fatalf("users = %+v; want one user without uid or gid", dir.Users)
	}
}

// Values of the wrong type are reported per attribute, not guessed.
func TestMalformedValues(t *testing.T) {
	srv := scimserver.New(scimserver.Options{})
	urn := scimserver.FlavorPOSIX.UserURN
	if err := srv.Load(&scimserver.Directory{Users: []scimserver.User{
		{ID: "a", UserName: "strings", POSIX: &scimserver.POSIX{}, Extra: map[string]any{urn: map[string]any{"uidNumber": "20001", "gidNumber": "2e4"}, "active": "False"}},
		{ID: "b", UserName: "floats", POSIX: &scimserver.POSIX{}, Extra: map[string]any{urn: map[string]any{"uidNumber": 20002.5, "loginShell": 7}}},
	}}); err != nil {
		t.Fatal(err)
	}
	url, stop := srv.Start()
	defer stop()
	dir, err := newTestClient(t, url, nil).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]source.User{}
	for _, u := range dir.Users {
		by[u.UserName] = u
	}
	s := by["strings"]
	if s.UID == nil || *s.UID != 20001 || s.Malformed[source.FieldGID] == "" || s.Active == nil || *s.Active {
		t.Errorf("strings: uid %v gid %v active %v malformed %v", ptr(s.UID), ptr(s.GID), s.Active, s.Malformed)
	}
	f := by["floats"]
	if f.UID != nil || f.Malformed[source.FieldUID] == "" || f.Malformed[source.FieldShell] == "" {
		t.Errorf("floats: uid %v malformed %v", ptr(f.UID), f.Malformed)
	}
}

func TestChanged(t *testing.T) {
	srv, url := testServer(t, scimserver.Options{}, 100, 5)
	c := newTestClient(t, url, nil)
	ctx := context.Background()
	if _, err := c.Changed(ctx); !errors.Is(err, ErrNoChangeCheck) {
		t.Fatalf("Changed before any fetch = %v, want ErrNoChangeCheck", err)
	}
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Changed(ctx); err != nil || ch {
		t.Fatalf("Changed with nothing changed = %v, %v", ch, err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := srv.SetActive(srv.Snapshot().Users[3].ID, false); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Changed(ctx); err != nil || !ch {
		t.Fatalf("Changed after a user change = %v, %v", ch, err)
	}
	srv.SetFaults(scimserver.Faults{FilterEqAndOnly: true})
	if _, err := c.Changed(ctx); !errors.Is(err, ErrNoChangeCheck) {
		t.Fatalf("Changed on a server without gt filters = %v, want ErrNoChangeCheck", err)
	}
}

// A server that answers a meta.lastModified filter it cannot evaluate
// with an empty list (no error) would make every cheap poll say "no
// change" until the next full reconcile: the check is verified once per
// watermark (meta.lastModified ge the newest value seen must find that
// record) and refused when it finds nothing.
func TestChangedFilterIgnored(t *testing.T) {
	srv, url := testServer(t, scimserver.Options{}, 100, 5)
	c := newTestClient(t, url, nil)
	ctx := context.Background()
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Changed(ctx); err != nil || ch {
		t.Fatalf("Changed with nothing changed = %v, %v", ch, err)
	}
	srv.SetFaults(scimserver.Faults{FilterNoMatch: "lastModified"})
	time.Sleep(10 * time.Millisecond)
	if err := srv.SetActive(srv.Snapshot().Users[3].ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Changed(ctx); !errors.Is(err, ErrNoChangeCheck) {
		t.Fatalf("Changed on a server that ignores the filter = %v, %v; want ErrNoChangeCheck", ch, err)
	}
}

// The change check sends attributes= only when attributes= is sent at
// all (AWS IAM Identity Center refuses the parameter).
func TestChangedWithoutAttributesParam(t *testing.T) {
	srv, url := testServer(t, scimserver.Options{}, 50, 3)
	c := newTestClient(t, url, func(o *Options) { o.NoAttributesParam = true })
	ctx := context.Background()
	if _, err := c.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Changed(ctx); err != nil || ch {
		t.Fatalf("Changed = %v, %v", ch, err)
	}
	for _, r := range srv.RequestLog() {
		if strings.Contains(r.Query, "attributes=") {
			t.Errorf("request %s?%s sends attributes=", r.Path, r.Query)
		}
	}
}

func TestPathParse(t *testing.T) {
	for s, want := range map[string]string{
		"userName":       "userName",
		"name.formatted": "name.formatted",
		"urn:ietf:params:scim:schemas:core:2.0:User:userName":                         "userName",
		"urn:ietf:params:scim:schemas:extension:posix:2.0:User:uidNumber":             "urn:ietf:params:scim:schemas:extension:posix:2.0:User:uidNumber",
		"urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveUser:uid": "urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveUser:uid",
	} {
		p, err := ParsePath(s)
		if err != nil || p.String() != want {
			t.Errorf("ParsePath(%q) = %q, %v; want %q", s, p.String(), err, want)
		}
	}
	for _, s := range []string{"", "urn:", "urn:x:", "emails[type eq \"work\"].value", "1abc", "a.b.c", "urn:x:y:"} {
		if _, err := ParsePath(s); err == nil {
			t.Errorf("ParsePath(%q) accepted", s)
		}
	}
}
