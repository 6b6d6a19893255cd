package main

import (
	"context"
	"fmt"
	"os"

	"github.com/scimbridge/scimbridge/syncd/kube"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
)

func init() {
	commands["kubernetes"] = command{
		Summary: "plan|apply: namespaces, RoleBindings and quotas of mapped groups (Kubernetes API)",
		Run:     runKube,
	}
	// The pass after each commit and on its own schedule: syncd/kube.
	pipeline.AfterCommit = append(pipeline.AfterCommit, kube.AfterCommit)
	daemonTasks = append(daemonTasks, kube.Loop)
	metrics.Extra = append(metrics.Extra, kube.DaemonCollectors()...)
}

const kubeUsage = `usage: syncd kubernetes plan  [--cache PATH]
       syncd kubernetes apply [--cache PATH] [--force]

plan prints every change apply would make (namespaces, RoleBindings,
ResourceQuotas), each with its reason, and what it leaves alone and why;
it changes nothing. apply makes them and reads the cluster back.`

func runKube(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || (args[0] != "plan" && args[0] != "apply") {
		return usageError{kubeUsage}
	}
	sub := args[0]
	fs := flags("kubernetes "+sub, &cfgPath)
	cache := fs.String("cache", "", "snapshot path (default: cache_path of the config)")
	force := fs.Bool("force", false, "apply even when the plan takes access from more than half of the managed namespaces")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, kc, err := kube.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	path := cfg.CachePath
	if *cache != "" {
		path = *cache
	}
	show := func(p *kube.Plan) { fmt.Fprint(os.Stdout, p.String()) }
	res, err := kube.Reconcile(ctx, kc, path, kube.Options{DryRun: sub == "plan", Force: *force, OnPlan: show})
	if sub == "apply" && res != nil {
		fmt.Fprintf(os.Stdout, "# applied %d change(s), %d failed, in %.1fs\n", res.Applied, res.Failed, res.Duration.Seconds())
		if res.Unfinished > 0 {
			fmt.Fprintf(os.Stdout, "# warning: the cluster still differs after apply (%d change(s)); see `syncd kubernetes plan`\n", res.Unfinished)
		}
	}
	return err
}
