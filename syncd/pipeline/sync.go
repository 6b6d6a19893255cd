package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/scimbridge/scimbridge/syncd/filelock"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/explain"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// Hook is a step after a commit: it gets the config and the live
// snapshot's path.
type Hook func(ctx context.Context, cfg *config.Config, cachePath string) error

// AfterCommit runs after every committed snapshot, in order, in `run`
// and `sync --once` (not for dry runs). The Slurm reconciler appends its
// step from package main's init(). A failing hook is logged and recorded
// in the status file; the snapshot stays committed.
var AfterCommit []Hook

// Version is syncd's version, for the status file (set by package main).
var Version = "dev"

// ExitError is a failure that asks for a specific exit status (a refused
// commit is 3); package main turns it into the process's exit status.
type ExitError struct {
	Code int
	Err  error
}

func (e ExitError) Error() string { return e.Err.Error() }
func (e ExitError) Unwrap() error { return e.Err }

// Syncer runs the pipeline: source -> validate -> policy -> snapshot.
type Syncer struct {
	cfg     *config.Config
	src     source.Source
	log     logrus.FieldLogger
	metrics *metrics.Metrics // nil: none
	// rejectionsChanged: this read's rejections differ from the
	// previous read's (record.go).
	rejectionsChanged bool
}

// NewSyncer is the pipeline over src; m may be nil (no metrics).
func NewSyncer(cfg *config.Config, src source.Source, log logrus.FieldLogger, m *metrics.Metrics) *Syncer {
	return &Syncer{cfg: cfg, src: src, log: log, metrics: m}
}

// Opts are one attempt's switches.
type Opts struct {
	DryRun bool
	Force  bool
	// Out receives the diff and rejections (sync --once); nil: log only.
	Out io.Writer
	// Dir, when set, is the directory already read (the daemon's
	// incremental read, begun at Contact): nothing is fetched.
	Dir     *source.Directory
	Contact time.Time
	// Reconcile: this full read checks the incrementally kept snapshot;
	// any difference from it is counted and logged at error level
	// before the commit fixes it.
	Reconcile bool
	// PinnedSaid, when set, is the digest of the last "would change"
	// logged while pinned: the same change is not logged again.
	PinnedSaid *string
	// Records, when set, writes the explain record in the background
	// (the daemon: off the path from the commit to the published
	// manifest; record.go); nil: before Once returns.
	Records *Background
	// Live, when set, keeps the live snapshot's contents between
	// attempts (the daemon): used while the file stores their digest
	// (live.go), updated after each commit.
	Live *LiveKeep
}

// Outcome is what one attempt did.
type Outcome struct {
	Result string
	// Contact is when the successful read of the source began (zero:
	// none); Held is what the removal guard held back.
	Contact time.Time
	Held    *commit.Held
	Wrote   bool // a new snapshot was written
	// Diff is from the live snapshot to the read. Nil after sync --once
	// wrote into an empty cache: it was every record (printed in the
	// report with Opts.Out), let go before the write.
	Diff  *commit.Diff
	Valid *validate.Result
	Meta  snapshot.Meta
	// Dir is the directory as fetched (for the explain record); nil
	// once an attempt without Opts.Records (sync --once) began encoding
	// its record beside the write (prepareRecord).
	Dir *source.Directory
	// Took is how long each stage of this attempt took.
	Took Timings
	// Update is how the snapshot was written (in place or whole, the
	// NSS index patched or laid out again): the benchmark reports it.
	Update snapshot.UpdateInfo
	// rest is the explain record encoded beside the write (joined when
	// the attempt returns), which Once finishes with the serial the
	// write assigned (prepareRecord).
	rest *explain.Rest
}

// Timings are one attempt's stages: loading the live snapshot, reading
// the source (zero when the daemon read it incrementally), validating,
// the diff and policy, and writing (write, verify, rename).
type Timings struct {
	Live, Read, Validate, Diff, Write time.Duration
	// LiveKept: the live contents were the ones kept in memory
	// (Opts.Live), not loaded from the file.
	LiveKept bool
	// CPU is the process's CPU time from the start of the attempt to
	// the end of the diff (everything before the write).
	CPU time.Duration
}

