package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// writeFile writes a file with the given mode (the umask may not narrow it).
func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func setup(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "token"), "secret\n", 0o600)
	body = strings.ReplaceAll(body, "@DIR@", dir)
	p := filepath.Join(dir, "syncd.toml")
	writeFile(t, p, body, 0o600)
	return p
}

func TestLoadGoodPresetAndDefaults(t *testing.T) {
	p := setup(t, `
base_url = "https://idp.example.com/scim/v2"
token_file = "@DIR@/token"
preset = "coreweave"
posix_groups = ["slurm-users", "slurm-sudo"]
poll_interval = "2m"
home_template = "/mnt/home/%u"
[attributes]
shell = "urn:example:ext:2.0:User:shell"
[slurm]
cluster = "lab"
`)
	c, err := Load(p)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.PollInterval != 2*time.Minute || c.PollJitter != 12*time.Second {
		t.Errorf("poll %v jitter %v, want 2m and 12s", c.PollInterval, c.PollJitter)
	}
	if c.Attributes.UID != CoreWeaveUserURN+":uid" {
		t.Errorf("preset uid path = %q", c.Attributes.UID)
	}
	if c.Attributes.Shell != "urn:example:ext:2.0:User:shell" {
		t.Errorf("explicit attribute lost to preset: %q", c.Attributes.Shell)
	}
	if c.MaxRemovalShare != 0.10 || c.CachePath != DefaultCachePath || c.PageSize != 500 {
		t.Errorf("defaults: share %v cache %q page %d", c.MaxRemovalShare, c.CachePath, c.PageSize)
	}
	var sl struct{ Cluster string }
	if err := c.DecodeSlurm(&sl); err != nil || sl.Cluster != "lab" {
		t.Errorf("DecodeSlurm = %+v, %v", sl, err)
	}
	if got := ExpandHome(c.HomeTemplate, "alice"); got != "/mnt/home/alice" {
		t.Errorf("ExpandHome = %q", got)
	}
}

// Every problem is reported, not just the first.
func TestLoadReportsEveryError(t *testing.T) {
	p := setup(t, `
base_url = "http://idp.example.com/scim"
token_file = "relative/token"
preset = "nosuch"
paging = "sideways"
page_size = 0
uid_min = 0
uid_max = 5000000000
home_template = "/home/../%x"
default_shell = "/bin/fish"
allowed_shells = ["/bin/bash"]
max_removal_share = 1.5
metrics_listen = "0.0.0.0:9100"
log_level = "loud"
typo_key = 1
[attributes]
uid = "employeeNumber"
gid = "urn:bad"
`)
	_, err := Load(p)
	if err == nil {
		t.Fatal("Load accepted a broken config")
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %T is not Errors", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"base_url", "token_file", `preset "nosuch"`, "paging", "page_size", "uid_min", "uid_max",
		"home_template", "default_shell", "max_removal_share", "metrics_listen", "log_level",
		`unknown key "typo_key"`, "attributes.uid", "attributes.gid",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors do not mention %s:\n%s", want, msg)
		}
	}
	if len(errs) < 15 {
		t.Errorf("got %d errors, want at least 15:\n%s", len(errs), msg)
	}
}

