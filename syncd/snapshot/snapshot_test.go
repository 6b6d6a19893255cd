package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

func sample() *Contents {
	return &Contents{
		Source: "https://idp.example/scim/v2",
		Users: []User{
			{Name: "alice", UID: 10001, GID: 10001, GECOS: "Alice A", Home: "/home/alice", Shell: "/bin/bash", Active: true, SCIMID: "u-1",
				SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ6Y0example alice@laptop"}},
			{Name: "bob", UID: 10002, GID: 10001, Home: "/home/bob", Shell: "/bin/zsh", Active: false, SCIMID: "u-2"},
		},
		Groups: []Group{
			{Name: "slurm-users", GID: 10001, SCIMID: "g-1", Members: []string{"alice", "bob"}},
			{Name: "ml-team", GID: 10005, SCIMID: "g-2", Members: []string{"alice"}},
		},
		Associations: []Association{{User: "alice", Account: "ml-team", QOS: []string{"normal", "gpu"}, DefaultQOS: "normal", IsDefault: true}},
	}
}

func TestWriteThenReadThroughCReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	meta, err := Write(path, sample())
	if err != nil {
		t.Fatal(err)
	}
	if meta.Serial != 1 || meta.Users != 2 || meta.Groups != 2 || meta.Memberships != 3 || meta.SSHKeys != 1 {
		t.Errorf("meta = %+v", meta)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (every process reads it)", st.Mode().Perm())
	}
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bob, err := r.User("bob")
	if err != nil || bob.Active || bob.Shell != "/bin/zsh" {
		t.Errorf("bob = %+v, %v; want disabled with /bin/zsh", bob, err)
	}
	g, err := r.GroupByGID(10001)
	if err != nil || !sameMembers(g.Members, []string{"alice", "bob"}) {
		t.Errorf("gid 10001 = %+v, %v", g, err)
	}
	as, err := r.Associations("alice")
	if err != nil || len(as) != 1 || as[0].Account != "ml-team" || !as[0].IsDefault || len(as[0].QOS) != 2 {
		t.Errorf("associations of alice = %+v, %v", as, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if e.Name() != "cache.db" && e.Name() != "cache.db.history" {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

// groups.members is what getgrnam/getgrgid answer from: the members in
// name order whatever order the source gave, the caller's slice untouched.
func TestGroupMembersColumnInNameOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c := sample()
	c.Groups[0].Members = []string{"bob", "alice"}
	if _, err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Groups[0].Members, []string{"bob", "alice"}) {
		t.Errorf("Write reordered the caller's members: %v", c.Groups[0].Members)
	}
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, gid := range []uint32{10001, 10005} {
		g, err := r.GroupByGID(gid)
		want := map[uint32][]string{10001: {"alice", "bob"}, 10005: {"alice"}}[gid]
		if err != nil || !slices.Equal(g.Members, want) {
			t.Errorf("gid %d: members %q, %v; want %q", gid, g.Members, err, want)
		}
	}
}

func TestSecondWriteKeepsPreviousAndBumpsSerial(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if _, err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	c := sample()
	c.Users = c.Users[:1]
	c.Groups[0].Members = []string{"alice"}
	meta, err := Write(path, c)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Serial != 2 {
		t.Errorf("serial %d, want 2", meta.Serial)
	}
	_, prev, err := Load(path + PrevSuffix)
	if err != nil || prev.Serial != 1 || prev.Users != 2 {
		t.Errorf("previous snapshot: %+v, %v; want serial 1 with 2 users", prev, err)
	}
	got, live, err := Load(path)
	if err != nil || live.Serial != 2 || len(got.Users) != 1 {
		t.Errorf("live snapshot: %+v, %v", live, err)
	}
}

func TestFailedWriteLeavesLiveSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if _, err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := sample()
	bad.Groups[1].GID = bad.Groups[0].GID // duplicate gid: the build must fail
	if _, err := Write(path, bad); err == nil {
		t.Fatal("Write accepted two groups with one gid")
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("live snapshot changed after a failed write")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 { // the live one and its history
		t.Errorf("failed write left %d files, want only the live one and its history", len(entries))
	}
}

func TestLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	want := sample()
	if _, err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, meta, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Source != want.Source || len(got.Users) != 2 || got.Users[0].SSHKeys[0] != want.Users[0].SSHKeys[0] ||
		got.Associations[0].DefaultQOS != "normal" || !got.Associations[0].IsDefault {
		t.Errorf("round trip: %+v", got)
	}
	if _, _, err := Load(filepath.Join(t.TempDir(), "none.db")); !IsNotExist(err) {
		t.Errorf("Load of a missing file: %v, want not-exist", err)
	}
}

// The reader refuses every schema version but its own, so writer and
// header must agree.
func TestSchemaVersionMatchesCHeader(t *testing.T) {
	h, err := os.ReadFile("../../include/scimcache.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`#define SCIM_SCHEMA_VERSION (\d+)`).FindSubmatch(h)
	if m == nil {
		t.Fatal("SCIM_SCHEMA_VERSION not found in include/scimcache.h")
	}
	if v, _ := strconv.Atoi(string(m[1])); v != SchemaVersion {
		t.Errorf("header says schema %d, writer writes %d", v, SchemaVersion)
	}
	if !regexp.MustCompile(`PRAGMA user_version = ` + strconv.Itoa(SchemaVersion) + `;`).MatchString(schemaSQL) {
		t.Error("schema.sql user_version differs from SchemaVersion")
	}
}

func BenchmarkWrite100k(b *testing.B) {
	c := &Contents{Source: "bench"}
	for i := 0; i < 100000; i++ {
		name := "u" + strconv.Itoa(i)
		c.Users = append(c.Users, User{Name: name, UID: uint32(100000 + i), GID: 100000, Home: "/home/" + name, Shell: "/bin/bash", Active: true})
	}
	for j := 0; j < 10000; j++ {
		g := Group{Name: "g" + strconv.Itoa(j), GID: uint32(200000 + j)}
		for k := 0; k < 10; k++ {
			g.Members = append(g.Members, "u"+strconv.Itoa((j*10+k)%100000))
		}
		c.Groups = append(c.Groups, g)
	}
	path := filepath.Join(b.TempDir(), "cache.db")
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := Write(path, c); err != nil {
			b.Fatal(err)
		}
	}
	// CPU, not wall: on the shared 2 cores the wall time is mostly waiting.
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// Touch sets the freshness time; a rewrite keeps it (only contact with
// the source moves it).
func TestTouchAndCarriedFreshness(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cache.db")
	c := &Contents{Users: []User{{Name: "ann", UID: 20001, GID: 20000, Home: "/home/ann", Shell: "/bin/bash", Active: true}}}
	if _, err := Write(p, c); err != nil {
		t.Fatal(err)
	}
	contact := time.Now().Add(-90 * time.Minute).Truncate(time.Second)
	if err := Touch(p, contact); err != nil {
		t.Fatal(err)
	}
	if got, err := Freshness(p); err != nil || !got.Equal(contact) {
		t.Fatalf("freshness %v, %v; want %v", got, err, contact)
	}
	c.Users[0].Active = false
	if _, err := Write(p, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := Freshness(p); !got.Equal(contact) {
		t.Errorf("a rewrite moved freshness to %v, want %v kept", got, contact)
	}
	if err := Touch(filepath.Join(filepath.Dir(p), "nope.db"), contact); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("touch of a missing file: %v", err)
	}
}
