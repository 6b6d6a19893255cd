package scim

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// errHinted marks an error that already carries a hint.
var errHinted = errors.New("hinted")

// hinted is err with a sentence naming the option that fixes it.
type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string   { return h.err.Error() + h.hint }
func (h hinted) Unwrap() []error { return []error{h.err, errHinted} }

// Every timeout names the option that sets it (issue 12: a 50,000-user
// server timed out on every page for four minutes and the error named
// neither request_timeout nor sort_by).

// TimeoutError is a request or a whole read that ran out of time.
type TimeoutError struct {
	Option string // the configuration key: request_timeout or fetch_timeout
	Err    error
	Hint   string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%v: timed out (%s)%s", e.Err, e.Option, e.Hint)
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// nameTimeout wraps a deadline error with the option behind it: the
// caller's deadline is the whole read's (fetch_timeout), any other is
// one request's (request_timeout).
func (c *Client) nameTimeout(ctx context.Context, err error) error {
	if err == nil {
		return err
	}
	var he *HTTPError
	if errors.As(err, &he) && he.Status == 400 && !errors.Is(err, errHinted) {
		switch {
		case strings.Contains(he.URL, "attributes="):
			return hinted{err, "; the same request without attributes= failed too, so the parameter is not the cause (check base_url, users_query, groups_query)"}
		case strings.Contains(he.URL, "sortBy="):
			return hinted{err, "; if the server rejects sortBy, set sort_by = \"\" (check-config --online tells)"}
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var te *TimeoutError
	if errors.As(err, &te) {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Option: "fetch_timeout", Err: err,
			Hint: ": the whole read did not finish in time; raise fetch_timeout, or make pages cheaper (page_size, sort_by = \"\")"}
	}
	hint := fmt.Sprintf(": one request took longer than request_timeout (%s); raise request_timeout or lower page_size", c.opts.RequestTimeout)
	if c.opts.SortBy != "" {
		hint += fmt.Sprintf("; servers that sort the whole directory for every page are slow with sort_by = %q: try sort_by = \"\"", c.opts.SortBy)
	}
	return &TimeoutError{Option: "request_timeout", Err: err, Hint: hint}
}
