package explain

// The text form of a Report lives with the Report (issue 18, item 6:
// package main only parses flags, gathers the gates' options and picks
// --json or this); the storage lines (syncd/homes) follow it there.

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Print prints the report as `syncd explain` does (without --json).
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%s %s (snapshot %s, serial %s)\n", r.Kind, r.Name, r.Snapshot.Path, r.Snapshot.Serial)
	if r.Snapshot.Error != "" {
		fmt.Fprintf(w, "  snapshot: %s\n", r.Snapshot.Error)
	}
	if r.RecordNote != "" {
		fmt.Fprintf(w, "  record: %s\n", r.RecordNote)
	}
	for _, u := range r.Users {
		s := u.Source
		linux := "no Linux name"
		if u.Name != "" {
			linux = fmt.Sprintf("Linux name %q", u.Name)
		}
		fmt.Fprintf(w, "source user id %q userName %q -> %s: %s\n", s.ID, s.UserName, linux, u.Verdict)
		fmt.Fprintf(w, "  as fetched: uid %s gid %s home %q shell %q gecos %q active %s keys %d\n",
			ptrInt(s.UID), ptrInt(s.GID), s.Home, s.Shell, s.GECOS, ptrBool(s.Active), len(s.SSHKeys))
		for k, v := range s.Malformed {
			fmt.Fprintf(w, "  malformed %s: %s\n", k, v)
		}
		for _, rj := range u.Reasons {
			fmt.Fprintf(w, "  %s: %s", rj.Kind, rj.Reason)
			if rj.Detail != "" {
				fmt.Fprintf(w, ": %s", rj.Detail)
			}
			if rj.Option != "" {
				fmt.Fprintf(w, " (%s)", rj.Option)
			}
			fmt.Fprintln(w)
		}
	}
	for _, g := range r.Groups {
		linux := "no Linux name"
		if g.Name != "" {
			linux = fmt.Sprintf("Linux name %q", g.Name)
		}
		fmt.Fprintf(w, "source group id %q, IdP name %q -> %s: %s, %d member(s) sent, %d not published\n",
			g.Source.ID, g.Source.DisplayName, linux, g.Verdict, len(g.Source.MemberIDs), len(g.Dropped))
		for _, rj := range g.Reasons {
			fmt.Fprintf(w, "  %s: %s: %s", rj.Kind, rj.Reason, rj.Detail)
			if rj.Option != "" {
				fmt.Fprintf(w, " (%s)", rj.Option)
			}
			fmt.Fprintln(w)
		}
	}
	if r.Passwd != nil {
		state := "active"
		if !r.Passwd.Active {
			state = "disabled at the source"
		}
		fmt.Fprintf(w, "passwd: %s:x:%d:%d:%s:%s:%s (%s)\n", r.Passwd.Name, r.Passwd.UID, r.Passwd.GID, r.Passwd.GECOS, r.Passwd.Home, r.Passwd.Shell, state)
		fmt.Fprintf(w, "groups: %s\n", strings.Join(r.MemberOf, ", "))
		switch {
		case len(r.Associations) > 0:
		case r.Snapshot.SlurmAssociations == 0 && r.Snapshot.SlurmSyncedAt == "":
			fmt.Fprintf(w, "slurm: no association (the snapshot holds none for anyone: the head's syncd records none)\n")
		case r.Snapshot.SlurmSyncedAt != "":
			fmt.Fprintf(w, "slurm: no association (the snapshot's %d were read back from slurmdbd at %s)\n", r.Snapshot.SlurmAssociations, r.Snapshot.SlurmSyncedAt)
		default:
			fmt.Fprintf(w, "slurm: no association (the snapshot holds %d for others)\n", r.Snapshot.SlurmAssociations)
		}
		for _, a := range r.Associations {
			st := ""
			if a.Blocked {
				st = " BLOCKED (being removed)"
			}
			fmt.Fprintf(w, "slurm: account %s qos %s%s\n", a.Account, strings.Join(a.QOS, ","), st)
		}
		if r.Namespaces != nil && len(r.Namespaces) == 0 {
			fmt.Fprintf(w, "kubernetes: no namespace\n")
		}
		for _, ns := range r.Namespaces {
			fmt.Fprintf(w, "kubernetes: %s\n", ns)
		}
	}
	if r.Group != nil {
		fmt.Fprintf(w, "group: %s:x:%d:%s\n", r.Group.Name, r.Group.GID, strings.Join(r.Group.Members, ","))
	}
	names := make([]string, 0, len(r.Gates))
	for n := range r.Gates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := r.Gates[n]
		fmt.Fprintf(w, "%-10s %-9s %s", n+":", g.Verdict, g.Reason)
		if g.Options != "" {
			fmt.Fprintf(w, " [%s]", g.Options)
		}
		fmt.Fprintln(w)
	}
}

func ptrInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func ptrBool(p *bool) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
