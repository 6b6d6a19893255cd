package redact

import (
	"strings"
	"testing"
)

// FuzzString: whatever text surrounds a secret (or a part of one, or an
// escaped form), no run of FragmentLen bytes of any form survives, and
// text without such a run comes back unchanged.
func FuzzString(f *testing.F) {
	const secret = "fZ9/secret+token=value-0123456789abcdefXYZ"
	f.Add("before ", "after", 0, len(secret), 0)
	f.Add(`{"detail":"`, `"}`, 3, 30, 3)
	f.Add("", "", 5, 17, 1)
	f.Add("Authorization: Bearer ", "\n", 0, len(secret), 2)
	f.Fuzz(func(t *testing.T, pre, post string, from, to, form int) {
		Reset()
		defer Reset()
		Add(secret)
		fs := forms(secret)
		s := fs[abs(form)%len(fs)]
		from, to = abs(from)%(len(s)+1), abs(to)%(len(s)+1)
		if from > to {
			from, to = to, from
		}
		in := pre + s[from:to] + post
		out := String(in)
		for _, fm := range fs {
			for i := 0; i+FragmentLen <= len(fm); i++ {
				if strings.Contains(out, fm[i:i+FragmentLen]) {
					t.Fatalf("String(%q) = %q holds %q", in, out, fm[i:i+FragmentLen])
				}
			}
		}
		if !strings.Contains(out, Marker) && out != in {
			t.Fatalf("String(%q) = %q changed text without a marker", in, out)
		}
		hit := false
		for _, fm := range fs {
			for i := 0; i+FragmentLen <= len(fm); i++ {
				hit = hit || strings.Contains(in, fm[i:i+FragmentLen])
			}
		}
		if !hit && out != in {
			t.Fatalf("String(%q) = %q: no secret run, yet changed", in, out)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}
