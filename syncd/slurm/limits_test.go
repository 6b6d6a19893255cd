package slurm

import (
	"strings"
	"testing"
)

// Every time form of sacctmgr(1), as the config may spell it, against
// what slurmdbd 22.05 printed back for it on the lab (measured).
func TestCanonTimes(t *testing.T) {
	for in, want := range map[string]string{
		"60":         "01:00:00",
		"90":         "01:30:00",
		"1440":       "1-00:00:00",
		"2:00:00":    "02:00:00",
		"02:00:00":   "02:00:00",
		"120:30":     "02:01:00", // minutes:seconds, seconds round up
		"00:30":      "00:01:00",
		"1-0":        "1-00:00:00",
		"1-2":        "1-02:00:00",
		"1-2:30":     "1-02:30:00",
		"1-02:30:15": "1-02:31:00",
		"2-00:00:00": "2-00:00:00",
		"0":          "00:00:00",
		"-1":         "",
		"UNLIMITED":  "",
		"infinite":   "",
	} {
		got, err := canonLimit("MaxWall", in, false)
		if err != nil || got != want {
			t.Errorf("MaxWall=%s: %q, %v; want %q", in, got, err, want)
		}
		// What sacctmgr prints reads back to the same value.
		if want != "" {
			if back, err := canonLimit("MaxWall", want, true); err != nil || back != want {
				t.Errorf("read back %q: %q, %v", want, back, err)
			}
		}
	}
	for _, bad := range []string{"1:2:3:4", "a", "1-", "-5", "1-2-3", ":30"} {
		if _, err := canonLimit("GrpWall", bad, false); err == nil {
			t.Errorf("GrpWall=%s accepted", bad)
		}
	}
}

func TestCanonTRES(t *testing.T) {
	for in, want := range map[string]string{
		"gres/gpu=2,cpu=8":                "cpu=8,gres/gpu=2",
		"CPU=8,gres/GPU=2":                "cpu=8,gres/gpu=2",
		"mem=1024":                        "mem=1024M",
		"mem=1G":                          "mem=1024M",
		"mem=2T":                          "mem=2097152M",
		"mem=1536M":                       "mem=1536M",
		"cpu=-1,gres/gpu=4":               "gres/gpu=4",
		"billing=10,node=1,cpu=4,mem=500": "billing=10,cpu=4,mem=500M,node=1",
	} {
		got, err := canonLimit("GrpTRES", in, false)
		if err != nil || got != want {
			t.Errorf("GrpTRES=%s: %q, %v; want %q", in, got, err, want)
		}
	}
	// sacctmgr's own printing, with units and decimals.
	for in, want := range map[string]string{
		"billing=10,cpu=4,gres/gpu=2,mem=1G,node=1": "billing=10,cpu=4,gres/gpu=2,mem=1024M,node=1",
		"mem=1.50G":  "mem=1536M",
		"mem=1.50T":  "mem=1572864M",
		"mem=1500M":  "mem=1500M",
		"gres/gpu=0": "gres/gpu=0",
	} {
		got, err := canonLimit("GrpTRES", in, true)
		if err != nil || got != want {
			t.Errorf("printed GrpTRES=%s: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"mem=1.5G", "cpu=1K", "cpu", "cpu=4,cpu=5", "gpu=x"} {
		if _, err := canonLimit("GrpTRES", bad, false); err == nil {
			t.Errorf("GrpTRES=%s accepted", bad)
		}
	}
}

func TestCanonScalars(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"GrpJobs", "0", "0"}, {"GrpJobs", "-1", ""}, {"MaxSubmitJobs", "10", "10"},
		{"Fairshare", "1", ""}, {"Fairshare", "-1", ""}, {"Fairshare", "50", "50"}, {"Fairshare", "Parent", "parent"},
		{"Priority", "10", "10"},
	} {
		got, err := canonLimit(c.name, c.in, false)
		if err != nil || got != c.want {
			t.Errorf("%s=%s: %q, %v; want %q", c.name, c.in, got, err, c.want)
		}
	}
	if _, err := parseLimits([]string{"MaxWall=1:00:00", "maxwalldurationperjob=60"}); err == nil || !strings.Contains(err.Error(), "already set") {
		t.Errorf("a limit given twice (by alias) was accepted: %v", err)
	}
}

