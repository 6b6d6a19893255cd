// Package logging is syncd's logger: logrus at the configured level,
// logfmt with a full timestamp, or under journald (JOURNAL_STREAM names
// the stream) no timestamp of its own and each line prefixed with its
// syslog priority, so that errors are errors in journalctl -p.
// Credentials never reach its output (syncd/redact's hook on every
// logger it makes).
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/redact"
)

// New is logrus at the configured level, writing to w. Credentials never reach
// its output: the client keeps them, URLs and errors carry none, and a
// hook scrubs every entry of any credential a server echoed
// (syncd/redact).
func New(cfg *config.Config, w io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(w)
	if f, ok := w.(*os.File); ok && underJournal(f) {
		// journald stamps each line itself and reads a "<N>" prefix as
		// the priority (sd-daemon(3)): no second timestamp, and errors
		// are errors in journalctl -p.
		l.SetFormatter(&journalFormatter{logrus.TextFormatter{DisableTimestamp: true, DisableColors: true}})
	} else {
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	}
	lvl, err := logrus.ParseLevel(strings.ToLower(cfg.LogLevel))
	if err != nil {
		lvl = logrus.InfoLevel
	}
	l.SetLevel(lvl)
	redact.Install(l)
	return l
}

// underJournal reports whether f is the stream systemd connected to the
// journal: JOURNAL_STREAM names its device and inode (systemd.exec(5)).
func underJournal(f *os.File) bool {
	v := os.Getenv("JOURNAL_STREAM")
	if v == "" {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return v == fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// journalFormatter is logfmt without a timestamp, each line prefixed
// with its syslog priority.
type journalFormatter struct{ logrus.TextFormatter }

func (j *journalFormatter) Format(e *logrus.Entry) ([]byte, error) {
	b, err := j.TextFormatter.Format(e)
	if err != nil {
		return nil, err
	}
	return append([]byte(fmt.Sprintf("<%d>", journalPriority(e.Level))), b...), nil
}

func journalPriority(l logrus.Level) int {
	switch l {
	case logrus.PanicLevel, logrus.FatalLevel:
		return 2 // crit
	case logrus.ErrorLevel:
		return 3
	case logrus.WarnLevel:
		return 4
	case logrus.InfoLevel:
		return 6
	}
	return 7
}