// Once fetches, validates and (policy permitting) commits. The returned
// error is the reason nothing new was committed; the status file is
// updated unless this is a dry run.
func (s *Syncer) Once(ctx context.Context, o Opts) (*Outcome, error) {
	st := s.prevStatus()
	st.Version, st.Source, st.CachePath = Version, s.src.Name(), s.cfg.CachePath
	st.LastAttempt = time.Now().UTC()
	st.Full = o.Dir == nil
	out, err := s.attempt(ctx, o, st)
	if o.DryRun {
		return out, err
	}
	if err == nil {
		o.Records.run(func() { s.writeRecord(out, o.Records.builder()) })
	} else if out != nil && out.rest != nil {
		out.rest.Close() // encoded beside a write that failed
		out.rest = nil
	}
	if err != nil && ctx.Err() != nil {
		// Stopped (SIGTERM) mid-attempt: that is not a failure of the
		// source, so the status keeps the last real outcome.
		return out, err
	}
	if err != nil {
		st.ConsecutiveFailures++
		st.LastError = err.Error()
		var ref *commit.Refusal
		if errors.As(err, &ref) {
			st.LastResult = commit.Refused
		} else {
			st.LastResult = commit.Failed
		}
	} else {
		st.ConsecutiveFailures = 0
		st.LastResult = out.Result
		st.LastSuccess = st.LastAttempt
		st.LastError = ""
		if out.Wrote {
			// When the snapshot was made, not when the attempt began
			// (a read can take minutes).
			st.LastCommit = out.Meta.CreatedAt.UTC()
			if st.LastCommit.IsZero() {
				st.LastCommit = time.Now().UTC()
			}
		}
		s.touch(out.Contact)
		st.LastSourceContact = out.Contact.UTC()
	}
	st.Held, st.HeldUsers, st.HeldGroups = "", 0, 0
	if out != nil && out.Held != nil {
		st.Held, st.HeldUsers, st.HeldGroups = out.Held.Summary(), len(out.Held.Users), len(out.Held.Groups)
	}
	if out != nil && out.Meta.Serial > 0 {
		st.Serial, st.Users, st.Groups = out.Meta.Serial, out.Meta.Users, out.Meta.Groups
	}
	if werr := commit.WriteStatus(s.cfg.StatusPath, st); werr != nil {
		s.log.WithError(werr).Error("syncd: cannot write the status file")
	}
	s.record(st, out, err)
	return out, err
}

