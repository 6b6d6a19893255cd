// Package names maps the group names identity providers write ("Sales
// Team EU", "Domain Users", "équipe", a 40-character team name) to Linux
// group names, the way SSSD does for AD groups (override_space, case
// folding), with a length rule and an explicit rename map.
//
// Decisions:
//   - The mapping is a pure function of the IdP's record (its SCIM id and
//     exact displayName) and the policy: the poller, the receiver (which
//     refuses with 400 what cannot be mapped, so the IdP shows the error)
//     and `syncd explain` compute the same name.
//   - Order: an explicit rename (keyed by SCIM id or exact displayName)
//     wins; else non-ASCII letters are transliterated (canonical
//     decomposition into an ASCII letter and marks, the marks dropped; a
//     few letters spelt out: ß→ss, æ→ae, ø→o, ł→l, đ→d, œ→oe, þ→th, ð→d)
//     or the name is refused
//     (non_ascii = "refuse"); then ASCII is lower-cased, each space
//     becomes `space` and each other character outside [a-z0-9_.-]
//     becomes `other` (either "" refuses the name); control characters
//     and anything left non-ASCII always refuse it (a compatibility form
//     such as a full-width letter is never folded into ASCII: a look-alike
//     must not become the real name by accident). Nothing is trimmed: "
//     slurm-users " becomes "_slurm-users_", never "slurm-users". A name
//     that would start with a digit, "." or "-" ("2024 Cohort", a GUID)
//     gets a letter in front when other is set: "g" for groups, "u" for
//     users ("2024 Cohort" -> g2024_cohort). Not "_": names starting
//     with "_" are the system's (reserved_names has "_*"), so such a
//     name could never be published.
//   - Length: a name longer than max_length (32, what useradd/groupadd
//     and most tools accept) is cut and given "-" and 8 hex digits of the
//     SHA-256 of the exact IdP name (too_long = "hash", the default), so
//     two long names with the same start stay distinct; or refused.
//   - The result must be a portable name ([a-z_][a-z0-9_.-]*, at most
//     max_length bytes); a rename target too. Whether the name is free
//     (not reserved, not a local group, not claimed by another record) is
//     validation's job (syncd/validate): a mapping can never reach a name
//     that check would refuse, because the check runs on the mapped name.
//   - Collisions between mapped names are settled in validation: the
//     live holder keeps its name, else a record whose IdP name is
//     exactly the Linux name, else every colliding record is refused.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Values of NonASCII and TooLong.
const (
	Transliterate = "transliterate"
	Refuse        = "refuse"
	Hash          = "hash"
)

// DefaultMaxLength is the longest Linux name made by default.
const DefaultMaxLength = 32

// Policy is how IdP group names become Linux group names.
type Policy struct {
	// Space replaces each space; "" refuses names with spaces.
	Space string
	// Other replaces each other character outside [a-z0-9_.-]; ""
	// refuses such names.
	Other string
	// NonASCII is Transliterate or Refuse.
	NonASCII string
	// MaxLength bounds the Linux name (0: DefaultMaxLength).
	MaxLength int
	// TooLong is Hash or Refuse.
	TooLong string
	// Rename maps an exact displayName or a SCIM id to a Linux name.
	Rename map[string]string
	// Table is the config table errors name ("": group_names).
	Table string
}

func (p Policy) table() string {
	if p.Table == "" {
		return "group_names"
	}
	return p.Table
}

// lead is put in front of a mapped name that starts with a digit, "." or
// "-".
func (p Policy) lead() string {
	if p.table() == "user_names" {
		return "u"
	}
	return "g"
}

// what is the kind of name in errors.
func (p Policy) what() string {
	if p.table() == "user_names" {
		return "userName"
	}
	return "group name"
}

// Default is the policy of a config without [group_names].
func Default() Policy {
	return Policy{Space: "_", Other: "_", NonASCII: Transliterate, MaxLength: DefaultMaxLength, TooLong: Hash}
}

// OrDefault is p, or Default (keeping p's renames) when p is the zero
// Policy (a caller that set nothing).
func (p Policy) OrDefault() Policy {
	if p.NonASCII != "" || p.TooLong != "" {
		return p
	}
	d := Default()
	d.Rename = p.Rename
	return d
}

// Error is a name the policy cannot map.
type Error struct {
	Name   string // as the IdP sent it
	Why    string
	Option string // the setting that would map it
	What   string // "group name" or "userName"
}

func (e *Error) Error() string {
	what := e.What
	if what == "" {
		what = "group name"
	}
	return fmt.Sprintf("%s %q: %s (set %s)", what, e.Name, e.Why, e.Option)
}

// Map returns the Linux group name for the group with SCIM id and exact
// displayName display.
func (p Policy) Map(id, display string) (string, error) {
	if to, ok := p.renamed(id, display); ok {
		return to, p.checkRename(display, to)
	}
	return p.mapChars(display, display)
}

// renamed is the rename of the record with SCIM id and exact IdP name.
func (p Policy) renamed(id, idpName string) (string, bool) {
	for _, k := range []string{id, idpName} {
		if to, ok := p.Rename[k]; ok && k != "" {
			return to, true
		}
	}
	return "", false
}

func (p Policy) maxLength() int {
	if p.MaxLength <= 0 {
		return DefaultMaxLength
	}
	return p.MaxLength
}

func (p Policy) fail(idpName, why, option string) error {
	return &Error{Name: idpName, Why: why, Option: option, What: p.what()}
}

