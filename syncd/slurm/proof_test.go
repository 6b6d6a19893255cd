package slurm

import (
	"strings"
	"testing"
)

// Outputs captured from sacctmgr 22.05.8 on the lab (tests/slurm/up.sh).
const (
	outAdd = ` Associations =
  U = bu00001   A = p02        C = bench     
 Non Default Settings
`
	outAddNew = ` Adding User(s)
  averylongname
 Associations =
  U = averylong A = a-very-lon C = bench     
 Non Default Settings
`
	outDelete = ` Deleting user associations...
  C = bench      A = p01        U = bu00001  
`
	outDeleteLast = ` Deleting user associations...
  C = bench      A = p150       U = zz1      
 Deleting users (No Associations)...
  zz1
`
	outModifyAssoc = ` Modified user associations...
  C = bench      A = p01                  U = bu00002  
`
	outModifyDefault = ` Modified users...
  bu00002
`
)

func proofState(t *testing.T) *State {
	t.Helper()
	// row is one `show assoc` line (assocQuery's fields).
	row := func(acct, user, parent, qos string, limits map[string]string) string {
		f := []string{"bench", acct, user, parent, qos, ""}
		for _, l := range limitFields {
			f = append(f, limits[l.Name])
		}
		return strings.Join(f, "|")
	}
	assocs := strings.Join([]string{
		row("root", "", "", "normal", nil),
		row("scim-landing", "", "root", "normal", map[string]string{"GrpTRES": "gres/gpu=0"}),
		row("p01", "", "root", "normal", nil),
		row("p02", "", "root", "normal", nil),
		row("p150", "", "root", "normal", nil),
		row("a-very-long-account", "", "root", "normal", nil),
		row("blocked", "", "root", "normal", map[string]string{"MaxSubmitJobs": "0"}),
		row("scim-landing", "bu00001", "scim-landing", "normal", nil),
		row("p01", "bu00001", "p01", "normal", nil),
		row("scim-landing", "bu00002", "scim-landing", "normal", nil),
		row("p01", "bu00002", "p01", "normal", nil),
		row("p150", "zz1", "p150", "normal", nil),
	}, "\n")
	defaults := "bu00001|scim-landing\nbu00002|scim-landing\nzz1|p150\n"
	st, err := ParseState("bench", "", assocs, defaults, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func steps(lines ...string) []Step {
	var out []Step
	for _, l := range lines {
		out = append(out, Step{Args: strings.Fields(l)})
	}
	return out
}

func yes(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}

// A move (add on the new account, delete on the old) is proven by its
// output: the state is what a read-back would have returned.
func TestProvenStateMove(t *testing.T) {
	have := proofState(t)
	s := steps("add user bu00001 Account=p02 Cluster=bench", "delete user where name=bu00001 account=p01 cluster=bench")
	next, ok := provenState(have, "bench", s, []string{outAdd, outDelete}, yes(2))
	if !ok {
		t.Fatal("a move with both rows listed was not proven")
	}
	u := next.Users["bu00001"]
	if u == nil || u.Assocs["p02"] == nil || u.Assocs["p01"] != nil || u.DefaultAccount != "scim-landing" {
		t.Fatalf("bu00001 after the move: %+v", u)
	}
	if got := strings.Join(u.Assocs["p02"].QOS, ","); got != "normal" {
		t.Errorf("new association's QOS %q, want the account's (normal)", got)
	}
	// have is not changed: the caller falls back to it on a failed proof.
	if have.Users["bu00001"].Assocs["p01"] == nil || have.Users["bu00001"].Assocs["p02"] != nil {
		t.Error("provenState changed the state it was given")
	}
	if len(next.Users) != len(have.Users) {
		t.Errorf("%d users after, %d before", len(next.Users), len(have.Users))
	}
}

// What the output does not show, or shows differently, reads back.
func TestProvenStateRefuses(t *testing.T) {
	have := proofState(t)
	for _, tc := range []struct {
		name  string
		steps []Step
		outs  []string
	}{
		{"row missing", steps("add user bu00001,bu00002 Account=p02 Cluster=bench"), []string{outAdd}},
		{"row more (an association someone else made)", steps("delete user where name=bu00001 account=p01 cluster=bench"),
			[]string{outDelete + "  C = bench      A = p01        U = bu00009  \n"}},
		{"other cluster", steps("add user bu00001 Account=p02 Cluster=bench"), []string{strings.Replace(outAdd, "C = bench", "C = other", 1)}},
		{"nothing listed", steps("delete user where name=bu00001 account=p01 cluster=bench"), []string{" Nothing deleted\n"}},
		{"default deleted while others remain", steps("delete user where name=bu00001 account=scim-landing cluster=bench"),
			[]string{"  C = bench      A = scim-landi U = bu00001  \n"}},
		{"account with its own MaxSubmitJobs", steps("add user bu00001 Account=blocked Cluster=bench"),
			[]string{"  U = bu00001   A = blocked    C = bench     \n"}},
		{"a load", []Step{{Args: []string{"load", "file=/dev/stdin"}, Stdin: "x"}}, []string{""}},
		{"an account command", steps("add account x Cluster=bench"), []string{" Adding Account(s)\n  x\n"}},
		{"a job step", []Step{{Bin: "scontrol", Args: []string{"hold", "1"}}}, []string{""}},
	} {
		if _, ok := provenState(have, "bench", tc.steps, tc.outs, yes(len(tc.steps))); ok {
			t.Errorf("%s: proven, want a read-back", tc.name)
		}
	}
	// A step that changed nothing ("Nothing new added") proves nothing.
	if _, ok := provenState(have, "bench", steps("add user bu00001 Account=p02 Cluster=bench"), []string{outAdd}, []bool{false}); ok {
		t.Error("an unchanged step was taken as proof")
	}
}

// Names sacctmgr cuts in its listing (users at 9, accounts at 10
// characters) still match; a new user's first association is its default;
// the last association deleted removes the user; modify steps apply
// their settings.
func TestProvenStateCutNamesAndSettings(t *testing.T) {
	have := proofState(t)
	s := steps(
		"add user averylongname Account=a-very-long-account Cluster=bench QOS=normal,gpu DefaultQOS=normal",
		"delete user where name=zz1 cluster=bench",
		"modify user where name=bu00002 account=p01 cluster=bench set MaxSubmitJobs=0",
		"modify user where name=bu00002 cluster=bench set DefaultAccount=p01",
	)
	next, ok := provenState(have, "bench", s, []string{outAddNew, outDeleteLast, outModifyAssoc, outModifyDefault}, yes(4))
	if !ok {
		t.Fatal("not proven")
	}
	u := next.Users["averylongname"]
	if u == nil || u.DefaultAccount != "a-very-long-account" || strings.Join(u.Assocs["a-very-long-account"].QOS, ",") != "gpu,normal" ||
		u.Assocs["a-very-long-account"].DefaultQOS != "normal" {
		t.Errorf("averylongname: %+v", u)
	}
	if next.Users["zz1"] != nil {
		t.Error("zz1 kept after its last association was deleted")
	}
	b := next.Users["bu00002"]
	if !b.Assocs["p01"].Blocked() || b.DefaultAccount != "p01" {
		t.Errorf("bu00002: blocked=%v default=%s", b.Assocs["p01"].Blocked(), b.DefaultAccount)
	}
	if have.Users["bu00002"].Assocs["p01"].Blocked() || have.Users["zz1"] == nil {
		t.Error("provenState changed the state it was given")
	}
}
