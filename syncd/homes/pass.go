package homes

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Action is one thing a pass did (or, in a plan, would do).
type Action struct {
	Kind   string `json:"kind"` // create-home, adopt-home, keep-home, archive-home, create-project, fix-project, set-quota, over-limit, quota-capped, refused, error
	Name   string `json:"name"` // user or team
	Path   string `json:"path,omitempty"`
	Detail string `json:"detail,omitempty"`
	Done   bool   `json:"done"`
}

func (a Action) String() string {
	verb := a.Kind
	if !a.Done && a.Kind != "refused" && a.Kind != "error" && a.Kind != "over-limit" && a.Kind != "keep-home" && a.Kind != "quota-capped" {
		verb = "would " + verb
	}
	s := verb + " " + a.Name
	if a.Path != "" {
		s += " " + a.Path
	}
	if a.Detail != "" {
		s += ": " + a.Detail
	}
	return s
}

// Result is what a pass found and did.
type Result struct {
	At      time.Time        `json:"at"`
	DryRun  bool             `json:"dry_run"`
	Actions []Action         `json:"actions"`
	Homes   int              `json:"homes"`    // active users' homes in place
	Teams   int              `json:"projects"` // project directories in place
	Refused int              `json:"refused"`
	Errors  int              `json:"errors"`
	Driver  string           `json:"driver,omitempty"`
	Usage   map[string]Usage `json:"usage,omitempty"`
	Targets []Target         `json:"targets,omitempty"`
	// UsagePending counts limits set this pass whose use the storage did
	// not report yet (or could not be read again after setting them):
	// the loop runs the pass again soon, so the figures left for the
	// nodes (WriteShared) and mylimits catch up within minutes, not at
	// the next hourly sample.
	UsagePending int `json:"usage_pending,omitempty"`
}

// Changed counts the actions that changed something.
func (r *Result) Changed() int {
	n := 0
	for _, a := range r.Actions {
		switch a.Kind {
		case "create-home", "archive-home", "create-project", "fix-project", "set-quota":
			n++
		}
	}
	return n
}

// Options change how a pass runs.
type Options struct {
	DryRun bool
	Log    logrus.FieldLogger
	Runner Runner
	Now    func() time.Time
	// Sample records the usage read in the state file's samples (the
	// hourly pass on the storage role does).
	Sample bool
}

type pass struct {
	cfg    Config
	o      Options
	st     *State
	res    *Result
	now    time.Time
	roots  map[string]int // root -> fd (-1: cannot be used this pass)
	seen   map[string]bool
	driver Driver
}

