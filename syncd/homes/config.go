package homes

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults.
const (
	DefaultSkel          = "/etc/skel"
	DefaultMode          = "0700"
	DefaultProjectRoot   = "/project"
	DefaultProjectMode   = "2770"
	DefaultArchiveDir    = ".scimbridge-archive"
	DefaultRemovedGrace  = 30 * 24 * time.Hour
	DefaultInterval      = time.Hour
	DefaultStateFileName = "homes-state.json"
	DefaultTimeout       = 2 * time.Minute
)

// Config is the [homes] table of syncd.toml.
//
//	[homes]
//	enabled = true
//	role = "head"                 # or "storage": a node mirroring the head that owns the storage
//	roots = ["/home"]             # default: home_roots
//	mode = "0700"
//	skel = "/etc/skel"
//	removed = "keep"              # or "archive" (after removed_grace)
//	removed_grace = "720h"
//	[homes.projects]
//	root = "/project"
//	groups = ["hpc-ml"]           # and/or pattern = "^hpc-(.+)$"
//	[homes.quota]
//	driver = "gluster"            # or "command"; "" sets no quota
//	user_soft = "10G"
//	user_hard = "15G"
//	team_soft = "1T"
//	team_hard = "1.2T"
//	user_max = "100G"             # cap on the identity provider's home_quota attribute
//	team_max = "10T"              # and on its project_quota attribute
//	[homes.quota.groups.hpc-ml]   # per-group overrides
//	user_hard = "30G"
//	team_hard = "5T"
type Config struct {
	Enabled bool `toml:"enabled"`
	// Role names the host that owns the storage and runs the pass:
	// "head" (the syncd that reads the identity source) or "storage" (a
	// node that mirrors the head). The other role never touches homes.
	Role string `toml:"role"`
	// Roots are where homes may be made (default: home_roots). Every home
	// must be strictly inside one; nothing outside them is ever touched.
	Roots []string `toml:"roots"`
	Mode  string   `toml:"mode"`
	// Skel is copied into a home syncd creates ("" or "none": nothing).
	Skel string `toml:"skel"`
	// Removed is what happens to the home of a user removed at the
	// identity provider: "keep" (default: left in place) or "archive"
	// (moved into ArchiveDir of its root once RemovedGrace has passed).
	// Nothing is ever deleted.
	Removed      string `toml:"removed"`
	RemovedGrace string `toml:"removed_grace"`
	ArchiveDir   string `toml:"archive_dir"`
	// Interval is the pass's own schedule (samples for the usage report,
	// retries after a storage outage); a new snapshot also starts one.
	Interval string `toml:"interval"`
	// Timeout bounds one pass (every quota command has its own share).
	Timeout   string `toml:"timeout"`
	StateFile string `toml:"state_file"`

	Projects Projects    `toml:"projects"`
	Quota    QuotaConfig `toml:"quota"`

	// Resolved by WithDefaults/Check.
	mode, projectMode   uint32
	grace, interval, to time.Duration
	pattern             *regexp.Regexp
}

// Projects is [homes.projects]: a directory per team.
type Projects struct {
	Root    string   `toml:"root"`
	Groups  []string `toml:"groups"`
	Pattern string   `toml:"pattern"`
	Mode    string   `toml:"mode"`
}

// QuotaConfig is [homes.quota].
type QuotaConfig struct {
	Driver string `toml:"driver"`
	Limits
	// UserMax caps the per-user limit the identity provider sends
	// ([attributes] home_quota, or the receiver's home_quota_attribute):
	// a larger value is applied as UserMax and logged once. Unset, the
	// attribute may lower a user's configured hard limit but never raise
	// it (and the soft limit follows at the configured soft/hard ratio).
	UserMax string `toml:"user_max"`
	// TeamMax is UserMax for a team's project directory ([attributes]
	// project_quota, or the receiver's project_quota_attribute).
	TeamMax string `toml:"team_max"`
	// Groups: per-group overrides. A user gets the largest user_* of the
	// groups they are in that set one; a team's project its own team_*.
	Groups  map[string]Limits `toml:"groups"`
	Command CommandConfig     `toml:"command"`
	Gluster GlusterConfig     `toml:"gluster"`
}

// Limits are sizes as written ("10G", "1.5T", "500M", bytes).
type Limits struct {
	UserSoft string `toml:"user_soft"`
	UserHard string `toml:"user_hard"`
	TeamSoft string `toml:"team_soft"`
	TeamHard string `toml:"team_hard"`
}