// What the plan sends to change have into want: only the differences,
// TRES per entry, and -1 for what the config dropped.
func TestLimitsDiff(t *testing.T) {
	have := canonLimits(map[string]string{"GrpTRES": "cpu=64,gres/gpu=16", "MaxWall": "02:00:00", "GrpJobs": "5", "Fairshare": "50", "MaxJobs": "10"})
	want, err := parseLimits([]string{"GrpTRES=gres/gpu=16", "MaxWall=2:00:00", "GrpJobs=5"})
	if err != nil {
		t.Fatal(err)
	}
	args, _ := limitsDiff(have, want)
	if got := strings.Join(args, " "); got != "Fairshare=-1 GrpTRES=cpu=-1 MaxJobs=-1" {
		t.Errorf("diff = %q", got)
	}
	if args, _ := limitsDiff(want, want); len(args) != 0 {
		t.Errorf("equal limits differ: %v", args)
	}
	// A config spelled differently from the read-back is equal.
	a, _ := parseLimits([]string{"MaxWall=1-0", "GrpTRES=gres/gpu=2,mem=1G", "Fairshare=1"})
	b := canonLimits(map[string]string{"MaxWall": "1-00:00:00", "GrpTRES": "gres/gpu=2,mem=1G", "Fairshare": "1"})
	if args, _ := limitsDiff(b, a); len(args) != 0 {
		t.Errorf("same limits in other spellings differ: %v", args)
	}
}

// The plan after an apply is empty; a limit dropped from the config is
// cleared and told as a config change, one changed by hand as drift.
func TestPlanLimitsConfigChangeVsDrift(t *testing.T) {
	cfg := testConfig()
	cfg.Groups["Physics"] = GroupConfig{Account: "phys", QOS: []string{"normal", "gpu"}, DefaultQOS: "normal",
		Limits: []string{"GrpTRES=gres/gpu=16", "MaxWall=2:00:00"}}
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	st := appliedState(t, "")
	st.Accounts["phys"].Limits = canonLimits(map[string]string{"GrpTRES": "cpu=64,gres/gpu=16", "MaxWall": "02:00:00", "GrpJobs": "7"})
	// scimbridge last set cpu=64 and GrpJobs=7 (since dropped from the
	// config); the admin set nothing.
	st.Ledger = &Ledger{Accounts: map[string]map[string]string{"phys": canonLimits(map[string]string{"GrpTRES": "cpu=64,gres/gpu=16", "MaxWall": "2:00:00", "GrpJobs": "7"})}}
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p, "modify account where name=phys cluster=lab set GrpTRES=cpu=-1 GrpJobs=-1")
	if !hasNote(p, "config: account phys GrpTRES cpu=64,gres/gpu=16 -> gres/gpu=16") || hasNote(p, "drift") {
		t.Errorf("config change not told as such: %v", p.Notes)
	}
	// The same difference where scimbridge had set something else: drift.
	st.Ledger = &Ledger{Accounts: map[string]map[string]string{"phys": {"GrpTRES": "gres/gpu=16", "MaxWall": "02:00:00"}}}
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	if !hasNote(p, "drift: account phys GrpJobs is 7, changed outside scimbridge (it set unset)") {
		t.Errorf("drift not told: %v", p.Notes)
	}
	// Hands-off in the Description: reported, not reset.
	st.Accounts["phys"].Description = "managed by scimbridge; limits hands-off (ticket 42)"
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p)
	if !hasNote(p, "account phys is hands-off") {
		t.Errorf("hands-off not told: %v", p.Notes)
	}
}

