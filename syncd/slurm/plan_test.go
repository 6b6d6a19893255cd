package slurm

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// The fixtures below are sacctmgr/squeue output in exactly the format the
// queries in state.go produce (captured from Slurm 22.05).

const rootAccounts = "root|root|default root account\n"

// assocLine builds one `show assoc` row: cluster, account, user, parent,
// qos, defaultqos, then the limit fields in limitFields order.
func assocLine(cluster, account, user, parent, qos, defqos string, limits map[string]string) string {
	f := []string{cluster, account, user, parent, qos, defqos}
	for _, l := range limitFields {
		f = append(f, limits[l.Name])
	}
	return strings.Join(f, "|") + "\n"
}

func baseAssocs() string {
	return assocLine("lab", "root", "", "", "normal", "", nil) + assocLine("lab", "root", "root", "", "normal", "", nil)
}

func testConfig() Config {
	return Config{
		Cluster:        "lab",
		DefaultAccount: "landing",
		QOS:            []string{"normal"},
		GroupPattern:   "^hpc-(.+)$",
		Groups: map[string]GroupConfig{
			"Physics": {Account: "phys", QOS: []string{"normal", "gpu"}, DefaultQOS: "normal", Limits: []string{"GrpTRES=gres/gpu=16"}},
		},
	}.WithDefaults()
}

func contents(users []string, groups map[string][]string) *snapshot.Contents {
	c := &snapshot.Contents{}
	for i, u := range users {
		c.Users = append(c.Users, snapshot.User{Name: u, UID: uint32(2000 + i), GID: 2000, Active: true})
	}
	gid := uint32(3000)
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		c.Groups = append(c.Groups, snapshot.Group{Name: g, GID: gid, Members: groups[g]})
		gid++
	}
	return c
}

// qosRows expands bare QOS names ("normal\ngpu\n") into `show qos` rows
// with no settings.
func qosRows(qos string) string {
	var b strings.Builder
	for _, l := range strings.Split(qos, "\n") {
		if l == "" {
			continue
		}
		if !strings.Contains(l, "|") {
			l += strings.Repeat("|", len(qosFields)) + "|" + l
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

func mustState(t *testing.T, accounts, assocs, users, qos, jobs string) *State {
	t.Helper()
	st, err := ParseState("lab", accounts, assocs, users, qosRows(qos), jobs)
	if err != nil {
		t.Fatalf("ParseState: %v", err)
	}
	return st
}

func mustDesired(t *testing.T, cfg Config, c *snapshot.Contents, r Resolver) *Desired {
	t.Helper()
	d, err := BuildDesired(cfg, c, r)
	if err != nil {
		t.Fatalf("BuildDesired: %v", err)
	}
	return d
}

func commands(p *Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, strings.Join(s.Args, " "))
	}
	return out
}

func expectCommands(t *testing.T, p *Plan, want ...string) {
	t.Helper()
	got := commands(p)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan commands:\n  got:\n    %s\n  want:\n    %s\nplan:\n%s", strings.Join(got, "\n    "), strings.Join(want, "\n    "), p)
	}
}

func hasNote(p *Plan, sub string) bool {
	for _, n := range p.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// A fresh cluster: QOS, accounts, then one add per account, landing first.
func TestPlanFreshCluster(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol", "dave"}, map[string][]string{
		"Physics":  {"alice", "bob"},
		"hpc-Chem": {"bob", "carol"},
		"staff":    {"dave"}, // not mapped
	})
	st := mustState(t, rootAccounts, baseAssocs(), "root|root\n", "normal\n", "")
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p,
		"add qos gpu Description=managed by scimbridge",
		"add account chem Cluster=lab Parent=root Organization=scimbridge Description=managed by scimbridge",
		"add account landing Cluster=lab Parent=root Organization=scimbridge Description=managed by scimbridge GrpTRES=gres/gpu=0",
		"add account phys Cluster=lab Parent=root Organization=scimbridge Description=managed by scimbridge GrpTRES=gres/gpu=16",
		"add user alice,bob,carol Account=landing Cluster=lab QOS=normal",
		"add user bob,carol Account=chem Cluster=lab QOS=normal",
		"add user alice,bob Account=phys Cluster=lab QOS=gpu,normal DefaultQOS=normal",
	)
	if !strings.Contains(p.String(), "sacctmgr -i add account phys Cluster=lab Parent=root Organization=scimbridge 'Description=managed by scimbridge' GrpTRES=gres/gpu=16\n") {
		t.Errorf("String() does not print a runnable command:\n%s", p)
	}
}

