package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
// marked *, a pinned rollback is named. An entry kept as a reverse delta
// (a node's, snapshot/reverse.go) is rebuilt from the next newer one: the
// entries are read newest first, two at a time, and printed in order.
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
	type line struct {
		head, change, note string
		c                  *snapshot.Contents // until the older entry is read
	}
	var lines []*line // newest first
	err = snapshot.EachHistory(cachePath, func(e snapshot.Entry, path string, err error) error {
		var c *snapshot.Contents
		var m snapshot.Meta
		if err == nil {
			c, m, err = snapshot.Load(path)
		}
		if len(lines) > 0 {
			// The newer entry's change is from this one.
			if newer := lines[len(lines)-1]; newer.c != nil {
				newer.change = "first kept"
				if c != nil {
					newer.change = commit.Compute(c, newer.c).Summary()
				}
				newer.c = nil
			}
		}
		if err != nil {
			lines = append(lines, &line{head: fmt.Sprintf("%6d  unreadable: %v", e.Serial, err)})
			return nil
		}
		mark := " "
		if m.Serial == live.Serial {
			mark = "*"
		}
		note := ""
		if p != nil && p.Serial == m.Serial {
			note = fmt.Sprintf(" [rollback to %d, pinned]", p.RolledBackTo)
		}
		lines = append(lines, &line{c: c, change: "first kept", note: note,
			head: fmt.Sprintf("%s%6d  %s  %6d users %5d groups  ", mark, m.Serial, m.CreatedAt.Format(time.RFC3339), m.Users, m.Groups)})
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		fmt.Fprintln(w, l.head+l.change+l.note)
	}
	return nil
}

// Load loads the kept snapshot with this serial (0: the live one).
func Load(cachePath string, serial int64) (*snapshot.Contents, snapshot.Meta, error) {
	if serial == 0 {
		return snapshot.Load(cachePath)
	}
	path, done, err := snapshot.HistoryFile(cachePath, serial)
	if errors.Is(err, snapshot.ErrNotKept) {
		return nil, snapshot.Meta{}, fmt.Errorf("serial %d is not in the history (syncd history lists it)", serial)
	}
	if err != nil {
		return nil, snapshot.Meta{}, err
	}
	defer done()
	return snapshot.Load(path)
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
	path, done, err := snapshot.HistoryFile(cfg.CachePath, target)
	if errors.Is(err, snapshot.ErrNotKept) {
		return nil, fmt.Errorf("serial %d is not in the history (syncd history lists what is kept)", target)
	}
	if err != nil {
		return nil, fmt.Errorf("refusing to roll back to serial %d: %w", target, err)
	}
	defer done()
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
	if rec, err := explain.Read(snapshot.HistoryExplainPath(cfg.CachePath, target)); err == nil {
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
