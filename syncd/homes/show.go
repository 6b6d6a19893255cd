package homes

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
)

// What `syncd homes`, `status`, `explain` and `report` print of the
// pass, from its status file and ledger.

// PrintResult prints a pass's result as `syncd homes plan|apply` does.
func PrintResult(w io.Writer, r *Result) {
	what := "applied"
	if r.DryRun {
		what = "plan (nothing changed)"
	}
	fmt.Fprintf(w, "# homes %s: %d home(s) and %d project(s) in place, %d refused, %d error(s), driver %s\n",
		what, r.Homes, r.Teams, r.Refused, r.Errors, orNone(r.Driver))
	for _, a := range r.Actions {
		fmt.Fprintln(w, a.String())
	}
	if len(r.Actions) == 0 {
		fmt.Fprintln(w, "# nothing to do")
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// StatusPathFor is the homes status file for a snapshot: from the config
// at cfgPath when it is readable, else beside the snapshot.
func StatusPathFor(cfgPath, cachePath string) string {
	if cfg, err := config.Parse(cfgPath); err == nil && cfg.HasHomes() {
		var hc Config
		if cfg.DecodeHomes(&hc) == nil {
			return hc.WithDefaults(cfg.HomeRoots, cachePath).StatusFile()
		}
	}
	return Config{}.WithDefaults(nil, cachePath).StatusFile()
}

// PrintStatus adds the homes pass (status file p) to `syncd status`.
func PrintStatus(w io.Writer, p string, now time.Time) {
	v, err := ReadStatus(p)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(w, "homes:          %v\n", err)
		}
		return
	}
	fmt.Fprintf(w, "homes:          last pass %s (%s ago): %d home(s), %d project(s), %d refused, %d error(s), %d change(s); quota driver %s\n",
		v.At.Local().Format(time.RFC3339), now.Sub(v.At).Round(time.Second), v.Homes, v.Teams, v.Refused, v.Errors, v.Changed, orNone(v.Driver))
	for _, a := range v.Actions {
		if a.Kind == "refused" || a.Kind == "error" || a.Kind == "over-limit" || a.Kind == "quota-capped" {
			fmt.Fprintf(w, "  %s\n", a.String())
		}
	}
}

// Explain is what `syncd explain USER` shows of storage.
type Explain struct {
	Home      string        `json:"home"`
	OnDisk    string        `json:"on_disk"`
	LastPass  *time.Time    `json:"last_pass,omitempty"`
	Targets   []TargetUsage `json:"quota,omitempty"`
	Actions   []Action      `json:"actions,omitempty"`
	NoPassYet string        `json:"note,omitempty"`
}

// ExplainUser is nil on a host where no homes pass ever ran (no status
// file): explain then shows nothing of storage, as before [homes].
func ExplainUser(cfgPath, cachePath, name, home string, groups []string) *Explain {
	v, err := ReadStatus(StatusPathFor(cfgPath, cachePath))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	e := &Explain{Home: home, OnDisk: describePath(home)}
	if err != nil {
		e.NoPassYet = "the homes pass's status is unreadable (" + err.Error() + ")"
		return e
	}
	e.LastPass = &v.At
	in := map[string]bool{"user:" + name: true}
	for _, g := range groups {
		in["team:"+g] = true
	}
	for _, t := range v.Targets {
		if in[t.Key()] {
			e.Targets = append(e.Targets, t)
		}
	}
	for _, a := range v.Actions {
		if a.Name == name || (a.Path != "" && a.Path == home) {
			e.Actions = append(e.Actions, a)
		}
	}
	return e
}

func describePath(p string) string {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return "not there (" + err.Error() + ")"
	}
	k := "directory"
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		k = "SYMLINK (refused by the homes pass)"
	case syscall.S_IFREG:
		k = "file"
	}
	return fmt.Sprintf("%s owned by %d:%d mode %04o", k, st.Uid, st.Gid, st.Mode&0o7777)
}

// Print prints e as `syncd explain` does.
func (e *Explain) Print(w io.Writer) {
	fmt.Fprintf(w, "home:      %s: %s\n", e.Home, e.OnDisk)
	if e.NoPassYet != "" {
		fmt.Fprintf(w, "quota:     %s\n", e.NoPassYet)
		return
	}
	for _, t := range e.Targets {
		if t.Usage == nil {
			fmt.Fprintf(w, "quota:     %s %s: set by the pass of %s; use not readable through this driver\n", t.Kind, t.Path, e.LastPass.Format(time.RFC3339))
			continue
		}
		u := t.Usage
		fmt.Fprintf(w, "quota:     %s %s: %s used of soft %s, hard %s%s (as of %s)\n", t.Kind, t.Path, FormatSize(u.Used),
			sizeOr(u.Soft), sizeOr(u.Hard), over(u), e.LastPass.Format(time.RFC3339))
	}
	for _, a := range e.Actions {
		fmt.Fprintf(w, "homes:     %s\n", a.String())
	}
}

func sizeOr(b uint64) string {
	if b == 0 {
		return "none"
	}
	return FormatSize(b)
}

func over(u *Usage) string {
	switch {
	case u.OverHard:
		return "; OVER the hard limit: writes fail"
	case u.OverSoft:
		return "; over the soft limit"
	}
	return ""
}

// StorageSummary reads the homes ledger's samples for [since, until),
// per the config at cfgPath; nil without [homes].
func StorageSummary(cfgPath string, since, until time.Time) ([]TeamStorage, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	hc, on, err := Load(cfg)
	if err != nil || !on {
		return nil, err
	}
	st, err := LoadState(hc.StateFile)
	if err != nil {
		return nil, err
	}
	return SummarizeSamples(st.Samples, since, until), nil
}

// PrintStorage prints the storage table of `syncd report`.
func PrintStorage(w io.Writer, ts []TeamStorage) {
	fmt.Fprintln(w, "\nProject storage per team (hourly samples of the homes pass)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tSAMPLES\tAVG USED\tPEAK\tLAST\tSOFT\tHARD\tGiB-HOURS")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.1f\n", t.Team, t.Samples, FormatSize(t.AvgUsed), FormatSize(t.MaxUsed),
			FormatSize(t.Last), sizeOr(t.Soft), sizeOr(t.Hard), t.GiBHours)
	}
	tw.Flush()
}

// PrintStorageSection ends `report usage` with storage, when this host
// has samples; silent otherwise.
func PrintStorageSection(w io.Writer, cfgPath string, since, until time.Time) {
	if ts, err := StorageSummary(cfgPath, since, until); err == nil && len(ts) > 0 {
		PrintStorage(w, ts)
	}
}
