package slurm

import (
	"fmt"
	"sort"
	"strings"
)

// Removals of associations on several accounts go in one command where
// that is exact. `sacctmgr delete user where name=a,b account=x,y` deletes
// every pair of the cross product (a@x, a@y, b@x, b@y) that exists, so a
// batch of users U and accounts A may be one command only when every pair
// of U x A is either removed by this plan or has no association (and gets
// none from this plan): deleting a pair that does not exist does nothing.
// Measured on the lab (Slurm 22.05, 10,000 associations, loaded 2-core
// machine): every delete command costs ~0.9 s however few rows it
// deletes, and 100 users each leaving one account were 100 commands.
//
// Batches are filled greedily (pairs in account order, each joins the
// first of the last few open batches it fits), so 100 users moving to
// the next account become 2 commands (a user's new account must not be
// in the batch that names the user), not 100. A batch holds at most
// maxNames users and maxNames accounts.
//
// What a batch cannot see: an association an admin creates between this
// pass's read and the delete, for a user in U on an account in A (all
// managed), is deleted with it. syncd would delete it on the next pass
// anyway (it is on a managed account, for a user no group puts there),
// one pass earlier and without its own note.

// removeKey groups removals: the account and the reason.
type removeKey struct{ account, why string }

// removal is one association to delete and why.
type removal struct {
	user string
	key  removeKey
}

// removalBatch is one delete command: users x accounts, and the
// removals it stands for, grouped by account and reason for the plan.
type removalBatch struct {
	users, accounts map[string]bool
	ulist, alist    []string
	why             map[removeKey][]string
	n               int
}

// openBatches is how many of the newest batches a removal tries: enough
// for a move's pattern, and bounded work for a mass removal.
const openBatches = 4

// batchRemovals groups removals into delete commands. deletable tells
// whether a pair may be named in a command (removed by this plan, or has
// no association and gets none).
func batchRemovals(rm []removal, deletable func(user, account string) bool) []*removalBatch {
	sort.Slice(rm, func(i, j int) bool {
		a, b := rm[i], rm[j]
		if a.key.account != b.key.account {
			return a.key.account < b.key.account
		}
		if a.key.why != b.key.why {
			return a.key.why < b.key.why
		}
		return a.user < b.user
	})
	var out []*removalBatch
	// joins: a new name (user or account) may join a batch whose other
	// side already has names when each pair it makes may be named.
	joins := func(in map[string]bool, side []string, name string, other []string, pair func(string) bool) bool {
		if in[name] {
			return true
		}
		if len(side) >= maxNames {
			return false
		}
		for _, o := range other {
			if !pair(o) {
				return false
			}
		}
		return true
	}
	fits := func(b *removalBatch, u, a string) bool {
		return joins(b.users, b.ulist, u, b.alist, func(a2 string) bool { return a2 == a || deletable(u, a2) }) &&
			joins(b.accounts, b.alist, a, b.ulist, func(u2 string) bool { return u2 == u || deletable(u2, a) })
	}
	for _, r := range rm {
		var into *removalBatch
		for i := max(0, len(out)-openBatches); i < len(out); i++ {
			if fits(out[i], r.user, r.key.account) {
				into = out[i]
				break
			}
		}
		if into == nil {
			into = &removalBatch{users: map[string]bool{}, accounts: map[string]bool{}, why: map[removeKey][]string{}}
			out = append(out, into)
		}
		if !into.users[r.user] {
			into.users[r.user] = true
			into.ulist = append(into.ulist, r.user)
		}
		if !into.accounts[r.key.account] {
			into.accounts[r.key.account] = true
			into.alist = append(into.alist, r.key.account)
		}
		into.why[r.key] = append(into.why[r.key], r.user)
		into.n++
	}
	return out
}

// addRemovals adds the delete commands of rm to p.
func (p *Plan) addRemovals(rm []removal, deletable func(user, account string) bool) {
	for _, b := range batchRemovals(rm, deletable) {
		keys := sortedKeys2(b.why, func(k removeKey) string { return k.account + "|" + k.why })
		var why []string
		for _, k := range keys {
			why = append(why, fmt.Sprintf("%d user(s) off %s: %s", len(b.why[k]), k.account, k.why))
		}
		if len(keys) > 1 {
			why = append([]string{fmt.Sprintf("%d association(s) off %d account(s) in one command (the other pairs of names x accounts have no association):",
				b.n, len(b.alist))}, why...)
		}
		users := append([]string(nil), b.ulist...)
		sort.Strings(users)
		accts := append([]string(nil), b.alist...)
		sort.Strings(accts)
		s := p.add(PhaseRemovals, strings.Join(why, "\n"),
			"delete", "user", "where", "name="+strings.Join(users, ","), "account="+strings.Join(accts, ","), "cluster="+p.Cluster)
		s.Removes = b.n
	}
}
