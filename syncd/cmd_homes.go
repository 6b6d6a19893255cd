package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/report"
	"github.com/scimbridge/scimbridge/syncd/schedule"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// The homes pass (syncd/homes) runs on the host the [homes] table names
// (role: the head, or a storage node mirroring it), in a goroutine of
// its own: a hung or slow storage stalls that goroutine only, never a
// poll, a commit, a publish or a mirror's install.

func init() {
	commands["homes"] = command{
		Summary: "plan|apply: homes, project directories and quotas from the snapshot ([homes])",
		Run:     runHomes,
	}
	pipeline.AfterCommit = append(pipeline.AfterCommit, homesAfterCommit)
	daemonTasks = append(daemonTasks, homesLoop)
	metrics.Extra = append(metrics.Extra, homesPasses, homesGauge, homesLastPass)
}

var (
	homesPasses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scimbridge_homes_passes_total", Help: "Homes passes by result (ok, errors: the storage failed somewhere; see the log)."}, []string{"result"})
	homesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scimbridge_homes", Help: "The last homes pass: homes and projects in place, refused paths, errors, changes made."}, []string{"what"})
	homesLastPass = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scimbridge_homes_last_pass_timestamp_seconds", Help: "When the last homes pass ended."})
)

// homesRunning: the daemon's loop runs the pass on this host (it sees
// every new live file by itself; the after-commit step then does nothing,
// so the unchanged polls' after-commit round never starts a pass).
var homesRunning atomic.Bool

// homesRetry: a pass that met errors (storage down, glusterd busy) runs
// again after this, not only at the next snapshot or interval; the wait
// doubles while the errors go on (each pass logs them), up to the
// interval.
const homesRetry = time.Minute

// homesSharedErr is the last failure to leave the storage use for the
// nodes (homes.WriteShared), logged once until it changes or clears.
var homesSharedErr atomic.Pointer[string]

const homesUsage = `usage: syncd homes plan  [--cache PATH] [--json]
       syncd homes apply [--cache PATH] [--json]

plan prints what apply would do (homes to make, archive, projects, quota
command lines) and changes nothing. apply does it now, on this host, whatever
its role; syncd run does it on the host [homes] role names.`