func (p Policy) checkRename(idpName, to string) error {
	if why := Check(to, p.maxLength()); why != "" {
		return p.fail(idpName, fmt.Sprintf("its rename %q %s", to, why), p.table()+".rename")
	}
	return nil
}

// mapChars maps s (idpName, or a part of it) character by character:
// transliteration, case, spaces and other characters, a leading digit,
// the length rule. Errors name idpName.
func (p Policy) mapChars(s, idpName string) (string, error) {
	t := p.table()
	max := p.maxLength()
	if s == "" {
		return "", p.fail(idpName, "empty", t+".rename")
	}
	if !utf8.ValidString(s) {
		return "", p.fail(idpName, "not valid UTF-8", t+".rename")
	}
	if !isASCII(s) {
		if p.NonASCII == Refuse {
			return "", p.fail(idpName, "contains non-ASCII characters", t+`.non_ascii = "transliterate" or `+t+".rename")
		}
		tr, bad := transliterate(s)
		if bad != 0 {
			return "", p.fail(idpName, fmt.Sprintf("character %U is not ASCII and has no ASCII spelling", bad), t+".rename")
		}
		s = tr
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= 'A' && ch <= 'Z':
			b.WriteByte(ch + 'a' - 'A')
		case ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9', ch == '_', ch == '.', ch == '-':
			b.WriteByte(ch)
		case ch < 0x20 || ch == 0x7f:
			return "", p.fail(idpName, fmt.Sprintf("contains control character %U", rune(ch)), t+".rename")
		case ch == ' ':
			if p.Space == "" {
				return "", p.fail(idpName, "contains a space", t+`.space (for example "_")`)
			}
			b.WriteString(p.Space)
		default:
			if p.Other == "" {
				return "", p.fail(idpName, fmt.Sprintf("contains %q", ch), t+`.other (for example "_")`)
			}
			b.WriteString(p.Other)
		}
	}
	name := b.String()
	if name != "" && !(name[0] >= 'a' && name[0] <= 'z' || name[0] == '_') && p.Other != "" {
		// "2024 Cohort", a GUID: a portable name starts with a letter or
		// "_", and "_*" is reserved for system accounts: a letter goes in
		// front (an IdP name that is exactly the result still wins it:
		// see validate).
		name = p.lead() + name
	}
	if len(name) > max {
		if p.TooLong == Refuse {
			return "", p.fail(idpName, fmt.Sprintf("%d bytes, more than %s.max_length %d", len(name), t, max), t+`.too_long = "hash", `+t+".max_length or "+t+".rename")
		}
		name = Shorten(name, idpName, max)
	}
	if why := Check(name, max); why != "" {
		return "", p.fail(idpName, fmt.Sprintf("maps to %q, which %s", name, why), t+".rename")
	}
	return name, nil
}

// Shorten cuts name to max bytes, the last 9 being "-" and 8 hex digits
// of the SHA-256 of the exact IdP name.
func Shorten(name, idpName string, max int) string {
	sum := sha256.Sum256([]byte(idpName))
	tag := "-" + hex.EncodeToString(sum[:4])
	keep := max - len(tag)
	if keep < 1 {
		keep = 1
	}
	return name[:min(keep, len(name))] + tag
}

// Check reports why n is not a portable name of at most max bytes; "" is
// ok.
func Check(n string, max int) string { return scan(n, max, false) }

// scan is Check, and with dollar CheckUser: the one scanner of Linux
// names, for groups and users alike.
func scan(n string, max int, dollar bool) string {
	switch {
	case n == "":
		return "is empty"
	case len(n) > max:
		return fmt.Sprintf("is %d bytes, more than %d", len(n), max)
	}
	for i := 0; i < len(n); i++ {
		ch := n[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch == '_':
		case (ch >= '0' && ch <= '9') || ch == '.' || ch == '-':
			if i == 0 {
				return fmt.Sprintf("starts with %q (must be a letter or _)", ch)
			}
		case ch == '$' && dollar && i > 0 && i == len(n)-1:
		default:
			return fmt.Sprintf("has %q, not in [a-z0-9_.-]", ch)
		}
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// spelt are letters that do not decompose into ASCII.
var spelt = map[rune]string{
	'ß': "ss", 'æ': "ae", 'Æ': "AE", 'ø': "o", 'Ø': "O", 'ł': "l", 'Ł': "L",
	'đ': "d", 'Đ': "D", 'œ': "oe", 'Œ': "OE", 'þ': "th", 'Þ': "TH", 'ð': "d", 'Ð': "D",
}

// transliterate spells s in ASCII: a letter whose canonical
// decomposition is an ASCII letter and combining marks (é, Å, ñ) becomes
// that letter; the letters in spelt are spelt out. Anything else is bad,
// the first such rune returned (0: none). A character that decomposes to
// a bare ASCII letter without any mark (the Kelvin sign U+212A is "K")
// is refused: it is invisible look-alike, not an accented letter.
func transliterate(s string) (string, rune) {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		if t := spelt[r]; t != "" {
			b.WriteString(t)
			continue
		}
		d := []rune(norm.NFD.String(string(r)))
		if len(d) < 2 || d[0] >= 0x80 {
			return "", r
		}
		for _, m := range d[1:] {
			if !unicode.Is(unicode.Mn, m) {
				return "", r
			}
		}
		b.WriteRune(d[0])
	}
	return b.String(), 0
}
