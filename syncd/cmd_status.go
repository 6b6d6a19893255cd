package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/kube"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
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
		mj := metaJSON(cachePath, meta, merr)
		if fresh, err := snapshot.Freshness(cachePath); err == nil {
			mj["source_contact"] = fresh.UTC()
			mj["staleness_seconds"] = int64(now.Sub(fresh).Seconds())
		}
		out := map[string]any{"status": st, "snapshot": mj}
		if mf := mirrorFreshness(st, now); mf != nil {
			out["mirror"] = mf
		}
		if m := publish.Published(cfg); m != nil {
			out["published"] = m // a head with [publish] (cmd_cluster.go)
		}
		if v, err := homes.ReadStatus(homes.StatusPathFor(cfgPath, cachePath)); err == nil {
			out["homes"] = v // the homes pass on this host (cmd_homes.go)
		}
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	printStatus(os.Stdout, *statusPath, st, cachePath, meta, merr, now)
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
	if mf := mirrorFreshness(st, now); mf != nil && mf["stale"] == true {
		return exitError{1, fmt.Errorf("stale: the newest signature from the head is %ds old, more than stale_after %ds",
			mf["signature_age_seconds"], st.StaleAfterSeconds)}
	}
	return nil
}

// mirrorHead is the head a mirror node follows ("" on a head).
func mirrorHead(st *commit.Status) string {
	if st == nil {
		return ""
	}
	if h, ok := strings.CutPrefix(st.Source, "mirror "); ok {
		return h
	}
	return ""
}

// mirrorFreshness is a mirror node's signature age, judged now (the
// status file may be old: a stopped syncd ages too); nil on a head.
func mirrorFreshness(st *commit.Status, now time.Time) map[string]any {
	h := mirrorHead(st)
	if h == "" {
		return nil
	}
	out := map[string]any{"head": h, "head_serial": st.HeadSerial}
	if st.SignatureSeen.IsZero() {
		out["stale"] = st.StaleAfterSeconds > 0
		return out
	}
	age := int64(now.Sub(st.SignatureSeen).Seconds())
	out["head_signed"] = st.HeadSigned.UTC()
	out["signature_seen"] = st.SignatureSeen.UTC()
	out["signature_age_seconds"] = age
	out["stale_after_seconds"] = st.StaleAfterSeconds
	out["stale"] = st.StaleAfterSeconds > 0 && age > st.StaleAfterSeconds
	return out
}

func metaJSON(path string, m snapshot.Meta, err error) map[string]any {
	if err != nil {
		return map[string]any{"path": path, "error": err.Error()}
	}
	return map[string]any{"path": path, "serial": m.Serial, "created_at": m.CreatedAt, "source": m.Source,
		"users": m.Users, "groups": m.Groups, "memberships": m.Memberships, "ssh_keys": m.SSHKeys,
		"associations": m.Associations, "slurm_synced_at": m.SlurmSyncedAt}
}

func printStatus(w io.Writer, statusPath string, st *commit.Status, cachePath string, m snapshot.Meta, merr error, now time.Time) {
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return fmt.Sprintf("%s (%s ago)", t.Local().Format(time.RFC3339), now.Sub(t).Round(time.Second))
	}
	if merr != nil {
		fmt.Fprintf(w, "snapshot:       %s: unavailable: %v\n", cachePath, merr)
	} else {
		fmt.Fprintf(w, "snapshot:       %s serial %d, written %s\n", cachePath, m.Serial, ago(m.CreatedAt))
		fmt.Fprintf(w, "contents:       %d users, %d groups, %d memberships, %d ssh keys, %d slurm associations\n",
			m.Users, m.Groups, m.Memberships, m.SSHKeys, m.Associations)
		if h := mirrorHead(st); h != "" {
			fmt.Fprintf(w, "source:         mirror %s (head serial %d; the head's identity source: %s)\n", h, st.HeadSerial, m.Source)
		} else {
			fmt.Fprintf(w, "source:         %s\n", m.Source)
		}
		// Freshness is the file's mtime: what every gate reads.
		if fresh, err := snapshot.Freshness(cachePath); err == nil {
			fmt.Fprintf(w, "source contact: %s; staleness %s (what gates compare with max_age)\n",
				fresh.Local().Format(time.RFC3339), now.Sub(fresh).Round(time.Second))
		}
	}
	if p, err := readPin(cachePath); err == nil && p != nil {
		fmt.Fprintf(w, "pinned:         serial %d is a rollback to serial %d (%s): nothing is committed until `syncd resume`\n",
			p.Serial, p.RolledBackTo, ago(p.At))
	}
	if st == nil {
		fmt.Fprintf(w, "status:         no status file at %s\n", statusPath)
		return
	}
	fmt.Fprintf(w, "last attempt:   %s: %s\n", ago(st.LastAttempt), st.LastResult)
	fmt.Fprintf(w, "last success:   %s\n", ago(st.LastSuccess))
	fmt.Fprintf(w, "last commit:    %s\n", ago(st.LastCommit))
	fmt.Fprintf(w, "last contact:   %s\n", ago(st.LastSourceContact))
	if mf := mirrorFreshness(st, now); mf != nil {
		switch {
		case st.SignatureSeen.IsZero():
			fmt.Fprintf(w, "signature:      no valid signature from the head %s yet\n", mirrorHead(st))
		default:
			verdict := "fresh"
			if mf["stale"] == true {
				verdict = "STALE: the head is down or lost its source, or this node reads a frozen copy"
			}
			fmt.Fprintf(w, "signature:      newest from the head first verified %s, signed %s by its clock; stale after %s: %s\n",
				ago(st.SignatureSeen), st.HeadSigned.Local().Format(time.RFC3339), time.Duration(st.StaleAfterSeconds)*time.Second, verdict)
		}
	}
	if st.Held != "" {
		fmt.Fprintf(w, "guard:          %s\n", st.Held)
	}
	fmt.Fprintf(w, "last fetch:     %.2fs; %d records rejected, %d values dropped, %d member references dropped, %d not in posix_groups; diff +%d ~%d -%d users\n",
		st.FetchSeconds, st.RejectedRecords, st.Rejected-st.RejectedRecords, st.DroppedMembers, st.Filtered, st.Added, st.Changed, st.Removed)
	reasons := make([]string, 0, len(st.RejectedReason))
	for r := range st.RejectedReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "  rejected %-20s %d\n", r+":", st.RejectedReason[r])
	}
	if st.LastError != "" {
		fmt.Fprintf(w, "last error:     %s (%d attempt(s) in a row)\n", st.LastError, st.ConsecutiveFailures)
	}
	if st.AfterCommitError != "" {
		fmt.Fprintf(w, "after-commit:   %s\n", st.AfterCommitError)
	}
	for _, c := range st.LocalConflicts {
		fmt.Fprintf(w, "local conflict: %s\n", c)
	}
}
