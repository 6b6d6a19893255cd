package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/slurm"
)

func at(s string) time.Time {
	t, err := time.ParseInLocation(sacctTime, s, time.Local)
	if err != nil {
		panic(err)
	}
	return t
}

// Canned sacct output: a project job of ml (2 GPUs, 1 h), a general job
// of ml (1 GPU, 30 min), a spot job requeued (two runs of 10 min, 4 GPUs),
// a CPU-only phys job that started before the window (counted from the
// window's start), a running job (counted to now), a pending job (left
// out), and a typed-only GPU job.
const sacctOut = `101|ml|ml-project|billing=2,cpu=2,gres/gpu=2,mem=2G,node=1|3600|2026-11-30T10:00:00|2026-11-30T11:00:00|COMPLETED
102|ml|general|billing=1,cpu=1,gres/gpu=1,mem=1G,node=1|1800|2026-11-30T10:00:00|2026-11-30T10:30:00|COMPLETED
103|ml|spot|cpu=4,gres/gpu=4,node=1|600|2026-11-30T12:00:00|2026-11-30T12:10:00|PREEMPTED
103|ml|spot|cpu=4,gres/gpu=4,node=1|600|2026-11-30T12:20:00|2026-11-30T12:30:00|COMPLETED
104|phys|normal|cpu=8,mem=8G,node=1|7200|2026-11-30T07:00:00|2026-11-30T09:00:00|COMPLETED
105|phys|gpu|cpu=1,gres/gpu=1,node=1|0|2026-11-30T13:00:00|Unknown|RUNNING
106|phys|gpu|cpu=1,gres/gpu=1,node=1|0|Unknown|Unknown|PENDING
107|chem|normal|cpu=1,gres/gpu:a100=2,node=1|60|2026-11-30T09:00:00|2026-11-30T09:01:00|COMPLETED
garbage line
`

const nodesOut = `NodeName=vm Arch=x86_64 CoresPerSocket=16 CPUAlloc=0 CPUTot=16 CPULoad=0.5 Gres=gpu:8 NodeAddr=127.0.0.1
NodeName=vm2 CPUTot=32 Gres=gpu:a100:4(S:0-1),gpu:v100:2 State=IDLE
`

func fake(t *testing.T) (Runner, *[]string) {
	var calls []string
	return func(_ context.Context, name string, args ...string) (string, error) {
		calls = append(calls, name+" "+strings.Join(args, " "))
		switch name {
		case "sacct":
			return sacctOut, nil
		case "scontrol":
			return nodesOut, nil
		case "sacctmgr":
			return "normal|\nml-project|gres/gpu=2\ngeneral|gres/gpu=6\nbio-project|cpu=4,gres/gpu=3\n", nil
		}
		return "", fmt.Errorf("%s: unexpected", name)
	}, &calls
}

func gather(t *testing.T, cfg map[string]int) *Usage {
	t.Helper()
	run, calls := fake(t)
	u, err := Gather(context.Background(), run, Options{
		Since: at("2026-11-30T08:00:00"), Until: at("2026-11-30T14:00:00"), Now: at("2026-11-30T13:30:00"),
		Cluster: "lab", Guarantees: cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains((*calls)[0], "sacct -X -D -P -n -a --starttime 2026-11-30T08:00:00 --endtime 2026-11-30T14:00:00 -o JobIDRaw,Account,QOS,AllocTRES,ElapsedRaw,Start,End,State -M lab") {
		t.Errorf("sacct call: %s", (*calls)[0])
	}
	return u
}

func TestAggregate(t *testing.T) {
	u := gather(t, map[string]int{"ml": 2, "idle": 1})
	if u.ClusterGPUs != 14 || u.ClusterCPUs != 48 {
		t.Errorf("cluster: %d GPUs %d CPUs, want 14 and 48", u.ClusterGPUs, u.ClusterCPUs)
	}
	if u.Hours != 6 || u.GPUHoursCapacity != 84 {
		t.Errorf("window %.1f h, capacity %.1f GPU-h", u.Hours, u.GPUHoursCapacity)
	}
	got := map[string]string{}
	for _, r := range u.Rows {
		got[r.Account+"/"+r.QOS] = fmt.Sprintf("%s %d %d %d", r.Tier, r.Jobs, r.GPUSeconds, r.CPUSeconds)
	}
	want := map[string]string{
		"ml/ml-project": "project 1 7200 7200",
		"ml/general":    "general 1 1800 1800",
		"ml/spot":       "spot 2 4800 4800", // both runs of the requeued job
		"phys/normal":   "normal 1 0 28800", // 1 h of 2 inside the window × 8 CPUs
		"phys/gpu":      "gpu 1 1800 1800",  // running: to now
		"chem/normal":   "normal 1 120 60",  // typed-only GPUs
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rows: %v", got)
	}
	teams := map[string]Team{}
	for _, tm := range u.Teams {
		teams[tm.Account] = tm
	}
	ml := teams["ml"]
	if ml.GPUSeconds != 13800 || ml.GuaranteedGPUs != 2 || ml.GuaranteeFrom != "config" || ml.GuaranteedGPUHours != 12 || ml.ProjectGPUHour != 2 {
		t.Errorf("ml: %+v", ml)
	}
	if b := teams["bio"]; b.GuaranteedGPUs != 3 || b.GuaranteeFrom != "slurm" || b.GPUSeconds != 0 {
		t.Errorf("bio (guarantee from its live project QOS, no use): %+v", b)
	}
	if i := teams["idle"]; i.GuaranteedGPUs != 1 || i.GuaranteeFrom != "config" {
		t.Errorf("idle: %+v", i)
	}
	if u.GPUSeconds != 13800+1800+120 {
		t.Errorf("total GPU-seconds %d", u.GPUSeconds)
	}
	if !strings.Contains(strings.Join(u.Notes, "\n"), "1 line(s) not understood") {
		t.Errorf("notes: %v", u.Notes)
	}
}

func TestGuaranteeDisagreement(t *testing.T) {
	u := gather(t, map[string]int{"ml": 4})
	if !strings.Contains(strings.Join(u.Notes, "\n"), "team ml: the config guarantees 4 GPUs, its project QOS in Slurm caps 2") {
		t.Errorf("notes: %v", u.Notes)
	}
}

func TestOutputs(t *testing.T) {
	u := gather(t, map[string]int{"ml": 2})
	var tb bytes.Buffer
	if err := Table(&tb, u); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Capacity: 14 GPUs = 84.00 GPU-h", "ml    ml-project  project", "3.83", "guarantee"} {
		if !strings.Contains(tb.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, tb.String())
		}
	}
	var cb bytes.Buffer
	if err := CSV(&cb, u); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") || len(recs) != 1+len(u.Rows) {
		t.Fatalf("csv: %v", recs)
	}
	var sum int64
	for _, r := range recs[1:] {
		var n int64
		fmt.Sscan(r[6], &n)
		sum += n
	}
	if sum != u.GPUSeconds {
		t.Errorf("csv gpu_seconds sum %d, want %d", sum, u.GPUSeconds)
	}
	var pb bytes.Buffer
	if err := PNG(&pb, u); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&pb)
	if err != nil {
		t.Fatal(err)
	}
	if colours(img) < 4 {
		t.Errorf("chart has %d colours", colours(img))
	}
}

