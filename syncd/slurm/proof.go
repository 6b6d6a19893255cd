package slurm

import (
	"regexp"
	"strings"
)

// After commands that change only users' associations (a move, a few
// members), the state they leave is taken from what they printed instead
// of a read-back, when that output proves it: sacctmgr 22.05 lists every
// association it adds ("U = u A = a C = c"), modifies or deletes
// ("C = c A = a U = u") and every user whose default it sets. Measured
// on the lab (10,000 associations, 2 loaded cores): every sacctmgr
// request costs ~90 ms of round trips whatever it carries (its persistent
// connection answers a length and a body in two writes, and the delayed
// ACK holds the second ~40 ms each way), so the read-back of a moved
// user (two queries and squeue at once) was 0.37-0.41 s of a 3.6-4.5 s
// pass; one sacctmgr process carrying both writes and the read-back was
// no faster than three (1.18 s against 1.21 s for the two writes: the
// cost is per request, not per process), so the commands stay one per
// process, as the plan prints them.
//
// The proof is strict; anything else reads back as before:
//   - every step is `add user`, `delete user` or `modify user` (no load,
//     no account, QOS or job step) and changed something;
//   - the rows each one printed are exactly the ones it was meant to
//     touch: one row per expected association (user names are cut at 9
//     characters and account names at 10 in that listing, so a cut name
//     matches as a prefix), no row more, none missing;
//   - nothing the output cannot show is guessed: a new association's QOS
//     and default QOS are the ones the command set, else its account's
//     (slurmdbd shows a user association without QOS with its parent's);
//     an account with a MaxSubmitJobs of its own (its members show it as
//     theirs), a user new to the cluster given more than one association
//     in one command (which becomes the default is slurmdbd's choice) or
//     a default association deleted while others remain: read back.
// The check after apply (MakePlan again) then runs on this state as it
// did on the read-back, and the next pass reads slurmdbd whole as always.
//
// What this gives up: the rows of delete and modify come from slurmdbd's
// answer, but `add user` prints the associations it asked for once the
// request succeeded. An add slurmdbd reports done and then loses (seen
// only with several writers at once, which lock_file rules out among
// scimbridge's own passes) is no longer found in the same pass but by
// the next full read (the pass on its own schedule, every interval);
// meanwhile the snapshot lists an association slurmctld does not have,
// and slurmctld, which enforces associations, still refuses the jobs.

var (
	addedRow   = regexp.MustCompile(`^\s*U = (\S+)\s+A = (\S+)\s+C = (\S+)\s*$`)
	changedRow = regexp.MustCompile(`^\s*C = (\S+)\s+A = (\S+)\s+U = (\S+)\s*$`)
)

// cutMatch reports whether a name sacctmgr printed (cut at width) is name.
func cutMatch(printed, name string, width int) bool {
	printed = strings.ToLower(printed)
	return printed == name || len(printed) >= width && strings.HasPrefix(name, printed)
}

