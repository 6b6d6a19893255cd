package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/cli"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/report"
	"github.com/scimbridge/scimbridge/syncd/slurm"
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
	if cfg, err := config.Load(cfgPath); err == nil && cfg.HasSlurm() {
		var sc slurm.Config
		if err := cfg.DecodeSlurm(&sc); err != nil {
			return err
		}
		o.Cluster, o.Guarantees, o.Scontrol, o.Sacctmgr = sc.Cluster, report.GuaranteesFromConfig(sc), sc.Scontrol, sc.Sacctmgr
		o.Sacct = sc.Sacct
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if *cluster != "" {
		o.Cluster = *cluster
	}
	if *sacct != "" {
		o.Sacct = *sacct
	}
	u, err := report.Gather(ctx, execReportRunner(*timeout), o)
	if err != nil {
		return err
	}
	write := func(path string, f func(*bytes.Buffer) error) error {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			return err
		}
		if path == "-" {
			_, err := os.Stdout.Write(b.Bytes())
			return err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	}
	if *csvPath != "" {
		if err := write(*csvPath, func(b *bytes.Buffer) error { return report.CSV(b, u) }); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	if *pngPath != "" {
		if err := write(*pngPath, func(b *bytes.Buffer) error { return report.PNG(b, u) }); err != nil {
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

func execReportRunner(timeout time.Duration) report.Runner {
	return func(ctx context.Context, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s: no answer within %s", name, timeout)
		}
		if err != nil {
			msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
			if msg == "" {
				msg = err.Error()
			}
			return "", fmt.Errorf("%s: %s", name, msg)
		}
		return stdout.String(), nil
	}
}
