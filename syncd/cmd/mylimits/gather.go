package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// runner runs a command and returns its stdout; errors carry the first
// line of stderr. Tests replace it with canned output.
type runner func(ctx context.Context, name string, args ...string) (string, error)

// errNotInstalled marks a command that is not on PATH.
var errNotInstalled = errors.New("not installed")

func execRunner(timeout time.Duration) runner {
	return func(ctx context.Context, name string, args ...string) (string, error) {
		if _, err := exec.LookPath(name); err != nil {
			return "", fmt.Errorf("%s: %w", name, errNotInstalled)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			return stdout.String(), fmt.Errorf("%s: no answer within %s", name, timeout)
		}
		if err != nil {
			msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
			if msg == "" {
				msg = err.Error()
			}
			return stdout.String(), fmt.Errorf("%s: %s", name, msg)
		}
		return stdout.String(), nil
	}
}

// directory is the part of the snapshot mylimits reads (*cache.Cache).
type directory interface {
	User(name string) (cache.User, error)
	UserByUID(uid uint32) (cache.User, error)
	Associations(user string) ([]cache.Association, error)
	Meta(key string) (string, error)
	Close()
}

func openSnapshot(path string) (directory, error) {
	c, err := cache.Open(path)
	if err != nil {
		return nil, err
	}
	return c, nil
}

type gatherer struct {
	run     runner
	openDir func(path string) (directory, error)
	// lookupUID and lookupName resolve users the snapshot does not
	// know (local accounts); os/user by default.
	lookupUID  func(uid uint32) (string, error)
	lookupName func(name string) (uint32, error)
}

func (g *gatherer) notef(rep *Report, format string, a ...any) {
	rep.Notes = append(rep.Notes, fmt.Sprintf(format, a...))
}

// gather builds the report for name (or, when name is "", for uid).
// It never fails as a whole: each missing piece becomes a note. Only an
// unknown user leaves rep.User empty.
func (g *gatherer) gather(ctx context.Context, path, name string, uid uint32) *Report {
	rep := &Report{Accounts: []Account{}, QOS: []QOS{}, Tiers: []TierCap{}, FairShare: []FairShare{},
		Jobs: []Job{}, Quota: []Quota{}, Storage: []Storage{}, Notes: []string{}}

	// Who: the snapshot first (it is what NSS answers for SCIM users),
	// then the local account databases.
	dir, err := g.openDir(path)
	if err != nil {
		g.notef(rep, "no SCIM snapshot (%v): accounts are shown from Slurm only", err)
		dir = nil
	} else {
		defer dir.Close()
		rep.Snapshot = &SnapshotInfo{Path: path}
		rep.Snapshot.Serial, _ = dir.Meta("serial")
		rep.Snapshot.CreatedAt, _ = dir.Meta("created_at")
		rep.Snapshot.SlurmSyncedAt, _ = dir.Meta("slurm_synced_at")
		if n, err := dir.Meta("associations"); err == nil {
			rep.Snapshot.Associations, _ = strconv.Atoi(n)
		}
	}
	home := ""
	if dir != nil {
		var u cache.User
		var err error
		if name != "" {
			u, err = dir.User(name)
		} else {
			u, err = dir.UserByUID(uid)
		}
		switch {
		case err == nil:
			rep.User, rep.UID, rep.InSnapshot, rep.Active = u.Name, u.UID, true, u.Active
			home = u.Home
		case errors.Is(err, cache.ErrNotFound):
		default:
			g.notef(rep, "snapshot lookup failed: %v", err)
		}
	}
	if rep.User == "" {
		if !g.resolveLocal(rep, name, uid) {
			return rep
		}
		if dir != nil {
			g.notef(rep, "%s is not a SCIM user (not in the snapshot): a local account", rep.User)
		}
	}
	if rep.InSnapshot && !rep.Active {
		g.notef(rep, "your account is disabled at the identity provider: logins and new jobs are refused; ask your identity provider's administrators to re-enable it (it takes effect here at syncd's next poll), and your jobs held meanwhile are released")
	}

	// Associations recorded by syncd.
	if dir != nil && rep.InSnapshot {
		as, err := dir.Associations(rep.User)
		if err != nil {
			g.notef(rep, "snapshot associations: %v", err)
		}
		for _, a := range as {
			rep.Accounts = append(rep.Accounts, Account{
				Name: a.Account, Default: a.IsDefault, QOS: a.QOS, DefaultQOS: a.DefaultQOS,
				Blocked: a.Blocked, From: "snapshot",
			})
		}
		// Whether syncd records associations here at all is the count in
		// the snapshot, not the time they were recorded: a commit whose
		// associations did not change may carry them without the time.
		if len(as) == 0 && err == nil {
			if rep.Snapshot.Associations == 0 && rep.Snapshot.SlurmSyncedAt == "" {
				g.notef(rep, "the snapshot has no Slurm associations (syncd does not manage Slurm here): ask the cluster's administrators which Slurm account to use")
			} else {
				g.notef(rep, "the snapshot lists no Slurm account for you: jobs will be refused until one is granted; ask your team's group owner to add you to a group mapped to a Slurm account (syncd adds the association at its next pass)")
			}
		}
	}

	g.slurm(ctx, rep)
	g.quota(ctx, rep)
	if rep.InSnapshot {
		var gids []uint32
		if d, ok := dir.(interface {
			UserGroups(string) ([]uint32, error)
		}); ok {
			gids, _ = d.UserGroups(rep.User)
		}
		g.storage(rep, path, home, gids)
	}
	return rep
}

