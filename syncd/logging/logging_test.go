package logging

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/config"
)

// Under journald (JOURNAL_STREAM names the stream), no timestamp of our
// own and a priority prefix per line; elsewhere a full timestamp.
func TestJournalLogging(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	syscall.Fstat(int(f.Fd()), &st)
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	l := New(&config.Config{LogLevel: "info"}, f)
	l.Error("boom")
	l.Warn("careful")
	l.Info("fine")
	b, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "<3>") || !strings.HasPrefix(lines[1], "<4>") || !strings.HasPrefix(lines[2], "<6>") || strings.Contains(string(b), "time=") {
		t.Errorf("journal lines:\n%s", b)
	}
	t.Setenv("JOURNAL_STREAM", "1:2")
	f.Truncate(0)
	f.Seek(0, 0)
	l = New(&config.Config{LogLevel: "info"}, f)
	l.Info("fine")
	b, _ = os.ReadFile(p)
	if !strings.HasPrefix(string(b), "time=") {
		t.Errorf("not under the journal: %s", b)
	}
}
