package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/cli"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/report"
)

func init() {
	commands["report"] = command{
		Summary: "usage: GPU- and CPU-hours per team and tier against capacity (sacct), as a table, CSV, JSON or PNG",
		Run:     runReport,
	}
}

const reportUsage = `usage: syncd report usage [--since 7d] [--until TIME] [--csv FILE] [--png FILE] [--json]

GPU-hours and CPU-hours per team (Slurm account) per tier (QOS) from sacct,
against the cluster's GPUs and each team's guaranteed_gpus. --since and
--until take a span back from now (7d, 2w, 36h) or a date (2026-11-01,
2026-11-01T08:00). --csv and --png write files ("-" for standard output);
the table goes to standard output unless --json asks for JSON there.
On the host whose [homes] pass samples storage, the table ends with each
team's project storage; syncd report storage [--since 7d] [--json] shows it alone.`

func runReport(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("report usage", &cfgPath)
	since := fs.String("since", "7d", "start of the window: a span back from now (7d, 36h) or a date")
	until := fs.String("until", "", "end of the window (default now): a span back from now or a date")
	csvPath := fs.String("csv", "", "write the rows as CSV to `FILE` (- for standard output)")
	pngPath := fs.String("png", "", "write a stacked bar chart (GPU-hours per team per tier) to `FILE`.png")
	asJSON := fs.Bool("json", false, "print JSON instead of the table")
	cluster := fs.String("cluster", "", "cluster name for sacct -M (default: [slurm] cluster of the config)")
	sacct := fs.String("sacct", "", "the sacct `PROGRAM` to run (default: [slurm] sacct of the config, else sacct from PATH)")
	timeout := fs.Duration("timeout", 2*time.Minute, "time limit of each sacct, sacctmgr or scontrol run")
	if len(args) > 0 && args[0] == "storage" {
		return runStorageReport(cfgPath, args[1:]) // cmd_homes.go
	}
	if len(args) == 0 || args[0] != "usage" {
		if cli.HelpRequested(args) { // syncd help report, syncd report --help
			fmt.Fprint(helpOut, reportUsage+"\n\n")
			cli.Usage(helpOut, fs, "syncd report usage")
			return flag.ErrHelp
		}
		return usageError{reportUsage}
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	now := time.Now()
	o := report.Options{Now: now, Until: now}
	var err error
	if o.Since, err = report.ParseSince(*since, now); err != nil {
		return usageError{"--since: " + err.Error()}
	}
	if *until != "" {
		if o.Until, err = report.ParseSince(*until, now); err != nil {
			return usageError{"--until: " + err.Error()}
		}
	}
	if *pngPath != "" && *pngPath != "-" && !strings.EqualFold(filepath.Ext(*pngPath), ".png") {
		return usageError{"--png " + *pngPath + ": name the file .png"}
	}
	// The config gives the cluster, the commands and the guarantees; a
	// host without [slurm] still gets a report from Slurm alone.
	if err := report.ConfigOptions(cfgPath, &o); err != nil {
		return err
	}
	if *cluster != "" {
		o.Cluster = *cluster
	}
	if *sacct != "" {
		o.Sacct = *sacct
	}
	u, err := report.Gather(ctx, report.ExecRunner(*timeout), o)
	if err != nil {
		return err
	}
	if *csvPath != "" {
		if err := report.WriteOutput(*csvPath, func(b *bytes.Buffer) error { return report.CSV(b, u) }); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	if *pngPath != "" {
		if err := report.WriteOutput(*pngPath, func(b *bytes.Buffer) error { return report.PNG(b, u) }); err != nil {
			return fmt.Errorf("--png: %w", err)
		}
	}
	if *csvPath == "-" || *pngPath == "-" {
		return nil
	}
	if *asJSON {
		return report.JSON(os.Stdout, u)
	}
	if err := report.Table(os.Stdout, u); err != nil {
		return err
	}
	homes.PrintStorageSection(os.Stdout, cfgPath, o.Since, o.Until) // the homes pass's samples, if any (syncd/homes)
	return nil
}
