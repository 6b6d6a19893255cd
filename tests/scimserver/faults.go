package scimserver

import (
	"net/http"
	"strconv"
	"time"
)

// Faults make the server misbehave the way real SCIM servers have been
// seen to. The zero value is a well-behaved server. JSON names are those
// the admin API and -faults-json accept.
type Faults struct {
	// Broken list pages. The FailListRequest-th list request (GET /Users,
	// GET /Groups or .search, counted from 1 since SetFaults) and the
	// FailTimes-1 after it are broken; FailListRequest 0 breaks every list
	// request once any Fail* field is set. FailTimes 0 means 1, -1 means
	// every request from then on.
	FailListRequest int `json:"failListRequest,omitempty"`
	FailTimes       int `json:"failTimes,omitempty"`
	// FailStatus answers with a SCIM error of this status (e.g. 500, 503).
	FailStatus int `json:"failStatus,omitempty"`
	// FailHTML answers with an HTML error page (a proxy's), with
	// FailStatus (default 502; 200 is allowed and is the nastier case).
	FailHTML bool `json:"failHTML,omitempty"`
	// FailTruncatedJSON answers 200 with the JSON body cut in half.
	FailTruncatedJSON bool `json:"failTruncatedJSON,omitempty"`

	// Rate limiting: the next TooManyRequests SCIM requests (any endpoint)
	// answer StormStatus (default 429) with Retry-After: RetryAfterSeconds
	// as delta-seconds, or as an HTTP-date when RetryAfterHTTPDate.
	TooManyRequests    int  `json:"tooManyRequests,omitempty"`
	StormStatus        int  `json:"stormStatus,omitempty"`
	RetryAfterSeconds  int  `json:"retryAfterSeconds,omitempty"`
	RetryAfterHTTPDate bool `json:"retryAfterHTTPDate,omitempty"`

	// DelayMS delays every SCIM response (the client's timeout or
	// cancellation ends the wait).
	DelayMS int `json:"delayMs,omitempty"`

	// Paging bugs (index paging unless noted).
	// TotalResultsDelta is added to totalResults (too high or too low).
	TotalResultsDelta int `json:"totalResultsDelta,omitempty"`
	// OmitTotalResults leaves totalResults out (legal with cursors only).
	OmitTotalResults bool `json:"omitTotalResults,omitempty"`
	// RepeatAcrossPages starts every page after the first one item early,
	// so the last id of a page is repeated on the next.
	RepeatAcrossPages bool `json:"repeatAcrossPages,omitempty"`
	// UnstableOrder shuffles each listing unless sortBy is sent: pages
	// overlap and skip items (a Keycloak plugin).
	UnstableOrder bool `json:"unstableOrder,omitempty"`
	// WrapPastEnd answers a startIndex past the end with page 1 again.
	WrapPastEnd bool `json:"wrapPastEnd,omitempty"`
	// PageCap silently returns at most this many items per page whatever
	// count asked (and whatever maxPageSize says).
	PageCap int `json:"pageCap,omitempty"`
	// TruncateAt silently ends every listing at this many items and says
	// totalResults is that many (better-auth's 100).
	TruncateAt int `json:"truncateAt,omitempty"`
	// ZeroBasedStartIndex reads startIndex as 0-based (an off-by-one seen
	// in WSO2): a walk from 1 silently skips the first item.
	ZeroBasedStartIndex bool `json:"zeroBasedStartIndex,omitempty"`
	// EmptyUnlessPaged answers an empty list with totalResults 0 unless
	// both startIndex and count are sent (Bitwarden).
	EmptyUnlessPaged bool `json:"emptyUnlessPaged,omitempty"`
	// IgnoreStartIndex ignores startIndex: every index request gets page 1
	// (AWS IAM Identity Center supports cursors only).
	IgnoreStartIndex bool `json:"ignoreStartIndex,omitempty"`
	// RejectCountOverMax answers count > maxPageSize with 400 invalidCount
	// instead of capping (AWS: count 1-100).
	RejectCountOverMax bool `json:"rejectCountOverMax,omitempty"`

	// Attribute and filter limits.
	// ExtensionRequestOnly makes the extensions returned:request (as
	// Options.ReturnedRequest does) from now on.
	ExtensionRequestOnly bool `json:"extensionRequestOnly,omitempty"`
	// IgnoreAttributes ignores attributes= and excludedAttributes= (AWS).
	IgnoreAttributes bool `json:"ignoreAttributes,omitempty"`
	// FilterEqAndOnly rejects every filter but eq joined by and (AWS).
	FilterEqAndOnly bool `json:"filterEqAndOnly,omitempty"`
	// NoExtensionFilter rejects filters on extension attributes.
	NoExtensionFilter bool `json:"noExtensionFilter,omitempty"`

	// Group listings. GroupMembersOmitted leaves members out of group list
	// responses, GroupMembersEmpty sends "members": [] (AWS); GET
	// /Groups/{id} and members.value filters still tell the truth.
	GroupMembersOmitted bool `json:"groupMembersOmitted,omitempty"`
	GroupMembersEmpty   bool `json:"groupMembersEmpty,omitempty"`
	// GroupMembersCap sends at most this many members per group in any
	// response (servers capping at 100 members).
	GroupMembersCap int `json:"groupMembersCap,omitempty"`
	// GroupMembersNever leaves members out of every group response, list
	// or GET /Groups/{id}, and refuses filters on members: memberships
	// are then only in the users' groups attribute (Options.UserGroups).
	GroupMembersNever bool `json:"groupMembersNever,omitempty"`
	// FilterNoMatch makes any filter naming this attribute (e.g.
	// "members", "meta"; case-insensitive) match nothing, without an
	// error, as servers answer filters they cannot evaluate: those on
	// elimity-com/scim answer members.value eq "id" so (it cannot
	// evaluate a sub-attribute of a multi-valued attribute), and a
	// handler that leaves meta out of what it filters answers
	// meta.lastModified gt so.
	FilterNoMatch string `json:"filterNoMatch,omitempty"`
	// MembersRefOnly sends each group member as {"$ref", "display"}
	// only: no value and no type (RFC 7643 requires neither).
	MembersRefOnly bool `json:"membersRefOnly,omitempty"`

	// OmitPaginationConfig leaves the RFC 9865 pagination object out of
	// ServiceProviderConfig, as servers written before RFC 9865 do (and
	// as RFC 9865 allows: the object is optional).
	OmitPaginationConfig bool `json:"omitPaginationConfig,omitempty"`

	// RejectAttributes answers any request carrying attributes= or
	// excludedAttributes= with 400 invalidValue (a server that cannot
	// project attributes).
	RejectAttributes bool `json:"rejectAttributes,omitempty"`
	// SortDelayMS delays every list request that carries sortBy, as a
	// server that sorts its whole table for each page (50,000 users:
	// minutes per page).
	SortDelayMS int `json:"sortDelayMs,omitempty"`

	// HugeFieldBytes pads every user's displayName in list responses to
	// this many bytes.
	HugeFieldBytes int `json:"hugeFieldBytes,omitempty"`

	// Hostile servers: redirects, credential echoes, endless listings
	// (hostile.go).
	Hostile
}

