package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/kube"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/status"
)

func init() {
	commands["status"] = command{
		Summary: "last attempt, last success, snapshot age and serial, counts, last error (any user)",
		Run:     runStatus,
	}
}

// runStatus works for any user: the config is root-only, so without it
// the status file's default path is used, and the status file names the
// snapshot.
func runStatus(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("status", &cfgPath)
	statusPath := fs.String("status-file", "", "status file (default: from the config, else "+config.DefaultStatusPath+")")
	asJSON := fs.Bool("json", false, "print the status file and snapshot meta as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cachePath := ""
	var cfg *config.Config
	if *statusPath == "" {
		*statusPath = config.DefaultStatusPath
		if c, err := config.Parse(cfgPath); err == nil {
			cfg = c
			*statusPath, cachePath = cfg.StatusPath, cfg.CachePath
		}
	}
	st, err := commit.ReadStatus(*statusPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if st != nil && st.CachePath != "" {
		cachePath = st.CachePath
	}
	if cachePath == "" {
		cachePath = config.DefaultCachePath
	}
	_, meta, merr := snapshot.Load(cachePath)
	now := time.Now()
	if *asJSON {
		mj := status.MetaJSON(cachePath, meta, merr)
		if fresh, err := snapshot.Freshness(cachePath); err == nil {
			mj["source_contact"] = fresh.UTC()
			mj["staleness_seconds"] = int64(now.Sub(fresh).Seconds())
		}
		out := map[string]any{"status": st, "snapshot": mj}
		if mf := status.MirrorFreshness(st, now); mf != nil {
			out["mirror"] = mf
		}
		if m := publish.Published(cfg); m != nil {
			out["published"] = m // a head with [publish] (syncd/publish)
		}
		if v, err := homes.ReadStatus(homes.StatusPathFor(cfgPath, cachePath)); err == nil {
			out["homes"] = v // the homes pass on this host (syncd/homes)
		}
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	status.Print(os.Stdout, *statusPath, st, cachePath, meta, merr, now)
	publish.PrintPublished(os.Stdout, cfg, now)
	kube.PrintStatus(os.Stdout, cfg, now)
	homes.PrintStatus(os.Stdout, homes.StatusPathFor(cfgPath, cachePath), now)
	if st == nil {
		return fmt.Errorf("no status file at %s: syncd has not run yet", *statusPath)
	}
	if st.LastResult == commit.Failed || st.LastResult == commit.Refused || st.LastResult == commit.HeldBack || st.LastResult == commit.Stale {
		return exitError{1, fmt.Errorf("last sync %s", st.LastResult)}
	}
	if len(st.LocalConflicts) > 0 {
		return exitError{1, fmt.Errorf("%d SCIM user(s) clash with this node's own accounts (local conflict lines above)", len(st.LocalConflicts))}
	}
	if mf := status.MirrorFreshness(st, now); mf != nil && mf["stale"] == true {
		return exitError{1, fmt.Errorf("stale: the newest signature from the head is %ds old, more than stale_after %ds",
			mf["signature_age_seconds"], st.StaleAfterSeconds)}
	}
	return nil
}
