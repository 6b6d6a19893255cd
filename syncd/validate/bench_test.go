package validate

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// benchDirectory is 100,000 users and 10,000 groups shaped as
// scim-testserver -generate makes them: every user's primary group is
// slurm-users (gid 200000), which lists 90% of them; each user is in two
// project groups. The default hardening (reserved names, local homes and
// members, homes, duplicates) applies.
func benchDirectory() (*source.Directory, Options) {
	const n, ng = 100000, 10000
	dir := &source.Directory{}
	gid := int64(200000)
	for i := 0; i < n; i++ {
		uid := int64(100000 + i)
		dir.Users = append(dir.Users, source.User{ID: fmt.Sprintf("u%07d", i), UserName: fmt.Sprintf("user%d", i), UID: &uid, GID: &gid,
			Home: fmt.Sprintf("/home/user%d", i), Shell: "/bin/bash"})
	}
	for j := 0; j < ng; j++ {
		gid := int64(200000 + j)
		g := source.Group{ID: fmt.Sprintf("g%05d", j), DisplayName: fmt.Sprintf("group%d", j), GID: &gid}
		switch j {
		case 0:
			g.DisplayName = "slurm-users"
			for i := 0; i < n; i++ {
				if i%10 != 9 {
					g.MemberIDs = append(g.MemberIDs, fmt.Sprintf("u%07d", i))
				}
			}
		default:
			for i := j; i < n; i += ng / 2 {
				g.MemberIDs = append(g.MemberIDs, fmt.Sprintf("u%07d", i))
			}
		}
		dir.Groups = append(dir.Groups, g)
	}
	o := baseOpts()
	o.UIDMax, o.GIDMax = 1<<31, 1<<31
	o.Local.Homes = map[string]string{}
	for i := 0; i < 40; i++ {
		o.Local.Homes[fmt.Sprintf("/var/lib/daemon%d", i)] = fmt.Sprintf("daemon%d", i)
	}
	return dir, o
}

// processCPU is this process's user and system CPU time (the collector's
// included): steadier than wall time on a shared machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ms/op from the CPU time since start.
func reportCPU(b *testing.B, start, paused time.Duration) {
	b.ReportMetric(float64(processCPU()-start-paused)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkDirectory validates the whole directory, as a full sync does.
func BenchmarkDirectory(b *testing.B) {
	dir, o := benchDirectory()
	b.ResetTimer()
	cpu0 := processCPU()
	defer func() { reportCPU(b, cpu0, 0) }()
	for i := 0; i < b.N; i++ {
		res := Directory(dir, o)
		if len(res.Contents.Users) != 100000 {
			b.Fatalf("%d users, rejections %v", len(res.Contents.Users), res.Rejections[:3])
		}
	}
}

// BenchmarkIncremental validates the same directory after one change
// (a disable, a rename, a rename onto another user's name, a new
// member of a project group), as a
// poll that sees one change does, side by side with BenchmarkDirectory.
// The live snapshot is the last result, as after a commit.
func BenchmarkIncremental(b *testing.B) {
	for _, kind := range []string{"disable", "rename", "rename-collision", "add-member"} {
		b.Run(kind, func(b *testing.B) {
			dir, o := benchDirectory()
			for i := range dir.Users {
				active := true // the source sends active (a disable is not its first)
				dir.Users[i].Active = &active
			}
			var v Incremental
			res, _ := v.Validate(dir, o)
			b.ResetTimer()
			cpu0, paused := processCPU(), time.Duration(0)
			defer func() { reportCPU(b, cpu0, paused) }()
			for i := 0; i < b.N; i++ {
				b.StopTimer() // the reader's copy of the directory
				p0 := processCPU()
				next := &source.Directory{Users: append([]source.User(nil), dir.Users...), Groups: append([]source.Group(nil), dir.Groups...)}
				k := (i * 7919) % len(next.Users)
				u := next.Users[k]
				switch kind {
				case "disable":
					active := i%2 == 1
					u.Active = &active
				case "rename":
					u.UserName = fmt.Sprintf("renamed%d", i)
				case "rename-collision":
					u.UserName = next.Users[(k+1)%len(next.Users)].UserName
				case "add-member":
					g := next.Groups[i%len(next.Groups)]
					g.MemberIDs = append(g.MemberIDs[:len(g.MemberIDs):len(g.MemberIDs)], u.ID)
					next.Groups[i%len(next.Groups)] = g
				}
				next.Users[k] = u
				o.Live = res.Contents
				paused += processCPU() - p0
				b.StartTimer()
				var m Mode
				res, m = v.Validate(next, o)
				if m.Whole || len(res.Contents.Users) < 99999-i {
					b.Fatalf("whole %v (%s), %d users", m.Whole, m.Why, len(res.Contents.Users))
				}
				dir = next
			}
		})
	}
}