func (s *Syncer) attempt(ctx context.Context, o Opts, st *commit.Status) (*Outcome, error) {
	ApplyHistory(s.cfg)
	cpu0 := ProcessCPU()
	var took Timings
	out := &Outcome{}
	defer func() { out.Took = took }()

	dir := o.Dir
	if dir != nil {
		// Read already (the daemon's incremental read).
		out.Contact = o.Contact
	} else {
		fctx, cancel := context.WithTimeout(ctx, s.cfg.FetchTimeout)
		t0 := time.Now()
		out.Contact = t0
		var err error
		dir, err = s.src.Fetch(fctx)
		cancel()
		st.FetchSeconds = time.Since(t0).Seconds()
		if s.metrics != nil {
			s.metrics.FetchDuration.Observe(st.FetchSeconds)
		}
		if err != nil {
			out.Contact = time.Time{}
			// The status keeps the live snapshot's serial and counts.
			out.Meta, _ = snapshot.ReadMeta(s.cfg.CachePath)
			return out, fmt.Errorf("fetch from %s: %w", s.src.Name(), err)
		}
	}
	fullStage(o, "read")
	// The live snapshot is read after the source, not before: a full
	// read's peak (its pages, the collector's slack) and the live
	// contents (about 50 MB at 100,000 users) do not add up.
	// sync --once's full read (no state kept for a next poll): a lower
	// memory limit from here on (memlimit.go, WriteMemoryLimit), set on
	// the heap the read left; put back below when the live snapshot is
	// loaded whole.
	putBack := func() {}
	if o.Live == nil && o.Dir == nil {
		putBack = lowerForWrite() // at most once, here or at the return
		defer putBack()
	}
	tl := time.Now()
	// ids: sync --once's full read into a live cache reads only what
	// validation reads of the live snapshot (validate.LiveIDs, from the
	// file's rows), and compares the rest with the file row by row after
	// validation (compareLive); the whole live contents are loaded only
	// when they differ (pipeline/doc.go, recmem12).
	var ids *validate.LiveIDs
	var live *snapshot.Contents
	var meta snapshot.Meta
	var kept bool
	var err error
	if o.Live == nil && o.Dir == nil && !o.Force {
		var x *validate.LiveIDs
		meta, err = snapshot.EachID(s.cfg.CachePath, func(users, groups int) { x = validate.NewLiveIDs(users, groups) },
			func(g *snapshot.Group) { x.Group(g) }, func(u *snapshot.User) { x.User(u) })
		if err == nil {
			ids = x
		} else if !errors.Is(err, fs.ErrNotExist) {
			meta = snapshot.Meta{} // Load below says why, as before
		}
	}
	if ids == nil && (err == nil || !errors.Is(err, fs.ErrNotExist)) {
		live, meta, kept, err = o.Live.load(s.cfg.CachePath)
	}
	took.Live, took.LiveKept = time.Since(tl), kept
	switch {
	case ids != nil:
	case errors.Is(err, fs.ErrNotExist):
		live = nil
	case err != nil:
		s.warnUnreadable(err)
		live = nil
	}
	out.Meta = meta
	out.Dir = dir
	if o.Live != nil && live != nil {
		// The daemon, the receiver: their FitMemoryLimit after the
		// attempt was for the live directory's size (memlimit.go). Users
		// against users: the live groups include the private groups
		// validation makes, which the source does not send.
		FitGrowth(len(live.Users), len(dir.Users))
	}
	// intoEmpty: sync --once (no daemon state) into an empty cache, a
	// whole write of everything read.
	intoEmpty := o.Live == nil && live == nil && ids == nil
	if live != nil {
		putBack() // the live contents held whole: the limit as it was
	}
	if o.Dir == nil {
		took.Read = time.Duration(st.FetchSeconds * float64(time.Second))
	}

	tv := time.Now()
	local, err := validate.ReadLocal(s.cfg.LocalPasswd, s.cfg.LocalGroup)
	if err != nil {
		return out, err
	}
	res := o.Live.validate(dir, validate.Options{
		UIDMin: s.cfg.UIDMin, UIDMax: s.cfg.UIDMax, GIDMin: s.cfg.GIDMin, GIDMax: s.cfg.GIDMax,
		HomeTemplate: s.cfg.HomeTemplate, DefaultShell: s.cfg.DefaultShell,
		AllowedShells: s.cfg.AllowedShells, PosixGroups: s.cfg.PosixGroups,
		UserNameDomains: s.cfg.UserNameDomains, UserNames: s.cfg.UserNames.Users(),
		PrivateGroups: s.cfg.PrivateGroups, Local: local, Source: s.src.Name(),
		MinID: s.cfg.MinID, SharedPrimaryGIDs: s.cfg.SharedPrimaryGIDs,
		ReservedNames: s.cfg.ReservedNames, HomeRoots: s.cfg.HomeRoots,
		Protected: s.cfg.ProtectedPaths(), Live: live, LiveIDs: ids, GroupNames: s.cfg.GroupNames.Policy(),
	}, o.Dir == nil, s.log)
	out.Valid = res
	if o.Live == nil {
		// sync --once reads and validates once: what the source and the
		// validator keep for the next poll is not held while it writes.
		validate.ForgetKeys()
		if f, ok := s.src.(source.Forgetter); ok {
			f.Forget()
		}
	}
	fullStage(o, "validated")
	// Into an empty cache the record's encoding (about 1.5 s of CPU at
	// 100,000 users) begins here, beside the report and the diff, which
	// then keep one core only (issue 18, Dec 3): nothing after this
	// changes what it reads (no live snapshot: no removal guard and no
	// associations carried). A refused directory closes it (Once).
	recording := false
	if intoEmpty && !o.DryRun {
		join := s.prepareRecord(out, o)
		defer func() { join(); fullStage(o, "recorded") }()
		recording = true
	}
	if err := ctx.Err(); err != nil { // SIGTERM during validation: the live snapshot stays
		return out, fmt.Errorf("stopped before committing (the live snapshot stays): %w", err)
	}
	st.Filtered, st.Rejected, st.RejectedReason = res.Filtered, len(res.Rejections), res.Counts()
	st.RejectedRecords, st.DroppedMembers = rejectedRecords(res), res.DroppedMembers
	s.logRejections(res, o)

	took.Validate = time.Since(tv)
	var d *commit.Diff
	// matched: the live snapshot's rows are the validated contents
	// (compareLive); live stays nil, its user count is next's.
	matched := false
	if ids != nil {
		ids = nil // validation was its only reader
		tc := time.Now()
		live, d, matched = s.compareLive(res.Contents, &meta, putBack)
		out.Meta = meta
		took.Live += time.Since(tc)
		fullStage(o, "compared")
	}
	td := time.Now()
	if d == nil {
		d = commit.Compute(live, res.Contents)
	}
	out.Diff = d
	st.Added, st.Changed, st.Removed = len(d.AddedUsers), len(d.ChangedUsers), len(d.RemovedUsers)

	policy := commit.Policy{MaxRemovalShare: s.cfg.MaxRemovalShare, Force: o.Force}
	if err := policy.Check(live, res.Contents, d); err != nil {
		if o.Out != nil {
			printReport(o.Out, d, res)
		}
		if !o.DryRun {
			s.log.WithError(err).Error("syncd: keeping the live snapshot")
		}
		return out, ExitError{3, err}
	}
	// The guard holds back deletions only (as disabled records); every
	// disable, change and removal from a group goes through now.
	if held := policy.Hold(live, res.Contents, d); held != nil {
		out.Held = held
		d = commit.Compute(live, res.Contents)
		out.Diff = d
		st.Added, st.Changed, st.Removed = len(d.AddedUsers), len(d.ChangedUsers), len(d.RemovedUsers)
		s.log.WithField("held_users", len(held.Users)).WithField("held_groups", len(held.Groups)).Warn("syncd: removal guard: " + held.Summary())
	}
	took.Diff, took.CPU = time.Since(td), ProcessCPU()-cpu0
	fullStage(o, "diffed")
	s.log.WithFields(logrus.Fields{
		"live_seconds": secs(took.Live), "validate_seconds": secs(took.Validate), "diff_seconds": secs(took.Diff),
		"users": len(res.Contents.Users), "groups": len(res.Contents.Groups), "rejected": len(res.Rejections),
		"filtered": res.Filtered, "fetch_seconds": fmt.Sprintf("%.2f", st.FetchSeconds),
	}).Info("syncd: " + d.Summary())
	if o.Out != nil {
		printReport(o.Out, d, res)
		if out.Held != nil {
			fmt.Fprintf(o.Out, "guard: %s\n", out.Held.Summary())
		}
	}
	result := commit.Committed
	if out.Held != nil && len(out.Held.Users)+len(out.Held.Groups) > 0 {
		result = commit.HeldBack
	}
	if o.DryRun {
		out.Result = commit.DryRun
		return out, nil
	}
	if p, _ := ReadPin(s.cfg.CachePath); p != nil && (live != nil || matched) {
		// A rollback: keep it until the admin resumes (syncd/history).
		s.logPinned(p, d, o)
		out.Result = ResultPinned
		return out, nil
	}
	if o.Reconcile && live != nil && !d.Empty() {
		s.reconcileDifference(d)
	}
	if (live != nil || matched) && d.Empty() && !o.Force {
		out.Result = commit.Unchanged
		if result == commit.HeldBack {
			out.Result = result
		}
		return out, nil
	}

	if intoEmpty {
		// The diff is every record, sorted by name (a copy of every
		// user, 12 MB at 100,000), and nothing reads it after the
		// report: it is not held through the write and the
		// verification (pipeline/doc.go, issue 18).
		out.Diff = nil
	}
	if matched {
		// Not reached: the rows matched, so the diff is empty and this
		// is not --force (compareLive).
		return out, errors.New("syncd: internal error: a write without the live snapshot it replaces")
	}
	commit.CarryAssociations(live, res.Contents)
	// The record is encoded while the snapshot is written (record.go),
	// joined when the attempt returns, however it returns.
	if !recording {
		join := s.prepareRecord(out, o)
		defer func() { join(); fullStage(o, "recorded") }()
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("stopped before committing (the live snapshot stays): %w", err)
	}
	unlock, err := LockCache(s.cfg.CachePath)
	if err != nil {
		return out, err
	}
	tw := time.Now()
	// The associations carried over keep the time they were read back
	// from slurmdbd (mylimits shows it), so the Slurm step need not write
	// the snapshot again just to record it.
	m, info, err := snapshot.UpdateWith(s.cfg.CachePath, live, res.Contents,
		snapshot.UpdateOptions{PrevDigest: o.Live.digest(), SlurmSyncedAt: meta.SlurmSyncedAt, Ctx: ctx,
			KeepIndex: o.Live != nil}) // the daemon, the receiver: the next commit patches this file's index
	out.Update = info
	took.Write = time.Since(tw)
	if err != nil {
		unlock()
		o.Live.forget()
		return out, err
	}
	o.Live.wrote(s.cfg.CachePath, res.Contents, m) // under the lock: the file is the one just written
	unlock()
	out.Meta, out.Result, out.Wrote = m, result, true
	s.log.WithFields(logrus.Fields{"serial": m.Serial, "users": m.Users, "groups": m.Groups, "path": s.cfg.CachePath,
		"write_seconds": secs(took.Write), "write": writeHow(info)}).Info("syncd: committed snapshot")
	if !m.NSSIndex {
		s.log.WithField("path", s.cfg.CachePath).Warn("syncd: the snapshot has no usable NSS index: the directory's names or ids crowd one hash bucket under every seed tried (a crafted directory, or a record of 64 KiB); lookups read SQL instead, about 2-3 times slower but correct; `syncd diff` shows what changed")
	}
	for i, hook := range AfterCommit {
		if err := hook(ctx, s.cfg, s.cfg.CachePath); err != nil {
			s.log.WithError(err).WithField("hook", i).Error("syncd: after-commit step failed")
			st.AfterCommitError = err.Error()
		}
	}
	switch {
	case len(AfterCommit) == 0:
	case o.Live == nil:
		// A hook may have rewritten the snapshot (Slurm associations):
		// its meta is read again, alone. Reading the whole file back
		// (as the daemon does, below) cost sync --once at 100,000 users
		// 2.2 s of CPU and 176 MB of garbage for a serial and counts.
		if m2, err := snapshot.ReadMeta(s.cfg.CachePath); err == nil {
			out.Meta = m2
		}
	default:
		// A hook may have rewritten the snapshot (Slurm associations):
		// then its digest differs from what was kept and it is read
		// back (and kept); else the meta just written stands.
		if _, m2, kept, err := o.Live.load(s.cfg.CachePath); err == nil && !kept {
			out.Meta = m2
		}
	}
	return out, nil
}

