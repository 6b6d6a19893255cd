package scim

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/scimbridge/scimbridge/syncd/redact"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// Finding is one thing the probe learnt about the server that the
// configuration should follow, with the option that changes it.
type Finding struct {
	// Error: the configuration will fail against this server.
	// Otherwise a warning: it works, worse than it could.
	Error   bool
	Option  string
	Message string
}

func (f Finding) String() string { return f.Message + " (" + f.Option + ")" }

// ProbeReport is what Probe measured.
type ProbeReport struct {
	Discovery *Discovery
	// PageTime is one page of page_size users without sortBy; SortTime
	// the same page with sortBy (0: not measured).
	PageTime, SortTime time.Duration
	Findings           []Finding
	// FirstPage is the first page of users and of groups as the read
	// would decode them, for check-config to validate (nil: not read).
	// GroupsComplete: every group was on that page.
	FirstPage      *source.Directory
	GroupsComplete bool
}

// probeUnstableCount is the page size of the order-stability probe.
const probeUnstableCount = 100

// Probe asks the server, in a handful of single-attempt requests, the
// questions a first full read would otherwise answer by failing:
// whether it accepts attributes=, how long a page takes, what sortBy
// costs, whether its unsorted order is stable. check-config --online and
// syncd run at start print the findings; each names the option to change.
func (c *Client) Probe(ctx context.Context) (*ProbeReport, error) {
	rep, err := c.probe(ctx)
	return rep, redact.Error(err)
}

func (c *Client) probe(ctx context.Context) (*ProbeReport, error) {
	d, err := c.Discover(ctx)
	if err != nil {
		return nil, err
	}
	rep := &ProbeReport{Discovery: d}
	add := func(isErr bool, opt, format string, args ...any) {
		// Findings are printed as they are: scrubbed of any credential
		// a server echoed into them (guard.go).
		rep.Findings = append(rep.Findings, Finding{Error: isErr, Option: opt, Message: redact.String(fmt.Sprintf(format, args...))})
	}
	cursor := c.paging(d) == "cursor"
	size := c.opts.PageSize
	if d.MaxPageSize > 0 && size > d.MaxPageSize {
		size = d.MaxPageSize
	}
	page := func(q url.Values, count int) url.Values {
		q = cloneValues(q)
		q.Set("count", strconv.Itoa(count))
		if cursor {
			q.Set("cursor", "")
		} else {
			q.Set("startIndex", "1")
		}
		return q
	}
	once := func(q url.Values) (*listPage, time.Duration, error) {
		u := c.endpoint(c.opts.UsersEndpoint, q)
		var p listPage
		t0 := time.Now()
		_, err := c.tryShown(ctx, u, shownURL(u), &p)
		return &p, time.Since(t0), err
	}
	timedOut := func(err error) bool {
		return errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
	}

	// attributes=: some servers answer it with 400.
	uq := c.userQuery()
	noAttr := c.opts.NoAttributesParam
	if !noAttr {
		_, _, err := once(page(uq, 1))
		var he *HTTPError
		if errors.As(err, &he) && he.Status == 400 {
			add(false, "send_attributes", "the server rejects the attributes= parameter (%v): syncd reads without it after the first refusal (attributes the server returns only on request will be missing); send_attributes = false skips the first try", err)
			uq.Del("attributes")
			noAttr = true
		} else if err != nil && !timedOut(err) {
			return rep, err
		}
	}

	// One full page, as the read will ask for it, without sortBy.
	p, took, err := once(page(uq, size))
	rep.PageTime = took
	switch {
	case timedOut(err):
		add(true, "request_timeout", "one page of %d users took longer than request_timeout (%s): lower page_size or raise request_timeout", size, c.opts.RequestTimeout)
		return rep, nil
	case err != nil:
		return rep, err
	case took > c.opts.RequestTimeout/2:
		add(false, "request_timeout", "one page of %d users took %s, more than half of request_timeout (%s): lower page_size or raise request_timeout", size, took.Round(time.Millisecond), c.opts.RequestTimeout)
	}
	rep.sample(c, p, add)
	rep.firstPage(ctx, c, p, size, cursor)
	if p.TotalResults == nil && !cursor {
		add(false, "full_reconcile_interval", "the server sends no totalResults: deletions are seen only at the full reconcile")
	}

	if cursor {
		return rep, nil // cursors are stable and take no sortBy
	}
	if c.opts.SortBy != "" && d.SortSupported {
		q := page(uq, size)
		q.Set("sortBy", c.opts.SortBy)
		_, st, err := once(q)
		rep.SortTime = st
		switch {
		case timedOut(err):
			add(true, "sort_by", "one page with sortBy=%s took longer than request_timeout (%s), %s without: the server sorts the whole directory for every page; set sort_by = \"\"", c.opts.SortBy, c.opts.RequestTimeout, took.Round(time.Millisecond))
		case err != nil:
			var he *HTTPError
			if errors.As(err, &he) && he.Status == 400 {
				add(true, "sort_by", "the server refuses sortBy=%s (%v): set sort_by to an attribute it can sort on, or \"\"", c.opts.SortBy, err)
			} else {
				return rep, err
			}
		case st > 2*took+time.Second || st > c.opts.RequestTimeout/2:
			add(false, "sort_by", "one page takes %s with sortBy=%s and %s without: set sort_by = \"\" unless the server's unsorted order is unstable", st.Round(time.Millisecond), c.opts.SortBy, took.Round(time.Millisecond))
		}
		return rep, nil
	}
	// No sortBy: is the server's order stable? Two reads of the same page
	// in a different order mean index paging would repeat and skip.
	q := page(uq, min(size, probeUnstableCount))
	if !noAttr {
		q.Set("attributes", "id")
	}
	var orders [2][]string
	for i := range orders {
		p, _, err := once(q)
		if err != nil {
			return rep, err
		}
		for _, r := range p.Resources {
			id, _ := (&resource{top: r}).id()
			orders[i] = append(orders[i], id)
		}
	}
	if !slices.Equal(orders[0], orders[1]) {
		if d.SortSupported {
			add(true, "sort_by", "the server lists users in a different order each time it is asked: index paging would repeat and skip records; set sort_by = \"id\"")
		} else {
			add(true, "paging", "the server lists users in a different order each time it is asked and cannot sort: index paging would repeat and skip records; use cursor paging if it offers it (paging = \"cursor\")")
		}
	}
	return rep, nil
}

