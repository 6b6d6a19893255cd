// Package status is what `syncd status` shows of a host, for any user:
// the status file the last sync or mirror poll wrote (commit.Status),
// the snapshot's meta and freshness, a pinned rollback, and on a mirror
// node the age of the newest signature from its head.
//
// Decisions:
//
//   - Freshness is judged at the time of asking, not read from the
//     status file: a stopped syncd ages too, and its node goes stale.
//   - The snapshot's freshness is its file's mtime, the value every gate
//     compares with max_age, so status shows what the gates see.
//   - Package main keeps the flags, the config lookup (the config is
//     root-only: without it the default status file is read) and the
//     exit codes (issue 18, item 6); the other passes' lines come from
//     their packages (publish.PrintPublished, kube.PrintStatus,
//     homes.PrintStatus).
package status

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// MirrorHead is the head a mirror node follows ("" on a head).
func MirrorHead(st *commit.Status) string {
	if st == nil {
		return ""
	}
	if h, ok := strings.CutPrefix(st.Source, "mirror "); ok {
		return h
	}
	return ""
}

// MirrorFreshness is a mirror node's signature age, judged now (the
// status file may be old: a stopped syncd ages too); nil on a head.
func MirrorFreshness(st *commit.Status, now time.Time) map[string]any {
	h := MirrorHead(st)
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

// MetaJSON is the snapshot part of `syncd status --json`.
func MetaJSON(path string, m snapshot.Meta, err error) map[string]any {
	if err != nil {
		return map[string]any{"path": path, "error": err.Error()}
	}
	return map[string]any{"path": path, "serial": m.Serial, "created_at": m.CreatedAt, "source": m.Source,
		"users": m.Users, "groups": m.Groups, "memberships": m.Memberships, "ssh_keys": m.SSHKeys,
		"associations": m.Associations, "slurm_synced_at": m.SlurmSyncedAt}
}

// Print prints the status file st (read from statusPath; nil: none) and
// the snapshot at cachePath (its meta m, or merr) as `syncd status` does,
// judged at now.
func Print(w io.Writer, statusPath string, st *commit.Status, cachePath string, m snapshot.Meta, merr error, now time.Time) {
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
		if h := MirrorHead(st); h != "" {
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
	if p, err := pipeline.ReadPin(cachePath); err == nil && p != nil {
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
	if mf := MirrorFreshness(st, now); mf != nil {
		switch {
		case st.SignatureSeen.IsZero():
			fmt.Fprintf(w, "signature:      no valid signature from the head %s yet\n", MirrorHead(st))
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