// compareLive compares sync --once's validated contents with the live
// snapshot's rows, streamed from the file (snapshot.Matches), instead of
// loading the file whole and computing the diff. When the rows are
// next's it returns an empty diff and matched (no live contents: the
// policy of an empty diff reads none but their user count, next's);
// else (a difference, or a file that cannot be compared) the live
// snapshot loaded whole, as before, and a nil diff for the caller to
// compute. meta becomes the file's, as Load gives it. putBack puts back
// the memory limit the comparison ran under, before the whole load (the
// live contents, the diff and a write are the limit's usual load, not
// the comparison's); when they match the caller's deferred call does.
func (s *Syncer) compareLive(next *snapshot.Contents, meta *snapshot.Meta, putBack func()) (live *snapshot.Contents, d *commit.Diff, matched bool) {
	same, m, err := snapshot.Matches(s.cfg.CachePath, next)
	if err == nil && same {
		*meta = m
		return nil, &commit.Diff{}, true
	}
	putBack()
	live, *meta, err = snapshot.Load(s.cfg.CachePath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, false
	case err != nil:
		s.warnUnreadable(err)
		return nil, nil, false
	}
	return live, nil, false
}

// warnUnreadable says that the live snapshot is treated as absent.
func (s *Syncer) warnUnreadable(err error) {
	// An unreadable live snapshot must not block its own repair;
	// without it the policy can only refuse an empty directory.
	s.log.WithError(err).Warn("syncd: live snapshot unreadable; treating it as absent")
}

