package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/explain"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// LoadConfig loads the config at cfgPath and applies its history
// settings (history_keep, history_max_mb, clock serials on a head).
func LoadConfig(cfgPath string) (*config.Config, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	pipeline.ApplyHistory(cfg)
	return cfg, nil
}

// Print lists the kept snapshots of the snapshot at cachePath, oldest
// first, each with what it changed from the one before; the live one is
// marked *, a pinned rollback is named.
func Print(w io.Writer, cachePath string) error {
	es, err := snapshot.History(cachePath)
	if err != nil {
		return err
	}
	if len(es) == 0 {
		fmt.Fprintln(w, "no snapshot history yet (kept from the next commit on)")
		return nil
	}
	_, live, _ := snapshot.Load(cachePath)
	p, _ := pipeline.ReadPin(cachePath)
	var prev *snapshot.Contents
	for _, e := range es {
		c, m, err := snapshot.Load(e.Path)
		if err != nil {
			fmt.Fprintf(w, "%6d  unreadable: %v\n", e.Serial, err)
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
		fmt.Fprintf(w, "%s%6d  %s  %6d users %5d groups  %s%s\n", mark, m.Serial, m.CreatedAt.Format(time.RFC3339), m.Users, m.Groups, change, note)
		prev = c
	}
	return nil
}

// Load loads the kept snapshot with this serial (0: the live one).
func Load(cachePath string, serial int64) (*snapshot.Contents, snapshot.Meta, error) {
	if serial == 0 {
		return snapshot.Load(cachePath)
	}
	p := snapshot.HistoryPath(cachePath, serial)
	if _, err := os.Stat(p); err != nil {
		return nil, snapshot.Meta{}, fmt.Errorf("serial %d is not in the history (syncd history lists it)", serial)
	}
	return snapshot.Load(p)
}

// Rolled is what a rollback did.
type Rolled struct {
	Target int64        // the kept serial it copied
	Serial int64        // the new live serial
	Diff   *commit.Diff // from the old live snapshot to the new
}

// Rollback makes the kept snapshot target (0: the newest one older than
// the live one) live again under a new serial and pins it. It refuses a
// target that is live, not kept, or no longer verifies through the C
// reader. An error after the commit (the pin could not be written) comes
// with the Rolled it made.
func Rollback(cfg *config.Config, target int64) (*Rolled, error) {
	_, live, err := snapshot.Load(cfg.CachePath)
	if err != nil {
		return nil, fmt.Errorf("no live snapshot to roll back: %w", err)
	}
	es, err := snapshot.History(cfg.CachePath)
	if err != nil {
		return nil, err
	}
	if target == 0 {
		for _, e := range es {
			if e.Serial < live.Serial {
				target = e.Serial
			}
		}
		if target == 0 {
			return nil, errors.New("no kept snapshot older than the live one (syncd history)")
		}
	}
	if target == live.Serial {
		return nil, fmt.Errorf("serial %d is the live snapshot", target)
	}
	path := snapshot.HistoryPath(cfg.CachePath, target)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("serial %d is not in the history (syncd history lists what is kept)", target)
	}
	// Refused unless it still verifies through the C reader.
	if _, err := snapshot.VerifyFile(path); err != nil {
		return nil, fmt.Errorf("refusing to roll back to serial %d: %w", target, err)
	}
	c, _, err := snapshot.Load(path)
	if err != nil {
		return nil, fmt.Errorf("refusing to roll back to serial %d: %w", target, err)
	}
	cur, _, _ := snapshot.Load(cfg.CachePath)
	d := commit.Compute(cur, c)
	unlock, err := pipeline.LockCache(cfg.CachePath)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := snapshot.Write(cfg.CachePath, c)
	if err != nil {
		return nil, err
	}
	if rec, err := explain.Read(strings.TrimSuffix(path, ".db") + ".explain"); err == nil {
		rec.Serial = m.Serial
		explain.Write(explain.Path(cfg.CachePath), rec)
	}
	r := &Rolled{Target: target, Serial: m.Serial, Diff: d}
	pinPath := pipeline.PinPath(cfg.CachePath)
	b, _ := json.Marshal(pipeline.Pin{Serial: m.Serial, RolledBackTo: target, At: time.Now().UTC().Truncate(time.Second)})
	if err := os.WriteFile(pinPath, append(b, '\n'), 0o644); err != nil {
		return r, fmt.Errorf("rolled back, but cannot write the pin %s: %w (the next poll may replace it)", pinPath, err)
	}
	return r, nil
}

// Resume removes the pin of the snapshot at cachePath and returns it
// (nil: it was not pinned).
func Resume(cachePath string) (*pipeline.Pin, error) {
	p, err := pipeline.ReadPin(cachePath)
	if err != nil || p == nil {
		return nil, err
	}
	if err := os.Remove(pipeline.PinPath(cachePath)); err != nil {
		return nil, err
	}
	return p, nil
}
