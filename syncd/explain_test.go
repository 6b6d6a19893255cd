package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/explain"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

func explainJSON(t *testing.T, e *env, args ...string) *explain.Report {
	t.Helper()
	rc := 0
	out := captureStdout(t, func() {
		rc = runMain(append([]string{"--config", e.cfgPath, "explain", "--json",
			"--pam-allow-groups", "slurm-sudo", "--allow-groups", "slurm-sudo", "--exempt-users", "nobody"}, args...), io.Discard, io.Discard)
	})
	if rc != 0 {
		t.Fatalf("explain %v: rc %d\n%s", args, rc, out)
	}
	var r explain.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("explain %v: %v\n%s", args, err, out)
	}
	return &r
}

// syncd explain, for each case of the issue: a rejected user (from the
// record of the read, not a fetch), a disabled user, a user outside the
// allowed groups, a user without association, one whose association is
// blocked, a healthy user; and a group.
func TestExplain(t *testing.T) {
	e := newEnv(t, 40, 4, "")
	users := e.srv.Snapshot().Users
	var posix []scimserver.User
	for _, u := range users {
		if u.POSIX != nil && u.POSIX.UIDNumber != nil && u.POSIX.GIDNumber != nil {
			posix = append(posix, u)
		}
	}
	rejected, disabled, outside, noAssoc, blocked, healthy := posix[0], posix[1], posix[2], posix[3], posix[4], posix[5]
	e.srv.UpdateUser(rejected.ID, func(u *scimserver.User) { u.POSIX.UIDNumber = scimserver.Int(5) })
	e.srv.SetActive(disabled.ID, false)
	sudo := e.srv.Snapshot().Groups[1].ID // slurm-sudo
	e.srv.SetMembers(sudo, []string{disabled.ID, noAssoc.ID, blocked.ID, healthy.ID})
	out, err := e.syncer(t).Once(context.Background(), pipeline.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	// sync --once encodes the record before the write and finishes it
	// with the serial the write assigned (pipeline.prepareRecord).
	if first, err := explain.Read(explain.Path(e.cache)); err != nil || first.Serial != out.Meta.Serial || len(first.Users) == 0 {
		t.Fatalf("record after the commit: %v; want serial %d with the users", err, out.Meta.Serial)
	}
	// Associations as the Slurm step reads them back.
	c, _, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	c.Associations = []snapshot.Association{
		{User: healthy.UserName, Account: "physics", IsDefault: true},
		{User: blocked.UserName, Account: "physics", Blocked: true},
		{User: outside.UserName, Account: "physics"},
	}
	m, err := snapshot.Write(e.cache, c)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := explain.Read(explain.Path(e.cache))
	if err != nil {
		t.Fatal(err)
	}
	rec.Serial = m.Serial
	explain.Write(explain.Path(e.cache), rec)
	// The server changes again: explain must not see it (no fetch).
	e.srv.SetActive(healthy.ID, false)

	r := explainJSON(t, e, rejected.UserName)
	if r.Passwd != nil || len(r.Users) != 1 || r.Users[0].Verdict != explain.Rejected ||
		!strings.Contains(r.Gates["nss"].Reason, "uid 5") || r.Users[0].Source.UID == nil || *r.Users[0].Source.UID != 5 {
		t.Errorf("rejected user: %+v", r)
	}
	if g := r.Gates["pam_scim"]; g.Verdict != "ignore" {
		t.Errorf("rejected user, pam: %+v", g)
	}
	if g := r.Gates["spank_scim"]; g.Verdict != "deny" || !strings.Contains(g.Reason, "not provisioned") {
		t.Errorf("rejected user, spank: %+v", g)
	}

	r = explainJSON(t, e, disabled.UserName)
	if g := r.Gates["pam_scim"]; g.Verdict != "deny" || !strings.Contains(g.Reason, "PAM_ACCT_EXPIRED") || !strings.Contains(g.Reason, "disabled in the identity provider") {
		t.Errorf("disabled user, pam: %+v", g)
	}
	if g := r.Gates["scim_keys"]; g.Verdict != "no keys" || g.Reason != "disabled" {
		t.Errorf("disabled user, keys: %+v", g)
	}
	if g := r.Gates["spank_scim"]; g.Verdict != "deny" || !strings.Contains(g.Reason, "disabled") {
		t.Errorf("disabled user, spank: %+v", g)
	}

	r = explainJSON(t, e, outside.UserName)
	if g := r.Gates["pam_scim"]; g.Verdict != "deny" || !strings.Contains(g.Reason, "PAM_PERM_DENIED") || !strings.Contains(g.Reason, "slurm-sudo") {
		t.Errorf("user outside allow_groups, pam: %+v", g)
	}
	if g := r.Gates["scim_keys"]; g.Verdict != "no keys" || g.Reason != "not in an allowed group" {
		t.Errorf("user outside --allow-groups, keys: %+v", g)
	}

	r = explainJSON(t, e, noAssoc.UserName)
	if g := r.Gates["spank_scim"]; g.Verdict != "deny" || !strings.Contains(g.Reason, "no Slurm association yet") {
		t.Errorf("user without association, spank: %+v", g)
	}
	r = explainJSON(t, e, blocked.UserName)
	if g := r.Gates["spank_scim"]; g.Verdict != "deny" || !strings.Contains(g.Reason, "being removed") {
		t.Errorf("user with a blocked association, spank: %+v", g)
	}
	r = explainJSON(t, e, "--account", "physics", blocked.UserName)
	if g := r.Gates["spank_scim"]; g.Verdict != "allow" || !strings.Contains(g.Reason, "blocked for removal") {
		t.Errorf("blocked association, task_init of a running job: %+v", g)
	}

	r = explainJSON(t, e, healthy.UserName)
	if r.Passwd == nil || !r.Passwd.Active || len(r.Users) != 1 || r.Users[0].Verdict != explain.Published || r.RecordNote != "" {
		t.Errorf("healthy user: %+v", r)
	}
	for _, n := range []string{"pam_scim", "spank_scim"} {
		if g := r.Gates[n]; g.Verdict != "allow" {
			t.Errorf("healthy user, %s: %+v", n, g)
		}
	}
	if g := r.Gates["nss"]; g.Verdict != "resolves" {
		t.Errorf("healthy user, nss: %+v", g)
	}
	if len(r.MemberOf) == 0 || len(r.Associations) != 1 {
		t.Errorf("healthy user: groups %v associations %v", r.MemberOf, r.Associations)
	}

	r = explainJSON(t, e, "--group", "slurm-sudo")
	if r.Group == nil || len(r.Groups) != 1 || r.Groups[0].Verdict != explain.Published || len(r.Group.Members) != 4 {
		t.Errorf("group: %+v", r)
	}

	// A snapshot with no association for anyone and no read-back time:
	// the head records none, which explain says instead of blaming the
	// user's groups.
	c.Associations = nil
	if _, err := snapshot.Write(e.cache, c); err != nil {
		t.Fatal(err)
	}
	r = explainJSON(t, e, noAssoc.UserName)
	if g := r.Gates["spank_scim"]; g.Verdict != "deny" || !strings.Contains(g.Reason, "the snapshot holds none for anyone") || strings.Contains(g.Reason, "association yet") {
		t.Errorf("snapshot without associations, spank: %+v", g)
	}
	if r.Snapshot.SlurmAssociations != 0 || r.Snapshot.SlurmSyncedAt != "" {
		t.Errorf("snapshot facts: %+v", r.Snapshot)
	}
}

func TestExplainPAMOptionsFromStack(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/common-account", "account [success=1 new_authtok_reqd=done default=ignore] pam_unix.so\naccount requisite pam_deny.so\n")
	writeFile(t, dir+"/sshd", "@include common-auth\n@include common-account\naccount required pam_scim.so allow_groups=slurm-users,admins debug\n")
	allow, src, ok := explain.PAMOptions(dir, "sshd")
	if !ok || strings.Join(allow, ",") != "slurm-users,admins" || !strings.HasSuffix(src, "/sshd") {
		t.Errorf("PAMOptions = %v %q %v", allow, src, ok)
	}
	writeFile(t, dir+"/sshd_config", "UsePAM yes\nAuthorizedKeysCommand /usr/sbin/scim-keys --allow-groups slurm-users %u\n")
	if a, ok := explain.KeysOptions(dir + "/sshd_config"); !ok || strings.Join(a, ",") != "slurm-users" {
		t.Errorf("KeysOptions = %v %v", a, ok)
	}
	writeFile(t, dir+"/plugstack.conf", "include "+dir+"/plugstack.conf.d/*.conf\n")
	writeFile(t, dir+"/plugstack.conf.d/scim.conf", "required /usr/lib/slurm/spank_scim.so exempt_users=ops,backup mode=warn\n")
	if e, w, ok := explain.SpankOptions(dir + "/plugstack.conf"); !ok || !w || strings.Join(e, ",") != "ops,backup" {
		t.Errorf("SpankOptions = %v %v %v", e, w, ok)
	}
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// explain shows the IdP's userName beside the login name user_names made
// of it, and finds the user by either.
func TestExplainMappedUserName(t *testing.T) {
	e := newEnv(t, 10, 2, "")
	var id string
	for _, u := range e.srv.Snapshot().Users {
		if u.POSIX != nil && u.POSIX.UIDNumber != nil && u.POSIX.GIDNumber != nil {
			id = u.ID
			break
		}
	}
	e.srv.UpdateUser(id, func(u *scimserver.User) { u.UserName = "Mapped.User@Example.com" })
	if _, err := e.syncer(t).Once(context.Background(), pipeline.Opts{}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"mapped.user", "Mapped.User@Example.com"} {
		rc := 0
		out := captureStdout(t, func() {
			rc = runMain([]string{"--config", e.cfgPath, "explain", key}, io.Discard, io.Discard)
		})
		if rc != 0 || !strings.Contains(out, `userName "Mapped.User@Example.com" -> Linux name "mapped.user": published`) || !strings.Contains(out, "passwd: mapped.user:x:") {
			t.Errorf("explain %s: rc %d\n%s", key, rc, out)
		}
	}
}
