package cache

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The snapshots here are built with the sqlite3 CLI straight from
// schema.sql, independently of syncd's writer, so a bug in the writer
// cannot hide a bug in the reader.

const fixture = `
INSERT INTO meta VALUES ('schema_version','2'),('serial','7'),('source','test');
INSERT INTO users VALUES (12345,'alice',5000,'Alice Liddell','/home/alice','/bin/bash',1,'u-1');
INSERT INTO users VALUES (12346,'bob',5000,'','/home/bob','/bin/zsh',0,'u-2');
INSERT INTO users VALUES (12300,'carol',5001,'Carol','/home/carol','/bin/sh',1,'u-3');
INSERT INTO groups (gid, name, scim_id) VALUES (5000,'hpc','g-1'),(5001,'empty','g-2'),(5002,'ml','g-3');
INSERT INTO memberships VALUES (5000,'bob'),(5000,'alice'),(5002,'alice');
INSERT INTO ssh_keys VALUES ('alice',2,'ssh-ed25519 AAAAsecond alice@b'),('alice',1,'ssh-ed25519 AAAAfirst alice@a');
INSERT INTO slurm_associations VALUES ('alice','physics','normal,gpu','normal',1,0),('alice','chem','normal','normal',0,1);
`

func schema(t *testing.T) string { return snapshotSQL(t, "schema.sql") }

// derive fills the derived table user_groups, as syncd's writer does.
func derive(t *testing.T) string { return snapshotSQL(t, "derive.sql") }

