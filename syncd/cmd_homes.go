package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/report"
)

// The homes pass (syncd/homes) runs on the host the [homes] table names
// (role: the head, or a storage node mirroring it), in a goroutine of
// its own: a hung or slow storage stalls that goroutine only, never a
// poll, a commit, a publish or a mirror's install.

func init() {
	commands["homes"] = command{
		Summary: "plan|apply: homes, project directories and quotas from the snapshot ([homes])",
		Run:     runHomes,
	}
	// The pass after `sync --once` and on its own schedule: syncd/homes.
	pipeline.AfterCommit = append(pipeline.AfterCommit, homes.AfterCommit)
	daemonTasks = append(daemonTasks, homes.Loop)
	metrics.Extra = append(metrics.Extra, homes.Collectors()...)
}

const homesUsage = `usage: syncd homes plan  [--cache PATH] [--json]
       syncd homes apply [--cache PATH] [--json]

plan prints what apply would do (homes to make, archive, projects, quota
command lines) and changes nothing. apply does it now, on this host, whatever
its role; syncd run does it on the host [homes] role names.`

func runHomes(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || (args[0] != "plan" && args[0] != "apply") {
		return usageError{homesUsage}
	}
	sub := args[0]
	fs := flags("homes "+sub, &cfgPath)
	cache := fs.String("cache", "", "snapshot path (default: cache_path of the config)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	sample := fs.Bool("sample", false, "apply: also record each team's use as a sample for the usage report (syncd run does it every homes.interval)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	hc, on, err := homes.Load(cfg)
	if err != nil {
		return err
	}
	if !on {
		return fmt.Errorf("%s has no [homes] table", cfgPath)
	}
	if *cache != "" {
		cfg.CachePath = *cache
	}
	res, err := homes.Run(ctx, cfg, hc, sub == "plan", *sample)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	homes.PrintResult(os.Stdout, res)
	if res.Errors > 0 {
		return fmt.Errorf("%d error(s) (above); nothing else was held back", res.Errors)
	}
	return nil
}

func runStorageReport(cfgPath string, args []string) error {
	fs := flags("report storage", &cfgPath)
	since := fs.String("since", "7d", "start of the window: a span back from now (7d, 36h) or a date")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	now := time.Now()
	from, err := report.ParseSince(*since, now)
	if err != nil {
		return usageError{"--since: " + err.Error()}
	}
	ts, err := homes.StorageSummary(cfgPath, from, now.Add(time.Second))
	if err != nil {
		return err
	}
	if *asJSON {
		if ts == nil {
			ts = []homes.TeamStorage{}
		}
		return json.NewEncoder(os.Stdout).Encode(ts)
	}
	if len(ts) == 0 {
		fmt.Println("no storage samples in the window (the homes pass records them every homes.interval on the host its role names)")
		return nil
	}
	homes.PrintStorage(os.Stdout, ts)
	return nil
}
