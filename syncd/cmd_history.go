package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/explain"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Rollback and pinning. A rollback re-commits a kept snapshot's contents
// (verified through the C reader first) under a new serial, and pins the
// live snapshot: syncd run and sync --once keep reading the source and
// say what they would change, but commit nothing until `syncd resume`.
// So the next poll never silently undoes a rollback.

func init() {
	commands["history"] = command{Summary: "the kept snapshots (history_keep, default 10) and what each changed", Run: runHistory}
	commands["diff"] = command{Summary: "what changed between two kept snapshots: diff A B (serials, or live)", Run: runDiff}
	commands["rollback"] = command{Summary: "make a kept snapshot live again (default: the one before the live one) and pin it", Run: runRollback}
	commands["resume"] = command{Summary: "unpin after a rollback: the next poll follows the source again", Run: runResume}
}

// The pin lives in syncd/pipeline, which honours it.
type pin = pipeline.Pin

var (
	pinPath = pipeline.PinPath
	readPin = pipeline.ReadPin
)

func loadHistoryConfig(cfgPath string) (*config.Config, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	pipeline.ApplyHistory(cfg)
	return cfg, nil
}

func runHistory(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("history", &cfgPath)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadHistoryConfig(cfgPath)
	if err != nil {
		return err
	}
	es, err := snapshot.History(cfg.CachePath)
	if err != nil {
		return err
	}
	if len(es) == 0 {
		fmt.Println("no snapshot history yet (kept from the next commit on)")
		return nil
	}
	_, live, _ := snapshot.Load(cfg.CachePath)
	p, _ := readPin(cfg.CachePath)
	var prev *snapshot.Contents
	for _, e := range es {
		c, m, err := snapshot.Load(e.Path)
		if err != nil {
			fmt.Printf("%6d  unreadable: %v\n", e.Serial, err)
			prev = nil
			continue
		}
		mark := " "
		if m.Serial == live.Serial {
			mark = "*"
		}
		note := ""
		if p != nil && p.Serial == m.Serial {
			note = fmt.Sprintf(" [rollback to %d, pinned]", p.RolledBackTo)
		}
		change := "first kept"
		if prev != nil {
			change = commit.Compute(prev, c).Summary()
		}
		fmt.Printf("%s%6d  %s  %6d users %5d groups  %s%s\n", mark, m.Serial, m.CreatedAt.Format(time.RFC3339), m.Users, m.Groups, change, note)
		prev = c
	}
	return nil
}

// loadSerial loads a kept snapshot by serial ("live": the live one).
func loadSerial(cachePath, arg string) (*snapshot.Contents, snapshot.Meta, error) {
	if arg == "live" {
		return snapshot.Load(cachePath)
	}
	n, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || n < 1 {
		return nil, snapshot.Meta{}, usageError{fmt.Sprintf("%q is not a serial (a number, or live)", arg)}
	}
	p := snapshot.HistoryPath(cachePath, n)
	if _, err := os.Stat(p); err != nil {
		return nil, snapshot.Meta{}, fmt.Errorf("serial %d is not in the history (syncd history lists it)", n)
	}
	return snapshot.Load(p)
}

func runDiff(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("diff", &cfgPath)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 2 {
		return usageError{"diff takes two serials: diff A B (or live)"}
	}
	cfg, err := loadHistoryConfig(cfgPath)
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
	cfg, err := loadHistoryConfig(cfgPath)
	if err != nil {
		return err
	}
	_, live, err := snapshot.Load(cfg.CachePath)
	if err != nil {
		return fmt.Errorf("no live snapshot to roll back: %w", err)
	}
	es, err := snapshot.History(cfg.CachePath)
	if err != nil {
		return err
	}
	var target int64
	if fs.NArg() == 1 {
		if target, err = strconv.ParseInt(fs.Arg(0), 10, 64); err != nil || target < 1 {
			return usageError{fmt.Sprintf("%q is not a serial", fs.Arg(0))}
		}
	} else {
		for _, e := range es {
			if e.Serial < live.Serial {
				target = e.Serial
			}
		}
		if target == 0 {
			return errors.New("no kept snapshot older than the live one (syncd history)")
		}
	}
	if target == live.Serial {
		return fmt.Errorf("serial %d is the live snapshot", target)
	}
	path := snapshot.HistoryPath(cfg.CachePath, target)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("serial %d is not in the history (syncd history lists what is kept)", target)
	}
	// Refused unless it still verifies through the C reader.
	if _, err := snapshot.VerifyFile(path); err != nil {
		return fmt.Errorf("refusing to roll back to serial %d: %w", target, err)
	}
	c, _, err := snapshot.Load(path)
	if err != nil {
		return fmt.Errorf("refusing to roll back to serial %d: %w", target, err)
	}
	cur, _, _ := snapshot.Load(cfg.CachePath)
	d := commit.Compute(cur, c)
	unlock, err := pipeline.LockCache(cfg.CachePath)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := snapshot.Write(cfg.CachePath, c)
	if err != nil {
		return err
	}
	if rec, err := explain.Read(strings.TrimSuffix(path, ".db") + ".explain"); err == nil {
		rec.Serial = m.Serial
		explain.Write(explain.Path(cfg.CachePath), rec)
	}
	b, _ := json.Marshal(pin{Serial: m.Serial, RolledBackTo: target, At: time.Now().UTC().Truncate(time.Second)})
	if err := os.WriteFile(pinPath(cfg.CachePath), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("rolled back, but cannot write the pin %s: %w (the next poll may replace it)", pinPath(cfg.CachePath), err)
	}
	d.Print(os.Stdout)
	fmt.Printf("rolled back to serial %d: live snapshot is now serial %d (%s)\n", target, m.Serial, d.Summary())
	fmt.Printf("pinned: syncd keeps reading the source and logs what it would change, but commits nothing until `syncd resume`\n")
	return nil
}

func runResume(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("resume", &cfgPath)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadHistoryConfig(cfgPath)
	if err != nil {
		return err
	}
	p, err := readPin(cfg.CachePath)
	if err != nil {
		return err
	}
	if p == nil {
		fmt.Println("not pinned: syncd follows the source")
		return nil
	}
	if err := os.Remove(pinPath(cfg.CachePath)); err != nil {
		return err
	}
	fmt.Printf("unpinned (was serial %d, a rollback to %d): the running daemon reads everything at its next poll and follows the source again (or run `syncd sync --once` now)\n", p.Serial, p.RolledBackTo)
	return nil
}
