package mirror

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/publish"
)

// ageState moves the node's record of when it first verified the head's
// newest signature back by d: the clock moving on without waiting.
func ageState(t *testing.T, n *Node, d time.Duration) {
	t.Helper()
	a := n.accepted()
	if a == nil {
		t.Fatal("no accepted manifest")
	}
	a.SignedSeen = a.SignedSeen.Add(-d)
	b, _ := json.Marshal(a)
	if err := os.WriteFile(n.statePath(), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func activeOn(t *testing.T, path, user string) bool {
	t.Helper()
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	u, err := r.User(user)
	if err != nil {
		t.Fatal(err)
	}
	return u.Active
}

// A node served the same manifest forever (a stale copy of the publish
// directory) is "stale" once the newest signature it verified is older
// than stale_after, never "unchanged"; the live file's mtime (the gates'
// freshness) stays at the last source_contact the head signed; the real
// head's next manifest makes it fresh again.
func TestFrozenManifestGoesStale(t *testing.T) {
	r := newRig(t, "none")
	r.pub.Interval = time.Minute
	c0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	m1 := r.commit(contents(40, ""), c0)
	if m1.PollSeconds != 60 {
		t.Fatalf("manifest poll_seconds %d, want the head's 60", m1.PollSeconds)
	}
	frozen := filepath.Join(t.TempDir(), "frozen")
	if out, err := exec.Command("cp", "-a", r.dir, frozen).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	n := r.node(&dirTransport{dir: frozen})
	res := mustPoll(t, n, commit.Committed)
	if res.StaleAfter != DefaultStaleAfterMin || res.SignatureSeen.IsZero() {
		t.Fatalf("stale_after %s (want the default %s from a 60s head), seen %v", res.StaleAfter, DefaultStaleAfterMin, res.SignatureSeen)
	}
	// The head disables user0003 and signs again; the copy is frozen.
	r.commit(contents(40, "user0003"), c0.Add(time.Minute))
	mustPoll(t, n, commit.Unchanged)
	ageState(t, n, 4*time.Minute)
	mustPoll(t, n, commit.Unchanged) // 4 minutes: within five of the head's intervals
	ageState(t, n, 2*time.Minute)
	res = mustPoll(t, n, commit.Stale)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "stale_after 5m0s") || !strings.Contains(res.Err.Error(), "frozen copy") {
		t.Fatalf("stale error %v", res.Err)
	}
	st, err := commit.ReadStatus(n.StatusPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.LastResult != commit.Stale || st.LastError == "" || st.StaleAfterSeconds != 300 ||
		time.Since(st.SignatureSeen) < 6*time.Minute || st.HeadSerial != m1.Serial {
		t.Fatalf("status %+v", st)
	}
	if !st.LastSuccess.Before(st.LastAttempt) {
		t.Fatalf("a stale poll counted as a success: last success %v, last attempt %v", st.LastSuccess, st.LastAttempt)
	}
	// Replayed again and again: still stale, and the gates' freshness
	// (mtime) is the frozen source_contact, aging.
	mustPoll(t, n, commit.Stale)
	if fi, err := os.Stat(n.Live); err != nil || !fi.ModTime().Equal(c0) {
		t.Fatalf("live mtime %v, want the frozen source_contact %v (%v)", fi.ModTime(), c0, err)
	}
	if !activeOn(t, n.Live, "user0003") {
		t.Fatal("the frozen copy should still hold user0003 active")
	}
	// Pointed at the head again: the new signature makes it fresh.
	n.T = &dirTransport{dir: r.dir}
	mustPoll(t, n, commit.Committed)
	mustPoll(t, n, commit.Unchanged)
	if activeOn(t, n.Live, "user0003") {
		t.Fatal("user0003 is disabled at the head")
	}
	if st, _ := commit.ReadStatus(n.StatusPath); time.Since(st.SignatureSeen) > time.Minute {
		t.Fatalf("signature seen %v after a new signature", st.SignatureSeen)
	}
}

// stale_after from the config wins; without it, five head intervals, at
// least five minutes; an older head without poll_seconds gets the floor.
func TestStaleAfterDefault(t *testing.T) {
	for _, c := range []struct {
		cfg  time.Duration
		poll int64
		want time.Duration
	}{{0, 60, 5 * time.Minute}, {0, 600, 50 * time.Minute}, {0, 0, 5 * time.Minute}, {0, 1, 5 * time.Minute},
		{2 * time.Minute, 600, 2 * time.Minute}} {
		if got := staleAfter(c.cfg, c.poll); got != c.want {
			t.Errorf("staleAfter(%s, %d) = %s, want %s", c.cfg, c.poll, got, c.want)
		}
	}
}

// A node checks the live snapshot against its own /etc/group as the head
// does: a stale `sudo:x:27:user0003` line there is reported (status, with
// the line to fix), and goes away when the line is fixed.
func TestMirrorChecksOwnGroupFile(t *testing.T) {
	r := newRig(t, "none")
	// user0005 is disabled: a clash all the same.
	r.commit(contents(10, "user0005"), time.Now().UTC())
	n := r.node(&dirTransport{dir: r.dir})
	d := t.TempDir()
	n.Local = LocalFiles{Passwd: filepath.Join(d, "passwd"), Group: filepath.Join(d, "group")}
	os.WriteFile(n.Local.Passwd, []byte("root:x:0:0:root:/root:/bin/bash\nlocaldev:x:20005:20005::/home/localdev:/bin/sh\nUser0007:x:1234:1234::/home/u7:/bin/sh\n"), 0o644)
	os.WriteFile(n.Local.Group, []byte("root:x:0:\nsudo:x:27:admin,USER0003\nwheel:x:10:user0003,nosuchuser\n"), 0o644)
	res := mustPoll(t, n, commit.Committed)
	if len(res.LocalConflicts) != 3 || !strings.HasPrefix(res.LocalConflicts[0], "SCIM user user0003 is listed as a member of local group(s) sudo, wheel") ||
		!strings.HasPrefix(res.LocalConflicts[1], "SCIM user user0005 has uid 20005") ||
		!strings.HasPrefix(res.LocalConflicts[2], "SCIM user user0007 has the name of a local account") {
		t.Fatalf("conflicts (in uid order) %q", res.LocalConflicts)
	}
	st, _ := commit.ReadStatus(n.StatusPath)
	if len(st.LocalConflicts) != 3 {
		t.Fatalf("status conflicts %q", st.LocalConflicts)
	}
	// Fixed locally: the next poll (nothing new from the head) clears it.
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(n.Local.Group, []byte("root:x:0:\nsudo:x:27:admin\n"), 0o644)
	os.WriteFile(n.Local.Passwd, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
	if res := mustPoll(t, n, commit.Unchanged); len(res.LocalConflicts) != 0 {
		t.Fatalf("conflicts after the fix %q", res.LocalConflicts)
	}
}

// Rotating the head's key: a node whose public_key_file holds only the old
// key refuses the new head's manifest (and keeps its snapshot); with both
// keys in the file (the documented rotation) it follows the new head;
// config.LoadPublicKeys reads both blocks.
func TestKeyRotation(t *testing.T) {
	r := newRig(t, "none")
	r.commit(contents(20, ""), time.Now().UTC())
	oldOnly := r.node(&dirTransport{dir: r.dir})
	both := r.node(&dirTransport{dir: r.dir})
	mustPoll(t, oldOnly, commit.Committed)
	mustPoll(t, both, commit.Committed)

	_, newKey, _ := ed25519.GenerateKey(rand.Reader)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "publish.key.pub")
	var pemText []byte
	for _, k := range []ed25519.PublicKey{r.key.Public().(ed25519.PublicKey), newKey.Public().(ed25519.PublicKey)} {
		der, _ := x509.MarshalPKIXPublicKey(k)
		pemText = append(pemText, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)
	}
	os.WriteFile(keyFile, pemText, 0o644)
	keys, err := config.LoadPublicKeys(keyFile)
	if err != nil || len(keys) != 2 {
		t.Fatalf("LoadPublicKeys: %d keys, %v", len(keys), err)
	}
	both.Key, both.MoreKeys = keys[0], keys[1:]

	// The head is rebuilt with the new key (a higher serial: commit time).
	r.pub = &publish.Publisher{Dir: r.dir, Key: newKey, Compress: "none", Keep: 2}
	m := r.commit(contents(20, "user0002"), time.Now().UTC())
	if res := mustPoll(t, oldOnly, commit.Refused); !strings.Contains(res.Err.Error(), "signature does not verify") {
		t.Fatalf("old key only: %v", res.Err)
	}
	if !activeOn(t, oldOnly.Live, "user0002") {
		t.Fatal("the refused node changed its snapshot")
	}
	if res := mustPoll(t, both, commit.Committed); res.Meta.Serial != m.Serial || activeOn(t, both.Live, "user0002") {
		t.Fatalf("both keys: serial %d (want %d), user0002 still active", res.Meta.Serial, m.Serial)
	}
}

// A head whose clock is 10 minutes off the node's (either way): every new
// signature still makes the node fresh, since the age is measured from
// when the node first verified it, on the node's own clock.
func TestSignatureAgeIgnoresClockSkew(t *testing.T) {
	for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
		r := newRig(t, "none")
		m := r.commit(contents(10, ""), time.Now().UTC().Add(skew))
		n := r.node(&dirTransport{dir: r.dir})
		mustPoll(t, n, commit.Committed)
		for i := 1; i <= 2; i++ {
			next := *m
			next.SourceContact = m.SourceContact.Add(time.Duration(i) * time.Second)
			next.Signed = time.Now().UTC().Add(skew).Add(time.Duration(i) * time.Second)
			b, err := publish.Sign(&next, r.key)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(r.dir, publish.ManifestName), b, 0o644)
			res := mustPoll(t, n, commit.Unchanged)
			if age := time.Since(res.SignatureSeen); age > time.Minute || age < 0 {
				t.Fatalf("skew %s: signature age %s, want about 0", skew, age)
			}
		}
	}
}
