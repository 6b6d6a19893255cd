package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// fakeDir is a snapshot with one SCIM user, ada.
type fakeDir struct {
	users  map[string]cache.User
	assocs map[string][]cache.Association
	meta   map[string]string
}

func (d *fakeDir) User(name string) (cache.User, error) {
	if u, ok := d.users[name]; ok {
		return u, nil
	}
	return cache.User{}, cache.ErrNotFound
}

func (d *fakeDir) UserByUID(uid uint32) (cache.User, error) {
	for _, u := range d.users {
		if u.UID == uid {
			return u, nil
		}
	}
	return cache.User{}, cache.ErrNotFound
}

func (d *fakeDir) Associations(user string) ([]cache.Association, error) { return d.assocs[user], nil }

func (d *fakeDir) Meta(key string) (string, error) {
	if v, ok := d.meta[key]; ok {
		return v, nil
	}
	return "", cache.ErrNotFound
}

func (d *fakeDir) Close() {}

func adaDir() *fakeDir {
	return &fakeDir{
		users: map[string]cache.User{"ada": {Name: "ada", UID: 10001, GID: 10001, Active: true}},
		assocs: map[string][]cache.Association{"ada": {
			{Account: "physics", QOS: []string{"normal", "gpu"}, DefaultQOS: "normal", IsDefault: true},
			{Account: "scim-default", QOS: []string{"normal"}, DefaultQOS: "normal"},
		}},
		meta: map[string]string{"serial": "7", "created_at": "2025-01-01T00:00:00Z", "slurm_synced_at": "2025-01-01T00:00:05Z"},
	}
}

// fakeRun answers commands from a table keyed by the full command line;
// a command missing from the table is "not installed".
func fakeRun(answers map[string]string, fails map[string]string) runner {
	return func(_ context.Context, name string, args ...string) (string, error) {
		line := strings.Join(append([]string{name}, args...), " ")
		if msg, ok := fails[line]; ok {
			return "", fmt.Errorf("%s: %s", name, msg)
		}
		for k, v := range answers {
			if k == line {
				return v, nil
			}
		}
		return "", fmt.Errorf("%s: %w", name, errNotInstalled)
	}
}

var clusterAnswers = map[string]string{
	"scontrol show config": "ClusterName             = lab\n",
	"sacctmgr -nP show assoc where user=ada cluster=lab format=" + strings.Join(assocFields, ","): "lab|physics|ada|normal,gpu|normal|||||||4|\n" +
		"lab|scim-default|ada|normal|normal||||||||\n",
	"sacctmgr -nP show user ada format=User,DefaultAccount": "ada|physics\n",
	"sacctmgr -nP show assoc where account=physics,scim-default cluster=lab format=" + strings.Join(assocFields, ","): "lab|physics||normal,gpu||gres/gpu=16|||||||\n" +
		"lab|physics|ada|normal,gpu|normal|||||||4|\n" +
		"lab|scim-default||normal||gres/gpu=0|||||||\n",
	"sacctmgr -nP show qos where name=gpu,normal format=" + strings.Join(qosFields, ","): "gpu|10|12:00:00|gres/gpu=4|||2||gres/gpu=8||requeue|00:02:00\nnormal|0|1-00:00:00|||||||gpu|cluster|00:00:00\n",
	"squeue -h -t R -O " + runningFormat: "physics|gpu|ada|cpu=8,node=1,gres/gpu=2|\nphysics|gpu|bob|cpu=1,gres/gpu=1|\n" +
		"other|gpu|carl|cpu=1,gres/gpu:a100=3|\nphysics|normal|ada|cpu=1|\n",
	"sshare -n -P -U -u ada -o Account,User,RawShares,RawUsage,EffectvUsage,FairShare": "physics|ada|1|3600|0.250000|0.300000\n" +
		"scim-default|ada|1|0|0.000000|1.000000\n",
	"squeue -h -u ada -o " + squeueFormat: "41|physics|gpu|debug|RUNNING|None|1:02|12:00:00|1|8|gres:gpu:2|train\n" +
		"42|physics|gpu|debug|PENDING|QOSMaxGRESPerUser|0:00|12:00:00|1|8|gres:gpu:4|big\n",
	"quota -w -s -u ada": "Disk quotas for user ada (uid 10001): none\n",
}

