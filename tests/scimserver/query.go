package scimserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// listQuery is a list or .search request's parameters.
type listQuery struct {
	filter     string
	attributes []string
	excluded   []string
	sortBy     string
	sortOrder  string
	startIndex int
	hasStart   bool
	count      int
	hasCount   bool
	cursor     *string // nil: no cursor parameter; "" asks for page one
}

// searchRequest is the RFC 7644 §3.4.3 POST /.search body.
type searchRequest struct {
	Schemas            []string `json:"schemas"`
	Attributes         []string `json:"attributes"`
	ExcludedAttributes []string `json:"excludedAttributes"`
	Filter             string   `json:"filter"`
	SortBy             string   `json:"sortBy"`
	SortOrder          string   `json:"sortOrder"`
	StartIndex         *int     `json:"startIndex"`
	Count              *int     `json:"count"`
	Cursor             *string  `json:"cursor"`
}

// parseListQuery reads the query string (parameter names are matched
// case-insensitively, as many clients vary them) or a .search body.
func parseListQuery(r *http.Request, search bool) (listQuery, error) {
	var q listQuery
	if search {
		var sr searchRequest
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return q, fmt.Errorf("read .search body: %v", err)
		}
		if err := json.Unmarshal(body, &sr); err != nil {
			return q, fmt.Errorf("parse .search body: %v", err)
		}
		q = listQuery{filter: sr.Filter, attributes: sr.Attributes, excluded: sr.ExcludedAttributes,
			sortBy: sr.SortBy, sortOrder: sr.SortOrder, cursor: sr.Cursor}
		if sr.StartIndex != nil {
			q.startIndex, q.hasStart = *sr.StartIndex, true
		}
		if sr.Count != nil {
			q.count, q.hasCount = *sr.Count, true
		}
		return q, nil
	}
	for k, vs := range r.URL.Query() {
		v := vs[len(vs)-1]
		switch strings.ToLower(k) {
		case "filter":
			q.filter = v
		case "attributes":
			q.attributes = vs
		case "excludedattributes":
			q.excluded = vs
		case "sortby":
			q.sortBy = v
		case "sortorder":
			q.sortOrder = v
		case "startindex":
			n, err := strconv.Atoi(v)
			if err != nil {
				return q, fmt.Errorf("startIndex %q is not an integer", v)
			}
			q.startIndex, q.hasStart = n, true
		case "count":
			n, err := strconv.Atoi(v)
			if err != nil {
				return q, fmt.Errorf("count %q is not an integer", v)
			}
			q.count, q.hasCount = n, true
		case "cursor":
			c := v
			q.cursor = &c
		}
	}
	return q, nil
}
