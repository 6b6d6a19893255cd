package scim

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// A source that accepts the request and then sends nothing (or stops in
// the middle of a body) fails within read_timeout per attempt, retries
// after timeouts stop within the budget (poll_interval), and each timeout
// is logged at error naming the option.
func TestHungSourceFailsWithinBudget(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	for _, mode := range []string{"no headers", "stalled body"} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if mode == "stalled body" {
				w.Header().Set("Content-Type", "application/scim+json")
				w.WriteHeader(200)
				w.Write([]byte(`{"Resources": [`))
				w.(http.Flusher).Flush()
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		log, hook := test.NewNullLogger()
		c, err := New(Options{BaseURL: hs.URL + "/scim/v2", RequestTimeout: 30 * time.Second, MaxRetries: 6,
			ReadTimeout: 300 * time.Millisecond, TimeoutRetryBudget: 2 * time.Second, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		var v map[string]any
		err = c.get(context.Background(), hs.URL+"/scim/v2/Users?count=1", &v)
		took := time.Since(t0)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Option != "read_timeout" || !strings.Contains(err.Error(), "poll_interval") {
			t.Errorf("%s: error %v, want a read_timeout error that gave up within poll_interval", mode, err)
		}
		if took > 3*time.Second {
			t.Errorf("%s: gave up after %s, want within the 2s budget (+ one read_timeout)", mode, took)
		}
		errs := 0
		for _, e := range hook.AllEntries() {
			if e.Level == logrus.ErrorLevel && strings.Contains(e.Message, "read_timeout") {
				errs++
			}
		}
		if errs == 0 {
			t.Errorf("%s: no timeout logged at error", mode)
		}
		hs.CloseClientConnections()
		hs.Close()
	}
}
