// Package redact keeps credentials out of everything syncd writes: error
// texts, the status file and the log.
//
// Decisions:
//   - The list of secrets is process-wide. Every writer (the SCIM client's
//     errors, the status file, the logger) scrubs with the same list, so
//     no seam has to thread it through, and a token loaded once stays
//     secret after it is rotated away.
//   - Servers echo credentials in ways syncd cannot enumerate: a 401 body
//     quoting the Authorization header, a redirect Location carrying the
//     token in its query, a detail cut short in the middle of the token.
//     So not only each secret is scrubbed, but its URL- and JSON-escaped
//     forms, and any run of FragmentLen or more of their bytes: a prefix,
//     a suffix or a middle part of a token is as good as gone.
//   - Encoded echoes count too: the base64 of the secret at each of the
//     three byte alignments (so also inside the base64 of a whole header
//     line, "Authorization: Bearer <token>"), standard and URL alphabets,
//     its hex, and percent escapes in lower case. A secret split across
//     lines or by spaces (a body wrapped at 64 or 76 columns) is matched
//     with the white space left out, and the white space inside it is
//     scrubbed with it. Encoded forms are registered only for secrets of
//     at least FragmentLen bytes: a short one's encodings are too short to
//     tell from ordinary text.
//   - Scrubbing happens where text leaves syncd's hands, and also as soon
//     as the SCIM client builds an error from a server's answer, before
//     anything is cut short (a cut token would no longer match whole).
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// Marker replaces every secret.
const Marker = "[REDACTED]"

// FragmentLen is the shortest run of a secret's bytes that is scrubbed on
// its own. Secrets shorter than this are scrubbed whole only.
const FragmentLen = 12

// state is an immutable set of secrets; Add replaces it (copy on write)
// so readers, run on every record and log line, take no lock.
type state struct {
	// windows maps a window length to the set of secret substrings of
	// that length; every occurrence of one is scrubbed.
	windows map[int]map[string]struct{}
	// exact are the whole forms, shortest and longest their lengths.
	exact             []string
	shortest, longest int
	known             map[string]bool
}

var (
	mu  sync.Mutex // serialises Add and Reset
	cur atomic.Pointer[state]
)

func load() *state {
	if st := cur.Load(); st != nil {
		return st
	}
	return &state{}
}

// Add registers secrets. Empty strings are ignored.
func Add(secrets ...string) {
	mu.Lock()
	defer mu.Unlock()
	old := load()
	st := &state{windows: map[int]map[string]struct{}{}, exact: append([]string(nil), old.exact...),
		shortest: old.shortest, longest: old.longest, known: map[string]bool{}}
	for k, set := range old.windows {
		c := make(map[string]struct{}, len(set))
		for w := range set {
			c[w] = struct{}{}
		}
		st.windows[k] = c
	}
	for k := range old.known {
		st.known[k] = true
	}
	added := false
	for _, s := range secrets {
		if s == "" || st.known[s] {
			continue
		}
		st.known[s] = true
		added = true
		for _, f := range forms(s) {
			st.add(f)
		}
	}
	if added {
		cur.Store(st)
	}
}

// forms are the ways a secret is written in URLs, JSON and headers.
func forms(s string) []string {
	out := []string{s}
	add := func(f string) {
		for _, o := range out {
			if o == f {
				return
			}
		}
		out = append(out, f)
	}
	add(url.QueryEscape(s))
	add(url.PathEscape(s))
	if b, err := json.Marshal(s); err == nil {
		j := string(b[1 : len(b)-1])
		add(j)
		add(strings.ReplaceAll(j, "/", `\/`))
	}
	if len(s) < FragmentLen {
		return out
	}
	add(lowerEscapes.ReplaceAllStringFunc(url.QueryEscape(s), strings.ToLower))
	add(lowerEscapes.ReplaceAllStringFunc(url.PathEscape(s), strings.ToLower))
	add(hex.EncodeToString([]byte(s)))
	add(strings.ToUpper(hex.EncodeToString([]byte(s))))
	for k := 0; k < 3; k++ {
		core := base64Core(s, k)
		add(core)
		add(strings.NewReplacer("+", "-", "/", "_").Replace(core))
	}
	return out
}

