package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// The reader's whole check (cache.Open runs scim_cache_check, syncd's and
// a node's verification) refuses a file whose NSS index has one overflow
// link not as written, wherever it is in the chain: in the first pages,
// past the first chunk the check reads (128 KiB), and the last page,
// whose link must be 0. It reads the chain without mapping it (mapped
// file pages count in the process's RSS: at 100,000 users the walk
// through the mapping held 24 MB of a node install's 41 MB): right after
// the check, less than a quarter of the index's size is mapped in this
// process (SQLite's own reads map some pages).
func TestIndexCheckReadsEveryLinkUnmapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c := generated(6000, 300)
	if _, err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	l, err := readLive(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	first, local, _, _, err := indexChainOf(f, l.pageSize, len(l.index))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pages := (len(l.index) - local + l.pageSize - 5) / (l.pageSize - 4)
	if pages*l.pageSize < 4*128<<10 {
		t.Fatalf("the index has %d pages of %d bytes: too few to cross the check's chunks", pages, l.pageSize)
	}

	// In a process of its own, as a node's or syncd's check runs: the
	// writer's process keeps mapping what it wrote.
	if mapped, index := checkedMappedKB(t, path), len(l.index)>>10; mapped > index/4 {
		t.Errorf("after the check %d kB of the file are mapped; the index is %d kB (the check walked it through a mapping)", mapped, index)
	}

	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.OpenLookups(filepath.Join(t.TempDir(), "none.db")); !errors.Is(err, cache.ErrUnavailable) {
		t.Errorf("OpenLookups of a missing file: %v", err)
	}
	// Page first+i of the file (1-based) starts at (first+i-1)*pageSize.
	for _, i := range []int{0, 1, 40, pages/2 + 3, pages - 2, pages - 1} {
		for _, link := range []uint32{0, uint32(first + i + 2), uint32(first + i)} {
			want := uint32(first + i + 1)
			if i == pages-1 {
				want = 0
			}
			if link == want {
				continue
			}
			bad := corrupted(t, orig, func(b []byte) {
				binary.BigEndian.PutUint32(b[(first+i-1)*l.pageSize:], link)
			})
			r, err := cache.Open(bad)
			if err == nil {
				r.Close()
				t.Errorf("index page %d of %d linked to %d, not %d: the check passed", i, pages, link, want)
				continue
			}
			if msg := fmt.Sprintf("page %d is not linked as written", first+i); !strings.Contains(err.Error(), msg) {
				t.Errorf("index page %d linked to %d: %v (want %q)", i, link, err, msg)
			}
			if link == 0 || i == pages-1 {
				continue
			}
			// A handle for a few lookups (cache.OpenLookups, a node's
			// check of its own accounts) skips the whole check: every
			// lookup answers right or fails, and those that cross the
			// wrong link fail.
			r, err = cache.OpenLookups(bad)
			if err != nil {
				t.Fatalf("OpenLookups of a file with one wrong index link: %v", err)
			}
			failed := 0
			answer := func(key string, err error, right bool) {
				switch {
				case errors.Is(err, cache.ErrUnavailable):
					failed++
				case err != nil:
					t.Fatalf("%s: %v", key, err)
				case !right:
					t.Fatalf("index page %d linked to %d: %s answered wrongly", i, link, key)
				}
			}
			for _, u := range c.Users {
				got, err := r.User(u.Name)
				answer("user "+u.Name, err, sameUser(got, u))
				got, err = r.UserByUID(u.UID)
				answer(fmt.Sprint("uid ", u.UID), err, sameUser(got, u))
			}
			for _, g := range c.Groups {
				got, err := r.Group(g.Name)
				answer("group "+g.Name, err, got.GID == g.GID && sameMembers(got.Members, g.Members))
				got, err = r.GroupByGID(g.GID)
				answer(fmt.Sprint("gid ", g.GID), err, got.Name == g.Name && sameMembers(got.Members, g.Members))
			}
			r.Close()
			// (The last pages hold buckets no lookup here reads.)
			if failed == 0 && i < pages-2 {
				t.Errorf("index page %d linked to %d: every lookup answered through OpenLookups", i, link)
			}
		}
	}
}

// checkedMappedKB runs TestIndexCheckChild, which opens path with the C
// reader's whole check, and returns the kB of the file it had mapped.
func checkedMappedKB(t *testing.T, path string) int {
	cmd := exec.Command(os.Args[0], "-test.run=^TestIndexCheckChild$", "-test.v")
	cmd.Env = append(os.Environ(), "INDEX_CHECK_CHILD="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the checking process: %v\n%s", err, out)
	}
	i := strings.Index(string(out), "MAPPED ")
	if i < 0 {
		t.Fatalf("the checking process said nothing:\n%s", out)
	}
	var kb int
	fmt.Sscanf(string(out[i:]), "MAPPED %d", &kb)
	return kb
}

// TestIndexCheckChild is TestIndexCheckReadsEveryLinkUnmapped's checking
// process.
func TestIndexCheckChild(t *testing.T) {
	path := os.Getenv("INDEX_CHECK_CHILD")
	if path == "" {
		t.Skip("only run by TestIndexCheckReadsEveryLinkUnmapped")
	}
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fmt.Printf("MAPPED %d\n", mappedKB(t, path))
}

// mappedKB is the resident kB of this process's mappings of path.
func mappedKB(t *testing.T, path string) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	kb, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) >= 6 && strings.Contains(fields[0], "-") {
			in = strings.HasSuffix(line, " "+path)
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			var n int
			fmt.Sscanf(strings.TrimPrefix(line, "Rss:"), "%d", &n)
			kb += n
		}
	}
	return kb
}
