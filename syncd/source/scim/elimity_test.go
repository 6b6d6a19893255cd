package scim

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	escim "github.com/elimity-com/scim"
	"github.com/elimity-com/scim/optional"
	eschema "github.com/elimity-com/scim/schema"
)

// The client against an independent SCIM server implementation: a small
// in-memory service on github.com/elimity-com/scim, whose paging caps,
// ListResponse fields, discovery documents and filter evaluation are its
// own, not tests/scimserver's.

const posixGroupURN = "urn:ietf:params:scim:schemas:extension:posix:2.0:Group"

// elimityStore is a read-only ResourceHandler over a fixed list.
type elimityStore struct{ items []escim.Resource }

var errReadOnly = errors.New("read-only")

func (s *elimityStore) Create(*http.Request, escim.ResourceAttributes) (escim.Resource, error) {
	return escim.Resource{}, errReadOnly
}
func (s *elimityStore) Replace(*http.Request, string, escim.ResourceAttributes) (escim.Resource, error) {
	return escim.Resource{}, errReadOnly
}
func (s *elimityStore) Delete(*http.Request, string) error { return errReadOnly }
func (s *elimityStore) Patch(*http.Request, string, []escim.PatchOperation) (escim.Resource, error) {
	return escim.Resource{}, errReadOnly
}

func (s *elimityStore) Get(_ *http.Request, id string) (escim.Resource, error) {
	for _, it := range s.items {
		if it.ID == id {
			return it, nil
		}
	}
	return escim.Resource{}, errors.New("no such resource")
}

func (s *elimityStore) GetAll(_ *http.Request, p escim.ListRequestParams) (escim.Page, error) {
	var match []escim.Resource
	for _, it := range s.items {
		if p.FilterValidator != nil {
			m := map[string]any{"id": it.ID}
			for k, v := range it.Attributes {
				m[k] = v
			}
			if p.FilterValidator.PassesFilter(m) != nil {
				continue
			}
		}
		match = append(match, it)
	}
	page := escim.Page{TotalResults: len(match), Resources: []escim.Resource{}}
	for i := max(p.StartIndex, 1) - 1; i < len(match) && i < p.StartIndex-1+p.Count; i++ {
		page.Resources = append(page.Resources, match[i])
	}
	return page, nil
}

