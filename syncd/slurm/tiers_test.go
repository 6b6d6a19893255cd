package slurm

import (
	"strings"
	"testing"
)

func tierConfig() Config {
	cfg := testConfig()
	two := 2
	cfg.QOSSettings = map[string][]string{
		"general": {"GrpTRES=gres/gpu=6", "MaxTRESPA=gres/gpu=3", "MaxWall=3-0", "Priority=50"},
		"spot":    {"GrpTRES=gres/gpu=8", "MaxWall=1-0", "Priority=10", "PreemptMode=requeue", "GraceTime=30"},
	}
	cfg.ProjectQOS = []string{"Priority=100", "Preempt=spot"}
	cfg.Groups["ml-team"] = GroupConfig{Account: "ml", GuaranteedGPUs: &two, Tiers: []string{"general", "spot"}}
	return cfg
}

// Tiers on a fresh cluster: QOS created then set, the team's project QOS
// capped at its guarantee, the account capped too, associations with the
// project QOS as default.
func TestPlanTiers(t *testing.T) {
	cfg := tierConfig()
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	c := contents([]string{"alice", "bob"}, map[string][]string{"ml-team": {"alice", "bob"}})
	st := mustState(t, rootAccounts, baseAssocs(), "root|root\n", "normal\n", "")
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	got := strings.Join(commands(p), "\n")
	for _, want := range []string{
		"add qos general,ml-project,spot Description=managed by scimbridge",
		"modify qos where name=general set Priority=50 GrpTRES=gres/gpu=6 MaxWall=3-00:00:00 MaxTRESPerAccount=gres/gpu=3",
		"modify qos where name=ml-project set Priority=100 Preempt=spot GrpTRES=gres/gpu=2",
		"modify qos where name=spot set Priority=10 GraceTime=30 PreemptMode=requeue GrpTRES=gres/gpu=8 MaxWall=1-00:00:00",
		"add account ml Cluster=lab Parent=root Organization=scimbridge Description=managed by scimbridge GrpTRES=gres/gpu=2",
		"add user alice,bob Account=ml Cluster=lab QOS=general,ml-project,normal,spot DefaultQOS=ml-project",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q:\n%s", want, got)
		}
	}
	// Applied: the same settings read back in sacctmgr's spelling.
	qos := "normal\n" +
		qosRow("general", map[string]string{"Priority": "50", "GraceTime": "00:00:00", "PreemptMode": "cluster", "UsageFactor": "1.000000",
			"GrpTRES": "gres/gpu=6", "MaxWall": "3-00:00:00", "MaxTRESPerAccount": "gres/gpu=3"}) +
		qosRow("spot", map[string]string{"Priority": "10", "GraceTime": "00:00:30", "PreemptMode": "requeue", "UsageFactor": "1.000000",
			"GrpTRES": "gres/gpu=8", "MaxWall": "1-00:00:00"}) +
		qosRow("ml-project", map[string]string{"Priority": "100", "GraceTime": "00:00:00", "Preempt": "spot", "PreemptMode": "cluster",
			"UsageFactor": "1.000000", "GrpTRES": "gres/gpu=2"})
	st = mustState(t, rootAccounts+"ml|scimbridge|managed by scimbridge\n", baseAssocs()+
		assocLine("lab", "ml", "", "root", "normal", "", map[string]string{"GrpTRES": "gres/gpu=2"})+
		assocLine("lab", "ml", "alice", "", "general,ml-project,normal,spot", "ml-project", nil)+
		assocLine("lab", "ml", "bob", "", "general,ml-project,normal,spot", "ml-project", nil)+
		assocLine("lab", "landing", "", "root", "normal", "", map[string]string{"GrpTRES": "gres/gpu=0"})+
		assocLine("lab", "landing", "alice", "", "normal", "", nil)+
		assocLine("lab", "landing", "bob", "", "normal", "", nil),
		"root|root\nalice|landing\nbob|landing\n", qos, "")
	st.Accounts["landing"].Org = "scimbridge"
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	if !p.Empty() {
		t.Errorf("plan after apply not empty:\n%s", p)
	}
	// Drift on a QOS: reset, and told as drift once the ledger knows.
	st.QOSAttrs["general"].Attrs["MaxWall"] = "5-00:00:00"
	st.Ledger = &Ledger{QOS: map[string]map[string]string{"general": mustDesired(t, cfg, c, nil).QOSDefs["general"]}}
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p, "modify qos where name=general set MaxWall=3-00:00:00")
	if !hasNote(p, "drift: QOS general MaxWall is 5-00:00:00, changed outside scimbridge") {
		t.Errorf("notes: %v", p.Notes)
	}
	// A QOS of that name not managed by scimbridge: not changed.
	st.QOSAttrs["general"].Description = "site QOS"
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p)
	if !hasNote(p, "QOS general exists and is not managed by scimbridge") {
		t.Errorf("notes: %v", p.Notes)
	}
}

