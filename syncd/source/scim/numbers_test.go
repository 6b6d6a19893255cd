package scim

import (
	"context"
	"fmt"
	"testing"
)

// Number shapes: a JSON number that is an exact integer is one (20001.0
// from a double, 2.0001E4 from Java's Double.toString); a fraction is
// not; totalResults may come as a string.
func TestNumberShapes(t *testing.T) {
	h := &handWritten{bodies: map[string]string{
		"Users?1": `{"totalResults": "4", "Resources": [
			{"id": "u1", "userName": "a", "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {"uidNumber": 20001.0, "gidNumber": 2.0E4}},
			{"id": "u2", "userName": "b", "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {"uidNumber": 2.0002E4, "gidNumber": 20000}},
			{"id": "u3", "userName": "c", "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {"uidNumber": 20003.5, "gidNumber": 1e400}},
			{"id": "u4", "userName": "d", "urn:ietf:params:scim:schemas:extension:posix:2.0:User": {"uidNumber": -20004, "gidNumber": 1E+30}}]}`,
		"Users?5": `{"totalResults": "4", "Resources": []}`,
		"Groups":  minimalLists,
	}}
	dir, err := shapeClient(t, serveHandWritten(t, h), quietLog()).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for i, u := range dir.Users {
		by[u.ID] = i
	}
	u := func(id string) (uid, gid any, mal map[string]string) {
		x := dir.Users[by[id]]
		return ptr(x.UID), ptr(x.GID), x.Malformed
	}
	if uid, gid, mal := u("u1"); uid != int64(20001) || gid != int64(20000) || mal != nil {
		t.Errorf("u1: uid %v gid %v malformed %v", uid, gid, mal)
	}
	if uid, _, mal := u("u2"); uid != int64(20002) || mal != nil {
		t.Errorf("u2: uid %v malformed %v", uid, mal)
	}
	if uid, gid, mal := u("u3"); uid != nil || gid != nil || mal["uid"] == "" || mal["gid"] == "" {
		t.Errorf("u3: uid %v gid %v malformed %v; want both malformed", uid, gid, mal)
	}
	// A negative id is read (and refused by validation as out of range);
	// 1E+30 is not an id.
	if uid, gid, mal := u("u4"); uid != int64(-20004) || gid != nil || mal["gid"] == "" {
		t.Errorf("u4: uid %v gid %v malformed %v", uid, gid, mal)
	}
}

func TestWholeNumber(t *testing.T) {
	for in, want := range map[string]string{
		"20001": "20001", "20001.0": "20001", "20001.000": "20001", "2.0001E4": "20001", "2.0001e+4": "20001",
		"200010e-1": "20001", "-5": "-5", "0": "0", "0.0": "0", "-0": "0", "0e99999": "0", "999999999999": "999999999999",
		"20001.5": "!", "2.00015e4": "!", "1e-1": "!", "1e400": "!", "1E+30": "!", "1000000000000": "!",
		"1e99999999999": "!", "1e-99999999999": "!", "": "!", "-": "!", ".5": "!", "1.": "1", "1e": "!", "0x10": "!", "1_0": "!",
	} {
		got, why := wholeNumber(in)
		if why != "" {
			got = "!"
		}
		if got != want {
			t.Errorf("wholeNumber(%q) = %q, %q; want %q", in, got, why, want)
		}
	}
}

// active sent twice under names differing in case: false if any copy is
// not true (red team, issue 9: the exact-case copy used to win).
func TestActiveTwiceInCase(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want string
	}{
		{`{"active": true, "Active": "False"}`, "false"},
		{`{"Active": false, "active": true}`, "false"},
		{`{"active": true, "ACTIVE": "no"}`, "false"},
		{`{"active": true, "ACTIVE": "True"}`, "true"},
		{`{"active": true, "Active": null}`, "true"},
		{`{"active": "False"}`, "false"},
		{`{"active": true}`, "true"},
	} {
		r, err := parseResource([]byte(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.boolean(Path{Attr: "active"})
		got := "error"
		if err == nil && b != nil {
			got = fmt.Sprint(*b)
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s (%v)", c.doc, got, c.want, err)
		}
	}
}
