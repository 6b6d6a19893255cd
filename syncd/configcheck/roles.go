package configcheck

import (
	"fmt"
	"io"
	"strings"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/explain"
)

// Roles. A cluster has one head (the identity source, [slurm] where
// sacctmgr runs, [publish]) and nodes that mirror it ([mirror] only). A
// config that is neither on a node whose Slurm loads spank_scim.so is the
// old single-host habit, or the head's example copied onto a node: its
// snapshot has no Slurm associations (only a head with [slurm] reads them
// back), so spank_scim refuses every job ("no Slurm association yet"),
// and the node polls the identity provider with a token of its own.
// check-config says so, with the lines to use.

// exampleBaseURL is base_url in packaging/syncd.toml.example.
const exampleBaseURL = "https://idp.example.com/scim/v2"

const nodeLines = `on a compute or login node, syncd.toml holds only (no base_url, no token, no [slurm]):
    [mirror]
    url = "http://HEAD:8787/"        # or: path = "/shared/scimbridge/publish"
    public_key_file = "/etc/scimbridge/publish.key.pub"   # copied from the head
  on the Slurm head (where sacctmgr runs), keep the source and add:
    [slurm]
    enabled = true
    cluster = "CLUSTERNAME"          # ClusterName in slurm.conf
    [publish]
    key_file = "/etc/scimbridge/publish.key"              # syncd keygen --out /etc/scimbridge/publish.key`

// roleProblems says what is wrong with cfg's role on this host, given the
// plugstack.conf spank_scim would be loaded from: errors (a Slurm node
// whose config can never hold associations) and warnings (the example's
// placeholder base_url: fine to check the example as shipped, wrong on
// any real host).
func roleProblems(cfg *config.Config, plugstack string) (errs, warns []string) {
	if cfg.IsMirror() {
		return nil, nil
	}
	if _, _, spank := explain.SpankOptions(plugstack); spank && !cfg.HasSlurm() {
		errs = append(errs, fmt.Sprintf("%s loads spank_scim.so, but this config has neither [slurm] (a head that creates the associations) nor [mirror] (a node that receives them from the head): "+
			"its snapshot holds no Slurm associations and spank_scim refuses every job (\"no Slurm association yet\");\n  %s", plugstack, nodeLines))
	}
	if strings.TrimRight(cfg.BaseURL, "/") == exampleBaseURL {
		warns = append(warns, fmt.Sprintf("base_url is the example's placeholder %s: this is the example config; a head names its identity provider there, a node has no base_url at all;\n  %s", exampleBaseURL, nodeLines))
	}
	return errs, warns
}

// Role prints on w what is wrong with cfg's role on this host (warnings,
// then errors, each with the lines to use) and fails when an error was
// found.
func Role(w io.Writer, cfgPath string, cfg *config.Config, plugstack string) error {
	roleErrs, roleWarns := roleProblems(cfg, plugstack)
	for _, m := range roleWarns {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	if len(roleErrs) > 0 {
		for _, e := range roleErrs {
			fmt.Fprintf(w, "error: %s\n", e)
		}
		return fmt.Errorf("%s: not a config for this host's role (head or node)", cfgPath)
	}
	return nil
}