// firstPage decodes the users of p and reads one page of groups (errors
// there are left to the read: this is only for check-config's sample).
func (rep *ProbeReport) firstPage(ctx context.Context, c *Client, p *listPage, size int, cursor bool) {
	dir := &source.Directory{}
	for _, top := range p.Resources {
		dir.Users = append(dir.Users, c.toUser(&resource{top: top}))
	}
	q := c.groupQuery()
	q.Set("count", strconv.Itoa(size))
	if cursor {
		q.Set("cursor", "")
	} else {
		q.Set("startIndex", "1")
	}
	var gp listPage
	if err := c.get(ctx, c.endpoint(c.opts.GroupsEndpoint, q), &gp); err == nil {
		for _, top := range gp.Resources {
			g, _, _ := c.toGroup(&resource{top: top})
			dir.Groups = append(dir.Groups, g)
		}
		rep.GroupsComplete = gp.TotalResults != nil && int(*gp.TotalResults) <= len(gp.Resources) && gp.NextCursor == nil
	}
	rep.FirstPage = dir
}

// sample checks the users of one page against the configured paths: a
// path no user has is a wrong path or an attribute not returned (the
// first release read sshPublicKeys where servers publish sshPublicKey,
// and every user got 0 keys while check-config said ok).
func (rep *ProbeReport) sample(c *Client, p *listPage, add func(bool, string, string, ...any)) {
	if len(p.Resources) == 0 {
		return
	}
	var uid, gid, keys, shell, home int
	for _, top := range p.Resources {
		u := c.toUser(&resource{top: top})
		if u.UID != nil {
			uid++
		}
		if u.GID != nil {
			gid++
		}
		if len(u.SSHKeys) > 0 {
			keys++
		}
		if u.Shell != "" {
			shell++
		}
		if u.Home != "" {
			home++
		}
	}
	n := len(p.Resources)
	ps := c.paths
	if ps.uid.Attr != "" && uid == 0 {
		add(true, "attributes.uid", "none of the first %d users has %s: check the path (and the preset), and that the server returns it", n, ps.uid)
	}
	if ps.gid.Attr != "" && gid == 0 {
		add(true, "attributes.gid", "none of the first %d users has %s: check the path (and the preset), and that the server returns it", n, ps.gid)
	}
	if kp := c.sshKeyPaths(); len(kp) > 0 && keys == 0 {
		names := make([]string, len(kp))
		for i, p := range kp {
			names[i] = p.String()
		}
		add(false, "attributes.ssh_keys", "none of the first %d users has an SSH key at %v: scim-keys will offer none; check the path", n, names)
	}
	if ps.shell.Attr != "" && shell == 0 {
		add(false, "attributes.shell", "none of the first %d users has %s: everyone gets default_shell", n, ps.shell)
	}
	if ps.home.Attr != "" && home == 0 {
		add(false, "attributes.home", "none of the first %d users has %s: home_template decides", n, ps.home)
	}
}