func snapshotSQL(t *testing.T, name string) string {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "snapshot", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fillMembers sets groups.members from memberships, as syncd's writer
// does: member names, comma-separated, in name order.
const fillMembers = `UPDATE groups SET members = coalesce((SELECT group_concat(user_name, ',') FROM
  (SELECT user_name FROM memberships m WHERE m.gid = groups.gid ORDER BY user_name)), '');`

// build writes a snapshot at path from schema.sql (with pre prepended,
// for pragmas that must come first) plus sql, then fills groups.members
// and user_groups.
func build(t *testing.T, path, pre, sql string) {
	t.Helper()
	tmp := path + ".tmp"
	cmd := exec.Command("sqlite3", "-bail", tmp)
	cmd.Stdin = strings.NewReader(pre + schema(t) + "BEGIN;" + sql + fillMembers + derive(t) + "COMMIT;")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v: %s", err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, path string) *Cache {
	t.Helper()
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestLookups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	build(t, path, "", fixture)
	c := open(t, path)

	alice := User{Name: "alice", UID: 12345, GID: 5000, GECOS: "Alice Liddell", Home: "/home/alice", Shell: "/bin/bash", Active: true}
	bob := User{Name: "bob", UID: 12346, GID: 5000, Home: "/home/bob", Shell: "/bin/zsh", Active: false}
	carol := User{Name: "carol", UID: 12300, GID: 5001, GECOS: "Carol", Home: "/home/carol", Shell: "/bin/sh", Active: true}
	if u, err := c.User("alice"); err != nil || u != alice {
		t.Errorf("User(alice) = %+v, %v", u, err)
	}
	if u, err := c.User("bob"); err != nil || u != bob {
		t.Errorf("User(bob) (disabled, still resolves) = %+v, %v", u, err)
	}
	if u, err := c.UserByUID(12300); err != nil || u != carol {
		t.Errorf("UserByUID(12300) = %+v, %v", u, err)
	}
	for _, name := range []string{"nobody", "", "ALICE", "alice "} {
		if _, err := c.User(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("User(%q) err = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := c.UserByUID(0); !errors.Is(err, ErrNotFound) {
		t.Errorf("UserByUID(0) err = %v, want ErrNotFound", err)
	}
	if users, err := c.Users(); err != nil || !reflect.DeepEqual(users, []User{carol, alice, bob}) {
		t.Errorf("Users() = %+v, %v; want uid order", users, err)
	}

	hpc := Group{Name: "hpc", GID: 5000, Members: []string{"alice", "bob"}}
	empty := Group{Name: "empty", GID: 5001, Members: []string{}}
	ml := Group{Name: "ml", GID: 5002, Members: []string{"alice"}}
	if g, err := c.Group("hpc"); err != nil || !reflect.DeepEqual(g, hpc) {
		t.Errorf("Group(hpc) = %+v, %v", g, err)
	}
	if g, err := c.GroupByGID(5001); err != nil || !reflect.DeepEqual(g, empty) {
		t.Errorf("GroupByGID(5001) = %+v, %v", g, err)
	}
	if _, err := c.GroupByGID(5003); !errors.Is(err, ErrNotFound) {
		t.Errorf("GroupByGID(5003) err = %v", err)
	}
	if gs, err := c.Groups(); err != nil || !reflect.DeepEqual(gs, []Group{hpc, empty, ml}) {
		t.Errorf("Groups() = %+v, %v", gs, err)
	}

	if g, err := c.UserGroups("alice"); err != nil || !reflect.DeepEqual(g, []uint32{5000, 5002}) {
		t.Errorf("UserGroups(alice) = %v, %v", g, err)
	}
	if g, err := c.UserGroups("carol"); err != nil || len(g) != 0 {
		t.Errorf("UserGroups(carol) = %v, %v; want none", g, err)
	}
	if _, err := c.UserGroups("nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("UserGroups(nobody) err = %v", err)
	}
	for _, tc := range []struct {
		user, group string
		want        bool
	}{{"alice", "ml", true}, {"bob", "ml", false}, {"bob", "hpc", true}, {"alice", "nogroup", false}, {"nobody", "hpc", false}} {
		if got, err := c.InGroup(tc.user, tc.group); err != nil || got != tc.want {
			t.Errorf("InGroup(%s, %s) = %v, %v", tc.user, tc.group, got, err)
		}
	}

	if k, err := c.Keys("alice"); err != nil || !reflect.DeepEqual(k, []string{"ssh-ed25519 AAAAfirst alice@a", "ssh-ed25519 AAAAsecond alice@b"}) {
		t.Errorf("Keys(alice) = %q, %v; want seq order", k, err)
	}
	if k, err := c.Keys("bob"); err != nil || len(k) != 0 {
		t.Errorf("Keys(bob) = %q, %v; want none", k, err)
	}
	if _, err := c.Keys("nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Keys(nobody) err = %v", err)
	}

	wantA := []Association{
		{Account: "chem", QOS: []string{"normal"}, DefaultQOS: "normal", Blocked: true},
		{Account: "physics", QOS: []string{"normal", "gpu"}, DefaultQOS: "normal", IsDefault: true},
	}
	if a, err := c.Associations("alice"); err != nil || !reflect.DeepEqual(a, wantA) {
		t.Errorf("Associations(alice) = %+v, %v", a, err)
	}
	if a, err := c.Associations("bob"); err != nil || len(a) != 0 {
		t.Errorf("Associations(bob) = %+v, %v", a, err)
	}

	if v, err := c.Meta("serial"); err != nil || v != "7" {
		t.Errorf("Meta(serial) = %q, %v", v, err)
	}
	if _, err := c.Meta("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Meta(nope) err = %v", err)
	}
}

// Results larger than the initial buffer must come back whole: the
// binding retries on ERANGE with a larger buffer.
func TestLargeResultsGrowBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	var sql strings.Builder
	sql.WriteString("INSERT INTO meta VALUES ('schema_version','2');INSERT INTO groups (gid, name) VALUES (7000,'big');")
	var want []string
	for i := 0; i < 3000; i++ {
		name := fmt.Sprintf("user%05d", i)
		want = append(want, name)
		fmt.Fprintf(&sql, "INSERT INTO users VALUES (%d,'%s',7000,'%s','/home/%s','/bin/sh',1,'');", 20000+i, name, strings.Repeat("g", i%50), name)
		fmt.Fprintf(&sql, "INSERT INTO memberships VALUES (7000,'%s');", name)
	}
	long := "ssh-rsa " + strings.Repeat("A", 8000) + " long@key"
	fmt.Fprintf(&sql, "INSERT INTO ssh_keys VALUES ('user00000',1,'%s');", long)
	fmt.Fprintf(&sql, "INSERT INTO meta VALUES ('blob','%s');", strings.Repeat("m", 5000))
	build(t, path, "", sql.String())
	c := open(t, path)

	g, err := c.Group("big")
	if err != nil || !reflect.DeepEqual(g.Members, want) {
		t.Fatalf("Group(big): %d members, err %v", len(g.Members), err)
	}
	if k, err := c.Keys("user00000"); err != nil || len(k) != 1 || k[0] != long {
		t.Errorf("Keys: %d keys, err %v", len(k), err)
	}
	if v, err := c.Meta("blob"); err != nil || len(v) != 5000 {
		t.Errorf("Meta(blob): %d bytes, err %v", len(v), err)
	}
	users, err := c.Users()
	if err != nil || len(users) != 3000 || users[2999].Name != "user02999" {
		t.Errorf("Users(): %d, err %v", len(users), err)
	}
}

