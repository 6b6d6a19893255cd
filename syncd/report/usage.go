package report

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Runner runs a command and returns its stdout (errors carry stderr).
// Tests replace it with canned output.
type Runner func(ctx context.Context, name string, args ...string) (string, error)

// Options say what to report on.
type Options struct {
	Since, Until time.Time
	// Cluster is passed to sacct -M and scontrol (empty: the local one).
	Cluster string
	// Guarantees are guaranteed GPUs per account from the config; they
	// win over the live project QOS.
	Guarantees map[string]int
	// Sacct, Scontrol, Sacctmgr are the commands (default by name).
	Sacct, Scontrol, Sacctmgr string
	// Now is the time a running job's use is counted up to (default
	// time.Now).
	Now time.Time
}

// Row is the use of one team on one tier (account, QOS).
type Row struct {
	Account    string  `json:"account"`
	QOS        string  `json:"qos"`
	Tier       string  `json:"tier"`
	Jobs       int     `json:"jobs"`
	GPUSeconds int64   `json:"gpu_seconds"`
	CPUSeconds int64   `json:"cpu_seconds"`
	GPUHours   float64 `json:"gpu_hours"`
	CPUHours   float64 `json:"cpu_hours"`
}

// Team is one account's totals against its guarantee.
type Team struct {
	Account        string  `json:"account"`
	Jobs           int     `json:"jobs"`
	GPUSeconds     int64   `json:"gpu_seconds"`
	CPUSeconds     int64   `json:"cpu_seconds"`
	GPUHours       float64 `json:"gpu_hours"`
	CPUHours       float64 `json:"cpu_hours"`
	ProjectGPUHour float64 `json:"project_gpu_hours"`
	// GuaranteedGPUs is from the config ("config") or the live project
	// QOS ("slurm"); GuaranteeFrom is "" when the team has none.
	GuaranteedGPUs      int     `json:"guaranteed_gpus"`
	GuaranteeFrom       string  `json:"guarantee_from,omitempty"`
	GuaranteedGPUHours  float64 `json:"guaranteed_gpu_hours"`
	ShareOfClusterGPUPc float64 `json:"share_of_cluster_gpu_pct"`
}

// Usage is the whole report; the JSON form is this struct.
type Usage struct {
	Cluster     string    `json:"cluster,omitempty"`
	Since       time.Time `json:"since"`
	Until       time.Time `json:"until"`
	Hours       float64   `json:"hours"`
	ClusterGPUs int       `json:"cluster_gpus"`
	ClusterCPUs int       `json:"cluster_cpus"`
	// Capacity in the window: cluster GPUs (CPUs) × hours.
	GPUHoursCapacity float64  `json:"gpu_hours_capacity"`
	CPUHoursCapacity float64  `json:"cpu_hours_capacity"`
	GPUSeconds       int64    `json:"gpu_seconds"`
	GPUHours         float64  `json:"gpu_hours"`
	CPUHours         float64  `json:"cpu_hours"`
	Rows             []Row    `json:"rows"`
	Teams            []Team   `json:"teams"`
	Notes            []string `json:"notes"`
	// NeverStarted counts sacct's allocations in the window that never
	// started (cancelled while pending): in no row, no hours.
	NeverStarted int `json:"never_started"`
}

// Counts says what JOBS and the hours count, for the reader.
const Counts = "JOBS counts every allocation sacct -X -D lists for the window that started, requeued runs and jobs of 0 s included (0 s adds 0 hours); hours are allocated GPUs/CPUs x the part of each run inside the window, as sreport counts them"

// SacctFields is the -o list the parser indexes.
var SacctFields = []string{"JobIDRaw", "Account", "QOS", "AllocTRES", "ElapsedRaw", "Start", "End", "State"}

// sacctTime is sacct's default time format (SLURM_TIME_FORMAT unset).
const sacctTime = "2006-01-02T15:04:05"

// Tier names the tier of a QOS used by account: "project" for the team's
// own ACCOUNT-project QOS (syncd/slurm's naming), else the QOS name.
func Tier(account, qos string) string {
	if qos != "" && strings.EqualFold(qos, account+"-project") {
		return "project"
	}
	if qos == "" {
		return "-"
	}
	return qos
}

