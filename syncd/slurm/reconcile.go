package slurm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/sirupsen/logrus"
)

// DefaultMaxRemovalShare is the largest share of the managed associations
// one pass may delete without Force: a snapshot that lost a group by
// mistake must not empty the cluster's accounting.
const DefaultMaxRemovalShare = 0.5

// Options tune one reconcile.
type Options struct {
	// DryRun computes the plan and changes nothing (no lock, no writes).
	DryRun bool
	// Force lifts the removal guard.
	Force bool
	// MaxRemovalShare overrides DefaultMaxRemovalShare (applies when at
	// least 10 associations are managed).
	MaxRemovalShare float64
	// Resolve checks that a user resolves on this host; nil: getpwnam.
	Resolve Resolver
	Log     logrus.FieldLogger
	// OnPlan, if set, sees the plan before any of it runs.
	OnPlan func(*Plan)
	// SkipUnchanged skips the pass, without a sacctmgr call, when what the
	// snapshot and the config ask of Slurm is what they asked on the last
	// pass of this process that left slurmdbd matching (the pass after a
	// commit that changed nothing Slurm sees). Passes on a schedule leave
	// it off: they are what finds drift.
	SkipUnchanged bool
}

// Result reports one reconcile.
type Result struct {
	Plan *Plan
	// Applied and Changed count the plan's steps run and those that
	// changed something ("Nothing new added" is unchanged).
	Applied, Changed int
	// Calls counts every sacctmgr run, reads included.
	Calls    int
	Duration time.Duration
	// Associations recorded in the snapshot; SnapshotWritten is false
	// when they were already there.
	Associations    int
	SnapshotWritten bool
	// Unfinished counts the commands a fresh plan still has after apply
	// (0 when slurmdbd matches).
	Unfinished int
	// Skipped: SkipUnchanged found nothing new to ask (no sacctmgr run).
	Skipped bool
}

// ErrTooManyRemovals is returned when the removal guard stops a plan.
var ErrTooManyRemovals = errors.New("slurm: plan removes too many associations")

