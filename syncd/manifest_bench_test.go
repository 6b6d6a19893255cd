package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	syncdmetrics "github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// BenchmarkChangeToManifest is issue 18's headline figure: from the poll
// that sees one change at the source to the signed manifest naming the
// new snapshot, at 100,000 users and 10,000 groups (10,000 / 1,000 with
// -short). One head as `syncd run` drives it (Daemon.Poll, then the
// publisher as publishAfterPoll does: page deltas, zstd), one change per
// op made at the test server's admin API:
//
//	disable     a user disabled, then enabled again
//	add-member  a user added to a group, then removed again
//	new-key     a user's SSH key replaced by a fresh one
//	full-read   the disable again, but read in full (the path every
//	            change took before the incremental read)
//
// Per op: p50-s, p95-s and max-s of poll + publish, poll-s and publish-s
// (means), cpu-s/op and gc-% (the collector's share of that CPU, from
// runtime/metrics). -benchtime 20x gives a p95 over 20 changes.
//
//	go test -tags=libsqlite3 -run '^$' -bench ChangeToManifest -benchtime 10x ./syncd
func BenchmarkChangeToManifest(b *testing.B) {
	users, groups := benchSize()
	url := benchServer(b, users, groups, "-cursor")
	cfg := benchConfig(b, url)
	log := quiet()
	c, err := newClient(cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	_, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	pb := &publish.Publisher{Dir: b.TempDir(), Key: sk, Compress: "auto", Keep: 3, Deltas: 3, Interval: cfg.PollInterval}
	d := &pipeline.Daemon{Cfg: cfg, Client: c, Log: log, Metrics: syncdmetrics.New()}
	b.Cleanup(d.Wait)
	ctx := context.Background()
	d.Poll(ctx) // the first full read
	if d.Last == nil || d.Last.Meta.Users < users*95/100 {
		b.Fatal("the first full read committed nothing")
	}
	publishNow := func() *publish.Result {
		contact, _ := snapshot.Freshness(cfg.CachePath)
		res, err := pb.Publish(ctx, cfg.CachePath, contact)
		if err != nil {
			b.Fatalf("publish: %v", err)
		}
		return res
	}
	publishNow()

	// Who to change: records the snapshot publishes.
	live, _, err := snapshot.Load(cfg.CachePath)
	if err != nil {
		b.Fatal(err)
	}
	disabled := live.Users[len(live.Users)/2]
	keyed := live.Users[len(live.Users)/4]
	group := live.Groups[len(live.Groups)/2]
	joiner := live.Users[len(live.Users)/3]
	for i := 1; slices.Contains(group.Members, joiner.Name) || joiner.Name == disabled.Name; i++ {
		joiner = live.Users[len(live.Users)/3+i]
	}
	live = nil
	admin := strings.TrimSuffix(url, "/scim/v2") + "/_admin/"
	post := func(path, body string) {
		resp, err := http.Post(admin+path, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatalf("admin API %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("admin API %s %s: %s", path, body, resp.Status)
		}
	}
	var active, member bool = true, false
	disable := func() {
		active = !active
		post("users/"+disabled.SCIMID+"/active", fmt.Sprintf(`{"active": %v}`, active))
	}
	changes := []struct {
		name   string
		full   bool
		change func()
	}{
		{"disable", false, disable},
		{"add-member", false, func() {
			member = !member
			op := "remove"
			if member {
				op = "add"
			}
			post("groups/"+group.SCIMID+"/members", fmt.Sprintf(`{%q: [%q]}`, op, joiner.SCIMID))
		}},
		{"new-key", false, func() {
			pub, _, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				b.Fatal(err)
			}
			k, err := ssh.NewPublicKey(pub)
			if err != nil {
				b.Fatal(err)
			}
			line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
			post("users/"+keyed.SCIMID+"/keys", fmt.Sprintf(`{"keys": [%q]}`, line+" bench"))
		}},
		{"full-read", true, disable},
	}
	for _, ch := range changes {
		b.Run(ch.name, func(b *testing.B) {
			var totals []time.Duration
			var poll, pub time.Duration
			gc0, tot0 := gcCPU()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				// As between two polls of a running daemon (poll_interval
				// apart): the last poll's explain record is written. Its
				// CPU counts in cpu-s/op, its wall time not in the op's.
				d.Wait()
				ch.change()
				if ch.full {
					d.LastFull = time.Time{}
				}
				t0 := time.Now()
				d.Poll(ctx)
				t1 := time.Now()
				if d.Last == nil || d.Last.Result != "committed" {
					b.Fatalf("%s: the poll did not commit the change: %+v", ch.name, d.Last)
				}
				if !ch.full && d.LastRead == 0 {
					b.Fatalf("%s: the change was not read incrementally", ch.name)
				}
				res := publishNow()
				if !res.NewObject || res.Manifest.Serial != d.Last.Meta.Serial {
					b.Fatalf("%s: the manifest names serial %d, the poll committed %d", ch.name, res.Manifest.Serial, d.Last.Meta.Serial)
				}
				t2 := time.Now()
				poll += t1.Sub(t0)
				pub += t2.Sub(t1)
				totals = append(totals, t2.Sub(t0))
			}
			b.StopTimer()
			gc1, tot1 := gcCPU()
			n := float64(b.N)
			slices.Sort(totals)
			q := func(p float64) float64 { return totals[min(len(totals)-1, int(p*float64(len(totals))))].Seconds() }
			b.ReportMetric(q(0.5), "p50-s")
			b.ReportMetric(q(0.95), "p95-s")
			b.ReportMetric(totals[len(totals)-1].Seconds(), "max-s")
			b.ReportMetric(poll.Seconds()/n, "poll-s")
			b.ReportMetric(pub.Seconds()/n, "publish-s")
			b.ReportMetric((cpuTime()-cpu0).Seconds()/n, "cpu-s/op")
			if tot1 > tot0 {
				b.ReportMetric(100*(gc1-gc0)/(tot1-tot0), "gc-%")
			}
		})
	}
}
