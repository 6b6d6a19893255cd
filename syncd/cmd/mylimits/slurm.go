package main

import (
	"regexp"
	"strings"
)

// The sacctmgr and squeue invocations. -nP: no header, '|' between
// fields and none at the end. Field lists are fixed so the parsers can
// index them; a Slurm that lacks a field fails the command, which
// becomes a note.
var (
	assocFields = []string{"Cluster", "Account", "User", "QOS", "DefaultQOS",
		"GrpTRES", "GrpJobs", "GrpSubmit", "GrpWall", "MaxTRES", "MaxJobs", "MaxSubmit", "MaxWall"}
	// limitFields are the assocFields that are limits, in print order.
	limitFields = assocFields[5:]
	qosFields   = []string{"Name", "Priority", "MaxWall", "MaxTRESPU", "MaxTRES", "GrpTRES", "MaxJobsPU", "MaxSubmitPU",
		"MaxTRESPA", "Preempt", "PreemptMode", "GraceTime"}
	// squeue -o: the job name goes last because it may contain '|'.
	squeueFormat = "%i|%a|%q|%P|%T|%r|%M|%l|%D|%C|%b|%j"
)

// assocRow is one line of `sacctmgr -nP show assoc format=assocFields`.
type assocRow struct {
	Cluster, Account, User string
	QOS                    []string
	DefaultQOS             string
	Limits                 map[string]string // only the set ones
}

// parseAssoc parses `sacctmgr -nP show assoc format=<assocFields>`.
// Lines with the wrong number of fields are skipped (and counted), not
// guessed at.
func parseAssoc(out string) (rows []assocRow, skipped int) {
	for _, line := range lines(out) {
		f := strings.Split(line, "|")
		if len(f) != len(assocFields) {
			skipped++
			continue
		}
		r := assocRow{Cluster: f[0], Account: f[1], User: f[2], QOS: splitList(f[3]), DefaultQOS: f[4]}
		for i, name := range limitFields {
			if v := f[5+i]; v != "" {
				if r.Limits == nil {
					r.Limits = map[string]string{}
				}
				r.Limits[name] = v
			}
		}
		rows = append(rows, r)
	}
	return rows, skipped
}

// parseQOS parses `sacctmgr -nP show qos format=<qosFields>`.
func parseQOS(out string) (qs []QOS, skipped int) {
	for _, line := range lines(out) {
		f := strings.Split(line, "|")
		if len(f) != len(qosFields) {
			skipped++
			continue
		}
		q := QOS{
			Name: f[0], Priority: f[1], MaxWall: f[2],
			MaxTRESPerUser: f[3], MaxTRESPerJob: f[4], GrpTRES: f[5],
			MaxJobsPerUser: f[6], MaxSubmitPerUser: f[7],
			MaxTRESPerAccount: f[8], Preempt: splitList(f[9]), PreemptMode: f[10], GraceTime: f[11],
		}
		q.GPUsPerAccount = gpuCount(q.MaxTRESPerAccount)
		q.GPUsPerUser = gpuCount(q.MaxTRESPerUser)
		q.GPUsPerJob = gpuCount(q.MaxTRESPerJob)
		q.GPUsTotal = gpuCount(q.GrpTRES)
		qs = append(qs, q)
	}
	// A QOS is preemptible when another one lists it in Preempt.
	for i := range qs {
		for _, o := range qs {
			for _, p := range o.Preempt {
				if strings.EqualFold(p, qs[i].Name) {
					qs[i].PreemptedBy = append(qs[i].PreemptedBy, o.Name)
				}
			}
		}
	}
	return qs, skipped
}

// parseSqueue parses `squeue -h -o <squeueFormat>`.
func parseSqueue(out string) (jobs []Job, skipped int) {
	n := strings.Count(squeueFormat, "|") + 1
	for _, line := range lines(out) {
		f := strings.SplitN(line, "|", n)
		if len(f) != n {
			skipped++
			continue
		}
		j := Job{
			ID: f[0], Account: f[1], QOS: f[2], Partition: f[3], State: f[4],
			Reason: f[5], TimeUsed: f[6], TimeLimit: f[7], Nodes: f[8], CPUs: f[9],
			Name: f[11],
		}
		if t := f[10]; t != "N/A" && t != "(null)" {
			j.TRES = t
		}
		if j.State == "PENDING" {
			j.Why = explainReason(j.Reason)
		}
		jobs = append(jobs, j)
	}
	return jobs, skipped
}

