package snapshot

// History: the last HistoryKeep snapshots, kept by the install seam (a
// head's commit and a mirror's download alike) in <live>.history. The
// live snapshot's entry is a hard link, <serial>.db, so it costs no space
// while it is live. Older entries are one of two kinds:
//   - a whole file, <serial>.db (the hard link that stayed when the next
//     snapshot was installed): every head entry, a node's entries before
//     a full download or written before reverse deltas;
//   - a reverse delta, <serial>.rdelta (reverse.go): on a node, when a
//     page delta replaces the live file, the old bytes of the pages the
//     delta changes, so that the previous live file's inode has no other
//     name and becomes the spare the next delta is written into
//     (syncd/mirror/spare.go) instead of a copy of the live file.
// `syncd history`, `syncd diff` and `syncd rollback` read them through
// HistoryFile / EachHistory, which rebuild a reverse-delta entry from the
// next newer entry. A rollback re-commits an old snapshot's contents
// under a new serial (serials only grow: mirrors and the history depend
// on it) and pins it (see syncd/rollback.go).

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
	"time"
)

// HistoryKeep is how many snapshots the history keeps (0: none).
var HistoryKeep = 10

// HistoryMaxBytes bounds the disk the history takes beyond the live file
// (0: no bound): past it, the oldest entries go even within HistoryKeep.
// A whole-file entry (a head's in-place copy on a file system without
// reflink, a node's full download) costs the file: 10 of them at 100,000
// users were 800 MB; the default keeps about three at that size and all
// ten at 20,000 users. A node's reverse deltas cost the pages a delta
// changed: about 29 KB for a one-change delta at 100,000 users (an 85 MB
// snapshot), so ten entries about 0.3 MB (syncd/mirror/doc.go). The live
// file's own entry costs nothing and is never dropped.
var HistoryMaxBytes int64 = 256 << 20

// HistoryDir is the history directory of a live snapshot path.
func HistoryDir(live string) string { return live + ".history" }

// HistoryPath is the whole-file history entry of one serial (an entry
// may instead be a reverse delta, ReversePath: HistoryFile reads both).
func HistoryPath(live string, serial int64) string {
	return filepath.Join(HistoryDir(live), fmt.Sprintf("%012d.db", serial))
}

// ReversePath is the reverse-delta history entry of one serial.
func ReversePath(live string, serial int64) string {
	return filepath.Join(HistoryDir(live), fmt.Sprintf("%012d.rdelta", serial))
}

// HistoryExplainPath is the explain record kept beside one serial's entry.
func HistoryExplainPath(live string, serial int64) string {
	return filepath.Join(HistoryDir(live), fmt.Sprintf("%012d.explain", serial))
}

// Entry is one snapshot in the history.
type Entry struct {
	Serial  int64
	Path    string // the entry's file: a snapshot, or a reverse delta
	Reverse bool   // Path is a reverse delta (read it through HistoryFile)
}

// ErrNotKept: the serial is not in the history.
var ErrNotKept = errors.New("not in the history")

// History lists the kept snapshots, oldest first. A serial with both a
// whole file and a reverse delta (a crash between writing the one and
// removing the other) is listed as the whole file.
func History(live string) ([]Entry, error) {
	es, _, err := historyList(live)
	return es, err
}

// historyList is History and the reverse deltas it passed over because
// a whole file of the same serial is kept.
func historyList(live string) ([]Entry, []string, error) {
	des, err := os.ReadDir(HistoryDir(live))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	bySerial := map[int64]Entry{}
	var shadowed []string
	for _, de := range des {
		n, rev := strings.CutSuffix(de.Name(), ".rdelta")
		if !rev {
			var ok bool
			if n, ok = strings.CutSuffix(de.Name(), ".db"); !ok {
				continue
			}
		}
		s, err := strconv.ParseInt(n, 10, 64)
		if err != nil || s < 1 {
			continue
		}
		e := Entry{Serial: s, Path: filepath.Join(HistoryDir(live), de.Name()), Reverse: rev}
		if old, ok := bySerial[s]; ok {
			if rev {
				shadowed = append(shadowed, e.Path)
				continue
			}
			shadowed = append(shadowed, old.Path)
		}
		bySerial[s] = e
	}
	out := make([]Entry, 0, len(bySerial))
	for _, e := range bySerial {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Serial < out[j].Serial })
	return out, shadowed, nil
}

// keepHistory links the just-installed live file into the history, makes
// the entry of serial reversed (0: none) the reverse delta writeReverse
// wrote for it (its whole-file link removed), and drops the oldest
// entries past HistoryKeep and HistoryMaxBytes. Failures are not the
// install's: the snapshot is live; the history is a convenience.
func keepHistory(live string, reversed int64) error {
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
	if reversed > 0 && reversed != serial {
		// The reverse delta is durable (writeReverse); its base, the
		// live file, is now kept: the whole file's link may go. A crash
		// before this leaves both; the whole file is then kept and the
		// reverse delta dropped below.
		os.Remove(HistoryPath(live, reversed))
	}
	es, shadowed, err := historyList(live)
	if err != nil {
		return err
	}
	for _, p := range shadowed {
		os.Remove(p)
	}
	cleanHistoryTemps(dir)
	drop := func() {
		os.Remove(HistoryPath(live, es[0].Serial))
		os.Remove(ReversePath(live, es[0].Serial))
		os.Remove(HistoryExplainPath(live, es[0].Serial))
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

// cleanHistoryTemps removes what a crash may leave in the history
// directory: a reverse delta's temp file, and rebuilt snapshots
// (HistoryFile) an hour old, whose reader is gone.
func cleanHistoryTemps(dir string) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, ".") && strings.Contains(name, ".rdelta.new-"):
			// atomicfile.Write's temp name for a reverse delta.
			os.Remove(filepath.Join(dir, name))
		case strings.HasPrefix(name, rebuiltPrefix):
			if fi, err := de.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
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
