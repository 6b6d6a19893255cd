package slurm

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Phase orders the steps of a plan; see MakePlan.
type Phase int

const (
	// PhaseJobs first: a disabled user's pending job must not start while
	// the sacctmgr steps run.
	PhaseJobs Phase = iota + 1
	PhaseQOS
	PhaseAccounts
	PhaseAssociations
	PhaseAssocQOS
	PhaseDefaultAccount
	PhaseRemovals
	PhaseAccountRemovals
)

var phaseNames = map[Phase]string{
	PhaseQOS:             "QOS",
	PhaseAccounts:        "accounts",
	PhaseAssociations:    "add associations",
	PhaseAssocQOS:        "association QOS",
	PhaseDefaultAccount:  "default accounts",
	PhaseRemovals:        "removals",
	PhaseAccountRemovals: "remove empty accounts",
	PhaseJobs:            "jobs of disabled users",
}

func (p Phase) String() string { return phaseNames[p] }

// Step is one sacctmgr invocation.
type Step struct {
	Phase Phase
	// Bin is the program when it is not sacctmgr (scontrol, scancel);
	// Args then follow it directly.
	Bin  string
	Args []string // after `sacctmgr -i`
	Why  string
	// Removes counts the associations this step deletes (for the
	// removal guard).
	Removes int
	// Stdin is fed to the command: the file of `sacctmgr load
	// file=/dev/stdin` (load.go), printed in the plan as a here-document.
	Stdin string
}

// Command is the step as a shell command line (a load step with its file
// as a here-document: the plan is still what apply runs, to the byte).
func (s Step) Command(sacctmgr string) string {
	if s.Stdin != "" {
		return s.line(sacctmgr) + " <<'" + loadEOF + "'\n" + s.Stdin + loadEOF
	}
	return s.line(sacctmgr)
}

// Short is the command line without its here-document (for logs).
func (s Step) Short(sacctmgr string) string {
	if s.Stdin != "" {
		return s.line(sacctmgr) + fmt.Sprintf(" (%d lines on stdin)", strings.Count(s.Stdin, "\n"))
	}
	return s.line(sacctmgr)
}

func (s Step) line(sacctmgr string) string {
	parts := []string{sacctmgr, "-i"}
	if s.Bin != "" {
		parts = []string{s.Bin}
	}
	for _, a := range s.Args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// Plan is an ordered list of sacctmgr commands and notes for a human.
type Plan struct {
	Cluster  string
	Sacctmgr string
	Steps    []Step
	// Notes: drift, conflicts, held users, removals waiting for jobs.
	Notes []string
	// Conflicts are group mappings refused (two groups, one account).
	Conflicts []string
	// Managed counts the user associations on managed accounts now.
	Managed int
	// Blocks are the associations this plan blocks (MaxSubmitJobs=0), for
	// the ledger.
	Blocks []AssocKey
	// Held are the jobs this plan holds (disabled users), for the ledger.
	Held []string
	// Lint: slurm.conf settings the plan's caps need and lack (lint.go).
	Lint []LintFinding
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Steps) == 0 }

// Removals counts the associations the plan deletes.
func (p *Plan) Removals() int {
	n := 0
	for _, s := range p.Steps {
		n += s.Removes
	}
	return n
}

// String prints the plan as the exact commands apply runs, grouped by
// phase, with the notes as comments.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# slurm plan for cluster %s: %d sacctmgr command(s)\n", p.Cluster, len(p.Steps))
	for _, c := range p.Conflicts {
		fmt.Fprintf(&b, "# CONFLICT: %s\n", c)
	}
	for _, l := range p.Lint {
		fmt.Fprintf(&b, "# LINT: %s\n", l.Problem)
	}
	if len(p.Lint) > 0 {
		b.WriteString("# slurm.conf lines to add (then restart slurmctld):\n")
		for _, l := range p.Lint {
			fmt.Fprintf(&b, "#   %s\n", l.Line)
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "# note: %s\n", n)
	}
	var last Phase
	for _, s := range p.Steps {
		if s.Phase != last {
			fmt.Fprintf(&b, "\n# %d. %s\n", s.Phase, s.Phase)
			last = s.Phase
		}
		for _, line := range strings.Split(s.Why, "\n") {
			if line != "" {
				fmt.Fprintf(&b, "# %s\n", line)
			}
		}
		b.WriteString(s.Command(p.Sacctmgr))
		b.WriteByte('\n')
	}
	if len(p.Steps) == 0 {
		b.WriteString("# nothing to do: slurmdbd matches the snapshot\n")
	}
	return b.String()
}

