package scim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/redact"
)

// Discovery is what the server says about itself, read from
// /ServiceProviderConfig and /Schemas, and what syncd decided from it.
type Discovery struct {
	Paging          string // "index" or "cursor": what Fetch will use
	SortSupported   bool
	FilterSupported bool
	ETagSupported   bool
	// IndexSupported: the server pages by startIndex (pagination.index,
	// or no pagination object: RFC 7644's only paging). The removal
	// check's id listing uses it side by side (ids.go).
	IndexSupported bool
	// MaxPageSize is the server's limit on count, 0 if unknown.
	MaxPageSize int
	// Warnings are configuration problems the server's self-description
	// reveals: paths that do not exist, attributes that are only
	// returned on request while attributes= cannot be sent.
	Warnings []string
}

// spc is the part of /ServiceProviderConfig syncd uses. Booleans and
// numbers may come as strings.
type spc struct {
	Filter struct {
		Supported  flexBool `json:"supported"`
		MaxResults flexInt  `json:"maxResults"`
	} `json:"filter"`
	Sort struct {
		Supported flexBool `json:"supported"`
	} `json:"sort"`
	ETag struct {
		Supported flexBool `json:"supported"`
	} `json:"etag"`
	Pagination *struct {
		Cursor                  flexBool `json:"cursor"`
		Index                   flexBool `json:"index"`
		DefaultPaginationMethod string   `json:"defaultPaginationMethod"`
		MaxPageSize             flexInt  `json:"maxPageSize"`
	} `json:"pagination"`
}

type schemaAttr struct {
	Name          string       `json:"name"`
	Returned      string       `json:"returned"`
	MultiValued   bool         `json:"multiValued"`
	SubAttributes []schemaAttr `json:"subAttributes"`
}

type schema struct {
	ID         string       `json:"id"`
	Attributes []schemaAttr `json:"attributes"`
}

// Discover reads the server's configuration and schemas, decides how to
// page, and checks the configured paths. Both are advice: a server that
// lacks them or refuses them (a 4xx other than 401, 403 and 429, or 501),
// or whose ServiceProviderConfig cannot be read, gets the configured or
// conservative choices (index paging, no sortBy, no filters) and a
// warning, and any failure of /Schemas only leaves the paths unchecked.
// Refused credentials, a server that cannot be reached and server
// errors on /ServiceProviderConfig are errors: the choices made from a
// passing failure would stay until the next discovery.
func (c *Client) Discover(ctx context.Context) (*Discovery, error) {
	d, err := c.discover(ctx)
	return d, redact.Error(c.nameTimeout(ctx, err))
}

func (c *Client) discover(ctx context.Context) (*Discovery, error) {
	d := &Discovery{}
	var sp spc
	var raw json.RawMessage
	err := c.get(ctx, c.endpoint("ServiceProviderConfig", nil), &raw)
	var he *HTTPError
	switch {
	case err == nil:
		if jerr := json.Unmarshal(raw, &sp); jerr != nil {
			sp = spc{}
			d.Warnings = append(d.Warnings, fmt.Sprintf("ServiceProviderConfig unreadable (%v): paging %s, no sortBy, no filters", jerr, c.opts.Paging))
			break
		}
		d.SortSupported = bool(sp.Sort.Supported)
		d.FilterSupported = bool(sp.Filter.Supported)
		d.ETagSupported = bool(sp.ETag.Supported)
		d.MaxPageSize = int(sp.Filter.MaxResults)
		if p := sp.Pagination; p != nil && p.MaxPageSize > 0 && (d.MaxPageSize <= 0 || int(p.MaxPageSize) < d.MaxPageSize) {
			d.MaxPageSize = int(p.MaxPageSize)
		}
		if d.MaxPageSize < 0 {
			d.MaxPageSize = 0
		}
	case errors.As(err, &he) && absent(he.Status):
		d.Warnings = append(d.Warnings, fmt.Sprintf("no ServiceProviderConfig (%v): paging %s, no sortBy, no filters", err, c.opts.Paging))
	default:
		return nil, fmt.Errorf("scim: discovery: %w", err)
	}

	d.IndexSupported = sp.Pagination == nil || bool(sp.Pagination.Index)
	switch c.opts.Paging {
	case "index", "cursor":
		d.Paging = c.opts.Paging
		if p := sp.Pagination; p != nil && c.opts.Paging == "cursor" && !p.Cursor {
			d.Warnings = append(d.Warnings, "paging = cursor but the server does not list cursor pagination")
		}
	default:
		// Cursor paging, where offered, does not shift when records are
		// added or removed during the walk; index paging does.
		d.Paging = "index"
		if p := sp.Pagination; p != nil && bool(p.Cursor) {
			d.Paging = "cursor"
		}
	}

	schemas, err := c.schemas(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("scim: discovery: %w", err)
		}
		d.Warnings = append(d.Warnings, fmt.Sprintf("no usable /Schemas (%v): attribute paths not checked", err))
	} else {
		d.Warnings = append(d.Warnings, c.checkPaths(schemas)...)
	}
	for _, w := range d.Warnings {
		c.log.WithField("server", c.Name()).Warn("scim: " + w)
	}
	c.mu.Lock()
	c.disc = d
	c.mu.Unlock()
	return d, nil
}

