package validate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// BadQuota: the home quota attribute was dropped (the user is kept, with
// the configured limits).
const (
	BadQuota  = "bad-quota"
	KindQuota = "quota"
)

// MaxQuota is the largest per-user limit validation lets through (1 PiB):
// a value no site grants, so a larger one is a typo or an attack. The
// homes pass caps what passes by its own [homes.quota] user_max.
const MaxQuota = uint64(1) << 50

// ParseQuota reads a home quota attribute: a whole or decimal number with
// an optional unit K, M, G, T or P (powers of 1024, "Gi", "GiB" and "GB"
// read the same), a bare number being GiB ("50" is 50 GiB: what an
// administrator types into an identity provider's field), at most 32
// bytes. "" and "0" are no limit (0). Anything else, a value above
// MaxQuota, or one that rounds to less than 1 MiB, is an error saying
// what was wrong.
func ParseQuota(raw string) (uint64, error) {
	s := strings.TrimSpace(raw)
	if len(raw) > 32 {
		return 0, fmt.Errorf("%d bytes, more than 32", len(raw))
	}
	if s == "" {
		return 0, nil
	}
	u := strings.ToUpper(s)
	for _, suf := range []string{"IB", "B", "I"} {
		if strings.HasSuffix(u, suf) && len(u) > len(suf) {
			u = strings.TrimSuffix(u, suf)
			break
		}
	}
	shift := uint(30) // a bare number is GiB
	if n := len(u); n > 0 {
		if i := strings.IndexByte("KMGTP", u[n-1]); i >= 0 {
			shift = 10 * uint(i+1)
			u = strings.TrimSpace(u[:n-1])
		}
	}
	whole, frac, hasFrac := strings.Cut(u, ".")
	if whole == "" || len(whole) > 16 || !digits(whole) || hasFrac && (frac == "" || len(frac) > 3 || !digits(frac)) {
		return 0, fmt.Errorf("%q is not a size: want a number with K, M, G, T or P (powers of 1024), such as \"50G\", or a number of GiB", raw)
	}
	w, _ := strconv.ParseUint(whole, 10, 64)
	if w > MaxQuota>>shift {
		return 0, fmt.Errorf("%q is more than %dP", raw, MaxQuota>>50)
	}
	b := w << shift
	if hasFrac {
		f, _ := strconv.ParseUint(frac+strings.Repeat("0", 3-len(frac)), 10, 64)
		b += f * (uint64(1) << shift) / 1000
	}
	switch {
	case b > MaxQuota:
		return 0, fmt.Errorf("%q is more than %dP", raw, MaxQuota>>50)
	case b == 0:
		return 0, nil
	case b < 1<<20:
		return 0, fmt.Errorf("%q is less than 1M: no home fits (a bare number is GiB)", raw)
	}
	return b, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// checkQuota is the user's home quota in bytes (0: none), with the
// rejection of a value dropped.
func checkQuota(su *source.User) (uint64, []Rejection) {
	return quotaOf(su.Quota, su.Malformed[source.FieldQuota], su.ID, su.UserName, "home", "attributes.home_quota")
}

// checkGroupQuota is checkQuota for a team's project directory.
func checkGroupQuota(sg *source.Group) (uint64, []Rejection) {
	return quotaOf(sg.Quota, sg.Malformed[source.FieldQuota], sg.ID, sg.DisplayName, "project", "attributes.project_quota")
}

func quotaOf(raw, why, id, name, what, option string) (uint64, []Rejection) {
	var q uint64
	if why == "" {
		var err error
		if q, err = ParseQuota(raw); err != nil {
			why = err.Error()
		}
	}
	if why == "" {
		return q, nil
	}
	return 0, []Rejection{{Kind: KindQuota, ID: id, Name: name, Reason: BadQuota,
		Detail: what + " quota: " + why + "; dropped, the configured limits apply", Option: option}}
}
