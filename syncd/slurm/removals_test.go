package slurm

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// managedState builds slurmdbd's state: managed accounts on the cluster
// and users' associations (user -> accounts, the first the default).
func managedState(accounts []string, users map[string][]string) *State {
	st := &State{Accounts: map[string]*AccountState{}, Users: map[string]*UserState{}, QOS: map[string]bool{"normal": true},
		QOSAttrs: map[string]*QOSState{}, Jobs: map[AssocKey]int{}, UnnamedJobs: map[string]map[uint32]int{}, Ledger: &Ledger{}}
	for _, a := range accounts {
		st.Accounts[a] = &AccountState{Name: a, Org: "scimbridge", OnCluster: true, Parent: "root", Limits: map[string]string{}}
	}
	for u, accts := range users {
		us := &UserState{Name: u, DefaultAccount: accts[0], Assocs: map[string]*AssocState{}}
		for _, a := range accts {
			us.Assocs[a] = &AssocState{Account: a, QOS: []string{"normal"}}
		}
		st.Users[u] = us
	}
	return st
}

// applyToPairs runs the plan's add and delete commands on a set of
// user@account pairs the way slurmdbd does: a delete removes every pair of
// names x accounts that exists.
func applyToPairs(t *testing.T, p *Plan, pairs map[AssocKey]bool) {
	t.Helper()
	for _, s := range p.Steps {
		args := s.Args
		switch {
		case len(args) > 3 && args[0] == "add" && args[1] == "user":
			acct := strings.TrimPrefix(args[3], "Account=")
			for _, u := range strings.Split(args[2], ",") {
				pairs[AssocKey{u, acct}] = true
			}
		case len(args) > 3 && args[0] == "delete" && args[1] == "user":
			var names, accts []string
			for _, a := range args[3:] {
				if v, ok := strings.CutPrefix(a, "name="); ok {
					names = strings.Split(v, ",")
				}
				if v, ok := strings.CutPrefix(a, "account="); ok {
					accts = strings.Split(v, ",")
				}
			}
			if accts == nil {
				t.Fatalf("delete without account= in this test: %v", args)
			}
			for _, u := range names {
				for _, a := range accts {
					delete(pairs, AssocKey{u, a})
				}
			}
		}
	}
}

// Users moving to the next account: the removals go in few commands, and
// no command's names x accounts deletes an association a user keeps or
// gets (checked by running the commands on the pairs).
func TestPlanRemovalsBatchedAcrossAccounts(t *testing.T) {
	cfg := testConfig()
	cfg.LoadMinAccounts = -1
	const nAcct, nUsers, moved = 10, 40, 20
	var accounts []string
	for j := 0; j < nAcct; j++ {
		accounts = append(accounts, fmt.Sprintf("g%d", j))
	}
	accounts = append(accounts, "landing")
	groups := map[string][]string{}
	before := map[string][]string{}
	var names []string
	for i := 0; i < nUsers; i++ {
		u := fmt.Sprintf("u%02d", i)
		names = append(names, u)
		before[u] = []string{"landing", accounts[i%nAcct]}
		j := i % nAcct
		if i < moved {
			j = (j + 1) % nAcct
		}
		groups["hpc-"+accounts[j]] = append(groups["hpc-"+accounts[j]], u)
	}
	have := managedState(accounts, before)
	want := mustDesired(t, cfg, contents(names, groups), nil)
	p := MakePlan(cfg, want, have)

	deletes := 0
	for _, s := range p.Steps {
		if s.Phase == PhaseRemovals {
			deletes++
		}
	}
	if deletes == 0 || deletes > 3 || p.Removals() != moved {
		t.Errorf("%d users moving: %d delete commands removing %d (want 1-3 commands, %d removals):\n%s", moved, deletes, p.Removals(), moved, p)
	}
	pairs := map[AssocKey]bool{}
	for u, accts := range before {
		for _, a := range accts {
			pairs[AssocKey{u, a}] = true
		}
	}
	applyToPairs(t, p, pairs)
	var got, exp []string
	for k := range pairs {
		got = append(got, k.String())
	}
	for u, wu := range want.Users {
		for a := range wu.Assocs {
			exp = append(exp, AssocKey{u, a}.String())
		}
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, " ") != strings.Join(exp, " ") {
		t.Errorf("after the plan's commands:\n got  %v\n want %v\nplan:\n%s", got, exp, p)
	}
	// Every removal keeps its reason in the plan.
	out := p.String()
	for i := 0; i < moved; i++ {
		if a := accounts[i%nAcct]; !strings.Contains(out, "off "+a+": in none of the groups mapped to "+a) {
			t.Errorf("no reason for the removal from %s:\n%s", a, out)
		}
	}
}

func TestBatchRemovalsBounds(t *testing.T) {
	var rm []removal
	for i := 0; i < 3*maxNames; i++ {
		rm = append(rm, removal{fmt.Sprintf("u%04d", i), removeKey{fmt.Sprintf("a%d", i%7), "gone"}})
	}
	bs := batchRemovals(rm, func(string, string) bool { return true })
	n := 0
	for _, b := range bs {
		if len(b.ulist) > maxNames || len(b.alist) > maxNames {
			t.Errorf("batch of %d users x %d accounts: over maxNames %d", len(b.ulist), len(b.alist), maxNames)
		}
		n += b.n
	}
	if n != len(rm) || len(bs) != 3 {
		t.Errorf("%d removals in %d batches (want all %d in 3)", n, len(bs), len(rm))
	}
	// Users on different accounts whose other pairs may not be named:
	// one command each; users of one account share theirs.
	rm = nil
	for i := 0; i < 5; i++ {
		rm = append(rm, removal{fmt.Sprintf("u%d", i), removeKey{fmt.Sprintf("a%d", i), "gone"}}, removal{fmt.Sprintf("v%d", i), removeKey{fmt.Sprintf("a%d", i), "gone"}})
	}
	if bs := batchRemovals(rm, func(string, string) bool { return false }); len(bs) != 5 {
		t.Errorf("pairs that may not be named together: %d batches, want 5", len(bs))
	}
}

func TestTouchedUsers(t *testing.T) {
	steps := []Step{
		{Args: []string{"add", "user", "bob,alice", "Account=x", "Cluster=lab"}},
		{Args: []string{"delete", "user", "where", "name=alice,Carol", "account=y,z", "cluster=lab"}},
		{Bin: "scontrol", Args: []string{"hold", "12"}},
	}
	if u, ok := touchedUsers(steps); !ok || strings.Join(u, ",") != "alice,bob,carol" {
		t.Errorf("touchedUsers = %v, %v", u, ok)
	}
	for _, s := range []Step{
		{Args: []string{"add", "account", "x", "Cluster=lab"}},
		{Args: []string{"load", "file=/dev/stdin"}, Stdin: "..."},
		{Args: []string{"modify", "qos", "where", "name=x", "set", "Priority=1"}},
	} {
		if _, ok := touchedUsers(append(steps[:1:1], s)); ok {
			t.Errorf("touchedUsers accepts %v: only user commands may be read back by user", s.Args)
		}
	}
}
