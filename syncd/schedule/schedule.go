package schedule

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
)

// Task runs beside the polling loop for the daemon's life.
type Task func(ctx context.Context, cfgPath string, cfg *config.Config, log *logrus.Logger)

// Every is a pass's loop on its own schedule. Each turn it re-reads the
// config file (a broken one is logged and the last one kept); schedule
// says whether the pass is enabled and its interval (a Go duration; "" or
// bad: poll_interval). The pass runs when the snapshot exists and no pass
// began (after a commit) less than an interval ago (last, unix
// nanoseconds). It returns when ctx ends.
func Every(ctx context.Context, name, cfgPath string, cfg *config.Config, log *logrus.Logger, last *atomic.Int64,
	schedule func(*config.Config) (enabled bool, interval string), pass func(*config.Config)) {
	Watching(ctx, name, cfgPath, cfg, log, last, schedule, pass, nil)
}

// watchEvery is how often Watching asks whether its input changed (the
// homes pass: a new live snapshot); a variable for the tests only.
var watchEvery = 5 * time.Second

// Watching is Every for a pass that also runs, between its intervals, as
// soon as changed says its input changed (asked every 5 s with the
// config of the last turn; a pass that must follow every new snapshot on
// a node, where no commit step starts it). The config is re-read only on
// the turns that may run the pass.
func Watching(ctx context.Context, name, cfgPath string, cfg *config.Config, log *logrus.Logger, last *atomic.Int64,
	schedule func(*config.Config) (enabled bool, interval string), pass func(*config.Config), changed func(*config.Config) bool) {
	wait := cfg.PollInterval
	for first := true; ; first = false {
		due := time.Since(time.Unix(0, last.Load())) >= wait
		if first || due || (changed != nil && changed(cfg)) {
			wait = cfg.PollInterval
			if c, err := config.Load(cfgPath); err != nil {
				log.WithError(err).Error(name + ": own schedule: cannot read the configuration; keeping the last one")
			} else {
				cfg = c
			}
			if on, interval := schedule(cfg); on {
				if d, err := time.ParseDuration(interval); err == nil && d > 0 {
					wait = d
				}
				due = time.Since(time.Unix(0, last.Load())) >= wait
				if due || (changed != nil && changed(cfg)) {
					if _, err := os.Stat(cfg.CachePath); err == nil {
						pass(cfg)
					}
				}
			}
			if wait < time.Second {
				wait = time.Minute
			}
		}
		sleep := wait
		if changed != nil {
			sleep = min(wait, watchEvery)
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
