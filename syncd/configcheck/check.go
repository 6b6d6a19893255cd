package configcheck

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/kube"
	"github.com/scimbridge/scimbridge/syncd/slurm"
	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

// Tables checks the tables other packages decode ([slurm], [kubernetes],
// [homes]) with their own rules, printing each problem on w; a [homes]
// role that is not this host's is a warning.
func Tables(w io.Writer, cfgPath string, cfg *config.Config) error {
	// The [slurm] and [kubernetes] tables are decoded by their own
	// packages; check them here too, so one run of check-config reports
	// every problem.
	for _, t := range []struct {
		name  string
		has   bool
		check func() error
	}{
		{"slurm", cfg.HasSlurm(), func() error { _, _, err := slurm.LoadConfig(cfgPath); return err }},
		{"kubernetes", cfg.HasKubernetes(), func() error { return kube.CheckConfig(cfgPath) }},
	} {
		if !t.has {
			continue
		}
		if err := t.check(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(w, "error: [%s]: %s\n", t.name, line)
			}
			return fmt.Errorf("%s: [%s] table invalid", cfgPath, t.name)
		}
	}
	if cfg.HasHomes() {
		hc, _, err := homes.Load(cfg)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(w, "error: [homes]: %s\n", line)
			}
			return fmt.Errorf("%s: [homes] table invalid", cfgPath)
		}
		if m := homes.RoleWarning(cfg, hc); m != "" {
			fmt.Fprintf(w, "warning: %s\n", m)
		}
	}
	return nil
}

// Source is --online against the SCIM server c: its discovery, the time
// of a page (and of a sorted one), its warnings and findings, and the
// first page validated with cfg's rules; printed on w, and an error
// when the server could not be probed or anything was an error.
func Source(ctx context.Context, w io.Writer, cfgPath string, cfg *config.Config, c *scim.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 6*cfg.RequestTimeout+10*time.Second)
	defer cancel()
	rep, err := c.Probe(ctx)
	if rep == nil || rep.Discovery == nil {
		return err
	}
	d := rep.Discovery
	fmt.Fprintf(w, "server %s: paging %s, sort %v, filter %v; one page of %d users %s", c.Name(), d.Paging, d.SortSupported, d.FilterSupported, cfg.PageSize, rep.PageTime.Round(time.Millisecond))
	if rep.SortTime > 0 {
		fmt.Fprintf(w, ", with sortBy=%s %s", cfg.SortBy, rep.SortTime.Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	for _, m := range d.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	if err != nil {
		return err
	}
	bad := checkFirstPage(w, cfg, rep)
	for _, f := range rep.Findings {
		kind := "warning"
		if f.Error {
			kind, bad = "error", bad+1
		}
		fmt.Fprintf(w, "%s: %s: %s\n", kind, f.Option, f.Message)
	}
	if bad > 0 {
		return fmt.Errorf("%s: %d problem(s) against %s", cfgPath, bad, c.Name())
	}
	return nil
}