// assocBatch is one `add user` batch: users who get the same account,
// QOS and default QOS.
type assocBatch struct{ account, qos, def string }

// maxNames bounds the names in one command, to keep command lines and
// slurmdbd transactions a sane size.
const maxNames = 500

// managed reports whether scimbridge owns account a.
func (c *Config) managed(a *AccountState) bool {
	if a == nil {
		return false
	}
	if c.OwnByPrefix && c.AccountPrefix != "" && strings.HasPrefix(a.Name, strings.ToLower(c.AccountPrefix)) {
		return true
	}
	return strings.EqualFold(a.Org, c.Marker)
}

// MakePlan compares want with have and returns the commands that make
// slurmdbd match, in this order:
//
//  1. jobs of disabled users: pending ones held (or cancelled), first so
//     that none starts while the rest runs; released when re-enabled;
//  2. QOS: missing ones created, those defined as code kept at their
//     settings;
//  3. accounts: create, fix drifted limits;
//  4. associations of users that resolve, one command per account;
//  5. QOS of existing associations, unblocking re-added ones;
//  6. DefaultAccount;
//  7. removals: DefaultAccount switched away first; an association with
//     pending or running jobs is blocked (MaxSubmitJobs=0) and removed by
//     a later pass once idle;
//  8. managed accounts left empty.
//
// Only accounts carrying the marker are ever changed. It is a pure
// function of its inputs.
func MakePlan(cfg Config, want *Desired, have *State) *Plan {
	p := &Plan{Cluster: strings.ToLower(cfg.Cluster), Sacctmgr: cfg.Sacctmgr}
	cl := "Cluster=" + p.Cluster
	p.Notes = append(p.Notes, want.Notes...)
	p.Conflicts = append(p.Conflicts, want.Conflicts...)
	ledger := have.Ledger
	if ledger == nil {
		ledger = &Ledger{}
	}

	// Accounts we may use: desired, and either absent or ours.
	usable := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(want.Accounts)) {
		a := have.Accounts[name]
		if a != nil && !cfg.managed(a) {
			p.Notes = append(p.Notes, fmt.Sprintf("account %s exists and is not managed by scimbridge (Organization=%q); not touching it, groups %v get no association there",
				name, a.Org, want.Accounts[name].Groups))
			continue
		}
		usable[name] = true
	}
	// Once over the associations, not accounts x users (201 accounts x
	// 5,000 users were 85 ms of CPU per plan, and apply plans twice).
	for _, u := range have.Users {
		for name := range u.Assocs {
			if a := have.Accounts[name]; a != nil && cfg.managed(a) && a.OnCluster {
				p.Managed++
			}
		}
	}

	// Effective wishes per user: usable accounts only, and a default that
	// is one of them.
	handsOff := map[string]bool{}
	for _, u := range cfg.HandsOffUsers {
		handsOff[strings.ToLower(u)] = true
	}
	for _, u := range slices.Sorted(maps.Keys(handsOff)) {
		if want.Users[u] != nil || have.Users[u] != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("%s is in hands_off_users: their associations and default account are left as they are", u))
		}
	}
	users := map[string]*WantUser{}
	for name, wu := range want.Users {
		if handsOff[name] {
			continue
		}
		eff := &WantUser{Name: name, Assocs: map[string]WantAssoc{}, Held: wu.Held, Active: wu.Active}
		for acct, wa := range wu.Assocs {
			if usable[acct] {
				eff.Assocs[acct] = wa
			}
		}
		if len(eff.Assocs) == 0 {
			continue
		}
		eff.Default = wu.Default
		if _, ok := eff.Assocs[eff.Default]; !ok {
			eff.Default = slices.Sorted(maps.Keys(eff.Assocs))[0]
		}
		users[name] = eff
	}

	// 1. QOS.
	var missingQOS []string
	for _, name := range slices.Sorted(maps.Keys(users)) {
		for _, wa := range users[name].Assocs {
			for _, q := range wa.QOS {
				if !have.QOS[q] && !contains(missingQOS, q) {
					missingQOS = append(missingQOS, q)
				}
			}
		}
	}
	sort.Strings(missingQOS)
	if len(missingQOS) > 0 && !*cfg.CreateQOS {
		var undefined []string
		for _, q := range missingQOS {
			if want.QOSDefs[q] == nil {
				undefined = append(undefined, q)
			}
		}
		if len(undefined) > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("QOS %v do not exist and create_qos is off: associations naming them will fail", undefined))
		}
		missingQOS = nil
	}
	planQOS(p, cfg, want, have, missingQOS, ledger)

	// 2. Accounts.
	type acctBatch struct{ parent, limits string }
	create := map[acctBatch][]string{}
	type fixKey struct{ args, why string }
	fix := map[fixKey][]string{}
	for _, name := range slices.Sorted(maps.Keys(usable)) {
		wa, a := want.Accounts[name], have.Accounts[name]
		if a == nil || !a.OnCluster {
			k := acctBatch{strings.ToLower(cfg.Parent), limitArgs(wa.Limits)}
			create[k] = append(create[k], name)
			continue
		}
		if a.Parent != strings.ToLower(cfg.Parent) {
			p.Notes = append(p.Notes, fmt.Sprintf("drift: managed account %s has parent %s, config says %s (not moved; move it with sacctmgr modify account)", name, a.Parent, cfg.Parent))
		}
		args, names := limitsDiff(a.Limits, wa.Limits)
		if len(args) == 0 {
			continue
		}
		if a.handsOff() {
			p.Notes = append(p.Notes, fmt.Sprintf("account %s is hands-off (its Description says so): limits %s differ from the config and are left as they are",
				name, strings.Join(args, " ")))
			continue
		}
		last, recorded := ledger.Accounts[name]
		var drift, changed []string
		for _, k := range names {
			switch {
			case recorded && last[k] == a.Limits[k]:
				changed = append(changed, k)
				p.Notes = append(p.Notes, fmt.Sprintf("config: account %s %s %s -> %s", name, k, showLimit(a.Limits[k]), showLimit(wa.Limits[k])))
			case recorded:
				drift = append(drift, k)
				p.Notes = append(p.Notes, fmt.Sprintf("drift: account %s %s is %s, changed outside scimbridge (it set %s); reset to the config's %s",
					name, k, showLimit(a.Limits[k]), showLimit(last[k]), showLimit(wa.Limits[k])))
			default:
				drift = append(drift, k)
				p.Notes = append(p.Notes, fmt.Sprintf("account %s %s is %s, config says %s (no record of what scimbridge set before)",
					name, k, showLimit(a.Limits[k]), showLimit(wa.Limits[k])))
			}
		}
		var why []string
		if len(changed) > 0 {
			why = append(why, "config changed "+strings.Join(changed, ", "))
		}
		if len(drift) > 0 {
			if recorded {
				why = append(why, "reset "+strings.Join(drift, ", ")+" changed outside scimbridge")
			} else {
				why = append(why, "set "+strings.Join(drift, ", ")+" to the config")
			}
		}
		k := fixKey{strings.Join(args, " "), strings.Join(why, "; ")}
		fix[k] = append(fix[k], name)
	}
	for _, k := range sortedKeys2(create, func(k acctBatch) string { return k.parent + " " + k.limits }) {
		args := []string{"add", "account", strings.Join(create[k], ","), cl, "Parent=" + k.parent,
			"Organization=" + strings.ToLower(cfg.Marker), "Description=managed by scimbridge"}
		if k.limits != "" {
			args = append(args, strings.Fields(k.limits)...)
		}
		var from []string
		for _, a := range create[k] {
			if wa := want.Accounts[a]; wa.Landing {
				from = append(from, a+" (landing account)")
			} else {
				from = append(from, a+" <- "+strings.Join(wa.Groups, ", "))
			}
		}
		why := "account " + strings.Join(from, "; ")
		if len(from) > 4 {
			why = fmt.Sprintf("%d accounts: %s; ...", len(from), strings.Join(from[:4], "; "))
		}
		p.add(PhaseAccounts, why, args...)
	}
	for _, k := range sortedKeys2(fix, func(k fixKey) string { return k.args + "|" + k.why }) {
		args := []string{"modify", "account", "where", "name=" + strings.Join(fix[k], ","), "cluster=" + p.Cluster, "set"}
		p.add(PhaseAccounts, "limits of "+strings.Join(fix[k], ", ")+": "+k.why, append(args, strings.Fields(k.args)...)...)
	}

	// 3. Associations. New users get their default account first: the
	// first association sacctmgr adds for a user becomes their default.
	adds := map[assocBatch][]string{}
	newDefault := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(users)) {
		wu := users[name]
		if wu.Held {
			continue
		}
		hu := have.Users[name]
		for acct, wa := range wu.Assocs {
			if hu != nil && hu.Assocs[acct] != nil {
				continue
			}
			k := assocBatch{acct, strings.Join(wa.QOS, ","), wa.DefaultQOS}
			adds[k] = append(adds[k], name)
		}
		if hu == nil || len(hu.Assocs) == 0 {
			newDefault[name] = wu.Default
		}
	}
	addKeys := sortedKeys2(adds, func(k assocBatch) string { return k.account + "|" + k.qos + "|" + k.def })
	// Default accounts first, so that every new user's first add is its
	// default: when every user shares one (the landing account) that is
	// exact; otherwise users' defaults are their first account by name,
	// which is the batch order already.
	sort.SliceStable(addKeys, func(i, j int) bool {
		return want.Accounts[addKeys[i].account].Landing && !want.Accounts[addKeys[j].account].Landing
	})
	if load, undecided := loadFile(loadThreshold(cfg), p.Cluster, addKeys, adds, newDefault, have, users); load != "" {
		for _, name := range undecided {
			delete(newDefault, name) // the default-account step sets it
		}
		n := 0
		for _, k := range addKeys {
			n += len(adds[k])
		}
		p.add(PhaseAssociations, fmt.Sprintf("%d association(s) in %d account(s), in one sacctmgr load (the reason of each batch is a comment in the file)", n, len(addKeys)),
			"load", "file=/dev/stdin").Stdin = load
		addKeys = nil
	}
	for _, k := range addKeys {
		for _, names := range chunks(adds[k]) {
			args := []string{"add", "user", strings.Join(names, ","), "Account=" + k.account, cl}
			if k.qos != "" {
				args = append(args, "QOS="+k.qos)
			}
			if k.def != "" {
				args = append(args, "DefaultQOS="+k.def)
			}
			p.add(PhaseAssociations, fmt.Sprintf("%d user(s) into account %s", len(names), k.account), args...)
		}
	}

	// 4. QOS of existing associations; unblock re-added ones.
	qosFix := map[assocBatch][]string{}
	unblock := map[string][]string{}
	// An account blocked as a whole (MaxSubmitJobs=0 on the account) shows
	// every member blocked: one note per account, with advice that works
	// (lifting it per user does not).
	wholeBlocked := map[string]int{}
	type qosChange struct{ acct, from, to string }
	qosConfig := map[qosChange][]string{}
	for _, name := range slices.Sorted(maps.Keys(users)) {
		wu, hu := users[name], have.Users[name]
		if wu.Held || hu == nil {
			continue
		}
		for _, acct := range slices.Sorted(maps.Keys(wu.Assocs)) {
			wa, ha := wu.Assocs[acct], hu.Assocs[acct]
			if ha == nil {
				continue
			}
			qosDiff := len(wa.QOS) > 0 && strings.Join(wa.QOS, ",") != strings.Join(ha.QOS, ",")
			defDiff := wa.DefaultQOS != "" && wa.DefaultQOS != ha.DefaultQOS
			if qosDiff || defDiff {
				cur := strings.Join(ha.QOS, ",") + "|" + ha.DefaultQOS
				switch rec, ok := ledger.AssocQOS[acct]; {
				case ok && rec == cur: // what scimbridge set: the config changed (a tier added...)
					k := qosChange{acct, cur, strings.Join(wa.QOS, ",") + "|" + wa.DefaultQOS}
					qosConfig[k] = append(qosConfig[k], name)
				case ok:
					p.Notes = append(p.Notes, fmt.Sprintf("drift: %s@%s has QOS %q default %q, changed outside scimbridge (it set %q); reset to the config's %q default %q",
						name, acct, strings.Join(ha.QOS, ","), ha.DefaultQOS, strings.Replace(rec, "|", " default ", 1), strings.Join(wa.QOS, ","), wa.DefaultQOS))
				default:
					p.Notes = append(p.Notes, fmt.Sprintf("%s@%s has QOS %q default %q, config says %q default %q (no record of what scimbridge set before)",
						name, acct, strings.Join(ha.QOS, ","), ha.DefaultQOS, strings.Join(wa.QOS, ","), wa.DefaultQOS))
				}
				k := assocBatch{acct, strings.Join(wa.QOS, ","), wa.DefaultQOS}
				qosFix[k] = append(qosFix[k], name)
			}
			switch {
			case ha.Blocked() && accountBlocked(have.Accounts[acct]):
				wholeBlocked[acct]++
			case ha.Blocked() && ledger.blocked(AssocKey{name, acct}):
				unblock[acct] = append(unblock[acct], name)
			case ha.Blocked():
				p.Notes = append(p.Notes, fmt.Sprintf("%s@%s is blocked (MaxSubmitJobs=0) and scimbridge did not set that block: an admin's, left as it is (lift it with: %s -i modify user where name=%s account=%s cluster=%s set MaxSubmitJobs=-1)",
					name, acct, cfg.Sacctmgr, name, acct, p.Cluster))
			}
		}
	}
	for _, k := range sortedKeys2(qosConfig, func(k qosChange) string { return k.acct + "|" + k.from + "|" + k.to }) {
		from, _, _ := strings.Cut(k.from, "|")
		to, _, _ := strings.Cut(k.to, "|")
		p.Notes = append(p.Notes, fmt.Sprintf("config: QOS of %d association(s) in %s %q -> %q (%s)", len(qosConfig[k]), k.acct, from, to, someNames(qosConfig[k])))
	}
	for _, acct := range slices.Sorted(maps.Keys(wholeBlocked)) {
		how := "scimbridge resets it to the config on this pass (see the drift note)"
		if have.Accounts[acct].handsOff() || !cfg.managed(have.Accounts[acct]) {
			how = fmt.Sprintf("an admin's, left as it is; lift it for everyone with: %s -i modify account where name=%s cluster=%s set MaxSubmitJobs=-1",
				cfg.Sacctmgr, acct, p.Cluster)
		}
		p.Notes = append(p.Notes, fmt.Sprintf("account %s is blocked as a whole (MaxSubmitJobs=0 on the account): none of its %d member(s) can submit jobs there; lifting it per user would not help; %s",
			acct, wholeBlocked[acct], how))
	}
	for _, k := range sortedKeys2(qosFix, func(k assocBatch) string { return k.account + "|" + k.qos + "|" + k.def }) {
		for _, names := range chunks(qosFix[k]) {
			args := []string{"modify", "user", "where", "name=" + strings.Join(names, ","), "account=" + k.account, "cluster=" + p.Cluster, "set"}
			if k.qos != "" {
				args = append(args, "QOS="+k.qos)
			}
			if k.def != "" {
				args = append(args, "DefaultQOS="+k.def)
			}
			p.add(PhaseAssocQOS, fmt.Sprintf("QOS of %d association(s) in %s", len(names), k.account), args...)
		}
	}
	for _, acct := range slices.Sorted(maps.Keys(unblock)) {
		for _, names := range chunks(unblock[acct]) {
			p.add(PhaseAssocQOS, fmt.Sprintf("%d user(s) back in the groups of %s: lift the block scimbridge set for their pending removal", len(names), acct),
				"modify", "user", "where", "name="+strings.Join(names, ","), "account="+acct, "cluster="+p.Cluster, "set", "MaxSubmitJobs=-1")
		}
	}

	// 5. DefaultAccount of provisioned users; the reason of each change
	// from the ledger (what scimbridge left them with).
	setDefault := map[string][]string{}
	type defaultChange struct{ from, to, label string }
	defaultNotes := map[defaultChange][]string{}
	for _, name := range slices.Sorted(maps.Keys(users)) {
		wu, hu := users[name], have.Users[name]
		if wu.Held {
			continue
		}
		cur := newDefault[name]
		if hu != nil && len(hu.Assocs) > 0 {
			cur = hu.DefaultAccount
		}
		if cur == wu.Default {
			continue
		}
		if hu != nil && hu.Assocs[cur] != nil && !cfg.managed(have.Accounts[cur]) {
			// An admin chose an account syncd does not manage: theirs.
			p.Notes = append(p.Notes, fmt.Sprintf("%s keeps DefaultAccount %s (an account scimbridge does not manage, so an admin's choice; scimbridge would set %s)",
				name, cur, wu.Default))
			continue
		}
		if hu != nil && len(hu.Assocs) > 0 {
			k := defaultChange{cur, wu.Default, ""}
			switch rec, ok := ledger.Users[name]; {
			case ok && rec != "" && rec != cur:
				k.label = "drift: DefaultAccount set outside scimbridge (it set " + rec + ")"
			case ok && rec != "" && !hasKey(wu.Assocs, cur):
				k.label = "source: no longer in the groups of " + cur
			case ok && rec != "":
				k.label = "config: the default account the config gives changed"
			default:
				k.label = "no record of what scimbridge set before"
			}
			defaultNotes[k] = append(defaultNotes[k], name)
		}
		setDefault[wu.Default] = append(setDefault[wu.Default], name)
	}

	// 6. Removals: every association on a managed account that no SCIM
	// group asks for. Held users keep what they have.
	//
	// slurmdbd 22.05 refuses a delete that lists a user's default
	// association after any non-default one in the same command (its check
	// does not reset between users), so defaults are switched away first,
	// non-default associations go per account, and the associations that
	// are their user's last (and default) go in one command of their own.
	lastAssoc := map[string][]string{} // by reason
	removeFrom := map[removeKey][]string{}
	block := map[string][]string{}
	remaining := map[string]int{} // user associations left per account
	for _, name := range slices.Sorted(maps.Keys(have.Users)) {
		hu := have.Users[name]
		wu := users[name]
		if handsOff[name] {
			for acct := range hu.Assocs {
				remaining[acct]++
			}
			continue
		}
		var gone, left []string
		for _, acct := range slices.Sorted(maps.Keys(hu.Assocs)) {
			a := have.Accounts[acct]
			wanted := wu != nil && hasKey(wu.Assocs, acct)
			if wanted || !cfg.managed(a) || want.Frozen[acct] != "" || want.Protected[name] {
				left = append(left, acct)
				remaining[acct]++
				continue
			}
			k := AssocKey{name, acct}
			if n := jobsOf(want, have, name, acct); n > 0 {
				left = append(left, acct)
				remaining[acct]++
				if !hu.Assocs[acct].Blocked() {
					block[acct] = append(block[acct], name)
					p.Blocks = append(p.Blocks, k)
				}
				p.Notes = append(p.Notes, fmt.Sprintf("%s has %d pending or running job(s): blocked (MaxSubmitJobs=0), removed on a later pass once idle (%s: %s)",
					k, n, name, removalReason(want, name, acct)))
				continue
			}
			if !want.Known[name] {
				if _, provisioned := ledger.Users[name]; provisioned {
					p.Notes = append(p.Notes, fmt.Sprintf("source: %s is no longer a SCIM user (removed or renamed at the identity provider); removing from %s", name, acct))
				} else {
					p.Notes = append(p.Notes, fmt.Sprintf("drift: %s is on managed account %s but is not a SCIM user (added outside scimbridge); removing", name, acct))
				}
			}
			gone = append(gone, acct)
		}
		if len(gone) == 0 {
			continue
		}
		if len(left) == 0 {
			for _, acct := range gone {
				if acct != hu.DefaultAccount {
					k := removeKey{acct, removalReason(want, name, acct)}
					removeFrom[k] = append(removeFrom[k], name)
				}
			}
			if contains(gone, hu.DefaultAccount) {
				why := removalReason(want, name, hu.DefaultAccount)
				lastAssoc[why] = append(lastAssoc[why], name)
			}
			continue
		}
		for _, acct := range gone {
			k := removeKey{acct, removalReason(want, name, acct)}
			removeFrom[k] = append(removeFrom[k], name)
		}
		// The default must not be among the deleted: sacctmgr either refuses
		// or leaves the user without one.
		if wu == nil && (hu.DefaultAccount == "" || contains(gone, hu.DefaultAccount)) {
			setDefault[pickDefault(hu, left)] = append(setDefault[pickDefault(hu, left)], name)
		}
	}
	for _, k := range sortedKeys2(defaultNotes, func(k defaultChange) string { return k.label + "|" + k.from + "|" + k.to }) {
		label, why, _ := strings.Cut(k.label, ": ")
		if why == "" {
			label, why = "", k.label
		} else {
			label += ": "
		}
		p.Notes = append(p.Notes, fmt.Sprintf("%sDefaultAccount %s -> %s for %d user(s) (%s): %s", label, k.from, k.to, len(defaultNotes[k]), why, someNames(defaultNotes[k])))
	}
	for _, acct := range slices.Sorted(maps.Keys(setDefault)) {
		names := setDefault[acct]
		sort.Strings(names)
		for _, c := range chunks(names) {
			p.add(PhaseDefaultAccount, fmt.Sprintf("%d user(s) default to %s", len(c), acct),
				"modify", "user", "where", "name="+strings.Join(c, ","), "cluster="+p.Cluster, "set", "DefaultAccount="+acct)
		}
	}
	for _, acct := range slices.Sorted(maps.Keys(block)) {
		for _, c := range chunks(block[acct]) {
			p.add(PhaseRemovals, fmt.Sprintf("block %d user(s) in %s until their jobs end", len(c), acct),
				"modify", "user", "where", "name="+strings.Join(c, ","), "account="+acct, "cluster="+p.Cluster, "set", "MaxSubmitJobs=0")
		}
	}
	var rm []removal
	removed := map[AssocKey]bool{}
	for k, names := range removeFrom {
		for _, n := range names {
			rm = append(rm, removal{n, k})
			removed[AssocKey{n, k.account}] = true
		}
	}
	added := map[AssocKey]bool{}
	for k, names := range adds {
		for _, n := range names {
			added[AssocKey{n, k.account}] = true
		}
	}
	p.addRemovals(rm, func(user, account string) bool {
		k := AssocKey{user, account}
		if removed[k] {
			return true
		}
		hu := have.Users[user]
		return (hu == nil || hu.Assocs[account] == nil) && !added[k]
	})
	for _, why := range slices.Sorted(maps.Keys(lastAssoc)) {
		for _, c := range chunks(lastAssoc[why]) {
			s := p.add(PhaseRemovals, fmt.Sprintf("%d user(s) lose their last association on %s: %s", len(c), p.Cluster, why),
				"delete", "user", "where", "name="+strings.Join(c, ","), "cluster="+p.Cluster)
			s.Removes = len(c)
		}
	}

	// 7. Managed accounts nobody asks for and nothing is left in.
	var dropHere, dropAll []string
	for _, name := range slices.Sorted(maps.Keys(have.Accounts)) {
		a := have.Accounts[name]
		if !a.OnCluster || !cfg.managed(a) || usable[name] || want.Frozen[name] != "" || remaining[name] > 0 || len(a.Children) > 0 {
			continue
		}
		if a.Elsewhere {
			dropHere = append(dropHere, name)
		} else {
			dropAll = append(dropAll, name)
		}
	}
	if len(dropAll) > 0 {
		p.add(PhaseAccountRemovals, fmt.Sprintf("%d managed account(s) no SCIM group maps to any more", len(dropAll)),
			"delete", "account", "where", "name="+strings.Join(dropAll, ","))
	}
	if len(dropHere) > 0 {
		p.add(PhaseAccountRemovals, fmt.Sprintf("%d managed account(s) no SCIM group maps to any more (kept on other clusters)", len(dropHere)),
			"delete", "account", "where", "name="+strings.Join(dropHere, ","), "cluster="+p.Cluster)
	}
	planDisabledJobs(p, cfg, want, have, ledger)
	sort.SliceStable(p.Steps, func(i, j int) bool { return p.Steps[i].Phase < p.Steps[j].Phase })
	return p
}

