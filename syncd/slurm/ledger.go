package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Ledger records what scimbridge itself set in slurmdbd, so that a pass
// can tell its own work from an admin's:
//
//   - Accounts: the limits last applied to each managed account. A limit
//     that differs from the config and still equals the ledger is a config
//     change; one that differs from both was changed outside scimbridge
//     (drift).
//   - Blocks: the associations syncd blocked (MaxSubmitJobs=0) while a
//     removal waits for jobs. Only these are ever lifted; a block syncd
//     did not set is an admin's and is left alone.
//
// slurmdbd 22.05 has no free-text field on associations to keep this in,
// so it lives in a small JSON file beside the snapshot (state_file). Lost,
// it costs only precision: config changes read as "differs from the
// config" and syncd's own pending blocks read as an admin's (the plan says
// how to lift them).
type Ledger struct {
	Accounts map[string]map[string]string `json:"accounts,omitempty"`
	Blocks   []string                     `json:"blocks,omitempty"` // "user@account", sorted
	// HeldJobs: pending jobs syncd held because their user was disabled;
	// only these are released when the user is enabled again.
	HeldJobs []string `json:"held_jobs,omitempty"`
	// QOS: attributes last applied to each QOS scimbridge owns.
	QOS map[string]map[string]string `json:"qos,omitempty"`
	// Users: the DefaultAccount scimbridge last left each provisioned user
	// with. A user in it who is no longer a SCIM user was removed at the
	// source ("source:"), one never in it was added by hand ("drift:"); a
	// default that differs from it was changed outside scimbridge.
	Users map[string]string `json:"users,omitempty"`
	// AssocQOS: per account, the "QOS|DefaultQOS" its members'
	// associations last had as the config asked: a difference that still
	// equals it comes from the config ("config:"), else from outside.
	AssocQOS map[string]string `json:"assoc_qos,omitempty"`
}

func (l *Ledger) blocked(k AssocKey) bool {
	i := sort.SearchStrings(l.Blocks, k.String())
	return i < len(l.Blocks) && l.Blocks[i] == k.String()
}

// LoadLedger reads path; a missing file is an empty ledger.
func LoadLedger(path string) (*Ledger, error) {
	l := &Ledger{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: state_file: %w", err)
	}
	if err := json.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("slurm: state_file %s: %w (delete it to start afresh: see doc.go)", path, err)
	}
	sort.Strings(l.Blocks)
	return l, nil
}

// Save writes the ledger atomically (new file, fsync, rename).
func (l *Ledger) Save(path string) error {
	b, err := json.MarshalIndent(l, "", " ")
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b)+"\n" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("slurm: state_file: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("slurm: state_file: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("slurm: state_file %s: %w", path, err)
	}
	return nil
}

// nextLedger is the ledger after a pass: have is slurmdbd read back after
// the pass, blocked the associations this pass blocked.
func nextLedger(cfg Config, want *Desired, have *State, prev *Ledger, blocked []AssocKey, heldNow []string) *Ledger {
	l := &Ledger{Accounts: map[string]map[string]string{}, QOS: map[string]map[string]string{}}
	for name, a := range have.Accounts {
		wa := want.Accounts[name]
		if !a.OnCluster || !cfg.managed(a) {
			continue
		}
		if wa != nil && !a.handsOff() {
			if args, _ := limitsDiff(a.Limits, wa.Limits); len(args) == 0 {
				l.Accounts[name] = copyMap(wa.Limits)
				continue
			}
		}
		if old, ok := prev.Accounts[name]; ok {
			l.Accounts[name] = old
		}
	}
	// Blocks: ours from before, and this pass's, that are still in place.
	mine := map[AssocKey]bool{}
	for _, k := range blocked {
		mine[k] = true
	}
	for _, s := range prev.Blocks {
		u, a, _ := strings.Cut(s, "@")
		mine[AssocKey{u, a}] = true
	}
	for k := range mine {
		if u := have.Users[k.User]; u != nil && u.Assocs[k.Account] != nil && u.Assocs[k.Account].Blocked() {
			l.Blocks = append(l.Blocks, k.String())
		}
	}
	sort.Strings(l.Blocks)
	// Held jobs: ours from before and this pass's, while still held.
	held := map[string]bool{}
	for _, id := range append(append([]string(nil), prev.HeldJobs...), heldNow...) {
		held[id] = true
	}
	for _, j := range have.JobList {
		if held[j.ID] && j.State == "PENDING" && isHeld(j) {
			l.HeldJobs = append(l.HeldJobs, j.ID)
		}
	}
	sort.Strings(l.HeldJobs)
	for name, attrs := range prev.QOS {
		l.QOS[name] = attrs
	}
	for name, w := range want.QOSDefs {
		q := have.QOSAttrs[name]
		if q == nil || !cfg.ownedQOS(q) || q.handsOff() {
			continue
		}
		if args, _ := fieldsDiff(qosFields, q.Attrs, w); len(args) == 0 {
			l.QOS[name] = copyMap(w)
		}
	}
	l.Users, l.AssocQOS = ledgerUsers(cfg, want, have, prev)
	return l
}

// ledgerUsers records, for users with associations on managed accounts,
// the default account they have when it is the one wanted (else the one
// recorded before), and per account the members' QOS when they all have
// what the config asks.
func ledgerUsers(cfg Config, want *Desired, have *State, prev *Ledger) (map[string]string, map[string]string) {
	users, qos := map[string]string{}, map[string]string{}
	differs := map[string]bool{}
	for name, hu := range have.Users {
		onManaged := false
		for acct := range hu.Assocs {
			onManaged = onManaged || cfg.managed(have.Accounts[acct])
		}
		if !onManaged {
			continue
		}
		wu := want.Users[name]
		switch {
		case wu != nil && !wu.Held && hu.DefaultAccount == wu.Default:
			users[name] = hu.DefaultAccount
		case prev.Users[name] != "":
			users[name] = prev.Users[name]
		case wu != nil && !wu.Held:
			users[name] = "" // provisioned, default not (yet) as wanted
		}
		if wu == nil {
			continue
		}
		for acct, wa := range wu.Assocs {
			ha := hu.Assocs[acct]
			if ha == nil || len(wa.QOS) == 0 {
				continue
			}
			w := strings.Join(wa.QOS, ",") + "|" + wa.DefaultQOS
			if strings.Join(ha.QOS, ",")+"|"+ha.DefaultQOS != w || (qos[acct] != "" && qos[acct] != w) {
				differs[acct] = true
			}
			qos[acct] = w
		}
	}
	for acct := range differs {
		delete(qos, acct)
		if v, ok := prev.AssocQOS[acct]; ok {
			qos[acct] = v
		}
	}
	return users, qos
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// handsOff: an admin wrote "hands-off" into a managed account's
// Description: syncd still manages who is in it, never its limits.
func (a *AccountState) handsOff() bool {
	return strings.Contains(strings.ToLower(a.Description), "hands-off")
}
