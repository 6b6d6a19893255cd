package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// A commit written in place is published with only its changed pages
// hashed again and only the frames holding them compressed again, and
// what is published is exactly what hashing everything gives: the page
// root of the live file's pages, an object that unpacks to the live
// file, deltas that turn the last snapshot into it. A whole write, or a
// publisher that did not publish the file the writer copied, hashes
// everything.
func TestPublishHashesOnlyChangedPages(t *testing.T) {
	key, d, live, c := headSnapshot(t, 6000, func(i int, u *snapshot.User) {
		u.GECOS = fmt.Sprintf("User number %d of the test directory", i)
		u.SSHKeys = []string{fmt.Sprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%040d user%d", i, i)}
	}, snapshot.Group{Name: "small", GID: 5001, SCIMID: "g2", Members: []string{"user1"}})
	p := &Publisher{Dir: filepath.Join(d, "pub"), Key: key, Compress: "zstd", Keep: 3, Deltas: 2}
	check := func(step string, wantPatched bool) {
		t.Helper()
		res, err := p.Publish(t.Context(), live, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		m := res.Manifest
		f, err := os.Open(live)
		if err != nil {
			t.Fatal(err)
		}
		all, err := pageHashes(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if m.PageRoot != PageRoot(all) {
			t.Fatalf("%s: the manifest's page root is not the live file's", step)
		}
		patched := p.PagesHashed < len(all)/4
		if patched != wantPatched {
			t.Fatalf("%s: %d of %d pages hashed (want only the changed ones: %v)", step, p.PagesHashed, len(all), wantPatched)
		}
		// The object unpacks to the live file.
		z, err := os.Open(filepath.Join(p.Dir, m.Object))
		if err != nil {
			t.Fatal(err)
		}
		dec, err := zstd.NewReader(z)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, dec); err != nil {
			t.Fatalf("%s: unpack: %v", step, err)
		}
		dec.Close()
		z.Close()
		if got := hex.EncodeToString(h.Sum(nil)); got != m.SHA256 {
			t.Fatalf("%s: the object unpacks to %.12s, the live file is %.12s", step, got, m.SHA256)
		}
		if wantPatched {
			// Every frame whose range holds no changed page is reused.
			lf, err := os.Open(live)
			if err != nil {
				t.Fatal(err)
			}
			pc, ok := snapshot.ChangedPagesOf(lf)
			lf.Close()
			if !ok {
				t.Fatalf("%s: the writer's page change is not known", step)
			}
			hit := map[int64]bool{}
			for _, pg := range pc.Pages {
				hit[int64(pg-1)*int64(pc.PageSize)/frameSize] = true
			}
			want := 0
			for k := int64(0); k*frameSize < pc.To.Size; k++ {
				if !hit[k] && (k+1)*frameSize <= min(pc.From.Size, pc.To.Size) {
					want++
				}
			}
			if p.FramesReused < want {
				t.Fatalf("%s: %d of %d frames reused, %d hold no changed page", step, p.FramesReused, p.FramesWritten, want)
			}
		}
		t.Logf("%s: %d of %d pages hashed, %d of %d frames reused, %d deltas", step, p.PagesHashed, len(all), p.FramesReused, p.FramesWritten, len(m.Deltas))
	}
	check("first", false)
	cur := c
	change := func(f func(n *snapshot.Contents)) {
		n := &snapshot.Contents{Source: cur.Source, Users: slices.Clone(cur.Users), Groups: slices.Clone(cur.Groups)}
		for i := range n.Groups {
			n.Groups[i].Members = slices.Clone(n.Groups[i].Members)
		}
		f(n)
		_, info, err := snapshot.UpdateWith(live, cur, n, snapshot.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !info.Incremental {
			t.Fatalf("written whole: %s", info.Fallback)
		}
		cur = n
	}
	change(func(n *snapshot.Contents) { n.Users[100].Active = false })
	check("disable", true)
	change(func(n *snapshot.Contents) { n.Groups[1].Members = append(n.Groups[1].Members, "user5000") })
	check("add member", true)
	change(func(n *snapshot.Contents) {
		for i := range 40 {
			n.Users = append(n.Users, snapshot.User{Name: fmt.Sprint("new", i), UID: uint32(20000 + i), GID: 5000, Home: fmt.Sprint("/home/new", i),
				Shell: "/bin/sh", Active: true, SCIMID: fmt.Sprint("n", i), GECOS: "a new user with a long enough name to take room"})
		}
	})
	check("new users", true)
	change(func(n *snapshot.Contents) { n.Users = slices.Delete(n.Users, 10, 30) })
	check("deleted users", true)
	// A publisher that did not publish the file the writer copied.
	p.lastSum = ""
	change(func(n *snapshot.Contents) { n.Users[7].Shell = "/bin/bash" })
	check("publisher without a base", false)
	change(func(n *snapshot.Contents) { n.Users[8].Shell = "/bin/bash" })
	check("after it", true)
	// A whole write.
	if _, err := snapshot.Write(live, cur); err != nil {
		t.Fatal(err)
	}
	check("whole write", false)
}
