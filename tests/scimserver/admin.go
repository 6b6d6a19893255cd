package scimserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// The admin API lets shell tests change the directory while a client
// polls it. It answers loopback clients only and needs no credentials.
// Bodies and answers are JSON (User, Group and Faults in their JSON form);
// {user} and {group} are ids or names.
//
//	GET    /_admin/directory               everything (Directory)
//	POST   /_admin/users                   upsert a User; answers the stored User
//	GET    /_admin/users/{user}
//	DELETE /_admin/users/{user}
//	POST   /_admin/users/{user}/active     {"active": false}
//	POST   /_admin/users/{user}/keys       {"keys": ["ssh-ed25519 ..."]}
//	POST   /_admin/groups                  upsert a Group (members: ids or userNames)
//	GET    /_admin/groups/{group}
//	DELETE /_admin/groups/{group}
//	POST   /_admin/groups/{group}/members  {"add": [...], "remove": [...]} or {"set": [...]}
//	GET    /_admin/faults
//	PUT    /_admin/faults                  Faults (replaces; {} clears)
//	DELETE /_admin/faults
//	POST   /_admin/expire-cursors
//	GET    /_admin/counters                Counters
//	GET    /_admin/requests                []LoggedRequest
//	DELETE /_admin/counters
//	POST   /_admin/reset                   back to the loaded fixture, no faults, zero counters
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err == nil && (ip == nil || !ip.IsLoopback()) {
		adminError(w, http.StatusForbidden, fmt.Errorf("admin API answers loopback clients only, not %s", r.RemoteAddr))
		return
	}
	seg := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/_admin/"), "/"), "/")
	route := r.Method + " " + seg[0]
	if len(seg) > 1 {
		route += "/*"
	}
	if len(seg) > 2 {
		route += "/" + seg[2]
	}
	arg := ""
	if len(seg) > 1 {
		arg = seg[1]
	}
	switch route {
	case "GET directory":
		adminJSON(w, s.Snapshot())
	case "POST users":
		var u User
		if decode(w, r, &u) {
			v, err := s.UpsertUser(u)
			adminResult(w, v, err)
		}
	case "GET users/*":
		u, ok := s.User(arg)
		adminFound(w, u, ok, "user", arg)
	case "DELETE users/*":
		adminResult(w, nil, s.deleteUserByName(arg))
	case "POST users/*/active":
		var b struct{ Active *bool }
		if decode(w, r, &b) {
			if b.Active == nil {
				adminError(w, http.StatusBadRequest, fmt.Errorf(`body needs {"active": true|false}`))
				return
			}
			v, err := s.UpdateUser(arg, func(u *User) { u.Active = Bool(*b.Active) })
			adminResult(w, v, err)
		}
	case "POST users/*/keys":
		var b struct{ Keys []string }
		if decode(w, r, &b) {
			if err := s.SetSSHKeys(arg, b.Keys); err != nil {
				adminError(w, http.StatusNotFound, err)
				return
			}
			u, _ := s.User(arg)
			adminJSON(w, u)
		}
	case "POST groups":
		var g Group
		if decode(w, r, &g) {
			s.mu.RLock()
			g.Members = s.resolveMembersLocked(g.Members)
			s.mu.RUnlock()
			v, err := s.UpsertGroup(g)
			adminResult(w, v, err)
		}
	case "GET groups/*":
		g, ok := s.Group(arg)
		adminFound(w, g, ok, "group", arg)
	case "DELETE groups/*":
		adminResult(w, nil, s.deleteGroupByName(arg))
	case "POST groups/*/members":
		var b struct{ Add, Remove, Set []string }
		if !decode(w, r, &b) {
			return
		}
		var err error
		if b.Set != nil {
			err = s.SetMembers(arg, b.Set)
		}
		if err == nil && len(b.Add) > 0 {
			err = s.AddMembers(arg, b.Add...)
		}
		if err == nil && len(b.Remove) > 0 {
			err = s.RemoveMembers(arg, b.Remove...)
		}
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		g, _ := s.Group(arg)
		adminJSON(w, g)
	case "GET faults":
		adminJSON(w, s.Faults())
	case "PUT faults", "POST faults":
		var f Faults
		if decode(w, r, &f) {
			s.SetFaults(f)
			adminJSON(w, f)
		}
	case "DELETE faults":
		s.SetFaults(Faults{})
		adminJSON(w, Faults{})
	case "POST expire-cursors":
		s.ExpireCursors()
		adminJSON(w, map[string]bool{"expired": true})
	case "GET counters":
		adminJSON(w, s.Requests())
	case "DELETE counters":
		s.ResetCounters()
		adminJSON(w, s.Requests())
	case "GET requests":
		adminJSON(w, s.RequestLog())
	case "POST reset":
		s.Reset()
		adminJSON(w, map[string]bool{"reset": true})
	default:
		adminError(w, http.StatusNotFound, fmt.Errorf("no admin route %s %s", r.Method, r.URL.Path))
	}
}

func (s *Server) deleteUserByName(idOrName string) error {
	u, ok := s.User(idOrName)
	if !ok {
		return fmt.Errorf("delete user %q: no such user", idOrName)
	}
	return s.DeleteUser(u.ID)
}

func (s *Server) deleteGroupByName(idOrName string) error {
	g, ok := s.Group(idOrName)
	if !ok {
		return fmt.Errorf("delete group %q: no such group", idOrName)
	}
	return s.DeleteGroup(g.ID)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("%s %s: bad JSON body: %v", r.Method, r.URL.Path, err))
		return false
	}
	return true
}

func adminResult(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status := http.StatusBadRequest
		if strings.Contains(err.Error(), "no such") {
			status = http.StatusNotFound
		}
		adminError(w, status, err)
		return
	}
	if v == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	adminJSON(w, v)
}

func adminFound(w http.ResponseWriter, v any, ok bool, kind, name string) {
	if !ok {
		adminError(w, http.StatusNotFound, fmt.Errorf("no such %s %q", kind, name))
		return
	}
	adminJSON(w, v)
}

func adminJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Write(append(b, '\n'))
}

func adminError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	w.Write(append(b, '\n'))
}