// The state a successful apply of the fresh plan leaves.
func appliedState(t *testing.T, jobs string) *State {
	accounts, assocs, users := appliedOutputs("lab")
	return mustState(t, accounts, assocs, users, "normal\ngpu\n", jobs)
}

// appliedOutputs is sacctmgr's answers (show account, show assoc, the
// defaults) for appliedState on cluster.
func appliedOutputs(cluster string) (accounts, assocs, defaults string) {
	accounts = rootAccounts + "chem|scimbridge|managed by scimbridge\nlanding|scimbridge|managed by scimbridge\nphys|scimbridge|managed by scimbridge\n"
	assocs = baseAssocs() +
		assocLine("lab", "chem", "", "root", "normal", "", nil) +
		assocLine("lab", "landing", "", "root", "normal", "", map[string]string{"GrpTRES": "gres/gpu=0"}) +
		assocLine("lab", "phys", "", "root", "normal", "", map[string]string{"GrpTRES": "gres/gpu=16"}) +
		assocLine("lab", "landing", "alice", "", "normal", "", nil) +
		assocLine("lab", "landing", "bob", "", "normal", "", nil) +
		assocLine("lab", "landing", "carol", "", "normal", "", nil) +
		assocLine("lab", "chem", "bob", "", "normal", "", nil) +
		assocLine("lab", "chem", "carol", "", "normal", "", nil) +
		assocLine("lab", "phys", "alice", "", "gpu,normal", "normal", nil) +
		assocLine("lab", "phys", "bob", "", "gpu,normal", "normal", nil)
	assocs = strings.ReplaceAll(assocs, "lab|", cluster+"|")
	return accounts, assocs, "root|root\nalice|landing\nbob|landing\ncarol|landing\n"
}

func TestPlanNothingToDo(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), appliedState(t, ""))
	expectCommands(t, p)
	if !p.Empty() || !strings.Contains(p.String(), "nothing to do") {
		t.Errorf("plan not empty:\n%s", p)
	}
}

func TestPlanRemovalAndBlock(t *testing.T) {
	cfg := testConfig()
	// bob left Physics (no jobs there), carol left hpc-chem and every
	// other group while a job of hers runs in chem.
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice"}, "hpc-chem": {"bob"}})
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), appliedState(t, "2002|carol|chem\n2002|carol|chem\n"))
	expectCommands(t, p,
		"modify user where name=carol cluster=lab set DefaultAccount=chem",
		"modify user where name=carol account=chem cluster=lab set MaxSubmitJobs=0",
		"delete user where name=carol account=landing cluster=lab",
		"delete user where name=bob account=phys cluster=lab",
	)
	if !hasNote(p, "carol@chem has 2 pending or running job(s)") {
		t.Errorf("no note about carol's jobs: %v", p.Notes)
	}
	if p.Removals() != 2 {
		t.Errorf("Removals = %d, want 2", p.Removals())
	}
}

// Once carol's job is gone and her association is blocked, it goes; chem
// still has bob, so it stays.
func TestPlanBlockedRemovedWhenIdle(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob"}})
	st := appliedState(t, "")
	st.Users["carol"].Assocs["chem"].MaxSubmitJobs = "0"
	delete(st.Users["carol"].Assocs, "landing")
	st.Users["carol"].DefaultAccount = "chem"
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p, "delete user where name=carol cluster=lab")
}

func TestPlanRemovesEmptyManagedAccount(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}})
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), appliedState(t, ""))
	// Non-default associations first (slurmdbd refuses a default after a
	// non-default in one command), then each user's last one.
	expectCommands(t, p,
		"delete user where name=bob,carol account=chem cluster=lab",
		"delete user where name=carol cluster=lab",
		"delete account where name=chem",
	)
	if p.Managed != 7 || p.Removals() != 3 {
		t.Errorf("Managed=%d Removals=%d, want 7 and 3 (for the removal guard)", p.Managed, p.Removals())
	}
}