// An admin's block (MaxSubmitJobs=0 that scimbridge did not set) and an
// admin's DefaultAccount on an unmanaged account survive; a hand-added
// association goes with its true reason.
func TestPlanRespectsAdminEdits(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	st := appliedState(t, "")
	st.Users["alice"].Assocs["phys"].MaxSubmitJobs = "0"
	st.Accounts["handmade"] = &AccountState{Name: "handmade", Org: "dept", OnCluster: true, Parent: "root", Limits: map[string]string{}}
	st.Users["bob"].Assocs["handmade"] = &AssocState{Account: "handmade"}
	st.Users["bob"].DefaultAccount = "handmade"
	st.Users["carol"].Assocs["phys"] = &AssocState{Account: "phys", QOS: []string{"gpu", "normal"}, DefaultQOS: "normal"}
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p, "delete user where name=carol account=phys cluster=lab")
	if p.Steps[0].Why != `1 user(s) off phys: in none of the groups mapped to phys ("Physics")` {
		t.Errorf("removal reason: %q", p.Steps[0].Why)
	}
	if !hasNote(p, "alice@phys is blocked (MaxSubmitJobs=0) and scimbridge did not set that block") ||
		!hasNote(p, "bob keeps DefaultAccount handmade") {
		t.Errorf("notes: %v", p.Notes)
	}
}

// issue 9: an explicit mapping wins over the pattern; two pattern groups
// on one account are a refused conflict that leaves the account as it is.
func TestMappingConflicts(t *testing.T) {
	cfg := testConfig()
	cfg.Groups["ml-team"] = GroupConfig{Account: "ml", QOS: []string{"normal", "gpu"}, DefaultQOS: "normal", Limits: []string{"GrpTRES=gres/gpu=8"}}
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{
		"hpc-ml": {"alice"}, "ml-team": {"bob"}, // hpc-ml sorts first
		"hpc-chem": {"carol"}, "hpc-CHEM": {"alice"},
	})
	d := mustDesired(t, cfg, c, nil)
	ml := d.Accounts["ml"]
	if ml == nil || ml.Limits["GrpTRES"] != "gres/gpu=8" || strings.Join(ml.Groups, ",") != "ml-team" {
		t.Fatalf("ml = %+v", ml)
	}
	if d.Users["alice"] != nil {
		t.Error("alice (hpc-ml, ignored) was mapped to ml")
	}
	if d.Accounts["chem"] != nil || d.Frozen["chem"] == "" {
		t.Errorf("chem not frozen: %+v %v", d.Accounts["chem"], d.Frozen)
	}
	// Frozen: carol's association there is kept, nothing added.
	st := appliedState(t, "")
	p := MakePlan(cfg, d, st)
	for _, cmd := range commands(p) {
		if strings.Contains(cmd, "chem") {
			t.Errorf("plan touches frozen chem: %s", cmd)
		}
	}
	if len(p.Conflicts) != 2 || !strings.Contains(p.String(), `# CONFLICT: group "hpc-ml" matches group_pattern`) ||
		!strings.Contains(p.String(), `# CONFLICT: groups "hpc-CHEM", "hpc-chem" all map to account "chem"`) {
		t.Errorf("conflicts not reported:\n%s", p)
	}
	// Two explicit groups on one account must agree.
	cfg.Groups["ml-extra"] = GroupConfig{Account: "ML"}
	if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), `groups "ml-extra", "ml-team" all map to account "ml"`) {
		t.Errorf("Check: %v", err)
	}
	cfg.Groups["ml-extra"] = cfg.Groups["ml-team"]
	if err := cfg.Check(); err != nil {
		t.Errorf("two explicit groups with the same settings: %v", err)
	}
}

// hands_off_users: nothing of theirs is added, removed or changed.
func TestPlanHandsOffUsers(t *testing.T) {
	cfg := testConfig()
	cfg.HandsOffUsers = []string{"Carol", "bob"}
	// carol left hpc-chem, bob is new to Physics: neither is touched.
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice"}, "hpc-chem": {"bob"}})
	st := appliedState(t, "")
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p)
	if !hasNote(p, "carol is in hands_off_users") {
		t.Errorf("notes: %v", p.Notes)
	}
}