// logPinned says, while a rollback pins the live snapshot, what the
// source would change: once per distinct change when o.PinnedSaid keeps
// the last one said (the daemon), else every time.
func (s *Syncer) logPinned(p *Pin, d *commit.Diff, o Opts) {
	var b bytes.Buffer
	d.Print(&b)
	sum := sha256.Sum256(b.Bytes())
	digest := hex.EncodeToString(sum[:])
	e := s.log.WithFields(logrus.Fields{"serial": p.Serial, "rolled_back_to": p.RolledBackTo})
	if o.PinnedSaid != nil && *o.PinnedSaid == digest {
		e.Debug("syncd: pinned by a rollback; the source still differs as last logged (" + d.Summary() + ")")
		return
	}
	if o.PinnedSaid != nil {
		*o.PinnedSaid = digest
	}
	e.WithField("would_change", clip(b.String(), 4000)).
		Warn("syncd: pinned by a rollback; not committing what the source says (" + d.Summary() + "); `syncd resume` follows the source again")
}

// reconcileDifference reports what a reconcile's full read found that the
// incrementally kept snapshot lacks; the commit that follows fixes it.
func (s *Syncer) reconcileDifference(d *commit.Diff) {
	n := len(d.AddedUsers) + len(d.RemovedUsers) + len(d.ChangedUsers) +
		len(d.AddedGroups) + len(d.RemovedGroups) + len(d.ChangedGroups)
	if s.metrics != nil {
		s.metrics.ReconcileDifferences.Add(float64(n))
	}
	var b bytes.Buffer
	d.Print(&b)
	s.log.WithFields(logrus.Fields{"differences": n, "detail": clip(b.String(), 4000)}).
		Error("syncd: reconcile: the full read differs from the incrementally kept snapshot (" + d.Summary() + "); committing the full read fixes it. A change made at the source during the last seconds counts too; more than that is a change the incremental read missed")
}