// Unmarked accounts are never touched, even when a group maps to one, and
// users on them are not removed.
func TestPlanLeavesUnmanagedAccounts(t *testing.T) {
	cfg := testConfig()
	accounts := rootAccounts + "handmade|physics-dept|made by hand\nphys|physics-dept|a|b\n"
	assocs := baseAssocs() +
		assocLine("lab", "handmade", "", "root", "normal", "", nil) +
		assocLine("lab", "phys", "", "root", "normal", "", nil) +
		assocLine("lab", "handmade", "zed", "", "normal", "", nil) +
		assocLine("lab", "phys", "yan", "", "normal", "", nil)
	st := mustState(t, accounts, assocs, "root|root\nzed|handmade\nyan|phys\n", "normal\ngpu\n", "")
	c := contents([]string{"alice"}, map[string][]string{"Physics": {"alice"}})
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	for _, cmd := range commands(p) {
		if strings.Contains(cmd, "handmade") || strings.Contains(cmd, "phys") || strings.Contains(cmd, "zed") || strings.Contains(cmd, "yan") {
			t.Errorf("plan touches an unmanaged account: %s", cmd)
		}
	}
	expectCommands(t, p,
		"add account landing Cluster=lab Parent=root Organization=scimbridge Description=managed by scimbridge GrpTRES=gres/gpu=0",
		"add user alice Account=landing Cluster=lab QOS=normal",
	)
	if !hasNote(p, "account phys exists and is not managed") {
		t.Errorf("no conflict note: %v", p.Notes)
	}
}

func TestPlanHeldUserNotAdded(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob"}, map[string][]string{"Physics": {"alice", "bob"}})
	resolve := func(name string) (uint32, bool) {
		if name == "bob" {
			return 0, false
		}
		return 2000, true
	}
	st := mustState(t, rootAccounts, baseAssocs(), "root|root\n", "normal\ngpu\n", "")
	p := MakePlan(cfg, mustDesired(t, cfg, c, resolve), st)
	for _, cmd := range commands(p) {
		if strings.Contains(cmd, "bob") {
			t.Errorf("plan adds bob, who does not resolve: %s", cmd)
		}
	}
	if !hasNote(p, "user bob does not resolve") {
		t.Errorf("no note about bob: %v", p.Notes)
	}
	// A uid that differs from the snapshot's is held too.
	shadow := func(name string) (uint32, bool) { return 4242, true }
	p = MakePlan(cfg, mustDesired(t, cfg, c, shadow), st)
	if strings.Contains(strings.Join(commands(p), "\n"), "add user") || !hasNote(p, "resolves to uid 4242") {
		t.Errorf("shadowed users were added:\n%s", p)
	}
}

func TestPlanDriftAndUnblock(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	st := appliedState(t, "")
	st.Users["alice"].Assocs["phys"].QOS = []string{"normal"} // changed by hand
	st.Users["bob"].Assocs["chem"].MaxSubmitJobs = "0"        // blocked, and back in the group
	st.Ledger = &Ledger{Blocks: []string{"bob@chem"}, Accounts: map[string]map[string]string{"phys": {"GrpTRES": "gres/gpu=16"}},
		AssocQOS: map[string]string{"phys": "gpu,normal|normal"}}
	st.Accounts["phys"].Limits["GrpTRES"] = "gres/gpu=64"                     // changed by hand
	st.Users["mallory"] = &UserState{Name: "mallory", DefaultAccount: "phys", // not a SCIM user
		Assocs: map[string]*AssocState{"phys": {Account: "phys", QOS: []string{"normal"}}}}
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p,
		"modify account where name=phys cluster=lab set GrpTRES=gres/gpu=16",
		"modify user where name=alice account=phys cluster=lab set QOS=gpu,normal DefaultQOS=normal",
		"modify user where name=bob account=chem cluster=lab set MaxSubmitJobs=-1",
		"delete user where name=mallory cluster=lab",
	)
	for _, n := range []string{"drift: account phys GrpTRES is gres/gpu=64, changed outside scimbridge (it set gres/gpu=16)", "drift: alice@phys has QOS \"normal\" default \"normal\", changed outside scimbridge (it set \"gpu,normal default normal\")",
		"drift: mallory is on managed account phys but is not a SCIM user (added outside scimbridge)"} {
		if !hasNote(p, n) {
			t.Errorf("missing note %q in %v", n, p.Notes)
		}
	}
}

