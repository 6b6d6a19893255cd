package scimserver

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// Counters count SCIM requests (admin requests are not counted).
type Counters struct {
	Total       int            `json:"total"`
	UserLists   int            `json:"userLists"`   // GET /Users, /Users/.search
	GroupLists  int            `json:"groupLists"`  // GET /Groups, /Groups/.search
	UserGets    int            `json:"userGets"`    // GET /Users/{id}
	GroupGets   int            `json:"groupGets"`   // GET /Groups/{id}
	Discovery   int            `json:"discovery"`   // ServiceProviderConfig, Schemas, ResourceTypes
	NotModified int            `json:"notModified"` // 304 answers
	Faulted     int            `json:"faulted"`     // answers a fault changed
	ByStatus    map[int]int    `json:"byStatus"`
	ByFault     map[string]int `json:"byFault"`
}

// LoggedRequest is one SCIM request as the server saw it.
type LoggedRequest struct {
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Query  string    `json:"query"` // raw query string
	Status int       `json:"status"`
	Fault  string    `json:"fault,omitempty"`
	// Authorization is the scheme the client used ("Bearer", "Basic"),
	// never the credential.
	Authorization string `json:"authorization,omitempty"`
	Gzip          bool   `json:"gzip,omitempty"` // the client accepted gzip
}

// maxLog bounds the request log; older entries are dropped.
const maxLog = 20000

type counters struct {
	mu  sync.Mutex
	c   Counters
	log []LoggedRequest
}

func (c *counters) record(r *http.Request, status int, fault string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c.ByStatus == nil {
		c.c.ByStatus = map[int]int{}
		c.c.ByFault = map[string]int{}
	}
	c.c.Total++
	c.c.ByStatus[status]++
	if status == http.StatusNotModified {
		c.c.NotModified++
	}
	if fault != "" {
		c.c.Faulted++
		c.c.ByFault[fault]++
	}
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	last, prev := seg[len(seg)-1], ""
	if len(seg) > 1 {
		prev = seg[len(seg)-2]
	}
	switch {
	case last == "Users" || (prev == "Users" && last == ".search"):
		c.c.UserLists++
	case last == "Groups" || (prev == "Groups" && last == ".search"):
		c.c.GroupLists++
	case prev == "Users":
		c.c.UserGets++
	case prev == "Groups":
		c.c.GroupGets++
	default:
		c.c.Discovery++
	}
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if len(c.log) >= maxLog {
		c.log = append(c.log[:0], c.log[maxLog/2:]...)
	}
	c.log = append(c.log, LoggedRequest{
		Time: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Status: status, Fault: fault, Authorization: scheme, Gzip: acceptsGzip(r),
	})
}

// Requests returns the request counters.
func (s *Server) Requests() Counters {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	c := s.stats.c
	c.ByStatus = map[int]int{}
	c.ByFault = map[string]int{}
	for k, v := range s.stats.c.ByStatus {
		c.ByStatus[k] = v
	}
	for k, v := range s.stats.c.ByFault {
		c.ByFault[k] = v
	}
	return c
}

// RequestLog returns the most recent SCIM requests, oldest first.
func (s *Server) RequestLog() []LoggedRequest {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	return append([]LoggedRequest(nil), s.stats.log...)
}

// ResetCounters zeroes the counters and the request log.
func (s *Server) ResetCounters() {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	s.stats.c = Counters{}
	s.stats.log = nil
}
