package homes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// BenchmarkPass: a first pass making N homes (skel of 3 entries) and 100
// project directories, then a pass that finds everything in place.
// Temp dirs only; no quota driver.
func BenchmarkPass(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("needs root")
	}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				d := b.TempDir()
				home, proj, skel := filepath.Join(d, "home"), filepath.Join(d, "project"), filepath.Join(d, "skel")
				for _, p := range []string{home, proj, filepath.Join(skel, ".config")} {
					os.MkdirAll(p, 0o755)
				}
				os.WriteFile(filepath.Join(skel, ".bashrc"), []byte("# skel\n"), 0o644)
				cfg := Config{Enabled: true, Skel: skel, Projects: Projects{Root: proj, Pattern: "^team(.+)$"}}.WithDefaults([]string{home}, filepath.Join(d, "cache.db"))
				if err := cfg.Check(nil); err != nil {
					b.Fatal(err)
				}
				c := &snapshot.Contents{}
				for u := 0; u < n; u++ {
					c.Users = append(c.Users, snapshot.User{Name: fmt.Sprintf("u%05d", u), UID: uint32(20000 + u), GID: uint32(20000 + u), Home: fmt.Sprintf("%s/u%05d", home, u), Active: true})
				}
				for g := 0; g < 100; g++ {
					c.Groups = append(c.Groups, snapshot.Group{Name: fmt.Sprintf("team%d", g), GID: uint32(40000 + g)})
				}
				t0 := time.Now()
				r, err := Pass(context.Background(), cfg, c, Options{})
				if err != nil || r.Homes != n || r.Teams != 100 {
					b.Fatalf("%v %+v", err, r.Actions[:min(3, len(r.Actions))])
				}
				first := time.Since(t0)
				t1 := time.Now()
				r, _ = Pass(context.Background(), cfg, c, Options{})
				if r.Changed() != 0 {
					b.Fatalf("second pass changed %d", r.Changed())
				}
				b.ReportMetric(first.Seconds(), "s/first-pass")
				b.ReportMetric(time.Since(t1).Seconds(), "s/second-pass")
			}
		})
	}
}
