package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/kube"
	"github.com/scimbridge/scimbridge/syncd/mirror"
	"github.com/scimbridge/scimbridge/syncd/slurm"
)

func init() {
	commands["check-config"] = command{
		Summary: "check the configuration and report every problem (--online also asks the server)",
		Run:     runCheckConfig,
	}
}

func runCheckConfig(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("check-config", &cfgPath)
	online := fs.Bool("online", false, "also ask the server: ServiceProviderConfig, Schemas, attributes=, page and sort timing, a sample of users")
	plugstack := fs.String("plugstack", "/etc/slurm/plugstack.conf", "Slurm's plugstack.conf on this host (is spank_scim.so loaded here?)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				fmt.Fprintf(os.Stdout, "error: %v\n", e)
			}
			return fmt.Errorf("%s: %d problem(s)", cfgPath, len(errs))
		}
		return err
	}
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
				fmt.Fprintf(os.Stdout, "error: [%s]: %s\n", t.name, line)
			}
			return fmt.Errorf("%s: [%s] table invalid", cfgPath, t.name)
		}
	}
	if cfg.HasHomes() {
		hc, _, err := homes.Load(cfg)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(os.Stdout, "error: [homes]: %s\n", line)
			}
			return fmt.Errorf("%s: [homes] table invalid", cfgPath)
		}
		if w := homes.RoleWarning(cfg, hc); w != "" {
			fmt.Fprintf(os.Stdout, "warning: %s\n", w)
		}
	}
	roleErrs, roleWarns := roleProblems(cfg, *plugstack)
	for _, w := range roleWarns {
		fmt.Fprintf(os.Stdout, "warning: %s\n", w)
	}
	if len(roleErrs) > 0 {
		for _, e := range roleErrs {
			fmt.Fprintf(os.Stdout, "error: %s\n", e)
		}
		return fmt.Errorf("%s: not a config for this host's role (head or node)", cfgPath)
	}
	if *online && cfg.HasReceiver() {
		return checkReceiverOnline(ctx, cfgPath)
	}
	if *online && cfg.IsMirror() {
		// A node: fetch the head's manifest and check its signature.
		if err := mirror.CheckOnline(ctx, cfg, os.Stdout); err != nil {
			return err
		}
	} else if *online {
		log := newLogger(cfg, os.Stderr)
		c, err := newClient(cfg, log)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, 6*cfg.RequestTimeout+10*time.Second)
		defer cancel()
		rep, err := c.Probe(ctx)
		if rep == nil || rep.Discovery == nil {
			return err
		}
		d := rep.Discovery
		fmt.Fprintf(os.Stdout, "server %s: paging %s, sort %v, filter %v; one page of %d users %s", c.Name(), d.Paging, d.SortSupported, d.FilterSupported, cfg.PageSize, rep.PageTime.Round(time.Millisecond))
		if rep.SortTime > 0 {
			fmt.Fprintf(os.Stdout, ", with sortBy=%s %s", cfg.SortBy, rep.SortTime.Round(time.Millisecond))
		}
		fmt.Fprintln(os.Stdout)
		for _, w := range d.Warnings {
			fmt.Fprintf(os.Stdout, "warning: %s\n", w)
		}
		if err != nil {
			return err
		}
		bad := checkFirstPage(os.Stdout, cfg, rep)
		for _, f := range rep.Findings {
			kind := "warning"
			if f.Error {
				kind, bad = "error", bad+1
			}
			fmt.Fprintf(os.Stdout, "%s: %s: %s\n", kind, f.Option, f.Message)
		}
		if bad > 0 {
			return fmt.Errorf("%s: %d problem(s) against %s", cfgPath, bad, c.Name())
		}
	}
	fmt.Fprintf(os.Stdout, "%s: ok\n", cfgPath)
	return nil
}