// WithDefaults fills in what c leaves out; homeRoots and cachePath come
// from the main config.
func (c Config) WithDefaults(homeRoots []string, cachePath string) Config {
	if c.Role == "" {
		c.Role = "head"
	}
	if c.Roots == nil {
		c.Roots = append([]string(nil), homeRoots...)
	}
	if c.Mode == "" {
		c.Mode = DefaultMode
	}
	if c.Skel == "" {
		c.Skel = DefaultSkel
	}
	if c.Skel == "none" {
		c.Skel = ""
	}
	if c.Removed == "" {
		c.Removed = "keep"
	}
	if c.ArchiveDir == "" {
		c.ArchiveDir = DefaultArchiveDir
	}
	if c.StateFile == "" {
		c.StateFile = path.Join(path.Dir(cachePath), DefaultStateFileName)
	}
	if c.Projects.Root == "" {
		c.Projects.Root = DefaultProjectRoot
	}
	if c.Projects.Mode == "" {
		c.Projects.Mode = DefaultProjectMode
	}
	if c.Quota.Gluster.Gluster == "" {
		c.Quota.Gluster.Gluster = "gluster"
	}
	return c
}

// StatusFile is where a pass records its outcome (beside the state file).
func (c Config) StatusFile() string {
	return strings.TrimSuffix(c.StateFile, ".json") + ".status.json"
}

// Check reports every problem in c (after WithDefaults) and resolves
// the parsed values. protected are the paths no root may touch.
func (c *Config) Check(protected []string) error {
	var errs []error
	switch c.Role {
	case "head", "storage":
	default:
		errs = append(errs, fmt.Errorf("homes: role %q: want \"head\" (the syncd that reads the identity source) or \"storage\" (a node mirroring the head that owns the storage)", c.Role))
	}
	if len(c.Roots) == 0 {
		errs = append(errs, errors.New("homes: roots is empty: name the directories homes are made in (default: home_roots)"))
	}
	for _, r := range append(append([]string(nil), c.Roots...), c.Projects.Root) {
		if !path.IsAbs(r) || path.Clean(r) != r || r == "/" {
			errs = append(errs, fmt.Errorf("homes: root %q: want a clean absolute path other than /", r))
			continue
		}
		for _, p := range protected {
			if within(r, p) || within(p, r) {
				errs = append(errs, fmt.Errorf("homes: root %q overlaps the system path %s: pick a directory of its own", r, p))
				break
			}
		}
	}
	var err error
	if c.mode, err = parseMode(c.Mode); err != nil {
		errs = append(errs, fmt.Errorf("homes: mode: %w", err))
	} else if c.mode&0o022 != 0 {
		errs = append(errs, fmt.Errorf("homes: mode %s lets others write into every home: drop group/other write", c.Mode))
	}
	if c.projectMode, err = parseMode(c.Projects.Mode); err != nil {
		errs = append(errs, fmt.Errorf("homes: projects.mode: %w", err))
	} else if c.projectMode&0o002 != 0 {
		errs = append(errs, fmt.Errorf("homes: projects.mode %s is world-writable: use 2770 or 2750", c.Projects.Mode))
	}
	if c.Skel != "" && !path.IsAbs(c.Skel) {
		errs = append(errs, fmt.Errorf("homes: skel %q: want an absolute path, or \"none\"", c.Skel))
	}
	switch c.Removed {
	case "keep", "archive":
	case "delete":
		errs = append(errs, errors.New("homes: removed = \"delete\" is not supported: syncd never deletes a home; use \"archive\" and remove archived homes by hand"))
	default:
		errs = append(errs, fmt.Errorf("homes: removed %q: want \"keep\" or \"archive\"", c.Removed))
	}
	if strings.ContainsAny(c.ArchiveDir, "/") || c.ArchiveDir == "." || c.ArchiveDir == ".." {
		errs = append(errs, fmt.Errorf("homes: archive_dir %q: want one directory name (made inside each root)", c.ArchiveDir))
	}
	c.grace = DefaultRemovedGrace
	c.interval = DefaultInterval
	c.to = DefaultTimeout
	for _, d := range []struct {
		key, v string
		dst    *time.Duration
	}{{"removed_grace", c.RemovedGrace, &c.grace}, {"interval", c.Interval, &c.interval}, {"timeout", c.Timeout, &c.to}} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil || v < 0 || (d.key != "removed_grace" && v < time.Second) {
			errs = append(errs, fmt.Errorf("homes: %s %q: want a Go duration such as \"720h\" or \"10m\"", d.key, d.v))
			continue
		}
		*d.dst = v
	}
	if c.Projects.Pattern != "" {
		if c.pattern, err = regexp.Compile(c.Projects.Pattern); err != nil {
			errs = append(errs, fmt.Errorf("homes: projects.pattern %q: %w", c.Projects.Pattern, err))
		}
	}
	errs = append(errs, c.Quota.check()...)
	return errors.Join(errs...)
}

