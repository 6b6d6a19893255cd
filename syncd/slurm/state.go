package slurm

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// State is what slurmdbd (and squeue) says, reduced to what the planner
// needs. Names are lowercase, as slurmdbd stores them.
type State struct {
	// Accounts by name: every account record, with where it has
	// associations.
	Accounts map[string]*AccountState
	// Users by name: associations on Cluster only.
	Users map[string]*UserState
	// UsersElsewhere: users with associations on other clusters.
	UsersElsewhere map[string]bool
	// QOS names that exist, and their settings.
	QOS      map[string]bool
	QOSAttrs map[string]*QOSState
	// Jobs counts unfinished jobs by user and account. UnnamedJobs counts
	// those whose uid squeue could not turn into a name, by account and
	// uid.
	Jobs        map[AssocKey]int
	UnnamedJobs map[string]map[uint32]int
	// JobList is every unfinished job, for the disable workflow.
	JobList []JobState
	// Ledger is what scimbridge itself set (see ledger.go); never nil.
	Ledger *Ledger
}

// AccountState is one account record.
type AccountState struct {
	Name string
	Org  string
	// Description of the account record; "hands-off" in it keeps syncd's
	// hands off the limits of a managed account (see doc.go).
	Description string
	// OnCluster: the account has its account-level association on the
	// configured cluster. Elsewhere: it has one on another cluster.
	OnCluster bool
	Elsewhere bool
	Parent    string
	// Limits set on the account's association on the cluster, by
	// canonical name (see limitFields); unset limits are absent.
	Limits map[string]string
	// Children are sub-accounts on the cluster.
	Children []string
	// QOS and DefaultQOS of the account's association on the cluster as
	// slurmdbd shows them (inherited from its parents when not set): what
	// a user association added without QOS= shows too (proof.go).
	QOS        []string
	DefaultQOS string
}

// QOSState is one QOS: its Description and settings (canonical, see
// qosFields; unset ones absent).
type QOSState struct {
	Name, Description string
	Attrs             map[string]string
}

// UserState is one user's associations on the cluster.
type UserState struct {
	Name           string
	DefaultAccount string
	Assocs         map[string]*AssocState // by account
}

// AssocState is one user association.
type AssocState struct {
	Account       string
	QOS           []string // sorted
	DefaultQOS    string
	MaxSubmitJobs string // "" when unset
}

// Blocked reports whether the association is blocked for new jobs, the
// state a removal waits in while the user still has jobs.
func (a *AssocState) Blocked() bool { return a.MaxSubmitJobs == "0" }

// JobState is one unfinished job as squeue shows it.
type JobState struct {
	ID, User, Account, State, Reason, Comment string
}

// AssocKey names one association.
type AssocKey struct{ User, Account string }

func (k AssocKey) String() string { return k.User + "@" + k.Account }

// Commands that read the state. Each is run as `sacctmgr -nP ARGS...`.
func accountQuery() []string {
	return []string{"show", "account", "format=account,organization,description"}
}

func assocQuery() []string {
	f := "format=cluster,account,user,parentname,qos,defaultqos"
	for _, l := range limitFields {
		f += "," + l.Field
	}
	return []string{"show", "assoc", f}
}

// defaultsQuery lists each user's default association on cluster: the
// same DefaultAccount `show user withassoc where cluster=X` prints, read
// as associations with is_def set. slurmdbd answers `show user withassoc`
// by matching every user against every association (5,000 users with
// 10,000 associations: 3.6 s, 1.3 s of slurmdbd CPU, measured on the lab
// under load); this is one indexed query (0.55 s, 0.05 s).
func defaultsQuery(cluster string) []string {
	return []string{"show", "assoc", "where", "cluster=" + cluster, "onlydefaults", "format=user,account"}
}

func qosQuery() []string {
	f := "format=name"
	for _, q := range qosFields {
		f += "," + q.Field
	}
	return []string{"show", "qos", f + ",description"}
}

// squeueArgs lists jobs that are not finished (squeue's default states:
// pending, running, suspended, completing, configuring) on every partition.
func squeueArgs() []string { return []string{"-h", "-a", "-o", "%U|%u|%a|%i|%T|%r|%k"} }