// SetFaults replaces the faults in effect and restarts the list-request
// count FailListRequest refers to.
func (s *Server) SetFaults(f Faults) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.faults = f
	s.listCount = 0
	s.storm = f.TooManyRequests
}

// Faults returns the faults in effect.
func (s *Server) Faults() Faults { return s.currentFaults() }

func (s *Server) currentFaults() Faults {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.faults
}

// preFaults applies the faults that hit every SCIM request before it is
// looked at: delay and rate limiting. It reports whether it answered.
func (s *Server) preFaults(w *recorder, r *http.Request) bool {
	s.fmu.Lock()
	f := s.faults
	storm := s.storm > 0
	if storm {
		s.storm--
	}
	s.fmu.Unlock()
	delay := f.DelayMS
	if f.SortDelayMS > 0 && r.URL.Query().Get("sortBy") != "" {
		delay += f.SortDelayMS
	}
	if f.RejectAttributes && (r.URL.Query().Has("attributes") || r.URL.Query().Has("excludedAttributes")) {
		w.fault = "attributes"
		writeError(w, http.StatusBadRequest, "invalidValue", "the attributes and excludedAttributes parameters are not supported")
		return true
	}
	if delay > 0 {
		t := time.NewTimer(time.Duration(delay) * time.Millisecond)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			w.fault = "delay(cancelled)"
			return true
		}
	}
	if !storm {
		return false
	}
	status := f.StormStatus
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	secs := f.RetryAfterSeconds
	if f.RetryAfterHTTPDate {
		// An HTTP-date has second resolution: round up so the client
		// never waits less than asked.
		w.Header().Set("Retry-After", time.Now().Add(time.Duration(secs+1)*time.Second).UTC().Format(http.TimeFormat))
	} else {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	w.fault = "storm"
	scimType := ""
	if status == http.StatusTooManyRequests {
		scimType = "tooMany"
	}
	writeError(w, status, scimType, "too many requests; retry later")
	return true
}

// listFault decides whether this list request is one FailListRequest
// selects, and counts it.
func (s *Server) listFault() (Faults, bool) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.listCount++
	f := s.faults
	if f.FailStatus == 0 && !f.FailHTML && !f.FailTruncatedJSON {
		return f, false
	}
	if f.FailListRequest <= 0 {
		return f, true
	}
	times := f.FailTimes
	if times == 0 {
		times = 1
	}
	n := s.listCount - f.FailListRequest
	return f, n >= 0 && (times < 0 || n < times)
}

const htmlErrorPage = `<!DOCTYPE html>
<html><head><title>502 Bad Gateway</title></head>
<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body>
</html>
`

// writeBrokenList answers a list request FailListRequest selected, except
// for FailTruncatedJSON, which the list handler applies to the real body.
func writeBrokenList(w *recorder, f Faults) {
	switch {
	case f.FailHTML:
		status := f.FailStatus
		if status == 0 {
			status = http.StatusBadGateway
		}
		w.fault = "html"
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(htmlErrorPage))
	default:
		w.fault = "status"
		writeError(w, f.FailStatus, "", "injected failure")
	}
}