// Without a landing account, a user's default is their first account; a
// user leaving their default account is switched before the delete.
func TestPlanDefaultSwitchBeforeDelete(t *testing.T) {
	cfg := testConfig()
	cfg.DefaultAccount = ""
	cfg.DefaultAccountLimits = nil
	accounts := rootAccounts + "chem|scimbridge|managed by scimbridge\nphys|scimbridge|managed by scimbridge\n"
	assocs := baseAssocs() +
		assocLine("lab", "chem", "", "root", "normal", "", nil) +
		assocLine("lab", "phys", "", "root", "normal", "", map[string]string{"GrpTRES": "gres/gpu=16"}) +
		assocLine("lab", "chem", "bob", "", "normal", "", nil) +
		assocLine("lab", "phys", "bob", "", "gpu,normal", "normal", nil)
	st := mustState(t, accounts, assocs, "root|root\nbob|chem\n", "normal\ngpu\n", "")
	c := contents([]string{"bob", "eve"}, map[string][]string{"Physics": {"bob", "eve"}, "hpc-chem": {"eve"}})
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p,
		"add user eve Account=chem Cluster=lab QOS=normal",
		"add user eve Account=phys Cluster=lab QOS=gpu,normal DefaultQOS=normal",
		"modify user where name=bob cluster=lab set DefaultAccount=phys",
		"delete user where name=bob account=chem cluster=lab",
	)
}

func TestPlanBatchesLargeGroups(t *testing.T) {
	cfg := testConfig()
	var names []string
	for i := 0; i < 1200; i++ {
		names = append(names, "u"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+strconv.Itoa(i))
	}
	c := contents(names, map[string][]string{"Physics": names})
	st := mustState(t, rootAccounts, baseAssocs(), "root|root\n", "normal\ngpu\n", "")
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	adds := 0
	for _, s := range p.Steps {
		if s.Phase == PhaseAssociations {
			adds++
		}
	}
	// 1200 users, 2 accounts, at most maxNames per command.
	if adds != 6 {
		t.Errorf("%d add commands for 1200 users in 2 accounts, want 6", adds)
	}
}

