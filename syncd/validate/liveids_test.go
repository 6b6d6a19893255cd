package validate

import (
	"testing"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
)

// liveIDsOf feeds c to a LiveIDs the way snapshot.EachID does: every
// group, then every user.
func liveIDsOf(c *snapshot.Contents) *LiveIDs {
	x := NewLiveIDs(len(c.Users), len(c.Groups))
	for i := range c.Groups {
		x.Group(&c.Groups[i])
	}
	for i := range c.Users {
		x.User(&c.Users[i])
	}
	return x
}

// Options.LiveIDs (what sync --once reads of the live snapshot) settles
// every contested value as Options.Live does: the live holder of a home,
// a private group's gid, a group name keeps it. Each case's live snapshot
// changes the verdicts (checked against no live snapshot).
func TestLiveIDsSettleAsLive(t *testing.T) {
	zed, att := good("z", "zed", 20009), good("a", "att", 20010)
	zed.Home, att.Home = "/home/grp/zed", "/home/grp"
	bob, eve := good("u-bob", "bob", 20001), good("u-eve", "eve", 20002)
	bob.GID, eve.GID = i64(30099), i64(30099)
	for _, c := range []struct {
		name string
		dir  *source.Directory
		live *snapshot.Contents
		opts func(*Options)
	}{
		{"nested homes", &source.Directory{Users: []source.User{att, zed}},
			&snapshot.Contents{Users: []snapshot.User{{Name: "zed", UID: 20009, GID: 20000, Home: "/home/grp/zed", SCIMID: "z"}}}, nil},
		{"private group", &source.Directory{Users: []source.User{eve, bob}},
			&snapshot.Contents{Users: []snapshot.User{{Name: "eve", UID: 20002, GID: 30099, SCIMID: "u-eve"}},
				Groups: []snapshot.Group{{Name: "eve", GID: 30099}}},
			func(o *Options) { o.PrivateGroups = config.PrivateGroupsAll }},
		{"group name", &source.Directory{Users: []source.User{good("u1", "ann", 20001)}, Groups: []source.Group{
			{ID: "g-new", DisplayName: "SLURM-USERS", GID: i64(30009), MemberIDs: []string{"u1"}},
			{ID: "g-old", DisplayName: "slurm-users", GID: i64(30001), MemberIDs: []string{"u1"}}}},
			&snapshot.Contents{Groups: []snapshot.Group{{Name: "slurm-users", GID: 30001, SCIMID: "g-old"}}}, nil},
	} {
		o := baseOpts()
		if c.opts != nil {
			c.opts(&o)
		}
		none := Directory(c.dir, o)
		o.Live = c.live
		want := Directory(c.dir, o)
		if want.Difference(none) == "" {
			t.Fatalf("%s: the live snapshot changes nothing here; the case tests nothing", c.name)
		}
		o.Live, o.LiveIDs = nil, liveIDsOf(c.live)
		if d := Directory(c.dir, o).Difference(want); d != "" {
			t.Errorf("%s: with LiveIDs: %s", c.name, d)
		}
	}
}
