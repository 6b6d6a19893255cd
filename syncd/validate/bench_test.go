package validate

import (
	"fmt"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// BenchmarkDirectory validates 100,000 users in 1,000 groups with the
// default hardening (reserved names, local homes and members, homes,
// duplicates), as a full sync does.
func BenchmarkDirectory(b *testing.B) {
	const n, ng = 100000, 1000
	dir := &source.Directory{}
	for i := 0; i < n; i++ {
		uid, gid := int64(100000+i), int64(200000+i%ng)
		dir.Users = append(dir.Users, source.User{ID: fmt.Sprintf("u%07d", i), UserName: fmt.Sprintf("user%d", i), UID: &uid, GID: &gid,
			Home: fmt.Sprintf("/home/user%d", i), Shell: "/bin/bash"})
	}
	for j := 0; j < ng; j++ {
		gid := int64(200000 + j)
		g := source.Group{ID: fmt.Sprintf("g%05d", j), DisplayName: fmt.Sprintf("group%d", j), GID: &gid}
		for i := j; i < n; i += ng {
			g.MemberIDs = append(g.MemberIDs, fmt.Sprintf("u%07d", i))
		}
		dir.Groups = append(dir.Groups, g)
	}
	o := baseOpts()
	o.UIDMax, o.GIDMax = 1<<31, 1<<31
	o.Local.Homes = map[string]string{}
	for i := 0; i < 40; i++ {
		o.Local.Homes[fmt.Sprintf("/var/lib/daemon%d", i)] = fmt.Sprintf("daemon%d", i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := Directory(dir, o)
		if len(res.Contents.Users) != n {
			b.Fatalf("%d users, rejections %v", len(res.Contents.Users), res.Rejections[:3])
		}
	}
}
