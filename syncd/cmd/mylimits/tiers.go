package main

// Tiers, caps and current use, and fair-share.
//
// Decisions:
//   - A QOS named ACCOUNT-project is that team's "project" tier (the name
//     syncd/slurm gives it); any other QOS is shown as its own tier by name
//     (general, spot, normal). mylimits runs as the user and cannot read
//     syncd.toml (0600), so the names are all it has.
//   - Use now is counted from ONE `squeue -h -t R -O Account,QOS,UserName,
//     tres-alloc` of every running job (allocated TRES, so --gres, --gpus
//     and typed GPUs all count), summed per scope of each cap:
//     team = the account's running jobs (in that QOS for a QOS's per-team
//     cap MaxTRESPA or a project QOS's GrpTRES, in any QOS for the
//     account's own GrpTRES), pool = every job in a shared QOS (its
//     GrpTRES), you = your own jobs (MaxTRESPU). This is what slurmctld
//     compares against the caps; GPUs of jobs still pending are not use.
//     When slurm.conf PrivateData hides other users' jobs, team and pool
//     use count only yours and a note says so.
//   - Preemptible: a QOS is preemptible when another of the user's QOS
//     names it in Preempt (spot, preempted by the project QOS); its
//     PreemptMode and GraceTime say what happens then.
//   - Fair-share from `sshare -n -P -U -u USER` per association; with
//     PriorityType=priority/basic Slurm does not use it and mylimits says so
//     instead of showing zeros that mean nothing.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// TierCap is one QOS an account may use: its tier, walltime, preemption,
// and its GPU caps with what is in use now against each.
type TierCap struct {
	Account     string   `json:"account"`
	QOS         string   `json:"qos"`
	Tier        string   `json:"tier"`
	Default     bool     `json:"default"`
	MaxWall     string   `json:"max_wall,omitempty"`
	Preemptible bool     `json:"preemptible"`
	PreemptedBy []string `json:"preempted_by,omitempty"`
	PreemptMode string   `json:"preempt_mode,omitempty"`
	GraceTime   string   `json:"grace_time,omitempty"`
	// NotPreemptedWhy: another QOS lists this one in Preempt, but Slurm's
	// configuration does not preempt (said instead of "preemptible").
	NotPreemptedWhy string `json:"not_preempted_why,omitempty"`
	// TeamGPUCap caps the account's jobs in this QOS (GrpTRES of its
	// project QOS, MaxTRESPA of a shared one); PoolGPUCap all jobs in a
	// shared QOS (GrpTRES); YourGPUCap yours (MaxTRESPU). "" = none.
	TeamGPUCap    string `json:"team_gpu_cap,omitempty"`
	TeamGPUsInUse int64  `json:"team_gpus_in_use"`
	PoolGPUCap    string `json:"pool_gpu_cap,omitempty"`
	PoolGPUsInUse int64  `json:"pool_gpus_in_use"`
	YourGPUCap    string `json:"your_gpu_cap,omitempty"`
	YourGPUsInUse int64  `json:"your_gpus_in_use"`
}

// FairShare is one line of sshare for the user.
type FairShare struct {
	Account   string `json:"account"`
	RawShares string `json:"raw_shares"`
	RawUsage  string `json:"raw_usage"`
	Effective string `json:"effective_usage"`
	FairShare string `json:"fair_share"`
	Meaning   string `json:"meaning,omitempty"`
}

// Tier names the tier of qos for account.
func tierOf(account, qos string) string {
	if strings.EqualFold(qos, account+"-project") {
		return "project"
	}
	return qos
}

// running is the use now: GPUs by (account, qos, user) of running jobs.
type running map[[3]string]int64

func (r running) sum(account, qos, user string) int64 {
	var n int64
	for k, v := range r {
		if (account == "" || k[0] == account) && (qos == "" || k[1] == qos) && (user == "" || k[2] == user) {
			n += v
		}
	}
	return n
}

// runningFormat is the squeue -O of parseRunning: '|' after each field.
const runningFormat = "Account:|,QOS:|,UserName:|,tres-alloc:|"

// parseRunning reads `squeue -h -t R -O runningFormat`.
func parseRunning(out string) (running, int) {
	r := running{}
	skipped := 0
	for _, line := range lines(out) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 4 {
			skipped++
			continue
		}
		r[[3]string{strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), strings.TrimSpace(f[2])}] += allocGPUs(f[3])
	}
	return r, skipped
}

// allocGPUs is the GPU count of an allocated TRES string: gres/gpu=N, or
// the typed ones summed when no untyped entry is there.
func allocGPUs(tres string) int64 {
	var typed int64
	untyped := int64(-1)
	for _, kv := range strings.Split(tres, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		if k == "gres/gpu" {
			untyped = n
		} else if strings.HasPrefix(k, "gres/gpu:") {
			typed += n
		}
	}
	if untyped >= 0 {
		return untyped
	}
	return typed
}