// A job squeue cannot name (its user is gone from NSS) keeps the
// associations of users who left SCIM on that account, blocked.
func TestPlanUnnamedJobBlocksRemoval(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob"}})
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), appliedState(t, "2002|nobody|chem\n"))
	expectCommands(t, p,
		"modify user where name=carol cluster=lab set DefaultAccount=chem",
		"modify user where name=carol account=chem cluster=lab set MaxSubmitJobs=0",
		"delete user where name=carol account=landing cluster=lab",
	)
	// carol still in the snapshot (uid 2002), in no group: only a job of
	// her uid holds her back.
	c = contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob"}})
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), appliedState(t, "2000|nobody|chem\n"))
	expectCommands(t, p,
		"delete user where name=carol account=chem cluster=lab",
		"delete user where name=carol cluster=lab",
	)
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), appliedState(t, "2002|nobody|chem\n"))
	if !hasNote(p, "carol@chem has 1 pending") {
		t.Errorf("carol's unnamed job did not block her removal:\n%s", p)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"Physics":               "physics",
		"HPC Chem & Bio":        "hpc_chem_bio",
		"--x--":                 "x",
		"ünïcode":               "n_code",
		"a.b/c":                 "a_b_c",
		strings.Repeat("a", 80): strings.Repeat("a", 64),
		"%%%":                   "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	bad := Config{
		GroupPattern: "(",
		Groups:       map[string]GroupConfig{"g": {Account: "Bad Name", QOS: []string{"a"}, DefaultQOS: "b", Limits: []string{"Nope=1"}}},
		Limits:       []string{"GrpTRES"},
	}.WithDefaults()
	err := bad.Check()
	if err == nil {
		t.Fatal("Check accepted a bad config")
	}
	for _, want := range []string{"cluster is required", "group_pattern", `account "Bad Name"`, `default_qos "b"`, `unknown key "Nope"`, `limit "GrpTRES"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error lacks %q:\n%v", want, err)
		}
	}
	if err := testConfig().Check(); err != nil {
		t.Errorf("good config: %v", err)
	}
}

func TestLimitsNormalised(t *testing.T) {
	l, err := parseLimits([]string{"grptres=gres/gpu=2,CPU=4", "MaxWall=1440", "GrpWall=90"})
	if err != nil {
		t.Fatal(err)
	}
	if l["GrpTRES"] != "cpu=4,gres/gpu=2" || l["MaxWall"] != "1-00:00:00" || l["GrpWall"] != "01:30:00" {
		t.Errorf("parseLimits = %v", l)
	}
}

func TestParseStateRejectsUnexpectedFormat(t *testing.T) {
	if _, err := ParseState("lab", "root|root\n", "", "", "", ""); err == nil {
		t.Error("ParseState accepted a 2-field account row")
	}
	if _, err := ParseState("lab", rootAccounts, "lab|root||\n", "", "", ""); err == nil {
		t.Error("ParseState accepted a short assoc row")
	}
}

// Many accounts at once: one `sacctmgr load` whose file adds only the
// missing associations, gives a new user their default account and an
// existing user the default they already have (a load applies it), and
// keeps each batch's reason as a comment. The plan prints it as a
// here-document, so the printed plan is still what apply runs.
func TestPlanManyAccountsLoad(t *testing.T) {
	cfg := testConfig()
	groups := map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}}
	for i := 0; i < loadMinAccounts; i++ {
		groups["hpc-t"+strconv.Itoa(i)] = []string{"alice", "dave"}
	}
	c := contents([]string{"alice", "bob", "carol", "dave"}, groups)
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), appliedState(t, ""))
	var load *Step
	for i, s := range p.Steps {
		if s.Phase == PhaseAssociations {
			if load != nil || s.Stdin == "" {
				t.Fatalf("want exactly one load step for the associations, got:\n%s", p)
			}
			load = &p.Steps[i]
		}
	}
	if load == nil || strings.Join(load.Args, " ") != "load file=/dev/stdin" {
		t.Fatalf("no load step:\n%s", p)
	}
	f := load.Stdin
	for _, w := range []string{
		"Cluster - 'lab'\n",
		"Parent - 'landing'\n# 1 user(s) into account landing\nUser - 'dave':DefaultAccount='landing':QOS='normal'\n",
		// alice exists: the file gives no DefaultAccount (sacctmgr would
		// send one modify per user); dave is new to slurmdbd: it does.
		"Parent - 't0'\n# 2 user(s) into account t0\nUser - 'alice':QOS='normal'\nUser - 'dave':DefaultAccount='landing':QOS='normal'\n",
	} {
		if !strings.Contains(f, w) {
			t.Errorf("load file lacks %q:\n%s", w, f)
		}
	}
	// alice already is in landing and phys: not in the file again.
	if strings.Contains(f, "Parent - 'phys'") || strings.Count(f, "User - 'alice'") != loadMinAccounts {
		t.Errorf("load file adds what exists:\n%s", f)
	}
	out := p.String()
	if !strings.Contains(out, "sacctmgr -i load file=/dev/stdin <<'SACCTMGR_LOAD'\n# written by scimbridge") || !strings.Contains(out, "\nSACCTMGR_LOAD\n") {
		t.Errorf("plan does not print the load as a here-document:\n%s", out)
	}
	if s := load.Short("sacctmgr"); strings.Contains(s, "\n") {
		t.Errorf("log form has the file: %q", s)
	}

	// load_min_accounts = -1: one `add user` per account, as before.
	never := cfg
	never.LoadMinAccounts = -1
	if p := MakePlan(never, mustDesired(t, never, c, nil), appliedState(t, "")); strings.Contains(p.String(), "load file=") ||
		len(p.Steps) < loadMinAccounts {
		t.Errorf("load_min_accounts = -1 still loads:\n%s", p)
	}

	// dave has associations on another cluster of this slurmdbd: no
	// DefaultAccount in the file, one default-account command after it.
	st := appliedState(t, "")
	st.UsersElsewhere = map[string]bool{"dave": true}
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	if out := p.String(); strings.Contains(out, "User - 'dave':DefaultAccount") ||
		!strings.Contains(out, "sacctmgr -i modify user where name=dave cluster=lab set DefaultAccount=landing") {
		t.Errorf("a user known on another cluster: want no DefaultAccount in the load and a modify after it:\n%s", out)
	}

	// A name a load file cannot carry safely: commands instead.
	c.Users = append(c.Users, snapshot.User{Name: "o'brien", UID: 2999, GID: 2000, Active: true})
	c.Groups[len(c.Groups)-1].Members = append(c.Groups[len(c.Groups)-1].Members, "o'brien")
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), appliedState(t, ""))
	for _, s := range p.Steps {
		if s.Stdin != "" {
			t.Fatalf("load used with a name it cannot quote:\n%s", p)
		}
	}
}

// MaxSubmitJobs=0 on a whole (hands-off) account: one note for the
// account, with advice that lifts it (modify account), not one per member
// advising a per-user lift that would not help.
func TestPlanWholeAccountBlockedOnce(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	st := appliedState(t, "")
	st.Accounts["chem"].Description = "managed by scimbridge; hands-off"
	st.Accounts["chem"].Limits["MaxSubmitJobs"] = "0"
	st.Users["bob"].Assocs["chem"].MaxSubmitJobs = "0"
	st.Users["carol"].Assocs["chem"].MaxSubmitJobs = "0"
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	var about []string
	for _, n := range p.Notes {
		if strings.Contains(n, "chem") && strings.Contains(n, "blocked") {
			about = append(about, n)
		}
	}
	if len(about) != 1 || !strings.Contains(about[0], "account chem is blocked as a whole (MaxSubmitJobs=0 on the account): none of its 2 member(s)") ||
		!strings.Contains(about[0], "sacctmgr -i modify account where name=chem cluster=lab set MaxSubmitJobs=-1") {
		t.Errorf("notes about chem's block: %q", about)
	}
	for _, s := range p.Steps {
		if strings.Contains(strings.Join(s.Args, " "), "MaxSubmitJobs") {
			t.Errorf("plan touches the admin's account block: %s", s.Command("sacctmgr"))
		}
	}
}

// Labels say who caused a change: "source:" for a user gone from the
// identity provider, "config:" for a QOS the config now gives, "drift:"
// only for an edit made outside (an admin's DefaultAccount on another
// managed account, reverted). The ledger is what scimbridge left behind.
func TestPlanLabels(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	st := appliedState(t, "")
	// What the previous pass left: defaults on landing, phys with QOS normal only
	// (the config has since added the gpu tier), dave provisioned.
	st.Ledger = &Ledger{
		Users:    map[string]string{"alice": "landing", "bob": "landing", "carol": "landing", "dave": "landing"},
		AssocQOS: map[string]string{"phys": "normal|normal"},
	}
	st.Users["alice"].Assocs["phys"].QOS = []string{"normal"}
	st.Users["bob"].Assocs["phys"].QOS = []string{"normal"}
	st.Users["carol"].DefaultAccount = "chem"                              // an admin's edit, to another managed account
	st.Users["dave"] = &UserState{Name: "dave", DefaultAccount: "landing", // deleted at the IdP
		Assocs: map[string]*AssocState{"landing": {Account: "landing", QOS: []string{"normal"}}}}
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	for _, n := range []string{
		`config: QOS of 2 association(s) in phys "normal" -> "gpu,normal" (alice, bob)`,
		"drift: DefaultAccount chem -> landing for 1 user(s) (DefaultAccount set outside scimbridge (it set landing)): carol",
		"source: dave is no longer a SCIM user (removed or renamed at the identity provider); removing from landing",
	} {
		if !hasNote(p, n) {
			t.Errorf("missing note %q in:\n%s", n, strings.Join(p.Notes, "\n"))
		}
	}
	for _, n := range p.Notes {
		if strings.HasPrefix(n, "drift:") && !strings.Contains(n, "carol") {
			t.Errorf("labelled drift, but not an outside edit: %s", n)
		}
	}
	expectCommands(t, p,
		"modify user where name=alice,bob account=phys cluster=lab set QOS=gpu,normal DefaultQOS=normal",
		"modify user where name=carol cluster=lab set DefaultAccount=landing",
		"delete user where name=dave cluster=lab",
	)
}

// The ledger records what a converged pass left: each provisioned user's
// default account and each account's members' QOS; a user with no
// association left is dropped.
func TestLedgerRecordsUsersAndQOS(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	st := appliedState(t, "")
	l := nextLedger(cfg, mustDesired(t, cfg, c, nil), st, &Ledger{Users: map[string]string{"gone": "landing"}}, nil, nil)
	if l.Users["alice"] != "landing" || l.Users["carol"] != "landing" || len(l.Users) != 3 {
		t.Errorf("users: %v", l.Users)
	}
	if l.AssocQOS["phys"] != "gpu,normal|normal" || l.AssocQOS["landing"] != "normal|" {
		t.Errorf("assoc QOS: %v", l.AssocQOS)
	}
	// An admin changed carol's default: the ledger keeps what scimbridge set.
	st.Users["carol"].DefaultAccount = "chem"
	l = nextLedger(cfg, mustDesired(t, cfg, c, nil), st, l, nil, nil)
	if l.Users["carol"] != "landing" {
		t.Errorf("carol: %q, want landing (scimbridge's, not the admin's)", l.Users["carol"])
	}
}