func TestTierConfigChecks(t *testing.T) {
	cfg := tierConfig()
	cfg.Groups["ml-team"] = GroupConfig{Account: "ml", GuaranteedGPUs: new(int), Limits: []string{"GrpTRES=gres/gpu=4"}}
	cfg.QOSSettings["bad"] = []string{"PreemptMode=sometimes"}
	cfg.ProjectQOS = []string{"GrpTRES=gres/gpu=3"}
	err := cfg.Check()
	for _, want := range []string{"guaranteed_gpus and a GrpTRES gres/gpu limit", `qos_settings.bad`, "project_qos: GrpTRES gres/gpu"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check error lacks %q: %v", want, err)
		}
	}
}

// qosRow is one `show qos` row as sacctmgr prints it.
func qosRow(name string, attrs map[string]string) string {
	f := []string{name}
	for _, q := range qosFields {
		f = append(f, attrs[q.Name])
	}
	return strings.Join(append(f, "managed by scimbridge"), "|") + "\n"
}

func TestLint(t *testing.T) {
	cfg := tierConfig()
	c := contents([]string{"alice"}, map[string][]string{"ml-team": {"alice"}})
	d := mustDesired(t, cfg, c, nil)
	bare := ParseSlurmConfig("Configuration data as of 2026-11-30T17:53:45\nAccountingStorageEnforce = associations\n" +
		"AccountingStorageTRES   = cpu,mem,energy,node,billing,fs/disk,vmem,pages\nPreemptType = preempt/none\nPreemptMode = OFF\nJobDefaults = (null)\n")
	var lines []string
	for _, f := range Lint(d, bare) {
		lines = append(lines, f.Line)
	}
	want := "AccountingStorageTRES=gres/gpu\nAccountingStorageEnforce=associations,limits,qos\nPreemptType=preempt/qos\nPreemptMode=REQUEUE\n" +
		"DefMemPerGPU=<node memory in MB / GPUs per node>\nDefCpuPerGPU=<CPUs per node / GPUs per node>"
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("lint lines:\n%s\nwant:\n%s", got, want)
	}
	good := ParseSlurmConfig("AccountingStorageEnforce = associations,limits,qos\nAccountingStorageTRES   = cpu,mem,gres/gpu\n" +
		"PreemptType = preempt/qos\nPreemptMode = REQUEUE\nJobDefaults = DefCpuPerGPU=1,DefMemPerGPU=1024\n")
	if f := Lint(d, good); len(f) != 0 {
		t.Errorf("lint on a good config: %v", f)
	}
}

// QOS Priority= is a factor of priority/multifactor only: under
// priority/basic the lint says the tiers' priorities do nothing.
func TestLintPriorityBasic(t *testing.T) {
	cfg := tierConfig()
	d := mustDesired(t, cfg, contents([]string{"alice"}, map[string][]string{"ml-team": {"alice"}}), nil)
	base := "AccountingStorageEnforce = associations,limits,qos\nAccountingStorageTRES   = cpu,mem,gres/gpu\n" +
		"PreemptType = preempt/qos\nPreemptMode = REQUEUE\nJobDefaults = DefCpuPerGPU=1,DefMemPerGPU=1024\n"
	f := Lint(d, ParseSlurmConfig(base+"PriorityType = priority/basic\n"))
	if len(f) != 1 || !strings.Contains(f[0].Problem, "general, ml-project, spot set Priority= but PriorityType is \"priority/basic\"") ||
		!strings.HasPrefix(f[0].Line, "PriorityType=priority/multifactor") {
		t.Errorf("lint under priority/basic: %+v", f)
	}
	if f := Lint(d, ParseSlurmConfig(base+"PriorityType = priority/multifactor\n")); len(f) != 0 {
		t.Errorf("lint under priority/multifactor: %+v", f)
	}
}
