package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/history"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Rollback and pinning (syncd/history): a rollback re-commits a kept
// snapshot's contents (verified through the C reader first) under a new
// serial, and pins the live snapshot: syncd run and sync --once keep
// reading the source and say what they would change, but commit nothing
// until `syncd resume`. So the next poll never silently undoes a
// rollback.

func init() {
	commands["history"] = command{Summary: "the kept snapshots (history_keep, default 10) and what each changed", Run: runHistory}
	commands["diff"] = command{Summary: "what changed between two kept snapshots: diff A B (serials, or live)", Run: runDiff}
	commands["rollback"] = command{Summary: "make a kept snapshot live again (default: the one before the live one) and pin it", Run: runRollback}
	commands["resume"] = command{Summary: "unpin after a rollback: the next poll follows the source again", Run: runResume}
}

func runHistory(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("history", &cfgPath)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := history.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	return history.Print(os.Stdout, cfg.CachePath)
}

// loadSerial loads a kept snapshot by serial ("live": the live one).
func loadSerial(cachePath, arg string) (*snapshot.Contents, snapshot.Meta, error) {
	if arg == "live" {
		return history.Load(cachePath, 0)
	}
	n, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || n < 1 {
		return nil, snapshot.Meta{}, usageError{fmt.Sprintf("%q is not a serial (a number, or live)", arg)}
	}
	return history.Load(cachePath, n)
}

func runDiff(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("diff", &cfgPath)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 2 {
		return usageError{"diff takes two serials: diff A B (or live)"}
	}
	cfg, err := history.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	a, _, err := loadSerial(cfg.CachePath, fs.Arg(0))
	if err != nil {
		return err
	}
	b, _, err := loadSerial(cfg.CachePath, fs.Arg(1))
	if err != nil {
		return err
	}
	d := commit.Compute(a, b)
	d.Print(os.Stdout)
	fmt.Println(d.Summary())
	return nil
}

func runRollback(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("rollback", &cfgPath)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 1 {
		return usageError{"rollback takes at most one serial"}
	}
	cfg, err := history.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	var target int64 // 0: the one before the live one
	if fs.NArg() == 1 {
		if target, err = strconv.ParseInt(fs.Arg(0), 10, 64); err != nil || target < 1 {
			return usageError{fmt.Sprintf("%q is not a serial", fs.Arg(0))}
		}
	}
	r, err := history.Rollback(cfg, target)
	if err != nil {
		return err
	}
	r.Diff.Print(os.Stdout)
	fmt.Printf("rolled back to serial %d: live snapshot is now serial %d (%s)\n", r.Target, r.Serial, r.Diff.Summary())
	fmt.Printf("pinned: syncd keeps reading the source and logs what it would change, but commits nothing until `syncd resume`\n")
	return nil
}

func runResume(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("resume", &cfgPath)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := history.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	p, err := history.Resume(cfg.CachePath)
	if err != nil {
		return err
	}
	if p == nil {
		fmt.Println("not pinned: syncd follows the source")
		return nil
	}
	fmt.Printf("unpinned (was serial %d, a rollback to %d): the running daemon reads everything at its next poll and follows the source again (or run `syncd sync --once` now)\n", p.Serial, p.RolledBackTo)
	return nil
}
