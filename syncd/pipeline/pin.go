package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// Pin is the file that holds syncd to a rolled-back snapshot
// (`syncd rollback` writes it, `syncd resume` removes it).
type Pin struct {
	Serial       int64     `json:"serial"`         // the live serial the rollback made
	RolledBackTo int64     `json:"rolled_back_to"` // the kept serial it copies
	At           time.Time `json:"at"`
}

// PinPath is where the pin of the snapshot at cachePath lives.
func PinPath(cachePath string) string { return cachePath + ".pin" }

// ReadPin is the pin, nil when the snapshot is not pinned.
func ReadPin(cachePath string) (*Pin, error) {
	b, err := os.ReadFile(PinPath(cachePath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p Pin
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", PinPath(cachePath), err)
	}
	return &p, nil
}

// ApplyHistory sets how many snapshots the install seam keeps.
// A head that publishes takes clock-based serials (syncd/snapshot/serial.go).
func ApplyHistory(cfg *config.Config) {
	snapshot.ClockSerials = cfg.HasPublish()
	snapshot.HistoryKeep = max(cfg.HistoryKeep, 0) // 0: none (history_keep = 0 was taken as the default before)
	snapshot.HistoryMaxBytes = int64(cfg.HistoryMaxMB) << 20
}
