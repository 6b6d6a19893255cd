package mirror

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/klauspost/compress/zstd"
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

func contents(n int, disabled string) *snapshot.Contents {
	c := &snapshot.Contents{Source: "test"}
	var members []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("user%04d", i)
		c.Users = append(c.Users, snapshot.User{Name: name, UID: uint32(20000 + i), GID: 20000,
			Home: "/home/" + name, Shell: "/bin/bash", Active: name != disabled, SCIMID: fmt.Sprint("u-", i)})
		members = append(members, name)
	}
	c.Groups = []snapshot.Group{{Name: "hpc", GID: 20000, SCIMID: "g-1", Members: members}}
	return c
}

type rig struct {
	t              *testing.T
	headCache, dir string
	pub            *publish.Publisher
	key            ed25519.PrivateKey
}

func newRig(t *testing.T, compress string) *rig {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	r := &rig{t: t, headCache: filepath.Join(d, "head", "cache.db"), dir: filepath.Join(d, "pub"), key: key}
	r.pub = &publish.Publisher{Dir: r.dir, Key: key, Compress: compress, Keep: 2}
	return r
}

// commit writes contents on the head and publishes it.
func (r *rig) commit(c *snapshot.Contents, contact time.Time) *publish.Manifest {
	r.t.Helper()
	if _, err := snapshot.Write(r.headCache, c); err != nil {
		r.t.Fatal(err)
	}
	res, err := r.pub.Publish(context.Background(), r.headCache, contact)
	if err != nil {
		r.t.Fatal(err)
	}
	return res.Manifest
}

func (r *rig) node(t Transport) *Node {
	d := r.t.TempDir()
	log := logrus.New()
	log.SetOutput(os.Stderr)
	log.SetLevel(logrus.WarnLevel)
	return &Node{T: t, Key: r.key.Public().(ed25519.PublicKey), Live: filepath.Join(d, "cache.db"),
		StatusPath: filepath.Join(d, "status.json"), MaxSize: 1 << 30, Log: log}
}

func mustPoll(t *testing.T, n *Node, want string) *Result {
	t.Helper()
	res := n.Poll(context.Background())
	if res.Outcome != want {
		t.Fatalf("poll: %s (%v), want %s", res.Outcome, res.Err, want)
	}
	return res
}

