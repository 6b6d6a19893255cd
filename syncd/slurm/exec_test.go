package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// fakeSacctmgr answers like sacctmgr 22.05 does for the cases apply must
// tell apart (captured from the real one).
const fakeSacctmgr = `#!/bin/sh
case "$*" in
"-i add user exists Account=a Cluster=lab") echo " Nothing new added."; exit 1 ;;
"-i delete user where name=gone account=a cluster=lab") echo " Nothing deleted"; exit 1 ;;
"-i add account new Cluster=lab") printf ' Adding Account(s)\n  new\n'; exit 0 ;;
"-i add user x Account=nosuch Cluster=lab")
  echo " This account 'nosuch' doesn't exist." >&2; echo " No associations or wckeys created." >&2; exit 1 ;;
"-i delete user where name=d cluster=lab")
  printf ' Error with request: You can not remove the default account of a user\n Changes Discarded\n' >&2; exit 1 ;;
"-nP show qos format=name"*) printf 'normal\n'; exit 0 ;;
esac
echo "unexpected: $*" >&2; exit 2
`

func fakeExec(t *testing.T) *Exec {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sacctmgr")
	if err := os.WriteFile(bin, []byte(fakeSacctmgr), 0o755); err != nil {
		t.Fatal(err)
	}
	return NewExec(Config{Sacctmgr: bin, Squeue: "/bin/false"}, nil)
}

func TestApplyIdempotentAnswers(t *testing.T) {
	e := fakeExec(t)
	ctx := context.Background()
	for _, tc := range []struct {
		args    string
		changed bool
		err     string
	}{
		{"add user exists Account=a Cluster=lab", false, ""},
		{"delete user where name=gone account=a cluster=lab", false, ""},
		{"add account new Cluster=lab", true, ""},
		{"add user x Account=nosuch Cluster=lab", false, "This account 'nosuch' doesn't exist"},
		{"delete user where name=d cluster=lab", false, "You can not remove the default account"},
	} {
		changed, err := e.Apply(ctx, Step{Args: strings.Fields(tc.args)})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrCommand)):
			t.Errorf("%s: error %v, want ErrCommand with %q", tc.args, err, tc.err)
		case changed != tc.changed:
			t.Errorf("%s: changed=%v, want %v", tc.args, changed, tc.changed)
		}
		// The error names the command, so a log line alone says what failed.
		if err != nil && !strings.Contains(err.Error(), "sacctmgr -i "+tc.args) {
			t.Errorf("error does not name the command: %v", err)
		}
	}
	if out, err := e.Read(ctx, qosQuery()...); err != nil || out != "normal\n" {
		t.Errorf("Read = %q, %v", out, err)
	}
	if e.Calls() != 6 {
		t.Errorf("Calls = %d, want 6", e.Calls())
	}
}

// Record writes the read-back associations once, and not again when they
// are unchanged.
func TestRecordAssociations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c := contents([]string{"alice", "bob"}, map[string][]string{"Physics": {"alice"}})
	if _, err := snapshot.Write(path, c); err != nil {
		t.Fatalf("snapshot.Write: %v", err)
	}
	st := appliedState(t, "")
	st.Users["bob"].Assocs["chem"].MaxSubmitJobs = "0"
	n, written, err := Record(path, st)
	if err != nil || !written || n != 5 {
		t.Fatalf("Record = %d, %v, %v; want 5 associations written", n, written, err)
	}
	got, meta, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range got.Associations {
		lines = append(lines, strings.Join([]string{a.User, a.Account, strings.Join(a.QOS, ","), a.DefaultQOS,
			map[bool]string{true: "default", false: ""}[a.IsDefault], map[bool]string{true: "blocked", false: ""}[a.Blocked]}, "|"))
	}
	want := "alice|landing|normal||default|\n" +
		"alice|phys|gpu,normal|normal||\n" +
		"bob|chem|normal|||blocked\n" +
		"bob|landing|normal||default|\n" +
		"bob|phys|gpu,normal|normal||"
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("associations:\n%s\nwant:\n%s", got, want)
	}
	if meta.SlurmSyncedAt.IsZero() {
		t.Error("slurm_synced_at not set")
	}
	if _, written, err := Record(path, st); err != nil || written {
		t.Errorf("second Record: written=%v err=%v, want no write", written, err)
	}
	// A sync commit carries the associations but not their time (as syncd
	// sync does through snapshot.Update): the next Record puts it back
	// even though the associations are the same.
	live, _, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Update(path, live, live); err != nil {
		t.Fatal(err)
	}
	if _, m, _ := snapshot.Load(path); !m.SlurmSyncedAt.IsZero() {
		t.Skip("snapshot.Update carries slurm_synced_at itself now; Record need not")
	}
	if _, written, err := Record(path, st); err != nil || !written {
		t.Errorf("Record after a commit that dropped slurm_synced_at: written=%v err=%v, want a write", written, err)
	}
	if _, m, _ := snapshot.Load(path); m.SlurmSyncedAt.IsZero() || m.Associations != 5 {
		t.Errorf("after Record: slurm_synced_at %v, %d associations; want a time and 5", m.SlurmSyncedAt, m.Associations)
	}
}