func TestSecretFileModes(t *testing.T) {
	p := setup(t, `
base_url = "https://idp.example.com/scim/v2"
token_file = "@DIR@/token"
preset = "posix"
`)
	if _, err := Load(p); err != nil {
		t.Fatalf("Load: %v", err)
	}
	os.Chmod(p, 0o644)
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), "mode 0644") || !strings.Contains(err.Error(), p) {
		t.Errorf("world-readable config: err = %v, want it to name the file and mode 0644", err)
	}
	os.Chmod(p, 0o600)
	tok := filepath.Join(filepath.Dir(p), "token")
	os.Chmod(tok, 0o640)
	_, err = Load(p)
	if err == nil || !strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), "0640") {
		t.Errorf("group-readable token: err = %v, want it to name %s and 0640", err, tok)
	}
	if os.Geteuid() == 0 {
		os.Chmod(tok, 0o600)
		os.Chown(tok, 12345, 12345)
		_, err = Load(p)
		if err == nil || !strings.Contains(err.Error(), "owned by uid 12345") {
			t.Errorf("token owned by uid 12345: err = %v", err)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if !IsNotExist(err) {
		t.Errorf("err = %v, want not-exist", err)
	}
}

func TestHomeTemplate(t *testing.T) {
	for tmpl, ok := range map[string]bool{
		"/mnt/home/%u": true, "/home/%u/x%%": true, "home/%u": false, "/home/%d": false,
		"/home/../%u": false, "/home/%u:x": false, "/home/%": false,
		// Validation refuses a home that is not a clean path, so a
		// template that makes one would reject every user.
		"/mnt/home/%u/": false, "/mnt//home/%u": false, "/mnt/home//%u": false, "/": false,
	} {
		if err := CheckHomeTemplate(tmpl); (err == nil) != ok {
			t.Errorf("CheckHomeTemplate(%q) = %v, want ok=%v", tmpl, err, ok)
		}
	}
}

// The annotated example in syncd/testdata is a valid configuration.
func TestExampleConfig(t *testing.T) {
	b, err := os.ReadFile("../testdata/syncd.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := setup(t, strings.Replace(string(b), `"/etc/scimbridge/scim.token"`, `"@DIR@/token"`, 1))
	c, err := Load(p)
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if c.Attributes.UID != PosixUserURN+":uidNumber" || len(c.PosixGroups) != 2 || c.PollJitter != 6*time.Second {
		t.Errorf("example config = %+v", c)
	}
}

// Validation refuses shells with white space (see syncd/validate), so a
// configured one would refuse every user that gets it.
func TestShellsWithWhiteSpace(t *testing.T) {
	p := setup(t, `
base_url = "https://idp.example.com/scim/v2"
token_file = "@DIR@/token"
preset = "posix"
default_shell = "/bin/bash -l"
allowed_shells = ["/bin/bash -l", "/usr/bin/my shell"]
`)
	_, err := Load(p)
	if err == nil {
		t.Fatal("Load accepted shells with white space")
	}
	for _, want := range []string{`default_shell: "/bin/bash -l"`, `allowed_shells: "/usr/bin/my shell"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors do not mention %s:\n%v", want, err)
		}
	}
}

func TestGroupMembersModes(t *testing.T) {
	for mode, ok := range map[string]bool{"auto": true, "listing": true, "per-group": true, "per-user": true, "user-groups": true, "users": false} {
		p := setup(t, `
base_url = "https://idp.example.com/scim/v2"
token_file = "@DIR@/token"
preset = "posix"
group_members = "`+mode+`"
`)
		if _, err := Load(p); (err == nil) != ok {
			t.Errorf("group_members = %q: err = %v, want ok=%v", mode, err, ok)
		}
	}
}

func TestHardeningOptions(t *testing.T) {
	base := "base_url = \"https://idp.example.com/scim/v2\"\ntoken_file = \"@DIR@/token\"\npreset = \"posix\"\n"
	c, err := Load(setup(t, base))
	if err != nil {
		t.Fatal(err)
	}
	if c.MinID != 1000 || len(c.HomeRoots) != 1 || c.HomeRoots[0] != "/home" || len(c.SharedPrimaryGIDs) != 0 || ReservedMatch("Docker", c.ReservedNames) == "" || ReservedMatch("systemd-x", c.ReservedNames) == "" {
		t.Errorf("defaults: min_id %d home_roots %v shared %v reserved %v", c.MinID, c.HomeRoots, c.SharedPrimaryGIDs, c.ReservedNames)
	}
	for _, tc := range []struct{ body, key string }{
		{"min_id = 500\nuid_min = 600\ngid_min = 600", "min_id"},
		{"min_id = 5000\nuid_min = 2000", "uid_min"},
		{"min_id = 5000\nuid_min = 6000\ngid_min = 2000", "gid_min"},
		{"shared_primary_gids = [100]", "shared_primary_gids"},
		{"home_roots = [\"/\"]", "home_roots"},
		{"home_roots = [\"/etc/homes\"]", "home_roots"},
		{"home_roots = [\"/var\"]", "home_roots"},
		{"home_roots = [\"/var/lib/scimbridge\"]", "home_roots"},
		{"home_roots = [\"/home/\"]", "home_roots"},
		{"home_template = \"/%u\"", "home_template"},
		{"home_template = \"/root/%u\"", "home_template"},
		{"reserved_names = [\"ok\", \"\"]", "reserved_names"},
	} {
		_, err := Load(setup(t, base+tc.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), ": "+tc.key+": ") {
			t.Errorf("%q: err = %v, want one naming %s", tc.body, err, tc.key)
		}
	}
	if _, err := Load(setup(t, base+"min_id = 500\nallow_min_id_below_1000 = true\nuid_min = 600\ngid_min = 600\nshared_primary_gids = [5000]\nhome_roots = [\"/home\", \"/scratch/home\"]\n")); err != nil {
		t.Errorf("forced low min_id: %v", err)
	}
}

// The example config shows the whole default reserved_names list.
func TestExampleReservedNames(t *testing.T) {
	b, err := os.ReadFile("../../packaging/syncd.toml.example")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "# reserved_names = "); ok {
			var got struct{ R []string }
			if _, err := toml.Decode("r = "+v, &got); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.R, ",") != strings.Join(DefaultReservedNames, ",") {
				t.Errorf("example reserved_names %v\nwant the default %v", got.R, DefaultReservedNames)
			}
			return
		}
	}
	t.Error("the example has no reserved_names line")
}
