// Command scim-keys is sshd's AuthorizedKeysCommand for scimbridge users:
//
//	AuthorizedKeysCommand /usr/sbin/scim-keys --allow-groups slurm-users,slurm-sudo %u
//	AuthorizedKeysCommandUser nobody
//
// It prints the SSH public keys of the user named exactly USER from the
// snapshot (one per line, canonical "type base64"), and nothing, exit 0,
// for a user that is unknown, disabled at the source, in none of the
// --allow-groups, or whose name the system resolves to another account (a
// local user of the same name, listed before scim in nsswitch.conf). It only reads the world-readable snapshot, so it runs
// as nobody. Exit 1 (nothing printed) when the snapshot is unusable.
//
// With --refresh-config, it first asks the SCIM service syncd reads (that
// configuration file, its base URL and credentials) for this one user,
// with a short timeout, so that a rotated or revoked key applies at the
// next login. The snapshot still decides whether the user may log in; the
// service may only replace the keys or report the user disabled, and any
// failure (timeout, error, a different uid, an ambiguous name) falls back
// to the snapshot's keys. syncd's configuration and token are readable by
// their owner only, so the refresh needs an AuthorizedKeysCommandUser
// that owns its own copy of both (a read-only token); as nobody it always
// falls back.
//
// Diagnostics go to stderr (sshd shows them only when debugging); why a
// user got no keys also goes to syslog (LOG_AUTH). They never contain a
// credential.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/syslog"
	"os"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"github.com/scimbridge/scimbridge/syncd/cli"
	"github.com/scimbridge/scimbridge/syncd/keys"
)

// version is set at build time: -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("scim-keys", flag.ContinueOnError)
	cachePath := fs.String("cache", "", "snapshot `path` (default: cache_path in "+keys.ReaderConfigPath+", else "+keys.DefaultCachePath+")")
	allow := fs.String("allow-groups", "", "comma-separated `groups`: only their members get keys (default: any active user)")
	refresh := fs.String("refresh-config", "", "syncd configuration `file`: read this user's keys live from SCIM first")
	timeout := fs.Duration("refresh-timeout", 2*time.Second, "time limit of the live read")
	verbose := fs.Bool("v", false, "explain the decision on stderr")
	showVersion := fs.Bool("version", false, "print the version and exit")
	const line = "scim-keys [--allow-groups G1,G2] [--cache PATH] [--refresh-config FILE] [-v] USER"
	fs.Usage = func() { cli.Usage(fs.Output(), fs, line) }
	if cli.HelpRequested(args) {
		cli.Usage(os.Stdout, fs, line)
		return 0
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Printf("scim-keys %s\n", version)
		return 0
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		fs.Usage()
		return 2
	}
	name := fs.Arg(0)
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "scim-keys: "+format+"\n", a...)
	}
	vlogf := func(format string, a ...any) {
		if *verbose {
			logf(format, a...)
		}
	}

	path := *cachePath
	if path == "" {
		path = keys.ConfiguredCachePath()
	}
	var groups []string
	for _, g := range strings.Split(*allow, ",") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
		}
	}

	c, err := cache.Open(path)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer c.Close()
	u, d, err := keys.Check(c, name, groups)
	if err != nil {
		logf("%v", err)
		return 1
	}
	if d == keys.Allowed && !keys.SameAccount(u, keys.SystemUID) {
		d = keys.Shadowed
	}
	if d != keys.Allowed {
		// Always said in the auth log (stderr with -v): a login that
		// fails for want of keys must leave a reason somewhere, and sshd
		// discards this command's stderr unless it is debugging.
		vlogf("%q: %s: no keys", name, d)
		authLog("%q: %s: no keys offered (syncd explain %s)", name, d, name)
		return 0
	}

	published, source := []string(nil), "snapshot"
	if *refresh != "" {
		lu, err := liveUser(*refresh, *timeout, name)
		switch {
		case err != nil:
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w (--refresh-timeout %s)", err, *timeout)
			}
			logf("live refresh for %q failed, using the snapshot: %v", name, err)
		case lu.UID != int64(u.UID):
			logf("live refresh: %q has uid %d at the source but %d in the snapshot; using the snapshot",
				name, lu.UID, u.UID)
		case !lu.Active:
			vlogf("%q: disabled at the source (live): no keys", name)
			authLog("%q: disabled at the source (live refresh): no keys offered", name)
			return 0
		default:
			published, source = lu.Keys, "SCIM (live)"
		}
	}
	if source == "snapshot" {
		if published, err = c.Keys(name); err != nil {
			logf("%v", err)
			return 1
		}
	}
	out, bad := keys.Canonical(published)
	for _, e := range bad {
		logf("%q: %s: skipped %v", name, source, e)
	}
	vlogf("%q: %d key(s) from the %s", name, len(out), source)
	var b strings.Builder
	for _, k := range out {
		b.WriteString(k)
		b.WriteByte('\n')
	}
	if _, err := os.Stdout.WriteString(b.String()); err != nil {
		return 1
	}
	return 0
}

// authLog writes one line to syslog (LOG_AUTH), if there is one.
func authLog(format string, a ...any) {
	w, err := syslog.New(syslog.LOG_AUTH|syslog.LOG_NOTICE, "scim-keys")
	if err != nil {
		return
	}
	defer w.Close()
	w.Notice(fmt.Sprintf(format, a...))
}

func liveUser(configPath string, timeout time.Duration, name string) (*keys.LiveUser, error) {
	l, err := keys.NewLive(configPath, timeout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.User(ctx, name)
}