// A note or lint is logged on the pass it appears, not on every pass;
// once gone it is new again when it comes back.
func TestLogOncePerChange(t *testing.T) {
	pass := func(msgs ...string) (logged []string) {
		seen := repeated("once-test")
		for _, m := range msgs {
			if seen(m) {
				logged = append(logged, m)
			}
		}
		return logged
	}
	for i, c := range []struct{ in, want []string }{
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a", "b"}, nil},
		{[]string{"b", "c"}, []string{"c"}},
		{[]string{"a"}, []string{"a"}},
	} {
		if got := pass(c.in...); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("pass %d: logged %v, want %v", i+1, got, c.want)
		}
	}
}

// SkipUnchanged: a pass after a commit that changed nothing Slurm sees runs
// no sacctmgr; a change in the snapshot, or a pass without the option (the
// scheduled one, which finds drift), reads slurmdbd again.
func TestReconcileSkipUnchanged(t *testing.T) {
	dir := t.TempDir()
	accounts, assocs, defaults := appliedOutputs("lab-skip-test") // lastClean is per cluster and process
	outs := map[string]string{"account": accounts, "assoc": assocs, "defaults": defaults, "qos": qosRows("normal\ngpu\n")}
	for k, v := range outs {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	calls := filepath.Join(dir, "calls")
	fake := `#!/bin/sh
echo "$*" >> ` + calls + `
case "$*" in
"-nP show account"*) cat ` + dir + `/account ;;
*onlydefaults*) cat ` + dir + `/defaults ;;
"-nP show assoc"*) cat ` + dir + `/assoc ;;
"-nP show qos"*) cat ` + dir + `/qos ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
`
	bin := filepath.Join(dir, "sacctmgr")
	if err := os.WriteFile(bin, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Sacctmgr, cfg.Squeue, cfg.Scontrol = bin, "/bin/true", "/bin/true"
	cfg.LockFile, cfg.StateFile = filepath.Join(dir, "lock"), filepath.Join(dir, "state.json")
	cfg.Cluster = "lab-skip-test"
	path := filepath.Join(dir, "cache.db")
	c := contents([]string{"alice", "bob", "carol"}, map[string][]string{"Physics": {"alice", "bob"}, "hpc-chem": {"bob", "carol"}})
	if _, err := snapshot.Write(path, c); err != nil {
		t.Fatal(err)
	}
	all := func(string) (uint32, bool) { return 0, true }
	pass := func(skip bool) *Result {
		t.Helper()
		os.Remove(calls)
		res, err := Reconcile(context.Background(), cfg, path, Options{Resolve: all, SkipUnchanged: skip})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		return res
	}
	if res := pass(true); res.Skipped || res.Calls != 4 || !res.Plan.Empty() {
		t.Fatalf("first pass: skipped=%v calls=%d plan:\n%v; want 4 reads and nothing to do", res.Skipped, res.Calls, res.Plan)
	}
	if res := pass(true); !res.Skipped || res.Calls != 0 {
		t.Errorf("nothing changed: skipped=%v calls=%d, want skipped with no sacctmgr run", res.Skipped, res.Calls)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Error("sacctmgr ran on a skipped pass")
	}
	if res := pass(false); res.Skipped || res.Calls != 4 {
		t.Errorf("scheduled pass: skipped=%v calls=%d, want the 4 reads (drift check)", res.Skipped, res.Calls)
	}
	// carol is disabled at the source: Slurm sees a change.
	live, _, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	next := *live
	next.Users = append([]snapshot.User(nil), live.Users...)
	next.Users[2].Active = false
	if _, err := snapshot.Update(path, live, &next); err != nil {
		t.Fatal(err)
	}
	if res := pass(true); res.Skipped || res.Calls != 4 {
		t.Errorf("after a change: skipped=%v calls=%d, want a full pass", res.Skipped, res.Calls)
	}
}
