// Command mylimits tells a researcher what they may run on this cluster:
// their Slurm accounts (and which is the default), the QOS tiers each
// allows with their GPU caps and walltimes, the accounts' group limits,
// their current jobs (and why pending ones wait), and their home quota.
//
// The facts come from the scimbridge snapshot (the identity and the
// associations syncd recorded) and from the local Slurm and quota tools.
// Any piece that is missing (no snapshot, no Slurm, no quota) is left out
// and said so under "notes": the tool always prints what it could find.
//
//	mylimits                 the calling user, as a table
//	mylimits --json          the same facts for scripts
//	mylimits --user NAME     another user (root only)
//	mylimits --cache PATH    another snapshot
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/scimbridge/scimbridge/syncd/cli"
	"github.com/scimbridge/scimbridge/syncd/keys"
)

// getuid is os.Getuid; tests pretend to be an ordinary user.
var getuid = os.Getuid

// version is set at build time: -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mylimits", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON (the same facts as the table)")
	userName := fs.String("user", "", "report on `NAME` instead of the caller (root only)")
	cachePath := fs.String("cache", "", "snapshot `path` (default: cache_path in "+keys.ReaderConfigPath+", else "+keys.DefaultCachePath+")")
	timeout := fs.Duration("timeout", 15*time.Second, "time limit of each Slurm or quota command")
	showVersion := fs.Bool("version", false, "print the version and exit")
	const line = "mylimits [--json] [--user NAME] [--cache PATH] [--timeout D]"
	fs.Usage = func() { cli.Usage(fs.Output(), fs, line) }
	if cli.HelpRequested(args) {
		cli.Usage(stdout, fs, line)
		return 0
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "mylimits %s\n", version)
		return 0
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	// Slurm shows anyone's associations to anyone unless PrivateData says
	// otherwise; mylimits does not widen that for other users' jobs and
	// quota, which are theirs.
	if *userName != "" && getuid() != 0 {
		fmt.Fprintln(stderr, "mylimits: --user is for root only")
		return 2
	}
	path := *cachePath
	if path == "" {
		path = keys.ConfiguredCachePath()
	}

	g := &gatherer{
		run:     execRunner(*timeout),
		openDir: openSnapshot,
	}
	rep := g.gather(context.Background(), path, *userName, uint32(getuid()))
	if rep.User == "" {
		for _, n := range rep.Notes {
			fmt.Fprintln(stderr, "mylimits:", n)
		}
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return 1
		}
		return 0
	}
	if err := renderTable(stdout, rep); err != nil {
		return 1
	}
	return 0
}