// ParseState builds a State from the outputs of the queries above. The
// parsers are strict about field counts: a format Slurm changed under us
// must fail loudly, not plan deletions from a misread table.
func ParseState(cluster, accounts, assocs, defaults, qos, jobs string) (*State, error) {
	cluster = strings.ToLower(cluster)
	s := &State{
		Accounts:       map[string]*AccountState{},
		Users:          map[string]*UserState{},
		UsersElsewhere: map[string]bool{},
		QOS:            map[string]bool{},
		QOSAttrs:       map[string]*QOSState{},
		Jobs:           map[AssocKey]int{},

		UnnamedJobs: map[string]map[uint32]int{},
		Ledger:      &Ledger{},
	}
	// The description is free text and last: it may hold "|".
	for i, line := range strings.Split(accounts, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("show account: line %d %q: %d fields, want 3", i+1, line, len(f))
		}
		a := s.account(strings.ToLower(strings.TrimSpace(f[0])))
		a.Org, a.Description = strings.TrimSpace(f[1]), strings.TrimSpace(f[2])
	}

	nfix := 6
	rows, err := splitRows(assocs, nfix+len(limitFields), "show assoc")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		cl, acct, user, parent := strings.ToLower(r[0]), strings.ToLower(r[1]), strings.ToLower(r[2]), strings.ToLower(r[3])
		a := s.account(acct)
		if cl != cluster {
			a.Elsewhere = true
			if user != "" {
				s.UsersElsewhere[user] = true
			}
			continue
		}
		if user == "" {
			a.OnCluster = true
			a.Parent = parent
			raw := map[string]string{}
			for i, l := range limitFields {
				if v := r[nfix+i]; v != "" {
					raw[l.Name] = v
				}
			}
			a.Limits = canonLimits(raw)
			a.QOS, a.DefaultQOS = splitList(r[4]), strings.ToLower(r[5])
			if parent != "" {
				p := s.account(parent)
				p.Children = append(p.Children, acct)
			}
			continue
		}
		u := s.user(user)
		as := &AssocState{Account: acct, QOS: splitList(r[4]), DefaultQOS: strings.ToLower(r[5])}
		for i, l := range limitFields {
			if l.Name == "MaxSubmitJobs" {
				as.MaxSubmitJobs = r[nfix+i]
			}
		}
		u.Assocs[acct] = as
	}

	rows, err = splitRows(defaults, 2, "show assoc onlydefaults")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		name, def := strings.ToLower(r[0]), strings.ToLower(r[1])
		if u, ok := s.Users[name]; ok && def != "" {
			u.DefaultAccount = def
		}
	}

	// The description is free text and last: it may hold "|".
	for i, line := range strings.Split(qos, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", len(qosFields)+2)
		if len(f) != len(qosFields)+2 {
			return nil, fmt.Errorf("show qos: line %d %q: %d fields, want %d", i+1, line, len(f), len(qosFields)+2)
		}
		name := strings.ToLower(strings.TrimSpace(f[0]))
		raw := map[string]string{}
		for j, q := range qosFields {
			if v := strings.TrimSpace(f[j+1]); v != "" {
				raw[q.Name] = v
			}
		}
		s.QOS[name] = true
		s.QOSAttrs[name] = &QOSState{Name: name, Description: strings.TrimSpace(f[len(f)-1]), Attrs: canonFields(qosFields, raw)}
	}

	// The comment is free text and last: it may hold "|". Rows of 3
	// fields (uid, user, account) are accepted too.
	rows = nil
	for i, line := range strings.Split(jobs, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 7)
		if len(f) != 3 && len(f) != 7 {
			return nil, fmt.Errorf("squeue: line %d %q: %d fields, want 7", i+1, line, len(f))
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		if len(f) == 7 {
			c := f[6]
			if c == "(null)" {
				c = ""
			}
			s.JobList = append(s.JobList, JobState{ID: f[3], User: strings.ToLower(f[1]), Account: strings.ToLower(f[2]), State: f[4], Reason: f[5], Comment: c})
		}
		rows = append(rows, f)
	}
	for _, r := range rows {
		uid, err := strconv.ParseUint(r[0], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("squeue: uid %q: %w", r[0], err)
		}
		name, acct := strings.ToLower(r[1]), strings.ToLower(r[2])
		// squeue prints "nobody" (or the number) for a uid NSS cannot name.
		if name == "" || name == "nobody" || name == r[0] {
			if s.UnnamedJobs[acct] == nil {
				s.UnnamedJobs[acct] = map[uint32]int{}
			}
			s.UnnamedJobs[acct][uint32(uid)]++
			continue
		}
		s.Jobs[AssocKey{name, acct}]++
	}
	for _, a := range s.Accounts {
		sort.Strings(a.Children)
	}
	return s, nil
}

func (s *State) account(name string) *AccountState {
	a, ok := s.Accounts[name]
	if !ok {
		a = &AccountState{Name: name}
		s.Accounts[name] = a
	}
	return a
}

func (s *State) user(name string) *UserState {
	u, ok := s.Users[name]
	if !ok {
		u = &UserState{Name: name, Assocs: map[string]*AssocState{}}
		s.Users[name] = u
	}
	return u
}

// splitRows splits `-nP` output into rows of exactly n fields.
func splitRows(out string, n int, what string) ([][]string, error) {
	var rows [][]string
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != n {
			return nil, fmt.Errorf("%s: line %d %q: %d fields, want %d", what, i+1, line, len(f), n)
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		rows = append(rows, f)
	}
	return rows, nil
}

// splitList splits Slurm's comma-separated list, lowercased and sorted.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.ToLower(strings.TrimSpace(x)); x != "" {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}