// tiersAndUse fills rep.Tiers, the accounts' GPU use, and the pending
// jobs' reasons with numbers.
func (g *gatherer) tiersAndUse(ctx context.Context, rep *Report, privateJobs bool) {
	out, err := g.run(ctx, "squeue", "-h", "-t", "R", "-O", runningFormat)
	var use running
	if err != nil {
		g.notef(rep, "cannot read the running jobs: %v (use against caps not shown)", err)
	} else {
		var skipped int
		use, skipped = parseRunning(out)
		if skipped > 0 {
			g.notef(rep, "squeue (running jobs): %d line(s) not understood", skipped)
		}
		if privateJobs {
			g.notef(rep, "this cluster hides other users' jobs (PrivateData=jobs): team and pool use count your jobs only")
		}
		rep.UseKnown = true
	}
	qos := map[string]QOS{}
	for _, q := range rep.QOS {
		qos[q.Name] = q
	}
	for i := range rep.Accounts {
		a := &rep.Accounts[i]
		a.TeamGPUsInUse = use.sum(a.Name, "", "")
		a.YourGPUsInUse = use.sum(a.Name, "", rep.User)
		for _, qn := range a.QOS {
			q := qos[qn]
			t := TierCap{Account: a.Name, QOS: qn, Tier: tierOf(a.Name, qn), Default: qn == a.DefaultQOS, MaxWall: q.MaxWall}
			if q.PreemptMode != "cluster" { // "cluster": slurm.conf's PreemptMode
				t.PreemptMode = q.PreemptMode
			}
			if q.GraceTime != "00:00:00" {
				t.GraceTime = q.GraceTime
			}
			for _, other := range a.QOS {
				if other != qn && contains(qos[other].Preempt, qn) {
					t.PreemptedBy = append(t.PreemptedBy, other)
				}
			}
			// Named in another QOS's Preempt is not enough: Slurm preempts
			// only under a PreemptType other than preempt/none and a mode
			// (the QOS's, else slurm.conf's) other than OFF.
			mode := t.PreemptMode
			if mode == "" {
				mode = rep.PreemptMode
			}
			switch {
			case len(t.PreemptedBy) == 0:
			case strings.EqualFold(rep.PreemptType, "preempt/none"):
				t.NotPreemptedWhy = "PreemptType=preempt/none: Slurm preempts no job here"
			case strings.EqualFold(mode, "off"):
				t.NotPreemptedWhy = "PreemptMode=OFF: Slurm preempts no job in it"
			default:
				t.Preemptible = true
			}
			if t.Tier == "project" {
				t.TeamGPUCap = q.GPUsTotal
			} else {
				t.TeamGPUCap = q.GPUsPerAccount
				t.PoolGPUCap = q.GPUsTotal
			}
			t.YourGPUCap = q.GPUsPerUser
			t.TeamGPUsInUse = use.sum(a.Name, qn, "")
			t.PoolGPUsInUse = use.sum("", qn, "")
			t.YourGPUsInUse = use.sum(a.Name, qn, rep.User)
			rep.Tiers = append(rep.Tiers, t)
		}
	}
	if use == nil {
		return
	}
	// Pending jobs: the numbers behind the reason.
	for i := range rep.Jobs {
		j := &rep.Jobs[i]
		if j.State != "PENDING" {
			continue
		}
		q := qos[j.QOS]
		var inUse int64
		var limit string
		switch j.Reason {
		case "QOSGrpGRES":
			inUse, limit = use.sum("", j.QOS, ""), q.GPUsTotal
			if tierOf(j.Account, j.QOS) == "project" {
				j.Why = "your team's project tier is using all its guaranteed GPUs; it starts when the team's other project jobs end (or submit with --qos=general to burst, if your team has opted in)"
			}
		case "MaxGRESPerAccount":
			inUse, limit = use.sum(j.Account, j.QOS, ""), q.GPUsPerAccount
		case "QOSMaxGRESPerUser", "MaxGRESPerUser":
			inUse, limit = use.sum("", j.QOS, rep.User), q.GPUsPerUser
		case "AssocGrpGRES":
			inUse = use.sum(j.Account, "", "")
			for _, a := range rep.Accounts {
				if a.Name == j.Account {
					limit = gpuCount(a.AccountLimits["GrpTRES"])
				}
			}
			if limit == "0" {
				j.Why = "account " + j.Account + " allows no GPUs: it will never start; cancel it and resubmit with -A and a team account"
			}
		default:
			continue
		}
		if limit != "" && limit != "0" {
			j.Why += fmt.Sprintf(" (GPUs in use: %d of %s)", inUse, limit)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// fairShare adds sshare's view of the user's associations.
func (g *gatherer) fairShare(ctx context.Context, rep *Report, priorityType string) {
	if priorityType != "" && !strings.Contains(priorityType, "multifactor") {
		rep.FairShareNote = fmt.Sprintf("not used on this cluster (PriorityType=%s): pending jobs start in submit order as resources and limits allow", priorityType)
		return
	}
	out, err := g.run(ctx, "sshare", "-n", "-P", "-U", "-u", rep.User, "-o", "Account,User,RawShares,RawUsage,EffectvUsage,FairShare")
	if err != nil {
		g.notef(rep, "cannot read fair-share: %v", err)
		return
	}
	for _, line := range lines(out) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 6 || f[1] != rep.User {
			continue
		}
		fs := FairShare{Account: f[0], RawShares: f[2], RawUsage: f[3], Effective: f[4], FairShare: f[5]}
		fs.Meaning = fairShareMeaning(f[5])
		rep.FairShare = append(rep.FairShare, fs)
	}
}

// fairShareMeaning puts Slurm's fair-share factor (0..1) in words.
func fairShareMeaning(s string) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return ""
	}
	switch {
	case v >= 0.9:
		return "you have used little of your share: your jobs get the highest fair-share priority"
	case v > 0.55:
		return "under your share: your jobs' priority is above average"
	case v >= 0.45:
		return "about at your share"
	case v > 0:
		return "over your share: your jobs' priority is lowered until your recent usage decays"
	}
	return "far over your share (or no shares): lowest fair-share priority; jobs still run when resources are free"
}

// parseConfigValue reads KEY from `scontrol show config`.
func parseConfigValue(out, key string) string {
	for _, line := range lines(out) {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
