package receiver

// The write requests of the load path (POST and PUT of a user or a
// group) answered by the gate itself, the way the library answers them
// (github.com/elimity-com/scim handlers.go resourcePostHandler and
// resourcePutHandler, resource_handler.go response): the same
// validation by the same schema code, the same handler, the same status,
// headers and body bytes. Why: the library's validation rebuilds the
// resource type's schema with externalId on every request
// (ResourceType.schemaWithCommon), and building that attribute compiles
// a regular expression (schema.validateAttributeName calls
// regexp.MatchString): about 5% of a POST's CPU (BenchmarkCreate,
// pprof), for a schema that never changes. Here it is built once, in
// NewHandler. Not chosen: a fork of the library (its other handlers,
// filters and PATCH validation stay its own). A request the fast path
// finds invalid is handed to the library, which answers it (the body is
// still there): every error answer stays the library's own.
// TestFastWritesAnswerAsTheLibrary compares both.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	escim "github.com/elimity-com/scim"
	scimerr "github.com/elimity-com/scim/errors"
	eschema "github.com/elimity-com/scim/schema"
)

// fastType is one resource type as the fast path serves it.
type fastType struct {
	rt escim.ResourceType
	// common is rt.Schema with externalId, as the library's
	// schemaWithCommon builds it on each request.
	common eschema.Schema
}

func newFastType(rt escim.ResourceType) fastType {
	s := rt.Schema
	externalID := eschema.SimpleCoreAttribute(eschema.SimpleStringParams(eschema.StringParams{
		CaseExact:  true,
		Mutability: eschema.AttributeMutabilityReadWrite(),
		Name:       eschema.CommonAttributeExternalID,
		Uniqueness: eschema.AttributeUniquenessNone(),
	}))
	attrs := make([]eschema.CoreAttribute, len(s.Attributes), len(s.Attributes)+1)
	copy(attrs, s.Attributes)
	s.Attributes = append(attrs, externalID)
	return fastType{rt: rt, common: s}
}

// validate is the library's ResourceType.validate with the schema built
// once; nil when the document is not valid (the library then answers).
func (t *fastType) validate(raw []byte) escim.ResourceAttributes {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return nil
	}
	attributes, scimErr := t.common.Validate(m)
	if scimErr != nil {
		return nil
	}
	for _, extension := range t.rt.SchemaExtensions {
		field := m[extension.Schema.ID]
		if field == nil {
			if extension.Required {
				return nil
			}
			continue
		}
		ext, scimErr := extension.Schema.ValidateExtension(field)
		if scimErr != nil {
			return nil
		}
		attributes[extension.Schema.ID] = ext
	}
	return attributes
}

// serveWrite answers a POST to a resource type's endpoint or a PUT to
// one of its resources as the library would; false when it is not such a
// request, or its document is invalid (the caller hands it to the
// library).
func (g *Gate) serveWrite(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return false
	}
	path := strings.TrimPrefix(r.URL.Path, "/v2")
	for i := range g.fast {
		t := &g.fast[i]
		var id string
		switch {
		case r.Method == http.MethodPost && path == t.rt.Endpoint:
		case r.Method == http.MethodPut && strings.HasPrefix(path, t.rt.Endpoint+"/") && path != t.rt.Endpoint+"/.search":
			var err error
			if id, err = url.PathUnescape(strings.TrimPrefix(path, t.rt.Endpoint+"/")); err != nil {
				return false
			}
		default:
			continue
		}
		attrs := t.validate(body)
		if attrs == nil {
			return false
		}
		w.Header().Set("Content-Type", "application/scim+json")
		var res escim.Resource
		var err error
		if r.Method == http.MethodPost {
			res, err = t.rt.Handler.Create(r, attrs)
		} else {
			res, err = t.rt.Handler.Replace(r, id, attrs)
		}
		if err != nil {
			e := scimerr.CheckScimError(err, r.Method)
			raw, _ := json.Marshal(&e)
			w.WriteHeader(e.Status)
			w.Write(raw)
			return true
		}
		if r.Method == http.MethodPost {
			id = res.ID
		}
		location := g.location(t.rt, id)
		raw, err := json.Marshal(response(res, t.rt, location))
		if err != nil {
			raw, _ = json.Marshal(&scimerr.ScimErrorInternal)
			w.WriteHeader(scimerr.ScimErrorInternal.Status)
			w.Write(raw)
			return true
		}
		if r.Method == http.MethodPost {
			w.Header().Set("Location", location)
		}
		if res.Meta.Version != "" {
			w.Header().Set("Etag", res.Meta.Version)
		}
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		} else {
			w.WriteHeader(http.StatusOK)
		}
		w.Write(raw)
		return true
	}
	return false
}

// location is the library's resourceLocation.
func (g *Gate) location(rt escim.ResourceType, id string) string {
	rel := rt.Endpoint[1:] + "/" + url.PathEscape(id)
	if g.o.BaseURL == "" {
		return rel
	}
	u, err := url.Parse(g.o.BaseURL)
	if err != nil {
		return rel
	}
	u.Path = u.Path + "/" + rel
	return u.String()
}

// resourceMeta is the library's meta (meta.go): the same fields, tags
// and order, so the same bytes.
type resourceMeta struct {
	ResourceType string `json:"resourceType"`
	Created      string `json:"created,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
	Location     string `json:"location"`
	Version      string `json:"version,omitempty"`
}

// response is the library's Resource.response.
func response(r escim.Resource, rt escim.ResourceType, location string) escim.ResourceAttributes {
	out := make(escim.ResourceAttributes, len(r.Attributes)+4)
	for k, v := range r.Attributes {
		out[k] = v
	}
	out[eschema.CommonAttributeID] = r.ID
	if r.ExternalID.Present() {
		out[eschema.CommonAttributeExternalID] = r.ExternalID.Value()
	}
	schemas := []string{rt.Schema.ID}
	for _, s := range rt.SchemaExtensions {
		schemas = append(schemas, s.Schema.ID)
	}
	out["schemas"] = schemas
	m := resourceMeta{ResourceType: rt.Name, Location: location}
	if r.Meta.Created != nil {
		m.Created = r.Meta.Created.Format(time.RFC3339)
	}
	if r.Meta.LastModified != nil {
		m.LastModified = r.Meta.LastModified.Format(time.RFC3339)
	}
	if len(r.Meta.Version) != 0 {
		m.Version = r.Meta.Version
	}
	out[eschema.CommonAttributeMeta] = m
	return out
}