// Gather runs sacct and scontrol (and sacctmgr for guarantees the config
// lacks) and builds the report.
func Gather(ctx context.Context, run Runner, o Options) (*Usage, error) {
	if o.Sacct == "" {
		o.Sacct = "sacct"
	}
	if o.Scontrol == "" {
		o.Scontrol = "scontrol"
	}
	if o.Sacctmgr == "" {
		o.Sacctmgr = "sacctmgr"
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if !o.Until.After(o.Since) {
		return nil, fmt.Errorf("report: the window is empty (since %s, until %s)", o.Since.Format(time.RFC3339), o.Until.Format(time.RFC3339))
	}
	args := []string{"-X", "-D", "-P", "-n", "-a",
		"--starttime", o.Since.Local().Format(sacctTime), "--endtime", o.Until.Local().Format(sacctTime),
		"-o", strings.Join(SacctFields, ",")}
	if o.Cluster != "" {
		args = append(args, "-M", o.Cluster)
	}
	out, err := run(ctx, o.Sacct, args...)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	jobs, skipped := ParseSacct(out)
	u := &Usage{Cluster: o.Cluster, Since: o.Since, Until: o.Until, Notes: []string{}}
	if skipped > 0 {
		u.Notes = append(u.Notes, fmt.Sprintf("sacct: %d line(s) not understood, left out", skipped))
	}
	nodes, err := run(ctx, o.Scontrol, "-o", "show", "nodes")
	if err != nil {
		u.Notes = append(u.Notes, fmt.Sprintf("cannot count the cluster's GPUs (%v): no cluster capacity shown", err))
	} else {
		u.ClusterGPUs, u.ClusterCPUs = ParseNodes(nodes)
		u.Notes = append(u.Notes, "cluster capacity is today's nodes (scontrol show nodes) over the whole window")
	}
	live := map[string]int{}
	if q, err := run(ctx, o.Sacctmgr, "-nP", "show", "qos", "format=Name,GrpTRES"); err == nil {
		live = ParseProjectQOS(q)
	} else if len(o.Guarantees) == 0 {
		u.Notes = append(u.Notes, fmt.Sprintf("cannot read the project QOS (%v): guarantees only from the config", err))
	}
	Aggregate(u, jobs, o.Now, o.Guarantees, live)
	return u, nil
}

// Job is one allocation of sacct -X.
type Job struct {
	ID, Account, QOS, State string
	GPUs, CPUs              int64
	Start, End              time.Time // End zero: still running
	ElapsedRaw              int64
}

// ParseSacct parses `sacct -P -n -o SacctFields`. Jobs that never started
// (Start "Unknown"/"None") have a zero Start: they used nothing, and
// Aggregate counts them apart.
func ParseSacct(out string) (jobs []Job, skipped int) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != len(SacctFields) {
			skipped++
			continue
		}
		j := Job{ID: f[0], Account: f[1], QOS: f[2], State: f[7]}
		j.CPUs, j.GPUs = tresCount(f[3], "cpu"), gpuTRES(f[3])
		j.ElapsedRaw, _ = strconv.ParseInt(f[4], 10, 64)
		st, err := time.ParseInLocation(sacctTime, f[5], time.Local)
		if err != nil { // Unknown, None: never started
			jobs = append(jobs, j)
			continue
		}
		j.Start = st
		if en, err := time.ParseInLocation(sacctTime, f[6], time.Local); err == nil {
			j.End = en
		}
		jobs = append(jobs, j)
	}
	return jobs, skipped
}

func tresCount(tres, name string) int64 {
	for _, kv := range strings.Split(tres, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// gpuTRES is the GPU count of an AllocTRES: gres/gpu=N, or the sum of
// the typed gres/gpu:TYPE=N when no untyped entry is present.
func gpuTRES(tres string) int64 {
	var typed int64
	untyped := int64(-1)
	for _, kv := range strings.Split(tres, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch {
		case k == "gres/gpu":
			untyped = n
		case strings.HasPrefix(k, "gres/gpu:"):
			typed += n
		}
	}
	if untyped >= 0 {
		return untyped
	}
	return typed
}

var (
	gresGPURE = regexp.MustCompile(`(?:^|,)gpu(?::[^:,()=]+)?:(\d+)`)
	cpuTotRE  = regexp.MustCompile(`(?:^| )CPUTot=(\d+)`)
	gresRE    = regexp.MustCompile(`(?:^| )Gres=(\S+)`)
)

// ParseNodes sums the GPUs (Gres=gpu:N, gpu:TYPE:N(S:0-1)) and CPUs
// (CPUTot=N) of `scontrol -o show nodes`.
func ParseNodes(out string) (gpus, cpus int) {
	for _, line := range strings.Split(out, "\n") {
		if m := cpuTotRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			cpus += n
		}
		if m := gresRE.FindStringSubmatch(line); m != nil {
			for _, g := range gresGPURE.FindAllStringSubmatch(m[1], -1) {
				n, _ := strconv.Atoi(g[1])
				gpus += n
			}
		}
	}
	return gpus, cpus
}

// ParseProjectQOS reads `sacctmgr -nP show qos format=Name,GrpTRES` and
// returns the GPU cap of every ACCOUNT-project QOS by account.
func ParseProjectQOS(out string) map[string]int {
	m := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		name, tres, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok {
			continue
		}
		acct, isProject := strings.CutSuffix(name, "-project")
		if !isProject || acct == "" {
			continue
		}
		if n := gpuTRES(tres); n > 0 || strings.Contains(tres, "gres/gpu") {
			m[acct] = int(n)
		}
	}
	return m
}

