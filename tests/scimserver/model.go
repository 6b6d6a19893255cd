package scimserver

import "time"

// User is a SCIM user as the server stores it. The JSON form is the fixture
// and admin-API format, not the SCIM wire format (see render.go).
type User struct {
	ID          string  `json:"id,omitempty"`
	ExternalID  string  `json:"externalId,omitempty"`
	UserName    string  `json:"userName"`
	Name        *Name   `json:"name,omitempty"`
	DisplayName string  `json:"displayName,omitempty"`
	Emails      []Email `json:"emails,omitempty"`
	// Active nil means active: most tests want live users. To send a user
	// without the attribute, set Extra["active"] = nil.
	Active *bool `json:"active,omitempty"`
	// Password is stored but never returned (returned: never).
	Password string `json:"password,omitempty"`
	// POSIX nil means the user has no extension at all.
	POSIX *POSIX `json:"posix,omitempty"`
	// Extra is merged into the rendered resource last, to send what a
	// well-behaved server never would: a nil value removes the attribute,
	// a map under the extension URN is merged into the extension (so
	// {"urn:...:User": {"uidNumber": "1000"}} sends a string UID).
	Extra map[string]any `json:"extra,omitempty"`

	// Set by the server.
	Created      time.Time `json:"created,omitzero"`
	LastModified time.Time `json:"lastModified,omitzero"`
	Version      int       `json:"version,omitempty"`
}

// Name is the SCIM "name" complex attribute.
type Name struct {
	Formatted  string `json:"formatted,omitempty"`
	FamilyName string `json:"familyName,omitempty"`
	GivenName  string `json:"givenName,omitempty"`
	MiddleName string `json:"middleName,omitempty"`
}

// Email is one value of the multi-valued "emails" attribute.
type Email struct {
	Value   string `json:"value"`
	Type    string `json:"type,omitempty"`
	Primary bool   `json:"primary,omitempty"`
}

// POSIX is the user extension's content, whatever the flavour calls its
// attributes. Pointer fields are omitted from responses when nil.
type POSIX struct {
	UIDNumber     *int64   `json:"uidNumber,omitempty"`
	GIDNumber     *int64   `json:"gidNumber,omitempty"`
	HomeDirectory string   `json:"homeDirectory,omitempty"`
	LoginShell    string   `json:"loginShell,omitempty"`
	GECOS         string   `json:"gecos,omitempty"`
	SSHPublicKeys []string `json:"sshPublicKeys,omitempty"`
}

// Group is a SCIM group as the server stores it.
type Group struct {
	ID          string `json:"id,omitempty"`
	ExternalID  string `json:"externalId,omitempty"`
	DisplayName string `json:"displayName"`
	// GIDNumber nil means the group has no extension.
	GIDNumber *int64 `json:"gidNumber,omitempty"`
	// Members are user ids (or group ids, for nested groups). Fixtures
	// may name users by userName; loading resolves them to ids.
	Members []string       `json:"members,omitempty"`
	Extra   map[string]any `json:"extra,omitempty"`

	Created      time.Time `json:"created,omitzero"`
	LastModified time.Time `json:"lastModified,omitzero"`
	Version      int       `json:"version,omitempty"`
}

// Directory is a whole set of users and groups: a fixture, a generated
// directory, or what the server holds.
type Directory struct {
	Users  []User  `json:"users"`
	Groups []Group `json:"groups"`
}

// Int returns a pointer to n, for POSIX and Group fields.
func Int(n int64) *int64 { return &n }

// Bool returns a pointer to b, for User.Active.
func Bool(b bool) *bool { return &b }

func (u User) clone() User {
	c := u
	if u.Name != nil {
		n := *u.Name
		c.Name = &n
	}
	c.Emails = append([]Email(nil), u.Emails...)
	if u.Active != nil {
		c.Active = Bool(*u.Active)
	}
	if u.POSIX != nil {
		p := *u.POSIX
		if p.UIDNumber != nil {
			p.UIDNumber = Int(*p.UIDNumber)
		}
		if p.GIDNumber != nil {
			p.GIDNumber = Int(*p.GIDNumber)
		}
		p.SSHPublicKeys = append([]string(nil), p.SSHPublicKeys...)
		c.POSIX = &p
	}
	c.Extra = cloneMap(u.Extra)
	return c
}

func (g Group) clone() Group {
	c := g
	if g.GIDNumber != nil {
		c.GIDNumber = Int(*g.GIDNumber)
	}
	c.Members = append([]string(nil), g.Members...)
	c.Extra = cloneMap(g.Extra)
	return c
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