var lowerEscapes = regexp.MustCompile(`%[0-9A-F]{2}`)

// base64Core is the part of the base64 of s, preceded by k other bytes
// and followed by any, that depends on s alone: character j holds bits
// 6j..6j+5 of the stream, s bits 8k..8k+8len(s)-1.
func base64Core(s string, k int) string {
	enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), s...))
	from, to := (8*k+5)/6, (8*k+8*len(s))/6
	return enc[from:to]
}

func (st *state) add(f string) {
	st.exact = append(st.exact, f)
	if st.shortest == 0 || len(f) < st.shortest {
		st.shortest = len(f)
	}
	k := min(FragmentLen, len(f))
	set := st.windows[k]
	if set == nil {
		set = map[string]struct{}{}
		st.windows[k] = set
	}
	for i := 0; i+k <= len(f); i++ {
		set[f[i:i+k]] = struct{}{}
	}
	st.longest = max(st.longest, len(f))
}

// Longest is the length of the longest registered form of a secret: a
// caller that cuts text short scrubs at least this much beyond the cut.
func Longest() int { return load().longest }

// Reset forgets every secret (tests).
func Reset() {
	mu.Lock()
	defer mu.Unlock()
	cur.Store(nil)
}

// HasExact reports whether s holds a whole secret in one of its forms,
// also with white space left out (a secret wrapped over lines). It is
// cheap (a length check for short strings), for use on every record.
func HasExact(s string) bool {
	st := load()
	if len(st.exact) == 0 || len(s) < st.shortest {
		return false
	}
	for _, f := range st.exact {
		if strings.Contains(s, f) {
			return true
		}
	}
	if !strings.ContainsAny(s, wrapSpace) {
		return false
	}
	c := strings.Map(func(r rune) rune {
		if r < 0x80 && strings.IndexByte(wrapSpace, byte(r)) >= 0 {
			return -1
		}
		return r
	}, s)
	for _, f := range st.exact {
		if strings.Contains(c, f) {
			return true
		}
	}
	return false
}

// String returns s with every secret, and every run of a secret's bytes
// at least FragmentLen long, replaced by Marker.
func String(s string) string {
	st := load()
	if len(st.windows) == 0 || s == "" {
		return s
	}
	type span struct{ from, to int }
	var spans []span
	for k, set := range st.windows {
		for i := 0; i+k <= len(s); i++ {
			if _, hit := set[s[i:i+k]]; hit {
				spans = append(spans, span{i, i + k})
			}
		}
	}
	// The same with white space left out: a secret wrapped over lines.
	if strings.ContainsAny(s, wrapSpace) {
		var b strings.Builder
		at := make([]int, 0, len(s)) // index in s of each byte of b
		for i := 0; i < len(s); i++ {
			if strings.IndexByte(wrapSpace, s[i]) < 0 {
				b.WriteByte(s[i])
				at = append(at, i)
			}
		}
		c := b.String()
		for k, set := range st.windows {
			for i := 0; i+k <= len(c); i++ {
				if _, hit := set[c[i:i+k]]; hit {
					spans = append(spans, span{at[i], at[i+k-1] + 1})
				}
			}
		}
	}
	if len(spans) == 0 {
		return s
	}
	covered := make([]bool, len(s))
	for _, sp := range spans {
		for i := sp.from; i < sp.to; i++ {
			covered[i] = true
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if !covered[i] {
			b.WriteByte(s[i])
			i++
			continue
		}
		for i < len(s) && covered[i] {
			i++
		}
		b.WriteString(Marker)
	}
	return b.String()
}

// wrapSpace is what a server may wrap an echoed secret with.
const wrapSpace = " \t\r\n"

// Contains reports whether s holds a secret or a run of one.
func Contains(s string) bool { return String(s) != s }

// scrubbed is an error whose text is scrubbed; errors.Is and errors.As
// still see the error it wraps.
type scrubbed struct{ err error }

func (e scrubbed) Error() string { return String(e.err.Error()) }
func (e scrubbed) Unwrap() error { return e.err }

// Error wraps err so that its text is scrubbed; nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(scrubbed); ok {
		return err
	}
	return scrubbed{err}
}
