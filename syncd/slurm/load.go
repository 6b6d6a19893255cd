package slurm

import (
	"fmt"
	"strings"
)

// Associations for many accounts go in one `sacctmgr -i load
// file=/dev/stdin` instead of one `add user` per account.
//
// Measured on Slurm 22.05.8 + MariaDB (this lab, 2 cores under load):
// every sacctmgr write costs ~0.8 s besides slurmdbd's own work (process,
// munge, ~6 request/answer round trips of ~45 ms each, then the add and
// the commit), so 5,000 users in 200 accounts took 212 commands and
// 327 s. A load is one process, one connection and one commit: the
// same 10,000 associations took 115-129 s there, of which slurmdbd and
// MariaDB used ~40 s of CPU (its per-association queries; the rest was
// waiting for the 2 shared cores). What a load does, measured:
//   - an existing cluster, account or association named in the file is
//     left as it is (the root association's Fairshare and GrpJobs, a
//     user's MaxJobs survived); only missing ones are added;
//   - a User line's DefaultAccount is applied to an existing user too,
//     one modify request per user (sacctmgr does not know the user's
//     default and always sends it), so only users new to slurmdbd get it;
//   - QOS= and DefaultQOS= on a User line set the association's, like
//     `add user` does;
//   - lines before an error are committed and sacctmgr exits 1 (e.g. a
//     missing parent): the pass stops, and the next plan retries the rest;
//   - "Nothing new added." comes with exit status 0.
//   - It first reads the whole accounting (5.7 s for one association
//     against 10,000): below loadMinAccounts accounts, `add user` per
//     account stays faster (one user moved: two commands, ~1 s each).
//
// The accounts stay `add account` commands before the load: the whole
// tree in one load (Account lines under their Parent) was measured slower,
// not faster (make bench, 5,000 users / 200 accounts, load average ~25:
// the load 156 s and 54.7 s of slurmdbd+MariaDB CPU, against 113 s and
// 37 s for the users alone after 2 s of add account commands).
//
// Names go between single quotes: a name or QOS with a character outside
// safeLoadName (none that syncd provisions: names are validated POSIX
// names and normalised account names) falls back to commands.
const loadMinAccounts = 10

// loadThreshold is cfg's load_min_accounts: 0 the default, < 0 never.
func loadThreshold(cfg Config) int {
	switch {
	case cfg.LoadMinAccounts < 0:
		return 1 << 30
	case cfg.LoadMinAccounts == 0:
		return loadMinAccounts
	}
	return cfg.LoadMinAccounts
}

// loadEOF ends the here-document a load step prints as.
const loadEOF = "SACCTMGR_LOAD"

// loadFile returns the load file adding every association of adds, in
// the order of keys (default accounts first), or "" when commands are the
// better way (few accounts) or the only safe one (an unusual name).
func loadFile(min int, cluster string, keys []assocBatch, adds map[assocBatch][]string, newDefault map[string]string,
	have *State, users map[string]*WantUser) (file string, undecided []string) {
	seen := map[string]bool{}
	accounts := map[string]bool{}
	for _, k := range keys {
		accounts[k.account] = true
	}
	if len(accounts) < min || !safeLoadName(cluster) {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# written by scimbridge: associations only (existing entities are left as they are)\nCluster - '%s'\n", cluster)
	last := ""
	for _, k := range keys {
		for _, s := range append([]string{k.account, k.def}, strings.Split(k.qos, ",")...) {
			if s != "" && !safeLoadName(s) {
				return "", nil
			}
		}
		if k.account != last {
			fmt.Fprintf(&b, "Parent - '%s'\n", k.account)
			last = k.account
		}
		fmt.Fprintf(&b, "# %d user(s) into account %s\n", len(adds[k]), k.account)
		for _, name := range adds[k] {
			if !safeLoadName(name) {
				return "", nil
			}
			fmt.Fprintf(&b, "User - '%s'", name)
			// DefaultAccount only for users new to slurmdbd: for a user
			// it already has (on any cluster) sacctmgr load does not
			// know the default and sends one modify per user (5,000
			// users: over 5 minutes on the lab). Users new to this
			// cluster only get theirs set by the plan's default-account
			// command afterwards; users already here keep theirs.
			switch {
			case have.Users[name] != nil:
			case have.UsersElsewhere[name]:
				if !seen[name] {
					seen[name] = true
					undecided = append(undecided, name)
				}
			default:
				def := newDefault[name]
				if def == "" {
					def = users[name].Default
				}
				if !safeLoadName(def) {
					return "", nil
				}
				fmt.Fprintf(&b, ":DefaultAccount='%s'", def)
			}
			if k.qos != "" {
				fmt.Fprintf(&b, ":QOS='%s'", k.qos)
			}
			if k.def != "" {
				fmt.Fprintf(&b, ":DefaultQOS='%s'", k.def)
			}
			b.WriteByte('\n')
		}
	}
	return b.String(), undecided
}

// safeLoadName: characters that need no quoting inside '...' of a load
// file, nor in a here-document.
func safeLoadName(s string) bool {
	if s == "" || strings.HasPrefix(s, "-") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@+", r)) {
			return false
		}
	}
	return true
}
