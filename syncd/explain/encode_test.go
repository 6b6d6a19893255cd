package explain

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// encoders is what json.Encoder writes for r: the record's text before
// the pieces.
func encoders(t *testing.T, r *Record) []byte {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gunzip(t *testing.T, z []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// randomRecord is a record with n users and n/10 groups whose values
// cover what JSON encodes differently: nil and empty lists, absent and
// false pointers, malformed maps, HTML characters, rejections.
func randomRecord(r *rand.Rand, n int) *Record {
	rec := &Record{Serial: r.Int64N(1000), WrittenAt: time.Unix(r.Int64N(1<<31), 0).UTC(), Source: "scim <test>"}
	id := func(i int) string { return fmt.Sprintf("%08x-%d", r.Uint32(), i) }
	for i := range n {
		u := source.User{ID: id(i), UserName: fmt.Sprintf("u%d&<>", i)}
		if r.IntN(3) > 0 {
			v := r.Int64N(1 << 40)
			u.UID = &v
		}
		if r.IntN(3) == 0 {
			b := r.IntN(2) == 0
			u.Active = &b
		}
		switch r.IntN(3) {
		case 0:
			u.SSHKeys = []string{}
		case 1:
			u.SSHKeys = []string{"ssh-ed25519 AAAA", fmt.Sprint(i)}
		}
		if r.IntN(10) == 0 {
			u.Malformed = map[string]string{"uid": "not a number", "home": fmt.Sprint(i)}
		}
		ur := UserRecord{Source: u, Verdict: Published, Name: fmt.Sprint("u", i)}
		if r.IntN(10) == 0 {
			ur.Verdict, ur.Name = Rejected, ""
			ur.Reasons = []validate.Rejection{{Kind: validate.KindUser, ID: u.ID, Name: u.UserName, Reason: validate.BadUID, Detail: "d\u2028"}}
		}
		rec.Users = append(rec.Users, ur)
	}
	for j := range n / 10 {
		g := source.Group{ID: id(j), DisplayName: fmt.Sprint("g", j)}
		for range r.IntN(20) {
			g.MemberIDs = append(g.MemberIDs, rec.Users[r.IntN(n)].Source.ID)
		}
		rec.Groups = append(rec.Groups, GroupRecord{Source: g, Verdict: Published, Name: g.DisplayName, Dropped: g.MemberIDs[:len(g.MemberIDs)/3]})
	}
	if r.IntN(2) == 0 {
		rec.Other = []validate.Rejection{{Kind: validate.KindConfig, ID: "posix_groups", Reason: validate.PosixGroupInexact}}
	}
	return rec
}

// mutate changes one thing of rec the way one poll does.
func mutate(r *rand.Rand, rec *Record) string {
	i := r.IntN(len(rec.Users))
	u := &rec.Users[i]
	switch r.IntN(7) {
	case 0:
		b := u.Source.Active == nil || !*u.Source.Active
		u.Source.Active = &b
		return "active"
	case 1:
		u.Source.SSHKeys = append(slices.Clip(u.Source.SSHKeys), "ssh-ed25519 BBBB")
		return "key"
	case 2:
		rec.Users = slices.Delete(rec.Users, i, i+1)
		return "delete"
	case 3:
		nu := UserRecord{Source: source.User{ID: fmt.Sprint("new", r.Uint32())}, Verdict: Filtered}
		rec.Users = slices.Insert(rec.Users, i, nu)
		return "insert"
	case 4:
		u.Source.UserName += "x"
		return "rename"
	case 5:
		g := &rec.Groups[r.IntN(len(rec.Groups))]
		g.Source.MemberIDs = append(slices.Clip(g.Source.MemberIDs), u.Source.ID)
		return "member"
	default:
		u.Reasons = append(slices.Clip(u.Reasons), validate.Rejection{Kind: validate.KindSSHKey, ID: u.Source.ID, Reason: validate.BadSSHKey})
		return "reason"
	}
}

// TestEncodeIsEncoders: the pieced gzip file holds, byte for byte, the
// JSON json.Encoder writes for the record, after each of a series of
// one-record changes (pieces kept from the write before), and Read and
// ReadSerial read it back.
func TestEncodeIsEncoders(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 3))
	for _, n := range []int{0, 1, 10, 3000} {
		rec := randomRecord(r, max(n, 1))
		if n == 0 {
			rec.Users, rec.Groups = nil, []GroupRecord{}
		}
		for step := range 40 {
			what := "first"
			if step > 0 && len(rec.Users) > 1 && len(rec.Groups) > 0 {
				what = mutate(r, rec)
			}
			z, err := Encode(rec)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := gunzip(t, z), encoders(t, rec); !bytes.Equal(got, want) {
				t.Fatalf("%d users, step %d (%s): the pieced record's text differs from json.Encoder's\n got %.300q\nwant %.300q", n, step, what, got, want)
			}
			p := filepath.Join(t.TempDir(), "x.explain")
			if err := Write(p, rec); err != nil {
				t.Fatal(err)
			}
			back, err := Read(p)
			if err != nil {
				t.Fatal(err)
			}
			if back.Serial != rec.Serial || len(back.Users) != len(rec.Users) || len(back.Groups) != len(rec.Groups) {
				t.Fatalf("read back %d users %d groups serial %d", len(back.Users), len(back.Groups), back.Serial)
			}
			if s, err := ReadSerial(p); err != nil || s != rec.Serial {
				t.Fatalf("ReadSerial: %d, %v", s, err)
			}
		}
	}
}

