package commit

import (
	"encoding/json"
	"fmt"
	"github.com/scimbridge/scimbridge/syncd/atomicfile"
	"os"
	"path/filepath"
	"time"

	"github.com/scimbridge/scimbridge/syncd/redact"
)

// Outcomes of one sync attempt.
const (
	Committed = "committed" // a new snapshot is live
	Unchanged = "unchanged" // nothing changed; the live snapshot stays
	DryRun    = "dry-run"   // computed and printed, nothing written
	Refused   = "refused"   // the policy kept the live snapshot
	HeldBack  = "held"      // applied, but the guard held back deletions
	Failed    = "failed"    // fetch, validation or write failed
	// Stale: a mirror node found nothing newer, and the newest valid
	// signature from its head is older than stale_after (syncd/mirror).
	Stale = "stale"
)

// Status is the last sync's outcome, for `syncd status`, monitoring and
// people on the cluster. It is world-readable: it holds no secret, only
// the source's name (a URL without credentials) and error texts, which
// never contain credentials either (WriteStatus scrubs them again).
type Status struct {
	Version     string    `json:"version"`
	Source      string    `json:"source"`
	CachePath   string    `json:"cache_path"`
	LastAttempt time.Time `json:"last_attempt"`
	LastResult  string    `json:"last_result"`
	// LastSuccess is the last attempt that fetched and validated a whole
	// directory (committed or unchanged).
	LastSuccess time.Time `json:"last_success,omitzero"`
	LastCommit  time.Time `json:"last_commit,omitzero"`
	// LastSourceContact is the time of the last successful contact with
	// the source (a full read or a change check, changed or not): the
	// live snapshot's mtime is set to it, and gates measure staleness
	// from that mtime.
	LastSourceContact time.Time `json:"last_source_contact,omitzero"`
	// Held says what the removal guard held back (and membership losses
	// it let through with a warning) on the last attempt.
	Held       string `json:"held,omitempty"`
	HeldUsers  int    `json:"held_users,omitempty"`
	HeldGroups int    `json:"held_groups,omitempty"`
	LastError  string `json:"last_error,omitempty"`
	// ConsecutiveFailures counts failed or refused attempts in a row.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// AfterCommitError is the last after-commit step's failure (the
	// Slurm reconcile); the snapshot itself was committed.
	AfterCommitError string `json:"after_commit_error,omitempty"`

	// Mirror nodes (syncd/mirror, fresh.go): the serial of the last
	// manifest accepted from the head, the newest valid signature's time
	// (the head's clock), when this node first verified it (its own
	// clock: the signature age is now minus this) and the bound past
	// which the node is stale.
	HeadSerial        int64     `json:"head_serial,omitempty"`
	HeadSigned        time.Time `json:"head_signed,omitzero"`
	SignatureSeen     time.Time `json:"signature_seen,omitzero"`
	StaleAfterSeconds int64     `json:"stale_after_seconds,omitempty"`
	// LocalConflicts: SCIM users a mirror node's own /etc/passwd or
	// /etc/group claims (syncd/mirror/local.go), one sentence each.
	LocalConflicts []string `json:"local_conflicts,omitempty"`

	Serial         int64          `json:"serial"`
	Users          int            `json:"users"`
	Groups         int            `json:"groups"`
	Filtered       int            `json:"filtered"`
	Rejected       int            `json:"rejected"`
	RejectedReason map[string]int `json:"rejected_by_reason,omitempty"`
	// RejectedRecords are whole users and groups left out; the rest of
	// Rejected are values dropped from published records (a GECOS, an
	// SSH key). DroppedMembers are member references to users not
	// published (deleted or rejected).
	RejectedRecords int     `json:"rejected_records"`
	DroppedMembers  int     `json:"dropped_members"`
	Added           int     `json:"added"`
	Changed         int     `json:"changed"`
	Removed         int     `json:"removed"`
	FetchSeconds    float64 `json:"fetch_seconds"`
	Full            bool    `json:"full_fetch"`
}

// ReadStatus reads a status file.
func ReadStatus(path string) (*Status, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("status: %s: %w", path, err)
	}
	return &s, nil
}

// WriteStatus replaces the status file atomically, mode 0644. Its texts
// are scrubbed of credentials (syncd/redact) whatever put them there.
func WriteStatus(path string, s *Status) error {
	c := *s
	c.Source, c.LastError, c.AfterCommitError = redact.String(c.Source), redact.String(c.LastError), redact.String(c.AfterCommitError)
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return nil
}