// Reconcile runs one pass against the live snapshot at cachePath.
func Reconcile(ctx context.Context, cfg Config, cachePath string, opt Options) (*Result, error) {
	t0 := time.Now()
	cfg = cfg.WithDefaults()
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	log := opt.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	log = log.WithField("cluster", cfg.Cluster)
	if !opt.DryRun {
		unlock, err := lock(cfg.LockFile)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	ex := NewExec(cfg, log)
	// slurmdbd is read (and scontrol, for the lint) while the snapshot is
	// loaded and every user resolved: the reads are round trips (~1 s
	// at 10,000 associations), the rest is this process's CPU (~0.3 s).
	// A pass that may skip (SkipUnchanged) reads nothing until it knows
	// it does not.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type readOut struct {
		have       *State
		conf       string
		err, cerr  error
		start, end time.Time
	}
	var reads chan readOut
	startReads := func() {
		reads = make(chan readOut, 1)
		go func() {
			r := readOut{start: time.Now()}
			conf := make(chan struct{})
			go func() {
				r.conf, r.cerr = ex.SlurmConfig(ctx)
				close(conf)
			}()
			r.have, r.err = ex.ReadState(ctx, cfg.Cluster)
			<-conf
			r.end = time.Now()
			reads <- r
		}()
	}
	if !opt.SkipUnchanged || opt.DryRun {
		startReads()
	}
	contents, _, err := snapshot.Load(cachePath)
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	resolve := opt.Resolve
	if resolve == nil && !cfg.SkipNSSCheck {
		resolve = GetpwnamResolver
	}
	want, err := BuildDesired(cfg, contents, resolve)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	defer func() { res.Calls, res.Duration = ex.Calls(), time.Since(t0) }()
	digest := wantDigest(cfg, want)
	if opt.SkipUnchanged && !opt.DryRun && digest != "" && lastClean(cfg.Cluster, "") == digest {
		res.Skipped = true
		log.Debug("slurm: nothing Slurm sees changed since the last pass that matched; skipped (the scheduled pass still checks for drift)")
		return res, nil
	}
	lastClean(cfg.Cluster, "-") // until this pass ends clean

	ledgerPath := cfg.StateFile
	if ledgerPath == "" {
		ledgerPath = filepath.Join(filepath.Dir(cachePath), DefaultStateFileName)
	}
	ledger, err := LoadLedger(ledgerPath)
	if err != nil {
		return res, err
	}
	if reads == nil {
		startReads()
	}
	prepSecs := time.Since(t0).Seconds()
	r := <-reads
	readSecs := r.end.Sub(r.start).Seconds()
	have, err := r.have, r.err
	c := struct {
		out string
		err error
	}{r.conf, r.cerr}
	if err != nil {
		return res, err
	}
	have.Ledger = ledger
	plan := MakePlan(cfg, want, have)
	res.Plan = plan
	if c.err != nil {
		plan.Notes = append(plan.Notes, "lint skipped: "+c.err.Error())
	} else {
		plan.Lint = Lint(want, ParseSlurmConfig(c.out))
	}
	// Lint and notes are logged when they appear (or change), not on
	// every pass of `syncd run`: the same warning every interval buries
	// the new one. Conflicts stay at error on every pass: they hold
	// accounts still until someone acts. `syncd slurm plan` prints all.
	seen := repeated(cfg.Cluster)
	for _, l := range plan.Lint {
		if m := "slurm: lint: " + l.Problem + "; add to slurm.conf: " + l.Line; seen(m) {
			log.Warn(m)
		}
	}
	for _, c := range plan.Conflicts {
		log.Error("slurm: conflict: " + c)
	}
	for _, n := range plan.Notes {
		if m := "slurm: " + n; seen(m) {
			log.Info(m)
		}
	}
	if opt.OnPlan != nil {
		opt.OnPlan(plan)
	}
	if opt.DryRun {
		return res, nil
	}
	share := opt.MaxRemovalShare
	if share == 0 {
		share = DefaultMaxRemovalShare
	}
	if n := plan.Removals(); !opt.Force && plan.Managed >= 10 && float64(n) > share*float64(plan.Managed) {
		return res, fmt.Errorf("%w: %d of %d managed associations (limit %.0f%%); check `syncd slurm plan`, then `syncd slurm apply --force`",
			ErrTooManyRemovals, n, plan.Managed, share*100)
	}

	var applyErr error
	var outs []string
	var changes []bool
	for _, s := range plan.Steps {
		tStep := time.Now()
		changed, out, err := ex.ApplyOut(ctx, s)
		res.Applied++
		if err != nil {
			applyErr = err
			log.WithError(err).Error("slurm: step failed; stopping this pass")
			break
		}
		outs, changes = append(outs, out), append(changes, changed)
		if changed {
			res.Changed++
		}
		log.WithFields(logrus.Fields{"phase": s.Phase.String(), "changed": changed, "seconds": round2(time.Since(tStep))}).Info("slurm: " + s.Short(cfg.Sacctmgr))
	}
	var backSecs float64
	readBack := "none: nothing applied"
	if res.Applied > 0 {
		tBack := time.Now()
		// Read back what the commands touched: nothing when their output
		// proves it (proof.go), only their users when no command changed
		// an account or a QOS (a move, a few members), else everything.
		users, ok := touchedUsers(plan.Steps[:res.Applied])
		var proven *State
		if ok && applyErr == nil {
			if st, yes := provenState(have, cfg.Cluster, plan.Steps, outs, changes); yes {
				proven, readBack = st, "none: the commands' output proves the result"
			}
		}
		switch {
		case proven != nil:
			have = proven
		case ok:
			readBack = "the users the commands named"
			have, err = ex.ReadUsers(ctx, cfg.Cluster, have, users)
		default:
			readBack = "all"
			have, err = ex.ReadState(ctx, cfg.Cluster)
		}
		backSecs = time.Since(tBack).Seconds()
		if err != nil {
			return res, errors.Join(applyErr, err)
		}
		have.Ledger = ledger
	}
	// The ledger follows what slurmdbd holds now (also on a pass with
	// nothing to do: accounts that already match are recorded).
	have.Ledger = nextLedger(cfg, want, have, ledger, plan.Blocks, plan.Held)
	if err := have.Ledger.Save(ledgerPath); err != nil {
		applyErr = errors.Join(applyErr, err)
	}
	if res.Applied > 0 {
		// sacctmgr can report success for work slurmdbd did not do (seen
		// with concurrent writers: a deadlock retry that drops
		// associations), so check the result against the wish again.
		if applyErr == nil {
			if again := MakePlan(cfg, want, have); !again.Empty() {
				res.Unfinished = len(again.Steps)
				log.WithField("commands", res.Unfinished).Warn("slurm: slurmdbd still differs after apply; the next pass retries:\n" + again.String())
			}
		}
	}
	tRecord := time.Now()
	n, written, err := Record(cachePath, have)
	recordSecs := time.Since(tRecord).Seconds()
	res.Associations, res.SnapshotWritten = n, written
	if applyErr == nil && err == nil && res.Unfinished == 0 && len(plan.Conflicts) == 0 {
		lastClean(cfg.Cluster, digest)
	}
	log.WithFields(logrus.Fields{
		"steps": res.Applied, "changed": res.Changed, "sacctmgr_calls": ex.Calls(),
		"associations": n, "snapshot_written": written, "seconds": round2(time.Since(t0)),
		"prepare_seconds": round2s(prepSecs), "read_seconds": round2s(readSecs), "readback_seconds": round2s(backSecs),
		"record_seconds": round2s(recordSecs), "read_back": readBack,
	}).Info("slurm: reconcile done")
	return res, errors.Join(applyErr, err)
}

