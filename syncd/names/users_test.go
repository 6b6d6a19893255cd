package names

import (
	"strings"
	"testing"
)

// userNames as Okta, Entra ID, authentik and AWS IAM Identity Center send
// them (their SCIM docs: an email or UPN is the usual userName) map with
// the default policy; names that were valid before keep their spelling.
func TestMapUserDefault(t *testing.T) {
	u := DefaultUsers()
	for _, tc := range []struct {
		in, want string
		own      bool
		err      string
	}{
		{"alice", "alice", true, ""},
		{"Alice", "alice", true, ""},                          // folded as before
		{"svc-build", "svc-build", true, ""},                  // unchanged
		{"host$", "host$", true, ""},                          // Samba machine account, valid before
		{"alice@example.com", "alice", false, ""},             // Okta login, AWS userName
		{"Alice.Smith@Contoso.com", "alice.smith", false, ""}, // Entra UPN
		{"o'brien@example.com", "o_brien", false, ""},
		{"alice+hpc@example.com", "alice_hpc", false, ""},
		{"josé@example.com", "jose", false, ""},
		{"alice_gmail.com#EXT#@contoso.onmicrosoft.com", "alice_gmail.com_ext_", false, ""}, // Entra guest
		{"John Smith", "john_smith", false, ""},
		{"2fa-tester@example.com", "u2fa-tester", false, ""},
		{"root@example.com", "root", false, ""}, // reserved: validation refuses it after mapping
		{"\u212Aelvin@example.com", "", false, "U+212A"},
		{"@example.com", "", false, "nothing before the @"},
		{"", "", false, "empty"},
	} {
		got, own, err := u.Map("id1", tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Map(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
		case err != nil:
			t.Errorf("Map(%q): %v", tc.in, err)
		case got != tc.want || own != tc.own:
			t.Errorf("Map(%q) = %q own=%v, want %q own=%v", tc.in, got, own, tc.want, tc.own)
		}
	}
	long, own, err := u.Map("x", "firstname.middlename.lastname.extra@example.com")
	if err != nil || len(long) != 32 || own || !strings.HasPrefix(long, "firstname.middlename.la-") {
		t.Errorf("long local part: %q %v %v", long, own, err)
	}
}

func TestMapUserOptions(t *testing.T) {
	u := DefaultUsers()
	u.Domains = []string{"corp.example.com"}
	u.Rename = map[string]string{"Bob.Builder@corp.example.com": "bob", "0a1b": "carol", "Bad": "Not:ok"}
	if n, own, err := u.Map("x", "Dan@Corp.Example.com"); n != "dan" || !own || err != nil {
		t.Errorf("listed domain: %q %v %v", n, own, err)
	}
	if _, _, err := u.Map("x", "dan@partner.example.org"); err == nil || !strings.Contains(err.Error(), "user_names.domains") {
		t.Errorf("unlisted domain with a list: %v", err)
	}
	if n, own, _ := u.Map("x", "Bob.Builder@corp.example.com"); n != "bob" || !own {
		t.Errorf("rename by userName: %q %v", n, own)
	}
	if n, _, _ := u.Map("0a1b", "whoever@corp.example.com"); n != "carol" {
		t.Errorf("rename by id: %q", n)
	}
	if _, _, err := u.Map("x", "Bad"); err == nil || !strings.Contains(err.Error(), "user_names.rename") {
		t.Errorf("bad rename target: %v", err)
	}
	u.NonASCII, u.Other, u.TooLong = Refuse, "", Refuse
	if _, _, err := u.Map("x", "josé@corp.example.com"); err == nil || !strings.Contains(err.Error(), "user_names.non_ascii") {
		t.Errorf("non-ASCII refused: %v", err)
	}
	if _, _, err := u.Map("x", "o'brien@corp.example.com"); err == nil || !strings.Contains(err.Error(), "user_names.other") || !strings.HasPrefix(err.Error(), "userName ") {
		t.Errorf("other refused: %v", err)
	}
	if _, _, err := u.Map("x", strings.Repeat("a", 33)+"@corp.example.com"); err == nil || !strings.Contains(err.Error(), "user_names.too_long") {
		t.Errorf("too long refused: %v", err)
	}
}

func BenchmarkMapUser(b *testing.B) {
	u := DefaultUsers()
	in := []string{"alice", "Alice.Smith@Contoso.com", "josé.garcía@example.com", "alice_gmail.com#EXT#@contoso.onmicrosoft.com"}
	for i := 0; i < b.N; i++ {
		if _, _, err := u.Map("id", in[i%len(in)]); err != nil {
			b.Fatal(err)
		}
	}
}