// absent reports whether an HTTP status on a discovery endpoint means
// the server does not have it (or will not serve it to anyone), as
// opposed to refused credentials, throttling or a server error.
func absent(status int) bool {
	switch {
	case status == 401 || status == 403 || status == 429:
		return false
	case status >= 400 && status < 500, status == 501:
		return true
	}
	return false
}

// schemas reads /Schemas: a ListResponse (RFC 7644 section 4), or the
// bare array some servers send.
func (c *Client) schemas(ctx context.Context) ([]schema, error) {
	var raw json.RawMessage
	if err := c.get(ctx, c.endpoint("Schemas", nil), &raw); err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		var arr []schema
		if err := json.Unmarshal(raw, &arr); err != nil {
			return nil, fmt.Errorf("/Schemas: %w", err)
		}
		return arr, nil
	}
	var list struct {
		Resources []schema `json:"Resources"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("/Schemas: %w", err)
	}
	return list.Resources, nil
}

// checkPaths compares the configured attribute paths with the schemas.
func (c *Client) checkPaths(schemas []schema) []string {
	byURN := make(map[string]schema)
	for _, s := range schemas {
		byURN[strings.ToLower(s.ID)] = s
	}
	var warns []string
	check := func(key string, p Path, core string) {
		if p.Attr == "" {
			return
		}
		urn := p.URN
		if p.IsCore() {
			urn = core
		}
		s, ok := byURN[strings.ToLower(urn)]
		if !ok {
			if !p.IsCore() {
				warns = append(warns, fmt.Sprintf("%s path %q: the server has no schema %s", key, p.String(), urn))
			}
			return
		}
		a := findAttr(s.Attributes, p.Attr)
		if a == nil {
			warns = append(warns, fmt.Sprintf("%s path %q: schema %s has no attribute %q", key, p.String(), urn, p.Attr))
			return
		}
		if p.Sub != "" {
			if sa := findAttr(a.SubAttributes, p.Sub); sa == nil {
				warns = append(warns, fmt.Sprintf("%s path %q: attribute %q has no sub-attribute %q", key, p.String(), p.Attr, p.Sub))
			} else if sa.Returned != "" {
				a = sa
			}
		}
		switch strings.ToLower(a.Returned) {
		case "never":
			warns = append(warns, fmt.Sprintf("%s path %q: the server never returns it", key, p.String()))
		case "request":
			if c.opts.NoAttributesParam {
				warns = append(warns, fmt.Sprintf("%s path %q is returned only on request, and attributes= is not sent (no_attributes_param): it will be missing", key, p.String()))
			} else {
				c.log.WithField("path", p.String()).Debug("scim: attribute is returned on request; requesting it")
			}
		}
	}
	ps := c.paths
	check("userName", ps.userName, CoreUserURN)
	check("uid", ps.uid, CoreUserURN)
	check("gid", ps.gid, CoreUserURN)
	check("gecos", ps.gecos, CoreUserURN)
	check("home", ps.home, CoreUserURN)
	check("shell", ps.shell, CoreUserURN)
	if ps.sshKeysAlt.Attr == "" || ps.sshKeys.Attr == "" {
		check("ssh_keys", ps.sshKeys, CoreUserURN)
	} else {
		// Two spellings (sshPublicKey, sshPublicKeys): ask for the one
		// the server has; warn only when it has neither.
		n := len(warns)
		check("ssh_keys", ps.sshKeys, CoreUserURN)
		first := append([]string(nil), warns[n:]...)
		warns = warns[:n]
		check("ssh_keys_alt", ps.sshKeysAlt, CoreUserURN)
		second := append([]string(nil), warns[n:]...)
		warns = warns[:n]
		switch {
		case len(first) == 0:
			c.setKeyPaths(ps.sshKeys)
		case len(second) == 0:
			c.log.WithField("path", ps.sshKeysAlt.String()).Debug("scim: the server publishes SSH keys as " + ps.sshKeysAlt.Attr + ", not " + ps.sshKeys.Attr + ": reading that")
			c.setKeyPaths(ps.sshKeysAlt)
		default:
			warns = append(warns, first...)
		}
	}
	check("active", ps.active, CoreUserURN)
	check("group_name", ps.groupName, CoreGroupURN)
	check("group_gid", ps.groupGID, CoreGroupURN)
	return warns
}

func (c *Client) setKeyPaths(p Path) {
	c.mu.Lock()
	c.keyPaths = []Path{p}
	c.mu.Unlock()
}

func findAttr(list []schemaAttr, name string) *schemaAttr {
	for i := range list {
		if strings.EqualFold(list[i].Name, name) {
			return &list[i]
		}
	}
	return nil
}
