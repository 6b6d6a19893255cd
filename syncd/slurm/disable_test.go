package slurm

import (
	"testing"
)

func TestPlanDisabledJobs(t *testing.T) {
	cfg := testConfig()
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	c.Users[1].Active = false // bob
	jobs := "2001|bob|chem|11|PENDING|Priority|(null)\n" +
		"2001|bob|chem|12|PENDING|Resources|my own comment\n" +
		"2001|bob|phys|13|RUNNING|None|(null)\n" +
		"2001|bob|phys|14|PENDING|JobHeldAdmin|(null)\n" + // an admin's hold
		"2000|alice|phys|15|PENDING|Priority|(null)\n"
	st := appliedState(t, jobs)
	p := MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p,
		"hold 11,12",
		"update jobid=11 Comment=scimbridge: held, user bob is disabled in the identity provider; released when re-enabled")
	if p.Steps[0].Bin != "scontrol" || len(p.Held) != 2 {
		t.Errorf("steps: %+v held %v", p.Steps, p.Held)
	}
	cfg.DisabledRunningJobs, cfg.DisabledPendingJobs = "cancel", "cancel"
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p, "11 12 13 14")
	// bob enabled again: only the jobs scimbridge held are released.
	c.Users[1].Active = true
	cfg = testConfig()
	st = appliedState(t, "2001|bob|chem|11|PENDING|JobHeldAdmin|scimbridge: held, user bob is disabled\n"+
		"2001|bob|chem|12|PENDING|JobHeldAdmin|my own comment\n2001|bob|phys|14|PENDING|JobHeldAdmin|(null)\n")
	st.Ledger = &Ledger{HeldJobs: []string{"11", "12"}}
	p = MakePlan(cfg, mustDesired(t, cfg, c, nil), st)
	expectCommands(t, p, "release 11,12", "update jobid=11 Comment=")
}
