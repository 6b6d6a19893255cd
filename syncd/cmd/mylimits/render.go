package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// renderTable prints the report for people: one section per kind of
// fact, "-" for "no limit", notes last.
func renderTable(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s (uid %d)", rep.User, rep.UID)
	if rep.Cluster != "" {
		fmt.Fprintf(bw, " on cluster %s", rep.Cluster)
	}
	fmt.Fprintln(bw)
	if s := rep.Snapshot; s != nil && rep.InSnapshot {
		fmt.Fprintf(bw, "identity from the SCIM snapshot of %s", orDash(s.CreatedAt))
		if s.SlurmSyncedAt != "" {
			fmt.Fprintf(bw, ", Slurm associations recorded %s", s.SlurmSyncedAt)
		}
		fmt.Fprintln(bw)
	}

	fmt.Fprintln(bw, "\nAccounts")
	if len(rep.Accounts) == 0 {
		fmt.Fprintln(bw, "  (none)")
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ACCOUNT\tDEFAULT\tQOS (* = default)\tACCOUNT LIMITS\tYOUR LIMITS\tGPUS IN USE\tSTATUS")
		for _, a := range rep.Accounts {
			status := "ok"
			if a.Blocked {
				status = "blocked: being removed, no new jobs"
			}
			inUse := "-"
			if rep.UseKnown {
				// "team 3 of 16, you 2": each number against what it is
				// counted against (the cap is the team's, not yours).
				inUse = fmt.Sprintf("team %d", a.TeamGPUsInUse)
				if c := gpuCount(a.AccountLimits["GrpTRES"]); c != "" {
					inUse += " of " + c
				}
				inUse += fmt.Sprintf(", you %d", a.YourGPUsInUse)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, yesNo(a.Default), qosList(a.QOS, a.DefaultQOS),
				limits(a.AccountLimits), limits(a.UserLimits), inUse, status)
		}
		tw.Flush()
	}

	if len(rep.QOS) > 0 {
		fmt.Fprintln(bw, "\nQOS tiers")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  QOS\tMAX WALLTIME\tGPUS/USER\tGPUS/JOB\tGPUS/ACCOUNT\tGPUS ALL USERS\tMAX TRES/USER\tJOBS/USER\tSUBMIT/USER\tPRIORITY\tPREEMPTED BY")
		for _, q := range rep.QOS {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.Name, orDash(q.MaxWall), orDash(q.GPUsPerUser),
				orDash(q.GPUsPerJob), orDash(q.GPUsPerAccount), orDash(q.GPUsTotal), orDash(q.MaxTRESPerUser), orDash(q.MaxJobsPerUser),
				orDash(q.MaxSubmitPerUser), orDash(q.Priority), preemptedBy(q))
		}
		tw.Flush()
	}

	if len(rep.Tiers) > 0 {
		fmt.Fprintln(bw, "\nTiers: caps and GPUs in use now (in use of cap; - = no cap)")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ACCOUNT\tQOS (* = default)\tTIER\tMAX WALLTIME\tTEAM GPUS\tPOOL GPUS (ALL TEAMS)\tYOUR GPUS\tPREEMPTION")
		for _, t := range rep.Tiers {
			q := t.QOS
			if t.Default {
				q += "*"
			}
			pre := "never preempted"
			if t.NotPreemptedWhy != "" {
				pre = "not preempted (" + t.NotPreemptedWhy + ")"
			}
			if t.Preemptible {
				pre = "preemptible by " + strings.Join(t.PreemptedBy, ",")
				switch {
				case t.PreemptMode != "" && t.GraceTime != "":
					pre += " (" + strings.ToLower(t.PreemptMode) + " after " + t.GraceTime + ")"
				case t.PreemptMode != "":
					pre += " (" + strings.ToLower(t.PreemptMode) + ")"
				}
			}
			pool := "-"
			if t.Tier != "project" {
				pool = useOf(rep.UseKnown, t.PoolGPUsInUse, t.PoolGPUCap)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Account, q, t.Tier, orDash(t.MaxWall),
				useOf(rep.UseKnown, t.TeamGPUsInUse, t.TeamGPUCap), pool,
				useOf(rep.UseKnown, t.YourGPUsInUse, t.YourGPUCap), pre)
		}
		tw.Flush()
	}

	if len(rep.FairShare) > 0 || rep.FairShareNote != "" {
		fmt.Fprintln(bw, "\nFair-share")
		if rep.FairShareNote != "" {
			fmt.Fprintf(bw, "  %s\n", rep.FairShareNote)
		}
		if len(rep.FairShare) > 0 {
			tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  ACCOUNT\tSHARES\tRAW USAGE\tEFFECTIVE USAGE\tFAIRSHARE\tMEANING")
			for _, f := range rep.FairShare {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", f.Account, orDash(f.RawShares), orDash(f.RawUsage),
					orDash(f.Effective), orDash(f.FairShare), orDash(f.Meaning))
			}
			tw.Flush()
		}
	}

	fmt.Fprintln(bw, "\nJobs")
	if len(rep.Jobs) == 0 {
		fmt.Fprintln(bw, "  (none)")
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  JOBID\tNAME\tACCOUNT\tQOS\tSTATE\tTIME\tLIMIT\tNODES\tREASON")
		for _, j := range rep.Jobs {
			reason := j.Reason
			if j.State != "PENDING" {
				reason = "-"
			} else if j.Why != "" {
				reason += ": " + j.Why
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Name, j.Account, j.QOS, j.State,
				j.TimeUsed, j.TimeLimit, j.Nodes, reason)
		}
		tw.Flush()
	}

	if len(rep.Quota) > 0 {
		fmt.Fprintln(bw, "\nDisk quota")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  FILESYSTEM\tUSED\tSOFT\tHARD\tGRACE\tFILES\tSOFT\tHARD\tGRACE")
		for _, q := range rep.Quota {
			used, files := q.Used, q.Files
			if q.OverSoft {
				used += " (over)"
			}
			if q.FilesOver {
				files += " (over)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.Filesystem, used, noLimit(q.Soft),
				noLimit(q.Hard), orDash(q.Grace), files, noLimit(q.FilesSoft), noLimit(q.FilesHard), orDash(q.FilesGrace))
		}
		tw.Flush()
	}

	if len(rep.Storage) > 0 {
		fmt.Fprintln(bw, "\nStorage (home and project quotas)")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  WHAT\tPATH\tUSED\tSOFT\tHARD\tGRACE\tAS OF")
		for _, s := range rep.Storage {
			used := human(s.Used)
			if s.OverHard {
				used += " (over hard: writes fail)"
			} else if s.OverSoft {
				used += " (over soft)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Kind, s.Path, used, human(s.Soft), human(s.Hard), orDash(s.Grace), s.AsOf)
		}
		tw.Flush()
	}

	if len(rep.Notes) > 0 {
		fmt.Fprintln(bw, "\nNotes")
		for _, n := range rep.Notes {
			fmt.Fprintf(bw, "  - %s\n", n)
		}
	}
	return bw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// noLimit shows quota's "0" (no limit) as "-".
func noLimit(s string) string {
	if s == "" || strings.TrimRight(s, "0KMGTkmgt") == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

// preemptedBy says whether jobs in q can be preempted: by which QOS, how
// (requeue, cancel...), after what grace time.
func preemptedBy(q QOS) string {
	if len(q.PreemptedBy) == 0 {
		return "-"
	}
	s := strings.Join(q.PreemptedBy, ",")
	if q.PreemptMode != "" && q.PreemptMode != "cluster" {
		s += " (" + q.PreemptMode
		if q.GraceTime != "" && q.GraceTime != "00:00:00" {
			s += " after " + q.GraceTime
		}
		s += ")"
	}
	return s
}

func qosList(qs []string, def string) string {
	if len(qs) == 0 {
		return "-"
	}
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q
		if q == def {
			out[i] += "*"
		}
	}
	return strings.Join(out, ",")
}

func limits(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// The order sacctmgr prints them in, not alphabetical.
	order := map[string]int{}
	for i, f := range limitFields {
		order[f] = i
	}
	sort.Slice(keys, func(i, j int) bool { return order[keys[i]] < order[keys[j]] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

// useOf shows "N of CAP", "N of -" without a cap, "-" when use is unknown
// and there is no cap.
func useOf(known bool, n int64, limit string) string {
	switch {
	case !known && limit == "":
		return "-"
	case !known:
		return "? of " + limit
	}
	return fmt.Sprintf("%d of %s", n, orDash(limit))
}
