package scimserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSampleFixture(t *testing.T) {
	d, err := ReadFixture(filepath.Join("testdata", "sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{})
	if err := s.Load(d); err != nil {
		t.Fatal(err)
	}
	carol, _ := s.User("carol")
	if carol.Active == nil || *carol.Active {
		t.Error("carol should be disabled")
	}
	if dave, _ := s.User("dave"); dave.POSIX != nil {
		t.Error("dave should have no POSIX attributes")
	}
	for _, name := range []string{"slurm-users", "slurm-sudo", "ml-team", "physics"} {
		if _, ok := s.Group(name); !ok {
			t.Errorf("group %s missing", name)
		}
	}
	// Every key in the fixture is one of the key pairs in testdata/keys,
	// and every private key there has its public half in the fixture.
	pubs, _ := filepath.Glob(filepath.Join("testdata", "keys", "*.pub"))
	inFixture := map[string]bool{}
	for _, u := range d.Users {
		if u.POSIX != nil {
			for _, k := range u.POSIX.SSHPublicKeys {
				inFixture[k] = true
			}
		}
	}
	if len(pubs) != len(inFixture) {
		t.Errorf("%d public key files, %d keys in the fixture", len(pubs), len(inFixture))
	}
	for _, p := range pubs {
		b, _ := os.ReadFile(p)
		if !inFixture[strings.TrimSpace(string(b))] {
			t.Errorf("%s is not in sample.json", p)
		}
		if _, err := os.Stat(strings.TrimSuffix(p, ".pub")); err != nil {
			t.Errorf("private half of %s: %v", p, err)
		}
	}
	if kg, err := exec.LookPath("ssh-keygen"); err == nil {
		for _, p := range pubs {
			if out, err := exec.Command(kg, "-l", "-f", p).CombinedOutput(); err != nil {
				t.Errorf("ssh-keygen -l %s: %v %s", p, err, out)
			}
		}
	}
}

func TestGenerateDeterministicAndRealistic(t *testing.T) {
	a := Generate(2000, 200, 7)
	b := Generate(2000, 200, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different directories")
	}
	if reflect.DeepEqual(a.Users[:10], Generate(2000, 200, 8).Users[:10]) {
		t.Fatal("different seeds, same users")
	}
	if len(a.Users) != 2000 || len(a.Groups) != 200 {
		t.Fatalf("%d users %d groups", len(a.Users), len(a.Groups))
	}
	names, uids, gids := map[string]bool{}, map[int64]bool{}, map[int64]bool{}
	inactive, noPOSIX := 0, 0
	for _, u := range a.Users {
		if names[u.UserName] {
			t.Fatalf("duplicate userName %s", u.UserName)
		}
		names[u.UserName] = true
		if !*u.Active {
			inactive++
		}
		if u.POSIX == nil {
			noPOSIX++
			continue
		}
		if uids[*u.POSIX.UIDNumber] {
			t.Fatalf("duplicate uid %d", *u.POSIX.UIDNumber)
		}
		uids[*u.POSIX.UIDNumber] = true
	}
	if inactive == 0 || inactive > 100 || noPOSIX == 0 || noPOSIX > 60 {
		t.Errorf("%d inactive, %d without POSIX", inactive, noPOSIX)
	}
	sizes := []int{}
	for _, g := range a.Groups {
		if gids[*g.GIDNumber] {
			t.Fatalf("duplicate gid %d", *g.GIDNumber)
		}
		gids[*g.GIDNumber] = true
		sizes = append(sizes, len(g.Members))
	}
	if a.Groups[0].DisplayName != "slurm-users" || sizes[0] < 1700 || sizes[1] == 0 || sizes[1] > 60 {
		t.Errorf("slurm-users %d members, slurm-sudo %d", sizes[0], sizes[1])
	}
	if sizes[2] < 10*sizes[len(sizes)-1] {
		t.Errorf("project groups not skewed: first %d, last %d", sizes[2], sizes[len(sizes)-1])
	}
	s := New(Options{})
	if err := s.Load(a); err != nil {
		t.Fatal(err)
	}
}

func TestGeneratedDirectoryServes(t *testing.T) {
	s := New(Options{Cursor: true, MaxPageSize: 500})
	if err := s.Load(Generate(2000, 200, 1)); err != nil {
		t.Fatal(err)
	}
	base, stop := s.Start()
	defer stop()
	users, _ := walkCursor(t, base, "/Users", 500, 10)
	groups, _ := walkIndex(t, base, "/Groups", 100, 10)
	if len(users) != 2000 || len(groups) != 200 {
		t.Fatalf("walked %d users %d groups", len(users), len(groups))
	}
}
