package slurm

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Tiers as code. The design this serves (Parallel Works' three tiers):
//
//   - project: each team's own QOS, ACCOUNT-project, capped at the team's
//     guaranteed GPUs (GrpTRES=gres/gpu=N on the QOS) and the default QOS
//     of its members; project_qos adds its other settings (Priority,
//     Preempt=spot...). A per-team QOS, not the account's GrpTRES alone:
//     association usage counts every job of the account, so a team
//     bursting on general would otherwise lock itself out of its own
//     guarantee (QOS usage counts that QOS's jobs only).
//   - general: a shared QOS the group opts into (tiers = ["general"]),
//     e.g. GrpTRES=gres/gpu=POOL, MaxTRESPerAccount=gres/gpu=TEAMCAP,
//     MaxWall=3-0.
//   - spot: a shared QOS, e.g. MaxWall=1-0, PreemptMode=requeue,
//     GraceTime=120, and a GrpTRES=gres/gpu of the whole cluster.
//
// Slurm uses the first limit defined in the order job QOS, association
// (measured on 22.05: general jobs ran past the account's GrpTRES because
// the QOS set its own). So the account also gets GrpTRES=gres/gpu=N: any
// QOS without its own GPU limit (normal, and spot unless it sets one)
// falls back to the guarantee, and the landing account stays at 0 GPUs.
// The lint in `slurm plan` checks that slurm.conf tracks and enforces
// gres/gpu, and uses preempt/qos when a tier preempts.

// ProjectQOSName is the project QOS of account.
func ProjectQOSName(account string) string { return account + "-project" }

// withGPUs returns limits with GrpTRES gres/gpu=n added.
func withGPUs(limits map[string]string, n int) map[string]string {
	out := copyMap(limits)
	t, _ := parseTRES(out["GrpTRES"], true)
	if t == nil {
		t = map[string]int64{}
	}
	t["gres/gpu"] = int64(n)
	out["GrpTRES"] = formatTRES(t)
	return out
}

func (c *Config) projectQOSSettings(gpus int) map[string]string {
	s, _ := parseQOSSettings(c.ProjectQOS) // checked by Config.Check
	if s == nil {
		s = map[string]string{}
	}
	return withGPUs(s, gpus)
}

func (c *Config) checkTiers() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.QOSSettings)) {
		if !validName(strings.ToLower(name)) {
			errs = append(errs, fmt.Errorf("slurm: qos_settings.%s: only a-z, 0-9, _ and - are allowed", name))
		}
		if strings.HasSuffix(strings.ToLower(name), "-project") {
			errs = append(errs, fmt.Errorf("slurm: qos_settings.%s: names ending in -project are the teams' project QOS (project_qos)", name))
		}
		if _, err := parseQOSSettings(c.QOSSettings[name]); err != nil {
			errs = append(errs, fmt.Errorf("slurm: qos_settings.%s: %w", name, err))
		}
	}
	if s, err := parseQOSSettings(c.ProjectQOS); err != nil {
		errs = append(errs, fmt.Errorf("slurm: project_qos: %w", err))
	} else if t, _ := parseTRES(s["GrpTRES"], true); t != nil && t["gres/gpu"] > 0 {
		errs = append(errs, fmt.Errorf("slurm: project_qos: GrpTRES gres/gpu comes from each group's guaranteed_gpus; leave it out"))
	}
	check := func(where string, tiers []string, gpus *int, limits []string) {
		errs = append(errs, checkQOS(where, tiers, "")...)
		if gpus == nil {
			return
		}
		if *gpus < 0 {
			errs = append(errs, fmt.Errorf("%s: guaranteed_gpus %d: want 0 or more", where, *gpus))
		}
		if lm, err := parseLimits(limits); err == nil {
			if t, _ := parseTRES(lm["GrpTRES"], true); t != nil {
				if _, ok := t["gres/gpu"]; ok {
					errs = append(errs, fmt.Errorf("%s: guaranteed_gpus and a GrpTRES gres/gpu limit both cap GPUs; keep one", where))
				}
			}
		}
	}
	check("slurm", c.Tiers, c.GuaranteedGPUs, c.Limits)
	for _, g := range slices.Sorted(maps.Keys(c.Groups)) {
		gc := c.Groups[g]
		tiers, gpus, limits := c.Tiers, gc.GuaranteedGPUs, c.Limits
		if gc.Tiers != nil {
			tiers = gc.Tiers
		}
		if gc.Limits != nil {
			limits = gc.Limits
		}
		check("slurm: groups."+g, tiers, gpus, limits)
	}
	return errs
}

