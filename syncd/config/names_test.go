package config

import (
	"strings"
	"testing"
)

func TestGroupNamesAndPrivateGroups(t *testing.T) {
	base := "base_url = \"https://idp.example.com/scim/v2\"\ntoken_file = \"@DIR@/token\"\npreset = \"posix\"\n"
	c, err := Load(setup(t, base))
	if err != nil {
		t.Fatal(err)
	}
	if c.PrivateGroups != PrivateGroupsUID || c.GroupNames.Space != "_" || c.GroupNames.MaxLength != 32 {
		t.Errorf("defaults: private_groups %v, group_names %+v", c.PrivateGroups, c.GroupNames)
	}
	if n, err := c.GroupNames.Policy().Map("x", "Sales Team EU"); err != nil || n != "sales_team_eu" {
		t.Errorf("default policy: %q %v", n, err)
	}
	for body, want := range map[string]PrivateGroupMode{"private_groups = true": PrivateGroupsAll, "private_groups = false": PrivateGroupsOff, `private_groups = "uid"`: PrivateGroupsUID} {
		c, err := Load(setup(t, base+body+"\n"))
		if err != nil || c.PrivateGroups != want {
			t.Errorf("%s: %v %v", body, c.PrivateGroups, err)
		}
	}
	c, err = Load(setup(t, base+"[group_names]\nspace = \"\"\n[group_names.rename]\n\"Domain Users\" = \"domusers\"\n"))
	if err != nil || c.GroupNames.Space != "" || c.GroupNames.Other != "_" || c.GroupNames.Rename["Domain Users"] != "domusers" {
		t.Errorf("explicit space = \"\": %+v %v", c.GroupNames, err)
	}
	for body, key := range map[string]string{
		`private_groups = "yes"`:                                     "private_groups",
		"[group_names]\nspace = \"+\"\n":                             "group_names.space",
		"[group_names]\nnon_ascii = \"drop\"\n":                      "group_names.non_ascii",
		"[group_names]\nmax_length = 5\n":                            "group_names.max_length",
		"[group_names.rename]\n\"A\" = \"Bad Name\"\n":               "group_names.rename",
		"[group_names.rename]\n\"A\" = \"same\"\n\"B\" = \"same\"\n": "group_names.rename",
	} {
		if _, err := Load(setup(t, base+body)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", body, err, key)
		}
	}
}

// status_path defaults to status.json beside cache_path (issue 20: it
// stayed in /var/lib/scimbridge when cache_path was elsewhere).
func TestStatusPathBesideCache(t *testing.T) {
	base := "base_url = \"https://idp.example.com/scim/v2\"\ntoken_file = \"@DIR@/token\"\npreset = \"posix\"\n"
	c, err := Load(setup(t, base+"cache_path = \"/srv/scim/cache.db\"\n"))
	if err != nil || c.StatusPath != "/srv/scim/status.json" {
		t.Errorf("status_path = %q (%v)", c.StatusPath, err)
	}
	c, _ = Load(setup(t, base))
	if c.StatusPath != DefaultStatusPath {
		t.Errorf("default status_path = %q", c.StatusPath)
	}
}
