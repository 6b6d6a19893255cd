package snapshot

// History: the last HistoryKeep snapshots, kept by the install seam (a
// head's commit and a mirror's download alike) as hard links in
// <live>.history/<serial>.db, so they cost no space while they are live
// and one file each afterwards. `syncd history`, `syncd diff` and
// `syncd rollback` read them. A rollback re-commits an old snapshot's
// contents under a new serial (serials only grow: mirrors and the
// history depend on it) and pins it (see syncd/rollback.go).

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// HistoryKeep is how many snapshots the history keeps (0: none).
var HistoryKeep = 10

// HistoryMaxBytes bounds the disk the history takes beyond the live file
// (0: no bound): past it, the oldest entries go even within HistoryKeep.
// Every entry but the live one is a whole file (a node's download or a
// head's in-place copy on a file system without reflink): 10 of them at
// 100,000 users were 800 MB; the default keeps about three at that size
// and all ten at 20,000 users. The live file's own entry costs nothing
// and is never dropped.
var HistoryMaxBytes int64 = 256 << 20

// HistoryDir is the history directory of a live snapshot path.
func HistoryDir(live string) string { return live + ".history" }

// HistoryPath is the history file of one serial.
func HistoryPath(live string, serial int64) string {
	return filepath.Join(HistoryDir(live), fmt.Sprintf("%012d.db", serial))
}

// Entry is one snapshot in the history.
type Entry struct {
	Serial int64
	Path   string
}

// History lists the kept snapshots, oldest first.
func History(live string) ([]Entry, error) {
	des, err := os.ReadDir(HistoryDir(live))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, de := range des {
		n, ok := strings.CutSuffix(de.Name(), ".db")
		if !ok {
			continue
		}
		s, err := strconv.ParseInt(n, 10, 64)
		if err != nil || s < 1 {
			continue
		}
		out = append(out, Entry{Serial: s, Path: filepath.Join(HistoryDir(live), de.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Serial < out[j].Serial })
	return out, nil
}

// keepHistory links the just-installed live file into the history and
// drops the oldest entries past HistoryKeep. Failures are not the
// install's: the snapshot is live; the history is a convenience.
func keepHistory(live string) error {
	if HistoryKeep <= 0 {
		return nil
	}
	serial, err := readSerial(live)
	if err != nil {
		return err
	}
	dir := HistoryDir(live)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := LinkAs(live, HistoryPath(live, serial)); err != nil {
		return err
	}
	es, err := History(live)
	if err != nil {
		return err
	}
	drop := func() {
		os.Remove(es[0].Path)
		os.Remove(strings.TrimSuffix(es[0].Path, ".db") + ".explain")
		es = es[1:]
	}
	for len(es) > HistoryKeep {
		drop()
	}
	for HistoryMaxBytes > 0 && len(es) > 1 && historyBytes(live, es) > HistoryMaxBytes {
		drop()
	}
	return nil
}

// historyBytes is the disk the history entries take beyond the live file.
func historyBytes(live string, es []Entry) int64 {
	lfi, _ := os.Stat(live)
	var n int64
	for _, e := range es {
		fi, err := os.Stat(e.Path)
		if err != nil || lfi != nil && os.SameFile(fi, lfi) {
			continue
		}
		n += fi.Size()
	}
	return n
}

// readSerial reads meta serial of a snapshot file.
func readSerial(path string) (int64, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'serial'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("snapshot: serial of %s: %w", path, err)
	}
	return strconv.ParseInt(v, 10, 64)
}

// MaxHistorySerial is the largest serial in the history (0: none).
func MaxHistorySerial(live string) int64 {
	es, _ := History(live)
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Serial
}
