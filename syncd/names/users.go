package names

import (
	"fmt"
	"strings"
)

// User names (issue 20). Identity providers send userName as an email
// (Okta logins, AWS IAM Identity Center), a UPN (Entra ID:
// alice@contoso.com; guests alice_gmail.com#EXT#@contoso.onmicrosoft.com),
// in mixed case, or with characters a login name cannot hold
// ("o'brien", "José"). Decisions:
//   - A userName that is already a POSIX login name once ASCII-folded to
//     lower case ("alice", "Alice", "svc-build", "host$") is kept as it
//     is, whatever the policy says: an upgrade renames no one who had a
//     name before (only names that used to be rejected are mapped).
//   - An explicit rename (user_names.rename, keyed by exact userName or
//     SCIM id) wins over everything.
//   - Domain: with user_names.domains empty (the default), the part after
//     the last "@" is cut whatever the domain ("alice@example.com" ->
//     alice), so the minimal config works on Okta, Entra, authentik and
//     AWS shapes. With domains listed, only those are cut and a userName
//     at any other domain is refused (the rule of user_name_domains,
//     which is still read and merged into the list).
//   - The rest goes through the group policy's character rules
//     (transliteration, lower case, space/other, a leading digit gets
//     "_", the length rule), with the user table's own settings.
//   - Own: a Linux name is the record's own when it is its userName up
//     to ASCII case, or up to a domain the admin listed, or a rename.
//     Names made any other way (an unlisted domain cut, a character
//     mapped, a hash) are derived. Of two records landing on one name,
//     validation keeps the live holder, else the own claimant (the SCIM
//     id sorting first among several, as before), else none: two
//     people called alice at two unlisted domains never get the account
//     by listing order. Reserved names, local accounts and min_id are
//     checked on the Linux name, after the mapping, so no mapping can
//     reach them.

// Users is how IdP userNames become Linux user names.
type Users struct {
	Policy
	// Domains are cut from email-shaped userNames; a userName at another
	// domain is refused. Empty: the local part of any domain is taken.
	Domains []string
}

// DefaultUsers is the policy of a config without [user_names].
func DefaultUsers() Users {
	p := Default()
	p.Table = "user_names"
	return Users{Policy: p}
}

// OrDefault is u, or DefaultUsers (keeping u's domains and renames) when
// u's character policy is the zero Policy.
func (u Users) OrDefault() Users {
	if u.NonASCII != "" || u.TooLong != "" {
		u.Table = "user_names"
		return u
	}
	d := DefaultUsers()
	d.Rename, d.Domains = u.Rename, u.Domains
	return d
}

// MaxUserLength is the longest login name: utmp's ut_user holds 32
// bytes, and useradd refuses longer.
const MaxUserLength = 32

// Map returns the Linux login name for the user with SCIM id and exact
// userName, and whether it is the record's own name (see above).
func (u Users) Map(id, userName string) (name string, own bool, err error) {
	p := u.OrDefault()
	if to, ok := p.renamed(id, userName); ok {
		if why := CheckUser(to, p.maxLength()); why != "" {
			return "", false, p.fail(userName, fmt.Sprintf("its rename %q %s", to, why), "user_names.rename")
		}
		return to, true, nil
	}
	if userName == "" {
		return "", false, p.fail(userName, "empty", "attributes.user_name")
	}
	if isASCII(userName) {
		if lower := strings.ToLower(userName); CheckUser(lower, p.maxLength()) == "" {
			return lower, true, nil
		}
	}
	local := userName
	own = true
	if at := strings.LastIndexByte(userName, '@'); at >= 0 {
		dom := userName[at+1:]
		local = userName[:at]
		switch {
		case len(p.Domains) == 0:
			own = false
		case !containsFold(p.Domains, dom):
			return "", false, p.fail(userName, fmt.Sprintf("domain %q is not in user_names.domains", dom), "user_names.domains (add the domain) or user_names.rename")
		}
		if local == "" {
			return "", false, p.fail(userName, "nothing before the @", "user_names.rename")
		}
	}
	if isASCII(local) {
		if lower := strings.ToLower(local); CheckUser(lower, p.maxLength()) == "" {
			return lower, own, nil
		}
	}
	name, err = p.mapChars(local, userName)
	if err != nil {
		return "", false, err
	}
	return name, false, nil
}

func containsFold(list []string, s string) bool {
	for _, d := range list {
		if strings.EqualFold(d, s) {
			return true
		}
	}
	return false
}

// CheckUser is Check for login names: a trailing "$" (Samba machine
// accounts) is allowed too.
func CheckUser(n string, max int) string { return scan(n, max, true) }
