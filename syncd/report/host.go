package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/slurm"
)

// What `syncd report usage` needs of the host: the options from the
// syncd config, the Slurm commands run for real, the files written.
// Package main keeps the flags (issue 18, item 6).

// ConfigOptions fills o's cluster, commands and guarantees from [slurm]
// of the config at cfgPath. A host without the file or without [slurm]
// leaves o as it is: the report then comes from Slurm alone.
func ConfigOptions(cfgPath string, o *Options) error {
	cfg, err := config.Load(cfgPath)
	if err == nil && cfg.HasSlurm() {
		var sc slurm.Config
		if err := cfg.DecodeSlurm(&sc); err != nil {
			return err
		}
		o.Cluster, o.Guarantees, o.Scontrol, o.Sacctmgr = sc.Cluster, GuaranteesFromConfig(sc), sc.Scontrol, sc.Sacctmgr
		o.Sacct = sc.Sacct
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ExecRunner runs the Slurm commands (sacct, sacctmgr, scontrol), each
// bounded by timeout; a failure is the command's first line of stderr.
func ExecRunner(timeout time.Duration) Runner {
	return func(ctx context.Context, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s: no answer within %s", name, timeout)
		}
		if err != nil {
			msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
			if msg == "" {
				msg = err.Error()
			}
			return "", fmt.Errorf("%s: %s", name, msg)
		}
		return stdout.String(), nil
	}
}

// WriteOutput writes what render writes to path ("-": standard output),
// a file through a temporary beside it and a rename.
func WriteOutput(path string, render func(*bytes.Buffer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return err
	}
	if path == "-" {
		_, err := os.Stdout.Write(b.Bytes())
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
