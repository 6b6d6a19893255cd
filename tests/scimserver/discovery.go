package scimserver

import (
	"net/http"
	"strings"
)

// serveConfig answers GET /ServiceProviderConfig (RFC 7643 §5, with the
// RFC 9865 pagination object).
func (s *Server) serveConfig(w *recorder, r *http.Request) {
	f := s.currentFaults()
	method := "index"
	if s.opts.Cursor && (s.opts.CursorDefault || f.IgnoreStartIndex) {
		method = "cursor"
	}
	cfg := map[string]any{
		"schemas":          []string{URNServiceConfig},
		"documentationUri": "https://github.com/scimbridge/scimbridge/tree/main/tests/scimserver",
		"patch":            map[string]any{"supported": false},
		"bulk":             map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":           map[string]any{"supported": true, "maxResults": s.opts.MaxPageSize},
		"changePassword":   map[string]any{"supported": false},
		"sort":             map[string]any{"supported": true},
		"etag":             map[string]any{"supported": true},
		"pagination": map[string]any{
			"cursor":                  s.opts.Cursor,
			"index":                   !f.IgnoreStartIndex,
			"defaultPaginationMethod": method,
			"defaultPageSize":         s.opts.DefaultPageSize,
			"maxPageSize":             s.opts.MaxPageSize,
			"cursorTimeout":           int(s.opts.CursorTimeout.Seconds()),
		},
		"authenticationSchemes": s.authSchemes(),
		"meta": map[string]any{
			"resourceType": "ServiceProviderConfig",
			"location":     s.baseURL(r) + "/ServiceProviderConfig",
		},
	}
	if f.OmitPaginationConfig {
		delete(cfg, "pagination")
	}
	body := marshal(cfg)
	response{body: body, etag: bodyETag(body)}.write(w, r)
}

func (s *Server) authSchemes() []any {
	var out []any
	if s.opts.Token != "" {
		out = append(out, map[string]any{"type": "oauthbearertoken", "name": "OAuth Bearer Token",
			"description": "Authentication with a bearer token", "primary": true})
	}
	if s.opts.BasicUser != "" {
		out = append(out, map[string]any{"type": "httpbasic", "name": "HTTP Basic",
			"description": "Authentication with HTTP basic", "primary": s.opts.Token == ""})
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func (s *Server) schemaDefs() []schemaDef {
	ret := s.returned()
	return []schemaDef{userSchema(), groupSchema(), userExtSchema(s.flavor, ret), groupExtSchema(s.flavor, ret)}
}

func (s *Server) schemaResource(d schemaDef, base string) map[string]any {
	return map[string]any{
		"schemas":     []string{URNSchema},
		"id":          d.ID,
		"name":        d.Name,
		"description": d.Description,
		"attributes":  d.Attributes,
		"meta":        map[string]any{"resourceType": "Schema", "location": base + "/Schemas/" + d.ID},
	}
}

// serveSchemas answers GET /Schemas and GET /Schemas/{urn}.
func (s *Server) serveSchemas(w *recorder, r *http.Request, rest []string) {
	base := s.baseURL(r)
	var list []any
	for _, d := range s.schemaDefs() {
		if len(rest) == 1 && strings.EqualFold(rest[0], d.ID) {
			body := marshal(s.schemaResource(d, base))
			response{body: body, etag: bodyETag(body)}.write(w, r)
			return
		}
		list = append(list, s.schemaResource(d, base))
	}
	if len(rest) == 1 {
		writeError(w, http.StatusNotFound, "", "no schema "+rest[0])
		return
	}
	s.writeListOf(w, r, list)
}

func (s *Server) resourceTypes(base string) []map[string]any {
	rt := func(name, endpoint, schema, ext, desc string) map[string]any {
		return map[string]any{
			"schemas":          []string{URNResourceType},
			"id":               name,
			"name":             name,
			"endpoint":         "/" + endpoint,
			"description":      desc,
			"schema":           schema,
			"schemaExtensions": []any{map[string]any{"schema": ext, "required": false}},
			"meta":             map[string]any{"resourceType": "ResourceType", "location": base + "/ResourceTypes/" + name},
		}
	}
	return []map[string]any{
		rt(resourceTypeUser, "Users", URNUser, s.flavor.UserURN, "User Account"),
		rt(resourceTypeGroup, "Groups", URNGroup, s.flavor.GroupURN, "Group"),
	}
}

// serveResourceTypes answers GET /ResourceTypes and GET /ResourceTypes/{name}.
func (s *Server) serveResourceTypes(w *recorder, r *http.Request, rest []string) {
	var list []any
	for _, rt := range s.resourceTypes(s.baseURL(r)) {
		if len(rest) == 1 && strings.EqualFold(rest[0], rt["id"].(string)) {
			body := marshal(rt)
			response{body: body, etag: bodyETag(body)}.write(w, r)
			return
		}
		list = append(list, rt)
	}
	if len(rest) == 1 {
		writeError(w, http.StatusNotFound, "", "no resource type "+rest[0])
		return
	}
	s.writeListOf(w, r, list)
}

func (s *Server) writeListOf(w *recorder, r *http.Request, list []any) {
	body := marshal(map[string]any{
		"schemas":      []string{URNListResponse},
		"totalResults": len(list),
		"itemsPerPage": len(list),
		"startIndex":   1,
		"Resources":    list,
	})
	response{body: body, etag: bodyETag(body)}.write(w, r)
}
