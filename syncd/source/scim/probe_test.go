package scim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/tests/scimserver"
)

func findings(rep *ProbeReport) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		kind := "warning"
		if f.Error {
			kind = "error"
		}
		b.WriteString(kind + " " + f.Option + ": " + f.Message + "\n")
	}
	return b.String()
}

// Each quirk of the issue, on the test server, and the option the probe
// names for it. A well-behaved server gets no finding.
func TestProbeQuirks(t *testing.T) {
	ctx := context.Background()
	withKeys := func(srv *scimserver.Server) {
		for _, u := range srv.Snapshot().Users[:3] {
			srv.SetSSHKeys(u.ID, []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhRKPk7Yq0bCq1Ug0w3nYVtmB8hGrKQqDnJw1u7Oq3c a@b"})
		}
	}
	t.Run("clean", func(t *testing.T) {
		srv, base := testServer(t, scimserver.Options{}, 50, 3)
		withKeys(srv)
		rep, err := newTestClient(t, base, nil).Probe(ctx)
		if err != nil || len(rep.Findings) != 0 {
			t.Fatalf("Probe = %v\n%s", err, findings(rep))
		}
	})
	t.Run("attributes rejected", func(t *testing.T) {
		srv, base := testServer(t, scimserver.Options{Faults: scimserver.Faults{RejectAttributes: true}}, 50, 3)
		withKeys(srv)
		rep, err := newTestClient(t, base, nil).Probe(ctx)
		if err != nil || !strings.Contains(findings(rep), "warning send_attributes: the server rejects the attributes= parameter") {
			t.Fatalf("Probe = %v\n%s", err, findings(rep))
		}
		// And the read itself falls back to no attributes= (issue 20:
		// the minimal config must work), remembered for later clients.
		c := newTestClient(t, base, nil)
		dir, err := c.Fetch(ctx)
		if err != nil || len(dir.Users) != 50 || dir.Users[0].UID == nil {
			t.Fatalf("Fetch against a server rejecting attributes= = %v", err)
		}
		c = newTestClient(t, base, nil)
		if _, err := c.Fetch(ctx); err != nil {
			t.Fatal(err)
		}
		second := c.Stats().Requests
		c2 := newTestClient(t, base, func(o *Options) { o.NoAttributesParam = true })
		if _, err := c2.Fetch(ctx); err != nil || c2.Stats().Requests != second {
			t.Errorf("a later client still tries attributes= first: %d requests, %d without it (%v)", second, c2.Stats().Requests, err)
		}
	})
	t.Run("slow sort", func(t *testing.T) {
		_, base := testServer(t, scimserver.Options{Faults: scimserver.Faults{SortDelayMS: 1500}}, 50, 3)
		c := newTestClient(t, base, func(o *Options) { o.SortBy = "id"; o.RequestTimeout = time.Second; o.MaxRetries = 0 })
		rep, err := c.Probe(ctx)
		if err != nil || !strings.Contains(findings(rep), "error sort_by: one page with sortBy=id took longer than request_timeout (1s)") ||
			!strings.Contains(findings(rep), `set sort_by = ""`) {
			t.Fatalf("Probe = %v\n%s", err, findings(rep))
		}
		_, err = c.Fetch(ctx)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Option != "request_timeout" || !strings.Contains(err.Error(), "request_timeout (1s)") || !strings.Contains(err.Error(), `sort_by = ""`) {
			t.Errorf("Fetch with a slow sort = %v; want a timeout naming request_timeout and sort_by", err)
		}
		// Without sortBy the same server is fast.
		c = newTestClient(t, base, func(o *Options) { o.SortBy = ""; o.RequestTimeout = time.Second })
		if _, err := c.Fetch(ctx); err != nil {
			t.Errorf("Fetch without sortBy: %v", err)
		}
	})
	t.Run("slow pages", func(t *testing.T) {
		_, base := testServer(t, scimserver.Options{Faults: scimserver.Faults{DelayMS: 300}}, 20, 2)
		c := newTestClient(t, base, func(o *Options) { o.RequestTimeout = 500 * time.Millisecond; o.SortBy = "" })
		rep, err := c.Probe(ctx)
		if err != nil || !strings.Contains(findings(rep), "warning request_timeout: one page of 100 users took") {
			t.Fatalf("Probe = %v\n%s", err, findings(rep))
		}
	})
	t.Run("fetch timeout", func(t *testing.T) {
		_, base := testServer(t, scimserver.Options{Faults: scimserver.Faults{DelayMS: 300}}, 20, 2)
		c := newTestClient(t, base, nil)
		fctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := c.Fetch(fctx)
		if err == nil || !strings.Contains(err.Error(), "(fetch_timeout)") {
			t.Errorf("Fetch past its deadline = %v; want fetch_timeout named", err)
		}
	})
	t.Run("unstable order", func(t *testing.T) {
		_, base := testServer(t, scimserver.Options{Faults: scimserver.Faults{UnstableOrder: true}}, 150, 3)
		rep, err := newTestClient(t, base, func(o *Options) { o.SortBy = "" }).Probe(ctx)
		if err != nil || !strings.Contains(findings(rep), `error sort_by: the server lists users in a different order each time it is asked: index paging would repeat and skip records; set sort_by = "id"`) {
			t.Fatalf("Probe = %v\n%s", err, findings(rep))
		}
	})
	t.Run("wrong key path", func(t *testing.T) {
		srv, base := testServer(t, scimserver.Options{Flavor: scimserver.FlavorPOSIXSingularKey}, 30, 2)
		withKeys(srv)
		// The first release's posix preset: the plural only.
		c := newTestClient(t, base, func(o *Options) { o.Attrs.SSHKeys = scimserver.FlavorPOSIX.UserURN + ":sshPublicKeys" })
		rep, err := c.Probe(ctx)
		if err != nil || !strings.Contains(findings(rep), "warning attributes.ssh_keys: none of the first 30 users has an SSH key") ||
			!strings.Contains(strings.Join(rep.Discovery.Warnings, "\n"), `has no attribute "sshPublicKeys"`) {
			t.Fatalf("Probe = %v\n%s\n%v", err, findings(rep), rep.Discovery.Warnings)
		}
	})
}

// The posix preset's two spellings: sshPublicKey (what servers publish)
// first, sshPublicKeys accepted. /Schemas decides which one is asked
// for; without /Schemas both are, and each user is read from whichever
// it has.
func TestSSHKeySpellings(t *testing.T) {
	ctx := context.Background()
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhRKPk7Yq0bCq1Ug0w3nYVtmB8hGrKQqDnJw1u7Oq3c a@b"
	urn := scimserver.FlavorPOSIX.UserURN
	preset := func(o *Options) {
		o.Attrs.SSHKeys, o.Attrs.SSHKeysAlt = urn+":sshPublicKey", urn+":sshPublicKeys"
	}
	for _, f := range []scimserver.Flavor{scimserver.FlavorPOSIXSingularKey, scimserver.FlavorPOSIX} {
		srv, base := testServer(t, scimserver.Options{Flavor: f, ReturnedRequest: true}, 20, 2)
		id := srv.Snapshot().Users[4].ID
		srv.SetSSHKeys(id, []string{key})
		c := newTestClient(t, base, preset)
		dir, err := c.Fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, u := range dir.Users {
			if u.ID == id && len(u.SSHKeys) == 1 && u.SSHKeys[0] == key {
				got++
			}
		}
		if got != 1 {
			t.Errorf("flavor %s: the user's key was not read", f.Name)
		}
		if w := c.disc.Warnings; len(w) != 0 {
			t.Errorf("flavor %s: warnings %v", f.Name, w)
		}
		// Only the spelling the server has is asked for.
		for _, r := range srv.RequestLog() {
			other := "sshPublicKeys"
			if f.SSHKeys == "sshPublicKeys" {
				other = "sshPublicKey%2C"
			}
			if strings.Contains(r.Query, other) {
				t.Errorf("flavor %s: request asks for %s: %s", f.Name, other, r.Query)
			}
		}
	}
}