// jobsOf counts the unfinished jobs of user on account. Jobs whose user
// squeue could not name (a user already gone from NSS) count for every
// user on that account who is not in the snapshot: blocking a removal
// for a pass too long is harmless, deleting under a running job is not
// (slurmdbd refuses, and the pass stops).
func jobsOf(want *Desired, have *State, user, account string) int {
	n := have.Jobs[AssocKey{user, account}]
	if uid, ok := want.UIDs[user]; ok {
		return n + have.UnnamedJobs[account][uid]
	}
	for _, c := range have.UnnamedJobs[account] {
		n += c
	}
	return n
}

// removalReason says, truthfully, why user has no place on acct: what is
// known now, not a guess at what happened.
func removalReason(want *Desired, user, acct string) string {
	switch {
	case !want.Known[user]:
		return "not a SCIM user"
	case want.Accounts[acct] == nil:
		return "no SCIM group maps to " + acct + " any more"
	case want.Users[user] == nil || want.Accounts[acct].Landing:
		return "in no SCIM group that maps to a Slurm account"
	default:
		return "in none of the groups mapped to " + acct + " (" + quoteList(want.Accounts[acct].Groups) + ")"
	}
}

// pickDefault chooses the account a user keeps as default: the first one
// not blocked, else the first.
func pickDefault(hu *UserState, left []string) string {
	for _, a := range left {
		if !hu.Assocs[a].Blocked() {
			return a
		}
	}
	return left[0]
}

func (p *Plan) add(ph Phase, why string, args ...string) *Step {
	p.Steps = append(p.Steps, Step{Phase: ph, Why: why, Args: args})
	return &p.Steps[len(p.Steps)-1]
}

func limitArgs(l map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		out = append(out, k+"="+l[k])
	}
	return strings.Join(out, " ")
}

func chunks(names []string) [][]string {
	var out [][]string
	for len(names) > maxNames {
		out = append(out, names[:maxNames])
		names = names[maxNames:]
	}
	if len(names) > 0 {
		out = append(out, names)
	}
	return out
}

func sortedKeys2[K comparable, V any](m map[K]V, key func(K) string) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return key(ks[i]) < key(ks[j]) })
	return ks
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=,./:@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// accountBlocked reports whether the account itself has MaxSubmitJobs=0,
// which its members' associations show as their own.
func accountBlocked(a *AccountState) bool {
	return a != nil && a.Limits["MaxSubmitJobs"] == "0"
}

// someNames lists up to 5 names, then how many more.
func someNames(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}
