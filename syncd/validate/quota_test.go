package validate

import (
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/source"
)

func TestParseQuota(t *testing.T) {
	for in, want := range map[string]uint64{
		"": 0, "0": 0, "50": 50 << 30, " 50G ": 50 << 30, "50GiB": 50 << 30, "50gb": 50 << 30, "50Gi": 50 << 30,
		"1.5T": 3 << 39, "512M": 512 << 20, "1P": 1 << 50, "2048K": 2 << 20, "0.5": 1 << 29,
	} {
		if got, err := ParseQuota(in); err != nil || got != want {
			t.Errorf("ParseQuota(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"-5G": "not a size", "1e3": "not a size", "50X": "not a size", "5 0G": "not a size", "1.2345G": "not a size",
		"0x10": "not a size", "NaN": "not a size", "Inf": "not a size", "1.5.1G": "not a size", "G": "not a size",
		"2P": "more than 1P", "1025T": "more than 1P", "99999999999999999999": "not a size", "1048577": "more than 1P",
		"512K": "less than 1M", strings.Repeat("9", 33): "more than 32",
	} {
		if _, err := ParseQuota(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseQuota(%q): %v; want an error saying %q", in, err, why)
		}
	}
}

// A bad quota attribute drops the value, never the user: the account
// works with the configured limits, and the rejection names the value
// and the option.
func TestBadQuotaKeepsUser(t *testing.T) {
	a, b, c := good("id1", "alice", 20001), good("id2", "bob", 20002), good("id3", "carol", 20003)
	a.Quota = "75G"
	b.Quota = "9999T"
	c.Malformed = map[string]string{source.FieldQuota: "not a string or a number: {\"x\":1}"}
	res := Directory(&source.Directory{Users: []source.User{a, b, c}}, baseOpts())
	if len(res.Contents.Users) != 3 {
		t.Fatalf("users: %+v; rejections %v", res.Contents.Users, res.Rejections)
	}
	q := map[string]uint64{}
	for _, u := range res.Contents.Users {
		q[u.Name] = u.Quota
	}
	if q["alice"] != 75<<30 || q["bob"] != 0 || q["carol"] != 0 {
		t.Fatalf("quotas %v", q)
	}
	if n := res.Counts()[BadQuota]; n != 2 {
		t.Fatalf("%d bad-quota rejections: %v", n, res.Rejections)
	}
	for _, r := range res.Rejections {
		if r.Kind != KindQuota || r.Option != "attributes.home_quota" || !strings.Contains(r.Detail, "dropped, the configured limits apply") {
			t.Errorf("rejection %+v", r)
		}
	}
}

// A team's project quota is read like a user's: a bad one dropped with
// the group kept, naming attributes.project_quota.
func TestGroupQuota(t *testing.T) {
	users := []source.User{good("id1", "alice", 20001)}
	g1 := source.Group{ID: "g1", DisplayName: "physics", GID: i64(30001), MemberIDs: []string{"id1"}, Quota: "5T"}
	g2 := source.Group{ID: "g2", DisplayName: "chem", GID: i64(30002), MemberIDs: []string{"id1"}, Quota: "-1"}
	res := Directory(&source.Directory{Users: users, Groups: []source.Group{g1, g2}}, baseOpts())
	q := map[string]uint64{}
	for _, g := range res.Contents.Groups {
		q[g.Name] = g.Quota + 1
	}
	if q["physics"] != 5<<40+1 || q["chem"] != 1 {
		t.Fatalf("group quotas %v; rejections %v", q, res.Rejections)
	}
	if n := res.Counts()[BadQuota]; n != 1 {
		t.Fatalf("rejections %v", res.Rejections)
	}
	for _, r := range res.Rejections {
		if r.Reason == BadQuota && (r.Option != "attributes.project_quota" || r.Name != "chem" || !strings.Contains(r.Detail, "project quota")) {
			t.Errorf("%+v", r)
		}
	}
}
