package main

import (
	"context"
	"fmt"
	"os"

	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/slurm"
)

func init() {
	commands["slurm"] = command{
		Summary: "plan|apply: reconcile Slurm accounts with the snapshot (sacctmgr)",
		Run:     runSlurm,
	}
	// The pass after each commit and on its own schedule: syncd/slurm.
	pipeline.AfterCommit = append(pipeline.AfterCommit, slurm.AfterCommit)
	daemonTasks = append(daemonTasks, slurm.Loop)
}

const slurmUsage = `usage: syncd slurm plan  [--cache PATH]
       syncd slurm apply [--cache PATH] [--force]

plan prints the exact sacctmgr commands apply would run, and changes nothing.
apply runs them (one reconcile at a time, lock_file), then records every SCIM
user's associations in the snapshot for spank_scim.so.`

func runSlurm(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || (args[0] != "plan" && args[0] != "apply") {
		return usageError{slurmUsage}
	}
	sub := args[0]
	fs := flags("slurm "+sub, &cfgPath)
	cache := fs.String("cache", "", "snapshot path (default: cache_path of the config)")
	force := fs.Bool("force", false, "apply even when the plan removes more than half of the managed associations")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, sc, err := slurm.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	path := cfg.CachePath
	if *cache != "" {
		path = *cache
	}
	show := func(p *slurm.Plan) { fmt.Fprint(os.Stdout, p.String()) }
	res, err := slurm.Reconcile(ctx, sc, path, slurm.Options{DryRun: sub == "plan", Force: *force, OnPlan: show})
	if err != nil {
		return err
	}
	if sub == "apply" {
		fmt.Fprintf(os.Stdout, "# applied %d command(s), %d changed something; %d sacctmgr run(s) in %.1fs; %d association(s) recorded (snapshot written: %v)\n",
			res.Applied, res.Changed, res.Calls, res.Duration.Seconds(), res.Associations, res.SnapshotWritten)
		if res.Unfinished > 0 {
			// Not an error: a limit sacctmgr prints differently from the
			// config would make every pass "fail". The log has the diff.
			fmt.Fprintf(os.Stdout, "# warning: slurmdbd still differs after apply (%d command(s)); see `syncd slurm plan`\n", res.Unfinished)
		}
	}
	return nil
}
