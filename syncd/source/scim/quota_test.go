package scim

import (
	"slices"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/source"
)

// The home quota attribute is read from a custom extension as a string or
// a JSON number, as its text (validation parses it); anything else is
// marked malformed, not guessed; without the option nothing is read.
func TestQuotaAttributeRead(t *testing.T) {
	const ext = "urn:example:params:scim:schemas:extension:hpc:2.0:User"
	c, err := New(Options{BaseURL: "https://idp.example/scim/v2", Attrs: Attrs{UserName: "userName", Quota: ext + ":homeQuota"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New(Options{BaseURL: "https://idp.example/scim/v2", Attrs: Attrs{UserName: "userName"}})
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]string{
		`{"id":"1","userName":"a","` + ext + `":{"homeQuota":"50G"}}`:   "50G",
		`{"id":"1","userName":"a","` + ext + `":{"homequota":75}}`:      "75",
		`{"id":"1","userName":"a","` + ext + `":{"homeQuota":1.5E2}}`:   "150",
		`{"id":"1","userName":"a","` + ext + `":{"homeQuota":null}}`:    "",
		`{"id":"1","userName":"a"}`:                                     "",
		`{"id":"1","userName":"a","` + ext + `":{"homeQuota":[1]}}`:     "malformed",
		`{"id":"1","userName":"a","` + ext + `":{"homeQuota":{"x":1}}}`: "malformed",
		`{"id":"1","userName":"a","` + ext + `":{"homeQuota":true}}`:    "malformed",
	} {
		r, err := parseResource([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		u := c.toUser(r)
		got := u.Quota
		if u.Malformed[source.FieldQuota] != "" {
			got = "malformed"
		}
		if got != want {
			t.Errorf("%s: quota %q (malformed: %q), want %q", doc, u.Quota, u.Malformed[source.FieldQuota], want)
		}
		if p := plain.toUser(&resource{top: r.top}); p.Quota != "" || p.Malformed[source.FieldQuota] != "" {
			t.Errorf("%s: read without home_quota configured: %+v", doc, p)
		}
	}
	if q := c.userQuery().Get("attributes"); !contains(q, ext+":homeQuota") {
		t.Errorf("attributes= %q does not ask for the quota attribute", q)
	}
}

func contains(list, s string) bool { return slices.Contains(strings.Split(list, ","), s) }

// The team's project quota is read from the Group resource the same way.
func TestProjectQuotaAttributeRead(t *testing.T) {
	const ext = "urn:example:params:scim:schemas:extension:hpc:2.0:Group"
	c, err := New(Options{BaseURL: "https://idp.example/scim/v2", Attrs: Attrs{UserName: "userName", GroupName: "displayName", GroupQuota: ext + ":projectQuota"}})
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]string{
		`{"id":"g","displayName":"physics","` + ext + `":{"projectQuota":"5T"}}`: "5T",
		`{"id":"g","displayName":"physics","` + ext + `":{"projectQuota":2048}}`: "2048",
		`{"id":"g","displayName":"physics","` + ext + `":{"projectQuota":[1]}}`:  "malformed",
	} {
		r, err := parseResource([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		g, _, _ := c.toGroup(r)
		got := g.Quota
		if g.Malformed[source.FieldQuota] != "" {
			got = "malformed"
		}
		if got != want {
			t.Errorf("%s: %q, want %q", doc, got, want)
		}
	}
	if q := c.groupQuery().Get("attributes"); !contains(q, ext+":projectQuota") {
		t.Errorf("attributes= %q does not ask for the project quota", q)
	}
}