// overlap is the seconds of [a, b] inside [lo, hi].
func overlap(a, b, lo, hi time.Time) int64 {
	if a.Before(lo) {
		a = lo
	}
	if b.After(hi) {
		b = hi
	}
	if !b.After(a) {
		return 0
	}
	return int64(b.Sub(a) / time.Second)
}

func hours(sec int64) float64 { return float64(sec) / 3600 }

// Aggregate fills u's rows and teams from jobs.
func Aggregate(u *Usage, jobs []Job, now time.Time, cfg, live map[string]int) {
	u.Hours = u.Until.Sub(u.Since).Hours()
	u.GPUHoursCapacity = float64(u.ClusterGPUs) * u.Hours
	u.CPUHoursCapacity = float64(u.ClusterCPUs) * u.Hours
	type key struct{ a, q string }
	rows := map[key]*Row{}
	for _, j := range jobs {
		if j.Start.IsZero() {
			u.NeverStarted++
			continue
		}
		end := j.End
		if end.IsZero() {
			end = now
		}
		// A job of 0 s inside the window is a job (sacct lists it) of 0
		// hours; only one wholly outside the window is not counted.
		if end.Before(u.Since) || j.Start.After(u.Until) {
			continue
		}
		sec := overlap(j.Start, end, u.Since, u.Until)
		k := key{j.Account, j.QOS}
		r := rows[k]
		if r == nil {
			r = &Row{Account: j.Account, QOS: j.QOS, Tier: Tier(j.Account, j.QOS)}
			rows[k] = r
		}
		r.Jobs++
		r.GPUSeconds += j.GPUs * sec
		r.CPUSeconds += j.CPUs * sec
	}
	u.Rows = []Row{}
	teams := map[string]*Team{}
	for _, r := range rows {
		r.GPUHours, r.CPUHours = hours(r.GPUSeconds), hours(r.CPUSeconds)
		u.Rows = append(u.Rows, *r)
		t := teams[r.Account]
		if t == nil {
			t = &Team{Account: r.Account}
			teams[r.Account] = t
		}
		t.Jobs += r.Jobs
		t.GPUSeconds += r.GPUSeconds
		t.CPUSeconds += r.CPUSeconds
		if r.Tier == "project" {
			t.ProjectGPUHour += r.GPUHours
		}
		u.GPUSeconds += r.GPUSeconds
	}
	// Teams with a guarantee and no use are shown too (0 of N).
	for a := range cfg {
		if teams[a] == nil {
			teams[a] = &Team{Account: a}
		}
	}
	for a := range live {
		if teams[a] == nil {
			teams[a] = &Team{Account: a}
		}
	}
	sort.Slice(u.Rows, func(i, j int) bool {
		if u.Rows[i].Account != u.Rows[j].Account {
			return u.Rows[i].Account < u.Rows[j].Account
		}
		return u.Rows[i].QOS < u.Rows[j].QOS
	})
	u.Teams = []Team{}
	var cpuSec int64
	for _, t := range teams {
		t.GPUHours, t.CPUHours = hours(t.GPUSeconds), hours(t.CPUSeconds)
		cpuSec += t.CPUSeconds
		if n, ok := cfg[t.Account]; ok {
			t.GuaranteedGPUs, t.GuaranteeFrom = n, "config"
			if l, ok := live[t.Account]; ok && l != n {
				u.Notes = append(u.Notes, fmt.Sprintf("team %s: the config guarantees %d GPUs, its project QOS in Slurm caps %d (run syncd slurm apply)", t.Account, n, l))
			}
		} else if n, ok := live[t.Account]; ok {
			t.GuaranteedGPUs, t.GuaranteeFrom = n, "slurm"
		}
		t.GuaranteedGPUHours = float64(t.GuaranteedGPUs) * u.Hours
		if u.GPUHoursCapacity > 0 {
			t.ShareOfClusterGPUPc = 100 * t.GPUHours / u.GPUHoursCapacity
		}
		u.Teams = append(u.Teams, *t)
	}
	sort.Slice(u.Teams, func(i, j int) bool { return u.Teams[i].Account < u.Teams[j].Account })
	u.GPUHours = hours(u.GPUSeconds)
	u.CPUHours = hours(cpuSec)
}

// ParseSince reads --since: a duration back from now ("7d", "36h",
// "90m", "2w") or a date/time ("2026-11-01", "2026-11-01T08:00",
// RFC 3339), local time unless it says otherwise.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("empty time")
	}
	if n, unit := s[:len(s)-1], s[len(s)-1]; unit == 'd' || unit == 'w' {
		if v, err := strconv.ParseFloat(n, 64); err == nil && v > 0 {
			d := v * 24
			if unit == 'w' {
				d *= 7
			}
			return now.Add(-time.Duration(d * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a span back from now (7d, 2w, 36h, 90m) nor a date (2026-11-01, 2026-11-01T08:00, RFC 3339)", s)
}