func dedupe(l []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range l {
		x = strings.ToLower(x)
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// ownedQOS: a QOS scimbridge created (or an admin handed over) carries
// "managed by MARKER" in its Description; "hands-off" there keeps syncd
// off its settings.
func (c *Config) ownedQOS(q *QOSState) bool {
	return q != nil && strings.Contains(strings.ToLower(q.Description), "managed by "+strings.ToLower(c.Marker))
}

func (q *QOSState) handsOff() bool {
	return strings.Contains(strings.ToLower(q.Description), "hands-off")
}

// planQOS adds phase 1: missing QOS created, owned QOS kept at their
// settings (config changes told from drift through the ledger).
func planQOS(p *Plan, cfg Config, want *Desired, have *State, missing []string, ledger *Ledger) {
	for name := range want.QOSDefs {
		if !have.QOS[name] && !contains(missing, name) {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		p.add(PhaseQOS, "QOS named in the config that do not exist yet",
			"add", "qos", strings.Join(missing, ","), "Description=managed by "+strings.ToLower(cfg.Marker))
	}
	for _, name := range slices.Sorted(maps.Keys(want.QOSDefs)) {
		wantS := want.QOSDefs[name]
		q := have.QOSAttrs[name]
		created := contains(missing, name)
		if !created && !cfg.ownedQOS(q) {
			if args, _ := fieldsDiff(qosFields, q.Attrs, wantS); len(args) > 0 {
				p.Notes = append(p.Notes, fmt.Sprintf("QOS %s exists and is not managed by scimbridge (Description %q); its settings differ from the config (%s) and are not changed",
					name, q.Description, strings.Join(args, " ")))
			}
			continue
		}
		var cur map[string]string
		if q != nil && !created {
			cur = q.Attrs
		}
		args, names := fieldsDiff(qosFields, cur, wantS)
		if len(args) == 0 {
			continue
		}
		if !created && q.handsOff() {
			p.Notes = append(p.Notes, fmt.Sprintf("QOS %s is hands-off (its Description says so): settings %s differ from the config and are left as they are", name, strings.Join(args, " ")))
			continue
		}
		why := "settings of new QOS " + name
		if !created {
			last, recorded := ledger.QOS[name]
			var kinds []string
			for _, k := range names {
				switch {
				case recorded && last[k] == cur[k]:
					p.Notes = append(p.Notes, fmt.Sprintf("config: QOS %s %s %s -> %s", name, k, showLimit(cur[k]), showLimit(wantS[k])))
					kinds = append(kinds, "config changed "+k)
				case recorded:
					p.Notes = append(p.Notes, fmt.Sprintf("drift: QOS %s %s is %s, changed outside scimbridge (it set %s); reset to the config's %s",
						name, k, showLimit(cur[k]), showLimit(last[k]), showLimit(wantS[k])))
					kinds = append(kinds, "reset "+k+" changed outside scimbridge")
				default:
					p.Notes = append(p.Notes, fmt.Sprintf("QOS %s %s is %s, config says %s (no record of what scimbridge set before)", name, k, showLimit(cur[k]), showLimit(wantS[k])))
					kinds = append(kinds, "set "+k+" to the config")
				}
			}
			why = "QOS " + name + ": " + strings.Join(kinds, "; ")
		}
		p.add(PhaseQOS, why, append([]string{"modify", "qos", "where", "name=" + name, "set"}, args...)...)
	}
}