// ProcessCPU is the CPU time (user and system) this process has used.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// clip is s cut to at most n bytes, marked when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// touch records a successful contact with the source in the live
// snapshot's mtime (the freshness every gate reads), after any rewrite
// of this attempt. No snapshot yet (a first directory refused): nothing
// to touch.
func (s *Syncer) touch(contact time.Time) {
	if contact.IsZero() {
		return
	}
	if err := snapshot.Touch(s.cfg.CachePath, contact); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.WithError(err).Error("syncd: cannot record the source contact time on the snapshot")
	}
}

// prevStatus is the last status, to carry last-success times forward.
func (s *Syncer) prevStatus() *commit.Status {
	st, err := commit.ReadStatus(s.cfg.StatusPath)
	if err != nil {
		st = &commit.Status{}
	}
	st.AfterCommitError = ""
	return st
}

func (s *Syncer) record(st *commit.Status, out *Outcome, err error) {
	m := s.metrics
	if m == nil {
		return
	}
	m.Syncs.WithLabelValues(st.LastResult).Inc()
	if st.LastResult == commit.Failed {
		m.Failures.Inc()
	}
	if out != nil && out.Valid != nil {
		m.SetRejections(out.Valid.Counts())
	}
	if !st.LastSuccess.IsZero() {
		m.LastSuccess.Set(float64(st.LastSuccess.Unix()))
	}
	if out != nil && out.Meta.Serial > 0 {
		m.Users.Set(float64(out.Meta.Users))
		m.Groups.Set(float64(out.Meta.Groups))
		m.SnapshotTime.Set(float64(out.Meta.CreatedAt.Unix()))
		m.SnapshotSerial.Set(float64(out.Meta.Serial))
	}
}

// printReport prints the diff, the rejections and a summary. Buffered:
// into an empty cache the report is a line per record (110,000 at
// 100,000 users), each its own write to stdout before (issue 18, Dec 3).
func printReport(out io.Writer, d *commit.Diff, res *validate.Result) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	d.Print(w)
	for _, r := range res.Rejections {
		fmt.Fprintf(w, "! rejected %s\n", r)
	}
	fmt.Fprintf(w, "%s; %d rejected, %d not in posix_groups\n", d.Summary(), len(res.Rejections), res.Filtered)
}

// LockCache serialises snapshot writers (the daemon, sync --once, the
// Slurm step) with an flock beside the snapshot.
func LockCache(cachePath string) (func(), error) {
	f, err := os.OpenFile(cachePath+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	unlock, err := filelock.Wait(context.Background(), f, 2*time.Minute)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s.lock: %w (another syncd writing?)", cachePath, err)
	}
	// No other writer runs now: a writer's temp file beside the
	// snapshot is one a killed writer left (kill -9, power loss).
	snapshot.RemoveStaleTemps(cachePath)
	return func() { unlock(); f.Close() }, nil
}

// fullStage marks a memory stage of a full read (o.Dir nil) for
// SYNCD_PPROF (snapshot.Stage).
func fullStage(o Opts, name string) {
	if o.Dir == nil {
		snapshot.MarkStage(name)
	}
}

// writeHow says how the writer wrote the snapshot, for the commit's log
// line: "whole (why)", or "in place" and its phases' wall times.
func writeHow(info snapshot.UpdateInfo) string {
	if !info.Incremental {
		return "whole (" + info.Fallback + ")"
	}
	var b strings.Builder
	b.WriteString("in place (index " + info.IndexLayout + "):")
	for _, p := range info.Phases {
		fmt.Fprintf(&b, " %s %.3f;", p.Name, p.Took.Seconds())
	}
	return strings.TrimSuffix(b.String(), ";")
}
