package scimserver

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized checks the bearer token or basic credentials when the server
// has any.
func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Token == "" && s.opts.BasicUser == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	if s.opts.Token != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if strings.EqualFold(scheme, "Bearer") && equal(strings.TrimSpace(tok), s.opts.Token) {
			return true
		}
	}
	if s.opts.BasicUser != "" {
		if u, p, ok := r.BasicAuth(); ok && equal(u, s.opts.BasicUser) && equal(p, s.opts.BasicPassword) {
			return true
		}
	}
	return false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