func runHomes(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || (args[0] != "plan" && args[0] != "apply") {
		return usageError{homesUsage}
	}
	sub := args[0]
	fs := flags("homes "+sub, &cfgPath)
	cache := fs.String("cache", "", "snapshot path (default: cache_path of the config)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	sample := fs.Bool("sample", false, "apply: also record each team's use as a sample for the usage report (syncd run does it every homes.interval)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	hc, on, err := loadHomes(cfg)
	if err != nil {
		return err
	}
	if !on {
		return fmt.Errorf("%s has no [homes] table", cfgPath)
	}
	if *cache != "" {
		cfg.CachePath = *cache
	}
	res, err := homesRun(ctx, cfg, hc, sub == "plan", *sample)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printHomesResult(os.Stdout, res)
	if res.Errors > 0 {
		return fmt.Errorf("%d error(s) (above); nothing else was held back", res.Errors)
	}
	return nil
}

func printHomesResult(w io.Writer, r *homes.Result) {
	what := "applied"
	if r.DryRun {
		what = "plan (nothing changed)"
	}
	fmt.Fprintf(w, "# homes %s: %d home(s) and %d project(s) in place, %d refused, %d error(s), driver %s\n",
		what, r.Homes, r.Teams, r.Refused, r.Errors, orNone(r.Driver))
	for _, a := range r.Actions {
		fmt.Fprintln(w, a.String())
	}
	if len(r.Actions) == 0 {
		fmt.Fprintln(w, "# nothing to do")
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// loadHomes decodes and checks [homes]; on is false without the table.
func loadHomes(cfg *config.Config) (hc homes.Config, on bool, err error) {
	if !cfg.HasHomes() {
		return hc, false, nil
	}
	if err := cfg.DecodeHomes(&hc); err != nil {
		return hc, true, err
	}
	hc = hc.WithDefaults(cfg.HomeRoots, cfg.CachePath)
	if err := hc.Check(cfg.ProtectedPaths()); err != nil {
		return hc, true, fmt.Errorf("%s: %w", cfg.Path, err)
	}
	return hc, true, nil
}

// homesHere: does this host's role run the pass?
func homesHere(cfg *config.Config, hc homes.Config) bool {
	return hc.Enabled && (hc.Role == "storage") == cfg.IsMirror()
}

// homesRoleWarning says when [homes] names a role this host does not
// have: the pass then never runs here (by design, said so).
func homesRoleWarning(cfg *config.Config, hc homes.Config) string {
	switch {
	case !hc.Enabled:
		return "[homes] enabled = false: no homes pass runs (syncd homes plan|apply still work by hand)"
	case hc.Role == "head" && cfg.IsMirror():
		return "[homes] role = \"head\", but this host mirrors a head ([mirror]): the pass will not run here; set role = \"storage\" on the one node that owns the storage, and remove [homes] from the others"
	case hc.Role == "storage" && !cfg.IsMirror():
		return "[homes] role = \"storage\", but this host is a head (no [mirror]): the pass will not run here; set role = \"head\", or put [homes] on the storage node that mirrors this head"
	}
	return ""
}

// homesRun runs one pass over the live snapshot, bounded by
// homes.timeout, and records it (status file, metrics) unless dry.
func homesRun(ctx context.Context, cfg *config.Config, hc homes.Config, dry, sample bool) (*homes.Result, error) {
	contents, _, err := snapshot.Load(cfg.CachePath)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, hc.TimeoutDuration())
	defer cancel()
	res, err := homes.Pass(ctx, hc, contents, homes.Options{DryRun: dry, Log: logrus.StandardLogger(), Sample: sample})
	if dry || res == nil {
		return res, err
	}
	if werr := homes.WriteStatus(hc, res); werr != nil && err == nil {
		err = werr
	}
	if werr := homes.WriteShared(hc, res); werr != nil {
		if msg := werr.Error(); func() bool { old := homesSharedErr.Swap(&msg); return old == nil || *old != msg }() {
			logrus.WithError(werr).Warn("homes: the nodes that mount the storage keep the last figures (mylimits shows their age)")
		}
	} else {
		homesSharedErr.Store(nil)
	}
	result := "ok"
	if res.Errors > 0 || err != nil {
		result = "errors"
	}
	homesPasses.WithLabelValues(result).Inc()
	for k, v := range map[string]int{"homes": res.Homes, "projects": res.Teams, "refused": res.Refused, "errors": res.Errors, "changed": res.Changed()} {
		homesGauge.WithLabelValues(k).Set(float64(v))
	}
	homesLastPass.SetToCurrentTime()
	return res, err
}

// homesAfterCommit runs the pass after `sync --once` commits, inline and
// bounded by homes.timeout. In the daemon the loop does it (it sees the
// new file within 5 s) and this returns at once: a commit never waits for
// the storage.
func homesAfterCommit(ctx context.Context, cfg *config.Config, cachePath string) error {
	if homesRunning.Load() {
		return nil
	}
	hc, on, err := loadHomes(cfg)
	if err != nil || !on || !homesHere(cfg, hc) {
		return err
	}
	c := *cfg
	c.CachePath = cachePath
	res, err := homesRun(ctx, &c, hc, false, false)
	if err == nil && res.Errors > 0 {
		err = fmt.Errorf("homes: %d error(s) in the pass (see the log and `syncd homes plan`)", res.Errors)
	}
	return err
}

// homesLoop is the pass's own schedule on the host its role names, in
// the shared ownSchedule loop: after every new live snapshot (a new file:
// a commit on the head, an install on a mirror; asked every 5 s) and
// every homes.interval (these passes record the hourly usage samples).
// The configuration is read again for each pass: a broken one is logged
// (once per error) and the last kept; [homes] added, enabled or given
// this host's role takes effect without a restart.
func homesLoop(ctx context.Context, cfgPath string, cfg *config.Config, log *logrus.Logger) {
	homesRunning.Store(true)
	defer homesRunning.Store(false)
	var lastSample atomic.Int64 // the last sampling pass (unix nanoseconds)
	var lastIno uint64          // the live file the last pass read
	var retryAt time.Time       // a pass with errors is tried again then
	retryWait := homesRetry     // doubling while errors go on, up to the interval
	var hc homes.Config
	loggedErr, loggedOn := "", false
	ino := func(cfg *config.Config) uint64 {
		if fi, err := os.Stat(cfg.CachePath); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				return st.Ino
			}
		}
		return 0
	}
	pending := func(c *config.Config) bool {
		i := ino(c)
		return i != 0 && (i != lastIno || (!retryAt.IsZero() && time.Now().After(retryAt)))
	}
	schedule.Watching(ctx, "homes", cfgPath, cfg, log, &lastSample,
		func(c *config.Config) (bool, string) {
			h, on, err := loadHomes(c)
			if err != nil {
				if err.Error() != loggedErr {
					loggedErr = err.Error()
					log.WithError(err).Error("homes: [homes] is invalid; no homes pass runs until it is fixed")
				}
				return false, ""
			}
			loggedErr = ""
			if !on || !homesHere(c, h) {
				loggedOn = false
				return false, ""
			}
			if !loggedOn {
				loggedOn = true
				log.WithFields(logrus.Fields{"role": h.Role, "roots": strings.Join(h.Roots, ","), "driver": orNone(h.Quota.Driver)}).Info("homes: pass runs on this host")
			}
			hc = h
			return true, h.IntervalDuration().String()
		},
		func(c *config.Config) {
			i := ino(c)
			if i == 0 {
				return // no snapshot yet
			}
			sample := time.Since(time.Unix(0, lastSample.Load())) >= hc.IntervalDuration()
			if !sample && !pending(c) {
				return
			}
			lastIno, retryAt = i, time.Time{}
			if sample {
				lastSample.Store(time.Now().UnixNano())
			}
			res, err := homesRun(ctx, c, hc, false, sample)
			if err != nil && ctx.Err() == nil {
				log.WithError(err).Error("homes: pass failed; retrying in " + retryWait.String())
			}
			if err != nil || (res != nil && (res.Errors > 0 || res.UsagePending > 0)) {
				// storage down, or its use not reported yet for a limit
				// just set: sooner than the interval
				retryAt = time.Now().Add(retryWait)
				retryWait = min(2*retryWait, hc.IntervalDuration())
			} else {
				retryWait = homesRetry
			}
			if res != nil && res.Changed() > 0 {
				log.WithField("changes", res.Changed()).Info("homes: pass done")
			}
		},
		pending)
}

