package report

import (
	"strings"

	"github.com/scimbridge/scimbridge/syncd/slurm"
)

// GuaranteesFromConfig returns guaranteed GPUs per account for the
// explicit groups of the [slurm] table (groups.NAME.guaranteed_gpus), the
// account named as syncd/slurm names it. Pattern-mapped groups (the
// top-level guaranteed_gpus) are only known per account once their SCIM
// groups are; the report takes those from the live project QOS instead.
// Two groups on one account: the larger guarantee (syncd/slurm refuses
// conflicting ones at plan time).
func GuaranteesFromConfig(sc slurm.Config) map[string]int {
	out := map[string]int{}
	for g, gc := range sc.Groups {
		if gc.GuaranteedGPUs == nil {
			continue
		}
		acct := strings.ToLower(gc.Account)
		if acct == "" {
			acct = slurm.Normalize(sc.AccountPrefix + g)
		}
		if n := *gc.GuaranteedGPUs; n > out[acct] || out[acct] == 0 {
			out[acct] = n
		}
	}
	return out
}
