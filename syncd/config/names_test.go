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
	expectKeyErrors(t, base, map[string]string{
		`private_groups = "yes"`:                                     "private_groups",
		"[group_names]\nspace = \"+\"\n":                             "group_names.space",
		"[group_names]\nnon_ascii = \"drop\"\n":                      "group_names.non_ascii",
		"[group_names]\nmax_length = 5\n":                            "group_names.max_length",
		"[group_names.rename]\n\"A\" = \"Bad Name\"\n":               "group_names.rename",
		"[group_names.rename]\n\"A\" = \"same\"\n\"B\" = \"same\"\n": "group_names.rename",
	})
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

// [user_names]: defaults map an email to its local part; user_name_domains
// (before the table) is merged into user_names.domains; bad values name
// their key.
func TestUserNames(t *testing.T) {
	base := "base_url = \"https://idp.example.com/scim/v2\"\ntoken_file = \"@DIR@/token\"\npreset = \"posix\"\n"
	c, err := Load(setup(t, base))
	if err != nil {
		t.Fatal(err)
	}
	if n, own, err := c.UserNames.Users().Map("x", "Alice.Smith@Example.com"); err != nil || n != "alice.smith" || own {
		t.Errorf("default user policy: %q %v %v", n, own, err)
	}
	c, err = Load(setup(t, base+"user_name_domains = [\"old.example\"]\n[user_names]\ndomains = [\"new.example\"]\nother = \"-\"\nmax_length = 20\n[user_names.rename]\n\"X@new.example\" = \"xavier\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	u := c.UserNames.Users()
	if strings.Join(u.Domains, ",") != "new.example,old.example" || u.Other != "-" || u.Space != "_" || u.MaxLength != 20 || u.Rename["X@new.example"] != "xavier" {
		t.Errorf("user_names: %+v", u)
	}
	if _, _, err := u.Map("x", "a@elsewhere.example"); err == nil || !strings.Contains(err.Error(), "user_names.domains") {
		t.Errorf("unlisted domain: %v", err)
	}
	expectKeyErrors(t, base, map[string]string{
		"[user_names]\nmax_length = 40\n":             "user_names.max_length",
		"[user_names]\ndomains = [\"@x\"]\n":          "user_names.domains",
		"user_name_domains = [\"@x\"]\n":              "user_name_domains",
		"[user_names]\ntoo_long = \"cut\"\n":          "user_names.too_long",
		"[user_names.rename]\n\"A\" = \"Bad Name\"\n": "user_names.rename",
		"[user_names]\nunknown_key = 1\n":             "unknown_key",
	})
}

// expectKeyErrors loads base plus each body and wants an error naming its
// key.
func expectKeyErrors(t *testing.T, base string, cases map[string]string) {
	t.Helper()
	for body, key := range cases {
		if _, err := Load(setup(t, base+body)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", body, err, key)
		}
	}
}