// TestEncodeReusesPieces: after one user changes, most of the file's
// compressed bytes are the last write's (the point of the pieces).
func TestEncodeReusesPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 4))
	rec := randomRecord(r, 20000)
	a, err := Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	b := true
	rec.Users[7000].Source.Active = &b
	rec.Users[7000].Source.UserName = "changed"
	bb, err := Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	pieces.Lock()
	kept := len(pieces.last)
	pieces.Unlock()
	same := 0
	for _, z := range splitMembers(t, bb) {
		if bytes.Contains(a, z) {
			same++
		}
	}
	if total := len(splitMembers(t, bb)); same < total-3 || kept < 20 {
		t.Fatalf("%d of %d pieces were the last write's (%d kept): one changed user should change one piece", same, total, kept)
	}
}

// splitMembers cuts a gzip file into its members.
func splitMembers(t *testing.T, z []byte) [][]byte {
	var out [][]byte
	br := bytes.NewReader(z)
	for br.Len() > 0 {
		start := len(z) - br.Len()
		zr, err := gzip.NewReader(br)
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, zr); err != nil {
			t.Fatal(err)
		}
		out = append(out, z[start:len(z)-br.Len()])
	}
	return out
}

// TestDigestCoversEveryField: the pieces' digest (encode.go) names every
// field JSON encodes; a new field must be added there, or a changed
// record would be served from a stale piece.
func TestDigestCoversEveryField(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{{source.User{}, 12}, {source.Group{}, 6}, {UserRecord{}, 4}, {GroupRecord{}, 5}, {validate.Rejection{}, 6}} {
		if n := reflect.TypeOf(c.v).NumField(); n != c.want {
			t.Errorf("%T has %d fields, the digest in encode.go covers %d: add the new one to hashUser/hashGroup/rejections", c.v, n, c.want)
		}
	}
}

