package receiver

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestIDsFollowCreation: the ids the receiver gives users and groups are
// version 7 UUIDs (RFC 9562) whose order is the order of creation (a
// millisecond apart here), so each insert lands on the last page of the
// id index (newID). Version 4 ids would be in that order once in 12!.
func TestIDsFollowCreation(t *testing.T) {
	e := newEnv(t, Options{}, "")
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	var prev string
	for i := range 12 {
		var m map[string]any
		if i%3 == 2 {
			m = e.must(201, "POST", "/Groups", map[string]any{"schemas": []string{CoreGroupURN}, "displayName": fmt.Sprintf("team%d", i)})
		} else {
			m = e.must(201, "POST", "/Users", map[string]any{"schemas": []string{CoreUserURN}, "userName": fmt.Sprintf("u%d", i)})
		}
		id, _ := m["id"].(string)
		if !form.MatchString(id) {
			t.Fatalf("id %q: not a version 7 UUID", id)
		}
		ms, _ := strconv.ParseInt(id[0:8]+id[9:13], 16, 64)
		if d := time.Since(time.UnixMilli(ms)); d < 0 || d > time.Minute {
			t.Errorf("id %q: time %s, %s from now", id, time.UnixMilli(ms).UTC(), d)
		}
		if id <= prev {
			t.Errorf("id %q (creation %d) sorts before %q, made before it", id, i, prev)
		}
		prev = id
		time.Sleep(2 * time.Millisecond)
	}
}
