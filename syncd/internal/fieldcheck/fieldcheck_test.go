package fieldcheck

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that keeps what EveryField reports.
type recorder struct {
	testing.TB
	errs  []string
	fatal string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(f string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...) }

type rec struct {
	Name  string
	N     int64
	U     uint32
	On    bool
	List  []string
	Attrs map[string]string
	Ptr   *int64
}

// A comparison that misses a field is reported for that field alone,
// whatever its kind; one that compares every field is not.
func TestEveryFieldFindsAMissedField(t *testing.T) {
	all := func(a, b *rec) bool {
		return a.Name == b.Name && a.N == b.N && a.U == b.U && a.On == b.On &&
			len(a.List) == len(b.List) && len(a.Attrs) == len(b.Attrs) && (a.Ptr == nil) == (b.Ptr == nil)
	}
	r := &recorder{TB: t}
	EveryField(r, all)
	if len(r.errs) != 0 || r.fatal != "" {
		t.Fatalf("a comparison of every field: %q %q", r.errs, r.fatal)
	}
	for _, miss := range []string{"Name", "N", "U", "On", "List", "Attrs", "Ptr"} {
		r := &recorder{TB: t}
		EveryField(r, func(a, b *rec) bool {
			x, y := *a, *b
			switch miss {
			case "Name":
				x.Name, y.Name = "", ""
			case "N":
				x.N, y.N = 0, 0
			case "U":
				x.U, y.U = 0, 0
			case "On":
				x.On, y.On = false, false
			case "List":
				x.List, y.List = nil, nil
			case "Attrs":
				x.Attrs, y.Attrs = nil, nil
			case "Ptr":
				x.Ptr, y.Ptr = nil, nil
			}
			return all(&x, &y)
		})
		want := "two recs that differ in " + miss + " are called the same"
		if len(r.errs) != 1 || r.errs[0] != want {
			t.Errorf("missing %s: reported %q, want %q", miss, r.errs, want)
		}
	}
}

// A field it cannot set (unexported, or a kind it does not know) is not
// passed over in silence.
func TestEveryFieldRefusesWhatItCannotSet(t *testing.T) {
	type hidden struct{ name string }
	type chans struct{ C chan int }
	r := &recorder{TB: t}
	EveryField(r, func(a, b *hidden) bool { return true })
	if r.fatal == "" {
		t.Error("an unexported field passed")
	}
	r = &recorder{TB: t}
	EveryField(r, func(a, b *chans) bool { return true })
	if r.fatal == "" {
		t.Error("a chan field passed")
	}
}