// sync --once encodes the record before the write assigns its serial and
// finishes it after: the file is json.Encoder's text of the record with
// that serial and time, whatever the record said before.
func TestEncodeRestThenFinish(t *testing.T) {
	rec := randomRecord(rand.New(rand.NewPCG(7, 18)), 700)
	rest, err := EncodeRest(rec)
	if err != nil {
		t.Fatal(err)
	}
	rec.Serial, rec.WrittenAt = 4242, time.Unix(1_800_000_000, 0).UTC()
	z, err := rest.Finish(rec.Serial, rec.WrittenAt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gunzip(t, z), encoders(t, rec); !bytes.Equal(got, want) {
		t.Fatalf("finished record differs from json.Encoder's:\n%.300s\nwant:\n%.300s", got, want)
	}
	back, err := Read(writeTemp(t, z))
	if err != nil || back.Serial != 4242 || len(back.Users) != 700 {
		t.Fatalf("read back: %v, serial %d", err, back.Serial)
	}
}

// sync --once holds the encoded record through the snapshot's write in
// chunks (no buffer grown by doubling, no copy to trim it: issue 18); the
// finished file is json.Encoder's text all the same.
func TestEncodeRestInChunks(t *testing.T) {
	defer func(n int) { restChunk = n }(restChunk)
	restChunk = 16 << 10
	rec := randomRecord(rand.New(rand.NewPCG(11, 18)), 3000)
	rest, err := EncodeRest(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.z) < 2 {
		t.Fatalf("%d chunk for 3,000 users: the test does not spill", len(rest.z))
	}
	for i, c := range rest.z[:len(rest.z)-1] {
		if len(c) < restChunk {
			t.Errorf("chunk %d holds %d bytes, less than %d", i, len(c), restChunk)
		}
	}
	z, err := rest.Finish(rec.Serial, rec.WrittenAt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gunzip(t, z), encoders(t, rec); !bytes.Equal(got, want) {
		t.Fatalf("record differs from json.Encoder's:\n%.300s\nwant:\n%.300s", got, want)
	}
}

func writeTemp(t *testing.T, b []byte) string {
	p := filepath.Join(t.TempDir(), "cache.db.explain")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sync --once's encoding (EncodeRest with no last record's pieces)
// skips the records' digests and cuts by ids alone: its file is byte for
// byte the one the digesting path makes (the same pieces, the same
// gzip members), and json.Encoder's text.
func TestEncodeRestWithoutDigestsCutsTheSame(t *testing.T) {
	rec := randomRecord(rand.New(rand.NewPCG(9, 18)), 3000)
	pieces.Lock()
	pieces.last = nil
	pieces.Unlock()
	rest, err := EncodeRest(rec) // no pieces, none kept: no digests
	if err != nil {
		t.Fatal(err)
	}
	kept, err := encodeRest(rec, true) // digests every record
	if err != nil {
		t.Fatal(err)
	}
	if a, b := bytes.Join(rest.z, nil), bytes.Join(kept.z, nil); !bytes.Equal(a, b) {
		t.Fatalf("EncodeRest without digests made %d bytes, the digesting path %d, not the same", len(a), len(b))
	}
	if n := len(pieces.last); n < 3 {
		t.Fatalf("only %d pieces for 3,000 users: the test does not cut", n)
	}
	z, err := rest.Finish(rec.Serial, rec.WrittenAt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gunzip(t, z), encoders(t, rec); !bytes.Equal(got, want) {
		t.Fatalf("record differs from json.Encoder's:\n%.300s\nwant:\n%.300s", got, want)
	}
}

// BenchmarkEncodeRest is sync --once's encoding of the record (no last
// record's pieces) at 100,000 users.
func BenchmarkEncodeRest(b *testing.B) {
	rec := randomRecord(rand.New(rand.NewPCG(3, 18)), 100000)
	b.ResetTimer()
	cpu := func() float64 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	cpu0 := cpu()
	defer func() { b.ReportMetric((cpu()-cpu0)/float64(b.N), "cpu-s/op") }()
	for i := 0; i < b.N; i++ {
		pieces.Lock()
		pieces.last, pieces.size = nil, 0
		pieces.Unlock()
		if _, err := EncodeRest(rec); err != nil {
			b.Fatal(err)
		}
	}
}