// elimityServer serves users and groups (group g holds every user whose
// number is g mod groups) under /scim/v2, 50 to a page.
func elimityServer(t *testing.T, users, groups int) string {
	t.Helper()
	num := func(n string) eschema.CoreAttribute {
		return eschema.SimpleCoreAttribute(eschema.SimpleNumberParams(eschema.NumberParams{Name: n, Type: eschema.AttributeTypeInteger()}))
	}
	str := func(n string, multi bool) eschema.CoreAttribute {
		return eschema.SimpleCoreAttribute(eschema.SimpleStringParams(eschema.StringParams{Name: n, MultiValued: multi}))
	}
	userExt := eschema.Schema{ID: posixURN, Name: optional.NewString("PosixUser"), Attributes: []eschema.CoreAttribute{
		num("uidNumber"), num("gidNumber"), str("homeDirectory", false), str("loginShell", false), str("gecos", false), str("sshPublicKeys", true)}}
	groupExt := eschema.Schema{ID: posixGroupURN, Name: optional.NewString("PosixGroup"), Attributes: []eschema.CoreAttribute{num("gidNumber")}}
	us, gs := &elimityStore{}, &elimityStore{}
	mod := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < users; i++ {
		us.items = append(us.items, escim.Resource{ID: "u" + strconv.Itoa(i), Meta: escim.Meta{LastModified: &mod}, Attributes: escim.ResourceAttributes{
			"userName": "User" + strconv.Itoa(i), "active": i%7 != 0,
			posixURN: map[string]any{"uidNumber": 20000 + i, "gidNumber": 30000, "loginShell": "/bin/bash"}}})
	}
	for g := 0; g < groups; g++ {
		var members []any
		for i := g; i < users; i += groups {
			members = append(members, map[string]any{"value": "u" + strconv.Itoa(i), "display": "User" + strconv.Itoa(i), "type": "User"})
		}
		gs.items = append(gs.items, escim.Resource{ID: "g" + strconv.Itoa(g), Meta: escim.Meta{LastModified: &mod}, Attributes: escim.ResourceAttributes{
			"displayName": "grp" + strconv.Itoa(g), "members": members, posixGroupURN: map[string]any{"gidNumber": 30000 + g}}})
	}
	srv, err := escim.NewServer(&escim.ServerArgs{
		ServiceProviderConfig: &escim.ServiceProviderConfig{SupportFiltering: true, MaxResults: 50},
		ResourceTypes: []escim.ResourceType{
			{ID: optional.NewString("User"), Name: "User", Endpoint: "/Users", Schema: eschema.CoreUserSchema(),
				SchemaExtensions: []escim.SchemaExtension{{Schema: userExt}}, Handler: us},
			{ID: optional.NewString("Group"), Name: "Group", Endpoint: "/Groups", Schema: eschema.CoreGroupSchema(),
				SchemaExtensions: []escim.SchemaExtension{{Schema: groupExt}}, Handler: gs},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/scim/", http.StripPrefix("/scim", srv))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL + "/scim/v2"
}

func TestElimityServer(t *testing.T) {
	const users, groups = 260, 6
	base := elimityServer(t, users, groups)
	for _, mode := range []string{"auto", "listing", "per-group", "user-groups-absent"} {
		t.Run(mode, func(t *testing.T) {
			c := shapeClient(t, base, quietLog())
			c.opts.GroupMembers = strings.TrimSuffix(mode, "-absent")
			if mode == "user-groups-absent" {
				// The users carry no groups attribute: every group
				// is empty, and the fetch says nothing false.
				c.opts.GroupMembers = "user-groups"
			}
			d, err := c.Discover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if d.Paging != "index" || d.MaxPageSize != 50 || len(d.Warnings) != 0 {
				t.Errorf("discovery %+v", d)
			}
			dir, err := c.Fetch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(dir.Users) != users || len(dir.Groups) != groups {
				t.Fatalf("%d users, %d groups; want %d, %d", len(dir.Users), len(dir.Groups), users, groups)
			}
			for i, u := range dir.Users {
				if u.ID != "u"+strconv.Itoa(i) || u.UserName != "User"+strconv.Itoa(i) || u.UID == nil || *u.UID != int64(20000+i) ||
					u.Active == nil || *u.Active != (i%7 != 0) || u.Shell != "/bin/bash" || u.Malformed != nil {
					t.Fatalf("user %d = %+v (uid %v)", i, u, ptr(u.UID))
				}
			}
			for g, grp := range dir.Groups {
				var want []string
				if mode != "user-groups-absent" {
					for i := g; i < users; i += groups {
						want = append(want, "u"+strconv.Itoa(i))
					}
				}
				if grp.GID == nil || *grp.GID != int64(30000+g) || !slices.Equal(grp.MemberIDs, want) {
					t.Fatalf("group %d = %+v, want members %v", g, grp, want)
				}
			}
		})
	}
	// This handler filters without meta: meta.lastModified filters match
	// nothing, and the cheap change check must say it has none rather
	// than "no change".
	c := shapeClient(t, base, quietLog())
	if _, err := c.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Changed(context.Background()); !errors.Is(err, ErrNoChangeCheck) {
		t.Errorf("Changed = %v, %v; want ErrNoChangeCheck", ch, err)
	}
	// elimity-com/scim answers members.value eq "id" with no match:
	// per-user must not empty every group.
	c = shapeClient(t, base, quietLog())
	c.opts.GroupMembers = "per-user"
	if _, err := c.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "does not evaluate that filter") {
		t.Errorf("per-user: err = %v", err)
	}
}