// Interval is the pass's own schedule (after Check).
func (c Config) IntervalDuration() time.Duration {
	if c.interval == 0 {
		return DefaultInterval
	}
	return c.interval
}

// TimeoutDuration bounds one pass (after Check).
func (c Config) TimeoutDuration() time.Duration {
	if c.to == 0 {
		return DefaultTimeout
	}
	return c.to
}

func (q *QuotaConfig) check() []error {
	var errs []error
	switch q.Driver {
	case "", "none":
		q.Driver = ""
	case "command":
		errs = append(errs, q.Command.check()...)
	case "gluster":
		if len(q.Gluster.Volumes) == 0 {
			errs = append(errs, errors.New("homes: quota.gluster.volumes is empty: map each root to its volume, e.g. volumes = { \"/home\" = \"homes\" }"))
		}
		for root, vol := range q.Gluster.Volumes {
			if !path.IsAbs(root) || path.Clean(root) != root {
				errs = append(errs, fmt.Errorf("homes: quota.gluster.volumes: %q: want the clean absolute path where the volume is mounted", root))
			}
			if !volumeName.MatchString(vol) {
				errs = append(errs, fmt.Errorf("homes: quota.gluster.volumes.%q = %q: not a volume name (letters, digits, - and _)", root, vol))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("homes: quota.driver %q: want \"gluster\", \"command\" or \"\" (no quota)", q.Driver))
	}
	for k, v := range map[string]string{"user_max": q.UserMax, "team_max": q.TeamMax} {
		if _, err := ParseSize(v); err != nil {
			errs = append(errs, fmt.Errorf("homes: quota.%s: %w", k, err))
		}
	}
	all := map[string]Limits{"": q.Limits}
	for g, l := range q.Groups {
		all["groups."+g+"."] = l
	}
	for where, l := range all {
		for _, s := range []struct{ k, v string }{{"user_soft", l.UserSoft}, {"user_hard", l.UserHard}, {"team_soft", l.TeamSoft}, {"team_hard", l.TeamHard}} {
			if s.v == "" {
				continue
			}
			if _, err := ParseSize(s.v); err != nil {
				errs = append(errs, fmt.Errorf("homes: quota.%s%s: %w", where, s.k, err))
			}
		}
		for _, p := range [][2]string{{l.UserSoft, l.UserHard}, {l.TeamSoft, l.TeamHard}} {
			s, _ := ParseSize(p[0])
			h, _ := ParseSize(p[1])
			if s > 0 && h > 0 && s > h {
				errs = append(errs, fmt.Errorf("homes: quota.%s: soft limit %s is above the hard limit %s", strings.TrimSuffix(where, "."), p[0], p[1]))
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

var volumeName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ParseSize reads "10G", "1.5T", "500MiB", "2048" (bytes), in powers of
// 1024 as quota tools and GlusterFS count. "0" is no limit.
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(u, "IB")
	u = strings.TrimSuffix(u, "B")
	mult := uint64(1)
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		case 'P':
			mult = 1 << 50
		}
		if mult > 1 {
			u = u[:n-1]
		}
	}
	f, err := strconv.ParseFloat(u, 64)
	if err != nil || f < 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("size %q: want a number of bytes or a number with K, M, G, T or P (powers of 1024), e.g. \"10G\"", s)
	}
	return uint64(f * float64(mult)), nil
}

// FormatSize prints bytes in the largest unit they reach (powers of
// 1024): exact when whole ("10G"), else with one decimal ("8.0M").
func FormatSize(b uint64) string {
	units := []struct {
		s string
		m uint64
	}{{"P", 1 << 50}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}}
	for _, u := range units {
		if b >= u.m {
			if b%u.m == 0 {
				return strconv.FormatUint(b/u.m, 10) + u.s
			}
			return strconv.FormatFloat(float64(b)/float64(u.m), 'f', 1, 64) + u.s
		}
	}
	return strconv.FormatUint(b, 10)
}

func parseMode(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o7777 {
		return 0, fmt.Errorf("%q: want an octal mode such as 0700", s)
	}
	return uint32(v), nil
}

// within reports whether p is dir or inside it (both clean, absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || (len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir)
}
