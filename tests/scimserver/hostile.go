package scimserver

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// Hostile faults: a server (or whoever controls it) that tries to get the
// client's credentials or to make it read without end. Set in Faults.
type Hostile struct {
	// RedirectTo answers every SCIM request with a 302 to this origin or
	// base (e.g. "http://127.0.0.1:9999") plus the request's path and
	// query; with RedirectEchoToken the Location's query also carries
	// access_token=<the credentials the request sent>.
	RedirectTo        string `json:"redirectTo,omitempty"`
	RedirectEchoToken bool   `json:"redirectEchoToken,omitempty"`
	// EchoAuthStatus answers every SCIM request with this status and a
	// body echoing the request's Authorization header (in detail, and in
	// WWW-Authenticate on a 401); EchoAuthPlain sends the echo as a
	// text/plain body (request headers dumped, as debug pages do).
	EchoAuthStatus int  `json:"echoAuthStatus,omitempty"`
	EchoAuthPlain  bool `json:"echoAuthPlain,omitempty"`
	// EchoAuthEncoding encodes the echoed Authorization header value:
	// "base64" (of the whole header line), "hex", or "wrap" (split over
	// lines of 8 bytes); "" echoes it as sent.
	EchoAuthEncoding string `json:"echoAuthEncoding,omitempty"`
	// EndlessCursor answers every list request with a page of count new
	// made-up users (or groups) and a fresh nextCursor: it never ends.
	EndlessCursor bool `json:"endlessCursor,omitempty"`
	// RepeatPageForever answers every list request with the first page
	// and a fresh nextCursor.
	RepeatPageForever bool `json:"repeatPageForever,omitempty"`
	// IgnoreCount sends the whole listing on one page whatever count
	// asked (index paging).
	IgnoreCount bool `json:"ignoreCount,omitempty"`
}

var hostileSeq atomic.Uint64

// hostileFaults applies the faults that answer a SCIM request before
// authorization; it reports whether it answered.
func (s *Server) hostileFaults(w *recorder, r *http.Request) bool {
	f := s.currentFaults()
	switch {
	case f.RedirectTo != "":
		loc := strings.TrimRight(f.RedirectTo, "/") + r.URL.Path
		q := r.URL.Query()
		if f.RedirectEchoToken {
			_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			q.Set("access_token", tok)
		}
		if len(q) > 0 {
			loc += "?" + q.Encode()
		}
		w.fault = "redirect"
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusFound)
		return true
	case f.EchoAuthStatus != 0:
		auth := r.Header.Get("Authorization")
		switch f.EchoAuthEncoding {
		case "base64":
			auth = base64.StdEncoding.EncodeToString([]byte("Authorization: " + auth))
		case "hex":
			auth = hex.EncodeToString([]byte(auth))
		case "wrap":
			var b strings.Builder
			for i := 0; i < len(auth); i += 8 {
				b.WriteString(auth[i:min(i+8, len(auth))] + "\n")
			}
			auth = b.String()
		}
		w.fault = "echo"
		if f.EchoAuthPlain {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(f.EchoAuthStatus)
			fmt.Fprintf(w, "request dump\nGET %s\nAuthorization: %s\nUser-Agent: %s\n", r.URL.RequestURI(), auth, r.UserAgent())
			return true
		}
		if f.EchoAuthStatus == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", error_description="token %s is not valid"`, strings.TrimPrefix(auth, "Bearer ")))
		}
		writeError(w, f.EchoAuthStatus, "", "refused Authorization: "+auth+" (for "+r.URL.RequestURI()+")")
		return true
	}
	return false
}

// hostileList answers a list request under EndlessCursor or
// RepeatPageForever; it reports whether it answered.
func (s *Server) hostileList(w *recorder, r *http.Request, rs *resourceSchema, q listQuery, f Faults, items []item) bool {
	if !f.EndlessCursor && !f.RepeatPageForever {
		return false
	}
	count := s.opts.DefaultPageSize
	if q.hasCount {
		count = min(max(q.count, 1), s.opts.MaxPageSize)
	}
	lr := map[string]any{"schemas": []string{URNListResponse}, "itemsPerPage": count,
		"nextCursor": "c" + strconv.FormatUint(hostileSeq.Add(1), 10)}
	var res []json.RawMessage
	if f.EndlessCursor {
		w.fault = "endless"
		for i := 0; i < count; i++ {
			n := hostileSeq.Add(1)
			m := map[string]any{"id": fmt.Sprintf("endless-%d", n), "userName": fmt.Sprintf("endless%d", n), "displayName": fmt.Sprintf("endless%d", n)}
			res = append(res, marshal(m))
		}
	} else {
		w.fault = "repeat"
		page := items[:min(count, len(items))]
		res = s.encodePage(rs, s.baseURL(r), page, q, f)
	}
	body := listBody(lr, res)
	response{body: body}.write(w, r)
	return true
}
