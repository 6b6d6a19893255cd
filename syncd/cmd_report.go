package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/slurm"
)

func init() {
	commands["report"] = command{
		Summary: "usage [--since 7d] [--csv FILE] [--png FILE]: GPU-hours per team and tier (sacct)",
		Run:     runReport,
	}
}

const reportUsage = `usage: syncd report usage [--since 7d] [--csv FILE] [--png FILE]

GPU-hours per team (Slurm account) and tier (QOS; ACCOUNT-project is the
team's project tier) from sacct, against the cluster's capacity (GPUs of
scontrol show nodes × hours), as a table; --csv and --png also write a CSV
file and a stacked bar chart (one bar per team, by tier).`

func runReport(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || args[0] != "usage" {
		return usageError{reportUsage}
	}
	fs := flags("report usage", &cfgPath)
	since := fs.String("since", "7d", "window: Nd (days) or a Go duration (36h)")
	csvPath := fs.String("csv", "", "also write the rows as CSV to this file")
	pngPath := fs.String("png", "", "also write a bar chart (PNG) to this file")
	sacct := fs.String("sacct", "sacct", "sacct program")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	window, err := parseSince(*since)
	if err != nil {
		return err
	}
	_, sc, err := loadSlurmConfig(cfgPath)
	if err != nil {
		return err
	}
	to := time.Now().Truncate(time.Second)
	from := to.Add(-window)
	out, err := runOut(ctx, *sacct, slurm.UsageArgs(from, to)...)
	if err != nil {
		return err
	}
	u, err := slurm.ParseUsage(out, from, to, time.Local)
	if err != nil {
		return err
	}
	nodes, err := runOut(ctx, sc.Scontrol, "-o", "show", "nodes")
	if err != nil {
		return err
	}
	u.CapacityGPU = slurm.ParseCapacity(nodes)
	u.Table(os.Stdout)
	if *csvPath != "" {
		var b bytes.Buffer
		u.CSV(&b)
		if err := os.WriteFile(*csvPath, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if *pngPath != "" {
		var b bytes.Buffer
		if err := u.PNG(&b); err != nil {
			return err
		}
		if err := os.WriteFile(*pngPath, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func parseSince(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--since %q: want Nd (7d) or a duration (36h)", s)
}

func runOut(ctx context.Context, bin string, args ...string) (string, error) {
	var o, e bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(e.String()))
	}
	return o.String(), nil
}