// homesStatusPath is the homes status file for a snapshot: from the
// config when it is readable, else beside the snapshot.
func homesStatusPath(cfgPath, cachePath string) string {
	if cfg, err := config.Parse(cfgPath); err == nil && cfg.HasHomes() {
		var hc homes.Config
		if cfg.DecodeHomes(&hc) == nil {
			return hc.WithDefaults(cfg.HomeRoots, cachePath).StatusFile()
		}
	}
	return homes.Config{}.WithDefaults(nil, cachePath).StatusFile()
}

// printHomesStatus adds the homes pass to `syncd status`.
func printHomesStatus(w io.Writer, p string, now time.Time) {
	v, err := homes.ReadStatus(p)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(w, "homes:          %v\n", err)
		}
		return
	}
	fmt.Fprintf(w, "homes:          last pass %s (%s ago): %d home(s), %d project(s), %d refused, %d error(s), %d change(s); quota driver %s\n",
		v.At.Local().Format(time.RFC3339), now.Sub(v.At).Round(time.Second), v.Homes, v.Teams, v.Refused, v.Errors, v.Changed, orNone(v.Driver))
	for _, a := range v.Actions {
		if a.Kind == "refused" || a.Kind == "error" || a.Kind == "over-limit" || a.Kind == "quota-capped" {
			fmt.Fprintf(w, "  %s\n", a.String())
		}
	}
}

// HomeExplain is what `syncd explain USER` shows of storage.
type HomeExplain struct {
	Home      string              `json:"home"`
	OnDisk    string              `json:"on_disk"`
	LastPass  *time.Time          `json:"last_pass,omitempty"`
	Targets   []homes.TargetUsage `json:"quota,omitempty"`
	Actions   []homes.Action      `json:"actions,omitempty"`
	NoPassYet string              `json:"note,omitempty"`
}

