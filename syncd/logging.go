package main

import (
	"io"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/redact"
)

// newLogger is logrus at the configured level. Credentials never reach
// its output: the client keeps them, URLs and errors carry none, and a
// hook scrubs every entry of any credential a server echoed
// (syncd/redact).
func newLogger(cfg *config.Config, w io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(w)
	l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	lvl, err := logrus.ParseLevel(strings.ToLower(cfg.LogLevel))
	if err != nil {
		lvl = logrus.InfoLevel
	}
	l.SetLevel(lvl)
	redact.Install(l)
	return l
}
