package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/history"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// A node's history made of reverse deltas (its delta installs,
// snapshot/reverse.go): `syncd history`, `syncd diff` and `syncd
// rollback` on the node answer what they answer on the head, whose
// history is whole files. A damaged link of the chain: the entries that
// need it say so, naming it; the others are still listed and usable.
func TestHistoryOnMirrorReverseDeltas(t *testing.T) {
	kd := t.TempDir()
	key := filepath.Join(kd, "head.key")
	head := newEnv(t, 2000, 20, fmt.Sprintf("[publish]\ndir = %q\nkey_file = %q\n", filepath.Join(kd, "pub"), key))
	if rc, out := runCLI(t, head, "keygen", "--out", key); rc != 0 {
		t.Fatalf("keygen: rc %d %s", rc, out)
	}
	node := &env{dir: filepath.Join(kd, "node")}
	node.cache = filepath.Join(node.dir, "cache.db")
	node.cfgPath = filepath.Join(kd, "node.toml")
	os.MkdirAll(node.dir, 0o755)
	if err := os.WriteFile(node.cfgPath, []byte(fmt.Sprintf("cache_path = %q\nstatus_path = %q\n[mirror]\npath = %q\npublic_key_file = %q\n",
		node.cache, filepath.Join(node.dir, "status.json"), filepath.Join(kd, "pub"), key+".pub")), 0o600); err != nil {
		t.Fatal(err)
	}
	users := head.srv.Snapshot().Users
	for i := 0; i < 8; i++ {
		if i > 0 {
			head.srv.UpdateUser(users[i].ID, func(u *scimserver.User) {
				if u.POSIX != nil {
					u.POSIX.GECOS = fmt.Sprintf("Version %d", i)
				}
				u.DisplayName = fmt.Sprintf("Version %d", i)
			})
		}
		if rc, out := runCLI(t, head, "sync", "--once"); rc != 0 {
			t.Fatalf("head sync %d: rc %d %s", i, rc, out)
		}
		if rc, out := runCLI(t, node, "mirror", "--once"); rc != 0 || !strings.Contains(out, "committed") {
			t.Fatalf("node poll %d: rc %d %s", i, rc, out)
		}
	}
	es, err := snapshot.History(node.cache)
	if err != nil || len(es) != 8 {
		t.Fatalf("node history %+v %v: want 8 entries", es, err)
	}
	for i, e := range es {
		if e.Reverse != (i < 7) {
			t.Fatalf("node history entry %d (%s): want reverse deltas but the live one, a link", i, e.Path)
		}
	}
	// The same answers as the head's whole files.
	_, hout := runCLI(t, head, "history")
	rc, nout := runCLI(t, node, "history")
	if rc != 0 || nout != hout || strings.Count(nout, "\n") != 8 {
		t.Fatalf("history on the node (rc %d):\n%s\non the head:\n%s", rc, nout, hout)
	}
	s := func(i int) string { return fmt.Sprint(es[i].Serial) }
	for _, ab := range [][2]string{{s(1), s(4)}, {s(0), "live"}, {s(6), s(2)}} {
		_, hd := runCLI(t, head, "diff", ab[0], ab[1])
		rc, nd := runCLI(t, node, "diff", ab[0], ab[1])
		if rc != 0 || nd != hd || !strings.Contains(nd, "changed") {
			t.Fatalf("diff %s %s on the node (rc %d):\n%s\non the head:\n%s", ab[0], ab[1], rc, nd, hd)
		}
	}

	// A damaged link: entry 4 (a reverse delta) loses a byte.
	broken := es[4]
	b, _ := os.ReadFile(broken.Path)
	os.WriteFile(broken.Path, b[:len(b)-1], 0o644)
	rc, nout = runCLI(t, node, "history")
	lines := strings.Split(strings.TrimSpace(nout), "\n")
	if rc != 0 || len(lines) != 8 {
		t.Fatalf("history with a damaged entry: rc %d\n%s", rc, nout)
	}
	name := filepath.Base(broken.Path)
	for i, l := range lines {
		switch {
		case i <= 4 && (!strings.Contains(l, "unreadable") || !strings.Contains(l, name)):
			t.Errorf("line %d does not name the damaged entry %s: %s", i, name, l)
		case i > 4 && strings.Contains(l, "unreadable"):
			t.Errorf("line %d, newer than the damaged entry, unreadable: %s", i, l)
		}
	}
	if !strings.Contains(lines[5], "first kept") || !strings.HasPrefix(lines[7], "*") {
		t.Errorf("history with a damaged entry:\n%s", nout)
	}
	if _, _, err := history.Load(node.cache, es[2].Serial); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("loading serial %d through the damaged entry: %v", es[2].Serial, err)
	}
	if rc, _ := runCLI(t, node, "rollback", s(3)); rc != 1 {
		t.Errorf("rollback through a damaged entry: rc %d", rc)
	}
	// A rollback to an entry after it: the node's live snapshot is the
	// head's snapshot of that serial, pinned.
	rc, out := runCLI(t, node, "rollback", s(5))
	if rc != 0 || !strings.Contains(out, "rolled back to serial "+s(5)) {
		t.Fatalf("rollback %s on the node: rc %d\n%s", s(5), rc, out)
	}
	want, _, _ := snapshot.Load(snapshot.HistoryPath(head.cache, es[5].Serial))
	got, _, _ := snapshot.Load(node.cache)
	if d := commit.Compute(want, got); !d.Empty() {
		t.Errorf("the node's live snapshot after the rollback differs from the head's serial %s: %s", s(5), d.Summary())
	}
	if left, _ := filepath.Glob(filepath.Join(snapshot.HistoryDir(node.cache), ".rebuilt-*")); len(left) > 0 {
		t.Errorf("rebuilt files left behind: %v", left)
	}
}
