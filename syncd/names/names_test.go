package names

import (
	"strings"
	"testing"
)

func TestMapDefault(t *testing.T) {
	p := Default()
	long := "Research Computing Platform Engineering"
	for _, tc := range []struct{ in, want, err string }{
		{"Sales Team EU", "sales_team_eu", ""},
		{"Domain Users", "domain_users", ""},
		{"équipe", "equipe", ""},
		{"Straße Ø", "strasse_o", ""},
		{"R&D/Ops", "r_d_ops", ""},
		{" slurm-users ", "_slurm-users_", ""}, // never trimmed into the real name
		{"slurm-users", "slurm-users", ""},
		{"\u212Aluster", "", "U+212A"},    // Kelvin sign: no silent "k"
		{"ｓｌｕｒｍ", "", "U+FF53"},           // full-width: no compatibility folding
		{"слерм", "", "U+0441"},           // Cyrillic look-alikes
		{"a\tb", "", "control character"}, // never mapped
		{"2024 interns", "g2024_interns", ""},
		{"", "", "empty"},
		{long, "", ""},
	} {
		got, err := p.Map("id1", tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Map(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("Map(%q): %v", tc.in, err)
		case tc.in == long:
			if len(got) != 32 || !strings.HasPrefix(got, "research_computing_plat-") {
				t.Errorf("Map(long) = %q (%d bytes)", got, len(got))
			}
			other, _ := p.Map("id2", long+" II")
			if other == got {
				t.Errorf("two long names with one prefix map to the same %q", got)
			}
		case tc.want != "" && got != tc.want:
			t.Errorf("Map(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMapOptions(t *testing.T) {
	p := Policy{Space: "", Other: "-", NonASCII: Refuse, MaxLength: 32, TooLong: Refuse,
		Rename: map[string]string{"Domain Users": "domusers", "0a1b": "by_id", "Bad": "Not:ok"}}
	if _, err := p.Map("x", "Sales Team"); err == nil || !strings.Contains(err.Error(), "group_names.space") {
		t.Errorf("space refused: %v", err)
	}
	if n, _ := p.Map("x", "R&D"); n != "r-d" {
		t.Errorf("other = -: %q", n)
	}
	if n, err := p.Map("x", "2024"); err != nil || n != "g2024" {
		t.Errorf("leading digit: %q %v", n, err)
	}
	p.Other = ""
	if _, err := p.Map("x", "2024"); err == nil || !strings.Contains(err.Error(), "starts with '2'") {
		t.Errorf("leading digit with other = \"\": %v", err)
	}
	p.Other = "-"
	if n, _ := p.Map("x", "R&D"); n != "r-d" {
		t.Errorf("other = -: %q", n)
	}
	if _, err := p.Map("x", "équipe"); err == nil || !strings.Contains(err.Error(), "non_ascii") {
		t.Errorf("non-ASCII refused: %v", err)
	}
	if _, err := p.Map("x", strings.Repeat("a", 33)); err == nil || !strings.Contains(err.Error(), "too_long") {
		t.Errorf("too long refused: %v", err)
	}
	if n, _ := p.Map("x", "Domain Users"); n != "domusers" {
		t.Errorf("rename by exact name: %q", n)
	}
	if n, _ := p.Map("0a1b", "Whatever Name"); n != "by_id" {
		t.Errorf("rename by id: %q", n)
	}
	if _, err := p.Map("x", "domain users"); err == nil {
		t.Error("rename matched a folded name")
	}
	if _, err := p.Map("x", "Bad"); err == nil || !strings.Contains(err.Error(), "group_names.rename") {
		t.Errorf("bad rename target: %v", err)
	}
}

func BenchmarkMap(b *testing.B) {
	p := Default()
	in := []string{"slurm-users", "Sales Team EU", "équipe de recherche", "Research Computing Platform Engineering"}
	for i := 0; i < b.N; i++ {
		if _, err := p.Map("id", in[i%len(in)]); err != nil {
			b.Fatal(err)
		}
	}
}
