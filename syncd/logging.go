package main

import (
	"io"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
)

// newLogger is logrus at the configured level. Credentials never reach
// it: the client keeps them, and URLs and errors carry none.
func newLogger(cfg *config.Config, w io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(w)
	l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	lvl, err := logrus.ParseLevel(strings.ToLower(cfg.LogLevel))
	if err != nil {
		lvl = logrus.InfoLevel
	}
	l.SetLevel(lvl)
	return l
}