func (g *gatherer) resolveLocal(rep *Report, name string, uid uint32) bool {
	lookupUID, lookupName := g.lookupUID, g.lookupName
	if lookupUID == nil {
		lookupUID = func(uid uint32) (string, error) {
			u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
			if err != nil {
				return "", err
			}
			return u.Username, nil
		}
	}
	if lookupName == nil {
		lookupName = func(name string) (uint32, error) {
			u, err := user.Lookup(name)
			if err != nil {
				return 0, err
			}
			n, err := strconv.ParseUint(u.Uid, 10, 32)
			return uint32(n), err
		}
	}
	if name != "" {
		id, err := lookupName(name)
		if err != nil {
			g.notef(rep, "no such user %q: check the spelling (mylimits with no argument shows your own)", name)
			return false
		}
		rep.User, rep.UID = name, id
	} else {
		n, err := lookupUID(uid)
		if err != nil {
			g.notef(rep, "uid %d has no user name on this host: ask the administrators to check the account (getent passwd %d answers nothing)", uid, uid)
			return false
		}
		rep.User, rep.UID = n, uid
	}
	rep.Active = true
	return true
}

// slurm adds what slurmdbd and slurmctld say: the live associations and
// their limits, the QOS tiers, the default account and the queue.
func (g *gatherer) slurm(ctx context.Context, rep *Report) {
	out, err := g.run(ctx, "scontrol", "show", "config")
	if errors.Is(err, errNotInstalled) {
		g.notef(rep, "Slurm client tools are not installed here: no live limits or jobs")
		return
	}
	var priorityType string
	privateJobs := false
	if err == nil {
		rep.Cluster = parseClusterName(out)
		priorityType = parseConfigValue(out, "PriorityType")
		rep.PreemptType = parseConfigValue(out, "PreemptType")
		rep.PreemptMode = parseConfigValue(out, "PreemptMode")
		privateJobs = strings.Contains(parseConfigValue(out, "PrivateData"), "jobs")
	}
	where := []string{"user=" + rep.User}
	if rep.Cluster != "" {
		where = append(where, "cluster="+rep.Cluster)
	}
	sacct := func(args ...string) (string, error) {
		return g.run(ctx, "sacctmgr", append([]string{"-nP", "show"}, args...)...)
	}

	out, err = sacct(append(append([]string{"assoc", "where"}, where...), "format="+strings.Join(assocFields, ","))...)
	if err != nil {
		g.notef(rep, "cannot read associations from Slurm: %v", err)
	} else {
		rows, skipped := parseAssoc(out)
		if skipped > 0 {
			g.notef(rep, "sacctmgr show assoc: %d line(s) not understood", skipped)
		}
		mergeAssoc(rep, rows)
		if len(rows) == 0 {
			g.notef(rep, "Slurm has no association for %s: jobs will be refused; if you were just added to a group, wait for syncd's next pass, else ask your team's group owner to add you to a group mapped to a Slurm account", rep.User)
		}
	}

	if out, err := sacct("user", rep.User, "format=User,DefaultAccount"); err == nil {
		if def := parseDefaultAccount(out, rep.User); def != "" {
			for i := range rep.Accounts {
				rep.Accounts[i].Default = rep.Accounts[i].Name == def
			}
		}
	}

	// The accounts' own limits: the association with an empty user.
	if names := accountNames(rep); len(names) > 0 {
		args := []string{"assoc", "where", "account=" + strings.Join(names, ",")}
		if rep.Cluster != "" {
			args = append(args, "cluster="+rep.Cluster)
		}
		args = append(args, "format="+strings.Join(assocFields, ","))
		if out, err := sacct(args...); err != nil {
			g.notef(rep, "cannot read account limits: %v", err)
		} else {
			rows, _ := parseAssoc(out)
			for _, r := range rows {
				if r.User != "" {
					continue
				}
				for i := range rep.Accounts {
					if rep.Accounts[i].Name == r.Account {
						rep.Accounts[i].AccountLimits = r.Limits
					}
				}
			}
		}
	}

	gpuHint(rep)

	if names := qosNames(rep); len(names) > 0 {
		out, err := sacct("qos", "where", "name="+strings.Join(names, ","), "format="+strings.Join(qosFields, ","))
		if err != nil {
			g.notef(rep, "cannot read QOS limits: %v", err)
		} else {
			qs, skipped := parseQOS(out)
			if skipped > 0 {
				g.notef(rep, "sacctmgr show qos: %d line(s) not understood", skipped)
			}
			rep.QOS = append(rep.QOS, qs...)
		}
	}

	out, err = g.run(ctx, "squeue", "-h", "-u", rep.User, "-o", squeueFormat)
	if err != nil {
		g.notef(rep, "cannot read the queue: %v", err)
	} else {
		jobs, skipped := parseSqueue(out)
		if skipped > 0 {
			g.notef(rep, "squeue: %d line(s) not understood", skipped)
		}
		rep.Jobs = append(rep.Jobs, jobs...)
	}
	g.tiersAndUse(ctx, rep, privateJobs)
	g.fairShare(ctx, rep, priorityType)
}