func TestGatherEverything(t *testing.T) {
	g := &gatherer{run: fakeRun(clusterAnswers, nil), openDir: func(string) (directory, error) { return adaDir(), nil }}
	rep := g.gather(context.Background(), "/snap", "", 10001)
	if rep.User != "ada" || !rep.InSnapshot || !rep.Active || rep.Cluster != "lab" {
		t.Fatalf("identity: %+v", rep)
	}
	if len(rep.Accounts) != 2 {
		t.Fatalf("accounts: %+v", rep.Accounts)
	}
	phys, def := rep.Accounts[0], rep.Accounts[1]
	if phys.Name != "physics" || !phys.Default || phys.From != "snapshot+slurm" ||
		phys.AccountLimits["GrpTRES"] != "gres/gpu=16" || phys.UserLimits["MaxSubmit"] != "4" {
		t.Errorf("physics: %+v", phys)
	}
	if def.Name != "scim-default" || def.Default || def.AccountLimits["GrpTRES"] != "gres/gpu=0" {
		t.Errorf("scim-default: %+v", def)
	}
	if len(rep.QOS) != 2 || rep.QOS[0].GPUsPerUser != "4" || rep.QOS[1].MaxWall != "1-00:00:00" {
		t.Errorf("qos: %+v", rep.QOS)
	}
	if len(rep.Jobs) != 2 || rep.Jobs[1].Why == "" {
		t.Errorf("jobs: %+v", rep.Jobs)
	}
	if phys.TeamGPUsInUse != 3 || phys.YourGPUsInUse != 2 || !rep.UseKnown {
		t.Errorf("physics use now: team %d you %d", phys.TeamGPUsInUse, phys.YourGPUsInUse)
	}
	var gpu TierCap
	for _, tc := range rep.Tiers {
		if tc.Account == "physics" && tc.QOS == "gpu" {
			gpu = tc
		}
	}
	if gpu.Tier != "gpu" || gpu.TeamGPUsInUse != 3 || gpu.PoolGPUsInUse != 6 || gpu.YourGPUsInUse != 2 || gpu.YourGPUCap != "4" ||
		!gpu.Preemptible || strings.Join(gpu.PreemptedBy, ",") != "normal" || gpu.PreemptMode != "requeue" {
		t.Errorf("physics/gpu tier: %+v", gpu)
	}
	if len(rep.Tiers) != 3 {
		t.Errorf("tiers: %+v", rep.Tiers)
	}
	if !strings.HasSuffix(rep.Jobs[1].Why, "(GPUs in use: 2 of 4)") {
		t.Errorf("pending reason without the numbers: %q", rep.Jobs[1].Why)
	}
	if len(rep.FairShare) != 2 || rep.FairShare[0].FairShare != "0.300000" || !strings.HasPrefix(rep.FairShare[0].Meaning, "over your share") ||
		!strings.HasPrefix(rep.FairShare[1].Meaning, "you have used little") {
		t.Errorf("fair-share: %+v", rep.FairShare)
	}
	if !hasNote(rep, "account scim-default allows no GPUs: submit GPU jobs with -A physics") {
		t.Errorf("no GPU hint for the landing account: %q", rep.Notes)
	}
	if !hasNote(rep, "no disk quota is set") {
		t.Errorf("notes: %q", rep.Notes)
	}

	// The table and the JSON carry the same facts.
	var tbl bytes.Buffer
	if err := renderTable(&tbl, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ada (uid 10001) on cluster lab", "physics", "yes", "normal*,gpu",
		"GrpTRES=gres/gpu=16", "12:00:00", "QOSMaxGRESPerUser: you are at", "RUNNING",
		"Tiers: caps and GPUs in use now", "team 3 of 16, you 2", "preemptible by normal (requeue after 00:02:00)", "2 of 4",
		"Fair-share", "over your share"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
	js, _ := json.Marshal(rep)
	var back Report
	if err := json.Unmarshal(js, &back); err != nil || back.Accounts[0].AccountLimits["GrpTRES"] != "gres/gpu=16" {
		t.Errorf("json round trip: %v %s", err, js)
	}
}

func TestGatherWithoutSlurmOrQuota(t *testing.T) {
	g := &gatherer{run: fakeRun(nil, nil), openDir: func(string) (directory, error) { return adaDir(), nil }}
	rep := g.gather(context.Background(), "/snap", "ada", 0)
	if rep.User != "ada" || len(rep.Accounts) != 2 || rep.Accounts[0].From != "snapshot" || !rep.Accounts[0].Default {
		t.Fatalf("snapshot facts lost without Slurm: %+v", rep)
	}
	if !hasNote(rep, "Slurm client tools are not installed") || !hasNote(rep, "quota(1) is not installed") {
		t.Errorf("notes: %q", rep.Notes)
	}
}

func TestGatherSlurmDown(t *testing.T) {
	fails := map[string]string{
		"scontrol show config": "Unable to contact slurm controller",
		"sacctmgr -nP show assoc where user=ada format=" + strings.Join(assocFields, ","): "Problem talking to the database",
		"squeue -h -u ada -o " + squeueFormat:                                             "slurm_load_jobs error: Unable to contact slurm controller",
	}
	g := &gatherer{run: fakeRun(map[string]string{}, fails), openDir: func(string) (directory, error) { return adaDir(), nil }}
	rep := g.gather(context.Background(), "/snap", "", 10001)
	if len(rep.Accounts) != 2 {
		t.Errorf("accounts: %+v", rep.Accounts)
	}
	if !hasNote(rep, "cannot read associations from Slurm: sacctmgr: Problem talking") || !hasNote(rep, "cannot read the queue") {
		t.Errorf("notes: %q", rep.Notes)
	}
}

func TestGatherNoSnapshotLocalUser(t *testing.T) {
	answers := map[string]string{
		"scontrol show config": "ClusterName = lab\n",
		"sacctmgr -nP show assoc where user=root cluster=lab format=" + strings.Join(assocFields, ","): "lab|root|root|normal|||||||||\n",
	}
	g := &gatherer{
		run:       fakeRun(answers, nil),
		openDir:   func(p string) (directory, error) { return nil, fmt.Errorf("%w: %s: missing", cache.ErrUnavailable, p) },
		lookupUID: func(uid uint32) (string, error) { return "root", nil },
	}
	rep := g.gather(context.Background(), "/nope", "", 0)
	if rep.User != "root" || rep.InSnapshot || rep.Snapshot != nil {
		t.Fatalf("identity: %+v", rep)
	}
	if len(rep.Accounts) != 1 || rep.Accounts[0].From != "slurm" {
		t.Errorf("accounts: %+v", rep.Accounts)
	}
	if !hasNote(rep, "no SCIM snapshot") {
		t.Errorf("notes: %q", rep.Notes)
	}
}

func TestGatherUnknownUser(t *testing.T) {
	g := &gatherer{
		run:        fakeRun(nil, nil),
		openDir:    func(string) (directory, error) { return adaDir(), nil },
		lookupName: func(string) (uint32, error) { return 0, errors.New("unknown user") },
	}
	rep := g.gather(context.Background(), "/snap", "nosuch", 0)
	if rep.User != "" || !hasNote(rep, `no such user "nosuch"`) {
		t.Errorf("unknown user: %+v", rep)
	}
}

func TestGatherDisabledAndBlocked(t *testing.T) {
	d := adaDir()
	u := d.users["ada"]
	u.Active = false
	d.users["ada"] = u
	d.assocs["ada"][1].Blocked = true
	g := &gatherer{run: fakeRun(nil, nil), openDir: func(string) (directory, error) { return d, nil }}
	rep := g.gather(context.Background(), "/snap", "ada", 0)
	if rep.Active || !hasNote(rep, "disabled at the identity provider") {
		t.Errorf("disabled user: %+v", rep)
	}
	var tbl bytes.Buffer
	renderTable(&tbl, rep)
	if !strings.Contains(tbl.String(), "blocked: being removed") {
		t.Errorf("blocked association not shown:\n%s", tbl.String())
	}
}

func TestUserFlagRootOnly(t *testing.T) {
	defer func(f func() int) { getuid = f }(getuid)
	getuid = func() int { return 1000 }
	var out, errb bytes.Buffer
	rc := run([]string{"--user", "someone"}, &out, &errb)
	if rc != 2 || !strings.Contains(errb.String(), "root only") {
		t.Errorf("rc=%d stderr=%q", rc, errb.String())
	}
}

func hasNote(rep *Report, sub string) bool {
	for _, n := range rep.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// A project tier at its guarantee, a general tier at the team cap, and a
// landing account that allows no GPUs: the reasons carry the numbers.
func TestTierReasons(t *testing.T) {
	rep := &Report{User: "alice", Accounts: []Account{
		{Name: "ml", QOS: []string{"general", "ml-project", "spot"}, DefaultQOS: "ml-project"},
		{Name: "scim-landing", QOS: []string{"normal"}, AccountLimits: map[string]string{"GrpTRES": "gres/gpu=0"}},
	}, QOS: []QOS{
		{Name: "general", GPUsTotal: "6", GPUsPerAccount: "3", MaxWall: "3-00:00:00"},
		{Name: "ml-project", GPUsTotal: "2", Preempt: []string{"spot"}},
		{Name: "spot", GPUsTotal: "8", MaxWall: "1-00:00:00", PreemptMode: "REQUEUE", GraceTime: "00:00:05"},
		{Name: "normal"},
	}, Jobs: []Job{
		{ID: "1", Account: "ml", QOS: "ml-project", State: "PENDING", Reason: "QOSGrpGRES"},
		{ID: "2", Account: "ml", QOS: "general", State: "PENDING", Reason: "MaxGRESPerAccount", Why: explainReason("MaxGRESPerAccount")},
		{ID: "3", Account: "scim-landing", QOS: "normal", State: "PENDING", Reason: "AssocGrpGRES"},
	}}
	run := fakeRun(map[string]string{
		"squeue -h -t R -O " + runningFormat: "ml|ml-project|alice|gres/gpu=1|\nml|ml-project|erin|gres/gpu=1|\n" +
			"ml|general|alice|gres/gpu=3|\nbio|general|zed|gres/gpu=2|\n",
	}, nil)
	g := &gatherer{run: run}
	g.tiersAndUse(context.Background(), rep, false)
	want := []string{
		"your team's project tier is using all its guaranteed GPUs; it starts when the team's other project jobs end (or submit with --qos=general to burst, if your team has opted in) (GPUs in use: 2 of 2)",
		"your team (account) is at the per-team cap of the job's QOS; it starts when the team's other jobs in this QOS end (GPUs in use: 3 of 3)",
		"account scim-landing allows no GPUs: it will never start; cancel it and resubmit with -A and a team account",
	}
	for i, w := range want {
		if rep.Jobs[i].Why != w {
			t.Errorf("job %d: %q\nwant %q", i+1, rep.Jobs[i].Why, w)
		}
	}
	byQOS := map[string]TierCap{}
	for _, tc := range rep.Tiers {
		byQOS[tc.QOS] = tc
	}
	if p := byQOS["ml-project"]; p.Tier != "project" || !p.Default || p.TeamGPUCap != "2" || p.TeamGPUsInUse != 2 || p.YourGPUsInUse != 1 || p.Preemptible {
		t.Errorf("project: %+v", p)
	}
	if gn := byQOS["general"]; gn.TeamGPUCap != "3" || gn.PoolGPUCap != "6" || gn.PoolGPUsInUse != 5 || gn.TeamGPUsInUse != 3 {
		t.Errorf("general: %+v", gn)
	}
	if s := byQOS["spot"]; !s.Preemptible || s.PreemptedBy[0] != "ml-project" || s.MaxWall != "1-00:00:00" {
		t.Errorf("spot: %+v", s)
	}
	var b bytes.Buffer
	renderTable(&b, rep)
	for _, w := range []string{"preemptible by ml-project (requeue after 00:00:05)", "never preempted", "5 of 6"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, b.String())
		}
	}
}