func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

func TestParseSince(t *testing.T) {
	now := at("2026-11-30T12:00:00")
	for in, want := range map[string]string{
		"7d": "2026-11-23T12:00:00", "2w": "2026-11-16T12:00:00", "36h": "2026-11-29T00:00:00",
		"1.5d": "2026-11-29T00:00:00", "2026-11-01": "2026-11-01T00:00:00", "2026-11-01T08:30": "2026-11-01T08:30:00",
	} {
		got, err := ParseSince(in, now)
		if err != nil || !got.Equal(at(want)) {
			t.Errorf("%s: %v %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "7", "-3d", "yesterday", "0d"} {
		if _, err := ParseSince(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestEmptyWindow(t *testing.T) {
	run, _ := fake(t)
	if _, err := Gather(context.Background(), run, Options{Since: at("2026-11-30T10:00:00"), Until: at("2026-11-30T10:00:00")}); err == nil {
		t.Error("empty window accepted")
	}
}

func TestTier(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"ml", "ml-project"}: "project", {"ml", "general"}: "general", {"ml", "bio-project"}: "bio-project", {"ml", ""}: "-",
	} {
		if got := Tier(in[0], in[1]); got != want {
			t.Errorf("Tier%v = %q want %q", in, got, want)
		}
	}
}

func TestGuaranteesFromConfig(t *testing.T) {
	two, zero := 2, 0
	sc := slurm.Config{AccountPrefix: "g-", Groups: map[string]slurm.GroupConfig{
		"ml-team":  {Account: "ML", GuaranteedGPUs: &two},
		"Bio Lab":  {GuaranteedGPUs: &zero},
		"no-guar":  {Account: "x"},
		"ml-team2": {Account: "ml", GuaranteedGPUs: &zero},
	}}
	got := GuaranteesFromConfig(sc)
	if len(got) != 2 || got["ml"] != 2 || got[slurm.Normalize("g-Bio Lab")] != 0 {
		t.Errorf("%v", got)
	}
	if _, ok := got[slurm.Normalize("g-Bio Lab")]; !ok {
		t.Errorf("a guarantee of 0 is a guarantee: %v", got)
	}
}

// A job of 0 s inside the window is a job of 0 hours (sacct lists it, so
// must the report); a job that never started is counted apart; one that
// ended before the window is not counted.
func TestZeroSecondJobsCount(t *testing.T) {
	jobs, _ := ParseSacct(`201|bio|normal|cpu=1,node=1|0|2026-11-30T09:00:00|2026-11-30T09:00:00|FAILED
202|bio|normal|cpu=1,node=1|0|2026-11-30T09:10:00|2026-11-30T09:10:00|COMPLETED
203|bio|normal|cpu=1,node=1|0|None|2026-11-30T09:20:00|CANCELLED by 0
204|bio|normal|cpu=1,node=1|60|2026-11-30T07:00:00|2026-11-30T07:01:00|COMPLETED
`)
	u := &Usage{Since: at("2026-11-30T08:00:00"), Until: at("2026-11-30T14:00:00")}
	Aggregate(u, jobs, at("2026-11-30T13:00:00"), nil, nil)
	if len(u.Rows) != 1 || u.Rows[0].Jobs != 2 || u.Rows[0].CPUSeconds != 0 {
		t.Fatalf("rows %+v: want bio/normal with 2 jobs of 0 s", u.Rows)
	}
	if u.NeverStarted != 1 {
		t.Errorf("never started: %d, want 1", u.NeverStarted)
	}
	var b bytes.Buffer
	if err := Table(&b, u); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Counted: JOBS counts every allocation", "jobs of 0 s included", "Not counted: 1 allocation(s)"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, b.String())
		}
	}
}
