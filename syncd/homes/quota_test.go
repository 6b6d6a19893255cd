package homes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// fakeTools puts recording stand-ins for the quota tools first on PATH:
// each appends its argv (one line, arguments separated by |) to a log,
// and prints out (for gluster's list). This machine's kernel has no
// quota support, so the command lines are what is tested here; the
// GlusterFS driver runs for real in tests/homes.
func fakeTools(t *testing.T, out map[string]string) (logPath string) {
	t.Helper()
	bin := t.TempDir()
	logPath = filepath.Join(bin, "argv.log")
	for _, tool := range []string{"setquota", "xfs_quota", "lfs", "gluster"} {
		outFile := filepath.Join(bin, tool+".out")
		os.WriteFile(outFile, []byte(out[tool]), 0o644)
		script := fmt.Sprintf("#!/bin/sh\n{ printf '%%s' \"$(basename \"$0\")\"; for a in \"$@\"; do printf '|%%s' \"$a\"; done; echo; } >> %s\ncat %s\n", logPath, outFile)
		if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return logPath
}

func readLines(p string) []string {
	b, _ := os.ReadFile(p)
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func quotaLab(t *testing.T, q QuotaConfig) (*lab, *snapshot.Contents) {
	l := newLab(t)
	if v, ok := q.Gluster.Volumes["HOME"]; ok {
		q.Gluster.Volumes = map[string]string{l.home: v}
	}
	l.cfg.Quota = q
	if err := l.cfg.Check(nil); err != nil {
		t.Fatal(err)
	}
	c := &snapshot.Contents{
		Users: []snapshot.User{user("alice", 20001, filepath.Join(l.home, "alice"), true), user("bob", 20002, filepath.Join(l.home, "bob"), true),
			user("dora", 20004, filepath.Join(l.home, "dora"), false)},
		Groups: []snapshot.Group{{Name: "ml", GID: 30001, Members: []string{"alice"}}},
	}
	return l, c
}

func TestCommandPresetsRunExactLines(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   []string
	}{
		{"setquota", []string{
			"setquota|-u|20001|31457280|41943040|0|0|HOME",
			"setquota|-u|20002|10485760|15728640|0|0|HOME",
			"setquota|-g|30001|1073741824|2147483648|0|0|PROJECT",
		}},
		{"xfs_quota", []string{
			"xfs_quota|-x|-c|limit -u bsoft=31457280k bhard=41943040k 20001|HOME",
			"xfs_quota|-x|-c|limit -u bsoft=10485760k bhard=15728640k 20002|HOME",
			"xfs_quota|-x|-c|project -s -p PROJECT/ml 30001|PROJECT",
			"xfs_quota|-x|-c|limit -p bsoft=1073741824k bhard=2147483648k 30001|PROJECT",
		}},
		{"lfs", []string{
			"lfs|setquota|-u|20001|-b|31457280|-B|41943040|HOME",
			"lfs|setquota|-u|20002|-b|10485760|-B|15728640|HOME",
			"lfs|setquota|-g|30001|-b|1073741824|-B|2147483648|PROJECT",
		}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			log := fakeTools(t, nil)
			l, c := quotaLab(t, QuotaConfig{Driver: "command", Command: CommandConfig{Preset: tc.preset},
				Limits: Limits{UserSoft: "10G", UserHard: "15G", TeamSoft: "1T", TeamHard: "2T"},
				Groups: map[string]Limits{"ml": {UserSoft: "30G", UserHard: "40G"}}})
			plan := l.pass(c, true)
			if n := len(readLines(log)); n != 0 || kinds(plan)["set-quota"] != 3 {
				t.Fatalf("a plan ran %d command(s); actions %v", n, plan.Actions)
			}
			l.pass(c, false)
			var got []string
			for _, line := range readLines(log) {
				line = strings.ReplaceAll(line, l.home, "HOME")
				got = append(got, strings.ReplaceAll(line, l.project, "PROJECT"))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("command lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// Idempotent: nothing runs again.
			if r := l.pass(c, false); r.Changed() != 0 || len(readLines(log)) != len(tc.want) {
				t.Fatalf("second pass ran commands: %v", r.Actions)
			}
			// A limit lowered: applied to that user only.
			l.cfg.Quota.UserHard, l.cfg.Quota.UserSoft = "12G", "8G"
			r := l.pass(c, false)
			if r.Changed() != 1 || !strings.Contains(r.Actions[0].Detail, "was soft 10G, hard 15G") {
				t.Fatalf("lowered limit: %v", r.Actions)
			}
		})
	}
}

func TestCommandTemplateErrors(t *testing.T) {
	c := CommandConfig{User: [][]string{{"setquota", "-u", "{name}", "{fs}"}}}
	errs := c.check()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "unknown placeholder {name}") {
		t.Fatalf("%v", errs)
	}
	c = CommandConfig{Preset: "zfs"}
	if errs := c.check(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "want setquota, xfs_quota or lfs") {
		t.Fatalf("%v", errs)
	}
}

// glusterListXML is `gluster --xml volume quota homes list` as GlusterFS
// 10.3 printed it here (tests/homes), alice past her hard limit.
const glusterListXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cliOutput>
  <opRet>0</opRet>
  <opErrno>0</opErrno>
  <opErrstr/>
  <volQuota>
    <limit>
      <path>/alice</path>
      <hard_limit>10485760</hard_limit>
      <soft_limit_percent>50%</soft_limit_percent>
      <soft_limit_value>5242880</soft_limit_value>
      <used_space>26214400</used_space>
      <avail_space>0</avail_space>
      <sl_exceeded>Yes</sl_exceeded>
      <hl_exceeded>Yes</hl_exceeded>
    </limit>
  </volQuota>
</cliOutput>
`

func TestGlusterLinesAndUsage(t *testing.T) {
	log := fakeTools(t, map[string]string{"gluster": glusterListXML})
	l, c := quotaLab(t, QuotaConfig{Driver: "gluster", Limits: Limits{UserSoft: "5M", UserHard: "10M"},
		Gluster: GlusterConfig{Volumes: map[string]string{"HOME": "homes"}}})
	r := l.pass(c, false)
	// alice already holds 10M/50%: nothing to set; bob gets his limit.
	want := []string{
		"gluster|--mode=script|--xml|volume|quota|homes|list",
		"gluster|--mode=script|volume|quota|homes|limit-usage|/bob|10485760|50%",
		"gluster|--mode=script|--xml|volume|quota|homes|list", // the limits as set, for the status
	}
	if got := readLines(log); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("gluster lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	u := r.Usage["user:alice"]
	if u.Used != 26214400 || u.Hard != 10485760 || !u.OverHard || !u.OverSoft {
		t.Fatalf("usage: %+v", u)
	}
	if k := kinds(r); k["over-limit"] != 1 || k["set-quota"] != 1 {
		t.Fatalf("actions: %v", r.Actions)
	}
	// The list read again after setting bob's limit does not show him yet
	// (this stand-in always prints alice alone, as GlusterFS may before
	// its accounting catches up): the pass says so, and the loop runs it
	// again soon instead of leaving the nodes without his figures for an
	// hour.
	if r.UsagePending != 1 {
		t.Fatalf("usage pending: %d, want 1 (bob's limit set, his use not reported)", r.UsagePending)
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]uint64{"10G": 10 << 30, "15GiB": 15 << 30, "1.5T": 3 << 39, "512": 512, "500MB": 500 << 20, "": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"ten", "-1G", "10X"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	if FormatSize(15<<30) != "15G" || FormatSize(1536<<20) != "1.5G" || FormatSize(8193<<10) != "8.0M" {
		t.Errorf("FormatSize: %s %s %s", FormatSize(15<<30), FormatSize(1536<<20), FormatSize(8193<<10))
	}
}

func TestSummarizeSamples(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var ss []Sample
	for h := 0; h < 4; h++ {
		ss = append(ss, Sample{At: t0.Add(time.Duration(h) * time.Hour), Kind: "team", Name: "ml", Used: uint64(h+1) << 30, Hard: 10 << 30})
	}
	ss = append(ss, Sample{At: t0.Add(-time.Hour), Kind: "team", Name: "ml", Used: 100 << 30}, // before the window
		Sample{At: t0, Kind: "user", Name: "alice", Used: 1})
	got := SummarizeSamples(ss, t0, t0.Add(24*time.Hour))
	if len(got) != 1 {
		t.Fatalf("%+v", got)
	}
	g := got[0]
	// 1+2+3+4 GiB, each for an hour.
	if g.Team != "ml" || g.Samples != 4 || g.MaxUsed != 4<<30 || g.Last != 4<<30 || g.AvgUsed != 5<<29 || g.GiBHours != 10 || g.Hard != 10<<30 {
		t.Fatalf("%+v", g)
	}
}

// A storage whose CLI hangs (a glusterd that never answers) costs a pass
// its timeout, not more: every command runs under the pass's context and
// is killed with it; the homes are still made.
func TestHungStorageIsBounded(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "gluster"), []byte("#!/bin/sh\nsleep 600\necho done\n"), 0o755)
	l, c := quotaLab(t, QuotaConfig{Driver: "gluster", Limits: Limits{UserHard: "10M"},
		Gluster: GlusterConfig{Gluster: filepath.Join(bin, "gluster"), Volumes: map[string]string{"HOME": "homes"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	t0 := time.Now()
	r, err := Pass(ctx, l.cfg, c, Options{Log: l.log})
	if took := time.Since(t0); took > 15*time.Second {
		t.Fatalf("a hung quota CLI held the pass %s (timeout 2s)", took)
	}
	if err != nil || r.Homes != 2 || r.Errors == 0 {
		t.Fatalf("want the homes made and the quota errors reported: %v %+v", err, r.Actions)
	}
	if _, err := os.Stat(filepath.Join(l.home, "alice")); err != nil {
		t.Fatal(err)
	}
}

// The identity provider's per-user limit (snapshot User.Quota, from the
// home_quota attribute) replaces the configured hard limit, the soft one
// following at the configured ratio; above user_max it is capped, never
// granted, and the cap is logged once (again when the value changes).
func TestAttributeLimitCappedAndLoggedOnce(t *testing.T) {
	log := fakeTools(t, nil)
	l, c := quotaLab(t, QuotaConfig{Driver: "command", Command: CommandConfig{Preset: "setquota"},
		Limits: Limits{UserSoft: "10G", UserHard: "20G"}, UserMax: "100G"})
	c.Users[0].Quota = 40 << 30  // alice: 40G asked, under the cap
	c.Users[1].Quota = 500 << 30 // bob: 500G asked, capped to 100G
	r := l.pass(c, false)
	want := []string{
		"setquota|-u|20001|20971520|41943040|0|0|HOME",  // soft 20G (ratio 1/2), hard 40G
		"setquota|-u|20002|52428800|104857600|0|0|HOME", // capped: soft 50G, hard 100G
	}
	var got []string
	for _, line := range readLines(log) {
		got = append(got, strings.ReplaceAll(line, l.home, "HOME"))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("command lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if k := kinds(r); k["quota-capped"] != 1 {
		t.Fatalf("actions: %v", r.Actions)
	}
	warned := func() int {
		n := 0
		for _, e := range l.hook.AllEntries() {
			if strings.Contains(e.Message, "home quota 500G is above the cap 100G") {
				n++
			}
		}
		return n
	}
	if warned() != 1 {
		t.Fatalf("cap logged %d times after one pass", warned())
	}
	// Again: nothing set, the cap still shown but not logged again.
	if r := l.pass(c, false); r.Changed() != 0 || kinds(r)["quota-capped"] != 1 || warned() != 1 {
		t.Fatalf("second pass: %v; cap logged %d times", r.Actions, warned())
	}
	// Without user_max the attribute may lower the configured hard limit
	// but never raise it.
	l.cfg.Quota.UserMax = ""
	c.Users[0].Quota = 5 << 30
	r = l.pass(c, false)
	lines := readLines(log)
	if len(lines) != 4 || !strings.HasSuffix(lines[2], "|20001|2621440|5242880|0|0|"+l.home) || !strings.HasSuffix(lines[3], "|20002|10485760|20971520|0|0|"+l.home) {
		t.Fatalf("without user_max: %v (actions %v)", lines, r.Actions)
	}
	// The attribute gone: back to the configured limits.
	c.Users[0].Quota, c.Users[1].Quota = 0, 0
	r = l.pass(c, false)
	if lines := readLines(log); len(lines) != 5 || !strings.HasSuffix(lines[4], "|20001|10485760|20971520|0|0|"+l.home) || kinds(r)["quota-capped"] != 0 {
		t.Fatalf("attribute gone: %v (actions %v)", lines, r.Actions)
	}
}

func TestAttributeLimitArithmetic(t *testing.T) {
	q := QuotaConfig{}
	for _, tc := range []struct {
		conf   Limit
		max    string
		asked  uint64
		want   Limit
		capped uint64
	}{
		{Limit{Soft: 10 << 30, Hard: 15 << 30}, "", 12 << 30, Limit{Soft: 8 << 30, Hard: 12 << 30}, 0},
		{Limit{Soft: 10 << 30, Hard: 15 << 30}, "", 30 << 30, Limit{Soft: 10 << 30, Hard: 15 << 30}, 30 << 30},
		{Limit{Hard: 15 << 30}, "1T", 300 << 30, Limit{Hard: 300 << 30}, 0},
		{Limit{Soft: 10 << 30}, "", 4 << 30, Limit{Soft: 4 << 30, Hard: 4 << 30}, 0},
		{Limit{}, "", 1 << 40, Limit{Hard: 1 << 40}, 0}, // no configured limit: the attribute only restricts
	} {
		q.UserMax = tc.max
		got, capped := q.attributeLimit(tc.conf, tc.asked)
		if got != tc.want || capped != tc.capped {
			t.Errorf("conf %v max %q asked %s: got %v capped %d; want %v capped %d", tc.conf, tc.max, FormatSize(tc.asked), got, capped, tc.want, tc.capped)
		}
	}
}

// glusterd busy with another transaction ("Please try again after some
// time") is tried again, within the pass's time, and the limit is set.
func TestGlusterBusyIsRetried(t *testing.T) {
	bin := t.TempDir()
	count := filepath.Join(bin, "count")
	script := "#!/bin/sh\necho x >> " + count + "\ncase \"$*\" in *limit-usage*) [ $(grep -c limit-usage " + count + ".args 2>/dev/null || echo 0) -ge 2 ] || { echo \"$*\" >> " + count + ".args; echo 'quota command failed : Another transaction is in progress for homes. Please try again after some time.' >&2; exit 1; };; esac\necho '<cliOutput><opRet>0</opRet></cliOutput>'\n"
	os.WriteFile(filepath.Join(bin, "gluster"), []byte(script), 0o755)
	l, c := quotaLab(t, QuotaConfig{Driver: "gluster", Limits: Limits{UserHard: "10M"},
		Gluster: GlusterConfig{Gluster: filepath.Join(bin, "gluster"), Volumes: map[string]string{"HOME": "homes"}}})
	c.Users = c.Users[:1]
	r := l.pass(c, false)
	if r.Errors != 0 || kinds(r)["set-quota"] != 1 {
		t.Fatalf("busy glusterd: %+v", r.Actions)
	}
	if n := len(readLines(count + ".args")); n != 2 {
		t.Fatalf("%d busy answers before the limit was set, want 2", n)
	}
}

// A team's limit from the identity provider (snapshot Group.Quota, from
// the project_quota attribute): lowers the configured one; above it,
// without team_max, capped at it; team_max lets it go higher.
func TestTeamAttributeLimit(t *testing.T) {
	log := fakeTools(t, nil)
	l, c := quotaLab(t, QuotaConfig{Driver: "command", Command: CommandConfig{Preset: "setquota"},
		Limits: Limits{TeamSoft: "1T", TeamHard: "2T"}})
	c.Groups[0].Quota = 50 << 30
	l.pass(c, false)
	c.Groups[0].Quota = 5 << 40
	r := l.pass(c, false)
	if kinds(r)["quota-capped"] != 1 || !strings.Contains(r.Actions[0].Detail, "project quota 5T is above the cap 2T (homes.quota.team_max") {
		t.Fatalf("capped: %v", r.Actions)
	}
	l.cfg.Quota.TeamMax = "8T"
	l.pass(c, false)
	var got []string
	for _, line := range readLines(log) {
		got = append(got, strings.ReplaceAll(line, l.project, "PROJECT"))
	}
	want := []string{
		"setquota|-g|30001|26214400|52428800|0|0|PROJECT",     // 50G asked: soft 25G, hard 50G (ratio 1/2)
		"setquota|-g|30001|1073741824|2147483648|0|0|PROJECT", // 5T asked, capped at team_hard 2T
		"setquota|-g|30001|2684354560|5368709120|0|0|PROJECT", // team_max 8T: 5T granted
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("command lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