func TestFairShareBasic(t *testing.T) {
	rep := &Report{User: "alice"}
	g := &gatherer{run: fakeRun(nil, nil)}
	g.fairShare(context.Background(), rep, "priority/basic")
	if !strings.Contains(rep.FairShareNote, "not used on this cluster (PriorityType=priority/basic)") || len(rep.FairShare) != 0 {
		t.Errorf("%+v", rep)
	}
}

// Running jobs unreadable: caps are shown with "?" for use, never a
// made-up 0; PrivateData=jobs is said in a note.
func TestTierUseUnknownAndPrivate(t *testing.T) {
	rep := &Report{User: "alice", Accounts: []Account{{Name: "ml", QOS: []string{"ml-project"}}},
		QOS: []QOS{{Name: "ml-project", GPUsTotal: "2"}}}
	g := &gatherer{run: fakeRun(nil, map[string]string{"squeue -h -t R -O " + runningFormat: "slurm_load_jobs error: timeout"})}
	g.tiersAndUse(context.Background(), rep, false)
	if rep.UseKnown || !hasNote(rep, "cannot read the running jobs") {
		t.Errorf("use known %v, notes %q", rep.UseKnown, rep.Notes)
	}
	var b bytes.Buffer
	renderTable(&b, rep)
	if !strings.Contains(b.String(), "? of 2") {
		t.Errorf("table:\n%s", b.String())
	}
	rep = &Report{User: "alice", Accounts: []Account{{Name: "ml", QOS: []string{"ml-project"}}}}
	g = &gatherer{run: fakeRun(map[string]string{"squeue -h -t R -O " + runningFormat: ""}, nil)}
	g.tiersAndUse(context.Background(), rep, true)
	if !rep.UseKnown || !hasNote(rep, "hides other users' jobs (PrivateData=jobs)") {
		t.Errorf("use known %v, notes %q", rep.UseKnown, rep.Notes)
	}
}

