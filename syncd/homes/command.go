package homes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CommandConfig is [homes.quota.command]: quotas set by running the
// storage's own CLI. A preset fills in the command lines; user and team
// replace them. Each is a list of argv lists (run in order, no shell),
// with these placeholders in any argument:
//
//	{user} {uid}   the user (user targets)     {team} {gid}  the team (team targets)
//	{path}         the directory               {fs}          the file system argument (filesystems, else the root)
//	{soft_kb} {hard_kb}   limits in KiB        {soft_bytes} {hard_bytes}  in bytes
type CommandConfig struct {
	Preset string     `toml:"preset"`
	User   [][]string `toml:"user"`
	Team   [][]string `toml:"team"`
	// Filesystems maps a root to what {fs} is for targets inside it (a
	// mount point or device); default: the root itself.
	Filesystems map[string]string `toml:"filesystems"`
}

// Presets: the exact command lines for the common tools (README, "Homes
// and quotas"). Kernel user/group quotas (setquota, linuxquota), XFS
// (users by uid, teams by project id = gid on their project directory)
// and Lustre (lfs, KiB limits).
var Presets = map[string]struct{ User, Team [][]string }{
	"setquota": {
		User: [][]string{{"setquota", "-u", "{uid}", "{soft_kb}", "{hard_kb}", "0", "0", "{fs}"}},
		Team: [][]string{{"setquota", "-g", "{gid}", "{soft_kb}", "{hard_kb}", "0", "0", "{fs}"}},
	},
	"xfs_quota": {
		User: [][]string{{"xfs_quota", "-x", "-c", "limit -u bsoft={soft_kb}k bhard={hard_kb}k {uid}", "{fs}"}},
		Team: [][]string{
			{"xfs_quota", "-x", "-c", "project -s -p {path} {gid}", "{fs}"},
			{"xfs_quota", "-x", "-c", "limit -p bsoft={soft_kb}k bhard={hard_kb}k {gid}", "{fs}"},
		},
	},
	"lfs": {
		User: [][]string{{"lfs", "setquota", "-u", "{uid}", "-b", "{soft_kb}", "-B", "{hard_kb}", "{fs}"}},
		Team: [][]string{{"lfs", "setquota", "-g", "{gid}", "-b", "{soft_kb}", "-B", "{hard_kb}", "{fs}"}},
	},
}

func (c *CommandConfig) check() []error {
	var errs []error
	if c.Preset != "" {
		p, ok := Presets[c.Preset]
		if !ok {
			return []error{fmt.Errorf("homes: quota.command.preset %q: want setquota, xfs_quota or lfs (or user/team command lines)", c.Preset)}
		}
		if c.User == nil {
			c.User = p.User
		}
		if c.Team == nil {
			c.Team = p.Team
		}
	}
	if len(c.User) == 0 && len(c.Team) == 0 {
		errs = append(errs, errors.New("homes: quota.driver = \"command\" needs quota.command.preset (setquota, xfs_quota, lfs) or user/team command lines"))
	}
	for _, set := range [][][]string{c.User, c.Team} {
		for _, argv := range set {
			if len(argv) == 0 || argv[0] == "" {
				errs = append(errs, errors.New("homes: quota.command: an empty command line"))
				continue
			}
			for _, a := range argv {
				if _, err := expand(a, nil); err != nil {
					errs = append(errs, fmt.Errorf("homes: quota.command: %q: %w", strings.Join(argv, " "), err))
				}
			}
		}
	}
	return errs
}

type commandDriver struct {
	cfg CommandConfig
	run Runner
}

func newCommandDriver(c CommandConfig, run Runner) (*commandDriver, error) {
	if errs := c.check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &commandDriver{cfg: c, run: run}, nil
}

func (d *commandDriver) Name() string {
	if d.cfg.Preset != "" {
		return "command (" + d.cfg.Preset + ")"
	}
	return "command"
}

// Lines are the command lines Set runs for t and l (plan shows them).
func (d *commandDriver) Lines(t Target, l Limit) ([][]string, error) {
	set := d.cfg.User
	if t.Kind == "team" {
		set = d.cfg.Team
	}
	fs := t.Root
	if _, v, ok := rootOf(d.cfg.Filesystems, t.Path); ok {
		fs = v
	}
	vals := map[string]string{
		"path": t.Path, "fs": fs,
		"soft_kb": strconv.FormatUint(kib(l.Soft), 10), "hard_kb": strconv.FormatUint(kib(l.Hard), 10),
		"soft_bytes": strconv.FormatUint(l.Soft, 10), "hard_bytes": strconv.FormatUint(l.Hard, 10),
	}
	id := strconv.FormatUint(uint64(t.ID), 10)
	if t.Kind == "team" {
		vals["team"], vals["gid"] = t.Name, id
	} else {
		vals["user"], vals["uid"] = t.Name, id
	}
	var out [][]string
	for _, argv := range set {
		line := make([]string, len(argv))
		for i, a := range argv {
			v, err := expand(a, vals)
			if err != nil {
				return nil, err
			}
			line[i] = v
		}
		out = append(out, line)
	}
	return out, nil
}

func (d *commandDriver) Set(ctx context.Context, t Target, l Limit) error {
	lines, err := d.Lines(t, l)
	if err != nil {
		return err
	}
	if len(lines) == 0 {
		return fmt.Errorf("no quota.command.%s command lines: %s %s gets no quota", t.Kind, t.Kind, t.Name)
	}
	for _, argv := range lines {
		if _, err := d.run(ctx, argv); err != nil {
			return err
		}
	}
	return nil
}

// Usage: a command driver only sets limits; quota(1) (mylimits) reads
// kernel quotas on every node.
func (d *commandDriver) Usage(context.Context, []Target) (map[string]Usage, error) { return nil, nil }

// kib rounds bytes up to KiB (a limit is never made smaller).
func kib(b uint64) uint64 { return (b + 1023) / 1024 }

var placeholders = map[string]bool{"user": true, "uid": true, "team": true, "gid": true, "path": true, "fs": true,
	"soft_kb": true, "hard_kb": true, "soft_bytes": true, "hard_bytes": true}

// expand replaces {name} placeholders; vals nil only checks the names.
// A placeholder the target has no value for (a {uid} in a team line) is
// an error.
func expand(s string, vals map[string]string) (string, error) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed { in %q", s)
		}
		name := s[i+1 : i+j]
		if !placeholders[name] {
			return "", fmt.Errorf("unknown placeholder {%s}: want one of {user} {uid} {team} {gid} {path} {fs} {soft_kb} {hard_kb} {soft_bytes} {hard_bytes}", name)
		}
		b.WriteString(s[:i])
		if vals != nil {
			v, ok := vals[name]
			if !ok {
				return "", fmt.Errorf("placeholder {%s} has no value for this target", name)
			}
			b.WriteString(v)
		}
		s = s[i+j+1:]
	}
}
