package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
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

// sharedUsageFile is the copy of the storage use the homes pass leaves
// at the top of each root it manages (syncd/homes.SharedUsageFile), for
// the nodes that mount that storage but do not run the pass.
const sharedUsageFile = ".scimbridge-usage.json"

// maxUsageBytes bounds what is read of a usage file (about 300 bytes a
// target: 200,000 homes and projects).
const maxUsageBytes = 64 << 20

// staleAfter: figures older than this are flagged (the pass records them
// every homes.interval, 1 h by default, and after each new snapshot).
const staleAfter = 3 * time.Hour

// readStorageUse finds the storage use the homes pass recorded: its
// status file beside the snapshot (on the host that runs the pass), else
// the copy it leaves at the top of the root holding home (looked for in
// home's parent directories, nearest first: a node that mounts the
// storage). from names the file read; "" when there is none.
func readStorageUse(cachePath, home string) (from string, b []byte, err error) {
	local := homesStatusFile(cachePath)
	b, err = os.ReadFile(local)
	if err == nil || !os.IsNotExist(err) {
		return local, b, err
	}
	if !filepath.IsAbs(home) || filepath.Clean(home) != home {
		return "", nil, nil
	}
	for d := filepath.Dir(home); d != "/" && d != "."; d = filepath.Dir(d) {
		p := filepath.Join(d, sharedUsageFile)
		b, err := readTrusted(d, p)
		if os.IsNotExist(err) {
			continue
		}
		return p, b, err
	}
	return "", nil, nil
}

// readTrusted reads p in dir only if both are root's and not writable by
// group or others, p a regular file reached without following a link: a
// user cannot plant figures of their own (a home under a world-writable
// directory would otherwise let them).
func readTrusted(dir, p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symlink: not trusted", p)
		}
		return nil, err
	}
	defer f.Close()
	var fst, dst syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &fst); err != nil {
		return nil, err
	}
	if err := syscall.Stat(dir, &dst); err != nil {
		return nil, err
	}
	switch {
	case fst.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return nil, fmt.Errorf("%s is not a regular file: not trusted", p)
	case fst.Uid != 0 || fst.Mode&0o022 != 0:
		return nil, fmt.Errorf("%s is owned by uid %d with mode %04o, not root's and writable only by root: not trusted", p, fst.Uid, fst.Mode&0o7777)
	case dst.Uid != 0 || dst.Mode&0o022 != 0:
		return nil, fmt.Errorf("%s is in %s, which is not root's or is writable by others: not trusted", p, dir)
	case fst.Size > maxUsageBytes:
		return nil, fmt.Errorf("%s is %d bytes, more than %d: not read", p, fst.Size, maxUsageBytes)
	}
	return io.ReadAll(io.LimitReader(f, maxUsageBytes))
}

// storage adds the user's home and their teams' project directories.
func (g *gatherer) storage(rep *Report, cachePath, home string, gids []uint32) {
	from, b, err := readStorageUse(cachePath, home)
	if err != nil {
		g.notef(rep, "cannot read the storage use recorded by syncd: %v", err)
		return
	}
	if from == "" {
		return
	}
	var st homesStatus
	if err := json.Unmarshal(b, &st); err != nil {
		g.notef(rep, "storage use recorded by syncd is unreadable: %s: %v", from, err)
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
	if len(rep.Storage) > 0 && from != homesStatusFile(cachePath) {
		age := time.Since(st.At).Round(time.Minute)
		note := fmt.Sprintf("storage use as the storage host's homes pass recorded it %s ago (%s, %s)", age, st.At.UTC().Format(time.RFC3339), from)
		if age > staleAfter {
			note += ": it has not recorded since, so these figures may be stale (the storage host or its syncd may be down)"
		}
		g.notef(rep, "%s", note)
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
