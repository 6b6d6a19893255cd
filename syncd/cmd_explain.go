package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/cli"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/explain"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/keys"
	"github.com/scimbridge/scimbridge/syncd/kube"
)

func init() {
	commands["explain"] = command{
		Summary: "why USER or GROUP is (not) on this node: source record, verdict, groups, associations, each gate",
		Run:     runExplain,
	}
}

// Where the gates' options are read from by default (overridable for
// tests and unusual layouts).
var (
	pamDir     = "/etc/pam.d"
	sshdConfig = "/etc/ssh/sshd_config"
	plugstack  = "/etc/slurm/plugstack.conf"
)

func runExplain(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("explain", &cfgPath)
	asJSON := fs.Bool("json", false, "print JSON")
	group := fs.Bool("group", false, "explain a group (default: a user, else a group of that name)")
	cachePath := fs.String("cache", "", "snapshot `path` (default: cache_path of the configuration, else reader.conf)")
	pamService := fs.String("pam-service", "sshd", "PAM `service` whose account stack gives pam_scim's options")
	pamAllow := fs.String("pam-allow-groups", "", "pam_scim allow_groups to assume (`g1,g2`; default: read from the PAM stack)")
	keysAllow := fs.String("allow-groups", "", "scim-keys --allow-groups to assume (`g1,g2`; default: read from sshd_config)")
	account := fs.String("account", "", "explain spank_scim's task_init check for a job charged to this `account`")
	exempt := fs.String("exempt-users", "", "spank_scim exempt_users to assume (`a,b`; default: read from plugstack.conf)")
	fs.Usage = func() { cli.Usage(fs.Output(), fs, "syncd explain [flags] USER|GROUP") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return usageError{"explain takes one USER or GROUP name"}
	}
	name := fs.Arg(0)

	// Root sees everything; anyone else only themself, from the
	// world-readable snapshot (the record is root's).
	root := os.Geteuid() == 0
	if !root {
		me, err := user.Current()
		if err != nil || me.Username != name || *group {
			return exitError{4, fmt.Errorf("only root may explain %q; you may explain yourself (syncd explain %s)", name, currentName())}
		}
	}
	path := snapshotPath(cfgPath, *cachePath)
	c, err := cache.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	rec, recErr := explain.Read(explain.Path(path))

	var rep *explain.Report
	if !*group {
		o := explain.Options{SystemUID: keys.SystemUID, SpankAccount: *account}
		if *pamAllow != "" {
			o.PAMAllowGroups, o.PAMSource = split(*pamAllow), "--pam-allow-groups"
		} else if a, src, ok := explain.PAMOptions(pamDir, *pamService); ok {
			o.PAMAllowGroups, o.PAMSource = a, src
		} else {
			o.PAMSource = "pam_scim not found in " + pamDir + "/" + *pamService
		}
		if *keysAllow != "" {
			o.KeysAllowGroups, o.KeysSource = split(*keysAllow), "--allow-groups"
		} else if a, ok := explain.KeysOptions(sshdConfig); ok {
			o.KeysAllowGroups, o.KeysSource = a, sshdConfig
		} else {
			o.KeysSource = "scim-keys not in " + sshdConfig
		}
		if *exempt != "" {
			o.SpankExempt, o.SpankSource = split(*exempt), "--exempt-users"
		} else if e, warn, ok := explain.SpankOptions(plugstack); ok {
			o.SpankExempt, o.SpankWarn, o.SpankSource = e, warn, plugstack
		} else {
			o.SpankSource = "spank_scim not in " + plugstack
		}
		rep = explain.User(c, rec, recErr, name, o)
		if rep.Passwd == nil && len(rep.Users) == 0 {
			if _, err := c.Group(name); err == nil {
				rep = explain.Group(c, rec, recErr, name)
			}
		}
	} else {
		rep = explain.Group(c, rec, recErr, name)
	}
	rep.Snapshot.Path = path
	var storage *homes.Explain
	if rep.Passwd != nil {
		if storage = homes.ExplainUser(cfgPath, path, rep.Passwd.Name, rep.Passwd.Home, rep.MemberOf); storage != nil {
			rep.Storage = storage
		}
	}
	if root && rep.Passwd != nil {
		ns, err := kube.ExplainNamespaces(ctx, cfgPath, path, rep.Passwd.Name)
		if err != nil {
			ns = []string{"cannot tell: " + err.Error()}
		}
		rep.Namespaces = ns
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.Print(os.Stdout)
	if storage != nil {
		storage.Print(os.Stdout)
	}
	return nil
}

func currentName() string {
	if me, err := user.Current(); err == nil {
		return me.Username
	}
	return "$USER"
}

func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// snapshotPath is the snapshot a read-only command opens: --cache if given,
// else cache_path of a readable configuration, else the path the modules
// use (reader.conf), so a user without access to syncd.toml reads the same
// file NSS does.
func snapshotPath(cfgPath, flag string) string {
	if flag != "" {
		return flag
	}
	if cfg, err := config.Parse(cfgPath); err == nil && cfg.CachePath != "" {
		return cfg.CachePath
	}
	return keys.ConfiguredCachePath()
}
