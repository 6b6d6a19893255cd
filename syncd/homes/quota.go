package homes

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
)

// Target is one directory a quota applies to: a user's home or a team's
// project directory.
type Target struct {
	Kind string `json:"kind"` // "user" or "team"
	Name string `json:"name"`
	ID   uint32 `json:"id"`   // uid or gid
	Path string `json:"path"` // the directory
	Root string `json:"root"` // the root it is in
}

// Key names the target in the state file and in Usage's answer.
func (t Target) Key() string { return t.Kind + ":" + t.Name }

// Limit is a soft and a hard limit in bytes; 0 is none.
type Limit struct {
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
}

func (l Limit) String() string {
	return "soft " + sizeOrNone(l.Soft) + ", hard " + sizeOrNone(l.Hard)
}

func sizeOrNone(b uint64) string {
	if b == 0 {
		return "none"
	}
	return FormatSize(b)
}

// Usage is what the storage says about a target now.
type Usage struct {
	Used     uint64 `json:"used"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
	OverSoft bool   `json:"over_soft"`
	OverHard bool   `json:"over_hard"`
	// Grace is the time left to get under the soft limit, as the storage
	// says it ("" when it keeps none: GlusterFS has no grace period).
	Grace string `json:"grace,omitempty"`
}

// Driver is the seam to the storage's own quota tools.
type Driver interface {
	Name() string
	// Set applies l to t (idempotent on the storage's side too).
	Set(ctx context.Context, t Target, l Limit) error
	// Usage reads use and limits of targets; a driver that cannot read
	// them returns nil, nil (the state file then decides idempotence).
	Usage(ctx context.Context, ts []Target) (map[string]Usage, error)
}

// NewDriver makes the configured driver (nil when no quota is set).
func NewDriver(q QuotaConfig, run Runner) (Driver, error) {
	if run == nil {
		run = ExecRunner
	}
	switch q.Driver {
	case "":
		return nil, nil
	case "command":
		return newCommandDriver(q.Command, run)
	case "gluster":
		if q.Gluster.Gluster == "" {
			q.Gluster.Gluster = "gluster"
		}
		return &glusterDriver{cfg: q.Gluster, run: run}, nil
	}
	return nil, fmt.Errorf("homes: quota.driver %q: want gluster, command or none", q.Driver)
}

// userLimit is the limit for a user in groups: the defaults, raised by
// the largest override of any group the user is in (soft and hard
// separately), so that a member of a big team never gets less than its
// setting because of a smaller one.
func (q QuotaConfig) userLimit(groups []string) Limit {
	l := Limit{Soft: mustSize(q.UserSoft), Hard: mustSize(q.UserHard)}
	var soft, hard uint64
	found := false
	for _, g := range groups {
		o, ok := q.Groups[g]
		if !ok || (o.UserSoft == "" && o.UserHard == "") {
			continue
		}
		found = true
		soft = max(soft, mustSize(o.UserSoft))
		hard = max(hard, mustSize(o.UserHard))
	}
	if found {
		if soft > 0 {
			l.Soft = soft
		}
		if hard > 0 {
			l.Hard = hard
		}
	}
	return l
}

// attributeLimit is the limit of a user whose identity provider sent a
// hard limit of hard bytes (validated on the head: 1M to 1P), over conf,
// the limit the configuration gives them: the hard limit is the
// attribute's, capped by user_max (unset: by conf's hard limit, so the
// attribute can lower a limit but not raise it); the soft limit keeps
// conf's soft/hard ratio (none when conf has no soft limit). capped is
// the value asked for when it was capped (0: not).
func (q QuotaConfig) attributeLimit(conf Limit, hard uint64) (l Limit, capped uint64) {
	return attributeLimit(conf, hard, mustSize(q.UserMax))
}

// teamAttributeLimit is attributeLimit for a team's project directory,
// capped by team_max (unset: the team's configured hard limit).
func (q QuotaConfig) teamAttributeLimit(conf Limit, hard uint64) (l Limit, capped uint64) {
	return attributeLimit(conf, hard, mustSize(q.TeamMax))
}

func attributeLimit(conf Limit, hard, ceiling uint64) (l Limit, capped uint64) {
	if ceiling == 0 {
		ceiling = conf.Hard
	}
	if ceiling > 0 && hard > ceiling {
		capped, hard = hard, ceiling
	}
	l.Hard = hard
	if conf.Soft > 0 && conf.Hard > 0 {
		l.Soft = uint64(float64(hard) * (float64(conf.Soft) / float64(conf.Hard)))
	} else if conf.Soft > 0 {
		l.Soft = min(conf.Soft, hard)
	}
	return l, capped
}

// teamLimit is a team's project limit: its group's override, else the
// defaults.
func (q QuotaConfig) teamLimit(group string) Limit {
	l := Limit{Soft: mustSize(q.TeamSoft), Hard: mustSize(q.TeamHard)}
	if o, ok := q.Groups[group]; ok {
		if o.TeamSoft != "" {
			l.Soft = mustSize(o.TeamSoft)
		}
		if o.TeamHard != "" {
			l.Hard = mustSize(o.TeamHard)
		}
	}
	return l
}

func mustSize(s string) uint64 {
	v, _ := ParseSize(s) // checked by Check
	return v
}

// rootOf returns the entry of m (keyed by mount point) holding p, the
// longest match.
func rootOf[V any](m map[string]V, p string) (string, V, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		if within(p, k) {
			return k, m[k], true
		}
	}
	var zero V
	return "", zero, false
}

// inVolume is p as a path inside a volume mounted at mount ("/alice").
func inVolume(mount, p string) string {
	return path.Clean("/" + strings.TrimPrefix(p, mount))
}