// homesExplain is nil on a host where no homes pass ever ran (no status
// file): explain then shows nothing of storage, as before [homes].
func homesExplain(cfgPath, cachePath, name, home string, groups []string) *HomeExplain {
	v, err := homes.ReadStatus(homesStatusPath(cfgPath, cachePath))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	e := &HomeExplain{Home: home, OnDisk: describePath(home)}
	if err != nil {
		e.NoPassYet = "the homes pass's status is unreadable (" + err.Error() + ")"
		return e
	}
	e.LastPass = &v.At
	in := map[string]bool{"user:" + name: true}
	for _, g := range groups {
		in["team:"+g] = true
	}
	for _, t := range v.Targets {
		if in[t.Key()] {
			e.Targets = append(e.Targets, t)
		}
	}
	for _, a := range v.Actions {
		if a.Name == name || (a.Path != "" && a.Path == home) {
			e.Actions = append(e.Actions, a)
		}
	}
	return e
}

func describePath(p string) string {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return "not there (" + err.Error() + ")"
	}
	k := "directory"
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		k = "SYMLINK (refused by the homes pass)"
	case syscall.S_IFREG:
		k = "file"
	}
	return fmt.Sprintf("%s owned by %d:%d mode %04o", k, st.Uid, st.Gid, st.Mode&0o7777)
}

func printHomeExplain(w io.Writer, e *HomeExplain) {
	fmt.Fprintf(w, "home:      %s: %s\n", e.Home, e.OnDisk)
	if e.NoPassYet != "" {
		fmt.Fprintf(w, "quota:     %s\n", e.NoPassYet)
		return
	}
	for _, t := range e.Targets {
		if t.Usage == nil {
			fmt.Fprintf(w, "quota:     %s %s: set by the pass of %s; use not readable through this driver\n", t.Kind, t.Path, e.LastPass.Format(time.RFC3339))
			continue
		}
		u := t.Usage
		fmt.Fprintf(w, "quota:     %s %s: %s used of soft %s, hard %s%s (as of %s)\n", t.Kind, t.Path, homes.FormatSize(u.Used),
			sizeOr(u.Soft), sizeOr(u.Hard), over(u), e.LastPass.Format(time.RFC3339))
	}
	for _, a := range e.Actions {
		fmt.Fprintf(w, "homes:     %s\n", a.String())
	}
}

func sizeOr(b uint64) string {
	if b == 0 {
		return "none"
	}
	return homes.FormatSize(b)
}

func over(u *homes.Usage) string {
	switch {
	case u.OverHard:
		return "; OVER the hard limit: writes fail"
	case u.OverSoft:
		return "; over the soft limit"
	}
	return ""
}

// storageSummary reads the homes ledger's samples for [since, until).
func storageSummary(cfgPath string, since, until time.Time) ([]homes.TeamStorage, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	hc, on, err := loadHomes(cfg)
	if err != nil || !on {
		return nil, err
	}
	st, err := homes.LoadState(hc.StateFile)
	if err != nil {
		return nil, err
	}
	return homes.SummarizeSamples(st.Samples, since, until), nil
}

func printStorage(w io.Writer, ts []homes.TeamStorage) {
	fmt.Fprintln(w, "\nProject storage per team (hourly samples of the homes pass)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tSAMPLES\tAVG USED\tPEAK\tLAST\tSOFT\tHARD\tGiB-HOURS")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.1f\n", t.Team, t.Samples, homes.FormatSize(t.AvgUsed), homes.FormatSize(t.MaxUsed),
			homes.FormatSize(t.Last), sizeOr(t.Soft), sizeOr(t.Hard), t.GiBHours)
	}
	tw.Flush()
}

// printStorageSection ends `report usage` with storage, when this host
// has samples; silent otherwise.
func printStorageSection(w io.Writer, cfgPath string, since, until time.Time) {
	if ts, err := storageSummary(cfgPath, since, until); err == nil && len(ts) > 0 {
		printStorage(w, ts)
	}
}

func runStorageReport(cfgPath string, args []string) error {
	fs := flags("report storage", &cfgPath)
	since := fs.String("since", "7d", "start of the window: a span back from now (7d, 36h) or a date")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	now := time.Now()
	from, err := report.ParseSince(*since, now)
	if err != nil {
		return usageError{"--since: " + err.Error()}
	}
	ts, err := storageSummary(cfgPath, from, now.Add(time.Second))
	if err != nil {
		return err
	}
	if *asJSON {
		if ts == nil {
			ts = []homes.TeamStorage{}
		}
		return json.NewEncoder(os.Stdout).Encode(ts)
	}
	if len(ts) == 0 {
		fmt.Println("no storage samples in the window (the homes pass records them every homes.interval on the host its role names)")
		return nil
	}
	printStorage(os.Stdout, ts)
	return nil
}
