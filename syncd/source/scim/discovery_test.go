package scim

import (
	"context"
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"
)

// Discovery is advice: a server whose /ServiceProviderConfig or /Schemas
// is missing, refused, odd-typed or not a ListResponse is still synced,
// with a warning. Only what cannot succeed later is an error: the
// credentials refused, or a server error that may be transient (its
// defaults would be kept until the next discovery).
func TestDiscoveryTolerance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bodies  map[string]string
		status  map[string]int
		check   func(t *testing.T, d *Discovery)
		wantErr string
		warn    string // a warning containing this
	}{
		{name: "no ServiceProviderConfig, no Schemas", bodies: map[string]string{}, warn: "no ServiceProviderConfig",
			check: func(t *testing.T, d *Discovery) {
				if d.Paging != "index" || d.SortSupported || d.FilterSupported {
					t.Errorf("discovery %+v", d)
				}
			}},
		{name: "string-typed ServiceProviderConfig", bodies: map[string]string{
			"ServiceProviderConfig": `{"filter": {"supported": "true", "maxResults": "50"}, "sort": {"supported": "True"},
				"etag": {"supported": "false"}, "pagination": {"cursor": "true", "index": "true", "maxPageSize": "40"}}`},
			check: func(t *testing.T, d *Discovery) {
				if !d.FilterSupported || !d.SortSupported || d.ETagSupported || d.MaxPageSize != 40 || d.Paging != "cursor" {
					t.Errorf("discovery %+v", d)
				}
			}},
		{name: "ServiceProviderConfig 405", bodies: map[string]string{"ServiceProviderConfig": `{"status": "405", "detail": "GET not allowed"}`},
			status: map[string]int{"ServiceProviderConfig": 405}, warn: "no ServiceProviderConfig"},
		{name: "ServiceProviderConfig 400", bodies: map[string]string{"ServiceProviderConfig": `{"status": 400, "detail": "unknown resource"}`},
			status: map[string]int{"ServiceProviderConfig": 400}, warn: "no ServiceProviderConfig"},
		{name: "ServiceProviderConfig unreadable", bodies: map[string]string{"ServiceProviderConfig": `{"filter": {"supported": "sometimes"}}`},
			warn: "ServiceProviderConfig"},
		{name: "ServiceProviderConfig 500", bodies: map[string]string{"ServiceProviderConfig": `{"status": "500"}`},
			status: map[string]int{"ServiceProviderConfig": 500}, wantErr: "HTTP 500"},
		{name: "ServiceProviderConfig 401", bodies: map[string]string{"ServiceProviderConfig": `{"status": "401", "detail": "token expired"}`},
			status: map[string]int{"ServiceProviderConfig": 401}, wantErr: "credentials"},
		{name: "Schemas 500", bodies: map[string]string{"Schemas": `{"status": "500", "detail": "not implemented"}`},
			status: map[string]int{"Schemas": 500}, warn: "attribute paths not checked"},
		{name: "Schemas 403", bodies: map[string]string{"Schemas": `{"status": "403"}`},
			status: map[string]int{"Schemas": 403}, warn: "attribute paths not checked"},
		{name: "Schemas HTML", bodies: map[string]string{"Schemas": `<html><body>Not here</body></html>`}, warn: "attribute paths not checked"},
		{name: "Schemas as a bare array", bodies: map[string]string{"Schemas": `[{"id": "urn:ietf:params:scim:schemas:extension:posix:2.0:User",
				"attributes": [{"name": "uidNumber"}, {"name": "gidNumber"}]}]`},
			warn: `schema urn:ietf:params:scim:schemas:extension:posix:2.0:User has no attribute "sshPublicKeys"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &handWritten{bodies: map[string]string{"Users": minimalLists, "Groups": minimalLists}, status: tc.status}
			for k, v := range tc.bodies {
				h.bodies[k] = v
			}
			if strings.HasPrefix(tc.bodies["Schemas"], "<html>") {
				h.ctypes = map[string]string{"Schemas": "text/html"}
			}
			log, _ := logtest.NewNullLogger()
			c := shapeClient(t, serveHandWritten(t, h), log)
			d, err := c.Discover(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, d)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(d.Warnings, "\n"), tc.warn) {
				t.Errorf("warnings %q; want one containing %q", d.Warnings, tc.warn)
			}
			if _, err := c.Fetch(context.Background()); err != nil {
				t.Errorf("fetch after discovery: %v", err)
			}
		})
	}
}

// Refused credentials are never retried and are named as what they are,
// with the server's reason (WWW-Authenticate, SCIM detail).
func TestAuthErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   []string
	}{
		{401, []string{"HTTP 401", "refused the credentials", "token expired"}},
		{403, []string{"HTTP 403", "not allowed", "insufficient scope"}},
	} {
		for _, ep := range []string{"ServiceProviderConfig", "Users"} {
			h := &handWritten{bodies: map[string]string{
				"ServiceProviderConfig": `{}`, "Users": minimalLists, "Groups": minimalLists,
			}, status: map[string]int{}}
			switch tc.status {
			case 401:
				h.bodies[ep] = `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"], "status": "401", "detail": "token expired"}`
			case 403:
				h.bodies[ep] = `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"], "status": 403, "detail": "insufficient scope"}`
			}
			h.status[ep] = tc.status
			c := shapeClient(t, serveHandWritten(t, h), quietLog())
			c.opts.MaxRetries = 5
			_, err := c.Fetch(context.Background())
			if err == nil {
				t.Fatalf("%d on %s: fetch succeeded", tc.status, ep)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%d on %s: error %q does not contain %q", tc.status, ep, err, w)
				}
			}
			n := 0
			for _, r := range h.reqs {
				if strings.HasSuffix(r.URL.Path, "/"+ep) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d on %s: %d requests to it, want 1 (no retry)", tc.status, ep, n)
			}
		}
	}
}

// A body that is JSON is read whatever plain media type labels it; markup
// is refused.
func TestResponseMediaTypes(t *testing.T) {
	for ct, ok := range map[string]bool{
		"application/scim+json": true, "application/scim+json; charset=utf-8": true, "application/json": true,
		"text/json": true, "text/plain; charset=utf-8": true, "application/octet-stream": true,
		"text/html": false, "application/xml": false, "application/xhtml+xml": false,
	} {
		h := &handWritten{bodies: map[string]string{"ServiceProviderConfig": `{}`, "Users": minimalLists, "Groups": minimalLists}, ctype: ct}
		_, err := shapeClient(t, serveHandWritten(t, h), quietLog()).Fetch(context.Background())
		if (err == nil) != ok {
			t.Errorf("Content-Type %q: err = %v, want ok=%v", ct, err, ok)
		}
	}
}

// A UTF-8 byte order mark before the JSON (some .NET and PowerShell
// services write one) is not a reason to refuse the body.
func TestByteOrderMark(t *testing.T) {
	h := &handWritten{bodies: map[string]string{
		"ServiceProviderConfig": "\ufeff{}",
		"Users":                 "\ufeff" + `{"totalResults": 1, "Resources": [{"id": "u1", "userName": "alice"}]}`,
		"Groups":                "\ufeff" + minimalLists,
	}}
	dir, err := shapeClient(t, serveHandWritten(t, h), quietLog()).Fetch(context.Background())
	if err != nil || len(dir.Users) != 1 || dir.Users[0].UserName != "alice" {
		t.Fatalf("dir %+v, err %v", dir, err)
	}
}
