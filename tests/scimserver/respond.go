package scimserver

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

const contentType = "application/scim+json; charset=utf-8"

// scimError is the RFC 7644 §3.12 error body; status is a string there.
type scimError struct {
	Schemas  []string `json:"schemas"`
	Status   string   `json:"status"`
	ScimType string   `json:"scimType,omitempty"`
	Detail   string   `json:"detail,omitempty"`
}

func writeError(w http.ResponseWriter, status int, scimType, detail string) {
	body, _ := json.Marshal(scimError{
		Schemas:  []string{URNError},
		Status:   strconv.Itoa(status),
		ScimType: scimType,
		Detail:   detail,
	})
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// response is a marshalled 200 body on its way out.
type response struct {
	body []byte
	// etag, when set, is sent and checked against If-None-Match.
	etag string
	// truncate cuts the body in half after the ETag is computed.
	truncate bool
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value is built from maps of JSON-safe types.
		panic("scimserver: marshal response: " + err.Error())
	}
	return b
}

// bodyETag is a weak validator over the representation: equal bodies
// (same data, same query) get equal tags.
func bodyETag(b []byte) string {
	h := sha256.Sum256(b)
	return `W/"` + hex.EncodeToString(h[:12]) + `"`
}

// write sends resp with If-None-Match and gzip handling.
func (resp response) write(w *recorder, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	if resp.etag != "" {
		h.Set("ETag", resp.etag)
		if etagMatch(r.Header.Get("If-None-Match"), resp.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	body := resp.body
	if resp.truncate {
		body = body[:len(body)/2]
		w.fault = "truncated"
	}
	h.Add("Vary", "Accept-Encoding")
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		// Speed over ratio: the client is on loopback.
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		zw.Write(body)
		zw.Close()
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// etagMatch implements If-None-Match's weak comparison.
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		_, qv, hasQ := strings.Cut(strings.ReplaceAll(params, " ", ""), "q=")
		if f, err := strconv.ParseFloat(qv, 64); hasQ && err == nil && f == 0 {
			return false
		}
		return true
	}
	return false
}
