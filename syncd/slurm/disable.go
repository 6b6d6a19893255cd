package slurm

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// The disable workflow. spank_scim.so refuses new jobs of a user disabled
// at the source, but jobs already queued would start and fail in
// task_init, with the reason only in their output. So each pass, for the
// snapshot's users with active=false:
//
//   - pending jobs are held (disabled_pending_jobs = "hold", the default):
//     `scontrol hold`, and a Comment saying why where the job has none, so
//     squeue shows JobHeldAdmin and the reason (squeue -o "%i %r %k").
//     syncd records the jobs it held in the ledger and releases exactly
//     those when the user is enabled again (an admin's holds are never
//     released). "cancel" cancels them; "none" leaves them.
//   - running jobs finish (disabled_running_jobs = "finish", the default)
//     or are cancelled ("cancel").

// heldComment is the Comment of a job held for a disabled user.
func heldComment(user string) string {
	return "scimbridge: held, user " + user + " is disabled in the identity provider; released when re-enabled"
}

func isHeld(j JobState) bool {
	return strings.HasPrefix(j.Reason, "JobHeld")
}

func planDisabledJobs(p *Plan, cfg Config, want *Desired, have *State, ledger *Ledger) {
	mine := map[string]bool{}
	for _, id := range ledger.HeldJobs {
		mine[id] = true
	}
	var hold, cancel, release, clear []string
	comment := map[string][]string{} // comment -> jobs
	users := map[string]bool{}
	handsOff := map[string]bool{}
	for _, u := range cfg.HandsOffUsers {
		handsOff[strings.ToLower(u)] = true
	}
	for _, j := range have.JobList {
		if handsOff[j.User] {
			continue
		}
		switch {
		case want.Disabled[j.User] && j.State == "PENDING":
			switch cfg.DisabledPendingJobs {
			case "hold":
				if isHeld(j) {
					continue
				}
				hold = append(hold, j.ID)
				users[j.User] = true
				if j.Comment == "" {
					comment[heldComment(j.User)] = append(comment[heldComment(j.User)], j.ID)
				}
			case "cancel":
				cancel = append(cancel, j.ID)
				users[j.User] = true
			}
		case want.Disabled[j.User] && j.State == "RUNNING" && cfg.DisabledRunningJobs == "cancel":
			cancel = append(cancel, j.ID)
			users[j.User] = true
		case !want.Disabled[j.User] && want.Known[j.User] && mine[j.ID] && j.State == "PENDING" && isHeld(j):
			release = append(release, j.ID)
			if strings.HasPrefix(j.Comment, "scimbridge: held") {
				clear = append(clear, j.ID)
			}
		}
	}
	who := strings.Join(slices.Sorted(maps.Keys(users)), ", ")
	if len(hold) > 0 {
		sort.Strings(hold)
		p.add(PhaseJobs, fmt.Sprintf("hold %d pending job(s) of disabled user(s) %s (disabled_pending_jobs = hold)", len(hold), who),
			"hold", strings.Join(hold, ",")).Bin = cfg.Scontrol
		p.Held = hold
		for _, c := range slices.Sorted(maps.Keys(comment)) {
			ids := comment[c]
			sort.Strings(ids)
			p.add(PhaseJobs, "say why in squeue (Comment)", "update", "jobid="+strings.Join(ids, ","), "Comment="+c).Bin = cfg.Scontrol
		}
	}
	if len(cancel) > 0 {
		sort.Strings(cancel)
		p.add(PhaseJobs, fmt.Sprintf("cancel %d job(s) of disabled user(s) %s (disabled_pending_jobs/disabled_running_jobs = cancel)", len(cancel), who),
			append([]string{}, cancel...)...).Bin = cfg.Scancel
	}
	if len(release) > 0 {
		sort.Strings(release)
		p.add(PhaseJobs, fmt.Sprintf("release %d job(s) scimbridge held: their users are enabled again", len(release)),
			"release", strings.Join(release, ",")).Bin = cfg.Scontrol
		if len(clear) > 0 {
			sort.Strings(clear)
			p.add(PhaseJobs, "clear the Comment scimbridge set", "update", "jobid="+strings.Join(clear, ","), "Comment=").Bin = cfg.Scontrol
		}
	}
}
