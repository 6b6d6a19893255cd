package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check-config knows the roles: a config with a source but neither
// [slurm] nor [mirror] on a host whose plugstack.conf loads spank_scim is
// an error with the lines to use, and the example's placeholder base_url
// a warning with them; the same config where spank_scim is not loaded
// passes (what this host loads decides); a mirror node's config is never
// asked.
func TestCheckConfigRoles(t *testing.T) {
	e := newEnv(t, 5, 1, "")
	dir := t.TempDir()
	withSpank := filepath.Join(dir, "plugstack.conf")
	os.MkdirAll(filepath.Join(dir, "plugstack.conf.d"), 0o755)
	os.WriteFile(withSpank, []byte("include "+filepath.Join(dir, "plugstack.conf.d", "*.conf")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "plugstack.conf.d", "scim.conf"), []byte("required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_scim.so\n"), 0o644)
	none := filepath.Join(dir, "none.conf")

	rc, out := runCLI(t, e, "check-config", "--plugstack", withSpank)
	if rc != 1 || !strings.Contains(out, "loads spank_scim.so, but this config has neither [slurm]") ||
		!strings.Contains(out, "[mirror]\n    url = ") || !strings.Contains(out, "public_key_file = \"/etc/scimbridge/publish.key.pub\"") {
		t.Errorf("single-host config on a spank node: rc %d\n%s", rc, out)
	}
	if rc, out := runCLI(t, e, "check-config", "--plugstack", none); rc != 0 {
		t.Errorf("the same config without spank_scim: rc %d\n%s", rc, out)
	}

	// The example copied as is (its placeholder base_url).
	b, _ := os.ReadFile(e.cfgPath)
	ex := &env{cfgPath: filepath.Join(e.dir, "example.toml")}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "base_url") {
			lines[i] = `base_url = "https://idp.example.com/scim/v2"`
		}
	}
	os.WriteFile(ex.cfgPath, []byte(strings.Join(lines, "\n")), 0o600)
	// Checking the example as shipped passes with a warning and the lines
	// to use; on a Slurm node it is the error above.
	if rc, out := runCLI(t, ex, "check-config", "--plugstack", none); rc != 0 || !strings.Contains(out, "warning: base_url is the example's placeholder") {
		t.Errorf("the example's base_url: rc %d\n%s", rc, out)
	}
	if rc, out := runCLI(t, ex, "check-config", "--plugstack", withSpank); rc != 1 || !strings.Contains(out, "error: "+withSpank+" loads spank_scim.so") {
		t.Errorf("the example on a Slurm node: rc %d\n%s", rc, out)
	}
}
