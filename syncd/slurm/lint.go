package slurm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Lint: caps in slurmdbd mean nothing unless slurmctld tracks and enforces
// them. The authors of the tier design this serves learnt that GPU caps
// silently do not bite unless gres/gpu is an accounting TRES and limits are
// enforced. `slurm plan` reads the running configuration (`scontrol show
// config`) and names each missing setting with the slurm.conf line to add;
// it never calls a cap enforced that is not.

// LintFinding is one slurm.conf problem and the line that fixes it.
type LintFinding struct {
	Problem string
	Line    string
}

// ParseSlurmConfig reads `scontrol show config` ("Key = Value" lines).
func ParseSlurmConfig(out string) map[string]string {
	conf := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		conf[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	// DefMemPerGPU and DefCpuPerGPU show only inside JobDefaults
	// ("JobDefaults = DefCpuPerGPU=1,DefMemPerGPU=1024" on 22.05).
	for _, e := range strings.Split(conf["jobdefaults"], ",") {
		if k, v, ok := strings.Cut(e, "="); ok {
			conf[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	return conf
}

func confList(conf map[string]string, key string) []string {
	var out []string
	for _, x := range strings.Split(strings.ToLower(conf[strings.ToLower(key)]), ",") {
		if x = strings.TrimSpace(x); x != "" && x != "(null)" && x != "none" {
			out = append(out, x)
		}
	}
	return out
}

func confUnset(conf map[string]string, key string) bool {
	v, ok := conf[strings.ToLower(key)]
	if !ok {
		return true
	}
	switch strings.ToLower(v) {
	case "", "(null)", "none", "unlimited", "0", "n/a":
		return true
	}
	return false
}

// Lint checks conf (ParseSlurmConfig) against what want relies on.
func Lint(want *Desired, conf map[string]string) []LintFinding {
	var out []LintFinding
	gpuCaps := false
	for _, a := range want.Accounts {
		if strings.Contains(a.Limits["GrpTRES"]+a.Limits["MaxTRES"]+a.Limits["MaxTRESPerNode"], "gres/gpu") {
			gpuCaps = true
		}
	}
	preempts := false
	for _, s := range want.QOSDefs {
		for k, v := range s {
			if strings.Contains(v, "gres/gpu") {
				gpuCaps = true
			}
			if k == "Preempt" && v != "" {
				preempts = true
			}
		}
	}
	tres := confList(conf, "AccountingStorageTRES")
	if gpuCaps && !contains(tres, "gres/gpu") {
		out = append(out, LintFinding{
			"AccountingStorageTRES lacks gres/gpu: every gres/gpu cap in this plan (GrpTRES, MaxTRES..., the landing account's 0 GPUs) is stored but NOT enforced",
			"AccountingStorageTRES=" + strings.Join(append(withoutDefaults(tres), "gres/gpu"), ",")})
	}
	enforce := confList(conf, "AccountingStorageEnforce")
	var missing []string
	for _, e := range []string{"associations", "limits", "qos"} {
		if !contains(enforce, e) {
			missing = append(missing, e)
		}
	}
	if len(missing) > 0 {
		line := []string{"associations", "limits", "qos"}
		for _, e := range enforce {
			if !contains(line, e) {
				line = append(line, e)
			}
		}
		out = append(out, LintFinding{
			fmt.Sprintf("AccountingStorageEnforce lacks %s: jobs run without an association, and account/QOS limits are NOT enforced", strings.Join(missing, ",")),
			"AccountingStorageEnforce=" + strings.Join(line, ",")})
	}
	if preempts {
		if pt := strings.ToLower(conf["preempttype"]); pt != "preempt/qos" {
			out = append(out, LintFinding{
				fmt.Sprintf("a tier preempts (Preempt= on a QOS) but PreemptType is %q: no job is ever preempted", conf["preempttype"]),
				"PreemptType=preempt/qos"})
		}
		if pm := strings.ToLower(conf["preemptmode"]); pm == "" || pm == "off" {
			out = append(out, LintFinding{
				"a tier preempts but PreemptMode is OFF: preemption is disabled cluster-wide",
				"PreemptMode=REQUEUE"})
		}
	}
	// QOS Priority= is a factor of priority/multifactor only: under
	// priority/basic (FIFO by submit time) a tier's priority does nothing.
	var prio []string
	for _, name := range slices.Sorted(maps.Keys(want.QOSDefs)) {
		if v := want.QOSDefs[name]["Priority"]; v != "" && v != "0" {
			prio = append(prio, name)
		}
	}
	if pt := strings.ToLower(conf["prioritytype"]); len(prio) > 0 && pt != "" && pt != "priority/multifactor" {
		out = append(out, LintFinding{
			fmt.Sprintf("QOS %s set Priority= but PriorityType is %q: QOS priority counts only under priority/multifactor, so these tiers' jobs start in submit order like any other", strings.Join(prio, ", "), conf["prioritytype"]),
			"PriorityType=priority/multifactor (and PriorityWeightQOS=<weight>)"})
	}
	if gpuCaps {
		if confUnset(conf, "DefMemPerGPU") {
			out = append(out, LintFinding{
				"DefMemPerGPU is unset: a GPU job without --mem gets the partition's default memory, not a share per GPU",
				"DefMemPerGPU=<node memory in MB / GPUs per node>"})
		}
		if confUnset(conf, "DefCpuPerGPU") {
			out = append(out, LintFinding{
				"DefCpuPerGPU is unset: a GPU job without -c gets one CPU however many GPUs it takes",
				"DefCpuPerGPU=<CPUs per node / GPUs per node>"})
		}
	}
	return out
}

// withoutDefaults drops the TRES slurmctld always tracks (cpu, mem,
// energy, node, billing, fs/disk, vmem, pages), which scontrol lists but
// slurm.conf need not.
func withoutDefaults(tres []string) []string {
	var out []string
	for _, t := range tres {
		switch t {
		case "cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages":
		default:
			out = append(out, t)
		}
	}
	return out
}
