package explain

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/validate"
)

// A user with 100 rejected keys: each key is logged once, none again while
// they stay, one again when it changes; and reads whose record is never
// written (a refused commit) do not log them again either.
func TestFreshLogsEachDetailOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db.explain")
	res := &validate.Result{}
	for i := range 100 {
		res.Rejections = append(res.Rejections, validate.Rejection{Kind: validate.KindSSHKey, ID: "u1", Name: "ann", Reason: validate.BadSSHKey, Detail: fmt.Sprintf("key %d: not a key", i)})
	}
	fresh, gone, first := Fresh(path, res)
	if len(fresh) != 100 || gone != 0 || !first {
		t.Fatalf("first read: %d fresh, %d gone, first %v", len(fresh), gone, first)
	}
	// Nothing written to disk (a refused commit): the next polls log nothing.
	for range 3 {
		if fresh, gone, _ := Fresh(path, res); len(fresh) != 0 || gone != 0 {
			t.Fatalf("unchanged read: %d fresh, %d gone", len(fresh), gone)
		}
	}
	changed := &validate.Result{Rejections: append([]validate.Rejection(nil), res.Rejections...)}
	changed.Rejections[7].Detail = "key 7: too short"
	if fresh, gone, _ := Fresh(path, changed); len(fresh) != 1 || fresh[0].Detail != "key 7: too short" || gone != 1 {
		t.Fatalf("one changed key: %v, %d gone", fresh, gone)
	}
	// After a restart the record on disk is the baseline.
	if err := Write(path, &Record{Rejections: changed.Rejections}); err != nil {
		t.Fatal(err)
	}
	logged.Lock()
	delete(logged.last, path)
	logged.Unlock()
	if fresh, gone, first := Fresh(path, changed); len(fresh) != 0 || gone != 0 || first {
		t.Fatalf("after a restart: %d fresh, %d gone, first %v", len(fresh), gone, first)
	}
}
