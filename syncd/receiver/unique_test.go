package receiver

import (
	"context"
	"strings"
	"testing"
)

// TestUniqueOrder: userName, the POSIX name and externalId are checked by
// one query; a POST that collides on several answers 409 for the first
// of them in that order, naming its holder, and leaves no ledger row
// behind.
func TestUniqueOrder(t *testing.T) {
	e := newEnv(t, Options{UserNameDomains: []string{"example.com"}}, "")
	post := func(userName, xid string) string {
		return `{"schemas":["` + CoreUserURN + `"],"userName":"` + userName + `","externalId":"` + xid + `"}`
	}
	e.must(201, "POST", "/Users", post("anna", "x-anna"))
	e.must(201, "POST", "/Users", post("bob", "x-bob"))
	e.must(201, "POST", "/Users", post("carl", "x-carl"))
	cases := []struct{ userName, xid, want string }{
		// POSIX name of bob, externalId of anna: the POSIX name is named.
		{"bob@example.com", "x-anna", `userName "bob@example.com" gives the POSIX name "bob", already used by user`},
		// userName of anna (another case), externalId of bob.
		{"ANNA", "x-bob", `userName "ANNA" is already taken by user`},
		// externalId of carl only.
		{"dora", "x-carl", `externalId "x-carl" already belongs to user`},
	}
	for _, c := range cases {
		st, m := e.do("POST", "/Users", post(c.userName, c.xid))
		detail, _ := m["detail"].(string)
		if st != 409 || m["scimType"] != "uniqueness" || !strings.Contains(detail, c.want) {
			t.Errorf("POST %s/%s: %d %v, want 409 uniqueness with %q", c.userName, c.xid, st, m, c.want)
		}
	}
	// A refused create leaves nothing: no user, no ledger entry.
	if n := len(e.dir().Users); n != 3 {
		t.Errorf("%d users after the refused creates, want 3", n)
	}
	var rows int
	if err := e.s.rdb.QueryRowContext(context.Background(), "SELECT count(*) FROM ids WHERE name IN ('dora', 'user:dora')").Scan(&rows); err != nil || rows != 0 {
		t.Errorf("ledger rows for the refused dora: %d (%v), want 0", rows, err)
	}
	// Without a collision the same documents are created.
	e.must(201, "POST", "/Users", post("dora", "x-dora"))
}
