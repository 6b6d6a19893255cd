package scim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// Permanent transport errors fail at once and name the fix (issue 20: an
// unknown CA did not name ca_file; plain HTTP on the https port was
// retried for a minute; a 404 did not suggest base_url).
func TestErrorsNameTheFix(t *testing.T) {
	ctx := context.Background()
	_, base := testServer(t, scimserver.Options{}, 5, 1)
	for _, tc := range []struct {
		name, url, want string
	}{
		{"plain HTTP on an https URL", strings.Replace(base, "http://", "https://", 1), "server's TLS port"},
		{"404", strings.TrimSuffix(base, "/scim/v2") + "/wrong", "check base_url"},
	} {
		c := newTestClient(t, tc.url, func(o *Options) { o.MaxRetries = 6 })
		_, err := c.Fetch(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
		if r := c.Stats().Retries; r != 0 {
			t.Errorf("%s: retried %d times; the error is permanent", tc.name, r)
		}
	}
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	defer ts.Close()
	c := newTestClient(t, ts.URL+"/scim/v2", func(o *Options) { o.MaxRetries = 6 })
	_, err := c.Fetch(ctx)
	if err == nil || !strings.Contains(err.Error(), "set ca_file") || c.Stats().Retries != 0 {
		t.Errorf("unknown CA: %v (retries %d); want ca_file named, no retry", err, c.Stats().Retries)
	}
}
