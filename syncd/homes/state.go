package homes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/scimbridge/scimbridge/syncd/atomicfile"
)

// State is the pass's ledger (state_file, homes-state.json beside the
// snapshot): the homes it made or adopted (so a removed user's home is
// known after the user left the snapshot), the limits it applied, and
// the refusals already logged.
type State struct {
	Homes    map[string]*HomeRecord  `json:"homes"`
	Quotas   map[string]AppliedLimit `json:"quotas"`
	Refused  map[string]string       `json:"refused,omitempty"`
	Creating map[string]uint32       `json:"creating,omitempty"` // path -> uid, between mkdir and chown
	Samples  []Sample                `json:"samples,omitempty"`
}

// HomeRecord is one user's home as the pass knows it.
type HomeRecord struct {
	UID          uint32     `json:"uid"`
	GID          uint32     `json:"gid"`
	Path         string     `json:"path"`
	Root         string     `json:"root"`
	CreatedAt    *time.Time `json:"created_at,omitempty"`
	MissingSince *time.Time `json:"missing_since,omitempty"`
	ArchivedTo   string     `json:"archived_to,omitempty"`
}

// AppliedLimit is the last limit Set on a target, and on which path.
type AppliedLimit struct {
	Path string `json:"path"`
	Limit
	At time.Time `json:"at"`
}

// Sample is one hourly record of a team's (or user's) use, for the usage
// report.
type Sample struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	Name string    `json:"name"`
	Used uint64    `json:"used"`
	Soft uint64    `json:"soft"`
	Hard uint64    `json:"hard"`
}

// MaxSamples bounds the samples kept (about 90 days of 50 teams hourly).
const MaxSamples = 120000

// LoadState reads p; a missing file is an empty state.
func LoadState(p string) (*State, error) {
	st := &State{}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		b = []byte("{}")
	} else if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("homes: state file %s: %w (move it aside to start afresh: homes already made are adopted again)", p, err)
	}
	if st.Homes == nil {
		st.Homes = map[string]*HomeRecord{}
	}
	if st.Quotas == nil {
		st.Quotas = map[string]AppliedLimit{}
	}
	if st.Refused == nil {
		st.Refused = map[string]string{}
	}
	if st.Creating == nil {
		st.Creating = map[string]uint32{}
	}
	return st, nil
}

// Save writes st to p atomically (root-only: it names every user's home).
func (st *State) Save(p string) error {
	if n := len(st.Samples); n > MaxSamples {
		st.Samples = append([]Sample(nil), st.Samples[n-MaxSamples:]...)
	}
	return writeJSON(p, st, 0o600)
}

var writeJSON = atomicfile.WriteJSON

// StatusView is the status file a pass leaves (StatusFile, world-readable:
// `syncd status` and mylimits read it as any user). It holds counts,
// the last actions and each target's use against its limits.
type StatusView struct {
	At      time.Time         `json:"at"`
	Driver  string            `json:"driver,omitempty"`
	Homes   int               `json:"homes"`
	Teams   int               `json:"projects"`
	Refused int               `json:"refused"`
	Errors  int               `json:"errors"`
	Changed int               `json:"changed"`
	Actions []Action          `json:"actions,omitempty"`
	Targets []TargetUsage     `json:"targets,omitempty"`
	Extra   map[string]string `json:"extra,omitempty"`
}

// TargetUsage is one home or project with its use as the driver read it.
type TargetUsage struct {
	Target
	Usage *Usage `json:"usage,omitempty"`
}

// WriteStatus records res in cfg's status file (mode 0644).
func WriteStatus(cfg Config, res *Result) error {
	v := StatusView{At: res.At, Driver: res.Driver, Homes: res.Homes, Teams: res.Teams, Refused: res.Refused,
		Errors: res.Errors, Changed: res.Changed(), Actions: res.Actions, Targets: targetsOf(res)}
	return writeJSON(cfg.StatusFile(), v, 0o644)
}

func targetsOf(res *Result) []TargetUsage {
	var out []TargetUsage
	for _, t := range res.Targets {
		tu := TargetUsage{Target: t}
		if u, ok := res.Usage[t.Key()]; ok {
			tu.Usage = &u
		}
		out = append(out, tu)
	}
	return out
}

// SharedUsageFile is the copy of a pass's storage use left at the top of
// every root it manages (WriteShared), for mylimits on the nodes that
// mount that storage but neither run the pass nor have its status file.
const SharedUsageFile = ".scimbridge-usage.json"

// WriteShared leaves res's use and limits (no actions, no refusals) in
// SharedUsageFile at the top of each root holding a target, root's, mode
// 0644: on shared storage every node that mounts it reads the figures the
// storage's own tools gave, with their time. Nothing is written when the
// driver reads no use (the command driver), nor in a plan. The roots
// were opened this pass and are root's and not writable by others
// (fs.go), so the path cannot lead elsewhere.
func WriteShared(cfg Config, res *Result) error {
	if res.DryRun || len(res.Usage) == 0 {
		return nil
	}
	v := StatusView{At: res.At, Driver: res.Driver, Homes: res.Homes, Teams: res.Teams, Targets: targetsOf(res)}
	roots := map[string]bool{}
	for _, t := range res.Targets {
		roots[t.Root] = true
	}
	var errs []error
	for r := range roots {
		if err := writeJSON(path.Join(r, SharedUsageFile), v, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("homes: leaving the storage use for the nodes in %s: %w", r, err))
		}
	}
	return errors.Join(errs...)
}

// ReadStatus reads a status file written by WriteStatus.
func ReadStatus(p string) (*StatusView, error) {
	var v StatusView
	if err := atomicfile.ReadJSON(p, &v); err != nil {
		return nil, err
	}
	return &v, nil
}