// Spot is named in the project QOS's Preempt, but Slurm preempts only
// under a PreemptType other than preempt/none and a mode other than OFF:
// mylimits must not promise (or threaten) preemption that never happens.
func TestSpotNotPreemptibleWhenSlurmDoesNotPreempt(t *testing.T) {
	for _, c := range []struct{ ptype, cmode, qmode, want string }{
		{"preempt/none", "OFF", "", "not preempted (PreemptType=preempt/none: Slurm preempts no job here)"},
		{"preempt/qos", "OFF", "", "not preempted (PreemptMode=OFF: Slurm preempts no job in it)"},
		{"preempt/qos", "OFF", "REQUEUE", "preemptible by ml-project (requeue)"},
		{"preempt/qos", "REQUEUE", "cluster", "preemptible by ml-project"},
	} {
		rep := &Report{User: "alice", PreemptType: c.ptype, PreemptMode: c.cmode, Accounts: []Account{
			{Name: "ml", QOS: []string{"ml-project", "spot"}, DefaultQOS: "ml-project"},
		}, QOS: []QOS{
			{Name: "ml-project", Preempt: []string{"spot"}},
			{Name: "spot", PreemptMode: c.qmode},
		}}
		(&gatherer{run: fakeRun(map[string]string{}, nil)}).tiersAndUse(context.Background(), rep, false)
		var b bytes.Buffer
		renderTable(&b, rep)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s / cluster mode %s / spot mode %s: table lacks %q:\n%s", c.ptype, c.cmode, c.qmode, c.want, b.String())
		}
		for _, tc := range rep.Tiers {
			if tc.QOS == "spot" && tc.Preemptible != strings.HasPrefix(c.want, "preemptible") {
				t.Errorf("%s / %s: spot preemptible=%v", c.ptype, c.cmode, tc.Preemptible)
			}
		}
	}
}

// After a commit whose associations did not change the snapshot may lack
// slurm_synced_at; a user without an association must still be told the
// truth (no account for them, what to do), not that syncd does not manage
// Slurm here. A snapshot with neither is one without Slurm.
func TestNoAssociationAdviceFollowsTheCount(t *testing.T) {
	for _, c := range []struct {
		meta map[string]string
		want string
	}{
		{map[string]string{"associations": "2036"}, "lists no Slurm account for you: jobs will be refused until one is granted; ask your team's group owner"},
		{map[string]string{"associations": "0"}, "the snapshot has no Slurm associations (syncd does not manage Slurm here): ask the cluster's administrators"},
	} {
		d := adaDir()
		d.assocs = map[string][]cache.Association{}
		d.meta = c.meta
		g := &gatherer{run: fakeRun(nil, nil), openDir: func(string) (directory, error) { return d, nil }}
		rep := g.gather(context.Background(), "/snap", "ada", 0)
		if !hasNote(rep, c.want) {
			t.Errorf("meta %v: notes %q lack %q", c.meta, rep.Notes, c.want)
		}
	}
}
