// Command syncd keeps a node's SCIM snapshot up to date: it reads the
// whole directory from the identity source, validates it, and publishes
// it as the cache snapshot that libnss_scim, pam_scim and the SPANK
// plugin read. Lookups never touch the network; only syncd does.
//
//	syncd [--config PATH] run                       the daemon: poll, commit, repeat
//	syncd [--config PATH] sync --once [--dry-run] [--force]
//	syncd [--config PATH] status                    last attempt, last success, snapshot
//	syncd [--config PATH] check-config              every problem in the config
//	syncd --version
//
// Exit status: 0 success, 1 failure (the live snapshot is kept), 2 bad
// command line, 3 commit refused by the policy (too many removals, or no
// users; the live snapshot is kept; --force overrides), 4 migrate-check
// found changes, or explain was asked about another user by non-root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/scimbridge/scimbridge/syncd/cli"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/redact"
)

// version is set at build time: -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand. Other files in this package add theirs to
// commands from init() (the Slurm reconciler adds "slurm").
type command struct {
	Summary string
	// Run gets the arguments after the subcommand name and the --config
	// path given before it (or the default). It parses its own flags.
	Run func(ctx context.Context, configPath string, args []string) error
}

var commands = map[string]command{}

// usageError is a bad command line: exit status 2 and the usage text.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitError carries a specific exit status (a refused commit is 3).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func main() {
	setMemoryLimit()
	stop := startProfiles()
	code := runMain(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func runMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("syncd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", config.DefaultPath, "configuration file")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() { usage(stderr) }
	if len(args) > 0 && cli.HelpRequested(args[:1]) {
		usage(stdout)
		return 0
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "syncd %s\n", version)
		return 0
	}
	rest := fs.Args()
	if len(rest) == 0 {
		usage(stderr)
		return 2
	}
	cmd, ok := commands[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "syncd: unknown command %q\n", rest[0])
		usage(stderr)
		return 2
	}
	if cli.HelpRequested(rest[1:]) {
		// --help anywhere: the command's usage on standard output, exit
		// 0, and nothing else runs (no config is read, `users add --help`
		// adds nobody).
		if err := commandHelp(cmd, *cfgPath, stdout); err != nil {
			fmt.Fprintf(stderr, "syncd %s: %v\n", rest[0], err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cmd.Run(ctx, *cfgPath, rest[1:])
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "syncd %s: %v\n", rest[0], err)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "syncd %s: %s\n", rest[0], redact.String(err.Error()))
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: syncd [--config PATH] <command> [flags]\n       syncd --version\n       syncd help [COMMAND]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-13s %s\n", n, commands[n].Summary)
	}
	fmt.Fprintf(w, "\nEvery command also takes --config PATH (default %s).\n", config.DefaultPath)
}

// flags makes a subcommand's flag set, with --config bound to cfgPath
// so it works after the subcommand too.
func flags(name string, cfgPath *string) *flag.FlagSet {
	fs := flag.NewFlagSet("syncd "+name, flag.ContinueOnError)
	fs.SetOutput(helpOut)
	fs.StringVar(cfgPath, "config", *cfgPath, "configuration `file`")
	fs.Usage = func() {
		line := "syncd " + name + " [flags]"
		if c, ok := commands[name]; ok {
			fmt.Fprintf(fs.Output(), "%s: %s\n", name, c.Summary)
		}
		cli.Usage(fs.Output(), fs, line)
	}
	return fs
}

// helpOut is where a subcommand's flag set writes: standard output when
// --help was asked for, else standard error.
var helpOut io.Writer = os.Stderr

func init() {
	commands["help"] = command{Summary: "this list, or help COMMAND for one command's flags", Run: runHelp}
}

func runHelp(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || cli.HelpRequested(args[:1]) || args[0] == "help" {
		usage(os.Stdout)
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		return usageError{fmt.Sprintf("no command %q", args[0])}
	}
	return commandHelp(c, cfgPath, os.Stdout)
}

// commandHelp prints c's usage on w: its flag set's, through --help, or
// the usage line a command with verbs (users, groups, keys, slurm)
// answers a bare --help with. Every Run parses its flags before it reads
// a config, so this reads none.
func commandHelp(c command, cfgPath string, w io.Writer) error {
	helpOut = w
	defer func() { helpOut = os.Stderr }()
	err := c.Run(context.Background(), cfgPath, []string{"--help"})
	var ue usageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return nil
	case errors.As(err, &ue):
		if !strings.Contains(ue.msg, flag.ErrHelp.Error()) {
			fmt.Fprintln(w, ue.msg) // the verbs' usage line
		}
		return nil
	}
	return err
}

// parseFlags parses a subcommand's flags; extra arguments are an error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{"unexpected arguments: " + strings.Join(fs.Args(), " ")}
	}
	return nil
}