func sameFile(t *testing.T, a, b string) {
	t.Helper()
	sa, _, err := publish.HashFile(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, _, err := publish.HashFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if sa != sb {
		t.Fatalf("%s and %s differ", a, b)
	}
}

func TestMirrorOverDirAndHTTP(t *testing.T) {
	for _, compress := range []string{"none", "zstd"} {
		t.Run(compress, func(t *testing.T) {
			r := newRig(t, compress)
			c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			m1 := r.commit(contents(300, ""), c0)
			if m1.Compression != compress {
				t.Fatalf("compression %s, want %s", m1.Compression, compress)
			}
			srv := httptest.NewServer((&publish.Server{Dir: r.dir, MaxConnections: 4}).Handler())
			defer srv.Close()
			ht, err := newHTTP(srv.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			nodes := []*Node{r.node(&dirTransport{dir: r.dir}), r.node(ht)}
			for _, n := range nodes {
				res := mustPoll(t, n, commit.Committed)
				if res.Meta.Serial != 1 || res.Meta.Users != 300 {
					t.Fatalf("meta %+v", res.Meta)
				}
				sameFile(t, n.Live, r.headCache)
				fi, _ := os.Stat(n.Live)
				if !fi.ModTime().Equal(c0) {
					t.Fatalf("live mtime %v, want source_contact %v", fi.ModTime(), c0)
				}
				mustPoll(t, n, commit.Unchanged)
			}
			// A quiet head poll: same snapshot, newer contact -> mtime moves.
			c1 := c0.Add(time.Minute)
			res, err := r.pub.Publish(context.Background(), r.headCache, c1)
			if err != nil || !res.Resigned || res.NewObject {
				t.Fatalf("re-sign: %+v %v", res, err)
			}
			for _, n := range nodes {
				if res := mustPoll(t, n, commit.Unchanged); !res.Touched {
					t.Fatal("not touched")
				}
				fi, _ := os.Stat(n.Live)
				if !fi.ModTime().Equal(c1) {
					t.Fatalf("live mtime %v, want %v", fi.ModTime(), c1)
				}
			}
			// A change: one user disabled.
			m2 := r.commit(contents(300, "user0007"), c1.Add(time.Minute))
			for _, n := range nodes {
				if res := mustPoll(t, n, commit.Committed); res.Meta.Serial != m2.Serial {
					t.Fatalf("serial %d want %d", res.Meta.Serial, m2.Serial)
				}
				sameFile(t, n.Live, r.headCache)
				st, err := commit.ReadStatus(n.StatusPath)
				if err != nil || st.Serial != m2.Serial || st.LastResult != commit.Committed {
					t.Fatalf("status %+v %v", st, err)
				}
			}
		})
	}
}

func TestMirrorRefusesTampering(t *testing.T) {
	r := newRig(t, "none")
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r.commit(contents(200, ""), c0)
	oldManifest, err := os.ReadFile(filepath.Join(r.dir, publish.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	n := r.node(&dirTransport{dir: r.dir})
	mustPoll(t, n, commit.Committed)
	m2 := r.commit(contents(200, "user0003"), c0.Add(time.Minute))
	liveBefore, _, _ := publish.HashFile(n.Live)

	manifestPath := filepath.Join(r.dir, publish.ManifestName)
	objPath := filepath.Join(r.dir, m2.Object)
	good, _ := os.ReadFile(manifestPath)
	obj, _ := os.ReadFile(objPath)

	refused := func(name, want string) {
		t.Helper()
		res := n.Poll(context.Background())
		if res.Outcome != commit.Refused || res.Err == nil || !strings.Contains(res.Err.Error(), want) {
			t.Fatalf("%s: %s %v, want refused with %q", name, res.Outcome, res.Err, want)
		}
		if sum, _, _ := publish.HashFile(n.Live); sum != liveBefore {
			t.Fatalf("%s: live snapshot changed", name)
		}
		st, _ := commit.ReadStatus(n.StatusPath)
		if st.LastResult != commit.Refused || !strings.Contains(st.LastError, want) {
			t.Fatalf("%s: status %s %q", name, st.LastResult, st.LastError)
		}
	}

	// Modified snapshot file: one byte flipped in the middle.
	bad := append([]byte(nil), obj...)
	bad[len(bad)/2] ^= 0x55
	os.WriteFile(objPath, bad, 0o644)
	refused("modified", "SHA-256")
	// Truncated.
	os.WriteFile(objPath, obj[:len(obj)/3], 0o644)
	refused("truncated", "truncated")
	os.WriteFile(objPath, obj, 0o644)

	// Signed by another key.
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	m, err := publish.Open(good, r.key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := publish.Sign(m, other)
	os.WriteFile(manifestPath, forged, 0o644)
	refused("other key", "signature")
	// Payload edited under a good signature (another snapshot's hash).
	var env struct{ Payload, KeyID, Signature string }
	json.Unmarshal(good, &env)
	raw, _ := base64.StdEncoding.DecodeString(env.Payload)
	raw = []byte(strings.Replace(string(raw), `"serial":2`, `"serial":9`, 1))
	edited := fmt.Sprintf(`{"payload": %q, "key_id": %q, "signature": %q}`, base64.StdEncoding.EncodeToString(raw), env.KeyID, env.Signature)
	os.WriteFile(manifestPath, []byte(edited), 0o644)
	refused("edited payload", "signature does not verify")
	// Truncated manifest.
	os.WriteFile(manifestPath, good[:len(good)/2], 0o644)
	refused("truncated manifest", "truncated")

	// Now take the new snapshot, then replay the old manifest.
	os.WriteFile(manifestPath, good, 0o644)
	mustPoll(t, n, commit.Committed)
	liveBefore, _, _ = publish.HashFile(n.Live)
	os.WriteFile(manifestPath, oldManifest, 0o644)
	refused("replay", "lower than the live snapshot's")

	// Same snapshot, older source_contact: refused too.
	older := *m
	older.SourceContact = c0.Add(-time.Hour)
	b, _ := publish.Sign(&older, r.key)
	os.WriteFile(manifestPath, b, 0o644)
	refused("older contact", "older than the live snapshot's")

	// And the good one is accepted again.
	os.WriteFile(manifestPath, good, 0o644)
	mustPoll(t, n, commit.Unchanged)
}

func TestPublishPrunesAndIsContentAddressed(t *testing.T) {
	r := newRig(t, "auto")
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var names []string
	for i := 0; i < 5; i++ {
		m := r.commit(contents(100, fmt.Sprintf("user%04d", i)), c0.Add(time.Duration(i)*time.Minute))
		names = append(names, m.Object)
	}
	ents, _ := os.ReadDir(r.dir)
	var have []string
	for _, e := range ents {
		have = append(have, e.Name())
	}
	if len(have) != 4 { // manifest + current + Keep (2)
		t.Fatalf("publish dir holds %v, want manifest + 3 snapshot files", have)
	}
	for _, want := range names[2:] {
		if _, err := os.Stat(filepath.Join(r.dir, want)); err != nil {
			t.Fatalf("%s pruned too early", want)
		}
	}
}

// TestMirrorOverS3 publishes through minio-go into gofakes3 (an S3 server
// written elsewhere, in-process here) and mirrors from it.
func TestMirrorOverS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("cluster"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	target := config.S3{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "cluster", Prefix: "head1", Insecure: true}
	r := newRig(t, "zstd")
	up, err := publish.NewS3Uploader(target)
	if err != nil {
		t.Fatal(err)
	}
	r.pub.Upload = up
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r.commit(contents(150, ""), c0)
	tr, err := New(config.Mirror{S3: target})
	if err != nil {
		t.Fatal(err)
	}
	n := r.node(tr)
	mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
	r.commit(contents(150, "user0001"), c0.Add(time.Minute))
	mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
	mustPoll(t, n, commit.Unchanged)
}

// TestMirrorRefusesTruncatedHTTPTransfer: the server announces the full
// length and closes the connection half way.
func TestMirrorRefusesTruncatedHTTPTransfer(t *testing.T) {
	r := newRig(t, "none")
	m := r.commit(contents(200, ""), time.Now())
	files := http.FileServer(http.Dir(r.dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, ".db") {
			b, _ := os.ReadFile(filepath.Join(r.dir, m.Object))
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			w.Write(b[:len(b)/2])
			return // the server closes a short body's connection
		}
		files.ServeHTTP(w, req)
	}))
	defer srv.Close()
	ht, _ := newHTTP(srv.URL, "")
	n := r.node(ht)
	res := n.Poll(context.Background())
	if res.Outcome != commit.Refused || !strings.Contains(res.Err.Error(), "truncated") {
		t.Fatalf("%s %v, want refused: truncated", res.Outcome, res.Err)
	}
	if _, err := os.Stat(n.Live); !os.IsNotExist(err) {
		t.Fatalf("a live snapshot appeared: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(n.Live), ".cache.db.*"))
	if len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

// TestServeETag: a quiet head answers a node's manifest poll with 304.
func TestServeETag(t *testing.T) {
	r := newRig(t, "none")
	r.commit(contents(10, ""), time.Now())
	srv := httptest.NewServer((&publish.Server{Dir: r.dir, MaxConnections: 2}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/" + publish.ManifestName)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/"+publish.ManifestName, nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	resp2, err := http.DefaultClient.Do(req)
	if err != nil || resp2.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: %v %v", resp2.Status, err)
	}
	for _, p := range []string{"/", "/../cache.db", "/" + publish.ManifestName + ".new", "/.snapshot-1.tmp"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %v %v, want 404", p, resp.Status, err)
		}
	}
}

// TestWriterIsDeterministic: disabling one of 5,000 users changes a few
// pages of the snapshot; page deltas depend on it.
func TestWriterIsDeterministic(t *testing.T) {
	d := t.TempDir()
	a, b := filepath.Join(d, "a.db"), filepath.Join(d, "b.db")
	if _, err := snapshot.Write(a, contents(5000, "")); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Write(b, contents(5000, "user2500")); err != nil {
		t.Fatal(err)
	}
	pa, _ := os.ReadFile(a)
	pb, _ := os.ReadFile(b)
	if len(pa) != len(pb) {
		t.Fatalf("sizes %d and %d", len(pa), len(pb))
	}
	changed := 0
	for off := 0; off < len(pa); off += publish.PageSize {
		end := min(off+publish.PageSize, len(pa))
		if string(pa[off:end]) != string(pb[off:end]) {
			changed++
		}
	}
	t.Logf("%d of %d pages changed", changed, len(pa)/publish.PageSize)
	if changed == 0 || changed > 8 {
		t.Fatalf("%d of %d pages changed by one user's active flag; want 1..8", changed, len(pa)/publish.PageSize)
	}
}

func TestMirrorAppliesDeltas(t *testing.T) {
	r := newRig(t, "auto")
	r.pub.Deltas = 2
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r.commit(contents(3000, ""), c0)
	n := r.node(&dirTransport{dir: r.dir})
	full := mustPoll(t, n, commit.Committed)
	m2 := r.commit(contents(3000, "user0100"), c0.Add(time.Minute))
	if len(m2.Deltas) != 1 {
		t.Fatalf("deltas %+v", m2.Deltas)
	}
	res := mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
	t.Logf("full %d bytes, delta poll %d bytes (%d pages)", full.Bytes, res.Bytes, m2.Deltas[0].Pages)
	if res.Bytes*10 > full.Bytes {
		t.Fatalf("delta poll fetched %d bytes, the full one %d", res.Bytes, full.Bytes)
	}
	// Two more changes: deltas from each of the last two snapshots.
	r.commit(contents(3000, "user0200"), c0.Add(2*time.Minute))
	m4 := r.commit(contents(3000, "user0300"), c0.Add(3*time.Minute))
	if len(m4.Deltas) != 2 {
		t.Fatalf("deltas %+v", m4.Deltas)
	}
	res = mustPoll(t, n, commit.Committed) // from m2: two snapshots back
	sameFile(t, n.Live, r.headCache)
	if res.Bytes*10 > full.Bytes {
		t.Fatalf("delta from two back fetched %d bytes", res.Bytes)
	}
	// A corrupt delta (re-signed manifest, so only the result check can
	// catch it): the node falls back to the full file.
	m5 := r.commit(contents(3000, "user0400"), c0.Add(4*time.Minute))
	dpath := filepath.Join(r.dir, m5.Deltas[0].Object)
	raw, _ := os.ReadFile(dpath)
	dec, _ := zstd.NewReader(nil)
	plain, _ := dec.DecodeAll(raw, nil)
	plain[len(plain)-100] ^= 0xff // a byte of the last page
	enc, _ := zstd.NewWriter(nil)
	bad := enc.EncodeAll(plain, nil)
	os.WriteFile(dpath, bad, 0o644)
	sum := sha256.Sum256(bad)
	m5.Deltas[0].Size, m5.Deltas[0].SHA256 = int64(len(bad)), hex.EncodeToString(sum[:])
	b, _ := publish.Sign(m5, r.key)
	os.WriteFile(filepath.Join(r.dir, publish.ManifestName), b, 0o644)
	res = mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
	if res.Bytes < full.Bytes/2 {
		t.Fatalf("after a bad delta the node fetched only %d bytes: no fallback?", res.Bytes)
	}
}

// TestMirrorOverHTTPS: the node trusts only its ca_file.
func TestMirrorOverHTTPS(t *testing.T) {
	r := newRig(t, "auto")
	r.commit(contents(50, ""), time.Now())
	srv := httptest.NewTLSServer((&publish.Server{Dir: r.dir, MaxConnections: 4}).Handler())
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	untrusted, _ := newHTTP(srv.URL, "")
	if res := r.node(untrusted).Poll(context.Background()); res.Outcome != commit.Failed {
		t.Fatalf("without ca_file: %s %v, want failed (unknown authority)", res.Outcome, res.Err)
	}
	trusted, err := newHTTP(srv.URL, ca)
	if err != nil {
		t.Fatal(err)
	}
	n := r.node(trusted)
	mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
}

// TestMirrorRespectsRollbackPin: `syncd rollback` on a node re-commits an
// old snapshot under a serial of its own and pins it; the node does not
// install the head's snapshots until `syncd resume` removes the pin, and
// then takes the head's again although its own serial is higher.
func TestMirrorRespectsRollbackPin(t *testing.T) {
	r := newRig(t, "none")
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r.commit(contents(100, ""), c0)
	n := r.node(&dirTransport{dir: r.dir})
	mustPoll(t, n, commit.Committed)
	// The local rollback: other contents, a higher serial, a pin.
	if _, err := snapshot.Write(n.Live, contents(100, "user0001")); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Write(n.Live, contents(100, "user0002")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(n.Live+".pin", []byte(`{"serial":3,"rolled_back_to":1}`), 0o644)
	r.commit(contents(100, "user0009"), c0.Add(time.Minute)) // the head's serial 2
	local, _, _ := publish.HashFile(n.Live)
	mustPoll(t, n, Pinned)
	if sum, _, _ := publish.HashFile(n.Live); sum != local {
		t.Fatal("a pinned node installed the head's snapshot")
	}
	os.Remove(n.Live + ".pin")
	mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
	mustPoll(t, n, commit.Unchanged)
}

// A delta is checked page by page against the signed page root with the
// page hashes kept beside the live file (pages.go); a damaged sidecar
// costs a whole-file check, never a wrong install or a full download.
func TestMirrorDeltaCheckedByPageRoot(t *testing.T) {
	r := newRig(t, "auto")
	r.pub.Deltas = 2
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m1 := r.commit(contents(3000, ""), c0)
	if m1.PageRoot == "" {
		t.Fatal("the manifest has no page_root")
	}
	n := r.node(&dirTransport{dir: r.dir})
	full := mustPoll(t, n, commit.Committed)
	if p := n.loadPages(m1.SHA256); p == nil {
		t.Fatal("no page hashes kept beside the live file after a full fetch")
	}
	m2 := r.commit(contents(3000, "user0100"), c0.Add(time.Minute))
	res := mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
	if res.Bytes*10 > full.Bytes {
		t.Fatalf("delta poll fetched %d bytes, the full one %d", res.Bytes, full.Bytes)
	}
	p := n.loadPages(m2.SHA256)
	if p == nil {
		t.Fatal("the page hashes were not carried to the new live file")
	}
	_, _, want, err := publish.HashFilePages(n.Live)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.hashes, want) {
		t.Fatal("the kept page hashes are not the live file's")
	}
	// Damage the sidecar: the next delta is still applied and right.
	b, _ := os.ReadFile(n.pagesPath())
	b[len(b)-1] ^= 0xff
	os.WriteFile(n.pagesPath(), b, 0o644)
	r.commit(contents(3000, "user0200"), c0.Add(2*time.Minute))
	res = mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
	if res.Bytes*10 > full.Bytes {
		t.Fatalf("with a damaged sidecar the delta poll fetched %d bytes (a full download?)", res.Bytes)
	}
}

// TestPublishReusesFrames: after a one-user change written in place, the
// .db.zst is the last one's frames except the changed range's (issue 18:
// the full object's compression proportional to the change), and a new
// node that fetches the full object installs exactly the head's file.
func TestPublishReusesFrames(t *testing.T) {
	r := newRig(t, "zstd")
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	prev := contents(30000, "")
	r.commit(prev, c0)
	if r.pub.FramesReused != 0 || r.pub.FramesWritten < 3 {
		t.Fatalf("first object: %d of %d frames reused; want 0 of at least 3 (a snapshot over 3 MiB)", r.pub.FramesReused, r.pub.FramesWritten)
	}
	next := contents(30000, "user0100")
	if _, err := snapshot.Update(r.headCache, prev, next); err != nil {
		t.Fatal(err)
	}
	res, err := r.pub.Publish(context.Background(), r.headCache, c0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Compression != "zstd" {
		t.Fatalf("compression %q", res.Manifest.Compression)
	}
	if r.pub.FramesReused == 0 || r.pub.FramesReused < r.pub.FramesWritten-3 {
		t.Fatalf("%d of %d frames reused after one user changed in place", r.pub.FramesReused, r.pub.FramesWritten)
	}
	n := r.node(&dirTransport{dir: r.dir})
	mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
	// The frames' source replaced under the publisher (not its file):
	// nothing is copied from it, and the object is still right.
	obj := filepath.Join(r.dir, res.Manifest.Object)
	raw, _ := os.ReadFile(obj)
	os.WriteFile(obj+".new", raw, 0o644) // same bytes, another inode
	if err := os.Rename(obj+".new", obj); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Update(r.headCache, next, prev); err != nil {
		t.Fatal(err)
	}
	if _, err := r.pub.Publish(context.Background(), r.headCache, c0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r.pub.FramesReused != 0 {
		t.Fatalf("%d frames copied from a file the publisher did not write", r.pub.FramesReused)
	}
	mustPoll(t, n, commit.Committed)
	sameFile(t, n.Live, r.headCache)
}

// A new node process (`syncd mirror --once`) takes the live file's hash
// from the state file while the file keeps the identity it had (same
// inode, size and ctime), and hashes the file again after any write to it.
func TestMirrorKeepsLiveHashByIdentity(t *testing.T) {
	r := newRig(t, "none")
	c0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := r.commit(contents(200, ""), c0)
	n := r.node(&dirTransport{dir: r.dir})
	mustPoll(t, n, commit.Committed)
	again := func() *Node { // a new process: nothing in memory
		return &Node{T: n.T, Key: n.Key, Live: n.Live, StatusPath: n.StatusPath, MaxSize: n.MaxSize, Log: n.Log}
	}
	mustPoll(t, again(), commit.Unchanged)
	a := n.accepted()
	if a.Live == nil || a.Live.SHA256 != m.SHA256 {
		t.Fatalf("state file keeps %+v for the live file, want its SHA-256 %s", a.Live, m.SHA256)
	}
	// The kept hash stands for the file's bytes while its identity holds:
	// a kept hash that is not the manifest's makes the node fetch again
	// (the file is not read to find out).
	setKept := func(sum string) {
		a := n.accepted()
		a.Live.SHA256 = sum
		b, _ := json.Marshal(a)
		if err := os.WriteFile(n.statePath(), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := strings.Repeat("ab", 32)
	setKept(other)
	mustPoll(t, again(), commit.Committed)
	sameFile(t, n.Live, filepath.Join(r.dir, m.Object))
	// Any write moves the ctime: the same bytes written over the first
	// page make the kept (wrong) hash void, and the file is hashed again.
	setKept(other)
	f, err := os.OpenFile(n.Live, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	page := make([]byte, 4096)
	if _, err := f.ReadAt(page, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // past the kernel's timestamp granularity
	if _, err := f.WriteAt(page, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mustPoll(t, again(), commit.Unchanged)
	if a := n.accepted(); a.Live == nil || a.Live.SHA256 != m.SHA256 {
		t.Fatalf("after the write the state file keeps %+v, want the file's SHA-256 %s", a.Live, m.SHA256)
	}
}
