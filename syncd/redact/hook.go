package redact

import (
	"fmt"

	"github.com/sirupsen/logrus"
)

// Hook scrubs every log entry's message and fields before it is written.
type Hook struct{}

// Levels is every level.
func (Hook) Levels() []logrus.Level { return logrus.AllLevels }

// Fire scrubs the entry in place. Fields that are not strings (errors,
// URLs, Stringers) become their scrubbed text when it differs.
func (Hook) Fire(e *logrus.Entry) error {
	e.Message = String(e.Message)
	for k, v := range e.Data {
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			continue
		}
		if c := String(s); c != s {
			e.Data[k] = c
		}
	}
	return nil
}

// Install adds Hook to the logger behind l (a *logrus.Logger or an
// *logrus.Entry of one) unless it is there already. Other FieldLoggers
// are left alone: their owner scrubs.
func Install(l logrus.FieldLogger) {
	var lg *logrus.Logger
	switch x := l.(type) {
	case *logrus.Logger:
		lg = x
	case *logrus.Entry:
		lg = x.Logger
	}
	if lg == nil {
		return
	}
	lg.ReplaceHooks(withHook(lg.Hooks))
}

func withHook(h logrus.LevelHooks) logrus.LevelHooks {
	out := make(logrus.LevelHooks, len(h))
	for lvl, hs := range h {
		out[lvl] = append([]logrus.Hook(nil), hs...)
	}
	for _, lvl := range logrus.AllLevels {
		found := false
		for _, x := range out[lvl] {
			if _, ok := x.(Hook); ok {
				found = true
			}
		}
		if !found {
			out[lvl] = append(out[lvl], Hook{})
		}
	}
	return out
}