// wantDigest sums what a pass asks of Slurm: the config and the wish
// built from the snapshot (users, their accounts, QOS, defaults, held and
// active flags, uids).
func wantDigest(cfg Config, want *Desired) string {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(struct {
		Cfg  Config
		Want *Desired
	}{cfg, want}); err != nil {
		return "" // never equal to a recorded digest: no skip
	}
	return hex.EncodeToString(h.Sum(nil))
}

var (
	cleanMu sync.Mutex
	clean   = map[string]string{}
)

// lastClean returns the digest of cluster's last clean pass; set, when
// not "", replaces it ("-": none).
func lastClean(cluster, set string) string {
	cleanMu.Lock()
	defer cleanMu.Unlock()
	if set != "" {
		clean[cluster] = set
	}
	if d := clean[cluster]; d != "-" {
		return d
	}
	return ""
}

// maxReadBack bounds the users read back by name (ReadUsers); more are
// read back whole.
const maxReadBack = 200

// touchedUsers lists the users steps change, and false when a step
// changes more than users' associations (an account, a QOS, a load) or
// they are too many to name in one query. Job steps (scontrol, scancel)
// touch no association.
func touchedUsers(steps []Step) ([]string, bool) {
	seen := map[string]bool{}
	var out []string
	for _, s := range steps {
		if s.Bin != "" {
			continue
		}
		var names string
		switch {
		case len(s.Args) > 2 && s.Args[0] == "add" && s.Args[1] == "user":
			names = s.Args[2]
		case len(s.Args) > 1 && (s.Args[0] == "modify" || s.Args[0] == "delete") && s.Args[1] == "user":
			for _, a := range s.Args[2:] {
				if v, ok := strings.CutPrefix(a, "name="); ok {
					names = v
				}
			}
		}
		if names == "" {
			return nil, false
		}
		for _, n := range strings.Split(names, ",") {
			if n = strings.ToLower(n); !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out, len(out) <= maxReadBack
}

// Associations lists the associations of the snapshot's users in st, in
// the snapshot's user spelling, sorted by user then account.
func Associations(c *snapshot.Contents, st *State) []snapshot.Association {
	var out []snapshot.Association
	for _, u := range c.Users {
		us := st.Users[strings.ToLower(u.Name)]
		if us == nil {
			continue
		}
		for _, acct := range slices.Sorted(maps.Keys(us.Assocs)) {
			a := us.Assocs[acct]
			out = append(out, snapshot.Association{
				User: u.Name, Account: acct, QOS: append([]string(nil), a.QOS...), DefaultQOS: a.DefaultQOS,
				IsDefault: us.DefaultAccount == acct, Blocked: a.Blocked(),
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].User != out[j].User {
			return out[i].User < out[j].User
		}
		return out[i].Account < out[j].Account
	})
	return out
}

// Record writes the associations in st of the snapshot's users into the
// live snapshot, unless it already has exactly these. The snapshot is
// loaded again here, just before writing, so that a sync that committed
// while sacctmgr ran is not undone.
func Record(cachePath string, st *State) (n int, written bool, err error) {
	// The same lock syncd's snapshot writer takes: a sync must not commit
	// between this Load and Write (its users would be lost until the next).
	unlock, err := lock(cachePath + ".lock")
	if err != nil {
		return 0, false, err
	}
	defer unlock()
	c, meta, err := snapshot.Load(cachePath)
	if err != nil {
		return 0, false, fmt.Errorf("slurm: record associations: %w", err)
	}
	assocs := Associations(c, st)
	// A sync commit carries the associations and the time they were read
	// back (syncd/pipeline); a snapshot that has no such time yet (never
	// read back, or written by another tool) gets one here even when the
	// associations are the same: mylimits says when they were recorded.
	if sameAssocs(c.Associations, assocs) && !meta.SlurmSyncedAt.IsZero() {
		return len(assocs), false, nil
	}
	// In place (snapshot.Update): only the associations' and meta's pages
	// change, so the nodes' delta stays the size of the change.
	next := *c
	next.Associations = assocs
	if _, _, err := snapshot.UpdateWith(cachePath, c, &next, snapshot.UpdateOptions{SlurmSyncedAt: time.Now()}); err != nil {
		return 0, false, fmt.Errorf("slurm: record %d associations in %s: %w", len(assocs), cachePath, err)
	}
	return len(assocs), true, nil
}

func sameAssocs(a, b []snapshot.Association) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(x snapshot.Association) string {
		return fmt.Sprintf("%s|%s|%s|%s|%v|%v", x.User, x.Account, strings.Join(x.QOS, ","), x.DefaultQOS, x.IsDefault, x.Blocked)
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[key(x)]++
	}
	for _, x := range b {
		if seen[key(x)] == 0 {
			return false
		}
		seen[key(x)]--
	}
	return true
}

// loggedLast holds, per cluster, the lint and notes the previous pass of
// this process logged.
var (
	loggedMu   sync.Mutex
	loggedLast = map[string]map[string]bool{}
)

// repeated starts a pass's logging for cluster: the function it returns
// reports whether a message is new (not logged by the previous pass) and
// records it for the next. A message that goes away and comes back is
// new again.
func repeated(cluster string) func(string) bool {
	loggedMu.Lock()
	last := loggedLast[cluster]
	now := map[string]bool{}
	loggedLast[cluster] = now
	loggedMu.Unlock()
	return func(m string) bool {
		loggedMu.Lock()
		defer loggedMu.Unlock()
		now[m] = true
		return !last[m]
	}
}

// round2 and round2s: seconds to 2 decimals, for the log.
func round2(d time.Duration) float64 { return round2s(d.Seconds()) }
func round2s(s float64) float64      { return float64(int64(s*100+0.5)) / 100 }