// Pass reconciles homes, project directories and quotas with the users
// and groups of c. Errors of the storage are in the result (kind
// "error"), never fatal: the returned error is only for a state file
// that cannot be read or written.
func Pass(ctx context.Context, cfg Config, c *snapshot.Contents, o Options) (*Result, error) {
	if o.Log == nil {
		l := logrus.New()
		l.SetLevel(logrus.PanicLevel)
		o.Log = l
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	st, err := LoadState(cfg.StateFile)
	if err != nil {
		return nil, err
	}
	p := &pass{cfg: cfg, o: o, st: st, now: o.Now().UTC(), roots: map[string]int{}, seen: map[string]bool{}}
	p.res = &Result{At: p.now, DryRun: o.DryRun}
	defer func() {
		for _, fd := range p.roots {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	if p.driver, err = NewDriver(cfg.Quota, o.Runner); err != nil {
		p.errorf("", "", "quota driver: %v", err)
	}
	if p.driver != nil {
		p.res.Driver = p.driver.Name()
	}
	targets := p.homes(c)
	targets = append(targets, p.projects(c)...)
	p.res.Targets = targets
	if p.driver != nil && ctx.Err() == nil {
		p.quotas(ctx, c, targets)
	}
	for path := range st.Creating {
		var lst unix.Stat_t
		if err := unix.Lstat(path, &lst); errors.Is(err, unix.ENOENT) {
			delete(st.Creating, path) // announced, never begun
		}
	}
	for path, reason := range st.Refused {
		if !p.seen[path] {
			delete(st.Refused, path) // fixed: a new refusal is logged again
			_ = reason
		}
	}
	if o.DryRun {
		return p.res, nil
	}
	if err := st.Save(cfg.StateFile); err != nil {
		return p.res, fmt.Errorf("homes: cannot save state file %s: %w", cfg.StateFile, err)
	}
	return p.res, nil
}

func (p *pass) add(a Action) { p.res.Actions = append(p.res.Actions, a) }

func (p *pass) errorf(name, pth, format string, a ...any) {
	p.res.Errors++
	msg := fmt.Sprintf(format, a...)
	p.add(Action{Kind: "error", Name: name, Path: pth, Detail: msg})
	p.o.Log.WithFields(logrus.Fields{"name": name, "path": pth}).Error("homes: " + msg)
}

// refused records a refusal, logged once per path and reason.
func (p *pass) refused(name string, err error) {
	var r *refusal
	if !errors.As(err, &r) {
		p.errorf(name, "", "%v", err)
		return
	}
	p.res.Refused++
	p.seen[r.Path] = true
	p.add(Action{Kind: "refused", Name: name, Path: r.Path, Detail: r.Reason})
	if p.st.Refused[r.Path] != r.Reason {
		p.st.Refused[r.Path] = r.Reason
		p.o.Log.WithFields(logrus.Fields{"name": name, "path": r.Path, "reason": r.Reason}).Warn("homes: refused; nothing done there")
	}
}

// capped records a limit from the identity provider above the cap,
// logged once per user and value (again when either changes).
func (p *pass) capped(t Target, asked, got uint64) {
	key := "quota:" + t.Key()
	what, option := "home", "user_max"
	if t.Kind == "team" {
		what, option = "project", "team_max"
	}
	why := fmt.Sprintf("the identity provider's %s quota %s is above the cap %s (homes.quota.%s, else the configured hard limit): %s applied", what, FormatSize(asked), FormatSize(got), option, FormatSize(got))
	p.seen[key] = true
	p.add(Action{Kind: "quota-capped", Name: t.Name, Path: t.Path, Detail: why})
	if p.st.Refused[key] != why {
		p.st.Refused[key] = why
		p.o.Log.WithFields(logrus.Fields{"user": t.Name, "asked": FormatSize(asked), "applied": FormatSize(got)}).Warn("homes: " + why)
	}
}

// root returns the descriptor of the configured root holding p.
func (p *pass) root(roots []string, pth string) (string, int, error) {
	best := ""
	for _, r := range roots {
		if pth != r && within(pth, r) && len(r) > len(best) {
			best = r
		}
	}
	if best == "" {
		return "", -1, refuse(pth, "is outside the roots %s: syncd makes homes only there (homes.roots)", strings.Join(roots, ", "))
	}
	fd, ok := p.roots[best]
	if !ok {
		var err error
		fd, err = openRoot(best)
		if err != nil {
			p.roots[best] = -1
			return best, -1, err
		}
		p.roots[best] = fd
	}
	if fd < 0 {
		return best, -1, fmt.Errorf("root %s cannot be used this pass (see the error above)", best)
	}
	return best, fd, nil
}

func (p *pass) homes(c *snapshot.Contents) []Target {
	inSnapshot := map[string]bool{}
	byPath := map[string][]string{}
	for _, u := range c.Users {
		inSnapshot[u.Name] = true
		byPath[u.Home] = append(byPath[u.Home], u.Name)
	}
	users := append([]snapshot.User(nil), c.Users...)
	sort.Slice(users, func(i, j int) bool { return users[i].Name < users[j].Name })
	var targets []Target
	rootErr := map[string]bool{}
	p.markCreating(users)
	for _, u := range users {
		rec := p.st.Homes[u.Name]
		if rec != nil && rec.MissingSince != nil && rec.UID == u.UID {
			rec.MissingSince = nil // back before the grace ran out
		}
		if !u.Active {
			continue // a disabled user's home is untouched
		}
		if others := byPath[u.Home]; len(others) > 1 {
			p.refused(u.Name, refuse(u.Home, "is the home of %s at once: none of them gets it", strings.Join(others, ", ")))
			continue
		}
		if outer := enclosing(byPath, u.Home); outer != "" {
			p.refused(u.Name, refuse(u.Home, "is inside %s, the home of %s", outer, strings.Join(byPath[outer], ", ")))
			continue
		}
		root, fd, err := p.root(p.cfg.Roots, u.Home)
		if err != nil {
			var r *refusal
			if errors.As(err, &r) && r.Path == u.Home {
				p.refused(u.Name, err)
			} else if !rootErr[root] {
				rootErr[root] = true
				p.errorf(u.Name, root, "home root unusable: %v", err)
			}
			continue
		}
		if ok := p.home(fd, root, u); ok {
			p.res.Homes++
			targets = append(targets, Target{Kind: "user", Name: u.Name, ID: u.UID, Path: u.Home, Root: root})
		}
	}
	p.removed(inSnapshot)
	return targets
}

// markCreating records, in one write of the ledger, every active user's
// home that is missing now: the ledger must name a home before its mkdir
// (an interrupted pass finishes what it began, and only that), and one
// write per home would make a first pass over 10,000 users 10,000 fsyncs
// of a growing file. Entries are dropped once the home is made, and at
// the end for paths that were not made at all.
func (p *pass) markCreating(users []snapshot.User) {
	if p.o.DryRun {
		return
	}
	var added []string
	for _, u := range users {
		if !u.Active || p.st.Creating[u.Home] == u.UID {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(u.Home, &st); errors.Is(err, unix.ENOENT) {
			p.st.Creating[u.Home] = u.UID
			added = append(added, u.Home)
		}
	}
	if len(added) > 0 {
		if err := p.st.Save(p.cfg.StateFile); err != nil {
			for _, h := range added {
				delete(p.st.Creating, h) // home() tries its own write, and makes nothing without it
			}
		}
	}
}

// enclosing returns another user's home that contains h ("" when none):
// h's ancestors looked up among the homes, O(depth) per home.
func enclosing(homes map[string][]string, h string) string {
	for d := path.Dir(h); d != "/" && d != "."; d = path.Dir(d) {
		if _, ok := homes[d]; ok {
			return d
		}
	}
	return ""
}

// home makes sure u's home exists and is u's; true when it is in place
// (or would be, in a plan).
func (p *pass) home(rootFD int, root string, u snapshot.User) bool {
	comps, err := relComponents(root, u.Home)
	if err != nil {
		p.refused(u.Name, err)
		return false
	}
	parent, err := walkParents(rootFD, root, comps, p.o.DryRun)
	if err != nil {
		p.refused(u.Name, err)
		return false
	}
	if parent < 0 { // dry run, parents missing
		p.add(Action{Kind: "create-home", Name: u.Name, Path: u.Home, Detail: p.createDetail(u)})
		return true
	}
	defer unix.Close(parent)
	name := comps[len(comps)-1]
	st, exists, err := entry(parent, name)
	if err != nil {
		p.errorf(u.Name, u.Home, "stat: %v", err)
		return false
	}
	if exists && !isDir(st) {
		p.refused(u.Name, refuse(u.Home, "is %s, not a directory: nothing is made there", kind(st)))
		return false
	}
	halfMade := exists && st.Uid == 0 && p.st.Creating[u.Home] == u.UID
	if exists && !halfMade {
		if st.Uid != u.UID {
			who := ""
			for n, r := range p.st.Homes {
				if r.UID == st.Uid && n != u.Name {
					who = " (" + n + "'s)"
				}
			}
			p.refused(u.Name, refuse(u.Home, "exists, owned by uid %d%s, not %s's uid %d: another user's or an admin's directory; chown it to adopt it", st.Uid, who, u.Name, u.UID))
			return false
		}
		if rec := p.st.Homes[u.Name]; rec == nil || rec.UID != u.UID || rec.Path != u.Home {
			p.add(Action{Kind: "adopt-home", Name: u.Name, Path: u.Home, Detail: "exists, owned by the user: recorded, contents untouched", Done: !p.o.DryRun})
			if !p.o.DryRun {
				p.st.Homes[u.Name] = &HomeRecord{UID: u.UID, GID: u.GID, Path: u.Home, Root: root}
			}
		}
		return true
	}
	if p.o.DryRun {
		p.add(Action{Kind: "create-home", Name: u.Name, Path: u.Home, Detail: p.createDetail(u)})
		return true
	}
	if p.st.Creating[u.Home] != u.UID {
		// Not announced by markCreating (made after it looked): record it
		// now, before the mkdir, so an interrupted pass can finish it.
		p.st.Creating[u.Home] = u.UID
		if err := p.st.Save(p.cfg.StateFile); err != nil {
			p.errorf(u.Name, u.Home, "cannot record the home being made in %s: %v", p.cfg.StateFile, err)
			return false
		}
	}
	if err := p.create(parent, name, u); err != nil {
		p.errorf(u.Name, u.Home, "making the home: %v", err)
		return false
	}
	delete(p.st.Creating, u.Home)
	now := p.now
	p.st.Homes[u.Name] = &HomeRecord{UID: u.UID, GID: u.GID, Path: u.Home, Root: root, CreatedAt: &now}
	p.add(Action{Kind: "create-home", Name: u.Name, Path: u.Home, Detail: p.createDetail(u), Done: true})
	p.o.Log.WithFields(logrus.Fields{"user": u.Name, "path": u.Home}).Info("homes: made home")
	return true
}

func (p *pass) createDetail(u snapshot.User) string {
	d := fmt.Sprintf("%d:%d mode %04o", u.UID, u.GID, p.cfg.mode)
	if p.cfg.Skel != "" {
		d += ", " + p.cfg.Skel + " copied"
	}
	return d
}

func (p *pass) create(parent int, name string, u snapshot.User) error {
	fd, err := makeDir(parent, name)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if p.cfg.Skel != "" {
		s, err := unix.Open(p.cfg.Skel, dirFlags, 0)
		if err != nil {
			return fmt.Errorf("skel %s: %w (set homes.skel = \"none\" to copy nothing)", p.cfg.Skel, err)
		}
		n := 0
		err = copySkel(s, fd, int(u.UID), int(u.GID), 0, &n)
		unix.Close(s)
		if err != nil {
			return fmt.Errorf("copying %s: %w", p.cfg.Skel, err)
		}
	}
	return fixOwner(fd, int(u.UID), int(u.GID), p.cfg.mode)
}

// removed handles homes of users no longer in the snapshot: kept, or
// archived once removed_grace has passed. Never deleted.
func (p *pass) removed(inSnapshot map[string]bool) {
	names := make([]string, 0, len(p.st.Homes))
	for n := range p.st.Homes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rec := p.st.Homes[n]
		if inSnapshot[n] || rec.ArchivedTo != "" {
			continue
		}
		if rec.MissingSince == nil {
			t := p.now
			if p.o.DryRun {
				rec = &HomeRecord{UID: rec.UID, GID: rec.GID, Path: rec.Path, Root: rec.Root}
			}
			rec.MissingSince = &t
		}
		due := rec.MissingSince.Add(p.cfg.grace)
		if p.cfg.Removed != "archive" {
			p.add(Action{Kind: "keep-home", Name: n, Path: rec.Path, Detail: "removed at the identity provider since " + rec.MissingSince.Format(time.RFC3339) + "; kept in place (homes.removed = \"keep\")"})
			continue
		}
		if p.now.Before(due) {
			p.add(Action{Kind: "keep-home", Name: n, Path: rec.Path, Detail: "removed at the identity provider since " + rec.MissingSince.Format(time.RFC3339) + "; archived after " + due.Format(time.RFC3339)})
			continue
		}
		p.archive(n, rec)
	}
}

func (p *pass) archive(n string, rec *HomeRecord) {
	_, fd, err := p.root([]string{rec.Root}, rec.Path)
	if err != nil {
		p.errorf(n, rec.Path, "cannot archive: %v", err)
		return
	}
	comps, err := relComponents(rec.Root, rec.Path)
	if err != nil {
		p.refused(n, err)
		return
	}
	dest := strings.Join(comps, "_") + "-" + p.now.Format("20060102T150405Z")
	destPath := path.Join(rec.Root, p.cfg.ArchiveDir, dest)
	if p.o.DryRun {
		p.add(Action{Kind: "archive-home", Name: n, Path: rec.Path, Detail: "to " + destPath})
		return
	}
	parent, err := walkParents(fd, rec.Root, comps, true)
	if err != nil || parent < 0 {
		if err != nil {
			p.refused(n, err)
		}
		return
	}
	defer unix.Close(parent)
	name := comps[len(comps)-1]
	st, exists, err := entry(parent, name)
	if err != nil || !exists {
		rec.ArchivedTo = "(gone before archiving)"
		return
	}
	if !isDir(st) || st.Uid != rec.UID {
		p.refused(n, refuse(rec.Path, "is %s owned by uid %d, not the removed user's home (uid %d): not archived", kind(st), st.Uid, rec.UID))
		return
	}
	if err := unix.Mkdirat(fd, p.cfg.ArchiveDir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		p.errorf(n, rec.Path, "cannot make the archive directory: %v", err)
		return
	}
	afd, err := unix.Openat(fd, p.cfg.ArchiveDir, dirFlags, 0)
	if err != nil {
		p.refused(n, refuse(path.Join(rec.Root, p.cfg.ArchiveDir), "cannot be opened without following a link: %v", err))
		return
	}
	defer unix.Close(afd)
	var ast unix.Stat_t
	if err := unix.Fstat(afd, &ast); err != nil || ast.Uid != 0 || ast.Mode&0o077 != 0 {
		p.refused(n, refuse(path.Join(rec.Root, p.cfg.ArchiveDir), "must be root's with mode 0700"))
		return
	}
	if err := unix.Renameat2(parent, name, afd, dest, unix.RENAME_NOREPLACE); err != nil {
		p.errorf(n, rec.Path, "archiving to %s: %v", destPath, err)
		return
	}
	rec.ArchivedTo = destPath
	p.add(Action{Kind: "archive-home", Name: n, Path: rec.Path, Detail: "to " + destPath, Done: true})
	p.o.Log.WithFields(logrus.Fields{"user": n, "path": rec.Path, "to": destPath}).Info("homes: archived the home of a removed user")
}

var projectName = regexp.MustCompile(`^[a-z0-9_][a-z0-9_.-]*$`)

// teams are the groups that get a project directory, with its name.
func (p *pass) teams(c *snapshot.Contents) []struct {
	g   snapshot.Group
	dir string
} {
	var out []struct {
		g   snapshot.Group
		dir string
	}
	named := map[string]bool{}
	for _, g := range p.cfg.Projects.Groups {
		named[g] = true
	}
	for _, g := range c.Groups {
		dir := ""
		if named[g.Name] {
			dir = g.Name
		} else if p.cfg.pattern != nil {
			m := p.cfg.pattern.FindStringSubmatch(g.Name)
			switch {
			case m == nil:
			case len(m) > 1:
				dir = m[1]
			default:
				dir = g.Name
			}
		}
		if dir == "" {
			continue
		}
		out = append(out, struct {
			g   snapshot.Group
			dir string
		}{g, dir})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out
}

func (p *pass) projects(c *snapshot.Contents) []Target {
	ts := p.teams(c)
	if len(ts) == 0 {
		return nil
	}
	root := p.cfg.Projects.Root
	fd, ok := p.roots[root]
	if !ok {
		var err error
		if fd, err = openRoot(root); err != nil {
			p.roots[root] = -1
			p.errorf("", root, "project root unusable: %v", err)
			return nil
		}
		p.roots[root] = fd
	}
	if fd < 0 {
		return nil
	}
	var targets []Target
	for _, t := range ts {
		pth := path.Join(root, t.dir)
		if !projectName.MatchString(t.dir) || t.dir == ".." {
			p.refused(t.g.Name, refuse(pth, "%q is not a directory name (a-z, 0-9, _ . -)", t.dir))
			continue
		}
		if p.project(fd, t.g, t.dir, pth) {
			p.res.Teams++
			targets = append(targets, Target{Kind: "team", Name: t.g.Name, ID: t.g.GID, Path: pth, Root: root})
		}
	}
	return targets
}

func (p *pass) project(rootFD int, g snapshot.Group, name, pth string) bool {
	st, exists, err := entry(rootFD, name)
	if err != nil {
		p.errorf(g.Name, pth, "stat: %v", err)
		return false
	}
	want := p.cfg.projectMode
	detail := fmt.Sprintf("root:%d mode %04o", g.GID, want)
	if !exists {
		if p.o.DryRun {
			p.add(Action{Kind: "create-project", Name: g.Name, Path: pth, Detail: detail})
			return true
		}
		fd, err := makeDir(rootFD, name)
		if err != nil {
			p.errorf(g.Name, pth, "making the project directory: %v", err)
			return false
		}
		defer unix.Close(fd)
		if err := fixOwner(fd, 0, int(g.GID), want); err != nil {
			p.errorf(g.Name, pth, "making the project directory: %v", err)
			return false
		}
		p.add(Action{Kind: "create-project", Name: g.Name, Path: pth, Detail: detail, Done: true})
		p.o.Log.WithFields(logrus.Fields{"group": g.Name, "path": pth}).Info("homes: made project directory")
		return true
	}
	if !isDir(st) {
		p.refused(g.Name, refuse(pth, "is %s, not a directory", kind(st)))
		return false
	}
	if st.Uid != 0 || st.Gid != g.GID {
		p.refused(g.Name, refuse(pth, "is owned by %d:%d, not root:%d (the team's gid): chown it to adopt it", st.Uid, st.Gid, g.GID))
		return false
	}
	if st.Mode&0o7777 != want {
		if p.o.DryRun {
			p.add(Action{Kind: "fix-project", Name: g.Name, Path: pth, Detail: fmt.Sprintf("mode %04o -> %04o", st.Mode&0o7777, want)})
			return true
		}
		fd, err := unix.Openat(rootFD, name, dirFlags, 0)
		if err == nil {
			var st2 unix.Stat_t
			if err = unix.Fstat(fd, &st2); err == nil && (st2.Uid != 0 || st2.Gid != g.GID) {
				err = errors.New("changed owner")
			}
			if err == nil {
				err = unix.Fchmod(fd, want)
			}
			unix.Close(fd)
		}
		if err != nil {
			p.errorf(g.Name, pth, "setting mode %04o: %v", want, err)
			return true
		}
		p.add(Action{Kind: "fix-project", Name: g.Name, Path: pth, Detail: fmt.Sprintf("mode %04o -> %04o", st.Mode&0o7777, want), Done: true})
	}
	return true
}

// quotas applies each target's limit where the storage (or, for a
// driver that cannot read limits, the ledger) differs from it.
func (p *pass) quotas(ctx context.Context, c *snapshot.Contents, targets []Target) {
	groupsOf := map[string][]string{}
	fromIdP := map[string]uint64{} // by Target.Key
	for _, u := range c.Users {
		if u.Quota > 0 {
			fromIdP["user:"+u.Name] = u.Quota
		}
	}
	for _, g := range c.Groups {
		if g.Quota > 0 {
			fromIdP["team:"+g.Name] = g.Quota
		}
	}
	for _, g := range c.Groups {
		for _, m := range g.Members {
			groupsOf[m] = append(groupsOf[m], g.Name)
		}
	}
	usage, err := p.driver.Usage(ctx, targets)
	if err != nil {
		p.errorf("", "", "reading quotas (%s): %v", p.driver.Name(), err)
	}
	p.res.Usage = usage
	for _, t := range targets {
		if ctx.Err() != nil {
			p.errorf(t.Name, t.Path, "pass timed out before this quota (homes.timeout)")
			return
		}
		var want Limit
		if t.Kind == "user" {
			want = p.cfg.Quota.userLimit(groupsOf[t.Name])
		} else {
			want = p.cfg.Quota.teamLimit(t.Name)
		}
		if asked := fromIdP[t.Key()]; asked > 0 {
			var capped uint64
			if t.Kind == "user" {
				want, capped = p.cfg.Quota.attributeLimit(want, asked)
			} else {
				want, capped = p.cfg.Quota.teamAttributeLimit(want, asked)
			}
			if capped > 0 {
				p.capped(t, capped, want.Hard)
			}
		}
		prev, had := p.st.Quotas[t.Key()]
		u, known := usage[t.Key()]
		var need bool
		switch {
		case known:
			need = !sameLimit(p.driver, u, want)
		case want == (Limit{}) && !had:
			need = false
		default:
			need = !had || prev.Limit != want || prev.Path != t.Path
		}
		if known && want.Hard > 0 && u.Used > want.Hard {
			p.add(Action{Kind: "over-limit", Name: t.Name, Path: t.Path, Detail: fmt.Sprintf("uses %s, above the hard limit %s: new writes fail until they delete files; nothing is deleted for them", FormatSize(u.Used), FormatSize(want.Hard))})
		}
		if !need {
			continue
		}
		detail := want.String()
		if had {
			detail += " (was " + prev.Limit.String() + ")"
		}
		if p.o.DryRun {
			p.add(Action{Kind: "set-quota", Name: t.Name, Path: t.Path, Detail: detail + p.lines(t, want)})
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := p.driver.Set(qctx, t, want)
		cancel()
		if err != nil {
			p.errorf(t.Name, t.Path, "setting quota (%s): %v", detail, err)
			continue
		}
		p.st.Quotas[t.Key()] = AppliedLimit{Path: t.Path, Limit: want, At: p.now}
		p.add(Action{Kind: "set-quota", Name: t.Name, Path: t.Path, Detail: detail, Done: true})
		p.o.Log.WithFields(logrus.Fields{"target": t.Key(), "path": t.Path, "limit": want.String()}).Info("homes: quota set")
	}
	if set := kindsDone(p.res.Actions, "set-quota"); set > 0 && !p.o.DryRun {
		// Show the limits as the storage now holds them.
		u2, err := p.driver.Usage(ctx, targets)
		if err != nil {
			// Not a failure of the limits (they are set), but the figures
			// the nodes' mylimits reads (WriteShared) would lack them: the
			// pass is tried again soon, as after an error.
			p.o.Log.WithError(err).Warn("homes: reading the storage's use after setting quotas failed; reading it again shortly")
			p.res.UsagePending = set
		} else if u2 != nil {
			usage = u2
			p.res.Usage = u2
			for _, t := range targets {
				if _, applied := p.st.Quotas[t.Key()]; applied {
					if _, ok := u2[t.Key()]; !ok {
						p.res.UsagePending++
					}
				}
			}
		}
	}
	if p.o.Sample && !p.o.DryRun {
		for _, t := range targets {
			if u, ok := usage[t.Key()]; ok && t.Kind == "team" {
				p.st.Samples = append(p.st.Samples, Sample{At: p.now, Kind: t.Kind, Name: t.Name, Used: u.Used, Soft: u.Soft, Hard: u.Hard})
			}
		}
	}
}

// lines shows a plan the command lines a driver would run.
func (p *pass) lines(t Target, l Limit) string {
	type liner interface {
		Lines(Target, Limit) ([][]string, error)
	}
	d, ok := p.driver.(liner)
	if !ok {
		return ""
	}
	ls, err := d.Lines(t, l)
	if err != nil {
		return " (" + err.Error() + ")"
	}
	var s []string
	for _, argv := range ls {
		s = append(s, strings.Join(argv, " "))
	}
	return "; runs: " + strings.Join(s, "; ")
}

func kindsDone(as []Action, kind string) int {
	n := 0
	for _, a := range as {
		if a.Kind == kind && a.Done {
			n++
		}
	}
	return n
}
