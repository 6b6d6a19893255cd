package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/homes"
)

// check-config checks [homes] with the rest: an invalid table is every
// problem with the option to change, a role that is not this host's is a
// warning (the pass would never run here). (The pass itself, after sync
// --once and in syncd run: syncd/homes and tests/homes.)
func TestHomesConfigAndRole(t *testing.T) {
	e := newEnv(t, 5, 1, "")
	base, _ := os.ReadFile(e.cfgPath)
	write := func(homes string) {
		t.Helper()
		if err := os.WriteFile(e.cfgPath, append(append([]byte(nil), base...), []byte("\n"+homes)...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	none := filepath.Join(t.TempDir(), "none.conf")
	write("[homes]\nenabled = true\nrole = \"nfs\"\nremoved = \"delete\"\nmode = \"0777\"\n[homes.quota]\ndriver = \"command\"\nuser_hard = \"ten\"\n")
	rc, out := runCLI(t, e, "check-config", "--plugstack", none)
	for _, want := range []string{`role "nfs": want "head"`, `removed = "delete" is not supported`, "mode 0777 lets others write", "user_hard: size \"ten\"", "quota.command.preset"} {
		if rc == 0 || !strings.Contains(out, want) {
			t.Errorf("check-config: rc %d, want %q in:\n%s", rc, want, out)
		}
	}
	// A root that does not exist (the pass never creates one; /tmp is a
	// system path no root may be in).
	root := "/scimbridge-test-no-such-root"
	write("[homes]\nenabled = true\nrole = \"storage\"\nroots = [\"" + root + "\"]\n")
	if rc, out := runCLI(t, e, "check-config", "--plugstack", none); rc != 0 || !strings.Contains(out, `role = "storage", but this host is a head`) {
		t.Errorf("storage role on a head: rc %d\n%s", rc, out)
	}
	if rc, out := runCLI(t, e, "sync", "--once"); rc != 0 {
		t.Fatalf("sync: %d\n%s", rc, out)
	}
	if _, err := os.Stat(homes.StatusPathFor(e.cfgPath, e.cache)); err == nil {
		t.Errorf("the pass ran on a host that is not its role's")
	}
	name := e.srv.Snapshot().Users[0].UserName
	if rc, out := runCLI(t, e, "explain", name); rc != 0 || strings.Contains(out, "quota:") || strings.Contains(out, "home:  ") {
		t.Errorf("explain on a host where no homes pass ran must show no storage: rc %d\n%s", rc, out)
	}
	// By hand it runs anywhere; the generated users' homes (/home/...) are
	// outside this root: refused, nothing made, the host's /home untouched.
	rc, out = runCLI(t, e, "homes", "plan")
	if rc != 0 || !strings.Contains(out, "homes plan (nothing changed): 0 home(s)") || !strings.Contains(out, "is outside the roots "+root) {
		t.Errorf("homes plan: rc %d\n%s", rc, out)
	}
	os.WriteFile(e.cfgPath, base, 0o600)
	if rc, _ := runCLI(t, e, "homes", "plan"); rc == 0 {
		t.Errorf("homes plan without [homes] must fail")
	}
}