// mergeAssoc adds Slurm's view to the snapshot's: Slurm is the authority
// on what is live now; the snapshot shows what syncd last recorded.
func mergeAssoc(rep *Report, rows []assocRow) {
	for _, r := range rows {
		found := false
		for i := range rep.Accounts {
			a := &rep.Accounts[i]
			if a.Name != r.Account {
				continue
			}
			found = true
			a.From = "snapshot+slurm"
			a.QOS, a.DefaultQOS, a.UserLimits = r.QOS, r.DefaultQOS, r.Limits
		}
		if !found {
			rep.Accounts = append(rep.Accounts, Account{
				Name: r.Account, QOS: r.QOS, DefaultQOS: r.DefaultQOS, UserLimits: r.Limits, From: "slurm",
			})
		}
	}
	var stale []string
	for _, a := range rep.Accounts {
		if a.From == "snapshot" && len(rows) > 0 {
			stale = append(stale, a.Name)
		}
	}
	if len(stale) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("in the snapshot but not (yet) in Slurm: %s", strings.Join(stale, ", ")))
	}
	sort.SliceStable(rep.Accounts, func(i, j int) bool { return rep.Accounts[i].Name < rep.Accounts[j].Name })
}

func accountNames(rep *Report) []string {
	var n []string
	for _, a := range rep.Accounts {
		n = append(n, a.Name)
	}
	return n
}

func qosNames(rep *Report) []string {
	seen := map[string]bool{}
	var n []string
	for _, a := range rep.Accounts {
		for _, q := range a.QOS {
			if !seen[q] {
				seen[q] = true
				n = append(n, q)
			}
		}
	}
	sort.Strings(n)
	return n
}

func (g *gatherer) quota(ctx context.Context, rep *Report) {
	out, err := g.run(ctx, "quota", "-w", "-s", "-u", rep.User)
	if errors.Is(err, errNotInstalled) {
		g.notef(rep, "quota(1) is not installed: no disk quota shown")
		return
	}
	// quota exits non-zero when a filesystem is over quota; its report is
	// still good.
	if !strings.Contains(out, "Disk quotas for") {
		if err != nil {
			g.notef(rep, "cannot read disk quota: %v", err)
		} else {
			g.notef(rep, "no disk quota reported")
		}
		return
	}
	qs, none, skipped := parseQuota(out)
	if skipped > 0 {
		g.notef(rep, "quota: %d line(s) not understood", skipped)
	}
	if none || len(qs) == 0 {
		g.notef(rep, "no disk quota is set for %s", rep.User)
	}
	rep.Quota = append(rep.Quota, qs...)
}

// gpuHint says which account to charge GPU jobs to when some account
// allows none (typically the landing account, which is the default): a
// GPU job there pends forever with AssocGrpGRES.
func gpuHint(rep *Report) {
	var none, some []string
	for _, a := range rep.Accounts {
		if a.Blocked {
			continue
		}
		if gpuCount(a.AccountLimits["GrpTRES"]) == "0" || gpuCount(a.UserLimits["GrpTRES"]) == "0" {
			none = append(none, a.Name)
		} else {
			some = append(some, a.Name)
		}
	}
	for _, n := range none {
		if len(some) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("account %s allows no GPUs: submit GPU jobs with -A %s", n, strings.Join(some, " or -A ")))
		} else {
			rep.Notes = append(rep.Notes, fmt.Sprintf("account %s allows no GPUs", n))
		}
	}
}
