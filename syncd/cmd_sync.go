package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/source"
)

func init() {
	commands["sync"] = command{
		Summary: "sync --once [--dry-run] [--force] [--full]: one sync now (a full read); prints the diff and rejections",
		Run:     runSync,
	}
}

func runSync(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("sync", &cfgPath)
	once := fs.Bool("once", false, "sync once and exit (required: the loop is 'syncd run')")
	dryRun := fs.Bool("dry-run", false, "print what would change; write nothing")
	force := fs.Bool("force", false, "commit even if it removes more than max_removal_share of users, or everyone")
	full := fs.Bool("full", false, "a reconcile: report every difference between the source and the live snapshot at error level and in scimbridge_reconcile_differences_total, then commit the fix")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*once {
		return usageError{"--once is required (the polling loop is `syncd run`)"}
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	log := newLogger(cfg, os.Stderr)
	var src source.Source
	if cfg.HasReceiver() {
		// The receiver's store is the source (cmd_receive.go).
		rcfg, _, st, err := openReceiverStore(cfgPath)
		if err != nil {
			return err
		}
		defer st.Close()
		cfg, src = rcfg, receiverSource(st)
	} else if src, err = newClient(cfg, log); err != nil {
		return err
	}
	s := pipeline.NewSyncer(cfg, src, log, nil)
	out, err := s.Once(ctx, pipeline.Opts{DryRun: *dryRun, Force: *force, Out: os.Stdout, Reconcile: *full})
	var pe pipeline.ExitError
	if errors.As(err, &pe) {
		err = exitError{pe.Code, pe.Err}
	}
	if !*dryRun {
		publish.AfterPoll(ctx, cfg, log, nil) // a head with [publish] (syncd/publish)
	}
	if err == nil && out != nil && out.Result == commit.HeldBack {
		// Committed, but deletions wait for a person: say so in the exit
		// status, like a refusal.
		return exitError{3, fmt.Errorf("removal guard: %s", out.Held.Summary())}
	}
	return err
}
