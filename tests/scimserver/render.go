package scimserver

import (
	"strconv"
	"time"
)

// timeFormat has millisecond precision: second-granular lastModified makes
// "meta.lastModified gt" polling miss updates made in the same second.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func etagOf(version int) string { return `W/"` + strconv.Itoa(version) + `"` }

// renderUser builds the full SCIM representation of u (every attribute,
// including returned:request ones; never ones are left out here). The map
// is shared between requests and must not be modified.
func (s *Server) renderUser(u *User, base string) map[string]any {
	m := map[string]any{
		"id":       u.ID,
		"userName": u.UserName,
		"active":   u.Active == nil || *u.Active,
		"meta":     meta(resourceTypeUser, base+"/Users/"+u.ID, u.Created, u.LastModified, u.Version),
	}
	schemas := []any{URNUser}
	if u.ExternalID != "" {
		m["externalId"] = u.ExternalID
	}
	if u.Name != nil {
		n := map[string]any{}
		setStr(n, "formatted", u.Name.Formatted)
		setStr(n, "familyName", u.Name.FamilyName)
		setStr(n, "givenName", u.Name.GivenName)
		setStr(n, "middleName", u.Name.MiddleName)
		m["name"] = n
	}
	setStr(m, "displayName", u.DisplayName)
	if len(u.Emails) > 0 {
		var es []any
		for _, e := range u.Emails {
			em := map[string]any{"value": e.Value}
			setStr(em, "type", e.Type)
			if e.Primary {
				em["primary"] = true
			}
			es = append(es, em)
		}
		m["emails"] = es
	}
	f := s.flavor
	if p := u.POSIX; p != nil {
		x := map[string]any{}
		if p.UIDNumber != nil {
			x[f.UID] = *p.UIDNumber
		}
		if p.GIDNumber != nil {
			x[f.GID] = *p.GIDNumber
		}
		setStr(x, f.Home, p.HomeDirectory)
		setStr(x, f.Shell, p.LoginShell)
		setStr(x, f.GECOS, p.GECOS)
		if len(p.SSHPublicKeys) > 0 {
			keys := make([]any, len(p.SSHPublicKeys))
			for i, k := range p.SSHPublicKeys {
				keys[i] = k
			}
			x[f.SSHKeys] = keys
		}
		m[f.UserURN] = x
		schemas = append(schemas, f.UserURN)
	}
	if s.opts.UserGroups {
		m["groups"] = s.userGroupsLocked(u.ID, base)
	}
	m["schemas"] = schemas
	mergeExtra(m, u.Extra, f.UserURN)
	return m
}

// renderGroup builds the full SCIM representation of g. Member display
// names come from the users' current userNames.
func (s *Server) renderGroup(g *Group, base string) map[string]any {
	m := map[string]any{
		"id":          g.ID,
		"displayName": g.DisplayName,
		"meta":        meta(resourceTypeGroup, base+"/Groups/"+g.ID, g.Created, g.LastModified, g.Version),
	}
	schemas := []any{URNGroup}
	if g.ExternalID != "" {
		m["externalId"] = g.ExternalID
	}
	members := make([]any, 0, len(g.Members))
	for _, id := range g.Members {
		mem := map[string]any{"value": id}
		if u := s.users[id]; u != nil {
			mem["display"] = u.u.UserName
			mem["$ref"] = base + "/Users/" + id
			mem["type"] = "User"
		} else if sg := s.groups[id]; sg != nil {
			mem["display"] = sg.g.DisplayName
			mem["$ref"] = base + "/Groups/" + id
			mem["type"] = "Group"
		}
		members = append(members, mem)
	}
	m["members"] = members
	if g.GIDNumber != nil {
		m[s.flavor.GroupURN] = map[string]any{s.flavor.GroupGID: *g.GIDNumber}
		schemas = append(schemas, s.flavor.GroupURN)
	}
	m["schemas"] = schemas
	mergeExtra(m, g.Extra, s.flavor.GroupURN)
	return m
}

func meta(rt, location string, created, modified time.Time, version int) map[string]any {
	return map[string]any{
		"resourceType": rt,
		"created":      formatTime(created),
		"lastModified": formatTime(modified),
		"version":      etagOf(version),
		"location":     location,
	}
}

func setStr(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// mergeExtra applies User.Extra / Group.Extra: nil deletes, a map under the
// extension URN merges into the extension, anything else replaces.
func mergeExtra(m, extra map[string]any, extURN string) {
	for k, v := range extra {
		if v == nil {
			delete(m, k)
			continue
		}
		if add, ok := v.(map[string]any); ok && k == extURN {
			x, _ := m[k].(map[string]any)
			if x == nil {
				x = map[string]any{}
			}
			for ek, ev := range add {
				if ev == nil {
					delete(x, ek)
				} else {
					x[ek] = ev
				}
			}
			m[k] = x
			continue
		}
		m[k] = v
	}
}
