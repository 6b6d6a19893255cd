package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Storage is a home or project directory with its use against its
// limits, as the last homes pass read it from the storage's own quota
// tools (syncd/homes: homes-state.status.json beside the snapshot).
type Storage struct {
	Kind     string `json:"kind"` // "home" or "project"
	Name     string `json:"name"`
	Path     string `json:"path"`
	Used     uint64 `json:"used_bytes"`
	Soft     uint64 `json:"soft_bytes"`
	Hard     uint64 `json:"hard_bytes"`
	OverSoft bool   `json:"over_soft"`
	OverHard bool   `json:"over_hard"`
	Grace    string `json:"grace,omitempty"`
	Driver   string `json:"driver"`
	AsOf     string `json:"as_of"`
}

// homesStatus is the part of syncd/homes' StatusView mylimits reads.
type homesStatus struct {
	At      time.Time `json:"at"`
	Driver  string    `json:"driver"`
	Targets []struct {
		Kind  string `json:"kind"`
		Name  string `json:"name"`
		ID    uint32 `json:"id"`
		Path  string `json:"path"`
		Usage *struct {
			Used     uint64 `json:"used"`
			Soft     uint64 `json:"soft"`
			Hard     uint64 `json:"hard"`
			OverSoft bool   `json:"over_soft"`
			OverHard bool   `json:"over_hard"`
			Grace    string `json:"grace"`
		} `json:"usage"`
	} `json:"targets"`
}

// homesStatusFile is where the homes pass leaves its status, beside the
// snapshot (its default; a state_file moved elsewhere is not found).
func homesStatusFile(cachePath string) string {
	return filepath.Join(filepath.Dir(cachePath), "homes-state.status.json")
}

// storage adds the user's home and their teams' project directories.
func (g *gatherer) storage(rep *Report, cachePath string, gids []uint32) {
	b, err := os.ReadFile(homesStatusFile(cachePath))
	if err != nil {
		if !os.IsNotExist(err) {
			g.notef(rep, "cannot read the storage use recorded by syncd: %v", err)
		}
		return
	}
	var st homesStatus
	if err := json.Unmarshal(b, &st); err != nil {
		g.notef(rep, "storage use recorded by syncd is unreadable: %v", err)
		return
	}
	mine := map[uint32]bool{}
	for _, gid := range gids {
		mine[gid] = true
	}
	gluster := false
	for _, t := range st.Targets {
		if t.Usage == nil {
			continue
		}
		var s Storage
		switch {
		case t.Kind == "user" && t.Name == rep.User:
			s.Kind = "home"
		case t.Kind == "team" && mine[t.ID]:
			s.Kind = "project"
		default:
			continue
		}
		u := t.Usage
		s.Name, s.Path, s.Used, s.Soft, s.Hard = t.Name, t.Path, u.Used, u.Soft, u.Hard
		s.OverSoft, s.OverHard, s.Grace, s.Driver = u.OverSoft, u.OverHard, u.Grace, st.Driver
		s.AsOf = st.At.UTC().Format(time.RFC3339)
		rep.Storage = append(rep.Storage, s)
		gluster = gluster || st.Driver == "gluster"
		if s.OverHard {
			g.notef(rep, "your %s %s is over its hard limit (%s used of %s): new writes fail; delete files to get under it (reading and deleting still work)",
				s.Kind, s.Path, human(s.Used), human(s.Hard))
		} else if s.OverSoft {
			g.notef(rep, "your %s %s is over its soft limit (%s used of %s): get under it before the hard limit %s stops writes",
				s.Kind, s.Path, human(s.Used), human(s.Soft), human(s.Hard))
		}
	}
	if gluster && len(rep.Storage) > 0 {
		g.notef(rep, "storage use as of the last check (%s); GlusterFS keeps no grace period: the soft limit only warns, the hard limit stops writes", st.At.UTC().Format(time.RFC3339))
	}
}

// human prints bytes in powers of 1024 ("8.0M", "10G").
func human(b uint64) string {
	if b == 0 {
		return "-"
	}
	units := []string{"K", "M", "G", "T", "P"}
	v := float64(b)
	u := ""
	for _, s := range units {
		if v < 1024 {
			break
		}
		v /= 1024
		u = s
	}
	if u == "" {
		return strconv.FormatUint(b, 10)
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d%s", int64(v), u)
	}
	return fmt.Sprintf("%.1f%s", v, u)
}