func TestUnavailable(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	build(t, good, "", fixture)
	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	version2 := filepath.Join(dir, "v2.db")
	build(t, version2, "", strings.Replace(fixture, "('schema_version','2')", "('schema_version','99')", 1))
	otherApp := filepath.Join(dir, "app.db")
	build(t, otherApp, "", fixture+"PRAGMA application_id = 42;")
	noTable := filepath.Join(dir, "notable.db")
	build(t, noTable, "", fixture+"DROP TABLE ssh_keys;")
	noMeta := filepath.Join(dir, "nometa.db")
	build(t, noMeta, "", strings.Replace(fixture, "('schema_version','2'),", "", 1))
	if err := os.Mkdir(filepath.Join(dir, "dir.db"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, path, reason string }{
		{"missing", filepath.Join(dir, "missing.db"), "no such file"},
		{"directory", filepath.Join(dir, "dir.db"), "not a regular file"},
		{"empty", write("empty.db", nil), "empty"},
		{"text", write("text.db", []byte("cache_path = /x\n")), "not an sqlite database"},
		{"header only", write("hdr.db", goodBytes[:100]), "truncated"},
		{"truncated", write("trunc.db", goodBytes[:len(goodBytes)/2]), "truncated"},
		{"extended", write("ext.db", append(append([]byte{}, goodBytes...), make([]byte, 4096)...)), "truncated or extended"},
		{"schema version 99", version2, "schema_version 99"},
		{"no schema version", noMeta, "schema_version (none)"},
		{"other application", otherApp, "application_id"},
		{"missing table", noTable, "ssh_keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(tc.path)
			if err == nil {
				c.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.reason)) {
				t.Errorf("err = %v, want ErrUnavailable mentioning %q", err, tc.reason)
			}
		})
	}
}

// A handle follows its path: syncd replaces the file by rename, and after
// Check (or within a second) lookups answer from the new file; a removed
// file is unavailable until one appears again.
func TestFollowsReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	build(t, path, "", fixture)
	c := open(t, path)
	if _, err := c.User("dave"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("dave before: %v", err)
	}
	build(t, path, "", strings.Replace(fixture, "('serial','7')", "('serial','8')", 1)+
		"INSERT INTO users VALUES (12400,'dave',5000,'','/home/dave','/bin/sh',1,'');")
	if err := c.Check(); err != nil {
		t.Fatalf("Check after replace: %v", err)
	}
	if u, err := c.User("dave"); err != nil || u.UID != 12400 {
		t.Errorf("dave after replace: %+v, %v", u, err)
	}
	if v, _ := c.Meta("serial"); v != "8" {
		t.Errorf("serial after replace = %q", v)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Check after remove: %v, want ErrUnavailable", err)
	}
	if _, err := c.User("alice"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("after remove: %v, want ErrUnavailable", err)
	}
	build(t, path, "", fixture)
	if u, err := c.User("alice"); err != nil || u.UID != 12345 {
		t.Errorf("after the file came back: %+v, %v", u, err)
	}
}

// Without Check, a replaced file is noticed by the reader's own check,
// which runs at most once a second: the lookup right after the rename may
// still answer from the old file, one a second later must not.
func TestReplacedFileSeenWithinASecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	build(t, path, "", fixture)
	c := open(t, path)
	if u, err := c.User("alice"); err != nil || u.GECOS != "Alice Liddell" {
		t.Fatalf("alice before: %+v, %v", u, err)
	}
	build(t, path, "", strings.Replace(fixture, "Alice Liddell", "Alice B", 1))
	if u, err := c.User("alice"); err != nil || (u.GECOS != "Alice Liddell" && u.GECOS != "Alice B") {
		t.Fatalf("alice right after the rename: %+v, %v", u, err)
	}
	time.Sleep(1100 * time.Millisecond)
	if u, err := c.User("alice"); err != nil || u.GECOS != "Alice B" {
		t.Errorf("alice 1.1 s after the rename: %+v, %v; want the new file", u, err)
	}
}