// listedExactly reports whether rows (user, account as printed) are
// exactly the associations want, each once.
func listedExactly(rows [][2]string, want []AssocKey) bool {
	if len(rows) != len(want) {
		return false
	}
	used := make([]bool, len(want))
	for _, r := range rows {
		found := false
		for i, k := range want {
			if !used[i] && cutMatch(r[0], k.User, 9) && cutMatch(r[1], k.Account, 10) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// rowsOf returns the association rows (user, account) of out on cluster,
// and false if a row names another cluster.
func rowsOf(out, cluster string, added bool) ([][2]string, bool) {
	var rows [][2]string
	for _, line := range strings.Split(out, "\n") {
		if added {
			if m := addedRow.FindStringSubmatch(line); m != nil {
				if !cutMatch(m[3], cluster, 10) {
					return nil, false
				}
				rows = append(rows, [2]string{m[1], m[2]})
			}
			continue
		}
		if m := changedRow.FindStringSubmatch(line); m != nil {
			if !cutMatch(m[1], cluster, 10) {
				return nil, false
			}
			rows = append(rows, [2]string{m[3], m[2]})
		}
	}
	return rows, true
}

// stepArgs splits a user step's arguments: the names, the account(s) in
// its where clause or Account=, and its settings (after "set", or the
// options of an add), keys lowercased.
func stepArgs(args []string) (names, accounts []string, set map[string]string) {
	set = map[string]string{}
	after := false
	for i, a := range args {
		k, v, ok := strings.Cut(a, "=")
		lk := strings.ToLower(k)
		switch {
		case a == "set":
			after = true
		case i == 2 && args[0] == "add" && !ok:
			names = strings.Split(strings.ToLower(a), ",")
		case !ok:
		case after:
			set[lk] = v
		case lk == "name":
			names = strings.Split(strings.ToLower(v), ",")
		case lk == "account":
			accounts = strings.Split(strings.ToLower(v), ",")
		case lk == "cluster":
		default:
			set[lk] = v
		}
	}
	return names, accounts, set
}

// provenState returns the state steps left on cluster, from have and what each
// printed (outs[i] of steps[i], changed[i] whether it changed something),
// and false when the output does not prove it (the caller reads back).
func provenState(have *State, cluster string, steps []Step, outs []string, changed []bool) (*State, bool) {
	if len(steps) == 0 || len(outs) != len(steps) || len(changed) != len(steps) {
		return nil, false
	}
	next := *have
	next.Users = make(map[string]*UserState, len(have.Users))
	for name, u := range have.Users {
		next.Users[name] = u
	}
	// own returns a copy of user name's state that this pass may change.
	copied := map[string]bool{}
	own := func(name string) *UserState {
		u := next.Users[name]
		if copied[name] {
			return u
		}
		c := &UserState{Name: name, Assocs: map[string]*AssocState{}}
		if u != nil {
			c.DefaultAccount = u.DefaultAccount
			for a, as := range u.Assocs {
				cp := *as
				c.Assocs[a] = &cp
			}
		}
		copied[name] = true
		next.Users[name] = c
		return c
	}
	cluster = strings.ToLower(cluster)
	for i, s := range steps {
		if s.Bin != "" || s.Stdin != "" || !changed[i] || len(s.Args) < 3 || s.Args[1] != "user" {
			return nil, false
		}
		names, accounts, set := stepArgs(s.Args)
		if len(names) == 0 {
			return nil, false
		}
		switch s.Args[0] {
		case "add":
			if len(accounts) != 1 {
				return nil, false
			}
			acct := have.Accounts[accounts[0]]
			if acct == nil || acct.Limits["MaxSubmitJobs"] != "" {
				return nil, false
			}
			var want []AssocKey
			for _, n := range names {
				want = append(want, AssocKey{n, acct.Name})
			}
			rows, ok := rowsOf(outs[i], cluster, true)
			if !ok || !listedExactly(rows, want) {
				return nil, false
			}
			for _, n := range names {
				u := own(n)
				if u.Assocs[acct.Name] != nil {
					return nil, false // it said it added what was there
				}
				as := &AssocState{Account: acct.Name, QOS: acct.QOS, DefaultQOS: acct.DefaultQOS}
				if q, ok := set["qos"]; ok {
					as.QOS = splitList(q)
				}
				if d, ok := set["defaultqos"]; ok {
					as.DefaultQOS = strings.ToLower(d)
				}
				if len(u.Assocs) == 0 {
					u.DefaultAccount = acct.Name // the first association is the default
				}
				u.Assocs[acct.Name] = as
			}
		case "delete":
			var want []AssocKey
			for _, n := range names {
				u := next.Users[n]
				if u == nil {
					continue
				}
				for a := range u.Assocs {
					if accounts == nil || contains(accounts, a) {
						want = append(want, AssocKey{n, a})
					}
				}
			}
			rows, ok := rowsOf(outs[i], cluster, false)
			if !ok || !listedExactly(rows, want) {
				return nil, false
			}
			for _, k := range want {
				u := own(k.User)
				delete(u.Assocs, k.Account)
				if len(u.Assocs) == 0 {
					delete(next.Users, k.User)
					continue
				}
				if u.DefaultAccount == k.Account {
					return nil, false // slurmdbd's choice of the next default
				}
			}
		case "modify":
			if def, ok := set["defaultaccount"]; ok {
				if len(set) != 1 || accounts != nil || !listedUsers(outs[i], names) {
					return nil, false
				}
				for _, n := range names {
					u := own(n)
					if u.Assocs[strings.ToLower(def)] == nil {
						return nil, false
					}
					u.DefaultAccount = strings.ToLower(def)
				}
				continue
			}
			if len(accounts) != 1 {
				return nil, false
			}
			var want []AssocKey
			for _, n := range names {
				want = append(want, AssocKey{n, accounts[0]})
			}
			rows, ok := rowsOf(outs[i], cluster, false)
			if !ok || !listedExactly(rows, want) {
				return nil, false
			}
			for _, n := range names {
				as := own(n).Assocs[accounts[0]]
				if as == nil {
					return nil, false
				}
				for k, v := range set {
					switch k {
					case "qos":
						as.QOS = splitList(v)
					case "defaultqos":
						as.DefaultQOS = strings.ToLower(v)
					case "maxsubmitjobs":
						if a := have.Accounts[accounts[0]]; a == nil || a.Limits["MaxSubmitJobs"] != "" {
							return nil, false // an unset one shows the account's
						}
						as.MaxSubmitJobs = v
						if v == "-1" {
							as.MaxSubmitJobs = ""
						}
					default:
						return nil, false
					}
				}
			}
		default:
			return nil, false
		}
	}
	return &next, true
}

// listedUsers reports whether the "Modified users..." listing of out is
// exactly names.
func listedUsers(out string, names []string) bool {
	_, list, ok := strings.Cut(out, "Modified users...")
	if !ok {
		return false
	}
	var rows [][2]string
	var want []AssocKey
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) == 1 {
			rows = append(rows, [2]string{f[0], ""})
		}
	}
	for _, n := range names {
		want = append(want, AssocKey{n, ""})
	}
	return listedExactly(rows, want)
}
