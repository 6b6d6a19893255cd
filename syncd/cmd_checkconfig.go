package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/configcheck"
	"github.com/scimbridge/scimbridge/syncd/mirror"
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
	if err := configcheck.Tables(os.Stdout, cfgPath, cfg); err != nil {
		return err
	}
	if err := configcheck.Role(os.Stdout, cfgPath, cfg, *plugstack); err != nil {
		return err
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
		if err := configcheck.Source(ctx, os.Stdout, cfgPath, cfg, c); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stdout, "%s: ok\n", cfgPath)
	return nil
}