// A file that left the path, was rewritten in place with another
// snapshot of the same size and came back (a mirror node's spare,
// syncd/mirror) is a new file to a handle that held it and did not look
// in between: same device, inode and size, but not the same ctime
// (same_file). With dev/inode/size alone the handle kept answering from
// what it had read of the old bytes.
func TestRewrittenInodeBackAtThePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	away, other, next := filepath.Join(dir, "away.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "a2.db")
	build(t, path, "", fixture)
	build(t, other, "", strings.Replace(fixture, "Alice Liddell", "Alice Other", 1))
	build(t, next, "", strings.Replace(fixture, "Alice Liddell", "Alice Spared", 1))
	c := open(t, path)
	if u, err := c.User("alice"); err != nil || u.GECOS != "Alice Liddell" {
		t.Fatalf("alice from A: %+v, %v", u, err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// A leaves the path, B is installed (the handle does not look).
	if err := os.Rename(path, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	// A's inode is rewritten in place with A2, of the same size.
	b, err := os.ReadFile(next)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != before.Size() {
		t.Fatalf("A2 is %d bytes, A %d: the test needs the same size", len(b), before.Size())
	}
	f, err := os.OpenFile(away, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, path); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || after.Size() != before.Size() {
		t.Fatal("the path does not name A's inode at A's size again")
	}
	if err := c.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if u, err := c.User("alice"); err != nil || u.GECOS != "Alice Spared" {
		t.Errorf("alice after A came back rewritten: %+v, %v; want A2's \"Alice Spared\"", u, err)
	}
}

// One Cache shared by goroutines while the file is replaced underneath:
// every answer comes from one of the two versions.
func TestConcurrentUseAcrossReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	build(t, a, "", fixture)
	build(t, b, "", strings.Replace(fixture, "Alice Liddell", "Alice B", 1))
	if err := os.Link(a, path); err != nil {
		t.Fatal(err)
	}
	c := open(t, path)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				u, err := c.User("alice")
				if err != nil || (u.GECOS != "Alice Liddell" && u.GECOS != "Alice B") {
					errs <- fmt.Errorf("lookup %d: %+v, %v", i, u, err)
					return
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		src := a
		if i%2 == 0 {
			src = b
		}
		tmp := path + ".new"
		if err := os.Link(src, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestClosedCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	build(t, path, "", fixture)
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.User("alice"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("User after Close: %v", err)
	}
	if _, err := c.UserGroups("alice"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("UserGroups after Close: %v", err)
	}
}

// A touch (syncd's freshness mark) changes ModTime at once and is not a
// new file; the floor hides ids below 1000 however the file was made.
func TestModTimeAndFloor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	build(t, path, "", fixture+`INSERT INTO users VALUES (999,'low',5000,'','/home/low','/bin/sh',1,'u-9');
INSERT INTO users VALUES (12399,'sudoer',27,'','/home/sudoer','/bin/sh',1,'u-8');
INSERT INTO groups (gid, name, scim_id) VALUES (27,'sudo','g-9');
INSERT INTO memberships VALUES (27,'alice');`)
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := time.Unix(1700000000, 0)
	if err := os.Chtimes(path, want, want); err != nil {
		t.Fatal(err)
	}
	got, err := c.ModTime()
	if err != nil || !got.Equal(want) {
		t.Fatalf("ModTime after a touch = %v, %v; want %v", got, err, want)
	}
	for _, name := range []string{"low", "sudoer"} {
		if _, err := c.User(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("User(%q) below the floor: %v, want ErrNotFound", name, err)
		}
	}
	if _, err := c.GroupByGID(27); !errors.Is(err, ErrNotFound) {
		t.Errorf("GroupByGID(27): %v, want ErrNotFound", err)
	}
	gids, err := c.UserGroups("alice")
	if err != nil || !reflect.DeepEqual(gids, []uint32{5000, 5002}) {
		t.Errorf("UserGroups(alice) = %v, %v; want [5000 5002] (no 27)", gids, err)
	}
}
