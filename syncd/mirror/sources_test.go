package mirror

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Two heads signing with one key: the node follows the highest serial,
// fails over to the other head when that one goes down, and still
// refuses a replayed manifest.
// twoHeads: heads a and b with one key and the same contents, b at serial
// 1, a at serial aSerial, both last in contact at t0.
func twoHeads(t *testing.T, aSerial int, t0 time.Time) (a, b *rig, c *snapshot.Contents, ma *publish.Manifest) {
	a, b = newRig(t, "none"), newRig(t, "none")
	b.key, b.pub.Key = a.key, a.key
	c = contents(50, "")
	b.commit(c, t0)
	for i := 0; i < aSerial; i++ {
		ma = a.commit(c, t0)
	}
	return a, b, c, ma
}

func TestMirrorFailsOverBetweenHeads(t *testing.T) {
	t0 := time.Now().Add(-time.Minute).UTC()
	a, b, _, ma := twoHeads(t, 3, t0)
	n := a.node(&dirTransport{dir: a.dir})
	n.Fallback = []Transport{&dirTransport{dir: b.dir}}
	res := mustPoll(t, n, commit.Committed)
	if res.Meta.Serial != ma.Serial || res.From != a.dir {
		t.Fatalf("followed serial %d from %s, want %d from %s", res.Meta.Serial, res.From, ma.Serial, a.dir)
	}
	oldA, _ := os.ReadFile(filepath.Join(a.dir, publish.ManifestName))

	// Both up, B re-signs with newer contacts: the node stays on A's
	// higher serial (no flapping between heads).
	b.pub.Publish(context.Background(), b.headCache, t0.Add(10*time.Second))
	if res := mustPoll(t, n, commit.Unchanged); res.From != a.dir {
		t.Fatalf("both up: followed %s, want %s", res.From, a.dir)
	}

	// A goes down; B keeps reaching the source.
	os.Rename(a.dir, a.dir+".down")
	b.pub.Publish(context.Background(), b.headCache, t0.Add(20*time.Second))
	res = mustPoll(t, n, commit.Committed)
	if res.Meta.Serial != 1 || res.From != b.dir {
		t.Fatalf("A down: serial %d from %s, want 1 from %s", res.Meta.Serial, res.From, b.dir)
	}
	sameFile(t, n.Live, b.headCache)
	st, _ := commit.ReadStatus(n.StatusPath)
	if st.Source != "mirror "+b.dir {
		t.Fatalf("status source %q, want mirror %s", st.Source, b.dir)
	}
	if fi, _ := os.Stat(n.Live); !fi.ModTime().Equal(t0.Add(20 * time.Second).Truncate(time.Millisecond)) {
		t.Fatalf("live mtime %s, want B's source_contact", fi.ModTime())
	}

	// A's old manifest played back (higher serial, older source_contact):
	// refused; the node stays on B.
	os.MkdirAll(a.dir, 0o755)
	os.WriteFile(filepath.Join(a.dir, publish.ManifestName), oldA, 0o644)
	res = mustPoll(t, n, commit.Unchanged)
	if res.From != b.dir {
		t.Fatalf("replay of A: followed %s", res.From)
	}
	// With B gone too, the replay alone is refused.
	os.Rename(b.dir, b.dir+".down")
	res = mustPoll(t, n, commit.Refused)
	if !strings.Contains(res.Err.Error(), "is lower than") && !strings.Contains(res.Err.Error(), "not newer") {
		t.Fatalf("replay: %v", res.Err)
	}
	sameFile(t, n.Live, b.headCache)
	// Every source down: failed, with each reason.
	os.Rename(a.dir, a.dir+".gone")
	res = mustPoll(t, n, commit.Failed)
	if !strings.Contains(res.Err.Error(), a.dir) || !strings.Contains(res.Err.Error(), b.dir) {
		t.Fatalf("all down: %v", res.Err)
	}
}

// A head rebuilt from scratch: clock-based serials keep it above what it
// published before, and even a lower serial with a newer source_contact
// is followed; an old manifest is still refused.
func TestMirrorFollowsRebuiltHead(t *testing.T) {
	r := newRig(t, "none")
	c := contents(50, "")
	t0 := time.Now().Add(-time.Minute).UTC()
	for i := 0; i < 3; i++ {
		r.commit(c, t0)
	}
	n := r.node(&dirTransport{dir: r.dir})
	mustPoll(t, n, commit.Committed)
	old, _ := os.ReadFile(filepath.Join(r.dir, publish.ManifestName))

	for _, clock := range []bool{false, true} {
		// Wiped: cache, history and publish directory gone; a new process.
		os.RemoveAll(filepath.Dir(r.headCache))
		os.RemoveAll(r.dir)
		r.pub = &publish.Publisher{Dir: r.dir, Key: r.key, Compress: "none", Keep: 2}
		snapshot.ClockSerials = clock
		t0 = t0.Add(time.Second)
		m := r.commit(contents(51, ""), t0)
		snapshot.ClockSerials = false
		if clock && m.Serial < time.Now().Unix()-5 {
			t.Fatalf("clock serial %d", m.Serial)
		}
		if !clock && m.Serial != 1 {
			t.Fatalf("serial %d", m.Serial)
		}
		res := mustPoll(t, n, commit.Committed)
		if res.Meta.Serial != m.Serial || res.Meta.Users != 51 {
			t.Fatalf("rebuilt head (clock %v): serial %d users %d", clock, res.Meta.Serial, res.Meta.Users)
		}
		live, _, _ := publish.HashFile(n.Live)
		os.WriteFile(filepath.Join(r.dir, publish.ManifestName), old, 0o644)
		mustPoll(t, n, commit.Refused)
		if now, _, _ := publish.HashFile(n.Live); now != live {
			t.Fatal("a replayed manifest changed the live snapshot")
		}
	}
}

// A head that is up but cut off from its source (an old source_contact)
// loses its precedence to a fresh head after failover_after, and takes it
// back when it reaches its source again.
func TestMirrorLeavesAStaleHead(t *testing.T) {
	for _, after := range []time.Duration{0, 5 * time.Minute} {
		t0 := time.Now().Add(-time.Hour).UTC()
		a, b, _, _ := twoHeads(t, 2, t0)
		n := a.node(&dirTransport{dir: a.dir})
		n.Fallback = []Transport{&dirTransport{dir: b.dir}}
		n.FailoverAfter = after
		if res := mustPoll(t, n, commit.Committed); res.From != a.dir {
			t.Fatalf("followed %s first", res.From)
		}
		b.pub.Publish(context.Background(), b.headCache, t0.Add(10*time.Minute))
		res := n.Poll(context.Background())
		if after == 0 {
			if res.Outcome != commit.Unchanged || res.From != a.dir {
				t.Fatalf("failover_after 0: %s from %s (%v), want unchanged from A", res.Outcome, res.From, res.Err)
			}
			continue
		}
		if res.Outcome != commit.Committed || res.From != b.dir {
			t.Fatalf("A stale by 10m: %s from %s (%v), want B", res.Outcome, res.From, res.Err)
		}
		a.pub.Publish(context.Background(), a.headCache, t0.Add(11*time.Minute))
		if res := mustPoll(t, n, commit.Committed); res.From != a.dir || res.Meta.Serial != 2 {
			t.Fatalf("A fresh again: from %s serial %d", res.From, res.Meta.Serial)
		}
	}
}
