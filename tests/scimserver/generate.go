package scimserver

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Generated directories use these number ranges.
const (
	GenUIDBase = 100000 // user i has uidNumber GenUIDBase+i
	GenGIDBase = 200000 // group j has gidNumber GenGIDBase+j
)

var (
	genFirst = []string{"james", "mary", "robert", "patricia", "john", "jennifer", "michael", "linda", "david", "elizabeth",
		"william", "barbara", "richard", "susan", "joseph", "jessica", "thomas", "sarah", "wei", "fatima", "arjun", "yuki",
		"olga", "pedro", "amara", "lars", "ines", "kwame", "mei", "omar", "sofia", "ravi", "nina", "tomas", "aiko", "emeka"}
	genLast = []string{"smith", "johnson", "williams", "brown", "jones", "garcia", "miller", "davis", "rodriguez", "martinez",
		"hernandez", "lopez", "wilson", "anderson", "thomas", "taylor", "moore", "jackson", "martin", "lee", "chen", "wang",
		"kumar", "singh", "nakamura", "ivanova", "silva", "okafor", "nielsen", "haddad", "rossi", "novak", "kowalski", "mensah"}
	genProjects = []string{"climate", "genomics", "lattice-qcd", "cosmo", "protein", "fusion", "seismic", "neuro",
		"materials", "vision", "nlp", "astro", "hydro", "quantum", "cryoem", "epidemic", "ocean", "robotics"}
	genShells = []string{"/bin/bash", "/bin/bash", "/bin/bash", "/bin/bash", "/bin/zsh", "/bin/sh"}
)

// genEpoch is when generated resources were created (a fixed instant, so
// generated directories are byte-for-byte reproducible).
var genEpoch = time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC)

// Generate builds a deterministic directory of users and groups from seed.
//
// Users: userName from a first initial, a last name and a number (unique);
// uidNumber GenUIDBase+i; gidNumber the first group's (slurm-users); home
// /home/<userName>; 0-2 syntactically valid ed25519 keys; about 2% are
// inactive and about 1% have no POSIX extension.
//
// Groups: group 0 is "slurm-users" with about 90% of users, group 1
// "slurm-sudo" with about 1%, then "<project>-<n>" groups; gidNumber
// GenGIDBase+j. Each user also joins 1-4 project groups chosen with a
// skewed (power-law) weight, so a few groups are large and most are small,
// as in real directories.
func Generate(users, groups int, seed int64) *Directory {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5c1b_71d9e))
	d := &Directory{Users: make([]User, 0, users), Groups: make([]Group, 0, groups)}
	id := func(kind uint64, i int) string {
		h := rand.New(rand.NewPCG(uint64(seed)^kind, uint64(i)))
		a, b := h.Uint64(), h.Uint64()
		return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0x3fff|0x8000, b&0xffffffffffff)
	}
	for j := range groups {
		name := fmt.Sprintf("%s-%d", genProjects[j%len(genProjects)], j)
		switch j {
		case 0:
			name = "slurm-users"
		case 1:
			name = "slurm-sudo"
		}
		t := genEpoch.Add(time.Duration(j) * time.Second)
		d.Groups = append(d.Groups, Group{
			ID: id(2, j), ExternalID: fmt.Sprintf("grp-%06d", j), DisplayName: name,
			GIDNumber: Int(int64(GenGIDBase + j)), Created: t, LastModified: t,
		})
	}
	primary := Int(GenGIDBase)
	if groups == 0 {
		primary = nil
	}
	taken := map[string]int{} // base userName -> users holding it so far
	for i := range users {
		first := genFirst[r.IntN(len(genFirst))]
		last := genLast[r.IntN(len(genLast))]
		userName := first[:1] + last
		// "jsmith", "jsmith2", ...: never a bare name followed by a
		// digit, so no generated name collides with another's suffix.
		if n := taken[userName]; n > 0 {
			taken[userName]++
			userName = fmt.Sprintf("%s%d", userName, n+1)
		} else {
			taken[userName] = 1
		}
		display := title(first) + " " + title(last)
		t := genEpoch.Add(time.Duration(i) * time.Second)
		u := User{
			ID: id(1, i), ExternalID: fmt.Sprintf("emp-%07d", i), UserName: userName,
			Name:        &Name{GivenName: title(first), FamilyName: title(last), Formatted: display},
			DisplayName: display,
			Emails:      []Email{{Value: userName + "@example.org", Type: "work", Primary: true}},
			Active:      Bool(r.IntN(100) >= 2),
			Created:     t, LastModified: t,
		}
		if r.IntN(100) >= 1 {
			u.POSIX = &POSIX{
				UIDNumber: Int(int64(GenUIDBase + i)), GIDNumber: primary,
				HomeDirectory: "/home/" + userName, LoginShell: genShells[r.IntN(len(genShells))],
				GECOS: display,
			}
			for range r.IntN(3) {
				u.POSIX.SSHPublicKeys = append(u.POSIX.SSHPublicKeys, fakeEd25519(r, userName))
			}
		}
		d.Users = append(d.Users, u)

		if groups > 0 && r.IntN(100) < 90 {
			d.Groups[0].Members = append(d.Groups[0].Members, u.ID)
		}
		if groups > 1 && r.IntN(100) < 1 {
			d.Groups[1].Members = append(d.Groups[1].Members, u.ID)
		}
		if groups > 2 {
			joined := map[int]bool{}
			for range 1 + r.IntN(4) {
				j := 2 + skewed(r, groups-2)
				if !joined[j] {
					joined[j] = true
					d.Groups[j].Members = append(d.Groups[j].Members, u.ID)
				}
			}
		}
	}
	return d
}

// skewed picks from [0, n) with weight roughly 1/(k+1) (inverse CDF of
// 1/x on [1, n+1)).
func skewed(r *rand.Rand, n int) int {
	k := int(math.Pow(float64(n+1), r.Float64())) - 1
	return min(max(k, 0), n-1)
}

// fakeEd25519 is a well-formed OpenSSH ed25519 public key line with random
// key bytes: parsers accept it, nobody holds its private key.
func fakeEd25519(r *rand.Rand, comment string) string {
	const typ = "ssh-ed25519"
	blob := make([]byte, 0, 4+len(typ)+4+32)
	blob = binary.BigEndian.AppendUint32(blob, uint32(len(typ)))
	blob = append(blob, typ...)
	blob = binary.BigEndian.AppendUint32(blob, 32)
	for range 4 {
		blob = binary.LittleEndian.AppendUint64(blob, r.Uint64())
	}
	return typ + " " + base64.StdEncoding.EncodeToString(blob) + " " + comment + "@generated"
}

func title(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