// parseDefaultAccount reads `sacctmgr -nP show user NAME format=User,DefaultAccount`.
func parseDefaultAccount(out, user string) string {
	for _, line := range lines(out) {
		if u, acct, ok := strings.Cut(line, "|"); ok && u == user {
			return acct
		}
	}
	return ""
}

// parseClusterName reads ClusterName from `scontrol show config`.
func parseClusterName(out string) string {
	for _, line := range lines(out) {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "ClusterName" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// gpuRE matches the GPU entries of a TRES string: "gres/gpu=4" and typed
// ones such as "gres/gpu:a100=2".
var gpuRE = regexp.MustCompile(`(?:^|,)gres/gpu(?::([^=,]+))?=(\d+)`)

// gpuCount pulls the GPU cap out of a TRES string: "4" for gres/gpu=4,
// "a100:2" for a typed cap, several joined by ","; "" when the string
// does not cap GPUs.
func gpuCount(tres string) string {
	var parts []string
	for _, m := range gpuRE.FindAllStringSubmatch(tres, -1) {
		if m[1] != "" {
			parts = append(parts, m[1]+":"+m[2])
		} else {
			parts = append(parts, m[2])
		}
	}
	return strings.Join(parts, ",")
}

// explainReason says in words why a pending job waits, for the reason
// codes a researcher meets most; "" for others (the code is still shown).
func explainReason(code string) string {
	if why, ok := reasons[code]; ok {
		return why
	}
	switch {
	case strings.HasPrefix(code, "QOSMax") && strings.Contains(code, "PerUser"):
		return "you are at a per-user limit of the job's QOS; it starts when your other jobs end"
	case strings.HasPrefix(code, "QOSGrp"):
		return "the QOS as a whole is at its limit; it starts when other jobs in the QOS end"
	case strings.HasPrefix(code, "AssocGrp"):
		return "the account (or a parent) is at its group limit; it starts when jobs in the account end"
	case strings.HasPrefix(code, "AssocMax"):
		return "your association's limit is reached; it starts when your other jobs end"
	case strings.HasPrefix(code, "Max") && strings.HasSuffix(code, "PerAccount"):
		return "your team (account) is at the per-team cap of the job's QOS; it starts when the team's other jobs in this QOS end"
	case strings.HasPrefix(code, "QOSMax"):
		return "the job asks for more than its QOS allows; it will not start: resubmit smaller or with another QOS"
	}
	return ""
}

var reasons = map[string]string{
	"None":                        "",
	"Priority":                    "other jobs are ahead of it in the queue",
	"Resources":                   "it is next, waiting for nodes to free up",
	"Dependency":                  "waiting for the jobs it depends on",
	"DependencyNeverSatisfied":    "a job it depends on failed; it will never start: cancel it",
	"BeginTime":                   "its start time (--begin) has not come yet",
	"JobHeldUser":                 "you held it: scontrol release JOBID",
	"JobHeldAdmin":                "an administrator held it",
	"ReqNodeNotAvail":             "a node it needs is down, drained or reserved",
	"PartitionTimeLimit":          "its time limit exceeds the partition's; it will not start: lower --time",
	"PartitionNodeLimit":          "it asks for more nodes than the partition allows",
	"PartitionDown":               "the partition is down",
	"PartitionInactive":           "the partition is inactive",
	"InvalidAccount":              "the account is not valid for you (any more)",
	"InvalidQOS":                  "the QOS is not valid for this account",
	"QOSNotAllowed":               "the account does not allow this QOS",
	"AccountNotAllowed":           "the partition does not allow this account",
	"Reservation":                 "waiting for its reservation to start",
	"NodeDown":                    "a node it needs is down",
	"BadConstraints":              "its constraints cannot be met by any node",
	"launch failed requeued held": "it failed to launch and is held: ask the administrators",
}

// lines splits command output into non-empty lines without trailing CR.
func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
